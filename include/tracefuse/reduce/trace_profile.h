// Stage 5, library tracefuse_reduce (after classify): per-trace reduction.
//
// The reducer consumes parsed chunks in input order and keeps, per trace: every distinct kernel
// name once (interned, with its classification, count and total time), correlation groups in
// first-appearance order (all kernels of one CUDA/HIP graph replay share the launch's correlation
// id), event counts per `cat`, and, when asked (the fusion analysis needs it), a compact stream
// of per-kernel records. Derived views (per-category totals, the ts-ordered type sequence, chain
// statistics) are computed from these on demand.
//
// Memory per kernel event: about 6.4 bytes of KernelStream (see there) when records are kept, plus,
// for a kernel that opens a new correlation group, about 30 bytes of group bookkeeping (hash
// slot, id, size). Names cost their length once per distinct name.
#ifndef TRACEFUSE_REDUCE_TRACE_PROFILE_H_
#define TRACEFUSE_REDUCE_TRACE_PROFILE_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/classify/classifier.h"
#include "tracefuse/parse/chunk_parser.h"
#include "tracefuse/reduce/cpu_wait_ops.h"
#include "tracefuse/reduce/gpu_timeline.h"
#include "tracefuse/reduce/launch_join.h"

namespace tracefuse {

inline constexpr uint32_t kNoGroup = UINT32_MAX;

// One kernel as the reducer saw it; KernelStream keeps it encoded.
struct KernelRecord {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  uint32_t name = 0;          // index into TraceProfile::names
  uint32_t group = kNoGroup;  // index into the group arrays, or kNoGroup
  // Where it ran (KernelEvent's), kept only by a stream that keeps placement
  // (KernelStream::KeepPlacement()); -1 otherwise.
  int32_t device = -1;
  int32_t stream = -1;

  friend bool operator==(const KernelRecord& a, const KernelRecord& b) {
    return a.ts_ns == b.ts_ns && a.dur_ns == b.dur_ns && a.name == b.name && a.group == b.group &&
           a.device == b.device && a.stream == b.stream;
  }
};

// TransferRecord is one memcpy or memset as the reducer kept it (TraceReducer::KeepPlacement()).
struct TransferRecord {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = 0;  // 0 without one
  int32_t device = -1;
  int32_t stream = -1;
  uint32_t name = 0;  // index into TraceProfile::transfer_names
};

// PackedCorrelations holds a trace's group correlation ids as what each adds to the one before
// (zigzag LEB128): CUPTI and roctracer number their calls in order, so a group costs a byte or
// two, against eight. At() decodes from the nearest mark (at most kStride ids); with a Cursor,
// reads in increasing group order decode each id once.
class PackedCorrelations {
 public:
  // Cursor is where a reader is: one per reading thread.
  struct Cursor {
    uint32_t group = UINT32_MAX;  // the group last decoded; none yet
    uint64_t offset = 0;          // where the next group's id begins
    int64_t id = 0;               // the group's id
  };

  PackedCorrelations() = default;
  explicit PackedCorrelations(const std::vector<int64_t>& ids);
  size_t size() const { return size_; }
  int64_t At(uint32_t group) const {
    Cursor cursor;
    return At(group, &cursor);
  }
  int64_t At(uint32_t group, Cursor* cursor) const;

