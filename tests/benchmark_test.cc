// The classification benchmark: its inputs (traces, names files), its measurements, and
// `tracefuse bench classify` end to end (JSON schema, exit codes, one-line errors).
#include <set>

#include "gtest/gtest.h"
#include "simdjson.h"
#include "test_util.h"
#include "tracefuse/benchmark/classification.h"

namespace tracefuse {
namespace {

using testing::RunCommand;
using testing::RunResult;

std::string Bin() { return TRACEFUSE_BINARY; }

std::shared_ptr<const Classifier> Load(const std::string& ruleset) {
  return *Classifier::Create(*RuleSet::Load(ruleset));
}

std::vector<std::string> NamesOf(const BenchmarkNames& names, Platform platform) {
  std::vector<std::string> out;
  for (const BenchmarkName& n : names.names) {
    if (n.platform == platform) out.push_back(n.name);
  }
  return out;
}

// An NVIDIA trace (cupti_version) whose kernels are named a, b, a, Kernel-cat d; c is a CPU op.
constexpr char kTrace[] = R"({"cupti_version": 22, "traceEvents": [
{"ph": "X", "cat": "kernel", "name": "a", "ts": 1, "dur": 2},
{"ph": "X", "cat": "kernel", "name": "b", "ts": 4, "dur": 2},
{"ph": "X", "cat": "cpu_op", "name": "c", "ts": 5, "dur": 2},
{"ph": "X", "cat": "kernel", "name": "a", "ts": 7, "dur": 2},
{"ph": "X", "cat": "Kernel", "name": "d", "ts": 9, "dur": 2}]})";

TEST(BenchmarkInputs, KindFromTheNameElseFromTheContent) {
  using K = NamesInputKind;
  EXPECT_EQ(DetectNamesInputKind("t.json", "a\nb\n"), K::kTrace);
  EXPECT_EQ(DetectNamesInputKind("t.json.gz", ""), K::kTrace);
  EXPECT_EQ(DetectNamesInputKind("t.json.zst", ""), K::kTrace);
  EXPECT_EQ(DetectNamesInputKind("n.txt", "{\"traceEvents\": []}"), K::kLines);
  EXPECT_EQ(DetectNamesInputKind("n.txt.gz", ""), K::kLines);
  EXPECT_EQ(DetectNamesInputKind("n.jsonl", "x"), K::kJsonLines);
  EXPECT_EQ(DetectNamesInputKind("n.ndjson", "x"), K::kJsonLines);
  EXPECT_EQ(DetectNamesInputKind("names", "gemm_kernel\nsoftmax\n"), K::kLines);
  EXPECT_EQ(DetectNamesInputKind("names", "\"gemm_kernel\"\n"), K::kJsonLines);
  EXPECT_EQ(DetectNamesInputKind("names", " {\"name\": \"gemm\", \"x\": 1}\n{\"name\": \"b\"}"),
            K::kJsonLines);
  EXPECT_EQ(DetectNamesInputKind("trace", "[{\"name\": \"x\"}]"), K::kTrace);
  EXPECT_EQ(DetectNamesInputKind("trace", "{\n  \"traceEvents\": [\n"), K::kTrace);
  EXPECT_EQ(DetectNamesInputKind("trace", "{\"name\": \"run\", \"traceEvents\": []}\n"), K::kTrace);
  EXPECT_EQ(DetectNamesInputKind("trace", "{\"traceEvents\": [{\"name\": \"x\""), K::kTrace);
  EXPECT_EQ(DetectNamesInputKind("empty", ""), K::kLines);
}

TEST(BenchmarkInputs, ATraceGivesItsDistinctKernelNamesWithItsPlatform) {
  testing::TempDir dir;
  std::string trace = dir.File("t.json", kTrace);
  auto names = ReadBenchmarkNames({trace}, Load("tracefuse"), {});
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(NamesOf(*names, Platform::kNvidia), (std::vector<std::string>{"a", "b", "d"}));
  EXPECT_EQ(names->names.size(), 3u);
  EXPECT_EQ(names->name_bytes, 3u);
  ASSERT_EQ(names->inputs.size(), 1u);
  EXPECT_EQ(names->inputs[0].kind, NamesInputKind::kTrace);
  EXPECT_EQ(names->inputs[0].platform, Platform::kNvidia);
  EXPECT_EQ(names->inputs[0].names, 3u);
  EXPECT_EQ(names->inputs[0].bytes, std::string(kTrace).size());
}

