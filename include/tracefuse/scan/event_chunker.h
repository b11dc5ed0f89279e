// Stage 2, library tracefuse_scan (after io): the event splitter and the chunker.
//
// EventChunker, the serial front of the pipeline, hands out chunks of whole events while looking
// at only a few bytes of each: it cuts at `}` `,` `{` (see FindLastEventCut), and the parse of
// each chunk validates the cut. The exact EventSplitter below scans the rest: the top-level keys
// before and after the events, and any region where a speculative cut was rejected.
//
// EventSplitter cuts the element list of the top-level `traceEvents` array (or of a bare top-level
// array) into chunks of whole events, ready for simdjson, without parsing them. It classifies every
// byte as in or out of a JSON string 64 bytes at a time with bit masks (backslash runs, quote
// parity by prefix XOR, as simdjson's stage 1 does), so a `}`, `,` or `[` inside a kernel name
// never cuts an event, and then walks only the bracket characters outside strings. Everything at
// the top level except the events themselves is copied into `metadata_json()`, with the events
// array left empty.
//
// The splitter checks bracket balance, the separators between events at chunk boundaries and the
// end of input; simdjson validates the inside of each chunk. Offsets in errors are byte positions
// in the (decompressed) input.
#ifndef TRACEFUSE_SCAN_EVENT_CHUNKER_H_
#define TRACEFUSE_SCAN_EVENT_CHUNKER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tracefuse/io/byte_source.h"
#include "tracefuse/scan/json_brackets.h"

namespace tracefuse {

// Whole events, in order: the bytes from the first event's '{' to the last event's '}', with the
// original separators between them. Usually one piece; more when the range crosses blocks.
struct EventChunk {
  uint64_t seq = 0;
  // Cut at a `},{` pattern, not by the exact splitter: only a parse of the whole chunk as
  // an array of objects shows the cuts were between events.
  bool speculative = false;
  // When set, the chunk's bytes are to be read from this random-access input (`pieces` is
  // empty): the parallel stage reads them straight into the parser's buffer.
  const ByteSource* file = nullptr;
  uint64_t begin = 0;  // input offset of the first byte
  uint64_t end = 0;    // input offset one past the last byte
  // One past the '}' of the event before the first (the cut's `event_end`), for speculative
  // chunks: where the input may be said complete up to, should it end in this chunk.
  uint64_t previous_event_end = 0;
  std::vector<Block> pieces;
  // `pieces` is one padded Block (see Block::padded) whose bytes around the chunk nobody else
  // reads: the parser writes the array's brackets and its padding there and parses the chunk
  // where it lies, instead of copying it (EventChunker::CutAtBlockEnds).
  bool in_place = false;
  size_t bytes() const { return static_cast<size_t>(end - begin); }
};

// kDefaultMaxEventBytes is the default limit on one event's size. A chunk holds whole events, so
// an event is held in memory whole, several times over (read, parsed, its strings kept): the limit
// keeps a corrupt or hostile trace from taking the machine's memory.
inline constexpr uint64_t kDefaultMaxEventBytes = uint64_t{256} << 20;

struct SplitterOptions {
  size_t chunk_bytes = 2u << 20;  // a chunk is cut after the first event ending past this size
  size_t max_metadata_bytes = 64u << 20;  // top-level data kept beyond this is dropped (flagged)
  // An event larger than this is an error, found as soon as its bytes have been read.
  uint64_t max_event_bytes = kDefaultMaxEventBytes;
  // Input that ends inside its top-level value after the events array began is not an error:
  // the events that closed before the end are handed out (see EventSplitter::Salvage).
  bool salvage_truncated = false;
};

// CutPosition is where a truncated input ended, relative to the events.
enum class CutPosition {
  kBetweenEvents,  // after an event (or the array's '['), before the next one began
  kInsideEvent,    // inside an event, which is dropped
  kAfterEvents,    // in the top-level keys after the events array
};

// TruncatedInput describes an input that ended early and was salvaged.
struct TruncatedInput {
  uint64_t input_bytes = 0;  // where the input ended (decompressed offset)
  uint64_t kept_bytes = 0;   // one past the last byte analysed: the last complete event's '}'
  CutPosition position = CutPosition::kBetweenEvents;
  bool inside_string = false;
  // The bytes dropped: the incomplete event, separators, trailing top-level keys.
  uint64_t dropped_bytes() const { return input_bytes - kept_bytes; }
  uint64_t dropped_events() const { return position == CutPosition::kInsideEvent ? 1 : 0; }
};

// Describe() says where the input was cut, for messages: "inside an event (in a string)".
std::string Describe(const TruncatedInput& truncated);

class EventSplitter {
 public:
  EventSplitter(std::string display_name, SplitterOptions options = {});

