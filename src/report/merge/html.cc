// `tracefuse merge --format html`: a batch's summary on one self-contained page
// (report/common/html.h): state counts, each side's stragglers and ranks, kernel time per category
// across the complete pairs as paired bars and a table, the recurring opportunities, what the
// pairs compared --by-op find by operator, the pairs whose kernel time differs most, and the
// problems. Lists are capped so that a batch of thousands
// of pairs stays a small page; CSV and JSON list every pair.
#include "report/common/html.h"

#include <algorithm>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "report/common/formatting.h"
#include "report/merge/format.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/report/merge.h"

namespace tracefuse {
namespace {

constexpr size_t kMaxPairs = 200;
constexpr size_t kMaxProblems = 200;
constexpr size_t kMaxPairLabels = 12;  // per recurring opportunity or fusion difference
constexpr size_t kMaxOpRows = 100;     // fusion differences, and ops
constexpr size_t kMaxChartRanks = 64;  // bars per side

class MergeHtmlPage {
 public:
  explicit MergeHtmlPage(const MergeSummary& summary)
      : s_(summary), doc_("merge", StrCat("Batch summary: ", summary.dir)) {}

  std::string Render() && {
    Header();
    Ranks();
    Categories();
    Recurring();
    ByOperator();
    Pairs();
    Problems();
    return std::move(doc_).Finish();
  }

 private:
  void Header();
  void Ranks();
  void RankTable(Side side);
  void Categories();
  void Recurring();
  void ByOperator();
  void FusionDifferenceRows();
  void OpRows();
  void LinkedShares();
  void Pairs();
  void PairRow(const MergedPair& p);
  void Problems();

  std::string SideKeys() const {
    return StrCat(ColourKey("s1", s_.side_names[Side::kTrace1]), " ",
                  ColourKey("s2", s_.side_names[Side::kTrace2]));
  }

