// `tracefuse breakdown --format html`: one trace's kernel time per category as bars and a
// table, each category's top kernels, and the unclassified kernels, on one self-contained page
// (report/common/html.h).
#include "report/common/html.h"

#include <string>
#include <vector>

#include "fmt/format.h"
#include "report/breakdown/view.h"
#include "report/common/formatting.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/report/breakdown.h"
#include "tracefuse/report/gpu_timeline.h"
#include "tracefuse/report/stats.h"

namespace tracefuse {
namespace {

constexpr size_t kNameChars = 160;

class BreakdownHtmlPage {
 public:
  BreakdownHtmlPage(const TraceProfile& profile, size_t top, const std::vector<CategoryWork>* work)
      : p_(profile),
        work_(work),
        total_(KernelTimeNs(profile)),
        categories_(Breakdown(profile, top)),
        doc_("breakdown", StrCat("Kernel time breakdown: ", profile.path)) {}

  std::string Render() && {
    Header();
    Categories();
    TopKernels();
    Unclassified();
    return std::move(doc_).Finish();
  }

 private:
  void Header();
  void Categories();
  void TopKernels();
  void KernelTable(const CategoryBreakdown& c);
  void Unclassified();
  std::string TflopsCell(const CategoryBreakdown& c) const {
    if (work_ == nullptr) return "";
    const std::optional<double> tflops = CategoryTflops(work_, c.category);
    return tflops ? fmt::format("<td class=\"tflops n\">{}</td>", FlopRateCell(*tflops))
                  : "<td class=\"tflops n\"></td>";
  }

