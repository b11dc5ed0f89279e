#include "tracefuse/report/suggest.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <optional>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "report/common/formatting.h"
#include "tracefuse/base/strings.h"
#include "yaml-cpp/yaml.h"

namespace tracefuse {
namespace {

// Words that name no operation, so never a family: C++ keywords and scalar types (return types
// and template arguments: `void`, `float`, `bfloat16`), the namespaces and markers that kernels
// of every kind carry (`at::native`, `(anonymous namespace)`, `detail`, `kernel`, `impl`,
// `functor`, `ops`), English connectives, and the vendor libraries whose kernels span many
// operations (`cudnn::`, `cutlass::`, `cub::`, `rocprim::`). `at`, `c10`, `zn` (of mangled `_ZN`)
// and `nv` go by kMinWordLength.
constexpr std::string_view kStopWords[] = {
    // C++
    "auto", "bfloat", "bool", "char", "class", "const", "double", "enable", "false", "float",
    "half", "int", "long", "new", "operator", "short", "signed", "struct", "template", "true",
    "type", "typename", "unsigned", "void", "volatile",
    // Namespaces and markers
    "anonymous", "cuda", "detail", "device", "functor", "global", "hip", "impl", "kernel",
    "kernels", "launch", "namespace", "native", "ops", "params", "pytorch", "std", "torch",
    // English connectives (`BatchPrefillWithPagedKVCache`, `...CausalForGen...`)
    "for", "with",
    // Vendor libraries
    "cub", "cudnn", "cutlass", "hipcub", "rocprim", "tensorrt", "thrust", "vllm"};

// Shorter words name no operation either: layout letters (`_nt`, `_TN`), the `x` of tile shapes
// (`128x64`), single-letter template parameters.
constexpr size_t kMinWordLength = 3;

// Longer words are no operation's name; the cap bounds Spans() on pathological names.
constexpr size_t kMaxWordLength = 64;

// A name without a word of its own is tried with pairs of its first kMaxPairWords words: its
// kernel's identifier comes first, and 66 pairs per name bound the cost.
constexpr size_t kMaxPairWords = 12;

// Each step considers the pairs and prefixes of the kMaxOrphans names with the most time among
// those left without a word of their own (and with some literal): a trace may have thousands.
constexpr size_t kMaxOrphans = 32;

// A family's comment shows up to kExamples names, each cut to kExampleLength code points.
constexpr size_t kExamples = 3;
constexpr size_t kExampleLength = 100;

// Categories are named after up to kCategoryWords words.
constexpr size_t kCategoryWords = 3;

constexpr size_t kCommentColumns = 100;

using Kind = SuggestedFamily::Kind;

bool IsLetter(char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); }

bool InStopList(std::string_view w) {
  return std::find(std::begin(kStopWords), std::end(kStopWords), w) != std::end(kStopWords);
}

bool IsStopWord(std::string_view w) {
  return w.size() < kMinWordLength || w.size() > kMaxWordLength || InStopList(w);
}

// Words() lists the words of `text` that may name a family (SplitWords less the stop words),
// each once, in order.
std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> out;
  for (std::string& w : SplitWords(text)) {
    if (!IsStopWord(w) && std::find(out.begin(), out.end(), w) == out.end()) {
      out.push_back(std::move(w));
    }
  }
  return out;
}

// NameParts is where a (demangled) kernel name's parts end.
struct NameParts {
  // The qualified name ("void at::native::(anonymous namespace)::reduce_kernel") ends at the
  // first '<' or '(' outside "(anonymous namespace)"; the head, template arguments included, at
  // the parameter list: the first '(' outside template arguments. Both are the name's end when
  // it has no such part.
  size_t qualified_end = 0;
  size_t head_end = 0;
  // The name without template arguments and parameter lists: the namespaces and identifiers.
  std::string outline;
};

