#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>
#include <random>
#include <set>

#include "gtest/gtest.h"
#include "profile_builder.h"
#include "simdjson.h"
#include "test_util.h"
#include "tracefuse/pipeline/flow_graph.h"
#include "tracefuse/reduce/op_tree.h"
#include "tracefuse/reduce/trace_profile.h"

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

// Without kernel records, the groups are counted and sized the same, and their ids not kept.
TEST(Reducer, GroupIdsAreKeptOnlyWithKernelRecords) {
  auto c = testing::LetterClassifier();
  TraceReducer r(c, /*keep_kernel_records=*/false);
  testing::Consume(&r, {{"a1", 5, 7}, {"b1", 6, 3}, {"a1", 7, 7}, {"c1", 8, -1}}, c);
  testing::Consume(&r, {{"b2", 9, 3}, {"a1", 10, 9}, {"a2", 11, 7}}, c);
  TraceProfile p = r.Finish(TraceMetadata(), Platform::kUnknown);
  EXPECT_TRUE(p.group_correlation.empty());
  EXPECT_EQ(p.group_size, (std::vector<uint32_t>{3, 2, 1}));
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

// A stream that keeps placement gives each kernel's device and stream back, in trace and in ts
// order; one that does not gives -1 for both, whatever was pushed.
TEST(KernelStream, KeepsDeviceAndStreamWhenAsked) {
  std::mt19937_64 rng(17);
  std::vector<KernelRecord> records = RandomRecords(rng, 50'000, 0.05);
  int32_t device = -1, stream = -1;
  size_t moves = 0;
  for (KernelRecord& k : records) {
    if (rng() % 10 == 0) {                           // most kernels run where the one before did
      device = static_cast<int32_t>(rng() % 9) - 1;  // -1 (none) to 7
      stream = static_cast<int32_t>(rng() % 200) - 1;
      ++moves;
    }
    k.device = device;
    k.stream = stream;
  }
  records.push_back({5, 1, 3, kNoGroup, std::numeric_limits<int32_t>::min(),
                     std::numeric_limits<int32_t>::max()});
  KernelStream placed, plain;
  placed.KeepPlacement();
  for (const KernelRecord& k : records) {
    placed.push_back(k);
    plain.push_back(k);
  }
  EXPECT_EQ(testing::Records(placed), records);
  std::vector<KernelRecord> unplaced = records;
  for (KernelRecord& k : unplaced) k.device = k.stream = -1;
  EXPECT_EQ(testing::Records(plain), unplaced);
  std::vector<KernelRecord> in_ts_order;
  placed.ForEachInTsOrder([&](const KernelRecord& k) { in_ts_order.push_back(k); });
  std::vector<KernelRecord> sorted = records;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const KernelRecord& a, const KernelRecord& b) { return a.ts_ns < b.ts_ns; });
  EXPECT_EQ(in_ts_order, sorted);
  // A kernel that moved costs its device and stream (a few bytes); one that did not, at most the
  // name's bit.
  EXPECT_LT(placed.encoded_bytes() - plain.encoded_bytes(), moves * 4 + records.size() / 4);
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

// Correlation ids as CUPTI numbers them (mostly one more than the last), with jumps both ways and
// the extremes, read back in order, at random and backwards.
TEST(PackedCorrelations, ReadsBackEveryIdInAnyOrder) {
  std::mt19937_64 rng(5);
  std::vector<int64_t> ids;
  int64_t id = 1000;
  for (int i = 0; i < 5000; ++i) {
    id += rng() % 50 == 0 ? static_cast<int64_t>(rng() % 100000) - 50000 : 1;
    ids.push_back(id);
  }
  ids.insert(ids.begin() + 700,
             {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), 0, -1});
  const PackedCorrelations packed(ids);
  ASSERT_EQ(packed.size(), ids.size());
  PackedCorrelations::Cursor cursor;
  for (uint32_t g = 0; g < ids.size(); ++g) ASSERT_EQ(packed.At(g, &cursor), ids[g]) << g;
  for (uint32_t g = static_cast<uint32_t>(ids.size()); g-- > 0;) {
    ASSERT_EQ(packed.At(g, &cursor), ids[g]) << g;
  }
  for (int i = 0; i < 2000; ++i) {
    const auto g = static_cast<uint32_t>(rng() % ids.size());
    ASSERT_EQ(packed.At(g), ids[g]) << g;
  }
  EXPECT_LT(packed.size() * 2, ids.size() * sizeof(int64_t));  // most ids take a byte
}

