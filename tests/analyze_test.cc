// Each detection step of the fusion analysis on small hand-built inputs, at the boundary of
// every threshold (spec §4).
#include <algorithm>
#include <random>

#include "analyze/fusion/internal.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "profile_builder.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/analyze/op_compare.h"

namespace tracefuse {
namespace {

using testing::BuildProfile;
using testing::Concat;
using testing::Repeat;
using testing::Sequence;

const std::vector<std::string> kNames = {"A", "B", "C", "D", "E", "Other"};
constexpr CategoryId kOther = 5;
const PerSide<std::string> kLabels{{"Trace 1", "Trace 2"}};

// 'a' -> 0 ... 'e' -> 4, 'o' -> Other.
std::vector<CategoryId> Types(const std::string& letters) {
  std::vector<CategoryId> t;
  for (char c : letters) t.push_back(c == 'o' ? kOther : static_cast<CategoryId>(c - 'a'));
  return t;
}

std::vector<FusionMapping> Sequences(const std::string& t1, const std::string& t2) {
  std::vector<FusionMapping> out;
  FindSequenceMappings(Types(t1), Types(t2), kNames.size(), kOther, &out);
  return out;
}

TEST(SequenceMapping, PredecessorShareMustExceedPointEight) {
  // C appears 5 times, after A 4 times: share exactly 0.8 -> nothing.
  EXPECT_TRUE(Sequences("acacacacbc", "ab").empty());
  // 5 of 6: emitted, with the reference's fields.
  std::vector<FusionMapping> m = Sequences("acacacacacbc", "aab");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].kind, FusionMapping::Kind::kSequence);
  EXPECT_EQ(m[0].fused_side, Side::kTrace2);
  EXPECT_EQ(m[0].fused_type, 0);  // A
  EXPECT_EQ(m[0].fused_count, 2);
  EXPECT_EQ(m[0].UnfusedSequence(), (std::vector<CategoryId>{0, 2}));  // A, C
  EXPECT_EQ(m[0].UnfusedCountPerType(),
            (std::vector<std::pair<CategoryId, int64_t>>{{0, 5}, {2, 6}}));
  EXPECT_EQ(m[0].pattern_count, 6);
  EXPECT_DOUBLE_EQ(m[0].pattern_confidence, 5.0 / 6.0);
  EXPECT_EQ(Evidence(m[0], kNames, kLabels), "Trace 1 runs A+C separately, Trace 2 fuses into A");
}

TEST(SequenceMapping, NeedsFiveOccurrencesAndAPredecessorOnTheOtherSide) {
  EXPECT_TRUE(Sequences("acacacac", "a").empty());    // 4 occurrences
  EXPECT_TRUE(Sequences("acacacacac", "b").empty());  // A absent from trace 2
  EXPECT_TRUE(Sequences("cccccc", "b").empty());      // its own predecessor
  // A first occurrence at position 0 has no predecessor but counts in the share: 4/5.
  EXPECT_TRUE(Sequences("cacacacac", "a").empty());
  // Mirror image: a type only in trace 2.
  std::vector<FusionMapping> m = Sequences("b", "bdbdbdbdbd");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].fused_side, Side::kTrace1);
  EXPECT_EQ(Evidence(m[0], kNames, kLabels), "Trace 2 runs B+D separately, Trace 1 fuses into B");
}

TEST(SequenceMapping, PredecessorTiesGoToTheFirstSeen) {
  std::vector<FusionMapping> m = Sequences("bcacbcacbcacbcacbcac", "ab");
  // C follows B 5 times and A 5 times: share 0.5, nothing; and ties never invent a mapping.
  EXPECT_TRUE(m.empty());
}

TEST(ImbalanceMapping, RatioOfExactlyOnePointThreeQualifies) {
  // A: 130 vs 100 (ratio 1.3, inclusive); trace 2's most frequent other type is B.
  std::string t1 = Repeat("a", 130) + "b";
  std::string t2 = Repeat("a", 100) + Repeat("b", 3) + Repeat("o", 9);
  std::vector<FusionMapping> m = Sequences(t1, t2);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].kind, FusionMapping::Kind::kImbalance);
  EXPECT_EQ(m[0].fused_side, Side::kTrace2);
  EXPECT_EQ(m[0].fused_type, 1);     // B: Other is never a target
  EXPECT_EQ(m[0].fused_count, 100);  // the fused side's count of A, not of B
  EXPECT_EQ(m[0].UnfusedCountPerType(), (std::vector<std::pair<CategoryId, int64_t>>{{0, 130}}));
  EXPECT_EQ(m[0].pattern_count, 30);
  EXPECT_DOUBLE_EQ(m[0].pattern_confidence, 30.0 / 130.0);
  EXPECT_EQ(Evidence(m[0], kNames, kLabels),
            "Trace 1 calls A 1.3x more (130 vs 100), Trace 2 likely fuses into B");
  EXPECT_TRUE(Sequences(Repeat("a", 129) + "b", t2).empty());  // 1.29
}

