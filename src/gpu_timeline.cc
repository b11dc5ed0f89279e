#include "tracefuse/gpu_timeline.h"

#include <algorithm>

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

}  // namespace tracefuse
