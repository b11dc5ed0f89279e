// Internal to the report stage: what the fusion report formats show, computed once here so that
// text, markdown, CSV and JSON (and any later format, such as HTML) agree on every number and
// only lay it out differently.
#ifndef TRACEFUSE_SRC_REPORT_FUSION_VIEW_H_
#define TRACEFUSE_SRC_REPORT_FUSION_VIEW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tracefuse/analyze.h"
#include "tracefuse/reduce.h"
#include "tracefuse/report/fusion.h"

namespace tracefuse {

// FusionSide is one compared trace as the reports introduce it.
struct FusionSide {
  const TraceProfile* profile = nullptr;
  std::string label;  // the context's name for this side
  int64_t kernel_time_ns = 0;
  uint64_t large_groups = 0;  // correlation groups of min_group_size kernels or more
};

// FusionTypeRow is one kernel type (category) with kernels in either trace: both sides' counts
// and times, their ratios (trace 1 / trace 2, +inf when trace 2 has none, as in the reference)
// and the fusion opportunity found for the type, if any.
struct FusionTypeRow {
  CategoryId category = 0;
  std::string name;
  PerSide<uint64_t> kernels{};
  PerSide<int64_t> time_ns{};
  double count_ratio = 0;
  double time_ratio = 0;
  const FusionOpportunity* opportunity = nullptr;  // points into the report

  uint64_t total_kernels() const { return kernels[Side::kTrace1] + kernels[Side::kTrace2]; }
};

// FoldedMapping is the mappings of one kind with the same evidence sentence: per-group mappings
// repeat once per matched group, which a reader wants counted, not listed.
struct FoldedMapping {
  std::string evidence;  // with the context's labels
  int64_t groups = 0;    // matched groups it was found in; 0 for whole-trace mappings
  int64_t calls = 0;     // pattern counts summed
};

// MappingBlock is the folded mappings of one kind, most calls first (ties in report order).
struct MappingBlock {
  FusionMapping::Kind kind = FusionMapping::Kind::kSequence;
  std::vector<FoldedMapping> mappings;
};

// FusionView is everything the people-facing formats show, in the order they show it.
struct FusionView {
  PerSide<FusionSide> sides;
  std::string rule_set;
  uint64_t matched_groups = 0;
  uint32_t min_group_size = 0;
  std::vector<FusionTypeRow> types;  // by kernels on both sides, descending; ties in rule order
  const std::vector<FusionOpportunity>* opportunities = nullptr;  // the report's, by impact
  std::vector<MappingBlock> mapping_blocks;  // the kinds that have mappings, in Kind order
};

// MakeFusionView() computes the whole view; CSV and JSON, which need only parts of it, call
// the functions below instead.
FusionView MakeFusionView(const FusionReport& report, const CompareContext& context);

// FusionSides() introduces the two traces: labels, kernel time, large groups.
PerSide<FusionSide> FusionSides(const FusionReport& report, const CompareContext& context);

// FusionTypeRows() is the kernel-type rows in the rule set's category order (CSV and JSON keep
// it; MakeFusionView() sorts them for people).
std::vector<FusionTypeRow> FusionTypeRows(const FusionReport& report,
                                          const CompareContext& context);

// FoldMappings() folds the report's mappings by kind and evidence, the evidence worded with
// `labels`.
std::vector<MappingBlock> FoldMappings(const FusionReport& report,
                                       const PerSide<std::string>& labels);

// MappingKindName() names a kind of mapping for people: "sequence", "count imbalance", ...
const char* MappingKindName(FusionMapping::Kind kind);

// OpportunityScope() says where an opportunity was found: "in 3 of 40 matched groups" or
// "over the whole traces".
std::string OpportunityScope(const FusionOpportunity& opportunity);

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_REPORT_FUSION_VIEW_H_
