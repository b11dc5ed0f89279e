#include "tracefuse/parse/importer.h"

#include <filesystem>
#include <fstream>

#include "importers.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/io/byte_source.h"

namespace tracefuse {
namespace {

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};
// The first key of a rocprofv3 JSON document.
constexpr std::string_view kRocprofv3Key = "\"rocprofiler-sdk-tool\"";

bool StartsWithSqliteMagic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[kSqliteMagic.size()];
  return in.read(head, sizeof(head)) && std::string_view(head, sizeof(head)) == kSqliteMagic;
}

// IsRocprofv3Json() tells whether a JSON document's first key is rocprofv3's, from its first
// bytes (decompressed).
bool IsRocprofv3Json(std::string_view head) {
  size_t at = head.find_first_not_of(" \t\r\n");
  if (at == std::string_view::npos || head[at] != '{') return false;
  at = head.find_first_not_of(" \t\r\n", at + 1);
  return at != std::string_view::npos && head.substr(at, kRocprofv3Key.size()) == kRocprofv3Key;
}

}  // namespace

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

absl::StatusOr<TraceFormat> DetectTraceFormat(const std::string& path) {
  std::error_code ec;
  if (path == "-" || !std::filesystem::is_regular_file(path, ec)) return TraceFormat::kKineto;
  if (StartsWithSqliteMagic(path)) {
    absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(path);
    if (!db.ok()) return db.status();
    if (IsNsysExport(**db)) return TraceFormat::kNsysSqlite;
    if (IsRocpdDatabase(**db)) return TraceFormat::kRocpdSqlite;
    return UnsupportedTraceError(StrCat(
        path,
        ": an SQLite database, but neither an Nsight Systems export (no StringIds table) nor a "
        "rocpd database (no rocpd_ tables)"));
  }
  SourceOptions small;
  small.window_bytes = 4 << 10;
  absl::StatusOr<std::unique_ptr<ByteSource>> bytes = OpenSource(path, small);
  if (!bytes.ok()) return TraceFormat::kKineto;  // the Kineto reader says why
  Block block;
  absl::StatusOr<bool> read = (*bytes)->Next(&block);
  if (!read.ok() || !*read) return TraceFormat::kKineto;
  const std::string_view head(block.data, block.size);
  if ((*bytes)->compressed() && head.substr(0, kSqliteMagic.size()) == kSqliteMagic) {
    return UnsupportedTraceError(StrCat(path, ": a ", (*bytes)->compression(),
                                        "-compressed SQLite database: decompress it first"));
  }
  return IsRocprofv3Json(head) ? TraceFormat::kRocprofv3Json : TraceFormat::kKineto;
}

absl::StatusOr<std::unique_ptr<TraceImporter>> OpenTraceImporter(const std::string& path,
                                                                 TraceFormat format,
                                                                 const ImportOptions& options) {
  if (format == TraceFormat::kRocprofv3Json) return OpenRocprofv3Json(path, options);
  absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(path);
  if (!db.ok()) return db.status();
  if (format == TraceFormat::kRocpdSqlite) return OpenRocpdSqlite(std::move(*db), options);
  return OpenNsysSqlite(std::move(*db), options);
}

}  // namespace tracefuse
