// Rule files from data/rules/, embedded at build time (see cmake/EmbedFiles.cmake).
#ifndef TRACEFUSE_SRC_EMBEDDED_RULES_H_
#define TRACEFUSE_SRC_EMBEDDED_RULES_H_

#include <cstddef>
#include <string_view>

namespace tracefuse {

struct EmbeddedFile {
  std::string_view name;  // file name without extension
  std::string_view text;
};

extern const EmbeddedFile kEmbeddedRules[];
extern const size_t kEmbeddedRuleCount;

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_EMBEDDED_RULES_H_
