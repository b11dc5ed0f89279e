#include "command.h"
#include "tracefuse/batch/compare.h"

namespace tracefuse::cli {
namespace {

struct CompareArgs {
  std::string trace1, trace2;
  std::string format = "text";
  std::string output = "-";
  std::string progress = "auto";
  CompareOptions options;
  PipelineOptions pipeline;
};

int RunCompare(const CompareArgs& a) {
  if (a.options.csv_table == "fusion_differences" && !a.options.by_op) {
    return Fail(absl::InvalidArgumentError("--csv-table fusion_differences needs --by-op"),
                kExitUsage);
  }
  if (a.options.full_names && !a.options.by_op) {
    return Fail(absl::InvalidArgumentError("--full-names needs --by-op"), kExitUsage);
  }
  if (a.format == "perfetto" && !a.options.by_op) {
    return Fail(absl::InvalidArgumentError("--format perfetto needs --by-op"), kExitUsage);
  }
  PipelineOptions options = a.pipeline;
  options.keep_placement = a.format == "perfetto";
  options.idle_cpu_ops = !options.keep_placement;
  CompareOptions compare = a.options;
  compare.threads = options.threads;
  std::unique_ptr<ProgressLine> progress = ProgressLine::Start(a.progress, &options);
  int exit_code = kExitOk;
  absl::StatusOr<Comparison> comparison =
      RunComparison(a.trace1, a.trace2, compare, options, &exit_code);
  progress.reset();
  if (!comparison.ok()) return FailReading(comparison.status(), exit_code);
  for (const TraceProfile& trace : comparison->traces) WarnIfTruncated(trace);
  absl::Status written = WriteComparison(*comparison, compare, a.format, a.output, &exit_code);
  return written.ok() ? kExitOk : Fail(written, exit_code);
}

CLI::App* Declare(CLI::App* app, CompareArgs* a) {
  CLI::App* cmd = app->add_subcommand(
      "compare", "Compare two traces (e.g. AMD vs NVIDIA): which platform fuses which operations");
  cmd->add_option("TRACE1", a->trace1,
                  "first trace: Kineto or rocprofv3 JSON (.json, .json.gz, .json.zst), or an "
                  "Nsight Systems or rocpd database")
      ->required();
  cmd->add_option("TRACE2", a->trace2, "second trace, of any of the same formats")->required();
  cmd->add_option("--format", a->format,
                  "text and markdown for people; html is one self-contained page for a browser "
                  "(bars, aligned groups, drill-downs); json keeps wafer's schema (plus a "
                  "\"tracefuse\" key); csv has one row per kernel type; perfetto (with --by-op) "
                  "one Perfetto trace of both sides' kernels and ops, matched ops linked")
      ->check(CLI::IsMember(CompareFormats()))
      ->capture_default_str();
  AddTraceOptions(cmd, &a->output, &a->options.ruleset, &a->pipeline);
  AddMinGroupSizeOption(cmd, &a->options.min_group_size);
  AddNameOnlyOption(cmd, &a->pipeline);
  cmd->add_flag("--by-op", a->options.by_op,
                "also read the CPU side and align the operators: the fusion differences of eager "
                "traces, which replay no graph (as `tracefuse ops` finds them), in every format");
  cmd->add_flag("--full-names", a->options.full_names,
                "with --by-op, text and markdown: the fusion differences' kernels by their full "
                "names instead of their families");
  cmd->add_option("--csv-table", a->options.csv_table,
                  "the table --format csv writes: types (one row per kernel type), "
                  "fusion_differences (one row per difference; needs --by-op), idle (each side's "
                  "idle split per device) or launches (per side, device and launch API)")
      ->check(CLI::IsMember(FusionCsvTables()))
      ->capture_default_str();
  AddAlignOption(cmd, &a->options.align);
  AddProgressOption(cmd, &a->progress);
  cmd->add_option("--label1", a->options.label1,
                  "name for trace 1 in text, markdown and CSV (default: its platform)");
  cmd->add_option("--label2", a->options.label2, "name for trace 2");
  return cmd;
}

}  // namespace

Command AddCompareCommand(CLI::App* app) { return MakeCommand(app, Declare, RunCompare); }

}  // namespace tracefuse::cli
