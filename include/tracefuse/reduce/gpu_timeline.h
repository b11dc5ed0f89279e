// Part of stage 5, library tracefuse_reduce: where each GPU's time goes.
//
// A trace's GPU activities (kernels, memcpy and memset events) are swept per device in start
// order, in constant memory per device: at every start, each kind's coverage up to the next start
// is a prefix of that window (every activity began at or before it), so the union of each kind,
// of all kinds and their overlaps are sums of prefix lengths. Kineto writes a device's GPU events
// in start order in most traces; the parallel stage sorts each chunk's, which absorbs disorder
// within a chunk. Where an activity still starts before one already swept on its device (CUPTI
// buffers flushed per stream: 2 of the 14 real traces in ../shared), the trace is read again and
// its activities collected and sorted whole (GpuTimelinePath::kCollected).
#ifndef TRACEFUSE_REDUCE_GPU_TIMELINE_H_
#define TRACEFUSE_REDUCE_GPU_TIMELINE_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tracefuse/parse/chunk_parser.h"

namespace tracefuse {

// kTransferName is GpuActivity::name for a memcpy or memset.
inline constexpr uint32_t kTransferName = UINT32_MAX;
// kNoCorrelation is GpuActivity::correlation for an event without one.
inline constexpr int64_t kNoCorrelation = INT64_MIN;

// GpuActivity is one GPU event with a numeric ts and a dur >= 0: a kernel (`name` its name's
// index, in the chunk's or the trace's names) or a transfer (kTransferName).
struct GpuActivity {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t device = 0;  // args.device, else the event's pid
  uint32_t name = kTransferName;
  int64_t correlation = kNoCorrelation;
  int32_t stream = -1;  // args.stream, -1 without one
};

// GpuActivityKind is what an activity counts as: a kernel the rule set classifies as
// Communication, any other kernel, or a memcpy or memset.
enum class GpuActivityKind : uint8_t { kComputation, kCommunication, kMemcpy };

// GpuTimeFigures is where one device's time went, in nanoseconds. Unions are measures of unions
// of intervals: overlapping activities count once.
struct GpuTimeFigures {
  uint64_t activities = 0;
  int64_t first_start_ns = 0;
  int64_t last_end_ns = 0;
  int64_t busy_ns = 0;                   // union of all activities
  int64_t computation_ns = 0;            // union of kComputation
  int64_t communication_ns = 0;          // union of kCommunication
  int64_t exposed_communication_ns = 0;  // communication not overlapped by computation
  int64_t memcpy_ns = 0;                 // union of kMemcpy
  int64_t exposed_memcpy_ns = 0;         // memcpy not overlapped by any kernel

  int64_t span_ns() const { return activities == 0 ? 0 : last_end_ns - first_start_ns; }
  // AddMeasures() adds `other`'s activities and unions, busy_ns to exposed_memcpy_ns: the figures
  // of stretches of time that do not overlap (the caller sets the span).
  void AddMeasures(const GpuTimeFigures& other);
  int64_t idle_ns() const { return span_ns() - busy_ns; }
};

// DeviceSweep measures one device's activities, given in start order.
class DeviceSweep {
 public:
  // Add() takes the next activity; false (and nothing taken) when it starts before the last one.
  bool Add(int64_t start_ns, int64_t end_ns, GpuActivityKind kind);
  // Append() takes `later`'s activities, swept on their own (a chunk's, in the parallel stage),
  // when they all start after every activity here has ended, so that the two measures add up;
  // false (and nothing taken) otherwise.
  bool Append(const DeviceSweep& later);
  // Figures() is the measure of everything added so far.
  GpuTimeFigures Figures() const;

 private:
  static constexpr int kKinds = 3;
  // Advance() measures [at_, until): each kind's coverage there is [at_, min(until, end_[k])).
  void Advance(int64_t until, GpuTimeFigures* f) const;

