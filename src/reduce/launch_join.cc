#include "tracefuse/reduce/launch_join.h"

#include <algorithm>

namespace tracefuse {
namespace {

// ReserveFor() makes room in `v` for `n` elements, growing it by a quarter at a time: LaunchJoin's
// vectors are kept for the whole trace, where doubling would leave up to half of each unused.
template <typename T>
void ReserveFor(std::vector<T>* v, size_t n) {
  if (n > v->capacity()) v->reserve(std::max(n, v->capacity() + v->capacity() / 4 + 16));
}

// AppendCopies() appends `times` copies of `value` to `v`.
void AppendCopies(std::vector<uint16_t>* v, uint64_t times, uint16_t value) {
  ReserveFor(v, v->size() + times);
  v->insert(v->end(), times, value);
}

}  // namespace

// --- LaunchJoin ---------------------------------------------------------------------------------

void LaunchJoin::NextChunk() {
  ++chunk_;
  while (!waiting_by_age_.empty() && waiting_by_age_.front().first + kWindowChunks < chunk_) {
    GiveUp(waiting_by_age_.front().second);
    waiting_by_age_.pop_front();
  }
  if (chunk_ - generation_start_ < kWindowChunks) return;
  older_.ForEachId([this](int64_t correlation) { dropped_.Insert(correlation); });
  older_.Clear();
  std::swap(older_, launches_);
  generation_start_ = chunk_;
}

void LaunchJoin::GiveUp(int64_t correlation) {
  auto waiting = waiting_.find(correlation);
  if (waiting == waiting_.end()) return;
  for (const Waiter& w : waiting->second) {
    if (w.kind != WaiterKind::kGap) continue;
    Device& d = DeviceOf(w.device);
    if (d.open_id == w.gap) {
      --d.open.unknown;
      continue;
    }
    auto gap = gaps_.find(w.gap);
    if (--gap->second.unknown == 0) {
      Settle(gap->second, &DeviceOf(gap->second.device).idle);
      gaps_.erase(gap);
    }
  }
  waiting_count_ -= waiting->second.size();
  waiting_.erase(waiting);
  --waiting_filter_[correlation & (kWaitingFilterSlots - 1)];
  given_up_.Insert(correlation);
}

bool LaunchJoin::AddLaunches(const std::vector<Launch>& launches, const InternedStrings& apis) {
  chunk_api_.resize(apis.size());
  for (size_t i = 0; i < apis.size(); ++i) {
    auto [it, inserted] = api_ids_.try_emplace(apis[i], static_cast<uint32_t>(apis_.size()));
    if (inserted) apis_.emplace_back(apis[i]);
    chunk_api_[i] = it->second;
  }
  for (const Launch& l : launches) {
    if (l.correlation == kNoCorrelation || dropped_.Contains(l.correlation)) continue;
    if (given_up_.Contains(l.correlation)) return false;
    if (older_.Contains(l.correlation)) continue;
    auto [launch, inserted] = launches_.Insert(
        l.correlation, KnownLaunch{l.ts_ns + l.dur_ns, l.dur_ns, chunk_api_[l.api], 0});
    if (!inserted) continue;
    if (waiting_filter_[l.correlation & (kWaitingFilterSlots - 1)] == 0) continue;
    auto waiting = waiting_.find(l.correlation);
    if (waiting == waiting_.end()) continue;
    const std::vector<Waiter> waiters = std::move(waiting->second);
    waiting_.erase(waiting);
    --waiting_filter_[l.correlation & (kWaitingFilterSlots - 1)];
    waiting_count_ -= waiters.size();
    for (const Waiter& w : waiters) {
      Device& d = DeviceOf(w.device);
      if (w.kind != WaiterKind::kGap) {
        BeforeLaunch(&d, w.start_ns, w.dur_ns, l.ts_ns);
        if (w.kind == WaiterKind::kFirst && !Counted(launch, l.correlation, w.device)) {
          Count(&d, *launch, w.start_ns);
        }
        continue;
      }
      const bool open = d.open_id == w.gap;
      Gap& gap = open ? d.open : gaps_.find(w.gap)->second;
      gap.TakeLaunch(l.ts_ns + l.dur_ns, l.correlation);
      if (--gap.unknown == 0 && !open) {
        Settle(gap, &d.idle);
        gaps_.erase(w.gap);
      }
    }
  }
  return true;
}

bool LaunchJoin::AddRun(const GpuActivity* run, size_t n) {
  const GpuActivity& first = run[0];
  if (!AddActivity(first.device, first.start_ns, first.end_ns, first.correlation, first.stream)) {
    return false;
  }
  Device& d = DeviceOf(first.device);
  // Where the run's launch is known (the later activities' candidate) and no activity before it
  // ends after its first, the run's own gaps are the device's, all ended by the run's launch.
  if (first.correlation == kNoCorrelation || d.last_counted != first.correlation ||
      d.busy_end_ns != first.end_ns) {
    for (size_t i = 1; i < n; ++i) {
      const GpuActivity& a = run[i];
      if (!AddActivity(a.device, a.start_ns, a.end_ns, a.correlation, a.stream)) return false;
    }
    return true;
  }
  const int64_t last_start_ns = run[n - 1].start_ns;
  if (d.open_id != kNoGap && last_start_ns > d.open.end_ns) Close(&d);
  int64_t busy_end_ns = d.busy_end_ns;
  for (size_t i = 1; i < n; ++i) {
    const GpuActivity& a = run[i];
    d.integrity.activity_ns += a.end_ns - a.start_ns;
    Overlap(&d, a.start_ns, a.end_ns, a.stream);
    BeforeLaunch(&d, a.start_ns, a.end_ns - a.start_ns, d.last_counted_start_ns);
    if (a.start_ns > busy_end_ns) {
      Gap gap{first.device, busy_end_ns, a.start_ns};
      gap.TakeLaunch(d.last_counted_end_ns, first.correlation);
      if (a.start_ns == last_start_ns) {
        d.open = gap;  // the run's last gap: the next run's first activity may start there too
        d.open_id = next_gap_++;
      } else {
        Settle(gap, &d.idle);
      }
    }
    busy_end_ns = std::max(busy_end_ns, a.end_ns);
  }
  d.busy_end_ns = busy_end_ns;
  return true;
}

LaunchJoin::Device& LaunchJoin::FindDevice(int32_t device) {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].device == device) {
      device_cursor_ = i;
      return devices_[i];
    }
  }
  devices_.push_back(Device{});
  devices_.back().device = device;
  device_cursor_ = devices_.size() - 1;
  return devices_.back();
}

