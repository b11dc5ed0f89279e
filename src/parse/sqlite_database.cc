#include "sqlite_database.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <utility>

#include "importers.h"
#include "tracefuse/base/interrupt.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/io/byte_source.h"

namespace tracefuse {

absl::StatusOr<std::unique_ptr<SqliteDatabase>> SqliteDatabase::Open(const std::string& path) {
  sqlite3* db = nullptr;
  // A URI, for immutable=1; the path is escaped where a URI would read it otherwise.
  std::string uri = "file:";
  // A URI reads "//x" as an authority: a path's leading slashes, which mean one, are one.
  const size_t after_slashes = path.find_first_not_of('/');
  const std::string_view file = after_slashes != std::string::npos && after_slashes > 1
                                    ? std::string_view(path).substr(after_slashes - 1)
                                    : std::string_view(path);
  for (char c : file) {
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri += c;
    }
  }
  // Immutable: no lock taken, no journal looked for, so a profile on a read-only or network file
  // system reads as well. But then SQLite would not read a write-ahead log left beside the file
  // (a profiler killed before its checkpoint): with one, the file is opened as read-only only.
  std::error_code ec;
  const bool log = std::filesystem::file_size(path + "-wal", ec) > 0 && !ec;
  uri += log ? "?mode=ro" : "?mode=ro&immutable=1";
  // NOMUTEX: one thread at a time uses a connection (the source node, or a task reading blocks
  // of rows on a connection of its own), so SQLite's locks (a tenth of the reading's time) are not
  // needed.
  const int rc = sqlite3_open_v2(
      uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<SqliteDatabase> database(new SqliteDatabase(path, db));
  if (rc != SQLITE_OK) return database->Error("cannot open the database");
  // A long statement (SQLite's sort of a table, the pass over a large one) stops within
  // milliseconds of SIGTERM or SIGINT, as the readers of other formats do (base/interrupt.h).
  sqlite3_progress_handler(
      db, 100000, [](void*) { return InterruptSignal() != 0 ? 1 : 0; }, nullptr);
  absl::StatusOr<std::unique_ptr<SqliteQuery>> names = database->Prepare(
      "SELECT name, type = 'table' FROM sqlite_master WHERE type IN ('table', 'view')");
  if (!names.ok()) return names.status();
  while (true) {
    absl::StatusOr<bool> row = (*names)->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    database->names_.insert(std::string((*names)->Text(0)));
    if ((*names)->Int(1) != 0) database->tables_.insert(std::string((*names)->Text(0)));
  }
  return database;
}

SqliteDatabase::~SqliteDatabase() { sqlite3_close(db_); }

absl::Status SqliteDatabase::Error(std::string_view what) const {
  if (const int signal = InterruptSignal(); signal != 0) {
    return InterruptedError(StrCat("while reading ", path_));
  }
  const char* message = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
  return UnsupportedTraceError(
      StrCat(path_, ": ", what, ": ", EscapedControls(message == nullptr ? "" : message)));
}

absl::StatusOr<std::unique_ptr<SqliteQuery>> SqliteDatabase::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
      SQLITE_OK) {
    return Error("not a database tracefuse can read");
  }
  return std::make_unique<SqliteQuery>(this, stmt);
}

absl::StatusOr<bool> SqliteDatabase::HasColumn(std::string_view table, std::string_view column) {
  absl::StatusOr<std::unique_ptr<SqliteQuery>> info =
      Prepare(StrCat("SELECT 1 FROM pragma_table_info('", table, "') WHERE name = '", column, "'"));
  if (!info.ok()) return info.status();
  return (*info)->Step();
}

absl::StatusOr<bool> SqliteQuery::Step() {
  switch (sqlite3_step(stmt_)) {
    case SQLITE_ROW:
      return true;
    case SQLITE_DONE:
      return false;
    default:
      return db_->Error("not a database tracefuse can read");
  }
}

absl::Status SqliteQuery::Reset() {
  if (sqlite3_reset(stmt_) != SQLITE_OK) return db_->Error("not a database tracefuse can read");
  return absl::OkStatus();
}

SqliteImporter::SqliteImporter(std::unique_ptr<SqliteDatabase> db, const ImportOptions& options,
                               TraceFormat format)
    : db_(std::move(db)),
      chunk_records_(options.chunk_records),
      new_task_group_(options.new_task_group),
      builder_(options.host_activity) {
  metadata_.format = format;
}

absl::StatusOr<bool> SqliteImporter::Next(ParsedChunk* chunk) {
  if (InterruptSignal() != 0) {
    return InterruptedError(StrCat("after ", seq_ * chunk_records_, " records of ", db_->path()));
  }
  if (!started_) {    // here rather than in Open(): the pipeline's threads are at hand
    started_ = true;  // once, even when it fails
    if (absl::Status st = tables_.Start(db_.get(), new_task_group_ ? new_task_group_() : nullptr);
        !st.ok()) {
      return st;
    }
  }
  builder_.Start(chunk, seq_++);
  absl::StatusOr<bool> more = tables_.Fill(&builder_, chunk_records_);
  if (!more.ok()) return more.status();
  if (!lookup_status_.ok()) return lookup_status_;
  builder_.Finish();
  if (!*more) bytes_read_ = FileSize(db_->path());
  return *more;
}

uint64_t SqliteImporter::file_bytes_covered() const {
  const uint64_t file = file_bytes();
  return bytes_read_ > 0 ? file : static_cast<uint64_t>(double(file) * tables_.Done());
}

std::optional<std::string> SqliteImporter::LookUp(SqliteQuery* query, int64_t key) {
  std::optional<std::string> value;
  query->Bind(1, key);
  absl::StatusOr<bool> row = query->Step();
  if (!row.ok()) {
    lookup_status_.Update(row.status());
  } else if (*row && !query->IsNull(0)) {
    value = std::string(query->Text(0));
  }
  lookup_status_.Update(query->Reset());
  return value;
}

}  // namespace tracefuse
