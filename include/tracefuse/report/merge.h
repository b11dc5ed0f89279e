// Stage 7, report: `tracefuse merge`, one summary of a batch's output directory: every pair's
// state and headline numbers, kernel time per category across pairs, the fusion opportunities
// that recur, and the pairs that did not complete. The batch stage reads the directory into a
// MergeSummary (tracefuse/batch/summary.h); this header lays it out.
//
// The sections across pairs (categories, recurring opportunities) have two sides, named by
// platform when every complete pair compares the same two platforms, in either order (each
// pair's traces are then taken by platform: an NVIDIA-vs-AMD pair counts as AMD-vs-NVIDIA), else
// "trace1" and "trace2" by position.
//
// JSON schema of MergeJson() (`tracefuse merge --format json`). Times are microseconds, as in
// the "tracefuse" key of compare's JSON; a ratio is trace 1 / trace 2 and null when infinite
// (the other side has none), as in compare's JSON.
//
//   {
//     "tracefuse_version": string,
//     "dir": string,                          the directory as given
//     "manifest": {"path": string|null, "rows": int|null, "error": string|null},
//                                             error: why it was not read; then "missing" is 0
//                                             since pairs without a status file are unknown
//     "sides": [string, string],              the sides across pairs: platforms, or "trace1",
//                                             "trace2"
//     "counts": {"pairs": int, "complete": int, "failed": int, "interrupted": int,
//                "running": int, "missing": int},
//     "pairs": [{                             every pair: manifest order, then the others
//       "label": string,
//       "state": "complete"|"failed"|"interrupted"|"running"|"missing",
//       "exit_code": int|null, "error": string|null, "task": int|null,
//       "status_file": string|null, "report_file": string|null,
//       "elapsed_seconds": number|null, "peak_rss_bytes": int|null,
//       "host": string|null, "started_at": string|null,
//       "rule_set": string|null, "matched_groups": int|null,
//       "kernel_time_ratio": number|null,     null also where the pair has no report
//       "traces": [{"path": string|null, "label": string|null, "platform": string|null,
//                   "gpu": string|null, "kernels": int|null, "kernel_time_us": number|null},
//                  x2],
//       "top_opportunities": [{"kernel_type": string, "fused_by": "trace1"|"trace2",
//                              "fused_by_label": string, "ratio": number|null}]  (--top N;
//                                             fused_by_label: the report's label of that side)
//       "ops": null | {                       a pair compared --by-op (batch --by-op)
//         "file": string,                     its op comparison, <label>.ops.json
//         "linked_kernel_share": [number, number],  per trace (in the pair's order): the share
//                                             of its kernel time linked to ops (0 to 1)
//         "fusion_differences": int}
//     }],
//     "categories": [{                        over the complete pairs, most kernel time first
//       "category": string,
//       "sides": [{                           in the order of "sides"
//                  "sum_us": number, "median_us": number, "min_us": number,
//                  "min_pair": string, "max_us": number, "max_pair": string,
//                  "pairs_with_kernels": int}, x2]
//     }],
//     "recurring_opportunities": [{           in most complete pairs first
//       "kernel_type": string, "fused_by": string (one of "sides"),
//       "pairs": int, "pair_labels": [string], "median_ratio": number|null
//     }],
//     "problems": [{"label": string, "state": string, "exit_code": int|null,
//                   "error": string|null}],   every pair not complete, as in "pairs"
//     "straggler_threshold": number,          --straggler-threshold
//     "ranks": [{                             per side, in the order of "sides": the complete
//                                             pairs whose status file records the side's GPU
//                                             timeline, as the ranks of one run
//       "collective_kind": string|null,       what every matched collective is ("all-reduce",
//                                             ...), null when they differ or none is matched
//       "pairs": [{"pair": string, "span_us", "busy_us", "computation_us",
//                  "exposed_communication_us", "idle_us": number (summed over the pair's
//                  devices), "wait_us": number (in the matched collectives),
//                  "collectives": int (matched)}]
//     }, x2],
//     "stragglers": [{"side": "trace1"|"trace2" (of "sides"), "pair": string,
//                     "computation_us", "median_computation_us", "others_wait_us": number,
//                     "other_ranks": int, "collectives": int (matched per rank)}],
//     "pairs_with_ops": int,                  complete pairs compared --by-op
//     "fusion_differences": [{                over those pairs, each once (the same kind,
//                                             scope, op, relation, fusing side, fused kernel
//                                             and extra kernel families); in the most pairs
//                                             first, then the most extra time
//       "kind", "scope", "op", "relation": string,  as `tracefuse ops` writes them
//       "fused_by": string (one of "sides") | null (relation "algorithm"),
//       "fused_kernel": string|null, "op": null for kind "module", as in `ops`' JSON,
//       "extra_kernels": [{"name": string, "count": int}],  by family, over the instances
//       "instances": int, "extra_time_us": number, "saving_us": number,  summed over the pairs
//       "time_us": [number, number],          each side's time in the instances, summed
//       "pairs": int, "pair_labels": [string]
//     }],
//     "ops": [{                               every op matched in those pairs, by op and scope;
//                                             the largest |delta_us| first
//       "op": string, "scope": string, "pairs": int, "instances": int (matched),
//       "time_us": [number, number] (summed, sides of "sides"), "delta_us": number (first -
//       second)
//     }]
//   }
#ifndef TRACEFUSE_REPORT_MERGE_H_
#define TRACEFUSE_REPORT_MERGE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracefuse/analyze/fusion.h"
#include "tracefuse/analyze/rank_compare.h"
#include "tracefuse/report/json.h"

