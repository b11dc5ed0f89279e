// `tracefuse breakdown --format text`.
#include <algorithm>
#include <iterator>
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

std::string BreakdownText(const TraceProfile& p, size_t top,
                          const std::vector<CategoryWork>* work) {
  const int64_t total = KernelTimeNs(p);
  const std::vector<CategoryBreakdown> cats = Breakdown(p, top);
  std::string out =
      fmt::format("{}: {} [{}], {} kernels, {:.3f} ms kernel time, rule set {}\n\n", p.path,
                  GpuText(p), PlatformName(p.platform), Thousands(p.kernel_count), Millis(total),
                  p.classifier->rule_set().name());
  if (p.truncated) out.insert(out.size() - 1, StrCat("truncated: ", TruncationText(p), "\n"));
  // Times that do not add up make every figure below doubtful: said before them.
  if (const TraceIntegrity integrity = SummedIntegrity(p.gpu_timeline); !integrity.clean()) {
    out.insert(out.size() - 1, StrCat("integrity: ", IntegrityText(integrity), "\n"));
  }
  size_t width = 8;
  for (const CategoryBreakdown& c : cats)
    width = std::max(width, p.category_name(c.category).size());
  fmt::format_to(std::back_inserter(out), "  {:<{}}  {:>10}  {:>12}  {:>7}  {:>10}{}\n", "category",
                 width, "kernels", "time ms", "share", "avg us", work ? "    TFLOP/s" : "");
  for (const CategoryBreakdown& c : cats) {
    const std::optional<double> tflops = CategoryTflops(work, c.category);
    fmt::format_to(std::back_inserter(out), "  {:<{}}  {:>10}  {:>12.3f}  {:>6.1f}%  {:>10.2f}{}\n",
                   p.category_name(c.category), width, Thousands(c.count), Millis(c.time_ns),
                   100 * Share(c.time_ns, total), AverageMicros(c),
                   tflops ? fmt::format("  {:>9}", FlopRateCell(*tflops)) : "");
  }
  if (work != nullptr) out += StrCat("  ", kTflopsNote, "\n");
  const CategoryId other = UnclassifiedCategory(p);
  for (const CategoryBreakdown& c : cats) {
    out += fmt::format("\n{}{}:\n", p.category_name(c.category),
                       c.category == other ? " (unclassified: candidates for a rule file)" : "");
    for (const KernelShare& k : c.top) {
      fmt::format_to(std::back_inserter(out), "  {:>12.3f} ms  {:>8}x  {}{}\n", Millis(k.time_ns),
                     Thousands(k.count), ClassificationMark(p, k.name),
                     Shorten(p.names[k.name], 120));
    }
  }
  for (const std::string& note : {FallbackSentence(p, total), ByLaunchingOpSentence(p, total)}) {
    if (!note.empty()) out += StrCat("\n", note, "\n");
  }
  return out;
}

}  // namespace tracefuse
