// Classification by launching op: kernels whose names no rule matches take the category of the op
// (or nn.Module) that launched them, from the table in data/launching-ops.yaml; traces without
// such names, or without a CPU side, are read and reported as before.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_util.h"
#include "tracefuse/pipeline/flow_graph.h"

namespace tracefuse {
namespace {

using State = ByOpClassification::State;

// TraceWriter writes a Kineto trace: cpu_ops, module frames, launches and their kernels.
class TraceWriter {
 public:
  void Op(const std::string& name, int64_t ts_us, int64_t dur_us) {
    events_.push_back({{"ph", "X"},
                       {"cat", "cpu_op"},
                       {"name", name},
                       {"pid", 1},
                       {"tid", 1},
                       {"ts", ts_us},
                       {"dur", dur_us}});
  }
  void Module(const std::string& name, int64_t ts_us, int64_t dur_us) {
    events_.push_back({{"ph", "X"},
                       {"cat", "python_function"},
                       {"name", "nn.Module: " + name},
                       {"pid", 1},
                       {"tid", 1},
                       {"ts", ts_us},
                       {"dur", dur_us}});
  }
  // Launch() is a cudaLaunchKernel at `ts_us` and the kernel it launches, `dur_us` long.
  void Launch(const std::string& kernel, int64_t ts_us, int64_t dur_us) {
    const int64_t correlation = next_correlation_++;
    events_.push_back({{"ph", "X"},
                       {"cat", "cuda_runtime"},
                       {"name", "cudaLaunchKernel"},
                       {"pid", 1},
                       {"tid", 1},
                       {"ts", ts_us},
                       {"dur", 1},
                       {"args", {{"correlation", correlation}}}});
    kernels_.push_back({{"ph", "X"},
                        {"cat", "kernel"},
                        {"name", kernel},
                        {"pid", 0},
                        {"tid", 7},
                        {"ts", 1000 + kernel_ts_},
                        {"dur", dur_us},
                        {"args", {{"correlation", correlation}, {"device", 0}, {"stream", 7}}}});
    kernel_ts_ += dur_us + 1;
  }
  // Write() writes the trace, CPU side first, as Kineto does; without it when `cpu_side` is
  // false.
  std::string Write(const testing::TempDir& dir, const std::string& name,
                    bool cpu_side = true) const {
    nlohmann::json trace;
    trace["deviceProperties"] = {{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}}};
    trace["traceEvents"] = nlohmann::json::array();
    if (cpu_side) {
      for (const auto& e : events_) trace["traceEvents"].push_back(e);
    }
    for (const auto& e : kernels_) trace["traceEvents"].push_back(e);
    const std::string path = dir.path() + "/" + name;
    std::ofstream(path) << trace.dump();
    return path;
  }

