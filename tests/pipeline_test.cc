#include <sys/resource.h>

#include <fstream>
#include <map>
#include <random>
#include <tuple>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "profile_builder.h"
#include "simdjson.h"
#include "test_util.h"
#include "tracefuse/pipeline/flow_graph.h"

namespace tracefuse {
namespace {

std::shared_ptr<const Classifier> WaferKernel() {
  return *Classifier::Create(*RuleSet::Load("wafer-kernel"));
}

absl::StatusOr<TraceProfile> Profile(const std::string& path, PipelineOptions o = {}) {
  auto r = ProfileTraces({path}, WaferKernel(), o);
  if (!r.ok()) return r.status();
  return std::move(r->front());
}

// Kernel counts and large-group counts of every golden input equal the reference's metadata.
TEST(Pipeline, GoldenInputsGiveTheReferenceKernelCounts) {
  TRACEFUSE_REQUIRE_SHARED();
  auto cases = testing::FilesIn(testing::SharedDir() + "/golden/fusion", "");
  ASSERT_FALSE(cases.empty());
  simdjson::dom::parser parser;
  for (const std::string& dir : cases) {
    simdjson::dom::element expected = parser.load(dir + "/expected.json").value();
    auto profiles =
        ProfileTraces({dir + "/trace1.json.gz", dir + "/trace2.json.gz"}, WaferKernel(), {});
    ASSERT_TRUE(profiles.ok()) << profiles.status();
    for (int t = 0; t < 2; ++t) {
      const TraceProfile& p = (*profiles)[t];
      std::string prefix = "trace" + std::to_string(t + 1);
      EXPECT_EQ(p.kernels.size(),
                uint64_t(expected["metadata"][prefix + "_total_kernels"].get_int64().value()))
          << dir;
      EXPECT_EQ(p.GroupsAtLeast(50),
                uint64_t(expected["metadata"][prefix + "_correlation_groups"].get_int64().value()))
          << dir;
    }
  }
}

TEST(Pipeline, PlatformOfEveryRealTrace) {
  TRACEFUSE_REQUIRE_SHARED();
  const std::map<std::string, Platform> expected = {
      {"hta_mi250_minitoy_rocm62.json.gz", Platform::kAmd},
      {"hta_nccl_data.json.gz", Platform::kNvidia},
      {"hta_trace_diff_control.json.gz", Platform::kNvidia},
      {"kineto_tbp_resnet50_nw0.pt.trace.json.gz", Platform::kNvidia},
      {"tl_b200_eager.json.gz", Platform::kNvidia},
      {"tl_h100_bert_small.json.gz", Platform::kNvidia},
      {"tl_h100_falconsai_nsfw.json.gz", Platform::kNvidia},
      {"tl_h100_timesformer.json.gz", Platform::kNvidia},
      {"tl_mi300_bert_small.json.gz", Platform::kAmd},
      {"tl_mi300_ddp_resnet18.json.gz", Platform::kAmd},
      {"tl_mi300_falconsai_nsfw.json.gz", Platform::kAmd},
      {"tl_mi300_timesformer.json.gz", Platform::kAmd},
      {"tl_sglang_qwen3_8b_decode.json.gz", Platform::kAmd},
      {"tl_sp_qwen3_30b_a3b_b300_decode.json.gz", Platform::kNvidia},
      {"tl_sp_qwen3_30b_a3b_mi300x_decode.json.gz", Platform::kAmd},
      {"tl_torch_compile_triton.json.gz", Platform::kAmd},
  };
  auto files = testing::FilesIn(testing::SharedDir() + "/traces/real", ".json.gz");
  size_t checked = 0;
  for (const std::string& path : files) {
    std::string base = path.substr(path.rfind('/') + 1);
    if (base == "tl_rocprof_908_results.json.gz") continue;
    auto p = Profile(path);
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_TRUE(expected.count(base)) << "no expectation for " << base;
    EXPECT_EQ(p->platform, expected.at(base)) << base << ": " << p->platform_evidence;
    EXPECT_GT(p->kernels.size(), 0u) << base;
    EXPECT_EQ(p->kernels_with_bad_times, 0u) << base;
    ++checked;
  }
  EXPECT_EQ(checked, expected.size());
}

// ../shared's two files of the vendors' profilers are read by their importers, told by their
// content (docs/formats.md); their figures are held to an oracle by the vendor_oracle tests.
TEST(Pipeline, VendorFilesAreReadByTheirImporters) {
  TRACEFUSE_REQUIRE_SHARED();
  const struct {
    const char* file;
    TraceFormat format;
    Platform platform;
    const char* gpu;
    uint64_t kernels;
  } cases[] = {
      {"tl_rocprof_908_results.json.gz", TraceFormat::kRocprofv3Json, Platform::kAmd,
       "AMD Instinct MI350X", 43915},
      {"pipit_saxpy_nsys.sqlite", TraceFormat::kNsysSqlite, Platform::kNvidia,
       "NVIDIA A100-SXM4-40GB", 5},
  };
  for (const auto& c : cases) {
    auto p = Profile(testing::SharedDir() + "/traces/real/" + c.file);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->metadata.format, c.format) << c.file;
    EXPECT_EQ(p->platform, c.platform) << c.file;
    EXPECT_EQ(p->gpu, c.gpu) << c.file;
    EXPECT_EQ(p->kernel_count, c.kernels) << c.file;
    EXPECT_EQ(p->kernels_without_correlation, 0u) << c.file;
  }
}

std::string Generate(const testing::TempDir& dir, const std::string& name,
                     const std::string& args) {
  std::string path = dir.path() + "/" + name;
  auto r = testing::RunCommand(std::string(TRACEFUSE_GEN) + " " + args + " -o " + path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

void ExpectSameProfile(const TraceProfile& a, const TraceProfile& b) {
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.names, b.names);
  EXPECT_EQ(a.name_rule, b.name_rule);
  EXPECT_EQ(a.name_kernels, b.name_kernels);
  EXPECT_EQ(a.group_correlation, b.group_correlation);
  EXPECT_EQ(a.group_size, b.group_size);
  const std::vector<KernelRecord> ka = testing::Records(a.kernels),
                                  kb = testing::Records(b.kernels);
  ASSERT_EQ(ka.size(), b.kernels.size());
  ASSERT_EQ(ka.size(), kb.size());
  for (size_t i = 0; i < ka.size(); ++i) {
    ASSERT_EQ(ka[i].ts_ns, kb[i].ts_ns) << i;
    ASSERT_EQ(ka[i].dur_ns, kb[i].dur_ns) << i;
    ASSERT_EQ(ka[i].name, kb[i].name) << i;
    ASSERT_EQ(ka[i].group, kb[i].group) << i;
  }
  EXPECT_EQ(a.event_categories, b.event_categories);
  EXPECT_EQ(a.platform, b.platform);
}

TEST(Pipeline, SameResultForEveryThreadCountChunkSizeAndLayout) {
  testing::TempDir dir;
  std::string lines =
      Generate(dir, "a.json", "--platform amd --steps 40 --layers 4 --seed 7 --layout lines");
  std::string compact =
      Generate(dir, "b.json", "--platform amd --steps 40 --layers 4 --seed 7 --layout compact");
  std::string kineto =
      Generate(dir, "c.json", "--platform amd --steps 40 --layers 4 --seed 7 --layout kineto");
  PipelineOptions base;
  base.threads = 1;
  auto reference = Profile(lines, base);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_EQ(reference->kernels.size(), 40u * (4 * 11 + 5 + 6));
  EXPECT_EQ(reference->GroupsAtLeast(44), 40u);
  for (int threads : {1, 2, 3, 8}) {
    for (size_t chunk : {size_t{1}, size_t{4096}, size_t{1} << 20}) {
      PipelineOptions o;
      o.threads = threads;
      o.chunk_bytes = chunk;
      o.window_bytes = 64 * 1024;  // many windows: events cross window boundaries
      for (const std::string& path : {lines, compact, kineto}) {
        auto p = Profile(path, o);
        ASSERT_TRUE(p.ok()) << p.status();
        ExpectSameProfile(*reference, *p);
      }
    }
  }
}

// Rocprofv3Document() is a rocprofv3 JSON document of two processes, each with `records`
// kernels and HIP calls in no start order, copies, roctx ranges and marks, and records of a kind
// not read; `break_at`: the kernel record after which a ',' is missing (-1: none).
std::string Rocprofv3Document(int records, int break_at = -1) {
  std::mt19937 random(11);
  std::string doc = R"({"rocprofiler-sdk-tool": [)";
  for (int pid : {100, 200}) {
    if (pid == 200) doc += ", ";
    doc +=
        StrCat(R"({"metadata": {"pid": )", pid,
               R"(}, "agents": [{"id": {"handle": 1}, "type": 1, "logical_node_type_id": 0},)",
               R"( {"id": {"handle": 2}, "type": 2, "logical_node_type_id": 0,)",
               R"( "product_name": "AMD Instinct MI300X"}], "strings": {"buffer_records": [)",
               R"({"kind": "NONE", "operations": []}, {"kind": "HIP_RUNTIME_API", "operations": )",
               R"(["NONE", "hipLaunchKernel", "hipMemcpyAsync"]}, {"kind": "MARKER_CORE_API", )",
               R"("operations": ["NONE", "roctxRangePushA", "roctxMarkA"]}], "marker_api": [)");
    for (int m = 0; m < 10; ++m) {
      doc += StrCat(m ? ", " : "", R"({"key": )", 5000 + m, R"(, "value": "aten::op)", m,
                    R"(, op_id = )", m, R"("})");
    }
    doc += R"(]}, "kernel_symbols": [)";
    for (int k = 0; k < 7; ++k) {
      doc += StrCat(k ? ", " : "", R"({"kernel_id": )", k, R"(, "formatted_kernel_name": "k)", k,
                    R"(_{a}[b]\"c\""})");
    }
    doc += R"(], "buffer_records": {"kernel_dispatch": [)";
    for (int i = 0; i < records; ++i) {
      const int64_t start = 1000000 + 1000 * i + static_cast<int64_t>(random() % 5000);
      doc += StrCat(
          i == 0 ? "" : (i - 1 == break_at ? " " : ",\n  "), R"({"start_timestamp": )", start,
          R"(, "end_timestamp": )", start + 700, R"(, "correlation_id": {"internal": )", i + 1,
          R"(, "external": 0}, "dispatch_info": {"agent_id": {"handle": 2}, )",
          R"("queue_id": {"handle": 3}, "kernel_id": )", i % 7,
          R"(, "grid_size": {"x": 64, "y": 1, "z": 1}}, "stream_id": {"handle": )", i % 3, "}}");
    }
    doc += R"(], "hip_api": [)";
    for (int i = 0; i < records; ++i) {
      const int64_t start = 1000000 + 1000 * i - 300 + static_cast<int64_t>(random() % 200);
      doc += StrCat(i ? ", " : "", R"({"kind": 1, "operation": 1, "thread_id": )", pid + i % 2,
                    R"(, "correlation_id": {"internal": )", i + 1, R"(}, "start_timestamp": )",
                    start, R"(, "end_timestamp": )", start + 50, "}");
    }
    doc += R"(], "memory_copy": [)";
    for (int i = 0; i < 20; ++i) {
      doc += StrCat(i ? ", " : "", R"({"start_timestamp": )", 1000500 + 9000 * i,
                    R"(, "end_timestamp": )", 1000900 + 9000 * i,
                    R"(, "src_agent_id": {"handle": 1}, "dst_agent_id": {"handle": 2}})");
    }
    doc += R"(], "marker_api": [)";
    for (int m = 0; m < 12; ++m) {
      doc += StrCat(m ? ", " : "", R"({"kind": 2, "operation": )", m < 10 ? 1 : 2,
                    R"(, "thread_id": )", pid, R"(, "correlation_id": {"internal": )", 5000 + m,
                    R"(}, "start_timestamp": )", 990000 + 20000 * m, R"(, "end_timestamp": )",
                    1005000 + 20000 * m, "}");
    }
    doc += R"(], "hsa_api": [{"a": [1, {"b": "]}"}]}, {}, {}]}})";
  }
  return doc + "]}\n";
}

