// `tracefuse ops --format html`: the op-level comparison as one self-contained page
// (report/common/html.h). Sections, in order: the traces and how much of their kernel time is
// linked to an op; the matched ops that differ most, as paired bars on one scale and a table; the
// fusion differences by operator, each with its example instance's kernels aligned like compare's
// matched groups; the instances that differ most; the ops found on one side only; the largest
// unmatched stretches.
//
// Size: each list shows the context's `top` entries and each aligned strip at most
// kMaxAlignedColumns columns, so that the page of a comparison with tens of thousands of rows
// stays small; the JSON lists them all. Everything comes from the comparison: no trace is read.
#include "report/common/html.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "report/common/formatting.h"
#include "report/fusion/view.h"
#include "report/ops/fusion_differences.h"
#include "tracefuse/analyze/op_compare.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/parse/platform.h"
#include "tracefuse/report/gpu_timeline.h"
#include "tracefuse/report/ops.h"

namespace tracefuse {
namespace {

constexpr size_t kMaxAlignedColumns = 300;  // per strip: a longer one would not be read
constexpr size_t kMaxExampleRows = 60;      // per example's table of kernels
constexpr size_t kFamiliesShown = 3;        // kernel families per table cell
constexpr size_t kOpNamesShown = 4;         // op names per unmatched stretch side
constexpr size_t kNameChars = 80;           // kernel names in tables
constexpr size_t kTitleNameChars = 160;     // full kernel names in strip cells' titles

// The page's own layout: steps kept on one line, op names and scopes broken between words, kernel
// cells with room for a name's words; numeric headers wrap (the labels make them long).
constexpr std::string_view kOpsStyle = R"(td.step{white-space:nowrap}th.n{white-space:normal}
td.scope code{word-break:normal;overflow-wrap:break-word}
td.kernels{min-width:22ch}td.extra,td.fused-kernel{min-width:16ch}.counted{white-space:nowrap;color:var(--muted)}
)";

std::string StepText(int32_t step) {
  return step == kNoStep ? "outside steps" : fmt::format("step {}", step);
}

// ScopeHtml() is a module path as the text report shortens it, its last two modules after "…/"
// (or `shown`, where a table needs more to tell two paths apart), with the whole path on hover:
// paths of nested models run to a hundred characters and more. A line may break after each '/'.
std::string ScopeHtml(const std::string& scope, const std::string* shown_as = nullptr) {
  if (scope.empty()) return "<span class=\"muted\">(no module)</span>";
  const std::string shown = shown_as != nullptr ? *shown_as : ShortScope(scope);
  std::string out = shown == scope ? "<code>" : StrCat("<code title=\"", HtmlEscaped(scope), "\">");
  size_t begin = 0;
  for (size_t slash; (slash = shown.find('/', begin)) != std::string::npos; begin = slash + 1)
    out += StrCat(HtmlEscaped(shown.substr(begin, slash + 1 - begin)), "<wbr>");
  return StrCat(out, HtmlEscaped(shown.substr(begin)), "</code>");
}

// FamiliesHtml() lists a side's first kernel families by time, each with its count and time.
std::string FamiliesHtml(const std::vector<OpKernels>& kernels) {
  if (kernels.empty()) return "<span class=\"muted\">(no kernels)</span>";
  std::string out;
  for (size_t i = 0; i < kernels.size() && i < kFamiliesShown; ++i) {
    out += fmt::format("{}{} <span class=\"counted\">&times;{} {} us</span>", i ? "<br>" : "",
                       KernelNameCode(kernels[i].family, kNameChars, kernels[i].example),
                       Thousands(kernels[i].count), MicrosText(kernels[i].time_ns));
  }
  if (kernels.size() > kFamiliesShown) {
    out += fmt::format("<br><span class=\"muted\">{} more</span>", kernels.size() - kFamiliesShown);
  }
  return out;
}

template <typename Name>  // std::string or std::string_view
std::string NameList(const std::vector<Name>& names, uint64_t count, size_t shown) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) {
    out += StrCat(i ? ", " : "", "<code>", HtmlEscaped(names[i]), "</code>");
  }
  if (count > shown) out += fmt::format(", <span class=\"muted\">{} more</span>", count - shown);
  return out.empty() ? "<span class=\"muted\">(none)</span>" : out;
}

// OpsHtmlPage lays an OpComparison out as one page, section by section.
class OpsHtmlPage {
 public:
  OpsHtmlPage(const OpComparison& ops, const OpsContext& context)
      : ops_(ops),
        context_(context),
        doc_("ops",
             fmt::format("Op-level comparison: {} vs {}", context.labels[Side::kTrace1],
                         context.labels[Side::kTrace2]),
             kOpsStyle) {
    RankCategoriesByTime();
  }

  // FusionDifferencesOnly() is the fusion differences' section alone.
  std::string FusionDifferencesOnly() && { return FusionDifferences(); }

