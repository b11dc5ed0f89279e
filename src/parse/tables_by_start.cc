// TablesByStart and RowBlock (sqlite_database.h): the rows of a SQLite importer's tables, read in
// blocks on the pipeline's threads and merged by start.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <utility>

#include "sqlite_database.h"
#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

// How many rows a block holds, and how many blocks of a run are read ahead of the merge.
constexpr size_t kBlockRows = 4096;
constexpr size_t kBlocksAhead = 4;

}  // namespace

void RowBlock::Clear(int columns, uint64_t text_columns) {
  columns_ = static_cast<size_t>(columns);
  text_columns_ = text_columns;
  cells_.clear();
  cells_.reserve(kBlockRows * columns_);
  text_.clear();
}

void RowBlock::Append(const SqliteQuery& query) {
  for (size_t c = 0; c < columns_; ++c) {
    // One call into the statement a cell (its value), the rest on the value: a third of the
    // time of IsNull() and Int(). The value is "unprotected": read on the connection's one
    // thread (SQLITE_OPEN_NOMUTEX), before the next step.
    sqlite3_value* value = query.Value(static_cast<int>(c));
    Cell& cell = cells_.emplace_back();
    cell.null = sqlite3_value_type(value) == SQLITE_NULL;
    if (c < 64 && (text_columns_ >> c & 1) != 0) {
      const unsigned char* text = sqlite3_value_text(value);
      cell.value = static_cast<int64_t>(text_.size());
      if (text != nullptr) {
        cell.text_size = static_cast<uint32_t>(sqlite3_value_bytes(value));
        text_.append(reinterpret_cast<const char*>(text), cell.text_size);
      }
    } else {
      cell.value = sqlite3_value_int64(value);
    }
  }
}

// Block is a block of a table's rows, read by a task or by the merge, whichever takes it first.
struct TablesByStart::Block {
  std::pair<int64_t, int64_t> rowids;  // a run's block: the first and last of its rows
  RowBlock rows;
  absl::Status status;
  bool last_of_query = false;      // a sorted query's block: none follows
  std::atomic<bool> taken{false};  // a thread reads it, or has
  bool done = false;               // read by a task (guarded by mutex_)
};

// Table is one query read in start order: a run of a table (its blocks rowid ranges, read side by
// side on any connection), or a query sorted by SQLite (its blocks read in turn on its own
// connection).
struct TablesByStart::Table {
  size_t index = 0;  // in tables_: which of a connection's queries is this table's
  AddRow add;
  std::string sql;  // a run's: ?1 and ?2 bound to a block's rowids
  int columns = 0;
  uint64_t text_columns = 0;
  bool by_rowid = false;
  std::vector<std::pair<int64_t, int64_t>> blocks;  // a run's: each block's first and last rowid
  size_t next_block = 0;                            // the first not yet scheduled
  bool all_scheduled = false;
  std::unique_ptr<Connection> own;  // a sorted query's
  std::deque<std::shared_ptr<Block>> ahead;
  std::shared_ptr<Block> block;  // the block being added, at row `at`
  size_t at = 0;
  bool started = false, has_row = false;
  int64_t start = 0;  // the start of the row at `at`
};

// Connection is a connection of the tasks' own, with the queries it has prepared by table.
struct TablesByStart::Connection {
  std::unique_ptr<SqliteDatabase> db;
  std::vector<std::unique_ptr<SqliteQuery>> queries;

  absl::StatusOr<SqliteQuery*> QueryOf(const Table& table) {
    if (queries.size() <= table.index) queries.resize(table.index + 1);
    std::unique_ptr<SqliteQuery>& query = queries[table.index];
    if (query == nullptr) {
      absl::StatusOr<std::unique_ptr<SqliteQuery>> prepared = db->Prepare(table.sql);
      if (!prepared.ok()) return prepared.status();
      query = std::move(*prepared);
    }
    return query.get();
  }
};

TablesByStart::TablesByStart() = default;

TablesByStart::~TablesByStart() {
  cancelled_ = true;
  if (tasks_) tasks_->Wait();
}

absl::StatusOr<TablesByStart::Runs> TablesByStart::StartRuns(SqliteDatabase* db,
                                                             const TableQuery& query,
                                                             std::pair<int64_t, int64_t>* span) {
  if (!db->IsTable(query.table)) return Runs();  // a view has no rowid of its own
  const std::string rowid = StrCat(query.table, ".rowid");
  absl::StatusOr<std::unique_ptr<SqliteQuery>> starts = db->Prepare(
      StrCat("SELECT ", rowid, ", ", query.table, ".", query.start, " FROM ", query.table,
             query.where.empty() ? "" : StrCat(" WHERE ", query.where), " ORDER BY ", rowid));
  if (!starts.ok()) return starts.status();
  std::vector<Run> runs;
  int64_t last_start = 0;
  size_t block_rows = 0;
  while (true) {
    absl::StatusOr<bool> row = (*starts)->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    const int64_t id = (*starts)->Int(0), start = (*starts)->Int(1);
    if (runs.empty() || start < last_start) {
      if (runs.size() == kMaxRuns) return Runs();
      runs.emplace_back();
      block_rows = kBlockRows;
    }
    if (block_rows == kBlockRows) {  // the run's next block begins
      runs.back().emplace_back(id, id);
      block_rows = 0;
    }
    runs.back().back().second = id;
    ++block_rows;
    last_start = start;
    span->first = std::min(span->first, start);
    span->second = std::max(span->second, start);
  }
  return Runs(std::move(runs));
}

