// `tracefuse ops --format text` and `--format markdown`: one layout, two markups.
#include <algorithm>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "report/common/formatting.h"
#include "report/ops/fusion_differences.h"
#include "tracefuse/analyze/op_compare.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/parse/platform.h"
#include "tracefuse/report/gpu_timeline.h"
#include "tracefuse/report/ops.h"

namespace tracefuse {
namespace {

// KernelList() names a side's kernel families (or, `full_names`, their examples) with their counts
// and times, the first few.
std::string KernelList(const std::vector<OpKernels>& kernels, bool full_names) {
  constexpr size_t kShown = 3;
  if (kernels.empty()) return "(no kernels)";
  std::string out;
  for (size_t i = 0; i < kernels.size() && i < kShown; ++i) {
    if (!out.empty()) out += "; ";
    out += fmt::format("{} x{} {} us", full_names ? kernels[i].example : kernels[i].family,
                       kernels[i].count, MicrosText(kernels[i].time_ns));
  }
  if (kernels.size() > kShown) out += fmt::format("; {} more", kernels.size() - kShown);
  return out;
}

// AlignedTypes() lays two graph replays' kernel categories side by side, as a diff: a category
// both run is named once, one only `a` runs is "+Type (a_label)", one only `b` runs
// "+Type (b_label)"; repeats fold into "Type x3". Where one side fuses what the other runs as
// separate kernels, the separate kernel stands out. The first kShown entries.
std::string AlignedTypes(const std::vector<std::string>& a, const std::vector<std::string>& b,
                         const std::string& a_label, const std::string& b_label) {
  constexpr size_t kShown = 24;
  StringMap<uint32_t> ids;
  auto encode = [&](const std::vector<std::string>& types) {
    std::vector<uint32_t> out;
    for (const std::string& t : types) {
      out.push_back(ids.try_emplace(t, static_cast<uint32_t>(ids.size())).first->second);
    }
    return out;
  };
  const auto matches = MyersMatches(encode(a), encode(b));
  std::vector<std::string> tokens;
  size_t i = 0, j = 0;
  auto only = [&](size_t until_i, size_t until_j) {
    for (; i < until_i; ++i) tokens.push_back(fmt::format("+{} ({})", a[i], a_label));
    for (; j < until_j; ++j) tokens.push_back(fmt::format("+{} ({})", b[j], b_label));
  };
  for (const auto& [mi, mj] : matches) {
    only(mi, mj);
    tokens.push_back(a[mi]);
    i = mi + 1;
    j = mj + 1;
  }
  only(a.size(), b.size());
  std::string out;
  size_t shown = 0;
  for (size_t t = 0; t < tokens.size() && shown < kShown; ++shown) {
    size_t run = 1;
    while (t + run < tokens.size() && tokens[t + run] == tokens[t]) ++run;
    out += (out.empty() ? "" : ", ") + tokens[t] + (run > 1 ? fmt::format(" x{}", run) : "");
    t += run;
    if (shown + 1 == kShown && t < tokens.size()) out += ", ...";
  }
  return out;
}

// OpsPage lays an OpComparison out as the text or the markdown report, section by section.
class OpsPage : Page {
 public:
  OpsPage(const OpComparison& ops, const OpsContext& context, bool markdown)
      : Page(markdown), ops_(ops), context_(context) {}

  std::string Render() && {
    Header();
    out_ += GpuTimelineSection(context_.traces, context_.labels, markdown_);
    out_ += IdleSection(context_.traces, context_.labels, markdown_);
    OpRows("Ops that differ most", [](const OpRow& r) { return r.matched; });
    out_ += FusionDifferencesSection(ops_.fusion_differences, &ops_, context_.labels, context_.top,
                                     markdown_, context_.full_names);
    FurthestFromPeak();
    out_ += AchievedByTypeSection(ops_, context_.labels, markdown_);
    Instances();
    OpRows("Ops on one side only", [](const OpRow& r) {
      return !r.matched &&
             (r.sides[Side::kTrace1].instances == 0 || r.sides[Side::kTrace2].instances == 0);
    });
    Groups();
    return std::move(out_);
  }

 private:
  void Header();
  std::string TraceLine(Side side) const;
  template <typename Keep>
  void OpRows(const std::string& title, Keep keep);
  void Instances();
  void Groups();
  void PeakLines();
  void FurthestFromPeak();

  std::string Code(const std::string& s) const { return markdown_ ? "`" + s + "`" : s; }
  // How an item under an item starts.
  std::string SubBullet() const { return markdown_ ? "  - " : "      "; }
  const std::string& Label(Side side) const { return context_.labels[side]; }