  GpuTimeFigures swept_;  // up to at_
  int64_t at_ = 0;
  int64_t end_[kKinds] = {};  // the furthest end of each kind so far (at_ or before: none open)
};

// CpuOpTime is how long a CPU op overlapped the cpu_wait parts of gaps (IdleSplit).
struct CpuOpTime {
  std::string op;
  int64_t ns = 0;
};
inline constexpr size_t kCpuOpsListed = 5;

// CpuWaitSpan is the cpu_wait part of a gap, [start_ns, end_ns) (not empty), on `device`, in
// `step` (an index into GpuTimeline::steps) or for the device's own split (kDeviceSplit), with
// the correlation id of the launch it waited for: where AttributeCpuWaits() (cpu_wait_ops.h) looks
// for the CPU ops that ran meanwhile. 32 bytes; recorded only while the CPU side is read.
inline constexpr uint32_t kDeviceSplit = UINT32_MAX;
struct CpuWaitSpan {
  int64_t launch_correlation = 0;
  int64_t start_ns = 0, end_ns = 0;
  int32_t device = 0;
  uint32_t step = kDeviceSplit;
};

// IdleSplit is why a device was idle: each gap [g0, g1) of its span (a maximal interval with no
// activity running) goes by the launch L of the activity K that starts at g1 (of several, the one
// whose launch ended first; for a graph replay's kernels, the graph launch), with e = L's end:
// clamp(e, g0, g1) - g0 is cpu_wait (the launch had not returned yet), the rest launch_latency
// (it had, and the work had not started); a gap whose K has no launch in the trace is
// unattributed. The three sum to GpuTimeFigures::idle_ns(). Of several launches that end
// together, L is the one of the lowest correlation id.
struct IdleSplit {
  int64_t cpu_wait_ns = 0;
  int64_t launch_latency_ns = 0;
  int64_t unattributed_ns = 0;
  uint64_t gaps = 0;
  // What the CPU ran while the GPU waited on it (cpu_wait_ops.h): the top kCpuOpsListed by time,
  // then name; none when the CPU side was not read (PipelineOptions::host_activity).
  std::optional<std::vector<CpuOpTime>> cpu_ops;
};

// Quantiles of a set of nanosecond values, by nearest rank: the ceil(q * n)-th smallest.
struct Quantiles {
  int64_t median_ns = 0;
  int64_t p90_ns = 0;
  int64_t max_ns = 0;
};

// LaunchStats is one API's launches that started an activity on a device: their count, how long
// each call took on the CPU (its dur) and its delay, from the call's end to the start of its
// first activity on the device (HTA's launch delay; negative when the work started before the
// call returned).
struct LaunchStats {
  std::string api;
  uint64_t count = 0;
  Quantiles cpu;
  Quantiles delay;
};

// TraceIntegrity is where a device's times do not add up: activities of one stream that start
// before the earlier ones of that stream end (a stream runs its work in order, but where
// programmatic dependent launch lets a kernel start during the one before it), with the time they
// overlap them (activities without a stream, or of zero length, are not counted), and activities
// that start before their launch call does (only wrong times do).
struct TraceIntegrity {
  uint64_t same_stream_overlaps = 0;
  int64_t same_stream_overlap_ns = 0;
  uint64_t before_launch = 0;
  // involved_ns is the time the overlaps cover plus the durations of the activities that start
  // before their launch, out of activity_ns, the durations of all the device's activities summed
  // (both sums are the same whatever order activities that start together come in).
  int64_t involved_ns = 0;
  int64_t activity_ns = 0;

  bool clean() const { return same_stream_overlaps == 0 && before_launch == 0; }
};

// StepFigures is one profiler step's share of a device's time (ProfilerStep), and its idle split
// and integrity among the step's activities (none of them unattributed: a step's activities are
// those of its launches).
struct StepFigures {
  uint32_t step = 0;  // index into GpuTimeline::steps
  GpuTimeFigures figures;
  IdleSplit idle;
  TraceIntegrity integrity;
};

// StreamEnds is the furthest end so far of each stream of a device: what finds the activities
// that start before the earlier ones of their stream end (TraceIntegrity).
class StreamEnds {
 public:
  // Overlap() takes an activity of `stream` (-1: none) in start order and returns how long it
  // overlaps the earlier ones of its stream, 0 for none (or for one of zero length).
  // Inline: it runs for every GPU event, mostly of the stream the one before was.
  int64_t Overlap(int32_t stream, int64_t start_ns, int64_t end_ns) {
    if (stream < 0 || end_ns <= start_ns) return 0;
    if ((cursor_ >= ends_.size() || ends_[cursor_].first != stream) && !Find(stream, end_ns)) {
      return 0;
    }
    int64_t& furthest_end = ends_[cursor_].second;
    const int64_t earlier_end = furthest_end;
    furthest_end = std::max(earlier_end, end_ns);
    return start_ns < earlier_end ? std::min(earlier_end, end_ns) - start_ns : 0;
  }

