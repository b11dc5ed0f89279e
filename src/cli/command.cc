#include "command.h"

#include <unistd.h>

#include <cstdio>

#include "fmt/format.h"
#include "tracefuse/batch/compare.h"
#include "tracefuse/pipeline/flow_graph.h"
#include "tracefuse/report/perfetto.h"
#include "tracefuse/report/stats.h"

namespace tracefuse::cli {

int Fail(const absl::Status& s, int code) {
  std::fprintf(stderr, "tracefuse: error: %s\n", std::string(s.message()).c_str());
  return code;
}
int Fail(const absl::Status& s) { return Fail(s, ExitCodeFor(s)); }

int FailReading(const absl::Status& s, int code) {
  std::fprintf(stderr, "tracefuse: error: %s\n", ReadErrorMessage(s).c_str());
  return code;
}

void WarnIfTruncated(const TraceProfile& profile) {
  if (!profile.truncated) return;
  std::fprintf(stderr, "tracefuse: warning: %s: %s\n", profile.path.c_str(),
               TruncationText(profile).c_str());
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::unique_ptr<ProgressLine> ProgressLine::Start(const std::string& mode,
                                                  PipelineOptions* options) {
  if (mode != "always" && !(mode == "auto" && isatty(STDERR_FILENO))) return nullptr;
  auto line = std::make_unique<ProgressLine>();
  options->progress = [p = line.get()](const ProgressUpdate& u) { p->Update(u); };
  return line;
}

void ProgressLine::Update(const ProgressUpdate& u) {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (printed_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  printed_ = true;
  double seconds = std::chrono::duration<double>(now - start_).count();
  double rate = seconds > 0 ? double(u.file_bytes_read) / seconds : 0;
  std::string eta = "?";
  if (rate > 0 && u.file_bytes_total >= u.file_bytes_read) {
    eta = fmt::format("{:.0f}s", double(u.file_bytes_total - u.file_bytes_read) / rate);
  }
  std::fprintf(stderr, "\r\x1b[Ktracefuse: %.2f of %.2f GB read, %.2f GB/s, ETA %s",
               double(u.file_bytes_read) / 1e9, double(u.file_bytes_total) / 1e9, rate / 1e9,
               eta.c_str());
}

ProgressLine::~ProgressLine() {
  if (printed_) std::fprintf(stderr, "\r\x1b[K");
}

void AddProgressOption(CLI::App* cmd, std::string* progress) {
  cmd->add_option("--progress", *progress,
                  "progress line on stderr: auto shows it only when stderr is a terminal")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
}

std::string RulesHelp() {
  std::string names;
  for (const auto& n : RuleSet::BuiltinNames()) names += (names.empty() ? "" : ", ") + n;
  return "rule set: a built-in name (" + names + ") or a rule file (.yaml)";
}

void AddReadOptions(CLI::App* cmd, std::string* ruleset, PipelineOptions* pipeline) {
  cmd->add_option("--ruleset", *ruleset, RulesHelp())->capture_default_str();
  cmd->add_option("--threads", pipeline->threads,
                  "worker threads (default: $SLURM_CPUS_PER_TASK, else the CPUs available)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--lenient", pipeline->salvage_truncated,
                "read a truncated trace (a profiler killed while writing) up to its last complete "
                "event, and say what was dropped");
  cmd->add_option("--max-event-bytes", pipeline->max_event_bytes,
                  "largest event read (e.g. 512M, 1G); a larger one is an error")
      ->transform(CLI::AsSizeValue(/*kb_is_1000=*/false))
      ->check(CLI::PositiveNumber)
      ->default_str("256M");
}

void AddTraceOptions(CLI::App* cmd, std::string* output, std::string* ruleset,
                     PipelineOptions* pipeline) {
  cmd->add_option("-o,--output", *output, "write to FILE (atomically) instead of stdout");
  AddReadOptions(cmd, ruleset, pipeline);
}

void AddNameOnlyOption(CLI::App* cmd, PipelineOptions* pipeline) {
  pipeline->classify_by_launching_op = true;
  cmd->add_flag("--name-only{false}", pipeline->classify_by_launching_op,
                "classify kernels by their names alone; by default the kernels no rule names are "
                "classified by the ops that launched them (reading the CPU side of a trace that "
                "has such kernels a second time)");
}

void AddAlignOption(CLI::App* cmd, std::string* align) {
  cmd->add_option("--align", *align,
                  "--format perfetto: steps places the sides so that matched steps start "
                  "together; none keeps each side's recorded times, moved by one constant so that "
                  "both begin together")
      ->check(CLI::IsMember(PerfettoAligns()))
      ->capture_default_str();
}

void AddMinGroupSizeOption(CLI::App* cmd, uint32_t* min_group_size) {
  cmd->add_option("--min-group-size", *min_group_size,
                  "smallest correlation group (graph replay) that is matched")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

CLI::App* AddOneTraceCommand(CLI::App* app, const std::string& name, const std::string& about,
                             const std::vector<std::string>& formats, OneTraceArgs* a) {
  CLI::App* cmd = app->add_subcommand(name, about);
  cmd->add_option("TRACE", a->trace,
                  "trace file: Kineto or rocprofv3 JSON (.json, .json.gz, .json.zst; - for stdin: "
                  "Kineto), or an Nsight Systems or rocpd SQLite database")
      ->required();
  cmd->add_option("--format", a->format, "output format")
      ->check(CLI::IsMember(formats))
      ->capture_default_str();
  AddTraceOptions(cmd, &a->output, &a->ruleset, &a->pipeline);
  return cmd;
}

std::optional<TraceProfile> ProfileOne(const OneTraceArgs& args, int* exit_code) {
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = LoadClassifier(args.ruleset);
  if (!classifier.ok()) {
    *exit_code = Fail(classifier.status(), kExitUsage);
    return std::nullopt;
  }
  PipelineOptions options = args.pipeline;
  // Per-name and per-group totals suffice, unless kernels are to be linked to their CPU ops.
  options.keep_kernel_records = options.host_activity;
  absl::StatusOr<std::vector<TraceProfile>> profiles =
      ProfileTraces({args.trace}, *classifier, options);
  if (!profiles.ok()) {
    *exit_code = FailReading(profiles.status(), ExitCodeFor(profiles.status()));
    return std::nullopt;
  }
  WarnIfTruncated(profiles->front());
  return std::move(profiles->front());
}

}  // namespace tracefuse::cli
