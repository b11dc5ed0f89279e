// Part of stage 5, library tracefuse_reduce: why each GPU waits, and how its work was launched.
//
// LaunchJoin joins a trace's launches (runtime and driver calls with a correlation id) with the
// GPU activities they start, as the trace streams by, to give each device its IdleSplit, its
// LaunchStats per API and its TraceIntegrity (gpu_timeline.h defines them). A device's activities
// come in start order, so its gaps are found as they arrive; a gap needs the launch of the activity
// that ends it, and a launch's statistics need its first activity on the device. CUPTI writes a
// kernel a few events before its launch, roctracer after it: what waits for a launch not seen yet
// is kept by correlation id and settled when the launch comes, or as having none once it has
// waited kWindowChunks chunks (its id remembered: should the launch come after all, the caller
// collects the trace instead). Launches are kept while they are recent, in two generations of
// kWindowChunks chunks each: one unused for a whole generation is dropped (after kWindowChunks to
// twice that many chunks), its id remembered; an activity that needs a dropped launch makes the
// caller collect the trace instead. Generations cost a store per launch (Generation) and a pass
// over the old one per kWindowChunks chunks, where ageing each launch on its own cost a queue
// entry, a look-up and an erase besides.
#ifndef TRACEFUSE_REDUCE_LAUNCH_JOIN_H_
#define TRACEFUSE_REDUCE_LAUNCH_JOIN_H_

#include <algorithm>
#include <array>
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

class LaunchJoin : public LaunchTimes {
 public:
  // kWindowChunks is how many chunks a generation of launches spans.
  static constexpr uint32_t kWindowChunks = 16;
  // kMaxWaiting is how many gaps and first activities may wait for their launches; more, and the
  // caller collects the trace instead.
  static constexpr size_t kMaxWaiting = size_t{1} << 20;

  // NextChunk() starts the next chunk (call it before the chunk's launches and activities): drops
  // the launches unused for a generation and settles what waited kWindowChunks chunks.
  void NextChunk();
  // AddLaunches() takes a chunk's launches, their names in `apis`; a second launch of one
  // correlation id is ignored. False when a launch comes after its activities stopped waiting.
  bool AddLaunches(const std::vector<Launch>& launches, const InternedStrings& apis);
  // AddActivity() takes a device's next activity in start order (`stream` -1: none); false when
  // its launch was dropped while the activity needs it. Inline up to the look-up of its launch:
  // it runs for every GPU event, and most share the launch of the one before (a graph replay's).
  bool AddActivity(int32_t device, int64_t start_ns, int64_t end_ns, int64_t correlation,
                   int32_t stream) {
    Device& d = DeviceOf(device);
    d.integrity.activity_ns += end_ns - start_ns;
    Overlap(&d, start_ns, end_ns, stream);
    if (d.any && start_ns > d.busy_end_ns) {
      Close(&d);
      d.open = Gap{device, d.busy_end_ns, start_ns};
      d.open_id = next_gap_++;
    } else if (d.open_id != kNoGap && start_ns > d.open.end_ns) {
      Close(&d);
    }
    d.busy_end_ns = d.any ? std::max(d.busy_end_ns, end_ns) : end_ns;
    d.any = true;
    const bool candidate = d.open_id != kNoGap;
    if (correlation == kNoCorrelation) return true;
    if (correlation != d.last_counted) {
      return AddActivityOfLaunch(&d, start_ns, end_ns, correlation, candidate);
    }
    // The next activity of the launch of the one before.
    BeforeLaunch(&d, start_ns, end_ns - start_ns, d.last_counted_start_ns);
    if (candidate) d.open.TakeLaunch(d.last_counted_end_ns, correlation);
    return true;
  }
  // AddRun() takes a run of a device's next `n` activities that share a launch (LaunchRun), as
  // AddActivity() each; where the run's launch is known and nothing before the run covers it, the
  // later ones without a look-up or a gap of their own to open and close.
  bool AddRun(const GpuActivity* run, size_t n);
  bool FindLaunch(int64_t correlation, int64_t* start_ns, int64_t* end_ns) override;
  // RecordCpuWaits() has each device's split, from now on, add the cpu_wait part of each of its
  // gaps to `cpu_waits`.
  void RecordCpuWaits(std::vector<CpuWaitSpan>* cpu_waits) { cpu_waits_ = cpu_waits; }
  // waiting() is how many gaps and first activities wait for their launches.
  size_t waiting() const { return waiting_count_; }
  // Finish() settles what still waits (its launch is not in the trace) and gives each device of
  // `timeline`, all listed already, its IdleSplit and LaunchStats, and `timeline` its
  // LaunchStats over all devices.
  void Finish(GpuTimeline* timeline);