bool LaunchJoin::FindLaunch(int64_t correlation, int64_t* start_ns, int64_t* end_ns) {
  const KnownLaunch* launch = Find(correlation);
  if (launch == nullptr) return false;
  *start_ns = launch->end_ns - launch->dur_ns;
  *end_ns = launch->end_ns;
  return true;
}

LaunchJoin::KnownLaunch* LaunchJoin::Find(int64_t correlation) {
  if (KnownLaunch* launch = launches_.Find(correlation)) return launch;
  KnownLaunch* old = older_.Find(correlation);
  if (old == nullptr) return nullptr;
  // Used again: it moves to this generation.
  KnownLaunch* launch = launches_.Insert(correlation, *old).first;
  older_.Erase(correlation);
  return launch;
}

std::pair<LaunchJoin::KnownLaunch*, bool> LaunchJoin::Generation::Insert(
    int64_t correlation, const KnownLaunch& launch) {
  if (KnownLaunch* in = Find(correlation)) return {in, false};
  max_ = std::max(max_, correlation);
  if (slots_.empty()) first_ = correlation;
  const uint64_t slot = static_cast<uint64_t>(correlation) - static_cast<uint64_t>(first_);
  if (slot < slots_.size() || slot < 2 * in_slots_ + kSlack) {
    if (slot >= slots_.size()) {
      ReserveFor(&slots_, slot + 1);
      slots_.resize(slot + 1);
    }
    slots_[slot] = launch;
    ++in_slots_;
    return {&slots_[slot], true};
  }
  return {&others_.emplace(correlation, launch).first->second, true};
}

