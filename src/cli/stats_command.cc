#include "command.h"
#include "tracefuse/report/json.h"
#include "tracefuse/report/output_file.h"
#include "tracefuse/report/stats.h"

namespace tracefuse::cli {
namespace {

using StatsArgs = OneTraceArgs;

int RunStats(const StatsArgs& a) {
  auto started = std::chrono::steady_clock::now();
  int exit_code = kExitOk;
  std::optional<TraceProfile> profile = ProfileOne(a, &exit_code);
  if (!profile) return exit_code;
  double elapsed = SecondsSince(started);
  const TraceProfile& p = *profile;
  std::string out =
      a.format == "json" ? DumpJson(StatsJson(p, elapsed)) + "\n" : StatsText(p, elapsed);
  absl::Status written = WriteOutput(a.output, out);
  return written.ok() ? kExitOk : Fail(written, kExitIo);
}

CLI::App* Declare(CLI::App* app, StatsArgs* a) {
  return AddOneTraceCommand(app, "stats",
                            "Summarise one trace: platform, GPU, events per category, kernels, "
                            "correlation groups, throughput",
                            {"text", "json"}, a);
}

}  // namespace

Command AddStatsCommand(CLI::App* app) { return MakeCommand(app, Declare, RunStats); }

}  // namespace tracefuse::cli
