#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "analyze/fusion/internal.h"
#include "fmt/format.h"
#include "oneapi/tbb/parallel_invoke.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

// Larger() is the side with the larger value, trace 2 on ties: the reference's "unfused" side of
// an imbalance or of a chain.
template <typename T>
Side Larger(const PerSide<T>& v) {
  return v[Side::kTrace1] > v[Side::kTrace2] ? Side::kTrace1 : Side::kTrace2;
}

// RatiosOf() is, per side, its value over the other side's (+inf over 0).
PerSide<double> RatiosOf(const PerSide<double>& v) {
  PerSide<double> ratios{};
  for (Side s : kSides) ratios[s] = Ratio(v[s], v[Opposite(s)]);
  return ratios;
}

bool EitherAbove(const PerSide<double>& v, double threshold) {
  return v[Side::kTrace1] > threshold || v[Side::kTrace2] > threshold;
}

// NewMapping() starts a mapping of `kind` in which `fused_side` fuses `type` into `fused_type`;
// `count` is, per side, the reference's fused_count or unfused count. Each kind sets the rest.
FusionMapping NewMapping(FusionMapping::Kind kind, Side fused_side, CategoryId fused_type,
                         CategoryId type, const PerSide<int64_t>& count) {
  FusionMapping m;
  m.kind = kind;
  m.fused_side = fused_side;
  m.fused_type = fused_type;
  m.type = type;
  m.fused_count = count[fused_side];
  m.unfused_count = count[Opposite(fused_side)];
  return m;
}

template <size_t N>
bool ContainsAny(const std::string& s, const char* const (&needles)[N]) {
  return std::any_of(std::begin(needles), std::end(needles),
                     [&](const char* needle) { return s.find(needle) != std::string::npos; });
}

}  // namespace

const PerSide<std::string>& ReferenceLabels() {
  static const PerSide<std::string> labels{{"Trace 1", "Trace 2"}};
  return labels;
}

double Ratio(double a, double b) {
  return b == 0 ? std::numeric_limits<double>::infinity() : a / b;
}

std::vector<CategoryId> FusionMapping::UnfusedSequence() const {
  switch (kind) {
    case Kind::kSequence:
      return {fused_type, type};
    case Kind::kChain:
      return {type, type};
    default:
      return {type};
  }
}

std::vector<std::pair<CategoryId, int64_t>> FusionMapping::UnfusedCountPerType() const {
  if (kind == Kind::kSequence)
    return {{fused_type, fused_type_unfused_count}, {type, unfused_count}};
  return {{type, unfused_count}};
}

std::string Evidence(const FusionMapping& m, const std::vector<std::string>& categories,
                     const PerSide<std::string>& labels) {
  const std::string& fused = labels[m.fused_side];
  const std::string& unfused = labels[Opposite(m.fused_side)];
  const std::string& type = categories[m.type];
  const std::string& fused_type = categories[m.fused_type];
  switch (m.kind) {
    case FusionMapping::Kind::kSequence:
      return fmt::format("{} runs {}+{} separately, {} fuses into {}", unfused, fused_type, type,
                         fused, fused_type);
    case FusionMapping::Kind::kImbalance:
      return fmt::format("{} calls {} {:.1f}x more ({} vs {}), {} likely fuses into {}", unfused,
                         type, m.ratio, m.unfused_count, m.fused_count, fused, fused_type);
    case FusionMapping::Kind::kPartial: {
      std::string targets;
      for (const auto& [target, n] : m.targets) {
        if (!targets.empty()) targets += ", ";
        targets += fmt::format("{} (+{})", categories[target], n);
      }
      return fmt::format(
          "{} calls {} {:.1f}x more ({} vs {}). In {} groups where {} has {}, {} has more: {}",
          unfused, type, m.ratio, m.unfused_count, m.fused_count, m.groups_analyzed, unfused, type,
          fused, targets);
    }
    case FusionMapping::Kind::kChain:
      return fmt::format(
          "{} runs {} in chains of {:.0f} calls ({} chains, {} total), {} fuses to {:.0f} calls "
          "({} chains, {} total) - {:.1f}x more efficient",
          unfused, type, m.unfused_avg, m.unfused_chains, Thousands(m.unfused_count), fused,
          m.fused_avg, m.fused_chains, Thousands(m.fused_count), m.ratio);
  }
  return "";
}

std::string ReferenceGpuName(const TraceMetadata& m) {
  if (m.gpu_name) return *m.gpu_name;
  const bool amd = m.roctracer_version_truthy || m.warp_size == kAmdWarpSize;
  return amd ? "MI300X" : "Unknown GPU";
}

// --- §4.1 step 3: group matching ---------------------------------------------------------------
//
// Trace-2 groups are bucketed by signature, and inside a signature by (size, composition): all
// groups of one class score the same against a given trace-1 group, so only the first unused
// group of each class can win. A trace-1 group therefore scores a few classes, not every
// candidate, and the reference's result (lowest score, first in candidate order on ties) is kept.

