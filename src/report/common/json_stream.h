// Internal to the report stage: a JSON document written part by part, exactly as DumpJson() writes
// the whole tree.
#ifndef TRACEFUSE_SRC_REPORT_COMMON_JSON_STREAM_H_
#define TRACEFUSE_SRC_REPORT_COMMON_JSON_STREAM_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "tracefuse/report/json.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse {

// JsonStream writes a document whose small parts are trees (Value()) and whose long lists are
// written an item at a time, byte for byte as DumpJson(document) would write it whole (indent 2).
// `stats --format json` lists a device's every step: as one tree, its 64,000 steps of a 4 GB
// trace held 130 MB (docs/performance.md, "Memory").
class JsonStream {
 public:
  // Appends to `out`; MaybeFlush() hands it to `sink`, or keeps it in `out` when `sink` is null.
  JsonStream(std::string* out, OutputFile* sink) : out_(out), sink_(sink) {}

  // Hands what is buffered to the sink once it is large.
  absl::Status MaybeFlush();

  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(std::string_view key);
  // Value() writes a tree, indented to where it stands.
  void Value(const Json& value);
  void Field(std::string_view key, const Json& value) {
    Key(key);
    Value(value);
  }
  // Fields() writes each member of `object`, a tree, as a field of the open object.
  void Fields(const Json& object);

  // Performance: as PyJsonWriter::kFlushBytes.
  static constexpr size_t kFlushBytes = size_t{64} << 10;

 private:
  void Open(char bracket);
  void Close(char bracket);
  void NextItem();

  std::string* out_;
  OutputFile* sink_;
  std::vector<bool> has_items_;  // per open container
  bool after_key_ = false;
};

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_REPORT_COMMON_JSON_STREAM_H_