  std::string Render() && {
    Header();
    doc_.Append("{}", GpuTimelineHtml(context_.traces, context_.labels));
    doc_.Append("{}", IdleHtml(context_.traces, context_.labels));
    OpRows("ops", "Ops that differ most", [](const OpRow& r) { return r.matched; });
    doc_.Append(FusionDifferences());
    FurthestFromPeak();
    doc_.Append("{}", AchievedByTypeHtml(ops_, context_.labels));
    Instances();
    OpRows("one-side", "Ops on one side only", [](const OpRow& r) {
      return !r.matched &&
             (r.sides[Side::kTrace1].instances == 0 || r.sides[Side::kTrace2].instances == 0);
    });
    Groups();
    return std::move(doc_).Finish();
  }

 private:
  void RankCategoriesByTime();
  void Header();
  void TraceRow(Side side);
  template <typename Keep>
  void OpRows(const char* id, const char* title, Keep keep);
  void OpTable(const std::vector<const OpRow*>& rows);
  // FusionDifferences() is the section of that name (also compare --by-op's): its markup.
  std::string FusionDifferences();
  void DifferenceChart(size_t shown);
  void DifferenceTable(size_t shown);
  void DifferenceExample(size_t i, const FusionDifference& d);
  void ExampleTable(const FusionDifference& d, const std::vector<AlignedColumn>& columns);
  void FurthestFromPeak();
  void Instances();
  void InstanceRow(const MatchedInstance& m);
  void Groups();

  // Interned() gives `categories` ids for AlignGroups(); a kernel's name is its position.
  std::vector<GroupKernel> Interned(const std::vector<std::string>& categories,
                                    const std::vector<int64_t>& times);
  // AlignedStrip() is the legend of the categories a strip shows, then the strip: its first
  // kMaxAlignedColumns columns, each kernel's cell from cell(side, index, same_type), where
  // same_type says whether its column lines up one category on both sides.
  template <typename CellOf>
  std::string AlignedStrip(const std::vector<AlignedColumn>& columns,
                           const PerSide<std::vector<GroupKernel>>& kernels, CellOf cell) const;

  template <typename... Args>
  void Add(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(section_), format, std::forward<Args>(args)...);
  }

  const std::string& Label(Side side) const { return context_.labels[side]; }
  std::string SideKey(Side side) const { return ColourKey(SideColourClass(side), Label(side)); }
  std::string Colour(CategoryId id) const {
    return CategoryColourClass(id < colour_rank_.size() ? colour_rank_[id] : kCategoryColours);
  }

  const OpComparison& ops_;
  const OpsContext& context_;
  HtmlDocument doc_;
  // Category names by id: the rule set's categories in its order, then the names only the
  // comparison holds (it may come from another rule set than the profiles').
  std::vector<std::string> category_names_;
  std::vector<size_t> colour_rank_;  // per id: its place by time, as compare's page colours it
  StringMap<CategoryId> category_ids_;
  std::string section_;  // the section being written apart from the page
};

// The colours follow compare's page: the category with the most kernel time on both sides
// first, ties to the one with more kernels, then to rule order.
void OpsHtmlPage::RankCategoriesByTime() {
  const TraceProfile* p = context_.traces[Side::kTrace1];
  PerSide<std::vector<CategoryTotals>> totals;
  for (Side s : kSides) totals[s] = context_.traces[s]->PerCategory();
  std::vector<CategoryId> order;
  for (CategoryId c : CategoryIds(p->category_count())) order.push_back(c);
  auto sum = [&](CategoryId c, auto field) {
    auto at = [&](Side s) { return c < totals[s].size() ? totals[s][c].*field : 0; };
    return at(Side::kTrace1) + at(Side::kTrace2);
  };
  std::stable_sort(order.begin(), order.end(), [&](CategoryId a, CategoryId b) {
    const int64_t ta = sum(a, &CategoryTotals::time_ns), tb = sum(b, &CategoryTotals::time_ns);
    if (ta != tb) return ta > tb;
    return sum(a, &CategoryTotals::kernels) > sum(b, &CategoryTotals::kernels);
  });
  colour_rank_.assign(p->category_count(), kCategoryColours);
  for (size_t rank = 0; rank < order.size(); ++rank) {
    colour_rank_[order[rank]] = rank;
    category_ids_.try_emplace(p->category_name(order[rank]), order[rank]);
  }
  category_names_.resize(p->category_count());
  for (CategoryId c : CategoryIds(p->category_count())) category_names_[c] = p->category_name(c);
}

