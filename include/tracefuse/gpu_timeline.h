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
#ifndef TRACEFUSE_GPU_TIMELINE_H_
#define TRACEFUSE_GPU_TIMELINE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tracefuse {

// kTransferName is GpuActivity::name for a memcpy or memset.
inline constexpr uint32_t kTransferName = UINT32_MAX;

// GpuActivity is one GPU event with a numeric ts and a dur >= 0: a kernel (`name` its name's
// index, in the chunk's or the trace's names) or a transfer (kTransferName).
struct GpuActivity {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t device = 0;  // args.device, else the event's pid
  uint32_t name = kTransferName;
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

// DeviceTimeline is one device's figures.
struct DeviceTimeline {
  int32_t device = 0;
  GpuTimeFigures figures;
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
  // The communication kernels, by device and start: 24 bytes each, as many as the collectives.
  std::vector<Collective> collectives;
  // Kernel, memcpy and memset events left out: ts or dur missing or not a number, or dur < 0.
  uint64_t events_skipped = 0;
};

// SweepCollected() sorts `activities` by device and start and sweeps them; `kind_of_name` gives a
// kernel's kind from its name index.
template <typename KindOfName>
std::vector<DeviceTimeline> SweepCollected(std::vector<GpuActivity> activities,
                                           KindOfName&& kind_of_name);

// SortByDeviceAndStart() puts activities in the order the sweeps take them. Kineto mostly
// writes them in that order already: when [0, middle) and [middle, end) each are (a chunk's
// kernels, then its transfers), they are merged in linear time instead.
void SortByDeviceAndStart(std::vector<GpuActivity>* activities, size_t middle = 0);

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
      devices.push_back(DeviceTimeline{a.device, sweep.Figures()});
      sweep = DeviceSweep();
    }
  }
  return devices;
}

}  // namespace tracefuse

#endif  // TRACEFUSE_GPU_TIMELINE_H_
