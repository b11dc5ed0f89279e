#include "report/common/html.h"

#include <algorithm>
#include <cmath>

#include "report/common/formatting.h"
#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

// Nothing may be fetched: no script, font, image or frame from anywhere, the page itself
// included. Inline styles are the only allowance; images would be data: URLs.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'";

// One stylesheet for every report. Sides are s1 and s2 (orange and blue, told apart also by
// their order in each pair of bars); categories k0..k15 (Tableau 20's distinguishable hues).
constexpr std::string_view kStyle = R"(
:root{color-scheme:light dark;--bg:#fff;--fg:#1d2025;--muted:#5c636e;--line:#dde1e6;
--panel:#f4f6f8;--s1:#e8590c;--s2:#1c7ed6}
@media (prefers-color-scheme:dark){:root{--bg:#15171b;--fg:#e4e7eb;--muted:#9ba3ad;
--line:#353a42;--panel:#1e2126;--s1:#ff922b;--s2:#4dabf7}}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);
color:var(--fg);margin:0 auto;max-width:1240px;padding:20px 28px}
h1{font-size:22px;margin:0 0 12px}h2{font-size:17px;margin:32px 0 10px;padding-bottom:4px;
border-bottom:1px solid var(--line)}h3{font-size:15px;margin:20px 0 6px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:6px 0}
th,td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{font-weight:600;background:var(--panel)}.n{text-align:right;white-space:nowrap}
.muted,.note{color:var(--muted)}.categories th{white-space:nowrap}.note{margin:6px 0}
.warning{margin:6px 0;padding:4px 8px;border-left:3px solid var(--s1);background:var(--panel)}
code{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
.split{display:flex;flex-wrap:wrap;gap:20px 28px;align-items:flex-start}
.split>*{flex:1 1 480px;min-width:0}
.chart{width:100%;max-width:900px;height:auto}.chart text{fill:var(--fg);font-size:12px}
.chart .v{fill:var(--muted)}.chart .axis{stroke:var(--line)}
.s1{fill:var(--s1);background:var(--s1)}.s2{fill:var(--s2);background:var(--s2)}
.key{display:inline-block;width:11px;height:11px;border-radius:2px;margin:0 5px 0 12px;
vertical-align:-1px}.key:first-child{margin-left:0}
details{border:1px solid var(--line);border-radius:6px;padding:4px 12px;margin:6px 0}
summary{cursor:pointer;padding:2px 0}
ol.evidence{padding-left:22px}ol.evidence li{margin:4px 0}
.seq{display:flex;flex-wrap:wrap;gap:2px;margin:8px 0 4px}
.seq>span{display:flex;flex-direction:column;gap:2px;padding-bottom:2px}
.seq>span.diff{border-bottom:2px solid var(--fg)}
.seq b{display:block;width:14px;height:20px;border-radius:2px}
.seq b.gap{background:transparent;outline:1px dashed var(--muted);outline-offset:-1px}
.seq b.aside{opacity:.3}
.k0{fill:#4e79a7;background:#4e79a7}.k1{fill:#f28e2b;background:#f28e2b}
.k2{fill:#e15759;background:#e15759}.k3{fill:#76b7b2;background:#76b7b2}
.k4{fill:#59a14f;background:#59a14f}.k5{fill:#edc948;background:#edc948}
.k6{fill:#b07aa1;background:#b07aa1}.k7{fill:#ff9da7;background:#ff9da7}
.k8{fill:#9c755f;background:#9c755f}.k9{fill:#bab0ac;background:#bab0ac}
.k10{fill:#a0cbe8;background:#a0cbe8}.k11{fill:#ffbe7d;background:#ffbe7d}
.k12{fill:#8cd17d;background:#8cd17d}.k13{fill:#499894;background:#499894}
.k14{fill:#d37295;background:#d37295}.k15{fill:#b6992d;background:#b6992d}
.k-rest{fill:#79706e;background:#79706e}
@media print{body{max-width:none;padding:0;font-size:11px}h2{break-after:avoid}
details,tr,.chart{break-inside:avoid}}
)";

// Chart geometry, in SVG user units (pixels at full width).
constexpr double kChartWidth = 900;
constexpr double kLabelRight = 212;  // labels end here
constexpr double kBarLeft = 220;
constexpr double kBarWidth = 440;  // the largest finite value's length
constexpr double kBarHeight = 11;
constexpr double kBarGap = 2;  // between the bars of one row
constexpr double kRowGap = 9;
constexpr size_t kLabelChars = 30;

double LargestFinite(const std::vector<BarRow>& rows) {
  double largest = 0;
  for (const BarRow& row : rows) {
    double total = 0;
    for (const Bar& bar : row.bars) {
      if (!std::isfinite(bar.value)) continue;
      largest = std::max(largest, bar.value);
      total += bar.value;
    }
    if (row.stacked) largest = std::max(largest, total);
  }
  return largest;
}

// The length of a bar of `value` on a scale where `largest` is kBarWidth; a non-zero value is
// at least one pixel long, so that it shows.
double BarLength(double value, double largest) {
  if (value <= 0) return 0;
  if (!std::isfinite(value) || largest <= 0) return kBarWidth;
  return std::max(1.0, kBarWidth * std::min(1.0, value / largest));
}

std::string ChartLabel(const std::string& label) {
  return HtmlEscaped(Shorten(label, kLabelChars));
}

}  // namespace

std::string HtmlEscaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string CategoryColourClass(size_t rank) {
  return rank < kCategoryColours ? StrCat("k", rank) : "k-rest";
}

HtmlDocument::HtmlDocument(std::string_view report, std::string_view title,
                           std::string_view style) {
  Append(
      "<!DOCTYPE html>\n<html lang=\"en\" data-report=\"{}\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"tracefuse\">\n<title>{}</title>\n<style>{}{}</style>\n"
      "</head>\n<body>\n",
      HtmlEscaped(report), kContentSecurityPolicy, HtmlEscaped(title), kStyle, style);
}

std::string HtmlDocument::Finish() && {
  out_ += "</body>\n</html>\n";
  return std::move(out_);
}

std::string BarChartSvg(const std::vector<BarRow>& rows, std::string_view title) {
  const double largest = LargestFinite(rows);
  std::string body;
  double y = kRowGap / 2;
  for (const BarRow& row : rows) {
    const double bars = row.stacked ? 1.0 : static_cast<double>(row.bars.size());
    const double height = bars * kBarHeight + (bars - 1) * kBarGap;
    fmt::format_to(std::back_inserter(body),
                   "<g><title>{}</title><text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>",
                   HtmlEscaped(row.tooltip), kLabelRight, y + height / 2 + 4,
                   ChartLabel(row.label));
    double longest = 0;
    for (size_t i = 0; i < row.bars.size(); ++i) {
      const double length = BarLength(row.bars[i].value, largest);
      // A stacked segment starts where the one before it ended.
      const std::string x =
          row.stacked ? fmt::format("{:.1f}", kBarLeft + longest) : fmt::format("{}", kBarLeft);
      longest = row.stacked ? longest + length : std::max(longest, length);
      fmt::format_to(std::back_inserter(body),
                     "<rect class=\"{}\" x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\"/>",
                     row.bars[i].colour, x,
                     y + (row.stacked ? 0.0 : double(i) * (kBarHeight + kBarGap)), length,
                     kBarHeight);
    }
    fmt::format_to(std::back_inserter(body),
                   "<text class=\"v\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text></g>\n",
                   kBarLeft + longest + 6, y + height / 2 + 4, HtmlEscaped(row.value_text));
    y += height + kRowGap;
  }
  return fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {0} {1:.0f}\" "
      "width=\"{0}\" height=\"{1:.0f}\" role=\"img\" aria-label=\"{2}\">\n"
      "<line class=\"axis\" x1=\"{3}\" y1=\"0\" x2=\"{3}\" y2=\"{1:.0f}\"/>\n{4}</svg>\n",
      kChartWidth, y - kRowGap / 2, HtmlEscaped(title), kBarLeft, body);
}

std::string NameWithBreaks(std::string_view name) {
  auto lower = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  std::string out;
  size_t word = 0;  // where the current word begins
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool dot = c == '.' && name[i + 1 < name.size() ? i + 1 : i] != '.' &&
                     (i == 0 || name[i - 1] != '.');  // not in "..."
    const bool after = c == '_' || c == ',' || c == '<' || c == '(' || c == '/' || dot ||
                       (c == ':' && i > 0 && name[i - 1] == ':');
    const bool before = i + 1 < name.size() && lower(c) && upper(name[i + 1]);
    if ((after || before) && i + 1 < name.size()) {
      out += HtmlEscaped(name.substr(word, i + 1 - word));
      out += "<wbr>";
      word = i + 1;
    }
  }
  return out + HtmlEscaped(name.substr(word));
}

std::string KernelNameCode(std::string_view name, size_t shown_chars, std::string_view full_name) {
  constexpr size_t kTitleChars = 2000;
  const std::string shown = Shorten(name, shown_chars);
  const std::string_view title = !full_name.empty() ? full_name : name;
  if (shown == name && title == name) {
    return StrCat("<code>", NameWithBreaks(name), "</code>");
  }
  return StrCat("<code title=\"", HtmlEscaped(Shorten(title, kTitleChars)), "\">",
                NameWithBreaks(shown), "</code>");
}

std::string SequenceColumnHtml(const PerSide<const SequenceCell*>& cells, bool same_type) {
  std::string out = same_type ? "<span>" : "<span class=\"diff\">";
  for (Side s : kSides) {
    const SequenceCell* cell = cells[s];
    if (cell == nullptr) {
      out += "<b class=\"gap\"></b>";
      continue;
    }
    out += StrCat("<b class=\"", cell->colour, cell->aside ? " aside" : "", "\" title=\"",
                  HtmlEscaped(cell->title), "\"></b>");
  }
  out += "</span>";
  return out;
}

std::string ColourKey(std::string_view colour, std::string_view label) {
  return fmt::format("<span class=\"key {}\"></span>{}", colour, HtmlEscaped(label));
}

}  // namespace tracefuse
