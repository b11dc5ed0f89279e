#include "tracefuse/classify/classifier.h"

#include <hs/hs.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "classify/embedded_rules.h"
#include "fmt/ranges.h"
#include "oneapi/tbb/enumerable_thread_specific.h"
#include "tracefuse/base/strings.h"
#include "yaml-cpp/yaml.h"

namespace tracefuse {

std::string_view Utf8Prefix(std::string_view s, size_t n) {
  size_t i = 0, points = 0;
  while (i < s.size()) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (points == n) break;
      ++points;
    }
    ++i;
  }
  return s.substr(0, i);
}

namespace {

bool IsAsciiLetter(char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); }
bool IsUpper(char c) { return absl::ascii_isupper(static_cast<unsigned char>(c)); }
bool IsLower(char c) { return absl::ascii_islower(static_cast<unsigned char>(c)); }

}  // namespace

bool IsWordBoundary(std::string_view name, size_t i) {
  if (i == 0 || i >= name.size()) return true;
  const char before = name[i - 1], at = name[i];
  if (!IsAsciiLetter(before) || !IsAsciiLetter(at)) return true;
  if (IsLower(before) && IsUpper(at)) return true;
  return IsUpper(before) && IsUpper(at) && i + 1 < name.size() && IsLower(name[i + 1]);
}

bool ContainsWord(std::string_view name, std::string_view word) {
  if (word.empty() || word.size() > name.size()) return false;
  for (size_t i = 0; i + word.size() <= name.size(); ++i) {
    if (!IsWordBoundary(name, i) || !IsWordBoundary(name, i + word.size())) continue;
    bool equal = true;
    for (size_t j = 0; j < word.size() && equal; ++j)
      equal = absl::ascii_tolower(static_cast<unsigned char>(name[i + j])) ==
              absl::ascii_tolower(static_cast<unsigned char>(word[j]));
    if (equal) return true;
  }
  return false;
}

std::vector<std::string> SplitWords(std::string_view name) {
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t i = 1; i <= name.size(); ++i) {
    if (!IsWordBoundary(name, i)) continue;
    if (IsAsciiLetter(name[start])) {
      words.push_back(AsciiLower(name.substr(start, i - start)));
    }
    start = i;
  }
  return words;
}

// ---------------------------------------------------------------------------------------------
// Rule files

namespace {

class RuleFileError {
 public:
  RuleFileError(std::string source) : source_(std::move(source)) {}
  absl::Status At(const YAML::Node& node, std::string_view what) const {
    return AtLine(node.Mark().line + 1, what);
  }
  absl::Status AtLine(int line, std::string_view what) const {
    return absl::InvalidArgumentError(StrCat(source_, ":", line, ": ", EscapedControls(what)));
  }

 private:
  std::string source_;
};

constexpr std::string_view kPredicateKeys[] = {"contains", "prefix", "regex", "words",
                                               "all",      "any",    "not",   "platform"};

bool IsPredicateKey(std::string_view k) {
  for (auto p : kPredicateKeys)
    if (p == k) return true;
  return false;
}

struct PredicateParser {
  const RuleFileError& err;
  bool default_caseless;
  bool* platform_dependent;

