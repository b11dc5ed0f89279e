#include "tracefuse/report/gpu_timeline.h"

#include <iterator>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "report/common/formatting.h"
#include "report/common/gpu_timeline_steps.h"
#include "report/common/html.h"
#include "tracefuse/base/strings.h"

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

// FiguresJson() adds "activities", "span_us" and the figures of `g` to `j`.
void AddFiguresJson(const GpuTimeFigures& g, Json* j) {
  (*j)["activities"] = g.activities;
  (*j)["span_us"] = Micros(g.span_ns());
  ForEachFigure(g, [&](const char* name, int64_t ns) { (*j)[StrCat(name, "_us")] = Micros(ns); });
}

Json StepSpansJson(const GpuTimeline& t) {
  const StepSpans spans = StepSpansOf(t);
  Json j = Json::object();
  j["count"] = spans.steps;
  j["skipped"] = t.steps_skipped;
  j["with_activities"] = spans.with_activities;
  for (auto [key, ns] :
       {std::pair{"median_span_us", spans.median_ns}, std::pair{"min_span_us", spans.min_ns},
        std::pair{"max_span_us", spans.max_ns}}) {
    j[key] = nullptr;
    if (spans.with_activities > 0) j[key] = Micros(ns);
  }
  return j;
}

// CpuOpsJson() is IdleSplit::cpu_ops: [{"op", "us"}], null when the CPU side was not read.
Json CpuOpsJson(const std::optional<std::vector<CpuOpTime>>& cpu_ops) {
  if (!cpu_ops) return nullptr;
  Json j = Json::array();
  for (const CpuOpTime& op : *cpu_ops) j.push_back(Json{{"op", op.op}, {"us", Micros(op.ns)}});
  return j;
}

Json IdleJson(const IdleSplit& idle) {
  return Json{{"cpu_wait_us", Micros(idle.cpu_wait_ns)},
              {"launch_latency_us", Micros(idle.launch_latency_ns)},
              {"unattributed_us", Micros(idle.unattributed_ns)},
              {"gaps", idle.gaps},
              {"cpu_ops", CpuOpsJson(idle.cpu_ops)}};
}

Json IntegrityJson(const TraceIntegrity& t) {
  return Json{{"same_stream_overlaps", t.same_stream_overlaps},
              {"same_stream_overlap_us", Micros(t.same_stream_overlap_ns)},
              {"before_launch", t.before_launch},
              {"involved_us", Micros(t.involved_ns)},
              {"activity_us", Micros(t.activity_ns)}};
}

Json QuantilesJson(const Quantiles& q) {
  return Json{
      {"median", Micros(q.median_ns)}, {"p90", Micros(q.p90_ns)}, {"max", Micros(q.max_ns)}};
}

Json LaunchesJson(const std::vector<LaunchStats>& launches) {
  Json j = Json::array();
  for (const LaunchStats& l : launches) {
    j.push_back(Json{{"api", l.api},
                     {"count", l.count},
                     {"cpu_us", QuantilesJson(l.cpu)},
                     {"delay_us", QuantilesJson(l.delay)}});
  }
  return j;
}

}  // namespace

std::string IntegrityText(const TraceIntegrity& t) {
  const double share =
      t.activity_ns > 0 ? 100.0 * static_cast<double>(t.involved_ns) / t.activity_ns : 0.0;
  return fmt::format(
      "{} activities start before the earlier ones of their stream end ({} ms overlapped: "
      "programmatic dependent launch, or wrong times), {} start before their launch; {:.1f} % "
      "of the activity time",
      Thousands(t.same_stream_overlaps), MillisText(t.same_stream_overlap_ns),
      Thousands(t.before_launch), share);
}

Json GpuTimelineJson(const TraceProfile& p) {
  const GpuTimeline& t = p.gpu_timeline;
  Json j = Json::object();
  j["path"] = PathName(t.path);
  j["collected_reason"] = nullptr;
  if (t.path != GpuTimelinePath::kStreamed) j["collected_reason"] = t.collected_reason;
  j["events_skipped"] = t.events_skipped;
  j["communication_category"] = nullptr;
  if (std::optional<std::string> c = CommunicationCategory(p)) j["communication_category"] = *c;
  j["steps"] = StepSpansJson(t);
  Json devices = Json::array();
  for (const DeviceTimeline& d : t.devices) {
    Json device = Json::object();
    device["device"] = d.device;
    AddFiguresJson(d.figures, &device);
    device["idle"] = IdleJson(d.idle);
    device["launches"] = LaunchesJson(d.launches);
    device["integrity"] = IntegrityJson(d.integrity);
    devices.push_back(std::move(device));
  }
  j["devices"] = std::move(devices);
  j["idle"] = IdleJson(SummedIdle(t));
  j["launches"] = LaunchesJson(t.launches);
  j["integrity"] = IntegrityJson(SummedIntegrity(t));
  return j;
}