  // Scans one block (blocks must arrive in input order) and appends completed chunks to `out`.
  absl::Status Feed(const Block& block, std::vector<EventChunk>* out);
  // Ends the input: checks that the top-level value is complete. (Every chunk has been handed
  // out by Feed: the last one closes with the events array.) A truncated input is an error whose
  // status IsTruncatedInput().
  absl::Status Finish();
  // Salvage() ends an input that stopped inside its top-level value after the events array
  // began: it hands out the events that closed before the end, and returns what was dropped.
  // nullopt when the input is complete or was cut before its events (then Finish() says why).
  std::optional<TruncatedInput> Salvage(std::vector<EventChunk>* out);

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

  // AtEventBoundary() is true when the input fed so far ends between two events of the events
  // array, after the ',' that separates them: the next byte may start an event that the
  // splitter need not see (see ResumeBeforeEvent).
  bool AtEventBoundary() const;
  // CloseOpenChunk() hands out the events gathered since the last chunk, if any.
  void CloseOpenChunk(std::vector<EventChunk>* out);
  // ResumeBeforeEvent() continues the scan at `offset`, the '{' of an event that follows a ','
  // (the previous event ending at `previous_event_end`)
  // at the events array's level, as if every byte before it had been fed: the events between
  // were handed out by someone else.
  void ResumeBeforeEvent(uint64_t offset, uint64_t previous_event_end);

 private:
  absl::Status Error(uint64_t offset, const std::string& what) const;
  absl::Status EventTooLarge() const;
  bool InsideEvent() const { return in_events_ && stack_.size() > events_depth_; }
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
  size_t events_depth_ = 0;   // stack size inside the events array
  uint64_t event_begin_ = 0;  // the '{' of the event being read, or of the last one
  uint64_t events_end_ = 0;   // one past the events array's ']', once closed

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

// EventCut is a boundary between two events: `event_end` is one past the '}' that closes one,
// `next_event` the position of the '{' that opens the next (input offsets).
struct EventCut {
  uint64_t event_end = 0;
  uint64_t next_event = 0;
  // Bytes between the separator's last newline and the '{' (its indentation, in writers that put
  // events on lines of their own), or kSameLine.
  uint32_t line_position = 0;
};

inline constexpr uint32_t kSameLine = UINT32_MAX;
// kAnyPosition: a cut wherever its '{' stands on its line.
inline constexpr int kAnyPosition = -1;

// FindLastEventCut() returns the last `}` `,` `{` in `bytes` (whitespace allowed around the
// comma); `offset` is the input offset of bytes[0]. Between two events of the events array
// every writer puts that pattern; elsewhere it occurs in an array of objects nested in an event,
// or inside a string. A chunk cut at such a wrong place does not parse: it ends inside a string
// (an unclosed string) or inside an event (unbalanced brackets), so the parse validates every
// cut. Writers lay events out alike, so only cuts whose '{' stands where the first cut's did on
// its line are taken (`line_position`: the indentation of Kineto's `  {`, 0 for one event per
// line, kSameLine for a trace on one line), which leaves most nested arrays aside.
std::optional<EventCut> FindLastEventCut(std::string_view bytes, uint64_t offset,
                                         int line_position = kAnyPosition);
// FindFirstEventCut() is the same, searching forward.
std::optional<EventCut> FindFirstEventCut(std::string_view bytes, uint64_t offset,
                                          int line_position = kAnyPosition);

struct ChunkerOptions {
  size_t chunk_bytes = 2u << 20;
  uint64_t max_event_bytes = kDefaultMaxEventBytes;  // see SplitterOptions
  bool salvage_truncated = false;                    // see SplitterOptions
  // Cut at `},{` patterns between events; false: the exact splitter scans everything.
  bool speculate = true;
  // The threads that parse chunks: near the end of a file read at random, chunks shrink (to no
  // less than min_chunk_bytes) so that the last ones keep every thread busy.
  size_t threads = 1;
  size_t min_chunk_bytes = 128u << 10;
};

// EventChunker is the serial front of the pipeline: fed the input's blocks in order, it hands out
// chunks of whole events. The exact splitter reads the top-level keys and the first event; from
// the first cut where it stands between two events (see FindLastEventCut), chunks are cut
// speculatively, about `chunk_bytes` apart, touching only the bytes around each cut; the end of
// the input goes through the exact splitter again. A speculative chunk that fails to parse is
// handed back with Restart(): the chunker cuts exactly from its start to its end, which finds
// either the real error, with its exact offset and message, or the events a wrong cut split.
// Performance: speculative cutting scans a few hundred bytes per chunk, about 750 GB/s of input
// from a regular file (BM_SerialFront, an 8 KiB pread per chunk), against about 6 GB/s for the
// exact splitter, which is also serial.
class EventChunker {
 public:
  EventChunker(std::string display_name, ChunkerOptions options);

