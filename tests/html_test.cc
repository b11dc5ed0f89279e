// The HTML reports' parts (src/report/common/html.h, the aligned groups of
// src/report/fusion/view.h) and the compare and ops pages' guarantees: escaped text, nothing
// fetched, a size bound for any number of mappings, the ops page's aligned example kernels. The
// pages' layout is pinned by the golden files (report_golden.*_html.*) and checked in a real
// browser (tests/browser/).
#include "report/common/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "profile_builder.h"
#include "report/common/formatting.h"
#include "report/fusion/view.h"
#include "test_util.h"
#include "tracefuse/analyze/op_compare.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/report/fusion.h"
#include "tracefuse/report/ops.h"

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

// A rate below 0.01 TFLOP/s or TB/s reads in GFLOP/s or GB/s, never "0.00" (every format).
TEST(RateText, SmallRatesReadInGigaNeverAsZero) {
  EXPECT_EQ(FlopRateText(41.24), "41.2 TFLOP/s");
  EXPECT_EQ(FlopRateText(0.123), "0.1 TFLOP/s");
  EXPECT_EQ(FlopRateText(0.0456), "0.05 TFLOP/s");
  EXPECT_EQ(FlopRateText(0.00456), "4.56 GFLOP/s");
  EXPECT_EQ(FlopRateText(0.0000123), "0.0123 GFLOP/s");
  EXPECT_EQ(ByteRateText(1.234), "1.23 TB/s");
  EXPECT_EQ(ByteRateText(0.0123), "0.01 TB/s");
  EXPECT_EQ(ByteRateText(0.00123), "1.23 GB/s");
  EXPECT_EQ(FlopRateCell(12.34), "12.3");
  EXPECT_EQ(FlopRateCell(0.0123), "0.01");
  EXPECT_EQ(FlopRateCell(0.00123), "1.23 GFLOP/s");
}

// Two ops' scopes that ShortScope() would shorten alike are lengthened until they differ; a
// scope no other collides with keeps its last two modules.
TEST(DistinctShortScopes, LengthensOnlyTheScopesThatWouldReadAlike) {
  const std::string text = "Owlv2Model/Owlv2TextTransformer/Owlv2Encoder/Owlv2Attention";
  const std::string vision = "Owlv2Model/Owlv2VisionTransformer/Owlv2Encoder/Owlv2Attention";
  const std::string head = "Owlv2Model/Owlv2ClassHead/Linear";
  const std::map<std::string, std::string> shown =
      DistinctShortScopes({text, vision, head, text, "Linear", ""});
  EXPECT_EQ(ShortScope(text), ShortScope(vision));  // what the reports showed before
  EXPECT_EQ(shown.at(text), "…/Owlv2TextTransformer/Owlv2Encoder/Owlv2Attention");
  EXPECT_EQ(shown.at(vision), "…/Owlv2VisionTransformer/Owlv2Encoder/Owlv2Attention");
  EXPECT_EQ(shown.at(head), "…/Owlv2ClassHead/Linear");
  EXPECT_EQ(shown.at("Linear"), "Linear");
  EXPECT_EQ(shown.at(""), "");
  // Identical paths up to the root: each shown whole.
  const std::map<std::string, std::string> deep = DistinctShortScopes({"A/B/C", "X/A/B/C"});
  EXPECT_NE(deep.at("A/B/C"), deep.at("X/A/B/C"));
}

