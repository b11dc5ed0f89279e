// The merge stage: AnalyzeFusion on two reduced traces with N graph-replay groups each, and group
// matching alone against the reference's algorithm (every trace-1 group rescans its whole
// signature bucket and scores every candidate), run in the same process.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analyze/fusion/internal.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/pipeline/flow_graph.h"
#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse::bench {
namespace {

std::shared_ptr<const Classifier> WaferKernel() {
  static auto c = *Classifier::Create(*RuleSet::Load("wafer-kernel"));
  return c;
}

// A decode step of 5 layers as one graph replay; the AMD-like side runs a separate reduce after
// attention and a separate residual add.
const std::vector<std::string> kLayer1 = {"triton_red_fused_rsqrt_0",
                                          "Cijk_Ailk_Bljk_qkv",
                                          "reshape_and_cache_kernel",
                                          "kernel_unified_attention_3d",
                                          "reduce_segments_kernel",
                                          "Cijk_Ailk_Bljk_o",
                                          "vectorized_elementwise_kernel_add",
                                          "triton_red_fused_rsqrt_1",
                                          "Cijk_Ailk_Bljk_up",
                                          "act_and_mul_silu",
                                          "Cijk_Ailk_Bljk_down"};
const std::vector<std::string> kLayer2 = {"triton_red_fused_rsqrt_0",
                                          "nvjet_tst_qkv",
                                          "reshape_and_cache_kernel",
                                          "fmhaSm100fKernel_ForGen",
                                          "nvjet_tst_o",
                                          "triton_red_fused_rsqrt_1",
                                          "nvjet_tst_up",
                                          "act_and_mul_silu",
                                          "nvjet_tst_down",
                                          "vectorized_elementwise_kernel_add"};

TraceProfile Build(const std::vector<std::string>& layer, int groups) {
  auto c = WaferKernel();
  TraceReducer reducer(c);
  ParsedChunk chunk;
  for (const std::string& n : layer) chunk.names.Append(n);
  std::vector<RuleId> rules;
  CachedClassifier(c, Platform::kUnknown).ClassifyNames(chunk, &rules);
  int64_t ts = 0;
  for (int g = 0; g < groups; ++g) {
    chunk.kernels.clear();
    for (int l = 0; l < 5; ++l) {
      for (uint32_t i = 0; i < layer.size(); ++i) {
        KernelEvent k;
        k.name = i;
        k.ts_ns = ts += 1000;
        k.dur_ns = 900;
        k.correlation = 1000 + g;
        k.flags = KernelEvent::kHasCorrelation;
        chunk.kernels.push_back(k);
      }
    }
    reducer.Consume(chunk, rules);
  }
  return reducer.Finish(TraceMetadata(), Platform::kUnknown);
}

const std::pair<TraceProfile, TraceProfile>& Profiles(int groups) {
  static std::map<int, std::pair<TraceProfile, TraceProfile>> cache;
  auto it = cache.find(groups);
  if (it == cache.end()) {
    it =
        cache.emplace(groups, std::make_pair(Build(kLayer1, groups), Build(kLayer2, groups))).first;
  }
  return it->second;
}

void BM_AnalyzeFusion(benchmark::State& state) {
  const auto& [a, b] = Profiles(static_cast<int>(state.range(0)));
  size_t mappings = 0;
  for (auto _ : state) {
    FusionReport r = AnalyzeFusion(a, b);
    mappings = r.mappings.size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["groups"] = double(state.range(0));
  state.counters["kernels"] = double(a.kernels.size() + b.kernels.size());
  state.counters["mappings"] = double(mappings);
}
BENCHMARK(BM_AnalyzeFusion)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

std::vector<GroupShape> Shapes(int groups, int spread) {
  std::vector<GroupShape> out;
  for (int g = 0; g < groups; ++g) {
    std::vector<CategoryId> types(50 + g % spread, 0);
    for (size_t i = 0; i < types.size(); i += 3) types[i] = static_cast<CategoryId>(1 + g % 4);
    out.push_back(GroupShape::Of(types.data(), types.size(), true, true));
  }
  return out;
}

void BM_MatchGroups(benchmark::State& state) {
  auto a = Shapes(static_cast<int>(state.range(0)), 7);
  auto b = Shapes(static_cast<int>(state.range(0)), 5);
  for (auto _ : state) benchmark::DoNotOptimize(MatchGroups(a, b));
  state.counters["groups"] = double(state.range(0));
}
BENCHMARK(BM_MatchGroups)->Arg(2000)->Arg(100000)->Unit(benchmark::kMillisecond);

// The reference's matcher, transcribed: per trace-1 group, filter the unused candidates of its
// signature bucket and score each one.
std::vector<std::pair<uint32_t, uint32_t>> ReferenceMatch(const std::vector<GroupShape>& a,
                                                          const std::vector<GroupShape>& b) {
  auto sig = [](const GroupShape& g, int delta) {
    return std::make_tuple(int(g.size / 10 * 10) + delta, g.has_attention, g.has_ffn, g.dominant);
  };
  std::map<std::tuple<int, bool, bool, CategoryId>, std::vector<uint32_t>> by_sig;
  for (uint32_t j = 0; j < b.size(); ++j) by_sig[sig(b[j], 0)].push_back(j);
  std::vector<uint32_t> order(a.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t x, uint32_t y) { return a[x].size > a[y].size; });
  std::set<uint32_t> used;
  std::vector<std::pair<uint32_t, uint32_t>> matches;
  for (uint32_t i : order) {
    std::vector<uint32_t> candidates;
    for (uint32_t j : by_sig[sig(a[i], 0)])
      if (!used.count(j)) candidates.push_back(j);
    if (candidates.empty()) {
      for (int d : {-10, 10})
        for (uint32_t j : by_sig[sig(a[i], d)])
          if (!used.count(j)) candidates.push_back(j);
    }
    int64_t best_score = 0;
    int best = -1;
    for (uint32_t j : candidates) {
      if (!(a[i].size / 1.25 <= b[j].size && b[j].size <= a[i].size * 1.25)) continue;
      int shared = 0;
      for (size_t w = 0; w < a[i].composition.size() && w < b[j].composition.size(); ++w)
        shared += __builtin_popcountll(a[i].composition[w] & b[j].composition[w]);
      int64_t score = std::llabs(int64_t(a[i].size) - int64_t(b[j].size)) - 10 * shared;
      if (best < 0 || score < best_score) {
        best = int(j);
        best_score = score;
      }
    }
    if (best >= 0) {
      used.insert(uint32_t(best));
      matches.emplace_back(i, uint32_t(best));
    }
  }
  return matches;
}

void BM_ReferenceMatchGroups(benchmark::State& state) {
  auto a = Shapes(static_cast<int>(state.range(0)), 7);
  auto b = Shapes(static_cast<int>(state.range(0)), 5);
  if (ReferenceMatch(a, b) != MatchGroups(a, b)) {
    state.SkipWithError("the reference matcher and MatchGroups disagree");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(ReferenceMatch(a, b));
  state.counters["groups"] = double(state.range(0));
}
BENCHMARK(BM_ReferenceMatchGroups)->Arg(2000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tracefuse::bench

int main(int argc, char** argv) {
  tracefuse::KeepFreedMemoryForReuse();  // as the tracefuse binary does
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