TEST(ImbalanceMapping, TotalOfExactlyOneHundredQualifies) {
  EXPECT_EQ(Sequences(Repeat("a", 60) + "b", Repeat("a", 40) + "b").size(), 1u);
  EXPECT_TRUE(Sequences(Repeat("a", 59) + "b", Repeat("a", 40) + "b").empty());
}

TEST(ImbalanceMapping, TargetTiesGoToTheFirstSeenAndNoTargetMeansNoMapping) {
  std::vector<FusionMapping> m = Sequences(Repeat("a", 80), Repeat("a", 40) + "ddcc");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].fused_type, 3);  // D
  EXPECT_TRUE(Sequences(Repeat("a", 80), Repeat("a", 40) + "oo").empty());
}

// --- group matching ---

GroupShape Shape(uint32_t size, const std::string& letters = "") {
  std::vector<CategoryId> t = Types(letters.empty() ? std::string(size, 'a') : letters);
  t.resize(size, t.back());
  return GroupShape::Of(t.data(), t.size(), true, true);
}

std::vector<std::pair<uint32_t, uint32_t>> Match(std::vector<GroupShape> a,
                                                 std::vector<GroupShape> b) {
  return MatchGroups(a, b);
}

TEST(GroupMatching, SizeFilterIsInclusiveAtTwentyFivePercent) {
  // Adjacent buckets are tried because the exact bucket is empty.
  EXPECT_EQ(Match({Shape(44)}, {Shape(55)}).size(), 1u);  // 44 * 1.25 = 55
  EXPECT_TRUE(Match({Shape(44)}, {Shape(56)}).empty());
  EXPECT_EQ(Match({Shape(55)}, {Shape(44)}).size(), 1u);  // 55 / 1.25 = 44
  EXPECT_TRUE(Match({Shape(55)}, {Shape(43)}).empty());
}

TEST(GroupMatching, AdjacentBucketsOnlyWhenTheExactOneIsEmpty) {
  // The exact bucket holds a candidate that fails the size filter: no fallback.
  EXPECT_TRUE(Match({Shape(10)}, {Shape(19), Shape(9)}).empty());
  EXPECT_EQ(Match({Shape(10)}, {Shape(9)}).size(), 1u);
  // Two buckets away is never a candidate.
  EXPECT_TRUE(Match({Shape(70)}, {Shape(90)}).empty());
  // A different dominant type is a different signature.
  EXPECT_TRUE(Match({Shape(60, "a")}, {Shape(60, "b")}).empty());
}

TEST(GroupMatching, LowestScoreThenFirstInTraceOrder) {
  // Score = |size difference| - 10 * shared types. Candidate 1 shares two types (score 2 - 20),
  // candidate 0 one (score 0 - 10).
  std::vector<GroupShape> t2 = {Shape(60), Shape(62, "ab" + std::string(60, 'a'))};
  auto m = Match({Shape(60, "ab" + std::string(58, 'a'))}, t2);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].second, 1u);
  // Equal scores: the first in trace-2 order wins; each trace-2 group is used once; larger
  // trace-1 groups are matched first.
  auto m2 = Match({Shape(60), Shape(61), Shape(60)}, {Shape(60), Shape(60)});
  ASSERT_EQ(m2.size(), 2u);
  EXPECT_EQ(m2[0], (std::pair<uint32_t, uint32_t>{1, 0}));
  EXPECT_EQ(m2[1], (std::pair<uint32_t, uint32_t>{0, 1}));
}

// --- the whole analysis ---

FusionReport Analyze(const std::vector<testing::TestKernel>& a,
                     const std::vector<testing::TestKernel>& b, uint32_t min_group_size = 50) {
  TraceProfile p1 = BuildProfile(a), p2 = BuildProfile(b);
  FusionOptions o;
  o.min_group_size = min_group_size;
  return AnalyzeFusion(p1, p2, o);
}

std::vector<const FusionMapping*> OfKind(const FusionReport& r, FusionMapping::Kind k) {
  std::vector<const FusionMapping*> out;
  for (const FusionMapping& m : r.mappings)
    if (m.kind == k) out.push_back(&m);
  return out;
}