 private:
  static constexpr uint32_t kStride = 256;
  struct Mark {
    uint64_t offset;
    int64_t id;
  };
  std::vector<uint8_t> bytes_;
  std::vector<Mark> marks_;  // per kStride groups: where the group's id begins, and the id before
  size_t size_ = 0;
};

struct CategoryTotals {
  uint64_t kernels = 0;
  int64_t time_ns = 0;
};

// Kernel records in trace order, each coded as four LEB128 varints, read back only sequentially:
//   name id; group as 0 (none) or 1 + (groups seen before this kernel - group), so a kernel that
//   opens a group or continues the latest one costs one byte; duration, zigzag; and the start's
//   distance from the previous kernel's end, zigzag (back-to-back kernels on one stream cost a
//   byte or two).
// Real and generated traces take 5.4 to 7.9 bytes per kernel, against 24 for the plain struct.
// The bytes live in 1 MiB segments, so growing never copies: fresh pages cost about 0.3 GB/s to
// fault in on these machines, and a doubling std::vector writes everything twice.
//
// Traces are mostly, not always, in ts order: CUPTI/roctracer buffers are flushed in blocks and
// concurrent streams interleave, so a trace is a few runs of kernels in non-decreasing ts order
// (2 runs in hta_nccl_data, 39 in hta_trace_diff_control). ForEachInTsOrder merges those runs,
// decoding each kernel once, with one cursor per run: its cost follows the number of runs, not
// how far kernels are displaced.
class KernelStream {
 public:
  // KeepPlacement() makes the stream keep each kernel's device and stream too, for the outputs
  // that place kernels on tracks (Perfetto): a bit of the group's varint says whether they differ
  // from the kernel before's, and two more varints follow only where they do (one stream: about
  // 0.1 byte a kernel; kernels alternating between streams: about 2). Before the first
  // push_back() only. A stream that does not keep them decodes -1 for both.
  void KeepPlacement();
  bool keeps_placement() const { return keeps_placement_; }
  void push_back(const KernelRecord& k);

  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  uint64_t encoded_bytes() const;
  // Maximal runs of consecutive kernels in non-decreasing ts order: 1 for a sorted trace.
  uint64_t ts_runs() const { return size_ == 0 ? 0 : descents_ + 1; }

  // Calls f(const KernelRecord&) for each kernel in trace order.
  template <typename F>
  void ForEach(F&& f) const;
  // Calls f(const KernelRecord&) for each kernel in ts order, stable on trace order. For a sorted
  // trace this is ForEach; otherwise it decodes once more to find the runs and holds about 100
  // bytes per run.
  template <typename F>
  void ForEachInTsOrder(F&& f) const;

 private:
  static constexpr size_t kSegmentBytes = size_t{1} << 20;
  static constexpr size_t kMaxRecordBytes = 6 * 10;  // up to six 64-bit varints

  // The decoder's running state; the encoder keeps the same.
  struct State {
    uint64_t previous_end = 0;  // ts + dur of the previous kernel, wrapping like the deltas
    uint32_t groups = 0;        // groups opened so far
    int32_t device = -1;        // where the previous kernel ran (with placement)
    int32_t stream = -1;
  };
  static uint8_t* PutVarint(uint8_t* p, uint64_t v);
  static const uint8_t* GetVarint(const uint8_t* p, uint64_t* v);
  template <bool kPlaced>
  static const uint8_t* Decode(const uint8_t* p, State* state, KernelRecord* k);
  template <bool kPlaced, typename F>
  void ForEachDecoded(F&& f) const;

  // A position in the stream, with the decoder state there: copies resume where they were taken.
  class Cursor {
   public:
    explicit Cursor(const KernelStream& s) : stream_(&s) {}
    bool Next(KernelRecord* k) {
      while (p_ == end_) {
        if (segment_ == stream_->segments_.size()) return false;
        p_ = stream_->segments_[segment_].get();
        end_ = p_ + stream_->segment_bytes_[segment_];
        ++segment_;
      }
      p_ = stream_->keeps_placement_ ? Decode<true>(p_, &state_, k) : Decode<false>(p_, &state_, k);
      return true;
    }

   private:
    const KernelStream* stream_;
    size_t segment_ = 0;  // the next segment to enter
    const uint8_t* p_ = nullptr;
    const uint8_t* end_ = nullptr;
    State state_;
  };