TEST(BenchmarkInputs, RealTracesGiveTheNamesThePipelineFinds) {
  TRACEFUSE_REQUIRE_SHARED();
  std::vector<std::string> traces;
  for (const std::string& t : testing::FilesIn(testing::SharedDir() + "/traces/real", ".json.gz")) {
    if (t.find("rocprof") == std::string::npos) traces.push_back(t);
  }
  ASSERT_GT(traces.size(), 10u);
  auto names = ReadBenchmarkNames(traces, Load("wafer-kernel"), {});
  ASSERT_TRUE(names.ok()) << names.status();
  auto profiles = ProfileTraces(traces, Load("tracefuse"), {});
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  std::set<std::pair<std::string, Platform>> expected;
  for (size_t i = 0; i < traces.size(); ++i) {
    const TraceProfile& p = (*profiles)[i];
    EXPECT_EQ(names->inputs[i].names, p.names.size()) << traces[i];
    EXPECT_EQ(names->inputs[i].platform, p.platform) << traces[i];
    for (const std::string& n : p.names) expected.emplace(n, p.platform);
  }
  std::set<std::pair<std::string, Platform>> got;
  for (const BenchmarkName& n : names->names) got.emplace(n.name, n.platform);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(names->names.size(), expected.size());  // each once
}

TEST(BenchmarkInputs, NamesFilesAndDistinctNamesPerPlatform) {
  testing::TempDir dir;
  std::string trace = dir.File("t.json", kTrace);
  std::string lines = dir.File("n.txt", "a\r\n\n  \nMemcpy DtoH (Device -> Pinned)\na\n");
  std::string jsonl = dir.File("n.jsonl", "\"e\"\n{\"name\": \"a\", \"category\": \"x\"}\n\n");
  std::string sniffed = dir.File("names", "{\"name\": \"f\"}\n\"e\"\n");
  auto names = ReadBenchmarkNames({lines, trace, jsonl, sniffed}, Load("tracefuse"), {});
  ASSERT_TRUE(names.ok()) << names.status();
  // "a" is one name in the names files (no platform) and another in the NVIDIA trace.
  EXPECT_EQ(NamesOf(*names, Platform::kUnknown),
            (std::vector<std::string>{"a", "Memcpy DtoH (Device -> Pinned)", "e", "f"}));
  EXPECT_EQ(NamesOf(*names, Platform::kNvidia), (std::vector<std::string>{"a", "b", "d"}));
  std::vector<size_t> per_input;
  for (const BenchmarkInput& i : names->inputs) per_input.push_back(i.names);
  EXPECT_EQ(per_input, (std::vector<size_t>{2, 3, 2, 2}));
  EXPECT_EQ(names->inputs[3].kind, NamesInputKind::kJsonLines);
}

TEST(BenchmarkInputs, ErrorsNameTheFile) {
  testing::TempDir dir;
  std::string bad = dir.File("bad.jsonl", "\"a\"\n42\n");
  auto names = ReadBenchmarkNames({bad}, Load("tracefuse"), {});
  ASSERT_FALSE(names.ok());
  EXPECT_EQ(names.status().message(),
            bad + ":2: not a JSON string or an object with a \"name\" string");
  std::string blank = dir.File("blank.txt", "\n\n");
  names = ReadBenchmarkNames({blank}, Load("tracefuse"), {});
  ASSERT_FALSE(names.ok());
  EXPECT_EQ(names.status().message(), "no kernel name in " + blank);
  names = ReadBenchmarkNames({dir.path() + "/missing.txt"}, Load("tracefuse"), {});
  EXPECT_EQ(names.status().code(), absl::StatusCode::kNotFound);
}

