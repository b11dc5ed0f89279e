// Internal to the report stage: the GPU timeline with each device's steps, streamed.
#ifndef TRACEFUSE_SRC_REPORT_COMMON_GPU_TIMELINE_STEPS_H_
#define TRACEFUSE_SRC_REPORT_COMMON_GPU_TIMELINE_STEPS_H_

#include "report/common/json_stream.h"
#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse {

// WriteGpuTimelineJsonWithSteps() writes GpuTimelineJson() with, last in each device, "steps":
// per step the device ran in, its "step" name, then the device's figures but "launches", for that
// step. A step at a time (handed to the sink as they grow): a long trace has tens of thousands.
absl::Status WriteGpuTimelineJsonWithSteps(const TraceProfile& profile, JsonStream* w);

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_REPORT_COMMON_GPU_TIMELINE_STEPS_H_