void OpsHtmlPage::Header() {
  doc_.Append("<header>\n<h1>Op-level comparison: {} vs {}</h1>\n",
              HtmlEscaped(Label(Side::kTrace1)), HtmlEscaped(Label(Side::kTrace2)));
  doc_.Append(
      "<table class=\"traces\">\n<tr><th></th><th>label</th><th>GPU</th><th>platform</th>"
      "<th class=\"n\">kernels</th><th class=\"n\">kernel time</th>"
      "<th class=\"n\" title=\"kernel time linked to an op\">linked</th>"
      "<th class=\"n\" title=\"kernel time of launches without an op\">launch only</th>"
      "<th class=\"n\" title=\"kernel time of kernels no runtime call launched\">no launch</th>"
      "<th>file</th></tr>\n");
  for (Side s : kSides) TraceRow(s);
  doc_.Append("</table>\n");
  for (Side s : kSides) {
    const std::string peaks = PeakSentence(ops_.traces[s]);
    if (!peaks.empty()) {
      doc_.Append("<p class=\"note peaks\">{}: {}</p>\n", HtmlEscaped(Label(s)),
                  HtmlEscaped(peaks));
    }
  }
  const OpTraceSummary& t1 = ops_.traces[Side::kTrace1];
  const OpTraceSummary& t2 = ops_.traces[Side::kTrace2];
  const auto matched = static_cast<int64_t>(ops_.matched_ops);
  doc_.Append(
      "<p class=\"note\">Top-level ops: {} / {}, <span class=\"matched\">{}</span> matched "
      "({:.1f}% / {:.1f}%); steps {} / {}</p>\n",
      Thousands(t1.top_level_ops), Thousands(t2.top_level_ops), Thousands(ops_.matched_ops),
      Percent(matched, static_cast<int64_t>(t1.top_level_ops)),
      Percent(matched, static_cast<int64_t>(t2.top_level_ops)), t1.steps, t2.steps);
  if (ops_.capped_steps > 0) {
    doc_.Append(
        "<p class=\"note\">{} step(s) differ too much to align in order: matched op by op</p>\n",
        ops_.capped_steps);
  }
  const TraceProfile& p = *context_.traces[Side::kTrace1];
  doc_.Append(
      "<p class=\"note\">Rule set <b>{}</b> &middot; tracefuse <span class=\"version\">{}</span> "
      "&middot; <span class=\"elapsed\">{:.2f} s (traces read and linked in {:.2f} s, compared "
      "in {:.2f} s)</span></p>\n</header>\n",
      HtmlEscaped(p.classifier->rule_set().name()), TRACEFUSE_VERSION,
      context_.read_seconds + context_.analyze_seconds, context_.read_seconds,
      context_.analyze_seconds);
}

void OpsHtmlPage::TraceRow(Side s) {
  const TraceProfile& p = *context_.traces[s];
  const OpTraceSummary& t = ops_.traces[s];
  doc_.Append(
      "<tr data-side=\"{}\"><td><span class=\"key {}\"></span></td><td class=\"label\">{}</td>"
      "<td class=\"gpu\">{}</td><td class=\"platform\">{}</td><td class=\"kernels n\">{}</td>"
      "<td class=\"kernel-time n\">{} ms</td><td class=\"linked n\">{:.1f}%</td>"
      "<td class=\"launch-only n\">{:.1f}%</td><td class=\"no-launch n\">{:.1f}%</td>"
      "<td class=\"file\"><code>{}</code></td></tr>\n",
      s == Side::kTrace1 ? 1 : 2, SideColourClass(s), HtmlEscaped(Label(s)),
      HtmlEscaped(GpuText(p)), PlatformName(p.platform), Thousands(t.kernels),
      MillisText(t.kernel_time_ns), Percent(t.linked_ns, t.kernel_time_ns),
      Percent(t.launch_only_ns, t.kernel_time_ns), Percent(t.no_launch_ns, t.kernel_time_ns),
      HtmlEscaped(p.path));
  if (t.cpu_events_without_times > 0) {
    doc_.Append(
        "<tr><td></td><td colspan=\"9\" class=\"note\">{} CPU events skipped (ts or dur "
        "not a number)</td></tr>\n",
        Thousands(t.cpu_events_without_times));
  }
}

