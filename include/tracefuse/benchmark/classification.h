// Library tracefuse_benchmark (after pipeline): `tracefuse bench classify`, how fast rule sets
// classify kernel names, measured on the user's own names and machine.
//
// The names come from traces (read through the pipeline: their distinct kernel names, each with
// the trace's detected platform) and from names files (one name per line, or JSON lines). Each
// rule set is measured with three methods, on each thread count:
//   hyperscan  Classifier::Classify on every name, no cache: what the first sight of a name costs;
//   cached     a per-thread CachedClassifier, already warm: what every later sight costs, which is
//              most of a trace's kernels;
//   substring  SubstringClassifier, the rules one at a time: the yardstick (and, since it must
//              agree with Hyperscan on every name before anything is timed, a correctness check).
// A repetition runs whole passes over the names, split in ranges over the threads of a
// tbb::task_arena, until it lasts at least `min_seconds`; a figure is the median, minimum and
// maximum over the repetitions of names (or name bytes) per second of wall time. Repetitions of
// the three methods are interleaved, so that a slow spell of a shared machine spreads over all
// three instead of biasing one.
#ifndef TRACEFUSE_BENCHMARK_CLASSIFICATION_H_
#define TRACEFUSE_BENCHMARK_CLASSIFICATION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tracefuse/classify/classifier.h"
#include "tracefuse/parse/platform.h"
#include "tracefuse/pipeline/flow_graph.h"
#include "tracefuse/report/json.h"

namespace tracefuse {

// NamesInputKind is what one input of the benchmark holds.
enum class NamesInputKind : uint8_t {
  kTrace,      // a Kineto trace (.json, .json.gz): its distinct kernel names
  kLines,      // one name per line (.txt)
  kJsonLines,  // per line a JSON string or an object with a "name" string (.jsonl)
};

// NamesInputKindName() is "trace", "lines" or "jsonl".
std::string_view NamesInputKindName(NamesInputKind kind);

// DetectNamesInputKind() decides what `path` holds, by its name when that says (a trailing ".gz"
// set aside: ".json" is a trace, ".txt" lines, ".jsonl" or ".ndjson" JSON lines), else by `head`,
// the file's first bytes (inflated when gzip): a trace starts with '[' or with '{' when its
// first line is not a whole JSON object with a "name" string and no "traceEvents" (a pretty
// printed or one-line trace, a trace whose first line is too long for `head`); JSON lines start
// with '"' or with such an object; anything else is one name per line.
NamesInputKind DetectNamesInputKind(std::string_view path, std::string_view head);

// BenchmarkInput is one input file as read.
struct BenchmarkInput {
  std::string path;
  NamesInputKind kind = NamesInputKind::kTrace;
  Platform platform = Platform::kUnknown;  // a trace's detected platform; names files: unknown
  size_t names = 0;                        // distinct names in this input
  uint64_t bytes = 0;                      // the file's size on disk
};

// BenchmarkName is one name to classify, with the platform it is classified for.
struct BenchmarkName {
  std::string name;
  Platform platform = Platform::kUnknown;
};

// BenchmarkNames is what the inputs hold together: each distinct (name, platform) pair once, in
// the order first seen (a name seen in an AMD and an NVIDIA trace is two names, as a
// platform-aware rule set may classify it twice).
struct BenchmarkNames {
  std::vector<BenchmarkInput> inputs;
  std::vector<BenchmarkName> names;
  uint64_t name_bytes = 0;  // the names' lengths added up
};

// ReadBenchmarkNames() reads `paths` in order (DetectNamesInputKind); the traces are streamed
// together through the pipeline with `classifier` (its rule set does not matter: only names and
// platforms are kept). Errors name the file, as the pipeline's do: a missing file (NotFound), a
// malformed or non-Kineto trace or a names-file line that is not a name (InvalidArgument,
// "FILE:LINE: ..."), no name in any input (InvalidArgument), SIGTERM / SIGINT (Cancelled).
absl::StatusOr<BenchmarkNames> ReadBenchmarkNames(const std::vector<std::string>& paths,
                                                  std::shared_ptr<const Classifier> classifier,
                                                  const PipelineOptions& options);

enum class ClassifyMethod : uint8_t { kHyperscan, kCached, kSubstring };

// ClassifyMethodName() is "hyperscan", "cached" or "substring".
std::string_view ClassifyMethodName(ClassifyMethod method);

// Spread is a figure over repetitions.
struct Spread {
  double median = 0;
  double min = 0;
  double max = 0;
};

// ClassifyMeasurement is one rule set, method and thread count.
struct ClassifyMeasurement {
  std::string rule_set;        // RuleSet::name()
  double compile_seconds = 0;  // Classifier::Create's wall time, median over the repetitions
  size_t database_bytes = 0;   // Classifier::database_bytes()
  int threads = 1;
  ClassifyMethod method = ClassifyMethod::kHyperscan;
  Spread names_per_second;
  Spread mb_per_second;  // name bytes, 10^6 per MB
};

// MachineInfo says where the figures were measured.
struct MachineInfo {
  std::string hostname;
  std::string cpu_model;  // /proc/cpuinfo's first "model name", else "unknown"
  int logical_cores = 0;  // std::thread::hardware_concurrency()
};

MachineInfo DescribeMachine();

// DefaultBenchmarkThreads() is 1 and the machine's hardware concurrency, once each.
std::vector<int> DefaultBenchmarkThreads();

struct ClassificationBenchmarkOptions {
  std::vector<int> threads;  // thread counts, in order; empty: DefaultBenchmarkThreads()
  int repetitions = 5;
  double min_seconds = 0.2;  // the shortest repetition
};

// ClassificationBenchmark is a whole run: its context and one measurement per rule set, thread
// count and method, in that order.
struct ClassificationBenchmark {
  std::string tracefuse_version;
  std::string date;  // UTC, ISO 8601, when the run started
  MachineInfo machine;
  BenchmarkNames names;
  int repetitions = 0;
  double min_seconds = 0;
  std::vector<ClassifyMeasurement> results;
};

// RunClassificationBenchmark() measures each rule set on `names` (see the top of this file).
// Before timing a rule set it checks that the substring baseline gives Hyperscan's rule for
// every name; a name on which they disagree, or a regex that std::regex cannot compile, fails
// the run (InvalidArgument, naming the rule set and the name). SIGTERM / SIGINT stop it between
// repetitions (Cancelled).
absl::StatusOr<ClassificationBenchmark> RunClassificationBenchmark(
    BenchmarkNames names, const std::vector<std::shared_ptr<const RuleSet>>& rule_sets,
    const ClassificationBenchmarkOptions& options);

// ClassificationBenchmarkJson() is the run in the schema "tracefuse.bench.classify/1"
// (docs/reports.md, "bench classify"):
//   {"schema", "tracefuse_version", "date", "machine": {"hostname", "cpu_model",
//    "logical_cores"}, "inputs": [{"path", "kind", "platform", "names", "bytes"}], "names",
//    "name_bytes", "repetitions", "min_seconds", "results": [{"rule_set", "compile_seconds",
//    "database_bytes", "threads", "method", "names_per_second": {"median", "min", "max"},
//    "mb_per_second": {"median", "min", "max"}}]}
Json ClassificationBenchmarkJson(const ClassificationBenchmark& benchmark);

// ClassificationBenchmarkText() is the run for people: the context, then per rule set one table
// row per thread count and method, with the speed-up over the substring baseline.
std::string ClassificationBenchmarkText(const ClassificationBenchmark& benchmark);

}  // namespace tracefuse

#endif  // TRACEFUSE_BENCHMARK_CLASSIFICATION_H_
