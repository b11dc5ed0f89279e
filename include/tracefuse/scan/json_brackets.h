// The brackets of a JSON text outside its strings, found 64 bytes at a time: what the Kineto
// event splitter and the rocprofv3 reader walk to see a document's structure without parsing it.
// Part of the scan stage.
//
// Performance note: each 64-byte block is classified with bit masks (quotes, backslashes,
// brackets), strings found by the parity of unescaped quotes (a prefix XOR), as simdjson's stage
// 1 does, with AVX2 where the CPU has it: several GB/s on one core, and only the brackets are
// then visited one by one.
#ifndef TRACEFUSE_SCAN_JSON_BRACKETS_H_
#define TRACEFUSE_SCAN_JSON_BRACKETS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tracefuse {

// IsJsonSpace() tells whether `c` is whitespace between JSON tokens.
inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// StringCarry is what string tracking carries from one 64-byte block to the next.
struct StringCarry {
  uint64_t next_is_escaped = 0;  // the next block's first byte is escaped
  uint64_t prev_in_string = 0;   // all ones when the previous block ended inside a string
};

// BracketMasks() writes, for each of the `steps` 64-byte blocks at `bytes`, the mask of its
// brackets ({ } [ ]) outside strings (bit i: byte i).
void BracketMasks(const char* bytes, size_t steps, StringCarry* carry, uint64_t* masks);
// TailBracketMask() is the same for a last block of `size` < 64 bytes.
uint64_t TailBracketMask(const char* bytes, size_t size, StringCarry* carry);

// ForEachBracketOutsideStrings() calls `on_bracket(position)` for each bracket outside strings in
// bytes[0, size), in order, until it returns false; `carry` goes from one call to the next, so a
// text may come in pieces.
template <typename OnBracket>
void ForEachBracketOutsideStrings(const char* bytes, size_t size, StringCarry* carry,
                                  OnBracket&& on_bracket) {
  constexpr size_t kBatch = 64;  // blocks classified at a time
  uint64_t masks[kBatch];
  for (size_t step = 0; step < size;) {
    size_t steps = (size - step) / 64 < kBatch ? (size - step) / 64 : kBatch;
    if (steps > 0) {
      BracketMasks(bytes + step, steps, carry, masks);
    } else {
      masks[0] = TailBracketMask(bytes + step, size - step, carry);
      steps = 1;
    }
    for (size_t s = 0; s < steps; ++s, step += 64) {
      for (uint64_t brackets = masks[s]; brackets != 0; brackets &= brackets - 1) {
        if (!on_bracket(step + static_cast<size_t>(__builtin_ctzll(brackets)))) return;
      }
    }
  }
}

}  // namespace tracefuse

#endif  // TRACEFUSE_SCAN_JSON_BRACKETS_H_
