// Stage 7: rendering results for people (text, markdown) and programs (JSON, CSV), and writing
// them out atomically.
#ifndef TRACEFUSE_REPORT_H_
#define TRACEFUSE_REPORT_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "tracefuse/reduce.h"

namespace tracefuse {

using Json = nlohmann::ordered_json;

// `tracefuse stats`: one trace's shape. `elapsed_seconds` is the command's wall time.
Json StatsJson(const TraceProfile& profile, double elapsed_seconds);
std::string StatsText(const TraceProfile& profile, double elapsed_seconds);

// Serialises with UTF-8 kept as is (invalid bytes replaced), `indent` < 0 for one line.
std::string DumpJson(const Json& json, int indent = 2);

// Writes `content` to `path` through a temporary file in the same directory and a rename, so a
// failed or killed run never leaves a partial file. "-" writes to standard output.
absl::Status WriteOutput(const std::string& path, std::string_view content);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_H_
