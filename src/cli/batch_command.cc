#include <optional>

#include "command.h"
#include "tracefuse/batch/manifest.h"
#include "tracefuse/batch/run.h"

namespace tracefuse::cli {
namespace {

struct BatchArgs {
  std::string manifest;
  int task = 0;
  CLI::Option* task_option = nullptr;
  bool all = false;
  BatchOptions options;
};

int RunBatchCommand(const BatchArgs& a) {
  absl::StatusOr<Manifest> manifest = ReadManifest(a.manifest);
  if (!manifest.ok()) {
    const bool missing = manifest.status().code() == absl::StatusCode::kNotFound;
    return Fail(manifest.status(), missing ? kExitIo : kExitUsage);
  }
  std::optional<int> task;
  if (a.task_option->count() > 0) task = a.task;
  absl::StatusOr<std::vector<size_t>> tasks = SelectTasks(*manifest, task, a.all);
  if (!tasks.ok()) return Fail(tasks.status(), kExitUsage);
  absl::StatusOr<int> exit_code = RunBatch(*manifest, *tasks, a.options);
  return exit_code.ok() ? *exit_code : Fail(exit_code.status(), kExitIo);
}

CLI::App* Declare(CLI::App* app, BatchArgs* a) {
  CLI::App* cmd = app->add_subcommand(
      "batch",
      "Run compare for the pairs of a manifest (label, trace1, trace2, options; TSV): one pair "
      "(--task, default $SLURM_ARRAY_TASK_ID, for a Slurm array) or all of them in turn");
  cmd->add_option("MANIFEST", a->manifest, "manifest (TSV: label, trace1, trace2[, options])")
      ->required();
  cmd->add_option("--out", a->options.out_dir,
                  "directory for each pair's reports and <label>.status.json (made if missing)")
      ->required();
  CLI::Option* all = cmd->add_flag("--all", a->all, "run every pair, one after another");
  a->task_option = cmd->add_option("--task", a->task,
                                   "the pair to run: its index among the manifest's rows, from 0 "
                                   "(default: $SLURM_ARRAY_TASK_ID)")
                       ->check(CLI::NonNegativeNumber)
                       ->excludes(all);
  cmd->add_option("--format", a->options.formats,
                  "report formats, comma-separated (json is always written)")
      ->delimiter(',')
      ->check(CLI::IsMember(FusionFormats()))
      ->capture_default_str();
  cmd->add_flag("--force", a->options.force, "re-run pairs whose status says complete");
  AddReadOptions(cmd, &a->options.compare.ruleset, &a->options.pipeline);
  AddMinGroupSizeOption(cmd, &a->options.compare.min_group_size);
  return cmd;
}

}  // namespace

Command AddBatchCommand(CLI::App* app) { return MakeCommand(app, Declare, RunBatchCommand); }

}  // namespace tracefuse::cli