  std::vector<std::unique_ptr<uint8_t[]>> segments_;
  std::vector<size_t> segment_bytes_;  // bytes used in each segment
  State state_;
  uint64_t size_ = 0;
  uint64_t descents_ = 0;  // kernels starting before the previous one
  int64_t previous_ts_ = 0;
  bool keeps_placement_ = false;
};

// Run lengths of one category in the ts-ordered type sequence.
struct ChainStats {
  uint64_t runs = 0;           // maximal runs of consecutive kernels of this category
  uint64_t multi_runs = 0;     // runs longer than one kernel
  uint64_t multi_kernels = 0;  // kernels in those runs
  uint64_t kernels = 0;        // all kernels of this category
};

// Chain statistics of a type sequence (categories in ts order), indexed by category.
std::vector<ChainStats> ChainsOf(const std::vector<CategoryId>& types, size_t category_count);

// ChunkSummary is the part of a chunk's reduction that needs no other chunk, so the parallel
// stage computes it: per distinct name of the chunk, its kernels and time; the chunk's
// correlation groups in first-appearance order with their sizes; and, when per-kernel records
// are kept, each kernel's group among them. The serial reducer then does work per distinct name
// and group, not per kernel (apart from the records).
struct ChunkSummary {
  std::vector<uint64_t> name_kernels;  // per name of the chunk
  std::vector<int64_t> name_time_ns;
  std::vector<int64_t> group_correlation;  // per group of the chunk
  std::vector<uint32_t> group_size;
  std::vector<uint32_t> kernel_group;  // per kernel: its group in the chunk, or kNoGroup
  uint64_t kernels_without_correlation = 0;
  // The chunk's GPU activities (kernels by their chunk names), by device and start, and each
  // device's swept on their own: sorted and swept here, in parallel, so that the serial stage
  // only joins each device's sweep to the trace's (DeviceSweep::Append()), and sweeps an
  // activity itself only where a chunk's activities overlap the ones before.
  std::vector<GpuActivity> gpu;
  std::vector<GpuActivityKind> name_kinds;                     // per name of the chunk
  std::vector<std::pair<int32_t, DeviceSweep>> device_sweeps;  // by device
  uint64_t gpu_events_skipped = 0;                             // GpuTimeline::events_skipped
  // The activities' runs that share a launch, and the sweeps of the runs of several
  // (StepTimeline::AddRun()).
  std::vector<LaunchRun> launch_runs;
  std::vector<DeviceSweep> run_sweeps;

  // Reserve() makes room for a chunk of `kernels` kernels, each its own launch.
  void Reserve(size_t kernels);

  // Summarize() replaces the summary with `chunk`'s; `kernel_groups`: fill kernel_group;
  // `name_rules`: the rule of each of the chunk's names, by `classifier`.
  void Summarize(const ParsedChunk& chunk, bool kernel_groups, const Classifier& classifier,
                 const std::vector<RuleId>& name_rules);

 private:
  void SummarizeGpu(const ParsedChunk& chunk, const Classifier& classifier,
                    const std::vector<RuleId>& name_rules);

  absl::flat_hash_map<int64_t, uint32_t> group_ids_;  // kept for its capacity
  std::vector<GpuActivity> merge_scratch_;            // SortByDeviceAndStart()'s, likewise
};

// StageCpuSeconds is the CPU time each stage of the pipeline spent on one trace, all threads
// added up (thread CPU clocks). inflate, split, reduce and merge run serially, on one thread at a
// time per trace, and so does read for a stream (a pipe, a compressed file); parse, classify and
// summarize run in parallel, and so does read for a regular file, whose chunks the parallel
// stage reads itself. By Amdahl's law the serial share caps the speed-up that more cores can
// give: total / serial.
struct StageCpuSeconds {
  double read = 0;       // reading the file (for compressed input: the compressed bytes)
  double inflate = 0;    // gzip / zstd inflation
  double split = 0;      // cutting the byte stream into chunks of whole events
  double parse = 0;      // simdjson: events to kernel records
  double classify = 0;   // kernel names to rules (per-thread caches, Hyperscan)
  double summarize = 0;  // per-chunk totals and correlation groups (ChunkSummary)
  double reduce = 0;     // chunk summaries folded into the trace's statistics, in input order
  double merge = 0;      // the last step: platform detection, re-classification, the profile
  bool parallel_read = false;

