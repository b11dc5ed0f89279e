#include "tracefuse/reduce/gpu_timeline.h"

#include <algorithm>
#include <iterator>
#include <numeric>

namespace tracefuse {

bool DeviceSweep::Add(int64_t start_ns, int64_t end_ns, GpuActivityKind kind) {
  if (swept_.activities == 0) {
    swept_.first_start_ns = start_ns;
    swept_.last_end_ns = end_ns;
    std::fill(std::begin(end_), std::end(end_), start_ns);
  } else if (start_ns < at_) {
    return false;
  } else {
    Advance(start_ns, &swept_);
  }
  at_ = start_ns;
  int64_t& end = end_[static_cast<int>(kind)];
  end = std::max(end, end_ns);
  swept_.last_end_ns = std::max(swept_.last_end_ns, end_ns);
  ++swept_.activities;
  return true;
}

void GpuTimeFigures::AddMeasures(const GpuTimeFigures& other) {
  activities += other.activities;
  busy_ns += other.busy_ns;
  computation_ns += other.computation_ns;
  communication_ns += other.communication_ns;
  exposed_communication_ns += other.exposed_communication_ns;
  memcpy_ns += other.memcpy_ns;
  exposed_memcpy_ns += other.exposed_memcpy_ns;
}

bool DeviceSweep::Append(const DeviceSweep& later) {
  if (later.swept_.activities == 0) return true;
  if (swept_.activities == 0) {
    *this = later;
    return true;
  }
  const int64_t start = later.swept_.first_start_ns;
  if (*std::max_element(std::begin(end_), std::end(end_)) > start) return false;
  Advance(start, &swept_);
  swept_.AddMeasures(later.swept_);
  swept_.last_end_ns = std::max(swept_.last_end_ns, later.swept_.last_end_ns);
  at_ = later.at_;
  std::copy(std::begin(later.end_), std::end(later.end_), std::begin(end_));
  return true;
}

void DeviceSweep::Advance(int64_t until, GpuTimeFigures* f) const {
  if (until <= at_) return;
  const int64_t window = until - at_;
  int64_t covered[kKinds];
  for (int k = 0; k < kKinds; ++k)
    covered[k] = end_[k] <= at_ ? 0 : std::min(end_[k] - at_, window);
  const int64_t computation = covered[static_cast<int>(GpuActivityKind::kComputation)];
  const int64_t communication = covered[static_cast<int>(GpuActivityKind::kCommunication)];
  const int64_t memcpy = covered[static_cast<int>(GpuActivityKind::kMemcpy)];
  const int64_t kernels = std::max(computation, communication);
  f->busy_ns += std::max(kernels, memcpy);
  f->computation_ns += computation;
  f->communication_ns += communication;
  f->exposed_communication_ns += std::max<int64_t>(0, communication - computation);
  f->memcpy_ns += memcpy;
  f->exposed_memcpy_ns += std::max<int64_t>(0, memcpy - kernels);
}

GpuTimeFigures DeviceSweep::Figures() const {
  GpuTimeFigures f = swept_;
  if (f.activities > 0) Advance(f.last_end_ns, &f);
  return f;
}

void SortByDeviceAndStart(std::vector<GpuActivity>* activities, size_t middle,
                          std::vector<GpuActivity>* scratch) {
  auto before = [](const GpuActivity& a, const GpuActivity& b) {
    return a.device != b.device ? a.device < b.device : a.start_ns < b.start_ns;
  };
  const auto begin = activities->begin(), end = activities->end();
  const auto mid = begin + static_cast<std::ptrdiff_t>(std::min(middle, activities->size()));
  if (!std::is_sorted(begin, mid, before) || !std::is_sorted(mid, end, before)) {
    std::sort(begin, end, before);
    return;
  }
  if (mid == begin || mid == end || !before(*mid, *(mid - 1))) return;
  // Merged from the back, with only the tail set aside (std::inplace_merge would allocate room
  // for both halves on every call); on ties the tail's activity goes last, as in a stable merge.
  std::vector<GpuActivity> local;
  if (scratch == nullptr) scratch = &local;
  scratch->assign(mid, end);
  auto head = mid, out = end;
  auto tail = scratch->end();
  while (tail != scratch->begin()) {
    if (head != begin && before(*(tail - 1), *(head - 1))) {
      *--out = *--head;
    } else {
      *--out = *--tail;
    }
  }
}

// --- CorrelationSet -----------------------------------------------------------------------------

uint64_t* CorrelationSet::Page(int64_t correlation, bool add) {
  const int64_t page_id = correlation >> kPageBits;
  if (last_page_ != nullptr && page_id == last_page_id_) return last_page_;
  auto it = pages_.find(page_id);
  if (it == pages_.end()) {
    if (!add) return nullptr;
    constexpr size_t kWords = (size_t{1} << kPageBits) / 64;
    it = pages_.emplace(page_id, std::make_unique<uint64_t[]>(kWords)).first;
  }
  last_page_id_ = page_id;
  last_page_ = it->second.get();
  return last_page_;
}

bool CorrelationSet::Contains(int64_t correlation) {
  if (correlation > max_) return false;
  const uint64_t* page = Page(correlation, false);
  const auto bit = static_cast<uint64_t>(correlation) & ((uint64_t{1} << kPageBits) - 1);
  return page != nullptr && (page[bit / 64] >> (bit % 64) & 1);
}

void CorrelationSet::Insert(int64_t correlation) {
  max_ = std::max(max_, correlation);
  uint64_t* page = Page(correlation, true);
  const auto bit = static_cast<uint64_t>(correlation) & ((uint64_t{1} << kPageBits) - 1);
  page[bit / 64] |= uint64_t{1} << (bit % 64);
}

// --- StepTimeline -------------------------------------------------------------------------------

bool StreamEnds::Find(int32_t stream, int64_t end_ns) {
  cursor_ = 0;
  while (cursor_ < ends_.size() && ends_[cursor_].first != stream) ++cursor_;
  if (cursor_ < ends_.size()) return true;
  ends_.emplace_back(stream, end_ns);
  return false;
}

void StepTimeline::StepIdle::Add(int64_t start_ns, int64_t end_ns, int32_t stream,
                                 int64_t launch_start_ns, int64_t launch_end_ns,
                                 int64_t correlation) {
  if (gap_open_ && start_ns > gap_end_ns_) Close();
  if (any_ && start_ns > busy_end_ns_) {
    gap_open_ = true;
    gap_start_ns_ = busy_end_ns_;
    gap_end_ns_ = start_ns;
    gap_launch_end_ns_ = launch_end_ns;
    gap_launch_ = correlation;
  } else if (gap_open_ &&
             std::pair(launch_end_ns, correlation) < std::pair(gap_launch_end_ns_, gap_launch_)) {
    gap_launch_end_ns_ = launch_end_ns;  // starts at the gap's end too, and was launched first
    gap_launch_ = correlation;
  }
  busy_end_ns_ = any_ ? std::max(busy_end_ns_, end_ns) : end_ns;
  any_ = true;
  integrity_.activity_ns += end_ns - start_ns;
  if (const int64_t overlap = streams_.Overlap(stream, start_ns, end_ns); overlap > 0) {
    ++integrity_.same_stream_overlaps;
    integrity_.same_stream_overlap_ns += overlap;
    integrity_.involved_ns += overlap;
  }
  if (start_ns < launch_start_ns) {
    ++integrity_.before_launch;
    integrity_.involved_ns += end_ns - start_ns;
  }
}

void StepTimeline::StepIdle::Close() {
  if (!gap_open_) return;
  gap_open_ = false;
  ++idle_.gaps;
  const int64_t e = std::clamp(gap_launch_end_ns_, gap_start_ns_, gap_end_ns_);
  idle_.cpu_wait_ns += e - gap_start_ns_;
  idle_.launch_latency_ns += gap_end_ns_ - e;
  if (cpu_waits_ != nullptr && e > gap_start_ns_) {
    cpu_waits_->push_back(CpuWaitSpan{gap_launch_, gap_start_ns_, e, device_, step_});
  }
}

bool StepTimeline::AddIdle(StepSweep* sweep, int64_t start_ns, int64_t end_ns, int32_t stream,
                           int64_t correlation) {
  if (!keep_figures_ || launches_ == nullptr) return true;
  int64_t launch_start_ns = 0, launch_end_ns = 0;
  if (!launches_->FindLaunch(correlation, &launch_start_ns, &launch_end_ns)) return false;
  sweep->idle.Add(start_ns, end_ns, stream, launch_start_ns, launch_end_ns, correlation);
  return true;
}

bool StepTimeline::AddStep(std::string_view name, int64_t start_ns, int64_t end_ns) {
  if (state_ == State::kNoSteps) return false;
  if (state_ == State::kTracking) {
    // Kineto writes a long run's steps as they end, among their launches: a step is taken while
    // it follows the last one and starts after every launch seen.
    const ProfilerStep& last = steps_.back();
    if (start_ns >= last.cpu_start_ns && start_ns < last.cpu_end_ns) {
      return start_ns > last.cpu_start_ns || end_ns <= last.cpu_end_ns;  // nested: not a step
    }
    if (start_ns < last.cpu_start_ns || (any_launch_ && start_ns <= last_launch_ns_)) return false;
  }
  steps_.push_back(ProfilerStep{start_ns, end_ns});
  if (keep_figures_) name_of_.push_back(names_.Append(name));
  return true;
}

void StepTimeline::Track() {
  if (state_ != State::kSteps) return;
  if (steps_.empty()) {
    state_ = State::kNoSteps;
    return;
  }
  // By start, the longer first, so that a nested step comes after the one around it.
  std::vector<uint32_t> order(steps_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const ProfilerStep &x = steps_[a], &y = steps_[b];
    return x.cpu_start_ns != y.cpu_start_ns ? x.cpu_start_ns < y.cpu_start_ns
                                            : x.cpu_end_ns > y.cpu_end_ns;
  });
  std::vector<ProfilerStep> top_level;
  std::vector<uint32_t> top_level_names;
  for (uint32_t i : order) {
    if (!top_level.empty() && steps_[i].cpu_start_ns < top_level.back().cpu_end_ns) continue;
    top_level.push_back(steps_[i]);
    if (keep_figures_) top_level_names.push_back(name_of_[i]);
  }
  steps_ = std::move(top_level);
  name_of_ = std::move(top_level_names);
  state_ = State::kTracking;
}