NameParts Parts(std::string_view name) {
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  NameParts parts{name.size(), name.size(), ""};
  int angles = 0, parens = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool top = angles == 0 && parens == 0;
    if (top && name.substr(i, kAnonymous.size()) == kAnonymous) {
      parts.outline += kAnonymous;
      i += kAnonymous.size() - 1;
      continue;
    }
    if (top && (c == '<' || c == '(')) parts.qualified_end = std::min(parts.qualified_end, i);
    if (top && c == '(') parts.head_end = std::min(parts.head_end, i);
    if (c == '(') {
      ++parens;
    } else if (c == ')') {
      parens = std::max(parens - 1, 0);
    } else if (c == '<' && parens == 0) {
      ++angles;
    } else if (c == '>' && parens == 0 && angles > 0) {
      --angles;
    } else if (top) {
      parts.outline += c;
    }
  }
  return parts;
}

// NamingWords() lists the words that may name `name`'s family: those of its namespaces and
// identifiers, since template arguments and parameters mostly name types (`std::array`,
// `GenericPackedTensorAccessor`); failing those, the words of its template arguments too
// (`cutlass::Kernel<cutlass_80_tensorop_s1688gemm_...>`).
std::vector<std::string> NamingWords(std::string_view name, const NameParts& parts) {
  std::vector<std::string> words = Words(parts.outline);
  return words.empty() ? Words(name.substr(0, parts.head_end)) : words;
}