 private:
  // Find() points cursor_ at `stream`; false when it is new, added with `end_ns`.
  bool Find(int32_t stream, int64_t end_ns);

  std::vector<std::pair<int32_t, int64_t>> ends_;  // a device has few streams
  size_t cursor_ = 0;
};

// DeviceTimeline is one device's figures, in all and per step (by step, those it ran in), and why
// it was idle and how its work was launched (launch_join.h).
struct DeviceTimeline {
  int32_t device = 0;
  GpuTimeFigures figures;
  std::vector<StepFigures> steps;
  IdleSplit idle;
  std::vector<LaunchStats> launches;  // by API name
  TraceIntegrity integrity;
};

// ProfilerStep is a step of the trace, as HTA counts it: a top-level step annotation
// (IsStepAnnotation(); one that starts before the previous one ends is nested and not a step),
// whose GPU activities are those whose launch (the runtime call of the same correlation id, the
// first one in the trace) starts inside the annotation. Its GPU span runs from the first of them
// to start to the last to end, over every device. 32 bytes: a long run has a step per few
// hundred kernels.
struct ProfilerStep {
  int64_t cpu_start_ns = 0;
  int64_t cpu_end_ns = 0;
  int64_t first_start_ns = INT64_MAX;  // of its activities; first > last while it has none
  int64_t last_end_ns = INT64_MIN;

  bool ran_activities() const { return first_start_ns <= last_end_ns; }
  int64_t span_ns() const { return ran_activities() ? last_end_ns - first_start_ns : 0; }
};

struct GpuTimeline;

// kOutsideSteps is the step of an activity launched outside every step (StepTimeline).
inline constexpr uint32_t kOutsideSteps = UINT32_MAX;

// StepActivity is a GPU activity on its way to its step's sweep.
struct StepActivity {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t correlation = kNoCorrelation;
  int32_t device = 0;
  GpuActivityKind kind = GpuActivityKind::kComputation;
  uint32_t chunk = 0;   // the chunk it came in (StepTimeline's count)
  int32_t stream = -1;  // GpuActivity::stream
};

// LaunchTimes finds a launch call by its correlation id (LaunchJoin implements it): where
// StepTimeline learns when the launch of an activity it sweeps started and returned.
class LaunchTimes {
 public:
  virtual ~LaunchTimes() = default;
  // FindLaunch() sets the call's start and end; false when the launch is not known (any more).
  virtual bool FindLaunch(int64_t correlation, int64_t* start_ns, int64_t* end_ns) = 0;
};

// KindOf() is an activity's kind, a kernel's by its name (`name_kinds`: per name).
inline GpuActivityKind KindOf(const GpuActivity& a,
                              const std::vector<GpuActivityKind>& name_kinds) {
  return a.name == kTransferName ? GpuActivityKind::kMemcpy : name_kinds[a.name];
}

// kNoRunSweep is LaunchRun::sweep for a run of one activity.
inline constexpr uint32_t kNoRunSweep = UINT32_MAX;

// LaunchRun is a run of a device's activities, consecutive in start order, that share one launch
// (a graph replay's kernels). The parallel stage cuts a chunk's activities into runs and sweeps
// each run of several on its own, so that the serial stage places a run in its step at once.
struct LaunchRun {
  uint32_t begin = 0, end = 0;   // the run's activities, in the chunk's
  uint32_t sweep = kNoRunSweep;  // a run of several: its sweep, in the chunk's run sweeps
};

// CorrelationSet is a set of correlation ids, one bit each in pages of 4,096 consecutive ids:
// ids mostly increase, so the pages are few and mostly full.
class CorrelationSet {
 public:
  bool Contains(int64_t correlation);
  void Insert(int64_t correlation);

 private:
  static constexpr int kPageBits = 12;
  uint64_t* Page(int64_t correlation, bool add);

