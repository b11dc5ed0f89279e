#include "tracefuse/reduce/gpu_timeline.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <tuple>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_util.h"
#include "tracefuse/pipeline/flow_graph.h"
#include "tracefuse/reduce/launch_join.h"

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

// SortByDeviceAndStart() puts a chunk's kernels and transfers, each already in order, where a
// stable sort puts them: ties between the two halves keep the kernels first. Also when the halves
// come unsorted, and with or without the caller's scratch (kept full from the run before).
TEST(SortByDeviceAndStart, OrdersTwoHalvesAsAStableSortDoes) {
  std::mt19937_64 rng(31);
  auto before = [](const GpuActivity& a, const GpuActivity& b) {
    return a.device != b.device ? a.device < b.device : a.start_ns < b.start_ns;
  };
  std::vector<GpuActivity> scratch;
  for (int round = 0; round < 2000; ++round) {
    const size_t n = rng() % 40, middle = n == 0 ? 0 : rng() % (n + 1);
    const bool sorted_halves = rng() % 4 != 0;
    std::vector<GpuActivity> activities(n);
    for (size_t i = 0; i < n; ++i) {
      // Few devices and starts, so that ties are common; `name` tells the activities apart.
      activities[i] = GpuActivity{static_cast<int64_t>(rng() % 8), 0,
                                  static_cast<int32_t>(rng() % 3), static_cast<uint32_t>(i)};
    }
    if (sorted_halves) {
      std::stable_sort(activities.begin(), activities.begin() + middle, before);
      std::stable_sort(activities.begin() + middle, activities.end(), before);
    }
    std::vector<GpuActivity> want = activities;
    std::stable_sort(want.begin(), want.end(), before);
    SCOPED_TRACE("round " + std::to_string(round));
    SortByDeviceAndStart(&activities, middle, round % 2 == 0 ? &scratch : nullptr);
    ASSERT_EQ(activities.size(), want.size());
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(activities[i].device, want[i].device);
      EXPECT_EQ(activities[i].start_ns, want[i].start_ns);
      // Unsorted halves go through std::sort, which keeps no order among ties.
      if (sorted_halves) {
        EXPECT_EQ(activities[i].name, want[i].name) << "at " << i;
      }
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

// --- StepTimeline ----------------------------------------------------------------------------

// StepComputation() is each step's computation on `device` after Finish(), by step.
std::vector<int64_t> StepComputation(StepTimeline* timeline, int32_t device, size_t steps) {
  GpuTimeline finished;
  finished.devices.resize(1);
  finished.devices[0].device = device;
  EXPECT_TRUE(timeline->Finish(&finished));
  EXPECT_EQ(finished.steps.size(), steps);
  std::vector<int64_t> out(steps);
  for (const StepFigures& s : finished.devices[0].steps) out[s.step] = s.figures.computation_ns;
  return out;
}

// Launches of other threads come behind the highest id: before every run, at a run's first id,
// inside a run and at its last; each id keeps the step its launch starts in.
TEST(StepTimeline, LaunchesBehindTheHighestSplitTheirRuns) {
  StepTimeline timeline;
  for (int64_t start : {0, 100, 200}) ASSERT_TRUE(timeline.AddStep("step", start, start + 100));
  const std::vector<std::pair<int64_t, int64_t>> launches = {
      {10, 5},   {110, 8}, {210, 12}, {20, 3},  {150, 4},  {250, 9},
      {120, 10}, {5, 2},   {260, 1},  {180, 7}, {290, 13}, {50, 15}};
  for (const auto& [ts, correlation] : launches) ASSERT_TRUE(timeline.AddLaunch(ts, correlation));
  // Activity `correlation` lasts `correlation` ns, so that a step's computation sums its ids.
  int64_t start = 1000;
  for (const auto& launch : launches) {
    const int64_t correlation = launch.second;
    ASSERT_TRUE(timeline.AddActivity(
        StepActivity{start, start + correlation, correlation, 0, GpuActivityKind::kComputation}));
    start += 100;
  }
  EXPECT_EQ(StepComputation(&timeline, 0, 3),
            (std::vector<int64_t>{2 + 3 + 5 + 15, 4 + 7 + 8 + 10, 1 + 9 + 12 + 13}));
}

// Events whose launches never come are set aside, then dropped to ranges of ids past kKeptAside:
// what waits stays bounded, a set-aside event is still swept when its launch comes, and the
// launch of a dropped one is refused.
TEST(StepTimeline, EventsNeverLaunchedAreDroppedInBoundedMemory) {
  StepTimeline timeline;
  ASSERT_TRUE(timeline.AddStep("step", 0, int64_t{1} << 40));
  const int64_t n = 3 * StepTimeline::kKeptAside;
  for (int64_t i = 1; i <= n; ++i) {
    timeline.NextChunk();
    ASSERT_TRUE(timeline.AddLaunch(i, 2 * i));
    ASSERT_TRUE(timeline.Release());
    // Device 1's event of the odd id before: launched by nothing (yet).
    ASSERT_TRUE(timeline.AddActivity(
        StepActivity{10 * i, 10 * i + 1, 2 * i - 1, 1, GpuActivityKind::kComputation}));
    ASSERT_TRUE(timeline.AddActivity(
        StepActivity{10 * i, 10 * i + 2, 2 * i, 0, GpuActivityKind::kComputation}));
  }
  EXPECT_LE(timeline.pending(), 2 * StepTimeline::kKeptAside);
  EXPECT_FALSE(timeline.AddLaunch(n + 1, 1));  // the first: dropped
  timeline.NextChunk();
  ASSERT_TRUE(timeline.AddLaunch(n + 2, 2 * n - 1));  // the last: set aside
  ASSERT_TRUE(timeline.Release());
  GpuTimeline finished;
  finished.devices.resize(2);
  finished.devices[1].device = 1;
  ASSERT_TRUE(timeline.Finish(&finished));
  const std::vector<DeviceTimeline>& devices = finished.devices;
  ASSERT_EQ(devices[0].steps.size(), 1u);
  EXPECT_EQ(devices[0].steps[0].figures.activities, static_cast<uint64_t>(n));
  ASSERT_EQ(devices[1].steps.size(), 1u);
  EXPECT_EQ(devices[1].steps[0].figures.activities, 1u);
  EXPECT_EQ(devices[1].steps[0].figures.computation_ns, 1);
}

// Dropped ids at both ends of int64: ranges of their own (the gap between them is not measured
// by a signed difference), and the launch of each is refused.
TEST(StepTimeline, DroppedIdsAtBothEndsOfTheRange) {
  StepTimeline timeline;
  ASSERT_TRUE(timeline.AddStep("step", 0, 1000));
  ASSERT_TRUE(timeline.AddLaunch(1, INT64_MAX));
  const int64_t half = StepTimeline::kKeptAside;
  for (int64_t i = 0; i < 2 * half; ++i) {  // the lowest kKeptAside: all negative but the last
    const int64_t correlation = i < half - 1 ? INT64_MIN + 1 + i : INT64_MAX - 2 * half + i;
    ASSERT_TRUE(timeline.AddActivity(
        StepActivity{i, i + 1, correlation, 0, GpuActivityKind::kComputation}));
  }
  EXPECT_LE(timeline.pending(), half + 2);
  EXPECT_FALSE(timeline.AddLaunch(2, INT64_MIN + 1));
  EXPECT_FALSE(timeline.AddLaunch(3, INT64_MAX - half - 1));
  EXPECT_TRUE(timeline.AddLaunch(4, INT64_MAX - half));  // kept whole
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

// OracleTimeline is a trace's figures as the oracle sees them: per device, and per device and
// step (the step's name, in step order).
struct OracleTimeline {
  std::map<int32_t, GpuTimeFigures> devices;
  std::map<int32_t, std::vector<std::pair<std::string, GpuTimeFigures>>> steps;
  std::map<int32_t, IdleSplit> idle;
  std::map<int32_t, std::vector<LaunchStats>> launches;
  std::map<int32_t, TraceIntegrity> integrity;
  // Per device, per step it ran in (as `steps`): the idle split and integrity of its activities.
  std::map<int32_t, std::vector<std::pair<IdleSplit, TraceIntegrity>>> step_idle;
  std::vector<LaunchStats> all_launches;  // over all devices
  std::vector<CpuOpTime> all_cpu_ops;     // over all devices
};

// OracleLaunch is a launch as the oracle sees it: the first runtime or driver call of its
// correlation id with a numeric ts (a dur that is no number, or negative, counts as 0).
struct OracleLaunch {
  int64_t ts = 0, dur = 0;
  std::string api;
  std::string thread;  // its pid and tid
};

// OracleThread() is an event's thread as the oracle names it.
std::string OracleThread(const nlohmann::json& e) {
  return e.value("pid", nlohmann::json()).dump() + "\t" + e.value("tid", nlohmann::json()).dump();
}

// OracleOp is a top-level cpu_op: no other cpu_op of its thread encloses it.
struct OracleOp {
  int64_t start = 0, end = 0;
  std::string name;
};
// OracleCpuOps is each thread's top-level cpu_ops by start, and the longest one's length.
struct OracleCpuOps {
  std::map<std::string, std::vector<OracleOp>> threads;
  std::map<std::string, int64_t> longest;
};

// OracleCpuOpsOf() reads the cpu_ops of positive length with numeric times (ProfilerStep#N ones
// are steps), and keeps those no other one of their thread encloses (starts at or before it and
// ends at or after it; of identical ones, the first in the trace).
OracleCpuOps OracleCpuOpsOf(const nlohmann::json& events) {
  std::map<std::string, std::vector<OracleOp>> all;
  for (const nlohmann::json& e : events) {
    const std::string cat = e.value("cat", "");
    if (cat != "cpu_op" && cat != "Operator") continue;
    if (!e.contains("ts") || !e["ts"].is_number() || !e.contains("dur") || !e["dur"].is_number())
      continue;
    const std::string name =
        e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    if (absl::StartsWith(name, "ProfilerStep#") || Nanos(e["dur"]) <= 0) continue;
    all[OracleThread(e)].push_back(
        OracleOp{Nanos(e["ts"]), Nanos(e["ts"]) + Nanos(e["dur"]), name});
  }
  OracleCpuOps out;
  for (auto& [thread, ops] : all) {
    std::stable_sort(ops.begin(), ops.end(), [](const OracleOp& a, const OracleOp& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    int64_t furthest = INT64_MIN;
    for (const OracleOp& op : ops) {
      if (op.end <= furthest) continue;
      furthest = op.end;
      out.threads[thread].push_back(op);
      out.longest[thread] = std::max(out.longest[thread], op.end - op.start);
    }
  }
  return out;
}

// OracleStart is an activity as the idle split sees it: start, end, correlation id (if any).
struct OracleStart {
  int64_t start = 0, end = 0;
  std::optional<int64_t> correlation;
  int32_t stream = -1;
};

std::map<int64_t, OracleLaunch> OracleLaunches(const nlohmann::json& events) {
  std::map<int64_t, OracleLaunch> launches;
  for (const nlohmann::json& e : events) {
    const std::string cat = e.value("cat", "");
    if (cat != "cuda_runtime" && cat != "Runtime" && cat != "cuda_driver") continue;
    if (!e.contains("ts") || !e["ts"].is_number() || !e.contains("args") ||
        !e["args"].is_object() || !e["args"].contains("correlation") ||
        !e["args"]["correlation"].is_number_integer()) {
      continue;
    }
    const int64_t dur = e.contains("dur") && e["dur"].is_number() ? Nanos(e["dur"]) : 0;
    launches.emplace(
        e["args"]["correlation"].get<int64_t>(),
        OracleLaunch{
            Nanos(e["ts"]), std::max<int64_t>(dur, 0),
            e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "",
            OracleThread(e)});
  }
  return launches;
}

// The ceil(q * n)-th smallest of `values` for q = 1/2, 9/10 and 1.
Quantiles OracleQuantiles(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  // ceil(n * numerator / denominator), in integers.
  auto rank = [&](size_t numerator, size_t denominator) {
    return values[(values.size() * numerator + denominator - 1) / denominator - 1];
  };
  return Quantiles{rank(1, 2), rank(9, 10), values.back()};
}

// OracleIdle() is the definition of IdleSplit (gpu_timeline.h) read literally: the gaps between
// the union of a device's activities, each split by the launch that ended first (the lowest id of
// those) among those of the activities starting at its end; its cpu_ops, the top-level cpu_ops of
// that launch's thread by their time inside each gap's cpu_wait part.
// AddOracleCpuOps() adds the time each top-level cpu_op of `thread` spends in [g0, c).
void AddOracleCpuOps(const OracleCpuOps& cpu, const std::string& thread, int64_t g0, int64_t c,
                     std::map<std::string, int64_t>* op_times) {
  auto ops = cpu.threads.find(thread);
  if (ops == cpu.threads.end()) return;
  // Those that start after g0 - the longest op, and before c.
  auto op = std::lower_bound(ops->second.begin(), ops->second.end(), g0 - cpu.longest.at(thread),
                             [](const OracleOp& o, int64_t t) { return o.start < t; });
  for (; op != ops->second.end() && op->start < c; ++op) {
    const int64_t overlap = std::min(op->end, c) - std::max(op->start, g0);
    if (overlap > 0) (*op_times)[op->name] += overlap;
  }
}

// OracleTopOps() is the kCpuOpsListed ops of most time, by time then name.
std::vector<CpuOpTime> OracleTopOps(const std::map<std::string, int64_t>& op_times) {
  std::vector<CpuOpTime> top;
  for (const auto& [name, ns] : op_times) top.push_back(CpuOpTime{name, ns});
  std::stable_sort(top.begin(), top.end(),
                   [](const CpuOpTime& a, const CpuOpTime& b) { return a.ns > b.ns; });
  if (top.size() > kCpuOpsListed) top.resize(kCpuOpsListed);
  return top;
}

// `all_op_times`, when given, gets each op's time added.
IdleSplit OracleIdle(std::vector<OracleStart> activities,
                     const std::map<int64_t, OracleLaunch>& launches, const OracleCpuOps& cpu,
                     std::map<std::string, int64_t>* all_op_times = nullptr) {
  std::sort(activities.begin(), activities.end(),
            [](const OracleStart& a, const OracleStart& b) { return a.start < b.start; });
  IdleSplit idle;
  std::map<std::string, int64_t> op_times;
  int64_t busy_end = activities.empty() ? 0 : activities[0].end;
  for (size_t i = 1; i < activities.size(); ++i) {
    const int64_t g0 = busy_end, g1 = activities[i].start;
    if (g1 > g0) {
      std::optional<std::pair<int64_t, int64_t>> e;  // the launch's end, and its id
      for (size_t j = i; j < activities.size() && activities[j].start == g1; ++j) {
        if (!activities[j].correlation) continue;
        auto l = launches.find(*activities[j].correlation);
        if (l == launches.end()) continue;
        const std::pair end(l->second.ts + l->second.dur, l->first);
        e = e ? std::min(*e, end) : end;
      }
      ++idle.gaps;
      if (!e) {
        idle.unattributed_ns += g1 - g0;
      } else {
        const int64_t c = std::clamp(e->first, g0, g1);
        idle.cpu_wait_ns += c - g0;
        idle.launch_latency_ns += g1 - c;
        AddOracleCpuOps(cpu, launches.at(e->second).thread, g0, c, &op_times);
      }
    }
    busy_end = std::max(busy_end, activities[i].end);
  }
  idle.cpu_ops = OracleTopOps(op_times);
  if (all_op_times != nullptr) {
    for (const auto& [name, ns] : op_times) (*all_op_times)[name] += ns;
  }
  return idle;
}

// OracleIntegrity() is TraceIntegrity's definition: per stream, by start, the activities of
// positive length that start before the furthest end of the earlier ones, with the time they
// overlap them, and the activities that start before their launch, with their durations.
TraceIntegrity OracleIntegrity(std::vector<OracleStart> activities,
                               const std::map<int64_t, OracleLaunch>& launches) {
  std::sort(activities.begin(), activities.end(),
            [](const OracleStart& a, const OracleStart& b) { return a.start < b.start; });
  TraceIntegrity out;
  std::map<int32_t, int64_t> stream_end;
  for (const OracleStart& a : activities) {
    out.activity_ns += a.end - a.start;
    if (a.stream >= 0 && a.end > a.start) {
      auto it = stream_end.find(a.stream);
      if (it != stream_end.end() && a.start < it->second) {
        ++out.same_stream_overlaps;
        out.same_stream_overlap_ns += std::min(it->second, a.end) - a.start;
        out.involved_ns += std::min(it->second, a.end) - a.start;
      }
      stream_end[a.stream] = it == stream_end.end() ? a.end : std::max(it->second, a.end);
    }
    if (a.correlation && launches.count(*a.correlation) &&
        a.start < launches.at(*a.correlation).ts) {
      ++out.before_launch;
      out.involved_ns += a.end - a.start;
    }
  }
  return out;
}

// OracleLaunchStats() is LaunchStats' definition: per API, each launch with an activity on a
// device of `devices` (each device's activities), once per such device, its dur and the start of
// its first activity there minus its end.
std::vector<LaunchStats> OracleLaunchStats(
    const std::vector<const std::vector<OracleStart>*>& devices,
    const std::map<int64_t, OracleLaunch>& launches) {
  std::map<std::string, std::pair<std::vector<int64_t>, std::vector<int64_t>>> by_api;
  for (const std::vector<OracleStart>* activities : devices) {
    std::map<int64_t, int64_t> first_start;
    for (const OracleStart& a : *activities) {
      if (!a.correlation || !launches.count(*a.correlation)) continue;
      auto [it, inserted] = first_start.emplace(*a.correlation, a.start);
      if (!inserted) it->second = std::min(it->second, a.start);
    }
    for (const auto& [correlation, start] : first_start) {
      const OracleLaunch& l = launches.at(correlation);
      by_api[l.api].first.push_back(l.dur);
      by_api[l.api].second.push_back(start - (l.ts + l.dur));
    }
  }
  std::vector<LaunchStats> out;
  for (const auto& [api, values] : by_api) {
    out.push_back(LaunchStats{api, values.first.size(), OracleQuantiles(values.first),
                              OracleQuantiles(values.second)});
  }
  return out;
}

// OracleSteps() gives each correlation id its step's index in `steps` (the top-level step
// annotations, by start): the step inside which its first launch starts. HTA's definition.
std::map<int64_t, size_t> OracleSteps(const nlohmann::json& events,
                                      std::vector<std::pair<std::string, Intervals>>* steps) {
  struct Step {
    int64_t start, end;
    std::string name;
  };
  std::vector<Step> all;
  std::vector<std::pair<int64_t, int64_t>> launches;  // correlation, ts; in trace order
  auto is_number = [](const nlohmann::json& e, const char* key) {
    return e.contains(key) && e[key].is_number();
  };
  for (const nlohmann::json& e : events) {
    const std::string cat = e.value("cat", "");
    const std::string name =
        e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    const bool step =
        (cat == "user_annotation" && IsStepAnnotation(name)) ||
        ((cat == "cpu_op" || cat == "Operator") && absl::StartsWith(name, "ProfilerStep#"));
    if (step && is_number(e, "ts") && is_number(e, "dur") && Nanos(e["dur"]) >= 0) {
      all.push_back({Nanos(e["ts"]), Nanos(e["ts"]) + Nanos(e["dur"]), name});
    }
    const bool launch = cat == "cuda_runtime" || cat == "Runtime" || cat == "cuda_driver";
    if (launch && is_number(e, "ts") && e.contains("args") && e["args"].is_object() &&
        e["args"].contains("correlation") && e["args"]["correlation"].is_number_integer()) {
      launches.emplace_back(e["args"]["correlation"].get<int64_t>(), Nanos(e["ts"]));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Step& a, const Step& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  std::vector<Step> top;
  for (const Step& s : all) {
    if (top.empty() || s.start >= top.back().end) top.push_back(s);
  }
  for (const Step& s : top) steps->push_back({s.name, {{s.start, s.end}}});
  std::map<int64_t, size_t> step_of;
  std::set<int64_t> seen;
  for (const auto& [correlation, ts] : launches) {
    if (!seen.insert(correlation).second) continue;
    for (size_t i = 0; i < top.size(); ++i) {
      if (top[i].start <= ts && ts < top[i].end) step_of[correlation] = i;
    }
  }
  return step_of;
}

OracleTimeline OracleOfTrace(const std::string& path, const TraceProfile& profile,
                             std::vector<OracleCollective>* collectives) {
  const nlohmann::json trace = nlohmann::json::parse(ReadMaybeGzip(path));
  const nlohmann::json& events = trace.is_array() ? trace : trace.at("traceEvents");
  std::vector<std::pair<std::string, Intervals>> steps;
  const std::map<int64_t, size_t> step_of = OracleSteps(events, &steps);
  std::map<int32_t, std::vector<OracleActivity>> devices;
  std::map<int32_t, std::vector<OracleStart>> device_starts;
  std::map<int32_t, std::map<size_t, std::vector<OracleActivity>>> device_steps;
  std::map<int32_t, std::map<size_t, std::vector<OracleStart>>> device_step_starts;
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
    device_starts[device].push_back({ts, ts + dur, std::nullopt, -1});
    if (e.contains("args") && e["args"].is_object() && e["args"].contains("stream") &&
        e["args"]["stream"].is_number_integer()) {
      device_starts[device].back().stream = e["args"]["stream"].get<int32_t>();
    }
    if (e.contains("args") && e["args"].is_object() && e["args"].contains("correlation") &&
        e["args"]["correlation"].is_number_integer()) {
      device_starts[device].back().correlation = e["args"]["correlation"].get<int64_t>();
      auto step = step_of.find(e["args"]["correlation"].get<int64_t>());
      if (step != step_of.end()) {
        device_steps[device][step->second].push_back({ts, ts + dur, kind});
        device_step_starts[device][step->second].push_back(device_starts[device].back());
      }
    }
  }
  OracleTimeline out;
  for (const auto& [device, activities] : devices) out.devices[device] = Oracle(activities);
  const std::map<int64_t, OracleLaunch> launches = OracleLaunches(events);
  const OracleCpuOps cpu = OracleCpuOpsOf(events);
  std::vector<const std::vector<OracleStart>*> all_devices;
  std::map<std::string, int64_t> all_op_times;
  for (const auto& [device, starts] : device_starts) {
    out.idle[device] = OracleIdle(starts, launches, cpu, &all_op_times);
    out.launches[device] = OracleLaunchStats({&starts}, launches);
    out.integrity[device] = OracleIntegrity(starts, launches);
    all_devices.push_back(&starts);
  }
  out.all_launches = OracleLaunchStats(all_devices, launches);
  out.all_cpu_ops = OracleTopOps(all_op_times);
  for (const auto& [device, by_step] : device_steps) {
    for (const auto& [step, activities] : by_step) {
      out.steps[device].emplace_back(steps[step].first, Oracle(activities));
      const std::vector<OracleStart>& starts = device_step_starts[device][step];
      out.step_idle[device].emplace_back(OracleIdle(starts, launches, cpu),
                                         OracleIntegrity(starts, launches));
    }
  }
  return out;
}

std::shared_ptr<const Classifier> TracefuseRules() {
  return *Classifier::Create(*RuleSet::Load("tracefuse"));
}

// `host_activity`: read the CPU side too, and with it the idle splits' cpu_ops.
TraceProfile ProfileOf(const std::string& path, int threads, size_t chunk_bytes,
                       bool step_figures = true, bool host_activity = false) {
  PipelineOptions o;
  o.threads = threads;
  o.chunk_bytes = chunk_bytes;
  o.step_figures = step_figures;
  o.host_activity = host_activity;
  auto profiles = ProfileTraces({path}, TracefuseRules(), o);
  EXPECT_TRUE(profiles.ok()) << profiles.status();
  return profiles.ok() ? std::move(profiles->front()) : TraceProfile();
}

void ExpectSameCpuOps(const std::vector<CpuOpTime>& want, const std::vector<CpuOpTime>& got) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].op, want[i].op) << i;
    EXPECT_EQ(got[i].ns, want[i].ns) << got[i].op;
  }
}

// ExpectSameIdle() compares the cpu_ops where the CPU side was read (`got` has them).
void ExpectSameIdle(const IdleSplit& want, const IdleSplit& got, int64_t idle_ns) {
  EXPECT_EQ(got.cpu_wait_ns, want.cpu_wait_ns);
  EXPECT_EQ(got.launch_latency_ns, want.launch_latency_ns);
  EXPECT_EQ(got.unattributed_ns, want.unattributed_ns);
  EXPECT_EQ(got.gaps, want.gaps);
  EXPECT_EQ(got.cpu_wait_ns + got.launch_latency_ns + got.unattributed_ns, idle_ns);
  if (got.cpu_ops) ExpectSameCpuOps(*want.cpu_ops, *got.cpu_ops);
}

void ExpectSameIntegrity(const TraceIntegrity& want, const TraceIntegrity& got) {
  EXPECT_EQ(got.same_stream_overlaps, want.same_stream_overlaps);
  EXPECT_EQ(got.same_stream_overlap_ns, want.same_stream_overlap_ns);
  EXPECT_EQ(got.before_launch, want.before_launch);
  EXPECT_EQ(got.involved_ns, want.involved_ns);
  EXPECT_EQ(got.activity_ns, want.activity_ns);
}

void ExpectSameLaunches(const std::vector<LaunchStats>& want, const std::vector<LaunchStats>& got) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(want[i].api);
    EXPECT_EQ(got[i].api, want[i].api);
    EXPECT_EQ(got[i].count, want[i].count);
    for (const auto& [g, w] : {std::pair{got[i].cpu, want[i].cpu}, {got[i].delay, want[i].delay}}) {
      EXPECT_EQ(g.median_ns, w.median_ns);
      EXPECT_EQ(g.p90_ns, w.p90_ns);
      EXPECT_EQ(g.max_ns, w.max_ns);
    }
  }
}

