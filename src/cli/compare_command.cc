#include <unistd.h>

#include <mutex>

#include "command.h"
#include "fmt/format.h"
#include "tracefuse/pipeline.h"
#include "tracefuse/report/fusion.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse::cli {
namespace {

struct CompareArgs {
  std::string trace1, trace2;
  std::string format = "text";
  std::string output = "-";
  std::string ruleset = "tracefuse";
  std::string progress = "auto";
  std::string label1, label2;
  uint32_t min_group_size = kDefaultMinGroupSize;
  int threads = 0;
};

// One self-overwriting line on stderr: bytes read of the total, speed, time left.
class ProgressLine {
 public:
  void Update(const ProgressUpdate& u) {
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
  ~ProgressLine() {
    if (printed_) std::fprintf(stderr, "\r\x1b[K");
  }

 private:
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_;
  bool printed_ = false;
};

PerSide<std::string> DefaultLabels(const TraceProfile& a, const TraceProfile& b) {
  if (a.platform != b.platform && a.platform != Platform::kUnknown &&
      b.platform != Platform::kUnknown) {
    return {{std::string(PlatformName(a.platform)), std::string(PlatformName(b.platform))}};
  }
  return ReferenceLabels();
}

int RunCompare(const CompareArgs& a) {
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = LoadClassifier(a.ruleset);
  if (!classifier.ok()) return Fail(classifier.status(), kExitUsage);
  PipelineOptions options;
  options.threads = a.threads;
  std::unique_ptr<ProgressLine> progress;
  if (a.progress == "always" || (a.progress == "auto" && isatty(STDERR_FILENO))) {
    progress = std::make_unique<ProgressLine>();
    options.progress = [p = progress.get()](const ProgressUpdate& u) { p->Update(u); };
  }
  FusionOptions fusion;
  fusion.min_group_size = a.min_group_size;
  absl::StatusOr<Comparison> comparison =
      CompareTraces(a.trace1, a.trace2, *classifier, options, fusion);
  progress.reset();
  if (!comparison.ok()) return Fail(comparison.status());
  const FusionReport& report = comparison->report;
  const PerSide<TraceProfile>& traces = comparison->traces;
  CompareContext context;
  context.read_seconds = comparison->read_seconds;
  context.analyze_seconds = comparison->analyze_seconds;
  context.traces = {{&traces[Side::kTrace1], &traces[Side::kTrace2]}};
  context.labels = DefaultLabels(traces[Side::kTrace1], traces[Side::kTrace2]);
  if (!a.label1.empty()) context.labels[Side::kTrace1] = a.label1;
  if (!a.label2.empty()) context.labels[Side::kTrace2] = a.label2;
  context.min_group_size = a.min_group_size;
  if (a.format == "json") {
    absl::StatusOr<OutputFile> file = OutputFile::Open(a.output);
    absl::Status st = file.ok() ? WriteFusionJson(report, context, &*file) : file.status();
    if (st.ok()) st = file->Commit();
    return st.ok() ? kExitOk : Fail(st, kExitIo);
  }
  std::string out;
  if (a.format == "csv") {
    out = FusionCsv(report, context);
  } else {
    out = FusionText(report, context, a.format == "markdown");
  }
  absl::Status written = WriteOutput(a.output, out);
  return written.ok() ? kExitOk : Fail(written, kExitIo);
}

CLI::App* Declare(CLI::App* app, CompareArgs* a) {
  CLI::App* cmd = app->add_subcommand(
      "compare", "Compare two traces (e.g. AMD vs NVIDIA): which platform fuses which operations");
  cmd->add_option("TRACE1", a->trace1, "first trace (.json or .json.gz)")->required();
  cmd->add_option("TRACE2", a->trace2, "second trace (.json or .json.gz)")->required();
  cmd->add_option("--format", a->format,
                  "text and markdown for people; json keeps wafer's schema (plus a "
                  "\"tracefuse\" key); csv has one row per kernel type")
      ->check(CLI::IsMember({"text", "json", "csv", "markdown"}))
      ->capture_default_str();
  AddTraceOptions(cmd, &a->output, &a->ruleset, &a->threads);
  cmd->add_option("--min-group-size", a->min_group_size,
                  "smallest correlation group (graph replay) that is matched")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--progress", a->progress,
                  "progress line on stderr: auto shows it only when stderr is a terminal")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  cmd->add_option("--label1", a->label1,
                  "name for trace 1 in text, markdown and CSV (default: its platform)");
  cmd->add_option("--label2", a->label2, "name for trace 2");
  return cmd;
}

}  // namespace

Command AddCompareCommand(CLI::App* app) {
  auto args = std::make_shared<CompareArgs>();
  return Command{Declare(app, args.get()), [args] { return RunCompare(*args); }};
}

}  // namespace tracefuse::cli
