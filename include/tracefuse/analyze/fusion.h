// Stage 6, library tracefuse_analyze (after reduce): the fusion comparison of two reduced traces.
//
// Reproduces wafer-core's analyze_fusion_differences (../shared/spec/reference-trace-compare.md
// §4) result for result, but not cost for cost: group matching buckets trace-2 groups by
// signature and then by (size, composition), so each trace-1 group scores a handful of classes
// instead of every candidate, and all counts come from one pass over each group or sequence
// instead of list.count inside loops. The merge is near-linear in kernels and groups.
//
// Where the reference breaks ties by hash order, tracefuse uses the rule set's category order
// (the order of `categories` in the rule file): the order of global counts, of opportunities
// with equal impact, of mappings inside each block, and of partial-fusion targets with equal
// counts. Its other tie rules are kept: first occurrence for predecessors and imbalance targets,
// first in trace-2 order among equally scored candidate groups.
#ifndef TRACEFUSE_ANALYZE_FUSION_H_
#define TRACEFUSE_ANALYZE_FUSION_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse {

// Side names one of the two compared traces, in argument order.
enum class Side : uint8_t { kTrace1, kTrace2 };
inline constexpr Side kSides[] = {Side::kTrace1, Side::kTrace2};
inline constexpr Side Opposite(Side s) {
  return s == Side::kTrace1 ? Side::kTrace2 : Side::kTrace1;
}

// PerSide is a pair of values, one per trace, indexed by Side (or by 0 and 1).
template <typename T>
struct PerSide : std::array<T, 2> {
  using std::array<T, 2>::operator[];
  T& operator[](Side s) { return (*this)[static_cast<size_t>(s)]; }
  const T& operator[](Side s) const { return (*this)[static_cast<size_t>(s)]; }
};

// ReferenceLabels() are the reference's names of the two sides, "Trace 1" and "Trace 2", in
// its platform fields and evidence sentences.
const PerSide<std::string>& ReferenceLabels();

// Ratio() is a / b, +inf when b is 0, as the reference's float('inf').
double Ratio(double a, double b);

// kDefaultMinGroupSize is the reference's default smallest matched correlation group.
inline constexpr uint32_t kDefaultMinGroupSize = 50;

// FusionOptions are the analysis' parameters; the reference has only this one.
struct FusionOptions {
  uint32_t min_group_size = kDefaultMinGroupSize;  // smaller correlation groups are not matched
  // Fill FusionReport::hash_order_inputs (one more pass over each kernel stream).
  bool hash_order_inputs = false;
};

// GlobalCount is one type's kernels over the whole traces (§4.1 step 5).
struct GlobalCount {
  std::string type;
  uint64_t trace1 = 0;
  uint64_t trace2 = 0;
  double ratio = 0;  // trace1 / trace2; +inf when trace2 is 0
};

// FusionOpportunity is a type one trace runs markedly less often than the other, in matched
// groups (§4.1 step 6) or in the whole traces (step 7); the field names are the reference's.
struct FusionOpportunity {
  std::string kernel_type;
  uint64_t trace1_total = 0;
  uint64_t trace2_total = 0;
  double trace1_avg_per_group = 0;
  double trace2_avg_per_group = 0;
  bool avg_is_integer_zero = false;  // the reference writes the integer 0 (global path, no matches)
  double trace1_time_ms = 0;
  double trace2_time_ms = 0;
  double time_ratio = 0;  // may be +inf
  double ratio = 0;       // may be +inf
  Side fused_by = Side::kTrace1;
  uint64_t groups_affected = 0;
  uint64_t total_groups = 0;
  bool from_groups = false;  // found in matched groups (else in the whole traces)

  // impact() orders the opportunities (§4.1 step 8).
  double impact() const { return ratio * static_cast<double>(trace1_total + trace2_total); }
};