absl::Status TablesByStart::Start(SqliteDatabase* db, std::unique_ptr<TaskGroup> tasks) {
  tasks_ = std::move(tasks);
  path_ = db->path();
  const std::vector<Pending> pending = std::exchange(pending_, {});
  std::vector<absl::StatusOr<Runs>> runs(pending.size(), Runs());
  std::vector<std::pair<int64_t, int64_t>> spans(pending.size(), {INT64_MAX, INT64_MIN});
  try {
    for (size_t i = 0; i < pending.size(); ++i) {
      // A view has no runs to find (StartRuns()); a table's pass runs on a connection of its
      // own, since one is used by one thread at a time (SQLITE_OPEN_NOMUTEX).
      if (tasks_ == nullptr || !db->IsTable(pending[i].query.table)) {
        runs[i] = StartRuns(db, pending[i].query, &spans[i]);
        continue;
      }
      tasks_->Run([db, &pending, &runs, &spans, i] {
        absl::StatusOr<std::unique_ptr<SqliteDatabase>> own = SqliteDatabase::Open(db->path());
        runs[i] = own.ok() ? StartRuns(own->get(), pending[i].query, &spans[i]) : own.status();
      });
    }
  } catch (...) {  // the tasks write into `runs`: they end before it does
    if (tasks_ != nullptr) tasks_->Wait();
    throw;
  }
  if (tasks_ != nullptr) tasks_->Wait();
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!runs[i].ok()) return runs[i].status();
    if (absl::Status st = Prepare(db, pending[i], *runs[i]); !st.ok()) return st;
    if (*runs[i]) {  // a table sorted by SQLite spans what it spans: unknown
      first_start_ = std::min(first_start_, spans[i].first);
      last_start_ = std::max(last_start_, spans[i].second);
    }
  }
  for (const std::unique_ptr<Table>& table : tables_) ScheduleBlocks(table.get());
  return absl::OkStatus();
}

absl::Status TablesByStart::Prepare(SqliteDatabase* db, const Pending& table, const Runs& runs) {
  const TableQuery& query = table.query;
  const std::string select =
      StrCat("SELECT ", query.columns, " FROM ", query.table, " ", query.joins, " WHERE ");
  const std::string where = query.where.empty() ? "1" : StrCat("(", query.where, ")");
  auto add_table = [&](std::string sql) -> absl::StatusOr<Table*> {
    absl::StatusOr<std::unique_ptr<SqliteQuery>> prepared = db->Prepare(sql);  // checked here
    if (!prepared.ok()) return prepared.status();
    auto t = std::make_unique<Table>();
    t->index = tables_.size();
    t->add = table.add;
    t->sql = std::move(sql);
    t->columns = (*prepared)->columns();
    t->text_columns = query.text_columns;
    tables_.push_back(std::move(t));
    return tables_.back().get();
  };
  if (!runs) {
    absl::StatusOr<Table*> sorted =
        add_table(StrCat(select, where, " ORDER BY ", query.table, ".", query.start));
    if (!sorted.ok()) return sorted.status();
    absl::Status opened;
    (*sorted)->own = TakeConnection(&opened);
    if ((*sorted)->own == nullptr) return opened;
    return (*sorted)->own->QueryOf(**sorted).status();
  }
  const std::string rowid = StrCat(query.table, ".rowid");
  for (const Run& blocks : *runs) {
    absl::StatusOr<Table*> run =
        add_table(StrCat(select, rowid, " BETWEEN ?1 AND ?2 AND ", where, " ORDER BY ", rowid));
    if (!run.ok()) return run.status();
    (*run)->by_rowid = true;
    (*run)->blocks = blocks;
  }
  return absl::OkStatus();
}

void TablesByStart::ScheduleBlocks(Table* table) {
  // A sorted query's next block goes on from where the last one ends: one at a time, the next
  // once the last is read (AwaitBlock()).
  while (!table->all_scheduled && table->ahead.size() < (table->by_rowid ? kBlocksAhead : 1)) {
    auto block = std::make_shared<Block>();
    if (table->by_rowid) {
      block->rowids = table->blocks[table->next_block++];
      table->all_scheduled = table->next_block == table->blocks.size();
    }
    table->ahead.push_back(block);
    if (tasks_ == nullptr) continue;  // read by the merge, when it comes to it
    tasks_->Run([this, table, block] {
      if (cancelled_ || block->taken.exchange(true)) return;  // the merge came to it first
      try {
        ReadBlock(table, block.get());
      } catch (const std::bad_alloc&) {  // said by the merge, which waits for `done`
        block->status = absl::ResourceExhaustedError(StrCat(path_, ": out of memory"));
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        block->done = true;
      }
      block_done_.notify_all();
    });
  }
}

