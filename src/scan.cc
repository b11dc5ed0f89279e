#include "tracefuse/scan.h"

#include <cstring>

#include "tracefuse/strings.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tracefuse {
namespace {

struct ByteMasks {
  uint64_t quote;
  uint64_t backslash;
  uint64_t bracket;  // { } [ ]
};

// Bit i of each mask says whether byte i of the 64-byte block is that character.
// '[' | 0x20 == '{' and ']' | 0x20 == '}': two compares find all four brackets.
#if defined(__x86_64__)
inline ByteMasks Classify64Sse2(const char* p) {
  ByteMasks m{0, 0, 0};
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i lower_bit = _mm_set1_epi8(0x20);
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  for (int i = 0; i < 4; ++i) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    __m128i folded = _mm_or_si128(v, lower_bit);
    uint64_t q = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)));
    uint64_t b = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash)));
    uint64_t s = static_cast<uint32_t>(_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(folded, open), _mm_cmpeq_epi8(folded, close))));
    m.quote |= q << (16 * i);
    m.backslash |= b << (16 * i);
    m.bracket |= s << (16 * i);
  }
  return m;
}

__attribute__((target("avx2"))) inline ByteMasks Classify64Avx2(const char* p) {
  ByteMasks m{0, 0, 0};
  const __m256i quote = _mm256_set1_epi8('"');
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i lower_bit = _mm256_set1_epi8(0x20);
  const __m256i open = _mm256_set1_epi8('{');
  const __m256i close = _mm256_set1_epi8('}');
  for (int i = 0; i < 2; ++i) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * i));
    __m256i folded = _mm256_or_si256(v, lower_bit);
    uint64_t q = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, quote)));
    uint64_t b = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, backslash)));
    uint64_t s = static_cast<uint32_t>(_mm256_movemask_epi8(
        _mm256_or_si256(_mm256_cmpeq_epi8(folded, open), _mm256_cmpeq_epi8(folded, close))));
    m.quote |= q << (32 * i);
    m.backslash |= b << (32 * i);
    m.bracket |= s << (32 * i);
  }
  return m;
}
#else
inline ByteMasks Classify64Portable(const char* p) {
  ByteMasks m{0, 0, 0};
  for (int i = 0; i < 64; ++i) {
    const char c = p[i];
    const uint64_t bit = uint64_t{1} << i;
    if (c == '"') m.quote |= bit;
    if (c == '\\') m.backslash |= bit;
    if ((c | 0x20) == '{' || (c | 0x20) == '}') m.bracket |= bit;
  }
  return m;
}
#endif

// Bit i = XOR of bits 0..i.
inline uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// Characters escaped by a backslash (simdjson's algorithm: an odd-length backslash run escapes
// the next character). `next_is_escaped` carries a run that ends at the block's last byte.
inline uint64_t EscapedChars(uint64_t backslash, uint64_t* next_is_escaped) {
  constexpr uint64_t kOddBits = 0xAAAAAAAAAAAAAAAAULL;
  if (backslash == 0) {
    uint64_t escaped = *next_is_escaped;
    *next_is_escaped = 0;
    return escaped;
  }
  uint64_t potential_escape = backslash & ~*next_is_escaped;
  uint64_t maybe_escaped = potential_escape << 1;
  uint64_t maybe_escaped_and_odd_bits = maybe_escaped | kOddBits;
  uint64_t even_series_codes_and_odd_bits = maybe_escaped_and_odd_bits - potential_escape;
  uint64_t escape_and_terminal_code = even_series_codes_and_odd_bits ^ kOddBits;
  uint64_t escaped = escape_and_terminal_code ^ (backslash | *next_is_escaped);
  uint64_t escape = escape_and_terminal_code & backslash;
  *next_is_escaped = escape >> 63;
  return escaped;
}

// Brackets outside strings, from one block's masks. `len` < 64 for a space-padded tail, whose
// escape carry belongs to its first padding byte rather than to byte 63.
inline uint64_t Structural(const ByteMasks& m, StringCarry* carry, size_t len = 64) {
  uint64_t escaped = EscapedChars(m.backslash, &carry->next_is_escaped);
  if (len < 64) carry->next_is_escaped = (escaped >> len) & 1;
  uint64_t quotes = m.quote & ~escaped;
  uint64_t in_string = PrefixXor(quotes) ^ carry->prev_in_string;
  carry->prev_in_string = static_cast<uint64_t>(static_cast<int64_t>(in_string) >> 63);
  return m.bracket & ~in_string;
}

// Structural masks of `steps` whole 64-byte blocks, with the best instructions the CPU has.
using StructuralFn = void (*)(const char* p, size_t steps, StringCarry* carry, uint64_t* out);

