#include "command.h"

#include <cstdio>

#include "tracefuse/pipeline.h"

namespace tracefuse::cli {

int Fail(const absl::Status& s, int code) {
  std::fprintf(stderr, "tracefuse: error: %s\n", std::string(s.message()).c_str());
  return code;
}
int Fail(const absl::Status& s) { return Fail(s, ExitCodeFor(s)); }

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string RulesHelp() {
  std::string names;
  for (const auto& n : RuleSet::BuiltinNames()) names += (names.empty() ? "" : ", ") + n;
  return "rule set: a built-in name (" + names + ") or a rule file (.yaml)";
}

void AddReadOptions(CLI::App* cmd, std::string* ruleset, int* threads) {
  cmd->add_option("--ruleset", *ruleset, RulesHelp())->capture_default_str();
  cmd->add_option("--threads", *threads,
                  "worker threads (default: $SLURM_CPUS_PER_TASK, else the CPUs available)")
      ->check(CLI::PositiveNumber);
}

void AddTraceOptions(CLI::App* cmd, std::string* output, std::string* ruleset, int* threads) {
  cmd->add_option("-o,--output", *output, "write to FILE (atomically) instead of stdout");
  AddReadOptions(cmd, ruleset, threads);
}

void AddMinGroupSizeOption(CLI::App* cmd, uint32_t* min_group_size) {
  cmd->add_option("--min-group-size", *min_group_size,
                  "smallest correlation group (graph replay) that is matched")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

CLI::App* AddOneTraceCommand(CLI::App* app, const std::string& name, const std::string& about,
                             const std::vector<std::string>& formats, OneTraceArgs* a) {
  CLI::App* cmd = app->add_subcommand(name, about);
  cmd->add_option("TRACE", a->trace, "trace file (.json, .json.gz or .json.zst; - for stdin)")
      ->required();
  cmd->add_option("--format", a->format, "output format")
      ->check(CLI::IsMember(formats))
      ->capture_default_str();
  AddTraceOptions(cmd, &a->output, &a->ruleset, &a->threads);
  return cmd;
}

std::optional<TraceProfile> ProfileOne(const std::string& trace, const std::string& ruleset,
                                       int threads, int* exit_code) {
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = LoadClassifier(ruleset);
  if (!classifier.ok()) {
    *exit_code = Fail(classifier.status(), kExitUsage);
    return std::nullopt;
  }
  PipelineOptions options;
  options.threads = threads;
  options.keep_kernel_records = false;  // per-name and per-group totals suffice
  absl::StatusOr<std::vector<TraceProfile>> profiles = ProfileTraces({trace}, *classifier, options);
  if (!profiles.ok()) {
    *exit_code = Fail(profiles.status());
    return std::nullopt;
  }
  return std::move(profiles->front());
}

}  // namespace tracefuse::cli
