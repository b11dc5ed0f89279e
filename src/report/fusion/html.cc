// `tracefuse compare --format html`: the comparison as one self-contained page
// (report/common/html.h). Sections, in order: the traces; kernel time per category as paired bars
// and a table; the fusion opportunities by impact; the folded fusion mappings by kind; for the top
// mappings, one matched group of each side aligned like a diff; the top kernels of each category,
// per side.
//
// Size: every list is capped (the constants below), so a report of a multi-GB pair with
// hundreds of thousands of mappings stays well under a few megabytes; the JSON lists them all.
// Cost: one pass over each side's kernel stream for the aligned groups; the rest comes from the
// per-name totals the reduce stage already holds.
#include "report/common/html.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
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

constexpr size_t kMaxOpportunities = 50;
constexpr size_t kMaxMappingsPerKind = 40;
constexpr size_t kAlignedExamples = 5;
constexpr size_t kMaxAlignedKernels = 1000;  // per side: a diff of longer groups costs too much
constexpr size_t kMaxAlignedColumns = 300;   // shown
constexpr size_t kTopKernels = 10;           // per category and side, in the drill-down
constexpr size_t kNameChars = 120;           // kernel names in tables and cell titles

// An example of a folded mapping: its first matched groups' kernels, to align.
struct AlignedExample {
  const FoldedMapping* folded = nullptr;
  PerSide<std::vector<GroupKernel>> groups;
};

class FusionHtmlPage {
 public:
  static constexpr size_t kTopFusionDifferences = 10;  // as the text report lists

  FusionHtmlPage(const FusionReport& report, const CompareContext& context)
      : report_(report),
        view_(MakeFusionView(report, context)),
        context_(context),
        doc_("compare", fmt::format("Fusion comparison: {} vs {}", context.labels[Side::kTrace1],
                                    context.labels[Side::kTrace2])) {
    RankCategoriesByTime();
  }