// A rocprofv3 file is parsed in slices of about chunk_bytes, on every thread: whatever their
// size and number, and whether the file is read at random or decompressed, the same records.
TEST(Pipeline, Rocprofv3SlicesGiveTheSameRecordsAtEverySize) {
  testing::TempDir dir;
  // About 1.2 MB: the walk reads a plain file 256 KiB at a time, so slices span its pieces.
  const std::string plain = dir.File("a_results.json", Rocprofv3Document(1500));
  ASSERT_EQ(std::system(("gzip -k " + plain).c_str()), 0);
  PipelineOptions base;
  base.threads = 1;
  base.chunk_bytes = 64 << 20;  // one slice an array
  auto reference = Profile(plain, base);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_EQ(reference->kernel_count, 3000u);
  EXPECT_EQ(reference->gpu, "AMD Instinct MI300X");
  const std::map<std::string, uint64_t> categories(reference->event_categories.begin(),
                                                   reference->event_categories.end());
  EXPECT_EQ(categories.at("hsa_api"), 6u);
  EXPECT_EQ(categories.at("roctxMarkA"), 4u);
  EXPECT_EQ(categories.at("cpu_op"), 20u);
  EXPECT_EQ(categories.at("gpu_memcpy"), 40u);
  for (int threads : {1, 2, 3}) {
    for (size_t slice : {size_t{1}, size_t{700}, size_t{20000}, size_t{1} << 20}) {
      PipelineOptions o;
      o.threads = threads;
      o.chunk_bytes = slice;
      for (const std::string& path : {plain, plain + ".gz"}) {
        auto p = Profile(path, o);
        ASSERT_TRUE(p.ok()) << p.status();
        ExpectSameProfile(*reference, *p);
      }
    }
  }
}

