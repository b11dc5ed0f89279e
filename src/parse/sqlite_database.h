// SqliteDatabase and SqliteQuery: the few calls of libsqlite3 that the SQLite importers make,
// with errors as one line naming the file. Internal to the parse stage.
#ifndef TRACEFUSE_PARSE_SQLITE_DATABASE_H_
#define TRACEFUSE_PARSE_SQLITE_DATABASE_H_

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "imported_chunk.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/parse/importer.h"

namespace tracefuse {

class SqliteQuery;

// FileSize() is `path`'s size in bytes, 0 when unknown (importer.cc).
uint64_t FileSize(const std::string& path);

// SqliteDatabase is a database opened read-only, as immutable (no lock is taken and no journal
// is looked for, so that a profile on a read-only or network file system reads as well) unless a
// write-ahead log beside it holds rows not yet in the file.
class SqliteDatabase {
 public:
  // Open() opens `path` and lists its tables and views; an error when it is not a database.
  static absl::StatusOr<std::unique_ptr<SqliteDatabase>> Open(const std::string& path);
  ~SqliteDatabase();
  SqliteDatabase(const SqliteDatabase&) = delete;
  SqliteDatabase& operator=(const SqliteDatabase&) = delete;

  // Has() tells whether the database holds a table or view named `name`.
  bool Has(std::string_view name) const { return names_.contains(name); }
  // IsTable() tells whether `name` is a table (not a view).
  bool IsTable(std::string_view name) const { return tables_.contains(name); }
  // HasColumn() tells whether table or view `table` has a column named `column`.
  absl::StatusOr<bool> HasColumn(std::string_view table, std::string_view column);
  // Prepare() compiles `sql`; errors name the file and quote SQLite's message.
  absl::StatusOr<std::unique_ptr<SqliteQuery>> Prepare(std::string_view sql);
  const std::string& path() const { return path_; }
  // Error() is SQLite's last message, as one line naming the file.
  absl::Status Error(std::string_view what) const;