// The first `top` rows `keep` holds, as the text report picks them: ops that launched nothing
// on either side (aten::empty, views) have nothing to compare.
template <typename Keep>
void OpsHtmlPage::OpRows(const char* id, const char* title, Keep keep) {
  std::vector<const OpRow*> rows;
  for (const OpRow& row : ops_.ops) {
    if (rows.size() == context_.top) break;
    if (!keep(row) ||
        (row.sides[Side::kTrace1].time_ns == 0 && row.sides[Side::kTrace2].time_ns == 0)) {
      continue;
    }
    rows.push_back(&row);
  }
  doc_.Append(
      "<section id=\"{}\">\n<h2>{} <span class=\"muted\">({} &minus; {}, kernel "
      "time)</span></h2>\n",
      id, title, HtmlEscaped(Label(Side::kTrace1)), HtmlEscaped(Label(Side::kTrace2)));
  if (rows.empty()) {
    doc_.Append("<p>None.</p>\n</section>\n");
    return;
  }
  std::vector<std::pair<std::string, std::string>> op_scopes;
  for (const OpRow* row : rows) op_scopes.emplace_back(row->op, row->scope);
  const std::vector<std::string> labels = DistinctOpLabels(op_scopes);
  std::vector<BarRow> bars;
  for (size_t i = 0; i < rows.size(); ++i) {
    const OpRow* row = rows[i];
    const std::optional<double> ratio = TimeRatio(row->sides);
    bars.push_back(
        {labels[i],
         {{Micros(row->sides[Side::kTrace1].time_ns), "s1"},
          {Micros(row->sides[Side::kTrace2].time_ns), "s2"}},
         fmt::format("{} / {} us", MicrosText(row->sides[Side::kTrace1].time_ns),
                     MicrosText(row->sides[Side::kTrace2].time_ns)),
         fmt::format("{}{}\n{}: {} us, {}: {} us ({} us, {})", row->op,
                     row->scope.empty() ? "" : " under " + row->scope, Label(Side::kTrace1),
                     MicrosText(row->sides[Side::kTrace1].time_ns), Label(Side::kTrace2),
                     MicrosText(row->sides[Side::kTrace2].time_ns),
                     SignedMicrosText(row->delta_ns()), ratio ? RatioText(*ratio) : "-")});
  }
  doc_.Append("<p>{} {}</p>\n{}", SideKey(Side::kTrace1), SideKey(Side::kTrace2),
              BarChartSvg(bars, title));
  OpTable(rows);
  doc_.Append("</section>\n");
}

// The achieved columns are left out where no row has a rate: most graph-replay traces record no
// shapes, and two empty columns would squeeze the kernel names.
void OpsHtmlPage::OpTable(const std::vector<const OpRow*>& rows) {
  const std::string a = HtmlEscaped(Label(Side::kTrace1));
  const std::string b = HtmlEscaped(Label(Side::kTrace2));
  std::vector<PerSide<std::string>> achieved;
  bool any_achieved = false;
  for (const OpRow* row : rows) {
    achieved.push_back({AchievedText(*row, Side::kTrace1, ops_.traces[Side::kTrace1].peak),
                        AchievedText(*row, Side::kTrace2, ops_.traces[Side::kTrace2].peak)});
    any_achieved = any_achieved || !achieved.back()[Side::kTrace1].empty() ||
                   !achieved.back()[Side::kTrace2].empty();
  }
  doc_.Append(
      "<table class=\"ops\">\n<tr><th>op</th><th>scope</th><th class=\"n\">instances</th>"
      "<th class=\"n\">{0} us</th><th class=\"n\">{1} us</th><th class=\"n\">delta us</th>"
      "<th class=\"n\">ratio</th><th>{0} kernels</th><th>{1} kernels</th>{2}</tr>\n",
      a, b, any_achieved ? fmt::format("<th>{} achieved</th><th>{} achieved</th>", a, b) : "");
  std::vector<std::string> scopes;
  for (const OpRow* row : rows) scopes.push_back(row->scope);
  const std::map<std::string, std::string> scope_text = DistinctShortScopes(scopes);
  for (size_t i = 0; i < rows.size(); ++i) {
    const OpRow* row = rows[i];
    const std::optional<double> ratio = TimeRatio(row->sides);
    doc_.Append(
        "<tr data-op=\"{0}\" data-scope=\"{1}\"><td class=\"op\"><code>{11}</code></td>"
        "<td class=\"scope\">{2}</td>"
        "<td class=\"instances n\">{3}</td><td class=\"time1 n\">{4}</td>"
        "<td class=\"time2 n\">{5}</td><td class=\"delta n\">{6}</td>"
        "<td class=\"ratio n\">{7}</td><td class=\"kernels\">{8}</td>"
        "<td class=\"kernels\">{9}</td>{10}</tr>\n",
        HtmlEscaped(row->op), HtmlEscaped(row->scope),
        ScopeHtml(row->scope, &scope_text.at(row->scope)), Thousands(row->instances),
        MicrosText(row->sides[Side::kTrace1].time_ns),
        MicrosText(row->sides[Side::kTrace2].time_ns), SignedMicrosText(row->delta_ns()),
        ratio ? RatioText(*ratio) : "-", FamiliesHtml(row->sides[Side::kTrace1].kernels),
        FamiliesHtml(row->sides[Side::kTrace2].kernels),
        any_achieved ? fmt::format("<td class=\"achieved1\">{}</td><td class=\"achieved2\">{}</td>",
                                   HtmlEscaped(achieved[i][Side::kTrace1]),
                                   HtmlEscaped(achieved[i][Side::kTrace2]))
                     : "",
        NameWithBreaks(row->op));
  }
  doc_.Append("</table>\n");
}

