#include "tracefuse/scan/event_chunker.h"

#include <algorithm>
#include <cstring>

#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

std::string Printable(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  return fmt::format("byte 0x{:02x}", u);
}

}  // namespace

EventSplitter::EventSplitter(std::string display_name, SplitterOptions options)
    : name_(std::move(display_name)), options_(options) {
  stack_.reserve(64);
}

absl::Status EventSplitter::Error(uint64_t offset, const std::string& what) const {
  return absl::InvalidArgumentError(StrCat(name_, ": malformed JSON at byte ", offset, ": ", what));
}

absl::Status EventSplitter::EventTooLarge() const {
  return absl::InvalidArgumentError(
      StrCat(name_, ": the event at byte ", event_begin_, " is larger than the limit of ",
             options_.max_event_bytes, " bytes on one event (--max-event-bytes)"));
}

void EventSplitter::AppendMetadata(const char* begin, const char* end) {
  if (!copying_metadata_ || end <= begin) return;
  size_t n = static_cast<size_t>(end - begin);
  if (metadata_.size() + n > options_.max_metadata_bytes) {
    metadata_truncated_ = true;
    copying_metadata_ = false;
    return;
  }
  metadata_.append(begin, n);
}

bool EventSplitter::MetadataEndsWithEventsKey() const {
  static constexpr std::string_view kKey = "\"traceEvents\"";
  size_t i = metadata_.size();
  while (i > 0 && IsJsonSpace(metadata_[i - 1])) --i;
  if (i == 0 || metadata_[i - 1] != ':') return false;
  --i;
  while (i > 0 && IsJsonSpace(metadata_[i - 1])) --i;
  return i >= kKey.size() &&
         std::string_view(metadata_).substr(i - kKey.size(), kKey.size()) == kKey;
}

void EventSplitter::OpenChunk(uint64_t offset) {
  chunk_open_ = true;
  chunk_.pieces.clear();
  chunk_.begin = offset;
  piece_from_ = offset;
}

void EventSplitter::AddPiece(const Block& block, uint64_t end_offset) {
  uint64_t from = std::max(piece_from_, block.offset);
  if (end_offset > from) chunk_.pieces.push_back(block.Slice(from, end_offset));
  piece_from_ = end_offset;
}

void EventSplitter::CloseChunk(std::vector<EventChunk>* out) {
  chunk_.end = last_event_end_;
  // Drop separator bytes gathered after the last event.
  while (!chunk_.pieces.empty() && chunk_.pieces.back().offset >= chunk_.end) {
    chunk_.pieces.pop_back();
  }
  if (!chunk_.pieces.empty()) {
    Block& last = chunk_.pieces.back();
    last.size =
        static_cast<size_t>(std::min<uint64_t>(last.offset + last.size, chunk_.end) - last.offset);
  }
  chunk_.seq = next_seq_++;
  out->push_back(std::move(chunk_));
  chunk_ = EventChunk();
  chunk_open_ = false;
}

absl::Status EventSplitter::CheckGap(const char* begin, const char* end, uint64_t offset) {
  for (const char* p = begin; p < end; ++p) {
    if (IsJsonSpace(*p)) continue;
    uint64_t at = offset + static_cast<uint64_t>(p - begin);
    if (*p == ',' && gap_after_event_ && gap_commas_ == 0) {
      ++gap_commas_;
      continue;
    }
    return Error(at, StrCat("unexpected ", Printable(*p),
                            " in the events array (expected an event object)"));
  }
  return absl::OkStatus();
}

absl::Status EventSplitter::CheckTrailer(const char* begin, const char* end,
                                         uint64_t offset) const {
  for (const char* p = begin; p < end; ++p) {
    if (!IsJsonSpace(*p)) {
      return Error(offset + static_cast<uint64_t>(p - begin),
                   StrCat("unexpected ", Printable(*p), " after the top-level value"));
    }
  }
  return absl::OkStatus();
}

