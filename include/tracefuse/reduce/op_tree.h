// Stage 5, library tracefuse_reduce: one trace's kernels linked to the CPU operators that
// launched them, for `tracefuse ops` (the comparison of two is op_compare.h).
//
// Per thread, CPU events nest by time: steps (ProfilerStep#N and the like), annotations, nn.Module
// frames and cpu_ops. A runtime call (a launch) belongs to the innermost event open at its start,
// and a kernel to the launch that carries its correlation id; a graph launch owns every kernel
// of its replay. Two paths give the same tree:
//   - streamed (CpuSideStream): where each thread's CPU events come in time order (ops by start,
//     longer and enclosing kinds first; a runtime call after the ops that start at or before it),
//     events are nested as they arrive with a stack per thread, and what stays is per unit (the
//     units, their links) and per correlation id (4 bytes in pages), not per event;
//   - any-order: the CPU side is collected whole (40 bytes per op, 32 per runtime call) and nested
//     once, after the last chunk, in O(n log n). It is the fallback, chosen per trace: for input
//     that cannot be read twice, and from the first chunk with an event out of order (then the
//     pipeline reads the CPU events before that chunk again). Kineto writes cpu_ops, Python
//     frames and runtime calls in blocks of their own, each in time order: this path.
// Kernels are attributed in one pass over the kernel stream.
//
// The unit of comparison, an OpUnit, is the outermost cpu_op above a launch ("top-level op":
// aten::linear, whatever aten::addmm it calls); failing that, the nearest annotation that is not
// a step (a torch.compile region); failing that, the launch itself ("[graph launch]" for the
// replays of vLLM and SGLang, which no cpu_op encloses). Kernels whose correlation id no runtime
// call carries are counted apart, as having no CPU op. `External id` is not used: traces without
// cupti_version write the correlation there, pointing at the wrong op.
#ifndef TRACEFUSE_REDUCE_OP_TREE_H_
#define TRACEFUSE_REDUCE_OP_TREE_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse {

// NormalizeOpName() makes names of the same op comparable across traces and runs: hex addresses
// become "0x", Python line numbers ".py(12)" become ".py", and a trailing "_N" (nn.Module
// instance numbers, Linear_3) goes.
std::string NormalizeOpName(std::string_view name);

// KernelFamily() folds kernel names that differ only in tiles, types or arguments: no return
// type, no signature, no template arguments, digit runs as '#', at most 64 bytes. A name that is
// a C++ signature, "[return type] name[<template args>](params)", is folded to its qualified
// function name, the last whitespace-separated token before the parameter list (both outside any
// <...> or (...)), whatever the return type (void, unsigned int, std::enable_if<...>::type); a
// name without a parameter list (Cijk_..., triton_poi_fused_add_0, "Memcpy HtoD (Pageable ->
// Device)") loses only a leading `void `. A generic wrapper (cutlass::Kernel2<K>,
// cutlass::device_kernel<K>) is named by its first template argument unless that is a built-in
// type or a value; a mangled name (_ZN5aiter6kernelI...) by its source names (aiter::kernel).
std::string KernelFamily(std::string_view name);

// LaunchUnitName() names the unit of a launch no CPU op encloses, from its runtime call:
// "[graph launch]", "[memcpy]", "[memset]" or "[kernel launch]", alike for CUDA and HIP.
std::string_view LaunchUnitName(std::string_view call);

inline constexpr int32_t kNoStep = -1;
inline constexpr uint32_t kNoUnit = UINT32_MAX;
inline constexpr uint32_t kRootScope = 0;

// ScopeNode is one nn.Module frame of a scope path; node kRootScope is the empty path.
struct ScopeNode {
  uint32_t parent = kRootScope;
  uint32_t name = 0;  // index into OpTree::names
  uint32_t depth = 0;
};

// UnitKernels is the kernels of one name.
struct UnitKernels {
  uint32_t name = 0;  // index into the profile's names
  uint64_t count = 0;
  int64_t time_ns = 0;
};

// OpUnit is what one top-level op instance (or launch) ran. 24 bytes: a trace has one per
// top-level op. Which kernel families it ran is not kept (CompareOps() counts them by row).
struct OpUnit {
  int64_t time_ns = 0;  // its kernels' time
  uint32_t name = 0;    // index into OpTree::names, normalised
  uint32_t scope = kRootScope;
  int32_t step = kNoStep;  // index into OpTree::steps
  uint32_t kernels : 30;
  uint32_t is_launch : 1;  // a launch no op or annotation encloses
  uint32_t graph : 1;      // it holds a graph launch

  OpUnit() : kernels(0), is_launch(0), graph(0) {}
};

