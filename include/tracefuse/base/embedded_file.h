// Library tracefuse_base: data files compiled into the binary.
// EmbeddedFile is one file embedded at build time by cmake/EmbedFiles.cmake (the rule sets of
// data/rules/, the tables of data/); the stage that reads a file declares its array in an
// internal header (src/classify/embedded_rules.h, src/analyze/perf/embedded_gpus.h).
#ifndef TRACEFUSE_BASE_EMBEDDED_FILE_H_
#define TRACEFUSE_BASE_EMBEDDED_FILE_H_

#include <string_view>

namespace tracefuse {

struct EmbeddedFile {
  std::string_view name;  // file name without extension
  std::string_view text;
};

}  // namespace tracefuse

#endif  // TRACEFUSE_BASE_EMBEDDED_FILE_H_