// A malformed record is found at the same byte, in the same words, whether it lies in a slice
// of its own or amid others: a ',' missing between two records (either side of a cut, or not),
// and a control character in a string (which simdjson's first pass finds without saying where),
// in a record or in a range's text; of two errors, the first in the document is said.
TEST(Pipeline, Rocprofv3ErrorsAreFoundWhereverSlicesAreCut) {
  testing::TempDir dir;
  const std::string missing_comma = Rocprofv3Document(300, 150);
  std::string control = Rocprofv3Document(300);
  size_t key = 0;
  for (int i = 0; i < 150; ++i) key = control.find("\"start_timestamp\"", key + 1);
  control.insert(key + 6, "\x01");
  // A control character in a range's text (strings.marker_api, also read in slices).
  std::string text_control = Rocprofv3Document(300);
  const size_t text = text_control.find("aten::op3") + 4;
  text_control.insert(text, "\x02");
  // Both errors: the first in the document is said, in the skeleton (agents) before a record.
  std::string both = missing_comma;
  const size_t agent = both.find(R"("type": 1, )") + 9;
  both.erase(agent, 1);
  const struct {
    std::string document;
    size_t at;
    const char* message;
  } cases[] = {
      {both, agent + 1,  // the token after the ',' that is missing, as in a record
       "The JSON document has an improper structure: missing or superfluous commas, braces, "
       "missing keys, etc."},
      {missing_comma, missing_comma.find("} {\"start_timestamp\"") + 2,
       "The JSON document has an improper structure: missing or superfluous commas, braces, "
       "missing keys, etc."},
      {control, key + 6,
       "Within strings, some characters must be escaped, we found unescaped characters"},
      {text_control, text,
       "Within strings, some characters must be escaped, we found unescaped characters"},
  };
  for (const auto& c : cases) {
    const std::string path = dir.File("broken_results.json", c.document);
    for (size_t slice : {size_t{1}, size_t{700}, size_t{1} << 20}) {
      PipelineOptions o;
      o.chunk_bytes = slice;
      auto p = Profile(path, o);
      ASSERT_FALSE(p.ok());
      EXPECT_EQ(p.status().message(),
                StrCat(path, ": malformed JSON at byte ", c.at, ": ", c.message))
          << slice;
    }
  }
}