std::string OpsHtmlPage::FusionDifferences() {
  const std::vector<FusionDifference>& all = ops_.fusion_differences;
  Add("<section id=\"fusion-differences\" data-count=\"{}\">\n<h2>Fusion differences by "
      "operator <span class=\"muted\">({} in all: who runs the same work in fewer "
      "kernels)</span></h2>\n",
      all.size(), Thousands(all.size()));
  if (all.empty()) {
    Add("<p class=\"none\">None: where ops or modules match, both sides run as many "
        "kernels.</p>\n</section>\n");
    return std::move(section_);
  }
  const size_t shown = std::min(all.size(), context_.top);
  DifferenceChart(shown);
  DifferenceTable(shown);
  if (all.size() > shown) {
    Add("<p class=\"note\">... and {} more (--format json lists every one)</p>\n",
        Thousands(all.size() - shown));
  }
  Add("<h3>Example instances, aligned</h3>\n<p class=\"note\">For each difference, the instance "
      "that differs most in time: the top row is {}, the bottom row {}; each cell is a kernel "
      "(its name on hover), coloured by category; the kernels that differ and the fused kernel "
      "are in full colour; columns whose categories differ are underlined, dashed cells are "
      "gaps.</p>\n",
      HtmlEscaped(Label(Side::kTrace1)), HtmlEscaped(Label(Side::kTrace2)));
  for (size_t i = 0; i < shown; ++i) DifferenceExample(i, all[i]);
  Add("</section>\n");
  return std::move(section_);
}

// Both sides' time per difference on one scale: the gap between the bars is the saving.
void OpsHtmlPage::DifferenceChart(size_t shown) {
  std::vector<BarRow> rows;
  for (size_t i = 0; i < shown; ++i) {
    const FusionDifference& d = ops_.fusion_differences[i];
    const std::string what = d.kind == FusionDifferenceKind::kModule ? d.scope : d.op;
    rows.push_back({fmt::format("{}. {}", i + 1, what),
                    {{Micros(d.sides[Side::kTrace1].time_ns), "s1"},
                     {Micros(d.sides[Side::kTrace2].time_ns), "s2"}},
                    d.saving_ns() >= 0 ? StrCat("saves ", MicrosText(d.saving_ns()), " us")
                                       : StrCat(MicrosText(-d.saving_ns()), " us slower"),
                    fmt::format("[{}] {}: {}; {}", FusionDifferenceKindName(d.kind), what,
                                FusionVerdict(d, context_.labels), TimesText(d, context_.labels))});
  }
  Add("<p>{} {}</p>\n{}", SideKey(Side::kTrace1), SideKey(Side::kTrace2),
      BarChartSvg(rows, "Fusion differences: both sides' kernel time"));
}

namespace {

// ExtraKernelsHtml() lists the extra kernels by family (an example's full name on hover), count
// and category.
std::string ExtraKernelsHtml(const FusionDifference& d) {
  std::string out;
  for (const ExtraKernels& k : d.extra_kernels) {
    out += StrCat(out.empty() ? "" : "<br>", KernelNameCode(k.family, kNameChars, k.example), " x",
                  Thousands(k.count), " (", HtmlEscaped(k.category), ")");
  }
  return out.empty() ? "-" : out;
}

}  // namespace

void OpsHtmlPage::DifferenceTable(size_t shown) {
  const std::string a = HtmlEscaped(Label(Side::kTrace1));
  const std::string b = HtmlEscaped(Label(Side::kTrace2));
  Add("<table class=\"fusion-differences\">\n<tr><th class=\"n\">#</th><th>kind</th>"
      "<th>relation</th><th>op / scope</th><th>fused by</th><th class=\"n\">instances</th>"
      "<th class=\"n\">{0} kernels</th><th class=\"n\">{0} us</th><th class=\"n\">{1} kernels</th>"
      "<th class=\"n\">{1} us</th><th>extra kernels</th><th class=\"n\">extra us</th>"
      "<th>fused kernel</th><th>saving</th></tr>\n",
      a, b);
  for (size_t i = 0; i < shown; ++i) {
    const FusionDifference& d = ops_.fusion_differences[i];
    const bool algorithm = d.relation == FusionRelation::kAlgorithm;
    std::string where = d.kind == FusionDifferenceKind::kModule
                            ? ""
                            : StrCat("<code>", NameWithBreaks(d.op), "</code>");
    if (where.empty() || !d.scope.empty()) {
      where += StrCat(where.empty() ? "" : "<br>", ScopeHtml(d.scope));
    }
    // An op's instances count its matched pairs that differ so: say of how many.
    std::string instances = Thousands(d.instances);
    if (const uint64_t matched = MatchedInstances(d, &ops_); matched > 0) {
      instances += StrCat(" of ", Thousands(matched));
    }
    Add("<tr data-kind=\"{}\" data-relation=\"{}\" data-fused-by=\"{}\"><td class=\"n\">{}</td>"
        "<td class=\"kind\">{}</td><td class=\"relation\">{}</td><td class=\"scope\">{}</td>"
        "<td class=\"fused-by\">{}</td>"
        "<td class=\"instances n\">{}</td><td class=\"kernels1 n\">{}</td>"
        "<td class=\"time1 n\">{}</td><td class=\"kernels2 n\">{}</td><td class=\"time2 n\">{}</td>"
        "<td class=\"extra\">{}</td><td class=\"extra-time n\">{}</td>"
        "<td class=\"fused-kernel\">{}</td><td class=\"saving\">{}</td></tr>\n",
        FusionDifferenceKindName(d.kind), FusionRelationName(d.relation),
        algorithm ? 0 : (d.fused_by == Side::kTrace1 ? 1 : 2), i + 1,
        FusionDifferenceKindName(d.kind), FusionRelationName(d.relation), where,
        algorithm ? "-" : SideKey(d.fused_by), instances, Thousands(d.sides[Side::kTrace1].kernels),
        MicrosText(d.sides[Side::kTrace1].time_ns), Thousands(d.sides[Side::kTrace2].kernels),
        MicrosText(d.sides[Side::kTrace2].time_ns), ExtraKernelsHtml(d),
        MicrosText(d.extra_time_ns),
        d.fused_kernel.empty() ? "-"
                               : KernelNameCode(d.fused_kernel, kNameChars, d.fused_kernel_name),
        HtmlEscaped(SavingText(d)));
  }
  Add("</table>\n");
}

