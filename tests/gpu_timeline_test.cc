#include "tracefuse/gpu_timeline.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <tuple>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_util.h"
#include "tracefuse/pipeline.h"

namespace tracefuse {
namespace {

// --- The oracle: unions by sorting and merging, overlaps by walking two unions ------------------

using Intervals = std::vector<std::pair<int64_t, int64_t>>;

Intervals Union(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals merged;
  for (const auto& [start, end] : v) {
    if (!merged.empty() && start <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, end);
    } else {
      merged.emplace_back(start, end);
    }
  }
  return merged;
}

int64_t Measure(const Intervals& merged) {
  int64_t sum = 0;
  for (const auto& [start, end] : merged) sum += end - start;
  return sum;
}

int64_t Overlap(const Intervals& a, const Intervals& b) {
  int64_t sum = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    sum +=
        std::max<int64_t>(0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    (a[i].second < b[j].second ? i : j) += 1;
  }
  return sum;
}

struct OracleActivity {
  int64_t start, end;
  GpuActivityKind kind;
};

GpuTimeFigures Oracle(const std::vector<OracleActivity>& activities) {
  GpuTimeFigures f;
  Intervals all, computation, communication, memcpy, kernels;
  f.first_start_ns = INT64_MAX;
  f.last_end_ns = INT64_MIN;
  for (const OracleActivity& a : activities) {
    ++f.activities;
    f.first_start_ns = std::min(f.first_start_ns, a.start);
    f.last_end_ns = std::max(f.last_end_ns, a.end);
    all.emplace_back(a.start, a.end);
    if (a.kind == GpuActivityKind::kComputation) computation.emplace_back(a.start, a.end);
    if (a.kind == GpuActivityKind::kCommunication) communication.emplace_back(a.start, a.end);
    if (a.kind == GpuActivityKind::kMemcpy) memcpy.emplace_back(a.start, a.end);
    if (a.kind != GpuActivityKind::kMemcpy) kernels.emplace_back(a.start, a.end);
  }
  const Intervals comp = Union(computation), comm = Union(communication), copy = Union(memcpy);
  f.busy_ns = Measure(Union(all));
  f.computation_ns = Measure(comp);
  f.communication_ns = Measure(comm);
  f.exposed_communication_ns = f.communication_ns - Overlap(comm, comp);
  f.memcpy_ns = Measure(copy);
  f.exposed_memcpy_ns = f.memcpy_ns - Overlap(copy, Union(kernels));
  return f;
}

void ExpectSameFigures(const GpuTimeFigures& want, const GpuTimeFigures& got) {
  EXPECT_EQ(want.activities, got.activities);
  EXPECT_EQ(want.first_start_ns, got.first_start_ns);
  EXPECT_EQ(want.last_end_ns, got.last_end_ns);
  EXPECT_EQ(want.busy_ns, got.busy_ns);
  EXPECT_EQ(want.computation_ns, got.computation_ns);
  EXPECT_EQ(want.communication_ns, got.communication_ns);
  EXPECT_EQ(want.exposed_communication_ns, got.exposed_communication_ns);
  EXPECT_EQ(want.memcpy_ns, got.memcpy_ns);
  EXPECT_EQ(want.exposed_memcpy_ns, got.exposed_memcpy_ns);
  EXPECT_EQ(want.idle_ns(), got.idle_ns());
}

GpuTimeFigures Swept(std::vector<OracleActivity> activities) {
  std::stable_sort(activities.begin(), activities.end(),
                   [](const auto& a, const auto& b) { return a.start < b.start; });
  DeviceSweep sweep;
  for (const OracleActivity& a : activities) EXPECT_TRUE(sweep.Add(a.start, a.end, a.kind));
  return sweep.Figures();
}

constexpr auto kComp = GpuActivityKind::kComputation;
constexpr auto kComm = GpuActivityKind::kCommunication;
constexpr auto kCopy = GpuActivityKind::kMemcpy;

// Hand-computed: computation [0,10) and [20,30); communication [5,25) (exposed [10,20));
// memcpy [28,40) (exposed [30,40)); a zero-length kernel at 45; span 0-45.
TEST(DeviceSweep, HandComputedDevice) {
  const GpuTimeFigures f =
      Swept({{0, 10, kComp}, {5, 25, kComm}, {20, 30, kComp}, {28, 40, kCopy}, {45, 45, kComp}});
  EXPECT_EQ(f.activities, 5u);
  EXPECT_EQ(f.span_ns(), 45);
  EXPECT_EQ(f.busy_ns, 40);
  EXPECT_EQ(f.computation_ns, 20);
  EXPECT_EQ(f.communication_ns, 20);
  EXPECT_EQ(f.exposed_communication_ns, 10);
  EXPECT_EQ(f.memcpy_ns, 12);
  EXPECT_EQ(f.exposed_memcpy_ns, 10);
  EXPECT_EQ(f.idle_ns(), 5);
}

TEST(DeviceSweep, MemcpyOnlyCommunicationOnlyAndNothing) {
  GpuTimeFigures f = Swept({{100, 150, kCopy}, {120, 130, kCopy}, {200, 210, kCopy}});
  EXPECT_EQ(f.memcpy_ns, 60);
  EXPECT_EQ(f.exposed_memcpy_ns, 60);
  EXPECT_EQ(f.busy_ns, 60);
  EXPECT_EQ(f.idle_ns(), 50);
  f = Swept({{0, 10, kComm}, {10, 20, kComm}});
  EXPECT_EQ(f.communication_ns, 20);
  EXPECT_EQ(f.exposed_communication_ns, 20);
  EXPECT_EQ(f.computation_ns, 0);
  EXPECT_EQ(f.idle_ns(), 0);
  f = DeviceSweep().Figures();
  EXPECT_EQ(f.activities, 0u);
  EXPECT_EQ(f.span_ns(), 0);
  EXPECT_EQ(f.busy_ns, 0);
}

TEST(DeviceSweep, RefusesAnActivityStartingBeforeTheLast) {
  DeviceSweep sweep;
  EXPECT_TRUE(sweep.Add(10, 20, kComp));
  EXPECT_TRUE(sweep.Add(10, 12, kComm));  // the same start is in order
  EXPECT_FALSE(sweep.Add(9, 30, kComp));
  EXPECT_EQ(sweep.Figures().activities, 2u);
  EXPECT_EQ(sweep.Figures().last_end_ns, 20);
}

// 500 random devices: nested, overlapping, touching and zero-length activities of every kind.
TEST(DeviceSweep, EqualsTheOracleOnRandomDevices) {
  std::mt19937_64 rng(29);
  for (int device = 0; device < 500; ++device) {
    std::vector<OracleActivity> activities;
    const int n = static_cast<int>(rng() % 60);
    const int64_t horizon = 1 + static_cast<int64_t>(rng() % 1000);
    for (int i = 0; i < n; ++i) {
      const int64_t start = static_cast<int64_t>(rng() % horizon) - 500;
      const int64_t length = rng() % 5 == 0 ? 0 : static_cast<int64_t>(rng() % 200);
      activities.push_back({start, start + length, static_cast<GpuActivityKind>(rng() % 3)});
    }
    SCOPED_TRACE("device " + std::to_string(device));
    const GpuTimeFigures want = Oracle(activities);
    if (activities.empty()) {
      EXPECT_EQ(Swept(activities).activities, 0u);
    } else {
      ExpectSameFigures(want, Swept(activities));
    }
  }
}

// Append(): a device's activities split anywhere and swept in two parts join to the sweep of
// the whole when the second part starts after the first has ended, and are refused otherwise.
TEST(DeviceSweep, AppendJoinsPartsThatDoNotOverlap) {
  std::mt19937_64 rng(31);
  int joined = 0, refused = 0;
  for (int device = 0; device < 500; ++device) {
    std::vector<OracleActivity> activities;
    int64_t at = static_cast<int64_t>(rng() % 100);
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      at += static_cast<int64_t>(rng() % 30);
      const int64_t length = static_cast<int64_t>(rng() % 40);
      activities.push_back({at, at + length, static_cast<GpuActivityKind>(rng() % 3)});
    }
    const size_t split = rng() % (activities.size() + 1);
    DeviceSweep first, second;
    int64_t first_end = INT64_MIN;
    for (size_t i = 0; i < activities.size(); ++i) {
      const OracleActivity& a = activities[i];
      (i < split ? first : second).Add(a.start, a.end, a.kind);
      if (i < split) first_end = std::max(first_end, a.end);
    }
    const bool apart =
        split == 0 || split == activities.size() || first_end <= activities[split].start;
    const GpuTimeFigures before = first.Figures();
    SCOPED_TRACE("device " + std::to_string(device));
    ASSERT_EQ(first.Append(second), apart);
    if (apart) {
      ++joined;
      ExpectSameFigures(Oracle(activities), first.Figures());
    } else {
      ++refused;
      ExpectSameFigures(before, first.Figures());
    }
  }
  EXPECT_GT(joined, 100);
  EXPECT_GT(refused, 100);
}

