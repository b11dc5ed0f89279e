#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_replace.h"
#include "tracefuse/analyze/rank_compare.h"

namespace tracefuse {
namespace {

// Waits() fills each rank's wait and matched collectives, per name the i-th collective of every
// rank for i below the fewest that any rank ran, and returns the kind the matched names share.
std::string Waits(const std::vector<const RankTimeline*>& ranks, std::vector<RankWait>* waits) {
  // Per name, each rank's durations (null: the rank never ran it).
  std::map<std::string_view, std::vector<const std::vector<double>*>> by_name;
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const auto& [name, durations] : ranks[r]->collectives) {
      std::vector<const std::vector<double>*>& per_rank = by_name[name];
      per_rank.resize(ranks.size(), nullptr);
      per_rank[r] = &durations;
    }
  }
  std::string kind;
  bool kinds_differ = false;
  for (const auto& [name, per_rank] : by_name) {
    // Not run by every rank: nothing to match.
    if (std::find(per_rank.begin(), per_rank.end(), nullptr) != per_rank.end()) continue;
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
    if (matched == 0) continue;
    const std::string_view name_kind = CollectiveKind(name);
    kinds_differ |= !kind.empty() && kind != name_kind;
    kind = name_kind;
  }
  return kinds_differ ? "" : kind;
}

}  // namespace

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string_view CollectiveKind(std::string_view name) {
  // The libraries spell a kind in CamelCase (AllReduce), snake_case (all_reduce) or one word
  // (allreduce): compared without case and separators.
  const std::string folded =
      absl::StrReplaceAll(absl::AsciiStrToLower(std::string(name)), {{"_", ""}, {"-", ""}});
  // Most specific first: "allreduce" and "reducescatter" before "reduce", "sendrecv" before
  // "send".
  static constexpr std::pair<std::string_view, std::string_view> kKinds[] = {
      {"allreduce", "all-reduce"},
      {"crossdevicereduce", "all-reduce"},
      {"reducescatter", "reduce-scatter"},
      {"allgather", "all-gather"},
      {"alltoall", "all-to-all"},
      {"broadcast", "broadcast"},
      {"sendrecv", "send/recv"},
      {"send", "send/recv"},
      {"recv", "send/recv"},
      {"reduce", "reduce"}};
  for (const auto& [word, kind] : kKinds) {
    if (folded.find(word) != std::string::npos) return kind;
  }
  return "collective";
}

RankAnalysis AnalyzeRanks(const std::vector<const RankTimeline*>& ranks, double threshold) {
  RankAnalysis analysis;
  for (const RankTimeline* rank : ranks) {
    analysis.ranks.push_back(RankWait{rank->pair, rank->figures, 0, 0});
  }
  if (ranks.size() < 2) return analysis;
  analysis.collective_kind = Waits(ranks, &analysis.ranks);
  std::vector<double> computation;
  for (const RankTimeline* rank : ranks) computation.push_back(rank->figures.computation_us);
  const double median = Median(computation);
  double lowest_wait = analysis.ranks.front().wait_us, all_waits = 0;
  for (const RankWait& r : analysis.ranks) {
    lowest_wait = std::min(lowest_wait, r.wait_us);
    all_waits += r.wait_us;
  }
  for (const RankWait& r : analysis.ranks) {
    const double computed = r.figures.computation_us;
    // Without a collective that the others waited in, nothing says that they waited for it.
    if (r.collectives == 0 || all_waits - r.wait_us <= 0) continue;
    if (computed <= median || computed < (1 + threshold) * median || r.wait_us > lowest_wait) {
      continue;
    }
    analysis.stragglers.push_back(Straggler{r.pair, computed, median, all_waits - r.wait_us,
                                            ranks.size() - 1, r.collectives});
  }
  return analysis;
}

}  // namespace tracefuse
