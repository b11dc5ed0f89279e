// End-to-end tests of the tracefuse binary: exit codes, the one-line error messages, outputs.
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_util.h"

namespace tracefuse {
namespace {

using testing::RunCommand;
using testing::RunResult;

std::string Bin() { return TRACEFUSE_BINARY; }

struct ErrorCase {
  const char* file;
  const char* content;  // nullptr: do not create
  int exit_code;
  const char* message;  // after "tracefuse: error: DIR/"
};

TEST(Cli, EachBadInputGetsItsOwnMessageAndExitCode) {
  testing::TempDir dir;
  const ErrorCase cases[] = {
      {"empty.json", "", 1, "empty.json: empty file"},
      {"text.json", "hello world\n", 1,
       "text.json: not a JSON trace: expected '{' or '[' at byte 0, found 'h'"},
      {"trunc.json", R"({"traceEvents": [{"cat": "kernel", "name": "a", "ts": 1)", 1,
       "trunc.json: truncated JSON: the input ends at byte 55 inside the events array"},
      {"noevents.json", R"({"schemaVersion": 1, "deviceProperties": []})", 1,
       "noevents.json: not a Kineto trace: no traceEvents array (top-level keys: schemaVersion, "
       "deviceProperties)"},
      {"badevent.json", R"({"traceEvents": [{"cat": "kernel", "ts": 1,, "dur": 2}]})", 1,
       "badevent.json: malformed JSON at byte 43: The JSON document has an improper structure: "
       "missing or superfluous commas, braces, missing keys, etc."},
      {"missing.json", nullptr, 3, "missing.json: No such file or directory"},
  };
  for (const ErrorCase& c : cases) {
    std::string path = dir.path() + "/" + c.file;
    if (c.content != nullptr) dir.File(c.file, c.content);
    RunResult r = RunCommand(Bin() + " stats " + path);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.file;
    EXPECT_EQ(r.err, "tracefuse: error: " + dir.path() + "/" + c.message + "\n") << c.file;
    EXPECT_EQ(r.out, "") << c.file;
  }
  RunResult r = RunCommand(Bin() + " stats " + dir.path());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "tracefuse: error: " + dir.path() + ": is a directory\n");
}

TEST(Cli, UsageErrorsExitTwo) {
  RunResult r = RunCommand(Bin() + " stats");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tracefuse: error: TRACE is required (run 'tracefuse stats --help')\n");
  r = RunCommand(Bin() + " frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  r = RunCommand(Bin() + " stats x.json --threads 0");
  EXPECT_EQ(r.exit_code, 2);
  r = RunCommand(Bin() + " stats x.json --ruleset nosuchset");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.err,
      "tracefuse: error: unknown rule set 'nosuchset' (built-in sets: wafer-kernel, wafer-op)\n");
}

TEST(Cli, HelpListsCommandsAndExitCodes) {
  RunResult r = RunCommand(Bin() + " --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("stats"), std::string::npos);
  EXPECT_NE(r.out.find("classify"), std::string::npos);
  EXPECT_NE(
      r.out.find(
          "Exit codes: 0 success, 1 malformed or unsupported trace, 2 usage error, 3 I/O error"),
      std::string::npos);
  for (const char* cmd : {"stats", "classify"}) {
    RunResult h = RunCommand(Bin() + " " + cmd + " --help");
    EXPECT_EQ(h.exit_code, 0) << cmd;
    EXPECT_NE(h.out.find("--ruleset"), std::string::npos) << cmd;
  }
}

TEST(Cli, StatsOnAGeneratedTrace) {
  testing::TempDir dir;
  std::string trace = dir.path() + "/t.json";
  ASSERT_EQ(RunCommand(std::string(TRACEFUSE_GEN) + " --platform nvidia --steps 10 --layers 2 -o " +
                       trace)
                .exit_code,
            0);
  std::string out = dir.path() + "/stats.json";
  RunResult r = RunCommand(Bin() + " stats " + trace + " --format json --threads 2 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["platform"], "NVIDIA");
  EXPECT_EQ(j["gpu"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(j["kernels"], 10 * (2 * 9 + 2 + 6));
  EXPECT_EQ(j["correlation_groups"], 10 * (1 + 2 + 6));
  EXPECT_EQ(j["correlation_groups_50_plus"], 0);
  EXPECT_EQ(j["events_by_category"]["kernel"], j["kernels"]);
  EXPECT_GT(j["events_by_category"]["python_function"].get<int>(), 0);
  EXPECT_GT(j["events_by_category"]["ac2g"].get<int>(), 0);
  RunResult text = RunCommand(Bin() + " stats " + trace);
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("platform                   NVIDIA (cupti_version is set)"),
            std::string::npos)
      << text.out;
}

TEST(Cli, FailedRunLeavesNoOutputFile) {
  testing::TempDir dir;
  std::string bad = dir.File("bad.json", R"({"traceEvents": [{"cat": "kernel"},]})");
  std::string out = dir.path() + "/report.json";
  RunResult r = RunCommand(Bin() + " stats " + bad + " --format json -o " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_EQ(testing::FilesIn(dir.path(), "").size(), 1u);  // no temporary left behind
}

TEST(Cli, ClassifyPrintsOneJsonObjectPerLine) {
  RunResult r = RunCommand(Bin() + " classify --ruleset wafer-op --platform amd",
                           "kernel_unified_attention_2d\nCijk_Alik_Bljk\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"name\":\"kernel_unified_attention_2d\",\"category\":\"Attention (Prefill)\","
            "\"pattern\":\"kernel_unified_attention_2d\"}\n"
            "{\"name\":\"Cijk_Alik_Bljk\",\"category\":\"Dense GEMM\",\"pattern\":\"Cijk_* "
            "(Tensile)\"}\n");
  r = RunCommand(Bin() + " classify --ruleset wafer-kernel --input jsonl",
                 "\"a \\\"softmax\\\" \\u00e9\"\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"name\":\"a \\\"softmax\\\" \xc3\xa9\",\"category\":\"Softmax\"}\n");
  r = RunCommand(Bin() + " classify --input jsonl", "not json\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "tracefuse: error: -:1: not a JSON string\n");
}

}  // namespace
}  // namespace tracefuse