void ExpectOracle(const std::string& path, const TraceProfile& p) {
  std::vector<OracleCollective> want_collectives, got_collectives;
  const OracleTimeline oracle = OracleOfTrace(path, p, &want_collectives);
  const std::map<int32_t, GpuTimeFigures>& want = oracle.devices;
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
  // Each step's GPU span: over the devices' figures of that step.
  std::vector<ProfilerStep> want_spans(p.gpu_timeline.steps.size());
  for (const DeviceTimeline& d : p.gpu_timeline.devices) {
    SCOPED_TRACE("device " + std::to_string(d.device));
    ASSERT_TRUE(want.count(d.device));
    ExpectSameFigures(want.at(d.device), d.figures);
    ExpectSameIdle(oracle.idle.at(d.device), d.idle, d.figures.idle_ns());
    ExpectSameLaunches(oracle.launches.at(d.device), d.launches);
    ExpectSameIntegrity(oracle.integrity.at(d.device), d.integrity);
    const auto want_steps = oracle.steps.find(d.device);
    ASSERT_EQ(d.steps.size(), want_steps == oracle.steps.end() ? 0 : want_steps->second.size());
    for (size_t i = 0; i < d.steps.size(); ++i) {
      const std::string_view name =
          p.gpu_timeline.step_names[p.gpu_timeline.step_name_of.at(d.steps[i].step)];
      SCOPED_TRACE(std::string(name));
      EXPECT_EQ(name, want_steps->second[i].first);
      const GpuTimeFigures& f = want_steps->second[i].second;
      ExpectSameFigures(f, d.steps[i].figures);
      const auto& [idle, integrity] = oracle.step_idle.at(d.device)[i];
      ExpectSameIdle(idle, d.steps[i].idle, d.steps[i].figures.idle_ns());
      ExpectSameIntegrity(integrity, d.steps[i].integrity);
      ProfilerStep& span = want_spans.at(d.steps[i].step);
      if (f.activities == 0) continue;
      span.first_start_ns = std::min(span.first_start_ns, f.first_start_ns);
      span.last_end_ns = std::max(span.last_end_ns, f.last_end_ns);
    }
  }
  {
    SCOPED_TRACE("launches over all devices");
    ExpectSameLaunches(oracle.all_launches, p.gpu_timeline.launches);
  }
  EXPECT_EQ(p.gpu_timeline.cpu_ops.has_value(), p.host.path != CpuSidePath::kNotRead);
  if (p.gpu_timeline.cpu_ops) {
    SCOPED_TRACE("cpu ops over all devices");
    ExpectSameCpuOps(oracle.all_cpu_ops, *p.gpu_timeline.cpu_ops);
  }
  EXPECT_TRUE(p.gpu_timeline.cpu_wait_spans.empty());
  for (size_t i = 0; i < want_spans.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    EXPECT_EQ(p.gpu_timeline.steps[i].ran_activities(), want_spans[i].ran_activities());
    EXPECT_EQ(p.gpu_timeline.steps[i].span_ns(), want_spans[i].span_ns());
  }
}

