// The Nsight Systems importer: `nsys export --type sqlite` (schema 2.x and 3.x).
//
// What it reads, table by table, each ordered by start:
//   CUPTI_ACTIVITY_KIND_KERNEL   kernels: demangledName (a StringIds id), device, stream,
//                                correlationId, globalPid
//   CUPTI_ACTIVITY_KIND_MEMCPY   memcpy activities (likewise without a name)
//   CUPTI_ACTIVITY_KIND_MEMSET   memset activities
//   CUPTI_ACTIVITY_KIND_RUNTIME  runtime and driver calls: the launches (nameId)
//   CUPTI_ACTIVITY_KIND_GRAPH_TRACE  graph replays traced whole (--cuda-graph-trace=graph): their
//                                kernels are not in the file; counted, never taken for kernels
//   NVTX_EVENTS                  push/pop and start/end ranges: steps where they name one
//   TARGET_INFO_GPU              the GPUs' names; with TARGET_INFO_CUDA_DEVICE (3.x) or its own
//                                cuDevice (2.x), each deviceId's CUDA ordinal
// Correlation ids are numbered per process, so each carries its process (globalPid bits 24-47).
// RUNTIME rows of eventClass 67 (TRACE_PROCESS_EVENT_CUDABACKTRACE, with --cudabacktrace) repeat
// a call of class 0 (runtime) or 1 (driver) to hold its stack, and are skipped; runtime names
// drop the API version that older exports add (cudaMalloc_v3020).
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "imported_chunk.h"
#include "importers.h"
#include "sqlite_database.h"
#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

constexpr std::string_view kKernelTable = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr std::string_view kMemcpyTable = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr std::string_view kMemsetTable = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr std::string_view kRuntimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr std::string_view kNvtxTable = "NVTX_EVENTS";
constexpr std::string_view kGraphTable = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
// CUPTI_ACTIVITY_KIND_RUNTIME.eventClass of a call's stack (ENUM_NSYS_EVENT_CLASS).
constexpr int kCudaBacktraceClass = 67;
// NVTX_EVENTS.eventType of ranges (ENUM_NSYS_EVENT_TYPE): push/pop and start/end.
constexpr int kNvtxPushPopRange = 59, kNvtxStartEndRange = 60;

// WithoutVersion() is a CUDA API name less the version suffix that older exports add
// ("cudaLaunchKernel_v7000").
std::string_view WithoutVersion(std::string_view name) {
  size_t at = name.rfind("_v");
  if (at == std::string_view::npos || at + 2 == name.size()) return name;
  for (size_t i = at + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, at);
}

uint32_t ProcessOf(int64_t global_id) {
  return static_cast<uint32_t>((global_id >> 24) & 0xFFFFFF);
}

// ThreadOf() is a globalTid's process and thread (bits 24-47 and 0-23).
HostThread ThreadOf(int64_t global_tid) {
  return HostThread{ProcessOf(global_tid), global_tid & 0xFFFFFF};
}

class NsysSqliteImporter : public SqliteImporter {
 public:
  NsysSqliteImporter(std::unique_ptr<SqliteDatabase> db, const ImportOptions& options)
      : SqliteImporter(std::move(db), options, TraceFormat::kNsysSqlite) {}

  absl::Status Open() {
    if (absl::Status st = ReadGpus(); !st.ok()) return st;
    absl::StatusOr<std::unique_ptr<SqliteQuery>> name =
        db_->Prepare("SELECT value FROM StringIds WHERE id = ?");
    if (!name.ok()) return name.status();
    string_query_ = std::move(*name);
    using Query = TablesByStart::TableQuery;
    if (db_->Has(kRuntimeTable)) {
      absl::StatusOr<bool> classes = db_->HasColumn(kRuntimeTable, "eventClass");
      if (!classes.ok()) return classes.status();
      tables_.Add(
          Query{std::string(kRuntimeTable), "start, end, globalTid, correlationId, nameId", "",
                StrCat("correlationId IS NOT NULL",
                       *classes ? StrCat(" AND eventClass <> ", kCudaBacktraceClass) : "")},
          [this](const RowBlock::Row& r, ImportedChunk* chunk) {
            chunk->AddLaunch(
                r.Int(0), r.Int(1), correlations_.Of(ProcessOf(r.Int(2)), r.Int(3)), r.Int(4),
                [this](int64_t id) { return WithoutVersion(Text(id)); }, ThreadOf(r.Int(2)));
          });
    }
    if (db_->Has(kKernelTable)) {
      absl::StatusOr<bool> demangled = db_->HasColumn(kKernelTable, "demangledName");
      if (!demangled.ok()) return demangled.status();
      tables_.Add(Query{std::string(kKernelTable),
                        StrCat("start, end, deviceId, streamId, correlationId, globalPid, ",
                               *demangled ? "demangledName" : "shortName")},
                  [this](const RowBlock::Row& r, ImportedChunk* chunk) {
                    chunk->AddKernel(
                        r.Int(0), r.Int(1), r.Int(6), [this](int64_t id) { return Text(id); },
                        Device(r.Int(2)), static_cast<int32_t>(r.Int(3)),
                        CorrelationOf(r, ProcessOf(r.Int(5)), 4));
                  });
    }
    for (const auto& [table, sets] :
         {std::pair{kMemcpyTable, false}, std::pair{kMemsetTable, true}}) {
      if (!db_->Has(table)) continue;
      const bool is_memset = sets;  // a structured binding cannot be captured (C++17)
      tables_.Add(
          Query{std::string(table), "start, end, deviceId, streamId, correlationId, globalPid"},
          [this, is_memset](const RowBlock::Row& r, ImportedChunk* chunk) {
            chunk->AddTransfer(is_memset, r.Int(0), r.Int(1), Device(r.Int(2)),
                               static_cast<int32_t>(r.Int(3)),
                               CorrelationOf(r, ProcessOf(r.Int(5)), 4));
          });
    }
    if (db_->Has(kGraphTable)) {
      tables_.Add(Query{std::string(kGraphTable), "start, end"},
                  [](const RowBlock::Row& r, ImportedChunk* chunk) {
                    chunk->AddWholeGraphReplay(r.Int(0), r.Int(1));
                  });
    }
    if (db_->Has(kNvtxTable)) {
      // A registered string's text is in StringIds (textId), a plain one in `text`; exports
      // before textId have only `text`.
      absl::StatusOr<bool> registered = db_->HasColumn(kNvtxTable, "textId");
      if (!registered.ok()) return registered.status();
      tables_.Add(Query{std::string(kNvtxTable),
                        StrCat("NVTX_EVENTS.start, NVTX_EVENTS.end, COALESCE(NVTX_EVENTS.text, ",
                               *registered ? "s.value, " : "", "''), NVTX_EVENTS.globalTid"),
                        *registered ? "LEFT JOIN StringIds s ON s.id = NVTX_EVENTS.textId" : "",
                        StrCat("eventType IN (", kNvtxPushPopRange, ", ", kNvtxStartEndRange,
                               ") AND NVTX_EVENTS.end IS NOT NULL"),
                        "start", 1u << 2},
                  [](const RowBlock::Row& r, ImportedChunk* chunk) {
                    chunk->AddRange(r.Int(0), r.Int(1), r.Text(2), ThreadOf(r.Int(3)));
                  });
    }
    return absl::OkStatus();
  }

