// Stage 6, library tracefuse_analyze: the op-level comparison of two traces (`tracefuse ops`):
// which top-level operator is slower on which side, and what each side runs for it.
//
// Each trace's units (op_tree.h) are split by step; step i of one trace is compared with step i
// of the other, and the units outside every step with each other. Within a step the two unit
// sequences are aligned on (op name, module scope) with Myers' linear-space diff; the matched
// pairs are the diff's common elements, and each unmatched stretch between two matched units
// becomes one group under the deepest scope its units share. Past an edit distance of
// OpCompareOptions::edit_cap, the diff would cost too much: the i-th unit of a key is matched with
// the i-th of the same key on the other side, and what is left is grouped by scope.
#ifndef TRACEFUSE_ANALYZE_OP_COMPARE_H_
#define TRACEFUSE_ANALYZE_OP_COMPARE_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracefuse/analyze/fusion.h"
#include "tracefuse/analyze/op_work.h"
#include "tracefuse/reduce/op_tree.h"

namespace tracefuse {

// MyersMatches() are the index pairs of the common elements of a minimal edit script from `a`
// to `b` (Myers 1986, the linear-space refinement), in order.
std::vector<std::pair<uint32_t, uint32_t>> MyersMatches(const std::vector<uint32_t>& a,
                                                        const std::vector<uint32_t>& b);

// EditDistanceExceeds() says whether turning `a` into `b` takes more than `cap` insertions and
// deletions, in O((|a| + |b|) * cap) time.
bool EditDistanceExceeds(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                         uint32_t cap);

struct OpCompareOptions {
  uint32_t edit_cap = 2000;  // per step
  size_t top_instances = 20;
  const GpuSpecs* gpu_specs = nullptr;  // the peak table; nullptr: BuiltinGpuSpecs()
  bool keep_partners = false;           // fill OpComparison::partners
};

// OpKernels is one kernel family's kernels under a unit or a table row, with its example: the
// full name of the family's kernels there with the most time (ties: the first name in byte
// order), so that cutlass_80_... and sm90_... tell apart where the family does not. Both names are
// held by the OpComparison (OpComparison::names).
struct OpKernels {
  std::string_view family;
  std::string_view example;
  uint64_t count = 0;
  int64_t time_ns = 0;
};

// OpSide is one side of a row, group or instance: its units, their kernels by family (by time,
// descending, then family) and their kernel time.
struct OpSide {
  uint64_t instances = 0;
  std::vector<OpKernels> kernels;
  int64_t time_ns = 0;
};

// TimeDelta() is trace 1's kernel time minus trace 2's; TimeRatio() is trace 1's over trace 2's,
// nullopt when trace 2 has none.
int64_t TimeDelta(const PerSide<OpSide>& sides);
std::optional<double> TimeRatio(const PerSide<OpSide>& sides);

// OpRow aggregates the units of one (op, scope), matched or not. For a matched row `instances`
// counts the pairs; for an unmatched one, the units of both sides.
struct OpRow {
  std::string op;
  std::string scope;  // module path, outermost first, '/'-joined; "" for none
  bool matched = false;
  uint64_t instances = 0;
  PerSide<OpSide> sides;
  PerSide<WorkTotals> work;  // what the perf models count in each side's units (op_work.h)

  int64_t delta_ns() const { return TimeDelta(sides); }
};

// UnmatchedGroup is one unmatched stretch between two matched units (or, past the edit cap, the
// unmatched units of one scope) in one step.
struct UnmatchedGroup {
  int32_t step = kNoStep;
  std::string scope;  // the deepest scope all its units share
  PerSide<OpSide> sides;
  // The first kGroupOpNames op names of each side, held by the OpComparison.
  PerSide<std::vector<std::string_view>> ops;
  PerSide<uint64_t> op_count{};

  int64_t delta_ns() const { return TimeDelta(sides); }