TEST(Pipeline, GzipInputEqualsPlainInput) {
  testing::TempDir dir;
  std::string plain = Generate(dir, "n.json", "--platform nvidia --steps 20 --layers 3");
  ASSERT_EQ(std::system(("gzip -k " + plain).c_str()), 0);
  auto a = Profile(plain);
  auto b = Profile(plain + ".gz");
  ASSERT_TRUE(a.ok() && b.ok());
  ExpectSameProfile(*a, *b);
  EXPECT_TRUE(b->compressed);
  EXPECT_EQ(a->input_bytes, b->input_bytes);
  EXPECT_LT(b->file_bytes, b->input_bytes);
}

// The per-stage CPU accounting adds up to no more CPU than the process used, with every stage
// seen: inflation only for gzip input, parsing and splitting always.
TEST(Pipeline, StageCpuSecondsAccountForTheRun) {
  testing::TempDir dir;
  const std::string plain = Generate(dir, "a.json", "--platform amd --steps 200 --seed 3");
  ASSERT_EQ(std::system(("gzip -k " + plain).c_str()), 0);
  for (const std::string& path : {plain, plain + ".gz"}) {
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    PipelineOptions options;
    options.threads = 2;
    auto p = Profile(path, options);
    getrusage(RUSAGE_SELF, &after);
    ASSERT_TRUE(p.ok()) << p.status();
    auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
    const double process = seconds(after.ru_utime) - seconds(before.ru_utime) +
                           seconds(after.ru_stime) - seconds(before.ru_stime);
    const StageCpuSeconds& cpu = p->cpu_seconds;
    cpu.ForEach([&](const char* stage, double s, bool) { EXPECT_GE(s, 0) << stage; });
    EXPECT_GT(cpu.parse, 0) << path;
    EXPECT_GT(cpu.split, 0) << path;
    EXPECT_GT(cpu.reduce, 0) << path;
    EXPECT_EQ(cpu.inflate > 0, path != plain) << path;
    EXPECT_LE(cpu.total(), process + 0.01) << path;
    EXPECT_NEAR(cpu.serial_share(), cpu.serial() / cpu.total(), 1e-12);
    EXPECT_LE(cpu.serial_share(), 1.0);
  }
}

TEST(Pipeline, MalformedEventDeepInAFileReportsItsOffset) {
  testing::TempDir dir;
  std::string good = Generate(dir, "g.json", "--platform amd --steps 30 --layers 4");
  std::ifstream in(good);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  size_t at = text.find("\"dur\": ", text.find("\"cat\": \"kernel\"", text.size() / 2));
  text.replace(at + 7, 1, "x");
  std::string bad = dir.File("bad.json", text);
  for (int threads : {1, 2}) {
    PipelineOptions o;
    o.threads = threads;
    o.chunk_bytes = 8192;
    auto p = Profile(bad, o);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    std::string msg(p.status().message());
    EXPECT_TRUE(absl::StartsWith(msg, bad + ": malformed JSON at byte ")) << msg;
    uint64_t offset = std::stoull(msg.substr(msg.find("byte ") + 5));
    EXPECT_EQ(offset, at + 7) << msg;
    EXPECT_TRUE(absl::EndsWith(
        msg, ": invalid number '" + text.substr(at + 7, text.find(',', at) - at - 7) + "'"))
        << msg;
  }
}

TEST(Pipeline, DefaultThreadsFollowSlurm) {
  setenv("SLURM_CPUS_PER_TASK", "5", 1);
  EXPECT_EQ(DefaultThreadCount(), 5);
  setenv("SLURM_CPUS_PER_TASK", "junk", 1);
  EXPECT_GE(DefaultThreadCount(), 1);
  unsetenv("SLURM_CPUS_PER_TASK");
}

}  // namespace
}  // namespace tracefuse

namespace tracefuse {
namespace {

// Random damage to a valid trace never crashes the reader: every run ends either with a profile
// or with one error naming the file.
TEST(Pipeline, DamagedTracesFailCleanly) {
  testing::TempDir dir;
  std::string good = Generate(dir, "g.json", "--platform nvidia --steps 3 --layers 2");
  std::ifstream in(good);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  const char kBytes[] = "{}[],:\"\\ 0aZ\x01\xff";
  int errors = 0;
  for (int i = 0; i < 300; ++i) {
    std::string damaged = text;
    switch (next() % 3) {
      case 0:  // truncate
        damaged.resize(next() % damaged.size());
        break;
      case 1:  // overwrite a few bytes
        for (int k = 0; k < 3; ++k)
          damaged[next() % damaged.size()] = kBytes[next() % (sizeof(kBytes) - 1)];
        break;
      default:  // delete a range
        damaged.erase(next() % damaged.size(), next() % 64);
    }
    std::string path = dir.File("d.json", damaged);
    PipelineOptions o;
    o.chunk_bytes = 1024;
    o.threads = 2;
    auto p = Profile(path, o);
    if (!p.ok()) {
      ++errors;
      EXPECT_TRUE(p.status().code() == absl::StatusCode::kInvalidArgument ||
                  p.status().code() == absl::StatusCode::kDataLoss)
          << p.status();
      EXPECT_TRUE(absl::StartsWith(std::string(p.status().message()), path + ": ")) << p.status();
      EXPECT_EQ(std::string(p.status().message()).find('\n'), std::string::npos);
    }
  }
  EXPECT_GT(errors, 100);
}

}  // namespace
}  // namespace tracefuse

