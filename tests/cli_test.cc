// End-to-end tests of the tracefuse binary: exit codes, the one-line error messages, outputs.
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_util.h"
#include "tracefuse/analyze/fusion.h"
#include "tracefuse/classify/classifier.h"
#include "tracefuse/report/output_file.h"

namespace tracefuse {
namespace {

using absl::StrCat;
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
       "trunc.json: truncated JSON: the input ends at byte 55 inside the events array (--lenient "
       "reads the events before the cut)"},
      {"noevents.json", R"({"schemaVersion": 1, "deviceProperties": []})", 1,
       "noevents.json: not a Kineto trace: no traceEvents array (top-level keys: schemaVersion, "
       "deviceProperties)"},
      // A key is the file's text: its control characters are escaped to keep the line whole.
      {"newlinekey.json", "{\"device\\nProperties\": []}", 1,
       "newlinekey.json: not a Kineto trace: no traceEvents array (top-level keys: "
       "device\\x0aProperties)"},
      // rocprof v1's Chrome trace (rocprofiler's tblextr.py): no categories, string times and
      // otherData at the end. Read as Kineto it held no kernels, exit 0 (issue 51).
      {"results.json",
       "{\"traceEvents\":[{}\n"
       R"j(,{"args":{"name":"CPU HIP API"},"ph":"M","pid":2,"name":"process_name","sort_index":2})j"
       "\n"
       R"j(,{"ph":"X","name":"hipMalloc","pid":2,"tid":2385,"ts":"1201478076","dur":"470125",)j"
       R"j("args":{"BeginNs":"1201478076289","EndNs":"1201948202129","Name":"hipMalloc"}})j"
       "\n"
       R"j(,{"ph":"X","name":"k4(int*)","pid":9,"tid":4,"ts":"213757592882","dur":"143117",)j"
       R"j("args":{"BeginNs":"1","EndNs":"2","dev-id":"3","Name":"k4(int*)"}})j"
       "\n"
       R"j(],"otherData":{"CPU model":"AMD EPYC"}})j",
       1,
       "results.json: not a Kineto trace: a rocprof v1 (roctracer) Chrome trace, by its "
       "otherData key and events without kernel categories; profile with rocprofv3 "
       "(--output-format json or rocpd) or torch.profiler instead"},
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

// WriteDatabase() makes an SQLite database at `path` from `sql`.
void WriteDatabase(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// The vendors' formats that cannot be read get one line naming the file, exit 1; never 0
// kernels and exit 0.
TEST(Cli, VendorFilesThatCannotBeReadGetOneLine) {
  testing::TempDir dir;
  const std::string nsys = dir.path() + "/whole.sqlite";
  std::string rows;
  for (int i = 0; i < 400; ++i) {
    rows += StrCat("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (", 1000 * i, ", ",
                   1000 * i + 500, ", 0, 7, ", i, ", 0, 1);");
  }
  WriteDatabase(nsys,
                "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
                "INSERT INTO StringIds VALUES (1, 'gemm');"
                "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, "
                "deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, "
                "demangledName INTEGER);" +
                    rows);
  std::ifstream in(nsys, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 8192u);
  dir.File("cut.sqlite", bytes.substr(0, bytes.size() - 4096));
  dir.File("garbage.sqlite", std::string("SQLite format 3\0", 16) + std::string(200, 'x'));
  WriteDatabase(dir.path() + "/other.db", "CREATE TABLE notes (text TEXT);");
  WriteDatabase(dir.path() + "/rocpd.db",
                "CREATE TABLE rocpd_metadata (tag TEXT, value TEXT);"
                "INSERT INTO rocpd_metadata VALUES ('schema_version', '4');");
  dir.File("cut_results.json", R"({"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}, "agents": [)");
  ASSERT_EQ(RunCommand("sh -c 'gzip -c " + nsys + " > " + nsys + ".gz'").exit_code, 0);
  const std::pair<const char*, const char*> cases[] = {
      {"cut.sqlite",
       "cut.sqlite: not a database tracefuse can read: database disk image is malformed"},
      {"garbage.sqlite",
       "garbage.sqlite: not a database tracefuse can read: file is not a database"},
      {"other.db",
       "other.db: an SQLite database, but neither an Nsight Systems export (no StringIds table) "
       "nor a rocpd database (no rocpd_ tables)"},
      {"rocpd.db",
       "rocpd.db: a rocpd database without its 'kernels' view: tracefuse reads rocpd schema 3 "
       "(ROCm 7)"},
      {"whole.sqlite.gz",
       "whole.sqlite.gz: a gzip-compressed SQLite database: decompress it first"},
      {"cut_results.json",
       "cut_results.json: malformed JSON at byte 62: JSON document ended early in the middle of "
       "an object or array."},
  };
  for (const auto& [file, message] : cases) {
    RunResult r = RunCommand(Bin() + " stats " + dir.path() + "/" + file);
    EXPECT_EQ(r.exit_code, 1) << file;
    EXPECT_EQ(r.err, StrCat("tracefuse: error: ", dir.path(), "/", message, "\n")) << file;
    EXPECT_EQ(r.out, "") << file;
  }
  RunResult whole = RunCommand(Bin() + " stats " + nsys);
  EXPECT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_NE(whole.out.find("kernels                    400\n"), std::string::npos) << whole.out;
  // Imported files have a progress line too.
  RunResult progress = RunCommand(Bin() + " compare " + nsys + " " + nsys + " --progress always");
  EXPECT_EQ(progress.exit_code, 0) << progress.err;
  EXPECT_NE(progress.err.find("GB read"), std::string::npos) << progress.err;
  // Two leading slashes are one path's, not a URI's authority.
  EXPECT_EQ(RunCommand(Bin() + " stats /" + nsys).exit_code, 0);
  // The op-level comparison needs CPU operators: in these formats, the ranges of emit_nvtx.
  for (const std::string command : {" ops ", " compare --by-op "}) {
    RunResult ops = RunCommand(Bin() + command + nsys + " " + nsys);
    EXPECT_EQ(ops.exit_code, 1) << command;
    EXPECT_EQ(ops.err, StrCat("tracefuse: error: ", nsys,
                              ": Nsight Systems SQLite without operator ranges, which the op-level "
                              "comparison aligns: profile with "
                              "torch.autograd.profiler.emit_nvtx(), or with torch.profiler, or "
                              "compare without --by-op\n"))
        << command;
  }
}

// compare runs a rocprofv3 file against an Nsight Systems export in every format, each side named
// by its platform and format.
TEST(Cli, CompareAcrossTheVendorsFormatsInEveryFormat) {
  TRACEFUSE_REQUIRE_SHARED();
  const std::string real = testing::SharedDir() + "/traces/real/";
  const std::string pair =
      real + "tl_rocprof_908_results.json.gz " + real + "pipit_saxpy_nsys.sqlite";
  for (const char* format : {"text", "markdown", "json", "csv", "html"}) {
    RunResult r = RunCommand(Bin() + " compare " + pair + " --format " + format);
    EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err;
    EXPECT_EQ(r.err, "") << format;
    EXPECT_GT(r.out.size(), 200u) << format;
  }
  RunResult text = RunCommand(Bin() + " compare " + pair);
  EXPECT_NE(text.out.find("AMD Instinct MI350X [AMD, rocprofv3 JSON], 43,915 kernels"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("NVIDIA A100-SXM4-40GB [NVIDIA, Nsight Systems SQLite], 5 kernels"),
            std::string::npos)
      << text.out;
  const nlohmann::json json =
      nlohmann::json::parse(RunCommand(Bin() + " compare " + pair + " --format json").out);
  const nlohmann::json& traces = json["tracefuse"]["traces"];
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(traces[0]["format"], "rocprofv3 JSON");
  EXPECT_EQ(traces[1]["format"], "Nsight Systems SQLite");
  EXPECT_EQ(traces[0]["kernels"], 43915);
  EXPECT_EQ(traces[1]["kernels"], 5);
}

// --lenient reads a trace cut short up to its last complete event, from a file or a pipe, and says
// what it dropped in the report and in one warning line; the events before the cut are counted as
// in the same trace ended there.
TEST(Cli, LenientReadsATruncatedTraceUpToItsLastCompleteEvent) {
  testing::TempDir dir;
  const std::string whole = R"({"traceEvents": [{"cat": "kernel", "name": "a", "ts": 1, "dur": 2},)"
                            R"( {"cat": "kernel", "name": "b", "ts": 5, "dur": 1}]})";
  const std::string cut = whole.substr(0, whole.find("\"b\"") + 2);  // inside "b"'s name
  const std::string path = dir.File("cut.json", cut);
  const std::string ended = dir.File("ended.json", whole.substr(0, whole.find("},") + 1) + "]}");
  const std::string warning =
      StrCat("tracefuse: warning: ", path, ": cut at byte ", cut.size(),
             ", inside an event (in a string): read up to byte 66; dropped ", cut.size() - 66,
             " bytes, 1 incomplete event\n");
  RunResult r = RunCommand(StrCat(Bin(), " stats --lenient --format json ", path));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, warning);
  const nlohmann::json got = nlohmann::json::parse(r.out);
  EXPECT_EQ(got["kernels"], 1);
  const nlohmann::json& t = got["truncated"];
  EXPECT_EQ(t["cut"], "inside an event (in a string)");
  EXPECT_EQ(t["input_bytes"], cut.size());
  EXPECT_EQ(t["kept_bytes"], 66);
  EXPECT_EQ(t["dropped_bytes"], cut.size() - 66);
  EXPECT_EQ(t["dropped_events"], 1);
  const nlohmann::json want =
      nlohmann::json::parse(RunCommand(StrCat(Bin(), " stats --format json ", ended)).out);
  EXPECT_EQ(got["kernel_time_us"], want["kernel_time_us"]);
  EXPECT_EQ(want["truncated"], nullptr);
  r = RunCommand(StrCat("(cat ", path, " | ", Bin(), " stats --lenient -)"));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find(StrCat("truncated                  cut at byte ", cut.size())),
            std::string::npos)
      << r.out;
}

// --max-event-bytes takes sizes with binary suffixes; anything else is a usage error.
TEST(Cli, MaxEventBytesTakesASize) {
  testing::TempDir dir;
  const std::string path =
      dir.File("t.json", R"({"traceEvents": [{"cat": "kernel", "name": "a", "ts": 1, "dur": 2}]})");
  EXPECT_EQ(RunCommand(StrCat(Bin(), " stats --max-event-bytes 1K ", path)).exit_code, 0);
  RunResult r = RunCommand(StrCat(Bin(), " stats --max-event-bytes 10 ", path));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, StrCat("tracefuse: error: ", path,
                          ": the event at byte 17 is larger than the limit of 10 bytes on one "
                          "event (--max-event-bytes)\n"));
  r = RunCommand(StrCat(Bin(), " stats --max-event-bytes lots ", path));
  EXPECT_EQ(r.exit_code, 2);
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
  EXPECT_EQ(r.err,
            "tracefuse: error: unknown rule set 'nosuchset' (built-in sets: tracefuse, "
            "wafer-kernel, wafer-op)\n");
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

// Only the command that argv[1] names is declared (DeclareCommands() in main.cc): each command
// listed by --help must be the one its name declares, with its own usage.
TEST(Cli, EveryListedCommandDeclaresItself) {
  RunResult help = RunCommand(Bin() + " --help");
  ASSERT_EQ(help.exit_code, 0);
  std::istringstream lines(help.out.substr(help.out.find("Subcommands:\n")));
  std::vector<std::string> commands;
  for (std::string line; std::getline(lines, line) && !line.empty();) {
    if (line.rfind("  ", 0) == 0) commands.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  ASSERT_EQ(commands.size(), 10u) << help.out;
  for (const std::string& cmd : commands) {
    RunResult h = RunCommand(Bin() + " " + cmd + " --help");
    EXPECT_EQ(h.exit_code, 0) << cmd << ": " << h.err;
    EXPECT_NE(h.out.find("tracefuse " + cmd + " [OPTIONS]"), std::string::npos) << h.out;
  }
  RunResult typo = RunCommand(Bin() + " compre a.json b.json");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(typo.err, "tracefuse: error: A subcommand is required (run 'tracefuse --help')\n");
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

// A trace whose times do not add up (tracefuse-gen --plant-idle: per step, a kernel that overlaps
// the one before it on its stream by 300 ns, one that starts before its launch) says so in one
// line in every report of it: stats, breakdown, compare and ops, text and HTML.
TEST(Cli, EveryReportOfATraceWithWrongTimesSaysSo) {
  testing::TempDir dir;
  const std::string planted = dir.path() + "/planted.json", clean = dir.path() + "/clean.json";
  ASSERT_EQ(RunCommand(StrCat(TRACEFUSE_GEN, " --platform amd --steps 3 --plant-idle -o ", planted))
                .exit_code,
            0);
  ASSERT_EQ(RunCommand(StrCat(TRACEFUSE_GEN, " --platform nvidia --steps 3 -o ", clean)).exit_code,
            0);
  const std::string line =
      "3 activities start before the earlier ones of their stream end (0.001 ms overlapped: "
      "programmatic dependent launch, or wrong times), 3 start before their launch; ";
  const std::string pair = StrCat(planted, " ", clean);
  for (const std::string& command :
       {StrCat("stats ", planted), StrCat("breakdown ", planted), StrCat("compare ", pair),
        StrCat("ops ", pair), StrCat("breakdown ", planted, " --format html"),
        StrCat("compare ", pair, " --format html"), StrCat("ops ", pair, " --format html")}) {
    SCOPED_TRACE(command);
    const RunResult r = RunCommand(StrCat(Bin(), " ", command));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(line), std::string::npos) << r.out;
    // Once for the planted trace, never for the clean one.
    EXPECT_EQ(r.out.find(line, r.out.find(line) + 1), std::string::npos);
    EXPECT_EQ(r.out.find("NVIDIA integrity"), std::string::npos);
  }
}

// stats --by-op says how the CPU side reached the op tree and what the tree held: nested as it
// arrived from a file, collected whole from a pipe (which cannot be read twice), the same tree
// either way.
TEST(Cli, StatsByOpSaysHowTheCpuSideWasRead) {
  testing::TempDir dir;
  const std::string trace = dir.path() + "/t.json";
  ASSERT_EQ(RunCommand(StrCat(TRACEFUSE_GEN, " --platform amd --steps 5 --layers 2 -o ", trace))
                .exit_code,
            0);
  RunResult ops = RunCommand(StrCat(Bin(), " ops --format json ", trace, " ", trace));
  ASSERT_EQ(ops.exit_code, 0) << ops.err;
  const nlohmann::json top_level_ops = nlohmann::json::parse(ops.out)["traces"][0]["top_level_ops"];
  RunResult file = RunCommand(StrCat(Bin(), " stats --by-op --format json ", trace));
  RunResult pipe =
      RunCommand(StrCat("(cat ", trace, " | ", Bin(), " stats --by-op --format json -)"));
  ASSERT_EQ(file.exit_code, 0) << file.err;
  ASSERT_EQ(pipe.exit_code, 0) << pipe.err;
  const nlohmann::json streamed = nlohmann::json::parse(file.out)["cpu_side"];
  const nlohmann::json collected = nlohmann::json::parse(pipe.out)["cpu_side"];
  EXPECT_EQ(streamed["path"], "streamed");
  EXPECT_TRUE(streamed["any_order_reason"].is_null());
  EXPECT_EQ(collected["path"], "any-order");
  EXPECT_EQ(collected["any_order_reason"], "the input cannot be read twice");
  for (const nlohmann::json& cpu_side : {streamed, collected}) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : cpu_side.items()) keys.push_back(key);
    EXPECT_EQ(keys, (std::vector<std::string>{"any_order_reason", "bytes", "events_read_again",
                                              "path", "steps", "top_level_ops"}));
    EXPECT_EQ(cpu_side["events_read_again"], 0);
    EXPECT_EQ(cpu_side["top_level_ops"], top_level_ops);
    EXPECT_EQ(cpu_side["steps"], 5);
    const nlohmann::json& bytes = cpu_side["bytes"];
    uint64_t parts = 0;
    for (const char* part :
         {"units", "correlation_index", "nesting", "collected_events", "names", "work"}) {
      parts += bytes.at(part).get<uint64_t>();
    }
    EXPECT_EQ(bytes["total"].get<uint64_t>(), parts);
    EXPECT_GT(bytes["units"].get<uint64_t>(), 0u);
  }
  EXPECT_EQ(streamed["bytes"]["collected_events"], 0);
  EXPECT_GT(collected["bytes"]["collected_events"].get<uint64_t>(), 0u);
  RunResult text = RunCommand(StrCat("(cat ", trace, " | ", Bin(), " stats --by-op -)"));
  EXPECT_NE(text.out.find("cpu side                   any-order (the input cannot be read twice)\n"
                          "  top-level ops            " +
                          top_level_ops.dump() + "\n  steps                    5\n"),
            std::string::npos)
      << text.out;
}