TEST(GlobalOpportunity, TotalMustExceedOneHundred) {
  // B: 67 vs 33 kernels (ratio > 2, total exactly 100): not significant; 68 vs 33 is.
  FusionReport at = Analyze(Sequence(Repeat("b", 67)), Sequence(Repeat("b", 33)));
  EXPECT_TRUE(at.opportunities.empty());
  FusionReport over = Analyze(Sequence(Repeat("b", 68)), Sequence(Repeat("b", 33)));
  ASSERT_EQ(over.opportunities.size(), 1u);
  const FusionOpportunity& o = over.opportunities[0];
  EXPECT_EQ(o.fused_by, Side::kTrace2);
  EXPECT_DOUBLE_EQ(o.ratio, 68.0 / 33.0);
  EXPECT_TRUE(o.avg_is_integer_zero);  // no matched groups
  EXPECT_EQ(o.total_groups, 0u);
  EXPECT_DOUBLE_EQ(o.trace1_time_ms, 68 * 0.001);
}

TEST(GlobalOpportunity, TimesAreFloatSumsInTraceOrderAsInTheReference) {
  // 0.1, 0.2, 0.3 us, ...: the reference adds Python floats in trace order, whose sum is not the
  // sum of the nanoseconds (30 us).
  std::vector<testing::TestKernel> a = Sequence(Repeat("b", 150));
  double sum_us = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    a[i].dur_ns = 100 * static_cast<int64_t>(1 + i % 3);
    sum_us += static_cast<double>(a[i].dur_ns) / 1000.0;
  }
  ASSERT_NE(sum_us, 30.0);
  FusionReport r = Analyze(a, Sequence(Repeat("b", 50)));
  ASSERT_EQ(r.opportunities.size(), 1u);
  EXPECT_EQ(r.opportunities[0].trace1_time_ms, sum_us / 1000);
}

TEST(GroupOpportunity, RatioTwoNeedsMoreThanTwentyKernels) {
  // Six matched groups of 50 kernels; per group trace 1 has two C, trace 2 one C.
  std::vector<testing::TestKernel> a, b;
  for (int g = 0; g < 6; ++g) {
    a = Concat({a, Sequence(Repeat("a", 48) + "cc", g, g * 1000)});
    b = Concat({b, Sequence(Repeat("a", 49) + "c", 100 + g, g * 1000)});
  }
  FusionReport r = Analyze(a, b);
  EXPECT_EQ(r.matched_groups, 6u);
  // C: avg 2 vs 1, ratio exactly 2 (not > 2), 18 kernels: not significant.
  for (const FusionOpportunity& o : r.opportunities) EXPECT_NE(o.kernel_type, "C");
  // Three C per group on trace 1: ratio 3 with 24 kernels: significant, fused by trace 2.
  a.clear();
  for (int g = 0; g < 6; ++g) a = Concat({a, Sequence(Repeat("a", 47) + "ccc", g, g * 1000)});
  r = Analyze(a, b);
  auto c = std::find_if(r.opportunities.begin(), r.opportunities.end(),
                        [](const FusionOpportunity& o) { return o.kernel_type == "C"; });
  ASSERT_NE(c, r.opportunities.end());
  EXPECT_EQ(c->fused_by, Side::kTrace2);
  EXPECT_DOUBLE_EQ(c->ratio, 3.0);
  EXPECT_EQ(c->groups_affected, 6u);
  EXPECT_EQ(c->total_groups, 6u);
  EXPECT_DOUBLE_EQ(c->trace1_avg_per_group, 3.0);
}

TEST(ChainMapping, RatioAboveTwoAndDifferenceAboveOneHundred) {
  // Trace 1 runs A in chains of 3 (40 chains, 120 kernels); trace 2 runs single A (19 of them).
  auto chains = [](int run, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += std::string(run, 'a') + "b";
    return s;
  };
  FusionReport r = Analyze(Sequence(chains(3, 40)), Sequence(chains(1, 19)));
  auto m = OfKind(r, FusionMapping::Kind::kChain);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]->fused_side, Side::kTrace2);
  EXPECT_EQ(m[0]->pattern_count, 101);
  EXPECT_EQ(m[0]->UnfusedSequence(), (std::vector<CategoryId>{0, 0}));
  EXPECT_DOUBLE_EQ(m[0]->pattern_confidence, 19.0 / 40.0);
  EXPECT_EQ(Evidence(*m[0], kNames, kLabels),
            "Trace 1 runs A in chains of 3 calls (40 chains, 120 total), Trace 2 fuses to 1 calls "
            "(19 chains, 19 total) - 3.0x more efficient");
  // A difference of exactly 100 kernels is not enough.
  EXPECT_TRUE(
      OfKind(Analyze(Sequence(chains(3, 40)), Sequence(chains(1, 20))), FusionMapping::Kind::kChain)
          .empty());
  // Chains of exactly twice the length are not enough.
  EXPECT_TRUE(OfKind(Analyze(Sequence(chains(2, 120)), Sequence(chains(1, 20))),
                     FusionMapping::Kind::kChain)
                  .empty());
  // The global imbalance of A is not repeated once the chain mapping covers it.
  for (const FusionMapping* x : OfKind(r, FusionMapping::Kind::kImbalance))
    EXPECT_NE(x->UnfusedSequence()[0], 0);  // A
}

