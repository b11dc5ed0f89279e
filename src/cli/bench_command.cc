#include <algorithm>
#include <charconv>

#include "command.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/benchmark/classification.h"
#include "tracefuse/report/json.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse::cli {
namespace {

struct BenchClassifyArgs {
  std::vector<std::string> inputs;
  std::vector<std::string> rulesets = {"tracefuse"};
  std::vector<int> threads;  // empty: 1 and the hardware concurrency
  int repetitions = 5;
  std::string format = "text";
  std::string output = "-";
};

// kMaxThreads bounds --threads: each thread is started for real (see benchmark/classification.h).
constexpr int kMaxThreads = 1024;

// CountFrom1To() accepts a whole number from 1 to `max`, for an error that says so (CLI11's own
// range checks print the limits of a double).
CLI::Validator CountFrom1To(int max) {
  return CLI::Validator(
      [max](std::string& s) -> std::string {
        int n = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
        if (ec == std::errc() && end == s.data() + s.size() && n >= 1 && n <= max) return "";
        return StrCat("'", s, "' is not a whole number from 1 to ", max);
      },
      StrCat("1..", max));
}

// LoadRuleSets() loads each rule set once, compiling it once too so that one that Hyperscan
// rejects is a usage error before anything is read; `reader` is the first one's classifier, for
// streaming the traces. Two sets of one name are an error too: results name their set.
std::optional<int> LoadRuleSets(const std::vector<std::string>& args,
                                std::vector<std::shared_ptr<const RuleSet>>* rule_sets,
                                std::shared_ptr<const Classifier>* reader) {
  std::vector<std::string> loaded;
  for (const std::string& arg : args) {
    if (std::find(loaded.begin(), loaded.end(), arg) != loaded.end()) continue;
    absl::StatusOr<std::shared_ptr<const RuleSet>> rules = RuleSet::Load(arg);
    if (!rules.ok()) return Fail(rules.status(), kExitUsage);
    absl::StatusOr<std::shared_ptr<const Classifier>> classifier = Classifier::Create(*rules);
    if (!classifier.ok()) return Fail(classifier.status(), kExitUsage);
    for (size_t i = 0; i < rule_sets->size(); ++i) {
      if ((*rule_sets)[i]->name() != (**rules).name()) continue;
      return Fail(absl::InvalidArgumentError(StrCat("--ruleset ", loaded[i], " and ", arg,
                                                    " are both named '", (**rules).name(),
                                                    "': the results would not tell them apart")),
                  kExitUsage);
    }
    if (*reader == nullptr) *reader = *classifier;
    loaded.push_back(arg);
    rule_sets->push_back(*rules);
  }
  return std::nullopt;
}

int RunBenchClassify(const BenchClassifyArgs& a) {
  if (std::find(a.inputs.begin(), a.inputs.end(), "-") != a.inputs.end()) {
    return Fail(absl::InvalidArgumentError(
                    "bench classify reads files, not standard input ('-'): it decides what each "
                    "input holds from its name and first bytes"),
                kExitUsage);
  }
  std::vector<std::shared_ptr<const RuleSet>> rule_sets;
  std::shared_ptr<const Classifier> reader;
  if (std::optional<int> failed = LoadRuleSets(a.rulesets, &rule_sets, &reader)) return *failed;
  absl::StatusOr<BenchmarkNames> names = ReadBenchmarkNames(a.inputs, reader, PipelineOptions{});
  if (!names.ok()) return Fail(names.status());
  ClassificationBenchmarkOptions options;
  options.threads = a.threads;
  options.repetitions = a.repetitions;
  absl::StatusOr<ClassificationBenchmark> run =
      RunClassificationBenchmark(std::move(*names), rule_sets, options);
  if (!run.ok()) return Fail(run.status());
  const std::string out = a.format == "json" ? DumpJson(ClassificationBenchmarkJson(*run)) + "\n"
                                             : ClassificationBenchmarkText(*run);
  absl::Status written = WriteOutput(a.output, out);
  return written.ok() ? kExitOk : Fail(written, ExitCodeFor(written, kExitIo));
}

CLI::App* Declare(CLI::App* app, BenchClassifyArgs* a) {
  CLI::App* bench = app->add_subcommand("bench", "Measure tracefuse on this machine");
  bench->require_subcommand(1);
  CLI::App* cmd = bench->add_subcommand(
      "classify",
      "Classification throughput, names per second, of Hyperscan, the per-thread name cache "
      "and the rules one at a time, on 1..N threads; checks that they agree on every name first");
  cmd->footer(
      "Exit codes: 0 success, 1 malformed or unsupported trace (or the substring baseline and "
      "Hyperscan disagree on a name), 2 usage error, 3 I/O error, 143 / 130 stopped by SIGTERM "
      "/ SIGINT.");
  cmd->add_option(
         "INPUT", a->inputs,
         "traces (.json, .json.gz, .json.zst: their distinct kernel names) and names files (.txt: "
         "one per line; .jsonl: JSON strings or objects with a \"name\"); other names "
         "are decided by content")
      ->required();
  // One value per occurrence: a vector option would otherwise also take the INPUTs after it.
  cmd->add_option("--ruleset", a->rulesets, RulesHelp() + "; repeat for several")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->capture_default_str();
  cmd->add_option("--threads", a->threads,
                  "thread counts, repeated or comma-separated (default: 1 and the hardware "
                  "concurrency)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->delimiter(',')
      ->check(CountFrom1To(kMaxThreads));
  cmd->add_option("--repetitions", a->repetitions,
                  "repetitions per figure, each at least 0.2 s; figures are their median")
      ->check(CountFrom1To(1000))
      ->capture_default_str();
  cmd->add_option("--format", a->format, "output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", a->output, "write to FILE (atomically) instead of stdout");
  return bench;
}

}  // namespace

Command AddBenchCommand(CLI::App* app) { return MakeCommand(app, Declare, RunBenchClassify); }

}  // namespace tracefuse::cli
