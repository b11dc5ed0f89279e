// Internal to the command line: what every subcommand shares, and one declaration per command.
//
// Exit codes: 0 success; 1 malformed or unsupported trace (or rule file failing --check, or a
// merged batch with pairs not complete);
// 2 usage error (bad flags, unknown rule set); 3 I/O error (missing file, directory, unreadable);
// 143 / 130 stopped by SIGTERM / SIGINT (see tracefuse/interrupt.h).
#ifndef TRACEFUSE_SRC_CLI_COMMAND_H_
#define TRACEFUSE_SRC_CLI_COMMAND_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tracefuse/classify.h"
#include "tracefuse/reduce.h"

namespace tracefuse::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadTrace = 1;
inline constexpr int kExitIncomplete = 1;  // merge: some pair of the batch is not complete
inline constexpr int kExitUsage = 2;
inline constexpr int kExitIo = 3;
// A run stopped by SIGTERM or SIGINT exits with this plus the signal's number: 143, 130.
inline constexpr int kExitSignalBase = 128;

// ExitCodeFor() maps a status to the exit code documented above.
int ExitCodeFor(const absl::Status& s);
// Fail() prints the status as the one-line `tracefuse: error: ...` and returns `code`.
int Fail(const absl::Status& s, int code);
int Fail(const absl::Status& s);

double SecondsSince(std::chrono::steady_clock::time_point t);

absl::StatusOr<std::shared_ptr<const Classifier>> LoadClassifier(const std::string& ruleset);

// RulesHelp() is the --ruleset help, naming the built-in sets.
std::string RulesHelp();

// AddTraceOptions() declares the options every trace-reading command shares.
void AddTraceOptions(CLI::App* cmd, std::string* output, std::string* ruleset, int* threads);

// What the commands that read one trace (stats, breakdown) take.
struct OneTraceArgs {
  std::string trace;
  std::string format = "text";
  std::string output = "-";
  std::string ruleset = "tracefuse";
  int threads = 0;
};

// AddOneTraceCommand() declares a command that reads one trace and writes it in `formats`.
CLI::App* AddOneTraceCommand(CLI::App* app, const std::string& name, const std::string& about,
                             const std::vector<std::string>& formats, OneTraceArgs* a);

// ProfileOne() streams one trace with the given rule set; on failure it reports the error and
// returns nullopt, with the exit code in `exit_code`.
std::optional<TraceProfile> ProfileOne(const std::string& trace, const std::string& ruleset,
                                       int threads, int* exit_code);

// Command is one subcommand: its options are declared on the application; run() executes it
// once the command line has been parsed into them.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command AddStatsCommand(CLI::App* app);
Command AddCompareCommand(CLI::App* app);
Command AddBreakdownCommand(CLI::App* app);
Command AddRulesCommand(CLI::App* app);
Command AddClassifyCommand(CLI::App* app);
Command AddMergeCommand(CLI::App* app);

}  // namespace tracefuse::cli

#endif  // TRACEFUSE_SRC_CLI_COMMAND_H_