  // ForEach() calls f(name, seconds, serial) for each stage, in pipeline order.
  template <typename F>
  void ForEach(F&& f) const {
    f("read", read, !parallel_read);
    f("inflate", inflate, true);
    f("split", split, true);
    f("parse", parse, false);
    f("classify", classify, false);
    f("summarize", summarize, false);
    f("reduce", reduce, true);
    f("merge", merge, true);
  }
  double total() const {
    double sum = 0;
    ForEach([&](const char*, double seconds, bool) { sum += seconds; });
    return sum;
  }
  double serial() const {
    double sum = 0;
    ForEach([&](const char*, double seconds, bool is_serial) { sum += is_serial ? seconds : 0; });
    return sum;
  }
  double serial_share() const { return total() > 0 ? serial() / total() : 0.0; }
};

class CpuSideStream;  // op_tree.h

// CpuSidePath is how a trace's CPU side reached the op tree (op_tree.h).
enum class CpuSidePath : uint8_t {
  kNotRead,   // ParseOptions::host_activity was off
  kStreamed,  // nested as it arrived (CpuSideStream): memory follows the units, not the events
  kAnyOrder,  // collected whole (TraceHost's vectors) and nested after the last chunk
};

// TraceHost is a trace's CPU side, read from chunks parsed with ParseOptions::host_activity (the
// op-level comparison, op_tree.h). Streamed, it is `stream`; otherwise ops and runtime calls in
// trace order, each `position` the event's index in the trace, names, threads and shapes interned
// per trace: 40 bytes per op, 32 per call.
struct TraceHost {
  CpuSidePath path = CpuSidePath::kNotRead;
  std::string any_order_reason;  // kAnyOrder: why the CPU side was not streamed
  // kAnyOrder after streaming failed: the CPU events before the chunk where it failed, read again
  // by the pipeline's second pass (ReadCpuSideAgain() in src/pipeline/flow_graph.cc).
  uint64_t events_read_again = 0;
  std::shared_ptr<CpuSideStream> stream;  // kStreamed
  std::vector<HostOp> ops;
  std::vector<RuntimeCall> calls;
  std::vector<std::string> names;
  std::vector<std::string> threads;  // "PID\tTID", the raw JSON of both
  std::vector<std::string> shapes;   // HostActivity::shapes, interned per trace
  uint64_t events_without_times = 0;
  bool launch_sites = false;  // the op tree keeps each launch's site (OpTree::group_launch)
  bool unit_spans = false;    // the op tree keeps each unit's span (OpTree::unit_spans)
  // TakeOpTree() packs the profile's group correlations first
  // (TraceProfile::PackGroupCorrelations): what reads them after linking reads them in order, and
  // the linking reuses the memory freed.
  bool pack_correlations = false;

  // CollectedBytes() is what the collected events hold (kAnyOrder).
  uint64_t CollectedBytes() const;
  // Append() adds `later`'s events, which come after this one's in the trace.
  void Append(const TraceHost& later);
};

// NameByOp is the category a name got from the ops that launched its kernels, when its rule set
// left it in the default category (ClassifyByLaunchingOp(), op_tree.h).
struct NameByOp {
  CategoryId category = 0;
  std::string op;  // the op (or "nn.Module: Class") that launched most of the name's time there
};

// ByOpClassification is what classification by launching op did for a trace.
struct ByOpClassification {
  enum class State : uint8_t {
    kOff,              // not asked for, or the rule set's reports are the reference's
    kNothingLeft,      // no name was left in the default category
    kNoCpuSide,        // the trace has no cpu_op events
    kCannotReadTwice,  // names were left, but the input (a pipe) cannot be read again for its CPU
                       // side
    kPending,          // the CPU side is read: TakeOpTree() classifies
    kDone,
  };
  State state = State::kOff;
  absl::flat_hash_map<uint32_t, NameByOp> names;  // by name index
};

// ByOpStateName() is `state` as reports write it: "off", "nothing left", "no cpu side",
// "cannot read twice", "pending", "done".
std::string_view ByOpStateName(ByOpClassification::State state);

struct TraceProfile {
  std::string path;
  uint64_t input_bytes = 0;  // uncompressed JSON bytes
  uint64_t file_bytes = 0;   // on disk
  bool compressed = false;
  std::string compression;  // "gzip", "zstd", or "" (see ByteSource::compression)
  double elapsed_seconds = 0;
  StageCpuSeconds cpu_seconds;
  uint64_t rejected_cuts = 0;  // speculative chunks whose parse failed, cut again exactly
  // Set when a truncated input was salvaged (PipelineOptions::salvage_truncated): the events
  // after `kept_bytes` were dropped.
  std::optional<TruncatedInput> truncated;

  TraceMetadata metadata;
  Platform platform = Platform::kUnknown;
  std::string platform_evidence;  // why `platform` was chosen
  std::string gpu;                // "" when the trace names none

