// Decompression throughput (bytes/s of JSON out) of the compressed sources, on one generated
// trace (Kineto's layout, 64 MiB) compressed as users compress theirs: gzip at its default level
// (6), inflated by ISA-L and by zlib alone, and zstd at its default level (3). Each runs through
// OpenSource() and its pooled buffers, as `stats` and `compare` read, from a file on tmpfs
// (/dev/shm), so that no disk is timed; a plain read of the JSON is the floor.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "bench_input.h"
#include "tracefuse/io/byte_source.h"

namespace tracefuse::bench {
namespace {

// The trace as `format` ("json", or "gz" / "zst": compressed by the gzip / zstd command at its
// default level, as users compress theirs), in a file on tmpfs removed at exit.
const std::string& TraceFile(const std::string& format) {
  static std::map<std::string, std::string> paths;
  auto it = paths.find(format);
  if (it != paths.end()) return it->second;
  static struct Cleanup {
    ~Cleanup() {
      for (const auto& [_, p] : paths) std::remove(p.c_str());
    }
  } cleanup;
  const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  const std::string path = dir + "/tracefuse-bench-inflate-" + std::to_string(getpid()) + ".";
  if (format == "json") {
    std::ofstream(path + format, std::ios::binary) << GeneratedTrace("amd", "kineto", 64 << 20);
  } else {
    const std::string command =
        (format == "gz" ? "gzip" : "zstd -q") + (" -c " + TraceFile("json") + " >" + path + format);
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "bench: cannot run %s\n", command.c_str());
      std::exit(1);
    }
  }
  return paths[format] = path + format;
}

void BM_Read(benchmark::State& state, const char* format, GzipInflaterKind inflater) {
  const std::string& path = TraceFile(format);
  SourceOptions options;
  options.gzip_inflater = inflater;
  uint64_t bytes = 0, file_bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<ByteSource>> source = OpenSource(path, options);
    if (!source.ok()) {
      state.SkipWithError(std::string(source.status().message()).c_str());
      return;
    }
    Block block;
    bytes = 0;
    while (true) {
      absl::StatusOr<bool> more = (*source)->Next(&block);
      if (!more.ok()) {
        state.SkipWithError(std::string(more.status().message()).c_str());
        return;
      }
      if (!*more) break;
      bytes += block.size;
    }
    file_bytes = (*source)->file_bytes();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
  state.counters["ratio"] = double(bytes) / double(file_bytes);
}
BENCHMARK_CAPTURE(BM_Read, plain, "json", GzipInflaterKind::kIsal)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Read, gzip_isal, "gz", GzipInflaterKind::kIsal)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Read, gzip_zlib, "gz", GzipInflaterKind::kZlib)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Read, zstd, "zst", GzipInflaterKind::kIsal)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tracefuse::bench

BENCHMARK_MAIN();