namespace {

// §4.1 step 3: the reference's _match_correlation_groups.
constexpr int64_t kSizeBucketWidth = 10;  // signature size bucket: floor(size / 10) * 10
constexpr double kSizeTolerance = 0.25;   // candidates within size / 1.25 .. size * 1.25
constexpr double kSizeFactor = 1 + kSizeTolerance;
constexpr int64_t kSharedTypeWeight = 10;  // score: |size difference| - 10 * shared types
// A group has attention (FFN) when a lowercased kernel name of it contains one of these.
constexpr const char* kAttentionMarkers[] = {"attention", "fmha"};
constexpr const char* kFfnMarkers[] = {"cijk", "nvjet", "gemm"};

constexpr size_t kCompositionWordBits = std::numeric_limits<uint64_t>::digits;

int Intersection(const Composition& a, const Composition& b) {
  int n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += __builtin_popcountll(a[i] & b[i]);
  return n;
}

int64_t SizeBucket(uint32_t size) { return size / kSizeBucketWidth * kSizeBucketWidth; }

// SignatureKey() packs the signature of `g`, with its size bucket given as `bucket`, into one hash
// key: the dominant type in the low bits, the two flags above it, the bucket above them.
uint64_t SignatureKey(const GroupShape& g, int64_t bucket) {
  constexpr int kFlagsShift = std::numeric_limits<CategoryId>::digits;
  return (static_cast<uint64_t>(bucket) << (kFlagsShift + 2)) |
         (uint64_t{g.has_attention} << (kFlagsShift + 1)) | (uint64_t{g.has_ffn} << kFlagsShift) |
         g.dominant;
}

// ShapeClass is the trace-2 groups of one signature with equal size and composition.
struct ShapeClass {
  uint32_t size;
  Composition composition;
  std::vector<uint32_t> groups;  // trace-2 indices, in trace order
  size_t next = 0;               // first unused
};

struct SignatureBucket {
  std::vector<ShapeClass> classes;
  size_t unused = 0;
};

using SignatureIndex = absl::flat_hash_map<uint64_t, SignatureBucket>;

SignatureIndex IndexBySignature(const std::vector<GroupShape>& groups) {
  SignatureIndex index;
  for (uint32_t j = 0; j < groups.size(); ++j) {
    const GroupShape& g = groups[j];
    SignatureBucket& b = index[SignatureKey(g, SizeBucket(g.size))];
    auto it = std::find_if(b.classes.begin(), b.classes.end(), [&](const ShapeClass& c) {
      return c.size == g.size && c.composition == g.composition;
    });
    if (it == b.classes.end()) {
      b.classes.push_back(ShapeClass{g.size, g.composition, {}, 0});
      it = b.classes.end() - 1;
    }
    it->groups.push_back(j);
    ++b.unused;
  }
  return index;
}

// CandidateBuckets() are the buckets whose unused groups are `g`'s candidates: its own
// signature's, or, only when that has none left, those of the adjacent size buckets, lower first.
std::vector<SignatureBucket*> CandidateBuckets(const GroupShape& g, SignatureIndex* index) {
  auto with_unused = [&](int64_t bucket) -> SignatureBucket* {
    auto it = index->find(SignatureKey(g, bucket));
    return it != index->end() && it->second.unused > 0 ? &it->second : nullptr;
  };
  const int64_t bucket = SizeBucket(g.size);
  if (SignatureBucket* exact = with_unused(bucket)) return {exact};
  std::vector<SignatureBucket*> adjacent;
  for (int64_t b : {bucket - kSizeBucketWidth, bucket + kSizeBucketWidth}) {
    if (b < 0) continue;
    if (SignatureBucket* found = with_unused(b)) adjacent.push_back(found);
  }
  return adjacent;
}

struct Candidate {
  ShapeClass* shape = nullptr;  // null when no candidate passes the size filter
  SignatureBucket* bucket = nullptr;
};

// BestCandidate() is the candidate of lowest score among those that pass the size filter; on
// ties the first in the reference's candidate order (bucket, then trace-2 index).
Candidate BestCandidate(const GroupShape& g, const std::vector<SignatureBucket*>& buckets) {
  const double low = g.size / kSizeFactor, high = g.size * kSizeFactor;
  Candidate best;
  int64_t best_score = 0;
  std::pair<size_t, uint32_t> best_position{};  // (bucket, trace-2 index): candidate order
  for (size_t b = 0; b < buckets.size(); ++b) {
    for (ShapeClass& c : buckets[b]->classes) {
      if (c.next == c.groups.size()) continue;
      const double size2 = c.size;
      if (!(low <= size2 && size2 <= high)) continue;
      const int64_t score =
          std::llabs(static_cast<int64_t>(g.size) - static_cast<int64_t>(c.size)) -
          kSharedTypeWeight * Intersection(g.composition, c.composition);
      const std::pair<size_t, uint32_t> position{b, c.groups[c.next]};
      if (best.shape == nullptr || score < best_score ||
          (score == best_score && position < best_position)) {
        best = Candidate{&c, buckets[b]};
        best_score = score;
        best_position = position;
      }
    }
  }
  return best;
}

}  // namespace

GroupShape GroupShape::Of(const CategoryId* types, size_t count, bool has_attention, bool has_ffn) {
  GroupShape g;
  g.size = static_cast<uint32_t>(count);
  g.has_attention = has_attention;
  g.has_ffn = has_ffn;
  CategoryId max_type = 0;
  for (size_t i = 0; i < count; ++i) max_type = std::max(max_type, types[i]);
  const size_t ncat = size_t{max_type} + 1;
  std::array<uint32_t, kCategoryIds> seen, first;  // only [0, ncat) is used
  std::fill_n(seen.begin(), ncat, 0);
  for (uint32_t i = 0; i < count; ++i) {
    const CategoryId t = types[i];
    if (seen[t]++ == 0) first[t] = i;
    g.composition[t / kCompositionWordBits] |= uint64_t{1} << (t % kCompositionWordBits);
  }
  for (CategoryId t : CategoryIds(ncat)) {
    if (seen[t] == 0) continue;
    if (seen[t] > seen[g.dominant] || (seen[t] == seen[g.dominant] && first[t] < first[g.dominant]))
      g.dominant = t;
  }
  return g;
}

std::vector<std::pair<uint32_t, uint32_t>> MatchGroups(const std::vector<GroupShape>& groups1,
                                                       const std::vector<GroupShape>& groups2) {
  SignatureIndex index = IndexBySignature(groups2);
  std::vector<uint32_t> order(groups1.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return groups1[a].size > groups1[b].size; });
  std::vector<std::pair<uint32_t, uint32_t>> matches;
  for (uint32_t i : order) {
    const Candidate best = BestCandidate(groups1[i], CandidateBuckets(groups1[i], &index));
    if (best.shape == nullptr) continue;
    matches.emplace_back(i, best.shape->groups[best.shape->next++]);
    --best.bucket->unused;
  }
  return matches;
}

// --- §4.2: sequence mappings -------------------------------------------------------------------

namespace {

// §4.2: the reference's _find_fusion_mappings.
constexpr int64_t kMinUniqueKernels = 5;       // unique-type rule: fewer kernels are skipped
constexpr double kMinPredecessorShare = 0.8;   // ... the predecessor must precede strictly more
constexpr double kMinImbalanceRatio = 1.3;     // count-imbalance rule (and §4.1 step 9): max / min
constexpr int64_t kMinImbalanceKernels = 100;  // ... over at least this many kernels

// SequenceCounts are, per category, a sequence's kernels of it and the position of the first.
struct SequenceCounts {
  std::vector<int64_t> count;
  std::vector<size_t> first;

  SequenceCounts(const std::vector<CategoryId>& types, size_t ncat)
      : count(ncat, 0), first(ncat, SIZE_MAX) {
    for (size_t i = 0; i < types.size(); ++i) {
      if (count[types[i]]++ == 0) first[types[i]] = i;
    }
  }
};

// PredecessorTally counts, for each type of interest, the types right before its kernels, and
// where each such predecessor first occurs: the reference's Counter breaks ties by first insertion.
class PredecessorTally {
 public:
  static constexpr int kNotTallied = -1;

  // `slot[t]` numbers the types of interest from 0, kNotTallied for the others.
  PredecessorTally(const std::vector<CategoryId>& seq, const std::vector<int>& slot,
                   size_t slot_count, size_t ncat)
      : ncat_(ncat), count_(slot_count * ncat, 0), first_(slot_count * ncat, SIZE_MAX) {
    for (size_t i = 1; i < seq.size(); ++i) {
      const int s = slot[seq[i]];
      if (s == kNotTallied) continue;
      const size_t cell = static_cast<size_t>(s) * ncat + seq[i - 1];
      if (count_[cell]++ == 0) first_[cell] = i;
    }
  }