// Spans() lists, lowercased, what a `words` literal of up to kMaxWordLength letters matches in
// `name` (ContainsWord): one word or several consecutive words with only case changes between
// them ("MIOpenConv" holds "miopen", "conv" and "miopenconv").
absl::flat_hash_set<std::string> Spans(std::string_view name) {
  absl::flat_hash_set<std::string> spans;
  size_t i = 0;
  while (i < name.size()) {
    if (!IsLetter(name[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < name.size() && IsLetter(name[end])) ++end;
    std::vector<size_t> cuts = {i};  // where the run's words start, then its end
    for (size_t j = i + 1; j < end; ++j)
      if (IsWordBoundary(name, j)) cuts.push_back(j);
    cuts.push_back(end);
    for (size_t a = 0; a + 1 < cuts.size(); ++a) {
      for (size_t b = a + 1; b < cuts.size() && cuts[b] - cuts[a] <= kMaxWordLength; ++b)
        spans.insert(AsciiLower(name.substr(cuts[a], cuts[b] - cuts[a])));
    }
    i = end;
  }
  return spans;
}

// Candidate is a rule being considered: its literal, and the unclassified time not yet in a
// family that the literal matches.
struct Candidate {
  Kind kind = Kind::kWord;
  std::vector<std::string> literals;
  int64_t time_ns = 0;
  uint64_t kernels = 0;
};

size_t Letters(const Candidate& c) {
  size_t n = 0;
  for (const std::string& l : c.literals) n += l.size();
  return n;
}

// Better() prefers more time, more kernels, the simpler literal, the longer one (a namespace is
// often an abbreviation: `frob::frobnicate_fwd`), then the first in alphabetical order, so that
// the choice does not depend on hash order.
bool Better(const Candidate& a, const Candidate& b) {
  if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
  if (a.kernels != b.kernels) return a.kernels > b.kernels;
  if (a.kind != b.kind) return a.kind < b.kind;
  if (Letters(a) != Letters(b)) return Letters(a) > Letters(b);
  return a.literals < b.literals;
}

// FamilyFinder runs SuggestFamilies()' greedy search over one profile.
class FamilyFinder {
 public:
  explicit FamilyFinder(const TraceProfile& p);
  Suggestion Find(size_t max_families);

 private:
  // An unclassified name.
  struct Name {
    uint32_t id = 0;
    std::string lower;  // for prefixes, which are caseless
    absl::flat_hash_set<std::string> spans;
    NameParts parts;
    std::vector<std::string> words;  // NamingWords()
    bool has_own_word = false;       // one of `words` occurs in no classified name
    // For a name without a word of its own, once Examine()d: the pairs of its words (indices
    // into `words`) that no classified name holds both of, else the end of its prefix (0: none).
    bool examined = false;
    std::vector<std::pair<size_t, size_t>> pairs;
    size_t prefix_end = 0;
  };

  bool Matches(const Candidate& c, const Name& n) const;
  void Rank(Candidate* c) const;
  bool PairClassified(const std::string& a, const std::string& b) const;
  bool PrefixClassified(const std::string& lower_prefix) const;
  void Examine(Name* n) const;
  std::optional<Candidate> BestWord() const;
  std::optional<Candidate> BestFor(const Name& n) const;
  std::optional<Candidate> Best();
  void NameCategory(const Candidate& c, SuggestedFamily* f);
  bool TakeLaunchingOpsCategory(SuggestedFamily* f) const;

  const TraceProfile& p_;
  std::vector<Name> names_;  // by time, descending
  std::vector<bool> taken_;  // per names_ entry: in a family already
  // The names_ entries (ascending) whose NamingWords() hold a word.
  absl::flat_hash_map<std::string, std::vector<uint32_t>> postings_;
  // Every span of the classified names, with the classified names (indices into
  // classified_lower_, ascending) that hold it.
  absl::flat_hash_map<std::string, std::vector<uint32_t>> classified_spans_;
  std::vector<std::string> classified_lower_;
  absl::flat_hash_set<std::string> own_words_;   // words of names_ in no classified name
  absl::flat_hash_set<std::string> categories_;  // lowercased: those of the rule set, then ours
  absl::flat_hash_map<std::string, std::string> rule_set_categories_;  // lowercased -> as named
};

FamilyFinder::FamilyFinder(const TraceProfile& p) : p_(p) {
  const RuleSet& set = p.classifier->rule_set();
  for (const std::string& c : set.categories()) {
    categories_.insert(AsciiLower(c));
    rule_set_categories_.emplace(AsciiLower(c), c);
  }
  std::vector<uint32_t> unclassified;
  for (uint32_t n = 0; n < p.names.size(); ++n) {
    if (p.in_default_by_name(n)) {
      unclassified.push_back(n);
      continue;
    }
    const auto index = static_cast<uint32_t>(classified_lower_.size());
    classified_lower_.push_back(AsciiLower(p.names[n]));
    for (const std::string& s : Spans(p.names[n])) classified_spans_[s].push_back(index);
  }
  std::stable_sort(unclassified.begin(), unclassified.end(), [&](uint32_t a, uint32_t b) {
    if (p.name_time_ns[a] != p.name_time_ns[b]) return p.name_time_ns[a] > p.name_time_ns[b];
    return p.name_kernels[a] > p.name_kernels[b];
  });
  for (uint32_t n : unclassified) {
    Name name;
    name.id = n;
    name.lower = AsciiLower(p.names[n]);
    name.spans = Spans(p.names[n]);
    name.parts = Parts(p.names[n]);
    name.words = NamingWords(p.names[n], name.parts);
    for (const std::string& w : name.words) {
      postings_[w].push_back(static_cast<uint32_t>(names_.size()));
      if (classified_spans_.contains(w)) continue;
      own_words_.insert(w);
      name.has_own_word = true;
    }
    names_.push_back(std::move(name));
  }
  taken_.assign(names_.size(), false);
}

bool FamilyFinder::Matches(const Candidate& c, const Name& n) const {
  switch (c.kind) {
    case Kind::kWord:
      return n.spans.contains(c.literals[0]);
    case Kind::kWordPair:
      return n.spans.contains(c.literals[0]) && n.spans.contains(c.literals[1]);
    case Kind::kPrefix:
      return n.lower.rfind(AsciiLower(c.literals[0]), 0) == 0;
  }
  return false;
}

// Rank() sets the time and kernels of the names not yet in a family that `c` names, which rank
// the candidates: names whose NamingWords() hold its words (a word only of template arguments
// or parameters, such as `std::array`, says nothing of what a kernel does), or that start with
// its prefix. The family it makes holds every name it matches.
void FamilyFinder::Rank(Candidate* c) const {
  c->time_ns = 0;
  c->kernels = 0;
  auto add = [&](size_t i) {
    if (taken_[i]) return;
    c->time_ns += p_.name_time_ns[names_[i].id];
    c->kernels += p_.name_kernels[names_[i].id];
  };
  if (c->kind == Kind::kPrefix) {
    const std::string lower = AsciiLower(c->literals[0]);
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i].lower.rfind(lower, 0) == 0) add(i);
    return;
  }
  const std::vector<uint32_t>& x = postings_.at(c->literals[0]);
  if (c->kind == Kind::kWord) {
    for (uint32_t i : x) add(i);
    return;
  }
  const std::vector<uint32_t>& y = postings_.at(c->literals[1]);
  for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    if (x[i] == y[j]) add(x[i]);
    x[i] <= y[j] ? ++i : ++j;
  }
}