TEST(PartialMapping, NeedsFiveAnalysedGroups) {
  // In each matched group trace 2 runs 20 D where trace 1 runs none but has 4 more C.
  auto build = [](int groups_with_d) {
    std::vector<testing::TestKernel> a, b;
    for (int g = 0; g < 6; ++g) {
      bool d = g < groups_with_d;
      a = Concat({a, Sequence(Repeat("a", 46) + (d ? "cccc" : "dddd"), g, g * 1000)});
      b = Concat({b, Sequence(Repeat("a", 30) + (d ? Repeat("d", 20) : "dddd" + Repeat("a", 16)),
                              100 + g, g * 1000)});
    }
    return Analyze(a, b);
  };
  FusionReport five = build(5);
  auto m = OfKind(five, FusionMapping::Kind::kPartial);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0]->fused_side, Side::kTrace1);
  EXPECT_EQ(m[0]->fused_type, 0);  // A
  EXPECT_EQ(m[0]->groups_analyzed, 5);
  EXPECT_DOUBLE_EQ(m[0]->pattern_confidence, 5.0 / 6.0);
  EXPECT_EQ(Evidence(*m[0], kNames, kLabels),
            "Trace 2 calls D 26.0x more (104 vs 4). In 5 groups where Trace 2 has D, Trace 1 has "
            "more: A (+80), C (+20)");
  EXPECT_TRUE(OfKind(build(4), FusionMapping::Kind::kPartial).empty());
}

// Everything a report says, as text, to compare two reports. Times are summed in list order, as
// the reference sums its floats, so kernels listed in another order may change their last bits:
// 12 significant digits are compared.
std::vector<std::string> Said(const FusionReport& r) {
  std::vector<std::string> out;
  const PerSide<std::string> labels{{"1", "2"}};
  for (const FusionOpportunity& o : r.opportunities) {
    out.push_back(fmt::format("{} {} {} {:.12g} {:.12g}", o.kernel_type, o.trace1_total,
                              o.trace2_total, o.trace1_time_ms, o.trace2_time_ms));
  }
  for (const FusionMapping& m : r.mappings) {
    out.push_back(fmt::format("{} [{}] {}", Evidence(m, r.categories, labels), m.pattern_count,
                              m.correlation_groups ? m.correlation_groups->first : -1));
  }
  return out;
}

TEST(Analysis, KernelsOutOfTsOrderAreAnalysedInTsOrder) {
  // Trace 1's group runs A D C, A D C, ... in ts order where trace 2's group runs no C, so the
  // pair yields the sequence mapping D+C; listed backwards, C would follow A. Listing trace 1's
  // kernels backwards (timestamps kept) must change no result, nor must kernels out of order
  // outside groups. Five more A keep A the dominant type either way (ties go to the first seen).
  const std::string group = Repeat("adc", 20) + Repeat("a", 5);
  std::vector<testing::TestKernel> sorted =
      Concat({Sequence(group, 7, 0), Sequence(Repeat("ccb", 40), -1, 1000)});
  for (size_t i = 0; i < sorted.size(); ++i) sorted[i].dur_ns = 10 + static_cast<int64_t>(i);
  std::vector<testing::TestKernel> b = Concat(
      {Sequence(Repeat("a", 40) + Repeat("d", 26), 9, 0), Sequence(Repeat("bb", 20), -1, 1000)});
  FusionReport expected = Analyze(sorted, b);
  ASSERT_EQ(expected.matched_groups, 1u);
  auto sequences = OfKind(expected, FusionMapping::Kind::kSequence);
  ASSERT_FALSE(sequences.empty());
  EXPECT_EQ(Evidence(*sequences[0], expected.categories, kLabels),
            "Trace 1 runs D+C separately, Trace 2 fuses into D");
  EXPECT_EQ(sequences[0]->correlation_groups, (std::pair<int64_t, int64_t>{7, 9}));

  std::vector<testing::TestKernel> backwards(sorted.rbegin(), sorted.rend());
  EXPECT_EQ(BuildProfile(backwards).kernels.ts_runs(), sorted.size());
  EXPECT_EQ(Said(Analyze(backwards, b)), Said(expected));
  // Only the group's kernels backwards: out of order inside one group, in order outside it.
  std::vector<testing::TestKernel> group_backwards = sorted;
  std::reverse(group_backwards.begin(), group_backwards.begin() + group.size());
  EXPECT_EQ(Said(Analyze(group_backwards, b)), Said(expected));
}