 private:
  std::vector<nlohmann::json> events_, kernels_;
  int64_t next_correlation_ = 1;
  int64_t kernel_ts_ = 0;
};

// The pair of the tests below: names that say nothing (TileLang's default main_kernel; the old
// Triton names by position, triton__0d1d2d..., now take a rule's category), launched under ops
// the table lists (aten::mm, aten::native_layer_norm), under a LayerNorm module and no listed op,
// under an op it does not list; a name the rules know, under an op the table lists; and "kernel",
// launched under two ops, most of its time under aten::_softmax.
TraceWriter EagerTrace() {
  TraceWriter t;
  t.Op("aten::linear", 0, 100);
  t.Op("aten::mm", 10, 80);
  t.Launch("main_kernel", 20, 50);
  t.Op("aten::native_layer_norm", 200, 50);
  t.Launch("kernel", 210, 5);
  t.Module("LayerNorm_0", 300, 50);
  t.Op("myext::fused_thing", 310, 30);
  t.Launch("Kernel2", 320, 7);
  t.Op("myext::opaque", 400, 30);
  t.Launch("fn_a1b2c3d4e5", 410, 9);
  t.Op("aten::_softmax", 500, 50);
  t.Launch("ampere_sgemm_128x64_nn", 510, 11);
  t.Launch("kernel", 520, 20);
  return t;
}

std::shared_ptr<const Classifier> Tracefuse() { return *LoadClassifier("tracefuse"); }

std::map<std::string, std::string> CategoryByName(const TraceProfile& p) {
  std::map<std::string, std::string> out;
  for (uint32_t n = 0; n < p.names.size(); ++n) {
    out[p.names[n]] = p.category_name(p.category_of_name(n));
  }
  return out;
}

std::map<std::string, std::string> LaunchingOpByName(const TraceProfile& p) {
  std::map<std::string, std::string> out;
  for (const auto& [n, found] : p.by_op.names) out[p.names[n]] = found.op;
  return out;
}

const std::map<std::string, std::string> kExpectedCategories = {{"main_kernel", "GEMM"},
                                                                {"kernel", "Softmax"},
                                                                {"Kernel2", "LayerNorm"},
                                                                {"fn_a1b2c3d4e5", "Other"},
                                                                {"ampere_sgemm_128x64_nn", "GEMM"}};
const std::map<std::string, std::string> kExpectedOps = {
    {"main_kernel", "aten::mm"}, {"kernel", "aten::_softmax"}, {"Kernel2", "nn.Module: LayerNorm"}};

// Read without its CPU side, a trace with names left in Other is read again with it; read with
// it (breakdown --by-op, compare --by-op), TakeOpTree() classifies. Both give the same.
TEST(ByOp, UninformativeNamesTakeTheCategoryOfTheirLaunchingOp) {
  testing::TempDir dir;
  const std::string path = EagerTrace().Write(dir, "eager.json");
  for (bool host_activity : {false, true}) {
    for (bool stream_cpu_side : {false, true}) {
      SCOPED_TRACE(StrCat("host_activity ", host_activity, ", streamed ", stream_cpu_side));
      PipelineOptions o;
      o.classify_by_launching_op = true;
      o.host_activity = host_activity;
      o.keep_kernel_records = true;
      o.stream_cpu_side = stream_cpu_side;
      auto profiles = ProfileTraces({path}, Tracefuse(), o);
      ASSERT_TRUE(profiles.ok()) << profiles.status();
      TraceProfile& p = profiles->front();
      if (host_activity) {
        EXPECT_EQ(p.by_op.state, State::kPending);
        TakeOpTree(&p);
      }
      EXPECT_EQ(p.by_op.state, State::kDone);
      EXPECT_EQ(CategoryByName(p), kExpectedCategories);
      EXPECT_EQ(LaunchingOpByName(p), kExpectedOps);
    }
  }
}

TEST(ByOp, OffLeavesTheNamesInOther) {
  testing::TempDir dir;
  const std::string path = EagerTrace().Write(dir, "eager.json");
  auto profiles = ProfileTraces({path}, Tracefuse(), PipelineOptions());
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  EXPECT_EQ(profiles->front().by_op.state, State::kOff);
  EXPECT_EQ(CategoryByName(profiles->front())["main_kernel"], "Other");
}

// Without cpu_ops, nothing can say; the reference's rule sets are never touched.
TEST(ByOp, NothingChangesWithoutACpuSideOrWithTheReferencesRules) {
  testing::TempDir dir;
  PipelineOptions o;
  o.classify_by_launching_op = true;
  const std::string kernels_only = EagerTrace().Write(dir, "kernels.json", false);
  auto profiles = ProfileTraces({kernels_only}, Tracefuse(), o);
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  EXPECT_EQ(profiles->front().by_op.state, State::kNoCpuSide);
  EXPECT_TRUE(profiles->front().by_op.names.empty());
  EXPECT_EQ(CategoryByName(profiles->front())["main_kernel"], "Other");

  const std::string eager = EagerTrace().Write(dir, "eager.json");
  auto reference = ProfileTraces({eager}, *LoadClassifier("wafer-kernel"), o);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_EQ(reference->front().by_op.state, State::kOff);
  EXPECT_TRUE(reference->front().by_op.names.empty());
}

// A trace whose names all match a rule is read once, as before.
TEST(ByOp, NothingLeftMeansNoSecondRead) {
  testing::TempDir dir;
  TraceWriter t;
  t.Op("aten::mm", 0, 100);
  t.Launch("ampere_sgemm_128x64_nn", 10, 50);
  const std::string path = t.Write(dir, "known.json");
  PipelineOptions o;
  o.classify_by_launching_op = true;
  auto profiles = ProfileTraces({path}, Tracefuse(), o);
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  EXPECT_EQ(profiles->front().by_op.state, State::kNothingLeft);
}

// The CLI: by default breakdown marks the names classified by their ops, in every format, and
// --name-only turns it off; a pipe cannot be read twice, and says so.
TEST(ByOp, BreakdownMarksWhatItsOpsClassified) {
  testing::TempDir dir;
  const std::string path = EagerTrace().Write(dir, "eager.json");
  const std::string bin = TRACEFUSE_BINARY;
  auto text = testing::RunCommand(bin + " breakdown " + path);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(absl::StrContains(text.out, "x  * main_kernel\n")) << text.out;
  EXPECT_TRUE(absl::StrContains(
      text.out,
      "\n* classified by the op that launched it (its name matches no rule): 4 kernels, 0.082 ms, "
      "80.4% of kernel time ('tracefuse breakdown --suggest' proposes rules for their names)\n"))
      << text.out;

  auto json = testing::RunCommand(bin + " breakdown --format json " + path);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["by_op_state"], "done");
  EXPECT_EQ(j["by_op_kernels"], 4);
  bool seen = false;
  for (const auto& c : j["categories"]) {
    for (const auto& k : c["top_kernels"]) {
      if (k["name"] != "main_kernel") continue;
      seen = true;
      EXPECT_EQ(c["category"], "GEMM");
      EXPECT_EQ(k["by_op"], true);
      EXPECT_EQ(k["launching_op"], "aten::mm");
    }
  }
  EXPECT_TRUE(seen) << json.out;

