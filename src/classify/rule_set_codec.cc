// RuleSet::Serialize() and RuleSet::Deserialize(): a rule set as flat bytes, so that the build
// reads the built-in rule files once (tools/compile_rules.cc) and a run does not (see
// PrecompiledRuleSet in classifier.h).
//
// Layout: the magic "tfrules1", then fields in declaration order. Strings are a little-endian
// uint32 length and their bytes; counts and lines are uint32; flags, kinds and platforms one byte.
// A predicate is its fields, then its children's count and the children.
#include <cstring>

#include "tracefuse/base/strings.h"
#include "tracefuse/classify/classifier.h"

namespace tracefuse {
namespace {

constexpr std::string_view kMagic = "tfrules1";
// Predicates nest in rule files as maps in maps: far below this. Deeper bytes are corrupt.
constexpr int kMaxPredicateDepth = 64;

class Writer {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) U8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void Raw(std::string_view s) { out_.append(s); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reader reads what Writer wrote; any read past the end fails, and later reads fail too.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool U8(uint8_t* v) {
    if (in_.empty()) return false;
    *v = static_cast<uint8_t>(in_.front());
    in_.remove_prefix(1);
    return true;
  }
  bool U32(uint32_t* v) {
    *v = 0;
    for (int i = 0; i < 4; ++i) {
      uint8_t b;
      if (!U8(&b)) return false;
      *v |= uint32_t{b} << (8 * i);
    }
    return true;
  }
  bool Int(int* v) {
    uint32_t u;
    if (!U32(&u)) return false;
    *v = static_cast<int>(u);
    return true;
  }
  bool Bool(bool* v) {
    uint8_t b;
    if (!U8(&b) || b > 1) return false;
    *v = b == 1;
    return true;
  }
  bool Str(std::string* s) {
    uint32_t n;
    if (!U32(&n) || n > in_.size()) return false;
    s->assign(in_.substr(0, n));
    in_.remove_prefix(n);
    return true;
  }
  bool Magic(std::string_view magic) {
    if (in_.substr(0, magic.size()) != magic) return false;
    in_.remove_prefix(magic.size());
    return true;
  }
  // Count() reads a count of items that take at least `min_item_bytes` each, refusing one that
  // the rest of the input cannot hold (so corrupt bytes never make a huge allocation).
  bool Count(size_t min_item_bytes, uint32_t* n) {
    return U32(n) && uint64_t{*n} * min_item_bytes <= in_.size();
  }
  bool at_end() const { return in_.empty(); }

 private:
  std::string_view in_;
};

void WritePredicate(const Predicate& p, Writer* w) {
  w->U8(static_cast<uint8_t>(p.kind));
  w->Str(p.text);
  w->U8(p.caseless ? 1 : 0);
  w->U8(static_cast<uint8_t>(p.platform));
  w->U32(static_cast<uint32_t>(p.line));
  w->U32(static_cast<uint32_t>(p.children.size()));
  for (const Predicate& child : p.children) WritePredicate(child, w);
}

// kPredicateMinBytes: a predicate with no text and no children.
constexpr size_t kPredicateMinBytes = 1 + 4 + 1 + 1 + 4 + 4;

bool ReadPredicate(Reader* r, int depth, Predicate* p) {
  uint8_t kind, platform;
  uint32_t children;
  if (depth > kMaxPredicateDepth || !r->U8(&kind) ||
      kind > static_cast<uint8_t>(Predicate::Kind::kPlatform) || !r->Str(&p->text) ||
      !r->Bool(&p->caseless) || !r->U8(&platform) || platform >= kPlatformCount ||
      !r->Int(&p->line) || !r->Count(kPredicateMinBytes, &children)) {
    return false;
  }
  p->kind = static_cast<Predicate::Kind>(kind);
  p->platform = static_cast<Platform>(platform);
  p->children.resize(children);
  for (Predicate& child : p->children) {
    if (!ReadPredicate(r, depth + 1, &child)) return false;
  }
  return true;
}

void WriteRule(const Rule& rule, Writer* w) {
  w->Str(rule.category);
  w->Str(rule.pattern);
  w->U8(rule.fallback ? 1 : 0);
  w->U32(static_cast<uint32_t>(rule.line));
  WritePredicate(rule.when, w);
}

constexpr size_t kRuleMinBytes = 4 + 4 + 1 + 4 + kPredicateMinBytes;

bool ReadRule(Reader* r, Rule* rule) {
  return r->Str(&rule->category) && r->Str(&rule->pattern) && r->Bool(&rule->fallback) &&
         r->Int(&rule->line) && ReadPredicate(r, 0, &rule->when);
}

}  // namespace

std::string RuleSet::Serialize() const {
  Writer w;
  w.Raw(kMagic);
  w.Str(name_);
  w.Str(description_);
  w.Str(extends_);
  w.U32(static_cast<uint32_t>(categories_.size()));
  for (const std::string& c : categories_) w.Str(c);
  w.U8(platform_dependent_ ? 1 : 0);
  w.U32(static_cast<uint32_t>(rules_.size()));
  for (const Rule& rule : rules_) WriteRule(rule, &w);
  WriteRule(default_rule_, &w);
  return w.Take();
}

absl::StatusOr<std::shared_ptr<const RuleSet>> RuleSet::Deserialize(std::string_view bytes,
                                                                    const std::string& source) {
  auto set = std::make_shared<RuleSet>();
  Reader r(bytes);
  uint32_t categories = 0, rules = 0;
  bool ok = r.Magic(kMagic) && r.Str(&set->name_) && r.Str(&set->description_) &&
            r.Str(&set->extends_) && r.Count(4, &categories) && categories <= kMaxCategories;
  for (uint32_t i = 0; ok && i < categories; ++i) ok = r.Str(&set->categories_.emplace_back());
  ok = ok && r.Bool(&set->platform_dependent_) && r.Count(kRuleMinBytes, &rules) &&
       rules < UINT16_MAX;
  for (uint32_t i = 0; ok && i < rules; ++i) ok = ReadRule(&r, &set->rules_.emplace_back());
  ok = ok && ReadRule(&r, &set->default_rule_) && r.at_end();
  for (size_t i = 0; ok && i <= set->rules_.size(); ++i) {
    const Rule& rule = i < set->rules_.size() ? set->rules_[i] : set->default_rule_;
    ok = set->category_index(rule.category).has_value();
  }
  if (!ok) return absl::DataLossError(StrCat(source, ": corrupt serialized rule set"));
  set->precompiled_ = true;
  return std::shared_ptr<const RuleSet>(std::move(set));
}

}  // namespace tracefuse
