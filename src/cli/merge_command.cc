#include <cmath>
#include <cstdio>

#include "command.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/batch/summary.h"
#include "tracefuse/report/merge.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse::cli {
namespace {

struct MergeArgs {
  std::string dir;
  std::string manifest;
  std::string format = "text";
  std::string output = "-";
  std::string csv_table = "pairs";
  size_t top = 3;
  double straggler_threshold = 0.10;
};

// Incomplete() says in one line why the batch is not known to be done.
std::string Incomplete(const MergeSummary& s) {
  std::string why;
  const size_t complete = s.Count(PairState::kComplete);
  if (complete < s.pairs.size()) {
    why = StrCat(s.pairs.size() - complete, " of ", s.pairs.size(), " pairs are not complete (",
                 s.Count(PairState::kFailed), " failed, ", s.Count(PairState::kInterrupted),
                 " interrupted, ", s.Count(PairState::kRunning), " never finished, ",
                 s.Count(PairState::kMissing), " missing)");
  }
  if (!s.manifest_error.empty()) {
    why += StrCat(why.empty() ? "" : "; ", "the manifest was not read (", s.manifest_error,
                  "): pairs without a status file are not known");
  }
  if (s.pairs.empty()) why += StrCat(why.empty() ? "" : "; ", "no pair in ", s.dir);
  return why;
}

int RunMerge(const MergeArgs& a) {
  SummaryOptions options;
  options.manifest = a.manifest;
  options.top = a.top;
  options.straggler_threshold = a.straggler_threshold;
  options.on_bad_file = [](const std::string& message) {
    std::fprintf(stderr, "tracefuse: warning: %s (pair counted as failed)\n", message.c_str());
  };
  absl::StatusOr<MergeSummary> summary = SummarizeBatch(a.dir, options);
  if (!summary.ok()) return Fail(summary.status(), ExitCodeFor(summary.status(), kExitIo));
  std::string out;
  if (a.format == "json") {
    out = DumpJson(MergeJson(*summary)) + "\n";
  } else if (a.format == "csv") {
    out = MergeCsv(*summary, a.csv_table);
  } else if (a.format == "html") {
    out = MergeHtml(*summary);
  } else {
    out = MergeText(*summary, a.format == "markdown");
  }
  absl::Status written = WriteOutput(a.output, out);
  if (!written.ok()) return Fail(written, ExitCodeFor(written, kExitIo));
  if (summary->Complete()) return kExitOk;
  std::fprintf(stderr, "tracefuse: merge: %s\n", Incomplete(*summary).c_str());
  return kExitIncomplete;
}

CLI::App* Declare(CLI::App* app, MergeArgs* a) {
  CLI::App* cmd = app->add_subcommand(
      "merge",
      "Summarise a batch's output directory: every pair's state and numbers, kernel time per "
      "category across pairs, recurring opportunities, each side's ranks and stragglers, and "
      "the pairs that did not complete (exit 1 when any did not)");
  cmd->add_option("DIR", a->dir, "the directory `tracefuse batch` wrote")->required();
  cmd->add_option("--manifest", a->manifest,
                  "the batch's manifest (default: the one the status files record), to find "
                  "pairs without a status file");
  cmd->add_option("--format", a->format,
                  "text and markdown fit one screen; html is one self-contained page for a "
                  "browser; csv one row per pair (or per fusion difference or op: --csv-table); "
                  "json has it all")
      ->check(CLI::IsMember({"text", "markdown", "csv", "json", "html"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", a->output, "write to FILE (atomically) instead of stdout");
  cmd->add_option("--csv-table", a->csv_table,
                  "the table --format csv writes: pairs (one row per pair), fusion_differences "
                  "or ops (one row per fusion difference, or per op, over the pairs compared "
                  "--by-op, summed)")
      ->check(CLI::IsMember(MergeCsvTables()))
      ->capture_default_str();
  cmd->add_option("--top", a->top, "fusion opportunities listed per pair (csv, json)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--straggler-threshold", a->straggler_threshold,
                  "a straggler computes at least 1 + this times the median rank's GPU "
                  "computation time, and waits least in the collectives")
      ->check(CLI::Validator(
          [](std::string& text) {
            double x = 0;
            const bool number = CLI::detail::lexical_cast(text, x);
            return number && x >= 0 && std::isfinite(x) ? std::string()
                                                        : "not a finite number >= 0: " + text;
          },
          "FINITE>=0"))
      ->capture_default_str();
  return cmd;
}

}  // namespace

Command AddMergeCommand(CLI::App* app) { return MakeCommand(app, Declare, RunMerge); }

}  // namespace tracefuse::cli