// Without each device's figures per step, the steps' GPU spans are the same.
void ExpectSameStepSpans(const TraceProfile& with_figures, const TraceProfile& spans_only) {
  const std::vector<ProfilerStep>& want = with_figures.gpu_timeline.steps;
  const std::vector<ProfilerStep>& got = spans_only.gpu_timeline.steps;
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(want[i].ran_activities(), got[i].ran_activities());
    EXPECT_EQ(want[i].span_ns(), got[i].span_ns());
  }
  EXPECT_TRUE(spans_only.gpu_timeline.step_names.size() == 0);
  EXPECT_TRUE(spans_only.gpu_timeline.step_name_of.empty());
  for (const DeviceTimeline& d : spans_only.gpu_timeline.devices) EXPECT_TRUE(d.steps.empty());
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
      const TraceProfile p = ProfileOf(path, threads, chunk, true, /*host_activity=*/threads == 2);
      EXPECT_EQ(p.gpu_timeline.path, GpuTimelinePath::kStreamed);
      ASSERT_EQ(p.gpu_timeline.devices.size(), 1u);
      EXPECT_GT(p.gpu_timeline.devices[0].figures.memcpy_ns, 0);
      EXPECT_EQ(p.gpu_timeline.steps.size(), 30u);
      EXPECT_EQ(p.gpu_timeline.devices[0].steps.size(), 30u);
      ExpectOracle(path, p);
      ExpectSameStepSpans(p, ProfileOf(path, threads, chunk, /*step_figures=*/false));
    }
  }
  const std::string shuffled =
      ShuffleGpuEvents(dir.path() + "/kineto.json", dir.path() + "/shuffled.json", 5);
  for (int threads : {1, 7}) {
    const TraceProfile p = ProfileOf(shuffled, threads, size_t{64} << 10, true, threads == 7);
    EXPECT_EQ(p.gpu_timeline.path, GpuTimelinePath::kCollected);
    EXPECT_TRUE(absl::StartsWith(p.gpu_timeline.collected_reason,
                                 "device 0's events are out of start order near byte "))
        << p.gpu_timeline.collected_reason;
    ExpectOracle(shuffled, p);
  }
}

