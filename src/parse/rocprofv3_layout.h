// Rocprofv3Layout: where a rocprofv3 JSON document keeps its records, found without parsing it.
// Internal to the parse stage (rocprofv3_json_importer.cc).
//
// A rocprofv3 document is {"rocprofiler-sdk-tool": [one object per process]}, and nearly all of
// its bytes are the arrays of each process's `buffer_records` (kernel_dispatch, hip_api…) and
// the roctx ranges' texts (`strings.marker_api`, one per range). The layout walks the brackets
// outside strings (json_brackets.h), cuts those arrays into slices of whole records, for threads
// to parse apart, and copies the rest (metadata, agents, API names, kernel symbols: the
// skeleton) with those arrays left empty, for one simdjson parse.
#ifndef TRACEFUSE_PARSE_ROCPROFV3_LAYOUT_H_
#define TRACEFUSE_PARSE_ROCPROFV3_LAYOUT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "tracefuse/io/byte_source.h"
#include "tracefuse/scan/json_brackets.h"

namespace tracefuse {

// RecordType is what the records of one array are: of buffer_records, or (kRangeText) the
// {key: correlation id, value: text} entries of strings.marker_api.
enum class RecordType : uint8_t { kKernel, kMemcpy, kLaunch, kMarker, kRangeText };

// RecordSlice is a run of one array's records: input bytes [begin, end), whole records and the
// separators between them. A slice after the first of its array begins with the ',' after the
// previous slice's last record; the last one ends before the array's ']'.
struct RecordSlice {
  uint64_t begin = 0;
  uint64_t end = 0;
  size_t process = 0;  // the process object's index, in document order
  RecordType type = RecordType::kKernel;
  bool first_of_array = false;
  size_t records = 0;  // how many it holds, by their brackets
};

class Rocprofv3Layout {
 public:
  // `slice_bytes`: a slice ends with the first record that ends that far from its start.
  Rocprofv3Layout(std::string path, uint64_t slice_bytes)
      : path_(std::move(path)), slice_bytes_(slice_bytes) {}

  // Feed() walks the next block of the input (blocks in order).
  absl::Status Feed(const Block& block);
  // Finish() ends the input, of `input_bytes`: an error where it ends inside the document.
  absl::Status Finish(uint64_t input_bytes);

  // skeleton() is the document less the contents of its buffer_records arrays and of
  // strings.marker_api.
  const std::string& skeleton() const { return skeleton_; }
  // InputOffset() is the input offset of byte `at` of the skeleton.
  uint64_t InputOffset(uint64_t at) const;
  const std::vector<RecordSlice>& slices() const { return slices_; }
  // open_slice_begin() is where the slice being cut begins, while the walk is in an array of
  // records read: no byte before it is part of a slice still to come.
  std::optional<uint64_t> open_slice_begin() const {
    if (stack_.empty() || stack_.back().role != Role::kRecords) return std::nullopt;
    return slice_.begin;
  }
  // unread() counts the records of the arrays of other kinds (hsa_api, memory_allocation…), by
  // kind: they are not read, only counted.
  const std::map<std::string, uint64_t>& unread() const { return unread_; }
  // error_at() is the input offset of the error Feed() or Finish() returned last.
  uint64_t error_at() const { return error_at_; }

 private:
  // Where a bracket stands in the document.
  enum class Role : uint8_t {
    kRoot,
    kProcesses,      // the "rocprofiler-sdk-tool" array
    kProcess,        // one process's object
    kStrings,        // its "strings" object
    kBufferRecords,  // its "buffer_records" object
    kRecords,        // an array of records of a kind read
    kOtherRecords,   // an array of records of another kind
    kOther,
  };
  struct Frame {
    char bracket;
    Role role;
  };

  absl::Status Open(char bracket, uint64_t offset, const Block& block);
  absl::Status Close(char bracket, uint64_t offset);
  Role RoleOf(char bracket, std::string_view key) const;
  void CopyUpTo(const Block& block, uint64_t offset);
  std::string_view KeyBeforeEnd() const;
  void EndRecord(uint64_t offset);  // at the record's closing bracket
  void EndSlice(uint64_t end);
  absl::Status Malformed(uint64_t offset, std::string_view what);

  std::string path_;
  uint64_t slice_bytes_;
  StringCarry carry_;
  std::vector<Frame> stack_;  // the brackets open around the records
  int64_t record_depth_ = 0;  // > 0 inside a record: the brackets open in it
  bool finished_ = false;     // the document has closed
  size_t processes_ = 0;
  std::string skeleton_;
  bool copying_ = true;  // outside buffer_records arrays: bytes go to the skeleton
  uint64_t copy_from_ = 0;
  // (skeleton offset, input offset) where each copied run of bytes begins.
  std::vector<std::pair<uint64_t, uint64_t>> runs_{{0, 0}};
  std::vector<RecordSlice> slices_;
  RecordSlice slice_;       // the slice being cut
  std::string other_kind_;  // the kind of the array of kOtherRecords being walked
  std::map<std::string, uint64_t> unread_;
  uint64_t error_at_ = 0;
};

}  // namespace tracefuse

#endif  // TRACEFUSE_PARSE_ROCPROFV3_LAYOUT_H_
