// Stage 7, report: a trace's GPU timeline (gpu_timeline.h), as the reports show it.
#ifndef TRACEFUSE_REPORT_TIMELINE_H_
#define TRACEFUSE_REPORT_TIMELINE_H_

#include <string>

#include "tracefuse/reduce.h"
#include "tracefuse/report/json.h"

namespace tracefuse {

// GpuTimelineJson() is a trace's "gpu_timeline" object: "path" ("streamed" or "collected"),
// "collected_reason" (null when streamed), "events_skipped", "communication_category" (null when
// the rule set has none, and every kernel is computation), and "devices", by device: "device",
// "activities", then span_us, busy_us, computation_us, communication_us,
// exposed_communication_us, memcpy_us, exposed_memcpy_us and idle_us.
Json GpuTimelineJson(const TraceProfile& profile);

// GpuTimelineText() is the same for people: a "gpu timeline" line, then one line per device
// with its span and each figure's share of it.
std::string GpuTimelineText(const TraceProfile& profile);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_TIMELINE_H_
