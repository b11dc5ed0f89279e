#include <fstream>

#include "gtest/gtest.h"
#include "simdjson.h"
#include "test_util.h"
#include "tracefuse/classify/classifier.h"

namespace tracefuse {
namespace {

std::shared_ptr<const Classifier> Make(const std::string& ruleset) {
  auto rules = RuleSet::Load(ruleset);
  EXPECT_TRUE(rules.ok()) << rules.status();
  auto c = Classifier::Create(*rules);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

std::shared_ptr<const Classifier> FromText(const std::string& yaml) {
  auto rules = RuleSet::FromYaml(yaml, "test.yaml");
  EXPECT_TRUE(rules.ok()) << rules.status();
  auto c = Classifier::Create(*rules);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

std::string CategoryOf(const Classifier& c, std::string_view name,
                       Platform p = Platform::kUnknown) {
  return c.category_name(c.category_of(c.Classify(name, p)));
}

// Every row of the reference's classifier outputs: classify_kernel, and classify(name, platform)
// for AMD and NVIDIA with their pattern labels.
TEST(WaferRuleSets, MatchEveryGoldenName) {
  TRACEFUSE_REQUIRE_SHARED();
  auto kernel = Make("wafer-kernel");
  auto op = Make("wafer-op");
  std::ifstream in(testing::SharedDir() + "/golden/classify/kernel_names.jsonl");
  simdjson::dom::parser parser;
  std::string line;
  size_t rows = 0;
  while (std::getline(in, line)) {
    simdjson::dom::element row = parser.parse(simdjson::padded_string(line)).value();
    std::string name(std::string_view(row["name"].get_string().value()));
    EXPECT_EQ(CategoryOf(*kernel, name),
              std::string_view(row["classify_kernel"].get_string().value()))
        << name;
    for (auto [key, platform] :
         {std::pair{"op_amd", Platform::kAmd}, std::pair{"op_nvidia", Platform::kNvidia}}) {
      RuleId id = op->Classify(name, platform);
      simdjson::dom::array expected = row[key].get_array().value();
      EXPECT_EQ(op->category_name(op->category_of(id)),
                std::string_view(expected.at(0).get_string().value()))
          << key << " " << name;
      EXPECT_EQ(op->Pattern(id, name), std::string_view(expected.at(1).get_string().value()))
          << key << " " << name;
    }
    ++rows;
  }
  EXPECT_GT(rows, 400u);
}

TEST(WaferRuleSets, DocumentedQuirksOfTheReference) {
  auto kernel = Make("wafer-kernel");
  EXPECT_EQ(CategoryOf(*kernel, "void vllm::rms_norm_kernel<c10::BFloat16>"), "Other");
  EXPECT_EQ(CategoryOf(*kernel, "flash_fwd_splitkv_kernel"), "Other");
  EXPECT_EQ(CategoryOf(*kernel, "topkGatingSoftmax"), "Softmax");
  EXPECT_EQ(CategoryOf(*kernel, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), "Other");
  auto op = Make("wafer-op");
  // Prefix rules are case-sensitive: a lower-case cijk_ is not Tensile.
  EXPECT_EQ(CategoryOf(*op, "cijk_lowercase", Platform::kAmd), "Other");
  EXPECT_EQ(CategoryOf(*op, "Cijk_Alik", Platform::kAmd), "Dense GEMM");
  EXPECT_EQ(op->Pattern(op->Classify("x" + std::string(60, 'y'), Platform::kAmd),
                        "x" + std::string(60, 'y')),
            "x" + std::string(39, 'y'));
}

TEST(RuleFiles, FirstMatchingRuleWinsAndPredicatesCombine) {
  auto c = FromText(R"(
name: t
categories: [A, B, C, D]
rules:
  - category: A
    all: [foo, {not: bar}]
  - category: B
    any: [bar, {regex: "ba[zq]+x"}]
  - category: C
    prefix: Up
    case: sensitive
  - category: D
    contains: up
)");
  EXPECT_EQ(CategoryOf(*c, "xFOOx"), "A");    // caseless by default
  EXPECT_EQ(CategoryOf(*c, "foo_bar"), "B");  // A's `not` fails, B matches
  EXPECT_EQ(CategoryOf(*c, "BAZQQX"), "B");
  EXPECT_EQ(CategoryOf(*c, "Upper"), "C");
  EXPECT_EQ(CategoryOf(*c, "upper"), "D");  // prefix is case-sensitive here
  EXPECT_EQ(CategoryOf(*c, "xUp"), "D");    // prefix is anchored
  EXPECT_EQ(CategoryOf(*c, "nothing"), "Other");
  EXPECT_EQ(CategoryOf(*c, ""), "Other");
}

TEST(RuleFiles, ExtendingABuiltinSetTakesPrecedence) {
  auto c = FromText(R"(
extends: wafer-kernel
categories: [Communication]
rules:
  - category: Communication
    any: [nccl, rccl]
  - category: RMSNorm
    contains: rms_norm
)");
  EXPECT_EQ(CategoryOf(*c, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"), "Communication");
  EXPECT_EQ(CategoryOf(*c, "void vllm::rms_norm_kernel<c10::BFloat16>"), "RMSNorm");
  EXPECT_EQ(CategoryOf(*c, "Cijk_Alik_Bljk"), "GEMM");  // base rules still apply
  EXPECT_EQ(c->rule_set().categories().front(), "GEMM");
  EXPECT_EQ(c->rule_set().extends(), "wafer-kernel");
  EXPECT_EQ(FromText("rules: []\n")->rule_set().extends(), "");
}

TEST(RuleFiles, BuiltinNamesAreThoseWithoutAPathOrYamlSuffix) {
  EXPECT_TRUE(RuleSet::NamesBuiltin("tracefuse"));
  EXPECT_TRUE(RuleSet::NamesBuiltin("nosuchset"));  // a built-in name, unknown: Load() says so
  EXPECT_FALSE(RuleSet::NamesBuiltin("mine.yaml"));
  EXPECT_FALSE(RuleSet::NamesBuiltin("rules/mine"));
  EXPECT_FALSE(RuleSet::NamesBuiltin("mine.yml"));
}

TEST(Words, BoundariesSplitIdentifiersAtCaseChangesAndNonLetters) {
  EXPECT_EQ(SplitWords("miopenSp3AsmConv_v21_1_3_gfx9"),
            (std::vector<std::string>{"miopen", "sp", "asm", "conv", "v", "gfx"}));
  EXPECT_EQ(SplitWords("void at::native::RowwiseMomentsCUDAKernel<float>"),
            (std::vector<std::string>{"void", "at", "native", "rowwise", "moments", "cuda",
                                      "kernel", "float"}));
  EXPECT_EQ(SplitWords("_ZN2at6native18fused_dropout_kernel"),
            (std::vector<std::string>{"zn", "at", "native", "fused", "dropout", "kernel"}));
  EXPECT_EQ(SplitWords("MIOpenConvUni"), (std::vector<std::string>{"mi", "open", "conv", "uni"}));
  EXPECT_EQ(SplitWords(""), std::vector<std::string>{});
  EXPECT_TRUE(ContainsWord("gcnAsmConv1x1U", "conv"));
  EXPECT_TRUE(ContainsWord("conv2d_fwd", "CONV"));
  EXPECT_TRUE(ContainsWord("cutlass_80_tensorop_s16816gemm_relu", "gemm"));
  EXPECT_FALSE(ContainsWord("convert_kernel", "conv"));
  EXPECT_FALSE(ContainsWord("reconvolve", "conv"));
  EXPECT_FALSE(ContainsWord("conv", "convolution"));
  EXPECT_FALSE(ContainsWord("x", ""));
}

TEST(RuleFiles, WordsMatchWholeWordsOnly) {
  auto c = FromText(R"(
rules:
  - {category: Conv, words: [conv, winograd]}
  - {category: Pool, words: pool}
)");
  EXPECT_EQ(CategoryOf(*c, "miopenSp3AsmConv_v21_1_3"), "Conv");
  EXPECT_EQ(CategoryOf(*c, "convert_conv_kernel"), "Conv");  // the second occurrence is a word
  EXPECT_EQ(CategoryOf(*c, "gcnAsmWinogradXformData"), "Conv");
  EXPECT_EQ(CategoryOf(*c, "convert_kernel"), "Other");
  EXPECT_EQ(CategoryOf(*c, "AdaptivePool2d"), "Pool");
  EXPECT_EQ(CategoryOf(*c, "spool"), "Other");
}

TEST(RuleFiles, ExtendingSetsMergesLayerByLayer) {
  auto c = FromText(R"(
extends: tracefuse
categories: [Mine, MyFallback]
rules:
  - {category: Mine, contains: my_kernel}
  - {category: MyFallback, words: frobnicate, fallback: true}
)");
  const std::vector<Rule>& rules = c->rule_set().rules();
  EXPECT_EQ(rules.front().category, "Mine");
  auto first_fallback =
      std::find_if(rules.begin(), rules.end(), [](const Rule& r) { return r.fallback; });
  ASSERT_NE(first_fallback, rules.end());
  EXPECT_EQ(first_fallback->category, "MyFallback");  // before the base set's fallback rules
  EXPECT_TRUE(std::all_of(first_fallback, rules.end(), [](const Rule& r) { return r.fallback; }));
  EXPECT_EQ(CategoryOf(*c, "frobnicate_gemm_kernel"), "GEMM");  // a specific base rule first
  EXPECT_EQ(CategoryOf(*c, "FrobnicateKernel"), "MyFallback");
}

// Classify() evaluates only the rules of the patterns a name matched, and those true on no match:
// rules made of `not` and `platform` must still apply, in rule order.
TEST(RuleFiles, RulesTrueWithoutAnyMatchStillApply) {
  auto c = FromText(R"(
rules:
  - {category: Bar, contains: bar}
  - {category: Amd, all: [{platform: amd}, {not: foo}]}
  - {category: NotFoo, not: foo}
  - {category: Foo, any: [foo, {words: qux}]}
)");
  EXPECT_EQ(CategoryOf(*c, "foobar"), "Bar");
  EXPECT_EQ(CategoryOf(*c, "xyz", Platform::kAmd), "Amd");
  EXPECT_EQ(CategoryOf(*c, "xyz", Platform::kNvidia), "NotFoo");
  EXPECT_EQ(CategoryOf(*c, "foo", Platform::kAmd), "Foo");
  EXPECT_EQ(CategoryOf(*c, "a_foo_b"), "Foo");
  for (int i = 0; i < 3; ++i) {  // a thread's state is reset between names
    EXPECT_EQ(CategoryOf(*c, "foo"), "Foo");
    EXPECT_EQ(CategoryOf(*c, "plain"), "NotFoo");
  }
}

TEST(RuleFiles, PlatformPredicate) {
  auto c = FromText(R"(
rules:
  - {category: AmdSort, all: [{platform: amd}, sort]}
  - {category: Sort, contains: sort}
)");
  EXPECT_TRUE(c->rule_set().platform_dependent());
  EXPECT_EQ(CategoryOf(*c, "radix_sort", Platform::kAmd), "AmdSort");
  EXPECT_EQ(CategoryOf(*c, "radix_sort", Platform::kNvidia), "Sort");
  EXPECT_EQ(CategoryOf(*c, "radix_sort", Platform::kUnknown), "Sort");
}

constexpr Platform kPlatforms[] = {Platform::kUnknown, Platform::kAmd, Platform::kNvidia};

// The substring baseline is a second implementation of the rules: it must pick Classifier's rule
// for every golden name, on every platform, under every built-in set.
TEST(SubstringClassifier, AgreesWithClassifierOnEveryGoldenName) {
  TRACEFUSE_REQUIRE_SHARED();
  std::vector<std::string> names;
  std::ifstream in(testing::SharedDir() + "/golden/classify/kernel_names.jsonl");
  simdjson::dom::parser parser;
  std::string line;
  while (std::getline(in, line)) {
    simdjson::dom::element row = parser.parse(simdjson::padded_string(line)).value();
    names.emplace_back(std::string_view(row["name"].get_string().value()));
  }
  ASSERT_GT(names.size(), 400u);
  for (const std::string& set : RuleSet::BuiltinNames()) {
    auto rules = *RuleSet::Load(set);
    auto hyperscan = *Classifier::Create(rules);
    auto baseline = SubstringClassifier::Create(rules);
    ASSERT_TRUE(baseline.ok()) << baseline.status();
    for (const std::string& name : names) {
      for (Platform p : kPlatforms) {
        EXPECT_EQ((*baseline)->Classify(name, p), hyperscan->Classify(name, p))
            << set << " " << PlatformName(p) << " " << name;
      }
    }
  }
}

// Names that make each kind of predicate decide: contains, prefix (both cases), regex (caseless
// and not), words, all, any, not and platform.
TEST(SubstringClassifier, AgreesWithClassifierOnEveryPredicateKind) {
  auto rules = RuleSet::FromYaml(R"(
name: kinds
categories: [Contains, Prefix, PrefixCased, Regex, RegexCased, Words, All, Any, Not, Platform]
rules:
  - {category: Platform, all: [{platform: nvidia}, nvjet]}
  - {category: Contains, contains: gemm}
  - {category: PrefixCased, prefix: Cijk_, case: sensitive}
  - {category: Prefix, prefix: "void at::"}
  - {category: Regex, regex: "sm[0-9]+_xmma"}
  - {category: RegexCased, regex: "^Fmha[A-Z]", case: sensitive}
  - {category: Words, words: [conv, pool]}
  - {category: All, all: [flash, fwd]}
  - {category: Any, any: [nccl, {regex: "rccl[0-9]"}]}
  - {category: Not, all: [norm, {not: layer}]}
)",
                                 "kinds.yaml");
  ASSERT_TRUE(rules.ok()) << rules.status();
  auto hyperscan = *Classifier::Create(*rules);
  auto baseline = SubstringClassifier::Create(*rules);
  ASSERT_TRUE(baseline.ok()) << baseline.status();
  const std::pair<const char*, const char*> cases[] = {
      {"nvjet_tst_128x64", "Platform"},  // on NVIDIA; Other elsewhere
      {"cutlass_GEMM_relu", "Contains"},
      {"Cijk_Ailk_Bljk", "PrefixCased"},
      {"cijk_ailk", "Other"},
      {"VOID AT::native::copy", "Prefix"},
      {"x void at::", "Other"},
      {"SM90_XMMA_fprop", "Regex"},
      {"FmhaSm100Kernel", "RegexCased"},
      {"fmhaSm100Kernel", "Other"},
      {"miopenSp3AsmConv_v21", "Words"},
      {"AdaptivePool2d", "Words"},
      {"convert_kernel", "Other"},
      {"flash_fwd_kernel", "All"},
      {"flash_bwd_kernel", "Other"},
      {"ncclDevKernel_AllReduce", "Any"},
      {"RCCL2_kernel", "Any"},
      {"rcclgeneric", "Other"},
      {"rms_norm_kernel", "Not"},
      {"layer_norm_kernel", "Other"},
      {"", "Other"},
  };
  for (const auto& [name, category] : cases) {
    for (Platform p : kPlatforms) {
      RuleId id = hyperscan->Classify(name, p);
      EXPECT_EQ((*baseline)->Classify(name, p), id) << name << " " << PlatformName(p);
      std::string expected = category;
      if (expected == "Platform" && p != Platform::kNvidia) expected = "Other";
      EXPECT_EQ(hyperscan->category_name(hyperscan->category_of(id)), expected) << name;
    }
  }
}

TEST(SubstringClassifier, ARegexThatStdRegexCannotCompileIsAnError) {
  auto rules =
      RuleSet::FromYaml("name: pcre\nrules:\n  - {category: X, regex: \"(?i)abc\"}\n", "pcre.yaml");
  ASSERT_TRUE(rules.ok()) << rules.status();
  auto baseline = SubstringClassifier::Create(*rules);
  ASSERT_FALSE(baseline.ok());
  EXPECT_EQ(baseline.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(baseline.status().message()).substr(0, 62),
            "rule set 'pcre', line 3: regex '(?i)abc' is not one std::regex");
}

// Serialize() and Deserialize() carry every field: a set read back serializes to the same bytes
// and classifies every golden name alike, on every built-in set and a file that extends one.
TEST(RuleSetBytes, ReadBackAsTheSameSet) {
  std::vector<std::shared_ptr<const RuleSet>> sets;
  for (const std::string& name : RuleSet::BuiltinNames()) {
    auto set = RuleSet::FromYaml(RuleSet::BuiltinText(name), name);
    ASSERT_TRUE(set.ok()) << set.status();
    sets.push_back(*set);
  }
  auto extended = RuleSet::FromYaml(
      "name: mine\nextends: tracefuse\ndescription: d\ncategories: [Mine]\nrules:\n"
      "  - category: Mine\n    pattern: \"mine {name:4}\"\n    all:\n      - regex: 'my_.*k'\n"
      "      - not: {platform: amd}\n      - any: [{prefix: my_}, {words: kern}, {contains: Kern, "
      "case: sensitive}]\n"
      "default: {category: Mine, pattern: other}\n",
      "mine.yaml");
  ASSERT_TRUE(extended.ok()) << extended.status();
  sets.push_back(*extended);
  // The golden names where ../shared is present, and names of the extending file's rules.
  std::vector<std::string> names = {"my_gemm_kernel", "my_Kern_x", "other"};
  std::ifstream golden(testing::SharedDir() + "/golden/classify/kernel_names.jsonl");
  simdjson::dom::parser parser;
  for (std::string line; std::getline(golden, line);) {
    simdjson::dom::element row = parser.parse(simdjson::padded_string(line)).value();
    names.emplace_back(std::string_view(row["name"].get_string().value()));
  }
  for (const auto& set : sets) {
    const std::string bytes = set->Serialize();
    auto back = RuleSet::Deserialize(bytes, set->name());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE((*back)->precompiled());
    EXPECT_EQ((*back)->Serialize(), bytes);
    EXPECT_EQ((*back)->name(), set->name());
    EXPECT_EQ((*back)->extends(), set->extends());
    EXPECT_EQ((*back)->categories(), set->categories());
    EXPECT_EQ((*back)->rules().size(), set->rules().size());
    auto original = Classifier::Create(set, /*use_precompiled=*/false);
    auto copy = Classifier::Create(*back, /*use_precompiled=*/false);
    ASSERT_TRUE(original.ok() && copy.ok());
    for (const std::string& name : names) {
      for (Platform p : {Platform::kAmd, Platform::kNvidia, Platform::kUnknown}) {
        ASSERT_EQ((*original)->Classify(name, p), (*copy)->Classify(name, p)) << name;
        ASSERT_EQ((*original)->Pattern((*original)->Classify(name, p), name),
                  (*copy)->Pattern((*copy)->Classify(name, p), name));
      }
    }
  }
}

// Bytes that Serialize() did not write are refused with one line, never read past their end:
// every cut, an extra byte, and each byte changed to 0xff.
TEST(RuleSetBytes, CorruptBytesAreRefused) {
  auto set = RuleSet::FromYaml(RuleSet::BuiltinText("wafer-op"), "wafer-op");
  ASSERT_TRUE(set.ok());
  const std::string bytes = (*set)->Serialize();
  const std::string expected = "x.rules: corrupt serialized rule set";
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto cut = RuleSet::Deserialize(bytes.substr(0, n), "x.rules");
    ASSERT_FALSE(cut.ok()) << n;
    EXPECT_EQ(cut.status().message(), expected);
    EXPECT_TRUE(absl::IsDataLoss(cut.status()));
  }
  EXPECT_FALSE(RuleSet::Deserialize(bytes + " ", "x.rules").ok());
  size_t refused = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string changed = bytes;
    changed[i] = '\xff';
    auto back = RuleSet::Deserialize(changed, "x.rules");
    if (!back.ok()) {
      ++refused;
      EXPECT_EQ(back.status().message(), expected);
    }
  }
  // Bytes of names and literals may take any value; counts, lengths and kinds may not.
  EXPECT_GT(refused, bytes.size() / 10);
}

TEST(Classifier, ReportsTheSizeOfItsDatabase) {
  auto c = Make("tracefuse");
  EXPECT_GT(c->database_bytes(), 1000u);
  EXPECT_EQ(FromText("rules:\n  - {category: A, platform: amd}\n")->database_bytes(), 0u);
}

struct BadFile {
  const char* yaml;
  const char* message;
};
class RuleFileErrors : public ::testing::TestWithParam<BadFile> {};

TEST_P(RuleFileErrors, ExactMessageWithLine) {
  auto r = RuleSet::FromYaml(GetParam().yaml, "my.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Messages, RuleFileErrors,
    ::testing::Values(
        BadFile{"rules:\n  - category: A\n    regex: \"(unclosed\"\n",
                "my.yaml:3: bad regex '(unclosed': Missing close parenthesis for group started at "
                "index 0."},
        BadFile{"extends: nope\n",
                "my.yaml:1: unknown rule set 'nope' (built-in sets: tracefuse, wafer-kernel, "
                "wafer-op)"},
        BadFile{"categories: [A, B, A]\n", "my.yaml:1: duplicate category 'A'"},
        BadFile{"extends: wafer-kernel\ncategories: [GEMM]\n",
                "my.yaml:2: category 'GEMM' is already defined by 'wafer-kernel'"},
        BadFile{"rules:\n  - contains: x\n", "my.yaml:2: rule without 'category'"},
        BadFile{"rules:\n  - category: A\n", "my.yaml:2: rule without a predicate"},
        BadFile{"rules:\n  - category: A\n    contians: x\n    any: [y]\n",
                "my.yaml:3: unknown key 'contians'"},
        BadFile{"rules:\n  - category: A\n    contains: \"\"\n",
                "my.yaml:3: empty 'contains' string"},
        BadFile{"rulez: []\n", "my.yaml:1: unknown key 'rulez'"},
        BadFile{"rules:\n  - category: A\n    words: [conv, im2col]\n",
                "my.yaml:3: 'im2col' is not a word (letters only)"},
        BadFile{"rules:\n  - {category: A, words: x, fallback: true}\n  - {category: B, "
                "contains: y}\n",
                "my.yaml:3: a specific rule after a fallback rule (fallback rules come last)"},
        BadFile{"rules: [\n", "my.yaml:2: end of sequence flow not found"},
        // Control characters quoted from the file show as escapes: an error is one line.
        BadFile{"\"ru\\tles\": []\n", "my.yaml:1: unknown key 'ru\\x09les'"}));

// Found by fuzz_rules: yaml-cpp quotes the character it stumbled on, here a newline.
TEST(RuleFiles, AnErrorIsOneLineWhateverTheFileHolds) {
  auto r = RuleSet::FromYaml(std::string("\xff\x00\n", 3), "my.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "my.yaml:2: unknown escape character: \\x0a");
}

TEST(RuleFiles, AtMost256CategoriesSoThatEachFitsAByte) {
  auto file = [](int n) {
    std::string yaml = "categories: [";
    for (int i = 0; i < n; ++i) yaml += (i ? ", c" : "c") + std::to_string(i);
    return yaml + "]\n";
  };
  // The fallback category Other comes on top of those listed.
  auto fits = RuleSet::FromYaml(file(255), "my.yaml");
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ((*fits)->categories().size(), 256u);
  auto over = RuleSet::FromYaml(file(256), "my.yaml");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().message(), "my.yaml: too many categories (257; at most 256)");
}

}  // namespace
}  // namespace tracefuse