 private:
  SqliteDatabase(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  std::string path_;
  sqlite3* db_;
  absl::flat_hash_set<std::string, StringHash, StringEq> names_, tables_;
};

// SqliteQuery is a compiled statement, stepped row by row.
class SqliteQuery {
 public:
  SqliteQuery(const SqliteDatabase* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~SqliteQuery() { sqlite3_finalize(stmt_); }
  SqliteQuery(const SqliteQuery&) = delete;
  SqliteQuery& operator=(const SqliteQuery&) = delete;

  // Step() moves to the next row: false after the last.
  absl::StatusOr<bool> Step();
  absl::Status Reset();
  void Bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  // Text() is the column as text, valid until the next Step(); "" for NULL.
  std::string_view Text(int column) const {
    const unsigned char* text = sqlite3_column_text(stmt_, column);
    if (text == nullptr) return {};
    return std::string_view(reinterpret_cast<const char*>(text),
                            static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }

 private:
  const SqliteDatabase* db_;
  sqlite3_stmt* stmt_;
};

// TablesByStart hands out the rows of several tables, each in start order, merged into one start
// order, chunk by chunk: what a SQLite importer's Next() does. A table's rows are added to the
// chunk by its `add`; ties go to the table added first.
//
// Performance note: profilers write their tables in start order, or in a few runs of it (one per
// thread or process, concatenated). Such a table is read as it lies, each run by a rowid-range
// query of its own (no sort), the runs merged with the other tables: a cheap pass over the start
// column finds them. A table in any other order (or a view, which has no rowid) is sorted by
// SQLite (ORDER BY start, in bounded memory, spilling to temporary files), which costs about
// twice the reading itself.
class TablesByStart {
 public:
  using AddRow = std::function<void(const SqliteQuery& row, ImportedChunk* chunk)>;
  // TableQuery is what to read of a table or view: SELECT `columns` (the first the start time)
  // FROM `table` `joins` WHERE `where` ("" for every row); `start` names the start column.
  struct TableQuery {
    std::string table;
    std::string columns;
    std::string joins = {};
    std::string where = {};
    std::string start = "start";
  };
  // kMaxRuns is how many runs of start order a table may hold to be read as it lies.
  static constexpr size_t kMaxRuns = 32;

  // Add() reads `query`'s rows in start order, each added to a chunk by `add`, once Start() has
  // found how.
  void Add(const TableQuery& query, AddRow add) {
    pending_.push_back(Pending{query, std::move(add)});
  }
  // Start() finds each table's runs of start order (a pass over its start column, on a
  // connection of its own, a task each on `tasks` when given) and prepares the queries that read
  // them.
  absl::Status Start(SqliteDatabase* db, TaskGroup* tasks);
  // Fill() adds rows to `chunk` until it holds `records` or every query is done; false when
  // there was no row left to add.
  absl::StatusOr<bool> Fill(ImportedChunk* chunk, size_t records);
  // Done() is the share of the rows handed out, by the time they span: the last start added
  // against the first and last starts of the tables read as they lie (0 without such a table).
  double Done() const;

 private:
  struct Table {
    std::unique_ptr<SqliteQuery> query;
    AddRow add;
    bool started = false, has_row = false;
    int64_t start = 0;
  };
  using Runs = std::optional<std::vector<std::pair<int64_t, int64_t>>>;
  struct Pending {
    TableQuery query;
    AddRow add;
  };
  // StartRuns() is the rowid ranges of `query`'s runs of start order, or nullopt where there are
  // more than kMaxRuns or it reads a view; `span` widens to its rows' first and last starts.
  static absl::StatusOr<Runs> StartRuns(SqliteDatabase* db, const TableQuery& query,
                                        std::pair<int64_t, int64_t>* span);
  absl::Status Prepare(SqliteDatabase* db, const Pending& table, const Runs& runs);
  std::vector<Pending> pending_;
  // The first and last starts of the tables whose runs were found, and the last start added.
  int64_t first_start_ = INT64_MAX, last_start_ = INT64_MIN, added_start_ = INT64_MIN;
  static absl::Status Advance(Table* table);
  std::vector<Table> tables_;
};

// SqliteImporter is what the SQLite importers share: their database, their tables merged by
// start, and Next() filling chunks from them.
class SqliteImporter : public TraceImporter {
 public:
  absl::StatusOr<bool> Next(ParsedChunk* chunk) override;
  const TraceMetadata& metadata() const override { return metadata_; }
  uint64_t bytes_read() const override { return bytes_read_; }
  uint64_t file_bytes_covered() const override;
  uint64_t file_bytes() const override { return FileSize(db_->path()); }

 protected:
  SqliteImporter(std::unique_ptr<SqliteDatabase> db, const ImportOptions& options,
                 TraceFormat format);

  // LookUp() is column 0 of `query`'s row for `key` (its one parameter): nullopt where it has
  // none (or NULL). A failed look-up is kept, for Next() to return, so that no name is left
  // blank silently.
  std::optional<std::string> LookUp(SqliteQuery* query, int64_t key);

  // CorrelationOf() is column `id` of `row` (nullopt where it is NULL), a call of process `pid`.
  std::optional<int64_t> CorrelationOf(const SqliteQuery& row, int64_t pid, int id) {
    if (row.IsNull(id)) return std::nullopt;
    return correlations_.Of(pid, row.Int(id));
  }

  std::unique_ptr<SqliteDatabase> db_;
  TraceMetadata metadata_;
  TablesByStart tables_;
  ProcessCorrelations correlations_;

 private:
  size_t chunk_records_;
  std::function<std::unique_ptr<TaskGroup>()> new_task_group_;
  bool started_ = false;  // tables_.Start() has run
  absl::Status lookup_status_;
  ImportedChunk builder_;
  uint64_t seq_ = 0;
  uint64_t bytes_read_ = 0;
};

}  // namespace tracefuse

#endif  // TRACEFUSE_PARSE_SQLITE_DATABASE_H_
