// `tracefuse stats --format json`, with its "cpu_side" object under --by-op.
#include <vector>

#include "report/common/formatting.h"
#include "report/common/gpu_timeline_steps.h"
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

// CpuSideJson() is the "cpu_side" object: path ("streamed" or "any-order"), the reason for
// any-order, the events read again, the tree's top-level ops and steps, and what building it held
// by structure ("bytes", with its "total").
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

// StatsJsonTo() writes the whole document to `out`, handing it to `sink` (when not null) as it
// grows. The fields before the GPU timeline, and those after it, are small trees.
absl::Status StatsJsonTo(const TraceProfile& p, double elapsed, const CpuSideStats* cpu_side,
                         OutputFile* sink, std::string* out) {
  Json head;
  head["trace"] = p.path;
  head["format"] = std::string(TraceFormatName(p.metadata.format));
  head["platform"] = std::string(PlatformName(p.platform));
  head["platform_evidence"] = p.platform_evidence;
  head["gpu"] = p.gpu;
  head["bytes"] = p.input_bytes;
  head["file_bytes"] = p.file_bytes;
  head["compressed"] = p.compressed;
  head["events"] = p.events;
  Json cats = Json::object();
  for (const auto& [cat, count] : p.event_categories) cats[EventCategoryName(cat)] = count;
  head["events_by_category"] = cats;
  head["kernels"] = p.kernel_count;
  head["kernel_time_us"] = Micros(KernelTimeNs(p));
  head["distinct_kernel_names"] = p.names.size();
  head["correlation_groups"] = p.group_size.size();
  head["correlation_groups_50_plus"] = p.GroupsAtLeast(kDefaultMinGroupSize);
  head["kernels_without_correlation"] = p.kernels_without_correlation;
  head["kernels_with_bad_times"] = p.kernels_with_bad_times;
  head["kernels_without_name"] = p.kernels_without_name;
  head["whole_graph_replays"] = p.whole_graph_replays;
  head["whole_graph_replay_us"] = Micros(p.whole_graph_replay_ns);
  head["truncated"] = nullptr;
  if (p.truncated) {
    Json& t = head["truncated"];
    ForEachTruncationField(*p.truncated,
                           [&t](const char* key, const auto& value) { t[key] = value; });
  }
  head["rule_set"] = p.classifier->rule_set().name();
  head["categories"] = CategoriesJson(p);
  Json tail;
  tail["elapsed_seconds"] = elapsed;
  tail["gb_per_second"] = GbPerSecond(p, elapsed);
  tail["cpu_seconds"] = StageCpuJson(p.cpu_seconds);
  if (cpu_side != nullptr) tail["cpu_side"] = CpuSideJson(p, *cpu_side);

  JsonStream w(out, sink);
  w.BeginObject();
  w.Fields(head);
  w.Key("gpu_timeline");
  if (absl::Status written = WriteGpuTimelineJsonWithSteps(p, &w); !written.ok()) return written;
  w.Fields(tail);
  w.EndObject();
  *out += '\n';
  return w.MaybeFlush();
}

}  // namespace

absl::Status WriteStatsJson(const TraceProfile& p, double elapsed, const CpuSideStats* cpu_side,
                            OutputFile* sink) {
  std::string out;
  absl::Status written = StatsJsonTo(p, elapsed, cpu_side, sink, &out);
  return written.ok() ? sink->Append(out) : written;
}

std::string StatsJson(const TraceProfile& p, double elapsed, const CpuSideStats* cpu_side) {
  std::string out;
  StatsJsonTo(p, elapsed, cpu_side, nullptr, &out).IgnoreError();  // without a sink, nothing fails
  return out;
}

}  // namespace tracefuse