  // MostCommon() is slot `s`'s most common predecessor and its count (0 when it has none).
  std::pair<CategoryId, int64_t> MostCommon(size_t s) const {
    CategoryId pred = 0;
    int64_t best = 0;
    size_t best_first = SIZE_MAX;
    for (CategoryId p : CategoryIds(ncat_)) {
      const size_t cell = s * ncat_ + p;
      if (count_[cell] > best || (count_[cell] == best && best > 0 && first_[cell] < best_first)) {
        pred = p;
        best = count_[cell];
        best_first = first_[cell];
      }
    }
    return {pred, best};
  }

 private:
  size_t ncat_;
  std::vector<int64_t> count_;  // [slot * ncat + predecessor]
  std::vector<size_t> first_;
};

// AppendPredecessorMappings() is §4.2's unique-type rule for the types only `unfused` runs: when
// one predecessor comes right before more than kMinPredecessorShare of such a type's kernels and
// the other side runs that predecessor too, the other side fuses the type into it.
void AppendPredecessorMappings(const std::vector<CategoryId>& seq, Side unfused,
                               const PerSide<SequenceCounts>& counts, size_t ncat,
                               std::vector<FusionMapping>* out) {
  const Side fused = Opposite(unfused);
  const std::vector<int64_t>& own = counts[unfused].count;
  const std::vector<int64_t>& others = counts[fused].count;
  std::vector<int> slot(ncat, PredecessorTally::kNotTallied);
  std::vector<CategoryId> unique;
  for (CategoryId t : CategoryIds(ncat)) {
    if (own[t] >= kMinUniqueKernels && others[t] == 0) {
      slot[t] = static_cast<int>(unique.size());
      unique.push_back(t);
    }
  }
  if (unique.empty()) return;
  const PredecessorTally tally(seq, slot, unique.size(), ncat);
  for (size_t u = 0; u < unique.size(); ++u) {
    const auto [pred, pred_count] = tally.MostCommon(u);
    const int64_t n = own[unique[u]];
    const double share = static_cast<double>(pred_count) / static_cast<double>(n);
    if (pred_count == 0 || !(share > kMinPredecessorShare) || others[pred] == 0) continue;
    PerSide<int64_t> count{};
    count[fused] = others[pred];
    count[unfused] = n;
    FusionMapping m = NewMapping(FusionMapping::Kind::kSequence, fused, pred, unique[u], count);
    m.fused_type_unfused_count = own[pred];
    m.pattern_count = n;
    m.pattern_confidence = share;
    out->push_back(std::move(m));
  }
}

// CountImbalance is a type whose kernel counts differ enough between the sides, as §4.2's
// count-imbalance rule and §4.1 step 9 both qualify it.
struct CountImbalance {
  Side unfused;  // the side with more kernels of the type
  double ratio;  // max / min
};

std::optional<CountImbalance> QualifyingImbalance(const PerSide<int64_t>& count) {
  const int64_t c1 = count[Side::kTrace1], c2 = count[Side::kTrace2];
  if (c1 == 0 || c2 == 0) return std::nullopt;
  const double ratio =
      static_cast<double>(std::max(c1, c2)) / static_cast<double>(std::min(c1, c2));
  if (ratio < kMinImbalanceRatio || c1 + c2 < kMinImbalanceKernels) return std::nullopt;
  return CountImbalance{Larger(count), ratio};
}

// MostFrequentTarget() is the most frequent type of `fused` other than `type` and `other`, the
// first seen on ties; nullopt when there is none.
std::optional<CategoryId> MostFrequentTarget(const SequenceCounts& fused, CategoryId type,
                                             std::optional<CategoryId> other, size_t ncat) {
  std::optional<CategoryId> target;
  for (CategoryId x : CategoryIds(ncat)) {
    if (x == type || x == other || fused.count[x] == 0) continue;
    if (!target || fused.count[x] > fused.count[*target] ||
        (fused.count[x] == fused.count[*target] && fused.first[x] < fused.first[*target])) {
      target = x;
    }
  }
  return target;
}

// AppendImbalanceMappings() is §4.2's count-imbalance rule for the types both sides run: the side
// with fewer kernels of the type is taken to fuse it into its most frequent other type.
void AppendImbalanceMappings(const PerSide<SequenceCounts>& counts, size_t ncat,
                             std::optional<CategoryId> other, std::vector<FusionMapping>* out) {
  for (CategoryId t : CategoryIds(ncat)) {
    const PerSide<int64_t> count{{counts[Side::kTrace1].count[t], counts[Side::kTrace2].count[t]}};
    const std::optional<CountImbalance> imbalance = QualifyingImbalance(count);
    if (!imbalance) continue;
    const Side unfused = imbalance->unfused, fused = Opposite(unfused);
    const std::optional<CategoryId> target = MostFrequentTarget(counts[fused], t, other, ncat);
    if (!target) continue;
    FusionMapping m = NewMapping(FusionMapping::Kind::kImbalance, fused, *target, t, count);
    m.pattern_count = count[unfused] - count[fused];
    m.pattern_confidence =
        static_cast<double>(count[unfused] - count[fused]) / static_cast<double>(count[unfused]);
    m.ratio = imbalance->ratio;
    out->push_back(std::move(m));
  }
}

}  // namespace

void FindSequenceMappings(const std::vector<CategoryId>& types1,
                          const std::vector<CategoryId>& types2, size_t category_count,
                          std::optional<CategoryId> other, std::vector<FusionMapping>* out) {
  const PerSide<const std::vector<CategoryId>*> sequences{{&types1, &types2}};
  const PerSide<SequenceCounts> counts{
      {SequenceCounts(types1, category_count), SequenceCounts(types2, category_count)}};
  for (Side unfused : kSides)
    AppendPredecessorMappings(*sequences[unfused], unfused, counts, category_count, out);
  AppendImbalanceMappings(counts, category_count, other, out);
}

// --- §4.1: the whole analysis --------------------------------------------------------------------

namespace {

using GroupMatches = std::vector<std::pair<uint32_t, uint32_t>>;

PerSide<uint32_t> Slots(const std::pair<uint32_t, uint32_t>& match) {
  return PerSide<uint32_t>{{match.first, match.second}};
}

// Categories are the rule set's categories, as every step sees them.
struct Categories {
  const std::vector<std::string>& names;
  std::optional<CategoryId> other;  // "Other": never a fusion target

