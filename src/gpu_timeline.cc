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

void SortByDeviceAndStart(std::vector<GpuActivity>* activities) {
  std::sort(activities->begin(), activities->end(), [](const GpuActivity& a, const GpuActivity& b) {
    return a.device != b.device ? a.device < b.device : a.start_ns < b.start_ns;
  });
}

}  // namespace tracefuse