uint32_t StepTimeline::StepAt(int64_t ts_ns) {
  auto inside = [&](size_t i) {
    return steps_[i].cpu_start_ns <= ts_ns && ts_ns < steps_[i].cpu_end_ns;
  };
  if (inside(step_cursor_)) return static_cast<uint32_t>(step_cursor_);
  const auto after =
      std::upper_bound(steps_.begin(), steps_.end(), ts_ns,
                       [](int64_t ts, const ProfilerStep& s) { return ts < s.cpu_start_ns; });
  if (after == steps_.begin()) return kOutsideSteps;
  const size_t i = static_cast<size_t>(after - steps_.begin()) - 1;
  if (!inside(i)) return kOutsideSteps;
  step_cursor_ = i;
  return static_cast<uint32_t>(i);
}

bool StepTimeline::AddLaunch(int64_t ts_ns, int64_t correlation) {
  Track();
  if (state_ == State::kNoSteps || correlation == kNoCorrelation || seen_.Contains(correlation))
    return true;
  if (Dropped(correlation)) return false;  // left unseen: no activity looks its step up
  seen_.Insert(correlation);
  if (correlation <= aside_max_correlation_) {
    const auto [first, last] = std::equal_range(
        aside_.begin(), aside_.end(), StepActivity{0, 0, correlation},
        [](const StepActivity& a, const StepActivity& b) { return a.correlation < b.correlation; });
    launched_aside_.insert(launched_aside_.end(), first, last);
    aside_.erase(first, last);
  }
  const bool highest = !any_launch_ || correlation > last_correlation_seen_;
  last_launch_ns_ = any_launch_ ? std::max(last_launch_ns_, ts_ns) : ts_ns;
  last_correlation_seen_ = highest ? correlation : last_correlation_seen_;
  any_launch_ = true;
  const uint32_t step = StepAt(ts_ns);
  if (highest) {
    if (runs_.empty() || runs_.back().step != step) runs_.push_back(Run{correlation, step});
    return true;
  }
  // Another thread's launch, behind the highest: before every run, or inside one.
  run_cursor_ = 0;
  const auto after = std::upper_bound(runs_.begin(), runs_.end(), correlation,
                                      [](int64_t c, const Run& r) { return c < r.first; });
  if (after == runs_.begin()) {
    if (after->step == step) {
      after->first = correlation;
    } else {
      runs_.insert(after, Run{correlation, step});
    }
    return true;
  }
  const auto around = std::prev(after);
  if (around->step == step) return true;
  Run parts[3];
  size_t count = 0;
  if (around->first < correlation) parts[count++] = *around;
  parts[count++] = Run{correlation, step};
  if (after == runs_.end() || correlation + 1 < after->first) {
    parts[count++] = Run{correlation + 1, around->step};
  }
  const auto at = runs_.erase(around);
  runs_.insert(at, parts, parts + count);
  return true;
}

