// Stage 6, analyze: the ranks of one distributed run, side by side. Each rank's trace holds its
// GPU timeline (gpu_timeline.h); the ranks ran one job, so their collectives ran together: the
// i-th collective of a name on one rank is the i-th of that name on every other. A rank that
// computes longer makes the others wait in each collective for it: their collectives last longer
// than its own, which starts last and waits least.
#ifndef TRACEFUSE_ANALYZE_RANK_COMPARE_H_
#define TRACEFUSE_ANALYZE_RANK_COMPARE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tracefuse {

// RankFigures is one rank's GPU time, summed over the devices of its trace (GpuTimeFigures, in
// µs).
// RankIdle is why a rank's GPU was idle: its idle split (IdleSplit), summed over its devices.
struct RankIdle {
  double cpu_wait_us = 0;
  double launch_latency_us = 0;
  double unattributed_us = 0;
};

// ForEachIdleCause() calls visit(key, &figure) for each figure of `idle` (a RankIdle, const or
// not), by its key in the status files' "idle" and in merge's JSON.
template <typename Idle, typename Visit>
void ForEachIdleCause(Idle& idle, Visit&& visit) {
  visit("cpu_wait_us", &idle.cpu_wait_us);
  visit("launch_latency_us", &idle.launch_latency_us);
  visit("unattributed_us", &idle.unattributed_us);
}

struct RankFigures {
  double span_us = 0;
  double busy_us = 0;
  double computation_us = 0;
  double exposed_communication_us = 0;
  double idle_us = 0;
  // The step time: the median GPU span of the trace's profiler steps (StepSpans), none without.
  std::optional<double> step_us;
  // Why it was idle; none where its status file records no idle split (an older tracefuse).
  std::optional<RankIdle> idle;
};

// ForEachRankFigure() calls visit(key, &figure) for each figure of `figures` (a RankFigures,
// const or not) summed over devices, by its key in the status files' devices and in merge's
// JSON, in that order: all but step_us.
template <typename Figures, typename Visit>
void ForEachRankFigure(Figures& figures, Visit&& visit) {
  visit("span_us", &figures.span_us);
  visit("busy_us", &figures.busy_us);
  visit("computation_us", &figures.computation_us);
  visit("exposed_communication_us", &figures.exposed_communication_us);
  visit("idle_us", &figures.idle_us);
}

// RankTimeline is one rank (one side of one pair): its figures and its collectives by name, each
// name's durations in the order the trace ran them (by device, then start): `collectives[k]`
// is every duration of the k-th name, and no two entries have the same name.
struct RankTimeline {
  std::string pair;  // the manifest's label, e.g. "rank5"
  RankFigures figures;
  std::vector<std::pair<std::string, std::vector<double>>> collectives;
};

// RankWait is a rank's figures and what it waited for the others: in each collective matched
// across the ranks (the i-th of its name on each), its duration less the shortest of that
// collective's.
struct RankWait {
  std::string pair;
  RankFigures figures;
  double wait_us = 0;
  uint64_t collectives = 0;  // matched, of every name
};

// Straggler is a rank that holds the others up.
struct Straggler {
  std::string pair;
  double computation_us = 0;
  double median_computation_us = 0;
  double others_wait_us = 0;  // the other ranks' waits, summed
  size_t other_ranks = 0;
  uint64_t collectives = 0;  // matched per rank
};

// RankAnalysis is one side's ranks: their waits, in the order given, and its stragglers.
// `collective_kind` is the kind (CollectiveKind()) every matched collective shares; empty when
// they differ, or when none is matched.
struct RankAnalysis {
  std::vector<RankWait> ranks;
  std::vector<Straggler> stragglers;
  std::string collective_kind;
};

// AnalyzeRanks() matches the ranks' collectives by name and order (the i-th of a name on each
// rank, up to the fewest any rank has; a name some rank never ran is not matched) and finds the
// stragglers: ranks whose computation is at least (1 + threshold) times the median rank's (and
// more than it) and whose wait is the lowest of all ranks, while the others waited (in at least
// one matched collective, for more than nothing). Fewer than two ranks have neither waits nor
// stragglers. A rank names each of its collectives once (RankTimeline::collectives).
RankAnalysis AnalyzeRanks(const std::vector<const RankTimeline*>& ranks, double threshold);

// CollectiveKind() is what a collective kernel does, from the collective libraries' naming
// (NCCL and RCCL's ncclDevKernel_AllReduce_..., ncclKernel_AllGather_..., vLLM's
// cross_device_reduce...): "all-reduce", "all-gather", "reduce-scatter", "all-to-all",
// "broadcast", "reduce" or "send/recv"; "collective" when the name does not say (RCCL's
// ncclDevKernel_Generic_4).
std::string_view CollectiveKind(std::string_view name);

// Median() of `values`, the mean of the middle two for an even count; 0 for none.
double Median(std::vector<double> values);

}  // namespace tracefuse

#endif  // TRACEFUSE_ANALYZE_RANK_COMPARE_H_
