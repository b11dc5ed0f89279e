// tracefuse command line: subcommands over the pipeline stages.
//
// Exit codes: 0 success; 1 malformed or unsupported trace (or rule file failing --check);
// 2 usage error (bad flags, unknown rule set); 3 I/O error (missing file, directory, unreadable).
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "fmt/format.h"
#include "simdjson.h"
#include "tracefuse/analyze.h"
#include "tracefuse/classify.h"
#include "tracefuse/pipeline.h"
#include "tracefuse/report/breakdown.h"
#include "tracefuse/report/fusion.h"
#include "tracefuse/report/json.h"
#include "tracefuse/report/output_file.h"
#include "tracefuse/report/rules.h"
#include "tracefuse/report/stats.h"
#include "tracefuse/strings.h"

namespace tracefuse {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadTrace = 1;
constexpr int kExitUsage = 2;
constexpr int kExitIo = 3;

int ExitCodeFor(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kUnimplemented:
      return kExitBadTrace;
    default:
      return kExitIo;
  }
}

int Fail(const absl::Status& s, int code) {
  std::fprintf(stderr, "tracefuse: error: %s\n", std::string(s.message()).c_str());
  return code;
}
int Fail(const absl::Status& s) { return Fail(s, ExitCodeFor(s)); }

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

absl::StatusOr<std::shared_ptr<const Classifier>> LoadClassifier(const std::string& ruleset) {
  absl::StatusOr<std::shared_ptr<const RuleSet>> rules = RuleSet::Load(ruleset);
  if (!rules.ok()) return rules.status();
  return Classifier::Create(*rules);
}

// --- stats -------------------------------------------------------------------------------------

// What the commands that read one trace (stats, breakdown) take.
struct OneTraceArgs {
  std::string trace;
  std::string format = "text";
  std::string output = "-";
  std::string ruleset = "tracefuse";
  int threads = 0;
};

using StatsArgs = OneTraceArgs;

// Streams one trace with the given rule set; on failure reports the error and returns its exit
// code in `exit_code`.
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

int RunStats(const StatsArgs& a) {
  auto started = std::chrono::steady_clock::now();
  int exit_code = kExitOk;
  std::optional<TraceProfile> profile = ProfileOne(a.trace, a.ruleset, a.threads, &exit_code);
  if (!profile) return exit_code;
  double elapsed = SecondsSince(started);
  const TraceProfile& p = *profile;
  std::string out =
      a.format == "json" ? DumpJson(StatsJson(p, elapsed)) + "\n" : StatsText(p, elapsed);
  absl::Status written = WriteOutput(a.output, out);
  return written.ok() ? kExitOk : Fail(written, kExitIo);
}

// --- breakdown -----------------------------------------------------------------------------------

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

// --- rules ---------------------------------------------------------------------------------------

struct RulesArgs {
  std::string ruleset = "tracefuse";
  bool check = false;
};