absl::Status EventSplitter::EndGap(uint64_t offset, bool before_event) {
  gap_active_ = false;
  if (before_event && gap_after_event_ && gap_commas_ != 1) {
    return Error(offset, "missing ',' between two events");
  }
  if (!before_event && gap_commas_ != 0) return Error(offset, "trailing ',' before ']'");
  return absl::OkStatus();
}

absl::Status EventSplitter::OnOpen(char c, uint64_t offset, const char* at, const Block& block) {
  if (stack_.empty()) {
    if (c == '[') {
      bare_array_ = true;
      in_events_ = true;
      events_started_ = true;
      events_depth_ = 1;
      last_event_end_ = offset + 1;
      copying_metadata_ = false;
      metadata_ = "[]";
      gap_active_ = true;
      gap_from_ = offset + 1;
      gap_commas_ = 0;
      gap_after_event_ = false;
    }
    stack_.push_back(c);
    return absl::OkStatus();
  }
  if (in_events_ && stack_.size() == events_depth_) {
    if (c == '[') return Error(offset, "an element of the events array is an array, not an object");
    absl::Status gap = CheckGap(block.data + (gap_from_ - block.offset), at, gap_from_);
    if (!gap.ok()) return gap;
    absl::Status end = EndGap(offset, /*before_event=*/true);
    if (!end.ok()) return end;
    if (!chunk_open_) OpenChunk(offset);
    event_begin_ = offset;
  } else if (!in_events_ && !bare_array_ && stack_.size() == 1 && c == '[') {
    AppendMetadata(block.data + (copy_from_ - block.offset), at);
    copy_from_ = offset;
    if (MetadataEndsWithEventsKey() && copying_metadata_) {
      metadata_.push_back('[');
      // A second events array (a duplicate key) is read as events too; the leading keys are
      // those before the first.
      if (!events_started_) leading_metadata_bytes_ = metadata_.size();
      copying_metadata_ = false;
      in_events_ = true;
      events_started_ = true;
      events_depth_ = 2;
      last_event_end_ = offset + 1;
      gap_active_ = true;
      gap_from_ = offset + 1;
      gap_commas_ = 0;
      gap_after_event_ = false;
    }
  }
  if (stack_.size() >= 4096) return Error(offset, "nesting deeper than 4096 levels");
  stack_.push_back(c);
  return absl::OkStatus();
}

absl::Status EventSplitter::OnClose(char c, uint64_t offset, const Block& block,
                                    std::vector<EventChunk>* out) {
  if (stack_.empty()) return Error(offset, StrCat("unexpected ", Printable(c)));
  char open = stack_.back();
  // Inside an event's values only the depth is checked, as simdjson checks the values tracefuse
  // skips: a speculative chunk, which only simdjson sees, is accepted or rejected alike.
  const bool inside_event_value = in_events_ && stack_.size() > events_depth_ + 1;
  if (!inside_event_value && (open == '{') != (c == '}')) {
    return Error(offset, StrCat("unexpected ", Printable(c), " (expected ",
                                open == '{' ? "'}'" : "']'", ")"));
  }
  stack_.pop_back();
  if (in_events_) {
    if (stack_.size() == events_depth_ && c == '}') {
      if (offset + 1 - event_begin_ > options_.max_event_bytes) return EventTooLarge();
      last_event_end_ = offset + 1;
      gap_active_ = true;
      gap_from_ = offset + 1;
      gap_commas_ = 0;
      gap_after_event_ = true;
      if (last_event_end_ - chunk_.begin >= options_.chunk_bytes) {
        AddPiece(block, last_event_end_);
        CloseChunk(out);
      }
    } else if (stack_.size() + 1 == events_depth_) {
      const char* at = block.data + (offset - block.offset);
      absl::Status gap = CheckGap(block.data + (gap_from_ - block.offset), at, gap_from_);
      if (!gap.ok()) return gap;
      absl::Status end = EndGap(offset, /*before_event=*/false);
      if (!end.ok()) return end;
      if (chunk_open_) {
        AddPiece(block, offset);
        CloseChunk(out);
      }
      in_events_ = false;
      events_end_ = offset + 1;
      if (!bare_array_) {
        copying_metadata_ = !metadata_truncated_;
        copy_from_ = offset;
      }
    }
  }
  if (stack_.empty()) {
    finished_ = true;
    // Only while copying is copy_from_ in this block: a bare array's lies where it began.
    if (copying_metadata_) {
      AppendMetadata(block.data + (copy_from_ - block.offset),
                     block.data + (offset - block.offset) + 1);
    }
    copying_metadata_ = false;
  }
  return absl::OkStatus();
}

