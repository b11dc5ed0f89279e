// `tracefuse compare --format text` and `--format markdown`: one layout, two markups.
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "report/breakdown/view.h"
#include "report/common/formatting.h"
#include "report/fusion/view.h"
#include "report/ops/fusion_differences.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/report/fusion.h"
#include "tracefuse/report/gpu_timeline.h"
#include "tracefuse/report/stats.h"

namespace tracefuse {
namespace {

constexpr size_t kTypeColumns = 6;
using TypeCells = std::array<std::string, kTypeColumns>;

// The cells of a kernel type's row after its name: counts, count ratio, times, time ratio.
TypeCells TypeRowCells(const FusionTypeRow& row) {
  return {Thousands(row.kernels[Side::kTrace1]),
          Thousands(row.kernels[Side::kTrace2]),
          RatioText(row.count_ratio),
          MillisText(row.time_ns[Side::kTrace1]),
          MillisText(row.time_ns[Side::kTrace2]),
          RatioText(row.time_ratio)};
}

// FusionPage lays a FusionView out as the text or the markdown report, section by section: the
// two formats share every line and differ in markup only.
class FusionPage : Page {
 public:
  FusionPage(const FusionView& view, const CompareContext& context, bool markdown)
      : Page(markdown), view_(view), context_(context) {}

  std::string Render() && {
    Header();
    const PerSide<const TraceProfile*> traces{view_.sides[Side::kTrace1].profile,
                                              view_.sides[Side::kTrace2].profile};
    const PerSide<std::string> labels{Label(Side::kTrace1), Label(Side::kTrace2)};
    out_ += GpuTimelineSection(traces, labels, markdown_);
    out_ += IdleSection(traces, labels, markdown_);
    TypeTable();
    if (context_.ops != nullptr) {
      out_ += AchievedByTypeSection(*context_.ops, context_.labels, markdown_);
    }
    Opportunities();
    Mappings();
    if (context_.ops != nullptr) {
      out_ +=
          FusionDifferencesSection(context_.ops->fusion_differences, context_.ops, context_.labels,
                                   kTopOpportunities, markdown_, context_.full_names);
    }
    return std::move(out_);
  }

 private:
  static constexpr size_t kTopOpportunities = 10;
  static constexpr size_t kTopMappings = 5;  // folded mappings per kind

  void Header();
  std::string TraceLine(const FusionSide& side) const;
  void TypeTable();
  void TypeTableRow(const std::string& type, const TypeCells& cells);
  void Opportunities();
  std::string OpportunityLine(const FusionOpportunity& o) const;
  void Mappings();
  void MappingBlockLines(const MappingBlock& block);

  const std::string& Label(Side side) const { return view_.sides[side].label; }

