// Internal to the report stage: the fusion differences found by aligning operators
// (FindFusionDifferences()), as `ops` and `compare --by-op` show them in each format.
#ifndef TRACEFUSE_SRC_REPORT_OPS_FUSION_DIFFERENCES_H_
#define TRACEFUSE_SRC_REPORT_OPS_FUSION_DIFFERENCES_H_

#include <string>
#include <vector>

#include "report/common/py_json_writer.h"
#include "tracefuse/analyze/op_compare.h"
#include "tracefuse/report/ops.h"

namespace tracefuse {

// FusionDifferencesJson() writes the key "fusion_differences" and its array into the open
// object (schema: docs/reports.md, "Fusion differences by operator").
void FusionDifferencesJson(const std::vector<FusionDifference>& differences, PyJsonWriter* w);

// FusionDifferencesSection() is the section "Fusion differences by operator" of a text or
// markdown report: the first `top` differences, each with who fuses what into which kernel and
// what it saves. `ops` (may be null) gives each op's matched instances, for "x1 of 4".
// `full_names`: the kernels by their full names (in the example instance) instead of families.
std::string FusionDifferencesSection(const std::vector<FusionDifference>& differences,
                                     const OpComparison* ops, const PerSide<std::string>& labels,
                                     size_t top, bool markdown, bool full_names);

// FusionDifferencesHtml() is the section "Fusion differences by operator" of an HTML page, as
// `ops --format html` shows it (report/ops/html.cc): for `compare --by-op --format html` too.
std::string FusionDifferencesHtml(const OpComparison& ops, const OpsContext& context);

// FusionDifferencesCsv() has one row per fusion difference.
std::string FusionDifferencesCsv(const std::vector<FusionDifference>& differences);

// MatchedInstances() is how many matched pairs the op of an op-kind difference has (its
// `instances` are those that differ), for "1 of 4"; 0 for the other kinds, which count
// stretches, or when `ops` is null.
uint64_t MatchedInstances(const FusionDifference& d, const OpComparison* ops);

// SavingText() says what fusing saves, or that the fused kernel is slower: "saves 12.3 us", "the
// fused kernel is slower: 4.5 us more".
std::string SavingText(const FusionDifference& d);

// FusionVerdict() is the difference in a few words: "H100 fuses (fusion)", "... (split)", or
// that neither side covers the other's kernels (algorithm).
std::string FusionVerdict(const FusionDifference& d, const PerSide<std::string>& labels);

// TimesText() keeps the extra kernels' own time apart from the stretch's: "the extra kernels take
// 20.9 us; with them MI300X is 72.1 us faster over the stretch".
std::string TimesText(const FusionDifference& d, const PerSide<std::string>& labels);

// ExtraKernelList() is "elementwise_kernel x96 (MemCopy), ...": the extra kernels by family over
// the instances, "(none)" without any; `markdown` quotes the names; `full_names` names each family
// by its first extra kernel's full name.
std::string ExtraKernelList(const FusionDifference& d, bool markdown, bool full_names = false);

// AchievedByTypeJson() writes the keys "achieved_by_type" (`ops.type_work`) and
// "achieved_by_type_left_out" into the open object.
void AchievedByTypeJson(const OpComparison& ops, PyJsonWriter* w);

// AchievedByTypeSection() is the section "Achieved TFLOP/s by kernel type" of a text or markdown
// report, "" when neither side has FLOPs.
std::string AchievedByTypeSection(const OpComparison& ops, const PerSide<std::string>& labels,
                                  bool markdown);

// AchievedByTypeHtml() is the same section of an HTML report.
std::string AchievedByTypeHtml(const OpComparison& ops, const PerSide<std::string>& labels);

// CategoryList() is "Elementwise x24, Reduce x2": categories with their counts.
std::string CategoryList(const std::vector<std::pair<std::string, uint64_t>>& categories);

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_REPORT_OPS_FUSION_DIFFERENCES_H_