absl::Status EventSplitter::Feed(const Block& block, std::vector<EventChunk>* out) {
  const char* base = block.data;
  const size_t n = block.size;
  size_t i = 0;
  scanned_ = block.offset + n;

  if (finished_) return CheckTrailer(base, base + n, block.offset);
  if (!started_) {
    if (block.offset == 0 && n >= 3 && std::memcmp(base, "\xEF\xBB\xBF", 3) == 0) i = 3;
    while (i < n && IsJsonSpace(base[i])) ++i;
    if (i == n) return absl::OkStatus();
    if (base[i] != '{' && base[i] != '[') {
      return UnsupportedTraceError(StrCat(name_, ": not a JSON trace: expected '{' or '[' at byte ",
                                          block.offset + i, ", found ", Printable(base[i])));
    }
    started_ = true;
    copy_from_ = block.offset + i;
  }

  absl::Status st;
  ForEachBracketOutsideStrings(base, n, &carry_, [&](size_t pos) {
    const char c = base[pos];
    const uint64_t offset = block.offset + pos;
    st = (c == '{' || c == '[') ? OnOpen(c, offset, base + pos, block)
                                : OnClose(c, offset, block, out);
    if (!st.ok()) return false;
    if (finished_) i = pos + 1;
    return !finished_;
  });
  if (!st.ok()) return st;

  if (finished_) return CheckTrailer(base + i, base + n, block.offset + i);

  const uint64_t block_end = block.offset + n;
  if (InsideEvent() && block_end - event_begin_ > options_.max_event_bytes) return EventTooLarge();
  if (chunk_open_) AddPiece(block, block_end);
  if (gap_active_) {
    absl::Status gap = CheckGap(base + (gap_from_ - block.offset), base + n, gap_from_);
    if (!gap.ok()) return gap;
    gap_from_ = block_end;
  }
  if (copying_metadata_) {
    AppendMetadata(base + (copy_from_ - block.offset), base + n);
    copy_from_ = block_end;
  }
  return absl::OkStatus();
}

bool EventSplitter::AtEventBoundary() const {
  return in_events_ && !finished_ && stack_.size() == events_depth_ && gap_active_ &&
         gap_after_event_ && gap_commas_ == 1 && carry_.prev_in_string == 0 &&
         carry_.next_is_escaped == 0;
}

void EventSplitter::CloseOpenChunk(std::vector<EventChunk>* out) {
  if (chunk_open_) CloseChunk(out);
}

void EventSplitter::ResumeBeforeEvent(uint64_t offset, uint64_t previous_event_end) {
  scanned_ = offset;
  last_event_end_ = previous_event_end;
  carry_ = StringCarry();
  gap_active_ = true;
  gap_from_ = offset;
  gap_commas_ = 1;
  gap_after_event_ = true;
  chunk_open_ = false;
  chunk_ = EventChunk();
}

absl::Status EventSplitter::Finish() {
  if (!started_) {
    if (scanned_ == 0) return absl::InvalidArgumentError(StrCat(name_, ": empty input"));
    return absl::InvalidArgumentError(
        StrCat(name_, ": not a JSON trace: the input holds only whitespace"));
  }
  if (!finished_) {
    std::string where = carry_.prev_in_string ? "inside a string"
                        : in_events_          ? "inside the events array"
                                              : "inside the top-level value";
    return TruncatedInputError(
        StrCat(name_, ": truncated JSON: the input ends at byte ", scanned_, " ", where));
  }
  return absl::OkStatus();
}

