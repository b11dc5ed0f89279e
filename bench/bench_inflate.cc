// Decompression throughput (bytes/s of JSON out) of the compressed sources, on one generated
// trace (Kineto's layout, 64 MiB) compressed in memory as users compress theirs: gzip at its
// default level (6), inflated by ISA-L and by zlib alone, and zstd at its default level (3). Each
// runs through OpenSource() and its pooled buffers, as `stats` and `compare` read, from a file on
// tmpfs (/dev/shm), so that no disk is timed; a plain read of the JSON is the floor.
#include <benchmark/benchmark.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "bench_input.h"
#include "tracefuse/io.h"

namespace tracefuse::bench {
namespace {

std::string Gzip(const std::string& data) {
  z_stream zs{};
  deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string Zstd(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), data.data(), data.size(), ZSTD_CLEVEL_DEFAULT));
  return out;
}

// The trace, as `format` ("json", "gz" or "zst"), in a file on tmpfs removed at exit.
const std::string& TraceFile(const std::string& format) {
  static std::map<std::string, std::string> paths;
  auto it = paths.find(format);
  if (it != paths.end()) return it->second;
  const std::string& json = GeneratedTrace("amd", "kineto", 64 << 20);
  const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  const std::string path =
      dir + "/tracefuse-bench-inflate-" + std::to_string(getpid()) + "." + format;
  std::ofstream(path, std::ios::binary) << (format == "gz"    ? Gzip(json)
                                            : format == "zst" ? Zstd(json)
                                                              : json);
  static struct Cleanup {
    ~Cleanup() {
      for (const auto& [_, p] : paths) std::remove(p.c_str());
    }
  } cleanup;
  return paths[format] = path;
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