  const MergeSummary& s_;
  HtmlDocument doc_;
};

void MergeHtmlPage::Header() {
  doc_.Append("<header>\n<h1>Batch summary: <code>{}</code></h1>\n<table class=\"counts\">\n<tr>",
              HtmlEscaped(s_.dir));
  for (PairState state : kPairStates) doc_.Append("<th class=\"n\">{}</th>", PairStateName(state));
  doc_.Append("<th class=\"n\">pairs</th></tr>\n<tr>");
  for (PairState state : kPairStates) {
    // Without the manifest, pairs with no status file are unknown.
    const bool unknown = state == PairState::kMissing && !s_.manifest_error.empty();
    doc_.Append("<td class=\"n {}\">{}</td>", PairStateName(state),
                unknown ? "?" : StrCat(s_.Count(state)));
  }
  doc_.Append(
      "<td class=\"n\">{}</td></tr>\n</table>\n<p class=\"note\">{} &middot; tracefuse "
      "<span class=\"version\">{}</span></p>\n</header>\n",
      s_.pairs.size(),
      HtmlEscaped(s_.manifest_error.empty() ? fmt::format("manifest {} ({} rows)", s_.manifest_path,
                                                          s_.manifest_rows.value_or(0))
                                            : StrCat("manifest: ", s_.manifest_error)),
      TRACEFUSE_VERSION);
}

void MergeHtmlPage::Ranks() {
  doc_.Append(
      "<section id=\"ranks\">\n<h2>Ranks</h2>\n<p class=\"note\">A straggler computes {} the "
      "median rank's GPU time or more, and waits least in the collectives matched across the "
      "ranks.</p>\n",
      RatioText(1 + s_.straggler_threshold));
  for (Side side : kSides) {
    const std::vector<Straggler>& stragglers = s_.ranks[side].stragglers;
    if (stragglers.empty()) doc_.Append("<p>{}</p>\n", HtmlEscaped(NoStragglerText(s_, side)));
    for (const Straggler& g : stragglers) {
      doc_.Append("<p class=\"straggler\" data-pair=\"{}\">{}</p>\n", HtmlEscaped(g.pair),
                  HtmlEscaped(StragglerText(s_, side, g, g.pair)));
    }
  }
  if (!s_.ranks[Side::kTrace1].ranks.empty() || !s_.ranks[Side::kTrace2].ranks.empty()) {
    doc_.Append("<p>{} {} {} {}</p>\n", ColourKey("k0", "computation"),
                ColourKey("k1", "exposed communication"), ColourKey("k2", "exposed memcpy"),
                ColourKey("k-rest", "idle"));
  }
  for (Side side : kSides) RankTable(side);
  doc_.Append("</section>\n");
}

// RankBars() is one side's ranks as stacked bars, as the GPU timeline of compare's page draws
// a trace: computation, exposed communication, the rest of the busy time (memcpy no kernel
// hides) and idle time add up to each rank's span.
std::string RankBars(const MergeSummary& s, Side side) {
  const RankAnalysis& a = s.ranks[side];
  std::vector<BarRow> rows;
  for (size_t i = 0; i < a.ranks.size() && i < kMaxChartRanks; ++i) {
    const RankWait& r = a.ranks[i];
    const RankFigures& f = r.figures;
    const bool straggler = std::any_of(a.stragglers.begin(), a.stragglers.end(),
                                       [&](const Straggler& g) { return g.pair == r.pair; });
    const double exposed_memcpy =
        std::max(0.0, f.busy_us - f.computation_us - f.exposed_communication_us);
    BarRow row;
    row.label = straggler ? r.pair + " (straggler)" : r.pair;
    row.stacked = true;
    row.bars = {{f.computation_us, "k0"},
                {f.exposed_communication_us, "k1"},
                {exposed_memcpy, "k2"},
                {f.idle_us, "k-rest"}};
    row.value_text =
        fmt::format("{} ms, waited {} ms", MillisOfMicros(f.span_us), MillisOfMicros(r.wait_us));
    row.tooltip = fmt::format(
        "{}: span {} ms\ncomputation: {} ms\nexposed communication: {} ms\nexposed memcpy: {} "
        "ms\nidle: {} ms\nwait in {} collectives: {} ms",
        r.pair, MillisOfMicros(f.span_us), MillisOfMicros(f.computation_us),
        MillisOfMicros(f.exposed_communication_us), MillisOfMicros(exposed_memcpy),
        MillisOfMicros(f.idle_us), r.collectives, MillisOfMicros(r.wait_us));
    rows.push_back(std::move(row));
  }
  return BarChartSvg(rows, StrCat("GPU time per rank, ", s.side_names[side]));
}

// One side's ranks: GPU time summed over each rank's devices, and its wait.
void MergeHtmlPage::RankTable(Side side) {
  const std::vector<RankWait>& ranks = s_.ranks[side].ranks;
  if (ranks.empty()) return;
  doc_.Append("<h3>{}</h3>\n{}", HtmlEscaped(s_.side_names[side]), RankBars(s_, side));
  if (ranks.size() > kMaxChartRanks) {
    doc_.Append("<p class=\"note\">The bars show the first {} ranks; the table, {} at most.</p>\n",
                kMaxChartRanks, kMaxPairs);
  }
  doc_.Append(
      "<table class=\"ranks\" data-side=\"{}\">\n<tr><th>pair</th>"
      "<th class=\"n\">computation ms</th><th class=\"n\">exposed communication ms</th>"
      "<th class=\"n\">idle ms</th><th class=\"n\">cpu wait ms</th>"
      "<th class=\"n\">launch latency ms</th><th class=\"n\">unattributed ms</th>"
      "<th class=\"n\">span ms</th><th class=\"n\">step ms</th>"
      "<th class=\"n\">wait ms</th><th class=\"n\">collectives</th></tr>\n",
      side == Side::kTrace1 ? 1 : 2);
  for (size_t i = 0; i < ranks.size() && i < kMaxPairs; ++i) {
    const RankWait& r = ranks[i];
    std::string causes;
    for (double RankIdle::*us :
         {&RankIdle::cpu_wait_us, &RankIdle::launch_latency_us, &RankIdle::unattributed_us}) {
      causes += StrCat("<td class=\"n\">",
                       r.figures.idle ? MillisOfMicros((*r.figures.idle).*us) : std::string("-"),
                       "</td>");
    }
    doc_.Append(
        "<tr data-pair=\"{0}\"><th>{0}</th><td class=\"n\">{1}</td><td class=\"n\">{2}</td>"
        "<td class=\"n\">{3}</td>{8}<td class=\"n\">{4}</td><td class=\"n\">{5}</td>"
        "<td class=\"n\">{6}</td><td class=\"n\">{7}</td></tr>\n",
        HtmlEscaped(r.pair), MillisOfMicros(r.figures.computation_us),
        MillisOfMicros(r.figures.exposed_communication_us), MillisOfMicros(r.figures.idle_us),
        MillisOfMicros(r.figures.span_us),
        r.figures.step_us ? MillisOfMicros(*r.figures.step_us) : std::string("-"),
        MillisOfMicros(r.wait_us), Thousands(r.collectives), causes);
  }
  doc_.Append("</table>\n");
  if (ranks.size() > kMaxPairs) {
    doc_.Append("<p class=\"note\">... and {} more ranks (--format json lists them all)</p>\n",
                ranks.size() - kMaxPairs);
  }
}

void MergeHtmlPage::Categories() {
  doc_.Append(
      "<section id=\"categories\">\n<h2>Kernel time per category <span class=\"muted\">(summed "
      "over the complete pairs)</span></h2>\n");
  if (s_.categories.empty()) {
    doc_.Append("<p>No complete pair with kernels.</p>\n</section>\n");
    return;
  }
  std::vector<BarRow> rows;
  for (const CategorySummary& c : s_.categories) {
    BarRow row{c.category, {}, "", c.category};
    for (Side s : kSides) {
      const SideStats& st = c.sides[s];
      row.bars.push_back({st.sum_us, SideColourClass(s)});
      row.tooltip += fmt::format("\n{}: {} ms summed, median {} ms, in {} pairs", s_.side_names[s],
                                 MillisOfMicros(st.sum_us), MillisOfMicros(st.median_us),
                                 st.pairs_with_kernels);
    }
    row.value_text = fmt::format("{} / {} ms", MillisOfMicros(c.sides[Side::kTrace1].sum_us),
                                 MillisOfMicros(c.sides[Side::kTrace2].sum_us));
    rows.push_back(std::move(row));
  }
  doc_.Append(
      "<p>{}</p>\n{}<table "
      "class=\"categories\">\n<tr><th>category</th><th>side</th><th class=\"n\">sum "
      "ms</th><th class=\"n\">median ms</th><th>min ms (pair)</th><th>max ms "
      "(pair)</th></tr>\n",
      SideKeys(), BarChartSvg(rows, "Kernel time per category"));
  for (const CategorySummary& c : s_.categories) {
    for (Side s : kSides) {
      const SideStats& st = c.sides[s];
      doc_.Append(
          "<tr data-category=\"{0}\" data-side=\"{1}\"><th>{2}</th><td>{3}</td>"
          "<td class=\"time{1} n\">{4}</td><td class=\"n\">{5}</td><td>{6} {7}</td>"
          "<td>{8} {9}</td></tr>\n",
          HtmlEscaped(c.category), s == Side::kTrace1 ? 1 : 2,
          s == Side::kTrace1 ? HtmlEscaped(c.category) : "",
          ColourKey(SideColourClass(s), s_.side_names[s]), MillisOfMicros(st.sum_us),
          MillisOfMicros(st.median_us), MillisOfMicros(st.min_us), HtmlEscaped(st.min_pair),
          MillisOfMicros(st.max_us), HtmlEscaped(st.max_pair));
    }
  }
  doc_.Append("</table>\n</section>\n");
}

void MergeHtmlPage::Recurring() {
  doc_.Append("<section id=\"opportunities\">\n<h2>Recurring fusion opportunities</h2>\n");
  if (s_.recurring.empty()) {
    doc_.Append("<p>None.</p>\n</section>\n");
    return;
  }
  std::vector<BarRow> rows;
  for (const RecurringOpportunity& r : s_.recurring) {
    rows.push_back(
        {r.kernel_type,
         {{static_cast<double>(r.pairs.size()), SideColourClass(r.fused_by)}},
         fmt::format("{} pairs, median {}", r.pairs.size(), RatioText(r.median_ratio)),
         fmt::format("{}: fused by {} in {} pairs, median ratio {}", r.kernel_type,
                     s_.side_names[r.fused_by], r.pairs.size(), RatioText(r.median_ratio))});
  }
  doc_.Append(
      "<p>Fused by {}</p>\n{}<table>\n<tr><th>kernel type</th><th>fused by</th>"
      "<th class=\"n\">pairs</th><th class=\"n\">median ratio</th><th>pairs</th></tr>\n",
      SideKeys(), BarChartSvg(rows, "Recurring fusion opportunities"));
  for (const RecurringOpportunity& r : s_.recurring) {
    std::vector<std::string> labels(r.pairs.begin(),
                                    r.pairs.begin() + std::min(r.pairs.size(), kMaxPairLabels));
    doc_.Append(
        "<tr data-kernel-type=\"{0}\"><th>{0}</th><td>{1}</td><td class=\"n\">{2}</td>"
        "<td class=\"n\">{3}</td><td>{4}{5}</td></tr>\n",
        HtmlEscaped(r.kernel_type), HtmlEscaped(s_.side_names[r.fused_by]), r.pairs.size(),
        RatioText(r.median_ratio), HtmlEscaped(fmt::format("{}", fmt::join(labels, ", "))),
        r.pairs.size() > labels.size() ? ", ..." : "");
  }
  doc_.Append("</table>\n</section>\n");
}

// The op-level findings of the pairs compared --by-op; nothing for a batch without them.
void MergeHtmlPage::ByOperator() {
  if (s_.pairs_with_ops == 0) return;
  doc_.Append(
      "<section id=\"by-op\">\n<h2>By operator (over {} complete pairs compared "
      "--by-op)</h2>\n<p>Kernel time linked to ops: {}; {}</p>\n",
      s_.pairs_with_ops, HtmlEscaped(LinkedShareText(s_, Side::kTrace1)),
      HtmlEscaped(LinkedShareText(s_, Side::kTrace2)));
  FusionDifferenceRows();
  OpRows();
  LinkedShares();
  doc_.Append("</section>\n");
}

// Per pair (rank), the share of each side's kernel time linked to ops.
void MergeHtmlPage::LinkedShares() {
  doc_.Append(
      "<h3>Kernel time linked to ops, per pair</h3>\n<table class=\"linked\">\n<tr><th>pair"
      "</th><th class=\"n\">{}</th><th class=\"n\">{}</th><th class=\"n\">fusion "
      "differences</th></tr>\n",
      HtmlEscaped(s_.side_names[Side::kTrace1]), HtmlEscaped(s_.side_names[Side::kTrace2]));
  size_t shown = 0, with_ops = 0;
  for (const MergedPair& p : s_.pairs) {
    if (p.state != PairState::kComplete || !p.ops || with_ops++ >= kMaxPairs) continue;
    ++shown;
    auto share = [&p](Side side) {
      return fmt::format("{:.1f}%",
                         100 * p.ops->LinkedShare(p.sides_swapped ? Opposite(side) : side));
    };
    doc_.Append(
        "<tr data-pair=\"{0}\"><th>{0}</th><td class=\"n\">{1}</td><td class=\"n\">{2}</td>"
        "<td class=\"n\">{3}</td></tr>\n",
        HtmlEscaped(p.label), share(Side::kTrace1), share(Side::kTrace2),
        p.ops->fusion_differences.size());
  }
  doc_.Append("</table>\n");
  if (with_ops > shown) {
    doc_.Append(
        "<p class=\"note\">... and {} more pairs (--format csv or json lists them all)</p>\n",
        with_ops - shown);
  }
}

void MergeHtmlPage::FusionDifferenceRows() {
  doc_.Append("<h3>Fusion differences ({})</h3>\n", s_.fusion_differences.size());
  if (s_.fusion_differences.empty()) return doc_.Append("<p>None.</p>\n");
  doc_.Append(
      "<table class=\"differences\">\n<tr><th>op</th><th>scope</th><th>relation</th>"
      "<th>fewer kernels</th><th>fused kernel</th><th>extra kernels</th>"
      "<th class=\"n\">instances</th><th class=\"n\">extra ms</th><th>pairs</th></tr>\n");
  for (size_t i = 0; i < s_.fusion_differences.size() && i < kMaxOpRows; ++i) {
    const OpFusionDifference& d = s_.fusion_differences[i];
    std::string extra;
    for (const auto& [name, count] : d.extra_kernels) {
      extra += StrCat(extra.empty() ? "" : ", ", name, " x", count);
    }
    std::vector<std::string> labels(d.pairs.begin(),
                                    d.pairs.begin() + std::min(d.pairs.size(), kMaxPairLabels));
    doc_.Append(
        "<tr><th>{}</th><td class=\"scope\">{}</td><td>{}</td><td>{}</td><td class=\"name\">"
        "{}</td><td class=\"name\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td>{} ({}{})</td></tr>\n",
        HtmlEscaped(d.op), HtmlEscaped(d.scope), HtmlEscaped(d.relation),
        HtmlEscaped(d.fused_by ? s_.side_names[*d.fused_by] : "neither"),
        HtmlEscaped(d.fused_kernel), HtmlEscaped(extra), d.instances,
        MillisOfMicros(d.extra_time_us), d.pairs.size(),
        HtmlEscaped(fmt::format("{}", fmt::join(labels, ", "))),
        d.pairs.size() > labels.size() ? ", ..." : "");
  }
  doc_.Append("</table>\n");
  if (s_.fusion_differences.size() > kMaxOpRows) {
    doc_.Append("<p class=\"note\">... and {} more (--format csv or json lists them all)</p>\n",
                s_.fusion_differences.size() - kMaxOpRows);
  }
}

void MergeHtmlPage::OpRows() {
  doc_.Append("<h3>Ops whose summed times differ most</h3>\n");
  if (s_.ops.empty()) return doc_.Append("<p>None.</p>\n");
  doc_.Append(
      "<table class=\"ops\">\n<tr><th>op</th><th>scope</th><th class=\"n\">{} ms</th>"
      "<th class=\"n\">{} ms</th><th class=\"n\">delta ms</th><th class=\"n\">pairs</th>"
      "</tr>\n",
      HtmlEscaped(s_.side_names[Side::kTrace1]), HtmlEscaped(s_.side_names[Side::kTrace2]));
  for (size_t i = 0; i < s_.ops.size() && i < kMaxOpRows; ++i) {
    const OpTimes& o = s_.ops[i];
    doc_.Append(
        "<tr><th>{}</th><td class=\"scope\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
        HtmlEscaped(o.op), HtmlEscaped(o.scope), MillisOfMicros(o.time_us[Side::kTrace1]),
        MillisOfMicros(o.time_us[Side::kTrace2]), MillisOfMicros(o.DeltaUs()), o.pairs);
  }
  doc_.Append("</table>\n");
  if (s_.ops.size() > kMaxOpRows) {
    doc_.Append("<p class=\"note\">... and {} more (--format csv or json lists them all)</p>\n",
                s_.ops.size() - kMaxOpRows);
  }
}

void MergeHtmlPage::Pairs() {
  const std::vector<const MergedPair*> pairs = ByDisparity(s_);
  doc_.Append(
      "<section id=\"pairs\">\n<h2>Pairs <span class=\"muted\">(the largest kernel-time ratio "
      "either way first)</span></h2>\n");
  if (pairs.empty()) {
    doc_.Append("<p>No complete pair.</p>\n</section>\n");
    return;
  }
  doc_.Append(
      "<table class=\"pairs\">\n<tr><th>pair</th><th>GPUs</th><th class=\"n\">kernels"
      "</th><th class=\"n\">kernel ms</th><th class=\"n\">t1/t2</th><th class=\"n\">"
      "groups</th><th>top opportunity</th><th class=\"n\">seconds</th></tr>\n");
  for (size_t i = 0; i < pairs.size() && i < kMaxPairs; ++i) PairRow(*pairs[i]);
  doc_.Append("</table>\n");
  if (pairs.size() > kMaxPairs) {
    doc_.Append(
        "<p class=\"note\">... and {} more complete pairs (--format csv or json lists "
        "them all)</p>\n",
        pairs.size() - kMaxPairs);
  }
  doc_.Append("</section>\n");
}

void MergeHtmlPage::PairRow(const MergedPair& p) {
  const MergedTrace& a = p.traces[Side::kTrace1];
  const MergedTrace& b = p.traces[Side::kTrace2];
  doc_.Append(
      "<tr data-pair=\"{0}\"><th>{0}</th><td>{1} / {2}</td><td class=\"n\">{3} / {4}</td>"
      "<td class=\"n\">{5} / {6}</td><td class=\"n\">{7}</td><td class=\"n\">{8}</td>"
      "<td>{9}</td><td class=\"n\">{10}</td></tr>\n",
      HtmlEscaped(p.label), HtmlEscaped(a.gpu.empty() ? a.platform : a.gpu),
      HtmlEscaped(b.gpu.empty() ? b.platform : b.gpu), Thousands(a.kernels), Thousands(b.kernels),
      MillisOfMicros(a.kernel_time_us), MillisOfMicros(b.kernel_time_us),
      RatioText(p.KernelTimeRatio()), Thousands(p.matched_groups),
      HtmlEscaped(TopOpportunityText(p)),
      p.elapsed_seconds ? fmt::format("{:.1f}", *p.elapsed_seconds) : "");
}

void MergeHtmlPage::Problems() {
  const std::vector<const MergedPair*> problems = ProblemPairs(s_);
  doc_.Append("<section id=\"problems\">\n<h2>Problems ({})</h2>\n", problems.size());
  if (problems.empty()) {
    doc_.Append("<p>None: every pair is complete.</p>\n</section>\n");
    return;
  }
  doc_.Append(
      "<table class=\"problems\">\n<tr><th>pair</th><th>state</th><th class=\"n\">exit"
      "</th><th>error</th></tr>\n");
  for (size_t i = 0; i < problems.size() && i < kMaxProblems; ++i) {
    const MergedPair& p = *problems[i];
    doc_.Append(
        "<tr data-pair=\"{0}\"><th>{0}</th><td>{1}</td><td class=\"n\">{2}</td>"
        "<td><code>{3}</code></td></tr>\n",
        HtmlEscaped(p.label), PairStateName(p.state), p.exit_code ? StrCat(*p.exit_code) : "",
        HtmlEscaped(p.error));
  }
  doc_.Append("</table>\n");
  if (problems.size() > kMaxProblems) {
    doc_.Append("<p class=\"note\">... and {} more (--format csv or json lists them all)</p>\n",
                problems.size() - kMaxProblems);
  }
  doc_.Append("</section>\n");
}

}  // namespace

std::string MergeHtml(const MergeSummary& summary) { return MergeHtmlPage(summary).Render(); }

}  // namespace tracefuse
