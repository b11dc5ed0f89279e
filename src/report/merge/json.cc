// `tracefuse merge --format json`: the whole summary (schema in tracefuse/report/merge.h), and
// what the summary's formats share.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "report/common/formatting.h"
#include "report/merge/format.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/report/merge.h"

namespace tracefuse {
namespace {

Json OrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

template <typename T>
Json OrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// A ratio: null when infinite, as in compare's JSON.
Json RatioJson(double ratio) { return std::isinf(ratio) ? Json(nullptr) : Json(ratio); }

const char* SideKey(Side side) { return side == Side::kTrace1 ? "trace1" : "trace2"; }

Json TraceJson(const MergedPair& p, Side side) {
  const MergedTrace& t = p.traces[side];
  Json j;
  j["path"] = OrNull(t.path);
  const bool r = p.has_report;
  j["label"] = r ? Json(t.label) : Json(nullptr);
  j["platform"] = r ? Json(t.platform) : Json(nullptr);
  j["gpu"] = r ? Json(t.gpu) : Json(nullptr);
  j["kernels"] = r ? Json(t.kernels) : Json(nullptr);
  j["kernel_time_us"] = r ? Json(t.kernel_time_us) : Json(nullptr);
  return j;
}

Json PairJson(const MergedPair& p, size_t top) {
  Json j;
  j["label"] = p.label;
  j["state"] = PairStateName(p.state);
  j["exit_code"] = OrNull(p.exit_code);
  j["error"] = OrNull(p.error);
  j["task"] = OrNull(p.task);
  j["status_file"] = OrNull(p.status_file);
  j["report_file"] = OrNull(p.report_file);
  j["elapsed_seconds"] = OrNull(p.elapsed_seconds);
  j["peak_rss_bytes"] = OrNull(p.peak_rss_bytes);
  j["host"] = OrNull(p.host);
  j["started_at"] = OrNull(p.started_at);
  j["rule_set"] = p.has_report ? Json(p.rule_set) : Json(nullptr);
  j["matched_groups"] = p.has_report ? Json(p.matched_groups) : Json(nullptr);
  j["kernel_time_ratio"] = p.has_report ? RatioJson(p.KernelTimeRatio()) : Json(nullptr);
  j["traces"] = Json::array({TraceJson(p, Side::kTrace1), TraceJson(p, Side::kTrace2)});
  j["top_opportunities"] = Json::array();
  for (size_t i = 0; i < p.opportunities.size() && i < top; ++i) {
    const MergedOpportunity& o = p.opportunities[i];
    j["top_opportunities"].push_back({{"kernel_type", o.kernel_type},
                                      {"fused_by", SideKey(o.fused_by)},
                                      {"fused_by_label", p.traces[o.fused_by].label},
                                      {"ratio", RatioJson(o.ratio)}});
  }
  j["ops"] = nullptr;
  if (p.ops) {
    j["ops"] = {{"file", p.ops->file},
                {"linked_kernel_share", Json::array({p.ops->LinkedShare(Side::kTrace1),
                                                     p.ops->LinkedShare(Side::kTrace2)})},
                {"fusion_differences", p.ops->fusion_differences.size()}};
  }
  return j;
}

Json FusionDifferenceJson(const MergeSummary& s, const OpFusionDifference& d) {
  Json extra = Json::array();
  for (const auto& [name, count] : d.extra_kernels) {
    extra.push_back({{"name", name}, {"count", count}});
  }
  return {{"kind", d.kind},
          {"scope", d.scope},
          {"op", d.kind == "module" ? Json(nullptr) : Json(d.op)},
          {"relation", d.relation},
          {"fused_by", d.fused_by ? Json(s.side_names[*d.fused_by]) : Json(nullptr)},
          {"fused_kernel", OrNull(d.fused_kernel)},
          {"extra_kernels", std::move(extra)},
          {"instances", d.instances},
          {"extra_time_us", SummedMicros(d.extra_time_us)},
          {"saving_us", SummedMicros(d.saving_us)},
          {"time_us", Json::array({SummedMicros(d.time_us[Side::kTrace1]),
                                   SummedMicros(d.time_us[Side::kTrace2])})},
          {"pairs", d.pairs.size()},
          {"pair_labels", d.pairs}};
}

Json OpTimesJson(const OpTimes& o) {
  return {{"op", o.op},
          {"scope", o.scope},
          {"pairs", o.pairs},
          {"instances", o.instances},
          {"time_us", Json::array({SummedMicros(o.time_us[Side::kTrace1]),
                                   SummedMicros(o.time_us[Side::kTrace2])})},
          {"delta_us", SummedMicros(o.DeltaUs())}};
}

Json SideStatsJson(const SideStats& s) {
  return {{"sum_us", s.sum_us},
          {"median_us", s.median_us},
          {"min_us", s.min_us},
          {"min_pair", s.min_pair},
          {"max_us", s.max_us},
          {"max_pair", s.max_pair},
          {"pairs_with_kernels", s.pairs_with_kernels}};
}

Json HeaderJson(const MergeSummary& s) {
  Json j;
  j["tracefuse_version"] = TRACEFUSE_VERSION;
  j["dir"] = s.dir;
  j["manifest"] = {{"path", OrNull(s.manifest_path)},
                   {"rows", OrNull(s.manifest_rows)},
                   {"error", OrNull(s.manifest_error)}};
  j["sides"] = Json::array({s.side_names[Side::kTrace1], s.side_names[Side::kTrace2]});
  j["counts"] = {{"pairs", s.pairs.size()}};
  for (PairState state : kPairStates) j["counts"][PairStateName(state)] = s.Count(state);
  return j;
}

}  // namespace

std::string_view PairStateName(PairState state) {
  switch (state) {
    case PairState::kComplete:
      return "complete";
    case PairState::kFailed:
      return "failed";
    case PairState::kInterrupted:
      return "interrupted";
    case PairState::kRunning:
      return "running";
    case PairState::kMissing:
      return "missing";
  }
  return "missing";
}

double MergedPair::KernelTimeRatio() const {
  return Ratio(traces[Side::kTrace1].kernel_time_us, traces[Side::kTrace2].kernel_time_us);
}

size_t MergeSummary::Count(PairState state) const {
  size_t n = 0;
  for (const MergedPair& p : pairs) n += p.state == state;
  return n;
}

bool MergeSummary::Complete() const {
  return manifest_error.empty() && !pairs.empty() && Count(PairState::kComplete) == pairs.size();
}

std::string MillisOfMicros(double us) { return fmt::format("{:.3f}", us / 1000); }

std::string FitMiddle(std::string_view s, size_t width) {
  if (s.size() <= width) return std::string(s);
  if (width <= 3) return std::string(width, '.');
  auto continuation = [&](size_t i) { return (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; };
  size_t head = (width - 3) / 2;
  size_t tail = s.size() - (width - 3 - head);
  while (head > 0 && continuation(head)) --head;
  while (tail < s.size() && continuation(tail)) ++tail;
  return StrCat(s.substr(0, head), "...", s.substr(tail));
}

std::string FusionDifferenceText(const MergeSummary& s, const OpFusionDifference& d,
                                 size_t scope_width) {
  const std::string what = d.kind == "module" ? StrCat("module ", d.scope) : d.op;
  const std::string where = d.scope.empty() || d.kind == "module"
                                ? FitMiddle(what, scope_width + 16)
                                : StrCat(d.op, " under ", FitMiddle(d.scope, scope_width));
  if (!d.fused_by) {  // relation "algorithm": neither side covers the other's kernels
    return StrCat(where, ": the sides run different kernels (", d.relation, ") in ", d.pairs.size(),
                  d.pairs.size() == 1 ? " pair" : " pairs", ", ", d.instances,
                  d.instances == 1 ? " instance" : " instances");
  }
  const std::string verdict =
      StrCat(s.side_names[*d.fused_by], " runs it in fewer kernels (", d.relation, ")");
  std::string extra;
  for (const auto& [name, count] : d.extra_kernels) {
    extra += StrCat(extra.empty() ? "" : ", ", name, " x", count);
  }
  return StrCat(where, ": ", verdict, " in ", d.pairs.size(),
                d.pairs.size() == 1 ? " pair" : " pairs", ", ", d.instances,
                d.instances == 1 ? " instance" : " instances", "; ",
                s.side_names[Opposite(*d.fused_by)], "'s extra kernels (",
                extra.empty() ? "none" : extra, ") take ", MillisOfMicros(d.extra_time_us), " ms");
}

std::string FusedKernelText(const MergeSummary& s, const OpFusionDifference& d, size_t width) {
  if (!d.fused_by || d.fused_kernel.empty()) return "";
  const std::string who = StrCat(s.side_names[*d.fused_by], "'s ");
  constexpr std::string_view kWhat = " does their work";
  const size_t room = width > who.size() + kWhat.size() ? width - who.size() - kWhat.size() : 8;
  return StrCat(who, FitMiddle(d.fused_kernel, room), kWhat);
}

std::string LinkedShareText(const MergeSummary& s, Side side) {
  std::vector<std::pair<double, std::string>> shares;  // (share, pair), on the summary's side
  for (const MergedPair& p : s.pairs) {
    if (p.state != PairState::kComplete || !p.ops) continue;
    shares.emplace_back(p.ops->LinkedShare(p.sides_swapped ? Opposite(side) : side), p.label);
  }
  if (shares.empty()) return StrCat(s.side_names[side], " none");
  std::vector<double> values;
  for (const auto& share : shares) values.push_back(share.first);
  const auto lowest = std::min_element(
      shares.begin(), shares.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return fmt::format("{} {:.1f}% median, lowest {:.1f}% ({})", s.side_names[side],
                     100 * Median(values), 100 * lowest->first, FitMiddle(lowest->second, 16));
}

std::string TopOpportunityText(const MergedPair& p) {
  if (p.opportunities.empty()) return "none";
  const MergedOpportunity& o = p.opportunities.front();
  return StrCat(o.kernel_type, " by ", p.traces[o.fused_by].label, " ", RatioText(o.ratio));
}

double SummedMicros(double us) { return std::round(us * 1000) / 1000; }

// IdleText() is why the rank `pair` of `side` idled, where its status file says: "; its GPU
// idles 1.200 ms (cpu wait 1.000, launch latency 0.200, unattributed 0.000)".
std::string IdleText(const MergeSummary& s, Side side, const std::string& pair) {
  for (const RankWait& r : s.ranks[side].ranks) {
    if (r.pair != pair || !r.figures.idle) continue;
    const RankIdle& idle = *r.figures.idle;
    return StrCat("; its GPU idles ", MillisOfMicros(r.figures.idle_us), " ms (cpu wait ",
                  MillisOfMicros(idle.cpu_wait_us), ", launch latency ",
                  MillisOfMicros(idle.launch_latency_us), ", unattributed ",
                  MillisOfMicros(idle.unattributed_us), ")");
  }
  return "";
}

std::string StragglerText(const MergeSummary& s, Side side, const Straggler& g,
                          std::string_view label) {
  const std::string& kind = s.ranks[side].collective_kind;
  const std::string collectives = kind.empty() || kind == "collective" ? "collective"
                                  : kind == "send/recv"                ? "send/recv collective"
                                                                       : kind;
  return StrCat(label, " (", s.side_names[side], " side) computes ",
                RatioText(Ratio(g.computation_us, g.median_computation_us)),
                " the median rank; the other ",
                g.other_ranks == 1 ? "rank" : StrCat(g.other_ranks, " ranks"), " waited ",
                MillisOfMicros(g.others_wait_us), " ms for it in ", g.collectives, " ", collectives,
                g.collectives == 1 ? "" : "s", IdleText(s, side, g.pair));
}

std::string NoStragglerText(const MergeSummary& s, Side side) {
  const std::vector<RankWait>& ranks = s.ranks[side].ranks;
  const std::string head = StrCat(s.side_names[side], " side: ");
  if (ranks.empty()) return head + "no GPU timeline in the status files";
  if (ranks.size() == 1) return head + "1 rank, nothing to compare";
  std::vector<double> computation;
  for (const RankWait& r : ranks) computation.push_back(r.figures.computation_us);
  const double most = *std::max_element(computation.begin(), computation.end());
  const std::string_view matched = ranks.front().collectives == 0 ? "no collective matched, " : "";
  std::vector<double> steps;
  for (const RankWait& r : ranks) {
    if (r.figures.step_us) steps.push_back(*r.figures.step_us);
  }
  const std::string step =
      steps.empty() ? "" : StrCat("; step time ", MillisOfMicros(Median(steps)), " ms median");
  return StrCat(head, "no straggler among ", ranks.size(), " ranks (", matched, "GPU computation ",
                MillisOfMicros(Median(computation)), " ms median, ", MillisOfMicros(most),
                " ms at most", step, ")");
}

double Disparity(const MergedPair& p) {
  const double a = p.traces[Side::kTrace1].kernel_time_us;
  const double b = p.traces[Side::kTrace2].kernel_time_us;
  if (a <= 0 && b <= 0) return 1;
  return Ratio(std::max(a, b), std::min(a, b));
}

std::vector<const MergedPair*> ByDisparity(const MergeSummary& summary) {
  std::vector<const MergedPair*> pairs;
  for (const MergedPair& p : summary.pairs)
    if (p.state == PairState::kComplete && p.has_report) pairs.push_back(&p);
  std::stable_sort(pairs.begin(), pairs.end(), [](const MergedPair* a, const MergedPair* b) {
    return Disparity(*a) > Disparity(*b);
  });
  return pairs;
}

std::vector<const MergedPair*> ProblemPairs(const MergeSummary& summary) {
  std::vector<const MergedPair*> problems;
  for (PairState state : kPairStates) {
    if (state == PairState::kComplete) continue;
    for (const MergedPair& p : summary.pairs) {
      if (p.state == state) problems.push_back(&p);
    }
  }
  return problems;
}

Json RanksJson(const MergeSummary& s) {
  Json sides = Json::array();
  for (Side side : kSides) {
    const RankAnalysis& a = s.ranks[side];
    Json pairs = Json::array();
    for (const RankWait& r : a.ranks) {
      Json pair = {{"pair", r.pair}};
      ForEachRankFigure(r.figures,
                        [&](const char* key, const double* us) { pair[key] = SummedMicros(*us); });
      pair["step_us"] = nullptr;
      if (r.figures.step_us) pair["step_us"] = SummedMicros(*r.figures.step_us);
      pair["idle"] = nullptr;
      if (r.figures.idle) {
        Json idle = Json::object();
        ForEachIdleCause(*r.figures.idle,
                         [&](const char* key, const double* us) { idle[key] = SummedMicros(*us); });
        pair["idle"] = std::move(idle);
      }
      pair["wait_us"] = SummedMicros(r.wait_us);
      pair["collectives"] = r.collectives;
      pairs.push_back(std::move(pair));
    }
    sides.push_back({{"collective_kind", OrNull(a.collective_kind)}, {"pairs", std::move(pairs)}});
  }
  return sides;
}

Json StragglersJson(const MergeSummary& s) {
  Json stragglers = Json::array();
  for (Side side : kSides) {
    for (const Straggler& g : s.ranks[side].stragglers) {
      stragglers.push_back({{"side", SideKey(side)},
                            {"pair", g.pair},
                            {"computation_us", SummedMicros(g.computation_us)},
                            {"median_computation_us", SummedMicros(g.median_computation_us)},
                            {"others_wait_us", SummedMicros(g.others_wait_us)},
                            {"other_ranks", g.other_ranks},
                            {"collectives", g.collectives}});
    }
  }
  return stragglers;
}

Json MergeJson(const MergeSummary& s) {
  Json j = HeaderJson(s);
  j["pairs"] = Json::array();
  for (const MergedPair& p : s.pairs) j["pairs"].push_back(PairJson(p, s.top));
  j["categories"] = Json::array();
  for (const CategorySummary& c : s.categories) {
    j["categories"].push_back({{"category", c.category},
                               {"sides", Json::array({SideStatsJson(c.sides[Side::kTrace1]),
                                                      SideStatsJson(c.sides[Side::kTrace2])})}});
  }
  j["recurring_opportunities"] = Json::array();
  for (const RecurringOpportunity& r : s.recurring) {
    j["recurring_opportunities"].push_back({{"kernel_type", r.kernel_type},
                                            {"fused_by", s.side_names[r.fused_by]},
                                            {"pairs", r.pairs.size()},
                                            {"pair_labels", r.pairs},
                                            {"median_ratio", RatioJson(r.median_ratio)}});
  }
  j["problems"] = Json::array();
  for (const MergedPair* p : ProblemPairs(s)) {
    j["problems"].push_back({{"label", p->label},
                             {"state", PairStateName(p->state)},
                             {"exit_code", OrNull(p->exit_code)},
                             {"error", OrNull(p->error)}});
  }
  j["straggler_threshold"] = s.straggler_threshold;
  j["ranks"] = RanksJson(s);
  j["stragglers"] = StragglersJson(s);
  j["pairs_with_ops"] = s.pairs_with_ops;
  j["fusion_differences"] = Json::array();
  for (const OpFusionDifference& d : s.fusion_differences) {
    j["fusion_differences"].push_back(FusionDifferenceJson(s, d));
  }
  j["ops"] = Json::array();
  for (const OpTimes& o : s.ops) j["ops"].push_back(OpTimesJson(o));
  return j;
}

}  // namespace tracefuse
