#include "command.h"
#include "tracefuse/report/breakdown.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse::cli {
namespace {

struct BreakdownArgs : OneTraceArgs {
  size_t top = 5;
};

int RunBreakdown(const BreakdownArgs& a) {
  int exit_code = kExitOk;
  std::optional<TraceProfile> profile = ProfileOne(a.trace, a.ruleset, a.threads, &exit_code);
  if (!profile) return exit_code;
  const TraceProfile& p = *profile;
  std::string out = a.format == "json"  ? BreakdownJson(p, a.top)
                    : a.format == "csv" ? BreakdownCsv(p, a.top)
                                        : BreakdownText(p, a.top);
  absl::Status written = WriteOutput(a.output, out);
  return written.ok() ? kExitOk : Fail(written, kExitIo);
}

CLI::App* Declare(CLI::App* app, BreakdownArgs* a) {
  CLI::App* cmd = AddOneTraceCommand(app, "breakdown",
                                     "Kernel time per category, the top kernels of each, and the "
                                     "top unclassified kernels of one trace",
                                     {"text", "json", "csv"}, a);
  cmd->add_option("--top", a->top, "kernels listed per category")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return cmd;
}

}  // namespace

Command AddBreakdownCommand(CLI::App* app) { return MakeCommand(app, Declare, RunBreakdown); }

}  // namespace tracefuse::cli
