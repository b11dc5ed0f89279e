#include "tracefuse/batch/ranks.h"

#include <algorithm>
#include <map>

namespace tracefuse {
namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Waits() fills each rank's wait and matched collectives: per name, the i-th collective of every
// rank for i below the fewest that any rank ran.
void Waits(const std::vector<RankTimeline>& ranks, std::vector<RankWait>* waits) {
  std::map<std::string, std::vector<const std::vector<double>*>> by_name;
  for (const RankTimeline& rank : ranks) {
    for (const auto& [name, durations] : rank.collectives) by_name[name].push_back(&durations);
  }
  for (const auto& [name, per_rank] : by_name) {
    if (per_rank.size() != ranks.size()) continue;  // not run by every rank: nothing to match
    size_t matched = per_rank.front()->size();
    for (const std::vector<double>* durations : per_rank)
      matched = std::min(matched, durations->size());
    for (size_t i = 0; i < matched; ++i) {
      double shortest = (*per_rank.front())[i];
      for (const std::vector<double>* durations : per_rank)
        shortest = std::min(shortest, (*durations)[i]);
      for (size_t r = 0; r < ranks.size(); ++r) (*waits)[r].wait_us += (*per_rank[r])[i] - shortest;
    }
    for (RankWait& wait : *waits) wait.collectives += matched;
  }
}

}  // namespace

RankAnalysis AnalyzeRanks(const std::vector<RankTimeline>& ranks, double threshold) {
  RankAnalysis analysis;
  for (const RankTimeline& rank : ranks) {
    analysis.ranks.push_back(RankWait{rank.pair, rank.computation_us, 0, 0});
  }
  if (ranks.size() < 2) return analysis;
  Waits(ranks, &analysis.ranks);
  std::vector<double> computation;
  for (const RankTimeline& rank : ranks) computation.push_back(rank.computation_us);
  const double median = Median(computation);
  double lowest_wait = analysis.ranks.front().wait_us;
  for (const RankWait& r : analysis.ranks) lowest_wait = std::min(lowest_wait, r.wait_us);
  double all_waits = 0;
  for (const RankWait& r : analysis.ranks) all_waits += r.wait_us;
  for (const RankWait& r : analysis.ranks) {
    if (r.computation_us < (1 + threshold) * median || r.wait_us > lowest_wait) continue;
    analysis.stragglers.push_back(Straggler{r.pair, r.computation_us, median, all_waits - r.wait_us,
                                            ranks.size() - 1, r.collectives});
  }
  return analysis;
}

}  // namespace tracefuse