  uint64_t events = 0;
  std::vector<std::pair<std::string, uint64_t>> event_categories;  // by count, descending
  EventEvidence evidence;
  uint64_t kernels_with_bad_times = 0;  // counted, taken as zero-length
  uint64_t kernels_without_name = 0;    // counted, kept with the name ""
  // ParsedChunk's: graph replays whose kernels the file does not hold.
  uint64_t whole_graph_replays = 0;
  int64_t whole_graph_replay_ns = 0;

  std::shared_ptr<const Classifier> classifier;
  std::vector<std::string> names;
  std::vector<RuleId> name_rule;
  std::vector<uint64_t> name_kernels;
  std::vector<int64_t> name_time_ns;

  uint64_t kernel_count = 0;
  KernelStream kernels;  // empty when the pipeline was told not to keep records
  // Every memcpy and memset in trace order, with their names: only where placement was kept
  // (TraceReducer::KeepPlacement()), for the outputs that draw them (Perfetto).
  std::vector<TransferRecord> transfers;
  std::vector<std::string> transfer_names;
  uint64_t kernels_without_correlation = 0;
  // Per correlation group: its id, kept with the kernel records (what links groups to their
  // kernels and CPU ops: 8 bytes a group, most of a large trace's statistics), and its size.
  std::vector<int64_t> group_correlation;
  std::vector<uint32_t> group_size;
  // PackGroupCorrelations() moves group_correlation here, packed (TakeOpTree() does, where
  // TraceHost::pack_correlations asks); GroupCorrelation() and correlated_groups() read either.
  PackedCorrelations packed_group_correlation;
  void PackGroupCorrelations();
  size_t correlated_groups() const {
    return group_correlation.empty() ? packed_group_correlation.size() : group_correlation.size();
  }
  std::optional<int64_t> GroupCorrelation(uint32_t group,
                                          PackedCorrelations::Cursor* cursor = nullptr) const {
    if (group < group_correlation.size()) return group_correlation[group];
    if (group >= packed_group_correlation.size()) return std::nullopt;
    return cursor != nullptr ? packed_group_correlation.At(group, cursor)
                             : packed_group_correlation.At(group);
  }
  TraceHost host;
  GpuTimeline gpu_timeline;
  // While the CPU side is read: its top-level ops per thread and each launch's thread, until
  // AttributeCpuWaits() gives the idle splits their cpu_ops (the pipeline does, once the GPU
  // timeline is complete).
  std::shared_ptr<CpuOpsByThread> cpu_ops_by_thread;

  ByOpClassification by_op;

  // category_of_name() is the category of name `name`: its rule's, or the one its launching ops
  // gave it.
  CategoryId category_of_name(uint32_t name) const {
    if (!by_op.names.empty()) {
      if (auto it = by_op.names.find(name); it != by_op.names.end()) return it->second.category;
    }
    return classifier->category_of(name_rule[name]);
  }
  // in_default_by_name() tells whether the rule set left name `name` in its default category.
  bool in_default_by_name(uint32_t name) const {
    return name_rule[name] == classifier->rule_set().rules().size();
  }
  // any_in_default_by_name() tells whether the rule set left any name in its default category.
  bool any_in_default_by_name() const {
    for (uint32_t n = 0; n < names.size(); ++n) {
      if (in_default_by_name(n)) return true;
    }
    return false;
  }
  const std::string& category_name(CategoryId c) const { return classifier->category_name(c); }
  size_t category_count() const { return classifier->rule_set().categories().size(); }

  std::vector<CategoryTotals> PerCategory() const;  // indexed by category
  std::vector<CategoryId> NameCategories() const;   // indexed by name
  std::vector<CategoryId> TypeSequence() const;     // categories in ts order (needs `kernels`)
  size_t GroupsAtLeast(uint32_t size) const;
};

// GroupIndex maps correlation ids to the trace's group numbers. CUPTI and roctracer number API
// calls consecutively, so ids arrive nearly in order: they are kept in pages of 1024 slots, found
// by id / 1024, and consecutive ids share cache lines instead of scattering through a hash table
// (the serial reducer's main cost on traces without graph replays). Ids too sparse for pages
// (fewer than one group per 16 slots) move to a hash map.
class GroupIndex {
 public:
  // FindOrAdd() returns the group of `correlation`, and whether it is new; a new one is numbered
  // `next`.
  GroupIndex() = default;
  GroupIndex(const GroupIndex& other);  // a deep copy (BuildOpTree() of a streamed trace)
  GroupIndex& operator=(const GroupIndex& other);
  GroupIndex(GroupIndex&&) = default;
  GroupIndex& operator=(GroupIndex&&) = default;

