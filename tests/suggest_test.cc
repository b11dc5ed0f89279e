// `breakdown --suggest` (tracefuse/report/suggest.h): the suggested rule file loads, gives every
// kernel of a family the family's category, and leaves every other kernel where it was, on every
// real trace and on names made to need each kind of literal and of YAML quoting.
#include "tracefuse/report/suggest.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "profile_builder.h"
#include "test_util.h"
#include "tracefuse/pipeline/flow_graph.h"

namespace tracefuse {
namespace {

// A rule file that extends nothing and knows only GEMMs: most kernels are left unclassified, and
// the suggestion is for a rule file, to be merged into it.
constexpr char kGemmOnly[] =
    "categories: [GEMM]\nrules:\n  - {category: GEMM, words: [gemm, nvjet]}\n";
constexpr char kGemmOnlyRule[] = "  - {category: GEMM, words: [gemm, nvjet]}\n";

std::shared_ptr<const Classifier> GemmOnly() {
  return *Classifier::Create(*RuleSet::FromYaml(kGemmOnly, "gemm_only.yaml"));
}

// Merged() is what the header of a suggestion for gemm_only.yaml asks for: the suggested
// categories and rules merged into the file (the suggested rules first).
std::string Merged(const std::string& suggestion) {
  if (suggestion.find("\nrules:\n") == std::string::npos) return kGemmOnly;
  return suggestion + kGemmOnlyRule;
}

std::string CategoryOf(const Classifier& c, std::string_view name, Platform platform) {
  return c.category_name(c.category_of(c.Classify(name, platform)));
}

// ExpectSuggestionHolds() checks `yaml` (the suggestion `s`, merged into the rule file when there
// is one) against the profile it was made from: every kernel of a family leaves the default
// category for its family's, every other kernel keeps its category.
void ExpectSuggestionHolds(const TraceProfile& p, const Suggestion& s, const std::string& yaml) {
  absl::StatusOr<std::shared_ptr<const RuleSet>> rules = RuleSet::FromYaml(yaml, "suggested.yaml");
  ASSERT_TRUE(rules.ok()) << p.path << ": " << rules.status() << "\n" << yaml;
  absl::StatusOr<std::shared_ptr<const Classifier>> c = Classifier::Create(*rules);
  ASSERT_TRUE(c.ok()) << p.path << ": " << c.status();
  const std::string& other = p.classifier->rule_set().default_rule().category;
  EXPECT_EQ((*rules)->default_rule().category, other);
  std::vector<std::string> family_of(p.names.size());
  uint64_t names = 0;
  int64_t time_ns = 0;
  for (const SuggestedFamily& f : s.families) {
    EXPECT_FALSE(f.names.empty()) << f.category;
    EXPECT_FALSE(p.classifier->rule_set().category_index(f.category).has_value()) << f.category;
    for (uint32_t n : f.names) {
      EXPECT_TRUE(family_of[n].empty()) << p.names[n];
      family_of[n] = f.category;
      EXPECT_EQ(p.category_name(p.category_of_name(n)), other) << p.names[n];
    }
    names += f.names.size();
    time_ns += f.time_ns;
  }
  EXPECT_EQ(names + s.left.names, s.unclassified.names) << p.path;
  EXPECT_EQ(time_ns + s.left.time_ns, s.unclassified.time_ns) << p.path;
  for (uint32_t n = 0; n < p.names.size(); ++n) {
    const std::string before = p.category_name(p.category_of_name(n));
    const std::string after = CategoryOf(**c, p.names[n], p.platform);
    EXPECT_EQ(after, family_of[n].empty() ? before : family_of[n]) << p.path << ": " << p.names[n];
  }
}

std::vector<std::string> RealTraces() {
  std::vector<std::string> out;
  for (const std::string& f : testing::FilesIn(testing::SharedDir() + "/traces/real", ".json.gz"))
    if (f.find("rocprof") == std::string::npos) out.push_back(f);  // not a Kineto trace
  return out;
}

// With a built-in set (wafer-kernel leaves 2 to 91 % of these traces' kernel time as Other) and
// with a rule file, a few families (the rest stays Other) or as many as the names allow.
TEST(Suggest, EveryRealTraceGetsRulesThatMoveOnlyTheirFamilies) {
  TRACEFUSE_REQUIRE_SHARED();
  const std::vector<std::string> traces = RealTraces();
  ASSERT_GE(traces.size(), 14u);
  for (const std::string& ruleset : {std::string("wafer-kernel"), std::string("gemm_only.yaml")}) {
    std::shared_ptr<const Classifier> classifier =
        ruleset == "wafer-kernel" ? *Classifier::Create(*RuleSet::Load(ruleset)) : GemmOnly();
    absl::StatusOr<std::vector<TraceProfile>> profiles = ProfileTraces(traces, classifier, {});
    ASSERT_TRUE(profiles.ok()) << profiles.status();
    for (const TraceProfile& p : *profiles) {
      for (size_t families : {size_t{3}, size_t{1000}}) {
        SCOPED_TRACE(p.path + " --ruleset " + ruleset + " --top " + std::to_string(families));
        const Suggestion s = SuggestFamilies(p, families);
        EXPECT_LE(s.families.size(), families);
        EXPECT_GT(s.unclassified.names, 0u);
        if (families == 1000) {
          EXPECT_EQ(s.left.names, 0u);
        }
        const std::string yaml = SuggestRulesYaml(p, {families, ruleset});
        ExpectSuggestionHolds(p, s, ruleset == "wafer-kernel" ? yaml : Merged(yaml));
        if (ruleset == "wafer-kernel") {
          EXPECT_NE(yaml.find("\nextends: wafer-kernel\n"), std::string::npos);
        } else {
          EXPECT_EQ(yaml.find("\nextends:"), std::string::npos);
          // On its own, too, the file passes `rules --check`.
          EXPECT_TRUE(RuleSet::FromYaml(yaml, "suggested.yaml").ok());
        }
      }
    }
  }
}

// A name whose every word, and every pair of words, occurs in a classified name gets a prefix,
// here one holding a character that YAML treats specially, which must come back from the file as
// it was.
TEST(Suggest, PrefixesWithYamlSpecialCharactersRoundTrip) {
  // The last two are line breaks in YAML 1.1: LS (U+2028) and NEL (U+0085).
  const std::string specials[] = {": x", " #x", "\"q\"", "{a}",      "[b]",          "'s'",
                                  "\\",  "\t",  "- x",   "&a",       "*a",           "!t",
                                  "%",   "@",   "`",     "<T>(int)", "\xE2\x80\xA8", "\xC2\x85"};
  for (const std::string& special : specials) {
    SCOPED_TRACE(special);
    const std::string name = "widget" + special + " tail";
    TraceProfile p = testing::BuildProfile(
        {{"widget tail gemm", 0, -1, 1000}, {name, 10, -1, 3000}, {name, 20, -1, 3000}},
        GemmOnly());
    const Suggestion s = SuggestFamilies(p, 10);
    ASSERT_EQ(s.families.size(), 1u);
    const SuggestedFamily& f = s.families[0];
    EXPECT_EQ(f.kind, SuggestedFamily::Kind::kPrefix);
    ASSERT_EQ(f.literals.size(), 1u);
    EXPECT_EQ(name.rfind(f.literals[0], 0), 0u) << f.literals[0];
    EXPECT_GT(f.literals[0].size(), std::string("widget").size()) << f.literals[0];
    EXPECT_EQ(f.kernels, 2u);
    EXPECT_EQ(f.time_ns, 6000);
    const std::string yaml = Merged(SuggestRulesYaml(p, {10, "gemm_only.yaml"}));
    absl::StatusOr<std::shared_ptr<const RuleSet>> rules = RuleSet::FromYaml(yaml, "s.yaml");
    ASSERT_TRUE(rules.ok()) << rules.status() << "\n" << yaml;
    EXPECT_EQ((*rules)->rules()[0].when.text, f.literals[0]) << yaml;
    ExpectSuggestionHolds(p, s, yaml);
  }
}

// Words: the one that names the most time wins; words under three letters, stop words and words
// of parameter lists name no family; a word of a classified name is never a literal, two words
// together then are; YAML keywords are quoted.
TEST(Suggest, FamiliesAreNamedByTheirWords) {
  TraceProfile p = testing::BuildProfile(
      {
          {"gemm_frob_zap", 0, -1, 500},
          {"gemm_zorp", 0, -1, 500},
          {"gemm_quux", 0, -1, 500},
          {"void frob::frobnicate_fwd_kernel<float>(Frobber*)", 0, -1, 4000},
          {"void frob::frobnicate_bwd_kernel<float>(Frobber*)", 0, -1, 3000},
          {"zorp_quux_kernel", 0, -1, 2000},
          {"void null::null_sink_kernel<int>(int*)", 0, -1, 1000},
          {"void at::native::xy_kernel(Frobber*)", 0, -1, 100},
      },
      GemmOnly());
  const Suggestion s = SuggestFamilies(p, 10);
  ASSERT_EQ(s.families.size(), 4u);
  EXPECT_EQ(s.families[0].category, "Frobnicate");
  EXPECT_EQ(s.families[0].literals, std::vector<std::string>{"frobnicate"});
  EXPECT_EQ(s.families[0].names.size(), 2u);
  EXPECT_EQ(s.families[1].category, "ZorpQuux");
  EXPECT_EQ(s.families[1].kind, SuggestedFamily::Kind::kWordPair);
  EXPECT_EQ(s.families[2].category, "Null");
  // xy_kernel has no word of its own but `void at::native::xy_kernel`, a prefix.
  EXPECT_EQ(s.families[3].kind, SuggestedFamily::Kind::kPrefix);
  EXPECT_EQ(s.families[3].literals, std::vector<std::string>{"void at::native::xy_kernel"});
  EXPECT_EQ(s.families[3].category, "Xy");
  const std::string yaml = SuggestRulesYaml(p, {10, "gemm_only.yaml"});
  EXPECT_NE(yaml.find("  - {category: \"Null\", words: \"null\"}\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("  - {category: ZorpQuux, all: [{words: zorp}, {words: quux}]}\n"),
            std::string::npos)
      << yaml;
  ExpectSuggestionHolds(p, s, Merged(yaml));
}

// Nothing unclassified: a valid rule file that says so and adds no rule.
TEST(Suggest, NothingUnclassifiedIsAValidFileWithoutRules) {
  TraceProfile p = testing::BuildProfile({{"gemm_a", 0, -1, 1000}}, GemmOnly());
  p.path = "t.json";
  const Suggestion s = SuggestFamilies(p, 10);
  EXPECT_TRUE(s.families.empty());
  EXPECT_EQ(s.unclassified.names, 0u);
  const std::string yaml = SuggestRulesYaml(p, {10, "gemm_only.yaml"});
  EXPECT_EQ(yaml,
            "# Rule set gemm_only.yaml leaves no kernel of t.json in its default category, Other: "
            "there is\n# nothing to suggest, and this file adds no rule.\n"
            "description: \"rules suggested for t.json by tracefuse breakdown --suggest\"\n");
  EXPECT_EQ(yaml.find("rules:"), std::string::npos) << yaml;
  absl::StatusOr<std::shared_ptr<const RuleSet>> rules = RuleSet::FromYaml(yaml, "s.yaml");
  ASSERT_TRUE(rules.ok()) << rules.status() << "\n" << yaml;
  EXPECT_TRUE((*rules)->rules().empty());
}

// A family named like a category of the rule set gets a number, and a hint to that category.
TEST(Suggest, CategoriesNeverCollideWithTheRuleSets) {
  TraceProfile p = testing::BuildProfile({{"gemm_a", 0, -1, 1000},
                                          {"GEMM_b", 0, -1, 10},
                                          {"Other_c", 0, -1, 10},
                                          {"void x::other_d()", 0, -1, 5}},
                                         GemmOnly());
  // Both "gemm_a" and "GEMM_b" are classified: "other" is the only own word.
  const Suggestion s = SuggestFamilies(p, 10);
  ASSERT_EQ(s.families.size(), 1u);
  EXPECT_EQ(s.families[0].category, "Other2");
  EXPECT_EQ(s.families[0].existing_category, "Other");
  EXPECT_EQ(s.families[0].names.size(), 2u);
}

}  // namespace
}  // namespace tracefuse
