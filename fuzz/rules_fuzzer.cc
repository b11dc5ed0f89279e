// rules_fuzzer: any bytes as a rule file, read as `--ruleset FILE` and `tracefuse rules --check`
// read one (RuleSet::FromYaml, which checks each regex), then compiled (Classifier::Create).
//
// Invariants, beyond what ASan and UBSan check:
//   - the file is rejected with one error line naming it ("rules.yaml:LINE: ..."), or it gives a
//     rule set within the limits (categories, every rule's category among them) that compiles:
//     what `rules --check` accepts, a run can use;
//   - the classifier gives every name a rule of the set, and a category;
//   - for a set without regexes, the classifier gives every name the rule that SubstringClassifier
//     gives it (the same predicates evaluated one at a time; regexes are left out because
//     std::regex and Hyperscan read some syntax differently).
// Names come from a fixed list and from the set's own literals, so that rules do match.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "fmt/format.h"
#include "fuzz_check.h"
#include "tracefuse/classify/classifier.h"

namespace tracefuse {
namespace {

using fuzz::Fail;

const std::string kSource = "rules.yaml";
constexpr Platform kPlatforms[] = {Platform::kUnknown, Platform::kAmd, Platform::kNvidia};

// kNames are kernel names of the kinds the built-in sets classify, and odd bytes.
const char* const kNames[] = {
    "",
    "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    "triton_poi_fused_add_mul_rsqrt_0",
    "nvjet_tst_128x64_64x4_1x2_h_bz_coopA_NNT",
    "kernel_unified_attention_2d",
    "MIOpenConvFwd",
    "\xff\xfe\x80 \t{}",
};

// Texts() lists the literals, words and regexes of `p` and its children.
void Texts(const Predicate& p, std::vector<std::string>* out) {
  if (!p.text.empty()) out->push_back(p.text);
  for (const Predicate& c : p.children) Texts(c, out);
}

bool HasRegex(const Predicate& p) {
  if (p.kind == Predicate::Kind::kRegex) return true;
  for (const Predicate& c : p.children) {
    if (HasRegex(c)) return true;
  }
  return false;
}

// NamesFor() is kNames and, for each of the set's first literals, names that hold it: alone,
// in upper case, and inside a longer name at a word boundary and inside a word.
std::vector<std::string> NamesFor(const RuleSet& set) {
  std::vector<std::string> names(std::begin(kNames), std::end(kNames));
  std::vector<std::string> texts;
  for (const Rule& r : set.rules()) Texts(r.when, &texts);
  if (texts.size() > 32) texts.resize(32);
  for (const std::string& t : texts) {
    names.push_back(t);
    names.push_back(absl::AsciiStrToUpper(t));
    names.push_back("void " + t + "_kernel<1>");
    names.push_back("x" + t + "Y");
  }
  return names;
}

void CheckRuleSet(const RuleSet& set) {
  if (set.categories().empty() || set.categories().size() > kMaxCategories) {
    Fail(fmt::format("{} categories", set.categories().size()));
  }
  for (const Rule& r : set.rules()) {
    if (!set.category_index(r.category)) Fail("a rule's category is not a category: " + r.category);
  }
  if (!set.category_index(set.default_rule().category)) Fail("the default is not a category");
}

void Classify(const Classifier& classifier, const SubstringClassifier* baseline,
              const std::vector<std::string>& names) {
  const RuleSet& set = classifier.rule_set();
  for (const std::string& name : names) {
    for (Platform platform : kPlatforms) {
      const RuleId rule = classifier.Classify(name, platform);
      if (rule > set.rules().size()) Fail(fmt::format("rule {} of {}", rule, set.rules().size()));
      if (classifier.category_of(rule) >= set.categories().size()) Fail("category out of range");
      classifier.Pattern(rule, name);
      if (baseline != nullptr && baseline->Classify(name, platform) != rule) {
        Fail(fmt::format("'{}' on platform {}: rule {} by Hyperscan, {} one predicate at a time",
                         name, int(platform), rule, baseline->Classify(name, platform)));
      }
    }
  }
}

}  // namespace
}  // namespace tracefuse

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracefuse;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::shared_ptr<const RuleSet>> set = RuleSet::FromYaml(text, kSource);
  if (!set.ok()) {
    fuzz::CheckErrorMessage(set.status(), kSource + ":");
    return 0;
  }
  CheckRuleSet(**set);
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = Classifier::Create(*set);
  if (!classifier.ok())
    Fail("a rule set that passed its checks does not compile: " + classifier.status().ToString());
  bool regexes = false;
  for (const Rule& r : (*set)->rules()) regexes |= HasRegex(r.when);
  std::shared_ptr<const SubstringClassifier> baseline;
  if (!regexes) {
    absl::StatusOr<std::shared_ptr<const SubstringClassifier>> b =
        SubstringClassifier::Create(*set);
    if (!b.ok()) Fail(b.status().ToString());
    baseline = *b;
  }
  Classify(**classifier, baseline.get(), NamesFor(**set));
  return 0;
}