namespace tracefuse {

// PairState is where a pair of a batch stands. kRunning is a status file that still says
// "running": the job is still running, or was killed before it could record anything else.
// kMissing is a manifest row without a status file.
enum class PairState : uint8_t { kComplete, kFailed, kInterrupted, kRunning, kMissing };
inline constexpr PairState kPairStates[] = {PairState::kComplete, PairState::kFailed,
                                            PairState::kInterrupted, PairState::kRunning,
                                            PairState::kMissing};

// PairStateName() is the state as status files and the JSON write it: "complete", ...
std::string_view PairStateName(PairState state);

// MergedTrace is one side of a pair as its compare report describes it.
struct MergedTrace {
  std::string path;      // as the status file (or the manifest) gives it
  std::string label;     // the report's name for the side (its platform, or --label1/2)
  std::string platform;  // "AMD", "NVIDIA" or "unknown"
  std::string gpu;
  uint64_t kernels = 0;
  double kernel_time_us = 0;
  std::vector<std::pair<std::string, double>> time_us_by_category;  // in the report's order
  // The GPU timeline and collectives its pair's status file records (`pair` is the pair's
  // label); none from a status file without them.
  std::optional<RankTimeline> timeline;
};

// MergedOpportunity is one of a pair's fusion opportunities.
struct MergedOpportunity {
  std::string kernel_type;
  Side fused_by = Side::kTrace1;
  double ratio = 0;  // +inf when the fusing side has none of the type
};

// OpFusionDifference is a fusion difference that `tracefuse ops` finds (its JSON's
// "fusion_differences"): in a pair, as that pair's op comparison gives it; in the summary, summed
// over the pairs where it appears (the same kind, scope, op, relation, fusing side, fused kernel
// and extra kernel families).
struct OpFusionDifference {
  std::string kind, scope, op, relation;
  // The side that runs the work in fewer kernels (in the summary, of MergeSummary::side_names);
  // none for relation "algorithm", where neither covers the other's kernels.
  std::optional<Side> fused_by;
  std::string fused_kernel;
  std::vector<std::pair<std::string, uint64_t>> extra_kernels;  // family, count over instances
  uint64_t instances = 0;
  double extra_time_us = 0, saving_us = 0;
  PerSide<double> time_us{};       // each side's time in the op's instances
  std::vector<std::string> pairs;  // in the summary: the pairs where it appears, in pair order
};

// OpTimes is an op matched on both sides (an op row of `tracefuse ops`, by op and module scope):
// its time on each side, in a pair or summed over the pairs.
struct OpTimes {
  std::string op, scope;
  uint64_t instances = 0;  // matched on both sides
  PerSide<double> time_us{};
  size_t pairs = 0;  // in the summary: the pairs where it is matched

  double DeltaUs() const { return time_us[Side::kTrace1] - time_us[Side::kTrace2]; }
};

// MergedOps is what a pair's op comparison (`<label>.ops.json`, batch --by-op) gives the
// summary.
struct MergedOps {
  std::string file;
  PerSide<double> kernel_time_us{}, linked_kernel_time_us{};  // kernel time linked to ops
  std::vector<OpTimes> ops;                                   // matched on both sides
  std::vector<OpFusionDifference> fusion_differences;