// --- Traces: the oracle over the whole JSON in memory --------------------------------------------

std::string ReadMaybeGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

// Nanos() is a JSON number of microseconds in nanoseconds, from its shortest decimal form.
int64_t Nanos(const nlohmann::json& us) {
  if (us.is_number_integer()) return us.get<int64_t>() * 1000;
  const std::string text = us.dump();
  const size_t dot = text.find('.');
  if (text.find_first_of("eE") != std::string::npos || dot == std::string::npos) {
    return std::llround(us.get<double>() * 1000);
  }
  const bool negative = text[0] == '-';
  std::string fraction = text.substr(dot + 1) + "0000";
  int64_t ns =
      std::stoll(text.substr(negative, dot - negative)) * 1000 + std::stoll(fraction.substr(0, 3));
  ns += fraction[3] >= '5';
  return negative ? -ns : ns;
}

// OracleCollective is a communication kernel as the oracle sees it: device, start, duration,
// name.
using OracleCollective = std::tuple<int32_t, int64_t, int64_t, std::string>;

std::map<int32_t, GpuTimeFigures> OracleOfTrace(const std::string& path,
                                                const TraceProfile& profile,
                                                std::vector<OracleCollective>* collectives) {
  const nlohmann::json trace = nlohmann::json::parse(ReadMaybeGzip(path));
  const nlohmann::json& events = trace.is_array() ? trace : trace.at("traceEvents");
  std::map<int32_t, std::vector<OracleActivity>> devices;
  for (const nlohmann::json& e : events) {
    const std::string cat =
        e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
    const bool kernel = cat == "kernel" || cat == "Kernel";
    const bool transfer =
        cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Memcpy" || cat == "Memset";
    if (!kernel && !transfer) continue;
    if (!e.contains("ts") || !e["ts"].is_number() || !e.contains("dur") || !e["dur"].is_number())
      continue;
    const int64_t ts = Nanos(e["ts"]), dur = Nanos(e["dur"]);
    if (dur < 0) continue;
    int32_t device = -1;
    if (e.contains("args") && e["args"].is_object() && e["args"].contains("device") &&
        e["args"]["device"].is_number_integer()) {
      device = e["args"]["device"].get<int32_t>();
    } else if (e.contains("pid") && e["pid"].is_number_unsigned()) {
      device = e["pid"].get<int32_t>();
    }
    GpuActivityKind kind = kCopy;
    if (kernel) {
      const std::string name =
          e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
      const RuleId rule = profile.classifier->Classify(name, profile.platform);
      kind = profile.classifier->category_name(profile.classifier->category_of(rule)) ==
                     "Communication"
                 ? kComm
                 : kComp;
      if (kind == kComm) collectives->emplace_back(device, ts, dur, name);
    }
    devices[device].push_back({ts, ts + dur, kind});
  }
  std::map<int32_t, GpuTimeFigures> figures;
  for (const auto& [device, activities] : devices) figures[device] = Oracle(activities);
  return figures;
}