  std::pair<uint32_t, bool> FindOrAdd(int64_t correlation, uint32_t next);
  // Find() is the group of `correlation`, or nullopt.
  std::optional<uint32_t> Find(int64_t correlation) const;
  // bytes() is what the index holds.
  uint64_t bytes() const;
  void Clear();

 private:
  static constexpr int kPageBits = 10;
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t* Page(int64_t page_id);

  absl::flat_hash_map<int64_t, std::unique_ptr<uint32_t[]>> pages_;
  int64_t last_page_id_ = 0;
  uint32_t* last_page_ = nullptr;
  uint64_t groups_ = 0;
  bool sparse_ = false;
  absl::flat_hash_map<int64_t, uint32_t> sparse_ids_;
};

class TraceReducer {
 public:
  // CpuSideReading is what Consume() does with a chunk's CPU side (ParsedChunk::host).
  enum class CpuSideReading : uint8_t {
    kSkip,
    kStream,   // nest it as it arrives, until an event comes out of order; then kCollect, and
               // TraceHost::events_read_again says what is missing
    kCollect,  // keep it whole, for BuildOpTree()'s any-order path
  };
  // GpuTimelineReading is how Consume() measures the GPU timeline (gpu_timeline.h).
  enum class GpuTimelineReading : uint8_t {
    kStream,   // sweep as the chunks arrive; on disorder, GpuTimeline::path says kReadAgain
    kCollect,  // keep every activity, sorted and swept by Finish()
  };
  // `keep_kernel_records`: whether to keep the per-kernel stream (the fusion analysis needs it);
  // per-name, per-category and per-group totals are kept either way.
  // `step_figures`: keep each device's figures per step (PipelineOptions::step_figures).
  // `launch_sites`: the op tree keeps each launch's site (TraceHost::launch_sites).
  TraceReducer(std::shared_ptr<const Classifier> classifier, bool keep_kernel_records = true,
               CpuSideReading cpu_side = CpuSideReading::kCollect,
               GpuTimelineReading gpu_timeline = GpuTimelineReading::kStream,
               bool step_figures = false, bool launch_sites = false);
  // Not copied: the name index refers to the profile's names.
  TraceReducer(const TraceReducer&) = delete;
  TraceReducer& operator=(const TraceReducer&) = delete;

  // Consume() adds a chunk's kernels; `name_rules` holds the rule of each of the chunk's distinct
  // names. Chunks must arrive in input order.
  void Consume(const ParsedChunk& chunk, const std::vector<RuleId>& name_rules);
  // Consume() with the chunk's summary already made (the pipeline makes it in parallel), with
  // kernel_group filled when records are kept.
  void Consume(const ParsedChunk& chunk, const ChunkSummary& summary,
               const std::vector<RuleId>& name_rules);
  // RecordCpuWaits() keeps the cpu_wait part of each gap (GpuTimeline::cpu_wait_spans), for
  // AttributeCpuWaits(); done from the start where the CPU side is read.
  void RecordCpuWaits();
  // KeepPlacement() keeps, with the kernel records, each kernel's device and stream
  // (KernelStream::KeepPlacement()), each memcpy and memset (TraceProfile::transfers) and each
  // top-level op's span (OpTree::unit_spans), and packs the group correlations once linked
  // (TraceHost::pack_correlations): what a Perfetto trace draws. Before the first Consume() only.
  void KeepPlacement();
  // SkipIdleCpuOps() holds neither each thread's top-level ops nor the cpu_wait spans: the idle
  // splits get no cpu_ops (PipelineOptions::idle_cpu_ops). Before the first Consume() only.
  void SkipIdleCpuOps();
  // events() is how many events the chunks consumed so far held.
  uint64_t events() const { return profile_.events; }
  // Completes the profile: platform detection (and re-classification when a platform-dependent
  // rule set was applied with another platform than the one finally detected).
  TraceProfile Finish(TraceMetadata metadata, Platform classified_with);

