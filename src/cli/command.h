// Internal to the command line: what every subcommand shares, and one declaration per command.
//
// Exit codes: tracefuse/base/exit_code.h.
#ifndef TRACEFUSE_SRC_CLI_COMMAND_H_
#define TRACEFUSE_SRC_CLI_COMMAND_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tracefuse/base/exit_code.h"
#include "tracefuse/classify/classifier.h"
#include "tracefuse/pipeline/flow_graph.h"
#include "tracefuse/reduce/trace_profile.h"

namespace tracefuse::cli {

// Fail() prints the status as the one-line `tracefuse: error: ...` and returns `code`.
int Fail(const absl::Status& s, int code);
int Fail(const absl::Status& s);
// FailReading() is Fail() for an error met reading traces, by a command that takes --lenient:
// a truncated trace's message suggests it.
int FailReading(const absl::Status& s, int code);

// WarnIfTruncated() prints `tracefuse: warning: TRACE: cut at byte ...` for a trace that
// --lenient salvaged.
void WarnIfTruncated(const TraceProfile& profile);

double SecondsSince(std::chrono::steady_clock::time_point t);

// RulesHelp() is the --ruleset help, naming the built-in sets.
std::string RulesHelp();

// AddReadOptions() declares the options of every command that reads traces: --ruleset, and
// --threads, --lenient and --max-event-bytes into `pipeline`; AddTraceOptions() adds -o to them,
// for the commands that write one output.
void AddReadOptions(CLI::App* cmd, std::string* ruleset, PipelineOptions* pipeline);
void AddTraceOptions(CLI::App* cmd, std::string* output, std::string* ruleset,
                     PipelineOptions* pipeline);
// AddNameOnlyOption() declares --name-only, and turns classification by launching op on.
void AddNameOnlyOption(CLI::App* cmd, PipelineOptions* pipeline);

// AddAlignOption() declares --align, where --format perfetto places the two sides.
void AddAlignOption(CLI::App* cmd, std::string* align);

// AddMinGroupSizeOption() declares compare's --min-group-size.
void AddMinGroupSizeOption(CLI::App* cmd, uint32_t* min_group_size);

// ProgressLine is one self-overwriting line on stderr: bytes read of the total, speed, time left.
class ProgressLine {
 public:
  // Start() shows one for `mode` "always", or "auto" when stderr is a terminal, fed by
  // `options`' progress callback; nullptr for "never".
  static std::unique_ptr<ProgressLine> Start(const std::string& mode, PipelineOptions* options);
  void Update(const ProgressUpdate& u);
  ~ProgressLine();

 private:
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_;
  bool printed_ = false;
};

// AddProgressOption() declares --progress (auto, always, never).
void AddProgressOption(CLI::App* cmd, std::string* progress);

// What the commands that read one trace (stats, breakdown) take.
struct OneTraceArgs {
  std::string trace;
  std::string format = "text";
  std::string output = "-";
  std::string ruleset = "tracefuse";
  PipelineOptions pipeline;
};

// AddOneTraceCommand() declares a command that reads one trace and writes it in `formats`.
CLI::App* AddOneTraceCommand(CLI::App* app, const std::string& name, const std::string& about,
                             const std::vector<std::string>& formats, OneTraceArgs* a);

// ProfileOne() streams the trace of `args` with its rule set and options; on failure it reports
// the error and returns nullopt, with the exit code in `exit_code`.
std::optional<TraceProfile> ProfileOne(const OneTraceArgs& args, int* exit_code);

// Command is one subcommand: its options are declared on the application; run() executes it
// once the command line has been parsed into them.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// MakeCommand() is the command whose options `declare` declares into an Args, which `run` reads
// once the command line has been parsed.
template <typename Args>
Command MakeCommand(CLI::App* app, CLI::App* (*declare)(CLI::App*, Args*),
                    int (*run)(const Args&)) {
  auto args = std::make_shared<Args>();
  return Command{declare(app, args.get()), [args, run] { return run(*args); }};
}

Command AddStatsCommand(CLI::App* app);
Command AddCompareCommand(CLI::App* app);
Command AddOpsCommand(CLI::App* app);
Command AddBreakdownCommand(CLI::App* app);
Command AddRulesCommand(CLI::App* app);
Command AddClassifyCommand(CLI::App* app);
Command AddPairsCommand(CLI::App* app);
Command AddBatchCommand(CLI::App* app);
Command AddMergeCommand(CLI::App* app);
Command AddBenchCommand(CLI::App* app);

}  // namespace tracefuse::cli

#endif  // TRACEFUSE_SRC_CLI_COMMAND_H_
