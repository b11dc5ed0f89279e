// `tracefuse merge --format text` and `--format markdown`: one screen (at most 60 lines of at
// most 100 columns) however many pairs, one layout in two markups. Every list is folded:
//   header       5 lines: directory, counts per state, manifest, each side's GPUs
//   ranks        per side, its straggler (the first, if several) or none, in up to 2 lines
//   categories   the 5 with the most kernel time on both sides (2 rows each: one per side)
//   recurring    the 5 opportunities found in the most complete pairs
//   by operator  only where pairs were compared --by-op: the share of kernel time linked to
//                ops per side, the 2 fusion differences in the most pairs, the 2 ops whose
//                summed times differ most (with it, the lists around show 3, 3, 4 and 3 rows)
//   pairs        8 complete pairs, those whose kernel time differs most between the sides
//                first (max(t1/t2, t2/t1), ties in pair order)
//   problems     7 pairs that are not complete: failed, interrupted, never finished, missing
// each followed by how many more there are and which format lists them all.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "report/common/formatting.h"
#include "report/merge/format.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/report/merge.h"

namespace tracefuse {
namespace {

constexpr size_t kMaxColumns = 100;
// How many rows each list shows: with the section "By operator" (14 lines at most), fewer.
struct Limits {
  size_t categories, recurring, pairs, problems;
};
constexpr Limits kLimits{5, 5, 8, 7};
constexpr Limits kLimitsBesideOps{3, 3, 4, 3};
constexpr size_t kMaxOpRows = 2;         // fusion differences, and ops
constexpr size_t kLabelWidth = 16;       // pair labels in tables and lists, cut beyond
constexpr size_t kShortLabelWidth = 12;  // beside a number
constexpr size_t kTypeWidth = 24;        // kernel types in lists

// Fit() cuts `s` to `width` bytes by eliding its middle: labels differ at the end
// ("llama-70b-tp8-run-3"), messages say what went wrong there.
std::string Fit(std::string_view s, size_t width) { return FitMiddle(s, width); }

// Counted() is "1 pair", "2 pairs".
std::string Counted(size_t n, std::string_view noun) {
  return StrCat(n, " ", noun, n == 1 ? "" : "s");
}

template <typename T>
std::string BothSides(const PerSide<T>& v) {
  return StrCat(v[Side::kTrace1], "/", v[Side::kTrace2]);
}

struct Column {
  std::string header;
  size_t width;  // at most
  bool right;    // aligned right (numbers)
};
using Row = std::vector<std::string>;

// MergePage lays a MergeSummary out section by section; text and markdown share every line
// and differ in markup only.
class MergePage {
 public:
  MergePage(const MergeSummary& summary, bool markdown)
      : s_(summary), markdown_(markdown), max_(s_.pairs_with_ops > 0 ? kLimitsBesideOps : kLimits) {
    for (const MergedPair& p : s_.pairs) {
      if (p.state == PairState::kComplete && p.has_report) complete_.push_back(&p);
    }
  }

  std::string Render() && {
    Header();
    Ranks();
    Categories();
    RecurringOpportunities();
    ByOperator();
    Pairs();
    Problems();
    return std::move(out_);
  }

 private:
  void Header();
  std::string GpuLine(Side side) const;
  std::string RuleSets() const;
  void Ranks();
  void Categories();
  void RecurringOpportunities();
  void ByOperator();
  std::string OpTimesLine(const OpTimes& o) const;
  void Pairs();
  Row PairRow(const MergedPair& p) const;
  void Problems();
  std::string ProblemText(const MergedPair& p) const;
  void Table(const std::vector<Column>& columns, const std::vector<Row>& rows);