  absl::flat_hash_map<int64_t, std::unique_ptr<uint64_t[]>> pages_;
  int64_t last_page_id_ = 0;
  uint64_t* last_page_ = nullptr;
  // The highest id inserted: asked mostly of new ids, above it, the set answers without a look-up.
  int64_t max_ = INT64_MIN;
};

// StepTimeline measures each device's time per profiler step as the trace arrives, in memory
// bounded by the steps and by the GPU events that wait for their launches. CUPTI writes a kernel
// a few events before its launch (roctracer after it): a device's events wait behind one whose
// launch is not seen yet, until the next chunk's launches are in. One still not launched then
// (its launch may not be in the trace) is set aside, to be swept when its launch comes, if that
// is still in start order in its step (else the caller collects), or never; past kKeptAside, only
// its id is remembered (its launch then makes the caller collect). A step must come before
// the launches inside it (Kineto writes its CPU side in start order, each step's annotation first),
// and the first before the first launch; a trace without steps then costs a test per chunk. Launch
// correlation ids are kept as runs of one step each (ids mostly increase) and one bit per id for
// whether its launch was seen.
class StepTimeline {
 public:
  // kMaxPending is how many activities (or ranges of dropped ones) may wait for their launches;
  // more, and the caller collects the trace instead.
  static constexpr size_t kMaxPending = size_t{1} << 20;

  // kKeptAside is how many set-aside activities are kept whole; beyond, those of the lowest ids
  // are dropped, remembered only as ranges of ids, and a launch of one of them comes too late.
  static constexpr size_t kKeptAside = size_t{1} << 12;

  // kStreamedOpenSteps is how many of a device's steps are swept at once, streaming.
  static constexpr size_t kStreamedOpenSteps = 8;

  // `max_open_steps`: how many of a device's steps are swept at once; an activity of a step
  // already closed makes AddActivity() fail (streaming); unlimited when collecting.
  // `keep_figures`: keep each device's figures per step (their idle split and integrity from
  // `launches`, which must know the launch of each activity swept) and the steps' names, else
  // only the steps' GPU spans.
  explicit StepTimeline(size_t max_open_steps = kStreamedOpenSteps, bool keep_figures = true,
                        LaunchTimes* launches = nullptr)
      : max_open_steps_(max_open_steps), keep_figures_(keep_figures), launches_(launches) {}

  // AddStep() takes a step annotation; false when it comes too late: it starts before the last
  // step or at or before a launch already seen, or no step came before the first launch or
  // activity (a late step could own them).
  bool AddStep(std::string_view name, int64_t start_ns, int64_t end_ns);
  // RecordCpuWaits() has each step's split, from now on, add the cpu_wait part of each of its
  // gaps to `cpu_waits`.
  void RecordCpuWaits(std::vector<CpuWaitSpan>* cpu_waits) { cpu_waits_ = cpu_waits; }
  // measuring() is false once the trace is known to have no steps before its launches.
  bool measuring() const { return state_ != State::kNoSteps; }
  // AddLaunch() takes a launch; a second launch of one correlation id is ignored. False when an
  // activity of this launch was dropped (kKeptAside).
  bool AddLaunch(int64_t ts_ns, int64_t correlation);
  // NextChunk() starts the next chunk: call it before the chunk's steps and launches.
  void NextChunk() { ++chunk_; }
  // AddActivity() takes a device's next activity in start order: swept when its launch is seen
  // and none waits before it, else waiting; false when it starts before the device's previous
  // one, or belongs to a step already closed.
  bool AddActivity(const StepActivity& a);
  // AddRun() takes a device's next activities, `run`'s (of `activities`, the chunk's, kernels
  // named in `name_kinds`), as AddActivity() does each, but whole (`run_sweep`, null for a run of
  // one) where they join their step's sweep after its end.
  bool AddRun(const LaunchRun& run, const DeviceSweep* run_sweep,
              const std::vector<GpuActivity>& activities,
              const std::vector<GpuActivityKind>& name_kinds);
  // Release() sweeps the waiting activities whose launches are now seen, in start order, and sets
  // aside those that waited through a chunk; false when one is out of order in its step.
  bool Release();
  // pending() is how many activities wait for their launches, or ranges of dropped ones.
  size_t pending() const { return pending_ + dropped_.size(); }
  // Finish() gives `timeline` each device's figures per step (activities whose launch never came
  // count in no step) and the steps, with their names; each of its devices must be listed
  // already. False when an activity fails as in AddActivity().
  bool Finish(GpuTimeline* timeline);