// Kernel events with a field missing or of the wrong type are kept and counted, per reason, in
// stats (text and JSON) and in compare's "tracefuse" block: nothing disappears silently.
TEST(Cli, KernelsWithMissingOrWrongFieldsAreCountedPerReason) {
  testing::TempDir dir;
  const std::string trace = dir.File("odd.json", R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "good", "ts": 1, "dur": 2, "args": {"correlation": 7}},
    {"ph": "X", "cat": "kernel", "ts": 3, "dur": 1, "args": {"correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": 42, "ts": 4, "dur": 1, "args": {"correlation": 9}},
    {"ph": "X", "cat": "kernel", "name": "late", "ts": "soon", "dur": null,
     "args": {"correlation": 10}},
    {"ph": "X", "cat": "kernel", "name": "loose", "ts": 6, "dur": 1, "args": {"correlation": "x"}},
    {"ph": "X", "cat": "kernel", "name": "bare", "ts": 7, "dur": 1}
  ]})");
  RunResult r = RunCommand(Bin() + " stats " + trace + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kernels"], 6);
  EXPECT_EQ(j["kernels_without_name"], 2);
  EXPECT_EQ(j["kernels_with_bad_times"], 1);
  EXPECT_EQ(j["kernels_without_correlation"], 2);
  r = RunCommand(Bin() + " stats " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nkernels w/o correlation    2\nkernels without a name     2\n"
                       "kernels with bad ts/dur    1\n"),
            std::string::npos)
      << r.out;
  r = RunCommand(Bin() + " compare " + trace + " " + trace + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json t = nlohmann::json::parse(r.out)["tracefuse"]["traces"][1];
  EXPECT_EQ(t["kernels_without_name"], 2);
  EXPECT_EQ(t["kernels_with_bad_times"], 1);
  EXPECT_EQ(t["kernels_without_correlation"], 2);
}