  void Line(const std::string& line) {
    out_ += Fit(line, kMaxColumns);
    out_ += '\n';
  }
  // Wrapped() is a bullet in two lines when it does not fit in one: cut at the last space that
  // fits, the rest indented (in markdown, the bullet's continuation).
  void Wrapped(const std::string& line) {
    const size_t cut =
        line.size() <= kMaxColumns ? std::string::npos : line.rfind(' ', kMaxColumns);
    if (cut == std::string::npos || cut <= Bullet().size()) return Line(line);
    Line(line.substr(0, cut));
    Line("    " + line.substr(cut + 1));
  }
  // A section title after a blank line: "## title" in markdown, else the title underlined.
  void Heading(const std::string& title) {
    Line("");
    Line(markdown_ ? "## " + title : title);
    if (!markdown_) Line(std::string(std::min(title.size(), kMaxColumns), '-'));
  }
  std::string Bullet() const { return markdown_ ? "- " : "  "; }
  // A sentence on its own: a paragraph in markdown (after a table, a blank line first).
  void Note(const std::string& text, bool after_table) {
    if (markdown_ && after_table) Line("");
    Line((markdown_ ? "" : "  ") + text);
  }
  std::string Cell(const std::string& text, size_t width) const {
    std::string cell = Fit(text, width);
    if (!markdown_) return cell;
    std::string escaped;
    for (char c : cell) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
    return escaped;
  }