std::vector<GroupKernel> OpsHtmlPage::Interned(const std::vector<std::string>& categories,
                                               const std::vector<int64_t>& times) {
  std::vector<GroupKernel> kernels;
  for (size_t i = 0; i < categories.size(); ++i) {
    // Past the last id, unknown names share it: a strip then lines them up as one category.
    const size_t next = category_names_.size();
    auto [it, added] = category_ids_.try_emplace(
        categories[i], static_cast<CategoryId>(std::min<size_t>(next, UINT8_MAX)));
    if (added && next <= UINT8_MAX) category_names_.push_back(categories[i]);
    kernels.push_back({static_cast<uint32_t>(i), it->second, i < times.size() ? times[i] : 0});
  }
  return kernels;
}

template <typename CellOf>
std::string OpsHtmlPage::AlignedStrip(const std::vector<AlignedColumn>& columns,
                                      const PerSide<std::vector<GroupKernel>>& kernels,
                                      CellOf cell_of) const {
  std::vector<uint8_t> shown(category_names_.size(), 0);
  const std::string cells = AlignedStripCells(
      columns, kMaxAlignedColumns, cell_of,
      [&](Side s, uint32_t k) { return kernels[s][k].category; }, &shown);
  std::vector<size_t> legend;  // the categories shown, in colour order, names only seen last
  for (size_t c = 0; c < shown.size(); ++c)
    if (shown[c]) legend.push_back(c);
  auto rank = [&](size_t c) { return c < colour_rank_.size() ? colour_rank_[c] : SIZE_MAX; };
  std::stable_sort(legend.begin(), legend.end(),
                   [&](size_t a, size_t b) { return rank(a) < rank(b); });
  std::string out = "<p>";
  for (size_t c : legend) out += ColourKey(Colour(static_cast<CategoryId>(c)), category_names_[c]);
  return StrCat(out, "</p>\n<div class=\"seq\">", cells, "</div>\n");
}

void OpsHtmlPage::DifferenceExample(size_t i, const FusionDifference& d) {
  PerSide<std::vector<GroupKernel>> kernels;
  for (Side s : kSides) {
    std::vector<std::string> categories;
    std::vector<int64_t> times;
    for (const FusionKernel& k : d.sides[s].example) {
      categories.push_back(k.category);
      times.push_back(k.time_ns);
    }
    kernels[s] = Interned(categories, times);
  }
  const std::vector<AlignedColumn> columns = AlignGroups(kernels);
  Add("<article class=\"example\" data-kind=\"{}\">\n<h3>{}. [{}] {}{}</h3>\n<p class=\"note\">"
      "{}; example: {}, #{} ({} and {} kernels){}</p>\n",
      FusionDifferenceKindName(d.kind), i + 1, FusionDifferenceKindName(d.kind),
      d.kind == FusionDifferenceKind::kModule ? "" : StrCat("<code>", HtmlEscaped(d.op), "</code>"),
      d.scope.empty() ? "" : StrCat(" under ", ScopeHtml(d.scope)),
      HtmlEscaped(FusionVerdict(d, context_.labels)), StepText(d.example_step), d.example_index,
      d.sides[Side::kTrace1].example.size(), d.sides[Side::kTrace2].example.size(),
      columns.size() > kMaxAlignedColumns
          ? fmt::format("; the first {} of {} columns", kMaxAlignedColumns, columns.size())
          : "");
  if (d.kind == FusionDifferenceKind::kModule) {
    for (Side s : kSides) {
      const std::vector<std::string>& names = d.sides[s].ops;
      Add("<p class=\"note\">{} ops: {}</p>\n", HtmlEscaped(Label(s)),
          NameList(names, names.size(), kMaxExampleRows));
    }
  }
  Add(AlignedStrip(columns, kernels, [&](Side s, uint32_t k, bool same_type) {
    const FusionKernel& kernel = d.sides[s].example[k];
    const bool involved =
        !same_type || kernel.extra || (s == d.fused_by && kernel.family == d.fused_kernel);
    return SequenceCell{Colour(kernels[s][k].category), !involved,
                        fmt::format("{} ({}, {:.1f} us)", Shorten(kernel.name, kTitleNameChars),
                                    kernel.category, Micros(kernel.time_ns))};
  }));
  ExampleTable(d, columns);
  Add("</article>\n");
}