  auto csv = testing::RunCommand(bin + " breakdown --format csv " + path);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_TRUE(absl::StrContains(csv.out, ",main_kernel,1,50,"));
  EXPECT_TRUE(absl::StrContains(csv.out, ",false,true\n")) << csv.out;

  auto name_only = testing::RunCommand(bin + " breakdown --format json --name-only " + path);
  ASSERT_EQ(name_only.exit_code, 0) << name_only.err;
  const nlohmann::json off = nlohmann::json::parse(name_only.out);
  EXPECT_EQ(off["by_op_state"], "off");
  EXPECT_EQ(off["unclassified"].size(), 4u);

  auto piped = testing::RunCommand(bin + " breakdown -", testing::ReadFile(path));
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_TRUE(absl::StrContains(
      piped.out,
      "\nNames left in the default category were not classified by their launching ops: the "
      "input, a pipe, cannot be read again for its CPU side (give the file instead)\n"))
      << piped.out;
}

// compare classifies both traces so, and says so per trace, in text and JSON.
TEST(ByOp, CompareSaysWhatItsOpsClassified) {
  testing::TempDir dir;
  const std::string path = EagerTrace().Write(dir, "eager.json");
  const std::string bin = TRACEFUSE_BINARY;
  auto text = testing::RunCommand(bin + " compare " + path + " " + path);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(absl::StrContains(text.out,
                                ": 4 kernels (0.082 ms) classified by the op that launched them "
                                "(their names match no rule)\n"))
      << text.out;
  auto json = testing::RunCommand(bin + " compare --format json " + path + " " + path);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  for (const auto& trace : j["tracefuse"]["traces"]) {
    EXPECT_EQ(trace["by_op"], nlohmann::json::parse(R"({"state": "done", "kernels": 4,
                                                        "time_us": 82.0})"));
    EXPECT_EQ(trace["kernel_time_us_by_category"]["GEMM"], 61.0);
  }
  auto name_only =
      testing::RunCommand(bin + " compare --format json --name-only " + path + " " + path);
  ASSERT_EQ(name_only.exit_code, 0) << name_only.err;
  EXPECT_EQ(nlohmann::json::parse(name_only.out)["tracefuse"]["traces"][0]["by_op"]["state"],
            "off");
}