  const MergeSummary& s_;
  const bool markdown_;
  const Limits max_;
  std::vector<const MergedPair*> complete_;
  std::string out_;
};

// The directory, counts per state, the manifest, each side's GPUs.
void MergePage::Header() {
  Line(StrCat(markdown_ ? "# Merge summary: " : "MERGE SUMMARY: ", s_.dir));
  std::string counts =
      StrCat(Counted(s_.pairs.size(), "pair"), ": ", s_.Count(PairState::kComplete), " complete, ",
             s_.Count(PairState::kFailed), " failed, ", s_.Count(PairState::kInterrupted),
             " interrupted, ", s_.Count(PairState::kRunning), " never finished, ",
             // Without the manifest, pairs with no status file are unknown.
             s_.manifest_error.empty() ? StrCat(s_.Count(PairState::kMissing)) : "?", " missing");
  Line(Bullet() + counts);
  const std::string manifest = s_.manifest_error.empty()
                                   ? StrCat("manifest: ", s_.manifest_path, " (",
                                            Counted(s_.manifest_rows.value_or(0), "row"), ")")
                                   : StrCat("manifest: ", s_.manifest_error);
  Line(Bullet() + manifest);
  if (complete_.empty()) return;
  for (Side side : kSides) Line(Bullet() + GpuLine(side));
}

// "AMD: AMD Instinct MI300X (40 pairs)": a side's GPUs, most pairs first.
std::string MergePage::GpuLine(Side side) const {
  std::vector<std::pair<std::string, size_t>> gpus;
  for (const MergedPair* p : complete_) {
    const std::string& gpu = p->OnSide(side).gpu.empty() ? "(GPU not named)" : p->OnSide(side).gpu;
    auto it = std::find_if(gpus.begin(), gpus.end(), [&](const auto& g) { return g.first == gpu; });
    if (it == gpus.end()) {
      gpus.emplace_back(gpu, 1);
    } else {
      ++it->second;
    }
  }
  std::stable_sort(gpus.begin(), gpus.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string line = s_.side_names[side] + ": ";
  for (size_t i = 0; i < gpus.size(); ++i) {
    line += StrCat(i > 0 ? ", " : "", gpus[i].first, " (", Counted(gpus[i].second, "pair"), ")");
  }
  return line;
}

// The complete pairs' rule sets, in pair order.
std::string MergePage::RuleSets() const {
  std::vector<std::string> rule_sets;
  for (const MergedPair* p : complete_) {
    if (std::find(rule_sets.begin(), rule_sets.end(), p->rule_set) == rule_sets.end()) {
      rule_sets.push_back(p->rule_set);
    }
  }
  return fmt::format("{}", fmt::join(rule_sets, ", "));
}

// Each side's straggler, or why there is none.
void MergePage::Ranks() {
  Heading(fmt::format("Ranks (a straggler computes {} the median rank or more, and waits least)",
                      RatioText(1 + s_.straggler_threshold)));
  if (s_.ranks[Side::kTrace1].ranks.empty() && s_.ranks[Side::kTrace2].ranks.empty()) {
    return Note("No status file records a GPU timeline (an older tracefuse wrote them).", false);
  }
  for (Side side : kSides) {
    const std::vector<Straggler>& stragglers = s_.ranks[side].stragglers;
    if (stragglers.empty()) {
      Wrapped(Bullet() + NoStragglerText(s_, side));
      continue;
    }
    const std::string more =
        stragglers.size() > 1
            ? fmt::format(" (and {} more: see --format json)", stragglers.size() - 1)
            : "";
    const Straggler& first = stragglers.front();
    Wrapped(Bullet() + StragglerText(s_, side, first, Fit(first.pair, kLabelWidth)) + more);
  }
}

// Sum, median, min and max of the categories with the most kernel time, one row per side.
void MergePage::Categories() {
  Heading(fmt::format("Kernel time per category (ms over {}{})",
                      Counted(complete_.size(), "complete pair"),
                      complete_.empty() ? "" : "; rule set " + RuleSets()));
  if (s_.categories.empty()) return Note("No complete pair with kernels.", false);
  const std::vector<Column> columns = {{"category", kLabelWidth, false},
                                       {"side", 8, false},
                                       {"sum", 10, true},
                                       {"median", 10, true},
                                       {"min (pair)", 22, false},
                                       {"max (pair)", 22, false}};
  auto at = [](double us, const std::string& pair) {
    return StrCat(MillisOfMicros(us), " ", Fit(pair, kShortLabelWidth));
  };
  std::vector<Row> rows;
  for (size_t i = 0; i < s_.categories.size() && i < max_.categories; ++i) {
    const CategorySummary& c = s_.categories[i];
    for (Side side : kSides) {
      const SideStats& st = c.sides[side];
      rows.push_back({side == Side::kTrace1 ? c.category : "", s_.side_names[side],
                      MillisOfMicros(st.sum_us), MillisOfMicros(st.median_us),
                      at(st.min_us, st.min_pair), at(st.max_us, st.max_pair)});
    }
  }
  Table(columns, rows);
  if (s_.categories.size() > max_.categories) {
    Note(fmt::format("... {} more categories: see --format json",
                     s_.categories.size() - max_.categories),
         true);
  }
}

// The opportunities found in the most complete pairs.
void MergePage::RecurringOpportunities() {
  Heading(fmt::format("Recurring fusion opportunities (of {})",
                      Counted(complete_.size(), "complete pair")));
  if (s_.recurring.empty()) return Note("None.", false);
  size_t width = 0;
  for (const RecurringOpportunity& r : s_.recurring) width = std::max(width, r.kernel_type.size());
  width = std::min(width, kTypeWidth);
  for (size_t i = 0; i < s_.recurring.size() && i < max_.recurring; ++i) {
    const RecurringOpportunity& r = s_.recurring[i];
    Line(fmt::format("{}{:<{}}  fused by {} in {}, median ratio {}", Bullet(),
                     Fit(r.kernel_type, width), width, s_.side_names[r.fused_by],
                     Counted(r.pairs.size(), "pair"), RatioText(r.median_ratio)));
  }
  if (s_.recurring.size() > max_.recurring) {
    Line(fmt::format("{}... and {} more: see --format json", Bullet(),
                     s_.recurring.size() - max_.recurring));
  }
}

// The op-level findings of the pairs compared --by-op; nothing for a batch without them.
void MergePage::ByOperator() {
  if (s_.pairs_with_ops == 0) return;
  Heading(fmt::format("By operator (over {} compared --by-op)",
                      Counted(s_.pairs_with_ops, "complete pair")));
  Wrapped(StrCat(Bullet(), "kernel time linked to ops: ", LinkedShareText(s_, Side::kTrace1), "; ",
                 LinkedShareText(s_, Side::kTrace2)));
  const size_t differences = s_.fusion_differences.size();
  Line(fmt::format(
      "{}fusion differences: {}", Bullet(),
      differences == 0 ? std::string("none") : StrCat(differences, ", in the most pairs first")));
  for (size_t i = 0; i < differences && i < kMaxOpRows; ++i) {
    const OpFusionDifference& d = s_.fusion_differences[i];
    Wrapped(StrCat(Bullet(), "  ", FusionDifferenceText(s_, d, 32)));
    const std::string fused = FusedKernelText(s_, d, kMaxColumns - 6);
    // Markdown: a continuation of the item, as Wrapped()'s second line is.
    if (!fused.empty()) Line(StrCat(markdown_ ? "" : Bullet(), "    ", fused));
  }
  if (differences > kMaxOpRows) {
    Line(
        fmt::format("{}  ... and {} more: see --format json, or csv --csv-table "
                    "fusion_differences",
                    Bullet(), differences - kMaxOpRows));
  }
  Line(StrCat(Bullet(), "ops whose summed times differ most (", s_.side_names[Side::kTrace1], " / ",
              s_.side_names[Side::kTrace2], "):", s_.ops.empty() ? " none" : ""));
  for (size_t i = 0; i < s_.ops.size() && i < kMaxOpRows; ++i) Line(OpTimesLine(s_.ops[i]));
}

// OpTimesLine() is an op's time on both sides over the pairs in one line, the op and its scope
// cut to what the numbers leave: "aten::linear under .../Linear: 3.294 / 1.949 ms (AMD +1.345
// ms) in 8 pairs".
std::string MergePage::OpTimesLine(const OpTimes& o) const {
  const Side slower = o.DeltaUs() >= 0 ? Side::kTrace1 : Side::kTrace2;
  const std::string numbers =
      StrCat(": ", MillisOfMicros(o.time_us[Side::kTrace1]), " / ",
             MillisOfMicros(o.time_us[Side::kTrace2]), " ms (", s_.side_names[slower], " +",
             MillisOfMicros(std::abs(o.DeltaUs())), " ms) in ", Counted(o.pairs, "pair"));
  const std::string start = Bullet() + "  ";
  const size_t room = kMaxColumns - std::min(kMaxColumns - 24, start.size() + numbers.size());
  const std::string op = Fit(o.op, room / 2);
  const std::string where =
      o.scope.empty() ? op : StrCat(op, " under ", Fit(o.scope, room - op.size() - 7));
  return StrCat(start, Fit(where, room), numbers);
}

// The complete pairs whose kernel time differs most between the sides.
void MergePage::Pairs() {
  std::vector<const MergedPair*> shown = ByDisparity(s_);
  if (shown.size() > max_.pairs) shown.resize(max_.pairs);
  Heading(fmt::format("Pairs ({} of {} complete, largest kernel-time ratio either way first)",
                      shown.size(), complete_.size()));
  if (shown.empty()) return Note("No complete pair.", false);
  const std::vector<Column> columns = {{"pair", kLabelWidth, false},
                                       {"platforms", 15, false},
                                       {"kernels", 19, true},
                                       {"kernel ms", 21, true},
                                       {"t1/t2", 7, true},
                                       {"groups", 9, true},
                                       {"top opportunity", kMaxColumns, false}};
  std::vector<Row> rows;
  for (const MergedPair* p : shown) rows.push_back(PairRow(*p));
  Table(columns, rows);
  if (complete_.size() > shown.size()) {
    Note(fmt::format("... {} more pairs: see --format csv/json", complete_.size() - shown.size()),
         true);
  }
}

Row MergePage::PairRow(const MergedPair& p) const {
  PerSide<std::string> platforms, kernels, ms;
  for (Side s : kSides) {
    platforms[s] = p.traces[s].platform;
    kernels[s] = Thousands(p.traces[s].kernels);
    ms[s] = MillisOfMicros(p.traces[s].kernel_time_us);
  }
  return {p.label,
          BothSides(platforms),
          BothSides(kernels),
          BothSides(ms),
          RatioText(p.KernelTimeRatio()),
          Thousands(p.matched_groups),
          TopOpportunityText(p)};
}

// The pairs that are not complete, and why.
void MergePage::Problems() {
  const std::vector<const MergedPair*> problems = ProblemPairs(s_);
  Heading(fmt::format("Problems ({})", Counted(problems.size(), "pair")));
  if (problems.empty()) return Note("None: every pair is complete.", false);
  size_t width = 0;
  for (const MergedPair* p : problems) width = std::max(width, p->label.size());
  width = std::min(width, kLabelWidth);
  for (size_t i = 0; i < problems.size() && i < max_.problems; ++i) {
    const std::string start =
        fmt::format("{}{:<{}}  ", Bullet(), Fit(problems[i]->label, width), width);
    Line(start + Fit(ProblemText(*problems[i]), kMaxColumns - start.size()));
  }
  if (problems.size() > max_.problems) {
    Line(fmt::format("{}... and {} more: see --format csv/json", Bullet(),
                     problems.size() - max_.problems));
  }
}

std::string MergePage::ProblemText(const MergedPair& p) const {
  const std::string exit_code = p.exit_code ? StrCat(" (exit ", *p.exit_code, ")") : "";
  const std::string error = p.error.empty() ? "(no error recorded)" : p.error;
  switch (p.state) {
    case PairState::kRunning: {
      std::string since = p.started_at.empty() ? "" : " since " + p.started_at;
      if (!p.host.empty()) since += " on " + p.host;
      return StrCat("never finished: status still running", since, " (killed?)");
    }
    case PairState::kMissing:
      return "missing: " + error;
    case PairState::kInterrupted:
      return StrCat("interrupted", exit_code, ": ", error);
    default:
      return StrCat("failed", exit_code, ": ", error);
  }
}

// A table: in text, columns padded to their widest cell (cut at the column's width); in
// markdown, a pipe table.
void MergePage::Table(const std::vector<Column>& columns, const std::vector<Row>& rows) {
  std::vector<size_t> widths;
  for (const Column& c : columns) widths.push_back(std::min(c.header.size(), c.width));
  for (const Row& row : rows) {
    for (size_t i = 0; i < columns.size(); ++i) {
      widths[i] = std::max(widths[i], std::min(row[i].size(), columns[i].width));
    }
  }
  auto render = [&](const Row& row) {
    std::string line = markdown_ ? "|" : "";
    for (size_t i = 0; i < columns.size(); ++i) {
      const bool last = i + 1 == columns.size();
      // The last cell has what is left of the line.
      const size_t used = std::min(kMaxColumns, line.size() + (markdown_ ? 3 : 2));
      const size_t width = last ? std::min(widths[i], kMaxColumns - used) : widths[i];
      const std::string cell = Cell(row[i], width);
      if (markdown_) {
        line += StrCat(" ", cell, " |");
      } else {
        line += columns[i].right ? fmt::format("  {:>{}}", cell, width)
                                 : fmt::format("  {:<{}}", cell, last ? 0 : width);
      }
    }
    Line(line);
  };
  Row header;
  for (const Column& c : columns) header.push_back(c.header);
  render(header);
  if (markdown_) {
    std::string rule = "|";
    for (const Column& c : columns) rule += c.right ? "---:|" : "---|";
    Line(rule);
  }
  for (const Row& row : rows) render(row);
}

}  // namespace

std::string MergeText(const MergeSummary& summary, bool markdown) {
  return MergePage(summary, markdown).Render();
}

}  // namespace tracefuse