  absl::Status ParseCase(const YAML::Node& map, bool* caseless) {
    *caseless = default_caseless;
    if (!map["case"]) return absl::OkStatus();
    std::string c = map["case"].as<std::string>();
    if (c == "sensitive") {
      *caseless = false;
    } else if (c == "insensitive") {
      *caseless = true;
    } else {
      return err.At(map["case"],
                    StrCat("case must be 'sensitive' or 'insensitive', not '", c, "'"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseOne(const YAML::Node& map, const std::string& key, bool caseless,
                        Predicate* out) {
    const YAML::Node& v = map[key];
    out->line = v.Mark().line + 1;
    out->caseless = caseless;
    if (key == "contains" || key == "prefix" || key == "regex") {
      if (!v.IsScalar()) return err.At(v, StrCat("'", key, "' takes a string"));
      out->kind = key == "contains" ? Predicate::Kind::kContains
                  : key == "prefix" ? Predicate::Kind::kPrefix
                                    : Predicate::Kind::kRegex;
      out->text = v.as<std::string>();
      if (out->text.empty()) return err.At(v, StrCat("empty '", key, "' string"));
      return absl::OkStatus();
    }
    if (key == "words") return ParseWords(v, out);
    if (key == "platform") {
      const std::string p = AsciiLower(v.as<std::string>());
      out->kind = Predicate::Kind::kPlatform;
      if (p == "amd") {
        out->platform = Platform::kAmd;
      } else if (p == "nvidia") {
        out->platform = Platform::kNvidia;
      } else {
        return err.At(v, StrCat("platform must be 'amd' or 'nvidia', not '", p, "'"));
      }
      *platform_dependent = true;
      return absl::OkStatus();
    }
    if (key == "not") {
      out->kind = Predicate::Kind::kNot;
      out->children.emplace_back();
      return Parse(v, &out->children.back());
    }
    out->kind = key == "all" ? Predicate::Kind::kAll : Predicate::Kind::kAny;
    if (!v.IsSequence()) return err.At(v, StrCat("'", key, "' takes a list of predicates"));
    for (const auto& item : v) {
      out->children.emplace_back();
      absl::Status s = Parse(item, &out->children.back());
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // `words` takes one word or a list of them (any of which may match): letters only, since a
  // word is a run of letters between word boundaries.
  absl::Status ParseWords(const YAML::Node& v, Predicate* out) {
    std::vector<std::string> words;
    if (v.IsScalar()) {
      words.push_back(v.as<std::string>());
    } else if (v.IsSequence()) {
      for (const auto& w : v) words.push_back(w.as<std::string>());
    } else {
      return err.At(v, "'words' takes a word or a list of words");
    }
    if (words.empty()) return err.At(v, "empty 'words' list");
    out->kind = words.size() == 1 ? Predicate::Kind::kWord : Predicate::Kind::kAny;
    for (const std::string& w : words) {
      if (w.empty() || !std::all_of(w.begin(), w.end(), IsAsciiLetter)) {
        return err.At(v, StrCat("'", w, "' is not a word (letters only)"));
      }
      Predicate word;
      word.kind = Predicate::Kind::kWord;
      word.text = w;
      word.line = out->line;
      if (words.size() == 1) {
        *out = std::move(word);
      } else {
        out->children.push_back(std::move(word));
      }
    }
    return absl::OkStatus();
  }

  // A string is a `contains` literal; a map holds predicate keys (several are ANDed), an
  // optional `case`, and, when `allowed_extra` lists them, rule keys.
  absl::Status ParseMap(const YAML::Node& node, Predicate* out,
                        const std::vector<std::string_view>& allowed_extra = {}) {
    bool caseless;
    absl::Status s = ParseCase(node, &caseless);
    if (!s.ok()) return s;
    std::vector<Predicate> parts;
    for (const auto& kv : node) {
      std::string key = kv.first.as<std::string>();
      if (key == "case") continue;
      bool extra = false;
      for (auto e : allowed_extra) extra |= (e == key);
      if (extra) continue;
      if (!IsPredicateKey(key)) return err.At(kv.first, StrCat("unknown key '", key, "'"));
      parts.emplace_back();
      s = ParseOne(node, key, caseless, &parts.back());
      if (!s.ok()) return s;
    }
    if (parts.size() == 1) {
      *out = std::move(parts.front());
    } else {
      out->kind = Predicate::Kind::kAll;
      out->line = node.Mark().line + 1;
      out->children = std::move(parts);
    }
    return absl::OkStatus();
  }

  absl::Status Parse(const YAML::Node& node, Predicate* out) {
    if (node.IsScalar()) {
      out->kind = Predicate::Kind::kContains;
      out->text = node.as<std::string>();
      out->caseless = default_caseless;
      out->line = node.Mark().line + 1;
      if (out->text.empty()) return err.At(node, "empty literal");
      return absl::OkStatus();
    }
    if (!node.IsMap()) return err.At(node, "a predicate is a string or a map");
    if (node.size() == 0) return err.At(node, "empty predicate");
    return ParseMap(node, out);
  }
};

}  // namespace

// The built-in rule sets as the build read them: defined by the generated rule_databases.cc that
// the tracefuse executables link (weak: absent from the build tool that writes it, and from tests
// that do not link it).
extern const PrecompiledRuleSet kPrecompiledRuleSets[] __attribute__((weak));
extern const size_t kPrecompiledRuleSetCount __attribute__((weak));

namespace {

// PrecompiledBuiltin() is the build's reading of the built-in set `name` from `text`, if any.
std::shared_ptr<const RuleSet> PrecompiledBuiltin(std::string_view name, std::string_view text) {
  if (&kPrecompiledRuleSetCount == nullptr) return nullptr;
  for (size_t i = 0; i < kPrecompiledRuleSetCount; ++i) {
    const PrecompiledRuleSet& p = kPrecompiledRuleSets[i];
    if (p.name != name || p.text != text) continue;
    absl::StatusOr<std::shared_ptr<const RuleSet>> set =
        RuleSet::Deserialize(p.bytes, std::string(name));
    if (set.ok()) return *set;
  }
  return nullptr;
}

absl::StatusOr<std::shared_ptr<const RuleSet>> LoadBuiltin(std::string_view name) {
  const std::string_view text = RuleSet::BuiltinText(name);
  if (!text.empty()) {
    if (std::shared_ptr<const RuleSet> set = PrecompiledBuiltin(name, text)) return set;
    return RuleSet::FromYaml(text, StrCat("data/rules/", name, ".yaml"), /*check_regexes=*/false);
  }
  return absl::NotFoundError(StrCat(
      "unknown rule set '", name,
      "' (built-in sets: ", fmt::format("{}", fmt::join(RuleSet::BuiltinNames(), ", ")), ")"));
}

}  // namespace

std::string_view RuleSet::BuiltinText(std::string_view name) {
  for (size_t i = 0; i < kEmbeddedRuleCount; ++i) {
    if (kEmbeddedRules[i].name == name) return kEmbeddedRules[i].text;
  }
  return {};
}

std::vector<std::string> RuleSet::BuiltinNames() {
  std::vector<std::string> names;
  for (size_t i = 0; i < kEmbeddedRuleCount; ++i) names.emplace_back(kEmbeddedRules[i].name);
  return names;
}

std::optional<CategoryId> RuleSet::category_index(std::string_view category) const {
  auto it = std::find(categories_.begin(), categories_.end(), category);
  if (it == categories_.end()) return std::nullopt;
  return static_cast<CategoryId>(it - categories_.begin());
}

bool RuleSet::NamesBuiltin(std::string_view name_or_path) {
  return name_or_path.find('/') == std::string::npos &&
         name_or_path.find(".yaml") == std::string::npos &&
         name_or_path.find(".yml") == std::string::npos;
}

absl::StatusOr<std::shared_ptr<const RuleSet>> RuleSet::Load(const std::string& name_or_path) {
  if (NamesBuiltin(name_or_path)) return LoadBuiltin(name_or_path);
  std::ifstream in(name_or_path);
  if (!in) return absl::NotFoundError(StrCat(name_or_path, ": cannot open rule file"));
  std::stringstream text;
  text << in.rdbuf();
  return FromYaml(text.str(), name_or_path);
}

// RuleSet::FileReader turns a parsed rule file into a RuleSet, one section at a time. yaml-cpp
// throws on type mismatches (a list where a string belongs): FromYaml turns those into errors
// with their line.
class RuleSet::FileReader {
 public:
  FileReader(const RuleFileError& err, RuleSet* set) : err_(err), set_(set) {}

  absl::Status Read(const YAML::Node& root, const std::string& source) {
    absl::Status st = CheckTopKeys(root);
    if (st.ok()) st = ReadHeader(root, source);
    if (st.ok()) st = ReadCategories(root);
    if (st.ok()) st = ReadRules(root);
    if (st.ok()) st = ReadDefault(root);
    return st;
  }

 private:
  absl::Status CheckTopKeys(const YAML::Node& root) const {
    static const absl::flat_hash_set<std::string, StringHash, StringEq> kTopKeys = {
        "name", "description", "extends", "caseless", "categories", "default", "rules"};
    for (const auto& kv : root) {
      std::string key = kv.first.as<std::string>();
      if (!kTopKeys.contains(key)) return err_.At(kv.first, StrCat("unknown key '", key, "'"));
    }
    return absl::OkStatus();
  }

  // ReadHeader() reads the name, description, default case and the base set, whose categories
  // come first.
  absl::Status ReadHeader(const YAML::Node& root, const std::string& source) {
    set_->name_ = root["name"] ? root["name"].as<std::string>() : source;
    if (root["description"]) set_->description_ = root["description"].as<std::string>();
    caseless_ = root["caseless"] ? root["caseless"].as<bool>() : true;
    if (!root["extends"]) return absl::OkStatus();
    set_->extends_ = root["extends"].as<std::string>();
    absl::StatusOr<std::shared_ptr<const RuleSet>> base = LoadBuiltin(set_->extends_);
    if (!base.ok()) return err_.At(root["extends"], std::string(base.status().message()));
    base_ = *base;
    set_->categories_ = base_->categories_;
    return absl::OkStatus();
  }

  absl::Status ReadCategories(const YAML::Node& root) {
    if (!root["categories"]) return absl::OkStatus();
    absl::flat_hash_set<std::string, StringHash, StringEq> seen;
    for (const auto& c : root["categories"]) {
      std::string name = c.as<std::string>();
      if (!seen.insert(name).second) return err_.At(c, StrCat("duplicate category '", name, "'"));
      if (base_ && Has(base_->categories_, name)) {
        return err_.At(c,
                       StrCat("category '", name, "' is already defined by '", base_->name(), "'"));
      }
      AddCategory(name);
    }
    return absl::OkStatus();
  }

  // ReadRules() reads this file's rules and merges them with the base set's, layer by layer: a
  // file's own rules take precedence within a layer, and every specific rule comes before every
  // fallback rule.
  absl::Status ReadRules(const YAML::Node& root) {
    PredicateParser predicates{err_, caseless_, &set_->platform_dependent_};
    std::vector<Rule> own;
    if (root["rules"]) {
      if (!root["rules"].IsSequence()) return err_.At(root["rules"], "'rules' is a list");
      for (const auto& node : root["rules"]) {
        Rule rule;
        absl::Status st = ReadRule(node, &predicates, &rule);
        if (!st.ok()) return st;
        if (!rule.fallback && !own.empty() && own.back().fallback) {
          return err_.At(node, "a specific rule after a fallback rule (fallback rules come last)");
        }
        AddCategory(rule.category);
        own.push_back(std::move(rule));
      }
    }
    std::vector<Rule> base = base_ ? base_->rules_ : std::vector<Rule>();
    if (base_) set_->platform_dependent_ |= base_->platform_dependent_;
    for (bool fallback : {false, true}) {
      for (std::vector<Rule>* layer : {&own, &base})
        for (Rule& r : *layer)
          if (r.fallback == fallback) set_->rules_.push_back(std::move(r));
    }
    return absl::OkStatus();
  }

  absl::Status ReadRule(const YAML::Node& r, PredicateParser* predicates, Rule* rule) const {
    if (!r.IsMap()) return err_.At(r, "a rule is a map with 'category' and predicates");
    rule->line = r.Mark().line + 1;
    if (!r["category"]) return err_.At(r, "rule without 'category'");
    rule->category = r["category"].as<std::string>();
    if (rule->category.empty()) return err_.At(r["category"], "empty category");
    if (r["pattern"]) rule->pattern = r["pattern"].as<std::string>();
    if (r["fallback"]) rule->fallback = r["fallback"].as<bool>();
    bool has_predicate = false;
    for (const auto& kv : r) has_predicate |= IsPredicateKey(kv.first.as<std::string>());
    if (!has_predicate) return err_.At(r, "rule without a predicate");
    return predicates->ParseMap(r, &rule->when, {"category", "pattern", "description", "fallback"});
  }

  // ReadDefault() sets the default rule: the file's `default`, else the base set's, else Other.
  absl::Status ReadDefault(const YAML::Node& root) {
    set_->default_rule_.category = "Other";
    if (base_) set_->default_rule_ = base_->default_rule_;
    if (const YAML::Node& d = root["default"]) {
      if (!d.IsMap() || !d["category"]) return err_.At(d, "'default' is a map with 'category'");
      set_->default_rule_.category = d["category"].as<std::string>();
      set_->default_rule_.pattern = d["pattern"] ? d["pattern"].as<std::string>() : "";
      set_->default_rule_.line = d.Mark().line + 1;
    }
    AddCategory(set_->default_rule_.category);
    return absl::OkStatus();
  }

  static bool Has(const std::vector<std::string>& categories, const std::string& c) {
    return std::find(categories.begin(), categories.end(), c) != categories.end();
  }
  // Categories are counted before the kMaxCategories check: no CategoryId is taken yet.
  void AddCategory(const std::string& c) {
    if (!Has(set_->categories_, c)) set_->categories_.push_back(c);
  }

  const RuleFileError& err_;
  RuleSet* set_;
  bool caseless_ = true;
  std::shared_ptr<const RuleSet> base_;
};

namespace {

// CheckRegexes() compiles each regex alone, so that an error names its line (the classifier's
// one multi-pattern database could only name the rule set).
absl::Status CheckRegexes(const RuleSet& set, const RuleFileError& err) {
  std::vector<const Predicate*> stack;
  for (const Rule& r : set.rules()) stack.push_back(&r.when);
  while (!stack.empty()) {
    const Predicate* p = stack.back();
    stack.pop_back();
    for (const Predicate& c : p->children) stack.push_back(&c);
    if (p->kind != Predicate::Kind::kRegex) continue;
    hs_database_t* db = nullptr;
    hs_compile_error_t* compile_error = nullptr;
    if (hs_compile(p->text.c_str(), p->caseless ? HS_FLAG_CASELESS : 0, HS_MODE_BLOCK, nullptr, &db,
                   &compile_error) != HS_SUCCESS) {
      std::string msg = StrCat("bad regex '", p->text,
                               "': ", compile_error ? compile_error->message : "compile error");
      hs_free_compile_error(compile_error);
      return err.AtLine(p->line, msg);
    }
    hs_free_database(db);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const RuleSet>> RuleSet::FromYaml(std::string_view text,
                                                                 const std::string& source,
                                                                 bool check_regexes) {
  RuleFileError err(source);
  YAML::Node root;
  auto set = std::make_shared<RuleSet>();
  try {
    root = YAML::Load(std::string(text));
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(StrCat(source, ": a rule file is a YAML map"));
    }
    absl::Status read = FileReader(err, set.get()).Read(root, source);
    if (!read.ok()) return read;
  } catch (const YAML::Exception& e) {
    return err.AtLine(e.mark.line + 1, e.msg);
  }
  if (set->rules_.size() >= UINT16_MAX) {
    return absl::InvalidArgumentError(StrCat(source, ": too many rules"));
  }
  if (set->categories_.size() > kMaxCategories) {
    return absl::InvalidArgumentError(StrCat(source, ": too many categories (",
                                             set->categories_.size(), "; at most ", kMaxCategories,
                                             ")"));
  }
  if (check_regexes) {
    absl::Status regexes = CheckRegexes(*set, err);
    if (!regexes.ok()) return regexes;
  }
  return std::shared_ptr<const RuleSet>(std::move(set));
}

// ---------------------------------------------------------------------------------------------
// Classifier

namespace {

// Predicates flattened into one array, leaves pointing at Hyperscan pattern ids.
struct Node {
  Predicate::Kind kind;
  uint32_t value;  // pattern id (leaves) or Platform
  uint32_t first_child;
  uint32_t child_count;
};

std::string EscapeLiteral(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
    }
  }
  return out;
}

// Patterns collects the Hyperscan expressions of a rule set, one per distinct literal, word or
// regex (with its flags). A word is scanned as a caseless literal reported at every occurrence;
// the scan's callback keeps the occurrences with a word boundary on both sides.
struct Patterns {
  std::vector<std::string> expressions;
  std::vector<unsigned> flags;
  std::vector<uint32_t> word_length;  // 0 for patterns that are not words
  StringMap<uint32_t> ids;            // flags + kind + "/" + expression -> index

  uint32_t Id(const Predicate& p) {
    const bool word = p.kind == Predicate::Kind::kWord;
    std::string expr = p.kind == Predicate::Kind::kRegex    ? p.text
                       : p.kind == Predicate::Kind::kPrefix ? "^" + EscapeLiteral(p.text)
                                                            : EscapeLiteral(p.text);
    unsigned f =
        word ? HS_FLAG_CASELESS : HS_FLAG_SINGLEMATCH | (p.caseless ? HS_FLAG_CASELESS : 0);
    auto [it, inserted] = ids.try_emplace(StrCat(f, word ? "w/" : "/", expr), expressions.size());
    if (inserted) {
      expressions.push_back(std::move(expr));
      flags.push_back(f);
      word_length.push_back(word ? static_cast<uint32_t>(p.text.size()) : 0);
    }
    return it->second;
  }
};

// ScanContext is what the Hyperscan callback sees of one scan.
struct ScanContext {
  uint64_t* bits;
  std::vector<uint32_t>* matched;  // the ids whose bit the scan set, in match order
  std::string_view name;
  const uint32_t* word_length;
};

int OnMatch(unsigned id, unsigned long long, unsigned long long to, unsigned, void* ctx) {
  ScanContext& scan = *static_cast<ScanContext*>(ctx);
  const uint32_t length = scan.word_length[id];
  if (length != 0 && !(IsWordBoundary(scan.name, to - length) && IsWordBoundary(scan.name, to))) {
    return 0;
  }
  uint64_t& word = scan.bits[id >> 6];
  const uint64_t bit = uint64_t{1} << (id & 63);
  if (!(word & bit)) scan.matched->push_back(id);
  word |= bit;
  return 0;
}

}  // namespace

// The databases of the built-in rule sets, compiled at build time: defined by the generated
// rule_databases.cc that the tracefuse executables link (weak: absent from the build tool that
// writes it, and from tests that do not link it).
extern const PrecompiledDatabase kPrecompiledDatabases[] __attribute__((weak));
extern const size_t kPrecompiledDatabaseCount __attribute__((weak));

namespace {

// DatabaseKey() names a database by what it is compiled from.
std::string DatabaseKey(const Patterns& patterns) {
  std::string key = StrCat("hyperscan ", hs_version(), "\n");
  for (size_t i = 0; i < patterns.expressions.size(); ++i) {
    absl::StrAppend(&key, patterns.flags[i], " ", patterns.expressions[i], "\n");
  }
  return key;
}

// Precompiled() deserializes the build's database for `key`; nullptr when there is none or the
// CPU cannot run it.
hs_database_t* Precompiled(const std::string& key) {
  if (&kPrecompiledDatabaseCount == nullptr) return nullptr;
  for (size_t i = 0; i < kPrecompiledDatabaseCount; ++i) {
    const PrecompiledDatabase& d = kPrecompiledDatabases[i];
    if (d.key != key) continue;
    hs_database_t* db = nullptr;
    if (hs_deserialize_database(d.bytes.data(), d.bytes.size(), &db) == HS_SUCCESS) return db;
  }
  return nullptr;
}

}  // namespace

struct Classifier::Impl {
  hs_database_t* db = nullptr;
  bool precompiled = false;
  std::string key;  // DatabaseKey()
  hs_scratch_t* prototype = nullptr;
  size_t words = 0;
  std::vector<Node> nodes;
  std::vector<uint32_t> children;  // node indices
  std::vector<uint32_t> rule_roots;
  std::vector<uint32_t> word_length;  // per pattern id (Patterns::word_length)
  // Performance: a name matches a handful of a rule set's hundreds of patterns, and a rule none
  // of whose patterns matched is as true as it is on no match at all. So Classify() evaluates
  // only the rules of the patterns that matched (pattern_rules) and those true on no match
  // (unmatched_rules, per platform), in rule order, instead of every rule: 2x on `tracefuse`.
  std::vector<std::vector<uint32_t>> pattern_rules;  // per pattern id, ascending
  std::vector<uint32_t> unmatched_rules[kPlatformCount];

  struct ThreadState {
    hs_scratch_t* scratch = nullptr;
    std::vector<uint64_t> bits;
    std::vector<uint32_t> matched;     // pattern ids
    std::vector<uint32_t> candidates;  // rule indices
    ~ThreadState() {
      if (scratch) hs_free_scratch(scratch);
    }
  };
  mutable std::unique_ptr<tbb::enumerable_thread_specific<ThreadState>> states;

  uint32_t Flatten(const Predicate& p, Patterns* patterns);
  void IndexRules(size_t pattern_count);
  uint32_t FirstTrueRule(ThreadState* state, Platform platform) const;
  absl::Status Compile(const Patterns& patterns, const std::string& set_name, bool use_precompiled);

  ~Impl() {
    states.reset();
    if (prototype) hs_free_scratch(prototype);
    if (db) hs_free_database(db);
  }

  bool Eval(uint32_t index, const uint64_t* bits, Platform platform) const {
    const Node& n = nodes[index];
    switch (n.kind) {
      case Predicate::Kind::kContains:
      case Predicate::Kind::kPrefix:
      case Predicate::Kind::kRegex:
      case Predicate::Kind::kWord:
        return (bits[n.value >> 6] >> (n.value & 63)) & 1;
      case Predicate::Kind::kPlatform:
        return static_cast<uint32_t>(platform) == n.value;
      case Predicate::Kind::kNot:
        return !Eval(children[n.first_child], bits, platform);
      case Predicate::Kind::kAll:
        for (uint32_t i = 0; i < n.child_count; ++i)
          if (!Eval(children[n.first_child + i], bits, platform)) return false;
        return true;
      case Predicate::Kind::kAny:
        for (uint32_t i = 0; i < n.child_count; ++i)
          if (Eval(children[n.first_child + i], bits, platform)) return true;
        return false;
    }
    return false;
  }
};

Classifier::Classifier(std::shared_ptr<const RuleSet> rules)
    : rules_(std::move(rules)), impl_(std::make_unique<Impl>()) {}
Classifier::~Classifier() = default;

// Impl::Flatten() lays predicate `p` out in `nodes`, its children after it, and gives each
// literal or regex leaf the id of its Hyperscan pattern (shared by equal patterns).
uint32_t Classifier::Impl::Flatten(const Predicate& p, Patterns* patterns) {
  const uint32_t index = static_cast<uint32_t>(nodes.size());
  nodes.push_back(Node{p.kind, 0, 0, 0});
  switch (p.kind) {
    case Predicate::Kind::kContains:
    case Predicate::Kind::kPrefix:
    case Predicate::Kind::kRegex:
    case Predicate::Kind::kWord:
      nodes[index].value = patterns->Id(p);
      break;
    case Predicate::Kind::kPlatform:
      nodes[index].value = static_cast<uint32_t>(p.platform);
      break;
    default: {
      std::vector<uint32_t> kids;
      for (const Predicate& child : p.children) kids.push_back(Flatten(child, patterns));
      nodes[index].first_child = static_cast<uint32_t>(children.size());
      nodes[index].child_count = static_cast<uint32_t>(kids.size());
      children.insert(children.end(), kids.begin(), kids.end());
    }
  }
  return index;
}

// Impl::Compile() builds the one multi-pattern database and the scratch each thread clones.
absl::Status Classifier::Impl::Compile(const Patterns& patterns, const std::string& set_name,
                                       bool use_precompiled) {
  words = (patterns.expressions.size() + 63) / 64;
  word_length = patterns.word_length;
  if (!patterns.expressions.empty()) {
    std::vector<const char*> exprs;
    std::vector<unsigned> ids;
    for (size_t i = 0; i < patterns.expressions.size(); ++i) {
      exprs.push_back(patterns.expressions[i].c_str());
      ids.push_back(static_cast<unsigned>(i));
    }
    hs_compile_error_t* compile_error = nullptr;
    key = DatabaseKey(patterns);
    if (use_precompiled && (db = Precompiled(key)) != nullptr) {
      precompiled = true;
    } else if (hs_compile_multi(exprs.data(), patterns.flags.data(), ids.data(),
                                static_cast<unsigned>(exprs.size()), HS_MODE_BLOCK, nullptr, &db,
                                &compile_error) != HS_SUCCESS) {
      std::string msg = StrCat("rule set '", set_name, "': Hyperscan compile failed: ",
                               compile_error ? compile_error->message : "unknown error");
      hs_free_compile_error(compile_error);
      return absl::InvalidArgumentError(msg);
    }
    if (hs_alloc_scratch(db, &prototype) != HS_SUCCESS) {
      return absl::ResourceExhaustedError("cannot allocate Hyperscan scratch");
    }
  }
  states = std::make_unique<tbb::enumerable_thread_specific<ThreadState>>([this] {
    ThreadState s;
    if (prototype) hs_clone_scratch(prototype, &s.scratch);
    s.bits.assign(std::max<size_t>(words, 1), 0);
    return s;
  });
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const Classifier>> Classifier::Create(
    std::shared_ptr<const RuleSet> rules, bool use_precompiled) {
  std::shared_ptr<Classifier> c(new Classifier(std::move(rules)));
  const RuleSet& set = *c->rules_;
  Patterns patterns;
  for (const Rule& r : set.rules()) {
    c->impl_->rule_roots.push_back(c->impl_->Flatten(r.when, &patterns));
    c->rule_category_.push_back(*set.category_index(r.category));
  }
  c->rule_category_.push_back(*set.category_index(set.default_rule().category));
  c->impl_->IndexRules(patterns.expressions.size());
  absl::Status compiled = c->impl_->Compile(patterns, set.name(), use_precompiled);
  if (!compiled.ok()) return compiled;
  return std::shared_ptr<const Classifier>(std::move(c));
}

bool Classifier::precompiled() const { return impl_->precompiled; }

std::pair<std::string, std::string> Classifier::SerializedDatabase() const {
  if (impl_->db == nullptr) return {impl_->key, ""};
  char* bytes = nullptr;
  size_t length = 0;
  if (hs_serialize_database(impl_->db, &bytes, &length) != HS_SUCCESS) throw std::bad_alloc();
  std::string out(bytes, length);
  std::free(bytes);
  return {impl_->key, std::move(out)};
}

absl::StatusOr<std::shared_ptr<const Classifier>> LoadClassifier(const std::string& ruleset) {
  absl::StatusOr<std::shared_ptr<const RuleSet>> rules = RuleSet::Load(ruleset);
  if (!rules.ok()) return rules.status();
  return Classifier::Create(*rules);
}

// Impl::IndexRules() lists the rules each pattern appears in, and the rules true when no pattern
// matches, for each platform.
void Classifier::Impl::IndexRules(size_t pattern_count) {
  pattern_rules.assign(pattern_count, {});
  const std::vector<uint64_t> none((pattern_count + 63) / 64 + 1, 0);
  for (uint32_t rule = 0; rule < rule_roots.size(); ++rule) {
    std::vector<uint32_t> stack = {rule_roots[rule]};
    while (!stack.empty()) {
      const Node& n = nodes[stack.back()];
      stack.pop_back();
      if (n.kind == Predicate::Kind::kPlatform) continue;
      if (n.child_count == 0 && n.kind != Predicate::Kind::kAll &&
          n.kind != Predicate::Kind::kAny) {
        std::vector<uint32_t>& rules = pattern_rules[n.value];
        if (rules.empty() || rules.back() != rule) rules.push_back(rule);
        continue;
      }
      for (uint32_t i = 0; i < n.child_count; ++i) stack.push_back(children[n.first_child + i]);
    }
    for (size_t platform = 0; platform < kPlatformCount; ++platform) {
      if (Eval(rule_roots[rule], none.data(), static_cast<Platform>(platform)))
        unmatched_rules[platform].push_back(rule);
    }
  }
}

// Impl::FirstTrueRule() evaluates, in rule order, the rules that can hold given the patterns in
// `state->matched`, and returns the first true one (rule_roots.size() when none is).
uint32_t Classifier::Impl::FirstTrueRule(ThreadState* state, Platform platform) const {
  std::vector<uint32_t>& candidates = state->candidates;
  candidates = unmatched_rules[static_cast<size_t>(platform)];
  for (uint32_t id : state->matched)
    candidates.insert(candidates.end(), pattern_rules[id].begin(), pattern_rules[id].end());
  std::sort(candidates.begin(), candidates.end());
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i > 0 && candidates[i] == candidates[i - 1]) continue;
    if (Eval(rule_roots[candidates[i]], state->bits.data(), platform)) return candidates[i];
  }
  return static_cast<uint32_t>(rule_roots.size());
}

RuleId Classifier::Classify(std::string_view name, Platform platform) const {
  const Impl& im = *impl_;
  Impl::ThreadState& state = im.states->local();
  state.matched.clear();
  if (im.db != nullptr) {
    ScanContext scan{state.bits.data(), &state.matched, name, im.word_length.data()};
    hs_scan(im.db, name.data(), static_cast<unsigned>(name.size()), 0, state.scratch, OnMatch,
            &scan);
  }
  const RuleId rule = static_cast<RuleId>(im.FirstTrueRule(&state, platform));
  for (uint32_t id : state.matched) state.bits[id >> 6] = 0;  // ready for the next name
  return rule;
}

RuleId CachedClassifier::Classify(std::string_view name) {
  if (name.size() > kMaxCachedNameBytes) return classifier_->Classify(name, platform_);
  auto it = rules_.find(name);
  if (it == rules_.end()) {
    it = rules_.emplace(std::string(name), classifier_->Classify(name, platform_)).first;
  }
  return it->second;
}

void CachedClassifier::ClassifyNames(const ParsedChunk& chunk, std::vector<RuleId>* rules) {
  rules->resize(chunk.name_count());
  for (size_t i = 0; i < chunk.name_count(); ++i) (*rules)[i] = Classify(chunk.name(i));
}

size_t Classifier::database_bytes() const {
  size_t bytes = 0;
  if (impl_->db != nullptr && hs_database_size(impl_->db, &bytes) != HS_SUCCESS) return 0;
  return bytes;
}

std::string Classifier::Pattern(RuleId id, std::string_view name) const {
  const std::string& tmpl =
      id < rules_->rules().size() ? rules_->rules()[id].pattern : rules_->default_rule().pattern;
  std::string out;
  size_t i = 0;
  while (i < tmpl.size()) {
    size_t open = tmpl.find("{name", i);
    if (open == std::string::npos) break;
    size_t close = tmpl.find('}', open);
    if (close == std::string::npos) break;
    out.append(tmpl, i, open - i);
    std::string_view spec = std::string_view(tmpl).substr(open + 5, close - open - 5);
    if (spec.empty()) {
      out.append(name);
    } else if (spec[0] == ':') {
      size_t n = std::strtoul(std::string(spec.substr(1)).c_str(), nullptr, 10);
      out.append(Utf8Prefix(name, n));
    } else {
      out.append(tmpl, open, close - open + 1);
    }
    i = close + 1;
  }
  out.append(tmpl, i, std::string::npos);
  return out;
}

// ---------------------------------------------------------------------------------------------
// SubstringClassifier

// Impl holds what is prepared up front, per predicate: its literal (lowered when caseless) or
// its compiled regex. Looked up by the predicate's address, as a hand-written classifier keeping
// its own tables would.
struct SubstringClassifier::Impl {
  std::map<const Predicate*, std::string> literal;
  std::map<const Predicate*, std::regex> regex;

  bool Eval(const Predicate& p, std::string_view name, std::string_view lower,
            Platform platform) const {
    const std::string_view hay = p.caseless ? lower : name;
    switch (p.kind) {
      case Predicate::Kind::kContains:
        return hay.find(literal.at(&p)) != std::string_view::npos;
      case Predicate::Kind::kPrefix:
        return hay.compare(0, literal.at(&p).size(), literal.at(&p)) == 0;
      case Predicate::Kind::kRegex:
        return std::regex_search(name.begin(), name.end(), regex.at(&p));
      case Predicate::Kind::kWord:
        return ContainsWord(name, p.text);
      case Predicate::Kind::kPlatform:
        return p.platform == platform;
      case Predicate::Kind::kNot:
        return !Eval(p.children[0], name, lower, platform);
      case Predicate::Kind::kAll:
        return std::all_of(p.children.begin(), p.children.end(),
                           [&](const Predicate& c) { return Eval(c, name, lower, platform); });
      case Predicate::Kind::kAny:
        return std::any_of(p.children.begin(), p.children.end(),
                           [&](const Predicate& c) { return Eval(c, name, lower, platform); });
    }
    return false;
  }
};

SubstringClassifier::SubstringClassifier(std::shared_ptr<const RuleSet> rules)
    : rules_(std::move(rules)), impl_(std::make_unique<Impl>()) {}
SubstringClassifier::~SubstringClassifier() = default;

absl::StatusOr<std::shared_ptr<const SubstringClassifier>> SubstringClassifier::Create(
    std::shared_ptr<const RuleSet> rules) {
  std::shared_ptr<SubstringClassifier> c(new SubstringClassifier(std::move(rules)));
  std::vector<const Predicate*> stack;
  for (const Rule& r : c->rules_->rules()) stack.push_back(&r.when);
  while (!stack.empty()) {
    const Predicate* p = stack.back();
    stack.pop_back();
    for (const Predicate& child : p->children) stack.push_back(&child);
    if (p->kind == Predicate::Kind::kContains || p->kind == Predicate::Kind::kPrefix) {
      c->impl_->literal[p] = p->caseless ? AsciiLower(p->text) : p->text;
    }
    if (p->kind != Predicate::Kind::kRegex) continue;
    const std::regex::flag_type flags =
        p->caseless ? std::regex::ECMAScript | std::regex::icase : std::regex::ECMAScript;
    try {
      c->impl_->regex.emplace(p, std::regex(p->text, flags));
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError(
          StrCat("rule set '", c->rules_->name(), "', line ", p->line, ": regex '", p->text,
                 "' is not one std::regex (ECMAScript) compiles, which the substring baseline "
                 "needs: ",
                 e.what()));
    }
  }
  return std::shared_ptr<const SubstringClassifier>(std::move(c));
}

RuleId SubstringClassifier::Classify(std::string_view name, Platform platform) const {
  const std::string lower = AsciiLower(name);
  const std::vector<Rule>& rules = rules_->rules();
  for (size_t i = 0; i < rules.size(); ++i) {
    if (impl_->Eval(rules[i].when, name, lower, platform)) return static_cast<RuleId>(i);
  }
  return static_cast<RuleId>(rules.size());
}

}  // namespace tracefuse
