// Internal to the report stage: JSON written exactly as the Python reference writes it.
#ifndef TRACEFUSE_SRC_REPORT_COMMON_PY_JSON_WRITER_H_
#define TRACEFUSE_SRC_REPORT_COMMON_PY_JSON_WRITER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "tracefuse/report/json.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse {

// PyJsonWriter writes JSON as Python's json.dumps(obj, indent=2) does, so tracefuse's reports
// compare byte for byte with the reference's: ", " / ": " separators with one value per line,
// empty containers as [] and {}, ASCII-only strings (\uXXXX escapes, invalid UTF-8 as U+FFFD),
// floats in repr form (shortest round trip, "1.0" for integral values) and infinities as null
// (the reference sanitises them so), or as Infinity, which Python's json.loads reads back as
// float('inf') (the Python module's dicts keep the reference's infinities). It streams: a report
// with 100,000 mappings is written without building a document tree.
class PyJsonWriter {
 public:
  // Appends to `out`; MaybeFlush() hands it to `sink`, or keeps it in `out` when `sink` is null.
  PyJsonWriter(std::string* out, OutputFile* sink, JsonInfinity infinity = JsonInfinity::kNull)
      : out_(out), sink_(sink), infinity_(infinity) {
    if (sink_ != nullptr) out_->reserve(2 * kFlushBytes);
  }

  // Hands what is buffered to the sink once it is large.
  absl::Status MaybeFlush();

  // WriteInlineFrom() writes containers opened inside `depth` others on one line, as
  // json.dumps(indent=None) writes them: a long list of small objects then takes a line each.
  void WriteInlineFrom(size_t depth) { inline_depth_ = depth; }

  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(std::string_view key);
  void Value(std::string_view s);
  void Value(const char* s) { Value(std::string_view(s)); }
  void Value(const std::string& s) { Value(std::string_view(s)); }
  void Value(double d);
  // Value() of a document tree: a part that a report shares with the tree-built ones (stats).
  void Value(const Json& j);
  void Null() {
    NextItem();
    *out_ += "null";
  }
  void Value(bool b) {
    NextItem();
    *out_ += b ? "true" : "false";  // Python's json.dumps spelling
  }
  template <typename Int,
            typename = std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>>>
  void Value(Int v) {
    NextItem();
    *out_ += std::to_string(v);
  }
  // Value() of an optional: its value, or null.
  template <typename V>
  void Value(const std::optional<V>& value) {
    if (value) {
      Value(*value);
    } else {
      Null();
    }
  }
  template <typename V>
  void Field(std::string_view key, const V& value) {
    Key(key);
    Value(value);
  }

  // Performance: MaybeFlush() hands the sink what is buffered past this. A buffer of a megabyte
  // (the threshold before) doubled its way to 2 MiB through pages never touched before, 1-2 ms
  // of a 100 MB pair's run on these VMs (docs/performance.md, "Small files"); this one is
  // reserved once, and costs a write() per 64 KiB instead.
  static constexpr size_t kFlushBytes = size_t{64} << 10;

 private:
  void Open(char bracket);
  void Close(char bracket);
  void NextItem();
  void Newline();
  void String(std::string_view s);
  void NonAscii(std::string_view s, size_t* i);

  std::string* out_;
  OutputFile* sink_;
  JsonInfinity infinity_;
  // Per open container: whether it has an item yet, and whether it is written on one line.
  struct Container {
    bool has_items = false;
    bool on_one_line = false;
  };
  std::vector<Container> open_;
  size_t inline_depth_ = SIZE_MAX;
  bool after_key_ = false;
};

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_REPORT_COMMON_PY_JSON_WRITER_H_
