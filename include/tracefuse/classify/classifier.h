// Stage 4, library tracefuse_classify (after parse): kernel-name classification driven by rule
// sets.
//
// A rule set is data (YAML; the built-in ones live in data/rules/ and are embedded in the binary):
// ordered rules, each giving a category (and optionally a pattern label) to the names for which
// its predicate holds; the first matching rule wins, and a default closes the list. Predicates are
// literals (substring or prefix, caseless or not) and regular expressions combined with all / any /
// not, plus a platform test. The Classifier compiles every literal and regex of a rule set into
// one Hyperscan database, scans a name once to learn which of them match, then evaluates the rules
// over that bit set.
#ifndef TRACEFUSE_CLASSIFY_CLASSIFIER_H_
#define TRACEFUSE_CLASSIFY_CLASSIFIER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/parse/chunk_parser.h"
#include "tracefuse/parse/platform.h"

namespace tracefuse {

// CategoryId is a category's index in its rule set's categories(). A rule set has at most
// kMaxCategories categories, so that a category fits the byte that the analysis' per-kernel
// sequences spend on it.
using CategoryId = uint8_t;
inline constexpr size_t kMaxCategories = 256;

// CategoryIds(n) are the category ids 0 .. n-1, for range-for loops: a CategoryId loop counter
// would wrap around, and never end, with kMaxCategories categories.
class CategoryIds {
 public:
  class Iterator {
   public:
    explicit Iterator(size_t i) : i_(i) {}
    CategoryId operator*() const { return static_cast<CategoryId>(i_); }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return i_ != other.i_; }

   private:
    size_t i_;
  };

  explicit CategoryIds(size_t count) : count_(count) {}
  Iterator begin() const { return Iterator(0); }
  Iterator end() const { return Iterator(count_); }

 private:
  size_t count_;
};

// IsWordBoundary() tells whether position `i` of identifier `name` separates two words: at either
// end, next to a character that is not a letter (digits, '_', ':', '<' ...), at a lower-to-upper
// case change ("Conv|Fwd"), and before the last capital of a capitals run that starts a CamelCase
// word ("MIOpen|Conv" has one at "n|C", "HTTP|Server" at "P|S").
bool IsWordBoundary(std::string_view name, size_t i);

// ContainsWord() tells whether `word` (any case) occurs in `name` with a word boundary on both
// sides: "conv" is a word of "miopenSp3AsmConv_v21", "gcnAsmConv1x1U" and "conv2d_fwd", not of
// "convert_kernel".
bool ContainsWord(std::string_view name, std::string_view word);

// SplitWords() lists the words of `name`, lowercased, in order: the runs of letters between word
// boundaries.
std::vector<std::string> SplitWords(std::string_view name);

struct Predicate {
  // kWord is a literal that must occur as a whole word (ContainsWord), always caseless.
  enum class Kind : uint8_t { kContains, kPrefix, kRegex, kWord, kAll, kAny, kNot, kPlatform };
  Kind kind = Kind::kContains;
  std::string text;                        // literal, word or regex
  bool caseless = true;                    // for literals and regexes
  Platform platform = Platform::kUnknown;  // kPlatform
  std::vector<Predicate> children;         // kAll / kAny / kNot (one child)
  int line = 0;                            // line in the rule file, for messages
};

struct Rule {
  std::string category;
  std::string pattern;  // label template; "{name:N}" is the name's first N code points
  Predicate when;       // an empty kAll is always true
  // A fallback rule belongs to the last layer before the default: it runs after every specific
  // rule (those of a file that extends a set included), and reports mark what it classified.
  bool fallback = false;
  int line = 0;
};

class RuleSet {
 public:
  // Parses a rule file. `source` names it in error messages ("FILE:LINE: ..."). A file may
  // `extends:` a built-in set: its own rules then come first and take precedence.
  // `check_regexes` compiles each regex alone, so that a bad one is reported with its line (about
  // 5 ms on `tracefuse`); the built-in sets, whose databases the build compiles, skip it.
  static absl::StatusOr<std::shared_ptr<const RuleSet>> FromYaml(std::string_view text,
                                                                 const std::string& source,
                                                                 bool check_regexes = true);
  // A built-in set by name, or a rule file by path.
  static absl::StatusOr<std::shared_ptr<const RuleSet>> Load(const std::string& name_or_path);
  // NamesBuiltin() tells whether Load() takes `name_or_path` for a built-in set's name (no '/',
  // no .yaml or .yml) rather than for a rule file's path.
  static bool NamesBuiltin(std::string_view name_or_path);
  static std::vector<std::string> BuiltinNames();
  // BuiltinText() is a built-in set's rule file as embedded in the binary, "" for another name.
  static std::string_view BuiltinText(std::string_view name);

