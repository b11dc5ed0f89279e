#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "command.h"
#include "simdjson.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/classify/kernel_roles.h"
#include "tracefuse/report/json.h"

namespace tracefuse::cli {
namespace {

struct ClassifyArgs {
  std::string input = "-";
  std::string ruleset = "tracefuse";
  std::string platform;
  std::string format = "lines";
  bool roles = false;
};

// RoleJson() adds what data/kernel-roles.yaml says of the name: "helper" and "serves" for a
// helper, "covers" for a main kernel that states the operations it fuses.
void RoleJson(const KernelRole& role, Json* j) {
  if (role.is_helper()) {
    (*j)["role"] = "helper";
    (*j)["helper"] = role.helper;
    (*j)["serves"] = role.serves;
  } else {
    (*j)["role"] = "main";
    (*j)["covers"] = role.covers;
  }
}

int RunClassify(const ClassifyArgs& a) {
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = LoadClassifier(a.ruleset);
  if (!classifier.ok()) return Fail(classifier.status(), kExitUsage);
  Platform platform = a.platform == "amd"      ? Platform::kAmd
                      : a.platform == "nvidia" ? Platform::kNvidia
                                               : Platform::kUnknown;
  std::ifstream file;
  std::istream* in = &std::cin;
  if (a.input != "-") {
    file.open(a.input);
    if (!file) {
      return Fail(absl::NotFoundError(StrCat(a.input, ": ", std::strerror(errno))));
    }
    in = &file;
  }
  const RuleSet& rules = (*classifier)->rule_set();
  bool has_patterns = !rules.default_rule().pattern.empty();
  for (const Rule& r : rules.rules()) has_patterns |= !r.pattern.empty();

  const std::shared_ptr<const KernelRoles> roles = a.roles ? KernelRoles::Builtin() : nullptr;
  simdjson::dom::parser parser;
  CachedClassifier names(*classifier, platform);
  std::string line, out;
  size_t line_no = 0;
  while (std::getline(*in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string name;
    if (a.format == "jsonl") {
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      std::string_view s;
      if (parser.parse(simdjson::padded_string(line)).get_string().get(s) != simdjson::SUCCESS) {
        return Fail(
            absl::InvalidArgumentError(StrCat(a.input, ":", line_no, ": not a JSON string")),
            kExitBadTrace);
      }
      name = std::string(s);
    } else {
      name = line;
    }
    RuleId id = names.Classify(name);
    Json j;
    j["name"] = name;
    j["category"] = (*classifier)->category_name((*classifier)->category_of(id));
    if (has_patterns) j["pattern"] = (*classifier)->Pattern(id, name);
    if (roles) RoleJson(roles->RoleOf(name), &j);
    out += DumpJson(j, -1);
    out += '\n';
    if (out.size() > (1u << 16)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

CLI::App* Declare(CLI::App* app, ClassifyArgs* a) {
  CLI::App* cmd = app->add_subcommand(
      "classify", "Classify kernel names, one per line, printing one JSON object per line");
  cmd->add_option("FILE", a->input, "names file (default: stdin)");
  cmd->add_option("--ruleset", a->ruleset, RulesHelp())->capture_default_str();
  cmd->add_option("--platform", a->platform,
                  "platform for platform-aware rule sets (default: any other than AMD, as the "
                  "reference treats it)")
      ->check(CLI::IsMember({"amd", "nvidia"}));
  cmd->add_option("--input", a->format,
                  "lines: one raw name per line; jsonl: one JSON string per line")
      ->check(CLI::IsMember({"lines", "jsonl"}))
      ->capture_default_str();
  cmd->add_flag("--roles", a->roles,
                "add each kernel's role (data/kernel-roles.yaml): \"role\" main or helper, a "
                "helper's \"helper\" kind and the categories it \"serves\", a main kernel's "
                "fused operations (\"covers\")");
  return cmd;
}

}  // namespace

Command AddClassifyCommand(CLI::App* app) { return MakeCommand(app, Declare, RunClassify); }

}  // namespace tracefuse::cli