 private:
  enum class State : uint8_t { kSteps, kNoSteps, kTracking };
  struct Run {  // the seen launches from `first` to the next run's are in `step`
    int64_t first = 0;
    uint32_t step = 0;
  };
  struct IdRange {
    int64_t first = 0, last = 0;
  };
  // StepIdle is a step's idle split and integrity on a device, kept as its activities are swept
  // (in start order, each one's launch known): the last gap stays open while an activity may
  // still start at its end.
  class StepIdle {
   public:
    // `cpu_waits`, when not null, gets the cpu_wait part of each gap, as of `device` and `step`.
    StepIdle(std::vector<CpuWaitSpan>* cpu_waits, int32_t device, uint32_t step)
        : cpu_waits_(cpu_waits), device_(device), step_(step) {}
    void Add(int64_t start_ns, int64_t end_ns, int32_t stream, int64_t launch_start_ns,
             int64_t launch_end_ns, int64_t correlation);
    void Close();
    const IdleSplit& idle() const { return idle_; }
    const TraceIntegrity& integrity() const { return integrity_; }

   private:
    std::vector<CpuWaitSpan>* cpu_waits_;
    int32_t device_;
    uint32_t step_;
    bool any_ = false, gap_open_ = false;
    int64_t busy_end_ns_ = 0;
    int64_t gap_start_ns_ = 0, gap_end_ns_ = 0, gap_launch_end_ns_ = 0, gap_launch_ = 0;
    IdleSplit idle_;
    TraceIntegrity integrity_;
    StreamEnds streams_;
  };
  struct StepSweep {
    DeviceSweep sweep;
    StepIdle idle;
  };
  std::vector<CpuWaitSpan>* cpu_waits_ = nullptr;
  struct Device {
    int32_t device = 0;
    bool any = false;
    int64_t last_start_ns = 0;
    std::deque<StepActivity> queue;  // waiting, in start order, the first not launched yet
    std::vector<std::pair<uint32_t, StepSweep>> open;  // by step
    std::vector<StepFigures> closed;
    bool any_closed = false;
    uint32_t closed_up_to = 0;  // the highest closed step
  };

  void Track();  // leaves kSteps: orders the steps, drops nested ones
  uint32_t StepAt(int64_t ts_ns);
  // StepOfSeen() is a seen launch's step, kOutsideSteps outside steps.
  uint32_t StepOfSeen(int64_t correlation);
  Device& DeviceOf(int32_t device);
  bool Sweep(Device* d, const StepActivity& a, uint32_t step);
  // OpenSweep() is the sweep of `step` on `d`, opened if need be; null when the step is closed.
  StepSweep* OpenSweep(Device* d, uint32_t step);
  // AddIdle() adds an activity to its step's idle split and integrity (with keep_figures_);
  // false when its launch is not known.
  bool AddIdle(StepSweep* sweep, int64_t start_ns, int64_t end_ns, int32_t stream,
               int64_t correlation);
  void Close(Device* d, size_t open_index);