absl::Status WriteGpuTimelineJsonWithSteps(const TraceProfile& p, JsonStream* w) {
  const GpuTimeline& t = p.gpu_timeline;
  const Json timeline = GpuTimelineJson(p);
  w->BeginObject();
  for (const auto& [key, value] : timeline.items()) {
    if (key != "devices") {
      w->Field(key, value);
      continue;
    }
    w->Key(key);
    w->BeginArray();
    for (size_t i = 0; i < t.devices.size(); ++i) {
      w->BeginObject();
      w->Fields(value[i]);
      w->Key("steps");
      w->BeginArray();
      for (const StepFigures& s : t.devices[i].steps) {
        Json step = Json::object();
        step["step"] = std::string(t.step_names[t.step_name_of[s.step]]);
        AddFiguresJson(s.figures, &step);
        step["idle"] = IdleJson(s.idle);
        step["integrity"] = IntegrityJson(s.integrity);
        w->Value(step);
        if (absl::Status flushed = w->MaybeFlush(); !flushed.ok()) return flushed;
      }
      w->EndArray();
      w->EndObject();
    }
    w->EndArray();
  }
  w->EndObject();
  return absl::OkStatus();
}

Json CollectivesJson(const TraceProfile& p) {
  Json names = Json::array(), device = Json::array(), name = Json::array(),
       duration = Json::array();
  absl::flat_hash_map<uint32_t, size_t> index;  // the trace's name -> its place in `names`
  for (const Collective& c : p.gpu_timeline.collectives) {
    auto [it, inserted] = index.try_emplace(c.name, index.size());
    if (inserted) names.push_back(p.names[c.name]);
    device.push_back(c.device);
    name.push_back(it->second);
    duration.push_back(Micros(c.duration_ns));
  }
  return Json{{"names", std::move(names)},
              {"device", std::move(device)},
              {"name", std::move(name)},
              {"duration_us", std::move(duration)}};
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
    if (d.idle.gaps > 0) {
      line("    idle",
           fmt::format("{} gaps, of the span: cpu wait {}, launch latency {}, unattributed {}",
                       Thousands(d.idle.gaps), share(d.idle.cpu_wait_ns),
                       share(d.idle.launch_latency_ns), share(d.idle.unattributed_ns)));
    }
    if (d.idle.cpu_ops && !d.idle.cpu_ops->empty()) {
      line("    cpu while waiting", CpuOpsText(*d.idle.cpu_ops));
    }
    if (!d.integrity.clean()) line("    integrity", IntegrityText(d.integrity));
    for (const LaunchStats& l : d.launches) {
      line(StrCat("    ", l.api),
           fmt::format("{} launches: the call takes {:.1f} us median (p90 {:.1f}), its first "
                       "activity starts {:.1f} us median after it returns (p90 {:.1f})",
                       Thousands(l.count), Micros(l.cpu.median_ns), Micros(l.cpu.p90_ns),
                       Micros(l.delay.median_ns), Micros(l.delay.p90_ns)));
    }
  }
  if (const StepSpans spans = StepSpansOf(t); spans.steps > 0) {
    std::string steps = StrCat(Thousands(spans.steps), spans.steps == 1 ? " step" : " steps");
    if (spans.with_activities > 0) {
      steps += fmt::format(": GPU span median {} ms (shortest {}, longest {})",
                           MillisText(spans.median_ns), MillisText(spans.min_ns),
                           MillisText(spans.max_ns));
    }
    if (spans.with_activities < spans.steps) {
      steps += StrCat("; ", Thousands(spans.steps - spans.with_activities), " ran no GPU event");
    }
    line("  steps", steps);
  }
  if (t.steps_skipped > 0) line("  steps skipped", Thousands(t.steps_skipped));
  if (t.events_skipped > 0) line("  gpu events skipped", Thousands(t.events_skipped));
  return out;
}

GpuTimeFigures SummedFigures(const GpuTimeline& timeline) {
  GpuTimeFigures sum;
  for (const DeviceTimeline& d : timeline.devices) {
    sum.AddMeasures(d.figures);
    sum.last_end_ns += d.figures.span_ns();  // the summed span, as a span from 0
  }
  return sum;
}

