#include "rocprofv3_layout.h"

#include <simdjson.h>

#include <algorithm>

#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

// The buffer_records arrays read, by key.
bool RecordTypeOf(std::string_view key, RecordType* type) {
  if (key == "kernel_dispatch") {
    *type = RecordType::kKernel;
  } else if (key == "hip_api") {
    *type = RecordType::kLaunch;
  } else if (key == "memory_copy") {
    *type = RecordType::kMemcpy;
  } else if (key == "marker_api") {
    *type = RecordType::kMarker;
  } else {
    return false;
  }
  return true;
}

}  // namespace

absl::Status Rocprofv3Layout::Feed(const Block& block) {
  absl::Status st;
  ForEachBracketOutsideStrings(block.data, block.size, &carry_, [&](size_t at) {
    const char c = block.data[at];
    const bool opens = c == '{' || c == '[';
    if (record_depth_ > 0) {  // inside a record: only its end matters here
      if (opens) {
        ++record_depth_;
      } else if (--record_depth_ == 0) {
        EndRecord(block.offset + at);
      }
      return true;
    }
    st = opens ? Open(c, block.offset + at, block) : Close(c, block.offset + at);
    return st.ok();
  });
  if (!st.ok()) return st;
  if (copying_) CopyUpTo(block, block.offset + block.size);
  return absl::OkStatus();
}

absl::Status Rocprofv3Layout::Finish(uint64_t input_bytes) {
  // A document that never began is the skeleton's parse to refuse (simdjson's own message).
  if (finished_ || stack_.empty()) return absl::OkStatus();
  return Malformed(input_bytes, simdjson::error_message(simdjson::INCOMPLETE_ARRAY_OR_OBJECT));
}

uint64_t Rocprofv3Layout::InputOffset(uint64_t at) const {
  auto run = std::upper_bound(runs_.begin(), runs_.end(), at,
                              [](uint64_t a, const auto& r) { return a < r.first; });
  --run;  // runs_ begins with skeleton offset 0
  return run->second + (at - run->first);
}

absl::Status Rocprofv3Layout::Open(char bracket, uint64_t offset, const Block& block) {
  if (finished_) return absl::OkStatus();  // text after the document: the skeleton's parse says so
  Role role = Role::kOther;
  RecordType type = RecordType::kKernel;
  std::string_view key;
  if (stack_.empty()) {
    role = Role::kRoot;
  } else {
    const Role parent = stack_.back().role;
    if (parent == Role::kRecords || parent == Role::kOtherRecords) {
      // A record's brackets are counted, not checked: simdjson checks them as it reads the
      // slice (and the records of other kinds are only counted).
      record_depth_ = 1;
      if (parent == Role::kOtherRecords) {
        ++unread_[other_kind_];
      } else {
        ++slice_.records;
      }
      return absl::OkStatus();
    } else if (parent == Role::kProcesses && bracket == '{') {
      role = Role::kProcess;
      ++processes_;
    } else if (parent == Role::kRoot || parent == Role::kProcess || parent == Role::kStrings ||
               parent == Role::kBufferRecords) {
      CopyUpTo(block, offset);  // the key before the bracket is then the skeleton's last
      key = KeyBeforeEnd();
      if (parent == Role::kRoot && bracket == '[' && key == "rocprofiler-sdk-tool") {
        role = Role::kProcesses;
      } else if (parent == Role::kProcess && bracket == '{' && key == "buffer_records") {
        role = Role::kBufferRecords;
      } else if (parent == Role::kProcess && bracket == '{' && key == "strings") {
        role = Role::kStrings;
      } else if (parent == Role::kStrings && bracket == '[' && key == "marker_api") {
        role = Role::kRecords;
        type = RecordType::kRangeText;
      } else if (parent == Role::kBufferRecords && bracket == '[') {
        role = RecordTypeOf(key, &type) ? Role::kRecords : Role::kOtherRecords;
      }
    }
  }
  if (role == Role::kRecords || role == Role::kOtherRecords) {
    CopyUpTo(block, offset + 1);  // the array's '[': the skeleton holds it empty
    copying_ = false;
    if (role == Role::kRecords) {
      slice_ = RecordSlice{offset + 1, 0, processes_ - 1, type, true};
    } else {
      other_kind_ = std::string(key);
    }
  }
  stack_.push_back(Frame{bracket, role});
  return absl::OkStatus();
}

absl::Status Rocprofv3Layout::Close(char bracket, uint64_t offset) {
  if (finished_) return absl::OkStatus();
  if (stack_.empty() || (stack_.back().bracket == '{') != (bracket == '}')) {
    return Malformed(offset, simdjson::error_message(simdjson::TAPE_ERROR));
  }
  const Role role = stack_.back().role;
  stack_.pop_back();
  if (stack_.empty()) {
    finished_ = true;
  } else if (role == Role::kRecords || role == Role::kOtherRecords) {
    if (role == Role::kRecords) EndSlice(offset);
    copying_ = true;  // from the array's ']' on
    copy_from_ = offset;
    runs_.emplace_back(skeleton_.size(), offset);
  }
  return absl::OkStatus();
}

void Rocprofv3Layout::EndRecord(uint64_t offset) {
  if (stack_.back().role == Role::kRecords && offset + 1 - slice_.begin >= slice_bytes_) {
    EndSlice(offset + 1);
  }
}

void Rocprofv3Layout::CopyUpTo(const Block& block, uint64_t offset) {
  if (offset <= copy_from_) return;
  skeleton_.append(block.data + (copy_from_ - block.offset), offset - copy_from_);
  copy_from_ = offset;
}

std::string_view Rocprofv3Layout::KeyBeforeEnd() const {
  const std::string_view text(skeleton_);
  size_t at = text.size();
  auto skip_space = [&] {
    while (at > 0 && IsJsonSpace(text[at - 1])) --at;
  };
  skip_space();
  if (at == 0 || text[at - 1] != ':') return {};
  --at;
  skip_space();
  if (at == 0 || text[at - 1] != '"') return {};
  const size_t end = --at;
  while (at > 0) {  // back to the opening quote: one not escaped by an odd run of backslashes
    const size_t quote = text.rfind('"', at - 1);
    if (quote == std::string_view::npos) return {};
    size_t backslashes = 0;
    while (quote > backslashes && text[quote - 1 - backslashes] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return text.substr(quote + 1, end - quote - 1);
    at = quote;
  }
  return {};
}

void Rocprofv3Layout::EndSlice(uint64_t end) {
  slice_.end = end;
  if (slice_.end > slice_.begin) slices_.push_back(slice_);
  slice_.begin = end;
  slice_.first_of_array = false;
  slice_.records = 0;
}

absl::Status Rocprofv3Layout::Malformed(uint64_t offset, std::string_view what) {
  error_at_ = offset;
  return absl::InvalidArgumentError(StrCat(path_, ": malformed JSON at byte ", offset, ": ", what));
}

}  // namespace tracefuse