std::shared_ptr<const Classifier> TracefuseRules() {
  return *Classifier::Create(*RuleSet::Load("tracefuse"));
}

TraceProfile ProfileOf(const std::string& path, int threads, size_t chunk_bytes) {
  PipelineOptions o;
  o.threads = threads;
  o.chunk_bytes = chunk_bytes;
  auto profiles = ProfileTraces({path}, TracefuseRules(), o);
  EXPECT_TRUE(profiles.ok()) << profiles.status();
  return profiles.ok() ? std::move(profiles->front()) : TraceProfile();
}

void ExpectOracle(const std::string& path, const TraceProfile& p) {
  std::vector<OracleCollective> want_collectives, got_collectives;
  const std::map<int32_t, GpuTimeFigures> want = OracleOfTrace(path, p, &want_collectives);
  for (size_t i = 0; i < p.gpu_timeline.collectives.size(); ++i) {
    const Collective& c = p.gpu_timeline.collectives[i];
    got_collectives.emplace_back(c.device, c.start_ns, c.duration_ns, p.names[c.name]);
    if (i > 0) {  // by device and start
      const Collective& b = p.gpu_timeline.collectives[i - 1];
      EXPECT_TRUE(b.device < c.device || (b.device == c.device && b.start_ns <= c.start_ns)) << i;
    }
  }
  // Ties in start may come in either order.
  std::sort(want_collectives.begin(), want_collectives.end());
  std::sort(got_collectives.begin(), got_collectives.end());
  EXPECT_EQ(want_collectives, got_collectives);
  ASSERT_EQ(p.gpu_timeline.devices.size(), want.size());
  for (const DeviceTimeline& d : p.gpu_timeline.devices) {
    SCOPED_TRACE("device " + std::to_string(d.device));
    ASSERT_TRUE(want.count(d.device));
    ExpectSameFigures(want.at(d.device), d.figures);
  }
}