// PairClassified() tells whether some classified name holds both words.
bool FamilyFinder::PairClassified(const std::string& a, const std::string& b) const {
  auto ia = classified_spans_.find(a), ib = classified_spans_.find(b);
  if (ia == classified_spans_.end() || ib == classified_spans_.end()) return false;
  const std::vector<uint32_t>& x = ia->second;
  const std::vector<uint32_t>& y = ib->second;
  for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    if (x[i] == y[j]) return true;
    x[i] < y[j] ? ++i : ++j;
  }
  return false;
}

bool FamilyFinder::PrefixClassified(const std::string& lower_prefix) const {
  return std::any_of(classified_lower_.begin(), classified_lower_.end(),
                     [&](const std::string& c) { return c.rfind(lower_prefix, 0) == 0; });
}

// Examine() finds the literals of a name without a word of its own, once (what classified names
// hold does not change): the pairs of its first kMaxPairWords words that no classified name
// holds both of; without one, the shortest prefix that starts no classified name among those
// that end with a word within its qualified name and hold a word that may name a family, then
// its qualified name, its head, the whole name.
void FamilyFinder::Examine(Name* n) const {
  n->examined = true;
  const size_t words = std::min(n->words.size(), kMaxPairWords);
  for (size_t i = 0; i < words; ++i) {
    for (size_t j = i + 1; j < words; ++j)
      if (!PairClassified(n->words[i], n->words[j])) n->pairs.emplace_back(i, j);
  }
  if (!n->pairs.empty()) return;
  const std::string& name = p_.names[n->id];
  std::vector<size_t> ends;
  for (size_t end = 1; end < n->parts.qualified_end; ++end) {
    if (IsLetter(name[end - 1]) && IsWordBoundary(name, end) &&
        !Words(std::string_view(name).substr(0, end)).empty()) {
      ends.push_back(end);
    }
  }
  for (size_t end : {n->parts.qualified_end, n->parts.head_end, name.size()})
    if (end > 0) ends.push_back(end);
  for (size_t end : ends) {
    if (PrefixClassified(AsciiLower(std::string_view(name).substr(0, end)))) continue;
    n->prefix_end = end;
    return;
  }
}

// BestWord() is the word of their own that names the most time of the names left.
std::optional<Candidate> FamilyFinder::BestWord() const {
  absl::flat_hash_map<std::string_view, Candidate> words;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (taken_[i]) continue;
    for (const std::string& s : names_[i].words) {
      if (!own_words_.contains(s)) continue;
      Candidate& c = words[s];
      c.time_ns += p_.name_time_ns[names_[i].id];
      c.kernels += p_.name_kernels[names_[i].id];
    }
  }
  std::optional<Candidate> best;
  for (auto& [word, c] : words) {
    c.literals = {std::string(word)};
    if (!best || Better(c, *best)) best = c;
  }
  return best;
}

// BestFor() is the best literal of an Examine()d name without a word of its own: the pair that
// names the most time of the names left, or its prefix.
std::optional<Candidate> FamilyFinder::BestFor(const Name& n) const {
  std::optional<Candidate> best;
  for (const auto& [i, j] : n.pairs) {
    Candidate c{Kind::kWordPair, {n.words[i], n.words[j]}};
    Rank(&c);
    if (!best || Better(c, *best)) best = std::move(c);
  }
  if (n.prefix_end > 0) {
    best = Candidate{Kind::kPrefix, {p_.names[n.id].substr(0, n.prefix_end)}};
    Rank(&*best);
  }
  return best;
}

