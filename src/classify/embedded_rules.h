// Rule files from data/rules/, embedded at build time (see cmake/EmbedFiles.cmake).
#ifndef TRACEFUSE_SRC_CLASSIFY_EMBEDDED_RULES_H_
#define TRACEFUSE_SRC_CLASSIFY_EMBEDDED_RULES_H_

#include <cstddef>

#include "tracefuse/base/embedded_file.h"

namespace tracefuse {

extern const EmbeddedFile kEmbeddedRules[];
extern const size_t kEmbeddedRuleCount;

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_CLASSIFY_EMBEDDED_RULES_H_
