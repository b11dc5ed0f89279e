// Stage 7, report: JSON documents built as a tree (nlohmann), for outputs small enough to hold,
// such as `stats` and the CLI's `classify` lines. The fusion report, which must match the
// Python reference byte for byte and may hold 100,000 mappings, is streamed instead.
#ifndef TRACEFUSE_REPORT_JSON_H_
#define TRACEFUSE_REPORT_JSON_H_

#include <cstdint>
#include <string>

#include "nlohmann/json.hpp"

namespace tracefuse {

// Json keeps keys in insertion order, so outputs list fields in the order they are written.
using Json = nlohmann::ordered_json;

// JsonInfinity says how a streamed JSON report writes an infinite number: null, as the
// reference's formatter does and strict JSON wants, or Infinity, which Python's json.loads reads
// back as float('inf') (the Python module's dicts keep the reference's infinities so).
enum class JsonInfinity : uint8_t { kNull, kLiteral };

// DumpJson() serialises with UTF-8 kept as is (invalid bytes replaced rather than throwing: kernel
// names come from traces), `indent` < 0 for one line.
std::string DumpJson(const Json& json, int indent = 2);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_JSON_H_
