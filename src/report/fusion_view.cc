#include "report/fusion_view.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "report/formatting.h"

namespace tracefuse {
namespace {

// In Kind order: a kind's value indexes this array.
constexpr FusionMapping::Kind kMappingKinds[] = {
    FusionMapping::Kind::kSequence, FusionMapping::Kind::kImbalance, FusionMapping::Kind::kPartial,
    FusionMapping::Kind::kChain};

// The report's opportunity for the type `name`, or null.
const FusionOpportunity* OpportunityFor(const FusionReport& report, const std::string& name) {
  auto it = std::find_if(report.opportunities.begin(), report.opportunities.end(),
                         [&](const FusionOpportunity& o) { return o.kernel_type == name; });
  return it == report.opportunities.end() ? nullptr : &*it;
}

// Mappings of one kind, equal evidence folded, in first-seen order.
class MappingFolder {
 public:
  void Add(std::string evidence, const FusionMapping& m) {
    auto [it, inserted] = index_.try_emplace(evidence, folded_.size());
    if (inserted) folded_.push_back({std::move(evidence), 0, 0});
    FoldedMapping& f = folded_[it->second];
    f.groups += m.correlation_groups ? 1 : 0;
    f.calls += m.pattern_count;
  }
  std::vector<FoldedMapping> ByCalls() && {
    std::stable_sort(
        folded_.begin(), folded_.end(),
        [](const FoldedMapping& a, const FoldedMapping& b) { return a.calls > b.calls; });
    return std::move(folded_);
  }

 private:
  std::vector<FoldedMapping> folded_;
  absl::flat_hash_map<std::string, size_t> index_;
};

}  // namespace

PerSide<FusionSide> FusionSides(const FusionReport& report, const CompareContext& context) {
  PerSide<FusionSide> sides;
  for (Side s : kSides) {
    const TraceProfile& p = *context.traces[s];
    sides[s] = {&p, context.labels[s], KernelTimeNs(p), report.large_groups[s]};
  }
  return sides;
}

std::vector<FusionTypeRow> FusionTypeRows(const FusionReport& report,
                                          const CompareContext& context) {
  PerSide<std::vector<CategoryTotals>> totals;
  for (Side s : kSides) totals[s] = context.traces[s]->PerCategory();
  std::vector<FusionTypeRow> rows;
  for (CategoryId t : CategoryIds(totals[Side::kTrace1].size())) {
    FusionTypeRow row;
    row.category = t;
    for (Side s : kSides) {
      row.kernels[s] = totals[s][t].kernels;
      row.time_ns[s] = totals[s][t].time_ns;
    }
    if (row.total_kernels() == 0) continue;
    row.name = context.traces[Side::kTrace1]->category_name(row.category);
    row.count_ratio = Ratio(row.kernels[Side::kTrace1], row.kernels[Side::kTrace2]);
    row.time_ratio = Ratio(row.time_ns[Side::kTrace1], row.time_ns[Side::kTrace2]);
    row.opportunity = OpportunityFor(report, row.name);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<MappingBlock> FoldMappings(const FusionReport& report,
                                       const PerSide<std::string>& labels) {
  MappingFolder folders[std::size(kMappingKinds)];
  for (const FusionMapping& m : report.mappings) {
    folders[static_cast<size_t>(m.kind)].Add(Evidence(m, report.categories, labels), m);
  }
  std::vector<MappingBlock> blocks;
  for (FusionMapping::Kind kind : kMappingKinds) {
    std::vector<FoldedMapping> folded = std::move(folders[static_cast<size_t>(kind)]).ByCalls();
    if (!folded.empty()) blocks.push_back({kind, std::move(folded)});
  }
  return blocks;
}

FusionView MakeFusionView(const FusionReport& report, const CompareContext& context) {
  FusionView view;
  view.sides = FusionSides(report, context);
  view.rule_set = context.traces[Side::kTrace1]->classifier->rule_set().name();
  view.matched_groups = report.matched_groups;
  view.min_group_size = context.min_group_size;
  view.types = FusionTypeRows(report, context);
  std::stable_sort(view.types.begin(), view.types.end(),
                   [](const FusionTypeRow& a, const FusionTypeRow& b) {
                     return a.total_kernels() > b.total_kernels();
                   });
  view.opportunities = &report.opportunities;
  view.mapping_blocks = FoldMappings(report, context.labels);
  return view;
}

const char* MappingKindName(FusionMapping::Kind kind) {
  switch (kind) {
    case FusionMapping::Kind::kSequence:
      return "sequence";
    case FusionMapping::Kind::kImbalance:
      return "count imbalance";
    case FusionMapping::Kind::kPartial:
      return "partial";
    case FusionMapping::Kind::kChain:
      return "chain";
  }
  return "";
}

std::string OpportunityScope(const FusionOpportunity& o) {
  return o.from_groups
             ? fmt::format("in {} of {} matched groups", o.groups_affected, o.total_groups)
             : "over the whole traces";
}

}  // namespace tracefuse