// The example's kernels as the strip aligns them, readable without hovering (and in print).
void OpsHtmlPage::ExampleTable(const FusionDifference& d,
                               const std::vector<AlignedColumn>& columns) {
  Add("<table class=\"example-kernels\">\n<tr><th>{0} kernel</th><th>category</th>"
      "<th class=\"n\">us</th><th>{1} kernel</th><th>category</th><th class=\"n\">us</th></tr>\n",
      HtmlEscaped(Label(Side::kTrace1)), HtmlEscaped(Label(Side::kTrace2)));
  for (size_t i = 0; i < columns.size() && i < kMaxExampleRows; ++i) {
    Add(columns[i].same_type ? "<tr>" : "<tr class=\"diff\">");
    for (Side s : kSides) {
      const uint32_t k = columns[i].kernel[s];
      if (k == kNoKernel) {
        Add("<td class=\"muted\">&mdash;</td><td></td><td></td>");
        continue;
      }
      const FusionKernel& kernel = d.sides[s].example[k];
      const bool fused = s == d.fused_by && kernel.family == d.fused_kernel;
      Add("<td>{}{}</td><td>{}</td><td class=\"n\">{}</td>",
          KernelNameCode(kernel.family, kNameChars, kernel.name),
          fused ? " <span class=\"muted\">(fused)</span>" : "", HtmlEscaped(kernel.category),
          MicrosText(kernel.time_ns));
    }
    Add("</tr>\n");
  }
  Add("</table>\n");
  if (columns.size() > kMaxExampleRows) {
    Add("<p class=\"note\">... and {} more rows</p>\n", columns.size() - kMaxExampleRows);
  }
}

// FurthestFromPeak() is shown only where both traces' ops have a percent of peak.
void OpsHtmlPage::FurthestFromPeak() {
  const std::vector<PeakGap> gaps = tracefuse::FurthestFromPeak(ops_);
  if (gaps.empty()) return;
  const std::string a = HtmlEscaped(Label(Side::kTrace1));
  const std::string b = HtmlEscaped(Label(Side::kTrace2));
  doc_.Append(
      "<section id=\"furthest-from-peak\">\n<h2>Furthest from peak <span class=\"muted\">(the "
      "time the side further from its peak would save at the other's percent of peak)</span>"
      "</h2>\n<table class=\"peak-gaps\">\n<tr><th>op</th><th>scope</th><th class=\"n\">"
      "instances</th><th class=\"n\">{0} % of peak</th><th class=\"n\">{0} us</th>"
      "<th class=\"n\">{1} % of peak</th><th class=\"n\">{1} us</th><th>behind</th>"
      "<th class=\"n\">saving us</th></tr>\n",
      a, b);
  for (size_t i = 0; i < gaps.size() && i < context_.top; ++i) {
    const PeakGap& g = gaps[i];
    const OpRow& row = *g.row;
    auto percent = [&](Side side) {  // and its roof, in the words of every format
      return HtmlEscaped(fmt::format("{:.1f}% of {}", *g.achieved[side].percent_of_peak,
                                     RoofText(*g.achieved[side].roof, row.work[side].dtype())));
    };
    doc_.Append(
        "<tr data-op=\"{0}\"><td class=\"op\"><code>{9}</code></td><td class=\"scope\">{1}</td>"
        "<td class=\"n\">{2}</td><td class=\"n\">{3}</td><td class=\"n\">{4}</td>"
        "<td class=\"n\">{5}</td><td class=\"n\">{6}</td><td>{7}</td>"
        "<td class=\"n\">{8}</td></tr>\n",
        HtmlEscaped(row.op), ScopeHtml(row.scope), Thousands(row.instances), percent(Side::kTrace1),
        MicrosText(row.sides[Side::kTrace1].time_ns), percent(Side::kTrace2),
        MicrosText(row.sides[Side::kTrace2].time_ns), HtmlEscaped(Label(g.behind)),
        MicrosText(g.saving_ns), NameWithBreaks(row.op));
  }
  doc_.Append("</table>\n</section>\n");
}