  size_t count() const { return names.size(); }
};

// Micros() is a kernel's duration as the reference reads it: microseconds, a Python float.
double Micros(const KernelRecord& k) { return static_cast<double>(k.dur_ns) / 1000.0; }

// GroupTypeTimes is, per large group, its kernels' durations per type, in order of first
// appearance. All groups' sums share one array, each group's room sized by the types its shape
// holds: summing allocates nothing per group (both traces are summed in parallel, and every
// allocation takes the heap's one lock).
class GroupTypeTimes {
 public:
  using Entry = std::pair<CategoryId, double>;

  // GroupTypeTimes() makes room for the groups marked in `matched`.
  GroupTypeTimes(const std::vector<GroupShape>& shapes, const std::vector<uint8_t>& matched)
      : begin_(shapes.size() + 1, 0), used_(shapes.size(), 0) {
    for (size_t slot = 0; slot < shapes.size(); ++slot) {
      begin_[slot + 1] = begin_[slot] + (matched[slot] ? TypesIn(shapes[slot]) : 0);
    }
    entries_.resize(begin_.back());
  }

  // Add() adds `us` to group `slot`'s time of `type`, a type its shape holds.
  void Add(uint32_t slot, CategoryId type, double us) {
    Entry* const first = entries_.data() + begin_[slot];
    Entry* const end = first + used_[slot];
    for (Entry* e = first; e != end; ++e) {
      if (e->first == type) {
        e->second += us;
        return;
      }
    }
    *end = Entry{type, 0.0 + us};
    ++used_[slot];
  }

  absl::Span<const Entry> Of(uint32_t slot) const {
    return {entries_.data() + begin_[slot], used_[slot]};
  }

 private:
  static uint32_t TypesIn(const GroupShape& shape) {
    uint32_t n = 0;
    for (uint64_t word : shape.composition) n += static_cast<uint32_t>(__builtin_popcountll(word));
    return n;
  }

  std::vector<uint32_t> begin_;  // per group, its room's first entry; one past the last group's
  std::vector<uint32_t> used_;   // per group, its room's entries in use
  std::vector<Entry> entries_;
};

// TraceView is what the merge needs of one trace (§4.1 steps 1 and 2), built in sequential passes
// over its kernel stream (one more, after matching, sums durations): the categories of the large
// groups' kernels, a byte per such kernel, and the ts-ordered category sequence of all kernels, a
// byte per kernel.
struct TraceView {
  static constexpr uint32_t kSmall = UINT32_MAX;  // slot_of_group for groups below the minimum

  const TraceProfile* profile = nullptr;
  std::vector<CategoryId> name_category;
  std::vector<uint8_t> name_attention, name_ffn;
  std::vector<uint32_t> large;          // group indices with size >= min, first-appearance order
  std::vector<uint32_t> slot_of_group;  // index into `large`, or kSmall
  // Large group `slot` holds types[offsets[slot] .. offsets[slot + 1]), its kernels' categories
  // in ts order, stable on trace order.
  std::vector<uint32_t> offsets;
  std::vector<CategoryId> types;
  std::vector<GroupShape> shapes;    // per large group
  std::vector<CategoryId> sequence;  // all kernels' types in ts order

  void Build(const TraceProfile& p, uint32_t min_group_size) {
    profile = &p;
    MarkNames();
    ListLargeGroups(min_group_size);
    const std::vector<uint8_t> in_ts_order = FillGroups();
    sequence = p.TypeSequence();
    RelistOutOfOrderGroups(in_ts_order);
  }

  uint32_t SlotOf(const KernelRecord& k) const {
    return k.group == kNoGroup ? kSmall : slot_of_group[k.group];
  }

  int64_t Correlation(uint32_t slot) const { return *profile->GroupCorrelation(large[slot]); }

  // ListTypes() copies large group `slot`'s types, in ts order, to `out`.
  void ListTypes(uint32_t slot, std::vector<CategoryId>* out) const {
    out->assign(types.begin() + offsets[slot], types.begin() + offsets[slot + 1]);
  }

  // CountTypes() sets `counts`, per category, to the number of kernels of large group `slot`.
  void CountTypes(uint32_t slot, std::vector<uint32_t>* counts) const {
    std::fill(counts->begin(), counts->end(), 0);
    for (uint32_t i = offsets[slot]; i < offsets[slot + 1]; ++i) ++(*counts)[types[i]];
  }

  // GroupTimes() is, per large group marked in `matched`, its types' durations in microseconds,
  // each summed as the reference sums them (§4.1 step 4a): Python floats added in the group's
  // list (trace) order from 0.0. A duration of whole nanoseconds divided by 1000 is the double
  // Python reads from the trace's decimal microseconds, so the sums agree to the last bit.
  GroupTypeTimes GroupTimes(const std::vector<uint8_t>& matched) const {
    GroupTypeTimes times(shapes, matched);
    profile->kernels.ForEach([&](const KernelRecord& k) {
      const uint32_t slot = SlotOf(k);
      if (slot != kSmall && matched[slot]) times.Add(slot, name_category[k.name], Micros(k));
    });
    return times;
  }

  // TraceTimes() is, per category, its kernels' durations over the whole trace in microseconds,
  // summed in trace order from 0.0 (§4.1 step 7).
  std::vector<double> TraceTimes(size_t ncat) const {
    std::vector<double> time(ncat, 0.0);
    profile->kernels.ForEach(
        [&](const KernelRecord& k) { time[name_category[k.name]] += Micros(k); });
    return time;
  }

 private:
  // MarkNames() gives each name its category, and whether it marks its group as having attention
  // or FFN kernels (the group signature of §4.1 step 3).
  void MarkNames() {
    const TraceProfile& p = *profile;
    name_category = p.NameCategories();
    name_attention.resize(p.names.size());
    name_ffn.resize(p.names.size());
    for (uint32_t n = 0; n < p.names.size(); ++n) {
      const std::string lower = AsciiLower(p.names[n]);
      name_attention[n] = ContainsAny(lower, kAttentionMarkers);
      name_ffn[n] = ContainsAny(lower, kFfnMarkers);
    }
  }

  void ListLargeGroups(uint32_t min_group_size) {
    const TraceProfile& p = *profile;
    slot_of_group.assign(p.group_size.size(), kSmall);
    offsets.push_back(0);
    for (uint32_t g = 0; g < p.group_size.size(); ++g) {
      if (p.group_size[g] < min_group_size) continue;
      slot_of_group[g] = static_cast<uint32_t>(large.size());
      large.push_back(g);
      offsets.push_back(offsets.back() + p.group_size[g]);
    }
    types.resize(offsets.back());
  }