uint32_t StepTimeline::StepOfSeen(int64_t correlation) {
  auto contains = [&](size_t i) {
    return runs_[i].first <= correlation &&
           (i + 1 == runs_.size() || correlation < runs_[i + 1].first);
  };
  if (run_cursor_ < runs_.size() && contains(run_cursor_)) return runs_[run_cursor_].step;
  if (run_cursor_ + 1 < runs_.size() && contains(run_cursor_ + 1)) return runs_[++run_cursor_].step;
  const auto after = std::upper_bound(runs_.begin(), runs_.end(), correlation,
                                      [](int64_t c, const Run& r) { return c < r.first; });
  run_cursor_ = static_cast<size_t>(after - runs_.begin()) - 1;  // a seen id is in a run
  return runs_[run_cursor_].step;
}

StepTimeline::Device& StepTimeline::DeviceOf(int32_t device) {
  if (device_cursor_ < devices_.size() && devices_[device_cursor_].device == device) {
    return devices_[device_cursor_];
  }
  for (device_cursor_ = 0; device_cursor_ < devices_.size(); ++device_cursor_) {
    if (devices_[device_cursor_].device == device) return devices_[device_cursor_];
  }
  devices_.emplace_back();
  devices_.back().device = device;
  return devices_.back();
}

bool StepTimeline::AddActivity(const StepActivity& a) {
  Track();
  if (state_ == State::kNoSteps) return true;
  Device& d = DeviceOf(a.device);
  if (d.any && a.start_ns < d.last_start_ns) return false;
  d.any = true;
  d.last_start_ns = a.start_ns;
  if (a.correlation == kNoCorrelation) return true;  // launched by nothing: in no step
  if (!d.queue.empty()) {
    d.queue.push_back(a);
    d.queue.back().chunk = chunk_;
    ++pending_;
  } else if (seen_.Contains(a.correlation)) {
    return Sweep(&d, a, StepOfSeen(a.correlation));
  } else if (any_launch_ && a.correlation < last_correlation_seen_) {
    SetAside(a);  // launched before the launches seen, or never: let the rest by
    ++pending_;
  } else {
    d.queue.push_back(a);
    d.queue.back().chunk = chunk_;
    ++pending_;
  }
  return true;
}