  const OpComparison& ops_;
  const OpsContext& context_;
};

void OpsPage::Header() {
  const std::string& a = Label(Side::kTrace1);
  const std::string& b = Label(Side::kTrace2);
  Line(markdown_ ? fmt::format("# Op-level comparison: {} vs {}", a, b)
                 : fmt::format("OP-LEVEL COMPARISON: {} vs {}", a, b));
  if (markdown_) Line("");
  for (Side s : kSides) Line(TraceLine(s));
  const OpTraceSummary& t1 = ops_.traces[Side::kTrace1];
  const OpTraceSummary& t2 = ops_.traces[Side::kTrace2];
  Line(fmt::format(
      "{}Top-level ops: {} / {}, {} matched ({:.1f}% / {:.1f}%); steps {} / {}",
      markdown_ ? "\n" : "  ", Thousands(t1.top_level_ops), Thousands(t2.top_level_ops),
      Thousands(ops_.matched_ops),
      Percent(static_cast<int64_t>(ops_.matched_ops), static_cast<int64_t>(t1.top_level_ops)),
      Percent(static_cast<int64_t>(ops_.matched_ops), static_cast<int64_t>(t2.top_level_ops)),
      t1.steps, t2.steps));
  if (ops_.capped_steps > 0) {
    Line(fmt::format("{}{} step(s) differ too much to align in order: matched op by op",
                     markdown_ ? "\n" : "  ", ops_.capped_steps));
  }
  PeakLines();
}

// PeakLines() says, for each trace whose ops have FLOPs or bytes, the peaks they are measured
// against, or that its GPU is not in the peak table.
void OpsPage::PeakLines() {
  for (Side side : kSides) {
    const std::string sentence = PeakSentence(ops_.traces[side]);
    if (!sentence.empty())
      Line(fmt::format("{}{}: {}", markdown_ ? "\n" : "  ", Label(side), sentence));
  }
}

void OpsPage::FurthestFromPeak() {
  const std::vector<PeakGap> gaps = tracefuse::FurthestFromPeak(ops_);
  if (gaps.empty()) return;
  Heading(
      "Furthest from peak (the time the side further from its peak would save at the other's "
      "percent of peak)");
  for (size_t i = 0; i < gaps.size() && i < context_.top; ++i) {
    const PeakGap& g = gaps[i];
    const OpRow& row = *g.row;
    std::string sides;
    for (Side side : kSides) {
      const Achieved& a = g.achieved[side];
      sides +=
          fmt::format("{}{} {:.1f}% of {} ({} us)", side == Side::kTrace1 ? "" : " vs ",
                      Label(side), *a.percent_of_peak, RoofText(*a.roof, row.work[side].dtype()),
                      MicrosText(row.sides[side].time_ns));
    }
    Line(fmt::format("{}{}{} x{}: {}; {} would save {} us", Bullet("  "), Code(row.op),
                     row.scope.empty() ? "" : " under " + ShortScope(row.scope), row.instances,
                     sides, Label(g.behind), MicrosText(g.saving_ns)));
  }
}

std::string OpsPage::TraceLine(Side side) const {
  const TraceProfile& p = *context_.traces[side];
  const OpTraceSummary& s = ops_.traces[side];
  const std::string linked = fmt::format(
      "{:.1f}% of kernel time linked to an op, {:.1f}% to a launch without one, {:.1f}% with no "
      "launch",
      Percent(s.linked_ns, s.kernel_time_ns), Percent(s.launch_only_ns, s.kernel_time_ns),
      Percent(s.no_launch_ns, s.kernel_time_ns));
  const std::string skipped = s.cpu_events_without_times == 0
                                  ? ""
                                  : fmt::format("; {} CPU events skipped (ts or dur not a number)",
                                                Thousands(s.cpu_events_without_times));
  return fmt::format("{}{}: {} [{}], {} kernels, {:.3f} ms kernel time; {}{}  ({})", Bullet("  "),
                     Label(side), GpuText(p), PlatformName(p.platform), Thousands(s.kernels),
                     Millis(s.kernel_time_ns), linked, skipped, Code(p.path));
}

template <typename Keep>
void OpsPage::OpRows(const std::string& title, Keep keep) {
  const std::string& a = Label(Side::kTrace1);
  const std::string& b = Label(Side::kTrace2);
  Heading(fmt::format("{} ({} - {}, kernel time)", title, a, b));
  if (markdown_) {
    Line(
        fmt::format("| op | scope | n | {} us | {} us | delta us | ratio | {} kernels | {} "
                    "kernels | {} achieved | {} achieved |",
                    a, b, a, b, a, b));
    Line("|---|---|---:|---:|---:|---:|---:|---|---|---|---|");
  }
  std::vector<const OpRow*> rows;
  for (const OpRow& row : ops_.ops) {
    // Ops that launched nothing on either side (aten::empty, views) have nothing to compare.
    if (!keep(row) ||
        (row.sides[Side::kTrace1].time_ns == 0 && row.sides[Side::kTrace2].time_ns == 0)) {
      continue;
    }
    if (rows.size() == context_.top) break;
    rows.push_back(&row);
  }
  std::vector<std::string> scopes;
  for (const OpRow* row : rows) scopes.push_back(row->scope);
  const std::map<std::string, std::string> scope_text = DistinctShortScopes(scopes);
  for (const OpRow* shown_row : rows) {
    const OpRow& row = *shown_row;
    const OpSide& x = row.sides[Side::kTrace1];
    const OpSide& y = row.sides[Side::kTrace2];
    const std::optional<double> r = TimeRatio(row.sides);
    const std::string ratio = r ? RatioText(*r) : "-";
    if (markdown_) {
      Line(fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |", row.op,
                       scope_text.at(row.scope), row.instances, MicrosText(x.time_ns),
                       MicrosText(y.time_ns), SignedMicrosText(row.delta_ns()), ratio,
                       KernelList(x.kernels, context_.full_names),
                       KernelList(y.kernels, context_.full_names),
                       AchievedText(row, Side::kTrace1, ops_.traces[Side::kTrace1].peak),
                       AchievedText(row, Side::kTrace2, ops_.traces[Side::kTrace2].peak)));
      continue;
    }
    Line(fmt::format("  {}  {}  x{}: {} us vs {} us ({} us, {})", row.op,
                     row.scope.empty() ? "(no module)" : scope_text.at(row.scope), row.instances,
                     MicrosText(x.time_ns), MicrosText(y.time_ns), SignedMicrosText(row.delta_ns()),
                     ratio));
    for (Side side : kSides) {
      const std::string achieved = AchievedText(row, side, ops_.traces[side].peak);
      Line(fmt::format("      {}: {}{}", Label(side),
                       KernelList(row.sides[side].kernels, context_.full_names),
                       achieved.empty() ? "" : " -- " + achieved));
    }
  }
  if (rows.empty()) Line(markdown_ ? "| (none) | | | | | | | | | | |" : "  (none)");
}

void OpsPage::Instances() {
  Heading("Instances that differ most");
  if (ops_.top_instances.empty()) Line(markdown_ ? "(none)" : "  (none)");
  for (const MatchedInstance& m : ops_.top_instances) {
    const std::string step = m.step == kNoStep ? "outside steps" : fmt::format("step {}", m.step);
    Line(fmt::format("{}{} #{} ({}){}: {} us vs {} us ({} us)", Bullet("  "), Code(m.op), m.index,
                     step, m.scope.empty() ? "" : " under " + ShortScope(m.scope),
                     MicrosText(m.sides[Side::kTrace1].time_ns),
                     MicrosText(m.sides[Side::kTrace2].time_ns), SignedMicrosText(m.delta_ns())));
    for (Side side : kSides) {
      Line(fmt::format("{}{}{}: {}", SubBullet(), Label(side),
                       m.graph[side] ? " (graph replay)" : "",
                       KernelList(m.sides[side].kernels, context_.full_names)));
    }
    const auto& types = m.types;
    if (!types[Side::kTrace1].empty() && !types[Side::kTrace2].empty()) {
      Line(fmt::format("{}kernel types: {}", SubBullet(),
                       AlignedTypes(types[Side::kTrace1], types[Side::kTrace2],
                                    Label(Side::kTrace1), Label(Side::kTrace2))));
    }
  }
}

void OpsPage::Groups() {
  Heading(fmt::format("Unmatched stretches ({} in all, the largest by kernel time)",
                      ops_.unmatched_groups.size()));
  const std::vector<const UnmatchedGroup*> groups = LargestUnmatchedGroups(ops_, context_.top);
  if (groups.empty()) Line(markdown_ ? "(none)" : "  (none)");
  for (const UnmatchedGroup* g : groups) {
    std::string sides;
    for (Side side : kSides) {
      std::string names;
      for (size_t i = 0; i < g->ops[side].size() && i < 4; ++i) {
        if (i > 0) names += ", ";
        names += g->ops[side][i];
      }
      if (g->op_count[side] > 4) names += fmt::format(", {} more", g->op_count[side] - 4);
      sides += fmt::format("{}{} [{}] {} us", side == Side::kTrace1 ? "" : " | ", Label(side),
                           names, MicrosText(g->sides[side].time_ns));
    }
    Line(fmt::format("{}{}{}: {}", Bullet("  "),
                     g->step == kNoStep ? "outside steps" : fmt::format("step {}", g->step),
                     g->scope.empty() ? "" : " under " + ShortScope(g->scope), sides));
  }
}

}  // namespace

std::string OpsText(const OpComparison& ops, const OpsContext& context, bool markdown) {
  return OpsPage(ops, context, markdown).Render();
}

}  // namespace tracefuse
