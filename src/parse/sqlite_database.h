// SqliteDatabase and SqliteQuery: the few calls of libsqlite3 that the SQLite importers make,
// with errors as one line naming the file. Internal to the parse stage.
#ifndef TRACEFUSE_PARSE_SQLITE_DATABASE_H_
#define TRACEFUSE_PARSE_SQLITE_DATABASE_H_

#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
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
  int columns() const { return sqlite3_column_count(stmt_); }
  // Value() is the column's value, valid until the next Step().
  sqlite3_value* Value(int column) const { return sqlite3_column_value(stmt_, column); }
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

// RowBlock is rows of a query as read, kept so that they can be added to a chunk after the
// query has moved on, and on another thread than the one that read them: each cell's integer,
// or for the columns read as text, its text.
class RowBlock {
 private:
  struct Cell {
    int64_t value = 0;  // a text's offset in text_
    uint32_t text_size = 0;
    bool null = false;
  };

 public:
  // Row is one row of the block, read as SqliteQuery reads its current row (Text() of a column
  // read as text, Int() of any other).
  class Row {
   public:
    bool IsNull(int column) const { return cell(column).null; }
    int64_t Int(int column) const { return cell(column).value; }
    std::string_view Text(int column) const {
      const Cell& c = cell(column);
      return std::string_view(block_->text_).substr(static_cast<size_t>(c.value), c.text_size);
    }

   private:
    friend class RowBlock;
    Row(const RowBlock* block, size_t row) : block_(block), row_(row) {}
    const Cell& cell(int column) const {
      return block_->cells_[row_ * block_->columns_ + static_cast<size_t>(column)];
    }
    const RowBlock* block_;
    size_t row_;
  };

  // Clear() empties the block, for rows of `columns` columns; bit i of `text_columns` set:
  // column i is read as text.
  void Clear(int columns, uint64_t text_columns);
  // Append() keeps `query`'s current row.
  void Append(const SqliteQuery& query);
  size_t size() const { return columns_ == 0 ? 0 : cells_.size() / columns_; }
  Row row(size_t i) const { return Row(this, i); }

 private:
  size_t columns_ = 0;
  uint64_t text_columns_ = 0;
  std::vector<Cell> cells_;
  std::string text_;
};

// TablesByStart hands out the rows of several tables, each in start order, merged into one start
// order, chunk by chunk: what a SQLite importer's Next() does. A table's rows are added to the
// chunk by its `add`; ties go to the table added first.
//
// Performance note: profilers write their tables in start order, or in a few runs of it (one per
// thread or process, concatenated). Such a table is read as it lies, each run by rowid-range
// queries (no sort), the runs merged with the other tables: a cheap pass over the start column
// finds them. A table in any other order (or a view, which has no rowid) is sorted by SQLite
// (ORDER BY start, in bounded memory, spilling to temporary files), which costs about twice the
// reading itself. Stepping SQLite's rows is most of the reading's time, so the rows are read in
// blocks by tasks on the pipeline's threads, each on a connection of its own (one is used by one
// thread at a time), a few blocks ahead of the merge: a run's blocks are rowid ranges, read side
// by side; a sorted query's, one after the other. The merge (the source node) adds the rows to
// chunks, and reads a block itself where no task has begun it. What is read ahead is bounded: 4
// blocks of 4,096 rows per run (a table has at most kMaxRuns) or per sorted query.
class TablesByStart {
 public:
  using AddRow = std::function<void(const RowBlock::Row& row, ImportedChunk* chunk)>;
  // TableQuery is what to read of a table or view: SELECT `columns` (the first the start time)
  // FROM `table` `joins` WHERE `where` ("" for every row); `start` names the start column; bit i
  // of `text_columns` set: column i is read as text (RowBlock).
  struct TableQuery {
    std::string table;
    std::string columns;
    std::string joins = {};
    std::string where = {};
    std::string start = "start";
    uint64_t text_columns = 0;
  };
  // kMaxRuns is how many runs of start order a table may hold to be read as it lies.
  static constexpr size_t kMaxRuns = 32;

  TablesByStart();
  TablesByStart(const TablesByStart&) = delete;
  TablesByStart& operator=(const TablesByStart&) = delete;
  // Waits for the blocks still being read.
  ~TablesByStart();

  // Add() reads `query`'s rows in start order, each added to a chunk by `add`, once Start() has
  // found how.
  void Add(const TableQuery& query, AddRow add) {
    pending_.push_back(Pending{query, std::move(add)});
  }
  // Start() finds each table's runs of start order (a pass over its start column, on a
  // connection of its own, a task each on `tasks` when given) and prepares the queries that read
  // them; the blocks are then read by tasks on `tasks` (inline without it).
  absl::Status Start(SqliteDatabase* db, std::unique_ptr<TaskGroup> tasks);
  // Fill() adds rows to `chunk` until it holds `records` or every query is done; false when
  // there was no row left to add.
  absl::StatusOr<bool> Fill(ImportedChunk* chunk, size_t records);
  // Done() is the share of the rows handed out, by the time they span: the last start added
  // against the first and last starts of the tables read as they lie (0 without such a table).
  double Done() const;

 private:
  struct Block;
  struct Table;
  struct Connection;
  // A run of start order, as its blocks' first and last rowids; a table's runs, or none.
  using Run = std::vector<std::pair<int64_t, int64_t>>;
  using Runs = std::optional<std::vector<Run>>;
  struct Pending {
    TableQuery query;
    AddRow add;
  };
  // StartRuns() is `query`'s runs of start order, cut into blocks, or nullopt where there are
  // more than kMaxRuns or it reads a view; `span` widens to its rows' first and last starts.
  static absl::StatusOr<Runs> StartRuns(SqliteDatabase* db, const TableQuery& query,
                                        std::pair<int64_t, int64_t>* span);
  absl::Status Prepare(SqliteDatabase* db, const Pending& table, const Runs& runs);
  // Advance() moves `table` to its next row, reading its next block where its block is done.
  absl::Status Advance(Table* table);
  // ScheduleBlocks() keeps `table`'s next blocks being read ahead of the merge.
  void ScheduleBlocks(Table* table);
  // AwaitBlock() is `table`'s next block, read: by a task, or here where none has begun it.
  absl::Status AwaitBlock(Table* table, std::shared_ptr<Block>* block);
  // ReadBlock() reads `block` of `table`.
  void ReadBlock(Table* table, Block* block);
  std::unique_ptr<Connection> TakeConnection(absl::Status* status);
  void GiveBackConnection(std::unique_ptr<Connection> connection);

  std::vector<Pending> pending_;
  std::string path_;
  // The first and last starts of the tables whose runs were found, and the last start added.
  int64_t first_start_ = INT64_MAX, last_start_ = INT64_MIN, added_start_ = INT64_MIN;
  std::vector<std::unique_ptr<Table>> tables_;
  std::mutex mutex_;  // guards connections_ and the blocks' `done`
  std::condition_variable block_done_;
  std::vector<std::unique_ptr<Connection>> connections_;  // free
  std::atomic<bool> cancelled_{false};  // set by ~TablesByStart: the blocks not begun are not read
  // Last, so that it goes first: its tasks read into the members above (~TablesByStart waits).
  std::unique_ptr<TaskGroup> tasks_;
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
  std::optional<int64_t> CorrelationOf(const RowBlock::Row& row, int64_t pid, int id) {
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