  // FillGroups() lists the large groups' types in trace order and takes their shapes from that
  // order: the reference's "first seen" is in list (trace) order. Returns, per large group, whether
  // its kernels came in ts order.
  std::vector<uint8_t> FillGroups() {
    std::vector<uint32_t> fill(offsets.begin(), offsets.end() - 1);
    std::vector<uint8_t> attention(large.size(), 0), ffn(large.size(), 0);
    std::vector<int64_t> last_ts(large.size(), std::numeric_limits<int64_t>::min());
    std::vector<uint8_t> in_ts_order(large.size(), 1);
    profile->kernels.ForEach([&](const KernelRecord& k) {
      const uint32_t slot = SlotOf(k);
      if (slot == kSmall) return;
      types[fill[slot]++] = name_category[k.name];
      attention[slot] |= name_attention[k.name];
      ffn[slot] |= name_ffn[k.name];
      if (k.ts_ns < last_ts[slot]) in_ts_order[slot] = 0;
      last_ts[slot] = k.ts_ns;
    });
    shapes.reserve(large.size());
    for (uint32_t slot = 0; slot < large.size(); ++slot) {
      shapes.push_back(GroupShape::Of(&types[offsets[slot]], offsets[slot + 1] - offsets[slot],
                                      attention[slot] != 0, ffn[slot] != 0));
    }
    return in_ts_order;
  }

  // RelistOutOfOrderGroups() lists again, in place, the groups whose kernels are not in ts order
  // in the trace (none in any real trace at hand), from a walk in ts order: the global order
  // restricted to a group is the group's stable ts order.
  void RelistOutOfOrderGroups(const std::vector<uint8_t>& in_ts_order) {
    if (std::all_of(in_ts_order.begin(), in_ts_order.end(), [](uint8_t in) { return in != 0; }))
      return;
    std::vector<uint32_t> fill(offsets.begin(), offsets.end() - 1);
    profile->kernels.ForEachInTsOrder([&](const KernelRecord& k) {
      const uint32_t slot = SlotOf(k);
      if (slot != kSmall && !in_ts_order[slot]) types[fill[slot]++] = name_category[k.name];
    });
  }
};

// --- §4.1 step 4: matched pairs ---

// TypeDiff is the reference's fusion_diffs[type] (§4.1 step 4b), over the matched pairs.
struct TypeDiff {
  PerSide<int64_t> kernels{};
  PerSide<double> time_us{};     // summed pair by pair, as the reference does
  int64_t groups = 0;            // pairs holding the type on either side
  int64_t groups_with_diff = 0;  // ... with a different count on each side
};

struct MatchedDiffs {
  std::vector<TypeDiff> by_type;  // indexed by category
  std::vector<CategoryId> order;  // the types by first appearance in the pairs (step 6's order)