bool StepTimeline::AddRun(const LaunchRun& run, const DeviceSweep* run_sweep,
                          const std::vector<GpuActivity>& activities,
                          const std::vector<GpuActivityKind>& name_kinds) {
  Track();
  const GpuActivity& first = activities[run.begin];
  if (state_ == State::kNoSteps || first.correlation == kNoCorrelation) return true;
  Device& d = DeviceOf(first.device);
  if (!d.queue.empty() || !seen_.Contains(first.correlation)) {
    for (uint32_t i = run.begin; i < run.end; ++i) {
      const GpuActivity& a = activities[i];
      const StepActivity step_activity{
          a.start_ns, a.end_ns, a.correlation, a.device, KindOf(a, name_kinds), 0, a.stream};
      if (!AddActivity(step_activity)) return false;
    }
    return true;
  }
  d.any = true;
  d.last_start_ns = activities[run.end - 1].start_ns;
  const uint32_t step = StepOfSeen(first.correlation);
  if (step == kOutsideSteps) return true;
  StepSweep* sweep = OpenSweep(&d, step);
  if (sweep == nullptr) return false;
  if (keep_figures_ && launches_ != nullptr) {
    // One launch for the run: its times are looked up once.
    int64_t launch_start_ns = 0, launch_end_ns = 0;
    if (!launches_->FindLaunch(first.correlation, &launch_start_ns, &launch_end_ns)) return false;
    for (uint32_t i = run.begin; i < run.end; ++i) {
      const GpuActivity& a = activities[i];
      sweep->idle.Add(a.start_ns, a.end_ns, a.stream, launch_start_ns, launch_end_ns,
                      first.correlation);
    }
  }
  if (run_sweep != nullptr && sweep->sweep.Append(*run_sweep)) return true;
  for (uint32_t i = run.begin; i < run.end; ++i) {
    const GpuActivity& a = activities[i];
    if (!sweep->sweep.Add(a.start_ns, a.end_ns, KindOf(a, name_kinds))) return false;
  }
  return true;
}