 private:
  TraceProfile profile_;
  bool keep_kernel_records_;
  StringIndex name_ids_{&profile_.names};  // the trace's names, each held once
  GroupIndex group_ids_;
  std::vector<uint32_t> local_to_global_;        // chunk's names to the trace's
  std::vector<uint32_t> group_local_to_global_;  // chunk's groups to the trace's
  ChunkSummary summary_;                         // for Consume() without one
  StringMap<uint32_t> host_name_ids_;
  StringMap<uint32_t> host_thread_ids_;
  StringMap<uint32_t> host_shape_ids_;
  std::vector<uint32_t> host_names_to_global_;    // chunk's host names to the trace's
  std::vector<uint32_t> host_threads_to_global_;  // chunk's threads to the trace's
  std::vector<uint32_t> host_shapes_to_global_;   // chunk's recorded shapes to the trace's

  CpuSideReading cpu_side_;
  GpuTimelineReading gpu_reading_;
  bool record_cpu_waits_ = false;
  bool keep_placement_ = false;
  StringMap<uint32_t> transfer_name_ids_;           // the trace's transfer names
  std::vector<uint32_t> transfer_local_to_global_;  // chunk's transfer names to the trace's
  std::vector<bool> name_communicates_;  // per name: whether its kernels are Communication
  std::vector<std::pair<int32_t, DeviceSweep>> sweeps_;  // kStream: per device, few
  bool step_figures_;
  StepTimeline step_timeline_;              // kStream
  LaunchJoin launch_join_;                  // kStream
  std::vector<GpuActivity> collected_gpu_;  // kCollect: names are the trace's
  std::vector<Launch> collected_launches_;  // kCollect, named in collected_launch_apis_
  InternedStrings collected_launch_apis_;
  StringMap<uint32_t> collected_launch_api_ids_;
  std::vector<StepAnnotation> collected_steps_;  // kCollect, named in collected_step_names_
  InternedStrings collected_step_names_;