  // AddPair() adds one matched pair's per-category kernel counts.
  void AddPair(const PerSide<std::vector<uint32_t>>& pair_counts) {
    for (CategoryId t : CategoryIds(by_type.size())) {
      const uint32_t c1 = pair_counts[Side::kTrace1][t], c2 = pair_counts[Side::kTrace2][t];
      if (c1 == 0 && c2 == 0) continue;
      TypeDiff& d = by_type[t];
      if (d.groups == 0) order.push_back(t);
      d.kernels[Side::kTrace1] += c1;
      d.kernels[Side::kTrace2] += c2;
      d.groups += 1;
      d.groups_with_diff += (c1 != c2);
    }
  }
};

// AppendPairSequenceMappings() is §4.1 step 4c: §4.2 on one matched pair's groups, each mapping
// tagged with the pair's correlation ids.
void AppendPairSequenceMappings(const PerSide<TraceView>& views, const PerSide<uint32_t>& slot,
                                const PerSide<std::vector<CategoryId>>& group_types,
                                const Categories& categories, std::vector<FusionMapping>* out) {
  const size_t before = out->size();
  FindSequenceMappings(group_types[Side::kTrace1], group_types[Side::kTrace2], categories.count(),
                       categories.other, out);
  for (size_t i = before; i < out->size(); ++i) {
    (*out)[i].correlation_groups = {views[Side::kTrace1].Correlation(slot[Side::kTrace1]),
                                    views[Side::kTrace2].Correlation(slot[Side::kTrace2])};
  }
}

// AddMatchedTimes() sets the types' times over the matched groups (§4.1 step 4a): per group in
// one more pass over each kernel stream, not a walk per pair, then added pair by pair in match
// order as the reference adds them.
void AddMatchedTimes(const PerSide<TraceView>& views, const GroupMatches& matches,
                     const PerSide<std::vector<uint8_t>>& matched, MatchedDiffs* diffs) {
  PerSide<std::optional<GroupTypeTimes>> times;
  auto sum = [&](Side s) { times[s].emplace(views[s].GroupTimes(matched[s])); };
  tbb::parallel_invoke([&] { sum(Side::kTrace1); }, [&] { sum(Side::kTrace2); });
  for (const auto& match : matches) {
    const PerSide<uint32_t> slot = Slots(match);
    for (Side s : kSides) {
      for (const auto& [t, us] : times[s]->Of(slot[s])) diffs->by_type[t].time_us[s] += us;
    }
  }
}

// DiffMatchedPairs() is §4.1 step 4: per matched pair, in match order, the per-type counts and the
// pair's sequence mappings (appended to `mappings`); then the types' times.
MatchedDiffs DiffMatchedPairs(const PerSide<TraceView>& views, const GroupMatches& matches,
                              const Categories& categories, std::vector<FusionMapping>* mappings) {
  MatchedDiffs diffs;
  diffs.by_type.resize(categories.count());
  PerSide<std::vector<uint32_t>> pair_counts;
  PerSide<std::vector<CategoryId>> group_types;
  PerSide<std::vector<uint8_t>> matched;
  for (Side s : kSides) {
    pair_counts[s].resize(categories.count());
    matched[s].assign(views[s].large.size(), 0);
  }
  for (const auto& match : matches) {
    const PerSide<uint32_t> slot = Slots(match);
    for (Side s : kSides) {
      matched[s][slot[s]] = 1;
      views[s].ListTypes(slot[s], &group_types[s]);
      views[s].CountTypes(slot[s], &pair_counts[s]);
    }
    diffs.AddPair(pair_counts);
    AppendPairSequenceMappings(views, slot, group_types, categories, mappings);
  }
  AddMatchedTimes(views, matches, matched, &diffs);
  return diffs;
}

// --- §4.1 steps 5 to 8: global counts and opportunities ---

// GlobalCounts() is §4.1 step 5: every type's kernels over the whole traces, in category order.
std::vector<GlobalCount> GlobalCounts(const PerSide<std::vector<CategoryTotals>>& totals,
                                      const Categories& categories) {
  std::vector<GlobalCount> counts;
  for (CategoryId t : CategoryIds(categories.count())) {
    const uint64_t c1 = totals[Side::kTrace1][t].kernels, c2 = totals[Side::kTrace2][t].kernels;
    if (c1 == 0 && c2 == 0) continue;
    counts.push_back(GlobalCount{categories.names[t], c1, c2,
                                 Ratio(static_cast<double>(c1), static_cast<double>(c2))});
  }
  return counts;
}

// §4.1 steps 6 and 7: when an opportunity is significant, and which side fuses.
constexpr double kGroupStrongRatio = 10;     // step 6: significant at any count
constexpr double kGroupRatio = 2;            // step 6: significant over kGroupMinKernels kernels
constexpr int64_t kGroupMinKernels = 20;     // ... strictly more, on both sides together
constexpr double kGlobalRatio = 2;           // step 7: significant over kGlobalMinKernels kernels
constexpr uint64_t kGlobalMinKernels = 100;  // ... strictly more (see AddGlobalOpportunities)
constexpr double kFusedByRatio = 1.5;  // trace 1 over 1.5 times trace 2: trace 2 fuses, else 1
constexpr double kUsPerMs = 1000;

// AvgPerGroup() is the kernels per group, or nullopt over no group at all.
std::optional<PerSide<double>> AvgPerGroup(const PerSide<uint64_t>& kernels, uint64_t groups) {
  if (groups == 0) return std::nullopt;
  PerSide<double> avg{};
  for (Side s : kSides) avg[s] = static_cast<double>(kernels[s]) / static_cast<double>(groups);
  return avg;
}

// NewOpportunity() is the one constructor of steps 6 and 7, which differ in scope (the matched
// groups holding the type, or the whole traces and all matched groups) and in what `ratios`
// compare: per side, its kernels per group, or its kernels, over the other side's.
FusionOpportunity NewOpportunity(const std::string& type, const PerSide<uint64_t>& kernels,
                                 const PerSide<double>& time_us, const PerSide<double>& ratios,
                                 uint64_t total_groups) {
  FusionOpportunity o;
  o.kernel_type = type;
  o.trace1_total = kernels[Side::kTrace1];
  o.trace2_total = kernels[Side::kTrace2];
  if (const std::optional<PerSide<double>> avg = AvgPerGroup(kernels, total_groups)) {
    o.trace1_avg_per_group = (*avg)[Side::kTrace1];
    o.trace2_avg_per_group = (*avg)[Side::kTrace2];
  } else {
    o.avg_is_integer_zero = true;  // only step 7 can have no groups
  }
  o.trace1_time_ms = time_us[Side::kTrace1] / kUsPerMs;
  o.trace2_time_ms = time_us[Side::kTrace2] / kUsPerMs;
  o.time_ratio = Ratio(o.trace1_time_ms, o.trace2_time_ms);
  o.fused_by = ratios[Side::kTrace1] > kFusedByRatio ? Side::kTrace2 : Side::kTrace1;
  o.ratio = ratios[Opposite(o.fused_by)];
  o.total_groups = total_groups;
  return o;
}

// AddGroupOpportunities() is §4.1 step 6: the types whose kernels per matched group differ enough
// between the sides, in order of first appearance in the pairs. Returns, per category, whether it
// listed the type: step 7 skips those.
std::vector<uint8_t> AddGroupOpportunities(const MatchedDiffs& diffs, const Categories& categories,
                                           std::vector<FusionOpportunity>* out) {
  std::vector<uint8_t> listed(categories.count(), 0);
  for (CategoryId t : diffs.order) {
    const TypeDiff& d = diffs.by_type[t];
    const PerSide<uint64_t> kernels{{static_cast<uint64_t>(d.kernels[Side::kTrace1]),
                                     static_cast<uint64_t>(d.kernels[Side::kTrace2])}};
    const uint64_t groups = static_cast<uint64_t>(d.groups);  // at least 1: t is in `order`
    const PerSide<double> ratios = RatiosOf(*AvgPerGroup(kernels, groups));
    const bool significant =
        EitherAbove(ratios, kGroupStrongRatio) ||
        (EitherAbove(ratios, kGroupRatio) &&
         d.kernels[Side::kTrace1] + d.kernels[Side::kTrace2] > kGroupMinKernels);
    if (!significant) continue;
    FusionOpportunity o = NewOpportunity(categories.names[t], kernels, d.time_us, ratios, groups);
    o.groups_affected = static_cast<uint64_t>(d.groups_with_diff);
    o.from_groups = true;
    listed[t] = 1;
    out->push_back(std::move(o));
  }
  return listed;
}

// AddGlobalOpportunities() is §4.1 step 7: the types step 6 did not list whose kernels over the
// whole traces differ enough between the sides.
void AddGlobalOpportunities(const PerSide<TraceView>& views,
                            const PerSide<std::vector<CategoryTotals>>& totals,
                            const std::vector<uint8_t>& listed, uint64_t matched_groups,
                            const Categories& categories, std::vector<FusionOpportunity>* out) {
  PerSide<std::vector<double>> time_us;  // only when there is an opportunity: one more pass
  for (CategoryId t : CategoryIds(categories.count())) {
    const PerSide<uint64_t> kernels{
        {totals[Side::kTrace1][t].kernels, totals[Side::kTrace2][t].kernels}};
    const uint64_t sum = kernels[Side::kTrace1] + kernels[Side::kTrace2];
    if (listed[t] || sum < kGlobalMinKernels) continue;
    const PerSide<double> ratios = RatiosOf({{static_cast<double>(kernels[Side::kTrace1]),
                                              static_cast<double>(kernels[Side::kTrace2])}});
    // The reference admits exactly kGlobalMinKernels above, then asks for strictly more.
    if (!(EitherAbove(ratios, kGlobalRatio) && sum > kGlobalMinKernels)) continue;
    if (time_us[Side::kTrace1].empty()) {
      for (Side s : kSides) time_us[s] = views[s].TraceTimes(categories.count());
    }
    const PerSide<double> time{{time_us[Side::kTrace1][t], time_us[Side::kTrace2][t]}};
    out->push_back(NewOpportunity(categories.names[t], kernels, time, ratios, matched_groups));
  }
}

// SortByImpact() is §4.1 step 8: by impact, descending; +inf first; stable.
void SortByImpact(std::vector<FusionOpportunity>* opportunities) {
  std::stable_sort(opportunities->begin(), opportunities->end(),
                   [](const FusionOpportunity& a, const FusionOpportunity& b) {
                     return a.impact() > b.impact();
                   });
}

// --- §4.1 step 9: partial fusion via matched groups ---

constexpr int64_t kMinGroupsAnalyzed = 5;  // fewer pairs where only one side runs the type: none
constexpr size_t kMaxPartialTargets = 3;   // the reference's most_common(3)

// PartialFusion is one type's step-9 tally: its kernels over the matched groups are imbalanced
// (as by §4.2's rule), and in the pairs where only the unfused side runs it, what the fused side
// runs more of instead is where it went.
struct PartialFusion {
  CategoryId type;
  CountImbalance imbalance;
  int64_t groups_analyzed = 0;
  std::vector<int64_t> surplus;          // per category, summed over the pairs analysed
  std::vector<CategoryId> target_order;  // the types with a surplus, by first surplus
};

std::vector<PartialFusion> PartialCandidates(const MatchedDiffs& diffs) {
  const size_t ncat = diffs.by_type.size();
  std::vector<PartialFusion> candidates;
  for (CategoryId t : CategoryIds(ncat)) {
    if (std::optional<CountImbalance> imbalance = QualifyingImbalance(diffs.by_type[t].kernels))
      candidates.push_back(PartialFusion{t, *imbalance, 0, std::vector<int64_t>(ncat, 0), {}});
  }
  return candidates;
}

// TallyPartialTargets() walks the matched pairs once for all candidates.
void TallyPartialTargets(const PerSide<TraceView>& views, const GroupMatches& matches,
                         const Categories& categories, std::vector<PartialFusion>* candidates) {
  const size_t ncat = categories.count();
  const std::optional<CategoryId> other = categories.other;
  PerSide<std::vector<uint32_t>> pair_counts;
  for (Side s : kSides) pair_counts[s].resize(ncat);
  for (const auto& match : matches) {
    const PerSide<uint32_t> slot = Slots(match);
    for (Side s : kSides) views[s].CountTypes(slot[s], &pair_counts[s]);
    for (PartialFusion& x : *candidates) {
      const std::vector<uint32_t>& unfused = pair_counts[x.imbalance.unfused];
      const std::vector<uint32_t>& fused = pair_counts[Opposite(x.imbalance.unfused)];
      if (unfused[x.type] == 0 || fused[x.type] != 0) continue;
      ++x.groups_analyzed;
      for (CategoryId y : CategoryIds(ncat)) {
        if (y == x.type || y == other || fused[y] == 0) continue;
        const int64_t diff = int64_t{fused[y]} - int64_t{unfused[y]};
        if (diff <= 0) continue;
        if (x.surplus[y] == 0) x.target_order.push_back(y);
        x.surplus[y] += diff;
      }
    }
  }
}

// PartialMapping() is the mapping of one tallied type, if it has targets and enough pairs.
std::optional<FusionMapping> PartialMapping(PartialFusion& x, const MatchedDiffs& diffs,
                                            size_t matched_groups) {
  if (x.target_order.empty() || x.groups_analyzed < kMinGroupsAnalyzed) return std::nullopt;
  std::stable_sort(x.target_order.begin(), x.target_order.end(),
                   [&](CategoryId a, CategoryId b) { return x.surplus[a] > x.surplus[b]; });
  const Side unfused = x.imbalance.unfused, fused = Opposite(unfused);
  const PerSide<int64_t>& kernels = diffs.by_type[x.type].kernels;
  FusionMapping m =
      NewMapping(FusionMapping::Kind::kPartial, fused, x.target_order[0], x.type, kernels);
  m.pattern_count = kernels[unfused] - kernels[fused];
  m.pattern_confidence =
      static_cast<double>(x.groups_analyzed) / static_cast<double>(matched_groups);
  m.ratio = x.imbalance.ratio;
  m.groups_analyzed = x.groups_analyzed;
  for (size_t i = 0; i < x.target_order.size() && i < kMaxPartialTargets; ++i)
    m.targets.emplace_back(x.target_order[i], x.surplus[x.target_order[i]]);
  return m;
}

// AppendPartialMappings() is §4.1 step 9.
void AppendPartialMappings(const PerSide<TraceView>& views, const GroupMatches& matches,
                           const MatchedDiffs& diffs, const Categories& categories,
                           std::vector<FusionMapping>* mappings) {
  std::vector<PartialFusion> candidates = PartialCandidates(diffs);
  if (candidates.empty()) return;
  TallyPartialTargets(views, matches, categories, &candidates);
  for (PartialFusion& x : candidates) {
    if (std::optional<FusionMapping> m = PartialMapping(x, diffs, matches.size()))
      mappings->push_back(std::move(*m));
  }
}

// --- §4.1 step 10: chains of one type ---

constexpr uint64_t kMinChainRuns = 5;        // runs on at least one side
constexpr double kMinChainRatio = 2.0;       // average chain lengths: strictly more apart
constexpr int64_t kMinChainKernelGap = 100;  // kernel totals: strictly more apart

// ChainMapping() is step 10 for type `t`, from the run lengths of each side's ts-ordered sequence.
std::optional<FusionMapping> ChainMapping(CategoryId t,
                                          const PerSide<std::vector<ChainStats>>& chains) {
  const ChainStats& a = chains[Side::kTrace1][t];
  const ChainStats& b = chains[Side::kTrace2][t];
  if (a.kernels == 0 && b.kernels == 0) return std::nullopt;
  if (a.runs < kMinChainRuns && b.runs < kMinChainRuns) return std::nullopt;
  if (a.multi_runs == 0 && b.multi_runs == 0) return std::nullopt;
  PerSide<int64_t> chain_count{}, total{};
  PerSide<double> avg{};
  for (Side s : kSides) {
    const ChainStats& c = chains[s][t];
    chain_count[s] = static_cast<int64_t>(c.multi_runs > 0 ? c.multi_runs : c.runs);
    // Without runs longer than one kernel, the reference counts chains of one.
    avg[s] = c.multi_runs > 0 ? double(c.multi_kernels) / double(c.multi_runs) : 1.0;
    total[s] = static_cast<int64_t>(c.kernels);
  }
  if (chain_count[Side::kTrace1] == 0 || chain_count[Side::kTrace2] == 0) return std::nullopt;
  // Both averages are at least 1: no division by zero.
  const double chain_ratio = std::max(avg[Side::kTrace1], avg[Side::kTrace2]) /
                             std::min(avg[Side::kTrace1], avg[Side::kTrace2]);
  if (!(chain_ratio > kMinChainRatio &&
        std::llabs(total[Side::kTrace1] - total[Side::kTrace2]) > kMinChainKernelGap))
    return std::nullopt;
  const Side unfused = Larger(avg), fused = Opposite(unfused);
  FusionMapping m = NewMapping(FusionMapping::Kind::kChain, fused, t, t, total);
  m.pattern_count = total[unfused] - total[fused];
  m.pattern_confidence = double(std::min(chain_count[Side::kTrace1], chain_count[Side::kTrace2])) /
                         double(std::max(chain_count[Side::kTrace1], chain_count[Side::kTrace2]));
  m.ratio = chain_ratio;
  m.unfused_avg = avg[unfused];
  m.fused_avg = avg[fused];
  m.unfused_chains = chain_count[unfused];
  m.fused_chains = chain_count[fused];
  return m;
}

// AppendChainMappings() is §4.1 step 10. Returns, per category, whether it mapped the type: step
// 11 drops the global mappings that start with one.
std::vector<uint8_t> AppendChainMappings(const PerSide<TraceView>& views, size_t ncat,
                                         std::vector<FusionMapping>* mappings) {
  const PerSide<std::vector<ChainStats>> chains{{ChainsOf(views[Side::kTrace1].sequence, ncat),
                                                 ChainsOf(views[Side::kTrace2].sequence, ncat)}};
  std::vector<uint8_t> chained(ncat, 0);
  for (CategoryId t : CategoryIds(ncat)) {
    std::optional<FusionMapping> m = ChainMapping(t, chains);
    if (!m) continue;
    chained[t] = 1;
    mappings->push_back(std::move(*m));
  }
  return chained;
}

// --- §4.1 step 11: global sequence mappings ---

// AppendGlobalSequenceMappings() is §4.1 step 11: §4.2 over the whole ts-ordered traces, less the
// mappings that start with a chained type or say what is already said. Like the reference, it
// compares evidence sentences, but holds only the few candidates' sentences, not one per mapping
// (there can be hundreds of thousands of per-group mappings).
void AppendGlobalSequenceMappings(const PerSide<TraceView>& views,
                                  const std::vector<uint8_t>& chained, const Categories& categories,
                                  std::vector<FusionMapping>* mappings) {
  std::vector<FusionMapping> global;
  FindSequenceMappings(views[Side::kTrace1].sequence, views[Side::kTrace2].sequence,
                       categories.count(), categories.other, &global);
  auto evidence = [&](const FusionMapping& m) {
    return Evidence(m, categories.names, ReferenceLabels());
  };
  absl::flat_hash_map<std::string, bool> already_said;
  for (const FusionMapping& m : global) already_said.emplace(evidence(m), false);
  if (!already_said.empty()) {
    for (const FusionMapping& m : *mappings) {
      auto it = already_said.find(evidence(m));
      if (it != already_said.end()) it->second = true;
    }
  }
  for (FusionMapping& m : global) {
    if (chained[m.UnfusedSequence()[0]] || already_said[evidence(m)]) continue;
    mappings->push_back(std::move(m));
  }
}

}  // namespace