  const TraceProfile& p_;
  const std::vector<CategoryWork>* work_;  // --by-op; nullptr without
  const int64_t total_;
  const std::vector<CategoryBreakdown> categories_;  // by time, descending: the colour ranks
  HtmlDocument doc_;
};

void BreakdownHtmlPage::Header() {
  doc_.Append(
      "<header>\n<h1>Kernel time breakdown</h1>\n<table class=\"traces\">\n"
      "<tr><th>file</th><td class=\"file\"><code>{}</code></td></tr>\n"
      "<tr><th>platform</th><td class=\"platform\">{} <span class=\"muted\">({})</span></td></tr>\n"
      "<tr><th>GPU</th><td class=\"gpu\">{}</td></tr>\n"
      "<tr><th>kernels</th><td class=\"kernels\">{}</td></tr>\n"
      "<tr><th>kernel time</th><td class=\"kernel-time\">{} ms</td></tr>\n"
      "<tr><th>rule set</th><td>{}</td></tr>\n</table>\n",
      HtmlEscaped(p_.path), PlatformName(p_.platform), HtmlEscaped(p_.platform_evidence),
      HtmlEscaped(GpuText(p_)), Thousands(p_.kernel_count), MillisText(total_),
      HtmlEscaped(p_.classifier->rule_set().name()));
  if (const TraceIntegrity integrity = SummedIntegrity(p_.gpu_timeline); !integrity.clean()) {
    doc_.Append("<p class=\"warning\">integrity: {}</p>\n", HtmlEscaped(IntegrityText(integrity)));
  }
  if (p_.truncated) {
    doc_.Append("<p class=\"note\">truncated: {}</p>\n", HtmlEscaped(TruncationText(p_)));
  }
  for (const std::string& note :
       {FallbackSentence(p_, total_), ByLaunchingOpSentence(p_, total_)}) {
    if (!note.empty()) doc_.Append("<p class=\"note\">{}</p>\n", HtmlEscaped(note));
  }
  doc_.Append("</header>\n");
}

void BreakdownHtmlPage::Categories() {
  std::vector<BarRow> rows;
  for (size_t i = 0; i < categories_.size(); ++i) {
    const CategoryBreakdown& c = categories_[i];
    const std::string& name = p_.category_name(c.category);
    const double share = 100 * Share(c.time_ns, total_);
    rows.push_back(
        {name,
         {{Millis(c.time_ns), CategoryColourClass(i)}},
         fmt::format("{} ms ({:.1f}%)", MillisText(c.time_ns), share),
         fmt::format("{}\n{} kernels, {} ms, {:.1f}% of kernel time, {:.2f} us each", name,
                     Thousands(c.count), MillisText(c.time_ns), share, AverageMicros(c))});
  }
  doc_.Append(
      "<section id=\"categories\">\n<h2>Kernel time per category</h2>\n"
      "{}<table class=\"categories\">\n<tr><th>category</th>"
      "<th class=\"n\">kernels</th><th class=\"n\">time ms</th><th class=\"n\">share</th>"
      "<th class=\"n\">avg us</th>{}</tr>\n",
      BarChartSvg(rows, "Kernel time per category"),
      work_ ? "<th class=\"n\" title=\"the FLOPs of the ops whose kernel time is mostly in the "
              "category, over that time\">TFLOP/s</th>"
            : "");
  for (size_t i = 0; i < categories_.size(); ++i) {
    const CategoryBreakdown& c = categories_[i];
    doc_.Append(
        "<tr data-category=\"{0}\"><th><span class=\"key {1}\"></span>{0}</th>"
        "<td class=\"count n\">{2}</td><td class=\"time n\">{3}</td>"
        "<td class=\"share n\">{4:.1f}%</td><td class=\"avg n\">{5:.2f}</td>{6}</tr>\n",
        HtmlEscaped(p_.category_name(c.category)), CategoryColourClass(i), Thousands(c.count),
        MillisText(c.time_ns), 100 * Share(c.time_ns, total_), AverageMicros(c), TflopsCell(c));
  }
  doc_.Append("</table>\n</section>\n");
}

void BreakdownHtmlPage::TopKernels() {
  doc_.Append("<section id=\"drilldown\">\n<h2>Top kernels per category</h2>\n");
  for (size_t i = 0; i < categories_.size(); ++i) {
    const CategoryBreakdown& c = categories_[i];
    doc_.Append(
        "<details data-category=\"{0}\"{1}><summary><span class=\"key {2}\"></span><b>{0}</b> "
        "&middot; {3} ms in {4} kernels</summary>\n",
        HtmlEscaped(p_.category_name(c.category)), i == 0 ? " open" : "", CategoryColourClass(i),
        MillisText(c.time_ns), Thousands(c.count));
    KernelTable(c);
    doc_.Append("</details>\n");
  }
  doc_.Append("</section>\n");
}

void BreakdownHtmlPage::KernelTable(const CategoryBreakdown& c) {
  doc_.Append(
      "<table>\n<tr><th>kernel</th><th class=\"n\">count</th><th class=\"n\">ms</th>"
      "<th class=\"n\">share</th></tr>\n");
  for (const KernelShare& k : c.top) {
    doc_.Append(
        "<tr><td>{}{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{:.1f}%</td></tr>\n",
        ClassificationMark(p_, k.name), KernelNameCode(p_.names[k.name], kNameChars),
        Thousands(k.count), MillisText(k.time_ns), 100 * Share(k.time_ns, total_));
  }
  doc_.Append("</table>\n");
}

// What no rule claimed: the names a rule file should cover first.
void BreakdownHtmlPage::Unclassified() {
  doc_.Append(
      "<section id=\"unclassified\">\n<h2>Unclassified kernels</h2>\n<p class=\"note\">What no "
      "rule of the set claims, by time: candidates for a rule file (tracefuse breakdown "
      "--suggest writes a starter).</p>\n");
  const CategoryId other = UnclassifiedCategory(p_);
  for (const CategoryBreakdown& c : categories_) {
    if (c.category == other) {
      KernelTable(c);
      doc_.Append("</section>\n");
      return;
    }
  }
  doc_.Append("<p>None: every kernel is classified.</p>\n</section>\n");
}

}  // namespace

std::string BreakdownHtml(const TraceProfile& profile, size_t top,
                          const std::vector<CategoryWork>* work) {
  return BreakdownHtmlPage(profile, top, work).Render();
}

}  // namespace tracefuse
