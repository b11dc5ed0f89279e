#include "tracefuse/gpu_timeline.h"

#include <algorithm>
#include <iterator>

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

void SortByDeviceAndStart(std::vector<GpuActivity>* activities, size_t middle) {
  auto before = [](const GpuActivity& a, const GpuActivity& b) {
    return a.device != b.device ? a.device < b.device : a.start_ns < b.start_ns;
  };
  const auto begin = activities->begin(), end = activities->end();
  const auto mid = begin + static_cast<std::ptrdiff_t>(std::min(middle, activities->size()));
  if (std::is_sorted(begin, mid, before) && std::is_sorted(mid, end, before)) {
    std::inplace_merge(begin, mid, end, before);
  } else {
    std::sort(begin, end, before);
  }
}

// --- StepTimeline -------------------------------------------------------------------------------

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
  steps_.push_back(ProfilerStep{keep_figures_ ? names_.Append(name) : 0, start_ns, end_ns});
  return true;
}

void StepTimeline::Track() {
  if (state_ != State::kSteps) return;
  if (steps_.empty()) {
    state_ = State::kNoSteps;
    return;
  }
  // By start, the longer first, so that a nested step comes after the one around it.
  std::stable_sort(steps_.begin(), steps_.end(), [](const ProfilerStep& a, const ProfilerStep& b) {
    return a.cpu_start_ns != b.cpu_start_ns ? a.cpu_start_ns < b.cpu_start_ns
                                            : a.cpu_end_ns > b.cpu_end_ns;
  });
  std::vector<ProfilerStep> top_level;
  for (const ProfilerStep& s : steps_) {
    if (top_level.empty() || s.cpu_start_ns >= top_level.back().cpu_end_ns) top_level.push_back(s);
  }
  steps_ = std::move(top_level);
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

uint64_t* StepTimeline::SeenPage(int64_t correlation, bool add) {
  const int64_t page_id = correlation >> kPageBits;
  if (last_page_ != nullptr && page_id == last_page_id_) return last_page_;
  auto it = seen_.find(page_id);
  if (it == seen_.end()) {
    if (!add) return nullptr;
    constexpr size_t kWords = (size_t{1} << kPageBits) / 64;
    it = seen_.emplace(page_id, std::make_unique<uint64_t[]>(kWords)).first;
  }
  last_page_id_ = page_id;
  last_page_ = it->second.get();
  return last_page_;
}

bool StepTimeline::Seen(int64_t correlation) {
  const uint64_t* page = SeenPage(correlation, false);
  const auto bit = static_cast<uint64_t>(correlation) & ((uint64_t{1} << kPageBits) - 1);
  return page != nullptr && (page[bit / 64] >> (bit % 64) & 1);
}

bool StepTimeline::MarkSeen(int64_t correlation) {
  uint64_t* page = SeenPage(correlation, true);
  const auto bit = static_cast<uint64_t>(correlation) & ((uint64_t{1} << kPageBits) - 1);
  const uint64_t mask = uint64_t{1} << (bit % 64);
  if (page[bit / 64] & mask) return false;
  page[bit / 64] |= mask;
  return true;
}

void StepTimeline::AddLaunch(int64_t ts_ns, int64_t correlation) {
  Track();
  if (state_ == State::kNoSteps || correlation == kNoCorrelation || !MarkSeen(correlation)) return;
  if (correlation <= aside_max_correlation_) {
    const auto [first, last] = std::equal_range(
        aside_.begin(), aside_.end(), StepActivity{0, 0, correlation},
        [](const StepActivity& a, const StepActivity& b) { return a.correlation < b.correlation; });
    launched_aside_.insert(launched_aside_.end(), first, last);
    aside_.erase(first, last);
  }
  last_launch_ns_ = any_launch_ ? std::max(last_launch_ns_, ts_ns) : ts_ns;
  last_correlation_seen_ =
      any_launch_ ? std::max(last_correlation_seen_, correlation) : correlation;
  any_launch_ = true;
  const uint32_t step = StepAt(ts_ns);
  if (runs_.empty() || correlation > runs_.back().last) {
    if (!runs_.empty() && runs_.back().step == step) {
      runs_.back().last = correlation;
    } else {
      runs_.push_back(Run{correlation, correlation, step});
    }
    return;
  }
  // Another thread's launch, behind the last one: inside a run, or between two.
  run_cursor_ = 0;
  const auto after = std::upper_bound(runs_.begin(), runs_.end(), correlation,
                                      [](int64_t c, const Run& r) { return c < r.first; });
  if (after == runs_.begin() || std::prev(after)->last < correlation) {
    runs_.insert(after, Run{correlation, correlation, step});
    return;
  }
  const auto around = std::prev(after);
  if (around->step == step) return;
  const Run before{around->first, correlation - 1, around->step};
  const Run rest{correlation + 1, around->last, around->step};
  std::vector<Run> parts;
  if (before.first <= before.last) parts.push_back(before);
  parts.push_back(Run{correlation, correlation, step});
  if (rest.first <= rest.last) parts.push_back(rest);
  const auto at = runs_.erase(around);
  runs_.insert(at, parts.begin(), parts.end());
}

uint32_t StepTimeline::StepOfSeen(int64_t correlation) {
  auto contains = [&](size_t i) {
    return runs_[i].first <= correlation && correlation <= runs_[i].last;
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
  } else if (a.correlation == last_correlation_ && a.device == last_device_) {
    return last_sweep_->Add(a.start_ns, a.end_ns, a.kind);
  } else if (Seen(a.correlation)) {
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

bool StepTimeline::AddRun(const LaunchRun& run, const std::vector<GpuActivity>& activities,
                          const std::vector<GpuActivityKind>& name_kinds) {
  Track();
  if (state_ == State::kNoSteps || run.correlation == kNoCorrelation) return true;
  Device& d = DeviceOf(run.device);
  if (!d.queue.empty() || !Seen(run.correlation)) {
    for (uint32_t i = run.begin; i < run.end; ++i) {
      const GpuActivity& a = activities[i];
      const StepActivity step_activity{a.start_ns, a.end_ns, a.correlation, a.device,
                                       KindOf(a, name_kinds)};
      if (!AddActivity(step_activity)) return false;
    }
    return true;
  }
  d.any = true;
  d.last_start_ns = activities[run.end - 1].start_ns;
  const uint32_t step = StepOfSeen(run.correlation);
  if (step == kOutsideSteps) return true;
  DeviceSweep* sweep = OpenSweep(&d, step);
  if (sweep == nullptr) return false;
  if (sweep->Append(run.sweep)) return true;
  for (uint32_t i = run.begin; i < run.end; ++i) {
    const GpuActivity& a = activities[i];
    if (!sweep->Add(a.start_ns, a.end_ns, KindOf(a, name_kinds))) return false;
  }
  return true;
}

void StepTimeline::SetAside(const StepActivity& a) {
  auto by_correlation = [](const StepActivity& x, const StepActivity& y) {
    return x.correlation < y.correlation;
  };
  aside_.insert(std::upper_bound(aside_.begin(), aside_.end(), a, by_correlation), a);
  aside_max_correlation_ = std::max(aside_max_correlation_, a.correlation);
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
      if (Seen(front.correlation)) {
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
  last_correlation_ = kNoCorrelation;
  if (step == kOutsideSteps) return true;
  DeviceSweep* sweep = OpenSweep(d, step);
  if (sweep == nullptr) return false;
  last_correlation_ = a.correlation;
  last_device_ = d->device;
  last_step_ = step;
  last_sweep_ = sweep;  // until the device's open steps change
  return sweep->Add(a.start_ns, a.end_ns, a.kind);
}

DeviceSweep* StepTimeline::OpenSweep(Device* d, uint32_t step) {
  auto open = std::find_if(d->open.begin(), d->open.end(),
                           [step](const auto& o) { return o.first == step; });
  if (open != d->open.end()) return &open->second;
  if (d->any_closed && step <= d->closed_up_to) return nullptr;
  last_correlation_ = kNoCorrelation;  // last_sweep_ may move
  if (d->open.size() == max_open_steps_) {
    const auto lowest =
        std::min_element(d->open.begin(), d->open.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
    Close(d, static_cast<size_t>(lowest - d->open.begin()));
  }
  d->open.emplace_back(step, DeviceSweep());
  return &d->open.back().second;
}

void StepTimeline::Close(Device* d, size_t open_index) {
  const auto& [step, sweep] = d->open[open_index];
  const GpuTimeFigures f = sweep.Figures();
  ProfilerStep& s = steps_[step];
  s.first_start_ns =
      s.activities == 0 ? f.first_start_ns : std::min(s.first_start_ns, f.first_start_ns);
  s.last_end_ns = s.activities == 0 ? f.last_end_ns : std::max(s.last_end_ns, f.last_end_ns);
  s.activities += f.activities;
  if (keep_figures_) d->closed.push_back(StepFigures{step, f});
  d->closed_up_to = std::max(d->closed_up_to, step);
  d->any_closed = true;
  d->open.erase(d->open.begin() + static_cast<std::ptrdiff_t>(open_index));
  last_correlation_ = kNoCorrelation;  // last_sweep_ may have moved
}

bool StepTimeline::Finish(std::vector<DeviceTimeline>* devices, std::vector<ProfilerStep>* steps,
                          InternedStrings* step_names) {
  Track();
  if (!Release()) return false;  // what is still set aside was never launched
  for (Device& d : devices_) {
    auto sweep_launched = [&](const StepActivity& a) {
      return !Seen(a.correlation) || Sweep(&d, a, StepOfSeen(a.correlation));
    };
    if (!std::all_of(d.queue.begin(), d.queue.end(), sweep_launched)) return false;
    d.queue.clear();
    while (!d.open.empty()) Close(&d, d.open.size() - 1);
    std::sort(d.closed.begin(), d.closed.end(),
              [](const StepFigures& a, const StepFigures& b) { return a.step < b.step; });
    for (DeviceTimeline& t : *devices) {
      if (t.device == d.device) t.steps = std::move(d.closed);
    }
  }
  pending_ = 0;
  aside_ = {};
  *steps = std::move(steps_);
  *step_names = std::move(names_);
  return true;
}

StepSpans StepSpansOf(const GpuTimeline& timeline) {
  StepSpans out;
  out.steps = timeline.steps.size();
  std::vector<int64_t> spans;
  for (const ProfilerStep& s : timeline.steps) {
    if (s.activities > 0) spans.push_back(s.span_ns());
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