absl::Status TablesByStart::AwaitBlock(Table* table, std::shared_ptr<Block>* block) {
  block->reset();
  if (table->ahead.empty()) return absl::OkStatus();  // every block has been read
  std::shared_ptr<Block> next = std::move(table->ahead.front());
  table->ahead.pop_front();
  if (!next->taken.exchange(true)) {
    ReadBlock(table, next.get());
  } else {
    std::unique_lock<std::mutex> lock(mutex_);
    block_done_.wait(lock, [&next] { return next->done; });
  }
  if (!next->status.ok()) {  // a failed query is not read on
    table->all_scheduled = true;
    return next->status;
  }
  if (!table->by_rowid) table->all_scheduled = next->last_of_query;
  ScheduleBlocks(table);
  *block = std::move(next);
  return absl::OkStatus();
}

void TablesByStart::ReadBlock(Table* table, Block* block) {
  std::unique_ptr<Connection> connection;
  SqliteQuery* query = nullptr;
  if (table->by_rowid) {
    connection = TakeConnection(&block->status);
    if (connection == nullptr) return;
    absl::StatusOr<SqliteQuery*> prepared = connection->QueryOf(*table);
    if (!prepared.ok()) {
      block->status = prepared.status();
      return;
    }
    query = *prepared;
    query->Bind(1, block->rowids.first);
    query->Bind(2, block->rowids.second);
  } else {
    query = table->own->queries[table->index].get();
  }
  block->rows.Clear(table->columns, table->text_columns);
  while (table->by_rowid || block->rows.size() < kBlockRows) {
    absl::StatusOr<bool> row = query->Step();
    if (!row.ok()) {
      block->status = row.status();
      break;
    }
    if (!*row) {
      block->last_of_query = true;
      break;
    }
    block->rows.Append(*query);
  }
  if (table->by_rowid) {
    if (absl::Status reset = query->Reset(); block->status.ok()) block->status = reset;
    GiveBackConnection(std::move(connection));
  }
}

std::unique_ptr<TablesByStart::Connection> TablesByStart::TakeConnection(absl::Status* status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!connections_.empty()) {
      std::unique_ptr<Connection> connection = std::move(connections_.back());
      connections_.pop_back();
      return connection;
    }
  }
  absl::StatusOr<std::unique_ptr<SqliteDatabase>> db = SqliteDatabase::Open(path_);
  if (!db.ok()) {
    *status = db.status();
    return nullptr;
  }
  auto connection = std::make_unique<Connection>();
  connection->db = std::move(*db);
  return connection;
}

void TablesByStart::GiveBackConnection(std::unique_ptr<Connection> connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  connections_.push_back(std::move(connection));
}

absl::Status TablesByStart::Advance(Table* table) {
  table->started = true;
  if (table->block != nullptr && ++table->at < table->block->rows.size()) {
    table->start = table->block->rows.row(table->at).Int(0);
    return absl::OkStatus();
  }
  while (true) {  // the next block that holds a row (a run's rowids may hold none)
    if (absl::Status st = AwaitBlock(table, &table->block); !st.ok()) {
      table->has_row = false;
      return st;
    }
    table->at = 0;
    table->has_row = table->block != nullptr && table->block->rows.size() > 0;
    if (table->has_row) table->start = table->block->rows.row(0).Int(0);
    if (table->has_row || table->block == nullptr) return absl::OkStatus();
  }
}

absl::StatusOr<bool> TablesByStart::Fill(ImportedChunk* chunk, size_t records) {
  for (const std::unique_ptr<Table>& t : tables_) {
    if (t->started) continue;
    if (absl::Status st = Advance(t.get()); !st.ok()) return st;
  }
  bool added = false;
  while (chunk->records() < records) {
    Table* next = nullptr;
    for (const std::unique_ptr<Table>& t : tables_) {
      if (t->has_row && (next == nullptr || t->start < next->start)) next = t.get();
    }
    if (next == nullptr) break;
    // `next` goes on while it stays first: before the tables added before it at its start, and
    // at or before the others'.
    int64_t before_bound = INT64_MAX, after_bound = INT64_MAX;
    for (const std::unique_ptr<Table>& t : tables_) {
      if (!t->has_row || t.get() == next) continue;
      int64_t& bound = t->index < next->index ? before_bound : after_bound;
      bound = std::min(bound, t->start);
    }
    do {
      next->add(next->block->rows.row(next->at), chunk);
      added_start_ = next->start;
      added = true;
      if (absl::Status st = Advance(next); !st.ok()) return st;
    } while (next->has_row && next->start < before_bound && next->start <= after_bound &&
             chunk->records() < records);
  }
  return added;
}

double TablesByStart::Done() const {
  if (first_start_ >= last_start_ || added_start_ < first_start_) return 0;
  return std::min(1.0, double(added_start_ - first_start_) / double(last_start_ - first_start_));
}

}  // namespace tracefuse
