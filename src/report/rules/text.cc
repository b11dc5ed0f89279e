#include "fmt/format.h"
#include "fmt/ranges.h"
#include "tracefuse/report/rules.h"

namespace tracefuse {
namespace {

// A predicate as the rule file spells it: literals quoted, combinators with their operands.
std::string DescribePredicate(const Predicate& p) {
  auto lit = [&](const char* kind) {
    return fmt::format("{} \"{}\"{}", kind, p.text, p.caseless ? "" : " (case-sensitive)");
  };
  auto list = [&](const char* op) {
    std::string s = std::string(op) + "(";
    for (size_t i = 0; i < p.children.size(); ++i) {
      if (i > 0) s += ", ";
      s += DescribePredicate(p.children[i]);
    }
    return s + ")";
  };
  switch (p.kind) {
    case Predicate::Kind::kContains:
      return lit("contains");
    case Predicate::Kind::kPrefix:
      return lit("prefix");
    case Predicate::Kind::kRegex:
      return lit("regex");
    case Predicate::Kind::kWord:
      return fmt::format("word \"{}\"", p.text);
    case Predicate::Kind::kPlatform:
      return fmt::format("platform {}", PlatformName(p.platform));
    case Predicate::Kind::kNot:
      return "not " + DescribePredicate(p.children[0]);
    case Predicate::Kind::kAll:
      return list("all");
    case Predicate::Kind::kAny:
      return list("any");
  }
  return "";
}

// A rule's pattern label, " [label]", or nothing when it has none.
std::string PatternSuffix(const std::string& pattern) {
  return pattern.empty() ? "" : fmt::format(" [{}]", pattern);
}

}  // namespace

std::string RulesText(const RuleSet& rules) {
  std::string out =
      fmt::format("rule set {}: {}\ncategories ({}): {}\n\n", rules.name(), rules.description(),
                  rules.categories().size(), fmt::join(rules.categories(), ", "));
  for (size_t i = 0; i < rules.rules().size(); ++i) {
    const Rule& r = rules.rules()[i];
    out += fmt::format("{:>3}. {}{}{} <- {}\n", i + 1, r.category, PatternSuffix(r.pattern),
                       r.fallback ? " (fallback)" : "", DescribePredicate(r.when));
  }
  out += fmt::format("     otherwise {}{}\n", rules.default_rule().category,
                     PatternSuffix(rules.default_rule().pattern));
  return out;
}

}  // namespace tracefuse
