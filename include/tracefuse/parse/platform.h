// Platform: which GPU vendor's stack wrote a trace, and how tracefuse decides it.
//
// Part of the parse stage's library: detection reads the top-level metadata and the event
// evidence that the parser collects, and every later stage (rule sets with `platform:`
// predicates, the reducer, the reports) only consumes the result.
#ifndef TRACEFUSE_PARSE_PLATFORM_H_
#define TRACEFUSE_PARSE_PLATFORM_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracefuse/parse/chunk_parser.h"

namespace tracefuse {

enum class Platform : uint8_t { kUnknown, kAmd, kNvidia };
// kPlatformCount is the number of Platform values, for arrays indexed by Platform.
inline constexpr size_t kPlatformCount = 3;

// kAmdWarpSize: the reference calls a trace AMD when deviceProperties[0].warpSize is this (or its
// roctracer_version is truthy); spec §2.1.
inline constexpr int64_t kAmdWarpSize = 64;

// PlatformName() is "unknown", "AMD" or "NVIDIA".
std::string_view PlatformName(Platform p);

// DetectPlatform() decides the platform from the top-level metadata, then event evidence, then
// kernel-name families, in that order (see docs/guide.md, "Platform detection"). The reference's
// own rule comes first, so that both agree wherever it decides. `evidence_out` says which test
// decided.
Platform DetectPlatform(const TraceMetadata& metadata, const EventEvidence& events,
                        const std::vector<std::string>& kernel_names, std::string* evidence_out);

}  // namespace tracefuse

#endif  // TRACEFUSE_PARSE_PLATFORM_H_
