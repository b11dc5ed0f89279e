#include "report/fusion/view.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "report/common/formatting.h"
#include "tracefuse/analyze/op_compare.h"
#include "tracefuse/base/strings.h"

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
    if (f.example == nullptr && m.correlation_groups) f.example = &m;
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

std::vector<std::vector<GroupKernel>> GroupKernels(const TraceProfile& profile,
                                                   const std::vector<int64_t>& correlations) {
  absl::flat_hash_map<int64_t, size_t> wanted;  // correlation id -> index in `correlations`
  for (size_t i = 0; i < correlations.size(); ++i) wanted.try_emplace(correlations[i], i);
  constexpr uint32_t kNotWanted = UINT32_MAX;
  std::vector<uint32_t> slot_of_group(profile.correlated_groups(), kNotWanted);
  PackedCorrelations::Cursor cursor;
  for (uint32_t g = 0; g < slot_of_group.size(); ++g) {
    auto it = wanted.find(*profile.GroupCorrelation(g, &cursor));
    if (it != wanted.end()) slot_of_group[g] = static_cast<uint32_t>(it->second);
  }
  std::vector<std::vector<std::pair<int64_t, GroupKernel>>> timed(correlations.size());
  const std::vector<CategoryId> categories = profile.NameCategories();
  profile.kernels.ForEach([&](const KernelRecord& k) {
    if (k.group == kNoGroup || slot_of_group[k.group] == kNotWanted) return;
    timed[slot_of_group[k.group]].push_back({k.ts_ns, {k.name, categories[k.name], k.dur_ns}});
  });
  std::vector<std::vector<GroupKernel>> groups(correlations.size());
  for (size_t i = 0; i < correlations.size(); ++i) {
    std::stable_sort(timed[i].begin(), timed[i].end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [ts, kernel] : timed[i]) groups[i].push_back(kernel);
  }
  for (size_t i = 0; i < correlations.size(); ++i) {
    if (wanted.at(correlations[i]) != i) groups[i] = groups[wanted.at(correlations[i])];
  }
  return groups;
}

std::vector<AlignedColumn> AlignGroups(const PerSide<std::vector<GroupKernel>>& groups) {
  PerSide<std::vector<uint32_t>> types;
  for (Side s : kSides)
    for (const GroupKernel& k : groups[s]) types[s].push_back(k.category);
  std::vector<std::pair<uint32_t, uint32_t>> matches =
      MyersMatches(types[Side::kTrace1], types[Side::kTrace2]);
  // A sentinel match past both ends lays out the stretch after the last common type.
  matches.emplace_back(types[Side::kTrace1].size(), types[Side::kTrace2].size());
  std::vector<AlignedColumn> columns;
  PerSide<uint32_t> next{{0, 0}};
  for (const auto& [a, b] : matches) {
    const PerSide<uint32_t> end{{a, b}};
    while (next[Side::kTrace1] < end[Side::kTrace1] || next[Side::kTrace2] < end[Side::kTrace2]) {
      AlignedColumn column;
      for (Side s : kSides)
        if (next[s] < end[s]) column.kernel[s] = next[s]++;
      columns.push_back(column);
    }
    if (a == types[Side::kTrace1].size()) break;
    columns.push_back({{{a, b}}, true});
    next = {{a + 1, b + 1}};
  }
  return columns;
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

std::string OpportunitySentence(const FusionOpportunity& o, const PerSide<std::string>& labels) {
  return fmt::format(
      "fused by {} ({} fewer calls) - {} {} vs {} {} kernels {}; {:.3f} vs {:.3f} ms",
      labels[o.fused_by], RatioText(o.ratio), labels[Side::kTrace1], Thousands(o.trace1_total),
      labels[Side::kTrace2], Thousands(o.trace2_total), OpportunityScope(o), o.trace1_time_ms,
      o.trace2_time_ms);
}

std::string OpportunityScope(const FusionOpportunity& o) {
  return o.from_groups
             ? fmt::format("in {} of {} matched groups", o.groups_affected, o.total_groups)
             : "over the whole traces";
}

}  // namespace tracefuse