// Ns() is a time the generator's expectations give in us, with three decimals, in ns.
int64_t Ns(const nlohmann::json& us) { return std::llround(us.get<double>() * 1000); }

// ExpectPlanted() checks a device against the generator's --expect-idle entry for it.
void ExpectPlanted(const nlohmann::json& want, const DeviceTimeline& d) {
  const nlohmann::json& idle = want["idle"];
  EXPECT_EQ(d.idle.cpu_wait_ns, Ns(idle["cpu_wait_us"]));
  EXPECT_EQ(d.idle.launch_latency_ns, Ns(idle["launch_latency_us"]));
  EXPECT_EQ(d.idle.unattributed_ns, Ns(idle["unattributed_us"]));
  EXPECT_EQ(d.idle.gaps, idle["gaps"].get<uint64_t>());
  std::vector<LaunchStats> launches;
  for (const nlohmann::json& l : want["launches"]) {
    auto quantiles = [](const nlohmann::json& q) {
      return Quantiles{Ns(q["median"]), Ns(q["p90"]), Ns(q["max"])};
    };
    launches.push_back(
        LaunchStats{l["api"], l["count"], quantiles(l["cpu_us"]), quantiles(l["delay_us"])});
  }
  ExpectSameLaunches(launches, d.launches);
  const nlohmann::json& integrity = want["integrity"];
  ExpectSameIntegrity(
      TraceIntegrity{integrity["same_stream_overlaps"], Ns(integrity["same_stream_overlap_us"]),
                     integrity["before_launch"], Ns(integrity["involved_us"]),
                     Ns(integrity["activity_us"])},
      d.integrity);
}