// StepSpan is one step: an annotation marking a step that no other step encloses.
struct StepSpan {
  int64_t ts_ns = 0;
  int64_t end_ns = 0;
  uint32_t position = 0;
};

// UnitSpan is where a unit's CPU event lies: its top-level op's or annotation's start and end,
// or, for a launch no op encloses, the runtime call's start (both ends).
struct UnitSpan {
  int64_t ts_ns = 0;
  int64_t end_ns = 0;
};

// UnitSpans holds each unit's span in 8 bytes: its start as an offset from its block's base
// (units are laid out by step, thread and start, so a block of kBlock units spans little time)
// and its duration, each where 32 bits hold it (4.3 s), the few others apart.
class UnitSpans {
 public:
  // Set() gives `units` units their spans, span(u) for unit u, all at once (span is called twice a
  // unit: nothing is held between).
  template <typename SpanOf>
  void Set(size_t units, SpanOf span) {
    bases_.assign((units + kBlock - 1) / kBlock, INT64_MAX);
    for (size_t u = 0; u < units; ++u) {
      bases_[u / kBlock] = std::min(bases_[u / kBlock], span(u).ts_ns);
    }
    offsets_.resize(units);
    durations_.resize(units);
    for (size_t u = 0; u < units; ++u) Place(u, span(u));
  }
  void Set(const std::vector<UnitSpan>& spans) {
    Set(spans.size(), [&](size_t u) { return spans[u]; });
  }
  UnitSpan operator[](size_t unit) const {
    const uint32_t offset = offsets_[unit], d = durations_[unit];
    if (offset == kApart || d == kApart) return apart_.at(static_cast<uint32_t>(unit));
    const int64_t start = bases_[unit / kBlock] + int64_t{offset};
    return UnitSpan{start, start + int64_t{d}};
  }
  size_t size() const { return offsets_.size(); }
  bool empty() const { return offsets_.empty(); }

 private:
  static constexpr size_t kBlock = 256;
  static constexpr uint32_t kApart = UINT32_MAX;
  void Place(size_t unit, const UnitSpan& span);
  std::vector<int64_t> bases_;  // per block: its earliest start
  std::vector<uint32_t> offsets_;
  std::vector<uint32_t> durations_;
  absl::flat_hash_map<uint32_t, UnitSpan> apart_;  // unit -> its span, where kApart
};

inline constexpr uint32_t kNoWork = UINT32_MAX;
inline constexpr uint32_t kNoOp = UINT32_MAX;

// LaunchSite is where a kernel was launched from: the innermost cpu_op open around the runtime
// call (index into OpTree::names, normalised; kNoOp for none) and the module scope there.
struct LaunchSite {
  uint32_t op = kNoOp;
  uint32_t scope = kRootScope;
};

// ShapedOp is a cpu_op a perf model applies to (OpModelOf()), with its recorded arguments as the
// parser keeps them (HostActivity::shapes; "" when the trace records none).
struct ShapedOp {
  OpModel model = OpModel::kNone;
  std::string name;
  std::string shapes;
};

// UnitWork is `count` instances of one ShapedOp counted in a unit.
struct UnitWork {
  uint32_t shaped_op = 0;  // index into OpTree::shaped_ops
  uint32_t count = 0;
};

// OpTree is one trace's kernels by the unit that launched them.
struct OpTree {
  std::vector<std::string> names;     // op names and module names, normalised
  std::vector<std::string> families;  // kernel families
  std::vector<ScopeNode> scopes;      // scopes[kRootScope] is the empty path
  std::vector<StepSpan> steps;        // by start
  // Units by step (kNoStep last), thread (threads ranked by their first unit's start, then by
  // name), start, and position among the trace's events. A deque: they are laid out in the
  // memory of the units as read, block by block, not beside it.
  std::deque<OpUnit> units;
  std::vector<uint32_t> name_family;  // per kernel name of the profile: its family
  // Kernels no runtime call launched, by name: by time (descending), then name.
  std::vector<UnitKernels> no_launch_kernels;
  std::vector<uint32_t> group_unit;  // per correlation group of the profile: its unit, or kNoUnit
  // Per correlation group, where its launch was made; only when the CPU side was read with
  // TraceHost::launch_sites (8 bytes a group), empty otherwise.
  std::vector<LaunchSite> group_launch;
  // Per unit, its span; only when the CPU side was read with TraceHost::unit_spans (8 bytes a
  // unit), empty otherwise.
  UnitSpans unit_spans;
  // What the perf models read (docs/perf-models.md, "Which ops count"): per unit, the ops counted
  // in it, as a set of UnitWork shared by the units that count the same ops with the same shapes.
  // Set s is work[work_sets[s], work_sets[s + 1]). unit_work is empty when no op has a model.
  std::vector<ShapedOp> shaped_ops;
  std::vector<UnitWork> work;
  std::vector<uint32_t> work_sets{0};
  std::vector<uint32_t> unit_work;  // per unit: its set, or kNoWork

