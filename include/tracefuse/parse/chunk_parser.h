// Stage 3, library tracefuse_parse (after scan): simdjson On-Demand over event chunks, giving
// compact kernel records. platform.h belongs to the same library.
//
// One ChunkParser per worker thread: its simdjson parser and its padded input buffer are sized
// once and reused, because first-touch page faults on fresh memory (about 0.3 GB/s here) would
// otherwise cost more than the parse itself (about 2.9 GB/s per core, warm). Kernel names are
// de-duplicated per chunk, so the serial reducer downstream handles each distinct name of a chunk
// once instead of hashing every kernel's name.
#ifndef TRACEFUSE_PARSE_CHUNK_PARSER_H_
#define TRACEFUSE_PARSE_CHUNK_PARSER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tracefuse/parse/trace_format.h"
#include "tracefuse/scan/event_chunker.h"

namespace tracefuse {

// Converts a JSON number of microseconds ("1751410836123.456", "12", "-3.5", "1.2e3") to integer
// nanoseconds, exactly for up to three fractional digits (further digits round half away from
// zero). Returns nullopt for anything that is not a finite number in range.
std::optional<int64_t> MicrosToNanos(std::string_view json_number);

struct KernelEvent {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = 0;
  int64_t external_id = 0;
  uint32_t name = 0;  // index into ParsedChunk::names
  int32_t stream = -1;
  int32_t device = -1;  // args.device, else the event's pid when it is an integer
  uint8_t flags = 0;

  static constexpr uint8_t kHasCorrelation = 1;
  static constexpr uint8_t kHasExternalId = 2;
  static constexpr uint8_t kHasKind = 4;   // args.kind, written by roctracer (AMD) only
  static constexpr uint8_t kBadTimes = 8;  // ts or dur missing or not a number (taken as 0)
};

// GpuTransfer is a memcpy or memset event (cat gpu_memcpy or gpu_memset; Memcpy or Memset in
// 2021-era traces) with a numeric ts and dur, times in nanoseconds.
struct GpuTransfer {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = 0;
  int32_t device = -1;  // as KernelEvent::device
  int32_t stream = -1;  // args.stream, -1 without one
  bool has_correlation = false;
  uint32_t name = 0;  // index into ParsedChunk::transfer_names
};

// Launch is a runtime or driver call with a correlation id and a numeric ts: what gives the GPU
// events of the same correlation their profiler step (gpu_timeline.h), and what the GPU waited
// for before them (idle causes, launch statistics). Read in every command. A call without a
// numeric dur counts as taking no time.
struct Launch {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = 0;
  uint32_t api = 0;  // the call's name: index into ParsedChunk::launch_apis
};

// StepAnnotation is an event that marks a profiler step (IsStepAnnotation(): a user_annotation,
// or a ProfilerStep#N cpu_op in 2021-era traces), with a numeric ts and dur; `name` indexes
// ParsedChunk::step_names.
struct StepAnnotation {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  uint32_t name = 0;
};

// HostOpKind is what a CPU-side event is to the op-level comparison (op_tree.h), in the order
// that breaks ties between events with the same start and duration: the enclosing kind first.
enum class HostOpKind : uint8_t {
  kStep,        // a user_annotation naming a step: ProfilerStep#N, vLLM execute_*context*,
                // SGLang step[...]
  kAnnotation,  // any other user_annotation (record_function)
  kModule,      // a python_function frame "nn.Module: NAME"
  kOperator,    // a cpu_op ("Operator" in 2021-era traces)
};

// OpModel is the perf model (analyze's perf_model.h) that applies to a cpu_op, told by its
// exact name (docs/perf-models.md): the parser keeps the shapes of these ops only.
enum class OpModel : uint8_t {
  kNone,
  // GEMM
  kMm,
  kAddmm,
  kBmm,
  kBaddbmm,
  kScaledMm,
  // attention
  kSdpaFlash,
  kSdpaEfficient,
  kSdpaCudnn,
  kFlashForward,
  kEfficientForward,
  kSdpaFlashBackward,
  kSdpaEfficientBackward,
  kSdpaCudnnBackward,
  kFlashBackward,
  kEfficientBackward,
  // convolution
  kConvolution,  // aten::convolution, aten::_convolution
  kCudnnConvolution,
  kMiopenConvolution,
  kConvolutionBackward,
  // memory-bound: bytes only
  kElementwise,
  kReduction,
  kNormalization,  // forward and backward
  kSoftmax,        // forward and backward
  kCopy,
};

// OpModelFamily is what an op counts as: of nested ops of one family, only the innermost that
// has a model counts (aten::convolution > aten::_convolution > aten::cudnn_convolution).
enum class OpModelFamily : uint8_t { kNone, kGemm, kAttention, kConvolution, kMemory };

// OpModelOf() is the model of a cpu_op named `name`, kNone for ops without one.
OpModel OpModelOf(std::string_view name);
OpModelFamily FamilyOf(OpModel model);

// kNoShapes is HostOp::shapes for an op whose shapes are not kept.
inline constexpr uint32_t kNoShapes = UINT32_MAX;

// HostOp is one CPU-side event of a kind above; times in nanoseconds.
struct HostOp {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  uint32_t thread = 0;  // index into ParsedChunk::host.threads
  uint32_t name = 0;    // index into ParsedChunk::host.names (for kModule: less "nn.Module: ")
  HostOpKind kind = HostOpKind::kOperator;
  uint32_t position = 0;  // the event's position among the chunk's events
  // A cpu_op with a model (OpModelOf()): index into HostActivity::shapes; else kNoShapes.
  uint32_t shapes = kNoShapes;
};

// RuntimeCall is a CUDA/HIP runtime or driver call that carries a correlation id: a launch, as
// the kernels it launched carry the same id.
struct RuntimeCall {
  int64_t ts_ns = 0;
  int64_t correlation = 0;
  uint32_t thread = 0;
  uint32_t name = 0;
  uint32_t position = 0;
};

// InternedStrings is a table of distinct strings, concatenated: string i is
// bytes[offsets[i], offsets[i + 1]).
struct InternedStrings {
  std::string bytes;
  std::vector<uint32_t> offsets{0};