void LaunchJoin::Generation::Erase(int64_t correlation) {
  const uint64_t slot = static_cast<uint64_t>(correlation) - static_cast<uint64_t>(first_);
  if (slot < slots_.size() && slots_[slot].known()) {
    slots_[slot].api = KnownLaunch::kNoLaunch;
    --in_slots_;
    return;
  }
  others_.erase(correlation);
}

void LaunchJoin::Generation::Clear() {
  slots_.clear();  // keeps its capacity: the next generation is mostly as large
  in_slots_ = 0;
  others_.clear();
  max_ = INT64_MIN;
}

bool LaunchJoin::Counted(KnownLaunch* launch, int64_t correlation, int32_t device) {
  if (device >= 0 && device < 32) {
    const uint32_t bit = uint32_t{1} << device;
    const bool counted = launch->devices & bit;
    launch->devices |= bit;
    return counted;
  }
  return !counted_high_.try_emplace(std::make_pair(correlation, device), true).second;
}

void LaunchJoin::Count(Device* d, const KnownLaunch& launch, int64_t start_ns) {
  if (d->apis.size() <= launch.api) d->apis.resize(launch.api + 1);
  ApiCounts& counts = d->apis[launch.api];
  ++counts.count;
  counts.cpu.Add(launch.dur_ns);
  counts.delay.Add(start_ns - launch.end_ns);
}

void LaunchJoin::Wait(int64_t correlation, Waiter waiter) {
  auto [it, inserted] = waiting_.try_emplace(correlation);
  if (inserted) {
    waiting_by_age_.emplace_back(chunk_, correlation);
    ++waiting_filter_[correlation & (kWaitingFilterSlots - 1)];
  }
  std::vector<Waiter>& waiters = it->second;
  if (waiter.kind == WaiterKind::kFirst) {  // later activities on the device start later
    for (const Waiter& w : waiters) {
      if (w.kind == WaiterKind::kFirst && w.device == waiter.device) {
        waiter.kind = WaiterKind::kLater;
        break;
      }
    }
  }
  waiters.push_back(waiter);
  ++waiting_count_;
}

bool LaunchJoin::AddActivityOfLaunch(Device* d, int64_t start_ns, int64_t end_ns,
                                     int64_t correlation, bool candidate) {
  KnownLaunch* launch = Find(correlation);
  if (launch == nullptr) {
    if (dropped_.Contains(correlation)) return false;
    Wait(correlation, Waiter{WaiterKind::kFirst, d->device, kNoGap, start_ns, end_ns - start_ns});
    if (candidate) {
      ++d->open.unknown;
      Wait(correlation, Waiter{WaiterKind::kGap, d->device, d->open_id, start_ns, 0});
    }
    return true;
  }
  const int64_t launch_start_ns = launch->end_ns - launch->dur_ns;
  BeforeLaunch(d, start_ns, end_ns - start_ns, launch_start_ns);
  if (!Counted(launch, correlation, d->device)) Count(d, *launch, start_ns);
  d->last_counted = correlation;
  d->last_counted_start_ns = launch_start_ns;
  d->last_counted_end_ns = launch->end_ns;
  if (candidate) d->open.TakeLaunch(launch->end_ns, correlation);
  return true;
}

void LaunchJoin::ValueSet::Add(int64_t value, uint64_t times) {
  if (buckets_.empty()) {
    if (last_count_ != nullptr && value == last_value_) {
      *last_count_ += times;
      return;
    }
    auto it = counts_.find(value);
    if (it == counts_.end() && counts_.size() < kMaxCounted) {
      it = counts_.emplace(value, 0).first;  // may move the others: last_count_ is this one's
    }
    if (it != counts_.end()) {
      it->second += times;
      last_value_ = value;
      last_count_ = &it->second;
      return;
    }
    for (const auto& [v, count] : counts_) {
      AppendCopies(&buckets_[v >> 16], count, static_cast<uint16_t>(v & 0xffff));
    }
    counts_.clear();
    last_count_ = nullptr;
  }
  const int64_t bucket = value >> 16;
  if (last_bucket_ == nullptr || bucket != last_bucket_key_) {
    last_bucket_ = &buckets_[bucket];  // may move the others: the pointer is this one's
    last_bucket_key_ = bucket;
  }
  AppendCopies(last_bucket_, times, static_cast<uint16_t>(value & 0xffff));
}