std::string Generate(const testing::TempDir& dir, const std::string& name,
                     const std::string& flags) {
  const std::string path = dir.path() + "/" + name;
  EXPECT_EQ(testing::RunCommand(std::string(TRACEFUSE_GEN) + " " + flags + " -o " + path).exit_code,
            0);
  return path;
}

// ShuffleGpuEvents() writes `path`'s trace with its GPU events in a random order, among the rest.
std::string ShuffleGpuEvents(const std::string& path, const std::string& out, uint64_t seed) {
  nlohmann::json trace = nlohmann::json::parse(ReadMaybeGzip(path));
  nlohmann::json& events = trace["traceEvents"];
  std::vector<size_t> gpu;
  for (size_t i = 0; i < events.size(); ++i) {
    const std::string cat = events[i].value("cat", "");
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") gpu.push_back(i);
  }
  std::vector<size_t> order = gpu;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  nlohmann::json shuffled = events;
  for (size_t i = 0; i < gpu.size(); ++i) shuffled[gpu[i]] = events[order[i]];
  events = std::move(shuffled);
  std::ofstream(out) << trace.dump(1);
  return out;
}

// Every layout, thread count and chunk size gives the oracle's figures, streamed; the same trace
// with its GPU events shuffled is read again and collected, with the same figures.
TEST(GpuTimeline, GeneratedTracesEqualTheOracle) {
  testing::TempDir dir;
  for (const char* layout : {"kineto", "lines", "compact"}) {
    const std::string path = Generate(
        dir, std::string(layout) + ".json",
        std::string("--platform nvidia --steps 30 --eager-per-step 9 --seed 3 --layout ") + layout);
    for (const auto& [threads, chunk] :
         {std::tuple{1, size_t{8} << 20}, std::tuple{2, size_t{4} << 10},
          std::tuple{7, size_t{64} << 10}}) {
      SCOPED_TRACE(std::string(layout) + " threads " + std::to_string(threads) + " chunk " +
                   std::to_string(chunk));
      const TraceProfile p = ProfileOf(path, threads, chunk);
      EXPECT_EQ(p.gpu_timeline.path, GpuTimelinePath::kStreamed);
      ASSERT_EQ(p.gpu_timeline.devices.size(), 1u);
      EXPECT_GT(p.gpu_timeline.devices[0].figures.memcpy_ns, 0);
      ExpectOracle(path, p);
    }
  }
  const std::string shuffled =
      ShuffleGpuEvents(dir.path() + "/kineto.json", dir.path() + "/shuffled.json", 5);
  for (int threads : {1, 7}) {
    const TraceProfile p = ProfileOf(shuffled, threads, size_t{64} << 10);
    EXPECT_EQ(p.gpu_timeline.path, GpuTimelinePath::kCollected);
    EXPECT_TRUE(absl::StartsWith(p.gpu_timeline.collected_reason,
                                 "device 0's events are out of start order near byte "))
        << p.gpu_timeline.collected_reason;
    ExpectOracle(shuffled, p);
  }
}

