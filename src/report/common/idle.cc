// Why each side's GPU waits, side by side (`compare` and `ops`, every format): the idle split by
// cause and the launches per API, both summed over a trace's devices, and the sentence that names
// the larger cause.
#include <algorithm>
#include <iterator>

#include "fmt/ranges.h"
#include "report/common/formatting.h"
#include "report/common/html.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/report/gpu_timeline.h"

namespace tracefuse {
namespace {

// IdleCause is one of IdleSplit's three parts, as the reports name it.
struct IdleCause {
  const char* name;    // in tables
  const char* colour;  // in the HTML bar
  int64_t IdleSplit::*ns;
};
constexpr IdleCause kIdleCauses[] = {
    {"cpu wait", "k0", &IdleSplit::cpu_wait_ns},
    {"launch latency", "k1", &IdleSplit::launch_latency_ns},
    {"unattributed", "k2", &IdleSplit::unattributed_ns},
};

std::string Share(int64_t ns, int64_t span_ns) {
  return fmt::format("{:.1f} %", Percent(ns, span_ns));
}

// MostLaunches() is the API with the most launches of `launches`, null when it has none.
const LaunchStats* MostLaunches(const std::vector<LaunchStats>& launches) {
  const LaunchStats* most = nullptr;
  for (const LaunchStats& l : launches) {
    if (most == nullptr || l.count > most->count) most = &l;
  }
  return most;
}

std::string LaunchRowText(const std::string& label, const LaunchStats& l, bool markdown) {
  const std::string cells[] = {
      Thousands(l.count),         MicrosText(l.cpu.median_ns),
      MicrosText(l.cpu.p90_ns),   MicrosText(l.delay.median_ns),
      MicrosText(l.delay.p90_ns),
  };
  if (markdown) {
    return fmt::format("| {} | {} | {} |", l.api, label, fmt::join(cells, " | "));
  }
  return fmt::format("  {:<30}{:>10}{:>10}{:>12}{:>10}{:>14}{:>11}", Shorten(l.api, 30), label,
                     cells[0], cells[1], cells[2], cells[3], cells[4]);
}

// CpuOpsSentence() says what a side's CPU ran while its GPU waited on it, "" where its CPU side
// was not read or no cpu_op covers that time.
std::string CpuOpsSentence(const TraceProfile& trace, const std::string& label) {
  const std::optional<std::vector<CpuOpTime>>& ops = trace.gpu_timeline.cpu_ops;
  if (!ops || ops->empty()) return "";
  return StrCat("while ", label, " waits on its CPU, the launching thread is in ",
                CpuOpsText(*ops));
}

}  // namespace

std::string CpuOpsText(const std::vector<CpuOpTime>& ops) {
  std::vector<std::string> parts;
  for (const CpuOpTime& op : ops) parts.push_back(StrCat(op.op, " ", MillisText(op.ns), " ms"));
  return fmt::format("{}", fmt::join(parts, ", "));
}

IdleSplit SummedIdle(const GpuTimeline& timeline) {
  IdleSplit sum;
  for (const DeviceTimeline& d : timeline.devices) {
    sum.cpu_wait_ns += d.idle.cpu_wait_ns;
    sum.launch_latency_ns += d.idle.launch_latency_ns;
    sum.unattributed_ns += d.idle.unattributed_ns;
    sum.gaps += d.idle.gaps;
  }
  sum.cpu_ops = timeline.cpu_ops;
  return sum;
}

TraceIntegrity SummedIntegrity(const GpuTimeline& timeline) {
  TraceIntegrity sum;
  for (const DeviceTimeline& d : timeline.devices) {
    sum.same_stream_overlaps += d.integrity.same_stream_overlaps;
    sum.same_stream_overlap_ns += d.integrity.same_stream_overlap_ns;
    sum.before_launch += d.integrity.before_launch;
    sum.involved_ns += d.integrity.involved_ns;
    sum.activity_ns += d.integrity.activity_ns;
  }
  return sum;
}

std::string IdleCauseSentence(const PerSide<const TraceProfile*>& traces,
                              const PerSide<std::string>& labels) {
  PerSide<GpuTimeFigures> figures;
  PerSide<IdleSplit> idle;
  for (Side s : kSides) {
    figures[s] = SummedFigures(traces[s]->gpu_timeline);
    idle[s] = SummedIdle(traces[s]->gpu_timeline);
  }
  auto idle_share = [&](Side s) { return Percent(figures[s].idle_ns(), figures[s].span_ns()); };
  if (figures[Side::kTrace1].idle_ns() == 0 && figures[Side::kTrace2].idle_ns() == 0) {
    return "Neither GPU is idle inside its span.";
  }
  // The side idle for more of its span, and its largest cause.
  const Side more =
      idle_share(Side::kTrace1) >= idle_share(Side::kTrace2) ? Side::kTrace1 : Side::kTrace2;
  const Side other = Opposite(more);
  const IdleCause* cause = &kIdleCauses[0];
  for (const IdleCause& c : kIdleCauses) {
    if (idle[more].*c.ns > idle[more].*cause->ns) cause = &c;
  }
  auto share = [&](Side s) { return Share(idle[s].*cause->ns, figures[s].span_ns()); };
  std::string sentence;
  if (cause->ns == &IdleSplit::cpu_wait_ns) {
    sentence = fmt::format("{} waits on its CPU for {} of the span, {} for {}", labels[more],
                           share(more), labels[other], share(other));
  } else if (cause->ns == &IdleSplit::launch_latency_ns) {
    sentence = fmt::format(
        "{} waits for launched work to start (launch latency) for {} of the span, {} for {}",
        labels[more], share(more), labels[other], share(other));
  } else {
    sentence = fmt::format(
        "{} is idle before work with no launch in the trace (unattributed) for {} of the span, "
        "{} for {}",
        labels[more], share(more), labels[other], share(other));
  }
  const PerSide<const LaunchStats*> most{MostLaunches(traces[more]->gpu_timeline.launches),
                                         MostLaunches(traces[other]->gpu_timeline.launches)};
  if (most[Side::kTrace1] != nullptr && most[Side::kTrace2] != nullptr) {
    const LaunchStats& m = *most[Side::kTrace1];
    const LaunchStats& o = *most[Side::kTrace2];
    if (m.api == o.api) {
      sentence += fmt::format("; {} takes {} us median on {} against {} us on {}", m.api,
                              MicrosText(m.cpu.median_ns), labels[more],
                              MicrosText(o.cpu.median_ns), labels[other]);
    } else {
      sentence += fmt::format("; {} takes {} us median against {}'s {} us", m.api,
                              MicrosText(m.cpu.median_ns), o.api, MicrosText(o.cpu.median_ns));
    }
  }
  return sentence + ".";
}

std::string IdleSection(const PerSide<const TraceProfile*>& traces,
                        const PerSide<std::string>& labels, bool markdown) {
  std::string out;
  auto line = [&](const std::string& text) { out += text + "\n"; };
  const std::string title = "Why the GPU is idle";
  line("");
  line(markdown ? "## " + title : title);
  if (!markdown) line(std::string(title.size(), '-'));
  line(IdleCauseSentence(traces, labels));
  line("");
  const std::string a = labels[Side::kTrace1], b = labels[Side::kTrace2];
  if (markdown) {
    line(fmt::format("| idle, by cause | {} ms | share | {} ms | share |", a, b));
    line("|---|---:|---:|---:|---:|");
  } else {
    line(fmt::format("  {:<24}{:>12}{:>9}{:>14}{:>9}", "idle, by cause", a + " ms", "share",
                     b + " ms", "share"));
  }
  PerSide<GpuTimeFigures> figures;
  PerSide<IdleSplit> idle;
  for (Side s : kSides) {
    figures[s] = SummedFigures(traces[s]->gpu_timeline);
    idle[s] = SummedIdle(traces[s]->gpu_timeline);
  }
  auto row = [&](const std::string& name, const PerSide<int64_t>& ns) {
    std::string cells[4];
    for (Side s : kSides) {
      const bool none = figures[s].activities == 0;
      cells[2 * static_cast<int>(s)] = none ? "-" : MillisText(ns[s]);
      cells[2 * static_cast<int>(s) + 1] = none ? "-" : Share(ns[s], figures[s].span_ns());
    }
    line(markdown ? fmt::format("| {} | {} |", name, fmt::join(cells, " | "))
                  : fmt::format("  {:<24}{:>12}{:>9}{:>14}{:>9}", name, cells[0], cells[1],
                                cells[2], cells[3]));
  };
  for (const IdleCause& c : kIdleCauses) {
    row(c.name, {idle[Side::kTrace1].*c.ns, idle[Side::kTrace2].*c.ns});
  }
  row("idle", {figures[Side::kTrace1].idle_ns(), figures[Side::kTrace2].idle_ns()});
  line(
      fmt::format("{}{}", markdown ? "\n" : "  ",
                  "cpu wait: the launch had not returned; launch latency: it had, and the work had "
                  "not started; unattributed: the work has no launch in the trace"));
  for (Side s : kSides) {
    if (std::string ops = CpuOpsSentence(*traces[s], labels[s]); !ops.empty()) {
      line(fmt::format("{}{}", markdown ? "\n" : "  ", ops));
    }
  }
  for (Side s : kSides) {
    const TraceIntegrity integrity = SummedIntegrity(traces[s]->gpu_timeline);
    if (!integrity.clean()) {
      line(fmt::format("{}{} integrity: {}", markdown ? "\n" : "  ", labels[s],
                       IntegrityText(integrity)));
    }
  }
  if (traces[Side::kTrace1]->gpu_timeline.launches.empty() &&
      traces[Side::kTrace2]->gpu_timeline.launches.empty()) {
    return out;
  }
  line("");
  const std::string columns[] = {"launches", "call med", "call p90", "delay med", "delay p90"};
  if (markdown) {
    line(fmt::format("| launch API | trace | {} |", fmt::join(columns, " | ")));
    line("|---|---|---:|---:|---:|---:|---:|");
  } else {
    line(fmt::format("  {:<30}{:>10}{:>10}{:>12}{:>10}{:>14}{:>11}", "launch API (us)", "trace",
                     columns[0], columns[1], columns[2], columns[3], columns[4]));
  }
  for (Side s : kSides) {
    for (const LaunchStats& l : traces[s]->gpu_timeline.launches) {
      line(LaunchRowText(labels[s], l, markdown));
    }
  }
  line(fmt::format("{}{}", markdown ? "\n" : "  ",
                   "call: the launch call's own time; delay: from its return to the start of its "
                   "first activity (negative: the work started before the call returned)"));
  return out;
}

std::string IdleHtml(const PerSide<const TraceProfile*>& traces,
                     const PerSide<std::string>& labels) {
  std::string keys;
  for (const IdleCause& c : kIdleCauses) keys += ColourKey(c.colour, c.name) + " ";
  std::vector<BarRow> rows;
  for (Side s : kSides) {
    const GpuTimeFigures f = SummedFigures(traces[s]->gpu_timeline);
    const IdleSplit idle = SummedIdle(traces[s]->gpu_timeline);
    BarRow row;
    row.label = labels[s];
    row.stacked = true;
    row.tooltip = fmt::format("{}: idle {} ms of a {} ms span", labels[s], MillisText(f.idle_ns()),
                              MillisText(f.span_ns()));
    for (const IdleCause& c : kIdleCauses) {
      row.bars.push_back({Millis(idle.*c.ns), c.colour});
      row.tooltip += fmt::format("\n{}: {} ms ({} of the span)", c.name, MillisText(idle.*c.ns),
                                 Share(idle.*c.ns, f.span_ns()));
    }
    row.value_text = f.activities == 0
                         ? "no GPU events"
                         : fmt::format("idle {} ms, {} of the span", MillisText(f.idle_ns()),
                                       Share(f.idle_ns(), f.span_ns()));
    rows.push_back(std::move(row));
  }
  std::string html =
      StrCat("<section id=\"idle\">\n<h2>Why the GPU is idle</h2>\n<p>",
             HtmlEscaped(IdleCauseSentence(traces, labels)), "</p>\n<p>", keys, "</p>\n",
             BarChartSvg(rows, "Idle time by cause"),
             "<p class=\"note\">cpu wait: the launch had not returned; launch latency: it had, and "
             "the work had not started; unattributed: the work has no launch in the trace.</p>\n");
  for (Side s : kSides) {
    if (std::string ops = CpuOpsSentence(*traces[s], labels[s]); !ops.empty()) {
      html += StrCat("<p>", HtmlEscaped(ops), ".</p>\n");
    }
  }
  for (Side s : kSides) {
    const TraceIntegrity integrity = SummedIntegrity(traces[s]->gpu_timeline);
    if (!integrity.clean()) {
      html += StrCat("<p class=\"warning\">", HtmlEscaped(labels[s]),
                     " integrity: ", HtmlEscaped(IntegrityText(integrity)), "</p>\n");
    }
  }
  if (!traces[Side::kTrace1]->gpu_timeline.launches.empty() ||
      !traces[Side::kTrace2]->gpu_timeline.launches.empty()) {
    html +=
        "<table class=\"launches\">\n<tr><th>launch API</th><th>trace</th>"
        "<th class=\"n\">launches</th><th class=\"n\">call median us</th>"
        "<th class=\"n\">call p90 us</th><th class=\"n\">delay median us</th>"
        "<th class=\"n\">delay p90 us</th></tr>\n";
    for (Side s : kSides) {
      for (const LaunchStats& l : traces[s]->gpu_timeline.launches) {
        html += fmt::format(
            "<tr><td><code>{}</code></td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
            "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
            HtmlEscaped(l.api), HtmlEscaped(labels[s]), Thousands(l.count),
            MicrosText(l.cpu.median_ns), MicrosText(l.cpu.p90_ns), MicrosText(l.delay.median_ns),
            MicrosText(l.delay.p90_ns));
      }
    }
    html +=
        "</table>\n<p class=\"note\">call: the launch call's own time; delay: from its return to "
        "the start of its first activity (negative: the work started before the call "
        "returned).</p>\n";
  }
  return html + "</section>\n";
}

std::string IdleCsv(const PerSide<const TraceProfile*>& traces,
                    const PerSide<std::string>& labels) {
  std::string out =
      "trace,device,span_us,idle_us,cpu_wait_us,launch_latency_us,unattributed_us,gaps,"
      "same_stream_overlaps,same_stream_overlap_us,before_launch\n";
  for (Side s : kSides) {
    for (const DeviceTimeline& d : traces[s]->gpu_timeline.devices) {
      out += fmt::format(
          "{},{},{},{},{},{},{},{},{},{},{}\n", CsvField(labels[s]), d.device,
          CsvNumber(Micros(d.figures.span_ns())), CsvNumber(Micros(d.figures.idle_ns())),
          CsvNumber(Micros(d.idle.cpu_wait_ns)), CsvNumber(Micros(d.idle.launch_latency_ns)),
          CsvNumber(Micros(d.idle.unattributed_ns)), d.idle.gaps, d.integrity.same_stream_overlaps,
          CsvNumber(Micros(d.integrity.same_stream_overlap_ns)), d.integrity.before_launch);
    }
  }
  return out;
}

std::string LaunchesCsv(const PerSide<const TraceProfile*>& traces,
                        const PerSide<std::string>& labels) {
  std::string out =
      "trace,device,api,count,cpu_median_us,cpu_p90_us,cpu_max_us,delay_median_us,"
      "delay_p90_us,delay_max_us\n";
  for (Side s : kSides) {
    for (const DeviceTimeline& d : traces[s]->gpu_timeline.devices) {
      for (const LaunchStats& l : d.launches) {
        out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", CsvField(labels[s]), d.device,
                           CsvField(l.api), l.count, CsvNumber(Micros(l.cpu.median_ns)),
                           CsvNumber(Micros(l.cpu.p90_ns)), CsvNumber(Micros(l.cpu.max_ns)),
                           CsvNumber(Micros(l.delay.median_ns)), CsvNumber(Micros(l.delay.p90_ns)),
                           CsvNumber(Micros(l.delay.max_ns)));
      }
    }
  }
  return out;
}

}  // namespace tracefuse
