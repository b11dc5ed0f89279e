// Internal to the report stage: what the HTML reports share. Each report is one self-contained
// file: inline CSS and SVG, no script, and a Content-Security-Policy that forbids every request,
// so that a report attached to a bug opens anywhere, offline, and cannot phone home. Colours
// follow the reader's light or dark scheme; the layout prints.
#ifndef TRACEFUSE_SRC_REPORT_COMMON_HTML_H_
#define TRACEFUSE_SRC_REPORT_COMMON_HTML_H_

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "tracefuse/analyze/fusion.h"

namespace tracefuse {

// HtmlEscaped() is `text` with & < > " ' as character references: safe as element content and
// as a quoted attribute value.
std::string HtmlEscaped(std::string_view text);

// kCategoryColours is how many categories get a colour of their own (classes k0 ... k15); the
// rest share the neutral `k-rest`.
inline constexpr size_t kCategoryColours = 16;

// SideColourClass() is the CSS class of a side's colour: "s1", "s2".
inline const char* SideColourClass(Side side) { return side == Side::kTrace1 ? "s1" : "s2"; }

// CategoryColourClass() is the CSS class of the `rank`-th category: "k3", or "k-rest".
std::string CategoryColourClass(size_t rank);

// HtmlDocument is an HTML report being written: the head (policy, stylesheet) at construction,
// markup appended by the report's page, the end of the document by Finish(). Arguments
// formatted into markup must be escaped by the caller (HtmlEscaped()).
class HtmlDocument {
 public:
  // `report` names the report in <html data-report=...> ("compare", "breakdown", "merge",
  // "ops"); `style` is CSS of that page's own, after the stylesheet every report shares.
  HtmlDocument(std::string_view report, std::string_view title, std::string_view style = {});

  void Append(std::string_view markup) { out_ += markup; }
  template <typename... Args>
  void Append(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(out_), format, std::forward<Args>(args)...);
  }

  std::string Finish() &&;

 private:
  std::string out_;
};

// Bar is one bar of a chart row: its value and its CSS colour class ("s1", "s2", "k3").
struct Bar {
  double value = 0;  // +inf draws a full-width bar
  std::string colour;
};

// BarRow is one labelled row of a chart: one bar, or two paired bars (one per side); `stacked`:
// its bars are the segments of one bar, end to end (a whole and its parts).
struct BarRow {
  std::string label;
  std::vector<Bar> bars;
  std::string value_text;  // shown after the longest bar
  std::string tooltip;     // the row's <title>: what a reader hovering it sees
  bool stacked = false;
};

// BarChartSvg() draws `rows` as horizontal bars on one scale (the largest finite value), as an
// inline SVG titled `title` for screen readers.
std::string BarChartSvg(const std::vector<BarRow>& rows, std::string_view title);

// KernelNameCode() is a kernel name as table text: <code>, cut to `shown_chars` characters with
// the name (up to 2,000 characters) on hover when cut, or `full_name` on hover where given (a
// family's example: the name that tells cutlass_80_... from sm90_...). Template arguments make
// names long, and their tail is what tells two apart. A line breaks only between the name's words
// (NameWithBreaks()).
std::string KernelNameCode(std::string_view name, size_t shown_chars,
                           std::string_view full_name = {});

// NameWithBreaks() is a kernel or op name escaped, with a <wbr> at each of its word boundaries:
// after '_', "::", ',', '<', '(', '/' and '.' (not in "..."), and between a lower-case letter or
// digit and an upper-case letter (DeviceRadix|Sort), never inside a word.
std::string NameWithBreaks(std::string_view name);

// SequenceCell is one kernel of an aligned sequence (a `.seq` strip: two rows of cells, one per
// side): its category's colour class, whether it is faded (`aside`: not what the strip is shown
// for) and what hovering it shows.
struct SequenceCell {
  std::string colour;
  bool aside = false;
  std::string title;  // plain text: SequenceColumnHtml() escapes it
};

// SequenceColumnHtml() is one column of a `.seq` strip: trace 1's cell above trace 2's, a dashed
// gap where a side has none (null), underlined unless the two sides run the same category there.
std::string SequenceColumnHtml(const PerSide<const SequenceCell*>& cells, bool same_type);

// ColourKey() is a legend entry: a swatch of `colour` and the escaped `label`.
std::string ColourKey(std::string_view colour, std::string_view label);

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_REPORT_COMMON_HTML_H_