int RunRules(const RulesArgs& a) {
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = LoadClassifier(a.ruleset);
  if (!classifier.ok()) return Fail(classifier.status(), a.check ? kExitBadTrace : kExitUsage);
  const RuleSet& rules = (*classifier)->rule_set();
  if (a.check) {
    std::printf("%s: OK (%zu rules, %zu categories)\n", a.ruleset.c_str(), rules.rules().size(),
                rules.categories().size());
    return kExitOk;
  }
  std::string out = RulesText(rules);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

// --- compare -----------------------------------------------------------------------------------

struct CompareArgs {
  std::string trace1, trace2;
  std::string format = "text";
  std::string output = "-";
  std::string ruleset = "tracefuse";
  std::string progress = "auto";
  std::string label1, label2;
  uint32_t min_group_size = kDefaultMinGroupSize;
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

PerSide<std::string> DefaultLabels(const TraceProfile& a, const TraceProfile& b) {
  if (a.platform != b.platform && a.platform != Platform::kUnknown &&
      b.platform != Platform::kUnknown) {
    return {{std::string(PlatformName(a.platform)), std::string(PlatformName(b.platform))}};
  }
  return ReferenceLabels();
}

int RunCompare(const CompareArgs& a) {
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = LoadClassifier(a.ruleset);
  if (!classifier.ok()) return Fail(classifier.status(), kExitUsage);
  PipelineOptions options;
  options.threads = a.threads;
  std::unique_ptr<ProgressLine> progress;
  if (a.progress == "always" || (a.progress == "auto" && isatty(STDERR_FILENO))) {
    progress = std::make_unique<ProgressLine>();
    options.progress = [p = progress.get()](const ProgressUpdate& u) { p->Update(u); };
  }
  FusionOptions fusion;
  fusion.min_group_size = a.min_group_size;
  absl::StatusOr<Comparison> comparison =
      CompareTraces(a.trace1, a.trace2, *classifier, options, fusion);
  progress.reset();
  if (!comparison.ok()) return Fail(comparison.status());
  const FusionReport& report = comparison->report;
  const PerSide<TraceProfile>& traces = comparison->traces;
  CompareContext context;
  context.read_seconds = comparison->read_seconds;
  context.analyze_seconds = comparison->analyze_seconds;
  context.traces = {{&traces[Side::kTrace1], &traces[Side::kTrace2]}};
  context.labels = DefaultLabels(traces[Side::kTrace1], traces[Side::kTrace2]);
  if (!a.label1.empty()) context.labels[Side::kTrace1] = a.label1;
  if (!a.label2.empty()) context.labels[Side::kTrace2] = a.label2;
  context.min_group_size = a.min_group_size;
  if (a.format == "json") {
    absl::StatusOr<OutputFile> file = OutputFile::Open(a.output);
    absl::Status st = file.ok() ? WriteFusionJson(report, context, &*file) : file.status();
    if (st.ok()) st = file->Commit();
    return st.ok() ? kExitOk : Fail(st, kExitIo);
  }
  std::string out;
  if (a.format == "csv") {
    out = FusionCsv(report, context);
  } else {
    out = FusionText(report, context, a.format == "markdown");
  }
  absl::Status written = WriteOutput(a.output, out);
  return written.ok() ? kExitOk : Fail(written, kExitIo);
}

// --- classify ----------------------------------------------------------------------------------

struct ClassifyArgs {
  std::string input = "-";
  std::string ruleset = "tracefuse";
  std::string platform;
  std::string format = "lines";
};

int RunClassify(const ClassifyArgs& a) {
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = LoadClassifier(a.ruleset);
  if (!classifier.ok()) return Fail(classifier.status(), kExitUsage);
  Platform platform = a.platform == "amd"      ? Platform::kAmd
                      : a.platform == "nvidia" ? Platform::kNvidia
                                               : Platform::kUnknown;
  std::ifstream file;
  std::istream* in = &std::cin;
  if (a.input != "-") {
    file.open(a.input);
    if (!file) {
      return Fail(absl::NotFoundError(StrCat(a.input, ": ", std::strerror(errno))));
    }
    in = &file;
  }
  const RuleSet& rules = (*classifier)->rule_set();
  bool has_patterns = !rules.fallback().pattern.empty();
  for (const Rule& r : rules.rules()) has_patterns |= !r.pattern.empty();

  simdjson::dom::parser parser;
  CachedClassifier names(*classifier, platform);
  std::string line, out;
  size_t line_no = 0;
  while (std::getline(*in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string name;
    if (a.format == "jsonl") {
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      std::string_view s;
      if (parser.parse(simdjson::padded_string(line)).get_string().get(s) != simdjson::SUCCESS) {
        return Fail(
            absl::InvalidArgumentError(StrCat(a.input, ":", line_no, ": not a JSON string")),
            kExitBadTrace);
      }
      name = std::string(s);
    } else {
      name = line;
    }
    RuleId id = names.Classify(name);
    Json j;
    j["name"] = name;
    j["category"] = (*classifier)->category_name((*classifier)->category_of(id));
    if (has_patterns) j["pattern"] = (*classifier)->Pattern(id, name);
    out += DumpJson(j, -1);
    out += '\n';
    if (out.size() > (1u << 16)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

// The options every trace-reading command shares.
void AddTraceOptions(CLI::App* cmd, const std::string& rules_help, std::string* output,
                     std::string* ruleset, int* threads) {
  cmd->add_option("-o,--output", *output, "write to FILE (atomically) instead of stdout");
  cmd->add_option("--ruleset", *ruleset, rules_help)->capture_default_str();
  cmd->add_option("--threads", *threads,
                  "worker threads (default: $SLURM_CPUS_PER_TASK, else the CPUs available)")
      ->check(CLI::PositiveNumber);
}

std::string RulesHelp() {
  std::string names;
  for (const auto& n : RuleSet::BuiltinNames()) names += (names.empty() ? "" : ", ") + n;
  return "rule set: a built-in name (" + names + ") or a rule file (.yaml)";
}

// AddOneTraceCommand() declares a command that reads one trace and writes it in `formats`.
CLI::App* AddOneTraceCommand(CLI::App* app, const std::string& name, const std::string& about,
                             const std::vector<std::string>& formats, OneTraceArgs* a) {
  CLI::App* cmd = app->add_subcommand(name, about);
  cmd->add_option("TRACE", a->trace, "trace file (.json or .json.gz; - for stdin)")->required();
  cmd->add_option("--format", a->format, "output format")
      ->check(CLI::IsMember(formats))
      ->capture_default_str();
  AddTraceOptions(cmd, RulesHelp(), &a->output, &a->ruleset, &a->threads);
  return cmd;
}

CLI::App* AddStatsCommand(CLI::App* app, StatsArgs* a) {
  return AddOneTraceCommand(app, "stats",
                            "Summarise one trace: platform, GPU, events per category, kernels, "
                            "correlation groups, throughput",
                            {"text", "json"}, a);
}

CLI::App* AddCompareCommand(CLI::App* app, CompareArgs* a) {
  CLI::App* cmd = app->add_subcommand(
      "compare", "Compare two traces (e.g. AMD vs NVIDIA): which platform fuses which operations");
  cmd->add_option("TRACE1", a->trace1, "first trace (.json or .json.gz)")->required();
  cmd->add_option("TRACE2", a->trace2, "second trace (.json or .json.gz)")->required();
  cmd->add_option("--format", a->format,
                  "text and markdown for people; json keeps wafer's schema (plus a "
                  "\"tracefuse\" key); csv has one row per kernel type")
      ->check(CLI::IsMember({"text", "json", "csv", "markdown"}))
      ->capture_default_str();
  AddTraceOptions(cmd, RulesHelp(), &a->output, &a->ruleset, &a->threads);
  cmd->add_option("--min-group-size", a->min_group_size,
                  "smallest correlation group (graph replay) that is matched")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--progress", a->progress,
                  "progress line on stderr: auto shows it only when stderr is a terminal")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  cmd->add_option("--label1", a->label1,
                  "name for trace 1 in text, markdown and CSV (default: its platform)");
  cmd->add_option("--label2", a->label2, "name for trace 2");
  return cmd;
}

CLI::App* AddBreakdownCommand(CLI::App* app, BreakdownArgs* a) {
  CLI::App* cmd = AddOneTraceCommand(app, "breakdown",
                                     "Kernel time per category, the top kernels of each, and the "
                                     "top unclassified kernels of one trace",
                                     {"text", "json", "csv"}, a);
  cmd->add_option("--top", a->top, "kernels listed per category")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return cmd;
}

CLI::App* AddRulesCommand(CLI::App* app, RulesArgs* a) {
  CLI::App* cmd = app->add_subcommand("rules", "List a rule set, or validate a rule file");
  cmd->add_option("--ruleset", a->ruleset, RulesHelp())->capture_default_str();
  cmd->add_flag("--check", a->check,
                "only validate: report the first error with its line and exit 1");
  return cmd;
}

CLI::App* AddClassifyCommand(CLI::App* app, ClassifyArgs* a) {
  CLI::App* cmd = app->add_subcommand(
      "classify", "Classify kernel names, one per line, printing one JSON object per line");
  cmd->add_option("FILE", a->input, "names file (default: stdin)");
  cmd->add_option("--ruleset", a->ruleset, RulesHelp())->capture_default_str();
  cmd->add_option("--platform", a->platform,
                  "platform for platform-aware rule sets (default: any other than AMD, as the "
                  "reference treats it)")
      ->check(CLI::IsMember({"amd", "nvidia"}));
  cmd->add_option("--input", a->format,
                  "lines: one raw name per line; jsonl: one JSON string per line")
      ->check(CLI::IsMember({"lines", "jsonl"}))
      ->capture_default_str();
  return cmd;
}

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
    std::string command = "tracefuse";
    for (const CLI::App* sub : app->get_subcommands()) command += " " + sub->get_name();
    std::fprintf(stderr, "tracefuse: error: %s (run '%s --help')\n", e.what(), command.c_str());
    return kExitUsage;
  }
  return std::nullopt;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "tracefuse: stream PyTorch-profiler (Kineto) traces from AMD and NVIDIA GPUs, "
      "classify their kernels and compare how each platform fuses operations."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tracefuse ") + TRACEFUSE_VERSION);
  app.footer(
      "Exit codes: 0 success, 1 malformed or unsupported trace, 2 usage error, 3 I/O error.");
  StatsArgs stats;
  CompareArgs compare;
  BreakdownArgs breakdown;
  RulesArgs rules;
  ClassifyArgs classify;
  CLI::App* stats_cmd = AddStatsCommand(&app, &stats);
  CLI::App* compare_cmd = AddCompareCommand(&app, &compare);
  CLI::App* breakdown_cmd = AddBreakdownCommand(&app, &breakdown);
  CLI::App* rules_cmd = AddRulesCommand(&app, &rules);
  CLI::App* classify_cmd = AddClassifyCommand(&app, &classify);
  if (std::optional<int> exit_code = ParseCommandLine(&app, argc, argv)) return *exit_code;

  if (stats_cmd->parsed()) return RunStats(stats);
  if (compare_cmd->parsed()) return RunCompare(compare);
  if (breakdown_cmd->parsed()) return RunBreakdown(breakdown);
  if (rules_cmd->parsed()) return RunRules(rules);
  if (classify_cmd->parsed()) return RunClassify(classify);
  return kExitUsage;
}

}  // namespace
}  // namespace tracefuse

int main(int argc, char** argv) {
  tracefuse::KeepFreedMemoryForReuse();
  return tracefuse::Main(argc, argv);
}
