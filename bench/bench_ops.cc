// The op-level comparison's own stages on a generated 64 MB pair, read once through the pipeline
// with its CPU side: BuildOpTree (linking one trace's kernels to its ops), CompareOps (aligning
// the two traces step by step) and FindFusionDifferences (what the alignment says of fusion),
// against the fusion comparison of the same pair
// (AnalyzeFusion, what `compare` runs at that point) as the baseline of the same run.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>

#include "bench_input.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/analyze/op_compare.h"
#include "tracefuse/pipeline/flow_graph.h"
#include "tracefuse/reduce/op_tree.h"

namespace tracefuse::bench {
namespace {

// The generated pair, profiled once with kernel records and CPU side.
const std::vector<TraceProfile>& Profiles() {
  static const std::vector<TraceProfile> profiles = [] {
    std::vector<std::string> paths;
    for (const char* platform : {"amd", "nvidia"}) {
      const std::string path = std::string("/tmp/tracefuse-bench-ops-") + platform + ".json";
      std::ofstream(path) << GeneratedTrace(platform, "lines", size_t{64} << 20);
      paths.push_back(path);
    }
    PipelineOptions options;
    options.host_activity = true;
    auto classifier = LoadClassifier("tracefuse");
    auto p = ProfileTraces(paths, *classifier, options);
    for (const std::string& path : paths) std::remove(path.c_str());
    if (!p.ok()) std::abort();
    return std::move(*p);
  }();
  return profiles;
}

void BM_BuildOpTree(benchmark::State& state) {
  const TraceProfile& p = Profiles()[0];
  for (auto _ : state) benchmark::DoNotOptimize(BuildOpTree(p));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(p.kernel_count));
}
BENCHMARK(BM_BuildOpTree)->Unit(benchmark::kMillisecond);

void BM_CompareOps(benchmark::State& state) {
  const OpTree a = BuildOpTree(Profiles()[0]), b = BuildOpTree(Profiles()[1]);
  for (auto _ : state)
    benchmark::DoNotOptimize(CompareOps({{&Profiles()[0], &Profiles()[1]}}, {{&a, &b}}));
  state.SetItemsProcessed(state.iterations() *
                          static_cast<int64_t>(a.units.size() + b.units.size()));
}
BENCHMARK(BM_CompareOps)->Unit(benchmark::kMillisecond);

// BM_FindFusionDifferences: the generated pair's graph replays differ in every step, so every
// step is a candidate; its cost is three reads of each trace's kernel records.
void BM_FindFusionDifferences(benchmark::State& state) {
  const OpTree a = BuildOpTree(Profiles()[0]), b = BuildOpTree(Profiles()[1]);
  const OpComparison compared = CompareOps({{&Profiles()[0], &Profiles()[1]}}, {{&a, &b}});
  for (auto _ : state) {
    state.PauseTiming();  // it consumes the candidates: a copy of them for each run
    OpComparison ops;
    ops.candidates = compared.candidates;
    ops.candidate_units = compared.candidate_units;
    ops.candidate_scopes = compared.candidate_scopes;
    state.ResumeTiming();
    FindFusionDifferences({{&Profiles()[0], &Profiles()[1]}}, {{&a, &b}}, &ops);
    benchmark::DoNotOptimize(ops.fusion_differences);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(Profiles()[0].kernel_count +
                                                                    Profiles()[1].kernel_count));
}
BENCHMARK(BM_FindFusionDifferences)->Unit(benchmark::kMillisecond);

void BM_AnalyzeFusionBaseline(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(AnalyzeFusion(Profiles()[0], Profiles()[1], FusionOptions()));
  }
}
BENCHMARK(BM_AnalyzeFusionBaseline)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tracefuse::bench

BENCHMARK_MAIN();