void StepTimeline::SetAside(const StepActivity& a) {
  auto by_correlation = [](const StepActivity& x, const StepActivity& y) {
    return x.correlation < y.correlation;
  };
  aside_.insert(std::upper_bound(aside_.begin(), aside_.end(), a, by_correlation), a);
  aside_max_correlation_ = std::max(aside_max_correlation_, a.correlation);
  if (aside_.size() == 2 * kKeptAside) DropAside();
}

void StepTimeline::DropAside() {
  // The lowest ids: launches mostly come in id order, so theirs are the least likely to come.
  const auto dropped = aside_.begin() + static_cast<std::ptrdiff_t>(aside_.size() - kKeptAside);
  for (auto a = aside_.begin(); a != dropped; ++a) Drop(a->correlation);
  pending_ -= static_cast<size_t>(dropped - aside_.begin());
  aside_.erase(aside_.begin(), dropped);
}

void StepTimeline::Drop(int64_t correlation) {
  if (dropped_.empty() || correlation > dropped_max_) {
    if (!dropped_.empty() && AllSeenBetween(dropped_max_, correlation)) {
      dropped_.back().last = correlation;
    } else {
      dropped_.push_back(IdRange{correlation, correlation});
    }
    dropped_max_ = correlation;
    return;
  }
  const auto after = std::upper_bound(dropped_.begin(), dropped_.end(), correlation,
                                      [](int64_t c, const IdRange& r) { return c < r.first; });
  if (after != dropped_.begin() && correlation <= std::prev(after)->last) return;
  dropped_.insert(after, IdRange{correlation, correlation});
}

bool StepTimeline::Dropped(int64_t correlation) const {
  if (correlation > dropped_max_) return false;
  const auto after = std::upper_bound(dropped_.begin(), dropped_.end(), correlation,
                                      [](int64_t c, const IdRange& r) { return c < r.first; });
  return after != dropped_.begin() && correlation <= std::prev(after)->last;
}

bool StepTimeline::AllSeenBetween(int64_t after, int64_t before) {
  // Far apart, the ranges are not worth merging.
  constexpr uint64_t kMaxGap = uint64_t{1} << 16;
  if (static_cast<uint64_t>(before) - static_cast<uint64_t>(after) > kMaxGap) return false;
  for (int64_t id = after + 1; id < before; ++id) {
    if (!seen_.Contains(id)) return false;
  }
  return true;
}

bool StepTimeline::Release() {
  // By device and start, as they came.
  std::stable_sort(launched_aside_.begin(), launched_aside_.end(),
                   [](const StepActivity& a, const StepActivity& b) {
                     return a.device != b.device ? a.device < b.device : a.start_ns < b.start_ns;
                   });
  for (const StepActivity& a : launched_aside_) {
    if (!Sweep(&DeviceOf(a.device), a, StepOfSeen(a.correlation))) return false;
  }
  pending_ -= launched_aside_.size();
  launched_aside_.clear();
  for (Device& d : devices_) {
    bool in_order = true;
    while (in_order && !d.queue.empty()) {
      const StepActivity& front = d.queue.front();
      if (seen_.Contains(front.correlation)) {
        in_order = Sweep(&d, front, StepOfSeen(front.correlation));
        --pending_;
      } else if (front.chunk < chunk_) {
        SetAside(front);  // a later chunk's launches did not have it: let the rest by
      } else {
        break;
      }
      d.queue.pop_front();
    }
    if (!in_order) return false;
  }
  return true;
}

