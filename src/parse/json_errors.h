// Where in a JSON text simdjson's first pass failed: it says what, not where. Internal to the
// parse stage.
#ifndef TRACEFUSE_PARSE_JSON_ERRORS_H_
#define TRACEFUSE_PARSE_JSON_ERRORS_H_

#include <simdjson.h>

#include <string_view>

namespace tracefuse {

// FirstPassErrorAt() is where `json` holds what simdjson's first pass rejected with `err`: the
// first byte of invalid UTF-8, the first control character inside a string, or the opening quote
// of a string left unclosed; nullptr for other errors. So that the offset in a message does not
// depend on where the text was cut for parsing.
const char* FirstPassErrorAt(std::string_view json, simdjson::error_code err);

}  // namespace tracefuse

#endif  // TRACEFUSE_PARSE_JSON_ERRORS_H_
