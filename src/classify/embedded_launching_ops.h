// The launching-op table data/launching-ops.yaml, embedded at build time (cmake/EmbedFiles.cmake).
#ifndef TRACEFUSE_SRC_CLASSIFY_EMBEDDED_LAUNCHING_OPS_H_
#define TRACEFUSE_SRC_CLASSIFY_EMBEDDED_LAUNCHING_OPS_H_

#include <cstddef>

#include "tracefuse/base/embedded_file.h"

namespace tracefuse {

// kEmbeddedLaunchingOps holds one file, "launching-ops".
extern const EmbeddedFile kEmbeddedLaunchingOps[];
extern const size_t kEmbeddedLaunchingOpCount;

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_CLASSIFY_EMBEDDED_LAUNCHING_OPS_H_
