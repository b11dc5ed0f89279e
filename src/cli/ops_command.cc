#include "command.h"
#include "tracefuse/batch/compare.h"
#include "tracefuse/report/ops.h"

namespace tracefuse::cli {
namespace {

struct OpsArgs {
  std::string trace1, trace2;
  std::string format = "text";
  std::string output = "-";
  std::string progress = "auto";
  std::string ruleset = "tracefuse";
  std::string label1, label2;
  size_t top = 20;
  std::string csv_table = "ops";
  uint32_t max_edit_distance = OpCompareOptions().edit_cap;
  std::string gpu_spec;  // "": the built-in peak table
  bool full_names = false;
  std::string align = "steps";
  PipelineOptions pipeline;
};

int RunOps(const OpsArgs& a) {
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = LoadClassifier(a.ruleset);
  if (!classifier.ok())
    return Fail(classifier.status(), ExitCodeFor(classifier.status(), kExitUsage));
  std::optional<GpuSpecs> gpu_specs;
  if (!a.gpu_spec.empty()) {
    absl::StatusOr<GpuSpecs> loaded = LoadGpuSpecs(a.gpu_spec);
    if (!loaded.ok()) return Fail(loaded.status(), ExitCodeFor(loaded.status(), kExitUsage));
    gpu_specs = WithBuiltinGpuSpecs(*std::move(loaded));
  }
  PipelineOptions options = a.pipeline;
  const bool perfetto = a.format == "perfetto";
  options.keep_placement = perfetto;
  options.idle_cpu_ops = !perfetto;
  std::unique_ptr<ProgressLine> progress = ProgressLine::Start(a.progress, &options);
  OpCompareOptions compare;
  compare.keep_partners = perfetto;
  compare.top_instances = a.top;
  compare.edit_cap = a.max_edit_distance;
  if (gpu_specs) compare.gpu_specs = &*gpu_specs;
  absl::StatusOr<OperatorComparison> c =
      CompareOperators(a.trace1, a.trace2, *classifier, options, compare);
  progress.reset();
  if (!c.ok()) return FailReading(c.status(), ExitCodeFor(c.status()));
  for (const TraceProfile& trace : c->traces) WarnIfTruncated(trace);
  OpsContext context;
  const PerSide<TraceProfile>& traces = c->traces;
  context.traces = {{&traces[Side::kTrace1], &traces[Side::kTrace2]}};
  context.labels =
      ComparisonLabels(traces[Side::kTrace1], traces[Side::kTrace2], a.label1, a.label2);
  context.top = a.top;
  context.csv_table = a.csv_table;
  context.full_names = a.full_names;
  context.trees = {{&c->trees[Side::kTrace1], &c->trees[Side::kTrace2]}};
  context.align = PerfettoAlignNamed(a.align);
  context.threads = options.threads > 0 ? options.threads : DefaultThreadCount();
  context.read_seconds = c->read_seconds;
  context.analyze_seconds = c->analyze_seconds;
  absl::Status written = WriteOpsReport(c->ops, context, a.format, a.output);
  return written.ok() ? kExitOk : Fail(written, ExitCodeFor(written, kExitIo));
}

CLI::App* Declare(CLI::App* app, OpsArgs* a) {
  CLI::App* cmd = app->add_subcommand(
      "ops",
      "Compare two traces op by op: which PyTorch operator is slower on which side, and "
      "which kernels each side runs for it");
  cmd->add_option("TRACE1", a->trace1,
                  "first trace: the PyTorch profiler's (.json, .json.gz, .json.zst), or a "
                  "vendor's profile with the NVTX or roctx ranges of emit_nvtx (docs/formats.md)")
      ->required();
  cmd->add_option("TRACE2", a->trace2, "second trace (likewise)")->required();
  cmd->add_option("--format", a->format,
                  "text and markdown for people; html one self-contained page (no script, "
                  "nothing fetched) with the example kernels aligned; json has every row (schema "
                  "tracefuse.ops/1); csv one row per op and scope; perfetto one Perfetto trace "
                  "of both sides' kernels and ops, matched ops linked (docs/reports.md)")
      ->check(CLI::IsMember(OpsFormats()))
      ->capture_default_str();
  cmd->add_option("--csv-table", a->csv_table,
                  "the table --format csv writes: ops (one row per op and scope), "
                  "fusion_differences (one row per difference), idle (each side's idle split per "
                  "device) or launches (per side, device and launch API)")
      ->check(CLI::IsMember(OpsCsvTables()))
      ->capture_default_str();
  cmd->add_option("--top", a->top, "rows per table (text, markdown, html) and instances listed")
      ->capture_default_str();
  cmd->add_option("--max-edit-distance", a->max_edit_distance,
                  "per step: past this many inserted and deleted ops, match ops of the same name "
                  "and scope in order instead of aligning the sequences")
      ->capture_default_str();
  cmd->add_option("--gpu-spec", a->gpu_spec,
                  "GPU peaks (YAML, the layout of data/gpus.yaml) for percent of peak: its rows "
                  "are added to the built-in table, each replacing the built-in row of its name, "
                  "and are matched first");
  cmd->add_flag("--full-names", a->full_names,
                "text and markdown: name each kernel family by its example, the full name of its "
                "kernels with the most time there (JSON has both; HTML shows it on hover)");
  AddAlignOption(cmd, &a->align);
  AddTraceOptions(cmd, &a->output, &a->ruleset, &a->pipeline);
  AddProgressOption(cmd, &a->progress);
  cmd->add_option("--label1", a->label1, "name for trace 1 (default: its platform)");
  cmd->add_option("--label2", a->label2, "name for trace 2");
  return cmd;
}

}  // namespace

Command AddOpsCommand(CLI::App* app) { return MakeCommand(app, Declare, RunOps); }

}  // namespace tracefuse::cli