// --suggest proposes name rules for what the ops classified, in the category they gave.
TEST(ByOp, SuggestProposesRulesInTheCategoryTheOpsGave) {
  testing::TempDir dir;
  const std::string path = EagerTrace().Write(dir, "eager.json");
  auto r = testing::RunCommand(std::string(TRACEFUSE_BINARY) + " breakdown --suggest " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "  - {category: GEMM, words: main}\n")) << r.out;
  EXPECT_TRUE(absl::StrContains(
      r.out,
      "(tracefuse's category that their launching ops gave them, as aten::mm launched the "
      "first)"))
      << r.out;
}

// Errors in a table are one line each, naming the file and line.
TEST(ByOp, MalformedTablesFailWithTheirLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[1, 2]", "t.yaml:1: a launching-op table is a YAML map"},
      {"ops: 3", "t.yaml:1: a list of rows, each with a 'category'"},
      {"ops:\n  - {ops: [aten::mm]}", "t.yaml:2: a row is a map with a 'category'"},
      {"ops:\n  - {category: GEMM}", "t.yaml:2: a row without 'ops' or 'prefixes'"},
      {"ops:\n  - {category: GEMM, names: [aten::mm]}",
       "t.yaml:2: unknown key 'names' (a row has 'category', 'ops' and 'prefixes')"},
      {"modules:\n  - {category: GEMM, ops: [Linear]}",
       "t.yaml:2: unknown key 'ops' (a row has 'category', 'classes' and 'prefixes')"},
      {"ops:\n  - {category: GEMM, ops: [aten::mm]}\n  - {category: Reduce, ops: [aten::mm]}",
       "t.yaml:3: 'aten::mm' is listed twice"},
      {"ops:\n  - {category: GEMM, ops: [\"\"]}", "t.yaml:2: a name is a non-empty string"},
      {"opz: []", "t.yaml:1: unknown key 'opz'"},
      {"ops: [", "t.yaml:1: end of sequence flow not found"},
  };
  for (const auto& [text, message] : cases) {
    auto table = LaunchingOpTable::FromYaml(text, "t.yaml");
    ASSERT_FALSE(table.ok()) << text;
    EXPECT_EQ(table.status().message(), message) << text;
  }
}

// Rows are ordered: an exact name or prefix of an earlier row wins over a later one.
TEST(ByOp, TheFirstRowThatMatchesWins) {
  auto table = LaunchingOpTable::FromYaml(R"(
ops:
  - {category: Optimizer, ops: [aten::_foreach_add_], prefixes: [aten::_fused_]}
  - {category: Elementwise, prefixes: [aten::_foreach_, aten::add]}
  - {category: MemCopy, ops: [aten::_fused_copy]}
modules:
  - {category: LayerNorm, classes: [LayerNorm], prefixes: [Llama]}
)",
                                          "t.yaml");
  ASSERT_TRUE(table.ok()) << table.status();
  const LaunchingOpTable& t = **table;
  EXPECT_EQ(t.CategoryOfOp("aten::_foreach_add_"), "Optimizer");
  EXPECT_EQ(t.CategoryOfOp("aten::_foreach_mul_"), "Elementwise");
  EXPECT_EQ(t.CategoryOfOp("aten::_fused_copy"), "Optimizer");
  EXPECT_EQ(t.CategoryOfOp("aten::addmm"), "Elementwise");
  EXPECT_EQ(t.CategoryOfOp("aten::mm"), "");
  EXPECT_EQ(t.CategoryOfModule("LayerNorm"), "LayerNorm");
  EXPECT_EQ(t.CategoryOfModule("LlamaRMSNorm"), "LayerNorm");
  EXPECT_EQ(t.CategoryOfModule("Linear"), "");
  EXPECT_EQ(t.categories(),
            (std::vector<std::string>{"Optimizer", "Elementwise", "MemCopy", "LayerNorm"}));
}