  static constexpr size_t kGroupOpNames = 50;
};

// MatchedInstance is one matched pair of units: `index` is the trace-1 unit's position (from 1)
// in its step.
struct MatchedInstance {
  int32_t step = kNoStep;
  uint64_t index = 0;
  std::string op;
  std::string scope;
  PerSide<OpSide> sides;
  PerSide<bool> graph{};      // the unit holds a graph replay
  PerSide<uint32_t> units{};  // the units, in their traces' OpTree
  // A graph replay's kernel categories in start order (filled by the pipeline: the comparison
  // does not keep the kernel records); empty for other units.
  PerSide<std::vector<std::string>> types;

  int64_t delta_ns() const { return TimeDelta(sides); }
};

// OpTraceSummary is what one trace's linking found.
struct OpTraceSummary {
  uint64_t kernels = 0;
  int64_t kernel_time_ns = 0;
  int64_t linked_ns = 0;
  int64_t launch_only_ns = 0;
  int64_t no_launch_ns = 0;
  uint64_t steps = 0;
  uint64_t top_level_ops = 0;             // units
  uint64_t cpu_events_without_times = 0;  // skipped: ts or dur not a number
  std::string gpu;                        // deviceProperties' name, "" for none
  std::optional<GpuPeak> peak;            // its row of the peak table; nullopt: not found
  WorkTotals work;                        // over all its units
};

// FusionDifferenceKind is the rule that found a fusion difference (see FindFusionDifferences()).
enum class FusionDifferenceKind : uint8_t {
  kOp,      // a matched op whose instances run different numbers of kernels
  kModule,  // an unmatched stretch of ops under a module scope both sides share
  kGraph,   // a stretch of a matched graph replay's kernels
};

// FusionCandidate is a place where the two sides run different numbers of kernels: a matched
// pair of units (kOp, kGraph) or the units of an unmatched stretch (kModule), as
// [units_begin, units_end) of OpComparison::candidate_units. FindFusionDifferences() reads the
// candidates' kernels to tell what differs.
struct FusionCandidate {
  FusionDifferenceKind kind = FusionDifferenceKind::kOp;
  int32_t step = kNoStep;
  uint32_t scope = 0;  // index into OpComparison::candidate_scopes
  PerSide<uint32_t> units_begin{};
  PerSide<uint32_t> units_end{};
};

// FusionRelation is what a fusion difference is (docs/reports.md, "Fusion differences by
// operator"):
//   - kSplit: the unfused side runs the same operation as its main kernel plus helpers of that
//     operation (a split-K GEMM and its reduction, paged attention and its split-KV combine);
//   - kFusion: the fused side's kernel does the work of the unfused side's extra kernels of other
//     operations (its name states them, or its category absorbs theirs: data/kernel-roles.yaml);
//   - kAlgorithm: both sides run kernels the other does not and neither covers the other's: no
//     side fuses.
enum class FusionRelation : uint8_t { kSplit, kFusion, kAlgorithm };

// FusionRelationName() is "split", "fusion" or "algorithm".
const char* FusionRelationName(FusionRelation relation);

// FusionKernel is one kernel of a fusion difference's example instance.
struct FusionKernel {
  std::string family;
  std::string name;  // its full name
  std::string category;
  int64_t time_ns = 0;
  bool extra = false;  // one of the unfused side's extra kernels
};

// ExtraKernels is one kernel family among a fusion difference's extra kernels: its count over
// the instances (the example instance's kernels, times the instances).
struct ExtraKernels {
  std::string family;
  std::string example;  // the full name of the family's first extra kernel in the example
  std::string category;
  uint64_t count = 0;
};

// FusionDifferenceSide is one side of a fusion difference, over its instances.
struct FusionDifferenceSide {
  std::vector<std::string> ops;    // the op (kOp, kGraph) or the stretch's ops, in order (kModule)
  std::vector<std::string> types;  // one instance's kernel categories, in start order
  uint64_t kernels = 0;
  std::vector<std::pair<std::string, uint64_t>> categories;  // kernels by category, by name
  int64_t time_ns = 0;
  std::vector<FusionKernel> example;  // the example instance's kernels, in start order
};

// FusionDifference is one way in which one side runs in fewer kernels what the other runs in
// more, aggregated over the instances that differ alike (same kind, scope, op or ops, kernel
// categories and roles in order on both sides, and the same relation).
struct FusionDifference {
  FusionDifferenceKind kind = FusionDifferenceKind::kOp;
  FusionRelation relation = FusionRelation::kFusion;
  std::string scope;
  std::string op;  // empty for kModule
  // The side that runs fewer kernels: for kSplit and kFusion the side that fuses; for
  // kAlgorithm no side fuses (reports write null).
  Side fused_by = Side::kTrace1;
  uint64_t instances = 0;
  PerSide<FusionDifferenceSide> sides;
  // The unfused side's kernels that the fused side does not run, by category, over the
  // instances; and by family.
  std::vector<std::pair<std::string, uint64_t>> extra_categories;
  std::vector<ExtraKernels> extra_kernels;
  int64_t extra_time_ns = 0;  // the extra kernels' own time, over the instances
  std::string fused_kernel;   // the fused side's kernel family that does their work ("" for none)
  std::string fused_kernel_name;      // its full name in the example instance
  std::string fused_kernel_category;  // its category
  int32_t example_step = kNoStep;     // the instance that differs most in time
  uint64_t example_index = 0;         // its trace-1 unit's position (from 1) in its step
  // Per side, the first unit of each place its instances were found in (a matched pair's unit,
  // a stretch's first), each once, in the trace's unit order: where a Perfetto trace links it to.
  PerSide<std::vector<uint32_t>> instance_units;

