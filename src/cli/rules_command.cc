#include <cstdio>

#include "command.h"
#include "tracefuse/report/rules.h"

namespace tracefuse::cli {
namespace {

struct RulesArgs {
  std::string ruleset = "tracefuse";
  bool check = false;
};

int RunRules(const RulesArgs& a) {
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = LoadClassifier(a.ruleset);
  if (!classifier.ok()) return Fail(classifier.status(), a.check ? kExitBadTrace : kExitUsage);
  const RuleSet& rules = (*classifier)->rule_set();
  if (a.check) {
    std::printf("%s: OK (%zu rules, %zu categories)\n", a.ruleset.c_str(), rules.rules().size(),
                rules.categories().size());
    return kExitOk;
  }
  std::string out = RulesText(rules);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

CLI::App* Declare(CLI::App* app, RulesArgs* a) {
  CLI::App* cmd = app->add_subcommand("rules", "List a rule set, or validate a rule file");
  cmd->add_option("--ruleset", a->ruleset, RulesHelp())->capture_default_str();
  cmd->add_flag("--check", a->check,
                "only validate: report the first error with its line and exit 1");
  return cmd;
}

}  // namespace

Command AddRulesCommand(CLI::App* app) { return MakeCommand(app, Declare, RunRules); }

}  // namespace tracefuse::cli