// TraceProfile::PackGroupCorrelations() empties the vector; GroupCorrelation() reads either.
TEST(PackedCorrelations, ProfileReadsThemPackedOrNot) {
  TraceProfile p;
  p.group_correlation = {7, 8, 9, 3};
  EXPECT_EQ(p.GroupCorrelation(3), 3);
  p.PackGroupCorrelations();
  EXPECT_TRUE(p.group_correlation.empty());
  EXPECT_EQ(p.correlated_groups(), 4u);
  EXPECT_EQ(p.GroupCorrelation(0), 7);
  EXPECT_EQ(p.GroupCorrelation(3), 3);
  EXPECT_EQ(p.GroupCorrelation(4), std::nullopt);
}

// Spans whose start is far from their block's earliest, or whose duration 32 bits do not hold
// (or that end before they start, or at the limits), come back whole.
TEST(UnitSpans, RoundTripsEverySpan) {
  std::mt19937_64 rng(9);
  std::vector<UnitSpan> spans;
  int64_t ts = 1'700'000'000'000'000'000;
  for (int i = 0; i < 3000; ++i) {
    ts += static_cast<int64_t>(rng() % 1'000'000);
    spans.push_back(UnitSpan{ts, ts + static_cast<int64_t>(rng() % 5'000'000)});
  }
  spans[10].end_ns = spans[10].ts_ns + (int64_t{1} << 33);  // 8.6 s
  spans[300].ts_ns += int64_t{1} << 40;                     // far from its block's base
  spans[301].end_ns = spans[301].ts_ns - 5;                 // ends before it starts
  spans[600] = UnitSpan{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  spans[601] = UnitSpan{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()};
  UnitSpans kept;
  kept.Set(spans);
  ASSERT_EQ(kept.size(), spans.size());
  for (size_t u = 0; u < spans.size(); ++u) {
    EXPECT_EQ(kept[u].ts_ns, spans[u].ts_ns) << u;
    EXPECT_EQ(kept[u].end_ns, spans[u].end_ns) << u;
  }
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

// A name that is a C++ signature keeps its qualified function name whatever its return type; a
// name without a parameter list keeps the family it had before return types were skipped.
TEST(OpTree, KernelFamilyIsTheFunctionNameWhateverTheReturnType) {
  EXPECT_EQ(KernelFamily("std::enable_if<(bool)1, void>::type vllm::fused_add_rms_norm_kernel<"
                         "c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, c10::BFloat16 "
                         "const*, float, int, int)"),
            "vllm::fused_add_rms_norm_kernel");
  // As c++filt writes it: a comparison inside the enable_if condition.
  EXPECT_EQ(KernelFamily("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, "
                         "void>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>("
                         "c10::BFloat16*, long, c10::BFloat16*, c10::BFloat16 const*, float, int, "
                         "int)"),
            "vllm::fused_add_rms_norm_kernel");
  EXPECT_EQ(KernelFamily("typename std::enable_if<std::is_same<T, float>::value, void>::type "
                         "ns::scale<float, 4>(float*, int)"),
            "ns::scale");
  EXPECT_EQ(KernelFamily("int foo<4>(int)"), "foo");
  EXPECT_EQ(KernelFamily("unsigned int bar::baz(unsigned int const*, int)"), "bar::baz");
  EXPECT_EQ(KernelFamily("__global__ void qux<unsigned int, 4>(unsigned int*)"), "qux");
  EXPECT_EQ(KernelFamily("static void a::b(int)"), "a::b");
  EXPECT_EQ(KernelFamily("foo<unsigned int, 4>(unsigned int*)"), "foo");
  EXPECT_EQ(KernelFamily("decltype (ns::f<int>()) ns::g<int>(int)"), "ns::g");
  EXPECT_EQ(KernelFamily("decltype(auto) ns::h(int)"), "ns::h");
  // Lambdas and operator() in the template arguments and the parameters.
  EXPECT_EQ(KernelFamily("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
                         "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar)::"
                         "{lambda()#1}::operator()() const::{lambda(float)#1}, at::detail::Array<"
                         "char*, 2> >(int, at::native::(anonymous namespace)::launch_clamp_scalar("
                         "at::TensorIteratorBase&, c10::Scalar)::{lambda()#1}::operator()() const::"
                         "{lambda(float)#1}, at::detail::Array<char*, 2>)"),
            "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(KernelFamily("std::enable_if<true, void>::type ns::apply<ns::run(int)::{lambda(int)#1}>"
                         "(ns::run(int)::{lambda(int)#1})"),
            "ns::apply");
  EXPECT_EQ(KernelFamily("void ns::Functor<float>::operator()(float*) const"), "ns::Functor");
  // A generic wrapper whose first argument is a built-in type keeps its own name.
  EXPECT_EQ(KernelFamily("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, "
                         "float, float, float, float, false, true, true, false, 7, "
                         "cublasGemvParams<float> >(cublasGemvParams<float>)"),
            "internal::gemvx::kernel");
  EXPECT_EQ(KernelFamily("void cutlass::Kernel<128>(P)"), "cutlass::Kernel");
  // Cut at 64 bytes inside a "::": the colons go.
  EXPECT_EQ(KernelFamily("void " + std::string(62, 'n') + "::scale<float>(float*)"),
            std::string(62, 'n'));
  // No parameter list: as before.
  EXPECT_EQ(KernelFamily("nccl:all_reduce"), "nccl:all_reduce");
  EXPECT_EQ(KernelFamily("Memcpy HtoD (Pageable -> Device)"), "Memcpy HtoD");
  EXPECT_EQ(KernelFamily("Memset (Device)"), "Memset");
  EXPECT_EQ(KernelFamily("void vllm::rms_norm_kernel<c10::BFloat16>"), "vllm::rms_norm_kernel");
  EXPECT_EQ(KernelFamily("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgs4K)"),
            "ncclDevKernel_AllReduce_Sum_bf#_RING_LL");
  EXPECT_EQ(KernelFamily(""), "");
}

// FamilyProblem() is what is wrong with `family` as KernelFamily(name), "" when nothing is: it
// must not be empty, a keyword or type word (a return type taken for the name), a type trait
// (std::enable_if<...>::type), nor a bare namespace, a prefix of the qualified name that ends
// before one of its "::" (found as such: every occurrence of `family` in the name, digits folded,
// is followed by "::").
std::string FamilyProblem(const std::string& name, const std::string& family) {
  if (family.empty()) return name.empty() ? "" : "empty";
  static const std::set<std::string> kWords = {
      "void",   "int",    "unsigned",   "signed",     "long",     "short",    "char",  "float",
      "double", "bool",   "auto",       "static",     "typename", "template", "const", "volatile",
      "inline", "extern", "__global__", "__device__", "__host__", "struct",   "class", "decltype",
      "std",    "at",     "at::native", "c10",        "cutlass",  "cute",     "vllm",  "flash"};
  if (kWords.count(family) || kWords.count(family.substr(0, family.find(' '))))
    return "a keyword, a type word or a namespace";
  for (const char* trait :
       {"std::enable_if", "std::conditional", "std::is_", "std::remove_", "std::add_", "std::decay",
        "std::common_type", "std::void_t", "std::integral_constant", "std::invoke_result",
        "std::result_of", "std::underlying_type", "std::type_identity"}) {
    if (family.rfind(trait, 0) == 0) return "a type trait";
  }
  if (family.size() >= 2 && family.compare(family.size() - 2, 2, "::") == 0) return "ends with ::";
  // A family cut at 64 bytes may end before any "::" of the name.
  if (family.size() + 2 >= 64) return "";
  std::string folded;
  constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  for (size_t i = 0; i < name.size(); ++i) {
    if (name.compare(i, kAnonymous.size(), kAnonymous) == 0) {
      i += kAnonymous.size() - 1;
    } else if (std::isdigit(static_cast<unsigned char>(name[i]))) {
      folded += '#';
      while (i + 1 < name.size() && std::isdigit(static_cast<unsigned char>(name[i + 1]))) ++i;
    } else {
      folded += name[i];
    }
  }
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  bool before_colons = false;
  for (size_t at = folded.find(family); at != std::string::npos; at = folded.find(family, at + 1)) {
    if (at > 0 && (word(folded[at - 1]) || folded[at - 1] == ':')) continue;  // inside a name
    if (folded.compare(at + family.size(), 2, "::") != 0) return "";
    before_colons = true;
  }
  return before_colons ? "a bare namespace" : "";
}

// ExpectSoundFamilies() checks the family of each name, naming the name and where it comes from.
void ExpectSoundFamilies(const std::vector<std::string>& names, const std::string& source) {
  for (const std::string& name : names) {
    const std::string family = KernelFamily(name);
    const std::string problem = FamilyProblem(name, family);
    EXPECT_EQ(problem, "") << source << ": family \"" << family << "\" of \"" << name << "\"";
  }
}

TEST(FamilyProblem, CatchesReturnTypesAndNamespaces) {
  EXPECT_EQ(FamilyProblem("std::enable_if<true, void>::type vllm::k<8>(int)", "std::enable_if"),
            "a type trait");
  EXPECT_EQ(FamilyProblem("unsigned int ns::k(int)", "unsigned int"),
            "a keyword, a type word or a namespace");
  EXPECT_EQ(FamilyProblem("void at::native::k<4>(int)", "at::native"),
            "a keyword, a type word or a namespace");
  EXPECT_EQ(FamilyProblem("void my::ns::k<4>(my::ns::P)", "my::ns"), "a bare namespace");
  EXPECT_EQ(FamilyProblem("void my::ns::k<4>(my::ns::P)", "my::ns::k"), "");
  EXPECT_EQ(FamilyProblem("void ns::k<4>(int)", "ns::"), "ends with ::");
  EXPECT_EQ(FamilyProblem("void ns::k<4>(int)", ""), "empty");
  EXPECT_EQ(FamilyProblem("_ZN5aiter6kernelIfEEv", "aiter::kernel"), "");
  EXPECT_EQ(
      FamilyProblem("cutlass::Kernel2<cutlass_80_gemm>(cutlass_80_gemm::Params)", "cutlass_#_gemm"),
      "");
}

// Every kernel name harvested from the libraries' sources (tests/data/kernel_names/*.tsv: a
// header of '#' lines, then category, family label and name, tab-separated) has a sound family.
TEST(OpTree, KernelFamilyOfEveryHarvestedNameIsItsFunctionName) {
  const std::vector<std::string> files = testing::FilesIn(TRACEFUSE_KERNEL_NAMES_DIR, ".tsv");
  ASSERT_GE(files.size(), 20u) << TRACEFUSE_KERNEL_NAMES_DIR;
  size_t count = 0;
  for (const std::string& file : files) {
    std::ifstream in(file);
    std::vector<std::string> names;
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      const size_t a = line.find('\t');
      const size_t b = a == std::string::npos ? a : line.find('\t', a + 1);
      ASSERT_NE(b, std::string::npos) << file << ": " << line;
      names.push_back(line.substr(b + 1));
    }
    ExpectSoundFamilies(names, file);
    count += names.size();
  }
  EXPECT_GT(count, 1000u);
}

// Every kernel name of the real traces of ../shared and of the reference's golden names.
TEST(OpTree, KernelFamilyOfEveryRealNameIsItsFunctionName) {
  TRACEFUSE_REQUIRE_SHARED();
  std::vector<std::string> traces;
  for (const std::string& f : testing::FilesIn(testing::SharedDir() + "/traces/real", ".json.gz"))
    if (f.find("rocprof") == std::string::npos) traces.push_back(f);  // not a Kineto trace
  ASSERT_GE(traces.size(), 10u);
  auto profiles = ProfileTraces(traces, *Classifier::Create(*RuleSet::Load("wafer-kernel")), {});
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  size_t count = 0;
  for (const TraceProfile& p : *profiles) {
    ExpectSoundFamilies(p.names, p.path);
    count += p.names.size();
  }
  EXPECT_GT(count, 500u);

  const std::string golden = testing::SharedDir() + "/golden/classify/kernel_names.jsonl";
  std::ifstream in(golden);
  simdjson::dom::parser parser;
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    simdjson::dom::element row = parser.parse(simdjson::padded_string(line)).value();
    names.emplace_back(std::string_view(row["name"].get_string().value()));
  }
  ASSERT_GT(names.size(), 400u) << golden;
  ExpectSoundFamilies(names, golden);
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
