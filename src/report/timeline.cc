#include "tracefuse/report/timeline.h"

#include <iterator>
#include <optional>

#include "report/formatting.h"
#include "tracefuse/strings.h"

namespace tracefuse {
namespace {

const char* PathName(GpuTimelinePath path) {
  switch (path) {
    case GpuTimelinePath::kStreamed:
      return "streamed";
    case GpuTimelinePath::kCollected:
    case GpuTimelinePath::kReadAgain:  // not seen by reports: the pipeline reads it again
      return "collected";
  }
  return "";
}

std::optional<std::string> CommunicationCategory(const TraceProfile& p) {
  if (!p.classifier->rule_set().category_index("Communication")) return std::nullopt;
  return "Communication";
}

// ForEachFigure() calls f(name, nanoseconds) for each figure of `g` after the span, in the
// order of the JSON keys.
template <typename F>
void ForEachFigure(const GpuTimeFigures& g, F&& f) {
  f("busy", g.busy_ns);
  f("computation", g.computation_ns);
  f("communication", g.communication_ns);
  f("exposed_communication", g.exposed_communication_ns);
  f("memcpy", g.memcpy_ns);
  f("exposed_memcpy", g.exposed_memcpy_ns);
  f("idle", g.idle_ns());
}

}  // namespace

Json GpuTimelineJson(const TraceProfile& p) {
  const GpuTimeline& t = p.gpu_timeline;
  Json j = Json::object();
  j["path"] = PathName(t.path);
  j["collected_reason"] = nullptr;
  if (t.path != GpuTimelinePath::kStreamed) j["collected_reason"] = t.collected_reason;
  j["events_skipped"] = t.events_skipped;
  j["communication_category"] = nullptr;
  if (std::optional<std::string> c = CommunicationCategory(p)) j["communication_category"] = *c;
  Json devices = Json::array();
  for (const DeviceTimeline& d : t.devices) {
    Json device = Json::object();
    device["device"] = d.device;
    device["activities"] = d.figures.activities;
    device["span_us"] = Micros(d.figures.span_ns());
    ForEachFigure(d.figures,
                  [&](const char* name, int64_t ns) { device[StrCat(name, "_us")] = Micros(ns); });
    devices.push_back(std::move(device));
  }
  j["devices"] = std::move(devices);
  return j;
}

std::string GpuTimelineText(const TraceProfile& p) {
  const GpuTimeline& t = p.gpu_timeline;
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "{:<26} {}\n", key, value);
  };
  std::string head = StrCat(PathName(t.path), ", ", t.devices.size(),
                            t.devices.size() == 1 ? " device" : " devices");
  if (t.path != GpuTimelinePath::kStreamed) head += StrCat(" (", t.collected_reason, ")");
  if (!CommunicationCategory(p)) head += "; no Communication category: every kernel computes";
  line("gpu timeline", head);
  for (const DeviceTimeline& d : t.devices) {
    const GpuTimeFigures& g = d.figures;
    auto share = [&](int64_t ns) {
      return fmt::format("{:.1f} %", g.span_ns() > 0 ? 100.0 * ns / g.span_ns() : 0.0);
    };
    line(StrCat("  device ", d.device),
         fmt::format("span {:.3f} ms: busy {}, computation {}, communication {} ({} exposed), "
                     "memcpy {} ({} exposed), idle {}",
                     Micros(g.span_ns()) / 1000, share(g.busy_ns), share(g.computation_ns),
                     share(g.communication_ns), share(g.exposed_communication_ns),
                     share(g.memcpy_ns), share(g.exposed_memcpy_ns), share(g.idle_ns())));
  }
  if (t.events_skipped > 0) line("  gpu events skipped", Thousands(t.events_skipped));
  return out;
}

}  // namespace tracefuse