std::string GpuTimelineSection(const PerSide<const TraceProfile*>& traces,
                               const PerSide<std::string>& labels, bool markdown) {
  PerSide<GpuTimeFigures> sums;
  for (Side s : kSides) sums[s] = SummedFigures(traces[s]->gpu_timeline);
  std::string out;
  auto line = [&](const std::string& text) { out += text + "\n"; };
  const std::string title = "GPU timeline (share of the span)";
  line("");
  line(markdown ? "## " + title : title);
  if (!markdown) line(std::string(title.size(), '-'));
  auto cells = [&](Side s, int64_t ns) -> std::pair<std::string, std::string> {
    const GpuTimeFigures& f = sums[s];
    if (f.activities == 0) return {"-", "-"};
    return {MillisText(ns),
            fmt::format("{:.1f} %", f.span_ns() > 0 ? 100.0 * ns / f.span_ns() : 0.0)};
  };
  auto row = [&](const std::string& figure, int64_t a, int64_t b) {
    const auto [a_ms, a_share] = cells(Side::kTrace1, a);
    const auto [b_ms, b_share] = cells(Side::kTrace2, b);
    line(markdown
             ? fmt::format("| {} | {} | {} | {} | {} |", figure, a_ms, a_share, b_ms, b_share)
             : fmt::format("  {:<24}{:>12}{:>9}{:>14}{:>9}", figure, a_ms, a_share, b_ms, b_share));
  };
  const std::string a = labels[Side::kTrace1], b = labels[Side::kTrace2];
  if (markdown) {
    line("");
    line(fmt::format("| | {} ms | share | {} ms | share |", a, b));
    line("|---|---:|---:|---:|---:|");
  } else {
    line(fmt::format("  {:<24}{:>12}{:>9}{:>14}{:>9}", "", a + " ms", "share", b + " ms", "share"));
  }
  const GpuTimeFigures& x = sums[Side::kTrace1];
  const GpuTimeFigures& y = sums[Side::kTrace2];
  row("span", x.span_ns(), y.span_ns());
  row("busy", x.busy_ns, y.busy_ns);
  row("computation", x.computation_ns, y.computation_ns);
  row("communication", x.communication_ns, y.communication_ns);
  row("exposed communication", x.exposed_communication_ns, y.exposed_communication_ns);
  row("memcpy", x.memcpy_ns, y.memcpy_ns);
  row("exposed memcpy", x.exposed_memcpy_ns, y.exposed_memcpy_ns);
  row("idle", x.idle_ns(), y.idle_ns());
  const PerSide<StepSpans> spans{StepSpansOf(traces[Side::kTrace1]->gpu_timeline),
                                 StepSpansOf(traces[Side::kTrace2]->gpu_timeline)};
  if (spans[Side::kTrace1].with_activities > 0 || spans[Side::kTrace2].with_activities > 0) {
    auto step_cell = [&](Side s) {
      return spans[s].with_activities > 0 ? MillisText(spans[s].median_ns) : std::string("-");
    };
    const std::string figure = "step (median GPU span)";
    line(markdown ? fmt::format("| {} | {} | | {} | |", figure, step_cell(Side::kTrace1),
                                step_cell(Side::kTrace2))
                  : fmt::format("  {:<24}{:>12}{:>9}{:>14}", figure, step_cell(Side::kTrace1), "",
                                step_cell(Side::kTrace2)));
  }
  for (Side s : kSides) {
    const GpuTimeline& t = traces[s]->gpu_timeline;
    if (t.devices.size() > 1) {
      line(fmt::format("{}{}: {} devices, summed", markdown ? "\n" : "  ", labels[s],
                       t.devices.size()));
    }
  }
  return out;
}

std::string GpuTimelineHtml(const PerSide<const TraceProfile*>& traces,
                            const PerSide<std::string>& labels) {
  // Computation, the communication and the copies it does not hide, and idle time add up to the
  // span: the union of all activities is computation + exposed communication + exposed memcpy.
  struct Part {
    const char* name;
    const char* colour;
    int64_t GpuTimeFigures::*ns;
  };
  static constexpr Part kParts[] = {
      {"computation", "k0", &GpuTimeFigures::computation_ns},
      {"exposed communication", "k1", &GpuTimeFigures::exposed_communication_ns},
      {"exposed memcpy", "k2", &GpuTimeFigures::exposed_memcpy_ns},
  };
  std::string keys;
  for (const Part& part : kParts) keys += ColourKey(part.colour, part.name) + " ";
  keys += ColourKey("k-rest", "idle");
  std::vector<BarRow> rows;
  for (Side s : kSides) {
    const GpuTimeFigures f = SummedFigures(traces[s]->gpu_timeline);
    BarRow row;
    row.label = labels[s];
    row.stacked = true;
    row.tooltip = fmt::format("{}: span {} ms", labels[s], MillisText(f.span_ns()));
    auto share = [&](int64_t ns) { return f.span_ns() > 0 ? 100.0 * ns / f.span_ns() : 0.0; };
    for (const Part& part : kParts) {
      row.bars.push_back({Millis(f.*part.ns), part.colour});
      row.tooltip += fmt::format("\n{}: {} ms ({:.1f} %)", part.name, MillisText(f.*part.ns),
                                 share(f.*part.ns));
    }
    row.bars.push_back({Millis(f.idle_ns()), "k-rest"});
    row.tooltip +=
        fmt::format("\nidle: {} ms ({:.1f} %)", MillisText(f.idle_ns()), share(f.idle_ns()));
    row.value_text = f.activities == 0 ? "no GPU events"
                                       : fmt::format("{} ms, busy {:.1f} %",
                                                     MillisText(f.span_ns()), share(f.busy_ns));
    rows.push_back(std::move(row));
  }
  return StrCat("<section id=\"gpu-timeline\">\n<h2>GPU timeline</h2>\n<p>", keys, "</p>\n",
                BarChartSvg(rows, "GPU timeline"), "</section>\n");
}

}  // namespace tracefuse
