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
//                     "other_ranks": int, "collectives": int (matched per rank)}]
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

// MergeCsv() has one row per pair (all of them) with the per-pair fields.
std::string MergeCsv(const MergeSummary& summary);

// MergeHtml() is the summary as one self-contained HTML page (no script, no request): state
// counts, kernel time per category as paired bars, recurring opportunities, the pairs whose
// kernel time differs most (200 at most) and the problems (200 at most).
std::string MergeHtml(const MergeSummary& summary);

// MergeJson() is the whole summary in the schema above.
Json MergeJson(const MergeSummary& summary);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_MERGE_H_