// Crafted: two devices interleaved (one by args.device, one by pid), communication-only and
// memcpy-only devices, zero-length, overlapping and nested events, and events left out.
TEST(GpuTimeline, CraftedDevicesEqualTheOracle) {
  testing::TempDir dir;
  const std::string path = dir.File("crafted.json", R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 10, "dur": 5, "args": {"device": 0}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32", "pid": 3, "ts": 11, "dur": 20},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32", "pid": 0, "ts": 12, "dur": 10.5, "args": {"device": 0}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 5, "ts": 12, "dur": 3, "args": {"device": 5}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 13, "dur": 0, "args": {"device": 0}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 0, "ts": 20, "dur": 8.25, "args": {"device": 0}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH", "pid": 5, "ts": 13, "dur": 1},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather", "pid": 3, "ts": 40, "dur": 2.001},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 30, "dur": "x", "args": {"device": 0}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 31, "dur": -1, "args": {"device": 0}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy", "pid": 5, "ts": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 100}
  ]})");
  for (int threads : {1, 2}) {
    const TraceProfile p = ProfileOf(path, threads, size_t{4} << 10);
    ASSERT_EQ(p.gpu_timeline.devices.size(), 3u);
    EXPECT_EQ(p.gpu_timeline.events_skipped, 3u);
    ExpectOracle(path, p);
    const GpuTimeFigures& d0 = p.gpu_timeline.devices[0].figures;
    EXPECT_EQ(d0.span_ns(), 18250);
    EXPECT_EQ(d0.exposed_communication_ns, 7500);
    EXPECT_EQ(p.gpu_timeline.devices[1].figures.exposed_communication_ns, 22001);
    EXPECT_EQ(p.gpu_timeline.devices[2].figures.exposed_memcpy_ns, 3000);
  }
  const std::string none = dir.File("none.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 100}]})");
  const TraceProfile p = ProfileOf(none, 1, size_t{2} << 20);
  EXPECT_TRUE(p.gpu_timeline.devices.empty());
  EXPECT_EQ(p.gpu_timeline.path, GpuTimelinePath::kStreamed);
}

// Every real trace of ../shared, at two thread counts and chunk sizes.
TEST(GpuTimeline, RealTracesEqualTheOracle) {
  TRACEFUSE_REQUIRE_SHARED();
  std::vector<std::string> traces =
      testing::FilesIn(testing::SharedDir() + "/traces/real", ".json.gz");
  for (const std::string& pair : testing::FilesIn(testing::SharedDir() + "/golden/fusion", "")) {
    traces.push_back(pair + "/trace1.json.gz");
    traces.push_back(pair + "/trace2.json.gz");
  }
  int collected = 0;
  for (const std::string& path : traces) {
    if (path.find("rocprof") != std::string::npos) continue;  // not a Kineto trace
    for (const auto& [threads, chunk] :
         {std::tuple{1, size_t{2} << 20}, std::tuple{7, size_t{64} << 10}}) {
      SCOPED_TRACE(path + " threads " + std::to_string(threads));
      const TraceProfile p = ProfileOf(path, threads, chunk);
      ExpectOracle(path, p);
      collected += p.gpu_timeline.path == GpuTimelinePath::kCollected;
    }
  }
  EXPECT_GT(collected, 0);  // the traces whose events are out of order took the other path
}

// From a pipe, which cannot be read twice, the activities are collected from the start.
TEST(GpuTimeline, StandardInputIsCollected) {
  testing::TempDir dir;
  const std::string path = Generate(dir, "t.json", "--platform amd --steps 8 --seed 2");
  const std::string stats = std::string(TRACEFUSE_BINARY) + " stats --format json --threads 2 ";
  const testing::RunResult from_file = testing::RunCommand(stats + path);
  const testing::RunResult from_pipe = testing::RunCommand(stats + "-", testing::ReadFile(path));
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  ASSERT_EQ(from_pipe.exit_code, 0) << from_pipe.err;
  nlohmann::json file = nlohmann::json::parse(from_file.out)["gpu_timeline"];
  nlohmann::json pipe = nlohmann::json::parse(from_pipe.out)["gpu_timeline"];
  EXPECT_EQ(file["path"], "streamed");
  EXPECT_EQ(pipe["path"], "collected");
  EXPECT_EQ(pipe["collected_reason"], "the input cannot be read twice");
  EXPECT_EQ(file["devices"], pipe["devices"]);
  EXPECT_EQ(file["devices"].size(), 1u);
}

}  // namespace
}  // namespace tracefuse