// The built-in table reads, and names only categories of the rule set it serves.
TEST(ByOp, BuiltinTableUsesTheTracefuseCategories) {
  auto table = LaunchingOpTable::FromYaml(LaunchingOpTable::BuiltinText(), "launching-ops.yaml");
  ASSERT_TRUE(table.ok()) << table.status();
  const std::shared_ptr<const Classifier> tracefuse = Tracefuse();
  const RuleSet& rules = tracefuse->rule_set();
  for (const std::string& c : (*table)->categories()) {
    EXPECT_TRUE(rules.category_index(c).has_value()) << c;
    EXPECT_NE(c, rules.default_rule().category);
  }
  EXPECT_EQ((*table)->CategoryOfOp("aten::mm"), "GEMM");
  EXPECT_EQ((*table)->CategoryOfOp("aten::native_layer_norm"), "LayerNorm");
  EXPECT_EQ((*table)->CategoryOfOp("aten::_softmax"), "Softmax");
}

}  // namespace
}  // namespace tracefuse

namespace tracefuse {
namespace {

// On every real trace with a CPU side, as if no name said anything (every name's rule the
// default): every kernel whose launch the table can place is classified, in one pass, and the
// category the ops give agrees with the one the names give for most of the kernel time, which
// measures the table against the rules.
TEST(ByOp, RealTracesAsIfNoNameSaidAnything) {
  TRACEFUSE_REQUIRE_SHARED();
  const auto classifier = Tracefuse();
  const std::shared_ptr<const LaunchingOpTable> table = LaunchingOpTable::Builtin();
  size_t traces = 0;
  for (const std::string& path :
       testing::FilesIn(testing::SharedDir() + "/traces/real", ".json.gz")) {
    if (path.find("rocprof") != std::string::npos) continue;  // not a Kineto trace
    SCOPED_TRACE(path);
    PipelineOptions o;
    o.host_activity = true;
    o.keep_kernel_records = true;
    o.classify_by_launching_op = true;
    auto profiles = ProfileTraces({path}, classifier, o);
    ASSERT_TRUE(profiles.ok()) << profiles.status();
    TraceProfile& p = profiles->front();
    if (p.by_op.state == State::kNoCpuSide) continue;
    ++traces;
    const std::vector<CategoryId> by_name = p.NameCategories();
    const OpTree tree = TakeOpTree(&p);
    ASSERT_EQ(tree.group_launch.size(), p.group_correlation.size());
    const RuleId default_rule = static_cast<RuleId>(classifier->rule_set().rules().size());
    std::fill(p.name_rule.begin(), p.name_rule.end(), default_rule);
    ClassifyByLaunchingOp(tree, *table, &p);
    ASSERT_EQ(p.by_op.state, State::kDone);
    // Which kernels the table can place, found here from the tree alone.
    auto placed = [&](uint32_t group) {
      const LaunchSite& site = tree.group_launch[group];
      if (site.op != kNoOp && !table->CategoryOfOp(tree.names[site.op]).empty()) return true;
      const uint32_t unit = tree.group_unit[group];
      if (unit != kNoUnit && !tree.units[unit].is_launch &&
          !table->CategoryOfOp(tree.names[tree.units[unit].name]).empty()) {
        return true;
      }
      for (uint32_t s = site.scope; s != kRootScope; s = tree.scopes[s].parent) {
        if (!table->CategoryOfModule(tree.names[tree.scopes[s].name]).empty()) return true;
      }
      return false;
    };
    int64_t placed_ns = 0, agreeing_ns = 0, unplaced_ns = 0;
    p.kernels.ForEach([&](const KernelRecord& k) {
      if (k.group == kNoGroup || !placed(k.group)) {
        unplaced_ns += k.dur_ns;
        return;
      }
      placed_ns += k.dur_ns;
      EXPECT_TRUE(p.by_op.names.contains(k.name)) << p.names[k.name];
      agreeing_ns += p.category_of_name(k.name) == by_name[k.name] ? k.dur_ns : 0;
    });
    const double agreement = double(agreeing_ns) / double(std::max<int64_t>(placed_ns, 1));
    const double placed_share =
        double(placed_ns) / double(std::max<int64_t>(placed_ns + unplaced_ns, 1));
    std::printf("%-40s placed %5.1f %% of kernel time, agreeing with the names on %5.1f %%\n",
                std::filesystem::path(path).filename().c_str(), 100 * placed_share,
                100 * agreement);
    // The least on the real traces: 77.4 % (hta_nccl_data).
    EXPECT_GE(agreement, 0.75);
  }
  EXPECT_GE(traces, 10u);
}

}  // namespace
}  // namespace tracefuse