// A chart's bar labels name the module that tells two rows of one op apart; an op that no other
// row shares keeps its name alone.
TEST(DistinctOpLabels, NameTheModuleWhereTwoRowsOfOneOpPart) {
  const std::string text = "Owlv2Model/Owlv2TextTransformer/Owlv2Encoder/Owlv2Attention";
  const std::string vision = "Owlv2Model/Owlv2VisionTransformer/Owlv2Encoder/Owlv2Attention";
  EXPECT_EQ(DistinctOpLabels({{"aten::linear", text},
                              {"aten::linear", vision},
                              {"aten::softmax", text},
                              {"aten::add", ""},
                              {"aten::add", "Model"}}),
            (std::vector<std::string>{"aten::linear (Owlv2TextTransformer)",
                                      "aten::linear (Owlv2VisionTransformer)", "aten::softmax",
                                      "aten::add (no module)", "aten::add (Model)"}));
  // Three paths: each named by the module after the longest path it shares with another.
  EXPECT_EQ(DistinctOpLabels({{"mm", "A/B/X"}, {"mm", "A/B/Y"}, {"mm", "A/C/Z"}}),
            (std::vector<std::string>{"mm (X)", "mm (Y)", "mm (C)"}));
  // Paths that differ only in depth read alike by module: their distinct short scopes instead.
  const std::vector<std::string> deep = DistinctOpLabels({{"mm", "A/B"}, {"mm", "A/B/B"}});
  EXPECT_NE(deep[0], deep[1]);
}

TEST(HtmlEscaped, EscapesTheFiveMarkupCharacters) {
  EXPECT_EQ(HtmlEscaped("a<b>&\"c'd"), "a&lt;b&gt;&amp;&quot;c&#39;d");
  EXPECT_EQ(HtmlEscaped("gemm_128x64 (1.2x)"), "gemm_128x64 (1.2x)");
}

TEST(KernelNameCode, CutsLongNamesAndKeepsThemOnHover) {
  EXPECT_EQ(KernelNameCode("gemm<float>", 20), "<code>gemm&lt;<wbr>float&gt;</code>");
  EXPECT_EQ(KernelNameCode("kernel<a, b>", 6),
            "<code title=\"kernel&lt;a, b&gt;\">kernel...</code>");
  const std::string giant(300000, 'x');
  const std::string code = KernelNameCode(giant, 10);
  EXPECT_EQ(code, "<code title=\"" + std::string(2000, 'x') + "...\">" + std::string(10, 'x') +
                      "...</code>");
}

TEST(KernelNameCode, ShowsTheFamilyAndItsFullNameOnHover) {
  EXPECT_EQ(KernelNameCode("sm#_gemm", 40, "sm90_gemm"),
            "<code title=\"sm90_gemm\">sm#_<wbr>gemm</code>");
  EXPECT_EQ(KernelNameCode("attn_fwd", 40, "attn_fwd"), "<code>attn_<wbr>fwd</code>");
}

