// Event splitter and serial front throughput (bytes/s) on generated traces.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>

#include "bench_input.h"
#include "tracefuse/io/byte_source.h"
#include "tracefuse/scan/event_chunker.h"

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

// The serial front of the pipeline alone, on a regular file (warm page cache): the exact
// splitter reads the keys and the first event, then chunks are cut at newlines between events,
// reading only the bytes around each cut; the parallel stage would read the chunks. Issue 12
// asks for at least 8 GB/s per trace; BM_Splitter is the exact, byte-by-byte front it replaces.
void BM_SerialFront(benchmark::State& state, const char* layout) {
  const std::string& text = GeneratedTrace("amd", layout, 256 << 20);
  const std::string path = "/tmp/tracefuse-bench-front-" + std::string(layout) + ".json";
  {
    std::ofstream out(path, std::ios::binary);
    out << text;
  }
  std::vector<EventChunk> chunks;
  size_t speculative = 0;
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<ByteSource>> file = OpenSource(path);
    EventChunker chunker("bench", ChunkerOptions{});
    chunker.UseFile(file->get());
    chunks.clear();
    absl::Status st;
    while (st.ok()) {
      if (chunker.cutting_file()) {
        st = chunker.CutFile(&chunks);
        continue;
      }
      if (std::optional<uint64_t> at = chunker.TakeSeek()) (*file)->SeekTo(*at);
      Block block;
      absl::StatusOr<bool> more = (*file)->Next(&block);
      if (!more.ok() || !*more) break;
      st = chunker.Feed(block, &chunks);
    }
    if (!st.ok() || !chunker.Finish(&chunks).ok()) {
      state.SkipWithError("cutting failed");
      break;
    }
    speculative = 0;
    for (const EventChunk& c : chunks) speculative += c.speculative;
    benchmark::DoNotOptimize(chunks.data());
  }
  std::remove(path.c_str());
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
  state.counters["chunks"] = double(chunks.size());
  state.counters["speculative"] = double(speculative);
}
// The serial front on a stream (a pipe, or inflated blocks), less the reading or inflating: the
// blocks are in memory, and cuts are searched in them.
void BM_SerialFrontStream(benchmark::State& state, const char* layout) {
  const std::string& text = GeneratedTrace("amd", layout, 256 << 20);
  const size_t kBlock = size_t{2} << 20;
  std::vector<EventChunk> chunks;
  for (auto _ : state) {
    EventChunker chunker("bench", ChunkerOptions{});
    chunks.clear();
    absl::Status st;
    for (size_t at = 0; at < text.size() && st.ok(); at += kBlock) {
      Block block;
      block.data = text.data() + at;
      block.size = std::min(kBlock, text.size() - at);
      block.offset = at;
      st = chunker.Feed(block, &chunks);
    }
    if (!st.ok() || !chunker.Finish(&chunks).ok()) {
      state.SkipWithError("cutting failed");
      break;
    }
    benchmark::DoNotOptimize(chunks.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
  state.counters["chunks"] = double(chunks.size());
}
BENCHMARK_CAPTURE(BM_SerialFrontStream, kineto, "kineto")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SerialFrontStream, compact, "compact")->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(BM_SerialFront, kineto, "kineto")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SerialFront, lines, "lines")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SerialFront, compact, "compact")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Splitter, kineto, "kineto")->Unit(benchmark::kMillisecond);

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
