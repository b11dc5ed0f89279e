#include <unistd.h>

#include <mutex>

#include "command.h"
#include "fmt/format.h"
#include "tracefuse/batch/compare.h"

namespace tracefuse::cli {
namespace {

struct CompareArgs {
  std::string trace1, trace2;
  std::string format = "text";
  std::string output = "-";
  std::string progress = "auto";
  CompareOptions options;
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

int RunCompare(const CompareArgs& a) {
  PipelineOptions options;
  options.threads = a.threads;
  std::unique_ptr<ProgressLine> progress;
  if (a.progress == "always" || (a.progress == "auto" && isatty(STDERR_FILENO))) {
    progress = std::make_unique<ProgressLine>();
    options.progress = [p = progress.get()](const ProgressUpdate& u) { p->Update(u); };
  }
  int exit_code = kExitOk;
  absl::StatusOr<Comparison> comparison =
      RunComparison(a.trace1, a.trace2, a.options, options, &exit_code);
  progress.reset();
  if (!comparison.ok()) return Fail(comparison.status(), exit_code);
  absl::Status written = WriteComparison(*comparison, a.options, a.format, a.output, &exit_code);
  return written.ok() ? kExitOk : Fail(written, exit_code);
}

CLI::App* Declare(CLI::App* app, CompareArgs* a) {
  CLI::App* cmd = app->add_subcommand(
      "compare", "Compare two traces (e.g. AMD vs NVIDIA): which platform fuses which operations");
  cmd->add_option("TRACE1", a->trace1, "first trace (.json, .json.gz or .json.zst)")->required();
  cmd->add_option("TRACE2", a->trace2, "second trace (.json, .json.gz or .json.zst)")->required();
  cmd->add_option("--format", a->format,
                  "text and markdown for people; json keeps wafer's schema (plus a "
                  "\"tracefuse\" key); csv has one row per kernel type")
      ->check(CLI::IsMember(FusionFormats()))
      ->capture_default_str();
  AddTraceOptions(cmd, &a->output, &a->options.ruleset, &a->threads);
  AddMinGroupSizeOption(cmd, &a->options.min_group_size);
  cmd->add_option("--progress", a->progress,
                  "progress line on stderr: auto shows it only when stderr is a terminal")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  cmd->add_option("--label1", a->options.label1,
                  "name for trace 1 in text, markdown and CSV (default: its platform)");
  cmd->add_option("--label2", a->options.label2, "name for trace 2");
  return cmd;
}

}  // namespace

Command AddCompareCommand(CLI::App* app) { return MakeCommand(app, Declare, RunCompare); }

}  // namespace tracefuse::cli