  // Serialize() writes the rule set as bytes that Deserialize() reads back as an equal set;
  // Deserialize() fails (DataLoss, naming `source`) on bytes that Serialize() did not write.
  std::string Serialize() const;
  static absl::StatusOr<std::shared_ptr<const RuleSet>> Deserialize(std::string_view bytes,
                                                                    const std::string& source);
  // precompiled() is true for a set read from bytes, such as a built-in set that the build read
  // (see PrecompiledRuleSet), false for one read from its rule file.
  bool precompiled() const { return precompiled_; }

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  // extends() is the built-in set this one extends (its `extends` key), "" when none.
  const std::string& extends() const { return extends_; }
  const std::vector<Rule>& rules() const { return rules_; }
  // default_rule() gives the category (and pattern) of names that no rule matches.
  const Rule& default_rule() const { return default_rule_; }
  // Every category, in declaration order (rules' categories added as first used).
  const std::vector<std::string>& categories() const { return categories_; }
  // category_index() is the index of `category` in categories(), nullopt when there is none.
  std::optional<CategoryId> category_index(std::string_view category) const;
  bool platform_dependent() const { return platform_dependent_; }

 private:
  class FileReader;  // reads a rule file's sections (classifier.cc)

  std::string name_;
  std::string description_;
  std::string extends_;
  std::vector<Rule> rules_;
  Rule default_rule_;
  std::vector<std::string> categories_;
  bool platform_dependent_ = false;
  bool precompiled_ = false;
};

// PrecompiledRuleSet is a built-in rule set read by the build and serialized
// (tools/compile_rules.cc): yaml-cpp takes about 4 ms to read `tracefuse`'s 20 KB rule file, as
// long as reading 7 MB of trace on two cores, so a run reads the bytes instead. `text` is the
// rule file they were read from; bytes for another text than the binary embeds are not used.
struct PrecompiledRuleSet {
  std::string_view name;
  std::string_view text;
  std::string_view bytes;
};

// Rule index in RuleSet::rules(), or rules().size() for the default rule.
using RuleId = uint16_t;

// PrecompiledDatabase is a Hyperscan database compiled and serialized at build time, for a
// built-in rule set (tools/compile_rules.cc): compiling `tracefuse`'s patterns takes about 30 ms,
// more than reading a 100 MB trace on two cores. `key` names the patterns and the Hyperscan
// version it was compiled from; a database that does not match, or that the CPU cannot run
// (hs_deserialize_database refuses it), is compiled at run time instead.
struct PrecompiledDatabase {
  std::string_view key;
  std::string_view bytes;
};

class Classifier {
 public:
  // Create() compiles `rules`, or takes their database from the build when
  // `use_precompiled` and the program links the generated rule databases.
  static absl::StatusOr<std::shared_ptr<const Classifier>> Create(
      std::shared_ptr<const RuleSet> rules, bool use_precompiled = true);
  ~Classifier();

  // Thread-safe; each thread uses its own Hyperscan scratch.
  RuleId Classify(std::string_view name, Platform platform) const;

  const RuleSet& rule_set() const { return *rules_; }
  CategoryId category_of(RuleId id) const { return rule_category_[id]; }
  const std::string& category_name(CategoryId category) const {
    return rules_->categories()[category];
  }
  // The rule's pattern label for `name` ("" when the rule has none).
  std::string Pattern(RuleId id, std::string_view name) const;
  // database_bytes() is the size of the compiled Hyperscan database (hs_database_size), 0 for a
  // rule set without literals or regexes: what `tracefuse bench classify` reports.
  size_t database_bytes() const;
  // precompiled() is true when the database came from the build (see PrecompiledDatabase).
  bool precompiled() const;
  // SerializedDatabase() is the database as hs_serialize_database writes it, with its key: what
  // the build embeds. Empty bytes for a rule set without patterns.
  std::pair<std::string, std::string> SerializedDatabase() const;

 private:
  struct Impl;
  explicit Classifier(std::shared_ptr<const RuleSet> rules);
  std::shared_ptr<const RuleSet> rules_;
  std::vector<CategoryId> rule_category_;
  std::unique_ptr<Impl> impl_;
};

// LoadClassifier() compiles a built-in rule set by name, or a rule file by path.
absl::StatusOr<std::shared_ptr<const Classifier>> LoadClassifier(const std::string& ruleset);

// CachedClassifier classifies names for one platform, remembering each name's rule: kernel names
// repeat across a trace's chunks, and a lookup costs less than a Hyperscan scan. One per thread.
class CachedClassifier {
 public:
  CachedClassifier(std::shared_ptr<const Classifier> classifier, Platform platform)
      : classifier_(std::move(classifier)), platform_(platform) {}