namespace {

// --- §4.4: the inputs of the reference's hash-ordered iterations --------------------------------

// FirstSeenIn() appends to `first` each type of `types` not in it yet.
void FirstSeenIn(const CategoryId* types, size_t count, std::vector<uint8_t>* seen,
                 std::vector<CategoryId>* first) {
  for (size_t i = 0; i < count; ++i) {
    if ((*seen)[types[i]]) continue;
    (*seen)[types[i]] = 1;
    first->push_back(types[i]);
  }
}

// FirstSeen() is `types` (`count` of them) with each type at its first appearance only.
std::vector<CategoryId> FirstSeen(const CategoryId* types, size_t count, size_t ncat) {
  std::vector<uint8_t> seen(ncat, 0);
  std::vector<CategoryId> first;
  FirstSeenIn(types, count, &seen, &first);
  return first;
}

HashOrderInputs ListHashOrderInputs(const PerSide<TraceView>& views, const GroupMatches& matches,
                                    size_t ncat) {
  HashOrderInputs inputs;
  for (Side s : kSides) {
    const TraceView& v = views[s];
    std::vector<uint8_t> seen(ncat, 0);
    v.profile->kernels.ForEach([&](const KernelRecord& k) {
      FirstSeenIn(&v.name_category[k.name], 1, &seen, &inputs.trace_types[s]);
    });
    seen.assign(ncat, 0);
    FirstSeenIn(v.sequence.data(), v.sequence.size(), &seen, &inputs.ts_types[s]);
  }
  PerSide<std::vector<uint8_t>> matched_seen{
      {std::vector<uint8_t>(ncat, 0), std::vector<uint8_t>(ncat, 0)}};
  for (const auto& match : matches) {
    const PerSide<uint32_t> slot = Slots(match);
    PerSide<std::vector<CategoryId>> types;
    for (Side s : kSides) {
      const TraceView& v = views[s];
      const uint32_t begin = v.offsets[slot[s]], count = v.offsets[slot[s] + 1] - begin;
      types[s] = FirstSeen(&v.types[begin], count, ncat);
      FirstSeenIn(&v.types[begin], count, &matched_seen[s], &inputs.matched_types[s]);
    }
    inputs.pair_correlations.emplace_back(views[Side::kTrace1].Correlation(slot[Side::kTrace1]),
                                          views[Side::kTrace2].Correlation(slot[Side::kTrace2]));
    inputs.pair_types.push_back(std::move(types));
  }
  return inputs;
}

}  // namespace

