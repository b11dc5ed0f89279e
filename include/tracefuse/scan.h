// Stage 2, library tracefuse_scan (after io): the event splitter.
//
// Cuts the element list of the top-level `traceEvents` array (or of a bare top-level array) into
// chunks of whole events, ready for simdjson, without parsing them. It classifies every byte as in
// or out of a JSON string 64 bytes at a time with bit masks (backslash runs, quote parity by prefix
// XOR, as simdjson's stage 1 does), so a `}`, `,` or `[` inside a kernel name never cuts an event,
// and then walks only the bracket characters outside strings. Everything at the top level except
// the events themselves is copied into `metadata_json()`, with the events array left empty.
//
// The splitter checks bracket balance, the separators between events at chunk boundaries and the
// end of input; simdjson validates the inside of each chunk. Offsets in errors are byte positions
// in the (decompressed) input.
#ifndef TRACEFUSE_SCAN_H_
#define TRACEFUSE_SCAN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "tracefuse/io.h"

namespace tracefuse {

// Whole events, in order: the bytes from the first event's '{' to the last event's '}', with the
// original separators between them. Usually one piece; more when the range crosses blocks.
struct EventChunk {
  uint64_t seq = 0;
  uint64_t begin = 0;  // input offset of the first byte
  uint64_t end = 0;    // input offset one past the last byte
  std::vector<Block> pieces;
  size_t bytes() const { return static_cast<size_t>(end - begin); }
};

// What string tracking carries from one 64-byte block to the next.
struct StringCarry {
  uint64_t next_is_escaped = 0;  // the next block's first byte is escaped
  uint64_t prev_in_string = 0;   // all ones when the previous block ended inside a string
};

struct SplitterOptions {
  size_t chunk_bytes = 2u << 20;  // a chunk is cut after the first event ending past this size
  size_t max_metadata_bytes = 64u << 20;  // top-level data kept beyond this is dropped (flagged)
};

class EventSplitter {
 public:
  EventSplitter(std::string display_name, SplitterOptions options = {});

  // Scans one block (blocks must arrive in input order) and appends completed chunks to `out`.
  absl::Status Feed(const Block& block, std::vector<EventChunk>* out);
  // Ends the input: checks that the top-level value is complete. (Every chunk has been handed
  // out by Feed: the last one closes with the events array.)
  absl::Status Finish();

  // True once the events array has been entered: leading_metadata_json() then holds every
  // top-level key that precedes it.
  bool events_started() const { return events_started_; }
  // The top-level object up to its events array's '[', unterminated: valid once
  // events_started(), however far the input has been read since ("" for a bare array).
  std::string_view leading_metadata_json() const {
    return std::string_view(metadata_).substr(0, leading_metadata_bytes_);
  }
  bool bare_array() const { return bare_array_; }
  // The top-level object with the events array emptied; valid after Finish().
  const std::string& metadata_json() const { return metadata_; }
  bool metadata_truncated() const { return metadata_truncated_; }
  uint64_t bytes_scanned() const { return scanned_; }

 private:
  absl::Status Error(uint64_t offset, const std::string& what) const;
  absl::Status OnOpen(char c, uint64_t offset, const char* at, const Block& block);
  absl::Status OnClose(char c, uint64_t offset, const Block& block, std::vector<EventChunk>* out);
  absl::Status CheckGap(const char* begin, const char* end, uint64_t offset);
  absl::Status EndGap(uint64_t offset, bool before_event);
  absl::Status CheckTrailer(const char* begin, const char* end, uint64_t offset) const;
  void AppendMetadata(const char* begin, const char* end);
  bool MetadataEndsWithEventsKey() const;
  void OpenChunk(uint64_t offset);
  void AddPiece(const Block& block, uint64_t end_offset);
  void CloseChunk(std::vector<EventChunk>* out);

  std::string name_;
  SplitterOptions options_;

  StringCarry carry_;

  std::vector<char> stack_;  // open brackets
  bool started_ = false;
  bool finished_ = false;  // the top-level value has closed
  bool bare_array_ = false;
  bool events_started_ = false;
  bool in_events_ = false;
  size_t events_depth_ = 0;  // stack size inside the events array

  // Separator checking between events: active from an event's end (or the array's '[') until the
  // next event or the array's end.
  bool gap_active_ = false;
  uint64_t gap_from_ = 0;  // input offset where the unchecked part of the gap starts
  int gap_commas_ = 0;
  bool gap_after_event_ = false;

  // Metadata copying.
  std::string metadata_;
  bool copying_metadata_ = true;
  uint64_t copy_from_ = 0;
  bool metadata_truncated_ = false;
  size_t leading_metadata_bytes_ = 0;

  // Chunk under construction.
  bool chunk_open_ = false;
  EventChunk chunk_;
  uint64_t piece_from_ = 0;
  uint64_t last_event_end_ = 0;
  uint64_t next_seq_ = 0;

  uint64_t scanned_ = 0;
};

}  // namespace tracefuse

#endif  // TRACEFUSE_SCAN_H_
