// What the harnesses share: failing loudly, and checking an error's message.
#ifndef TRACEFUSE_FUZZ_FUZZ_CHECK_H_
#define TRACEFUSE_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace tracefuse::fuzz {

// Fail() reports a broken invariant and aborts: libFuzzer keeps the input that got here as a
// crash, whatever the sanitizers saw.
[[noreturn]] inline void Fail(const std::string& what) {
  std::fprintf(stderr, "tracefuse fuzz: invariant broken: %s\n", what.c_str());
  std::abort();
}

// Abbreviated() keeps a message to one screen: a difference can be in a 64 KiB result.
inline std::string Abbreviated(std::string_view s, size_t limit = 2000) {
  if (s.size() <= limit) return std::string(s);
  return std::string(s.substr(0, limit)) + "... (" + std::to_string(s.size()) + " bytes)";
}

// CheckErrorMessage() holds every error tracefuse prints to the same form: one line that starts
// with `prefix` (the file it is about: "t.json: ", "rules.yaml:" before a line number) and says
// something after it.
inline void CheckErrorMessage(const absl::Status& status, const std::string& prefix) {
  const std::string message(status.message());
  if (message.compare(0, prefix.size(), prefix) != 0 || message.size() == prefix.size() ||
      message.find('\n') != std::string::npos) {
    Fail("error message not one line starting with '" + prefix + "': " + status.ToString());
  }
}

}  // namespace tracefuse::fuzz

#endif  // TRACEFUSE_FUZZ_FUZZ_CHECK_H_
