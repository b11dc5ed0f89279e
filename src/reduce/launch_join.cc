#include "tracefuse/reduce/launch_join.h"

#include <algorithm>

namespace tracefuse {

// --- LaunchJoin ---------------------------------------------------------------------------------

void LaunchJoin::NextChunk() {
  ++chunk_;
  while (!by_age_.empty() && by_age_.front().first + kWindowChunks < chunk_) {
    const int64_t correlation = by_age_.front().second;
    by_age_.pop_front();
    auto it = launches_.find(correlation);
    if (it == launches_.end()) continue;
    if (it->second.last_chunk + kWindowChunks >= chunk_) {  // used since: kept, aged again
      by_age_.emplace_back(it->second.last_chunk, correlation);
      continue;
    }
    launches_.erase(it);
    dropped_.Insert(correlation);
  }
}

void LaunchJoin::AddLaunches(const std::vector<Launch>& launches, const InternedStrings& apis) {
  chunk_api_.resize(apis.size());
  for (size_t i = 0; i < apis.size(); ++i) {
    auto [it, inserted] = api_ids_.try_emplace(apis[i], static_cast<uint32_t>(apis_.size()));
    if (inserted) apis_.emplace_back(apis[i]);
    chunk_api_[i] = it->second;
  }
  for (const Launch& l : launches) {
    if (l.correlation == kNoCorrelation || dropped_.Contains(l.correlation)) continue;
    auto [it, inserted] = launches_.try_emplace(
        l.correlation, KnownLaunch{l.ts_ns + l.dur_ns, l.dur_ns, chunk_api_[l.api], chunk_, 0});
    if (!inserted) continue;
    by_age_.emplace_back(chunk_, l.correlation);
    auto waiting = waiting_.find(l.correlation);
    if (waiting == waiting_.end()) continue;
    const std::vector<Waiter> waiters = std::move(waiting->second);
    waiting_.erase(waiting);
    waiting_count_ -= waiters.size();
    for (const Waiter& w : waiters) {
      Device& d = DeviceOf(w.device);
      if (w.gap == kNoGap) {
        KnownLaunch& launch = launches_.find(l.correlation)->second;
        if (!Counted(&launch, l.correlation, w.device)) Count(&d, launch, w.start_ns);
        continue;
      }
      const bool open = d.open_id == w.gap;
      Gap& gap = open ? d.open : gaps_.find(w.gap)->second;
      gap.first_launch_end_ns = std::min(gap.first_launch_end_ns, l.ts_ns + l.dur_ns);
      if (--gap.unknown == 0 && !open) {
        Settle(gap);
        gaps_.erase(w.gap);
      }
    }
  }
}

LaunchJoin::Device& LaunchJoin::DeviceOf(int32_t device) {
  if (device_cursor_ < devices_.size() && devices_[device_cursor_].device == device) {
    return devices_[device_cursor_];
  }
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

LaunchJoin::KnownLaunch* LaunchJoin::Find(int64_t correlation) {
  auto it = launches_.find(correlation);
  if (it == launches_.end()) return nullptr;
  it->second.last_chunk = chunk_;
  return &it->second;
}

bool LaunchJoin::Counted(KnownLaunch* launch, int64_t correlation, int32_t device) {
  if (device >= 0 && device < 64) {
    const uint64_t bit = uint64_t{1} << device;
    const bool counted = launch->devices & bit;
    launch->devices |= bit;
    return counted;
  }
  return !counted_high_.try_emplace(std::make_pair(correlation, device), true).second;
}

void LaunchJoin::Count(Device* d, const KnownLaunch& launch, int64_t start_ns) {
  ApiCounts& counts = d->apis[launch.api];
  ++counts.count;
  ++counts.cpu[launch.dur_ns];
  ++counts.delay[start_ns - launch.end_ns];
}

void LaunchJoin::Wait(int64_t correlation, const Waiter& waiter) {
  std::vector<Waiter>& waiters = waiting_[correlation];
  if (waiter.gap == kNoGap) {  // the first activity on a device waits once: later ones start later
    for (const Waiter& w : waiters) {
      if (w.gap == kNoGap && w.device == waiter.device) return;
    }
  }
  waiters.push_back(waiter);
  ++waiting_count_;
}

bool LaunchJoin::AddActivity(int32_t device, int64_t start_ns, int64_t end_ns,
                             int64_t correlation) {
  Device& d = DeviceOf(device);
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
  if (!candidate && correlation == d.last_counted) return true;
  KnownLaunch* launch = Find(correlation);
  if (launch == nullptr) {
    if (dropped_.Contains(correlation)) return false;
    Wait(correlation, Waiter{kNoGap, device, start_ns});
    if (candidate) {
      ++d.open.unknown;
      Wait(correlation, Waiter{d.open_id, device, start_ns});
    }
    return true;
  }
  if (!Counted(launch, correlation, device)) Count(&d, *launch, start_ns);
  d.last_counted = correlation;
  if (candidate) d.open.first_launch_end_ns = std::min(d.open.first_launch_end_ns, launch->end_ns);
  return true;
}

void LaunchJoin::Close(Device* d) {
  if (d->open_id == kNoGap) return;
  if (d->open.unknown == 0) {
    Settle(d->open);
  } else {
    gaps_.emplace(d->open_id, d->open);
  }
  d->open_id = kNoGap;
}

void LaunchJoin::Settle(const Gap& gap) {
  IdleSplit& idle = DeviceOf(gap.device).idle;
  ++idle.gaps;
  if (gap.first_launch_end_ns == INT64_MAX) {
    idle.unattributed_ns += gap.end_ns - gap.start_ns;
  } else {
    const int64_t e = std::clamp(gap.first_launch_end_ns, gap.start_ns, gap.end_ns);
    idle.cpu_wait_ns += e - gap.start_ns;
    idle.launch_latency_ns += gap.end_ns - e;
  }
}

namespace {

// The ceil(q * n)-th smallest of `counts` for q = 1/2, 9/10 and 1, by nearest rank.
Quantiles QuantilesOf(const absl::flat_hash_map<int64_t, uint64_t>& counts, uint64_t n) {
  std::vector<std::pair<int64_t, uint64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  const uint64_t ranks[] = {(n + 1) / 2, (9 * n + 9) / 10, n};
  int64_t values[3] = {};
  uint64_t seen = 0;
  size_t next = 0;
  for (const auto& [value, count] : sorted) {
    seen += count;
    while (next < 3 && ranks[next] <= seen) values[next++] = value;
  }
  return Quantiles{values[0], values[1], values[2]};
}

}  // namespace

void LaunchJoin::Finish(GpuTimeline* timeline) {
  for (Device& d : devices_) Close(&d);
  // What still waits has no launch in the trace: gaps settle with the launches they have.
  waiting_.clear();
  waiting_count_ = 0;
  for (const auto& [id, gap] : gaps_) Settle(gap);
  gaps_.clear();
  for (DeviceTimeline& t : timeline->devices) {
    Device& d = DeviceOf(t.device);
    t.idle = d.idle;
    t.launches.clear();
    for (const auto& [api, counts] : d.apis) {
      t.launches.push_back(LaunchStats{apis_[api], counts.count,
                                       QuantilesOf(counts.cpu, counts.count),
                                       QuantilesOf(counts.delay, counts.count)});
    }
    std::sort(t.launches.begin(), t.launches.end(),
              [](const LaunchStats& a, const LaunchStats& b) { return a.api < b.api; });
  }
}

}  // namespace tracefuse