 private:
  struct KnownLaunch {
    int64_t end_ns = 0;
    int64_t dur_ns = 0;
    static constexpr uint32_t kNoLaunch = UINT32_MAX;
    uint32_t api = kNoLaunch;  // index into apis_; kNoLaunch: a slot of Generation without one
    uint32_t devices = 0;      // bit d: its first activity on device d (< 32) is counted

    bool known() const { return api != kNoLaunch; }
  };
  // Generation holds one generation's launches by correlation id: in slots indexed from its first
  // id while at least half the slots up to the last hold a launch (ids come mostly in order, one
  // per runtime call), the others in a hash map. A look-up of the next launches then reads the
  // cache lines the one before read, where a hash map's reads one line per id at random.
  class Generation {
   public:
    KnownLaunch* Find(int64_t correlation) {
      const uint64_t slot = static_cast<uint64_t>(correlation) - static_cast<uint64_t>(first_);
      if (slot < slots_.size() && slots_[slot].known()) return &slots_[slot];
      if (others_.empty()) return nullptr;
      auto it = others_.find(correlation);
      return it == others_.end() ? nullptr : &it->second;
    }
    bool Contains(int64_t correlation) {
      return correlation <= max_ && Find(correlation) != nullptr;
    }
    // Insert() adds `launch` unless one of `correlation` is in: the one in, and whether added.
    std::pair<KnownLaunch*, bool> Insert(int64_t correlation, const KnownLaunch& launch);
    void Erase(int64_t correlation);
    // ForEachId() calls `f` with each launch's id.
    template <typename F>
    void ForEachId(F f) const {
      for (size_t slot = 0; slot < slots_.size(); ++slot) {
        if (slots_[slot].known()) f(first_ + static_cast<int64_t>(slot));
      }
      for (const auto& [correlation, launch] : others_) f(correlation);
    }
    // Clear() empties it, keeping room for as many slots as it had.
    void Clear();
    int64_t max() const { return max_; }

   private:
    static constexpr size_t kSlack = 64;  // slots allowed beyond twice those that hold launches
    int64_t first_ = 0;
    std::vector<KnownLaunch> slots_;
    size_t in_slots_ = 0;
    absl::flat_hash_map<int64_t, KnownLaunch> others_;
    int64_t max_ = INT64_MIN;
  };
  static constexpr uint64_t kNoGap = UINT64_MAX;
  // A gap: open while activities may still start at its end, then closed, and kept in gaps_
  // while launches of those activities have not come.
  struct Gap {
    int32_t device = 0;
    int64_t start_ns = 0, end_ns = 0;
    // Of the launches known so far, the one that ended first (of those, the lowest id).
    int64_t first_launch_end_ns = INT64_MAX;
    int64_t first_launch = 0;
    uint32_t unknown = 0;  // candidates whose launch has not come yet