// FusionMapping is one of the reference's fusion_mappings (§4.1 steps 4c, 9, 10 and 11). Types
// are category indices (FusionReport::categories names them), not names: a report of a multi-GB
// pair holds hundreds of thousands of per-group mappings, 144 bytes each.
struct FusionMapping {
  enum class Kind : uint8_t {
    kSequence,   // A+B on one side, A alone on the other
    kImbalance,  // type called much more often on one side
    kPartial,    // imbalance explained by what the other side's matched groups have more of
    kChain,      // the same type in longer consecutive runs on one side
  };
  Kind kind = Kind::kSequence;
  Side fused_side = Side::kTrace1;  // the unfused side is the other one
  CategoryId fused_type = 0;  // the reference's fused_kernel_type; kSequence: the predecessor A
  CategoryId type = 0;        // the imbalanced / chained type; kSequence: B
  int64_t fused_count = 0;
  int64_t unfused_count = 0;             // of `type`, on the unfused side
  int64_t fused_type_unfused_count = 0;  // kSequence: of `fused_type`, on the unfused side
  int64_t pattern_count = 0;
  double pattern_confidence = 0;
  std::optional<std::pair<int64_t, int64_t>> correlation_groups;  // per-group mappings only

  // What the evidence sentence needs besides the fields above.
  double ratio = 0;             // imbalance and partial: max/min counts; chain: avg ratio
  int64_t groups_analyzed = 0;  // partial
  std::vector<std::pair<CategoryId, int64_t>> targets;  // partial, up to 3
  double unfused_avg = 0, fused_avg = 0;                // chain
  int64_t unfused_chains = 0, fused_chains = 0;         // chain

  // UnfusedSequence() is the reference's unfused_sequence: A, B for kSequence; the type twice for
  // kChain; else once.
  std::vector<CategoryId> UnfusedSequence() const;
  // UnfusedCountPerType() is the reference's unfused_count_per_type: each type of
  // UnfusedSequence() once, with its count on the unfused side.
  std::vector<std::pair<CategoryId, int64_t>> UnfusedCountPerType() const;
};

// Evidence() is the reference's evidence sentence of `m` (§4.3), with `categories` naming types
// and `labels` naming trace 1 and trace 2 ("Trace 1" and "Trace 2" in the compatible JSON, the real
// platform names in text reports).
std::string Evidence(const FusionMapping& m, const std::vector<std::string>& categories,
                     const PerSide<std::string>& labels);

// HashOrderInputs are what the reference iterates as Python sets, whose order follows the
// string hash (§4.4, "Determinism"), each a list of types in order of first appearance, so that
// set(list) is the reference's set. The Python module replays those iterations with Python's own
// sets, so that its dicts are ordered as the reference's are under the same PYTHONHASHSEED; the
// reports keep the rule set's order (see the header comment).
struct HashOrderInputs {
  // Each trace's kernels in trace order: global_counts' keys and the global opportunities
  // iterate set(types1) | set(types2) (§4.1 steps 5, 7).
  PerSide<std::vector<CategoryId>> trace_types;
  // ... in ts order: the chain mappings (step 10) and the global sequence mappings (step 11, §4.2).
  PerSide<std::vector<CategoryId>> ts_types;
  // The matched groups' kernels, pair after pair: the partial-fusion mappings (step 9).
  PerSide<std::vector<CategoryId>> matched_types;
  // Each matched pair, in match order: its correlation ids and each group's types (ts order);
  // fusion_diffs (step 4b) and the pair's sequence mappings (step 4c, §4.2) iterate them.
  std::vector<std::pair<int64_t, int64_t>> pair_correlations;
  std::vector<PerSide<std::vector<CategoryId>>> pair_types;
};

// FusionReport is the reference's result (§4.4) with the rule set's categories.
struct FusionReport {
  std::vector<std::string> categories;  // the rule set's, naming FusionMapping types
  PerSide<uint64_t> total_kernels{};
  PerSide<uint64_t> large_groups{};
  uint64_t matched_groups = 0;
  std::vector<GlobalCount> global_counts;
  std::vector<FusionOpportunity> opportunities;  // sorted by impact, descending
  std::vector<FusionMapping> mappings;           // per-group, partial, chain, global blocks
  HashOrderInputs hash_order_inputs;             // with FusionOptions::hash_order_inputs only
};

// ReferenceGpuName() is the GPU name as the reference reports it: deviceProperties[0].name, else
// "MI300X" for a trace its rule calls AMD and "Unknown GPU" otherwise.
std::string ReferenceGpuName(const TraceMetadata& metadata);

// AnalyzeFusion() compares two reduced traces as the reference's analyze_fusion_differences
// (§4.1) does. Both profiles must keep their kernel streams (PipelineOptions::keep_kernel_records):
// the analysis walks them again.
FusionReport AnalyzeFusion(const TraceProfile& trace1, const TraceProfile& trace2,
                           const FusionOptions& options = {});

}  // namespace tracefuse

#endif  // TRACEFUSE_ANALYZE_FUSION_H_