  // Feed() takes the next block of the input and appends the chunks it completes to `out`.
  absl::Status Feed(const Block& block, std::vector<EventChunk>* out);
  // Finish() ends the input: hands out the last chunks and checks the top-level value. With
  // `salvage_truncated`, an input cut inside its events is salvaged (see truncated()).
  absl::Status Finish(std::vector<EventChunk>* out);
  // truncated() says what was dropped from a salvaged input; nullopt for a complete one.
  const std::optional<TruncatedInput>& truncated() const { return truncated_; }
  // Restart() cuts again from `chunk`'s start, exactly as far as its end and speculatively after
  // that; the next Feed() calls must give the input again from its start or from any block
  // before `chunk`. Chunk numbers start again at 0.
  void Restart(const EventChunk& chunk);

  // UseFile() lets speculative chunks be read from `file` (random access, see ByteSource), so
  // the front reads only the bytes around each cut. While cutting_file(), call CutFile() instead
  // of Feed(); TakeSeek() then says where the next block fed must start, when it must move.
  void UseFile(const ByteSource* file) { file_ = file; }
  bool cutting_file() const { return mode_ == Mode::kFile; }
  absl::Status CutFile(std::vector<EventChunk>* out);
  std::optional<uint64_t> TakeSeek() { return std::exchange(seek_, std::nullopt); }

  // CutAtBlockEnds() is for a stream whose source can hand bytes back (ByteSource::Unread): a
  // speculative chunk that would lie in the block just fed ends at the block's last cut, and is
  // parsed in place (EventChunk::in_place); the incomplete event after that cut starts the next
  // block. After a Feed(), TakeUnread() says where the next block fed must start, when it must
  // start before the end of the last one: pass it to ByteSource::Unread() before the chunks
  // handed out are parsed. Inflated data is then copied once less (about 0.08 CPU seconds per GB
  // here, on the stage that reads a compressed trace).
  void CutAtBlockEnds() { cut_at_block_ends_ = true; }
  std::optional<uint64_t> TakeUnread() { return std::exchange(unread_, std::nullopt); }
  // Speculative chunks handed back by Restart(); after kMaxRejected the rest of the input is
  // scanned exactly, since a stream is read again from its start on each.
  uint64_t rejected() const { return rejected_; }
  static constexpr uint64_t kMaxRejected = 16;

  const EventSplitter& splitter() const { return splitter_; }
  // Input bytes fed so far.
  uint64_t bytes_fed() const { return fed_; }

 private:
  // kExact: every byte through the splitter; kSpeculative: cuts in the blocks fed; kFile: cuts
  // found by reading around each target offset of the file.
  enum class Mode { kExact, kSpeculative, kFile };

  absl::Status FeedExact(const Block& block, size_t from, std::vector<EventChunk>* out);
  absl::Status FeedHeldExactly(std::vector<EventChunk>* out);
  absl::Status FeedSplitter(const Block& block, size_t from, size_t to,
                            std::vector<EventChunk>* out);
  bool CutSpeculatively(std::vector<EventChunk>* out);
  void CutAtBlockEnd(std::vector<EventChunk>* out);
  bool MayHoldTooLargeAnEvent(const EventCut& cut) const;
  std::optional<EventCut> FindCutNear(uint64_t target);
  absl::StatusOr<std::optional<EventCut>> FindCutInFile(uint64_t target, uint64_t* searched_to);
  void ResumeExact(uint64_t offset, uint64_t previous_event_end, uint64_t exact_until);
  void StartSpeculationAt(const EventCut& cut);
  void EmitSpeculative(const EventCut& cut, std::vector<EventChunk>* out);
  void Number(std::vector<EventChunk>* out, size_t first);

  ChunkerOptions options_;
  EventSplitter splitter_;
  Mode mode_ = Mode::kExact;
  uint64_t skip_until_ = 0;   // bytes before this offset were already handled
  uint64_t exact_until_ = 0;  // speculate only from cuts at or after this offset
  uint64_t spec_start_ = 0;   // the '{' where the next speculative chunk begins
  uint64_t spec_after_ = 0;   // one past the '}' of the event before it
  uint64_t searched_to_ = 0;  // no cut lies in [spec_start_ + chunk_bytes, searched_to_)
  std::deque<Block> held_;    // the blocks from spec_start_ on
  uint64_t next_seq_ = 0;
  uint64_t fed_ = 0;
  const ByteSource* file_ = nullptr;
  std::optional<uint64_t> seek_;
  bool cut_at_block_ends_ = false;
  std::optional<uint64_t> unread_;
  std::string window_;                // bytes read around a target offset
  int line_position_ = kAnyPosition;  // of the cut where speculation began
  // The splitter as it stood where speculation began: between two events of the events array,
  // as it stands at every cut. A restart goes back to it, since the splitter may have scanned the
  // end of the input (and closed the events array) before a chunk was rejected.
  std::optional<EventSplitter> at_first_cut_;
  uint64_t rejected_ = 0;
  std::optional<TruncatedInput> truncated_;
};

}  // namespace tracefuse

#endif  // TRACEFUSE_SCAN_EVENT_CHUNKER_H_