    void TakeLaunch(int64_t end_ns, int64_t correlation) {
      if (std::pair(end_ns, correlation) < std::pair(first_launch_end_ns, first_launch)) {
        first_launch_end_ns = end_ns;
        first_launch = correlation;
      }
    }
  };
  // What waits for the launch of one correlation id: a gap (`gap`), or an activity on `device`
  // (starting at `start_ns`, lasting `dur_ns`): the launch's first there, or a later one, which
  // only needs to know whether it started before its launch.
  enum class WaiterKind : uint8_t { kGap, kFirst, kLater };
  struct Waiter {
    WaiterKind kind = WaiterKind::kGap;
    int32_t device = 0;
    uint64_t gap = kNoGap;
    int64_t start_ns = 0;
    int64_t dur_ns = 0;
  };
  // ValueSet is a multiset of nanosecond values, for exact quantiles: counted by value while
  // they are few distinct ones (a call's duration often is), else in two bytes a value, each in
  // the bucket of its 2^16 ns as its low 16 bits.
  class ValueSet {
   public:
    ValueSet() = default;
    // Moved or copied, it forgets the entry added to last: the pointers are into the maps.
    ValueSet(const ValueSet& other) : counts_(other.counts_), buckets_(other.buckets_) {}
    ValueSet(ValueSet&& other) noexcept
        : counts_(std::move(other.counts_)), buckets_(std::move(other.buckets_)) {}
    ValueSet& operator=(ValueSet other) noexcept {
      counts_ = std::move(other.counts_);
      buckets_ = std::move(other.buckets_);
      last_count_ = nullptr;
      last_bucket_ = nullptr;
      return *this;
    }

    // Add() adds `value` `times` times.
    void Add(int64_t value, uint64_t times = 1);
    // AddAll() adds every value of `other`.
    void AddAll(const ValueSet& other);
    // QuantilesOf() is the quantiles of the `n` values added.
    Quantiles QuantilesOf(uint64_t n) const;

   private:
    static constexpr size_t kMaxCounted = 256;
    absl::flat_hash_map<int64_t, uint64_t> counts_;
    absl::flat_hash_map<int64_t, std::vector<uint16_t>> buckets_;
    // The entry added to last: launches in a row mostly take as long, and start as soon.
    int64_t last_value_ = 0, last_bucket_key_ = 0;
    uint64_t* last_count_ = nullptr;
    std::vector<uint16_t>* last_bucket_ = nullptr;
  };
  struct ApiCounts {
    uint64_t count = 0;
    ValueSet cpu, delay;
  };
  // LaunchStatsOf() is the statistics of each API's launches in `apis`, by name.
  std::vector<LaunchStats> LaunchStatsOf(const std::vector<ApiCounts>& apis) const;
  struct Device {
    int32_t device = 0;
    bool any = false;
    int64_t busy_end_ns = 0;  // the furthest end so far
    // The last gap, while activities may still start at its end (open_id kNoGap: none), and
    // the last launch counted here, whose next activities need no look-up.
    Gap open;
    uint64_t open_id = kNoGap;
    int64_t last_counted = kNoCorrelation;
    int64_t last_counted_start_ns = 0;  // that launch's call start and end
    int64_t last_counted_end_ns = 0;
    IdleSplit idle;
    TraceIntegrity integrity;
    StreamEnds streams;
    std::vector<ApiCounts> apis;  // by index into apis_
  };

