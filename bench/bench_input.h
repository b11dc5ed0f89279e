// Inputs shared by the benchmarks: a generated trace held in memory, split into chunks.
#ifndef TRACEFUSE_BENCH_BENCH_INPUT_H_
#define TRACEFUSE_BENCH_BENCH_INPUT_H_

#include <memory>
#include <string>
#include <vector>

#include "tracefuse/scan/event_chunker.h"

namespace tracefuse::bench {

// A synthetic trace of about `bytes` bytes from tracefuse-gen ("lines" or "compact" layout),
// generated once per process.
const std::string& GeneratedTrace(const std::string& platform, const std::string& layout,
                                  size_t bytes);

// The whole of `text` as one Block.
Block WholeBlock(const std::string& text);

// `text` split into event chunks of about `chunk_bytes`.
std::vector<EventChunk> Chunks(const std::string& text, size_t chunk_bytes);

// Distinct kernel names: those of the golden names file and of every real trace when ../shared
// is present, else those of generated traces.
std::vector<std::string> KernelNames();

}  // namespace tracefuse::bench

#endif  // TRACEFUSE_BENCH_BENCH_INPUT_H_
