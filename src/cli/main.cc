// tracefuse command line: subcommands over the pipeline stages.
//
// Exit codes: 0 success; 1 malformed or unsupported trace (or rule file failing --check);
// 2 usage error (bad flags, unknown rule set); 3 I/O error (missing file, directory, unreadable).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "simdjson.h"
#include "tracefuse/classify.h"
#include "tracefuse/pipeline.h"
#include "tracefuse/report.h"
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

struct StatsArgs {
  std::string trace;
  std::string format = "text";
  std::string output = "-";
  std::string ruleset = "wafer-kernel";
  int threads = 0;
};

int RunStats(const StatsArgs& a) {
  auto started = std::chrono::steady_clock::now();
  absl::StatusOr<std::shared_ptr<const Classifier>> classifier = LoadClassifier(a.ruleset);
  if (!classifier.ok()) return Fail(classifier.status(), kExitUsage);
  PipelineOptions options;
  options.threads = a.threads;
  absl::StatusOr<std::vector<TraceProfile>> profiles =
      ProfileTraces({a.trace}, *classifier, options);
  if (!profiles.ok()) return Fail(profiles.status());
  double elapsed = SecondsSince(started);
  const TraceProfile& p = profiles->front();
  std::string out =
      a.format == "json" ? DumpJson(StatsJson(p, elapsed)) + "\n" : StatsText(p, elapsed);
  absl::Status written = WriteOutput(a.output, out);
  return written.ok() ? kExitOk : Fail(written, kExitIo);
}

// --- classify ----------------------------------------------------------------------------------

struct ClassifyArgs {
  std::string input = "-";
  std::string ruleset = "wafer-kernel";
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
  StringMap<RuleId> cache;
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
    auto it = cache.find(name);
    if (it == cache.end()) it = cache.emplace(name, (*classifier)->Classify(name, platform)).first;
    RuleId id = it->second;
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

int Main(int argc, char** argv) {
  CLI::App app{
      "tracefuse: stream PyTorch-profiler (Kineto) traces from AMD and NVIDIA GPUs, "
      "classify their kernels and compare how each platform fuses operations."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tracefuse ") + TRACEFUSE_VERSION);
  app.footer(
      "Exit codes: 0 success, 1 malformed or unsupported trace, 2 usage error, 3 I/O error.");

  const std::string rules_help = "rule set: a built-in name (" + [] {
    std::string s;
    for (const auto& n : RuleSet::BuiltinNames()) s += (s.empty() ? "" : ", ") + n;
    return s;
  }() + ") or a rule file (.yaml)";

  StatsArgs stats;
  CLI::App* stats_cmd = app.add_subcommand("stats",
                                           "Summarise one trace: platform, GPU, events "
                                           "per category, kernels, correlation groups, "
                                           "throughput");
  stats_cmd->add_option("TRACE", stats.trace, "trace file (.json or .json.gz; - for stdin)")
      ->required();
  stats_cmd->add_option("--format", stats.format, "output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  stats_cmd->add_option("-o,--output", stats.output,
                        "write to FILE (atomically) instead of stdout");
  stats_cmd->add_option("--ruleset", stats.ruleset, rules_help)->capture_default_str();
  stats_cmd
      ->add_option("--threads", stats.threads,
                   "worker threads (default: $SLURM_CPUS_PER_TASK, else the CPUs available)")
      ->check(CLI::PositiveNumber);

  ClassifyArgs classify;
  CLI::App* classify_cmd = app.add_subcommand(
      "classify", "Classify kernel names, one per line, printing one JSON object per line");
  classify_cmd->add_option("FILE", classify.input, "names file (default: stdin)");
  classify_cmd->add_option("--ruleset", classify.ruleset, rules_help)->capture_default_str();
  classify_cmd
      ->add_option("--platform", classify.platform,
                   "platform for platform-aware rule sets (default: any other than AMD, as "
                   "the reference treats it)")
      ->check(CLI::IsMember({"amd", "nvidia"}));
  classify_cmd
      ->add_option("--input", classify.format,
                   "lines: one raw name per line; jsonl: one JSON string per line")
      ->check(CLI::IsMember({"lines", "jsonl"}))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string command = "tracefuse";
    for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
    std::fprintf(stderr, "tracefuse: error: %s (run '%s --help')\n", e.what(), command.c_str());
    return kExitUsage;
  }
  if (stats_cmd->parsed()) return RunStats(stats);
  if (classify_cmd->parsed()) return RunClassify(classify);
  return kExitUsage;
}

}  // namespace
}  // namespace tracefuse

int main(int argc, char** argv) { return tracefuse::Main(argc, argv); }
