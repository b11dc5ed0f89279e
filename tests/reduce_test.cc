#include "tracefuse/reduce.h"

#include <algorithm>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "profile_builder.h"
#include "tracefuse/op_tree.h"

namespace tracefuse {
namespace {

using testing::TestKernel;

TEST(Reducer, GroupsInFirstAppearanceOrderAcrossChunks) {
  auto c = testing::LetterClassifier();
  TraceReducer r(c);
  testing::Consume(&r, {{"a1", 5, 7}, {"b1", 6, 3}, {"a1", 7, 7}, {"c1", 8, -1}}, c);
  testing::Consume(&r, {{"b2", 9, 3}, {"a1", 10, 9}, {"a2", 11, 7}}, c);
  TraceProfile p = r.Finish(TraceMetadata(), Platform::kUnknown);
  EXPECT_EQ(p.names, (std::vector<std::string>{"a1", "b1", "c1", "b2", "a2"}));
  EXPECT_EQ(p.group_correlation, (std::vector<int64_t>{7, 3, 9}));
  EXPECT_EQ(p.group_size, (std::vector<uint32_t>{3, 2, 1}));
  std::vector<uint32_t> groups;
  for (const KernelRecord& k : testing::Records(p.kernels)) groups.push_back(k.group);
  EXPECT_EQ(groups, (std::vector<uint32_t>{0, 1, 0, kNoGroup, 1, 2, 0}));
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
  testing::Consume(&r, {{"a", 2, -1}, {"b", 3, -1}, {"c", 2, -1}, {"b", 1, -1}, {"a", 2, -1}}, c);
  TraceProfile p = r.Finish(TraceMetadata(), Platform::kUnknown);
  EXPECT_EQ(p.TypeSequence(), (std::vector<CategoryId>{1, 0, 2, 0, 1}));
}

// Records as the reducer makes them: groups numbered in first-appearance order. Timestamps drift
// forward; about `displaced_share` of the kernels start up to 100 us earlier than the drift, as
// kernels of another stream interleave.
std::vector<KernelRecord> RandomRecords(std::mt19937_64& rng, size_t n, double displaced_share) {
  std::vector<KernelRecord> out;
  uint32_t groups = 0;
  int64_t ts = 1'700'000'000'000'000'000;
  for (size_t i = 0; i < n; ++i) {
    KernelRecord k;
    k.name = static_cast<uint32_t>(rng() % 300);
    switch (rng() % 4) {
      case 0:
        k.group = kNoGroup;
        break;
      case 1:
        k.group = groups++;
        break;
      default:
        k.group = groups == 0 ? kNoGroup : static_cast<uint32_t>(rng() % groups);
        break;
    }
    k.dur_ns = static_cast<int64_t>(rng() % 5'000'000);
    ts += static_cast<int64_t>(rng() % 20'000);
    const bool displaced = std::uniform_real_distribution<>(0, 1)(rng) < displaced_share;
    k.ts_ns = displaced ? ts - static_cast<int64_t>(rng() % 100'000) - 1 : ts;
    out.push_back(k);
  }
  return out;
}

TEST(KernelStream, RoundTripsRecordsInTraceOrder) {
  std::mt19937_64 rng(11);
  std::vector<KernelRecord> records = RandomRecords(rng, 200'000, 0.05);
  // Extremes: every int64 value must survive the wrapping deltas.
  const int64_t kMin = std::numeric_limits<int64_t>::min(),
                kMax = std::numeric_limits<int64_t>::max();
  records.push_back({kMin, kMax, UINT32_MAX - 1, kNoGroup});
  records.push_back({kMax, kMin, 0, kNoGroup});
  records.push_back({0, -1, 7, kNoGroup});
  records.push_back({-5, 0, 7, kNoGroup});
  KernelStream s;
  for (const KernelRecord& k : records) s.push_back(k);
  EXPECT_EQ(s.size(), records.size());
  EXPECT_EQ(testing::Records(s), records);
  // Segments fill up: 200,000 records need more than one 1 MiB segment.
  EXPECT_GT(s.encoded_bytes(), size_t{1} << 20);
  EXPECT_LT(s.encoded_bytes(), records.size() * 16);
}

std::vector<KernelRecord> InTsOrder(const KernelStream& s) {
  std::vector<KernelRecord> out;
  s.ForEachInTsOrder([&](const KernelRecord& k) { out.push_back(k); });
  return out;
}

std::vector<KernelRecord> StableSortedByTs(std::vector<KernelRecord> records) {
  std::stable_sort(records.begin(), records.end(),
                   [](const KernelRecord& a, const KernelRecord& b) { return a.ts_ns < b.ts_ns; });
  return records;
}

TEST(KernelStream, TsOrderIsAStableSortByTimestamp) {
  for (double displaced : {0.0, 0.001, 0.1, 0.5, 1.0}) {
    std::mt19937_64 rng(static_cast<uint64_t>(displaced * 1000) + 3);
    std::vector<KernelRecord> records = RandomRecords(rng, 20'000, displaced);
    for (size_t i = 0; i < records.size(); i += 7) records[i].ts_ns = records[i / 2].ts_ns;  // ties
    KernelStream s;
    uint64_t runs = 0;
    for (size_t i = 0; i < records.size(); ++i) {
      s.push_back(records[i]);
      runs += i == 0 || records[i].ts_ns < records[i - 1].ts_ns;
    }
    EXPECT_EQ(s.ts_runs(), runs) << displaced;
    EXPECT_EQ(InTsOrder(s), StableSortedByTs(records)) << displaced;
  }
}

TEST(KernelStream, TsOrderOfBlocksFlushedOutOfOrder) {
  // As in hta_nccl_data: a later block of kernels first, then an earlier one, each sorted, with
  // equal timestamps across blocks (the earlier block in trace order goes first on ties).
  std::vector<KernelRecord> records;
  for (int64_t ts = 500; ts < 600; ++ts) records.push_back({ts, 1, 1, kNoGroup});
  for (int64_t ts = 0; ts < 560; ts += 2) records.push_back({ts, 1, 2, kNoGroup});
  records.push_back({-7, 3, 3, kNoGroup});  // a one-kernel run
  KernelStream s;
  for (const KernelRecord& k : records) s.push_back(k);
  EXPECT_EQ(s.ts_runs(), 3u);
  EXPECT_EQ(InTsOrder(s), StableSortedByTs(records));
}

TEST(KernelStream, ReversedTraceIsOneRunPerKernel) {
  KernelStream s;
  for (int64_t ts = 10; ts > 0; --ts) s.push_back({ts, 1, static_cast<uint32_t>(ts), kNoGroup});
  EXPECT_EQ(s.ts_runs(), 10u);
  std::vector<int64_t> order;
  s.ForEachInTsOrder([&](const KernelRecord& k) { order.push_back(k.ts_ns); });
  EXPECT_EQ(order, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(KernelStream().ts_runs(), 0u);
}

TEST(Reducer, ChainStatistics) {
  auto c = testing::LetterClassifier();
  TraceReducer r(c);
  // A A A B A B B C A A
  testing::Consume(&r, testing::Sequence("aaababbcaa"), c);
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

namespace tracefuse {
namespace {

TEST(OpTree, NormalizeOpNameDropsWhatDiffersBetweenRuns) {
  EXPECT_EQ(NormalizeOpName("Linear_12"), "Linear");
  EXPECT_EQ(NormalizeOpName("BertLayer_0"), "BertLayer");
  EXPECT_EQ(NormalizeOpName("aten::linear"), "aten::linear");
  EXPECT_EQ(NormalizeOpName("model.py(123): forward"), "model.py: forward");
  EXPECT_EQ(NormalizeOpName("<built-in method at 0x7f3a9c01bd40>"), "<built-in method at 0x>");
  EXPECT_EQ(NormalizeOpName("fn.py(x)"), "fn.py(x)");  // not a line number
  EXPECT_EQ(NormalizeOpName("layer_"), "layer_");
  EXPECT_EQ(NormalizeOpName("0x"), "0x");
  EXPECT_EQ(NormalizeOpName(""), "");
}

TEST(OpTree, KernelFamilyFoldsTilesTypesAndArguments) {
  EXPECT_EQ(KernelFamily("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, float, "
                         "float>(float*, float const*, int)"),
            "at::native::cunn_SoftMaxForward");
  EXPECT_EQ(KernelFamily("Cijk_Alik_Bljk_HB_MT128x128x32_MI32x32x8"),
            "Cijk_Alik_Bljk_HB_MT#x#x#_MI#x#x#");
  EXPECT_EQ(KernelFamily("cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_"
                         "128x2_tn_align8>(Params)"),
            "cutlass_#_wmma_tensorop_bf#_s#gemm_bf#_#x#_#x#_tn_align#");
  EXPECT_EQ(KernelFamily("void cutlass::device_kernel<flash::FlashAttnFwdSm90<Traits, 1>>(P)"),
            "flash::FlashAttnFwdSm#");
  EXPECT_EQ(KernelFamily("triton_poi_fused_add_0"), "triton_poi_fused_add_#");
  EXPECT_EQ(
      KernelFamily("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEv"
                   "PT0_PT_PfS4_S4_S4_diiiiiiib"),
      "aiter::add_rmsnorm_quant_kernel");
  EXPECT_EQ(KernelFamily("_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EX"
                         "adL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i"),
            "sgl_hip::activation::act_and_mul_kernel");
  EXPECT_EQ(KernelFamily("_Z14paged_attnv2_kPfS_"), "paged_attnv#_k");
  EXPECT_EQ(KernelFamily("_ZN3foo3barC2Ev"), "foo::bar");
  EXPECT_EQ(KernelFamily("_ZN99tooshort"), "_ZN#tooshort");         // not a mangled name after all
  EXPECT_EQ(KernelFamily("void my::Kernel<>(int)"), "my::Kernel");  // no argument to name it by
  EXPECT_EQ(KernelFamily(std::string(100, 'k')), std::string(64, 'k'));
}

TEST(OpTree, LaunchUnitNamesAreTheSameForCudaAndHip) {
  for (const char* call : {"cudaGraphLaunch", "hipGraphLaunch"}) {
    EXPECT_EQ(LaunchUnitName(call), "[graph launch]");
  }
  for (const char* call : {"cudaLaunchKernel", "hipExtModuleLaunchKernel", "cuLaunchKernelEx"}) {
    EXPECT_EQ(LaunchUnitName(call), "[kernel launch]");
  }
  EXPECT_EQ(LaunchUnitName("hipMemcpyAsync"), "[memcpy]");
  EXPECT_EQ(LaunchUnitName("cudaMemsetAsync"), "[memset]");
}

}  // namespace
}  // namespace tracefuse
