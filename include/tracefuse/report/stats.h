// Stage 7, report: `tracefuse stats`, one trace's shape.
#ifndef TRACEFUSE_REPORT_STATS_H_
#define TRACEFUSE_REPORT_STATS_H_

#include <string>

#include "tracefuse/reduce/op_tree.h"
#include "tracefuse/reduce/trace_profile.h"
#include "tracefuse/report/json.h"

namespace tracefuse {

// StatsJson() describes `profile`: platform and why, GPU, bytes, events per category, kernels,
// correlation groups and kernel time per category. `elapsed_seconds` is the command's wall
// time, reported with the throughput it implies.
Json StatsJson(const TraceProfile& profile, double elapsed_seconds);

// CpuSideStats is what `stats --by-op` adds: how the trace's CPU side reached its op tree
// (TraceHost::path), the tree's size, and what building it held (TakeOpTree()).
struct CpuSideStats {
  uint64_t top_level_ops = 0;
  uint64_t steps = 0;
  CpuSideBytes held;
};

// CpuSideJson() is StatsJson()'s "cpu_side" object: path ("streamed" or "any-order"), the reason
// for any-order, the events read again, the tree's top-level ops and steps, and `held` by
// structure ("bytes", with its "total").
Json CpuSideJson(const TraceProfile& profile, const CpuSideStats& cpu_side);
// CpuSideText() is the same for StatsText(): lines to append.
std::string CpuSideText(const TraceProfile& profile, const CpuSideStats& cpu_side);

// TruncationText() says what was dropped from a trace salvaged by --lenient (see
// TraceProfile::truncated), for reports and warnings: "cut at byte 5000, inside an event: read up
// to byte 4810; dropped 190 bytes, 1 incomplete event". "" for a complete trace.
std::string TruncationText(const TraceProfile& profile);

// StatsText() is StatsJson() for people: one aligned "key value" line each.
std::string StatsText(const TraceProfile& profile, double elapsed_seconds);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_STATS_H_