// A name breaks only between its words: after _ :: , < ( / . and before a capital that follows a
// small letter or a digit, never inside "vectorized" or "Onesweep".
TEST(NameWithBreaks, BreaksBetweenWordsOnly) {
  EXPECT_EQ(NameWithBreaks("at::native::vectorized_elementwise_kernel<4, Fill<int>>"),
            "at::<wbr>native::<wbr>vectorized_<wbr>elementwise_<wbr>kernel&lt;<wbr>4,<wbr> "
            "Fill&lt;<wbr>int&gt;&gt;");
  EXPECT_EQ(NameWithBreaks("cub::DeviceRadixSortOnesweepKernel"),
            "cub::<wbr>Device<wbr>Radix<wbr>Sort<wbr>Onesweep<wbr>Kernel");
  EXPECT_EQ(NameWithBreaks("sm90_xmma_gemm_bf16bf16"), "sm90_<wbr>xmma_<wbr>gemm_<wbr>bf16bf16");
  EXPECT_EQ(NameWithBreaks("a_"), "a_");  // no break at the end
  EXPECT_EQ(NameWithBreaks("x<&>"), "x&lt;<wbr>&amp;&gt;");
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

// WriteFusionJson() hands its buffer to the file in pieces as the mappings are written: a report
// of many pieces is, byte for byte, the document FusionJson() builds whole.
TEST_F(FusionHtmlTest, JsonStreamedToAFileIsTheWholeDocument) {
  FusionMapping m = report_.mappings.front();
  for (int i = 0; i < 20000; ++i) {
    m.unfused_count = 1000 + i;
    m.correlation_groups = {{i % 6, 100 + i % 6}};
    report_.mappings.push_back(m);
  }
  testing::TempDir dir;
  const std::string path = dir.path() + "/report.json";
  ASSERT_TRUE(WriteStreamedOutput(path, [&](OutputFile* out) {
                return WriteFusionJson(report_, context_, out);
              }).ok());
  const std::string whole = FusionJson(report_, context_, JsonInfinity::kNull);
  EXPECT_GT(whole.size(), 8u << 20);
  EXPECT_TRUE(testing::ReadFile(path) == whole);
}

// The section `id` of a page, up to its end.
std::string SectionOf(const std::string& html, const std::string& id) {
  const size_t begin = html.find("<section id=\"" + id + "\"");
  if (begin == std::string::npos) return "";
  return html.substr(begin, html.find("</section>", begin) - begin);
}

// OneFamily() is an op side whose instances run one kernel family (a literal, which the side
// views, as it views the names an OpComparison holds).
OpSide OneFamily(uint64_t instances, std::string_view family, int64_t time_ns) {
  OpSide side;
  side.instances = instances;
  side.kernels = {{family, family, instances, time_ns}};
  side.time_ns = time_ns;
  return side;
}

// One matched op whose instances run A, B, A on trace 1 and A, A on trace 2: trace 2 fuses B
// into its first A (the kernel "a_fused<T>"). Names, scopes and labels hold < > & " '.
class OpsHtmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    traces_ = {
        {testing::BuildProfile(Sequence("aab", 1)), testing::BuildProfile(Sequence("aa", 2))}};
    context_.traces = {{&traces_[0], &traces_[1]}};
    context_.labels = {{"<MI300X & co>", "H100 \"SXM\""}};
    for (Side s : kSides) {
      ops_.traces[s].kernels = traces_[s].kernel_count;
      ops_.traces[s].kernel_time_ns = 4000;
      ops_.traces[s].linked_ns = 3000;  // 75.0%
      ops_.traces[s].top_level_ops = 4;
    }
    ops_.matched_ops = 4;
    OpRow row;
    row.op = "aten::add<float>&";
    row.scope = "Model/Block<'0'>/mlp";
    row.matched = true;
    row.instances = 4;
    row.sides = {{OneFamily(4, "a1<float>", 10000), OneFamily(4, "a_fused<T>", 8000)}};
    ops_.ops.push_back(row);
    FusionDifference d;
    d.kind = FusionDifferenceKind::kOp;
    d.scope = row.scope;
    d.op = row.op;
    d.fused_by = Side::kTrace2;
    d.instances = 4;
    d.relation = FusionRelation::kFusion;
    d.sides[Side::kTrace1].example = {{"a1<float>", "void a1<float>(int)", "A", 1000},
                                      {"b&c", "b&c<8>", "B", 500, true},
                                      {"a2", "a2", "A", 1000}};
    d.sides[Side::kTrace2].example = {{"a_fused<T>", "a_fused<T>", "A", 1800},
                                      {"a2", "a2", "A", 900}};
    d.sides[Side::kTrace1].time_ns = 10000;
    d.sides[Side::kTrace2].time_ns = 10000 - 1234;
    d.extra_categories = {{"B", 4}};
    d.extra_kernels = {{"b&c", "b&c<8>", "B", 4}};
    d.extra_time_ns = 2000;
    d.fused_kernel = "a_fused<T>";
    d.fused_kernel_category = "A";
    d.example_step = 3;
    d.example_index = 2;
    ops_.fusion_differences.push_back(d);
  }

  PerSide<TraceProfile> traces_;
  OpComparison ops_;
  OpsContext context_;
};

TEST_F(OpsHtmlTest, EscapesNamesAndFetchesNothing) {
  const std::string html = OpsHtml(ops_, context_);
  EXPECT_NE(html.find("<html lang=\"en\" data-report=\"ops\">"), std::string::npos);
  for (const char* escaped :
       {"&lt;MI300X &amp; co&gt;", "H100 &quot;SXM&quot;", "aten::add&lt;float&gt;&amp;",
        "Block&lt;&#39;0&#39;&gt;/", "a_fused&lt;T&gt;", "b&amp;c"}) {
    EXPECT_NE(html.find(escaped), std::string::npos) << escaped;
  }
  for (const char* raw : {"<MI300X", "\"SXM\"", "<float>", "'0'", "<T>", "b&c"})
    EXPECT_EQ(html.find(raw), std::string::npos) << raw;
  EXPECT_NE(html.find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';"),
            std::string::npos);
  for (const char* fetching : {"<script", "http:", "https:", "src=", "href=", "url(", "@import"})
    EXPECT_EQ(html.find(fetching), std::string::npos) << fetching;
}