  std::string Render() && {
    const auto started = std::chrono::steady_clock::now();
    Header();
    doc_.Append("{}", GpuTimelineHtml(context_.traces, context_.labels));
    doc_.Append("{}", IdleHtml(context_.traces, context_.labels));
    Categories();
    if (context_.ops != nullptr)
      doc_.Append("{}", AchievedByTypeHtml(*context_.ops, context_.labels));
    Opportunities();
    Mappings();
    AlignedGroups();
    if (context_.ops != nullptr) {
      // The same section as ops' page: one renderer for both.
      OpsContext ops_context;
      ops_context.traces = context_.traces;
      ops_context.labels = context_.labels;
      ops_context.top = kTopFusionDifferences;
      doc_.Append(FusionDifferencesHtml(*context_.ops, ops_context));
    }
    Drilldown();
    Footer(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    return std::move(doc_).Finish();
  }

 private:
  void RankCategoriesByTime();
  void Header();
  void TraceRow(Side side);
  void Categories();
  void CategoryTable();
  void Opportunities();
  void Mappings();
  void MappingTable(const MappingBlock& block);
  void AlignedGroups();
  std::vector<AlignedExample> PickExamples() const;
  void AlignedExampleHtml(const AlignedExample& example);
  SequenceCell Cell(Side side, const GroupKernel& kernel, const FusionMapping& mapping) const;
  void Drilldown();
  void TopKernelTable(Side side, const CategoryBreakdown* category);
  void Footer(double seconds);

  const std::string& Label(Side side) const { return context_.labels[side]; }
  std::string Colour(CategoryId category) const {
    return CategoryColourClass(colour_rank_[category]);
  }

  const FusionReport& report_;
  const FusionView view_;
  const CompareContext& context_;
  HtmlDocument doc_;
  std::vector<const FusionTypeRow*> by_time_;  // the view's types, most kernel time first
  std::vector<size_t> colour_rank_;            // per category: its place in by_time_
};

void FusionHtmlPage::RankCategoriesByTime() {
  for (const FusionTypeRow& row : view_.types) by_time_.push_back(&row);
  std::stable_sort(by_time_.begin(), by_time_.end(), [](const auto* a, const auto* b) {
    return a->time_ns[Side::kTrace1] + a->time_ns[Side::kTrace2] >
           b->time_ns[Side::kTrace1] + b->time_ns[Side::kTrace2];
  });
  colour_rank_.assign(report_.categories.size(), kCategoryColours);
  for (size_t i = 0; i < by_time_.size(); ++i) colour_rank_[by_time_[i]->category] = i;
}

// The title, both traces, and how the comparison was made.
void FusionHtmlPage::Header() {
  doc_.Append("<header>\n<h1>Fusion comparison: {} vs {}</h1>\n", HtmlEscaped(Label(Side::kTrace1)),
              HtmlEscaped(Label(Side::kTrace2)));
  doc_.Append(
      "<table class=\"traces\">\n<tr><th></th><th>label</th><th>platform</th><th>why</th>"
      "<th>GPU</th><th class=\"n\">kernels</th><th class=\"n\">kernel time</th>"
      "<th class=\"n\">groups &ge; {}</th><th>file</th></tr>\n",
      view_.min_group_size);
  for (Side s : kSides) TraceRow(s);
  doc_.Append("</table>\n");
  for (Side s : kSides) {
    const TraceProfile& p = *view_.sides[s].profile;
    if (p.truncated) {
      doc_.Append("<p class=\"note\">{} truncated: {}</p>\n", HtmlEscaped(Label(s)),
                  HtmlEscaped(TruncationText(p)));
    }
  }
  const double elapsed = context_.read_seconds + context_.analyze_seconds;
  doc_.Append(
      "<p class=\"note\">Rule set <b>{}</b> &middot; {} matched correlation groups &middot; "
      "tracefuse <span class=\"version\">{}</span> &middot; <span class=\"elapsed\">{:.2f} s "
      "(traces read and reduced in {:.2f} s, compared in {:.2f} s)</span></p>\n</header>\n",
      HtmlEscaped(view_.rule_set), Thousands(view_.matched_groups), TRACEFUSE_VERSION, elapsed,
      context_.read_seconds, context_.analyze_seconds);
}

void FusionHtmlPage::TraceRow(Side s) {
  const FusionSide& side = view_.sides[s];
  const TraceProfile& p = *side.profile;
  doc_.Append(
      "<tr data-side=\"{}\"><td><span class=\"key {}\"></span></td><td class=\"label\">{}</td>"
      "<td class=\"platform\">{}</td><td class=\"platform-evidence muted\">{}</td>"
      "<td class=\"gpu\">{}</td><td class=\"kernels n\">{}</td>"
      "<td class=\"kernel-time n\">{} ms</td><td class=\"n\">{}</td>"
      "<td class=\"file\"><code>{}</code></td></tr>\n",
      s == Side::kTrace1 ? 1 : 2, SideColourClass(s), HtmlEscaped(side.label),
      PlatformName(p.platform), HtmlEscaped(p.platform_evidence), HtmlEscaped(GpuText(p)),
      Thousands(p.kernel_count), MillisText(side.kernel_time_ns), Thousands(side.large_groups),
      HtmlEscaped(p.path));
}

// Both sides' kernel time per category on one scale, and the numbers in a table beside.
void FusionHtmlPage::Categories() {
  doc_.Append("<section id=\"categories\">\n<h2>Kernel time per category</h2>\n<p>{} {}</p>\n",
              ColourKey("s1", Label(Side::kTrace1)), ColourKey("s2", Label(Side::kTrace2)));
  std::vector<BarRow> rows;
  for (const FusionTypeRow* row : by_time_) {
    BarRow bars;
    bars.label = row->name;
    std::string tooltip = row->name;
    for (Side s : kSides) {
      bars.bars.push_back({Millis(row->time_ns[s]), SideColourClass(s)});
      tooltip += fmt::format("\n{}: {} kernels, {} ms", Label(s), Thousands(row->kernels[s]),
                             MillisText(row->time_ns[s]));
    }
    bars.value_text = fmt::format("{} / {} ms", MillisText(row->time_ns[Side::kTrace1]),
                                  MillisText(row->time_ns[Side::kTrace2]));
    bars.tooltip = fmt::format("{}\ncount ratio {}, time ratio {}", tooltip,
                               RatioText(row->count_ratio), RatioText(row->time_ratio));
    rows.push_back(std::move(bars));
  }
  doc_.Append("{}", BarChartSvg(rows, "Kernel time per category"));
  CategoryTable();
  doc_.Append("</section>\n");
}

void FusionHtmlPage::CategoryTable() {
  const std::string a = HtmlEscaped(Label(Side::kTrace1));
  const std::string b = HtmlEscaped(Label(Side::kTrace2));
  doc_.Append(
      "<table class=\"categories\">\n<tr><th>category</th><th class=\"n\">{0} kernels</th>"
      "<th class=\"n\">{1} kernels</th><th class=\"n\">count ratio</th><th class=\"n\">{0} ms</th>"
      "<th class=\"n\">{1} ms</th><th class=\"n\">time ratio</th></tr>\n",
      a, b);
  for (const FusionTypeRow* row : by_time_) {
    doc_.Append(
        "<tr data-category=\"{0}\"><th><span class=\"key {1}\"></span>{0}{2}</th>"
        "<td class=\"count1 n\">{3}</td><td class=\"count2 n\">{4}</td>"
        "<td class=\"count-ratio n\">{5}</td><td class=\"time1 n\">{6}</td>"
        "<td class=\"time2 n\">{7}</td><td class=\"time-ratio n\">{8}</td></tr>\n",
        HtmlEscaped(row->name), Colour(row->category),
        row->opportunity ? " <span class=\"muted\" title=\"a fusion opportunity\">*</span>" : "",
        Thousands(row->kernels[Side::kTrace1]), Thousands(row->kernels[Side::kTrace2]),
        RatioText(row->count_ratio), MillisText(row->time_ns[Side::kTrace1]),
        MillisText(row->time_ns[Side::kTrace2]), RatioText(row->time_ratio));
  }
  doc_.Append("</table>\n<p class=\"note\">* a fusion opportunity (below)</p>\n");
}

// The opportunities by impact (ratio times kernels on both sides), as bars coloured by the side
// that fuses, then each with its evidence.
void FusionHtmlPage::Opportunities() {
  const std::vector<FusionOpportunity>& all = *view_.opportunities;
  doc_.Append(
      "<section id=\"opportunities\">\n<h2>Fusion opportunities <span class=\"muted\">(by "
      "impact)</span></h2>\n");
  if (all.empty()) {
    doc_.Append("<p>No significant fusion differences detected.</p>\n</section>\n");
    return;
  }
  const size_t shown = std::min(all.size(), kMaxOpportunities);
  std::vector<BarRow> rows;
  std::string items;
  for (size_t i = 0; i < shown; ++i) {
    const FusionOpportunity& o = all[i];
    const std::string sentence = OpportunitySentence(o, context_.labels);
    rows.push_back({o.kernel_type,
                    {{o.impact(), SideColourClass(o.fused_by)}},
                    std::isinf(o.ratio)
                        ? StrCat("none left on ", Label(o.fused_by))
                        : StrCat(RatioText(o.ratio), " fewer calls on ", Label(o.fused_by)),
                    StrCat(o.kernel_type, ": ", sentence)});
    fmt::format_to(std::back_inserter(items), "<li data-kernel-type=\"{0}\"><b>{0}</b>: {1}</li>\n",
                   HtmlEscaped(o.kernel_type), HtmlEscaped(sentence));
  }
  doc_.Append("<p>Fused by {} {}</p>\n{}<ol class=\"evidence\">\n{}</ol>\n",
              ColourKey("s1", Label(Side::kTrace1)), ColourKey("s2", Label(Side::kTrace2)),
              BarChartSvg(rows, "Fusion opportunities by impact"), items);
  if (all.size() > shown) {
    doc_.Append("<p class=\"note\">... and {} more (--format json lists them all)</p>\n",
                all.size() - shown);
  }
  doc_.Append("</section>\n");
}

void FusionHtmlPage::Mappings() {
  doc_.Append("<section id=\"mappings\">\n<h2>Fusion mappings</h2>\n");
  if (view_.mapping_blocks.empty()) doc_.Append("<p>None found.</p>\n");
  for (const MappingBlock& block : view_.mapping_blocks) MappingTable(block);
  doc_.Append("</section>\n");
}

// One kind's folded mappings, most calls first: a mapping found in several matched groups is one
// row with its groups and calls summed.
void FusionHtmlPage::MappingTable(const MappingBlock& block) {
  const size_t n = block.mappings.size();
  doc_.Append(
      "<h3>{} <span class=\"muted\">({})</span></h3>\n<table class=\"mappings\">\n"
      "<tr><th>evidence</th><th class=\"n\">groups</th><th class=\"n\">calls</th></tr>\n",
      MappingKindName(block.kind), Thousands(n));
  for (size_t i = 0; i < n && i < kMaxMappingsPerKind; ++i) {
    const FoldedMapping& m = block.mappings[i];
    doc_.Append("<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
                HtmlEscaped(m.evidence), m.groups > 0 ? Thousands(m.groups) : "whole traces",
                Thousands(m.calls));
  }
  doc_.Append("</table>\n");
  if (n > kMaxMappingsPerKind) {
    doc_.Append("<p class=\"note\">... and {} more (--format json lists every mapping)</p>\n",
                Thousands(n - kMaxMappingsPerKind));
  }
}

// For the top mappings found in matched groups, the first such pair of groups, aligned.
void FusionHtmlPage::AlignedGroups() {
  doc_.Append(
      "<section id=\"sequences\">\n<h2>Matched groups, aligned</h2>\n<p class=\"note\">One "
      "matched correlation group of each side, for the mappings with the most calls: the top row "
      "is {}, the bottom row {}; each cell is a kernel (its name on hover), coloured by category; "
      "the mapping's own types are in full colour; columns whose types differ are underlined, "
      "dashed cells are gaps.</p>\n",
      HtmlEscaped(Label(Side::kTrace1)), HtmlEscaped(Label(Side::kTrace2)));
  const std::vector<AlignedExample> examples = PickExamples();
  if (examples.empty()) doc_.Append("<p>No mapping was found in matched groups.</p>\n");
  for (const AlignedExample& example : examples) AlignedExampleHtml(example);
  doc_.Append("</section>\n");
}

std::vector<AlignedExample> FusionHtmlPage::PickExamples() const {
  std::vector<AlignedExample> examples;
  for (const MappingBlock& block : view_.mapping_blocks)
    for (const FoldedMapping& m : block.mappings)
      if (m.example != nullptr) examples.push_back({&m, {}});
  std::stable_sort(examples.begin(), examples.end(),
                   [](const auto& a, const auto& b) { return a.folded->calls > b.folded->calls; });
  if (examples.size() > kAlignedExamples) examples.resize(kAlignedExamples);
  PerSide<std::vector<int64_t>> correlations;
  for (const AlignedExample& e : examples) {
    correlations[Side::kTrace1].push_back(e.folded->example->correlation_groups->first);
    correlations[Side::kTrace2].push_back(e.folded->example->correlation_groups->second);
  }
  for (Side s : kSides) {
    std::vector<std::vector<GroupKernel>> groups =
        GroupKernels(*context_.traces[s], correlations[s]);
    for (size_t i = 0; i < examples.size(); ++i) examples[i].groups[s] = std::move(groups[i]);
  }
  return examples;
}

void FusionHtmlPage::AlignedExampleHtml(const AlignedExample& example) {
  const FusionMapping& mapping = *example.folded->example;
  PerSide<std::vector<GroupKernel>> aligned = example.groups;
  for (Side s : kSides)
    if (aligned[s].size() > kMaxAlignedKernels) aligned[s].resize(kMaxAlignedKernels);
  const std::vector<AlignedColumn> columns = AlignGroups(aligned);
  doc_.Append(
      "<article>\n<h3>{}</h3>\n<p class=\"note\">correlation group {} of {} ({} kernels) and {} of "
      "{} ({} kernels){}</p>\n<p>",
      HtmlEscaped(example.folded->evidence), mapping.correlation_groups->first,
      HtmlEscaped(Label(Side::kTrace1)), Thousands(example.groups[Side::kTrace1].size()),
      mapping.correlation_groups->second, HtmlEscaped(Label(Side::kTrace2)),
      Thousands(example.groups[Side::kTrace2].size()),
      columns.size() > kMaxAlignedColumns
          ? fmt::format("; the first {} of {} columns", kMaxAlignedColumns, columns.size())
          : "");
  std::vector<uint8_t> shown_category(report_.categories.size(), 0);
  const std::string cells = AlignedStripCells(
      columns, kMaxAlignedColumns,
      [&](Side s, uint32_t k, bool) { return Cell(s, aligned[s][k], mapping); },
      [&](Side s, uint32_t k) { return aligned[s][k].category; }, &shown_category);
  for (const FusionTypeRow* row : by_time_)
    if (shown_category[row->category]) doc_.Append(ColourKey(Colour(row->category), row->name));
  doc_.Append("</p>\n<div class=\"seq\">{}</div>\n</article>\n", cells);
}

// One kernel's cell: its category's colour, faded unless the mapping is about that category.
SequenceCell FusionHtmlPage::Cell(Side side, const GroupKernel& kernel,
                                  const FusionMapping& mapping) const {
  const bool involved = kernel.category == mapping.type || kernel.category == mapping.fused_type;
  const TraceProfile& p = *context_.traces[side];
  return {Colour(kernel.category), !involved,
          fmt::format("{} ({}, {:.1f} us)", Shorten(p.names[kernel.name], kNameChars),
                      report_.categories[kernel.category], Micros(kernel.dur_ns))};
}

// Per category, most time first, each side's top kernels by time, folded away but the first.
void FusionHtmlPage::Drilldown() {
  doc_.Append("<section id=\"drilldown\">\n<h2>Top kernels per category</h2>\n");
  PerSide<absl::flat_hash_map<CategoryId, CategoryBreakdown>> breakdowns;
  for (Side s : kSides)
    for (CategoryBreakdown& c : Breakdown(*context_.traces[s], kTopKernels))
      breakdowns[s].emplace(c.category, std::move(c));
  for (size_t i = 0; i < by_time_.size(); ++i) {
    const FusionTypeRow& row = *by_time_[i];
    doc_.Append("<details data-category=\"{}\"{}><summary><span class=\"key {}\"></span><b>{}</b>",
                HtmlEscaped(row.name), i == 0 ? " open" : "", Colour(row.category),
                HtmlEscaped(row.name));
    for (Side s : kSides) {
      doc_.Append(" &middot; {}: {} ms in {} kernels", HtmlEscaped(Label(s)),
                  MillisText(row.time_ns[s]), Thousands(row.kernels[s]));
    }
    doc_.Append("</summary>\n<div class=\"split\">\n");
    for (Side s : kSides) {
      auto it = breakdowns[s].find(row.category);
      TopKernelTable(s, it == breakdowns[s].end() ? nullptr : &it->second);
    }
    doc_.Append("</div>\n</details>\n");
  }
  doc_.Append("</section>\n");
}

void FusionHtmlPage::TopKernelTable(Side s, const CategoryBreakdown* category) {
  if (category == nullptr) {
    doc_.Append("<p class=\"note\">{}: no kernels</p>\n", HtmlEscaped(Label(s)));
    return;
  }
  const TraceProfile& p = *context_.traces[s];
  doc_.Append(
      "<table>\n<tr><th><span class=\"key {}\"></span>{} kernel</th><th class=\"n\">count</th>"
      "<th class=\"n\">ms</th><th class=\"n\">avg us</th></tr>\n",
      SideColourClass(s), HtmlEscaped(Label(s)));
  for (const KernelShare& k : category->top) {
    doc_.Append(
        "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{:.2f}</td></tr>\n",
        KernelNameCode(p.names[k.name], kNameChars), Thousands(k.count), MillisText(k.time_ns),
        k.count > 0 ? Micros(k.time_ns) / static_cast<double>(k.count) : 0.0);
  }
  doc_.Append("</table>\n");
}

// What this page cost to lay out, against the comparison's own time: the page must stay a small
// share of it (`scripts/bench` reports both for the large pairs).
void FusionHtmlPage::Footer(double seconds) {
  doc_.Append(
      "<footer><p class=\"note\">This page was laid out in <span class=\"elapsed\">{:.3f} s, "
      "{:.1f}% of the comparison's {:.2f} s</span>.</p></footer>\n",
      seconds, 100 * seconds / std::max(1e-9, context_.read_seconds + context_.analyze_seconds),
      context_.read_seconds + context_.analyze_seconds);
}

}  // namespace

std::string FusionHtml(const FusionReport& report, const CompareContext& context) {
  return FusionHtmlPage(report, context).Render();
}

}  // namespace tracefuse
