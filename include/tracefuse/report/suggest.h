// Stage 7, report: `tracefuse breakdown --suggest`, a starter rule file for the kernels that a
// rule set leaves unclassified.
#ifndef TRACEFUSE_REPORT_SUGGEST_H_
#define TRACEFUSE_REPORT_SUGGEST_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse {

// kDefaultSuggestedFamilies is how many rules `breakdown --suggest` writes at most when --top is
// not given (--top's own default, 5 kernels per category, would suggest too few).
inline constexpr size_t kDefaultSuggestedFamilies = 10;

// SuggestedFamily is one suggested rule: the unclassified kernel names that its literal matches
// (a family of similar names) and the new category it gives them.
struct SuggestedFamily {
  // kWord: `words: W`; kWordPair: `all: [{words: A}, {words: B}]`; kPrefix: `prefix: P`.
  enum class Kind : uint8_t { kWord, kWordPair, kPrefix };
  Kind kind = Kind::kWord;
  std::vector<std::string> literals;  // the word, the two words, or the prefix
  std::string category;
  // The rule set's category of the same name, caselessly ("GEMM" for a family "Gemm2"), which
  // the family may belong to; "" when none.
  std::string existing_category;
  // For a family whose names classification by launching op gave one category, `category` is
  // that one, and this the op (or module) that launched the family's first name; "" otherwise.
  std::string launching_op;
  std::vector<uint32_t> names;  // indices into TraceProfile::names, by time, descending
  uint64_t kernels = 0;
  int64_t time_ns = 0;
};

// Suggestion is what SuggestFamilies() found.
struct Suggestion {
  std::vector<SuggestedFamily> families;  // in rule order
  // The most families looked for: as asked, or fewer where the rule set's categories leave no
  // more room (kMaxCategories in all).
  size_t max_families = 0;
  // NameTotals counts distinct names, their kernels and their time.
  struct NameTotals {
    uint64_t names = 0;
    uint64_t kernels = 0;
    int64_t time_ns = 0;
  };
  NameTotals unclassified;  // in the rule set's default category
  NameTotals left;          // of those, in no family
};

// SuggestFamilies() groups the unclassified names of `profile` into at most `max_families`
// families, greedily: each step takes the literal that names the most unclassified time not yet
// in a family, and every such name that it matches forms the family. A literal is a word of the
// names' namespaces and identifiers (SplitWords; the words of template arguments only for a
// name without others; less the words that name no operation: C++ keywords and types, common
// namespaces, vendor library names, words under three letters) that occurs as a whole word in
// no classified name of the trace, so that the rule, placed before the rule set's own, takes no
// kernel from its categories; for a name without such a word, two of its words together that no
// classified name holds both of; failing that, a prefix of the name that starts no classified
// name. Each family gets a category named after its words in CamelCase, distinct (caselessly)
// from the rule set's categories and the other families'.
Suggestion SuggestFamilies(const TraceProfile& profile, size_t max_families);

struct SuggestOptions {
  size_t families = kDefaultSuggestedFamilies;
  // The rule set `profile` was classified with, as --ruleset named it: a built-in set's name or
  // a rule file's path (RuleSet::NamesBuiltin()).
  std::string ruleset = "tracefuse";
};

// SuggestRulesYaml() writes SuggestFamilies() as a rule file that `rules --check` accepts: a
// header comment (the trace, the rule set, how to check and use the file), `extends` (the
// built-in set in use, or the one the rule file in use extends: the rules are then to be merged
// into that file, as the header says), the new categories, and one rule per family with a
// comment above it (kernels, time, share of kernel time, up to three example names). With
// nothing unclassified the file says so and adds no rule.
std::string SuggestRulesYaml(const TraceProfile& profile, const SuggestOptions& options);

}  // namespace tracefuse

#endif  // TRACEFUSE_REPORT_SUGGEST_H_