std::string Describe(const TruncatedInput& truncated) {
  switch (truncated.position) {
    case CutPosition::kInsideEvent:
      return truncated.inside_string ? "inside an event (in a string)" : "inside an event";
    case CutPosition::kBetweenEvents:
      return "between two events";
    case CutPosition::kAfterEvents:
      return "after the events array";
  }
  return "";
}

std::optional<TruncatedInput> EventSplitter::Salvage(std::vector<EventChunk>* out) {
  if (!started_ || finished_ || !events_started_) return std::nullopt;
  TruncatedInput t;
  t.input_bytes = scanned_;
  t.inside_string = carry_.prev_in_string != 0;
  if (!in_events_) {
    t.position = CutPosition::kAfterEvents;
    t.kept_bytes = events_end_;
  } else {
    t.position = InsideEvent() ? CutPosition::kInsideEvent : CutPosition::kBetweenEvents;
    t.kept_bytes = last_event_end_;
    if (chunk_open_ && last_event_end_ > chunk_.begin) CloseChunk(out);
  }
  finished_ = true;
  // Keys after the events array may have been read in part: the metadata keeps those before it.
  if (!bare_array_) {
    metadata_.resize(leading_metadata_bytes_);
    metadata_ += "]}";
  }
  return t;
}

namespace {

// CutBefore() checks whether the '{' at `open` follows a `}` `,` separator (whitespace allowed
// around the comma), and returns the cut when it does.
std::optional<EventCut> CutBefore(std::string_view bytes, size_t open, uint64_t offset,
                                  int line_position) {
  size_t back = open;
  size_t newline = std::string_view::npos;  // the separator's last newline
  bool comma = false;
  while (back > 0) {
    const char c = bytes[back - 1];
    if (c == '\n' && newline == std::string_view::npos) newline = back - 1;
    if (c == ',' && !comma) {
      comma = true;
    } else if (!IsJsonSpace(c)) {
      break;
    }
    --back;
  }
  if (!comma || back == 0 || bytes[back - 1] != '}') return std::nullopt;
  const uint32_t position =
      newline == std::string_view::npos ? kSameLine : static_cast<uint32_t>(open - newline - 1);
  if (line_position != kAnyPosition && position != static_cast<uint32_t>(line_position)) {
    return std::nullopt;
  }
  return EventCut{offset + back, offset + open, position};
}

}  // namespace

std::optional<EventCut> FindLastEventCut(std::string_view bytes, uint64_t offset,
                                         int line_position) {
  size_t end = bytes.size();
  while (end > 0) {
    const void* found = memrchr(bytes.data(), '{', end);
    if (found == nullptr) return std::nullopt;
    const size_t open = static_cast<size_t>(static_cast<const char*>(found) - bytes.data());
    if (std::optional<EventCut> cut = CutBefore(bytes, open, offset, line_position)) return cut;
    end = open;
  }
  return std::nullopt;
}

std::optional<EventCut> FindFirstEventCut(std::string_view bytes, uint64_t offset,
                                          int line_position) {
  size_t from = 0;
  while (from < bytes.size()) {
    const void* found = std::memchr(bytes.data() + from, '{', bytes.size() - from);
    if (found == nullptr) return std::nullopt;
    const size_t open = static_cast<size_t>(static_cast<const char*>(found) - bytes.data());
    if (std::optional<EventCut> cut = CutBefore(bytes, open, offset, line_position)) return cut;
    from = open + 1;
  }
  return std::nullopt;
}

namespace {
SplitterOptions SplitterOptionsFor(const ChunkerOptions& options) {
  SplitterOptions o;
  o.chunk_bytes = options.chunk_bytes;
  o.max_event_bytes = options.max_event_bytes;
  o.salvage_truncated = options.salvage_truncated;
  return o;
}
}  // namespace

EventChunker::EventChunker(std::string display_name, ChunkerOptions options)
    : options_(options), splitter_(std::move(display_name), SplitterOptionsFor(options)) {}