  size_t size() const { return offsets.size() - 1; }
  std::string_view operator[](size_t i) const {
    return std::string_view(bytes).substr(offsets[i], offsets[i + 1] - offsets[i]);
  }
  uint32_t Append(std::string_view s) {
    bytes.append(s);
    offsets.push_back(static_cast<uint32_t>(bytes.size()));
    return static_cast<uint32_t>(size() - 1);
  }
  void Clear() {
    bytes.clear();
    offsets.assign(1, 0);
  }
};

// HostActivity is a chunk's CPU side, read only when asked (ParseOptions::host_activity).
// Threads are named by the raw JSON of their pid and tid, "PID\tTID".
struct HostActivity {
  std::vector<HostOp> ops;
  std::vector<RuntimeCall> calls;
  InternedStrings names;
  InternedStrings threads;
  // The recorded arguments of cpu_ops with a model, distinct per chunk: the raw JSON of
  // args."Input Dims", args."Input type" and args."Concrete Inputs" ("" when absent), joined by
  // '\x1f' (perf_model.h's ParseOpShapes() reads them).
  InternedStrings shapes;

  void Clear() {
    ops.clear();
    calls.clear();
    names.Clear();
    threads.Clear();
    shapes.Clear();
  }
};

// IsStepAnnotation() says whether a user_annotation's name marks a step: PyTorch's
// ProfilerStep#N, vLLM's execute_*context*, SGLang's step[...].
bool IsStepAnnotation(std::string_view name);

// ParseOptions says what ChunkParser reads beyond the kernels.
struct ParseOptions {
  bool host_activity = false;  // CPU ops, annotations, module frames and runtime calls
};

// Platform hints seen among the events (used when the top-level metadata is not conclusive).
struct EventEvidence {
  uint64_t kernels_with_kind = 0;
  uint64_t hip_runtime_calls = 0;   // cuda_runtime / Runtime events named hip*
  uint64_t cuda_runtime_calls = 0;  // ... named cuda*