  // DeviceOf() is `device`'s entry, added if new; activities come in runs of one device.
  Device& DeviceOf(int32_t device) {
    if (device_cursor_ < devices_.size() && devices_[device_cursor_].device == device) {
      return devices_[device_cursor_];
    }
    return FindDevice(device);
  }
  Device& FindDevice(int32_t device);
  KnownLaunch* Find(int64_t correlation);
  // Counted() says whether `launch`'s first activity on `device` is counted, and marks it so.
  bool Counted(KnownLaunch* launch, int64_t correlation, int32_t device);
  void Count(Device* d, const KnownLaunch& launch, int64_t start_ns);
  // Settle() adds a complete gap with no launch left to come to `idle`, its device's split.
  // Inline, as Close(): a graph replay leaves a gap between most of its kernels.
  void Settle(const Gap& gap, IdleSplit* idle) {
    ++idle->gaps;
    if (gap.first_launch_end_ns == INT64_MAX) {
      idle->unattributed_ns += gap.end_ns - gap.start_ns;
      return;
    }
    const int64_t e = std::clamp(gap.first_launch_end_ns, gap.start_ns, gap.end_ns);
    idle->cpu_wait_ns += e - gap.start_ns;
    idle->launch_latency_ns += gap.end_ns - e;
    if (cpu_waits_ != nullptr && e > gap.start_ns) {
      cpu_waits_->push_back(CpuWaitSpan{gap.first_launch, gap.start_ns, e, gap.device});
    }
  }
  void Wait(int64_t correlation, Waiter waiter);
  // GiveUp() settles what waits for the launch of `correlation` as having none.
  void GiveUp(int64_t correlation);
  // AddActivityOfLaunch() is AddActivity() of an activity whose launch is not the one before's.
  bool AddActivityOfLaunch(Device* d, int64_t start_ns, int64_t end_ns, int64_t correlation,
                           bool candidate);
  // Overlap() counts an activity that starts before the earlier ones of its stream end.
  static void Overlap(Device* d, int64_t start_ns, int64_t end_ns, int32_t stream) {
    const int64_t overlap = d->streams.Overlap(stream, start_ns, end_ns);
    if (overlap == 0) return;
    ++d->integrity.same_stream_overlaps;
    d->integrity.same_stream_overlap_ns += overlap;
    d->integrity.involved_ns += overlap;
  }
  // BeforeLaunch() counts an activity that starts before its launch call.
  static void BeforeLaunch(Device* d, int64_t start_ns, int64_t dur_ns, int64_t launch_start_ns) {
    if (start_ns >= launch_start_ns) return;
    ++d->integrity.before_launch;
    d->integrity.involved_ns += dur_ns;
  }
  // Close() closes the device's open gap: settled, or kept while launches of it have not come.
  void Close(Device* d) {
    if (d->open_id == kNoGap) return;
    if (d->open.unknown == 0) {
      Settle(d->open, &d->idle);
    } else {
      gaps_.emplace(d->open_id, d->open);
    }
    d->open_id = kNoGap;
  }

  uint32_t chunk_ = 0;
  std::vector<CpuWaitSpan>* cpu_waits_ = nullptr;
  std::vector<std::string> apis_;
  StringMap<uint32_t> api_ids_;
  std::vector<uint32_t> chunk_api_;  // AddLaunches()'s scratch: chunk's api index -> apis_
  // The launches added or used in this generation, and those of the one before.
  Generation launches_, older_;
  uint32_t generation_start_ = 0;  // the chunk this generation began at
  CorrelationSet dropped_;
  // Counted first activities on devices 32 and above (KnownLaunch::devices holds the rest).
  absl::flat_hash_map<std::pair<int64_t, int32_t>, bool> counted_high_;
  std::vector<Device> devices_;
  size_t device_cursor_ = 0;
  absl::flat_hash_map<uint64_t, Gap> gaps_;  // closed, waiting for launches
  uint64_t next_gap_ = 0;
  absl::flat_hash_map<int64_t, std::vector<Waiter>> waiting_;
  // How many ids wait per slot of their low bits: most launches have no waiter, and find none
  // here without a look-up in waiting_.
  static constexpr size_t kWaitingFilterSlots = 4096;
  std::array<uint32_t, kWaitingFilterSlots> waiting_filter_{};
  size_t waiting_count_ = 0;
  std::deque<std::pair<uint32_t, int64_t>> waiting_by_age_;  // (chunk it began, id), oldest first
  CorrelationSet given_up_;  // ids whose activities stopped waiting for their launch
};

}  // namespace tracefuse

#endif  // TRACEFUSE_REDUCE_LAUNCH_JOIN_H_
