// The HTML reports' parts (src/report/html.h, the aligned groups of src/report/fusion_view.h)
// and the compare page's guarantees: escaped text, nothing fetched, a size bound for any number
// of mappings. The pages' layout is pinned by the golden files (report_golden.*_html.*) and
// checked in a real browser (tests/browser/).
#include "report/html.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "profile_builder.h"
#include "report/fusion_view.h"
#include "tracefuse/report/fusion.h"
#include "tracefuse/strings.h"

namespace tracefuse {
namespace {

using testing::Concat;
using testing::Repeat;
using testing::Sequence;

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1))
    ++n;
  return n;
}

TEST(HtmlEscaped, EscapesTheFiveMarkupCharacters) {
  EXPECT_EQ(HtmlEscaped("a<b>&\"c'd"), "a&lt;b&gt;&amp;&quot;c&#39;d");
  EXPECT_EQ(HtmlEscaped("gemm_128x64 (1.2x)"), "gemm_128x64 (1.2x)");
}

TEST(KernelNameCode, CutsLongNamesAndKeepsThemOnHover) {
  EXPECT_EQ(KernelNameCode("gemm<float>", 20), "<code>gemm&lt;float&gt;</code>");
  EXPECT_EQ(KernelNameCode("kernel<a, b>", 6),
            "<code title=\"kernel&lt;a, b&gt;\">kernel...</code>");
  const std::string giant(300000, 'x');
  const std::string code = KernelNameCode(giant, 10);
  EXPECT_EQ(code, "<code title=\"" + std::string(2000, 'x') + "...\">" + std::string(10, 'x') +
                      "...</code>");
}

// The widths of the chart's bars, in document order.
std::vector<double> BarWidths(const std::string& svg) {
  std::vector<double> widths;
  const std::regex rect("<rect [^>]*width=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator();
       ++it)
    widths.push_back(std::stod((*it)[1]));
  return widths;
}

TEST(BarChartSvg, BarsShareOneScaleAndAnInfiniteValueFillsIt) {
  const std::string svg = BarChartSvg({{"gemm", {{10, "s1"}, {5, "s2"}}, "10 / 5", "tip <1>"},
                                       {"sort", {{INFINITY, "s2"}}, "inf", "tip"},
                                       {"none", {{0, "s1"}, {0.001, "s2"}}, "0", "tip"}},
                                      "chart");
  const std::vector<double> w = BarWidths(svg);
  ASSERT_EQ(w.size(), 5u);
  EXPECT_DOUBLE_EQ(w[1], w[0] / 2);
  EXPECT_DOUBLE_EQ(w[2], w[0]);  // inf: as long as the largest finite value
  EXPECT_EQ(w[3], 0);
  EXPECT_DOUBLE_EQ(w[4], 1);  // a tiny value still shows
  EXPECT_NE(svg.find("<title>tip &lt;1&gt;</title>"), std::string::npos);
}

// A longest common subsequence's length, by dynamic programming.
size_t LcsLength(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<std::vector<size_t>> t(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j)
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
  return t[a.size()][b.size()];
}

TEST(AlignGroups, KeepsEveryKernelInOrderAndLinesUpALongestCommonSubsequence) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    PerSide<std::vector<GroupKernel>> groups;
    PerSide<std::vector<uint32_t>> types;
    for (Side s : kSides) {
      const size_t n = rng() % 30;
      for (size_t i = 0; i < n; ++i) {
        types[s].push_back(rng() % 4);
        groups[s].push_back({0, static_cast<CategoryId>(types[s].back()), 1});
      }
    }
    const std::vector<AlignedColumn> columns = AlignGroups(groups);
    PerSide<uint32_t> next{{0, 0}};
    size_t same = 0;
    for (const AlignedColumn& c : columns) {
      ASSERT_TRUE(c.kernel[Side::kTrace1] != kNoKernel || c.kernel[Side::kTrace2] != kNoKernel);
      for (Side s : kSides) {
        if (c.kernel[s] != kNoKernel) {
          ASSERT_EQ(c.kernel[s], next[s]++);
        }
      }
      if (c.same_type) {
        ++same;
        ASSERT_EQ(types[Side::kTrace1][c.kernel[Side::kTrace1]],
                  types[Side::kTrace2][c.kernel[Side::kTrace2]]);
      }
    }
    for (Side s : kSides) EXPECT_EQ(next[s], types[s].size());
    EXPECT_EQ(same, LcsLength(types[Side::kTrace1], types[Side::kTrace2]));
  }
}

