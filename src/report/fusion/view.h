// Internal to the report stage: what the fusion report formats show, computed once here so that
// text, markdown, CSV and JSON (and any later format, such as HTML) agree on every number and
// only lay it out differently.
#ifndef TRACEFUSE_SRC_REPORT_FUSION_VIEW_H_
#define TRACEFUSE_SRC_REPORT_FUSION_VIEW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "report/common/html.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/reduce/trace_profile.h"
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
  const FusionMapping* example = nullptr;  // the first found in matched groups; null if none
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

// GroupKernel is one kernel of a correlation group as an aligned view of the group shows it.
struct GroupKernel {
  uint32_t name = 0;  // index into TraceProfile::names
  CategoryId category = 0;
  int64_t dur_ns = 0;
};

// GroupKernels() is, per correlation id of `correlations`, its group's kernels in `profile` in ts
// order (stable on trace order, as the analysis lists them); empty for an id without a group. One
// pass over the kernel stream, which the profile must have kept.
std::vector<std::vector<GroupKernel>> GroupKernels(const TraceProfile& profile,
                                                   const std::vector<int64_t>& correlations);

// kNoKernel marks a gap in an aligned column.
inline constexpr uint32_t kNoKernel = UINT32_MAX;

// AlignedColumn is one column of two aligned kernel sequences: an index into each side's
// sequence, or kNoKernel where that side has nothing there.
struct AlignedColumn {
  PerSide<uint32_t> kernel{{kNoKernel, kNoKernel}};
  bool same_type = false;
};

// AlignGroups() aligns two groups' kernels like a diff of their types: the common types of a
// minimal edit script (MyersMatches()) share columns, and each stretch between two of them is
// laid out side by side, position by position.
std::vector<AlignedColumn> AlignGroups(const PerSide<std::vector<GroupKernel>>& groups);

// AlignedStripCells() draws the first `max_columns` aligned columns as the cells of a `.seq`
// strip: cell_of(side, kernel, same_type) is a kernel's cell, and category_of(side, kernel) its
// category, which is marked in `shown` (the legend shows only those).
template <typename CellOf, typename CategoryOf>
std::string AlignedStripCells(const std::vector<AlignedColumn>& columns, size_t max_columns,
                              CellOf cell_of, CategoryOf category_of, std::vector<uint8_t>* shown) {
  std::string cells;
  for (size_t i = 0; i < columns.size() && i < max_columns; ++i) {
    PerSide<SequenceCell> cell;
    PerSide<const SequenceCell*> column{};
    for (Side s : kSides) {
      const uint32_t k = columns[i].kernel[s];
      if (k == kNoKernel) continue;
      (*shown)[category_of(s, k)] = 1;
      cell[s] = cell_of(s, k, columns[i].same_type);
      column[s] = &cell[s];
    }
    cells += SequenceColumnHtml(column, columns[i].same_type);
  }
  return cells;
}

// MappingKindName() names a kind of mapping for people: "sequence", "count imbalance", ...
const char* MappingKindName(FusionMapping::Kind kind);

// OpportunitySentence() says who fuses the opportunity's type and what supports it, with the
// context's `labels`: "fused by H100 (2.00x fewer calls) - MI300X 1,200 vs H100 600 kernels in 3
// of 40 matched groups; 1.234 vs 0.567 ms".
std::string OpportunitySentence(const FusionOpportunity& opportunity,
                                const PerSide<std::string>& labels);

// OpportunityScope() says where an opportunity was found: "in 3 of 40 matched groups" or
// "over the whole traces".
std::string OpportunityScope(const FusionOpportunity& opportunity);

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_REPORT_FUSION_VIEW_H_
