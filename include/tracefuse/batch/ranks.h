// Library tracefuse_batch: the ranks of one distributed run, side by side. Each pair of a batch
// compares one rank's trace on each platform; across the pairs, each side's ranks ran one job, so
// their collectives ran together: the i-th collective of a name on one rank is the i-th of that
// name on every other. A rank that computes longer makes the others wait in each collective for
// it: their collectives last longer than its own, which starts last and waits least.
#ifndef TRACEFUSE_BATCH_RANKS_H_
#define TRACEFUSE_BATCH_RANKS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tracefuse {

// RankTimeline is one rank's GPU timeline (one side of one pair), summed over its devices, with
// its collectives in order by name: `collectives[k]` is every duration of the k-th name, in
// start order.
struct RankTimeline {
  std::string pair;  // the manifest's label, e.g. "rank5"
  double computation_us = 0;
  double exposed_communication_us = 0;
  double idle_us = 0;
  double span_us = 0;
  std::vector<std::pair<std::string, std::vector<double>>> collectives;
};

// RankWait is what a rank waited for the others: in each collective matched across the ranks
// (the i-th of its name on each), its duration less the shortest of that collective's.
struct RankWait {
  std::string pair;
  double computation_us = 0;
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
struct RankAnalysis {
  std::vector<RankWait> ranks;
  std::vector<Straggler> stragglers;
};

// AnalyzeRanks() matches the ranks' collectives by name and order (the i-th of a name on each
// rank, up to the fewest any rank has) and finds the stragglers: ranks whose computation is at
// least (1 + threshold) times the median rank's and whose wait is the lowest of all ranks.
RankAnalysis AnalyzeRanks(const std::vector<RankTimeline>& ranks, double threshold);

}  // namespace tracefuse

#endif  // TRACEFUSE_BATCH_RANKS_H_
