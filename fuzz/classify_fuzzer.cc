// classify_fuzzer: any bytes as kernel names, one per line, classified by every built-in rule set
// on every platform, and taken apart as `tracefuse ops` and `breakdown --suggest` take names apart
// (KernelFamily, NormalizeOpName, SplitWords).
//
// Invariants, beyond what ASan and UBSan check:
//   - every name gets a rule of the set and a category, and its pattern label;
//   - one name at a time (Classifier), a chunk's names at once (CachedClassifier::ClassifyNames,
//     as the pipeline classifies) and the rules evaluated one predicate at a time
//     (SubstringClassifier, what `tracefuse bench classify` checks Hyperscan against) agree;
//   - a kernel family is at most 64 bytes; the words of a name are lowercase letters.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "fmt/format.h"
#include "fuzz_check.h"
#include "tracefuse/classify/classifier.h"
#include "tracefuse/reduce/op_tree.h"

namespace tracefuse {
namespace {

using fuzz::Fail;

constexpr Platform kPlatforms[] = {Platform::kUnknown, Platform::kAmd, Platform::kNvidia};
// std::regex matches recursively, a stack frame per character: SubstringClassifier is checked on
// names up to this length, as long as kernel names get, so that a long line cannot overflow the
// stack in the baseline rather than find something in tracefuse.
constexpr size_t kBaselineNameBytes = 1024;

struct RuleSetUnderTest {
  std::shared_ptr<const Classifier> classifier;
  std::shared_ptr<const SubstringClassifier> baseline;
};

const std::vector<RuleSetUnderTest>& BuiltinSets() {
  static const std::vector<RuleSetUnderTest> sets = [] {
    std::vector<RuleSetUnderTest> out;
    for (const std::string& name : RuleSet::BuiltinNames()) {
      absl::StatusOr<std::shared_ptr<const RuleSet>> set = RuleSet::Load(name);
      if (!set.ok()) Fail(set.status().ToString());
      absl::StatusOr<std::shared_ptr<const Classifier>> c = Classifier::Create(*set);
      absl::StatusOr<std::shared_ptr<const SubstringClassifier>> s =
          SubstringClassifier::Create(*set);
      if (!c.ok() || !s.ok()) Fail(name + " does not compile");
      out.push_back({*c, *s});
    }
    return out;
  }();
  return sets;
}

// CheckRule() checks `rule`, the classifier's rule for `name` on `platform`, against the batch's
// and the baseline's. A set that never tests the platform gives a name one rule on every
// platform, so the baseline, the slowest of the three, is asked once.
void CheckRule(const RuleSetUnderTest& set, std::string_view name, Platform platform, RuleId rule,
               RuleId in_batch) {
  const RuleSet& rules = set.classifier->rule_set();
  if (rule > rules.rules().size() ||
      set.classifier->category_of(rule) >= rules.categories().size()) {
    Fail(fmt::format("{}: rule {} out of range", rules.name(), rule));
  }
  set.classifier->Pattern(rule, name);
  if (in_batch != rule) {
    Fail(fmt::format("{}: '{}' on platform {}: rule {} alone, {} in a chunk", rules.name(), name,
                     int(platform), rule, in_batch));
  }
  RuleId expected = rule;
  if (!rules.platform_dependent() && platform != Platform::kUnknown) {
    expected = set.classifier->Classify(name, Platform::kUnknown);
  } else if (name.size() <= kBaselineNameBytes) {
    expected = set.baseline->Classify(name, platform);
  }
  if (expected != rule) {
    Fail(
        fmt::format("{}: '{}' on platform {}: rule {}, but {} one predicate at a time or on "
                    "no platform",
                    rules.name(), name, int(platform), rule, expected));
  }
}

void ClassifyAll(const RuleSetUnderTest& set, const std::vector<std::string_view>& names) {
  ParsedChunk chunk;
  for (std::string_view name : names) chunk.names.Append(name);
  for (Platform platform : kPlatforms) {
    std::vector<RuleId> batch;
    CachedClassifier(set.classifier, platform).ClassifyNames(chunk, &batch);
    for (size_t i = 0; i < names.size(); ++i) {
      CheckRule(set, names[i], platform, set.classifier->Classify(names[i], platform), batch[i]);
    }
  }
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t from = 0;
  for (size_t eol; (eol = text.find('\n', from)) != std::string_view::npos; from = eol + 1) {
    lines.push_back(text.substr(from, eol - from));
  }
  lines.push_back(text.substr(from));
  return lines;
}

void TakeApart(std::string_view name) {
  const std::string family = KernelFamily(name);
  if (family.size() > 64) Fail(fmt::format("family of {} bytes: {}", family.size(), family));
  NormalizeOpName(name);
  for (const std::string& word : SplitWords(name)) {
    for (char c : word) {
      if (!absl::ascii_islower(static_cast<unsigned char>(c))) Fail("word '" + word + "'");
    }
  }
}

}  // namespace
}  // namespace tracefuse

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracefuse;
  const std::vector<std::string_view> names =
      Lines(std::string_view(reinterpret_cast<const char*>(data), size));
  for (const RuleSetUnderTest& set : BuiltinSets()) ClassifyAll(set, names);
  for (std::string_view name : names) TakeApart(name);
  return 0;
}