TEST_F(OpsHtmlTest, ShowsBothTracesAndTheOpRow) {
  const std::string html = OpsHtml(ops_, context_);
  EXPECT_NE(html.find("<td class=\"linked n\">75.0%</td>"), std::string::npos);
  const std::string ops = SectionOf(html, "ops");
  EXPECT_EQ(Count(ops, "<svg class=\"chart\""), 1u);
  EXPECT_EQ(Count(ops, "<tr data-op="), 1u);
  EXPECT_NE(ops.find("<td class=\"time1 n\">10.0</td><td class=\"time2 n\">8.0</td>"
                     "<td class=\"delta n\">+2.0</td><td class=\"ratio n\">1.25x</td>"),
            std::string::npos)
      << ops;
}

TEST_F(OpsHtmlTest, SaysWhatEachSidesRatesAreMeasuredAgainst) {
  EXPECT_EQ(Count(OpsHtml(ops_, context_), "class=\"note peaks\""), 0u);  // no FLOPs or bytes
  for (Side s : kSides) ops_.traces[s].work.flops = 1000;
  ops_.traces[Side::kTrace2].gpu = "H100 <SXM>";
  std::string html = OpsHtml(ops_, context_);
  EXPECT_NE(html.find("<p class=\"note peaks\">&lt;MI300X &amp; co&gt;: the trace names no GPU "
                      "(deviceProperties): rates without percent of peak</p>"),
            std::string::npos);
  EXPECT_NE(html.find("<p class=\"note peaks\">H100 &quot;SXM&quot;: GPU &quot;H100 &lt;SXM&gt;"
                      "&quot; is not in the peak table: rates without percent of peak</p>"),
            std::string::npos);
  GpuPeak peak;
  peak.name = "H100 SXM";
  peak.tflops[static_cast<size_t>(DType::kBf16)] = 989.4;
  peak.tflops[static_cast<size_t>(DType::kInt8)] = 1978.9;
  peak.hbm_tb_per_s = 3.35;
  ops_.traces[Side::kTrace2].peak = peak;
  html = OpsHtml(ops_, context_);
  EXPECT_NE(html.find("<p class=\"note peaks\">H100 &quot;SXM&quot;: peaks of H100 SXM (TFLOP/s): "
                      "bf16 989.4, int8 1978.9 (TOPS); HBM 3.35 TB/s</p>"),
            std::string::npos);
}

