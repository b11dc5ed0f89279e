// Internals of the fusion analysis (stage 6), declared for the stage's tests and benchmarks only:
// they check group matching and sequence-mapping detection on hand-built inputs, and time group
// matching against the reference's algorithm. Nothing outside src/analyze/fusion/analysis.cc,
// tests/ and bench/ includes this header; the stage's interface is tracefuse/analyze/fusion.h.
#ifndef TRACEFUSE_SRC_ANALYZE_FUSION_INTERNAL_H_
#define TRACEFUSE_SRC_ANALYZE_FUSION_INTERNAL_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "tracefuse/analyze/fusion.h"

namespace tracefuse {

// kCategoryIds is how many categories a CategoryId can name.
constexpr size_t kCategoryIds = size_t{std::numeric_limits<CategoryId>::max()} + 1;

// Composition is a bit set of categories, a bit for every CategoryId: fixed, so that a group's
// shape takes no allocation of its own (the two traces' shapes are taken in parallel, and every
// allocation takes the heap's one lock).
using Composition = std::array<uint64_t, kCategoryIds / 64>;

// GroupShape is what group matching (§4.1 step 3) knows of one large correlation group: the
// fields of its signature, and its composition.
struct GroupShape {
  uint32_t size = 0;
  bool has_attention = false;  // a kernel name contains "attention" or "fmha"
  bool has_ffn = false;        // a kernel name contains "cijk", "nvjet" or "gemm"
  CategoryId dominant = 0;     // most frequent type, the first seen on ties
  Composition composition{};   // the types present

  // Of() is the shape of a group of `count` kernels whose types, in list order, are `types`.
  static GroupShape Of(const CategoryId* types, size_t count, bool has_attention, bool has_ffn);
};

// MatchGroups() matches large correlation groups (§4.1 step 3). Returns (trace-1 index, trace-2
// index) pairs in processing order: trace-1 size, descending.
std::vector<std::pair<uint32_t, uint32_t>> MatchGroups(const std::vector<GroupShape>& groups1,
                                                       const std::vector<GroupShape>& groups2);

// FindSequenceMappings() detects sequence mappings (§4.2) on two ts-ordered type sequences over
// `category_count` categories; `other` is the category excluded from imbalance targets. Appends
// to `out` in the reference's block order.
void FindSequenceMappings(const std::vector<CategoryId>& types1,
                          const std::vector<CategoryId>& types2, size_t category_count,
                          std::optional<CategoryId> other, std::vector<FusionMapping>* out);

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_ANALYZE_FUSION_INTERNAL_H_
