// The GPU peak table data/gpus.yaml, embedded at build time (see cmake/EmbedFiles.cmake).
#ifndef TRACEFUSE_SRC_EMBEDDED_GPUS_H_
#define TRACEFUSE_SRC_EMBEDDED_GPUS_H_

#include <cstddef>

#include "embedded_rules.h"  // EmbeddedFile

namespace tracefuse {

// kEmbeddedGpuSpecs holds one file, "gpus".
extern const EmbeddedFile kEmbeddedGpuSpecs[];
extern const size_t kEmbeddedGpuSpecCount;

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_EMBEDDED_GPUS_H_
