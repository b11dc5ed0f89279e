#include <charconv>
#include <cstdint>
#include <optional>
#include <string>

#include "command.h"
#include "tracefuse/batch/manifest.h"
#include "tracefuse/batch/run.h"

namespace tracefuse::cli {
namespace {

struct BatchArgs {
  std::string manifest;
  std::string task;
  CLI::Option* task_option = nullptr;
  TaskSelection selection;
  BatchOptions options;
};

int RunBatchCommand(const BatchArgs& a) {
  absl::StatusOr<Manifest> manifest = ReadManifest(a.manifest);
  if (!manifest.ok()) {
    const bool missing = manifest.status().code() == absl::StatusCode::kNotFound;
    return Fail(manifest.status(), missing ? kExitIo : kExitUsage);
  }
  TaskSelection selection = a.selection;
  if (a.task_option->count() > 0) selection.task = ParseTaskSpec(a.task);  // checked when parsed
  absl::StatusOr<std::vector<size_t>> tasks = SelectTasks(*manifest, selection);
  if (!tasks.ok()) return Fail(tasks.status(), kExitUsage);
  absl::StatusOr<int> exit_code = RunBatch(*manifest, *tasks, a.options);
  return exit_code.ok() ? *exit_code : Fail(exit_code.status(), kExitIo);
}

CLI::App* Declare(CLI::App* app, BatchArgs* a) {
  CLI::App* cmd = app->add_subcommand(
      "batch",
      "Run compare for the pairs of a manifest (label, trace1, trace2, options; TSV), one after "
      "another in one process: one pair (--task, default $SLURM_ARRAY_TASK_ID, for a Slurm "
      "array), a Slurm array task's --rows-per-task pairs, a range of rows, or all of them");
  cmd->add_option("MANIFEST", a->manifest, "manifest (TSV: label, trace1, trace2[, options])")
      ->required();
  cmd->add_option("--out", a->options.out_dir,
                  "directory for each pair's reports and <label>.status.json (made if missing)")
      ->required();
  CLI::Option* all = cmd->add_flag("--all", a->selection.all, "run every pair, one after another");
  const CLI::Validator task_spec(
      [](std::string& text) -> std::string {
        if (ParseTaskSpec(text)) return "";
        return "'" + text +
               "' is not a task index N nor a range of rows FIRST-LAST (FIRST <= LAST)";
      },
      "");
  a->task_option = cmd->add_option("--task", a->task,
                                   "the array task to run (default: $SLURM_ARRAY_TASK_ID): task N "
                                   "runs row N of the manifest (from 0), or with --rows-per-task "
                                   "K rows N*K to N*K+K-1; FIRST-LAST runs those rows")
                       ->check(task_spec)
                       ->type_name("N|FIRST-LAST")
                       ->excludes(all);
  const CLI::Validator positive(
      [](std::string& text) -> std::string {
        uint32_t n = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        if (ec == std::errc() && end == text.data() + text.size() && n > 0) return "";
        return "'" + text + "' is not a positive integer";
      },
      "");
  cmd->add_option("--rows-per-task", a->selection.rows_per_task,
                  "rows per array task, run one after another in one process: an array of "
                  "ceil(rows/K) tasks covers the manifest, and a job array of small pairs pays "
                  "the start-up once per task")
      ->check(positive)
      ->type_name("K")
      ->capture_default_str()
      ->excludes(all);
  cmd->add_option("--format", a->options.formats,
                  "report formats, comma-separated (json is always written)")
      ->delimiter(',')
      ->check(CLI::IsMember(FusionFormats()))
      ->capture_default_str();
  cmd->add_flag("--force", a->options.force, "re-run pairs whose status says complete");
  cmd->add_flag("--by-op", a->options.compare.by_op,
                "also read the CPU side and align the operators, as compare --by-op: each pair's "
                "reports then hold its fusion differences, and <label>.ops.json its op "
                "comparison (as `tracefuse ops --format json` writes it), which merge sums");
  AddReadOptions(cmd, &a->options.compare.ruleset, &a->options.pipeline);
  AddNameOnlyOption(cmd, &a->options.pipeline);
  AddMinGroupSizeOption(cmd, &a->options.compare.min_group_size);
  return cmd;
}

}  // namespace

Command AddBatchCommand(CLI::App* app) { return MakeCommand(app, Declare, RunBatchCommand); }

}  // namespace tracefuse::cli