bool StepTimeline::Sweep(Device* d, const StepActivity& a, uint32_t step) {
  if (step == kOutsideSteps) return true;
  StepSweep* sweep = OpenSweep(d, step);
  return sweep != nullptr && sweep->sweep.Add(a.start_ns, a.end_ns, a.kind) &&
         AddIdle(sweep, a.start_ns, a.end_ns, a.stream, a.correlation);
}

StepTimeline::StepSweep* StepTimeline::OpenSweep(Device* d, uint32_t step) {
  // From the latest: collecting, every step stays open, and activities come in step order.
  auto open = std::find_if(d->open.rbegin(), d->open.rend(),
                           [step](const auto& o) { return o.first == step; });
  if (open != d->open.rend()) return &open->second;
  if (d->any_closed && step <= d->closed_up_to) return nullptr;
  if (d->open.size() == max_open_steps_) {
    const auto lowest =
        std::min_element(d->open.begin(), d->open.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
    Close(d, static_cast<size_t>(lowest - d->open.begin()));
  }
  d->open.emplace_back(step, StepSweep{DeviceSweep(), StepIdle(cpu_waits_, d->device, step)});
  return &d->open.back().second;
}

void StepTimeline::Close(Device* d, size_t open_index) {
  auto& [step, sweep] = d->open[open_index];
  const GpuTimeFigures f = sweep.sweep.Figures();
  sweep.idle.Close();
  ProfilerStep& s = steps_[step];
  if (f.activities > 0) {
    s.first_start_ns = std::min(s.first_start_ns, f.first_start_ns);
    s.last_end_ns = std::max(s.last_end_ns, f.last_end_ns);
  }
  if (keep_figures_) {
    d->closed.push_back(StepFigures{step, f, sweep.idle.idle(), sweep.idle.integrity()});
  }
  d->closed_up_to = std::max(d->closed_up_to, step);
  d->any_closed = true;
  d->open.erase(d->open.begin() + static_cast<std::ptrdiff_t>(open_index));
}

bool StepTimeline::Finish(GpuTimeline* timeline) {
  Track();
  if (!Release()) return false;  // what is still set aside was never launched
  for (Device& d : devices_) {
    auto sweep_launched = [&](const StepActivity& a) {
      return !seen_.Contains(a.correlation) || Sweep(&d, a, StepOfSeen(a.correlation));
    };
    if (!std::all_of(d.queue.begin(), d.queue.end(), sweep_launched)) return false;
    d.queue.clear();
    while (!d.open.empty()) Close(&d, d.open.size() - 1);
    std::sort(d.closed.begin(), d.closed.end(),
              [](const StepFigures& a, const StepFigures& b) { return a.step < b.step; });
    for (DeviceTimeline& t : timeline->devices) {
      if (t.device == d.device) t.steps = std::move(d.closed);
    }
  }
  pending_ = 0;
  aside_ = {};
  dropped_ = {};
  timeline->steps = std::move(steps_);
  timeline->step_names = std::move(names_);
  timeline->step_name_of = std::move(name_of_);
  return true;
}

StepSpans StepSpansOf(const GpuTimeline& timeline) {
  StepSpans out;
  out.steps = timeline.steps.size();
  std::vector<int64_t> spans;
  for (const ProfilerStep& s : timeline.steps) {
    if (s.ran_activities()) spans.push_back(s.span_ns());
  }
  out.with_activities = spans.size();
  if (spans.empty()) return out;
  std::sort(spans.begin(), spans.end());
  const size_t middle = spans.size() / 2;
  out.median_ns = spans.size() % 2 == 1 ? spans[middle] : (spans[middle - 1] + spans[middle]) / 2;
  out.min_ns = spans.front();
  out.max_ns = spans.back();
  return out;
}

}  // namespace tracefuse
