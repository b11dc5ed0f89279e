#include "tracefuse/reduce.h"

#include "gtest/gtest.h"
#include "profile_builder.h"

namespace tracefuse {
namespace {

using testing::ChunkOf;
using testing::TestKernel;

TEST(Reducer, GroupsInFirstAppearanceOrderAcrossChunks) {
  auto c = testing::LetterClassifier();
  TraceReducer r(c);
  r.Consume(ChunkOf({{"a1", 5, 7}, {"b1", 6, 3}, {"a1", 7, 7}, {"c1", 8, -1}}, *c));
  r.Consume(ChunkOf({{"b2", 9, 3}, {"a1", 10, 9}, {"a2", 11, 7}}, *c));
  TraceProfile p = r.Finish(TraceMetadata(), Platform::kUnknown);
  EXPECT_EQ(p.names, (std::vector<std::string>{"a1", "b1", "c1", "b2", "a2"}));
  EXPECT_EQ(p.group_correlation, (std::vector<int64_t>{7, 3, 9}));
  EXPECT_EQ(p.group_size, (std::vector<uint32_t>{3, 2, 1}));
  GroupMembers g = p.BuildGroupMembers({0, 1, 2});
  EXPECT_EQ(g.offsets, (std::vector<uint32_t>{0, 3, 5, 6}));
  EXPECT_EQ(g.members, (std::vector<uint32_t>{0, 2, 6, 1, 4, 5}));
  GroupMembers some = p.BuildGroupMembers({2, 0});
  EXPECT_EQ(some.offsets, (std::vector<uint32_t>{0, 1, 4}));
  EXPECT_EQ(some.members, (std::vector<uint32_t>{5, 0, 2, 6}));
  EXPECT_EQ(p.name_kernels, (std::vector<uint64_t>{3, 1, 1, 1, 1}));
  EXPECT_EQ(p.GroupsAtLeast(2), 2u);
  std::vector<CategoryTotals> per = p.PerCategory();
  EXPECT_EQ(per[0].kernels, 4u);
  EXPECT_EQ(per[1].kernels, 2u);
  EXPECT_EQ(per[2].kernels, 1u);
  EXPECT_EQ(per[0].time_ns, 4000);
}

TEST(Reducer, TypeSequenceIsStableOnTimestampTies) {
  auto c = testing::LetterClassifier();
  TraceReducer r(c);
  // ts order: b(1) a(2) c(2, after a in trace order) a(2) b(3)
  r.Consume(ChunkOf({{"a", 2, -1}, {"b", 3, -1}, {"c", 2, -1}, {"b", 1, -1}, {"a", 2, -1}}, *c));
  TraceProfile p = r.Finish(TraceMetadata(), Platform::kUnknown);
  EXPECT_EQ(p.TypeSequence(), (std::vector<uint16_t>{1, 0, 2, 0, 1}));
}

TEST(Reducer, ChainStatistics) {
  auto c = testing::LetterClassifier();
  TraceReducer r(c);
  // A A A B A B B C A A
  r.Consume(ChunkOf(testing::Sequence("aaababbcaa"), *c));
  TraceProfile p = r.Finish(TraceMetadata(), Platform::kUnknown);
  std::vector<ChainStats> chains = ChainsOf(p.TypeSequence(), p.category_count());
  EXPECT_EQ(chains[0].runs, 3u);
  EXPECT_EQ(chains[0].multi_runs, 2u);
  EXPECT_EQ(chains[0].multi_kernels, 5u);
  EXPECT_EQ(chains[0].kernels, 6u);
  EXPECT_EQ(chains[1].runs, 2u);
  EXPECT_EQ(chains[1].multi_runs, 1u);
  EXPECT_EQ(chains[2].runs, 1u);
  EXPECT_EQ(chains[2].multi_runs, 0u);
}

TEST(PlatformDetection, EachRuleInOrder) {
  std::string why;
  TraceMetadata m;
  EXPECT_EQ(DetectPlatform(m, {}, {}, &why), Platform::kUnknown);
  EXPECT_EQ(why, "no platform marker found");

  TraceMetadata roc;
  roc.roctracer_version_truthy = true;
  roc.has_cupti_version = true;
  EXPECT_EQ(DetectPlatform(roc, {}, {}, &why), Platform::kAmd);
  EXPECT_EQ(why, "roctracer_version is set");

  TraceMetadata warp;
  warp.warp_size = 64;
  EXPECT_EQ(DetectPlatform(warp, {}, {}, &why), Platform::kAmd);

  TraceMetadata cupti;
  cupti.has_cupti_version = true;
  cupti.warp_size = 32;
  EXPECT_EQ(DetectPlatform(cupti, {}, {}, &why), Platform::kNvidia);

  TraceMetadata named;
  named.gpu_name = "AMD Radeon RX 7900 XTX";  // wave32: the reference would say NVIDIA
  named.warp_size = 32;
  EXPECT_EQ(DetectPlatform(named, {}, {}, &why), Platform::kAmd);

  EventEvidence kind;
  kind.kernels_with_kind = 3;
  EXPECT_EQ(DetectPlatform(m, kind, {}, &why), Platform::kAmd);

  EventEvidence launches;
  launches.cuda_runtime_calls = 5;
  launches.hip_runtime_calls = 1;
  EXPECT_EQ(DetectPlatform(m, launches, {}, &why), Platform::kNvidia);
  EXPECT_EQ(why, "1 hip* vs 5 cuda* runtime calls");

  EXPECT_EQ(DetectPlatform(m, {}, {"Cijk_Ailk", "ck::kernel", "elementwise"}, &why),
            Platform::kAmd);
  EXPECT_EQ(DetectPlatform(m, {}, {"nvjet_tst_128", "elementwise"}, &why), Platform::kNvidia);
}

}  // namespace
}  // namespace tracefuse
