// Stage 7, report: the op-level comparison as one Perfetto trace (`ops --format perfetto`,
// `compare --by-op --format perfetto`), for ui.perfetto.dev and trace_processor. The layout
// (processes, tracks, slices, args, flows, counters) is in docs/reports.md, "Perfetto".
#ifndef TRACEFUSE_REPORT_PERFETTO_H_
#define TRACEFUSE_REPORT_PERFETTO_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "tracefuse/analyze/op_compare.h"
#include "tracefuse/reduce/op_tree.h"
#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse {

// PerfettoAlign is where each side's events are placed on the trace's one clock:
//   - kSteps: the sides' matched steps (the first with the first, ...) start together. Each
//     event moves by the offset of the step it falls in (before the first: the first step's);
//     the offsets grow from step to step, so that each side keeps its order and durations and
//     gains no overlap;
//   - kNone: each side keeps its recorded times, moved by one constant so that both sides begin
//     where trace 1 begins (and never before 0).
// Every slice keeps its recorded duration; the shift applied is in the process's description
// (kNone) or each step slice's args (kSteps).
enum class PerfettoAlign : uint8_t { kSteps, kNone };

// PerfettoAligns() are the values `--align` takes: "steps" and "none".
const std::vector<std::string>& PerfettoAligns();
// PerfettoAlignNamed() is the alignment of one of PerfettoAligns().
PerfettoAlign PerfettoAlignNamed(std::string_view name);

// PerfettoInput is what the trace draws besides the comparison: both traces, read with
// PipelineOptions::keep_placement and their kernel records kept, their op trees, their labels,
// and the alignment. The comparison must have been made with OpCompareOptions::keep_partners.
struct PerfettoInput {
  PerSide<const TraceProfile*> traces{};
  PerSide<const OpTree*> trees{};
  PerSide<std::string> labels;
  PerfettoAlign align = PerfettoAlign::kSteps;
  int threads = 1;  // above 1, the two sides' kernels are written on two threads
};

// WriteOpsPerfetto() streams the trace to `path` ("-": standard output) through an OutputFile:
// per side a process with its steps, its top-level ops and, per device and stream, its kernels,
// memcpys and memsets (overlapping ones on lanes of their own), and each device's busy counter;
// a flow per matched op pair; a track of the fusion differences with a flow to each place they
// were found. Memory: a few words per unit and per stream, not per kernel.
absl::Status WriteOpsPerfetto(const OpComparison& ops, const PerfettoInput& input,
                              const std::string& path);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_PERFETTO_H_
