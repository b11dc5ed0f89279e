#include "report/common/py_json_writer.h"

#include <cmath>

#include "fmt/format.h"

namespace tracefuse {
namespace {

// One code point from UTF-8 at s[*i], advancing *i past it; an invalid byte becomes U+FFFD.
uint32_t DecodeUtf8(std::string_view s, size_t* i) {
  unsigned char c = static_cast<unsigned char>(s[*i]);
  int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
  if (extra < 0 || *i + extra >= s.size() + (extra > 0 ? 0 : 1)) {
    ++*i;
    return 0xFFFD;
  }
  uint32_t cp = c & (0x3F >> extra);
  for (int k = 1; k <= extra; ++k) {
    unsigned char cc = static_cast<unsigned char>(s[*i + k]);
    if ((cc & 0xC0) != 0x80) {
      ++*i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (cc & 0x3F);
  }
  *i += extra + 1;
  return cp;
}

// Python's escape of an ASCII character, or null when it is written as is.
const char* ShortEscape(unsigned char c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
  }
  return nullptr;
}

// IsPlain() says whether Python writes the character as is: printable ASCII but the quote and
// the backslash.
bool IsPlain(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

}  // namespace

absl::Status PyJsonWriter::MaybeFlush() {
  if (sink_ == nullptr || out_->size() < kFlushBytes) return absl::OkStatus();
  absl::Status st = sink_->Append(*out_);
  out_->clear();
  return st;
}

void PyJsonWriter::Key(std::string_view key) {
  NextItem();
  String(key);
  *out_ += ": ";
  after_key_ = true;
}

void PyJsonWriter::Value(std::string_view s) {
  NextItem();
  String(s);
}

void PyJsonWriter::Value(double d) {
  NextItem();
  if (!std::isfinite(d)) {
    const bool literal = infinity_ == JsonInfinity::kLiteral && std::isinf(d);
    *out_ += literal ? (d > 0 ? "Infinity" : "-Infinity") : "null";
    return;
  }
  char repr[32];
  const size_t length = fmt::format_to_n(repr, sizeof(repr), "{}", d).size;
  const std::string_view written(repr, length);
  out_->append(written);
  if (written.find_first_of(".e") == std::string_view::npos) *out_ += ".0";
}

void PyJsonWriter::Open(char bracket) {
  NextItem();
  *out_ += bracket;
  const bool on_one_line =
      open_.size() >= inline_depth_ || (!open_.empty() && open_.back().on_one_line);
  open_.push_back(Container{false, on_one_line});
}

void PyJsonWriter::Close(char bracket) {
  const Container closed = open_.back();
  open_.pop_back();
  if (closed.has_items && !closed.on_one_line) Newline();
  *out_ += bracket;
}

void PyJsonWriter::NextItem() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (open_.empty()) return;
  Container& c = open_.back();
  if (c.on_one_line) {
    if (c.has_items) *out_ += ", ";
  } else {
    if (c.has_items) *out_ += ',';
    Newline();
  }
  c.has_items = true;
}

void PyJsonWriter::Newline() {
  *out_ += '\n';
  out_->append(2 * open_.size(), ' ');
}

void PyJsonWriter::String(std::string_view s) {
  *out_ += '"';
  for (size_t i = 0; i < s.size();) {
    // Runs of characters written as they are, appended at once.
    size_t plain = i;
    while (plain < s.size() && IsPlain(static_cast<unsigned char>(s[plain]))) ++plain;
    out_->append(s.data() + i, plain - i);
    i = plain;
    if (i == s.size()) break;
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      NonAscii(s, &i);
      continue;
    }
    if (const char* escape = ShortEscape(c)) {
      *out_ += escape;
    } else if (c < 0x20) {
      *out_ += fmt::format("\\u{:04x}", c);
    } else {
      *out_ += static_cast<char>(c);
    }
    ++i;
  }
  *out_ += '"';
}

// A code point beyond ASCII as \uXXXX, or as a UTF-16 surrogate pair beyond the BMP.
void PyJsonWriter::NonAscii(std::string_view s, size_t* i) {
  uint32_t cp = DecodeUtf8(s, i);
  if (cp >= 0x10000) {
    cp -= 0x10000;
    *out_ += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
  } else {
    *out_ += fmt::format("\\u{:04x}", cp);
  }
}

void PyJsonWriter::Value(const Json& j) {
  switch (j.type()) {
    case Json::value_t::object:
      BeginObject();
      for (const auto& [key, value] : j.items()) Field(key, value);
      EndObject();
      break;
    case Json::value_t::array:
      BeginArray();
      for (const Json& value : j) Value(value);
      EndArray();
      break;
    case Json::value_t::string:
      Value(j.get_ref<const std::string&>());
      break;
    case Json::value_t::boolean:
      Value(j.get<bool>());
      break;
    case Json::value_t::number_integer:
      Value(j.get<int64_t>());
      break;
    case Json::value_t::number_unsigned:
      Value(j.get<uint64_t>());
      break;
    case Json::value_t::number_float:
      Value(j.get<double>());
      break;
    default:  // null, and the binary and discarded values no report makes
      Null();
      break;
  }
}

}  // namespace tracefuse
