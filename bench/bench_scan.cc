// Event splitter throughput (bytes/s) on generated traces held in memory, both layouts.
#include <benchmark/benchmark.h>

#include "bench_input.h"

namespace tracefuse::bench {
namespace {

void BM_Splitter(benchmark::State& state, const char* layout) {
  const std::string& text = GeneratedTrace("amd", layout, 64 << 20);
  const Block block = WholeBlock(text);
  std::vector<EventChunk> chunks;
  for (auto _ : state) {
    EventSplitter splitter("bench");
    chunks.clear();
    if (!splitter.Feed(block, &chunks).ok() || !splitter.Finish().ok()) {
      state.SkipWithError("split failed");
      break;
    }
    benchmark::DoNotOptimize(chunks.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
  state.counters["chunks"] = double(chunks.size());
}
BENCHMARK_CAPTURE(BM_Splitter, lines, "lines")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Splitter, compact, "compact")->Unit(benchmark::kMillisecond);

// The floor of any byte-by-byte scan: memchr for one character over the same bytes.
void BM_MemchrBaseline(benchmark::State& state) {
  const std::string& text = GeneratedTrace("amd", "lines", 64 << 20);
  for (auto _ : state) {
    size_t n = 0;
    for (const char* p = text.data();
         (p = static_cast<const char*>(memchr(p, '\x01', text.data() + text.size() - p)));) {
      ++n;
      ++p;
    }
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
}
BENCHMARK(BM_MemchrBaseline)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tracefuse::bench

BENCHMARK_MAIN();
