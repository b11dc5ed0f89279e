// KernelRoles (kernel_roles.h): data/kernel-roles.yaml read into a Classifier over the helper and
// fused rules, whose categories index the roles.
#include "tracefuse/classify/kernel_roles.h"

#include <algorithm>
#include <utility>

#include "classify/embedded_kernel_roles.h"
#include "tracefuse/base/strings.h"
#include "yaml-cpp/yaml.h"

namespace tracefuse {

// FileReader checks every key of the file and turns its helper and fused rules into a rule set
// whose category "i" is role i.
class KernelRoles::FileReader {
 public:
  FileReader(const std::string& source, bool check_regexes, KernelRoles* roles)
      : source_(source), check_regexes_(check_regexes), roles_(roles) {}

  absl::Status Read(const YAML::Node& root) {
    if (!root.IsMap()) return Error(root, "a kernel-roles file is a YAML map");
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (key != "heavy" && key != "absorbs" && key != "helpers" && key != "fused") {
        return Error(kv.first, StrCat("unknown key '", key, "'"));
      }
    }
    absl::Status st = ReadHeavy(root["heavy"]);
    if (st.ok()) st = ReadAbsorbs(root["absorbs"]);
    YAML::Node rules(YAML::NodeType::Sequence);
    if (st.ok()) st = ReadRules(root["helpers"], "helper", &rules);
    if (st.ok()) st = ReadRules(root["fused"], "covers", &rules);
    if (!st.ok()) return st;
    YAML::Node set;
    set["name"] = "kernel-roles";
    set["caseless"] = true;
    set["default"]["category"] = "main";
    set["rules"] = rules;
    absl::StatusOr<std::shared_ptr<const RuleSet>> rule_set =
        RuleSet::FromYaml(YAML::Dump(set), source_, check_regexes_);
    if (!rule_set.ok()) return rule_set.status();
    absl::StatusOr<std::shared_ptr<const Classifier>> classifier =
        Classifier::Create(*std::move(rule_set));
    if (!classifier.ok()) return classifier.status();
    roles_->classifier_ = *std::move(classifier);
    return absl::OkStatus();
  }

  absl::Status Error(const YAML::Node& node, std::string_view what) const {
    return ErrorAt(node.Mark().line + 1, what);
  }
  absl::Status ErrorAt(int line, std::string_view what) const {
    return absl::InvalidArgumentError(StrCat(source_, ":", line, ": ", EscapedControls(what)));
  }

 private:
  absl::Status Names(const YAML::Node& list, std::vector<std::string>* out) const {
    if (!list || !list.IsSequence()) return Error(list, "a list of categories");
    for (const YAML::Node& n : list) {
      if (!n.IsScalar() || n.Scalar().empty()) return Error(n, "a category is a non-empty string");
      out->push_back(n.Scalar());
    }
    return absl::OkStatus();
  }

  absl::Status ReadHeavy(const YAML::Node& list) {
    if (!list) return absl::OkStatus();
    std::vector<std::string> names;
    absl::Status st = Names(list, &names);
    for (std::string& n : names) roles_->heavy_.insert(std::move(n));
    return st;
  }

  absl::Status ReadAbsorbs(const YAML::Node& map) {
    if (!map) return absl::OkStatus();
    if (!map.IsMap()) return Error(map, "'absorbs' maps a category to the categories it absorbs");
    for (const auto& kv : map) {
      std::vector<std::string> names;
      absl::Status st = Names(kv.second, &names);
      if (!st.ok()) return st;
      auto& set = roles_->absorbs_[kv.first.as<std::string>()];
      for (std::string& n : names) set.insert(std::move(n));
    }
    return absl::OkStatus();
  }

  // ReadRules() reads the helper rules (`kind` "helper": each with `helper` and `serves`) or the
  // fused ones ("covers"), adding each rule's predicates to `rules` under its role's index.
  absl::Status ReadRules(const YAML::Node& list, const std::string& kind, YAML::Node* rules) {
    if (!list) return absl::OkStatus();
    if (!list.IsSequence()) return Error(list, StrCat("a list of rules, each with '", kind, "'"));
    for (const YAML::Node& r : list) {
      if (!r.IsMap() || !r[kind]) return Error(r, StrCat("a rule is a map with '", kind, "'"));
      KernelRole role;
      YAML::Node rule(YAML::NodeType::Map);
      for (const auto& kv : r) {
        const std::string key = kv.first.as<std::string>();
        absl::Status st;
        if (kind == "helper" && key == "helper") {
          role.helper = kv.second.as<std::string>();
          if (role.helper.empty()) st = Error(kv.second, "a helper's kind is a non-empty string");
        } else if (kind == "helper" && key == "serves") {
          st = Names(kv.second, &role.serves);
        } else if (kind == "covers" && key == "covers") {
          st = Names(kv.second, &role.covers);
        } else {
          rule[key] = kv.second;
        }
        if (!st.ok()) return st;
      }
      if (kind == "helper" && role.serves.empty()) return Error(r, "a helper without 'serves'");
      rule["category"] = std::to_string(roles_->roles_.size() + 1);
      rules->push_back(rule);
      roles_->roles_.push_back(std::move(role));
    }
    return absl::OkStatus();
  }

