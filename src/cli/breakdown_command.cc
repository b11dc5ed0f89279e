#include "command.h"
#include "tracefuse/report/breakdown.h"
#include "tracefuse/report/output_file.h"
#include "tracefuse/report/suggest.h"

namespace tracefuse::cli {
namespace {

struct BreakdownArgs : OneTraceArgs {
  size_t top = 5;
  bool suggest = false;
  bool by_op = false;
  const CLI::Option* top_option = nullptr;  // whether --top was given: --suggest's own default
};

int RunBreakdown(const BreakdownArgs& a) {
  if (a.suggest && a.format != "text") {
    return Fail(absl::InvalidArgumentError(
                    StrCat("--suggest writes a rule file (YAML), not --format ", a.format)),
                kExitUsage);
  }
  int exit_code = kExitOk;
  OneTraceArgs reading = a;
  reading.pipeline.host_activity = a.by_op;
  std::optional<TraceProfile> profile = ProfileOne(reading, &exit_code);
  if (!profile) return exit_code;
  std::optional<std::vector<CategoryWork>> work;
  if (a.by_op) {
    const OpTree tree = TakeOpTree(&*profile);
    work = CategoryWorkOf(*profile, tree, WorkOfSets(tree));
  }
  const std::vector<CategoryWork>* by_op = work ? &*work : nullptr;
  const TraceProfile& p = *profile;
  std::string out;
  if (a.suggest) {
    SuggestOptions options;
    options.families = a.top_option->count() > 0 ? a.top : kDefaultSuggestedFamilies;
    options.ruleset = a.ruleset;
    out = SuggestRulesYaml(p, options);
  } else {
    out = a.format == "json"   ? BreakdownJson(p, a.top, by_op)
          : a.format == "csv"  ? BreakdownCsv(p, a.top, by_op)
          : a.format == "html" ? BreakdownHtml(p, a.top, by_op)
                               : BreakdownText(p, a.top, by_op);
  }
  absl::Status written = WriteOutput(a.output, out);
  return written.ok() ? kExitOk : Fail(written, kExitIo);
}

CLI::App* Declare(CLI::App* app, BreakdownArgs* a) {
  CLI::App* cmd = AddOneTraceCommand(app, "breakdown",
                                     "Kernel time per category, the top kernels of each, and the "
                                     "top unclassified kernels of one trace",
                                     {"text", "json", "csv", "html"}, a);
  a->top_option = cmd->add_option("--top", a->top,
                                  "kernels listed per category; with --suggest, the most rules "
                                  "suggested (default 10)")
                      ->check(CLI::PositiveNumber)
                      ->capture_default_str();
  cmd->add_flag("--suggest", a->suggest,
                "instead of the breakdown, write a starter rule file (YAML) with one rule per "
                "family of similar unclassified kernel names, by time");
  AddNameOnlyOption(cmd, &a->pipeline);
  cmd->add_flag("--by-op", a->by_op,
                "also link the kernels to their CPU ops, as `ops` does, for each category's "
                "achieved TFLOP/s where the trace recorded shapes (docs/perf-models.md)");
  return cmd;
}

}  // namespace

Command AddBreakdownCommand(CLI::App* app) { return MakeCommand(app, Declare, RunBreakdown); }

}  // namespace tracefuse::cli