  Side unfused() const { return Opposite(fused_by); }
  // saving_ns() is the unfused side's time minus the fused side's over the whole stretch:
  // negative when the fused kernels are slower than the kernels they replace.
  int64_t saving_ns() const;
};

// FusionDifferenceKindName() is "op", "module" or "graph".
const char* FusionDifferenceKindName(FusionDifferenceKind kind);

// TypeWork is what the perf models credit to one kernel type (category) over the matched op
// pairs whose kernel time is mostly of that type on both sides (UnitCategoryWorkOf()): the same
// ops, so that the two sides' TFLOP/s compare like with like.
struct TypeWork {
  std::string type;
  uint64_t pairs = 0;
  PerSide<CategoryWork> work;
};

// WorkLeftOut is one side's units with FLOPs that no TypeWork holds: unmatched, or matched to an
// op whose kernel time is mostly of another type (or that has no FLOPs).
struct WorkLeftOut {
  uint64_t ops = 0;
  CategoryWork work;  // their FLOPs, and the time of their credited type's kernels
  // The FLOPs of every unit of the side that credits a type (with FLOPs and kernels), left out
  // or not.
  uint64_t all_flops = 0;
};

// OpComparison is CompareOps()'s result. It moves and does not copy: its rows, groups and
// instances view the names it holds.
struct OpComparison {
  OpComparison() = default;
  OpComparison(OpComparison&&) = default;
  OpComparison& operator=(OpComparison&&) = default;
  OpComparison(const OpComparison&) = delete;
  OpComparison& operator=(const OpComparison&) = delete;

  // names holds each op name, kernel-family name and example kernel name that the groups and
  // kernel lists view, once: a comparison of two multi-GB traces has 10^5 groups of up to 50
  // ops each, but hundreds of distinct names (and only the examples shown of the kernel names). A
  // deque, so that a name does not move when another is added or the comparison moves.
  std::deque<std::string> names;
  PerSide<OpTraceSummary> traces;
  uint64_t matched_ops = 0;                      // pairs
  uint64_t capped_steps = 0;                     // steps aligned key by key, past the edit cap
  std::vector<OpRow> ops;                        // by |delta| (descending), op, scope, matched
  std::vector<UnmatchedGroup> unmatched_groups;  // by step, then position
  std::vector<MatchedInstance> top_instances;    // by |delta| (descending), step, index
  // The achieved TFLOP/s by kernel type, over the same ops on both sides: per category of the
  // first trace's rule set that a matched pair credits FLOPs to on both sides (TypeWork), in the
  // rule set's order; and per side, the ops with FLOPs left out (WorkLeftOut).
  std::vector<TypeWork> type_work;
  PerSide<WorkLeftOut> type_work_left_out;
  // Filled by FindFusionDifferences(): by saving (descending), then kind, scope, op, and the
  // unfused side's then the fused side's kernel types and ops, so that the order does not depend
  // on which trace is which.
  std::vector<FusionDifference> fusion_differences;
  // With OpCompareOptions::keep_partners: per trace-1 unit, its matched trace-2 unit, or kNoUnit.
  std::vector<uint32_t> partners;