  const std::string& source_;
  const bool check_regexes_;
  KernelRoles* roles_;
};

absl::StatusOr<std::shared_ptr<const KernelRoles>> KernelRoles::FromYaml(std::string_view text,
                                                                         const std::string& source,
                                                                         bool check_regexes) {
  auto roles = std::make_shared<KernelRoles>();
  FileReader reader(source, check_regexes, roles.get());
  try {
    absl::Status read = reader.Read(YAML::Load(std::string(text)));
    if (!read.ok()) return read;
  } catch (const YAML::Exception& e) {
    return reader.ErrorAt(e.mark.line + 1, e.msg);
  }
  return std::shared_ptr<const KernelRoles>(std::move(roles));
}

std::string_view KernelRoles::BuiltinText() { return kEmbeddedKernelRoles[0].text; }

std::shared_ptr<const KernelRoles> KernelRoles::Builtin() {
  // The build checks the embedded file (tests/kernel_roles_test.cc), so reading it cannot fail.
  static const std::shared_ptr<const KernelRoles> roles =
      *FromYaml(BuiltinText(), "data/kernel-roles.yaml", /*check_regexes=*/false);
  return roles;
}

KernelRole KernelRoles::RoleOf(std::string_view name) const {
  KernelRole role;
  const RuleId rule = classifier_->Classify(name, Platform::kUnknown);
  const std::string& category = classifier_->category_name(classifier_->category_of(rule));
  if (category != "main") role = roles_[std::stoul(category) - 1];
  // Only Inductor's names list ops: the launching-op table is read for them alone.
  if (role.is_helper() || name.substr(0, 7) != "triton_") return role;
  const LaunchingOpTable& table = *LaunchingOpTable::Builtin();
  for (const std::string& op : InductorOps(name, table)) {
    const std::string covered(table.CategoryOfOp(op));
    if (std::find(role.covers.begin(), role.covers.end(), covered) == role.covers.end()) {
      role.covers.push_back(covered);
    }
  }
  return role;
}

bool KernelRoles::absorbs(std::string_view by, std::string_view category) const {
  if (by == category) return true;
  auto it = absorbs_.find(by);
  return it != absorbs_.end() && it->second.contains(category);
}

std::vector<std::string> InductorOps(std::string_view name, const LaunchingOpTable& table) {
  std::vector<std::string> ops;
  size_t at = 0;
  for (std::string_view kind : {"triton_poi_fused_", "triton_red_fused_", "triton_per_fused_"}) {
    if (name.substr(0, kind.size()) == kind) at = kind.size();
  }
  if (at == 0) return ops;
  std::string_view rest = name.substr(at);
  // The kernel's number closes the name: "..._mul_0".
  const size_t last = rest.rfind('_');
  if (last != std::string_view::npos &&
      rest.find_first_not_of("0123456789", last + 1) == std::string_view::npos) {
    rest = rest.substr(0, last);
  }
  std::vector<std::string_view> words;
  for (size_t from = 0;;) {
    const size_t to = rest.find('_', from);
    words.push_back(rest.substr(from, to == std::string_view::npos ? to : to - from));
    if (to == std::string_view::npos) break;
    from = to + 1;
  }
  constexpr size_t kMostWordsInAnOp = 5;  // "_scaled_dot_product_flash_attention" and shorter
  for (size_t i = 0; i < words.size();) {
    size_t taken = 0;
    for (size_t n = std::min(kMostWordsInAnOp, words.size() - i); n > 0 && taken == 0; --n) {
      std::string op = "aten::";
      for (size_t k = 0; k < n; ++k) {
        if (k > 0) op += '_';
        op += words[i + k];
      }
      if (!table.CategoryOfOp(op).empty()) {
        ops.push_back(std::move(op));
        taken = n;
      }
    }
    i += std::max<size_t>(taken, 1);
  }
  return ops;
}

}  // namespace tracefuse
