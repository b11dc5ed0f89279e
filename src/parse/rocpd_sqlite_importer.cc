// The rocpd importer: the SQLite database that rocprofv3 writes by default since ROCm 7 (schema
// version 3), one per profiled process, read through the views it holds.
//
//   kernels         start, end, agent_type_index (the GPU's index), stream_id, stack_id, kernel_id,
//                   pid; names from rocpd_info_kernel_symbol.display_name by kernel_id
//   memory_copies   start, end, dst/src_agent_type_index and _type, stream_id, stack_id, pid
//   regions         HIP_* calls (the launches) and MARKER_* ranges (roctx: their text is
//                   extdata's message), with start, end, pid, stack_id
//   rocpd_info_agent  the GPUs' product names
// A kernel and the HIP call that launched it share stack_id, the internal correlation id (the
// views' corr_id is the external id, 0 unless kernels are renamed).
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "imported_chunk.h"
#include "importers.h"
#include "sqlite_database.h"
#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

class RocpdSqliteImporter : public SqliteImporter {
 public:
  RocpdSqliteImporter(std::unique_ptr<SqliteDatabase> db, const ImportOptions& options)
      : SqliteImporter(std::move(db), options, TraceFormat::kRocpdSqlite) {}

  absl::Status Open() {
    for (std::string_view view : {"kernels", "regions", "memory_copies"}) {
      if (!db_->Has(view)) {
        return UnsupportedTraceError(StrCat(db_->path(), ": a rocpd database without its '", view,
                                            "' view: tracefuse reads rocpd schema 3 (ROCm 7)"));
      }
    }
    absl::StatusOr<std::unique_ptr<SqliteQuery>> symbol = db_->Prepare(
        "SELECT COALESCE(display_name, kernel_name, '') FROM rocpd_info_kernel_symbol "
        "WHERE id = ?");
    if (!symbol.ok()) return symbol.status();
    symbol_query_ = std::move(*symbol);
    absl::StatusOr<std::unique_ptr<SqliteQuery>> gpu = db_->Prepare(
        "SELECT product_name FROM rocpd_info_agent WHERE type = 'GPU' AND type_index = ?");
    if (!gpu.ok()) return gpu.status();
    gpu_query_ = std::move(*gpu);
    using Query = TablesByStart::TableQuery;
    tables_.Add(
        Query{"regions",
              "start, end, pid, stack_id, name, category LIKE 'MARKER%', "
              "CASE WHEN category LIKE 'MARKER%' THEN json_extract(extdata, '$.message') END, "
              "tid",
              "", "category LIKE 'HIP%' OR category LIKE 'MARKER%'", "start",
              (1u << 4) | (1u << 6)},
        [this](const RowBlock::Row& r, ImportedChunk* chunk) {
          const HostThread thread{r.Int(2), r.Int(7)};
          if (r.Int(5) != 0) {
            chunk->AddRange(r.Int(0), r.Int(1), r.IsNull(6) ? r.Text(4) : r.Text(6), thread);
            return;
          }
          chunk->AddLaunch(
              r.Int(0), r.Int(1), correlations_.Of(r.Int(2), r.Int(3)), ApiKey(r.Text(4)),
              [this](int64_t key) { return api_names_[static_cast<size_t>(key)]; }, thread);
        });
    tables_.Add(Query{"kernels",
                      "start, end, agent_type_index, agent_type = 'GPU', stream_id, stack_id, pid, "
                      "kernel_id"},
                [this](const RowBlock::Row& r, ImportedChunk* chunk) {
                  const int32_t device = r.Int(3) != 0 ? static_cast<int32_t>(r.Int(2)) : -1;
                  if (!metadata_.gpu_name && device >= 0) NameGpu(device);
                  chunk->AddKernel(
                      r.Int(0), r.Int(1), r.Int(7), [this](int64_t id) { return KernelName(id); },
                      device, static_cast<int32_t>(r.Int(4)), CorrelationOf(r, r.Int(6), 5));
                });
    tables_.Add(Query{"memory_copies",
                      "start, end, dst_agent_type_index, dst_agent_type = 'GPU', "
                      "src_agent_type_index, src_agent_type = 'GPU', stream_id, stack_id, pid"},
                [this](const RowBlock::Row& r, ImportedChunk* chunk) {
                  // The GPU end of the copy.
                  int32_t device = -1;
                  if (r.Int(3) != 0) {
                    device = static_cast<int32_t>(r.Int(2));
                  } else if (r.Int(5) != 0) {
                    device = static_cast<int32_t>(r.Int(4));
                  }
                  chunk->AddTransfer(false, r.Int(0), r.Int(1), device,
                                     r.IsNull(6) ? -1 : static_cast<int32_t>(r.Int(6)),
                                     CorrelationOf(r, r.Int(8), 7));
                });
    return absl::OkStatus();
  }

 private:
  int64_t ApiKey(std::string_view name) {
    auto [it, inserted] = api_ids_.try_emplace(name, static_cast<int64_t>(api_names_.size()));
    if (inserted) api_names_.emplace_back(name);
    return it->second;
  }

  std::string_view KernelName(int64_t id) {
    auto [it, inserted] = kernel_names_.try_emplace(id);
    if (inserted) it->second = LookUp(symbol_query_.get(), id).value_or("");
    return it->second;
  }

  // NameGpu() names the GPU by the first device that ran a kernel and has a name.
  void NameGpu(int32_t device) {
    if (!unnamed_devices_.insert(device).second) return;  // looked up already
    metadata_.gpu_name = LookUp(gpu_query_.get(), device);
  }

  std::unique_ptr<SqliteQuery> symbol_query_, gpu_query_;
  absl::flat_hash_map<int64_t, std::string> kernel_names_;  // by kernel_id, met so far
  absl::flat_hash_set<int32_t> unnamed_devices_;            // whose name was looked up
  StringMap<int64_t> api_ids_;
  std::vector<std::string> api_names_;
};

}  // namespace

bool IsRocpdDatabase(const SqliteDatabase& db) {
  return db.Has("rocpd_metadata") || db.Has("rocpd_kernel_dispatch");
}

absl::StatusOr<std::unique_ptr<TraceImporter>> OpenRocpdSqlite(std::unique_ptr<SqliteDatabase> db,
                                                               const ImportOptions& options) {
  auto importer = std::make_unique<RocpdSqliteImporter>(std::move(db), options);
  if (absl::Status st = importer->Open(); !st.ok()) return st;
  return importer;
}

}  // namespace tracefuse