TEST_F(OpsHtmlTest, AlignsTheExampleKernelsOfEachDifference) {
  const std::string section = SectionOf(OpsHtml(ops_, context_), "fusion-differences");
  EXPECT_NE(section.find("<td class=\"fused-by\"><span class=\"key s2\"></span>H100 "
                         "&quot;SXM&quot;</td><td class=\"instances n\">4 of 4</td>"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("<td class=\"saving\">saves 1.2 us</td>"), std::string::npos);
  // A, B, A over A, A: the As share columns (a longest common subsequence), B faces a gap. Only
  // B and the fused kernel are in full colour.
  EXPECT_EQ(Count(section, "<div class=\"seq\">"), 1u);
  const std::string a = CategoryColourClass(0), b = CategoryColourClass(1);
  EXPECT_NE(
      section.find(StrCat(
          "<div class=\"seq\"><span><b class=\"", a,
          " aside\" title=\"void a1&lt;float&gt;(int) (A, 1.0 us)\">", "</b><b class=\"", a,
          "\" title=\"a_fused&lt;T&gt; (A, 1.8 us)\"></b></span>",
          "<span class=\"diff\"><b class=\"", b, "\" title=\"b&amp;c&lt;8&gt; (B, 0.5 us)\"></b>",
          "<b class=\"gap\"></b></span><span><b class=\"", a,
          " aside\" title=\"a2 (A, 1.0 us)\"></b>", "<b class=\"", a,
          " aside\" title=\"a2 (A, 0.9 us)\"></b></span></div>")),
      std::string::npos)
      << section;
  // The same alignment as a table, readable without hovering.
  EXPECT_EQ(Count(section, "<tr class=\"diff\">"), 1u);
  EXPECT_NE(section.find("example: step 3, #2 (3 and 2 kernels)"), std::string::npos);
}

TEST_F(OpsHtmlTest, SaysWhenTheFusedKernelIsSlower) {
  ops_.fusion_differences[0].sides[Side::kTrace2].time_ns = 12000;
  const std::string section = SectionOf(OpsHtml(ops_, context_), "fusion-differences");
  EXPECT_NE(section.find("<td class=\"saving\">the fused kernel is slower: 2.0 us more</td>"),
            std::string::npos)
      << section;
}

TEST_F(OpsHtmlTest, SaysWhenThereAreNoFusionDifferences) {
  ops_.fusion_differences.clear();
  const std::string section = SectionOf(OpsHtml(ops_, context_), "fusion-differences");
  EXPECT_NE(section.find("data-count=\"0\""), std::string::npos);
  EXPECT_NE(section.find("<p class=\"none\">None: where ops or modules match, both sides run as "
                         "many kernels.</p>"),
            std::string::npos)
      << section;
  EXPECT_EQ(section.find("<table"), std::string::npos);
  EXPECT_EQ(section.find("<div class=\"seq\">"), std::string::npos);
}

TEST_F(OpsHtmlTest, ShowsTheFirstTopDifferencesAndCountsTheRest) {
  ops_.fusion_differences.resize(3, ops_.fusion_differences[0]);
  context_.top = 2;
  const std::string section = SectionOf(OpsHtml(ops_, context_), "fusion-differences");
  EXPECT_NE(section.find("(3 in all:"), std::string::npos);
  EXPECT_EQ(Count(section, "<tr data-kind=\"op\" data-relation=\"fusion\" data-fused-by=\"2\">"),
            2u);
  EXPECT_EQ(Count(section, "<article class=\"example\""), 2u);
  EXPECT_NE(section.find("... and 1 more (--format json lists every one)"), std::string::npos);
}

// The relation, the extra kernels by name and their own time are in the table; an algorithm
// names no side that fuses.
TEST_F(OpsHtmlTest, SaysTheRelationAndNamesTheExtraKernels) {
  std::string section = SectionOf(OpsHtml(ops_, context_), "fusion-differences");
  EXPECT_NE(section.find("<td class=\"relation\">fusion</td>"), std::string::npos) << section;
  // The family, with the full name of its kernel in the example on hover.
  EXPECT_NE(
      section.find("<td class=\"extra\"><code title=\"b&amp;c&lt;8&gt;\">b&amp;c</code> x4 (B)</td>"
                   "<td class=\"extra-time n\">2.0</td>"),
      std::string::npos)
      << section;
  EXPECT_NE(section.find("H100 &quot;SXM&quot; fuses (fusion); example"), std::string::npos)
      << section;
  ops_.fusion_differences[0].relation = FusionRelation::kAlgorithm;
  ops_.fusion_differences[0].fused_kernel.clear();
  section = SectionOf(OpsHtml(ops_, context_), "fusion-differences");
  EXPECT_NE(section.find("data-relation=\"algorithm\" data-fused-by=\"0\""), std::string::npos)
      << section;
  EXPECT_NE(section.find("<td class=\"fused-by\">-</td>"), std::string::npos) << section;
  EXPECT_EQ(section.find("fuses"), std::string::npos) << section;
}

TEST_F(OpsHtmlTest, IsOneOfTheFormatsOfWriteOpsReport) {
  const std::vector<std::string>& formats = OpsFormats();
  EXPECT_NE(std::find(formats.begin(), formats.end(), "html"), formats.end());
  const std::string path = ::testing::TempDir() + "/ops_html_test.html";
  ASSERT_TRUE(WriteOpsReport(ops_, context_, "html", path).ok());
  std::ifstream in(path);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(written, OpsHtml(ops_, context_));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tracefuse