TEST(ClassificationBenchmark, MeasuresEveryRuleSetThreadCountAndMethod) {
  BenchmarkNames names;
  for (const char* n : {"Cijk_Ailk_Bljk_HHS", "void at::native::vectorized_elementwise_kernel",
                        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "unknown_kernel"}) {
    names.names.push_back(BenchmarkName{n, Platform::kAmd});
    names.name_bytes += std::string(n).size();
  }
  ClassificationBenchmarkOptions options;
  options.threads = {1, 2, 1};
  options.repetitions = 3;
  options.min_seconds = 0.01;
  auto run = RunClassificationBenchmark(
      names, {*RuleSet::Load("tracefuse"), *RuleSet::Load("wafer-kernel")}, options);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->results.size(), 2u * 2u * 3u);  // rule sets x thread counts x methods
  const ClassifyMeasurement& first = run->results[0];
  EXPECT_EQ(first.rule_set, "tracefuse");
  EXPECT_EQ(first.threads, 1);
  EXPECT_EQ(first.method, ClassifyMethod::kHyperscan);
  EXPECT_EQ(run->results[4].threads, 2);
  EXPECT_EQ(run->results[5].method, ClassifyMethod::kSubstring);
  EXPECT_EQ(run->results[6].rule_set, "wafer-kernel");
  for (const ClassifyMeasurement& m : run->results) {
    EXPECT_GT(m.compile_seconds, 0);
    EXPECT_GT(m.database_bytes, 0u);
    EXPECT_LE(m.names_per_second.min, m.names_per_second.median);
    EXPECT_LE(m.names_per_second.median, m.names_per_second.max);
    EXPECT_GT(m.names_per_second.min, 0);
    const double bytes_per_name = static_cast<double>(names.name_bytes) / 4;
    EXPECT_NEAR(m.mb_per_second.median, m.names_per_second.median * bytes_per_name / 1e6,
                m.mb_per_second.median * 1e-9);
  }
  // Hyperscan and the cache beat the rules one at a time by far (30x and more here).
  EXPECT_GT(run->results[0].names_per_second.median, run->results[2].names_per_second.median);
  EXPECT_GT(run->results[1].names_per_second.median, run->results[2].names_per_second.median);
}

TEST(ClassificationBenchmark, DefaultThreadsAreOneAndTheHardwareConcurrency) {
  std::vector<int> threads = DefaultBenchmarkThreads();
  ASSERT_FALSE(threads.empty());
  EXPECT_EQ(threads[0], 1);
  EXPECT_EQ(threads.back(), std::max(1, DescribeMachine().logical_cores));
  EXPECT_LE(threads.size(), 2u);
}

// The JSON schema, tracefuse.bench.classify/1, field by field.
TEST(BenchCommand, JsonHasEveryFieldOfTheSchema) {
  testing::TempDir dir;
  std::string names = dir.File("names.txt", "Cijk_Ailk_Bljk\nflash_fwd_kernel\nmystery\n");
  std::string out = dir.path() + "/bench.json";
  RunResult r = RunCommand(Bin() + " bench classify --format json --repetitions 1 --threads 1 " +
                           "--threads 2 -o " + out + " " + names);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  simdjson::dom::parser parser;
  simdjson::dom::element j = parser.load(out).value();
  EXPECT_EQ(std::string_view(j["schema"].get_string().value()), "tracefuse.bench.classify/1");
  EXPECT_EQ(std::string_view(j["tracefuse_version"].get_string().value()), TRACEFUSE_VERSION);
  std::string_view date = j["date"].get_string().value();
  EXPECT_EQ(date.size(), 20u) << date;  // 2025-01-31T12:34:56Z
  EXPECT_EQ(date.back(), 'Z');
  EXPECT_FALSE(std::string_view(j["machine"]["hostname"].get_string().value()).empty());
  EXPECT_FALSE(std::string_view(j["machine"]["cpu_model"].get_string().value()).empty());
  EXPECT_GE(j["machine"]["logical_cores"].get_int64().value(), 1);
  simdjson::dom::array inputs = j["inputs"].get_array().value();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(std::string_view(inputs.at(0)["path"].get_string().value()), names);
  EXPECT_EQ(std::string_view(inputs.at(0)["kind"].get_string().value()), "lines");
  EXPECT_EQ(std::string_view(inputs.at(0)["platform"].get_string().value()), "unknown");
  EXPECT_EQ(inputs.at(0)["names"].get_int64().value(), 3);
  EXPECT_EQ(inputs.at(0)["bytes"].get_int64().value(), 40);
  EXPECT_EQ(j["names"].get_int64().value(), 3);
  EXPECT_EQ(j["name_bytes"].get_int64().value(), 37);
  EXPECT_EQ(j["repetitions"].get_int64().value(), 1);
  EXPECT_EQ(j["min_seconds"].get_double().value(), 0.2);
  simdjson::dom::array results = j["results"].get_array().value();
  ASSERT_EQ(results.size(), 6u);
  const char* methods[] = {"hyperscan", "cached", "substring"};
  size_t i = 0;
  for (simdjson::dom::element m : results) {
    EXPECT_EQ(std::string_view(m["rule_set"].get_string().value()), "tracefuse");
    EXPECT_GT(m["compile_seconds"].get_double().value(), 0);
    EXPECT_GT(m["database_bytes"].get_int64().value(), 1000);
    EXPECT_EQ(m["threads"].get_int64().value(), i < 3 ? 1 : 2);
    EXPECT_EQ(std::string_view(m["method"].get_string().value()), methods[i % 3]);
    for (const char* figure : {"names_per_second", "mb_per_second"}) {
      // One repetition: min, median and max are the same figure.
      double median = m[figure]["median"].get_double().value();
      EXPECT_GT(median, 0) << figure;
      EXPECT_EQ(m[figure]["min"].get_double().value(), median) << figure;
      EXPECT_EQ(m[figure]["max"].get_double().value(), median) << figure;
    }
    ++i;
  }
}