  // What CompareOps() leaves for FindFusionDifferences(), which clears them: candidates by step,
  // then position; their units; their scopes.
  std::vector<FusionCandidate> candidates;
  PerSide<std::vector<uint32_t>> candidate_units;
  std::vector<std::string> candidate_scopes;
};

// CompareOps() aligns the two traces' units step by step and builds the tables, then counts the
// kernels of their rows, groups and top instances by family in one pass over each trace's kernel
// records (which must still be those BuildOpTree() read). A row "[no CPU op]" holds the kernels
// that no runtime call launched.
OpComparison CompareOps(PerSide<const TraceProfile*> profiles, PerSide<const OpTree*> trees,
                        const OpCompareOptions& options = OpCompareOptions());

// PeakGap is a matched op row whose sides reach different fractions of their GPUs' peaks: the
// time the less efficient side would save at the other's percent of peak.
struct PeakGap {
  const OpRow* row = nullptr;
  Side behind = Side::kTrace1;  // the side further from its peak
  PerSide<Achieved> achieved;
  int64_t saving_ns = 0;  // behind's time x (1 - its percent / the other's)
};

// FurthestFromPeak() are `ops`' matched rows with a percent of peak on both sides, by saving
// (descending), then op and scope.
std::vector<PeakGap> FurthestFromPeak(const OpComparison& ops);

// FindFusionDifferences() turns `ops`' candidates into its fusion differences, reading each
// trace's kernel records (which must still be those BuildOpTree() read) three times, in start
// order, and holding per candidate a few words, not its kernels. The candidates:
//   - kOp: a matched pair of top-level ops (not both graph replays) whose kernel counts differ,
//     both non-zero;
//   - kModule: an unmatched stretch under a non-empty module scope, both sides with kernels and
//     different counts, its units' kernels joined in unit order;
//   - kGraph: all matched pairs of graph-replay units of a step, each side's replays joined in
//     order (so that graph pieces ending at different kernels on the two sides do not matter),
//     whatever their kernel counts.
// Each side's kernels become operations: a main kernel with the helpers next to it that serve it
// (KernelRoles). The operations are aligned with Myers' diff on their category and their helpers'
// roles (the side with more kernels first; ties by content, never by which trace is which);
// where the diff could have matched an earlier operation of the same kind it matches that one.
// Unmatched operations of one category that differ in their helpers only, or that moved within
// their stretch or past one neighbour, are paired again. Matched heavy operations (a GEMM,
// attention...) in order on both sides close stretches. Then:
//   - a matched pair of operations whose kernel counts differ is a kSplit;
//   - in each stretch, the unmatched operations of the side with more kernels are the extras: a
//     kFusion where one kernel of the other side covers all of them (kSplit where they are all
//     helpers of its operation), a kAlgorithm where none does but the other side runs unmatched
//     kernels of its own, nothing otherwise. The covering kernel is looked for among the other
//     side's unmatched kernels first, then among its matched ones (the stretch's and the two
//     heavy ones around it), preferring one whose category or name states more of the extras,
//     then the nearest. A heavy operation's extra kernel is covered only by a heavy kernel: an
//     unmatched one, or a matched one of its own category.
// A difference's stretch is every kernel between the first and the last involved on either side
// (extras, covering kernel, their partners): the stretches of two differences may overlap.
void FindFusionDifferences(PerSide<const TraceProfile*> profiles, PerSide<const OpTree*> trees,
                           OpComparison* ops);

}  // namespace tracefuse

#endif  // TRACEFUSE_ANALYZE_OP_COMPARE_H_
