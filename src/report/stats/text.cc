// `tracefuse stats --format text`, one figure per line, with the CPU side under --by-op.
#include <algorithm>
#include <iterator>
#include <string_view>

#include "report/common/formatting.h"
#include "report/stats/fields.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/report/gpu_timeline.h"
#include "tracefuse/report/stats.h"

namespace tracefuse {

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
std::string StatsText(const TraceProfile& p, double elapsed) {
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "{:<26} {}\n", key, value);
  };
  line("trace", p.path);
  line("format", std::string(TraceFormatName(p.metadata.format)));
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
  if (p.whole_graph_replays > 0) {
    line("graph replays, whole",
         fmt::format("{} ({:.3f} ms): traced as one span each (nsys --cuda-graph-trace=graph), "
                     "their kernels not recorded nor counted; trace with "
                     "--cuda-graph-trace=node to see them",
                     Thousands(p.whole_graph_replays), Micros(p.whole_graph_replay_ns) / 1000));
  }
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