 private:
  // ReadGpus() names the GPU and numbers the devices by their CUDA ordinals, where no GPU has two
  // and no two share one (else deviceId stays); a GPU no process used has none.
  absl::Status ReadGpus() {
    if (!db_->Has("TARGET_INFO_GPU")) return absl::OkStatus();
    absl::StatusOr<bool> cu_device = db_->HasColumn("TARGET_INFO_GPU", "cuDevice");
    if (!cu_device.ok()) return cu_device.status();
    std::string sql = "SELECT id, name, NULL FROM TARGET_INFO_GPU";
    if (db_->Has("TARGET_INFO_CUDA_DEVICE")) {
      sql =
          "SELECT g.id, g.name, d.cudaId FROM TARGET_INFO_GPU g "
          "LEFT JOIN TARGET_INFO_CUDA_DEVICE d ON d.gpuId = g.id";
    } else if (*cu_device) {
      sql = "SELECT id, name, cuDevice FROM TARGET_INFO_GPU";
    }
    absl::StatusOr<std::unique_ptr<SqliteQuery>> gpus = db_->Prepare(StrCat(sql, " ORDER BY 1"));
    if (!gpus.ok()) return gpus.status();
    absl::flat_hash_map<int64_t, int64_t> ordinals;
    absl::flat_hash_map<int64_t, int64_t> ids_of_ordinal;
    bool unique = true;
    while (true) {
      absl::StatusOr<bool> row = (*gpus)->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      const int64_t id = (*gpus)->Int(0);
      if (!metadata_.gpu_name && !(*gpus)->IsNull(1)) {
        metadata_.gpu_name = std::string((*gpus)->Text(1));
      }
      if ((*gpus)->IsNull(2)) continue;  // a GPU no process used
      const int64_t ordinal = (*gpus)->Int(2);
      auto [at, new_id] = ordinals.try_emplace(id, ordinal);
      auto [of, new_ordinal] = ids_of_ordinal.try_emplace(ordinal, id);
      if ((!new_id && at->second != ordinal) || (!new_ordinal && of->second != id)) unique = false;
    }
    if (unique) ordinals_ = std::move(ordinals);
    return absl::OkStatus();
  }

  int32_t Device(int64_t device_id) const {
    if (auto it = ordinals_.find(device_id); it != ordinals_.end()) {
      return static_cast<int32_t>(it->second);
    }
    return static_cast<int32_t>(device_id);
  }

  // Text() is string `id` of StringIds; "" for an id it lacks.
  std::string_view Text(int64_t id) {
    auto [it, inserted] = strings_.try_emplace(id);
    if (inserted) it->second = LookUp(string_query_.get(), id).value_or("");
    return it->second;
  }

  std::unique_ptr<SqliteQuery> string_query_;
  absl::flat_hash_map<int64_t, std::string> strings_;  // StringIds met so far
  absl::flat_hash_map<int64_t, int64_t> ordinals_;     // deviceId -> CUDA ordinal
};

}  // namespace

bool IsNsysExport(const SqliteDatabase& db) {
  return db.Has("StringIds") && (db.Has("EXPORT_META_DATA") || db.Has("META_DATA_EXPORT") ||
                                 db.Has(kKernelTable) || db.Has("TARGET_INFO_GPU"));
}

absl::StatusOr<std::unique_ptr<TraceImporter>> OpenNsysSqlite(std::unique_ptr<SqliteDatabase> db,
                                                              const ImportOptions& options) {
  auto importer = std::make_unique<NsysSqliteImporter>(std::move(db), options);
  if (absl::Status st = importer->Open(); !st.ok()) return st;
  return importer;
}

}  // namespace tracefuse
