// The per-kernel stream the reducer keeps for the fusion analysis: appending and decoding kernel
// records of a generated trace, against the plain 24-byte struct in a std::vector, in the same
// run; and the ts-order walk when the trace is not in ts order.
#include <benchmark/benchmark.h>

#include <random>

#include "bench_input.h"
#include "tracefuse/parse/chunk_parser.h"
#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse::bench {
namespace {

// The kernel records of a 256 MB generated trace, as the reducer numbers names and groups.
const std::vector<KernelRecord>& Records() {
  static const std::vector<KernelRecord> records = [] {
    auto classifier = *Classifier::Create(*RuleSet::Load("tracefuse"));
    TraceReducer reducer(classifier);
    ChunkParser parser;
    ParsedChunk parsed;
    CachedClassifier names(classifier, Platform::kAmd);
    std::vector<RuleId> rules;
    for (const EventChunk& c : Chunks(GeneratedTrace("amd", "lines", 256 << 20), 2 << 20)) {
      if (!parser.Parse(c, "bench", &parsed).ok()) std::abort();
      names.ClassifyNames(parsed, &rules);
      reducer.Consume(parsed, rules);
    }
    TraceProfile p = reducer.Finish(TraceMetadata(), Platform::kAmd);
    std::vector<KernelRecord> out;
    p.kernels.ForEach([&](const KernelRecord& k) { out.push_back(k); });
    return out;
  }();
  return records;
}

// The same records with a share of them moved 50 us earlier, as kernels of a concurrent stream
// (a collective next to compute) land in a trace: each makes a new run of ts order.
KernelStream WithDisplacedKernels(double share) {
  std::mt19937_64 rng(5);
  std::bernoulli_distribution displaced(share);
  KernelStream s;
  for (KernelRecord k : Records()) {
    if (displaced(rng)) k.ts_ns -= 50'000;
    s.push_back(k);
  }
  return s;
}

void SetCounters(benchmark::State& state, uint64_t bytes) {
  const double kernels = double(Records().size());
  state.counters["kernels/s"] =
      benchmark::Counter(kernels * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["bytes/kernel"] = double(bytes) / kernels;
}

void BM_AppendStream(benchmark::State& state) {
  uint64_t bytes = 0;
  for (auto _ : state) {
    KernelStream s;
    for (const KernelRecord& k : Records()) s.push_back(k);
    bytes = s.encoded_bytes();
    benchmark::DoNotOptimize(s);
  }
  SetCounters(state, bytes);
}
BENCHMARK(BM_AppendStream)->Unit(benchmark::kMillisecond);

void BM_AppendVectorBaseline(benchmark::State& state) {
  for (auto _ : state) {
    std::vector<KernelRecord> v;
    for (const KernelRecord& k : Records()) v.push_back(k);
    benchmark::DoNotOptimize(v.data());
  }
  SetCounters(state, sizeof(KernelRecord) * Records().size());
}
BENCHMARK(BM_AppendVectorBaseline)->Unit(benchmark::kMillisecond);

void BM_DecodeStream(benchmark::State& state) {
  KernelStream s;
  for (const KernelRecord& k : Records()) s.push_back(k);
  for (auto _ : state) {
    int64_t total = 0;
    s.ForEach([&](const KernelRecord& k) { total += k.dur_ns + k.group; });
    benchmark::DoNotOptimize(total);
  }
  SetCounters(state, s.encoded_bytes());
}
BENCHMARK(BM_DecodeStream)->Unit(benchmark::kMillisecond);

void BM_ReadVectorBaseline(benchmark::State& state) {
  const std::vector<KernelRecord>& v = Records();
  for (auto _ : state) {
    int64_t total = 0;
    for (const KernelRecord& k : v) total += k.dur_ns + k.group;
    benchmark::DoNotOptimize(total);
  }
  SetCounters(state, sizeof(KernelRecord) * v.size());
}
BENCHMARK(BM_ReadVectorBaseline)->Unit(benchmark::kMillisecond);

// Argument: displaced kernels per thousand.
void BM_TsOrder(benchmark::State& state) {
  KernelStream s = WithDisplacedKernels(double(state.range(0)) / 1000);
  for (auto _ : state) {
    int64_t total = 0;
    s.ForEachInTsOrder([&](const KernelRecord& k) { total += k.name; });
    benchmark::DoNotOptimize(total);
  }
  SetCounters(state, s.encoded_bytes());
  state.counters["runs"] = double(s.ts_runs());
}
BENCHMARK(BM_TsOrder)->Arg(0)->Arg(10)->Arg(300)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tracefuse::bench

BENCHMARK_MAIN();