TEST(GroupKernels, ListsEachAskedGroupInTsOrder) {
  // Group 7's kernels come out of ts order in the trace; group 9 is interleaved with it.
  const TraceProfile p = testing::BuildProfile({{"b1", 5, 7, 10},
                                                {"d1", 2, 9, 20},
                                                {"a1", 1, 7, 30},
                                                {"e1", 0, -1, 40},
                                                {"c1", 3, 7, 50},
                                                {"d2", 4, 9, 60}});
  const std::vector<std::vector<GroupKernel>> groups = GroupKernels(p, {9, 7, 42, 7});
  ASSERT_EQ(groups.size(), 4u);
  auto names = [&](const std::vector<GroupKernel>& g) {
    std::string out;
    for (const GroupKernel& k : g) out += p.names[k.name] + " ";
    return out;
  };
  EXPECT_EQ(names(groups[0]), "d1 d2 ");
  EXPECT_EQ(names(groups[1]), "a1 c1 b1 ");
  EXPECT_TRUE(groups[2].empty());  // no such group
  EXPECT_EQ(names(groups[3]), "a1 c1 b1 ");
  EXPECT_EQ(groups[1][2].dur_ns, 10);
  EXPECT_EQ(p.category_name(groups[1][0].category), "A");
}

// Trace 1 runs A, A, B five times in each of its groups; trace 2 runs A twelve times: it fuses
// B into A.
class FusionHtmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<testing::TestKernel> a, b;
    for (int g = 0; g < 6; ++g) {
      a = Concat({a, Sequence(Repeat("aab", 5), g, g * 1000)});
      b = Concat({b, Sequence(Repeat("a", 12), 100 + g, g * 1000)});
    }
    traces_ = {{testing::BuildProfile(a), testing::BuildProfile(b)}};
    FusionOptions options;
    options.min_group_size = 4;
    report_ = AnalyzeFusion(traces_[0], traces_[1], options);
    context_.traces = {{&traces_[0], &traces_[1]}};
    context_.labels = {{"<MI300X & co>", "H100"}};
    context_.min_group_size = options.min_group_size;
  }

  PerSide<TraceProfile> traces_;
  FusionReport report_;
  CompareContext context_;
};

TEST_F(FusionHtmlTest, EscapesLabelsAndFetchesNothing) {
  const std::string html = FusionHtml(report_, context_);
  EXPECT_NE(html.find("&lt;MI300X &amp; co&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<MI300X"), std::string::npos);
  EXPECT_NE(html.find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';"),
            std::string::npos);
  for (const char* fetching : {"<script", "http:", "https:", "src=", "href=", "url(", "@import"})
    EXPECT_EQ(html.find(fetching), std::string::npos) << fetching;
}

TEST_F(FusionHtmlTest, AlignsTheGroupsOfTheTopMapping) {
  const std::string html = FusionHtml(report_, context_);
  EXPECT_NE(html.find("<li data-kernel-type=\"B\">"), std::string::npos);
  const size_t sequences = html.find("<section id=\"sequences\">");
  ASSERT_NE(sequences, std::string::npos);
  const std::string section =
      html.substr(sequences, html.find("</section>", sequences) - sequences);
  // One example: trace 1's 10 A lined up with 10 of trace 2's 12 (a longest common subsequence,
  // as AlignGroups.* checks); every kernel shown once, so gaps fill the other cells.
  EXPECT_EQ(Count(section, "<div class=\"seq\">"), 1u);
  EXPECT_EQ(Count(section, "<span>"), 10u);
  const size_t columns = 10 + Count(section, "<span class=\"diff\">");
  EXPECT_GE(columns, 15u);
  EXPECT_EQ(Count(section, "<b class=\"gap\">"), 2 * columns - (15 + 12));
  EXPECT_NE(section.find("correlation group 0 of &lt;MI300X &amp; co&gt; (15 kernels) and 100 of "
                         "H100 (12 kernels)"),
            std::string::npos)
      << section;
}

TEST_F(FusionHtmlTest, StaysUnderFiveMegabytesWithAHundredThousandMappings) {
  // Per-group imbalance mappings whose counts, hence evidence sentences, all differ: nothing folds.
  constexpr int kMappings = 100000;
  FusionMapping m = report_.mappings.front();
  m.kind = FusionMapping::Kind::kImbalance;
  for (int i = 0; i < kMappings; ++i) {
    m.unfused_count = 1000 + i;
    m.fused_count = 1;
    m.ratio = m.unfused_count;
    m.correlation_groups = {{i % 6, 100 + i % 6}};
    report_.mappings.push_back(m);
  }
  const std::string html = FusionHtml(report_, context_);
  EXPECT_LT(html.size(), 5u * 1000 * 1000);
  EXPECT_NE(html.find(StrCat("<h3>count imbalance <span class=\"muted\">(", Thousands(kMappings),
                             ")</span></h3>")),
            std::string::npos);
  EXPECT_NE(html.find(StrCat("... and ", Thousands(kMappings - 40), " more")), std::string::npos);
}

}  // namespace
}  // namespace tracefuse
