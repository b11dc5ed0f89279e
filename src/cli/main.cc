// tracefuse command line: one subcommand per file (*_command.cc), declared and dispatched here.
#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/config.h"
#include "command.h"
#include "git_commit.h"  // generated at every build (cmake/GitCommit.cmake)
#include "tracefuse/base/interrupt.h"
#include "tracefuse/pipeline/flow_graph.h"

namespace tracefuse::cli {
namespace {

// ParseCommandLine() returns the exit code to end with when parsing already decided it (help,
// version, a usage error), else nullopt.
std::optional<int> ParseCommandLine(CLI::App* app, int argc, char** argv) {
  try {
    app->parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app->exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app->exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app->exit(e);
  } catch (const CLI::ParseError& e) {
    // The command as far as it was parsed, nested subcommands included ("tracefuse bench
    // classify").
    std::string command = "tracefuse";
    for (const CLI::App* at = app; !at->get_subcommands().empty();) {
      at = at->get_subcommands().front();
      command += " " + at->get_name();
    }
    std::fprintf(stderr, "tracefuse: error: %s (run '%s --help')\n", e.what(), command.c_str());
    return kExitUsage;
  }
  return std::nullopt;
}

// CommandDeclaration is a command's name and the function that declares it.
struct CommandDeclaration {
  std::string_view name;
  Command (*declare)(CLI::App*);
};

constexpr CommandDeclaration kCommands[] = {
    {"stats", AddStatsCommand}, {"compare", AddCompareCommand},
    {"ops", AddOpsCommand},     {"breakdown", AddBreakdownCommand},
    {"rules", AddRulesCommand}, {"classify", AddClassifyCommand},
    {"pairs", AddPairsCommand}, {"batch", AddBatchCommand},
    {"merge", AddMergeCommand}, {"bench", AddBenchCommand}};

// DeclareCommands() declares the command that argv[1] names, or every command when it names none
// (help, --version, a mistake: the usage lists them all). Declaring the options of all ten took
// 1.4 ms here, as long as loading the rule set, on the one thread a run has until then
// (docs/performance.md, "Small files").
std::vector<Command> DeclareCommands(CLI::App* app, int argc, char** argv) {
  const std::string_view first = argc > 1 ? argv[1] : "";
  const bool names_a_command = std::any_of(std::begin(kCommands), std::end(kCommands),
                                           [&](const auto& c) { return c.name == first; });
  std::vector<Command> commands;
  for (const CommandDeclaration& c : kCommands) {
    if (names_a_command && c.name != first) continue;
    commands.push_back(c.declare(app));
    assert(commands.back().app->get_name() == c.name);
  }
  return commands;
}

// VersionText() is what --version prints: the version, then what it was built from and with (a
// bug report needs both).
std::string VersionText() {
  return StrCat("tracefuse ", TRACEFUSE_VERSION, "\ncommit ", TRACEFUSE_GIT_COMMIT, ", ",
                TRACEFUSE_BUILD_TYPE, " build\nbuilt with simdjson ", TRACEFUSE_SIMDJSON_VERSION,
                ", oneTBB ", TRACEFUSE_TBB_VERSION, ", Hyperscan ", TRACEFUSE_HYPERSCAN_VERSION,
                ", ISA-L ", TRACEFUSE_ISAL_VERSION);
}

int Main(int argc, char** argv) {
  CLI::App app{
      "tracefuse: stream PyTorch-profiler (Kineto) traces from AMD and NVIDIA GPUs, "
      "classify their kernels and compare how each platform fuses operations."};
  app.require_subcommand(1);
  app.set_version_flag("--version", VersionText());
  app.footer(
      "Exit codes: 0 success, 1 malformed or unsupported trace, 2 usage error, 3 I/O error, "
      "143 / 130 stopped by SIGTERM / SIGINT.");
  const std::vector<Command> commands = DeclareCommands(&app, argc, argv);
  if (std::optional<int> exit_code = ParseCommandLine(&app, argc, argv)) return *exit_code;
  for (const Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return kExitUsage;
}

}  // namespace
}  // namespace tracefuse::cli

int main(int argc, char** argv) {
  tracefuse::KeepFreedMemoryForReuse();
  tracefuse::InstallInterruptHandlers();
  const int exit_code = tracefuse::cli::Main(argc, argv);
#if defined(ABSL_HAVE_ADDRESS_SANITIZER) || defined(ABSL_HAVE_LEAK_SANITIZER) || \
    defined(ABSL_HAVE_THREAD_SANITIZER)
  // The sanitizers check the whole teardown: every allocation freed, every thread ended.
  return exit_code;
#else
  // Every output is committed by now, and what is left the kernel frees at once. exit() would
  // first destroy the static objects one by one and end oneTBB's workers: 0.7-1.4 ms of an empty
  // comparison's 14-17 here (docs/performance.md, "Small files"). Only the standard streams
  // still hold anything unwritten.
  std::fflush(nullptr);
  std::_Exit(exit_code);
#endif
}
