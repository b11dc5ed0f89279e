// `tracefuse breakdown --format json`.
#include <string>
#include <vector>

#include "report/breakdown/view.h"
#include "report/common/formatting.h"
#include "report/common/py_json_writer.h"
#include "tracefuse/report/breakdown.h"
#include "tracefuse/report/stats.h"

namespace tracefuse {

namespace {

void KernelJson(const TraceProfile& p, const KernelShare& k, PyJsonWriter* w) {
  w->BeginObject();
  w->Field("name", p.names[k.name]);
  w->Field("count", k.count);
  w->Field("time_us", MillisAsMicros(k.time_ns));
  w->Field("by_fallback_rule", ByFallbackRule(p, k.name));
  w->Field("by_op", ByLaunchingOp(p, k.name));
  w->Key("launching_op");
  if (auto it = p.by_op.names.find(k.name); it != p.by_op.names.end()) {
    w->Value(it->second.op);
  } else {
    w->Null();
  }
  w->EndObject();
}

void CategoryJson(const TraceProfile& p, const CategoryBreakdown& c, int64_t total,
                  const std::vector<CategoryWork>* work, PyJsonWriter* w) {
  w->BeginObject();
  w->Field("category", p.category_name(c.category));
  w->Field("count", c.count);
  w->Field("time_us", MillisAsMicros(c.time_ns));
  w->Field("time_share", Share(c.time_ns, total));
  w->Field("avg_us", AverageMicros(c));
  if (work != nullptr) {
    w->Field("flops", (*work)[c.category].flops);
    w->Field("flops_time_us", MillisAsMicros((*work)[c.category].time_ns));
    w->Field("tflops_per_s", CategoryTflops(work, c.category));
  }
  w->Key("top_kernels");
  w->BeginArray();
  for (const KernelShare& k : c.top) KernelJson(p, k, w);
  w->EndArray();
  w->EndObject();
}

}  // namespace

std::string BreakdownJson(const TraceProfile& p, size_t top,
                          const std::vector<CategoryWork>* work) {
  const int64_t total = KernelTimeNs(p);
  const std::vector<CategoryBreakdown> cats = Breakdown(p, top);
  std::string out;
  PyJsonWriter w(&out, nullptr);
  w.BeginObject();
  w.Field("trace", p.path);
  w.Field("platform", PlatformName(p.platform));
  w.Field("gpu", p.gpu);
  w.Field("rule_set", p.classifier->rule_set().name());
  w.Field("kernels", p.kernel_count);
  w.Field("kernel_time_us", MillisAsMicros(total));
  WriteTruncation(p, &w);
  const CategoryTotals fallback = FallbackTotals(p);
  w.Field("fallback_rule_kernels", fallback.kernels);
  w.Field("fallback_rule_time_share", Share(fallback.time_ns, total));
  const CategoryTotals by_op = ByLaunchingOpTotals(p);
  w.Field("by_op_state", ByOpStateName(p.by_op.state));
  w.Field("by_op_kernels", by_op.kernels);
  w.Field("by_op_time_share", Share(by_op.time_ns, total));
  w.Key("categories");
  w.BeginArray();
  for (const CategoryBreakdown& c : cats) CategoryJson(p, c, total, work, &w);
  w.EndArray();
  w.Key("unclassified");
  w.BeginArray();
  const CategoryId other = UnclassifiedCategory(p);
  for (const CategoryBreakdown& c : cats)
    if (c.category == other)
      for (const KernelShare& k : c.top) KernelJson(p, k, &w);
  w.EndArray();
  w.EndObject();
  out += '\n';
  return out;
}

}  // namespace tracefuse