  size_t max_open_steps_;
  bool keep_figures_;
  LaunchTimes* launches_;
  State state_ = State::kSteps;
  std::vector<ProfilerStep> steps_;
  InternedStrings names_;
  std::vector<uint32_t> name_of_;  // per step, with keep_figures_
  size_t step_cursor_ = 0;
  bool any_launch_ = false;
  int64_t last_launch_ns_ = 0;         // the latest launch seen
  int64_t last_correlation_seen_ = 0;  // the highest launch correlation seen
  std::vector<Run> runs_;              // by first
  size_t run_cursor_ = 0;
  CorrelationSet seen_;  // the ids whose launch was seen
  std::vector<Device> devices_;
  size_t device_cursor_ = 0;
  size_t pending_ = 0;
  uint32_t chunk_ = 0;
  // Activities not launched a chunk later, or launched by an id below the launches seen (the
  // launch may not be in the trace), by correlation id; those whose launch came since, in order.
  std::vector<StepActivity> aside_;
  int64_t aside_max_correlation_ = INT64_MIN;
  std::vector<StepActivity> launched_aside_;
  // Ids of activities dropped from aside_, as ranges, by first: an id inside a range that was not
  // dropped had been launched already when the range grew over it (so that ranges merge).
  std::vector<IdRange> dropped_;
  int64_t dropped_max_ = INT64_MIN;
  void SetAside(const StepActivity& a);
  void DropAside();
  void Drop(int64_t correlation);
  bool Dropped(int64_t correlation) const;
  bool AllSeenBetween(int64_t after, int64_t before);
};

// GpuTimelinePath is how a trace's GPU timeline was measured.
enum class GpuTimelinePath : uint8_t {
  kStreamed,   // swept as the chunks arrived
  kCollected,  // activities kept whole and sorted (why: GpuTimeline::collected_reason)
  kReadAgain,  // streaming failed (why: collected_reason): the pipeline reads the trace again,
               // collecting, before anything reads the figures
};

// Collective is one communication kernel: what lets `merge` match the i-th collective of a kind
// across the ranks of a run and measure how long each rank waited in it.
struct Collective {
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  int32_t device = 0;
  uint32_t name = 0;  // index into the trace's names
};

// GpuTimeline is a trace's GPU timeline: one entry per device that ran an activity, by device.
struct GpuTimeline {
  GpuTimelinePath path = GpuTimelinePath::kStreamed;
  std::string collected_reason;
  std::vector<DeviceTimeline> devices;
  // The launches per API over all devices, by API name (a launch counts once per device).
  std::vector<LaunchStats> launches;
  // What the CPU ran while the GPUs waited on it, over all devices (IdleSplit::cpu_ops).
  std::optional<std::vector<CpuOpTime>> cpu_ops;
  // The cpu_wait parts of the gaps, devices' and steps', while the CPU side is read: kept until
  // AttributeCpuWaits() finds the CPU ops that ran in them.
  std::vector<CpuWaitSpan> cpu_wait_spans;
  // The communication kernels, by device and start: 24 bytes each, as many as the collectives.
  std::vector<Collective> collectives;
  // Kernel, memcpy and memset events left out: ts or dur missing or not a number, or dur < 0.
  uint64_t events_skipped = 0;
  // The profiler steps, in start order (none when the trace has no step annotations), and with
  // per-step figures (PipelineOptions::step_figures) each one's name: step_names[step_name_of[i]].
  std::vector<ProfilerStep> steps;
  InternedStrings step_names;
  std::vector<uint32_t> step_name_of;
  // Step annotations left out: ts or dur missing or not a number, or dur < 0.
  uint64_t steps_skipped = 0;
};

// StepSpans is how long a trace's steps took on the GPU: the median, shortest and longest GPU span
// (ProfilerStep::span_ns()) of the steps that ran an activity. The median of an even count is the
// mean of the two middle spans, rounded down to the nanosecond.
struct StepSpans {
  size_t steps = 0;            // every step
  size_t with_activities = 0;  // those the figures are of
  int64_t median_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
};
StepSpans StepSpansOf(const GpuTimeline& timeline);

// SweepCollected() sorts `activities` by device and start and sweeps them; `kind_of_name` gives a
// kernel's kind from its name index.
template <typename KindOfName>
std::vector<DeviceTimeline> SweepCollected(std::vector<GpuActivity> activities,
                                           KindOfName&& kind_of_name);

// SortByDeviceAndStart() puts activities in the order the sweeps take them. Kineto mostly
// writes them in that order already: when [0, middle) and [middle, end) each are (a chunk's
// kernels, then its transfers), they are merged in linear time instead, [middle, end) waiting in
// `scratch` (the caller's, kept for its capacity, or a local one when null).
void SortByDeviceAndStart(std::vector<GpuActivity>* activities, size_t middle = 0,
                          std::vector<GpuActivity>* scratch = nullptr);

template <typename KindOfName>
std::vector<DeviceTimeline> SweepCollected(std::vector<GpuActivity> activities,
                                           KindOfName&& kind_of_name) {
  SortByDeviceAndStart(&activities);
  std::vector<DeviceTimeline> devices;
  DeviceSweep sweep;
  for (size_t i = 0; i < activities.size(); ++i) {
    const GpuActivity& a = activities[i];
    sweep.Add(a.start_ns, a.end_ns,
              a.name == kTransferName ? GpuActivityKind::kMemcpy : kind_of_name(a.name));
    if (i + 1 == activities.size() || activities[i + 1].device != a.device) {
      devices.push_back(DeviceTimeline{a.device, sweep.Figures(), {}, {}, {}, {}});
      sweep = DeviceSweep();
    }
  }
  return devices;
}

}  // namespace tracefuse

#endif  // TRACEFUSE_REDUCE_GPU_TIMELINE_H_
