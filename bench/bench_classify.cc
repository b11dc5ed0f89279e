// Classification throughput, names per second and bytes per second:
//   Hyperscan  - the Classifier on every distinct name, no cache (what a first sight costs);
//   Cached     - lookups in a warm CachedClassifier, as the pipeline does for repeated names;
//   Baseline   - the same rules evaluated one by one with substring search (SubstringClassifier:
//                std::string::find on a lowercased copy, as the Python reference does;
//                std::regex for the regexes), in the same run.
// `tracefuse bench classify` measures the same three on any names, on 1..N threads.
#include <benchmark/benchmark.h>

#include "bench_input.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/classify/classifier.h"

namespace tracefuse::bench {
namespace {

const std::vector<std::string>& Names() {
  static const std::vector<std::string> names = KernelNames();
  return names;
}

size_t TotalBytes(const std::vector<std::string>& names) {
  size_t n = 0;
  for (const auto& s : names) n += s.size();
  return n;
}

std::shared_ptr<const Classifier> Load(const char* set) {
  return *Classifier::Create(*RuleSet::Load(set));
}

void Report(benchmark::State& state, const std::vector<std::string>& names) {
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(names.size()));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(TotalBytes(names)));
}

void BM_Hyperscan(benchmark::State& state, const char* set) {
  auto c = Load(set);
  const auto& names = Names();
  for (auto _ : state) {
    for (const std::string& n : names) benchmark::DoNotOptimize(c->Classify(n, Platform::kAmd));
  }
  Report(state, names);
}

void BM_Cached(benchmark::State& state, const char* set) {
  // The pipeline's own cache (CachedClassifier), warm: an out-of-line call and a hash lookup.
  CachedClassifier cache(Load(set), Platform::kAmd);
  const auto& names = Names();
  for (const std::string& n : names) cache.Classify(n);
  for (auto _ : state) {
    for (const std::string& n : names) benchmark::DoNotOptimize(cache.Classify(n));
  }
  Report(state, names);
}

void BM_Baseline(benchmark::State& state, const char* set) {
  auto baseline = *SubstringClassifier::Create(*RuleSet::Load(set));
  auto c = Load(set);
  const auto& names = Names();
  for (const std::string& n : names) {
    if (baseline->Classify(n, Platform::kAmd) != c->Classify(n, Platform::kAmd)) {
      state.SkipWithError(("baseline disagrees on " + n).c_str());
      return;
    }
  }
  for (auto _ : state) {
    for (const std::string& n : names)
      benchmark::DoNotOptimize(baseline->Classify(n, Platform::kAmd));
  }
  Report(state, names);
}

BENCHMARK_CAPTURE(BM_Hyperscan, tracefuse, "tracefuse");
BENCHMARK_CAPTURE(BM_Cached, tracefuse, "tracefuse");
BENCHMARK_CAPTURE(BM_Baseline, tracefuse, "tracefuse");
BENCHMARK_CAPTURE(BM_Hyperscan, wafer_kernel, "wafer-kernel");
BENCHMARK_CAPTURE(BM_Cached, wafer_kernel, "wafer-kernel");
BENCHMARK_CAPTURE(BM_Baseline, wafer_kernel, "wafer-kernel");
BENCHMARK_CAPTURE(BM_Hyperscan, wafer_op, "wafer-op");
BENCHMARK_CAPTURE(BM_Cached, wafer_op, "wafer-op");
BENCHMARK_CAPTURE(BM_Baseline, wafer_op, "wafer-op");

}  // namespace
}  // namespace tracefuse::bench

BENCHMARK_MAIN();