namespace tracefuse {
namespace {

TEST(Pipeline, TotalsWithoutKernelRecordsEqualThoseWithThem) {
  testing::TempDir dir;
  std::string path = Generate(dir, "t.json", "--platform amd --steps 20 --layers 3");
  auto with = Profile(path);
  PipelineOptions o;
  o.keep_kernel_records = false;
  auto without = Profile(path, o);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_EQ(with->kernels.size(), with->kernel_count);
  EXPECT_TRUE(without->kernels.empty());
  EXPECT_EQ(without->kernel_count, with->kernel_count);
  EXPECT_EQ(without->names, with->names);
  EXPECT_EQ(without->name_kernels, with->name_kernels);
  EXPECT_EQ(without->name_time_ns, with->name_time_ns);
  EXPECT_EQ(without->group_size, with->group_size);
  EXPECT_EQ(without->kernels_without_correlation, with->kernels_without_correlation);
  EXPECT_EQ(without->platform, with->platform);
}

}  // namespace
}  // namespace tracefuse

namespace tracefuse {
namespace {

// Speculative cuts (at newlines between events, EventChunker) give exactly what the exact
// splitter gives, for every layout, thread count and chunk size, from a regular file (chunks read
// by the parallel stage) and from a stream (gzip).
TEST(Pipeline, SpeculativeCutsGiveTheExactSplittersResults) {
  testing::TempDir dir;
  std::vector<std::string> paths;
  for (const char* layout : {"kineto", "lines", "compact"}) {
    paths.push_back(
        Generate(dir, std::string(layout) + ".json",
                 std::string("--platform nvidia --size 12M --seed 5 --layout ") + layout));
  }
  ASSERT_EQ(std::system(("gzip -k -1 " + paths[0]).c_str()), 0);
  paths.push_back(paths[0] + ".gz");
  PipelineOptions exact;
  exact.threads = 1;
  exact.speculative_cuts = false;
  for (const std::string& path : paths) {
    auto reference = Profile(path, exact);
    ASSERT_TRUE(reference.ok()) << reference.status();
    for (int threads : {1, 2, 7}) {
      for (size_t chunk : {size_t{64} << 10, size_t{1} << 20, size_t{8} << 20}) {
        PipelineOptions o;
        o.threads = threads;
        o.chunk_bytes = chunk;
        auto p = Profile(path, o);
        ASSERT_TRUE(p.ok()) << p.status();
        SCOPED_TRACE(path + " threads " + std::to_string(threads) + " chunk " +
                     std::to_string(chunk));
        ExpectSameProfile(*reference, *p);
        EXPECT_EQ(p->rejected_cuts, 0u);
      }
    }
  }
}

// The same on every real trace: plain (read by the parallel stage) and gzip (a stream).
// --max-event-bytes: an event past the limit is the same error, at its start, however the file is
// cut and read (a regular file's chunks searched around their targets, a gzip stream); at or
// above its size, the trace reads as it does without a limit.
TEST(Pipeline, EventLargerThanTheLimitFailsAlikeEverywhere) {
  testing::TempDir dir;
  std::vector<std::string> paths;
  for (const char* layout : {"kineto", "lines", "compact"}) {
    paths.push_back(Generate(dir, std::string(layout) + ".json",
                             std::string("--size 1M --giant-name 300K --layout ") + layout));
  }
  ASSERT_EQ(std::system(("gzip -k -1 " + paths[0]).c_str()), 0);
  paths.push_back(paths[0] + ".gz");
  for (const std::string& path : paths) {
    const std::string plain = path.substr(0, path.find(".json") + 5);
    const std::string text = testing::ReadFile(plain);
    const size_t start = text.rfind('{', text.find("giant_kernel<"));
    const std::string message = path + ": the event at byte " + std::to_string(start) +
                                " is larger than the limit of 204800 bytes on one event "
                                "(--max-event-bytes)";
    PipelineOptions unlimited;
    auto reference = Profile(path, unlimited);
    ASSERT_TRUE(reference.ok()) << reference.status();
    for (int threads : {1, 2}) {
      for (bool speculate : {true, false}) {
        for (size_t chunk : {size_t{16} << 10, size_t{2} << 20}) {
          SCOPED_TRACE(path + " threads " + std::to_string(threads) + " speculate " +
                       std::to_string(speculate) + " chunk " + std::to_string(chunk));
          PipelineOptions o;
          o.threads = threads;
          o.speculative_cuts = speculate;
          o.chunk_bytes = chunk;
          o.max_event_bytes = 200 << 10;
          auto p = Profile(path, o);
          EXPECT_EQ(p.status().message(), message);
          o.max_event_bytes = 400 << 10;
          p = Profile(path, o);
          ASSERT_TRUE(p.ok()) << p.status();
          ExpectSameProfile(*reference, *p);
        }
      }
    }
  }
}

TEST(Pipeline, SpeculativeCutsOnRealTraces) {
  TRACEFUSE_REQUIRE_SHARED();
  testing::TempDir dir;
  for (const std::string& gz :
       testing::FilesIn(testing::SharedDir() + "/traces/real", ".json.gz")) {
    if (gz.find("rocprof") != std::string::npos) continue;  // not a Kineto trace
    const std::string plain = dir.path() + "/plain.json";
    ASSERT_EQ(std::system(("gzip -dc " + gz + " > " + plain).c_str()), 0);
    PipelineOptions exact;
    exact.threads = 1;
    exact.speculative_cuts = false;
    auto reference = Profile(plain, exact);
    ASSERT_TRUE(reference.ok()) << reference.status();
    for (const auto& [path, threads, chunk] :
         {std::tuple{plain, 2, size_t{64} << 10}, std::tuple{plain, 7, size_t{256} << 10},
          std::tuple{gz, 7, size_t{64} << 10}}) {
      PipelineOptions o;
      o.threads = threads;
      o.chunk_bytes = chunk;
      auto p = Profile(path, o);
      ASSERT_TRUE(p.ok()) << p.status();
      SCOPED_TRACE(gz + " as " + path + " threads " + std::to_string(threads));
      ExpectSameProfile(*reference, *p);
    }
  }
}

// Arrays of objects inside events, laid out like the events array, offer cuts at the wrong
// depth; with the events themselves indented alike, the indentation cannot tell them apart. The
// chunk's parse rejects such a cut, the trace is read again from that chunk and cut exactly, and
// the results are the exact splitter's.
TEST(Pipeline, RejectedCutsAreCutAgainExactly) {
  std::string text = "{\"traceEvents\": [\n";
  for (int i = 0; i < 3000; ++i) {
    if (i > 0) text += ",\n";
    text += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k" + std::to_string(i % 7) +
            "\", \"ts\": " + std::to_string(10 * i) +
            ", \"dur\": 3, \"args\": {\"correlation\": " + std::to_string(i / 3) +
            ", \"frames\": [\n{\"f\": 1},\n{\"f\": 2},\n{\"f\": 3}\n]}}";
  }
  text += "\n]}\n";
  testing::TempDir dir;
  const std::string plain = dir.File("nested.json", text);
  ASSERT_EQ(std::system(("gzip -k " + plain).c_str()), 0);
  PipelineOptions exact;
  exact.speculative_cuts = false;
  auto reference = Profile(plain, exact);
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_EQ(reference->kernel_count, 3000u);
  for (const std::string& path : {plain, plain + ".gz"}) {
    uint64_t rejected = 0;
    // Chunk sizes that put the cut targets at every position within an event.
    for (size_t chunk = 1000; chunk < 1200; chunk += 17) {
      PipelineOptions o;
      o.threads = 2;
      o.chunk_bytes = chunk;
      o.window_bytes = 16 << 10;
      auto p = Profile(path, o);
      ASSERT_TRUE(p.ok()) << p.status();
      SCOPED_TRACE(path + " chunk " + std::to_string(chunk));
      ExpectSameProfile(*reference, *p);
      EXPECT_LE(p->rejected_cuts, EventChunker::kMaxRejected);
      rejected += p->rejected_cuts;
    }
    EXPECT_GT(rejected, 10u) << path;
  }
}

// Damage anywhere is accepted or rejected alike with speculative cuts and with the exact
// splitter, and nearly always with the same message, to the byte. The exceptions are damages
// with several symptoms (a bracket that shifts the depth of everything after it), where which
// symptom is met first depends on where chunks were cut, as it does between chunk sizes.
TEST(Pipeline, DamagedTracesFailAlikeWithSpeculativeCuts) {
  testing::TempDir dir;
  std::string good = Generate(dir, "g.json", "--platform amd --steps 6 --layers 2");
  std::ifstream in(good);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  uint64_t state = 987;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  const char kBytes[] = "{}[],:\"\\ 0aZ\n\x01\xff";
  int errors = 0, same_message = 0;
  for (int i = 0; i < 200; ++i) {
    std::string damaged = text;
    if (i % 4 == 0) {
      damaged.resize(damaged.size() - next() % (damaged.size() / 2));
    } else {
      damaged[next() % damaged.size()] = kBytes[next() % (sizeof(kBytes) - 1)];
    }
    const std::string path = dir.File("d.json", damaged);
    // Every fourth trace also as gzip, read in blocks smaller than a chunk: most chunks are then
    // parsed in place in their blocks (EventChunk::in_place).
    std::vector<std::string> paths = {path};
    if (i % 4 == 1) {
      ASSERT_EQ(std::system(("gzip -kf " + path).c_str()), 0);
      paths.push_back(path + ".gz");
    }
    for (const std::string& p : paths) {
      PipelineOptions o;
      o.chunk_bytes = 2048;
      o.window_bytes = 1024;
      o.threads = 2;
      o.speculative_cuts = false;
      auto exact = Profile(p, o);
      o.speculative_cuts = true;
      auto speculative = Profile(p, o);
      ASSERT_EQ(exact.ok(), speculative.ok())
          << p << " " << i << ": " << exact.status() << " / " << speculative.status();
      if (!exact.ok()) {
        ++errors;
        same_message += exact.status() == speculative.status();
      } else {
        ExpectSameProfile(*exact, *speculative);
      }
    }
  }
  EXPECT_GT(errors, 60);
  EXPECT_GE(same_message, errors * 95 / 100);
}

// Found by fuzz_trace: an event with a ':' after a value, or a missing value, and an extra '}'
// after it passed simdjson, the '}' closing the event, so a speculative chunk around it was
// accepted where the exact splitter rejects the '}': read at random (plain) and as a stream
// (gzip) alike.
TEST(Pipeline, MalformedValuesFailAlikeWithSpeculativeCuts) {
  testing::TempDir dir;
  std::vector<std::string> paths;
  for (const char* damaged : {R"({"ph": "X": 7, "a": 1})", R"({"ph": "X", "pid":})"}) {
    const std::string text =
        "{\"traceEvents\": [\n"
        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"ts\": 1, \"dur\": 1},\n  " +
        std::string(damaged) +
        "\n  },\n"
        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"b\", \"ts\": 2, \"dur\": 1}\n]}\n";
    paths.push_back(dir.File("d" + std::to_string(paths.size() / 2) + ".json", text));
    ASSERT_EQ(std::system(("gzip -k " + paths.back()).c_str()), 0);
    paths.push_back(paths.back() + ".gz");
  }
  for (const std::string& path : paths) {
    PipelineOptions o;
    o.host_activity = true;  // reads pid and tid
    o.chunk_bytes = 1;       // a chunk per event
    o.speculative_cuts = false;
    auto exact = Profile(path, o);
    ASSERT_FALSE(exact.ok()) << path;
    o.speculative_cuts = true;
    auto speculative = Profile(path, o);
    ASSERT_FALSE(speculative.ok()) << path;
    EXPECT_EQ(speculative.status(), exact.status()) << path;
  }
}

}  // namespace
}  // namespace tracefuse

