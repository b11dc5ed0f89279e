// The importers of importer.h, one file each (docs/architecture.md, "Adding an input format").
// Internal to the parse stage.
#ifndef TRACEFUSE_PARSE_IMPORTERS_H_
#define TRACEFUSE_PARSE_IMPORTERS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sqlite_database.h"
#include "tracefuse/parse/importer.h"

namespace tracefuse {

// nsys_sqlite_importer.cc
bool IsNsysExport(const SqliteDatabase& db);
absl::StatusOr<std::unique_ptr<TraceImporter>> OpenNsysSqlite(std::unique_ptr<SqliteDatabase> db,
                                                              const ImportOptions& options);
// rocpd_sqlite_importer.cc
bool IsRocpdDatabase(const SqliteDatabase& db);
absl::StatusOr<std::unique_ptr<TraceImporter>> OpenRocpdSqlite(std::unique_ptr<SqliteDatabase> db,
                                                               const ImportOptions& options);
// rocprofv3_json_importer.cc
absl::StatusOr<std::unique_ptr<TraceImporter>> OpenRocprofv3Json(const std::string& path,
                                                                 const ImportOptions& options);

}  // namespace tracefuse

#endif  // TRACEFUSE_PARSE_IMPORTERS_H_