TEST(BenchCommand, TextHasOneRowPerThreadCountAndMethod) {
  testing::TempDir dir;
  std::string names = dir.File("names.jsonl", "\"Cijk_Ailk_Bljk\"\n");
  RunResult r =
      RunCommand(Bin() + " bench classify --repetitions 1 --threads 1 --ruleset wafer-op " + names);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 input: 1 distinct name, 14 bytes of names\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nrule set wafer-op: Hyperscan database of "), std::string::npos) << r.out;
  for (const char* method :
       {"      1  hyperscan  ", "      1  cached     ", "      1  substring  "}) {
    EXPECT_NE(r.out.find(method), std::string::npos) << method << "\n" << r.out;
  }
}

// --ruleset and --threads take one value each time: the INPUTs after them stay inputs.
TEST(BenchCommand, RepeatedOptionsLeaveTheInputsAfterThem) {
  testing::TempDir dir;
  std::string a = dir.File("a.txt", "Cijk_Ailk_Bljk\n");
  std::string b = dir.File("b.txt", "nvjet_tst_128x64\n");
  RunResult r = RunCommand(Bin() +
                           " bench classify --repetitions 1 --ruleset wafer-op --ruleset tracefuse "
                           "--threads 1 " +
                           a + " " + b);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 inputs: 2 distinct names"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nrule set tracefuse: "), std::string::npos) << r.out;
}

struct ErrorCase {
  std::string args;
  int exit_code;
  std::string err;
};

TEST(BenchCommand, ErrorsAreOneLineWithTheirExitCode) {
  testing::TempDir dir;
  std::string names = dir.File("names.txt", "gemm\n");
  std::string quoted = dir.File(
      "quoted.yaml", "name: quoted\nrules:\n  - {category: Dotted, regex: \"\\\\Qa.b\\\\E\"}\n");
  std::string dotted = dir.File("dotted.txt", "axb\na.b\n");
  std::string rocprof = dir.File("r.json", "{\"rocprofiler-sdk-tool\": []}");
  std::string names_alike = dir.File("alike.yaml", "name: tracefuse\nrules: []\n");
  const std::string missing = dir.path() + "/missing.txt";
  const ErrorCase cases[] = {
      {"bench", 2, "A subcommand is required (run 'tracefuse bench --help')"},
      {"bench classify", 2, "INPUT is required (run 'tracefuse bench classify --help')"},
      {"bench classify " + missing, 3, missing + ": No such file or directory"},
      {"bench classify --ruleset nosuchset " + names, 2,
       "unknown rule set 'nosuchset' (built-in sets: tracefuse, wafer-kernel, wafer-op)"},
      {"bench classify --ruleset tracefuse --ruleset " + names_alike + " " + names, 2,
       "--ruleset tracefuse and " + names_alike +
           " are both named 'tracefuse': the results would not tell them apart"},
      {"bench classify --threads 0 " + names, 2,
       "--threads: '0' is not a whole number from 1 to 1024 (run 'tracefuse bench classify "
       "--help')"},
      {"bench classify --threads 2,x " + names, 2,
       "--threads: 'x' is not a whole number from 1 to 1024 (run 'tracefuse bench classify "
       "--help')"},
      {"bench classify --repetitions 0 " + names, 2,
       "--repetitions: '0' is not a whole number from 1 to 1000 (run 'tracefuse bench classify "
       "--help')"},
      // A rocprofv3 file is read (docs/formats.md); this one holds no process, so no name.
      {"bench classify " + rocprof, 1, "no kernel name in " + rocprof},
      {"bench classify --ruleset " + quoted + " " + dotted, 1,
       "rule set 'quoted': the substring baseline and Hyperscan disagree on 'a.b' (platform "
       "unknown): Hyperscan says Dotted (rule at line 3), the baseline Other (the default)"},
  };
  for (const ErrorCase& c : cases) {
    RunResult r = RunCommand(Bin() + " " + c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args;
    EXPECT_EQ(r.err, "tracefuse: error: " + c.err + "\n") << c.args;
    EXPECT_EQ(r.out, "") << c.args;
  }
}

}  // namespace
}  // namespace tracefuse
