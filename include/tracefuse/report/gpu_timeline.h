// Stage 7, report: a trace's GPU timeline (gpu_timeline.h), as the reports show it.
#ifndef TRACEFUSE_REPORT_GPU_TIMELINE_H_
#define TRACEFUSE_REPORT_GPU_TIMELINE_H_

#include <string>

#include "tracefuse/analyze/fusion.h"
#include "tracefuse/reduce/trace_profile.h"
#include "tracefuse/report/json.h"

namespace tracefuse {

// GpuTimelineJson() is a trace's "gpu_timeline" object: "path" ("streamed" or "collected"),
// "collected_reason" (null when streamed), "events_skipped", "communication_category" (null when
// the rule set has none, and every kernel is computation), "steps" (StepSpans: "count",
// "skipped", "with_activities", then median_span_us, min_span_us and max_span_us, null without
// a step that ran an activity), and "devices", by device: "device", "activities", then span_us,
// busy_us, computation_us, communication_us, exposed_communication_us, memcpy_us,
// exposed_memcpy_us and idle_us, "idle" (IdleSplit, its "cpu_ops" null unless the CPU side was
// read), "launches" (LaunchStats per API) and
// "integrity" (TraceIntegrity). Then, over all devices, "idle" and "integrity" summed and
// "launches" per API. `stats` adds each device's steps (WriteStatsJson()).
Json GpuTimelineJson(const TraceProfile& profile);

// CollectivesJson() is a trace's communication kernels by device and start, in columns (a run
// has thousands): {"names": [distinct names], "device": [...], "name": [index into names],
// "duration_us": [...]}. `batch` writes them in each pair's status, for `merge` to match the
// i-th collective of each name across the ranks of a run.
Json CollectivesJson(const TraceProfile& profile);

// GpuTimelineText() is the same for people: a "gpu timeline" line, then one line per device
// with its span and each figure's share of it (and, below it, its idle split, its integrity when
// not clean, and a line per launch API), then the steps' median GPU span.
std::string GpuTimelineText(const TraceProfile& profile);

// IntegrityText() is the one line that says where a device's times do not add up
// (TraceIntegrity::clean() false): how many activities, and their share of the activity time.
std::string IntegrityText(const TraceIntegrity& integrity);

// GpuTimelineSection() is both traces' timelines side by side (`compare` and `ops` text and
// markdown): each figure summed over a trace's devices, in ms and as a share of the summed span,
// and the median step's GPU span where a trace has steps.
std::string GpuTimelineSection(const PerSide<const TraceProfile*>& traces,
                               const PerSide<std::string>& labels, bool markdown);

// GpuTimelineHtml() is the same as an HTML <section id="gpu-timeline">: one stacked bar per side
// on one scale (computation, exposed communication, exposed memcpy, idle: together the span).
std::string GpuTimelineHtml(const PerSide<const TraceProfile*>& traces,
                            const PerSide<std::string>& labels);

// SummedFigures() is a trace's figures summed over its devices (`activities` too).
GpuTimeFigures SummedFigures(const GpuTimeline& timeline);

// SummedIdle() and SummedIntegrity() are a trace's idle split and integrity summed over its
// devices (the split's cpu_ops: GpuTimeline::cpu_ops, over all devices).
IdleSplit SummedIdle(const GpuTimeline& timeline);
TraceIntegrity SummedIntegrity(const GpuTimeline& timeline);

// IdleCauseSentence() names the larger cause of idle time: of the side idle for more of its span,
// the largest of the three parts of its idle split, as a share of each side's span; then each
// side's most used launch API and its median call time ("MI300X waits on its CPU for 41.0 % of
// the span, H100 for 6.0 %; hipLaunchKernel takes 7.9 us median against cudaLaunchKernel's
// 2.6 us.").
std::string IdleCauseSentence(const PerSide<const TraceProfile*>& traces,
                              const PerSide<std::string>& labels);

// CpuOpsText() is IdleSplit::cpu_ops for people: "aten::linear 0.991 ms, aten::add 0.058 ms".
std::string CpuOpsText(const std::vector<CpuOpTime>& ops);

// IdleSection() is both sides' idle split side by side (`compare` and `ops` text and markdown):
// the sentence, each cause in ms and as a share of the span (summed over a trace's devices), a
// line per side saying what its CPU ran meanwhile (where its CPU side was read: `ops`, `compare
// --by-op`), a line per side whose integrity is not clean, and the launches per API of both sides.
std::string IdleSection(const PerSide<const TraceProfile*>& traces,
                        const PerSide<std::string>& labels, bool markdown);

// IdleHtml() is the same as an HTML <section id="idle">: the sentence, one stacked bar per side
// (cpu wait, launch latency, unattributed) on one scale, and the launch table.
std::string IdleHtml(const PerSide<const TraceProfile*>& traces,
                     const PerSide<std::string>& labels);

// IdleCsv() is one row per side and device: its span, idle time, idle split and integrity
// (`--csv-table idle`); LaunchesCsv() one row per side, device and launch API
// (`--csv-table launches`).
std::string IdleCsv(const PerSide<const TraceProfile*>& traces, const PerSide<std::string>& labels);
std::string LaunchesCsv(const PerSide<const TraceProfile*>& traces,
                        const PerSide<std::string>& labels);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_GPU_TIMELINE_H_
