// Stage 7, report: `tracefuse stats`, one trace's shape.
#ifndef TRACEFUSE_REPORT_STATS_H_
#define TRACEFUSE_REPORT_STATS_H_

#include <string>

#include "absl/status/status.h"
#include "tracefuse/reduce/op_tree.h"
#include "tracefuse/reduce/trace_profile.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse {

// CpuSideStats is what `stats --by-op` adds: how the trace's CPU side reached its op tree
// (TraceHost::path), the tree's size, and what building it held (TakeOpTree()).
struct CpuSideStats {
  uint64_t top_level_ops = 0;
  uint64_t steps = 0;
  CpuSideBytes held;
};

// StatsJson() describes `profile`: platform and why, GPU, bytes, events per category, kernels,
// correlation groups, kernel time per category, and the GPU timeline with each device's steps.
// `elapsed_seconds` is the command's wall time, reported with the throughput it implies;
// `cpu_side`, when not null (--by-op), adds a "cpu_side" object: CpuSideStats and TraceHost::path.
std::string StatsJson(const TraceProfile& profile, double elapsed_seconds,
                      const CpuSideStats* cpu_side = nullptr);
// WriteStatsJson() writes the same to `sink` as it is made: a step at a time.
absl::Status WriteStatsJson(const TraceProfile& profile, double elapsed_seconds,
                            const CpuSideStats* cpu_side, OutputFile* sink);

// CpuSideText() is StatsJson()'s "cpu_side" object for StatsText(): lines to append.
std::string CpuSideText(const TraceProfile& profile, const CpuSideStats& cpu_side);

// TruncationText() says what was dropped from a trace salvaged by --lenient (see
// TraceProfile::truncated), for reports and warnings: "cut at byte 5000, inside an event: read up
// to byte 4810; dropped 190 bytes, 1 incomplete event". "" for a complete trace.
std::string TruncationText(const TraceProfile& profile);

// StatsText() is StatsJson() for people, without the steps: one aligned "key value" line each.
std::string StatsText(const TraceProfile& profile, double elapsed_seconds);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_STATS_H_