FusionReport AnalyzeFusion(const TraceProfile& trace1, const TraceProfile& trace2,
                           const FusionOptions& options) {
  assert(trace1.kernels.size() == trace1.kernel_count &&
         trace2.kernels.size() == trace2.kernel_count);
  const RuleSet& rules = trace1.classifier->rule_set();
  const Categories categories{rules.categories(), rules.category_index("Other")};
  // Steps 1 and 2 (the traces are read already): the two views are independent, build them side
  // by side.
  const PerSide<const TraceProfile*> traces{{&trace1, &trace2}};
  PerSide<TraceView> views;
  auto build = [&](Side s) { views[s].Build(*traces[s], options.min_group_size); };
  tbb::parallel_invoke([&] { build(Side::kTrace1); }, [&] { build(Side::kTrace2); });
  FusionReport report;
  report.categories = categories.names;
  for (Side s : kSides) {
    report.total_kernels[s] = views[s].profile->kernels.size();
    report.large_groups[s] = views[s].large.size();
  }
  // Steps 3 to 11, in the reference's order: it is the order of the output.
  const GroupMatches matches =
      MatchGroups(views[Side::kTrace1].shapes, views[Side::kTrace2].shapes);
  report.matched_groups = matches.size();
  const MatchedDiffs diffs = DiffMatchedPairs(views, matches, categories, &report.mappings);
  const PerSide<std::vector<CategoryTotals>> totals{
      {traces[Side::kTrace1]->PerCategory(), traces[Side::kTrace2]->PerCategory()}};
  report.global_counts = GlobalCounts(totals, categories);
  const std::vector<uint8_t> listed =
      AddGroupOpportunities(diffs, categories, &report.opportunities);
  AddGlobalOpportunities(views, totals, listed, matches.size(), categories, &report.opportunities);
  SortByImpact(&report.opportunities);
  AppendPartialMappings(views, matches, diffs, categories, &report.mappings);
  const std::vector<uint8_t> chained =
      AppendChainMappings(views, categories.count(), &report.mappings);
  AppendGlobalSequenceMappings(views, chained, categories, &report.mappings);
  if (options.hash_order_inputs) {
    report.hash_order_inputs = ListHashOrderInputs(views, matches, categories.count());
  }
  return report;
}

}  // namespace tracefuse