void OpsHtmlPage::Instances() {
  doc_.Append("<section id=\"instances\">\n<h2>Instances that differ most</h2>\n");
  if (ops_.top_instances.empty()) {
    doc_.Append("<p>None.</p>\n</section>\n");
    return;
  }
  const std::string a = HtmlEscaped(Label(Side::kTrace1));
  const std::string b = HtmlEscaped(Label(Side::kTrace2));
  doc_.Append(
      "<table class=\"instances\">\n<tr><th>op</th><th>step</th><th class=\"n\">#</th>"
      "<th>scope</th><th class=\"n\">{0} us</th><th class=\"n\">{1} us</th>"
      "<th class=\"n\">delta us</th><th>{0} kernels</th><th>{1} kernels</th></tr>\n",
      a, b);
  for (size_t i = 0; i < ops_.top_instances.size() && i < context_.top; ++i) {
    InstanceRow(ops_.top_instances[i]);
  }
  doc_.Append("</table>\n</section>\n");
}

// One instance; for two graph replays, their kernel categories aligned below it.
void OpsHtmlPage::InstanceRow(const MatchedInstance& m) {
  PerSide<std::string> kernels;
  for (Side s : kSides) {
    kernels[s] = StrCat(m.graph[s] ? "<span class=\"muted\">(graph replay)</span><br>" : "",
                        FamiliesHtml(m.sides[s].kernels));
  }
  doc_.Append(
      "<tr data-op=\"{}\"><td class=\"op\"><code>{}</code></td><td class=\"step\">{}</td>"
      "<td class=\"n\">{}</td><td class=\"scope\">{}</td>"
      "<td class=\"time1 n\">{}</td><td class=\"time2 n\">{}</td><td class=\"delta n\">{}</td>"
      "<td>{}</td><td>{}</td></tr>\n",
      HtmlEscaped(m.op), NameWithBreaks(m.op), StepText(m.step), m.index, ScopeHtml(m.scope),
      MicrosText(m.sides[Side::kTrace1].time_ns), MicrosText(m.sides[Side::kTrace2].time_ns),
      SignedMicrosText(m.delta_ns()), kernels[Side::kTrace1], kernels[Side::kTrace2]);
  if (m.types[Side::kTrace1].empty() || m.types[Side::kTrace2].empty()) return;
  PerSide<std::vector<GroupKernel>> types;
  for (Side s : kSides) types[s] = Interned(m.types[s], {});
  const std::vector<AlignedColumn> columns = AlignGroups(types);
  const auto differ = std::count_if(columns.begin(), columns.end(),
                                    [](const AlignedColumn& c) { return !c.same_type; });
  doc_.Append(
      "<tr class=\"types\"><td colspan=\"9\"><details><summary>kernel categories, aligned "
      "<span class=\"muted\">({} columns, {} differ)</span></summary>\n{}</details></td></tr>\n",
      columns.size(), differ, AlignedStrip(columns, types, [&](Side s, uint32_t k, bool same) {
        return SequenceCell{Colour(types[s][k].category), same, m.types[s][k]};
      }));
}

void OpsHtmlPage::Groups() {
  const std::vector<const UnmatchedGroup*> groups = LargestUnmatchedGroups(ops_, context_.top);
  doc_.Append(
      "<section id=\"unmatched\">\n<h2>Unmatched stretches <span class=\"muted\">({} in all, the "
      "largest by kernel time)</span></h2>\n",
      Thousands(ops_.unmatched_groups.size()));
  if (groups.empty()) {
    doc_.Append("<p>None.</p>\n</section>\n");
    return;
  }
  doc_.Append(
      "<table class=\"unmatched\">\n<tr><th>step</th><th>scope</th><th>{0} ops</th>"
      "<th class=\"n\">{0} us</th><th>{1} ops</th><th class=\"n\">{1} us</th></tr>\n",
      HtmlEscaped(Label(Side::kTrace1)), HtmlEscaped(Label(Side::kTrace2)));
  for (const UnmatchedGroup* g : groups) {
    doc_.Append("<tr><td class=\"step\">{}</td><td class=\"scope\">{}</td>", StepText(g->step),
                ScopeHtml(g->scope));
    for (Side s : kSides) {
      doc_.Append("<td>{}</td><td class=\"time{} n\">{}</td>",
                  NameList(g->ops[s], g->op_count[s], kOpNamesShown), s == Side::kTrace1 ? 1 : 2,
                  MicrosText(g->sides[s].time_ns));
    }
    doc_.Append("</tr>\n");
  }
  doc_.Append("</table>\n</section>\n");
}

}  // namespace

std::string OpsHtml(const OpComparison& ops, const OpsContext& context) {
  return OpsHtmlPage(ops, context).Render();
}

std::string FusionDifferencesHtml(const OpComparison& ops, const OpsContext& context) {
  return OpsHtmlPage(ops, context).FusionDifferencesOnly();
}

}  // namespace tracefuse