// The generator's layouts differ only in whitespace: the same document, token for token and key
// for key, and the same stats and compare reports but for what measures the file or the run.
TEST(Cli, EveryGeneratorLayoutGivesTheSameDocumentStatsAndCompare) {
  testing::TempDir dir;
  const char* layouts[] = {"kineto", "lines", "compact"};
  std::map<std::string, nlohmann::json> stats, compare;
  std::map<std::string, nlohmann::ordered_json> documents;
  std::map<std::string, uint64_t> bytes;
  for (const char* layout : layouts) {
    // One directory per layout and the same file names, so that the reports name the same paths.
    std::string d = dir.path() + "/" + layout;
    std::filesystem::create_directory(d);
    for (const char* p : {"amd", "nvidia"}) {
      RunResult g =
          RunCommand(StrCat(TRACEFUSE_GEN, " --platform ", p, " --steps 12 --seed 4 --layout ",
                            layout, " -o ", d, "/", p, ".json"));
      ASSERT_EQ(g.exit_code, 0) << g.err;
    }
    std::ifstream in(d + "/amd.json");
    documents[layout] = nlohmann::ordered_json::parse(in);
    RunResult s = RunCommand(StrCat("cd ", d, " && ", Bin(), " stats amd.json --format json"));
    ASSERT_EQ(s.exit_code, 0) << s.err;
    RunResult c =
        RunCommand(StrCat("cd ", d, " && ", Bin(), " compare amd.json nvidia.json --format json"));
    ASSERT_EQ(c.exit_code, 0) << c.err;
    stats[layout] = nlohmann::json::parse(s.out);
    compare[layout] = nlohmann::json::parse(c.out);
    // What differs between layouts: the file's size (its whitespace), hence the read rate, and
    // the timings and CPU seconds, which differ from run to run anyway.
    bytes[layout] = stats[layout]["bytes"];
    EXPECT_EQ(stats[layout]["file_bytes"], bytes[layout]) << layout;
    for (const char* key :
         {"bytes", "file_bytes", "elapsed_seconds", "gb_per_second", "cpu_seconds"})
      ASSERT_EQ(stats[layout].erase(key), 1u) << layout << " " << key;
    nlohmann::json& tf = compare[layout]["tracefuse"];
    EXPECT_EQ(tf["traces"][0]["bytes"], bytes[layout]) << layout;
    for (nlohmann::json& trace : tf["traces"]) {
      for (const char* key : {"bytes", "file_bytes", "cpu_seconds"})
        ASSERT_EQ(trace.erase(key), 1u) << layout;
    }
    ASSERT_EQ(tf.erase("timings_seconds"), 1u) << layout;
  }
  EXPECT_GT(bytes["kineto"], bytes["lines"]);
  EXPECT_GT(bytes["lines"], bytes["compact"]);
  EXPECT_EQ(stats["kineto"]["kernels"], 12 * (8 * 11 + 5 + 6));
  EXPECT_EQ(compare["kineto"]["metadata"]["matched_groups"], 12);
  for (const char* layout : {"lines", "compact"}) {
    EXPECT_TRUE(documents[layout] == documents["kineto"]) << layout;
    EXPECT_EQ(stats[layout], stats["kineto"]) << layout;
    EXPECT_EQ(compare[layout], compare["kineto"]) << layout;
  }
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

// Both durabilities commit the same bytes atomically; SyncToDisk() names what it cannot sync.
TEST(OutputFile, CommitsEitherDurabilityAndSyncsCommittedFiles) {
  testing::TempDir dir;
  for (OutputFile::Durability durability :
       {OutputFile::Durability::kProcess, OutputFile::Durability::kMachine}) {
    const std::string path = dir.path() + "/out.json";
    ASSERT_TRUE(
        WriteOutput(path, "{\"a\": 1}\n", OutputFile::OnInterrupt::kAbandon, durability).ok());
    EXPECT_EQ(testing::ReadFile(path), "{\"a\": 1}\n");
    EXPECT_EQ(testing::FilesIn(dir.path(), "").size(), 1u);  // no temporary left behind
    EXPECT_TRUE(SyncToDisk(path).ok());
  }
  EXPECT_TRUE(SyncToDisk("-").ok());
  EXPECT_EQ(SyncToDisk(dir.path() + "/missing.json").ToString(),
            "UNAVAILABLE: " + dir.path() + "/missing.json: No such file or directory");
}

// A FIFO (or /dev/null) is written where it is: a rename over it would replace it with a file.
TEST(OutputFile, WritesAPipeInPlace) {
  testing::TempDir dir;
  const std::string fifo = dir.path() + "/pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string read;
  std::thread reader([&] { read = testing::ReadFile(fifo); });
  EXPECT_TRUE(WriteOutput(fifo, "{\"a\": 1}\n").ok());
  reader.join();
  EXPECT_EQ(read, "{\"a\": 1}\n");
  struct stat st;
  ASSERT_EQ(stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
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

class CompareCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    for (const char* p : {"amd", "nvidia"}) {
      std::string path = dir_->path() + "/" + p + ".json";
      ASSERT_EQ(
          RunCommand(std::string(TRACEFUSE_GEN) + " --platform " + p + " --steps 30 -o " + path)
              .exit_code,
          0);
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string Traces() {
    return dir_->path() + "/amd.json " + dir_->path() + "/nvidia.json";
  }
  static testing::TempDir* dir_;
};
testing::TempDir* CompareCli::dir_ = nullptr;

TEST_F(CompareCli, TextReportNamesPlatformsAndFindings) {
  RunResult r = RunCommand(std::string(TRACEFUSE_BINARY) + " compare " + Traces());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");  // stderr is not a terminal: no progress line
  EXPECT_NE(r.out.find("FUSION COMPARISON: AMD vs NVIDIA"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("AMD runs Attention+Reduce separately, NVIDIA fuses into Attention [30 groups"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Reduce: fused by NVIDIA"), std::string::npos) << r.out;
}

TEST_F(CompareCli, LabelsMarkdownCsvAndJson) {
  std::string bin = std::string(TRACEFUSE_BINARY) + " compare " + Traces();
  RunResult md = RunCommand(bin + " --format markdown --label1 MI300X --label2 H100");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(md.out.rfind("# Fusion comparison: MI300X vs H100\n", 0), 0u) << md.out;
  EXPECT_NE(md.out.find("| category | MI300X count | H100 count |"), std::string::npos) << md.out;

  RunResult csv = RunCommand(bin + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')),
            "kernel_type,trace1_count,trace2_count,trace1_time_ms,trace2_time_ms,count_ratio,"
            "time_ratio,opportunity,fused_by,opportunity_ratio,groups_affected,total_groups");
  EXPECT_NE(csv.out.find("\nReduce,240,0,"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(",inf,inf,yes,NVIDIA,inf,30,30\n"), std::string::npos) << csv.out;

  RunResult json = RunCommand(bin + " --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["metadata"]["matched_groups"], 30);
  EXPECT_EQ(j["fusion_mappings"][0]["fused_platform"], "Trace 2");  // the reference's labels
  EXPECT_EQ(j["tracefuse"]["traces"][0]["platform"], "AMD");
  EXPECT_EQ(j["tracefuse"]["traces"][1]["gpu"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(j["tracefuse"]["rule_set"], "tracefuse");  // the default
  EXPECT_TRUE(j["tracefuse"]["timings_seconds"].contains("analyze"));
}

// The idle split and the launches of both sides, as compare and ops write them in CSV and JSON,
// are each trace's figures as tracefuse-gen --expect-idle gives them, and the text, Markdown and
// HTML reports say the same sentence.
TEST(Cli, IdleAndLaunchTablesOfBothSidesInEveryFormat) {
  testing::TempDir dir;
  PerSide<nlohmann::json> want;
  std::string pair;
  for (Side s : kSides) {
    const char* platform = s == Side::kTrace1 ? "amd" : "nvidia";
    const std::string trace = StrCat(dir.path(), "/", platform, ".json");
    const std::string expected = StrCat(dir.path(), "/", platform, ".expected.json");
    ASSERT_EQ(RunCommand(StrCat(TRACEFUSE_GEN, " --platform ", platform, " --steps 4 --seed ",
                                s == Side::kTrace1 ? 7 : 8, " --plant-idle --expect-idle ",
                                expected, " -o ", trace))
                  .exit_code,
              0);
    want[s] = nlohmann::json::parse(std::ifstream(expected))["devices"][0];
    pair += " " + trace;
  }
  auto number = [](const std::string& cell) { return std::stod(cell); };
  for (const char* command : {"compare", "ops"}) {
    SCOPED_TRACE(command);
    const std::string run = StrCat(Bin(), " ", command, pair);
    RunResult idle = RunCommand(run + " --format csv --csv-table idle");
    ASSERT_EQ(idle.exit_code, 0) << idle.err;
    std::vector<std::string> rows = absl::StrSplit(idle.out, '\n', absl::SkipEmpty());
    ASSERT_EQ(rows.size(), 3u) << idle.out;
    EXPECT_EQ(rows[0],
              "trace,device,span_us,idle_us,cpu_wait_us,launch_latency_us,unattributed_us,gaps,"
              "same_stream_overlaps,same_stream_overlap_us,before_launch");
    RunResult launches = RunCommand(run + " --format csv --csv-table launches");
    ASSERT_EQ(launches.exit_code, 0) << launches.err;
    std::vector<std::string> launch_rows = absl::StrSplit(launches.out, '\n', absl::SkipEmpty());
    size_t launch_row = 1;
    for (Side s : kSides) {
      const std::vector<std::string> cells = absl::StrSplit(rows[1 + static_cast<int>(s)], ',');
      ASSERT_EQ(cells.size(), 11u);
      EXPECT_EQ(cells[0], s == Side::kTrace1 ? "AMD" : "NVIDIA");
      const nlohmann::json& w = want[s];
      EXPECT_EQ(number(cells[4]), w["idle"]["cpu_wait_us"].get<double>());
      EXPECT_EQ(number(cells[5]), w["idle"]["launch_latency_us"].get<double>());
      EXPECT_EQ(number(cells[6]), w["idle"]["unattributed_us"].get<double>());
      EXPECT_EQ(cells[7], w["idle"]["gaps"].dump());
      EXPECT_EQ(cells[8], w["integrity"]["same_stream_overlaps"].dump());
      EXPECT_EQ(number(cells[9]), w["integrity"]["same_stream_overlap_us"].get<double>());
      EXPECT_EQ(cells[10], w["integrity"]["before_launch"].dump());
      for (const nlohmann::json& l : w["launches"]) {
        ASSERT_LT(launch_row, launch_rows.size());
        const std::vector<std::string> c = absl::StrSplit(launch_rows[launch_row++], ',');
        ASSERT_EQ(c.size(), 10u);
        EXPECT_EQ(c[2], l["api"]);
        EXPECT_EQ(c[3], l["count"].dump());
        EXPECT_EQ(number(c[4]), l["cpu_us"]["median"].get<double>());
        EXPECT_EQ(number(c[8]), l["delay_us"]["p90"].get<double>());
      }
    }
    EXPECT_EQ(launch_row, launch_rows.size());
    // The sentence, the same in text, Markdown and HTML.
    RunResult text = RunCommand(run);
    const size_t heading = text.out.find("Why the GPU is idle\n-------------------\n");
    ASSERT_NE(heading, std::string::npos) << text.out;
    const size_t from = text.out.find('\n', text.out.find('\n', heading) + 1) + 1;
    const std::string sentence = text.out.substr(from, text.out.find('\n', from) - from);
    EXPECT_TRUE(absl::EndsWith(sentence, " us.")) << sentence;
    EXPECT_NE(
        RunCommand(run + " --format markdown").out.find("## Why the GPU is idle\n" + sentence),
        std::string::npos);
    const RunResult html = RunCommand(run + " --format html");
    EXPECT_NE(html.out.find("<section id=\"idle\">\n<h2>Why the GPU is idle</h2>\n<p>" +
                            absl::StrReplaceAll(sentence, {{"'", "&#39;"}}) + "</p>"),
              std::string::npos);
  }
}

TEST_F(CompareCli, ProgressOnlyWhenAskedOrOnATerminal) {
  RunResult r = RunCommand(std::string(TRACEFUSE_BINARY) + " compare " + Traces() +
                           " --progress always --format csv");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("GB read"), std::string::npos) << r.err;
  r = RunCommand(std::string(TRACEFUSE_BINARY) + " compare " + Traces() + " --progress never");
  EXPECT_EQ(r.err, "");
}

TEST_F(CompareCli, FailureNamesTheFileAndLeavesNoReport) {
  std::string out = dir_->path() + "/report.json";
  std::string bad = dir_->File("bad.json", R"({"traceEvents": [{"cat": "kernel"}, {]})");
  RunResult r = RunCommand(std::string(TRACEFUSE_BINARY) + " compare " + dir_->path() +
                           "/amd.json " + bad + " --format json -o " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("tracefuse: error: " + bad + ": malformed JSON at byte ", 0), 0u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  r = RunCommand(std::string(TRACEFUSE_BINARY) + " compare " + dir_->path() + "/amd.json " +
                 dir_->path() + "/nope.json -o " + out);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "tracefuse: error: " + dir_->path() + "/nope.json: No such file or directory\n");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(RulesCli, ListsAndChecksRuleSets) {
  RunResult r = RunCommand(std::string(TRACEFUSE_BINARY) + " rules");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("rule set tracefuse: ", 0), 0u) << r.out;
  EXPECT_NE(
      r.out.find("  1. Communication <- all(not regex \"^triton_(poi|red|per|for|spl|tem)_\", "
                 "any(contains \"nccl\""),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("     otherwise Other\n"), std::string::npos);

  testing::TempDir dir;
  std::string good =
      dir.File("good.yaml", "extends: tracefuse\nrules:\n  - {category: GEMM, prefix: mygemm}\n");
  r = RunCommand(std::string(TRACEFUSE_BINARY) + " rules --check --ruleset " + good);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto base = *RuleSet::Load("tracefuse");
  EXPECT_EQ(r.out, good + ": OK (" + std::to_string(base->rules().size() + 1) + " rules, " +
                       std::to_string(base->categories().size()) + " categories)\n");

  const std::pair<const char*, const char*> bad[] = {
      {"rules:\n  - category: A\n    regex: \"(x\"\n",
       ":3: bad regex '(x': Missing close parenthesis for group started at index 0."},
      {"extends: nothere\n",
       ":1: unknown rule set 'nothere' (built-in sets: tracefuse, wafer-kernel, wafer-op)"},
      {"categories: [A, A]\n", ":1: duplicate category 'A'"},
  };
  for (const auto& [yaml, message] : bad) {
    std::string f = dir.File("bad.yaml", yaml);
    r = RunCommand(std::string(TRACEFUSE_BINARY) + " rules --check --ruleset " + f);
    EXPECT_EQ(r.exit_code, 1) << yaml;
    EXPECT_EQ(r.err, "tracefuse: error: " + f + message + "\n");
  }
}

TEST(RulesCli, UserRulesTakePrecedenceInEveryCommand) {
  testing::TempDir dir;
  std::string rules = dir.File("mine.yaml",
                               "extends: tracefuse\ncategories: [MyAttention]\nrules:\n"
                               "  - {category: MyAttention, contains: unified_attention}\n");
  RunResult r = RunCommand(std::string(TRACEFUSE_BINARY) + " classify --ruleset " + rules,
                           "kernel_unified_attention_3d\nCijk_Alik\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"name\":\"kernel_unified_attention_3d\",\"category\":\"MyAttention\"}\n"
            "{\"name\":\"Cijk_Alik\",\"category\":\"GEMM\"}\n");
}

TEST(BreakdownCli, JsonShape) {
  testing::TempDir dir;
  std::string trace = dir.path() + "/t.json";
  ASSERT_EQ(
      RunCommand(std::string(TRACEFUSE_GEN) + " --platform amd --steps 10 -o " + trace).exit_code,
      0);
  RunResult r =
      RunCommand(std::string(TRACEFUSE_BINARY) + " breakdown " + trace + " --format json --top 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["trace"], trace);
  EXPECT_EQ(j["platform"], "AMD");
  EXPECT_EQ(j["gpu"], "AMD Instinct MI300X");
  EXPECT_EQ(j["rule_set"], "tracefuse");
  EXPECT_EQ(j["kernels"], 10 * (8 * 11 + 5 + 6));
  double share = 0, time = 0;
  int64_t count = 0;
  for (const auto& c : j["categories"]) {
    share += c["time_share"].get<double>();
    time += c["time_us"].get<double>();
    count += c["count"].get<int64_t>();
    EXPECT_LE(c["top_kernels"].size(), 2u);
    EXPECT_GT(c["top_kernels"][0]["count"].get<int64_t>(), 0);
  }
  EXPECT_NEAR(share, 1.0, 1e-9);
  EXPECT_NEAR(time, j["kernel_time_us"].get<double>(), 1e-6);
  EXPECT_EQ(count, j["kernels"].get<int64_t>());
  EXPECT_EQ(j["categories"][0]["category"], "GEMM");  // the most time
  EXPECT_TRUE(j["unclassified"].is_array());
  EXPECT_TRUE(j["unclassified"].empty());
  RunResult csv =
      RunCommand(std::string(TRACEFUSE_BINARY) + " breakdown " + trace + " --format csv");
  EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')),
            "category,kernel,count,time_us,time_share,by_fallback_rule,by_op");
}

// Kernels that only a fallback rule (a word of the name) classified are marked, in every format.
TEST(BreakdownCli, MarksKernelsClassifiedByFallbackRules) {
  testing::TempDir dir;
  const std::string trace = dir.File("t.json", R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "mylib::normalize_rows_kernel", "ts": 1, "dur": 30,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk_HHS", "ts": 40, "dur": 70,
     "args": {"correlation": 2}}]})");
  const std::string breakdown = std::string(TRACEFUSE_BINARY) + " breakdown " + trace;
  nlohmann::json j = nlohmann::json::parse(RunCommand(breakdown + " --format json").out);
  EXPECT_EQ(j["fallback_rule_kernels"], 1);
  EXPECT_NEAR(j["fallback_rule_time_share"].get<double>(), 0.3, 1e-9);
  for (const auto& c : j["categories"]) {
    const bool by_word = c["category"] == "LayerNorm";  // "normalize", a fallback word
    EXPECT_EQ(c["top_kernels"][0]["by_fallback_rule"], by_word) << c["category"];
  }
  RunResult text = RunCommand(breakdown);
  EXPECT_NE(text.out.find("  ~ mylib::normalize_rows_kernel\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\n~ classified by a fallback rule (a word of the name, no rule for its "
                          "library): 1 kernels, 0.030 ms, 30.0% of kernel time ('tracefuse "
                          "rules' lists them)\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(RunCommand(breakdown + " --format csv").out.find("mylib::normalize_rows_kernel,1,"),
            std::string::npos);
}

TEST(BreakdownCli, SuggestWritesARuleFileThatClassifiesTheUnclassified) {
  testing::TempDir dir;
  std::string trace = dir.path() + "/t.json";
  ASSERT_EQ(RunCommand(std::string(TRACEFUSE_GEN) + " --platform nvidia --steps 10 -o " + trace)
                .exit_code,
            0);
  const std::string breakdown = std::string(TRACEFUSE_BINARY) + " breakdown " + trace;
  std::string rules = dir.path() + "/suggested.yaml";
  RunResult r = RunCommand(breakdown + " --ruleset wafer-kernel --suggest -o " + rules);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  r = RunCommand(std::string(TRACEFUSE_BINARY) + " rules --check --ruleset " + rules);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunCommand(breakdown + " --format json --ruleset " + rules);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["unclassified"].empty()) << r.out;

  // The breakdown's other formats are not rule files: a usage error, before the trace is read.
  for (const std::string format : {"json", "csv"}) {
    r = RunCommand(breakdown + "-missing --suggest --format " + format);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "tracefuse: error: --suggest writes a rule file (YAML), not --format " +
                         format + "\n");
    EXPECT_EQ(r.out, "");
  }
}

TEST(Cli, ReadsPlainAndGzipTracesFromAPipe) {
  testing::TempDir dir;
  std::string trace = dir.path() + "/t.json";
  ASSERT_EQ(testing::RunCommand(std::string(TRACEFUSE_GEN) + " --steps 5 -o " + trace).exit_code,
            0);
  ASSERT_EQ(std::system(("gzip -k " + trace).c_str()), 0);
  for (const std::string& cat : {"cat " + trace, "cat " + trace + ".gz"}) {
    testing::RunResult r = testing::RunCommand("(" + cat + " | " + std::string(TRACEFUSE_BINARY) +
                                               " stats - --format json)");
    ASSERT_EQ(r.exit_code, 0) << cat << ": " << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["trace"], "-");
    EXPECT_EQ(j["kernels"], 5 * (8 * 11 + 5 + 6)) << cat;
  }
}

// A trace, its gzip copy and its zstd copy (made by the gzip and zstd commands, default levels,
// as users make them) give the same stats and compare reports, read from files or from a pipe,
// but for what measures the file or the run: its name, size, the timings and CPU seconds.
TEST(Cli, PlainGzipAndZstdTracesGiveTheSameStatsAndCompare) {
  testing::TempDir dir;
  const std::string d = dir.path();
  for (const char* p : {"amd", "nvidia"}) {
    RunResult g = RunCommand(
        StrCat(TRACEFUSE_GEN, " --platform ", p, " --steps 12 --seed 4 -o ", d, "/", p, ".json"));
    ASSERT_EQ(g.exit_code, 0) << g.err;
    ASSERT_EQ(RunCommand(StrCat("gzip -k ", d, "/", p, ".json")).exit_code, 0);
    ASSERT_EQ(RunCommand(StrCat("zstd -q -k ", d, "/", p, ".json")).exit_code, 0);
  }
  std::map<std::string, nlohmann::json> stats, compare;
  for (const std::string suffix : {"", ".gz", ".zst"}) {
    for (const std::string& input :
         {StrCat(d, "/amd.json", suffix), StrCat("- (a pipe from ", d, "/amd.json", suffix, ")")}) {
      const std::string stats_command = StrCat(Bin(), " stats --format json ");
      RunResult s = RunCommand(
          input[0] != '-' ? stats_command + input
                          : StrCat("(cat ", d, "/amd.json", suffix, " | ", stats_command, "-)"));
      ASSERT_EQ(s.exit_code, 0) << input << ": " << s.err;
      nlohmann::json j = nlohmann::json::parse(s.out);
      EXPECT_EQ(j["compressed"], !suffix.empty()) << input;
      for (const char* key :
           {"trace", "file_bytes", "compressed", "elapsed_seconds", "gb_per_second", "cpu_seconds"})
        ASSERT_EQ(j.erase(key), 1u) << input << " " << key;
      // A pipe cannot be read twice: its GPU timeline is collected, with the same figures.
      nlohmann::json& timeline = j["gpu_timeline"];
      EXPECT_EQ(timeline["path"], input[0] == '-' ? "collected" : "streamed") << input;
      ASSERT_EQ(timeline.erase("path"), 1u);
      ASSERT_EQ(timeline.erase("collected_reason"), 1u);
      stats[input] = j;
    }
    RunResult c = RunCommand(StrCat(Bin(), " compare --format json ", d, "/amd.json", suffix, " ",
                                    d, "/nvidia.json", suffix));
    ASSERT_EQ(c.exit_code, 0) << suffix << ": " << c.err;
    nlohmann::json j = nlohmann::json::parse(c.out);
    for (nlohmann::json& trace : j["tracefuse"]["traces"]) {
      for (const char* key : {"path", "file_bytes", "cpu_seconds"})
        ASSERT_EQ(trace.erase(key), 1u) << suffix << " " << key;
    }
    ASSERT_EQ(j["tracefuse"].erase("timings_seconds"), 1u) << suffix;
    compare[suffix] = j;
  }
  ASSERT_EQ(stats.size(), 6u);
  for (const auto& [input, j] : stats) EXPECT_EQ(j, stats.begin()->second) << input;
  EXPECT_EQ(compare[".gz"], compare[""]);
  EXPECT_EQ(compare[".zst"], compare[""]);
  EXPECT_EQ(stats.begin()->second["kernels"], 12 * (8 * 11 + 5 + 6));
  // The text names the format of the file on disk.
  for (const auto& [suffix, format] : {std::pair{".gz", " gzip)"}, std::pair{".zst", " zstd)"}}) {
    RunResult text = RunCommand(StrCat(Bin(), " stats ", d, "/amd.json", suffix));
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find(format), std::string::npos) << text.out;
  }
}

// A compressed trace cut short, or damaged, fails with one line naming the file and how far it got
// (exit 1), whichever the format; a pipe is named "-".
TEST(Cli, TruncatedOrCorruptCompressedTracesGetOneLine) {
  testing::TempDir dir;
  const std::string d = dir.path();
  ASSERT_EQ(RunCommand(StrCat(TRACEFUSE_GEN, " --steps 20 -o ", d, "/t.json")).exit_code, 0);
  ASSERT_EQ(RunCommand(StrCat("gzip -k ", d, "/t.json")).exit_code, 0);
  ASSERT_EQ(RunCommand(StrCat("zstd -q -k ", d, "/t.json")).exit_code, 0);
  for (const std::string format : {"gzip", "zstd"}) {
    const std::string ext = format == "gzip" ? "gz" : "zst";
    const std::string decoded = format == "gzip" ? "inflated" : "decompressed";
    const std::string whole = StrCat(d, "/t.json.", ext), cut = StrCat(d, "/cut.json.", ext);
    ASSERT_EQ(RunCommand(StrCat("(head -c 5000 ", whole, " >", cut, ")")).exit_code, 0);
    for (const std::string& input : {cut, std::string("-")}) {
      RunResult r = RunCommand(input == "-" ? StrCat("(cat ", cut, " | ", Bin(), " stats -)")
                                            : StrCat(Bin(), " stats ", input));
      EXPECT_EQ(r.exit_code, 1) << input;
      const std::regex line(StrCat("tracefuse: error: ", input, ": truncated ", format,
                                   " data after 5000 compressed bytes \\([0-9]+ bytes ", decoded,
                                   "\\) \\(--lenient reads the events before the cut\\)\n"));
      EXPECT_TRUE(std::regex_match(r.err, line)) << r.err;
      EXPECT_EQ(r.out, "");
    }
    // Bytes of the middle overwritten: the data no longer matches its checksum, or cannot be
    // decoded at all.
    const std::string bad = StrCat(d, "/bad.json.", ext);
    ASSERT_EQ(RunCommand(StrCat("(cp ", whole, " ", bad,
                                " && printf '\\377\\377\\377\\377' | dd of=", bad,
                                " bs=1 seek=3000 conv=notrunc 2>/dev/null)"))
                  .exit_code,
              0);
    RunResult r = RunCommand(StrCat(Bin(), " stats ", bad));
    EXPECT_EQ(r.exit_code, 1);
    const std::regex line(StrCat("tracefuse: error: ", bad, ": corrupt ", format,
                                 " data near compressed byte [0-9]+: [^\n]+\n"));
    EXPECT_TRUE(std::regex_match(r.err, line)) << r.err;
  }
}

}  // namespace
}  // namespace tracefuse

namespace tracefuse {
namespace {

TEST_F(CompareCli, OpsReportsTheOpsThatDifferWithTheirKernels) {
  const std::string bin = std::string(TRACEFUSE_BINARY) + " ops " + Traces();
  RunResult r = RunCommand(bin + " --top 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("OP-LEVEL COMPARISON: AMD vs NVIDIA\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("100.0% of kernel time linked to an op"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vllm::unified_attention_with_output  (no module)  x30: "),
            std::string::npos)
      << r.out;

  RunResult csv = RunCommand(bin + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')),
            "op,scope,matched,instances,trace1_instances,trace1_time_us,trace2_instances,"
            "trace2_time_us,delta_us,ratio,trace1_kernels,trace2_kernels,trace1_flops,trace1_bytes,"
            "trace1_dtype,trace1_tflops_per_s,trace1_tb_per_s,trace1_percent_of_peak,trace1_roof,"
            "trace1_bound,trace2_flops,trace2_bytes,trace2_dtype,trace2_tflops_per_s,"
            "trace2_tb_per_s,trace2_percent_of_peak,trace2_roof,trace2_bound");
  // Every row has the header's columns, the perf models' ones empty where there is no figure.
  for (size_t begin = 0; begin < csv.out.size();) {
    const size_t end = csv.out.find('\n', begin);
    const std::string line = csv.out.substr(begin, end - begin);
    if (line.find('"') == std::string::npos) {
      EXPECT_EQ(std::count(line.begin(), line.end(), ','), 27) << line;  // 28 columns
    }
    begin = end + 1;
  }

  RunResult json = RunCommand(bin + " --format json --label1 MI300X --label2 H100");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["schema"], "tracefuse.ops/1");
  EXPECT_EQ(j["traces"][0]["label"], "MI300X");
  EXPECT_EQ(j["traces"][1]["gpu"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(j["traces"][0]["linked_kernel_time_us"], j["traces"][0]["kernel_time_us"]);
  EXPECT_EQ(j["traces"][0]["steps"], 30);
  EXPECT_EQ(j["top_instances"].size(), 20u);

  RunResult md = RunCommand(bin + " --format markdown --top 1");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(md.out.rfind("# Op-level comparison: AMD vs NVIDIA\n", 0), 0u) << md.out;
}

// Eager traces replay no graph: compare matches no group, says so and names --by-op, which
// adds the fusion differences of `ops` to each format; both commands' CSV can hold them.
TEST_F(CompareCli, ByOpFindsOnEagerTracesWhatGroupsCannot) {
  const std::string a = dir_->path() + "/eager_a.json", b = dir_->path() + "/eager_b.json";
  const std::string expect = dir_->path() + "/eager_expect.json";
  ASSERT_EQ(RunCommand(std::string(TRACEFUSE_GEN) + " --eager --seed 1 --layers 2 --steps 2 -o " +
                       a + " --pair-output " + b + " --expect " + expect)
                .exit_code,
            0);
  // As many differences as the generator planted (ops.fusion_planted checks them one by one).
  const size_t planted =
      nlohmann::json::parse(testing::ReadFile(expect))["fusion_differences"].size();
  ASSERT_GT(planted, 0u);
  const std::string compare = std::string(TRACEFUSE_BINARY) + " compare " + a + " " + b;
  RunResult plain = RunCommand(compare);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("  Matched correlation groups: 0; rule set: tracefuse\n  No correlation "
                           "group matched: these traces replay no CUDA/HIP graph of 50+ kernels. "
                           "They record their CPU operators, so --by-op finds the fusion "
                           "differences by aligning the operators instead.\n"),
            std::string::npos)
      << plain.out;
  EXPECT_EQ(plain.out.find("Fusion differences by operator"), std::string::npos) << plain.out;

  RunResult by_op = RunCommand(compare + " --by-op");
  ASSERT_EQ(by_op.exit_code, 0) << by_op.err;
  EXPECT_EQ(by_op.out.find("No correlation group matched"), std::string::npos) << by_op.out;
  EXPECT_NE(by_op.out.find(absl::StrCat("Fusion differences by operator (", planted, " in all: ")),
            std::string::npos)
      << by_op.out;

  RunResult ops_json =
      RunCommand(std::string(TRACEFUSE_BINARY) + " ops " + a + " " + b + " --format json");
  RunResult compare_json = RunCommand(compare + " --by-op --format json");
  ASSERT_EQ(ops_json.exit_code, 0) << ops_json.err;
  ASSERT_EQ(compare_json.exit_code, 0) << compare_json.err;
  const nlohmann::json differences = nlohmann::json::parse(ops_json.out)["fusion_differences"];
  const nlohmann::json j = nlohmann::json::parse(compare_json.out);
  EXPECT_EQ(j["tracefuse"]["fusion_differences"], differences);
  EXPECT_FALSE(j.contains("fusion_differences"));  // the reference's keys unchanged
  ASSERT_EQ(differences.size(), planted);

  constexpr char kHeader[] =
      "kind,relation,scope,op,fused_by,instances,trace1_ops,trace1_kernels,trace1_categories,"
      "trace1_time_us,trace2_ops,trace2_kernels,trace2_categories,trace2_time_us,"
      "extra_categories,extra_kernels,extra_time_us,fused_kernel,fused_kernel_category,"
      "saving_us";
  for (const std::string& command :
       {compare + " --by-op --format csv --csv-table fusion_differences",
        std::string(TRACEFUSE_BINARY) + " ops " + a + " " + b +
            " --format csv --csv-table fusion_differences"}) {
    RunResult csv = RunCommand(command);
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')), kHeader) << command;
    EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), static_cast<long>(planted) + 1)
        << csv.out;
  }
}

TEST_F(CompareCli, OpsFailuresNameTheFileAndLeaveNoReport) {
  const std::string out = dir_->path() + "/ops.json";
  const std::string bad = dir_->File("bad_ops.json", R"({"traceEvents": [{"cat": "cpu_op"}, {]})");
  RunResult r = RunCommand(std::string(TRACEFUSE_BINARY) + " ops " + dir_->path() + "/amd.json " +
                           bad + " --format json -o " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("tracefuse: error: " + bad + ": malformed JSON at byte ", 0), 0u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  r = RunCommand(std::string(TRACEFUSE_BINARY) + " ops " + dir_->path() + "/nope.json " +
                 dir_->path() + "/amd.json -o " + out);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "tracefuse: error: " + dir_->path() + "/nope.json: No such file or directory\n");
  EXPECT_FALSE(std::filesystem::exists(out));
  const std::string bad_time = dir_->File(
      "bad_time.json", R"({"traceEvents": [{"cat": "cpu_op", "name": "a", "ts": 1x, "dur": 2}]})");
  r = RunCommand(std::string(TRACEFUSE_BINARY) + " ops " + bad_time + " " + bad_time);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "tracefuse: error: " + bad_time +
                       ": malformed JSON at byte 54: invalid "
                       "number '1x'\n");
  r = RunCommand(std::string(TRACEFUSE_BINARY) + " ops " + dir_->path() + "/amd.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tracefuse: error: TRACE2 is required (run 'tracefuse ops --help')\n");
  r = RunCommand(std::string(TRACEFUSE_BINARY) + " ops " + Traces() + " --format pdf");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "tracefuse: error: --format: pdf not in {text,json,csv,markdown,html,perfetto} (run "
            "'tracefuse ops --help')\n");
  r = RunCommand(std::string(TRACEFUSE_BINARY) + " compare " + Traces() +
                 " --csv-table fusion_differences -o " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tracefuse: error: --csv-table fusion_differences needs --by-op\n");
  EXPECT_FALSE(std::filesystem::exists(out));
  r = RunCommand(std::string(TRACEFUSE_BINARY) + " compare " + Traces() + " --full-names -o " +
                 out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tracefuse: error: --full-names needs --by-op\n");
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace tracefuse