void LaunchJoin::ValueSet::AddAll(const ValueSet& other) {
  for (const auto& [value, count] : other.counts_) Add(value, count);
  for (const auto& [bucket, values] : other.buckets_) {
    for (uint16_t low : values) Add(bucket * 65536 + low);
  }
}

// The ceil(q * n)-th smallest values for q = 1/2, 9/10 and 1, by nearest rank.
Quantiles LaunchJoin::ValueSet::QuantilesOf(uint64_t n) const {
  const uint64_t ranks[] = {(n + 1) / 2, (9 * n + 9) / 10, n};
  if (buckets_.empty()) {
    std::vector<std::pair<int64_t, uint64_t>> sorted(counts_.begin(), counts_.end());
    std::sort(sorted.begin(), sorted.end());
    int64_t found[3] = {};
    uint64_t seen = 0;
    size_t next = 0;
    for (const auto& [value, count] : sorted) {
      seen += count;
      while (next < 3 && ranks[next] <= seen) found[next++] = value;
    }
    return Quantiles{found[0], found[1], found[2]};
  }
  std::vector<int64_t> keys;
  for (const auto& [bucket, values] : buckets_) keys.push_back(bucket);
  std::sort(keys.begin(), keys.end());
  int64_t found[3] = {};
  uint64_t below = 0;
  size_t next = 0;
  for (int64_t bucket : keys) {
    const std::vector<uint16_t>& values = buckets_.at(bucket);
    if (next < 3 && ranks[next] <= below + values.size()) {
      // Only the ranks wanted are put in place: a bucket may hold most of the values.
      std::vector<uint16_t> ranked = values;
      while (next < 3 && ranks[next] <= below + ranked.size()) {
        const auto nth = ranked.begin() + static_cast<std::ptrdiff_t>(ranks[next] - below - 1);
        std::nth_element(ranked.begin(), nth, ranked.end());
        found[next] = bucket * 65536 + *nth;
        ++next;
      }
    }
    below += values.size();
  }
  return Quantiles{found[0], found[1], found[2]};
}

void LaunchJoin::Finish(GpuTimeline* timeline) {
  for (Device& d : devices_) Close(&d);
  // What still waits has no launch in the trace: gaps settle with the launches they have.
  waiting_.clear();
  waiting_filter_.fill(0);
  waiting_count_ = 0;
  waiting_by_age_.clear();
  for (const auto& [id, gap] : gaps_) Settle(gap, &DeviceOf(gap.device).idle);
  gaps_.clear();
  for (DeviceTimeline& t : timeline->devices) {
    Device& d = DeviceOf(t.device);
    t.idle = d.idle;
    t.integrity = d.integrity;
    t.launches = LaunchStatsOf(d.apis);
  }
  if (timeline->devices.size() == 1) {
    timeline->launches = timeline->devices[0].launches;
    return;
  }
  // Over all devices: the same launch counts once per device it started work on.
  std::vector<ApiCounts> all(apis_.size());
  for (const Device& d : devices_) {
    for (size_t api = 0; api < d.apis.size(); ++api) {
      all[api].count += d.apis[api].count;
      all[api].cpu.AddAll(d.apis[api].cpu);
      all[api].delay.AddAll(d.apis[api].delay);
    }
  }
  timeline->launches = LaunchStatsOf(all);
}

std::vector<LaunchStats> LaunchJoin::LaunchStatsOf(const std::vector<ApiCounts>& apis) const {
  std::vector<LaunchStats> stats;
  for (size_t api = 0; api < apis.size(); ++api) {
    const ApiCounts& counts = apis[api];
    if (counts.count == 0) continue;
    stats.push_back(LaunchStats{apis_[api], counts.count, counts.cpu.QuantilesOf(counts.count),
                                counts.delay.QuantilesOf(counts.count)});
  }
  std::sort(stats.begin(), stats.end(),
            [](const LaunchStats& a, const LaunchStats& b) { return a.api < b.api; });
  return stats;
}

}  // namespace tracefuse
