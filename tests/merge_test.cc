// `tracefuse merge`: batch output directories made here (compare reports from generated traces,
// status files written by the test), read back as one summary in every format.
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_util.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/batch/summary.h"

namespace tracefuse {
namespace {

using json = nlohmann::ordered_json;  // keys in the order written
using testing::RunCommand;
using testing::RunResult;

std::string Bin() { return TRACEFUSE_BINARY; }

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// BatchDir is a directory laid out as `tracefuse batch` leaves it (out/), with the traces and
// the manifest beside it.
class BatchDir {
 public:
  BatchDir() { std::filesystem::create_directory(out()); }

  std::string out() const { return dir_.path() + "/out"; }
  std::string path(const std::string& name) const { return dir_.path() + "/" + name; }

  // A generated trace, made once per (platform, steps, seed).
  std::string Trace(const std::string& platform, int steps, int seed) {
    std::string name = StrCat(platform, "_", steps, "_", seed, ".json");
    if (!std::filesystem::exists(path(name))) {
      RunResult r = RunCommand(StrCat(TRACEFUSE_GEN, " --platform ", platform, " --steps ", steps,
                                      " --seed ", seed, " -o ", path(name)));
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    return path(name);
  }

  // A complete pair: compare's JSON report and a complete status; `reversed`: NVIDIA first.
  void Complete(const std::string& label, int steps, int seed, bool reversed = false) {
    std::string a = Trace("amd", steps, seed), b = Trace("nvidia", steps, seed + 100);
    if (reversed) std::swap(a, b);
    RunResult r = RunCommand(StrCat(Bin(), " compare ", a, " ", b, " --threads 2 --format json -o ",
                                    out(), "/", label, ".json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Status(label, "complete", 0, nullptr, a, b);
  }

  // A status file as batch writes it.
  void Status(const std::string& label, const std::string& state, json exit_code, json error,
              const std::string& trace1 = "t1.json", const std::string& trace2 = "t2.json",
              json gpu_timeline = nullptr) {
    json s = {{"label", label},
              {"state", state},
              {"exit_code", exit_code},
              {"error", error},
              {"trace1", trace1},
              {"trace2", trace2},
              {"manifest", path("manifest.tsv")},
              {"task", tasks_++},
              {"reports", state == "complete" ? json::array({label + ".json"}) : json::array()},
              {"elapsed_seconds", 1.25},
              {"peak_rss_bytes", 123456789},
              {"bytes_read", 1000},
              {"gpu_timeline", gpu_timeline},
              {"host", "node07"},
              {"slurm", {{"job_id", "42"}, {"array_job_id", nullptr}, {"array_task_id", nullptr}}},
              {"started_at", "2025-06-01T12:00:00Z"},
              {"tracefuse_version", "0.1.0"}};
    std::ofstream(StrCat(out(), "/", label, ".status.json")) << s.dump(2);
    labels_.push_back(label);
  }

  // The manifest: every label given a status so far, then `extra` rows.
  void Manifest(const std::vector<std::string>& extra = {}) {
    std::ofstream m(path("manifest.tsv"));
    m << "label\ttrace1\ttrace2\n";
    for (const std::string& l : labels_) m << l << "\ta.json\tb.json\n";
    for (const std::string& l : extra) m << l << "\ta.json\tb.json\n";
  }

  RunResult Merge(const std::string& args = "") const {
    return RunCommand(StrCat(Bin(), " merge ", out(), " ", args));
  }

  json MergeJson(int expected_exit, const std::string& args = "") const {
    RunResult r = Merge("--format json " + args);
    EXPECT_EQ(r.exit_code, expected_exit) << r.err;
    return json::parse(r.out);
  }

 private:
  testing::TempDir dir_;
  std::vector<std::string> labels_;
  int tasks_ = 0;
};

// The summary's "counts" object.
json Counts(int pairs, int complete, int failed, int interrupted, int running, int missing) {
  return {{"pairs", pairs},     {"complete", complete},
          {"failed", failed},   {"interrupted", interrupted},
          {"running", running}, {"missing", missing}};
}

constexpr char kFailedError[] = "tracefuse: error: b.json: truncated JSON at byte 90";
constexpr char kInterruptedError[] = "interrupted by SIGTERM after 1048576 bytes of a.json";

// Four complete pairs, one failed, one interrupted, one still "running", one missing.
void MakeMixedBatch(BatchDir* b) {
  b->Complete("llama-a", 6, 1);
  b->Complete("llama-b", 8, 2);
  b->Complete("mixtral", 10, 3);
  b->Complete("qwen", 12, 4);
  b->Status("bad-trace", "failed", 1, kFailedError);
  b->Status("slow", "interrupted", 143, kInterruptedError);
  b->Status("killed", "running", nullptr, nullptr);
  b->Manifest({"never-ran"});
}

TEST(Merge, CountsEveryStateAndListsTheProblems) {
  BatchDir b;
  MakeMixedBatch(&b);
  RunResult r = b.Merge();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "tracefuse: merge: 4 of 8 pairs are not complete (1 failed, 1 interrupted, 1 never "
            "finished, 1 missing)\n");
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "MERGE SUMMARY: " + b.out());
  EXPECT_EQ(lines[1],
            "  8 pairs: 4 complete, 1 failed, 1 interrupted, 1 never finished, 1 missing");
  EXPECT_NE(r.out.find("  bad-trace  failed (exit 1): " + std::string(kFailedError) + "\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  slow       interrupted (exit 143): " + std::string(kInterruptedError)),
            std::string::npos);
  EXPECT_NE(r.out.find("  killed     never finished: status still running since "
                       "2025-06-01T12:00:00Z on node07 (killed?)\n"),
            std::string::npos);
  EXPECT_NE(r.out.find("  never-ran  missing: no status file (manifest line 9)\n"),
            std::string::npos);
  EXPECT_NE(r.out.find("\n  AMD: AMD Instinct MI300X (4 pairs)\n  NVIDIA: NVIDIA H100 80GB HBM3 "
                       "(4 pairs)\n"),
            std::string::npos);

  json j = b.MergeJson(1);
  EXPECT_EQ(j["counts"], Counts(8, 4, 1, 1, 1, 1));
  ASSERT_EQ(j["problems"].size(), 4u);
  EXPECT_EQ(j["problems"][0], json({{"label", "bad-trace"},
                                    {"state", "failed"},
                                    {"exit_code", 1},
                                    {"error", kFailedError}}));
  std::vector<std::string> order;
  for (const json& p : j["pairs"]) order.push_back(p["label"]);
  EXPECT_EQ(order, (std::vector<std::string>{"llama-a", "llama-b", "mixtral", "qwen", "bad-trace",
                                             "slow", "killed", "never-ran"}));
}

TEST(Merge, AllCompleteExitsZero) {
  BatchDir b;
  b.Complete("one", 6, 1);
  b.Complete("two", 7, 2);
  b.Manifest();
  for (const char* format : {"text", "markdown", "csv", "json"}) {
    RunResult r = b.Merge(StrCat("--format ", format));
    EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err;
    EXPECT_EQ(r.err, "") << format;
  }
  EXPECT_NE(b.Merge().out.find("  None: every pair is complete."), std::string::npos);
  // The same directory with a manifest row more: that pair is missing.
  b.Manifest({"three"});
  EXPECT_EQ(b.Merge().exit_code, 1);
}

TEST(Merge, AManifestThatCannotBeReadIsSaidAndMergingGoesOn) {
  BatchDir b;
  b.Complete("one", 6, 1);  // its status names manifest.tsv, which is never written
  RunResult r = b.Merge();
  EXPECT_EQ(r.exit_code, 1);
  const std::string why = b.path("manifest.tsv") + ": cannot open manifest";
  EXPECT_NE(r.out.find("  manifest: " + why + "\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "tracefuse: merge: the manifest was not read (" + why +
                       "): pairs without a status file are not known\n");
  EXPECT_NE(r.out.find("  1 pair: 1 complete, 0 failed, 0 interrupted, 0 never finished, ? "
                       "missing\n"),
            std::string::npos);
  // --manifest names another one.
  std::ofstream(b.path("other.tsv")) << "label\ttrace1\ttrace2\none\ta\tb\n";
  r = b.Merge("--manifest " + b.path("other.tsv"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  manifest: " + b.path("other.tsv") + " (1 row)\n"), std::string::npos);
}

// The 52-pair directory: five reports copied under 43 labels, and nine problems.
void MakeFiftyPairs(BatchDir* b) {
  for (int i = 0; i < 5; ++i) b->Complete(StrCat("base-", i), 5 + i, i + 1);
  for (int i = 5; i < 43; ++i) {
    // Long labels, to be cut in tables.
    const std::string label = StrCat("model-with-a-rather-long-name-", i);
    std::filesystem::copy_file(StrCat(b->out(), "/base-", i % 5, ".json"),
                               StrCat(b->out(), "/", label, ".json"));
    b->Status(label, "complete", 0, nullptr);
  }
  const std::string long_error = "tracefuse: error: " + std::string(150, 'x') + ".json: bad";
  for (int i = 43; i < 48; ++i) b->Status(StrCat("failed-", i), "failed", 1, long_error);
  b->Status("interrupted-48", "interrupted", 143, kInterruptedError);
  b->Status("running-49", "running", nullptr, nullptr);
  b->Manifest({"missing-50", "missing-51"});
}

TEST(Merge, FiftyPairsFitOneScreen) {
  BatchDir b;
  MakeFiftyPairs(&b);
  for (const char* format : {"text", "markdown"}) {
    RunResult r = b.Merge(StrCat("--format ", format));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const std::vector<std::string> lines = Lines(r.out);
    EXPECT_LE(lines.size(), 60u) << r.out;
    for (const std::string& line : lines) EXPECT_LE(line.size(), 100u) << format << ": " << line;
    EXPECT_NE(r.out.find("... 35 more pairs: see --format csv/json"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("... and 2 more: see --format csv/json"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("52 pairs: 43 complete, 5 failed, 1 interrupted, 1 never finished, 2 "
                         "missing"),
              std::string::npos);
  }
  RunResult csv = b.Merge("--format csv --top 2");
  std::vector<std::string> rows = Lines(csv.out);
  ASSERT_EQ(rows.size(), 53u);  // the header and one row per pair
  EXPECT_NE(rows[0].find(",top2_ratio"), std::string::npos);
  EXPECT_EQ(rows[0].find(",top3_"), std::string::npos);
  const size_t columns = std::count(rows[0].begin(), rows[0].end(), ',');
  for (const std::string& row : rows) EXPECT_EQ(std::count(row.begin(), row.end(), ','), columns);
  json j = b.MergeJson(1);
  EXPECT_EQ(j["pairs"].size(), 52u);
  EXPECT_EQ(j["problems"].size(), 9u);
}

// Sums, medians, minima and maxima per category and side, computed here from the reports.
TEST(Merge, CategoryTimesAcrossPairs) {
  BatchDir b;
  const std::vector<std::string> labels = {"p1", "p2", "p3", "p4", "p5"};
  for (size_t i = 0; i < labels.size(); ++i) {
    b.Complete(labels[i], 4 + 3 * static_cast<int>(i), static_cast<int>(i) + 1);
  }
  b.Manifest();
  std::map<std::string, std::array<std::vector<double>, 2>> times;  // category -> side -> pairs
  for (size_t i = 0; i < labels.size(); ++i) {
    json report = json::parse(testing::ReadFile(b.out() + "/" + labels[i] + ".json"));
    for (size_t side = 0; side < 2; ++side) {
      for (auto& [category, us] :
           report["tracefuse"]["traces"][side]["kernel_time_us_by_category"].items()) {
        auto& per_pair = times[category][side];
        per_pair.resize(labels.size(), 0.0);
        per_pair[i] = us.get<double>();
      }
    }
  }
  json j = b.MergeJson(0);
  ASSERT_EQ(j["categories"].size(), times.size());
  for (const json& c : j["categories"]) {
    SCOPED_TRACE(c["category"].get<std::string>());
    for (size_t side = 0; side < 2; ++side) {
      std::vector<double> v = times.at(c["category"])[side];
      v.resize(labels.size(), 0.0);
      const json& s = c["sides"][side];
      double sum = 0;
      for (double x : v) sum += x;
      EXPECT_DOUBLE_EQ(s["sum_us"].get<double>(), sum);
      auto min = std::min_element(v.begin(), v.end());  // the first of equal values
      auto max = std::max_element(v.begin(), v.end());
      EXPECT_DOUBLE_EQ(s["min_us"].get<double>(), *min);
      EXPECT_EQ(s["min_pair"], labels[min - v.begin()]);
      EXPECT_DOUBLE_EQ(s["max_us"].get<double>(), *max);
      EXPECT_EQ(s["max_pair"], labels[max - v.begin()]);
      std::vector<double> sorted = v;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_DOUBLE_EQ(s["median_us"].get<double>(), sorted[2]);
      EXPECT_EQ(s["pairs_with_kernels"],
                std::count_if(v.begin(), v.end(), [](double x) { return x > 0; }));
    }
  }
  // Every pair has the same opportunities: each recurs in all five.
  ASSERT_FALSE(j["recurring_opportunities"].empty());
  for (const json& r : j["recurring_opportunities"]) {
    EXPECT_EQ(r["pairs"], 5);
    EXPECT_EQ(r["pair_labels"], json(labels));
  }
}

// A pair compared the other way round counts on its platforms' sides.
TEST(Merge, SidesAreThePlatformsWhicheverWayRoundAPairIs) {
  BatchDir b;
  b.Complete("forward", 6, 1);
  b.Complete("reversed", 6, 1, /*reversed=*/true);
  b.Manifest();
  json j = b.MergeJson(0);
  EXPECT_EQ(j["sides"], json({"AMD", "NVIDIA"}));
  EXPECT_EQ(j["pairs"][1]["traces"][0]["platform"], "NVIDIA");
  for (const json& c : j["categories"]) {
    // The same traces on both pairs: each side's minimum is its maximum.
    for (const json& s : c["sides"]) EXPECT_EQ(s["min_us"], s["max_us"]) << c;
  }
  ASSERT_FALSE(j["recurring_opportunities"].empty());
  for (const json& r : j["recurring_opportunities"]) {
    EXPECT_EQ(r["fused_by"], "NVIDIA") << r;
    EXPECT_EQ(r["pair_labels"], json({"forward", "reversed"}));
  }
  EXPECT_EQ(j["pairs"][1]["top_opportunities"][0]["fused_by"], "trace1");
  EXPECT_EQ(j["pairs"][1]["top_opportunities"][0]["fused_by_label"], "NVIDIA");
  // An AMD-vs-AMD pair among them: the sides are positions.
  b.Complete("same", 6, 2);
  const std::string amd = b.Trace("amd", 6, 2);
  ASSERT_EQ(RunCommand(StrCat(Bin(), " compare ", amd, " ", amd, " --format json -o ", b.out(),
                              "/same.json"))
                .exit_code,
            0);
  EXPECT_EQ(b.MergeJson(0)["sides"], json({"trace1", "trace2"}));  // (not in the manifest)
}

// End to end: the directory `tracefuse batch --all` writes.
TEST(Merge, WhatBatchWrites) {
  BatchDir b;
  const std::string amd = b.Trace("amd", 6, 1), nvidia = b.Trace("nvidia", 6, 2);
  std::ofstream(b.path("bad.json")) << R"({"traceEvents": [)";
  std::ofstream(b.path("manifest.tsv"))
      << "label\ttrace1\ttrace2\n"
      << "forward\t" << amd << "\t" << nvidia << "\nreversed\t" << nvidia << "\t" << amd
      << "\nbad\tbad.json\t" << nvidia << "\n";
  RunResult batch = RunCommand(
      StrCat(Bin(), " batch ", b.path("manifest.tsv"), " --out ", b.out(), " --all --threads 2"));
  ASSERT_EQ(batch.exit_code, 1) << batch.err;
  json j = b.MergeJson(1);
  EXPECT_EQ(j["counts"], Counts(3, 2, 1, 0, 0, 0));
  EXPECT_EQ(j["sides"], json({"AMD", "NVIDIA"}));
  EXPECT_EQ(j["manifest"]["rows"], 3);
  EXPECT_EQ(
      j["problems"][0]["error"],
      b.path("bad.json") + ": truncated JSON: the input ends at byte 17 inside the events array");
  EXPECT_EQ(j["pairs"][0]["traces"][0]["path"], amd);
  EXPECT_EQ(j["pairs"][0]["matched_groups"], 6);
}

TEST(Merge, MalformedFilesAreOneLineEachAndCountAsFailed) {
  BatchDir b;
  b.Complete("good", 6, 1);
  b.Complete("truncated-report", 6, 2);
  b.Complete("not-a-report", 6, 3);
  b.Status("bad-state", "finished", 0, nullptr);
  b.Manifest({"garbage"});
  std::ofstream(b.out() + "/garbage.status.json") << "{\"label\": \"garbage\", \"state\": ";
  const std::string report = testing::ReadFile(b.out() + "/truncated-report.json");
  std::ofstream(b.out() + "/truncated-report.json") << report.substr(0, report.size() / 2);
  std::ofstream(b.out() + "/not-a-report.json") << R"({"metadata": {"matched_groups": 3}})";
  RunResult r = b.Merge();
  EXPECT_EQ(r.exit_code, 1);
  const std::vector<std::string> err = Lines(r.err);
  ASSERT_EQ(err.size(), 5u) << r.err;  // one per bad file, then the summary line
  const std::string out = b.out() + "/";
  EXPECT_EQ(err[0], "tracefuse: warning: " + out +
                        "bad-state.status.json: \"state\" is 'finished', not running, complete, "
                        "failed or interrupted (pair counted as failed)");
  EXPECT_EQ(err[1].rfind("tracefuse: warning: " + out + "garbage.status.json: malformed JSON", 0),
            0u)
      << err[1];
  EXPECT_EQ(err[2], "tracefuse: warning: " + out +
                        "not-a-report.json: no \"tracefuse\".\"traces\" with both traces (not a "
                        "tracefuse compare report?) (pair counted as failed)");
  EXPECT_EQ(err[3].rfind("tracefuse: warning: " + out + "truncated-report.json: malformed JSON", 0),
            0u)
      << err[3];
  EXPECT_EQ(err[4],
            "tracefuse: merge: 4 of 5 pairs are not complete (4 failed, 0 interrupted, 0 never "
            "finished, 0 missing)");
  json j = b.MergeJson(1);
  EXPECT_EQ(j["counts"], Counts(5, 1, 4, 0, 0, 0));
  for (const json& p : j["problems"]) {
    EXPECT_EQ(p["state"], "failed");
    EXPECT_NE(p["error"].get<std::string>().find(out + p["label"].get<std::string>()),
              std::string::npos)
        << p;
  }
}

TEST(Merge, UsageAndIoErrors) {
  RunResult r = RunCommand(Bin() + " merge /nonexistent/dir");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "tracefuse: error: /nonexistent/dir: No such file or directory\n");
  EXPECT_EQ(r.out, "");
  testing::TempDir dir;
  r = RunCommand(Bin() + " merge " + dir.File("f", "x"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "tracefuse: error: " + dir.path() + "/f: not a directory\n");
  EXPECT_EQ(RunCommand(Bin() + " merge " + dir.path() + " --format yaml").exit_code, 2);
  EXPECT_EQ(RunCommand(Bin() + " merge " + dir.path() + " --top 0").exit_code, 2);
  EXPECT_EQ(RunCommand(Bin() + " merge").exit_code, 2);
  // An empty directory: nothing to say is complete.
  r = RunCommand(Bin() + " merge " + dir.path() + " -o " + dir.path() + "/summary.txt");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(testing::ReadFile(dir.path() + "/summary.txt").find("0 pairs: 0 complete"),
            std::string::npos);
}

// Every key the schema in tracefuse/report/merge.h documents, with its type.
TEST(Merge, JsonHasEveryDocumentedKey) {
  BatchDir b;
  MakeMixedBatch(&b);
  json j = b.MergeJson(1);
  auto keys = [](const json& object) {
    std::vector<std::string> k;
    for (auto& [key, value] : object.items()) k.push_back(key);
    return k;
  };
  using Keys = std::vector<std::string>;
  EXPECT_EQ(keys(j),
            (Keys{"tracefuse_version", "dir", "manifest", "sides", "counts", "pairs", "categories",
                  "recurring_opportunities", "problems", "straggler_threshold", "ranks",
                  "stragglers", "pairs_with_ops", "fusion_differences", "ops"}));
  EXPECT_EQ(j["pairs_with_ops"], 0);  // no pair was compared --by-op (merge_by_op_test.sh)
  EXPECT_EQ(j["fusion_differences"], json::array());
  EXPECT_EQ(j["ops"], json::array());
  EXPECT_TRUE(j["tracefuse_version"].is_string());
  EXPECT_EQ(j["dir"], b.out());
  EXPECT_EQ(j["manifest"],
            json({{"path", b.path("manifest.tsv")}, {"rows", 8}, {"error", nullptr}}));
  EXPECT_EQ(j["sides"], json({"AMD", "NVIDIA"}));
  EXPECT_EQ(keys(j["counts"]),
            (Keys{"pairs", "complete", "failed", "interrupted", "running", "missing"}));
  const Keys pair_keys = {"label",
                          "state",
                          "exit_code",
                          "error",
                          "task",
                          "status_file",
                          "report_file",
                          "elapsed_seconds",
                          "peak_rss_bytes",
                          "host",
                          "started_at",
                          "rule_set",
                          "matched_groups",
                          "kernel_time_ratio",
                          "traces",
                          "top_opportunities",
                          "ops"};
  const Keys trace_keys = {"path", "label", "platform", "gpu", "kernels", "kernel_time_us"};
  for (const json& p : j["pairs"]) {
    SCOPED_TRACE(p["label"].get<std::string>());
    EXPECT_EQ(keys(p), pair_keys);
    const bool complete = p["state"] == "complete";
    EXPECT_TRUE(p["label"].is_string() && p["state"].is_string());
    EXPECT_TRUE(p["exit_code"].is_number_integer() || p["exit_code"].is_null());
    EXPECT_TRUE(p["error"].is_string() || p["error"].is_null());
    EXPECT_TRUE(p["task"].is_number_integer() || p["state"] == "missing");
    for (const char* k : {"status_file", "host", "started_at"}) {
      EXPECT_TRUE(p[k].is_string() || p["state"] == "missing") << k;
    }
    EXPECT_EQ(p["report_file"].is_string(), complete);
    EXPECT_TRUE(p["elapsed_seconds"].is_number() || p["state"] == "missing");
    EXPECT_TRUE(p["peak_rss_bytes"].is_number_integer() || p["state"] == "missing");
    EXPECT_EQ(p["rule_set"].is_string(), complete);
    EXPECT_EQ(p["matched_groups"].is_number_integer(), complete);
    EXPECT_EQ(p["kernel_time_ratio"].is_number(), complete);
    EXPECT_TRUE(p["ops"].is_null());
    ASSERT_EQ(p["traces"].size(), 2u);
    for (const json& t : p["traces"]) {
      EXPECT_EQ(keys(t), trace_keys);
      EXPECT_TRUE(t["path"].is_string());
      for (const char* k : {"label", "platform", "gpu"}) EXPECT_EQ(t[k].is_string(), complete);
      EXPECT_EQ(t["kernels"].is_number_unsigned(), complete);
      EXPECT_EQ(t["kernel_time_us"].is_number(), complete);
    }
    EXPECT_EQ(p["top_opportunities"].empty(), !complete);
    EXPECT_LE(p["top_opportunities"].size(), 3u);  // --top's default
    for (const json& o : p["top_opportunities"]) {
      EXPECT_EQ(keys(o), (Keys{"kernel_type", "fused_by", "fused_by_label", "ratio"}));
      EXPECT_TRUE(o["kernel_type"].is_string());
      EXPECT_TRUE(o["fused_by"] == "trace1" || o["fused_by"] == "trace2");
      EXPECT_TRUE(o["fused_by_label"].is_string());
      EXPECT_TRUE(o["ratio"].is_number() || o["ratio"].is_null());
    }
  }
  ASSERT_FALSE(j["categories"].empty());
  for (const json& c : j["categories"]) {
    EXPECT_EQ(keys(c), (Keys{"category", "sides"}));
    ASSERT_EQ(c["sides"].size(), 2u);
    for (const json& s : c["sides"]) {
      EXPECT_EQ(keys(s), (Keys{"sum_us", "median_us", "min_us", "min_pair", "max_us", "max_pair",
                               "pairs_with_kernels"}));
      for (const char* k : {"sum_us", "median_us", "min_us", "max_us"}) {
        EXPECT_TRUE(s[k].is_number());
      }
      EXPECT_TRUE(s["min_pair"].is_string() && s["max_pair"].is_string());
      EXPECT_TRUE(s["pairs_with_kernels"].is_number_unsigned());
    }
  }
  ASSERT_FALSE(j["recurring_opportunities"].empty());
  for (const json& r : j["recurring_opportunities"]) {
    EXPECT_EQ(keys(r), (Keys{"kernel_type", "fused_by", "pairs", "pair_labels", "median_ratio"}));
    EXPECT_TRUE(r["kernel_type"].is_string());
    EXPECT_TRUE(r["fused_by"] == j["sides"][0] || r["fused_by"] == j["sides"][1]);
    EXPECT_EQ(r["pairs"], r["pair_labels"].size());
    EXPECT_TRUE(r["median_ratio"].is_number() || r["median_ratio"].is_null());
  }
  for (const json& p : j["problems"]) {
    EXPECT_EQ(keys(p), (Keys{"label", "state", "exit_code", "error"}));
  }
  EXPECT_EQ(j["straggler_threshold"], 0.1);
  ASSERT_EQ(j["ranks"].size(), 2u);  // no status file here records a timeline
  for (const json& side : j["ranks"]) {
    EXPECT_EQ(side, json({{"collective_kind", nullptr}, {"pairs", json::array()}}));
  }
  EXPECT_EQ(j["stragglers"], json::array());
}

// A side's timeline as batch records it: two devices, each with its figures, and the device's
// all-reduces.
json SideTimeline(double computation_us, const std::vector<double>& all_reduces_us,
                  std::optional<double> step_us = std::nullopt,
                  std::optional<json> idle = std::nullopt) {
  json devices = json::array(), device = json::array(), name = json::array();
  for (int d = 0; d < 2; ++d) {
    devices.push_back({{"device", d},
                       {"activities", 10},
                       {"span_us", 100.5},
                       {"busy_us", 90.25},
                       {"computation_us", computation_us / 2},
                       {"communication_us", 3.0},
                       {"exposed_communication_us", 1.5},
                       {"memcpy_us", 0.0},
                       {"exposed_memcpy_us", 0.0},
                       {"idle_us", 10.25}});
  }
  for (size_t i = 0; i < all_reduces_us.size(); ++i) device.push_back(0), name.push_back(0);
  json timeline = {
      {"path", "streamed"},
      {"collected_reason", nullptr},
      {"events_skipped", 0},
      {"communication_category", "Communication"},
      {"steps",
       {{"count", step_us ? 5 : 0},
        {"skipped", 0},
        {"with_activities", step_us ? 5 : 0},
        {"median_span_us", step_us ? json(*step_us) : json(nullptr)},
        {"min_span_us", step_us ? json(*step_us - 1) : json(nullptr)},
        {"max_span_us", step_us ? json(*step_us + 1) : json(nullptr)}}},
      {"devices", devices},
      {"collectives",
       {{"names", {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"}},
        {"device", device},
        {"name", name},
        {"duration_us", all_reduces_us}}}};
  if (idle) timeline["idle"] = *idle;  // an older tracefuse wrote none
  return timeline;
}

// Four complete pairs, their timelines in the status files (rank2's AMD side computes 1.3x as
// long and waits least), one pair with its platforms the other way round: the straggler is
// named on its side whichever way its pair is, with the others' wait, in every format.
TEST(Merge, RanksAndTheStragglerFromTheStatusFilesTimelines) {
  BatchDir b;
  for (int r = 0; r < 4; ++r) {
    const std::string label = StrCat("rank", r);
    b.Complete(label, 5, 1, /*reversed=*/r == 3);
    json amd = SideTimeline(
        r == 2 ? 1300 : 1000 + r,
        r == 2 ? std::vector<double>{10, 20, 10} : std::vector<double>{40, 35.25, 50}, 150.5 + r,
        json{{"cpu_wait_us", 18.0 - r / 8.0},  // the three sum to idle_us, 2 * 10.25
             {"launch_latency_us", 2.0},
             {"unattributed_us", 0.5 + r / 8.0},
             {"gaps", 7}});
    json nvidia = SideTimeline(800, {5, 5, 5});
    json timeline = r == 3 ? json{{"trace1", nvidia}, {"trace2", amd}}
                           : json{{"trace1", amd}, {"trace2", nvidia}};
    const std::string a = StrCat(b.out(), "/", label, ".status.json");
    json status = json::parse(std::ifstream(a));
    status["gpu_timeline"] = timeline;
    std::ofstream(a) << status.dump(2);
  }
  b.Manifest();
  json j = b.MergeJson(0);
  ASSERT_EQ(j["sides"], json({"AMD", "NVIDIA"}));
  const json& amd = j["ranks"][0];
  EXPECT_EQ(amd["collective_kind"], "all-reduce");
  ASSERT_EQ(amd["pairs"].size(), 4u);
  EXPECT_EQ(
      amd["pairs"][1],
      json({{"pair", "rank1"},
            {"span_us", 201.0},
            {"busy_us", 180.5},
            {"computation_us", 1001.0},
            {"exposed_communication_us", 3.0},
            {"idle_us", 20.5},
            {"step_us", 151.5},
            {"idle",
             {{"cpu_wait_us", 17.875}, {"launch_latency_us", 2.0}, {"unattributed_us", 0.625}}},
            {"wait_us", 30 + 15.25 + 40},
            {"collectives", 3}}));
  EXPECT_EQ(amd["pairs"][2]["wait_us"], 0);                  // its all-reduces are the shortest
  EXPECT_EQ(j["ranks"][1]["pairs"][0]["step_us"], nullptr);  // NVIDIA's traces have no steps
  EXPECT_EQ(j["ranks"][1]["pairs"][0]["idle"], nullptr);     // nor an idle split
  EXPECT_EQ(j["ranks"][1]["pairs"].size(), 4u);
  EXPECT_EQ(j["stragglers"], json::array({{{"side", "trace1"},
                                           {"pair", "rank2"},
                                           {"computation_us", 1300.0},
                                           {"median_computation_us", 1002.0},
                                           {"others_wait_us", 3 * 85.25},
                                           {"other_ranks", 3},
                                           {"collectives", 3}}}));
  const std::string line =
      "rank2 (AMD side) computes 1.30x the median rank; the other 3 ranks waited 0.256 ms for it "
      "in 3 all-reduces; its GPU idles 0.021 ms (cpu wait 0.018, launch latency 0.002, "
      "unattributed 0.001)";
  RunResult text = b.Merge();
  EXPECT_NE(text.out.find("  " + line.substr(0, line.rfind(' ', 98)) + "\n    "), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("unattributed 0.001)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  NVIDIA side: no straggler among 4 ranks (GPU computation 0.800 ms "
                          "median, 0.800 ms at most)\n"),
            std::string::npos)
      << text.out;
  RunResult html = b.Merge("--format html");
  EXPECT_NE(html.out.find(line), std::string::npos);
  EXPECT_NE(html.out.find(">rank2 (straggler)</text>"), std::string::npos) << html.out;
  // A threshold above the slow rank's 1.30x: no straggler. One that is no number >= 0: usage.
  EXPECT_EQ(b.MergeJson(0, "--straggler-threshold 0.4")["stragglers"], json::array());
  const RunResult no_straggler = b.Merge("--straggler-threshold 0.4");
  EXPECT_NE(no_straggler.out.find(
                "  AMD side: no straggler among 4 ranks (GPU computation 1.002 ms median, "
                "1.300 ms at most; step time\n    0.152 ms median)\n"),
            std::string::npos)
      << no_straggler.out;
  for (const char* bad : {"nan", "inf", "-0.1", "0.1x"}) {
    RunResult r = b.Merge(StrCat("--straggler-threshold ", bad));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, StrCat("tracefuse: error: --straggler-threshold: not a finite number >= 0: ",
                            bad, " (run 'tracefuse merge --help')\n"));
  }
}

// A status file whose timeline is valid JSON but not a timeline counts its pair as failed, in
// one line naming the file and what is wrong.
TEST(Merge, MalformedTimelinesFailTheirPair) {
  struct Case {
    std::string label;
    std::function<void(json*)> damage;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {"index",
       [](json* t) {
         (*t)["collectives"]["name"] = {0, 7};
       },
       R"("collectives": name index 7 of 1 names)"},
      {"lengths", [](json* t) { (*t)["collectives"]["duration_us"] = {1.5}; },
       R"("collectives": "name" has 2 entries and "duration_us" 1)"},
      {"twice",
       [](json* t) {
         (*t)["collectives"]["names"] = {"ncclDevKernel_AllReduce", "ncclDevKernel_AllReduce"};
       },
       R"("collectives": "names" lists 'ncclDevKernel_AllReduce' twice)"},
      {"negative",
       [](json* t) {
         (*t)["collectives"]["duration_us"] = {1, -2.5};
       },
       R"("duration_us" is -2.5, not a time)"},
      {"figure", [](json* t) { (*t)["devices"][1]["idle_us"] = -1; },
       R"("idle_us" is -1, not a time)"},
      {"step", [](json* t) { (*t)["steps"]["median_span_us"] = -3; },
       R"("median_span_us" is -3, not a time)"},
      {"sum",
       [](json* t) {
         for (json& d : (*t)["devices"]) d["span_us"] = 1.5e308;
       },
       "its devices' times add up beyond a double"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    BatchDir b;
    json timeline = SideTimeline(1000, {1, 2});
    c.damage(&timeline);
    b.Status(c.label, "complete", 0, nullptr, "t1.json", "t2.json",
             {{"trace1", nullptr}, {"trace2", timeline}});
    b.Manifest();
    RunResult r = b.Merge("--format json");
    EXPECT_EQ(r.exit_code, 1);
    // The second line says that the manifest, which the status file names, was not read.
    EXPECT_EQ(Lines(r.err).front(), StrCat("tracefuse: warning: ", b.out(), "/", c.label,
                                           R"(.status.json: "gpu_timeline": "trace2": )", c.problem,
                                           " (pair counted as failed)"));
  }
}

// A report whose fusion_mappings hold 80 MB is read without holding them: the merge's peak
// memory stays far below the report's size.
TEST(Merge, LargeReportsAreReadWithoutTheirMappings) {
  BatchDir b;
  const std::string mapping =
      R"({"fused_platform": "Trace 2", "fused_kernel_type": "GEMM", "unfused_sequence": )"
      R"(["GEMM", "Reduce"], "evidence": "a \"quoted\" [bracket} in {a string", "count": 3})";
  {
    // Written piece by piece: this process stays small, and so does the child's memory it
    // starts with (ru_maxrss counts a child from its fork).
    std::ofstream report(b.out() + "/big.json");
    report << R"({"metadata": {"matched_groups": 7}, "global_counts": {},)"
              R"( "fusion_opportunities": [{"kernel_type": "Reduce", "ratio": null,)"
              R"( "fused_by": "Trace 2"}], "fusion_mappings": [)";
    for (size_t written = 0; written < (80u << 20); written += mapping.size() + 2) {
      report << mapping << ",\n";
    }
    report << mapping
           << R"(], "tracefuse": {"rule_set": "tracefuse", "traces": [)"
              R"({"label": "AMD", "platform": "AMD", "gpu": "MI300X", "kernels": 10,)"
              R"( "kernel_time_us": 2.5, "kernel_time_us_by_category": {"GEMM": 2.5}},)"
              R"({"label": "NVIDIA", "platform": "NVIDIA", "gpu": "H100", "kernels": 9,)"
              R"( "kernel_time_us": 2.0, "kernel_time_us_by_category": {"GEMM": 2.0}}]}})";
  }
  b.Status("big", "complete", 0, nullptr);
  b.Manifest();
  // What the binary takes doing nothing (about 8 MB; under AddressSanitizer, 38 MB of shadow
  // and runtime), so that the bound is on what the merge itself holds.
  ASSERT_EQ(RunCommand(std::string(TRACEFUSE_BINARY) + " --version").exit_code, 0);
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);  // the largest child so far
  const long idle_kib = usage.ru_maxrss;
  RunResult r = b.Merge("--format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  getrusage(RUSAGE_CHILDREN, &usage);  // now the merge's
  EXPECT_LT(usage.ru_maxrss - idle_kib, 32 * 1024) << "KiB above an idle tracefuse's " << idle_kib;
  json j = json::parse(r.out);
  const json& pair = j["pairs"][0];
  EXPECT_EQ(pair["matched_groups"], 7);
  EXPECT_EQ(pair["traces"][1]["gpu"], "H100");
  EXPECT_EQ(pair["top_opportunities"][0]["fused_by_label"], "NVIDIA");
  EXPECT_EQ(j["categories"][0]["sides"][0]["sum_us"], 2.5);
}

TEST(Merge, ReadJsonWithoutKeyDropsOnlyTheTopLevelValue) {
  testing::TempDir dir;
  const std::string path = dir.File(
      "r.json",
      R"({"a": {"fusion_mappings": [1]}, "s": "\"fusion_mappings\": [", )"
      R"("fusion_mappings": [{"x": "]}\\", "y": [[{}]]}], "fusion_mappings2": 3, "z": "fusion_mappings"})");
  absl::StatusOr<std::string> text = ReadJsonWithoutKey(path, "fusion_mappings");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, R"({"a": {"fusion_mappings": [1]}, "s": "\"fusion_mappings\": [", )"
                   R"("fusion_mappings":null, "fusion_mappings2": 3, "z": "fusion_mappings"})");
  // The last key.
  const std::string last = dir.File("l.json", R"({"k": 1, "fusion_mappings": {"a": [1, 2]}})");
  EXPECT_EQ(*ReadJsonWithoutKey(last, "fusion_mappings"), R"({"k": 1, "fusion_mappings":null})");
  EXPECT_EQ(*ReadJsonWithoutKey(last, ""), R"({"k": 1, "fusion_mappings": {"a": [1, 2]}})");
}

}  // namespace
}  // namespace tracefuse
