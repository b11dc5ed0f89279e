#include "tracefuse/scan/json_brackets.h"

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

}  // namespace

void BracketMasks(const char* bytes, size_t steps, StringCarry* carry, uint64_t* masks) {
  kStructural(bytes, steps, carry, masks);
}

uint64_t TailBracketMask(const char* bytes, size_t size, StringCarry* carry) {
  alignas(64) char tail[64];  // padded with spaces, which are neither quotes nor brackets
  std::memset(tail, ' ', sizeof(tail));
  std::memcpy(tail, bytes, size);
  return Structural(Classify64(tail), carry, size);
}

}  // namespace tracefuse