// The generator's planted kernels (--plant-idle: one before its launch, one without a launch, an
// overlap on its stream, besides the CPU-bound eager kernels and the queued replay) come out as
// its --expect-idle says, to the nanosecond, in every layout, streamed in chunks of any size and
// collected (the GPU events shuffled), on either platform's template.
TEST(GpuTimeline, PlantedIdleLaunchesAndOverlapsAreExact) {
  testing::TempDir dir;
  for (const char* platform : {"amd", "nvidia"}) {
    for (const char* layout : {"kineto", "lines", "compact"}) {
      const std::string name = std::string(platform) + "_" + layout;
      const std::string expected = dir.path() + "/" + name + ".expected.json";
      const std::string path =
          Generate(dir, name + ".json",
                   StrCat("--platform ", platform, " --steps 12 --seed 11 --plant-idle --layout ",
                          layout, " --expect-idle ", expected));
      const nlohmann::json want = nlohmann::json::parse(ReadMaybeGzip(expected))["devices"][0];
      ASSERT_GT(want["integrity"]["same_stream_overlaps"], 0);
      ASSERT_GT(want["integrity"]["before_launch"], 0);
      ASSERT_GT(Ns(want["idle"]["unattributed_us"]), 0);
      for (const auto& [threads, chunk] :
           {std::tuple{1, size_t{8} << 20}, std::tuple{2, size_t{4} << 10}}) {
        SCOPED_TRACE(StrCat(name, " threads ", threads, " chunk ", chunk));
        const TraceProfile p = ProfileOf(path, threads, chunk);
        EXPECT_EQ(p.gpu_timeline.path, GpuTimelinePath::kStreamed);
        ASSERT_EQ(p.gpu_timeline.devices.size(), 1u);
        ExpectPlanted(want, p.gpu_timeline.devices[0]);
        ExpectOracle(path, p);
      }
      SCOPED_TRACE(name + " collected");
      const TraceProfile p =
          ProfileOf(ShuffleGpuEvents(path, dir.path() + "/" + name + ".shuffled.json", 5), 2,
                    size_t{64} << 10);
      EXPECT_EQ(p.gpu_timeline.path, GpuTimelinePath::kCollected);
      ASSERT_EQ(p.gpu_timeline.devices.size(), 1u);
      ExpectPlanted(want, p.gpu_timeline.devices[0]);
    }
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

// Steps: HTA's assignment by launch, through nested and zero-length steps, two threads' launches
// with interleaved correlation ids (a run split), kernels written before their launches, a launch
// seen twice, a driver launch of a memcpy, launches outside steps and kernels launched by nothing.
TEST(GpuTimeline, CraftedStepsEqualTheOracle) {
  testing::TempDir dir;
  const std::string path = dir.File("steps.json", R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#9", "pid": 1, "tid": 1, "ts": 10, "dur": 10},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 300, "dur": 0},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 1, "ts": 400, "dur": "x"},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 1000, "dur": 10, "args": {"device": 0, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 5, "dur": 2, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 50, "dur": 2, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 60, "dur": 2, "args": {"correlation": 4}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32", "pid": 0, "ts": 1005, "dur": 20, "args": {"device": 0, "correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 1030, "dur": 5, "args": {"device": 0, "correlation": 4}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 120, "dur": 2, "args": {"correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 150, "dur": 2, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_driver", "name": "cuMemcpyAsync", "pid": 1, "tid": 1, "ts": 130, "dur": 2, "args": {"correlation": 6}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 1040, "dur": 7, "args": {"device": 0, "correlation": 3}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "ts": 1042, "dur": 20, "args": {"device": 0, "correlation": 6}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 1070, "dur": 3, "args": {"device": 0, "correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 1080, "dur": 3, "args": {"device": 0, "correlation": 7}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 1090, "dur": 3, "args": {"device": 0}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 250, "dur": 2, "args": {"correlation": 5}}
  ]})");
  for (const auto& [threads, chunk] :
       {std::tuple{1, size_t{4} << 10}, std::tuple{2, size_t{512}}}) {
    const TraceProfile p = ProfileOf(path, threads, chunk);
    EXPECT_EQ(p.gpu_timeline.path, GpuTimelinePath::kStreamed) << p.gpu_timeline.collected_reason;
    ExpectOracle(path, p);
    EXPECT_EQ(p.gpu_timeline.steps_skipped, 1u);
    ASSERT_EQ(p.gpu_timeline.steps.size(), 3u);  // #1, #2 and the empty #3; #9 is nested
    ASSERT_EQ(p.gpu_timeline.devices.size(), 1u);
    const std::vector<StepFigures>& steps = p.gpu_timeline.devices[0].steps;
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[0].figures.activities, 3u);  // correlations 1, 2 and 4
    EXPECT_EQ(steps[0].figures.span_ns(), 35000);
    EXPECT_EQ(steps[0].figures.exposed_communication_ns, 15000);
    EXPECT_EQ(steps[1].figures.activities, 2u);  // 3 and the memcpy of 6
    EXPECT_EQ(steps[1].figures.exposed_memcpy_ns, 15000);
    const StepSpans spans = StepSpansOf(p.gpu_timeline);
    EXPECT_EQ(spans.steps, 3u);
    EXPECT_EQ(spans.with_activities, 2u);
    EXPECT_EQ(spans.median_ns, (35000 + 22000) / 2);
  }
  // A step written after a launch inside it cannot be streamed: the trace is read again.
  std::string late = testing::ReadFile(path);
  const std::string step2 =
      R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 100},)";
  late.erase(late.find(step2), step2.size() + 1);
  late.insert(late.find(R"(    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 1040)"),
              "    " + step2 + "\n");
  const std::string late_path = dir.File("late.json", late);
  const TraceProfile p = ProfileOf(late_path, 1, 512);  // the step in a later chunk
  EXPECT_EQ(p.gpu_timeline.path, GpuTimelinePath::kCollected);
  EXPECT_TRUE(absl::StartsWith(p.gpu_timeline.collected_reason,
                               "a step annotation comes after the launches inside it near byte "))
      << p.gpu_timeline.collected_reason;
  ExpectOracle(late_path, p);
  EXPECT_EQ(p.gpu_timeline.devices[0].steps.size(), 2u);
}