void EventChunker::Number(std::vector<EventChunk>* out, size_t first) {
  for (size_t i = first; i < out->size(); ++i) (*out)[i].seq = next_seq_++;
}

absl::Status EventChunker::FeedSplitter(const Block& block, size_t from, size_t to,
                                        std::vector<EventChunk>* out) {
  if (to <= from) return absl::OkStatus();
  const size_t first = out->size();
  absl::Status st = splitter_.Feed(block.Slice(block.offset + from, block.offset + to), out);
  Number(out, first);
  return st;
}

// FeedExact() scans the block from `from` with the exact splitter, and switches to speculative
// cutting at the first cut where the splitter stands between two events.
absl::Status EventChunker::FeedExact(const Block& block, size_t from,
                                     std::vector<EventChunk>* out) {
  size_t at = from;
  while (at < block.size) {
    std::optional<EventCut> cut;
    if (options_.speculate) {
      size_t search = at;
      if (exact_until_ > block.offset + at) {
        search = static_cast<size_t>(std::min<uint64_t>(exact_until_ - block.offset, block.size));
      }
      cut = FindFirstEventCut(std::string_view(block.data + search, block.size - search),
                              block.offset + search);
    }
    if (!cut) return FeedSplitter(block, at, block.size, out);
    const size_t next = static_cast<size_t>(cut->next_event - block.offset);
    absl::Status st = FeedSplitter(block, at, next, out);
    if (!st.ok()) return st;
    at = next;
    if (splitter_.AtEventBoundary()) {
      const size_t first = out->size();
      splitter_.CloseOpenChunk(out);
      Number(out, first);
      StartSpeculationAt(*cut);
      line_position_ = static_cast<int>(cut->line_position);
      if (!at_first_cut_) at_first_cut_ = splitter_;
      if (file_ != nullptr) {
        mode_ = Mode::kFile;  // the rest of this block is read again, by the parallel stage
        return absl::OkStatus();
      }
      mode_ = Mode::kSpeculative;
      searched_to_ = 0;
      held_.push_back(block);
      CutSpeculatively(out);
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

// FindCutNear() looks for the last cut before `target` in the block that holds it, else for the
// first one after it in the blocks held.
std::optional<EventCut> EventChunker::FindCutNear(uint64_t target) {
  for (const Block& b : held_) {
    if (target < b.offset || target >= b.offset + b.size) continue;
    const uint64_t from = std::max(b.offset, spec_start_);
    if (target <= from) break;
    std::optional<EventCut> cut = FindLastEventCut(
        std::string_view(b.data + (from - b.offset), static_cast<size_t>(target - from)), from,
        line_position_);
    if (cut && cut->event_end > spec_start_) return cut;
    break;
  }
  const uint64_t forward = std::max(target, searched_to_);
  for (const Block& b : held_) {
    const uint64_t end = b.offset + b.size;
    if (end <= forward) continue;
    const uint64_t from = std::max(b.offset, forward);
    std::optional<EventCut> cut = FindFirstEventCut(
        std::string_view(b.data + (from - b.offset), static_cast<size_t>(end - from)), from,
        line_position_);
    if (cut) return cut;
  }
  searched_to_ = held_.back().offset + held_.back().size;
  return std::nullopt;
}

void EventChunker::EmitSpeculative(const EventCut& cut, std::vector<EventChunk>* out) {
  EventChunk chunk;
  chunk.speculative = true;
  chunk.begin = spec_start_;
  chunk.end = cut.event_end;
  for (const Block& b : held_) {
    const uint64_t from = std::max(b.offset, chunk.begin);
    const uint64_t to = std::min(b.offset + b.size, chunk.end);
    if (to > from) chunk.pieces.push_back(b.Slice(from, to));
  }
  chunk.previous_event_end = spec_after_;
  chunk.seq = next_seq_++;
  out->push_back(std::move(chunk));
  StartSpeculationAt(cut);
  while (!held_.empty() && held_.front().offset + held_.front().size <= spec_start_) {
    held_.pop_front();
  }
}

// CutAtBlockEnd() cuts the chunk that begins in the block just fed at the block's last cut, when
// no earlier block holds a part of it; the rest of the block comes back as the next block's start.
void EventChunker::CutAtBlockEnd(std::vector<EventChunk>* out) {
  if (held_.size() != 1) return;
  const Block& block = held_.back();
  if (!block.padded || spec_start_ < block.offset) return;
  const uint64_t end = block.offset + block.size;
  std::optional<EventCut> cut =
      FindLastEventCut(std::string_view(block.data + (spec_start_ - block.offset),
                                        static_cast<size_t>(end - spec_start_)),
                       spec_start_, line_position_);
  if (!cut || cut->event_end <= spec_start_ || MayHoldTooLargeAnEvent(*cut)) return;
  EmitSpeculative(*cut, out);
  out->back().in_place = true;
  held_.clear();
  unread_ = cut->next_event;
  searched_to_ = 0;
}

bool EventChunker::CutSpeculatively(std::vector<EventChunk>* out) {
  while (!held_.empty()) {
    const uint64_t target = spec_start_ + options_.chunk_bytes;
    if (held_.back().offset + held_.back().size <= target) return true;
    std::optional<EventCut> cut = FindCutNear(target);
    if (!cut) return true;
    if (MayHoldTooLargeAnEvent(*cut)) return false;
    EmitSpeculative(*cut, out);
  }
  return true;
}

// MayHoldTooLargeAnEvent() is true when a speculative chunk up to `cut` would be larger than an
// event may be: only the exact splitter measures events, so it reads such a range.
bool EventChunker::MayHoldTooLargeAnEvent(const EventCut& cut) const {
  return cut.event_end - spec_start_ > options_.max_event_bytes;
}

// FeedHeldExactly() goes back to the exact splitter for the blocks held since the last
// speculative cut: at the end of the input, or when no cut was found within an event's size
// limit (a giant event, which the splitter then measures, or a change of layout).
absl::Status EventChunker::FeedHeldExactly(std::vector<EventChunk>* out) {
  mode_ = Mode::kExact;
  splitter_.ResumeBeforeEvent(spec_start_, spec_after_);
  std::deque<Block> rest;
  rest.swap(held_);
  for (const Block& b : rest) {
    const uint64_t from = std::max(b.offset, spec_start_);
    absl::Status st = FeedSplitter(b, static_cast<size_t>(from - b.offset), b.size, out);
    if (!st.ok()) return st;
  }
  if (!rest.empty()) exact_until_ = rest.back().offset + rest.back().size;
  searched_to_ = 0;
  return absl::OkStatus();
}

absl::Status EventChunker::Feed(const Block& block, std::vector<EventChunk>* out) {
  fed_ = block.offset + block.size;
  if (fed_ <= skip_until_) return absl::OkStatus();
  if (mode_ == Mode::kSpeculative) {
    held_.push_back(block);
    if (!CutSpeculatively(out) ||
        fed_ - spec_start_ > options_.chunk_bytes + options_.max_event_bytes) {
      return FeedHeldExactly(out);
    }
    if (cut_at_block_ends_) CutAtBlockEnd(out);
    return absl::OkStatus();
  }
  const size_t from =
      skip_until_ > block.offset ? static_cast<size_t>(skip_until_ - block.offset) : 0;
  return FeedExact(block, from, out);
}

// FindCutInFile() reads the bytes before `target` for the last cut there, else those after it
// for the first; nullopt when the file ends first.
// `searched_to` is where the search stopped: the file's end, or an event's size limit past the
// target.
absl::StatusOr<std::optional<EventCut>> EventChunker::FindCutInFile(uint64_t target,
                                                                    uint64_t* searched_to) {
  // Events are mostly under a kilobyte: 8 KiB before the target nearly always hold a cut.
  constexpr uint64_t kBackWindow = 8 << 10;
  constexpr uint64_t kWindow = 64 << 10;
  constexpr uint64_t kOverlap = 4 << 10;  // a cut across two windows is found in the second
  const uint64_t size = file_->file_bytes();
  const uint64_t back = std::max(spec_start_, target > kBackWindow ? target - kBackWindow : 0);
  window_.resize(static_cast<size_t>(target - back));
  absl::Status st = file_->ReadAt(back, window_.size(), window_.data());
  if (!st.ok()) return st;
  std::optional<EventCut> cut = FindLastEventCut(window_, back, line_position_);
  if (cut && cut->event_end > spec_start_) return cut;
  const uint64_t until = std::min(size, target + options_.max_event_bytes);
  *searched_to = until;
  for (uint64_t at = target; at < until; at += kWindow - kOverlap) {
    window_.resize(static_cast<size_t>(std::min(kWindow, size - at)));
    st = file_->ReadAt(at, window_.size(), window_.data());
    if (!st.ok()) return st;
    if ((cut = FindFirstEventCut(window_, at, line_position_))) return cut;
    if (at + window_.size() == size) break;
  }
  return std::optional<EventCut>();
}

absl::Status EventChunker::CutFile(std::vector<EventChunk>* out) {
  // Four chunks per thread in what is left, once that is less than a full chunk each.
  const uint64_t left = file_->file_bytes() - spec_start_;
  const uint64_t share = left / (4 * std::max<uint64_t>(options_.threads, 1));
  const uint64_t target =
      spec_start_ + std::clamp<uint64_t>(share,
                                         std::min(options_.min_chunk_bytes, options_.chunk_bytes),
                                         options_.chunk_bytes);
  std::optional<EventCut> cut;
  uint64_t searched_to = file_->file_bytes();
  if (target < file_->file_bytes()) {
    absl::StatusOr<std::optional<EventCut>> found = FindCutInFile(target, &searched_to);
    if (!found.ok()) return found.status();
    cut = *found;
  }
  if (!cut || MayHoldTooLargeAnEvent(*cut)) {
    // The end of the events array and what follows go through the exact splitter, and so do
    // events that may be too large.
    ResumeExact(spec_start_, spec_after_, cut ? cut->event_end : searched_to);
    return absl::OkStatus();
  }
  EventChunk chunk;
  chunk.speculative = true;
  chunk.file = file_;
  chunk.begin = spec_start_;
  chunk.end = cut->event_end;
  chunk.previous_event_end = spec_after_;
  chunk.seq = next_seq_++;
  out->push_back(std::move(chunk));
  StartSpeculationAt(*cut);
  fed_ = std::max(fed_, cut->event_end);
  return absl::OkStatus();
}

// ResumeExact() goes back to the exact splitter at `offset`, an event's '{', speculating again
// only from cuts at or after `exact_until`.
void EventChunker::StartSpeculationAt(const EventCut& cut) {
  spec_start_ = cut.next_event;
  spec_after_ = cut.event_end;
}

void EventChunker::ResumeExact(uint64_t offset, uint64_t previous_event_end, uint64_t exact_until) {
  mode_ = Mode::kExact;
  skip_until_ = offset;
  exact_until_ = exact_until;
  held_.clear();
  searched_to_ = 0;
  seek_ = offset;
  unread_.reset();
  splitter_.ResumeBeforeEvent(offset, previous_event_end);
}

absl::Status EventChunker::Finish(std::vector<EventChunk>* out) {
  if (mode_ == Mode::kSpeculative) {
    // The end of the events array and what follows it go through the exact splitter.
    absl::Status st = FeedHeldExactly(out);
    if (!st.ok()) return st;
  }
  if (options_.salvage_truncated) {
    const size_t first = out->size();
    truncated_ = splitter_.Salvage(out);
    Number(out, first);
  }
  return splitter_.Finish();
}

void EventChunker::Restart(const EventChunk& chunk) {
  splitter_ = *at_first_cut_;  // a speculative chunk was cut after it
  ResumeExact(chunk.begin, chunk.previous_event_end, chunk.end);
  next_seq_ = 0;
  if (++rejected_ >= kMaxRejected) options_.speculate = false;
}

}  // namespace tracefuse
