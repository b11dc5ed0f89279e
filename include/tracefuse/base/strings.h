// Library tracefuse_base: small string and hash-table helpers shared by every stage.
//
// Debian's Abseil is built with its own absl::string_view, distinct from std::string_view, so
// the project formats with {fmt} and keys hash maps by std::string with std::string_view lookup.
#ifndef TRACEFUSE_BASE_STRINGS_H_
#define TRACEFUSE_BASE_STRINGS_H_

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace tracefuse {

// ClearKeepingCapacity() empties a hash map or set and keeps its table for the next use.
// Abseil's clear() frees a table of more than 127 slots, so a table cleared for each chunk grew
// again from nothing in every chunk, allocating under the one lock of the heap that the parsing
// threads share: a thread that finds it taken sleeps, and on these VMs wakes 2-4 ms later
// (docs/performance.md, "The heap's lock, and the VM's wake-ups").
template <typename Table>
void ClearKeepingCapacity(Table* table) {
  table->erase(table->begin(), table->end());
}

// EscapedControls() is `text` with its control characters written as \xNN: error messages quote
// files (keys, names, what a parser stumbled on), and a newline there would split the one-line
// error.
inline std::string EscapedControls(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", byte);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// AsciiLower() is `s` with its ASCII letters lowercased: absl::AsciiStrToLower for a
// std::string_view, which Debian's absl::AsciiStrToLower(absl::string_view) does not take.
inline std::string AsciiLower(std::string_view s) {
  std::string lower(s);
  absl::AsciiStrToLower(&lower);
  return lower;
}

// Concatenates the {fmt} renderings of its arguments.
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (fmt::format_to(std::back_inserter(out), "{}", args), ...);
  return out;
}

// 1234567 -> "1,234,567" (Python's "{:,}").
template <typename Int>
std::string Thousands(Int v) {
  const bool negative = v < 0;
  std::string digits = std::to_string(negative ? -static_cast<int64_t>(v) : v);
  std::string out = negative ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    return absl::Hash<absl::string_view>{}(absl::string_view(s.data(), s.size()));
  }
};
struct StringEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};

// A hash map keyed by std::string that can be searched with a std::string_view.
template <typename V>
using StringMap = absl::flat_hash_map<std::string, V, StringHash, StringEq>;

// StringIndex finds strings of a std::vector<std::string> it does not own by their text, storing
// only their positions: each string is held once, in the vector (a trace's kernel names can be
// long). The vector may grow, but must outlive the index and keep every indexed string.
class StringIndex {
 public:
  explicit StringIndex(const std::vector<std::string>* strings)
      : ids_(0, Hash{strings}, Eq{strings}) {}

  // Find() is the position of `s` in the vector, if indexed.
  std::optional<uint32_t> Find(std::string_view s) const {
    auto it = ids_.find(s);
    if (it == ids_.end()) return std::nullopt;
    return *it;
  }
  // Add() indexes the string at `id`.
  void Add(uint32_t id) { ids_.insert(id); }
  void Clear() { ids_.clear(); }

 private:
  struct Hash {
    using is_transparent = void;
    const std::vector<std::string>* strings;
    size_t operator()(uint32_t id) const { return StringHash{}((*strings)[id]); }
    size_t operator()(std::string_view s) const { return StringHash{}(s); }
  };
  struct Eq {
    using is_transparent = void;
    const std::vector<std::string>* strings;
    std::string_view At(uint32_t id) const { return (*strings)[id]; }
    bool operator()(uint32_t a, uint32_t b) const { return a == b; }
    bool operator()(uint32_t a, std::string_view b) const { return At(a) == b; }
    bool operator()(std::string_view a, uint32_t b) const { return a == At(b); }
  };
  absl::flat_hash_set<uint32_t, Hash, Eq> ids_;
};

}  // namespace tracefuse

#endif  // TRACEFUSE_BASE_STRINGS_H_
