// `tracefuse breakdown --format csv`.
#include <string>

#include "fmt/format.h"
#include "report/breakdown/view.h"
#include "report/common/formatting.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/report/breakdown.h"

namespace tracefuse {

std::string BreakdownCsv(const TraceProfile& p, size_t top, const std::vector<CategoryWork>* work) {
  const int64_t total = KernelTimeNs(p);
  // With --by-op, a category's row also has its credited FLOPs and TFLOP/s (kernel rows: empty).
  const std::string_view work_columns = work ? ",flops,tflops_per_s" : "";
  const std::string_view no_work = work ? ",," : "";
  std::string out =
      StrCat("category,kernel,count,time_us,time_share,by_fallback_rule,by_op", work_columns, "\n");
  for (const CategoryBreakdown& c : Breakdown(p, top)) {
    const std::string cat = CsvField(p.category_name(c.category));
    std::string work_cells;
    if (work != nullptr) {
      const std::optional<double> tflops = CategoryTflops(work, c.category);
      work_cells = StrCat(",", (*work)[c.category].flops, ",", tflops ? CsvNumber(*tflops) : "");
    }
    out += fmt::format("{},,{},{},{},,{}\n", cat, c.count, MillisAsMicros(c.time_ns),
                       Share(c.time_ns, total), work_cells);
    for (const KernelShare& k : c.top) {
      out += fmt::format("{},{},{},{},{},{},{}{}\n", cat, CsvField(p.names[k.name]), k.count,
                         MillisAsMicros(k.time_ns), Share(k.time_ns, total),
                         ByFallbackRule(p, k.name) ? "true" : "false",
                         ByLaunchingOp(p, k.name) ? "true" : "false", no_work);
    }
  }
  return out;
}

}  // namespace tracefuse