  RuleId Classify(std::string_view name);
  // ClassifyNames() sets `rules` to the rule of each distinct name of `chunk`, in name order.
  void ClassifyNames(const ParsedChunk& chunk, std::vector<RuleId>* rules);

  const Classifier& classifier() const { return *classifier_; }

  // Longer names are classified each time they occur, not cached: real kernel names stay far
  // below this, and a giant one (a corrupt trace) would otherwise be held once more per thread.
  static constexpr size_t kMaxCachedNameBytes = size_t{64} << 10;

 private:
  std::shared_ptr<const Classifier> classifier_;
  Platform platform_;
  StringMap<RuleId> rules_;
};

// LaunchingOpTable gives a kernel the category of the CPU operator that launched it, for kernels
// whose names say nothing (an anonymous `kernel` or `main_kernel`, hashed or stripped
// names) and which a rule set therefore leaves in its default category. It is data,
// data/launching-ops.yaml, embedded at build time and read on first use (yaml-cpp takes about a
// millisecond for it, which only a trace with such names pays). Rows are ordered: an op takes the
// first row that names it (`ops`) or a prefix of it (`prefixes`); nn.Module classes (`modules`)
// are a weaker hint, for a launch that no listed op encloses. docs/rules.md, "Classification by
// launching op", says how a kernel's op is found.
class LaunchingOpTable {
 public:
  // FromYaml() reads a table; errors are one line, "SOURCE:LINE: what".
  static absl::StatusOr<std::shared_ptr<const LaunchingOpTable>> FromYaml(
      std::string_view text, const std::string& source);
  // Builtin() is the embedded table.
  static std::shared_ptr<const LaunchingOpTable> Builtin();
  // BuiltinText() is the embedded table's file.
  static std::string_view BuiltinText();

  // CategoryOfOp() is the category of operator `name` as the profiler records it ("aten::mm"),
  // "" when no row matches.
  std::string_view CategoryOfOp(std::string_view name) const;
  // CategoryOfModule() is the category of nn.Module class `name` ("LayerNorm", without the
  // instance number), "" when no row matches.
  std::string_view CategoryOfModule(std::string_view name) const;
  // categories() lists the categories the rows give, each once, in row order.
  const std::vector<std::string>& categories() const { return categories_; }

 private:
  // Rows is one ordered list of rows: exact names and prefixes, each with its first row.
  struct Rows {
    StringMap<uint32_t> exact;
    std::vector<std::pair<std::string, uint32_t>> prefixes;  // in row order
    std::vector<std::string> category;                       // per row
    std::string_view Match(std::string_view name) const;
  };
  class FileReader;  // launching_ops.cc

  Rows ops_, modules_;
  std::vector<std::string> categories_;
};

// ClassifiesByLaunchingOp() tells whether the kernels that `rules` leaves in its default category
// are classified by their launching op: for the `tracefuse` set and rule files that extend it,
// whose categories the table uses; not for the reference's sets, whose reports reproduce the
// reference's.
bool ClassifiesByLaunchingOp(const RuleSet& rules);

// The first `n` code points of UTF-8 `s` (Python's s[:n]).
std::string_view Utf8Prefix(std::string_view s, size_t n);

// SubstringClassifier evaluates a rule set's rules one at a time, predicate by predicate, the way
// a hand-written classifier (and the Python reference) does: literals with std::string::find in
// a lowercased copy of the name, regexes with std::regex, words with ContainsWord(); literals
// are lowered and regexes compiled once, up front, each name lowered once per call. It is the
// yardstick against which `tracefuse bench classify` and bench/bench_classify measure
// Classifier, and, being a second implementation of the same rules, a check of it: both give
// the same rule for every name and platform (tested on every golden name). Thread-safe.
class SubstringClassifier {
 public:
  // Fails (InvalidArgument, naming the rule set and the regex's line) for a regex that Hyperscan
  // accepts but std::regex (ECMAScript) does not, such as "(?i)x".
  static absl::StatusOr<std::shared_ptr<const SubstringClassifier>> Create(
      std::shared_ptr<const RuleSet> rules);
  ~SubstringClassifier();

  RuleId Classify(std::string_view name, Platform platform) const;

  const RuleSet& rule_set() const { return *rules_; }

 private:
  struct Impl;
  explicit SubstringClassifier(std::shared_ptr<const RuleSet> rules);
  std::shared_ptr<const RuleSet> rules_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tracefuse

#endif  // TRACEFUSE_CLASSIFY_CLASSIFIER_H_
