#include "command.h"
#include "tracefuse/report/output_file.h"
#include "tracefuse/report/stats.h"

namespace tracefuse::cli {
namespace {

struct StatsArgs : OneTraceArgs {
  bool by_op = false;
};

int RunStats(const StatsArgs& a) {
  auto started = std::chrono::steady_clock::now();
  int exit_code = kExitOk;
  OneTraceArgs reading = a;
  reading.pipeline.host_activity = a.by_op;
  reading.pipeline.step_figures = a.format == "json";  // it lists every step
  std::optional<TraceProfile> profile = ProfileOne(reading, &exit_code);
  if (!profile) return exit_code;
  CpuSideStats cpu_side;
  if (a.by_op) {
    const OpTree tree = TakeOpTree(&*profile, &cpu_side.held);
    cpu_side.top_level_ops = tree.units.size();
    cpu_side.steps = tree.steps.size();
  }
  double elapsed = SecondsSince(started);
  const TraceProfile& p = *profile;
  absl::Status written;
  if (a.format == "json") {
    written = WriteStreamedOutput(a.output, [&](OutputFile* sink) {
      return WriteStatsJson(p, elapsed, a.by_op ? &cpu_side : nullptr, sink);
    });
  } else {
    written =
        WriteOutput(a.output, StatsText(p, elapsed) + (a.by_op ? CpuSideText(p, cpu_side) : ""));
  }
  return written.ok() ? kExitOk : Fail(written, kExitIo);
}

CLI::App* Declare(CLI::App* app, StatsArgs* a) {
  CLI::App* cmd = AddOneTraceCommand(app, "stats",
                                     "Summarise one trace: platform, GPU, events per category, "
                                     "kernels, correlation groups, throughput",
                                     {"text", "json"}, a);
  cmd->add_flag("--by-op", a->by_op,
                "also link the kernels to their CPU ops, as `ops` does, and say how (streamed or "
                "any-order) and what that held");
  return cmd;
}

}  // namespace

Command AddStatsCommand(CLI::App* app) { return MakeCommand(app, Declare, RunStats); }

}  // namespace tracefuse::cli