// What the CPU ran while the GPU waited: the top-level cpu_ops of the waited-for launch's thread
// (not those nested in them, of no length, of other threads, or the 2021-era ProfilerStep#N op),
// through an op that a later one of the same start encloses, ops written out of order, and two
// launches that end together (the lower id's thread counts).
TEST(GpuTimeline, CpuOpsOfTheWaitedForLaunchsThread) {
  testing::TempDir dir;
  const std::string path = dir.File("cpu_ops.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 100, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 50, "dur": 10, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 100, "dur": 65},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 120, "dur": 40},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 150, "dur": 20, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 165, "dur": 15},
    {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 170, "dur": 0},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 200, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 2}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::to", "pid": 1, "tid": 2, "ts": 200, "dur": 30},
    {"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 1, "tid": 2, "ts": 200, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 1, "tid": 2, "ts": 195, "dur": 10},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 240, "dur": 20, "args": {"correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 250, "dur": 10, "args": {"correlation": 4}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 2, "ts": 255, "dur": 25},
    {"ph": "X", "cat": "cpu_op", "name": "aten::sub", "pid": 1, "tid": 1, "ts": 210, "dur": 50},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 300, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "ts": 300, "dur": 2, "args": {"device": 0, "stream": 8, "correlation": 4}}
  ]})");
  // Gap [110, 200) waits for launch 2 (thread 1) until 170: aten::linear 55 us, aten::add 5.
  // Gap [210, 300) waits for launch 3 (thread 2, ending with launch 4) until 260: aten::copy_
  // [200, 250) 40 us, aten::mul 5; aten::cat ends before, aten::sub is thread 1's.
  const std::vector<CpuOpTime> want = {
      {"aten::linear", 55000}, {"aten::copy_", 40000}, {"aten::add", 5000}, {"aten::mul", 5000}};
  for (const auto& [threads, chunk] :
       {std::tuple{1, size_t{2} << 20}, std::tuple{2, size_t{512}}}) {
    SCOPED_TRACE(StrCat("threads ", threads, " chunk ", chunk));
    const TraceProfile p = ProfileOf(path, threads, chunk, true, /*host_activity=*/true);
    ExpectOracle(path, p);
    ASSERT_EQ(p.gpu_timeline.devices.size(), 1u);
    const DeviceTimeline& d = p.gpu_timeline.devices[0];
    EXPECT_EQ(d.idle.cpu_wait_ns, 110000);
    ASSERT_TRUE(d.idle.cpu_ops);
    ExpectSameCpuOps(want, *d.idle.cpu_ops);
    ExpectSameCpuOps(want, *p.gpu_timeline.cpu_ops);
    ASSERT_EQ(d.steps.size(), 1u);
    ExpectSameCpuOps(want, *d.steps[0].idle.cpu_ops);
  }
  const TraceProfile p = ProfileOf(path, 1, size_t{2} << 20);
  EXPECT_FALSE(p.gpu_timeline.devices[0].idle.cpu_ops);
  EXPECT_FALSE(p.gpu_timeline.cpu_ops);
}

