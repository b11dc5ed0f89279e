// The per-kernel stream the reducer keeps for the fusion analysis: appending and decoding kernel
// records of a generated trace, against the plain 24-byte struct in a std::vector, in the same
// run; the ts-order walk when the trace is not in ts order; and the serial cost of the launch join
// (why each GPU idles) against the devices' sweeps that it joins, on the same GPU events.
#include <benchmark/benchmark.h>

#include <random>

#include "bench_input.h"
#include "tracefuse/parse/chunk_parser.h"
#include "tracefuse/reduce/launch_join.h"
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

// What the serial reduce gets per chunk of a generated 256 MB trace in Kineto's layout: the
// chunk's launches and its GPU events, by device and start (the parallel stage's summary).
struct GpuChunk {
  std::vector<Launch> launches;
  InternedStrings apis;
  std::vector<GpuActivity> gpu;
  std::vector<GpuActivityKind> name_kinds;
  std::vector<LaunchRun> runs;
};
const std::vector<GpuChunk>& GpuChunks() {
  static const std::vector<GpuChunk> chunks = [] {
    auto classifier = *Classifier::Create(*RuleSet::Load("tracefuse"));
    ChunkParser parser;
    ParsedChunk parsed;
    ChunkSummary summary;
    CachedClassifier names(classifier, Platform::kNvidia);
    std::vector<RuleId> rules;
    std::vector<GpuChunk> out;
    for (const EventChunk& c : Chunks(GeneratedTrace("nvidia", "kineto", 256 << 20), 2 << 20)) {
      if (!parser.Parse(c, "bench", &parsed).ok()) std::abort();
      names.ClassifyNames(parsed, &rules);
      summary.Summarize(parsed, false, *classifier, rules);
      out.push_back(GpuChunk{parsed.launches, parsed.launch_apis, summary.gpu, summary.name_kinds,
                             summary.launch_runs});
    }
    return out;
  }();
  return chunks;
}

void SetGpuCounters(benchmark::State& state) {
  uint64_t events = 0, launches = 0;
  for (const GpuChunk& c : GpuChunks()) {
    events += c.gpu.size();
    launches += c.launches.size();
  }
  state.counters["events/s"] =
      benchmark::Counter(double(events * state.iterations()), benchmark::Counter::kIsRate);
  state.counters["launches"] = double(launches);
}

// Argument 1: by runs of one launch, as the reducer takes them (LaunchJoin::AddRun()); 0: event
// by event.
void BM_LaunchJoin(benchmark::State& state) {
  GpuChunks();  // read before the clock starts
  const bool by_runs = state.range(0) == 1;
  for (auto _ : state) {
    LaunchJoin join;
    for (const GpuChunk& c : GpuChunks()) {
      join.NextChunk();
      if (!join.AddLaunches(c.launches, c.apis)) std::abort();
      for (const LaunchRun& run : c.runs) {
        if (by_runs) {
          if (!join.AddRun(&c.gpu[run.begin], run.end - run.begin)) std::abort();
          continue;
        }
        for (uint32_t i = run.begin; i < run.end; ++i) {
          const GpuActivity& a = c.gpu[i];
          if (!join.AddActivity(a.device, a.start_ns, a.end_ns, a.correlation, a.stream)) {
            std::abort();
          }
        }
      }
    }
    GpuTimeline timeline;
    timeline.devices.push_back(DeviceTimeline{});
    join.Finish(&timeline);
    benchmark::DoNotOptimize(timeline.devices[0].idle);
  }
  SetGpuCounters(state);
}
BENCHMARK(BM_LaunchJoin)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// The baseline: the same events swept one by one, as a device's figures are when a chunk's sweep
// cannot be appended whole.
void BM_DeviceSweepBaseline(benchmark::State& state) {
  GpuChunks();
  for (auto _ : state) {
    DeviceSweep sweep;
    for (const GpuChunk& c : GpuChunks()) {
      for (const GpuActivity& a : c.gpu) {
        if (!sweep.Add(a.start_ns, a.end_ns, KindOf(a, c.name_kinds))) std::abort();
      }
    }
    benchmark::DoNotOptimize(sweep.Figures());
  }
  SetGpuCounters(state);
}
BENCHMARK(BM_DeviceSweepBaseline)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tracefuse::bench

BENCHMARK_MAIN();
