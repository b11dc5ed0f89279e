// `tracefuse breakdown --format csv`.
#include <string>

#include "fmt/format.h"
#include "report/breakdown_view.h"
#include "report/formatting.h"
#include "tracefuse/report/breakdown.h"

namespace tracefuse {

std::string BreakdownCsv(const TraceProfile& p, size_t top) {
  const int64_t total = KernelTimeNs(p);
  std::string out = "category,kernel,count,time_us,time_share,by_fallback_rule\n";
  for (const CategoryBreakdown& c : Breakdown(p, top)) {
    const std::string cat = CsvField(p.category_name(c.category));
    out += fmt::format("{},,{},{},{},\n", cat, c.count, MillisAsMicros(c.time_ns),
                       Share(c.time_ns, total));
    for (const KernelShare& k : c.top) {
      out += fmt::format("{},{},{},{},{},{}\n", cat, CsvField(p.names[k.name]), k.count,
                         MillisAsMicros(k.time_ns), Share(k.time_ns, total),
                         ByFallbackRule(p, k.name) ? "true" : "false");
    }
  }
  return out;
}

}  // namespace tracefuse
