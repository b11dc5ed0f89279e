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
#ifndef TRACEFUSE_OP_COMPARE_H_
#define TRACEFUSE_OP_COMPARE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tracefuse/analyze.h"
#include "tracefuse/op_tree.h"

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
};

// OpKernels is one kernel family's kernels under a unit or a table row.
struct OpKernels {
  std::string family;
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

  int64_t delta_ns() const { return TimeDelta(sides); }
};

// UnmatchedGroup is one unmatched stretch between two matched units (or, past the edit cap, the
// unmatched units of one scope) in one step.
struct UnmatchedGroup {
  int32_t step = kNoStep;
  std::string scope;  // the deepest scope all its units share
  PerSide<OpSide> sides;
  PerSide<std::vector<std::string>> ops;  // the first kGroupOpNames op names of each side
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
};

// OpComparison is CompareOps()'s result.
struct OpComparison {
  PerSide<OpTraceSummary> traces;
  uint64_t matched_ops = 0;                      // pairs
  uint64_t capped_steps = 0;                     // steps aligned key by key, past the edit cap
  std::vector<OpRow> ops;                        // by |delta| (descending), op, scope, matched
  std::vector<UnmatchedGroup> unmatched_groups;  // by step, then position
  std::vector<MatchedInstance> top_instances;    // by |delta| (descending), step, index
};

// CompareOps() aligns the two traces' units step by step and builds the tables. A row
// "[no CPU op]" holds the kernels that no runtime call launched.
OpComparison CompareOps(const OpTree& trace1, const OpTree& trace2,
                        const OpCompareOptions& options = OpCompareOptions());

}  // namespace tracefuse

#endif  // TRACEFUSE_OP_COMPARE_H_