  uint64_t kernels = 0;
  int64_t kernel_time_ns = 0;
  int64_t linked_ns = 0;                  // under an op or annotation
  int64_t launch_only_ns = 0;             // under a launch that no op or annotation encloses
  int64_t no_launch_ns = 0;               // no runtime call carries the kernel's correlation id
  uint64_t cpu_events_without_times = 0;  // CPU events skipped: ts or dur not a number

  // ScopePath() is the scope's module names, outermost first, joined by '/'.
  std::string ScopePath(uint32_t scope) const;
};

// CpuSideBytes is what the op tree of one trace holds while it is built, by structure.
struct CpuSideBytes {
  uint64_t units = 0;              // units, as read and as laid out
  uint64_t correlation_index = 0;  // correlation id -> unit (streamed)
  uint64_t nesting = 0;            // open events per thread (streamed), or per event (any-order)
  uint64_t collected_events = 0;   // the CPU events kept whole (any-order)
  uint64_t names = 0;              // op, module and thread names, scopes, steps
  uint64_t work = 0;               // the perf models' shaped ops and work sets

  uint64_t total() const {
    return units + correlation_index + nesting + collected_events + names + work;
  }
};

// CpuSideStream nests one trace's CPU side chunk by chunk, in input order (TraceReducer feeds
// it), while each thread's events stay in time order; see the top of this file.
class CpuSideStream {
 public:
  // `launch_sites`: keep each launch's site (OpTree::group_launch).
  explicit CpuSideStream(bool launch_sites = false);
  ~CpuSideStream();
  // KeepUnitSpans() keeps each unit's span (OpTree::unit_spans); before the first Consume() only.
  void KeepUnitSpans();
  CpuSideStream(const CpuSideStream&) = delete;
  CpuSideStream& operator=(const CpuSideStream&) = delete;

  // Consume() nests a chunk's CPU events; `first_position` is the position of the chunk's first
  // event in the trace. False at the first event out of its thread's order, which disorder()
  // then describes: the stream is of no further use.
  bool Consume(const HostActivity& chunk, uint64_t first_position, uint64_t events_without_times);
  const std::string& disorder() const;
  // events_without_times() counts the CPU events of consumed chunks skipped for want of times.
  uint64_t events_without_times() const;
  // Bytes() is what the stream holds now.
  CpuSideBytes Bytes() const;

 private:
  friend OpTree BuildOpTree(const TraceProfile& profile);
  friend OpTree TakeOpTree(TraceProfile* profile, CpuSideBytes* held);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// BuildOpTree() links `profile`'s kernels to its CPU side. The profile must have been read with
// its kernel records and host activity (PipelineOptions::keep_kernel_records, host_activity).
OpTree BuildOpTree(const TraceProfile& profile);

// TakeOpTree() is BuildOpTree() that takes the CPU side from `profile` rather than copying a
// streamed one, and leaves none; `held`, when given, gets what the tree held at its largest. A
// profile whose classification by launching op is pending (ByOpClassification::kPending) is
// classified by the built-in table (ClassifyByLaunchingOp()).
OpTree TakeOpTree(TraceProfile* profile, CpuSideBytes* held = nullptr);

// ClassifyByLaunchingOp() gives each name of `profile` that its rule set left in the default
// category the category of the ops that launched its kernels (TraceProfile::by_op), by
// `table`: for each kernel, the innermost cpu_op around its launch, else the top-level op, else
// the innermost nn.Module class of the launch's scope that the table lists; a name takes the
// category that holds most of its kernel time so found (one name, one category, as rules give
// them), and a name none of whose kernels has such an op stays where it was. Needs the kernel
// records and a tree built with launch sites; sets by_op.state to kDone, or kNothingLeft.
void ClassifyByLaunchingOp(const OpTree& tree, const LaunchingOpTable& table,
                           TraceProfile* profile);

// KernelTypesOf() is, for each of `units`, the categories of its kernels in start order: what a
// graph replay runs, step by step. One pass over `profile`'s kernel records, which must still be
// those BuildOpTree() read.
std::vector<std::vector<CategoryId>> KernelTypesOf(const TraceProfile& profile, const OpTree& tree,
                                                   const std::vector<uint32_t>& units);

}  // namespace tracefuse

#endif  // TRACEFUSE_REDUCE_OP_TREE_H_