  const FusionView& view_;
  const CompareContext& context_;
  size_t type_width_ = 0;                         // text: the kernel-type column
  std::array<size_t, kTypeColumns> widths_ = {};  // text: the columns after it
};

// The title, the two traces (a table in markdown) and what was matched.
void FusionPage::Header() {
  const std::string& a = Label(Side::kTrace1);
  const std::string& b = Label(Side::kTrace2);
  Line(markdown_ ? fmt::format("# Fusion comparison: {} vs {}", a, b)
                 : fmt::format("FUSION COMPARISON: {} vs {}", a, b));
  if (markdown_) {
    Line("");
    Line(fmt::format("| | trace | platform | GPU | kernels | kernel time | groups >= {} |",
                     view_.min_group_size));
    Line("|---|---|---|---|---:|---:|---:|");
  }
  for (Side s : kSides) Line(TraceLine(view_.sides[s]));
  for (Side s : kSides) {
    const TraceProfile& p = *view_.sides[s].profile;
    if (p.truncated)
      Line(fmt::format("{}{} truncated: {}", Bullet("  "), Label(s), TruncationText(p)));
    const CategoryTotals by_op = ByLaunchingOpTotals(p);
    if (by_op.kernels > 0) {
      Line(
          fmt::format("{}{}: {} kernels ({} ms) classified by the op that launched them (their "
                      "names match no rule)",
                      Bullet("  "), Label(s), Thousands(by_op.kernels), MillisText(by_op.time_ns)));
    }
  }
  Line(fmt::format("{}Matched correlation groups: {}; rule set: {}", markdown_ ? "\n" : "  ",
                   view_.matched_groups, view_.rule_set));
  if (view_.matched_groups == 0 && context_.ops == nullptr &&
      HasCpuSide(*view_.sides[Side::kTrace1].profile) &&
      HasCpuSide(*view_.sides[Side::kTrace2].profile)) {
    Line(fmt::format(
        "{}No correlation group matched: these traces replay no CUDA/HIP graph of "
        "{}+ kernels. They record their CPU operators, so {} finds the fusion "
        "differences by aligning the operators instead.",
        markdown_ ? "\n" : "  ", view_.min_group_size, markdown_ ? "`--by-op`" : "--by-op"));
  }
}

// PlatformAndFormat() is the trace's platform, and the format it was read from where that is not
// the PyTorch profiler's: "NVIDIA, Nsight Systems SQLite".
std::string PlatformAndFormat(const TraceProfile& p) {
  if (p.metadata.format == TraceFormat::kKineto) return std::string(PlatformName(p.platform));
  return StrCat(PlatformName(p.platform), ", ", TraceFormatName(p.metadata.format));
}

std::string FusionPage::TraceLine(const FusionSide& side) const {
  const TraceProfile& p = *side.profile;
  if (markdown_) {
    return fmt::format("| {} | `{}` | {} | {} | {} | {:.3f} ms | {} |", side.label, p.path,
                       PlatformAndFormat(p), GpuText(p), Thousands(p.kernel_count),
                       Millis(side.kernel_time_ns), side.large_groups);
  }
  const size_t label_width = std::max(Label(Side::kTrace1).size(), Label(Side::kTrace2).size());
  return fmt::format("  {:<{}}  {} [{}], {} kernels, {:.3f} ms kernel time, {} groups >= {}  ({})",
                     side.label, label_width, GpuText(p), PlatformAndFormat(p),
                     Thousands(p.kernel_count), Millis(side.kernel_time_ns), side.large_groups,
                     view_.min_group_size, p.path);
}

// Both sides' counts and times per category, most kernels first.
void FusionPage::TypeTable() {
  Heading("Kernel time per category");
  const std::string& a = Label(Side::kTrace1);
  const std::string& b = Label(Side::kTrace2);
  const TypeCells headers = {a + " count", b + " count", "count ratio",
                             a + " ms",    b + " ms",    "time ratio"};
  type_width_ = 8;  // "category"
  for (const FusionTypeRow& row : view_.types) type_width_ = std::max(type_width_, row.name.size());
  for (size_t i = 0; i < kTypeColumns; ++i) widths_[i] = std::max<size_t>(headers[i].size(), 10);
  TypeTableRow("category", headers);
  if (markdown_) Line("|---|---:|---:|---:|---:|---:|---:|");
  for (const FusionTypeRow& row : view_.types) TypeTableRow(row.name, TypeRowCells(row));
}

void FusionPage::TypeTableRow(const std::string& type, const TypeCells& cells) {
  if (markdown_) {
    std::string line = "| " + type;
    for (const std::string& cell : cells) line += " | " + cell;
    Line(line + " |");
    return;
  }
  std::string line = fmt::format("  {:<{}}", type, type_width_);
  for (size_t i = 0; i < kTypeColumns; ++i) line += fmt::format("  {:>{}}", cells[i], widths_[i]);
  Line(line);
}

// The top opportunities by impact.
void FusionPage::Opportunities() {
  Heading("Fusion opportunities (by impact)");
  const std::vector<FusionOpportunity>& opportunities = *view_.opportunities;
  if (opportunities.empty()) Line("  No significant fusion differences detected.");
  for (size_t i = 0; i < opportunities.size() && i < kTopOpportunities; ++i) {
    Line(OpportunityLine(opportunities[i]));
  }
  if (opportunities.size() > kTopOpportunities) {
    Line(fmt::format("  ... and {} more", opportunities.size() - kTopOpportunities));
  }
}

std::string FusionPage::OpportunityLine(const FusionOpportunity& o) const {
  return StrCat(Bullet("  "), o.kernel_type, ": ",
                OpportunitySentence(o, {{Label(Side::kTrace1), Label(Side::kTrace2)}}));
}

// The top folded mappings of each kind.
void FusionPage::Mappings() {
  Heading("Fusion mappings");
  if (view_.mapping_blocks.empty()) Line("  None found.");
  for (const MappingBlock& block : view_.mapping_blocks) MappingBlockLines(block);
}

void FusionPage::MappingBlockLines(const MappingBlock& block) {
  const size_t n = block.mappings.size();
  const char* kind = MappingKindName(block.kind);
  Line(markdown_ ? fmt::format("\n**{} ({}):**", kind, n) : fmt::format("  {} ({}):", kind, n));
  const std::string bullet = Bullet("    ");
  for (size_t i = 0; i < n && i < kTopMappings; ++i) {
    const FoldedMapping& m = block.mappings[i];
    Line(bullet + m.evidence +
         (m.groups > 0 ? fmt::format(" [{} groups, {} calls]", m.groups, m.calls) : ""));
  }
  if (n > kTopMappings) Line(fmt::format("{}... and {} more", bullet, n - kTopMappings));
}

}  // namespace

std::string FusionText(const FusionReport& report, const CompareContext& context, bool markdown) {
  const FusionView view = MakeFusionView(report, context);
  return FusionPage(view, context, markdown).Render();
}

}  // namespace tracefuse
