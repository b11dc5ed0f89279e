// ImportedChunk fills a ParsedChunk from records read one at a time, as the importers read
// them: names are interned per chunk by the format's own key (a string id), so that a name's
// text is copied once per chunk, as ChunkParser does. Internal to the parse stage.
#ifndef TRACEFUSE_PARSE_IMPORTED_CHUNK_H_
#define TRACEFUSE_PARSE_IMPORTED_CHUNK_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/parse/chunk_parser.h"

namespace tracefuse {

// The categories that imported records count under, Kineto's names for the same events.
inline constexpr std::string_view kKernelCategory = "kernel";
inline constexpr std::string_view kMemcpyCategory = "gpu_memcpy";
inline constexpr std::string_view kMemsetCategory = "gpu_memset";
inline constexpr std::string_view kRuntimeCategory = "cuda_runtime";
inline constexpr std::string_view kAnnotationCategory = "user_annotation";
inline constexpr std::string_view kOperatorCategory = "cpu_op";
inline constexpr std::string_view kGraphReplayCategory = "cuda_graph_replay";

// ProcessCorrelations makes launches' correlation ids unique across the processes of one file:
// profilers number each process's calls from 1. The first process met keeps its ids.
class ProcessCorrelations {
 public:
  // Of() is call `id` of process `pid`.
  int64_t Of(int64_t pid, int64_t id) {
    if (pid != last_pid_ || last_index_ < 0) {
      last_index_ = processes_.try_emplace(pid, processes_.size()).first->second;
      last_pid_ = pid;
    }
    return (last_index_ << 40) + id;
  }

 private:
  absl::flat_hash_map<int64_t, int64_t> processes_;  // pid -> index, in order of appearance
  int64_t last_pid_ = 0, last_index_ = -1;
};

// HostThread is the CPU thread of a call or range: named "PID\tTID" in ParsedChunk::host, as the
// Kineto parser names threads.
struct HostThread {
  int64_t pid = 0;
  int64_t tid = 0;
};

// OperatorName() is the operator that a range of PyTorch's emit_nvtx names: its text less the
// fields emit_nvtx appends ("aten::linear, seq = 3, op_id = 5, sizes = [[2, 4]]" names
// aten::linear); other text is returned whole.
std::string_view OperatorName(std::string_view text);

class ImportedChunk {
 public:
  // `host_activity`: also fill ParsedChunk::host (ParseOptions::host_activity), from the ranges
  // (operators, annotations, steps) and the launches' threads.
  explicit ImportedChunk(bool host_activity = false) : host_activity_(host_activity) {}

  // Start() begins chunk number `seq` in `chunk`.
  void Start(ParsedChunk* chunk, uint64_t seq);

  // AddKernel() adds a kernel named by `name_key`, whose text `text_of(name_key)` gives the
  // first time the chunk meets it; `bad_times`: one without its times, counted and kept at zero
  // length (as ChunkParser keeps such a Kineto kernel).
  template <typename TextOf>
  void AddKernel(int64_t start_ns, int64_t end_ns, int64_t name_key, TextOf&& text_of,
                 int32_t device, int32_t stream, std::optional<int64_t> correlation,
                 bool bad_times = false) {
    KernelEvent& k = chunk_->kernels.emplace_back();
    k.ts_ns = start_ns;
    k.dur_ns = end_ns - start_ns;
    k.device = device;
    k.stream = stream;
    if (correlation) {
      k.correlation = *correlation;
      k.flags = KernelEvent::kHasCorrelation;
    }
    if (bad_times) {
      k.flags |= KernelEvent::kBadTimes;
      ++chunk_->kernels_with_bad_times;
    }
    k.name = Intern(&kernel_names_, &chunk_->names, name_key, text_of);
    ++kernels_;
  }

  // AddTransfer() adds a memcpy (`is_memset` false) or memset.
  void AddTransfer(bool is_memset, int64_t start_ns, int64_t end_ns, int32_t device, int32_t stream,
                   std::optional<int64_t> correlation) {
    // The vendors' tables name no transfer: each is named by its kind, as Kineto names them.
    uint32_t& name = transfer_names_[is_memset];
    if (name == kUnnamed) name = chunk_->transfer_names.Append(is_memset ? "Memset" : "Memcpy");
    chunk_->transfers.push_back(GpuTransfer{start_ns, end_ns - start_ns, correlation.value_or(0),
                                            device, stream, correlation.has_value(), name});
    ++(is_memset ? memsets_ : memcpys_);
  }

  // AddLaunch() adds a runtime or driver call named by `api_key` (text as for AddKernel()), made
  // by `thread`.
  template <typename TextOf>
  void AddLaunch(int64_t start_ns, int64_t end_ns, int64_t correlation, int64_t api_key,
                 TextOf&& text_of, HostThread thread) {
    const uint32_t api = Intern(&api_names_, &chunk_->launch_apis, api_key, text_of);
    chunk_->launches.push_back(Launch{start_ns, end_ns - start_ns, correlation, api});
    std::string_view name = chunk_->launch_apis[api];
    if (name.substr(0, 3) == "hip") ++chunk_->evidence.hip_runtime_calls;
    if (name.substr(0, 4) == "cuda") ++chunk_->evidence.cuda_runtime_calls;
    if (host_activity_) {
      chunk_->host.calls.push_back(RuntimeCall{start_ns, correlation, Thread(thread),
                                               HostName(name), static_cast<uint32_t>(records())});
    }
    ++launches_;
  }

  // AddRange() adds a range of `thread` (NVTX, roctx): an operator where emit_nvtx wrote it
  // (OperatorName(); a name with "::", as aten::mm), a step where it names one
  // (IsStepAnnotation()), else an annotation of the user's.
  void AddRange(int64_t start_ns, int64_t end_ns, std::string_view text, HostThread thread);

  // AddWholeGraphReplay() counts a graph replay whose kernels the file does not hold.
  void AddWholeGraphReplay(int64_t start_ns, int64_t end_ns) {
    ++chunk_->whole_graph_replays;
    chunk_->whole_graph_replay_ns += end_ns - start_ns;
    ++graph_replays_;
  }

  // records() is how many records the chunk holds.
  size_t records() const {
    return kernels_ + memcpys_ + memsets_ + launches_ + annotations_ + operators_ + graph_replays_;
  }

  // Finish() completes the chunk: its event count and categories.
  void Finish();

 private:
  template <typename TextOf>
  static uint32_t Intern(absl::flat_hash_map<int64_t, uint32_t>* ids, InternedStrings* strings,
                         int64_t key, TextOf& text_of) {
    auto [it, inserted] = ids->try_emplace(key, 0);
    if (inserted) it->second = strings->Append(text_of(key));
    return it->second;
  }

  uint32_t Thread(HostThread thread);
  uint32_t HostName(std::string_view name);

  bool host_activity_;
  ParsedChunk* chunk_ = nullptr;
  absl::flat_hash_map<int64_t, uint32_t> kernel_names_, api_names_;
  static constexpr uint32_t kUnnamed = UINT32_MAX;
  uint32_t transfer_names_[2] = {kUnnamed, kUnnamed};  // memcpy's, memset's in the chunk
  absl::flat_hash_map<std::pair<int64_t, int64_t>, uint32_t> threads_;
  StringMap<uint32_t> host_names_;
  uint64_t kernels_ = 0, memcpys_ = 0, memsets_ = 0, launches_ = 0, annotations_ = 0,
           operators_ = 0, graph_replays_ = 0;
};

}  // namespace tracefuse

#endif  // TRACEFUSE_PARSE_IMPORTED_CHUNK_H_
