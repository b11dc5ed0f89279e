// Part of stage 5, library tracefuse_reduce: why each GPU waits, and how its work was launched.
//
// LaunchJoin joins a trace's launches (runtime and driver calls with a correlation id) with the
// GPU activities they start, as the trace streams by, to give each device its IdleSplit and its
// LaunchStats per API (gpu_timeline.h defines both). A device's activities come in start order,
// so its gaps are found as they arrive; a gap needs the launch of the activity that ends it, and a
// launch's statistics need its first activity on the device. CUPTI writes a kernel a few events
// before its launch, roctracer after it: what waits for a launch not seen yet is kept by
// correlation id and settled when the launch comes (or, at the end, as having none). Launches are
// kept while they are recent: one unused for kWindowChunks chunks is dropped, its id remembered in
// a bit set; an activity that needs a dropped launch makes the caller collect the trace instead.
#ifndef TRACEFUSE_REDUCE_LAUNCH_JOIN_H_
#define TRACEFUSE_REDUCE_LAUNCH_JOIN_H_

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tracefuse/base/strings.h"
#include "tracefuse/parse/chunk_parser.h"
#include "tracefuse/reduce/gpu_timeline.h"

namespace tracefuse {

class LaunchJoin {
 public:
  // kWindowChunks is how many chunks a launch is kept after it was last used.
  static constexpr uint32_t kWindowChunks = 16;
  // kMaxWaiting is how many gaps and first activities may wait for their launches; more, and the
  // caller collects the trace instead.
  static constexpr size_t kMaxWaiting = size_t{1} << 20;

  // NextChunk() starts the next chunk (call it before the chunk's launches and activities) and
  // drops the launches unused for kWindowChunks chunks.
  void NextChunk();
  // AddLaunches() takes a chunk's launches, their names in `apis`; a second launch of one
  // correlation id is ignored.
  void AddLaunches(const std::vector<Launch>& launches, const InternedStrings& apis);
  // AddActivity() takes a device's next activity in start order; false when its launch was
  // dropped while the activity needs it.
  bool AddActivity(int32_t device, int64_t start_ns, int64_t end_ns, int64_t correlation);
  // waiting() is how many gaps and first activities wait for their launches.
  size_t waiting() const { return waiting_count_; }
  // Finish() settles what still waits (its launch is not in the trace) and gives each device of
  // `timeline`, all listed already, its IdleSplit and LaunchStats.
  void Finish(GpuTimeline* timeline);

 private:
  struct KnownLaunch {
    int64_t end_ns = 0;
    int64_t dur_ns = 0;
    uint32_t api = 0;         // index into apis_
    uint32_t last_chunk = 0;  // when it was last used
    uint64_t devices = 0;     // bit d: its first activity on device d (< 64) is counted
  };
  static constexpr uint64_t kNoGap = UINT64_MAX;
  // A gap: open while activities may still start at its end, then closed, and kept in gaps_
  // while launches of those activities have not come.
  struct Gap {
    int32_t device = 0;
    int64_t start_ns = 0, end_ns = 0;
    int64_t first_launch_end_ns = INT64_MAX;  // of the launches known so far
    uint32_t unknown = 0;                     // candidates whose launch has not come yet
  };
  // What waits for the launch of one correlation id: a gap (`gap`) or a first activity on a
  // device (`device`, `start_ns`).
  struct Waiter {
    uint64_t gap = kNoGap;
    int32_t device = 0;
    int64_t start_ns = 0;
  };
  // Values counted by value, for exact quantiles in memory that grows with distinct values only.
  using ValueCounts = absl::flat_hash_map<int64_t, uint64_t>;
  struct ApiCounts {
    uint64_t count = 0;
    ValueCounts cpu, delay;
  };
  struct Device {
    int32_t device = 0;
    bool any = false;
    int64_t busy_end_ns = 0;  // the furthest end so far
    // The last gap, while activities may still start at its end (open_id kNoGap: none), and
    // the last launch counted here, whose next activities need no look-up.
    Gap open;
    uint64_t open_id = kNoGap;
    int64_t last_counted = kNoCorrelation;
    IdleSplit idle;
    absl::flat_hash_map<uint32_t, ApiCounts> apis;
  };

  Device& DeviceOf(int32_t device);
  KnownLaunch* Find(int64_t correlation);
  // Counted() says whether `launch`'s first activity on `device` is counted, and marks it so.
  bool Counted(KnownLaunch* launch, int64_t correlation, int32_t device);
  void Count(Device* d, const KnownLaunch& launch, int64_t start_ns);
  // Settle() adds a complete gap with no launch left to come to its device's split.
  void Settle(const Gap& gap);
  void Wait(int64_t correlation, const Waiter& waiter);
  void Close(Device* d);

  uint32_t chunk_ = 0;
  std::vector<std::string> apis_;
  StringMap<uint32_t> api_ids_;
  std::vector<uint32_t> chunk_api_;  // AddLaunches()'s scratch: chunk's api index -> apis_
  absl::flat_hash_map<int64_t, KnownLaunch> launches_;
  std::deque<std::pair<uint32_t, int64_t>> by_age_;  // (chunk added, id), oldest first
  CorrelationSet dropped_;
  // Counted first activities on devices 64 and above (KnownLaunch::devices holds the rest).
  absl::flat_hash_map<std::pair<int64_t, int32_t>, bool> counted_high_;
  std::vector<Device> devices_;
  size_t device_cursor_ = 0;
  absl::flat_hash_map<uint64_t, Gap> gaps_;  // closed, waiting for launches
  uint64_t next_gap_ = 0;
  absl::flat_hash_map<int64_t, std::vector<Waiter>> waiting_;
  size_t waiting_count_ = 0;
};

}  // namespace tracefuse

#endif  // TRACEFUSE_REDUCE_LAUNCH_JOIN_H_