namespace tracefuse {
namespace {

// Arrays of objects after the events array offer cuts too, in the same layout: speculative
// chunks run past the events' end, are rejected, and the trace is cut exactly from there, even
// when the front has already scanned the end of the input by then (timing-dependent, hence the
// repetitions).
TEST(Pipeline, CutsPastTheEventsArrayAreRejected) {
  for (const char* separator : {", ", ",\n  "}) {
    std::string text = "{\"schemaVersion\": 1, \"traceEvents\": [";
    for (int i = 0; i < 4000; ++i) {
      if (i > 0) text += separator;
      text += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k" + std::to_string(i % 5) +
              "\", \"ts\": " + std::to_string(10 * i) +
              ", \"dur\": 3, \"args\": {\"correlation\": " + std::to_string(i) + "}}";
    }
    text += "], \"otherArray\": [";
    for (int i = 0; i < 4000; ++i) {
      if (i > 0) text += separator;
      text += "{\"a\": " + std::to_string(i) + ", \"b\": [1, 2]}";
    }
    text += "], \"deviceProperties\": [{\"name\": \"GPU\", \"warpSize\": 32}]}\n";
    testing::TempDir dir;
    const std::string path = dir.File("trailer.json", text);
    ASSERT_EQ(std::system(("gzip -k " + path).c_str()), 0);
    PipelineOptions exact;
    exact.speculative_cuts = false;
    auto reference = Profile(path, exact);
    ASSERT_TRUE(reference.ok()) << reference.status();
    ASSERT_EQ(reference->kernel_count, 4000u);
    for (int repeat = 0; repeat < 5; ++repeat) {
      for (int threads : {1, 2, 7}) {
        for (size_t chunk : {size_t{4} << 10, size_t{64} << 10}) {
          PipelineOptions o;
          o.threads = threads;
          o.chunk_bytes = chunk;
          o.window_bytes = 16 << 10;
          auto p = Profile(repeat % 2 == 0 ? path : path + ".gz", o);
          ASSERT_TRUE(p.ok()) << p.status();
          ExpectSameProfile(*reference, *p);
          EXPECT_EQ(p->metadata.keys, reference->metadata.keys);
          EXPECT_EQ(p->metadata.warp_size, 32);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tracefuse

namespace tracefuse {
namespace {

// OpsDigest() is every figure of an op-level comparison, one line each.
std::string OpsDigest(const OpComparison& c) {
  std::string out;
  auto side = [&](const OpSide& s) {
    out += StrCat(" ", s.instances, " ", s.time_ns);
    for (const OpKernels& k : s.kernels) out += StrCat(" ", k.family, "x", k.count, "=", k.time_ns);
  };
  for (Side s : kSides) {
    const OpTraceSummary& t = c.traces[s];
    out += StrCat("trace ", t.kernels, " ", t.kernel_time_ns, " ", t.linked_ns, " ",
                  t.launch_only_ns, " ", t.no_launch_ns, " ", t.steps, " ", t.top_level_ops, "\n");
  }
  out += StrCat("matched ", c.matched_ops, " capped ", c.capped_steps, "\n");
  for (const OpRow& r : c.ops) {
    out += StrCat("row ", r.op, "|", r.scope, "|", r.matched, " ", r.instances);
    for (Side s : kSides) side(r.sides[s]);
    out += "\n";
  }
  for (const UnmatchedGroup& g : c.unmatched_groups) {
    out += StrCat("group ", g.step, " ", g.scope);
    for (Side s : kSides) side(g.sides[s]);
    out += "\n";
  }
  for (const MatchedInstance& m : c.top_instances) {
    out += StrCat("instance ", m.step, " ", m.index, " ", m.op);
    for (Side s : kSides) side(m.sides[s]);
    out += "\n";
  }
  return out;
}

// Shuffled() writes `path`'s trace with its events in a random (seeded) order: no thread's CPU
// events stay in time order, so its CPU side cannot be nested as it arrives.
std::string Shuffled(const testing::TempDir& dir, const std::string& path,
                     const std::string& name) {
  std::ifstream in(path);
  nlohmann::json trace = nlohmann::json::parse(in);
  std::vector<nlohmann::json> events = trace["traceEvents"].get<std::vector<nlohmann::json>>();
  std::mt19937 random(42);
  std::shuffle(events.begin(), events.end(), random);
  trace["traceEvents"] = events;
  const std::string out = dir.path() + "/" + name;
  std::ofstream(out) << trace.dump(1);
  return out;
}

// The op-level comparison reads the CPU side across chunk boundaries: its positions, nesting
// and links must not depend on how the traces were cut or on the thread count. Nested as it
// arrives (PipelineOptions::stream_cpu_side), the CPU side gives the comparison that collecting
// it whole gives, on every layout, thread count and chunk size; a trace whose CPU events are out
// of order falls back to collecting, from the chunk where it noticed, and says why.
TEST(Pipeline, StreamedCpuSideComparesAsTheAnyOrderPath) {
  testing::TempDir dir;
  const std::string amd =
      Generate(dir, "a.json", "--platform amd --steps 60 --layers 3 --layout compact");
  const std::string nvidia =
      Generate(dir, "n.json", "--platform nvidia --steps 50 --layers 3 --layout lines");
  const std::string eager1 = dir.path() + "/e1.json", eager2 = dir.path() + "/e2.json";
  auto r = testing::RunCommand(std::string(TRACEFUSE_GEN) + " --eager --platform amd -o " + eager1 +
                               " --pair-output " + eager2);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string shuffled1 = Shuffled(dir, eager1, "s1.json");
  const std::string shuffled2 = Shuffled(dir, amd, "s2.json");
  auto classifier = LoadClassifier("tracefuse");
  ASSERT_TRUE(classifier.ok());
  for (const auto& [path1, path2, in_order] :
       {std::tuple{amd, nvidia, true}, std::tuple{eager1, eager2, true},
        std::tuple{shuffled1, shuffled2, false}}) {
    SCOPED_TRACE(path1 + " against " + path2);
    PipelineOptions collected;
    collected.threads = 1;
    collected.speculative_cuts = false;
    collected.stream_cpu_side = false;
    auto reference = CompareOperators(path1, path2, *classifier, collected, OpCompareOptions());
    ASSERT_TRUE(reference.ok()) << reference.status();
    for (Side side : kSides) {
      EXPECT_EQ(reference->traces[side].host.path, CpuSidePath::kAnyOrder);
      EXPECT_EQ(reference->traces[side].host.any_order_reason, "streaming was turned off");
    }
    const std::string expected = OpsDigest(reference->ops);
    EXPECT_GT(reference->ops.matched_ops, 0u);
    if (path1 == amd) {
      // Every op of the shorter trace's steps finds its match (tools/gen.cc: per NVIDIA step, 8
      // step ops, the op around the graph launch and an aten::fill_ per eager kernel, 7 of them).
      EXPECT_EQ(reference->ops.matched_ops, 50u * (8 + 1 + 7));
    }
    for (int threads : {1, 2, 7}) {
      for (size_t chunk : {size_t{4096}, size_t{64} << 10, size_t{8} << 20}) {
        SCOPED_TRACE(StrCat(threads, " threads, chunks of ", chunk));
        PipelineOptions o;
        o.threads = threads;
        o.chunk_bytes = chunk;
        auto c = CompareOperators(path1, path2, *classifier, o, OpCompareOptions());
        ASSERT_TRUE(c.ok()) << c.status();
        EXPECT_EQ(OpsDigest(c->ops), expected);
        for (Side side : kSides) {
          const TraceHost& host = c->traces[side].host;
          if (in_order) {
            EXPECT_EQ(host.path, CpuSidePath::kStreamed);
            EXPECT_EQ(host.any_order_reason, "");
            EXPECT_EQ(host.events_read_again, 0u);
          } else {
            EXPECT_EQ(host.path, CpuSidePath::kAnyOrder);
            EXPECT_TRUE(
                absl::StrContains(host.any_order_reason, "is out of its thread's time order"))
                << host.any_order_reason;
            // Small chunks notice past the first chunk, and read the events before it again.
            if (chunk == 4096) {
              EXPECT_GT(host.events_read_again, 0u);
            }
          }
        }
      }
    }
  }
}

// Real Kineto traces write their cpu_ops, Python frames and runtime calls in separate blocks: the
// ones we know take the any-order path after a first streamed stretch. Either way they compare
// as if collected.
TEST(Pipeline, RealTracesCompareAlikeStreamedOrCollected) {
  TRACEFUSE_REQUIRE_SHARED();
  auto classifier = LoadClassifier("tracefuse");
  ASSERT_TRUE(classifier.ok());
  const std::string real = testing::SharedDir() + "/traces/real/";
  size_t compared = 0;
  for (const std::string& gz : testing::FilesIn(real, ".json.gz")) {
    if (gz.find("rocprof") != std::string::npos) continue;  // no CPU side
    SCOPED_TRACE(gz);
    PipelineOptions collected;
    collected.stream_cpu_side = false;
    auto reference = CompareOperators(gz, gz, *classifier, collected, OpCompareOptions());
    ASSERT_TRUE(reference.ok()) << reference.status();
    PipelineOptions streamed;
    streamed.chunk_bytes = size_t{256} << 10;
    auto c = CompareOperators(gz, gz, *classifier, streamed, OpCompareOptions());
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(OpsDigest(c->ops), OpsDigest(reference->ops));
    const TraceHost& host = c->traces[Side::kTrace1].host;
    if (host.path != CpuSidePath::kStreamed) {
      EXPECT_EQ(host.path, CpuSidePath::kAnyOrder);
      EXPECT_TRUE(absl::StrContains(host.any_order_reason, "is out of its thread's time order"))
          << host.any_order_reason;
    }
    ++compared;
  }
  EXPECT_GE(compared, 10u);
}

}  // namespace
}  // namespace tracefuse