  // LinkedShare() is the share of `side`'s kernel time linked to ops (0 without kernels).
  double LinkedShare(Side side) const {
    return kernel_time_us[side] > 0 ? linked_kernel_time_us[side] / kernel_time_us[side] : 0;
  }
};

// MergedPair is one pair of the batch: its status and, for a complete pair, its report.
struct MergedPair {
  std::string label;
  PairState state = PairState::kMissing;
  std::optional<int64_t> exit_code;
  std::string error;  // one line; empty when none
  std::optional<int64_t> task;
  std::string status_file, report_file;  // empty when absent
  std::optional<double> elapsed_seconds;
  std::optional<uint64_t> peak_rss_bytes;
  std::string host, started_at;
  PerSide<MergedTrace> traces;
  bool sides_swapped = false;  // trace 1 is the summary's second side (MergeSummary::side_names)
  // From the report, complete pairs only.
  bool has_report = false;
  std::string rule_set;
  uint64_t matched_groups = 0;
  std::vector<MergedOpportunity> opportunities;  // all of them, by impact
  std::optional<MergedOps> ops;                  // a pair compared --by-op

  // Trace 1's kernel time over trace 2's (+inf when trace 2 has none).
  double KernelTimeRatio() const;
  // OnSide() is the trace on the summary's side `side`.
  const MergedTrace& OnSide(Side side) const {
    return traces[sides_swapped ? Opposite(side) : side];
  }
};

// SideStats is one category's kernel time on one side across the complete pairs, a pair
// without kernels of the category counting 0; min and max name the first pair where they occur.
struct SideStats {
  double sum_us = 0, median_us = 0, min_us = 0, max_us = 0;
  std::string min_pair, max_pair;
  size_t pairs_with_kernels = 0;
};

struct CategorySummary {
  std::string category;
  PerSide<SideStats> sides;
};

// RecurringOpportunity is an opportunity (kernel type and fusing side, one of the summary's) and
// the complete pairs that report it.
struct RecurringOpportunity {
  std::string kernel_type;
  Side fused_by = Side::kTrace1;   // of MergeSummary::side_names
  std::vector<std::string> pairs;  // labels, in pair order
  double median_ratio = 0;
};

// MergeSummary is the whole summary, computed by the batch stage (SummarizeBatch()).
struct MergeSummary {
  std::string dir;
  std::string manifest_path;            // empty when none is known
  std::optional<size_t> manifest_rows;  // set when the manifest was read
  std::string manifest_error;           // why it was not read; empty when it was
  // The sides' names across pairs: both platforms when every complete pair compares the same two
  // (MergedPair::sides_swapped says which way round), else "trace1" and "trace2".
  PerSide<std::string> side_names{{"trace1", "trace2"}};
  size_t top = 3;                               // opportunities listed per pair
  std::vector<MergedPair> pairs;                // manifest order, then the others by task, label
  std::vector<CategorySummary> categories;      // by kernel time on both sides, descending
  std::vector<RecurringOpportunity> recurring;  // by pairs (descending), median ratio, type
  // Each side's ranks: the complete pairs with that side's timeline, in pair order, analysed
  // as the ranks of one run (AnalyzeRanks()) with `straggler_threshold`.
  double straggler_threshold = 0.10;
  PerSide<RankAnalysis> ranks;
  // Over the complete pairs compared --by-op (sides as above): every fusion difference once, in
  // the most pairs first (then the most extra kernel time); every op matched in any of them, the
  // largest summed time difference either way first (then op, scope).
  size_t pairs_with_ops = 0;
  std::vector<OpFusionDifference> fusion_differences;
  std::vector<OpTimes> ops;

  size_t Count(PairState state) const;
  // Complete() says whether the batch is known to be done: a manifest was read, there is a
  // pair, and every pair is complete.
  bool Complete() const;
};

// MergeText() is the summary on one screen (at most 60 lines of at most 100 columns, however
// many pairs): state counts, kernel time per category, recurring opportunities, the pairs
// whose kernel time differs most between the sides, and the problems, each list folded.
// `markdown` gives the same layout as a Markdown document.
std::string MergeText(const MergeSummary& summary, bool markdown);

// MergeCsvTables() are the tables MergeCsv() writes: "pairs" (one row per pair, all of them,
// with the per-pair fields), "fusion_differences" and "ops" (one row per fusion difference, or
// per op, over the pairs compared --by-op, in the JSON's order).
const std::vector<std::string>& MergeCsvTables();
std::string MergeCsv(const MergeSummary& summary, const std::string& table = "pairs");

// MergeHtml() is the summary as one self-contained HTML page (no script, no request): state
// counts, kernel time per category as paired bars, recurring opportunities, the pairs whose
// kernel time differs most (200 at most) and the problems (200 at most).
std::string MergeHtml(const MergeSummary& summary);

// MergeJson() is the whole summary in the schema above.
Json MergeJson(const MergeSummary& summary);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_MERGE_H_