// Best() is the best candidate: the best word of their own, or for one of the kMaxOrphans
// heaviest names left without one, the best pair of its words or its prefix; nullopt when no
// name left has a literal.
std::optional<Candidate> FamilyFinder::Best() {
  std::optional<Candidate> best = BestWord();
  size_t orphans = 0;
  for (size_t i = 0; i < names_.size() && orphans < kMaxOrphans; ++i) {
    Name& n = names_[i];
    if (taken_[i] || n.has_own_word) continue;
    if (!n.examined) Examine(&n);
    std::optional<Candidate> c = BestFor(n);
    if (!c) continue;
    ++orphans;
    if (!best || Better(*c, *best)) best = std::move(c);
  }
  return best;
}

// CategoryWords() are the words a family's category is named after: its words, or those that
// may name its prefix; failing those, its prefix's last identifier's words of two letters or
// more ("bn", "bw" of `cudnn::bn_bw_1C11_kernel_new`).
std::vector<std::string> CategoryWords(const Candidate& c) {
  if (c.kind != Kind::kPrefix) return c.literals;
  const std::string& prefix = c.literals[0];
  const NameParts parts = Parts(prefix);
  std::vector<std::string> words = NamingWords(prefix, parts);
  if (!words.empty()) return words;
  const size_t last = parts.outline.find_last_of(": ");
  for (std::string& w : SplitWords(std::string_view(parts.outline).substr(last + 1))) {
    if (w.size() >= 2 && !InStopList(w)) words.push_back(std::move(w));
  }
  return words;
}

// CategoryFor() names a family after its first words in CamelCase ("Frobnicate",
// "BatchedTranspose"), numbered when the name is taken ("Reduce2"): categories are compared
// caselessly, since "Gemm" beside "GEMM" would read as the same. It records the rule set's
// category of that name, which the family may belong to.
void FamilyFinder::NameCategory(const Candidate& c, SuggestedFamily* f) {
  std::vector<std::string> words = CategoryWords(c);
  if (words.size() > kCategoryWords) words.resize(kCategoryWords);
  std::string base;
  for (const std::string& w : words) {
    base += static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
    base += w.substr(1);
  }
  if (base.empty()) base = "Family";
  if (auto it = rule_set_categories_.find(AsciiLower(base)); it != rule_set_categories_.end()) {
    f->existing_category = it->second;
  }
  std::string name = base;
  for (int i = 2; categories_.contains(AsciiLower(name)); ++i) name = StrCat(base, i);
  categories_.insert(AsciiLower(name));
  f->category = name;
}

// TakeLaunchingOpsCategory() gives a family the category that classification by launching op
// gave every one of its names, when it gave them one and the same.
bool FamilyFinder::TakeLaunchingOpsCategory(SuggestedFamily* f) const {
  const NameByOp* first = nullptr;
  for (uint32_t n : f->names) {
    auto it = p_.by_op.names.find(n);
    if (it == p_.by_op.names.end()) return false;
    if (first == nullptr) first = &it->second;
    if (it->second.category != first->category) return false;
  }
  if (first == nullptr) return false;
  f->category = p_.category_name(first->category);
  f->launching_op = first->op;
  return true;
}

