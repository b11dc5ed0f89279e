// `tracefuse stats --format json`, with its "cpu_side" object under --by-op.
#include <vector>

#include "report/common/formatting.h"
#include "report/stats/fields.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/report/gpu_timeline.h"
#include "tracefuse/report/stats.h"

namespace tracefuse {
namespace {

// Kernels and time of each category that has kernels, in the rule set's order.
Json CategoriesJson(const TraceProfile& p) {
  Json per = Json::array();
  std::vector<CategoryTotals> totals = p.PerCategory();
  for (CategoryId c : CategoryIds(totals.size())) {
    if (totals[c].kernels == 0) continue;
    per.push_back(Json{{"category", p.category_name(c)},
                       {"kernels", totals[c].kernels},
                       {"time_us", Micros(totals[c].time_ns)}});
  }
  return per;
}

// StageCpuJson() is the per-stage accounting: CPU seconds by stage, which stages ran serially,
// and the serial share of the total (Amdahl's ceiling on the speed-up is total / serial).
Json StageCpuJson(const StageCpuSeconds& cpu) {
  Json j = Json::object();
  Json serial = Json::array();
  cpu.ForEach([&](const char* stage, double seconds, bool is_serial) {
    j[stage] = seconds;
    if (is_serial) serial.push_back(stage);
  });
  j["serial_stages"] = serial;
  j["serial_share"] = cpu.serial_share();
  return j;
}

}  // namespace

Json StatsJson(const TraceProfile& p, double elapsed) {
  Json j;
  j["trace"] = p.path;
  j["platform"] = std::string(PlatformName(p.platform));
  j["platform_evidence"] = p.platform_evidence;
  j["gpu"] = p.gpu;
  j["bytes"] = p.input_bytes;
  j["file_bytes"] = p.file_bytes;
  j["compressed"] = p.compressed;
  j["events"] = p.events;
  Json cats = Json::object();
  for (const auto& [cat, count] : p.event_categories) cats[EventCategoryName(cat)] = count;
  j["events_by_category"] = cats;
  j["kernels"] = p.kernel_count;
  j["kernel_time_us"] = Micros(KernelTimeNs(p));
  j["distinct_kernel_names"] = p.names.size();
  j["correlation_groups"] = p.group_size.size();
  j["correlation_groups_50_plus"] = p.GroupsAtLeast(kDefaultMinGroupSize);
  j["kernels_without_correlation"] = p.kernels_without_correlation;
  j["kernels_with_bad_times"] = p.kernels_with_bad_times;
  j["kernels_without_name"] = p.kernels_without_name;
  j["truncated"] = nullptr;
  if (p.truncated) {
    Json& t = j["truncated"];
    ForEachTruncationField(*p.truncated,
                           [&t](const char* key, const auto& value) { t[key] = value; });
  }
  j["rule_set"] = p.classifier->rule_set().name();
  j["categories"] = CategoriesJson(p);
  j["gpu_timeline"] = GpuTimelineJson(p, /*each_step=*/true);
  j["elapsed_seconds"] = elapsed;
  j["gb_per_second"] = GbPerSecond(p, elapsed);
  j["cpu_seconds"] = StageCpuJson(p.cpu_seconds);
  return j;
}

Json CpuSideJson(const TraceProfile& p, const CpuSideStats& c) {
  Json j = Json::object();
  j["path"] = CpuSidePathName(p.host.path);
  j["any_order_reason"] = nullptr;
  if (p.host.path == CpuSidePath::kAnyOrder) j["any_order_reason"] = p.host.any_order_reason;
  j["events_read_again"] = p.host.events_read_again;
  j["top_level_ops"] = c.top_level_ops;
  j["steps"] = c.steps;
  Json bytes = Json::object();
  ForEachHeld(c.held, [&](const char* name, uint64_t n) { bytes[name] = n; });
  j["bytes"] = bytes;
  return j;
}

}  // namespace tracefuse