#if defined(__x86_64__)
__attribute__((target("avx2"))) void StructuralAvx2(const char* p, size_t steps, StringCarry* carry,
                                                    uint64_t* out) {
  for (size_t i = 0; i < steps; ++i) out[i] = Structural(Classify64Avx2(p + 64 * i), carry);
}
void StructuralSse2(const char* p, size_t steps, StringCarry* carry, uint64_t* out) {
  for (size_t i = 0; i < steps; ++i) out[i] = Structural(Classify64Sse2(p + 64 * i), carry);
}
ByteMasks Classify64(const char* p) { return Classify64Sse2(p); }
StructuralFn PickStructural() {
  return __builtin_cpu_supports("avx2") ? StructuralAvx2 : StructuralSse2;
}
#else
void StructuralPortable(const char* p, size_t steps, StringCarry* carry, uint64_t* out) {
  for (size_t i = 0; i < steps; ++i) out[i] = Structural(Classify64Portable(p + 64 * i), carry);
}
ByteMasks Classify64(const char* p) { return Classify64Portable(p); }
StructuralFn PickStructural() { return StructuralPortable; }
#endif

const StructuralFn kStructural = PickStructural();

inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

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
  if (end_offset > from) {
    Block piece;
    piece.data = block.data + (from - block.offset);
    piece.size = static_cast<size_t>(end_offset - from);
    piece.offset = from;
    piece.owner = block.owner;
    chunk_.pieces.push_back(std::move(piece));
  }
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
  } else if (!in_events_ && !bare_array_ && stack_.size() == 1 && c == '[') {
    AppendMetadata(block.data + (copy_from_ - block.offset), at);
    copy_from_ = offset;
    if (MetadataEndsWithEventsKey() && copying_metadata_) {
      metadata_.push_back('[');
      leading_metadata_bytes_ = metadata_.size();
      copying_metadata_ = false;
      in_events_ = true;
      events_started_ = true;
      events_depth_ = 2;
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
  if ((open == '{') != (c == '}')) {
    return Error(offset, StrCat("unexpected ", Printable(c), " (expected ",
                                open == '{' ? "'}'" : "']'", ")"));
  }
  stack_.pop_back();
  if (in_events_) {
    if (stack_.size() == events_depth_ && c == '}') {
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
      if (!bare_array_) {
        copying_metadata_ = !metadata_truncated_;
        copy_from_ = offset;
      }
    }
  }
  if (stack_.empty()) {
    finished_ = true;
    AppendMetadata(block.data + (copy_from_ - block.offset),
                   block.data + (offset - block.offset) + 1);
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
      return absl::InvalidArgumentError(StrCat(name_,
                                               ": not a JSON trace: expected '{' or '[' at byte ",
                                               block.offset + i, ", found ", Printable(base[i])));
    }
    started_ = true;
    copy_from_ = block.offset + i;
  }

  // Whole 64-byte steps go through the vector path in batches; a short tail is padded with
  // spaces. The first step may begin before `i`: those bytes are whitespace (or a BOM).
  constexpr size_t kBatch = 64;
  uint64_t masks[kBatch];
  for (size_t step = 0; step < n && !finished_;) {
    size_t steps = std::min(kBatch, (n - step) / 64);
    if (steps > 0) {
      kStructural(base + step, steps, &carry_, masks);
    } else {
      alignas(64) char tail[64];
      std::memset(tail, ' ', sizeof(tail));
      std::memcpy(tail, base + step, n - step);
      masks[0] = Structural(Classify64(tail), &carry_, n - step);
      steps = 1;
    }
    for (size_t s = 0; s < steps && !finished_; ++s, step += 64) {
      uint64_t brackets = masks[s];
      while (brackets != 0) {
        size_t pos = step + static_cast<size_t>(__builtin_ctzll(brackets));
        brackets &= brackets - 1;
        const char c = base[pos];
        uint64_t offset = block.offset + pos;
        absl::Status st = (c == '{' || c == '[') ? OnOpen(c, offset, base + pos, block)
                                                 : OnClose(c, offset, block, out);
        if (!st.ok()) return st;
        if (finished_) {
          i = pos + 1;
          break;
        }
      }
    }
  }

  if (finished_) return CheckTrailer(base + i, base + n, block.offset + i);

  const uint64_t block_end = block.offset + n;
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
    return absl::InvalidArgumentError(
        StrCat(name_, ": truncated JSON: the input ends at byte ", scanned_, " ", where));
  }
  return absl::OkStatus();
}

}  // namespace tracefuse