Suggestion FamilyFinder::Find(size_t max_families) {
  Suggestion s;
  for (const Name& n : names_) {
    ++s.unclassified.names;
    s.unclassified.kernels += p_.name_kernels[n.id];
    s.unclassified.time_ns += p_.name_time_ns[n.id];
  }
  s.left = s.unclassified;
  while (s.families.size() < max_families) {
    std::optional<Candidate> best = Best();
    if (!best) break;
    SuggestedFamily f;
    f.kind = best->kind;
    f.literals = best->literals;
    for (size_t i = 0; i < names_.size(); ++i) {
      if (taken_[i] || !Matches(*best, names_[i])) continue;
      taken_[i] = true;
      f.names.push_back(names_[i].id);
      f.kernels += p_.name_kernels[names_[i].id];
      f.time_ns += p_.name_time_ns[names_[i].id];
    }
    if (!TakeLaunchingOpsCategory(&f)) NameCategory(*best, &f);
    s.left.names -= f.names.size();
    s.left.kernels -= f.kernels;
    s.left.time_ns -= f.time_ns;
    s.families.push_back(std::move(f));
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// The rule file

// IsYamlKeyword() tells whether YAML 1.1 reads plain `s` as a boolean or null (yaml-cpp does: a
// `words: null` would be no word at all).
bool IsYamlKeyword(std::string_view s) {
  static const std::string_view kKeywords[] = {"y",     "n",  "yes", "no",   "true",
                                               "false", "on", "off", "null", "~"};
  const std::string lower = AsciiLower(s);
  return std::find(std::begin(kKeywords), std::end(kKeywords), lower) != std::end(kKeywords);
}

// UnicodeBreak() is the length of the line break that YAML 1.1 knows beside '\n' and '\r' at
// the start of UTF-8 `s` (NEL U+0085, LS U+2028, PS U+2029), else 0.
size_t UnicodeBreak(std::string_view s) {
  if (s.substr(0, 2) == "\xC2\x85") return 2;
  if (s.substr(0, 3) == "\xE2\x80\xA8" || s.substr(0, 3) == "\xE2\x80\xA9") return 3;
  return 0;
}

// DoubleQuoted() is `s` as a YAML double-quoted scalar, written by yaml-cpp's emitter (the
// library that reads rule files back): non-ASCII escaped, so that no line break of YAML 1.1
// (U+0085, U+2028) can hide in a name.
std::string DoubleQuoted(std::string_view s) {
  YAML::Emitter out;
  out.SetOutputCharset(YAML::EscapeNonAscii);
  out << YAML::DoubleQuoted << std::string(s);
  return out.c_str();
}

// Scalar() is `s` plain where YAML reads it back as this string in block and flow context alike
// (letters, digits, '_', '-', '.', starting with a letter, no keyword), else double-quoted.
std::string Scalar(std::string_view s) {
  bool plain = !s.empty() && IsLetter(s[0]) && !IsYamlKeyword(s);
  for (char c : s)
    plain =
        plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  return plain ? std::string(s) : DoubleQuoted(s);
}

// CommentText() is `s` fit for a YAML comment, which a line break would end: control characters
// and line breaks become '?'.
std::string CommentText(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    if (u < 0x20 || u == 0x7f) {
      out += '?';
    } else if (const size_t length = UnicodeBreak(s.substr(i)); length > 0) {
      out += '?';
      i += length - 1;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Comment() wraps `text` into comment lines of at most kCommentColumns columns (a longer word
// keeps its own line).
std::string Comment(std::string_view text, std::string_view indent = "") {
  std::string out, line;
  auto flush = [&] {
    out += StrCat(indent, "#", line.empty() ? "" : " ", line, "\n");
    line.clear();
  };
  const std::string clean = CommentText(text);
  for (size_t start = 0; start < clean.size();) {
    const size_t end = std::min(clean.find(' ', start), clean.size());
    const std::string_view word = std::string_view(clean).substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (!line.empty() && indent.size() + 2 + line.size() + 1 + word.size() > kCommentColumns) {
      flush();
    }
    line += StrCat(line.empty() ? "" : " ", word);
  }
  if (!line.empty()) flush();
  return out;
}

std::string Percent(int64_t part, int64_t whole) {
  return fmt::format("{:.1f} %", whole > 0 ? 100.0 * double(part) / double(whole) : 0.0);
}

std::string NamesText(uint64_t names) {
  return StrCat(Thousands(names), names == 1 ? " name" : " names");
}

// Summary() is the header's first paragraph: which kernels the rules are for, and how many of
// them they cover.
std::string Summary(const TraceProfile& p, const SuggestOptions& o, const Suggestion& s) {
  const std::string& other = p.classifier->rule_set().default_rule().category;
  const int64_t total = KernelTimeNs(p);
  if (s.unclassified.names == 0) {
    return StrCat("Rule set ", o.ruleset, " leaves no kernel of ", p.path,
                  " in its default category, ", other,
                  ": there is nothing to suggest, and this file adds no rule.");
  }
  std::string text = fmt::format(
      "Rules suggested by `tracefuse breakdown --suggest` for {}: rule set {} leaves {} in its "
      "default category, {} ({} kernels, {} of kernel time).",
      p.path, o.ruleset, NamesText(s.unclassified.names), other, Thousands(s.unclassified.kernels),
      Percent(s.unclassified.time_ns, total));
  if (!s.families.empty()) {
    const uint64_t covered = s.unclassified.names - s.left.names;
    text += fmt::format(" The {} below cover{} {}.",
                        s.families.size() == 1 ? "rule" : StrCat(s.families.size(), " rules"),
                        s.families.size() == 1 ? "s" : "",
                        s.left.names > 0
                            ? fmt::format("{} of them ({} of kernel time)", Thousands(covered),
                                          Percent(s.unclassified.time_ns - s.left.time_ns, total))
                        : covered == 1 ? "it"
                                       : "them all");
  }
  if (s.left.names == 0) return text;
  const std::string left = fmt::format(" {} ({} of kernel time) ", NamesText(s.left.names),
                                       Percent(s.left.time_ns, total));
  if (s.families.size() == s.max_families) {
    return StrCat(text, left,
                  s.max_families < o.families
                      ? StrCat("are left: with more rules, the file would define more than ",
                               kMaxCategories, " categories.")
                      : "are left for a larger --top.");
  }
  return StrCat(text, left, "get no rule: no literal of theirs avoids the names that ", o.ruleset,
                " classifies.");
}

// Header() is the comment that opens the file: Summary(), what to do with the rules, and how.
std::string Header(const TraceProfile& p, const SuggestOptions& o, const Suggestion& s) {
  std::string out = Comment(Summary(p, o, s));
  if (s.families.empty()) return out;
  const bool by_launching_op =
      std::any_of(s.families.begin(), s.families.end(),
                  [](const SuggestedFamily& f) { return !f.launching_op.empty(); });
  const std::string& r = o.ruleset;
  out += "#\n" +
         Comment(StrCat("Each rule gives its family a new category named after the family's words",
                        by_launching_op ? " (or, for names classified by the ops that launched "
                                          "them, the category they gave)"
                                        : "",
                        ": rename the categories, or give a rule an existing category of ", r,
                        " (and drop its entry from `categories`). The literals occur in no kernel "
                        "name of the trace that ",
                        r,
                        " classifies, and a file's own rules come first: the rules take no kernel "
                        "from its categories."));
  const bool builtin = RuleSet::NamesBuiltin(r);
  if (!builtin) {
    const std::string& base = p.classifier->rule_set().extends();
    out += "#\n" + Comment(StrCat("These rules belong in ", r, ": merge `categories` and `rules` ",
                                  "into it (the rules before its fallback rules, if any). On its "
                                  "own this file extends ",
                                  base.empty() ? "no rule set" : base, ", as ", r,
                                  " does, without the rules of ", r, "."));
  }
  const std::string file = builtin ? "FILE" : CommentText(r);
  out += "#\n" + Comment(builtin ? "Check this file, then use it:"
                                 : StrCat("Once merged, check ", r, ", then use it:"));
  return StrCat(out, "#   tracefuse rules --check --ruleset ", file, "\n#   tracefuse breakdown ",
                CommentText(p.path), " --ruleset ", file, "\n");
}

// Keys() writes the file's keys before its rules: description, extends and the new categories.
std::string Keys(const TraceProfile& p, const SuggestOptions& o, const Suggestion& s) {
  const std::string base =
      RuleSet::NamesBuiltin(o.ruleset) ? o.ruleset : p.classifier->rule_set().extends();
  std::string out = StrCat(
      "description: ",
      DoubleQuoted(StrCat("rules suggested for ", p.path, " by tracefuse breakdown --suggest")),
      "\n");
  if (!base.empty()) out += StrCat("extends: ", Scalar(base), "\n");
  if (s.families.empty()) return out;
  const std::string indent(std::string_view("categories: [").size(), ' ');
  std::string line = "categories: [";
  std::vector<const SuggestedFamily*> named;  // the families with a category of their own
  for (const SuggestedFamily& f : s.families)
    if (f.launching_op.empty()) named.push_back(&f);
  if (named.empty()) return StrCat(out, "rules:\n");
  for (size_t i = 0; i < named.size(); ++i) {
    const std::string item = StrCat(Scalar(named[i]->category), i + 1 == named.size() ? "]" : ",");
    if (i > 0 && line.size() + 1 + item.size() > kCommentColumns) {
      out += line + "\n";
      line = indent + item;
    } else {
      line += StrCat(i > 0 ? " " : "", item);
    }
  }
  return StrCat(out, line, "\nrules:\n");
}

// Predicate() is a family's literal as a rule's predicate key.
std::string Predicate(const SuggestedFamily& f) {
  switch (f.kind) {
    case Kind::kWord:
      return StrCat("words: ", Scalar(f.literals[0]));
    case Kind::kWordPair:
      return StrCat("all: [{words: ", Scalar(f.literals[0]), "}, {words: ", Scalar(f.literals[1]),
                    "}]");
    case Kind::kPrefix:
      return StrCat("prefix: ", DoubleQuoted(f.literals[0]));
  }
  return "";
}

// RuleYaml() writes a family's rule, with a comment above it: what it covers, up to kExamples
// example names, and why its literal is not one word when it is not.
std::string RuleYaml(const TraceProfile& p, const std::string& ruleset, const SuggestedFamily& f) {
  std::string out =
      "\n" + Comment(fmt::format("{}: {}, {} kernels, {:.3f} ms, {} of kernel time; {}", f.category,
                                 NamesText(f.names.size()), Thousands(f.kernels), Millis(f.time_ns),
                                 Percent(f.time_ns, KernelTimeNs(p)),
                                 f.names.size() == 1 ? "the name:" : "for example:"),
                     "  ");
  for (size_t i = 0; i < f.names.size() && i < kExamples; ++i) {
    const std::string& name = p.names[f.names[i]];
    const std::string_view shown = Utf8Prefix(name, kExampleLength);
    out += StrCat("  #   ", CommentText(shown), shown.size() < name.size() ? "..." : "", "\n");
  }
  if (!f.launching_op.empty()) {
    out += Comment(StrCat("(", ruleset, "'s category that their launching ops gave them, as ",
                          f.launching_op, " launched the first)"),
                   "  ");
  } else if (!f.existing_category.empty()) {
    out += Comment(StrCat("(", ruleset, " has a category ", f.existing_category,
                          ": the family may belong to it)"),
                   "  ");
  }
  if (f.kind == Kind::kWordPair) {
    out += Comment(
        "(two words together: for a name each of whose words occurs in a classified name)", "  ");
  } else if (f.kind == Kind::kPrefix) {
    out += Comment(
        "(a prefix: for a name each of whose words and pairs of words occurs in a classified "
        "name)",
        "  ");
  }
  return StrCat(out, "  - {category: ", Scalar(f.category), ", ", Predicate(f), "}\n");
}

}  // namespace

Suggestion SuggestFamilies(const TraceProfile& profile, size_t max_families) {
  const size_t categories = profile.classifier->rule_set().categories().size();
  const size_t room = categories < kMaxCategories ? kMaxCategories - categories : 0;
  Suggestion s = FamilyFinder(profile).Find(std::min(max_families, room));
  s.max_families = std::min(max_families, room);
  return s;
}

std::string SuggestRulesYaml(const TraceProfile& profile, const SuggestOptions& options) {
  const Suggestion s = SuggestFamilies(profile, options.families);
  std::string out = Header(profile, options, s) + Keys(profile, options, s);
  for (const SuggestedFamily& f : s.families) out += RuleYaml(profile, options.ruleset, f);
  return out;
}

}  // namespace tracefuse