TEST(Analysis, ResultDoesNotDependOnGroupOrderOfEqualGroups) {
  std::vector<testing::TestKernel> a, b;
  for (int g = 0; g < 4; ++g) {
    a = Concat({a, Sequence(Repeat("ab", 30), 10 + g, g * 100)});
    b = Concat({b, Sequence(Repeat("ab", 30), 20 + g, g * 100)});
  }
  FusionReport r = Analyze(a, b);
  EXPECT_EQ(r.matched_groups, 4u);
  EXPECT_EQ(r.large_groups[0], 4u);
  EXPECT_TRUE(r.mappings.empty());
  EXPECT_TRUE(r.opportunities.empty());
  ASSERT_EQ(r.global_counts.size(), 2u);
  EXPECT_EQ(r.global_counts[0].type, "A");
  EXPECT_DOUBLE_EQ(r.global_counts[0].ratio, 1.0);
}

// AnalyzeFusion's precondition is an assert: the sanitizer build (build-asan/ in scripts/test)
// checks it; in Release it is compiled out, so the test says it skipped.
TEST(AnalysisDeathTest, NeedsKernelStreams) {
#ifdef NDEBUG
  GTEST_SKIP() << "assertions are compiled out of this build; the sanitizer build runs this test";
#else
  std::shared_ptr<const Classifier> c = testing::LetterClassifier();
  TraceReducer without_stream(c, /*keep_kernel_records=*/false);
  testing::Consume(&without_stream, Sequence("abab", 1), c);
  TraceProfile p = without_stream.Finish(TraceMetadata(), Platform::kUnknown);
  TraceProfile full = BuildProfile(Sequence("abab", 1));
  EXPECT_DEATH(AnalyzeFusion(p, full), "kernels.size\\(\\) == trace1.kernel_count");
#endif
}

}  // namespace
}  // namespace tracefuse

namespace tracefuse {
namespace {

// LcsLength() by dynamic programming, the reference for the diff.
size_t LcsLength(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<std::vector<size_t>> t(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
    }
  }
  return t[a.size()][b.size()];
}

// On random sequences over small alphabets (many equal elements, many optimal scripts), the
// diff's matches are a common subsequence, in order, as long as the longest one; the edit
// distance test agrees with n + m - 2 * LCS at and around the true distance.
TEST(OpCompare, MyersMatchesAreALongestCommonSubsequence) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 3000; ++round) {
    const uint32_t alphabet = 1 + rng() % 4;
    std::vector<uint32_t> a(rng() % 30), b(rng() % 30);
    for (uint32_t& v : a) v = rng() % alphabet;
    for (uint32_t& v : b) v = rng() % alphabet;
    if (round % 3 == 0) b = a, b.insert(b.begin() + (rng() % (b.size() + 1)), 9);
    const auto matches = MyersMatches(a, b);
    for (size_t k = 0; k < matches.size(); ++k) {
      const auto [i, j] = matches[k];
      ASSERT_LT(i, a.size());
      ASSERT_LT(j, b.size());
      ASSERT_EQ(a[i], b[j]);
      if (k > 0) {
        ASSERT_TRUE(i > matches[k - 1].first && j > matches[k - 1].second);
      }
    }
    const size_t lcs = LcsLength(a, b);
    ASSERT_EQ(matches.size(), lcs) << "round " << round;
    const uint32_t distance = static_cast<uint32_t>(a.size() + b.size() - 2 * lcs);
    EXPECT_FALSE(EditDistanceExceeds(a, b, distance));
    EXPECT_FALSE(EditDistanceExceeds(a, b, distance + 1));
    if (distance > 0) {
      EXPECT_TRUE(EditDistanceExceeds(a, b, distance - 1));
    }
  }
}

}  // namespace
}  // namespace tracefuse