  void Add(const EventEvidence& o) {
    kernels_with_kind += o.kernels_with_kind;
    hip_runtime_calls += o.hip_runtime_calls;
    cuda_runtime_calls += o.cuda_runtime_calls;
  }
};

struct ParsedChunk {
  uint64_t seq = 0;
  uint64_t begin = 0;
  uint64_t bytes = 0;
  uint64_t events = 0;
  // Kernel events (cat "kernel", or "Kernel" in 2021-era traces), in trace order.
  std::vector<KernelEvent> kernels;
  InternedStrings names;  // the chunk's distinct kernel names
  // Event count per `cat` value ("" for events without one), in first-seen order.
  std::vector<std::pair<std::string, uint64_t>> categories;
  // Kernel events whose ts or dur was missing or not a number (counted, taken as 0).
  uint64_t kernels_with_bad_times = 0;
  // Kernel events whose name was missing or not a string (counted, kept with the name "").
  uint64_t kernels_without_name = 0;
  // CUDA graph replays traced whole (nsys --cuda-graph-trace=graph): the file holds each replay's
  // span, not its kernels. Counted with their time, never taken for kernels.
  uint64_t whole_graph_replays = 0;
  int64_t whole_graph_replay_ns = 0;
  // Memcpy and memset events, in trace order; those whose ts or dur was missing or not a number
  // are counted, not kept.
  std::vector<GpuTransfer> transfers;
  // The chunk's distinct transfer names ("Memcpy HtoD (Pageable -> Device)"), apart from the
  // kernel names, which classification reads.
  InternedStrings transfer_names;
  uint64_t transfers_with_bad_times = 0;
  // Launches and step annotations, in trace order; step annotations whose ts or dur was missing
  // or not a number are counted, not kept.
  std::vector<Launch> launches;
  InternedStrings launch_apis;  // the chunk's distinct launch names (cudaLaunchKernel, ...)
  std::vector<StepAnnotation> steps;
  InternedStrings step_names;
  uint64_t steps_with_bad_times = 0;
  EventEvidence evidence;
  HostActivity host;  // empty unless ParseOptions::host_activity
  // Host events (ops, annotations, module frames, runtime calls) whose ts or dur was missing or
  // not a number: skipped, counted.
  uint64_t host_events_without_times = 0;
  // CPU seconds spent reading the chunk's bytes from its file (EventChunk::file), part of Parse.
  double read_cpu_seconds = 0;

  size_t name_count() const { return names.size(); }
  std::string_view name(size_t i) const { return names[i]; }
  // Reserve() makes room for the kernels and launches a chunk of `chunk_bytes` holds in most
  // traces: a chunk denser in kernels grows its vectors once or twice more.
  void Reserve(size_t chunk_bytes);
  void Clear();  // keeps the capacity
};

class ChunkParser {
 public:
  explicit ChunkParser(size_t initial_capacity = 0);
  ~ChunkParser();
  ChunkParser(const ChunkParser&) = delete;
  ChunkParser& operator=(const ChunkParser&) = delete;

  // Parses the events of `chunk`; `display_name` prefixes error messages, whose byte offsets are
  // positions in the input.
  absl::Status Parse(const EventChunk& chunk, const std::string& display_name, ParsedChunk* out,
                     const ParseOptions& options = ParseOptions());

 private:
  absl::Status ParseInBuffers(const EventChunk& chunk, const std::string& display_name,
                              ParsedChunk* out, const ParseOptions& options);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What tracefuse uses of the top-level keys (everything but the events).
struct TraceMetadata {
  TraceFormat format = TraceFormat::kKineto;
  std::vector<std::string> keys;        // top-level keys in file order (Kineto)
  std::optional<std::string> gpu_name;  // deviceProperties[0].name, or the format's GPU table
  std::optional<int64_t> warp_size;     // deviceProperties[0].warpSize
  bool has_roctracer_version = false;
  bool roctracer_version_truthy = false;  // Python truthiness, as the reference tests it
  bool has_cupti_version = false;
  bool has_cuda_runtime_version = false;
  bool has_hip_runtime_version = false;
  std::optional<int64_t> base_time_ns;
  std::optional<int64_t> rank;  // distributedInfo.rank: this process's rank in a distributed job
};

// Parses the splitter's metadata document. `display_name` prefixes errors.
absl::StatusOr<TraceMetadata> ParseTraceMetadata(std::string_view json,
                                                 const std::string& display_name);

}  // namespace tracefuse

#endif  // TRACEFUSE_PARSE_CHUNK_PARSER_H_