// Every real trace of ../shared, at two thread counts and chunk sizes. Under AddressSanitizer
// (scripts/test's second run) the second alone, which takes the most paths (7 threads, 64 KiB
// chunks, the CPU side read): both there took two of the suite's 31 minutes on 2 cores, and the
// Release run checks both.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRACEFUSE_TEST_UNDER_ASAN
#endif
#endif
TEST(GpuTimeline, RealTracesEqualTheOracle) {
  TRACEFUSE_REQUIRE_SHARED();
  std::vector<std::string> traces =
      testing::FilesIn(testing::SharedDir() + "/traces/real", ".json.gz");
  for (const std::string& pair : testing::FilesIn(testing::SharedDir() + "/golden/fusion", "")) {
    traces.push_back(pair + "/trace1.json.gz");
    traces.push_back(pair + "/trace2.json.gz");
  }
  std::vector<std::tuple<int, size_t>> configurations = {{1, size_t{2} << 20},
                                                         {7, size_t{64} << 10}};
#ifdef TRACEFUSE_TEST_UNDER_ASAN
  configurations.erase(configurations.begin());
#endif
  int collected = 0, with_steps = 0, with_cpu_ops = 0;
  for (const std::string& path : traces) {
    if (path.find("rocprof") != std::string::npos) continue;  // not a Kineto trace
    for (const auto& [threads, chunk] : configurations) {
      SCOPED_TRACE(path + " threads " + std::to_string(threads));
      const TraceProfile p = ProfileOf(path, threads, chunk, true, /*host_activity=*/threads == 7);
      ExpectOracle(path, p);
      ExpectSameStepSpans(p, ProfileOf(path, threads, chunk, /*step_figures=*/false));
      collected += p.gpu_timeline.path == GpuTimelinePath::kCollected;
      if (p.gpu_timeline.cpu_ops && !p.gpu_timeline.cpu_ops->empty()) ++with_cpu_ops;
      with_steps += !p.gpu_timeline.steps.empty();
    }
  }
  EXPECT_GT(collected, 0);  // the traces whose events are out of order took the other path
  // ten of ../shared's real traces have steps
  EXPECT_GE(with_steps, static_cast<int>(configurations.size()) * 10);
  EXPECT_GE(with_cpu_ops, 10);  // most have cpu_ops around their launches
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

// LaunchJoin against the oracle on 300 random traces of two devices: gaps, ties at a gap's end,
// activities sharing a launch (graph replays), activities without a correlation id or whose
// launch is not in the trace, and launches that come up to three chunks before or after their
// activities.
TEST(LaunchJoin, EqualsTheOracleWhateverChunkTheLaunchesComeIn) {
  std::mt19937_64 rng(37);
  const char* apis[] = {"cudaLaunchKernel", "cudaGraphLaunch", "cuLaunchKernel"};
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // Every tenth round has enough distinct values that LaunchJoin buckets them.
    const bool many = round % 10 == 0;
    const int n = many ? 700 : 1 + static_cast<int>(rng() % 80);
    const uint64_t longest_call = many ? 200000 : 40;
    // Ids in order (one per call), spread out, or of two processes taking turns; devices as
    // numbered by CUDA, or by pid.
    const int64_t id_stride = round % 3 == 0 ? 1 : 1000;
    const int64_t second_process = round % 3 == 2 ? 1000000000 : 0;
    const auto id_of = [&](int64_t index) {
      return index * id_stride + (index % 2 == 1 ? second_process : 0);
    };
    const int32_t second_device = round % 4 == 3 ? 4321 : 1;
    std::vector<std::pair<int32_t, OracleStart>> activities;  // (device, activity)
    int64_t correlation = 100;
    for (int i = 0; i < n; ++i) {
      // Many activities start in the order of their ids, so that a launch is used within
      // LaunchJoin::kWindowChunks chunks.
      const int64_t start =
          many ? i * 4 + static_cast<int64_t>(rng() % 40) : static_cast<int64_t>(rng() % 2000);
      const int64_t length = rng() % 6 == 0 ? 0 : static_cast<int64_t>(rng() % 150);
      OracleStart a{start, start + length, std::nullopt, static_cast<int32_t>(rng() % 4) - 1};
      if (rng() % 10 != 0) a.correlation = id_of(rng() % 4 == 0 ? correlation : ++correlation);
      activities.emplace_back(rng() % 2 == 0 ? 0 : second_device, a);
    }
    std::map<int64_t, OracleLaunch> launches;
    for (int64_t index = 100; index <= correlation; ++index) {
      if (rng() % 8 == 0) continue;  // no launch in the trace
      launches[id_of(index)] =
          OracleLaunch{static_cast<int64_t>(rng() % (many ? 3000 : 2000)) - 100,
                       static_cast<int64_t>(rng() % longest_call), apis[rng() % 3], ""};
    }
    // Chunks: activities by start, a chunk per five; each launch within three chunks of its
    // first activity (or anywhere, when it has none).
    std::stable_sort(activities.begin(), activities.end(),
                     [](const auto& a, const auto& b) { return a.second.start < b.second.start; });
    const int chunks = n / 5 + 1;
    std::map<int64_t, int> launch_chunk;
    for (size_t i = 0; i < activities.size(); ++i) {
      const OracleStart& a = activities[i].second;
      if (!a.correlation || launch_chunk.count(*a.correlation)) continue;
      launch_chunk[*a.correlation] =
          std::max(0, static_cast<int>(i / 5) + static_cast<int>(rng() % 7) - 3);
    }
    LaunchJoin join;
    for (int chunk = 0; chunk <= chunks + 3; ++chunk) {
      join.NextChunk();
      std::vector<Launch> chunk_launches;
      InternedStrings names;
      for (const auto& [c, l] : launches) {
        auto at = launch_chunk.find(c);
        const int64_t spread = c / id_stride;
        if ((at == launch_chunk.end() ? static_cast<int>(spread % (chunks + 1)) : at->second) !=
            chunk) {
          continue;
        }
        chunk_launches.push_back(Launch{l.ts, l.dur, c, names.Append(l.api)});
      }
      join.AddLaunches(chunk_launches, names);
      std::vector<std::pair<int32_t, OracleStart>> mine;
      for (size_t i = static_cast<size_t>(chunk) * 5;
           i < activities.size() && i < static_cast<size_t>(chunk + 1) * 5; ++i) {
        mine.push_back(activities[i]);
      }
      std::stable_sort(mine.begin(), mine.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& [device, a] : mine) {
        ASSERT_TRUE(join.AddActivity(device, a.start, a.end, a.correlation.value_or(kNoCorrelation),
                                     a.stream));
      }
    }
    GpuTimeline timeline;
    std::map<int32_t, std::vector<OracleStart>> by_device;
    for (const auto& [device, a] : activities) by_device[device].push_back(a);
    for (const auto& entry : by_device) {
      timeline.devices.emplace_back();
      timeline.devices.back().device = entry.first;
    }
    join.Finish(&timeline);
    for (const DeviceTimeline& d : timeline.devices) {
      SCOPED_TRACE("device " + std::to_string(d.device));
      const std::vector<OracleStart>& starts = by_device[d.device];
      int64_t first = INT64_MAX, last = INT64_MIN, busy = 0, end = INT64_MIN;
      std::vector<OracleStart> sorted = starts;
      std::sort(sorted.begin(), sorted.end(),
                [](const OracleStart& a, const OracleStart& b) { return a.start < b.start; });
      for (const OracleStart& a : sorted) {
        first = std::min(first, a.start);
        last = std::max(last, a.end);
        busy += std::max<int64_t>(0, a.end - std::max(a.start, end));
        end = std::max(end, a.end);
      }
      ExpectSameIdle(OracleIdle(starts, launches, OracleCpuOps()), d.idle, last - first - busy);
      ExpectSameLaunches(OracleLaunchStats({&starts}, launches), d.launches);
      ExpectSameIntegrity(OracleIntegrity(starts, launches), d.integrity);
    }
    std::vector<const std::vector<OracleStart>*> all;
    for (const auto& entry : by_device) all.push_back(&entry.second);
    SCOPED_TRACE("launches over all devices");
    ExpectSameLaunches(OracleLaunchStats(all, launches), timeline.launches);
  }
}

