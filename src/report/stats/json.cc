#include <iterator>
#include <string_view>
#include <vector>

#include "report/common/formatting.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/report/gpu_timeline.h"
#include "tracefuse/report/stats.h"

namespace tracefuse {
namespace {

// The name `stats` gives events without a "cat".
std::string EventCategoryName(const std::string& cat) { return cat.empty() ? "(none)" : cat; }

double GbPerSecond(const TraceProfile& p, double elapsed) {
  return elapsed > 0 ? static_cast<double>(p.input_bytes) / 1e9 / elapsed : 0.0;
}

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

std::string TruncationText(const TraceProfile& profile) {
  if (!profile.truncated) return "";
  const TruncatedInput& t = *profile.truncated;
  const std::string compressed =
      profile.compressed ? fmt::format(" (uncompressed; the {} data ends after {} bytes)",
                                       profile.compression, profile.file_bytes)
                         : "";
  return fmt::format(
      "cut at byte {}{}, {}: read up to byte {}; dropped {} bytes, {} incomplete event{}",
      t.input_bytes, compressed, Describe(t), t.kept_bytes, t.dropped_bytes(), t.dropped_events(),
      t.dropped_events() == 1 ? "" : "s");
}

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

std::string StatsText(const TraceProfile& p, double elapsed) {
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "{:<26} {}\n", key, value);
  };
  line("trace", p.path);
  line("platform", StrCat(PlatformName(p.platform), " (", p.platform_evidence, ")"));
  line("gpu", p.gpu.empty() ? "(not named)" : p.gpu);
  line("bytes",
       StrCat(Thousands(p.input_bytes), " (", HumanBytes(p.input_bytes),
              p.compressed ? StrCat(", ", HumanBytes(p.file_bytes), " ", p.compression) : "", ")"));
  line("events", Thousands(p.events));
  for (const auto& [cat, count] : p.event_categories) {
    line(StrCat("  ", EventCategoryName(cat)), Thousands(count));
  }
  line("kernels", Thousands(p.kernel_count));
  line("kernel time", fmt::format("{:.3f} ms", Micros(KernelTimeNs(p)) / 1000));
  line("distinct kernel names", Thousands(p.names.size()));
  line("correlation groups",
       fmt::format("{} ({} with >= {} kernels)", Thousands(p.group_size.size()),
                   Thousands(p.GroupsAtLeast(kDefaultMinGroupSize)), kDefaultMinGroupSize));
  line("kernels w/o correlation", Thousands(p.kernels_without_correlation));
  if (p.kernels_without_name > 0) {
    line("kernels without a name", Thousands(p.kernels_without_name));
  }
  if (p.kernels_with_bad_times > 0) {
    line("kernels with bad ts/dur", Thousands(p.kernels_with_bad_times));
  }
  if (p.truncated) line("truncated", TruncationText(p));
  out += GpuTimelineText(p);
  line("elapsed", fmt::format("{:.3f} s ({:.2f} GB/s)", elapsed, GbPerSecond(p, elapsed)));
  return out;
}

namespace {

const char* CpuSidePathName(CpuSidePath path) {
  switch (path) {
    case CpuSidePath::kNotRead:
      return "not read";
    case CpuSidePath::kStreamed:
      return "streamed";
    case CpuSidePath::kAnyOrder:
      return "any-order";
  }
  return "";
}

// HeldBytes() calls f(name, bytes) for each structure of `held`, then for the total.
template <typename F>
void ForEachHeld(const CpuSideBytes& held, F&& f) {
  f("units", held.units);
  f("correlation_index", held.correlation_index);
  f("nesting", held.nesting);
  f("collected_events", held.collected_events);
  f("names", held.names);
  f("work", held.work);
  f("total", held.total());
}

}  // namespace

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

std::string CpuSideText(const TraceProfile& p, const CpuSideStats& c) {
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "{:<26} {}\n", key, value);
  };
  std::string path = CpuSidePathName(p.host.path);
  if (p.host.path == CpuSidePath::kAnyOrder) path += StrCat(" (", p.host.any_order_reason, ")");
  line("cpu side", path);
  if (p.host.events_read_again > 0) {
    line("  events read again", Thousands(p.host.events_read_again));
  }
  line("  top-level ops", Thousands(c.top_level_ops));
  line("  steps", Thousands(c.steps));
  ForEachHeld(c.held, [&](const char* name, uint64_t n) {
    std::string key = StrCat("  held: ", name);
    std::replace(key.begin(), key.end(), '_', ' ');
    line(key, HumanBytes(n));
  });
  return out;
}

}  // namespace tracefuse
