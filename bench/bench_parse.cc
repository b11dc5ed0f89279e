// Chunk parser throughput: simdjson On-Demand over event chunks into kernel records, with the
// parser warm (reused, as in the pipeline), for several chunk sizes; and, at 2 MiB, with the CPU
// side read too (`tracefuse ops`), against the kernels alone in the same run.
#include <benchmark/benchmark.h>

#include "bench_input.h"
#include "tracefuse/parse/chunk_parser.h"

namespace tracefuse::bench {
namespace {

void BM_ParseWarm(benchmark::State& state) {
  const std::string& text = GeneratedTrace("amd", "lines", 64 << 20);
  std::vector<EventChunk> chunks = Chunks(text, size_t(state.range(0)));
  ChunkParser parser;
  ParsedChunk out;
  uint64_t events = 0;
  for (auto _ : state) {
    for (const EventChunk& c : chunks) {
      if (!parser.Parse(c, "bench", &out).ok()) state.SkipWithError("parse failed");
      events += out.events;
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
  state.counters["events/s"] = benchmark::Counter(double(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ParseWarm)->Arg(1 << 20)->Arg(2 << 20)->Arg(4 << 20)->Unit(benchmark::kMillisecond);

void BM_ParseWithHostActivity(benchmark::State& state) {
  const std::string& text = GeneratedTrace("amd", "lines", 64 << 20);
  std::vector<EventChunk> chunks = Chunks(text, 2 << 20);
  ChunkParser parser;
  ParsedChunk out;
  ParseOptions options;
  options.host_activity = true;
  for (auto _ : state) {
    for (const EventChunk& c : chunks) {
      if (!parser.Parse(c, "bench", &out, options).ok()) state.SkipWithError("parse failed");
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
}
BENCHMARK(BM_ParseWithHostActivity)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tracefuse::bench

BENCHMARK_MAIN();