// A launch unused for a generation (LaunchJoin::kWindowChunks chunks, two at most) is dropped: an
// activity that needs it then fails (the caller collects), one that comes after its own launch does
// not.
TEST(LaunchJoin, AnActivityWhoseLaunchWasDroppedFails) {
  LaunchJoin join;
  InternedStrings names;
  names.Append("cudaLaunchKernel");
  join.NextChunk();
  join.AddLaunches({Launch{0, 5, 1, 0}}, names);
  ASSERT_TRUE(join.AddActivity(0, 10, 20, 1, 7));
  // Unused for two generations at most.
  for (uint32_t i = 0; i < 2 * LaunchJoin::kWindowChunks; ++i) join.NextChunk();
  join.AddLaunches({Launch{100, 5, 2, 0}}, names);
  EXPECT_TRUE(join.AddActivity(0, 110, 120, 2, 7));
  EXPECT_FALSE(join.AddActivity(0, 130, 140, 1, 7));
}

// Activities wait LaunchJoin::kWindowChunks chunks for their launch, then count as having none
// (their gap unattributed); a launch that comes after that fails (the caller collects).
TEST(LaunchJoin, ActivitiesStopWaitingAndALaunchAfterThatFails) {
  LaunchJoin join;
  InternedStrings names;
  names.Append("cudaLaunchKernel");
  join.NextChunk();
  ASSERT_TRUE(join.AddActivity(0, 0, 10, 1, 7));
  ASSERT_TRUE(join.AddActivity(0, 30, 40, 2, 7));  // a gap of 20 ns, ended by id 2
  EXPECT_EQ(join.waiting(), 3u);                   // each first activity, and the gap
  for (uint32_t i = 0; i <= LaunchJoin::kWindowChunks; ++i) join.NextChunk();
  EXPECT_EQ(join.waiting(), 0u);
  EXPECT_FALSE(join.AddLaunches({Launch{5, 5, 2, 0}}, names));
  GpuTimeline timeline;
  timeline.devices.emplace_back();
  join.Finish(&timeline);
  EXPECT_EQ(timeline.devices[0].idle.unattributed_ns, 20);
  EXPECT_EQ(timeline.devices[0].idle.gaps, 1u);
  EXPECT_TRUE(timeline.devices[0].launches.empty());
}

}  // namespace
}  // namespace tracefuse