  void ConsumeHost(const ParsedChunk& chunk, uint64_t first_position);
  void ConsumeGpu(const ParsedChunk& chunk, const ChunkSummary& summary);
  void KeepTransfers(const ParsedChunk& chunk);
  DeviceSweep& SweepOf(int32_t device);
  // SweepEach() sweeps `device`'s activities of the chunk one by one; false when one is out of
  // order.
  bool SweepEach(const ChunkSummary& summary, int32_t device, DeviceSweep* sweep);
  // ConsumeSteps() gives the chunk's activities to their steps' sweeps; false when they come
  // out of order.
  bool ConsumeSteps(const ParsedChunk& chunk, const ChunkSummary& summary,
                    std::string* out_of_order);
  // ConsumeLaunches() joins the chunk's launches and activities (LaunchJoin); false when a launch
  // an activity needs was dropped, or too much waits.
  bool ConsumeLaunches(const ParsedChunk& chunk, const ChunkSummary& summary,
                       std::string* out_of_order);
  // ReadGpuTimelineAgain() gives up streaming the timeline, for `reason`.
  void ReadGpuTimelineAgain(std::string reason);
  // FinishGpuTimeline() gives the figures, once names have their final rules.
  void FinishGpuTimeline();
  void FinishCollectedGpuTimeline(const std::vector<bool>& communicates);
  void CollectHost(const ParsedChunk& chunk, uint64_t first_position);
};

// --- KernelStream: decoding, inline for the analysis' passes -------------------------------------

inline const uint8_t* KernelStream::GetVarint(const uint8_t* p, uint64_t* v) {
  uint64_t result = *p & 0x7f;
  for (int shift = 7; *p++ & 0x80; shift += 7) result |= uint64_t{*p & 0x7fu} << shift;
  *v = result;
  return p;
}

template <bool kPlaced>
inline const uint8_t* KernelStream::Decode(const uint8_t* p, State* state, KernelRecord* k) {
  uint64_t name, group, dur, gap;
  p = GetVarint(p, &name);
  p = GetVarint(p, &group);
  bool moved = false;
  if constexpr (kPlaced) {
    moved = (group & 1) != 0;
    group >>= 1;
  }
  p = GetVarint(p, &dur);
  p = GetVarint(p, &gap);
  auto unzigzag = [](uint64_t v) { return (v >> 1) ^ (~(v & 1) + 1); };
  k->name = static_cast<uint32_t>(name);
  if (group == 0) {
    k->group = kNoGroup;
  } else {
    k->group = static_cast<uint32_t>(state->groups + 1 - group);
    if (k->group == state->groups) ++state->groups;
  }
  const uint64_t ts = state->previous_end + unzigzag(gap);
  k->ts_ns = static_cast<int64_t>(ts);
  k->dur_ns = static_cast<int64_t>(unzigzag(dur));
  state->previous_end = ts + unzigzag(dur);
  if constexpr (kPlaced) {
    if (moved) {
      uint64_t device, stream;
      p = GetVarint(p, &device);
      p = GetVarint(p, &stream);
      state->device = static_cast<int32_t>(unzigzag(device));
      state->stream = static_cast<int32_t>(unzigzag(stream));
    }
    k->device = state->device;
    k->stream = state->stream;
  }
  return p;
}

template <typename F>
void KernelStream::ForEach(F&& f) const {
  if (keeps_placement_) {
    ForEachDecoded<true>(f);
  } else {
    ForEachDecoded<false>(f);
  }
}

template <bool kPlaced, typename F>
void KernelStream::ForEachDecoded(F&& f) const {
  // Not through Cursor: a loop per segment keeps the decoder state in registers (1.6x faster).
  State state;
  KernelRecord k;
  for (size_t s = 0; s < segments_.size(); ++s) {
    const uint8_t* p = segments_[s].get();
    const uint8_t* end = p + segment_bytes_[s];
    while (p < end) {
      p = Decode<kPlaced>(p, &state, &k);
      f(static_cast<const KernelRecord&>(k));
    }
  }
}

template <typename F>
void KernelStream::ForEachInTsOrder(F&& f) const {
  if (descents_ == 0) {
    ForEach(f);
    return;
  }
  // Find where each run starts, then merge the runs on (ts, run index): runs are consecutive in
  // trace order, so that order is the stable one.
  struct Run {
    Cursor cursor;
    uint64_t left;  // kernels after `head`
    KernelRecord head;
  };
  std::vector<Run> runs;
  runs.reserve(descents_ + 1);
  Cursor cursor(*this);
  KernelRecord k;
  for (Cursor at = cursor; cursor.Next(&k); at = cursor) {
    if (runs.empty() || k.ts_ns < runs.back().head.ts_ns) {
      runs.push_back(Run{at, 0, k});
    } else {
      runs.back().head.ts_ns = k.ts_ns;  // the run's last ts, while finding the runs
      ++runs.back().left;
    }
  }
  // A min-heap of the runs' next kernels, keyed inline so that sifting stays in one array.
  struct Key {
    int64_t ts;
    uint32_t run;
  };
  auto after = [](const Key& a, const Key& b) {
    return a.ts > b.ts || (a.ts == b.ts && a.run > b.run);
  };
  std::vector<Key> heap;
  heap.reserve(runs.size());
  for (uint32_t r = 0; r < runs.size(); ++r) {
    runs[r].cursor.Next(&runs[r].head);
    heap.push_back({runs[r].head.ts_ns, r});
  }
  std::make_heap(heap.begin(), heap.end(), after);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), after);
    const uint32_t r = heap.back().run;
    heap.pop_back();
    Run& run = runs[r];
    // Emit from this run for as long as it stays ahead of every other: whole blocks at a time.
    while (true) {
      f(static_cast<const KernelRecord&>(run.head));
      if (run.left == 0) break;
      run.cursor.Next(&run.head);
      --run.left;
      const Key next{run.head.ts_ns, r};
      if (!heap.empty() && after(next, heap.front())) {
        heap.push_back(next);
        std::push_heap(heap.begin(), heap.end(), after);
        break;
      }
    }
  }
}

}  // namespace tracefuse

#endif  // TRACEFUSE_REDUCE_TRACE_PROFILE_H_
