// AnalyzeRanks() and CollectiveKind(): the ranks of one run, their waits and stragglers.
#include "tracefuse/analyze/rank_compare.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tracefuse {
namespace {

// Analyze() is AnalyzeRanks() over ranks held by value.
RankAnalysis Analyze(const std::vector<RankTimeline>& ranks, double threshold) {
  std::vector<const RankTimeline*> pointers;
  for (const RankTimeline& r : ranks) pointers.push_back(&r);
  return AnalyzeRanks(pointers, threshold);
}

// Four ranks in lockstep: rank2 computes 1.3x as long, and the others wait for it in each of
// three all-reduces (a name rank0 alone ran is not matched).
TEST(Ranks, TheSlowRankIsTheStragglerAndTheOthersWaitForIt) {
  std::vector<RankTimeline> ranks;
  for (int r = 0; r < 4; ++r) {
    RankTimeline t;
    t.pair = "rank" + std::to_string(r);
    t.figures.computation_us = r == 2 ? 130 : 100 + r;
    t.collectives = {{"allreduce", r == 2 ? std::vector<double>{10, 10, 10}
                                          : std::vector<double>{40, 35.5, 50}}};
    if (r == 0) t.collectives.push_back({"alltoall", {7}});
    ranks.push_back(t);
  }
  RankAnalysis a = Analyze(ranks, 0.10);
  ASSERT_EQ(a.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(a.ranks[r].pair, "rank" + std::to_string(r));
    EXPECT_DOUBLE_EQ(a.ranks[r].wait_us, r == 2 ? 0 : 95.5);
    EXPECT_EQ(a.ranks[r].collectives, 3u);
  }
  ASSERT_EQ(a.stragglers.size(), 1u);
  const Straggler& s = a.stragglers[0];
  EXPECT_EQ(s.pair, "rank2");
  EXPECT_DOUBLE_EQ(s.computation_us, 130);
  EXPECT_DOUBLE_EQ(s.median_computation_us, 102);  // of 100, 101, 103 and 130
  EXPECT_DOUBLE_EQ(s.others_wait_us, 3 * 95.5);
  EXPECT_EQ(s.other_ranks, 3u);
  EXPECT_EQ(s.collectives, 3u);
}

// No straggler: ranks that compute alike (whatever they wait), a slow rank that waits too, a
// rank below the threshold, a run of one rank. Collectives are matched up to the fewest.
TEST(Ranks, NoStragglerWithoutBothSlowComputationAndTheLowestWait) {
  auto rank = [](const std::string& pair, double computation, std::vector<double> durations) {
    RankTimeline t;
    t.pair = pair;
    t.figures.computation_us = computation;
    t.collectives = {{"allreduce", std::move(durations)}};
    return t;
  };
  EXPECT_TRUE(Analyze({rank("a", 100, {5, 9}), rank("b", 100, {9, 5})}, 0.1).stragglers.empty());
  EXPECT_TRUE(Analyze({rank("a", 100, {1}), rank("b", 100, {9}), rank("c", 140, {5})}, 0.1)
                  .stragglers.empty());
  EXPECT_TRUE(Analyze({rank("a", 100, {9}), rank("b", 100, {9}), rank("c", 109, {1})}, 0.1)
                  .stragglers.empty());
  EXPECT_TRUE(Analyze({rank("a", 100, {9})}, 0.1).stragglers.empty());
  // Every rank computing nothing: no rank computes more than the median.
  EXPECT_TRUE(
      Analyze({rank("a", 0, {9}), rank("b", 0, {9}), rank("c", 0, {1})}, 0.1).stragglers.empty());
  // A name that one rank lists and another never ran is matched for no rank.
  RankTimeline lacks = rank("c", 200, {});
  lacks.collectives.clear();
  EXPECT_EQ(Analyze({rank("a", 100, {9}), rank("b", 100, {9}), lacks}, 0.1).ranks[0].collectives,
            0u);
  // A slow rank with no collective matched, or one that nobody waited in, is no straggler.
  EXPECT_TRUE(Analyze({rank("a", 100, {}), rank("b", 100, {}), rank("c", 200, {})}, 0.1)
                  .stragglers.empty());
  EXPECT_TRUE(Analyze({rank("a", 100, {4}), rank("b", 100, {4}), rank("c", 200, {4})}, 0.1)
                  .stragglers.empty());
  RankAnalysis a = Analyze({rank("a", 100, {9, 4, 8}), rank("b", 100, {2})}, 0.1);
  EXPECT_EQ(a.ranks[0].collectives, 1u);
  EXPECT_DOUBLE_EQ(a.ranks[0].wait_us, 7);
  EXPECT_DOUBLE_EQ(a.ranks[1].wait_us, 0);
}

// The collective libraries' names, each spelling of a kind; a name that does not say is a
// "collective".
TEST(Ranks, CollectiveKindFromTheLibrariesNames) {
  EXPECT_EQ(
      CollectiveKind("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
      "all-reduce");
  EXPECT_EQ(CollectiveKind("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"), "all-reduce");
  EXPECT_EQ(CollectiveKind("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)"),
            "all-reduce");
  EXPECT_EQ(CollectiveKind("c10d::symmetric_memory::one_shot_all_reduce_kernel"), "all-reduce");
  EXPECT_EQ(CollectiveKind("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL"), "reduce-scatter");
  EXPECT_EQ(CollectiveKind("ncclDevKernel_AllGather_RING_LL"), "all-gather");
  EXPECT_EQ(CollectiveKind("all_to_all_kernel"), "all-to-all");
  EXPECT_EQ(CollectiveKind("ncclDevKernel_Broadcast_RING_LL"), "broadcast");
  EXPECT_EQ(CollectiveKind("ncclDevKernel_SendRecv"), "send/recv");
  EXPECT_EQ(CollectiveKind("ncclDevKernel_Reduce_Sum_f16_RING_LL"), "reduce");
  EXPECT_EQ(CollectiveKind("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"),
            "collective");
}

// The kind the matched collectives share: one kind, two kinds (none), a name not matched.
TEST(Ranks, TheMatchedCollectivesKind) {
  auto rank = [](std::vector<std::pair<std::string, std::vector<double>>> collectives) {
    RankTimeline t;
    t.collectives = std::move(collectives);
    return t;
  };
  EXPECT_EQ(Analyze({rank({{"ncclDevKernel_AllReduce_Sum", {1}}, {"alltoall", {}}}),
                     rank({{"ncclDevKernel_AllReduce_Sum", {2}}})},
                    0.1)
                .collective_kind,
            "all-reduce");
  EXPECT_EQ(Analyze({rank({{"allreduce", {1}}, {"allgather", {3}}}),
                     rank({{"allreduce", {2}}, {"allgather", {3}}})},
                    0.1)
                .collective_kind,
            "");
  EXPECT_EQ(Analyze({rank({}), rank({})}, 0.1).collective_kind, "");
}

}  // namespace
}  // namespace tracefuse
