// The GPU peak table data/gpus.yaml, embedded at build time (see cmake/EmbedFiles.cmake).
#ifndef TRACEFUSE_SRC_ANALYZE_PERF_EMBEDDED_GPUS_H_
#define TRACEFUSE_SRC_ANALYZE_PERF_EMBEDDED_GPUS_H_

#include <cstddef>

#include "tracefuse/base/embedded_file.h"

namespace tracefuse {

// kEmbeddedGpuSpecs holds one file, "gpus".
extern const EmbeddedFile kEmbeddedGpuSpecs[];
extern const size_t kEmbeddedGpuSpecCount;

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_ANALYZE_PERF_EMBEDDED_GPUS_H_
