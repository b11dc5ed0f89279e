// Library tracefuse_analyze: the perf models' figures summed over an op tree's units, and what
// they achieve on a GPU (docs/perf-models.md, "Rates, percent of peak and bound").
#ifndef TRACEFUSE_ANALYZE_OP_WORK_H_
#define TRACEFUSE_ANALYZE_OP_WORK_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tracefuse/analyze/gpu_spec.h"
#include "tracefuse/reduce/op_tree.h"

namespace tracefuse {

// WorkTotals is the work of some units: FLOPs and bytes summed over the counted ops that have
// them (saturating), and how much of each came in each dtype, which names the dtype of the whole.
struct WorkTotals {
  std::optional<uint64_t> flops;  // nullopt: no counted op has FLOPs
  std::optional<uint64_t> bytes;
  std::array<uint64_t, kDTypes> flops_by_dtype{};
  std::array<uint64_t, kDTypes> bytes_by_dtype{};

  // Add() adds `times` times `other`.
  void Add(const WorkTotals& other, uint64_t times = 1);
  // dtype() is the dtype with the most FLOPs, or, without FLOPs, the most bytes (ties: the
  // first in DType order); kUnknown without either.
  DType dtype() const;
};

// WorkOfSets() is the work of each of `tree`'s work sets (OpTree::work_sets), each distinct
// shaped op modelled once.
std::vector<WorkTotals> WorkOfSets(const OpTree& tree);

// CategoryWork is the FLOPs the perf models credit to one kernel category, and the kernel time
// they were done in: each unit with FLOPs credits them all to the category that holds most of
// its kernel time (an aten::linear's GEMM, not its bias add), over its kernels of that category.
struct CategoryWork {
  uint64_t flops = 0;
  int64_t time_ns = 0;  // of the credited units' kernels of the category

  // tflops_per_s() is the TFLOP/s the category achieved on the credited FLOPs; nullopt without
  // FLOPs or time.
  std::optional<double> tflops_per_s() const;
  // Add() credits `more_flops` done in `more_ns` (FLOPs saturate).
  void Add(uint64_t more_flops, int64_t more_ns);
};

// UnitCategoryWork is what one unit credits: its FLOPs, the category that holds most of its kernel
// time and its kernels' time of that category; `credits` is false for a unit without FLOPs or
// without kernels.
struct UnitCategoryWork {
  bool credits = false;
  CategoryId category = 0;
  uint64_t flops = 0;
  int64_t time_ns = 0;
};

// UnitCategoryWorkOf() is what each of `tree`'s units credits: one pass over the kernel records
// (which must still be those BuildOpTree() read). Empty when no unit has FLOPs.
std::vector<UnitCategoryWork> UnitCategoryWorkOf(const TraceProfile& profile, const OpTree& tree,
                                                 const std::vector<WorkTotals>& set_work);

// CategoryWorkOf() is, per category of `profile`'s rule set, what `tree`'s units credit to it
// (UnitCategoryWorkOf(), summed). All zero when no unit has FLOPs.
std::vector<CategoryWork> CategoryWorkOf(const TraceProfile& profile, const OpTree& tree,
                                         const std::vector<WorkTotals>& set_work);

// Bound says what limits an op at its arithmetic intensity on a GPU: compute at or above the
// GPU's ridge point, memory below it or without FLOPs.
enum class Bound : uint8_t { kCompute, kMemory };

// BoundName() is "compute" or "memory".
std::string_view BoundName(Bound bound);

// Roof is what a percent of peak is measured against: the compute peak of the work's dtype
// (compute-bound FLOPs, or FLOPs without bytes), the memory roof at the work's intensity
// (memory-bound FLOPs: HBM bandwidth x FLOP/byte), or HBM bandwidth (bytes without FLOPs).
enum class Roof : uint8_t { kComputePeak, kMemoryRoof, kHbmBandwidth };

// RoofText() is the roof in the words every format uses: "the bf16 peak", "the HBM roof at its
// FLOP/byte", "HBM bandwidth".
std::string RoofText(Roof roof, DType dtype);

// Achieved is what some work reached in `time_ns` of kernel time.
struct Achieved {
  std::optional<double> tflops_per_s;     // FLOPs / time
  std::optional<double> tb_per_s;         // bytes / time
  std::optional<double> percent_of_peak;  // of the roofline at the work's intensity: of `roof`
  std::optional<Roof> roof;               // set with percent_of_peak
  std::optional<Bound> bound;             // against the GPU's ridge point
};

// AchievedOf() is `work`'s rates in `time_ns` (none when it is not positive). The bound: memory
// for bytes without FLOPs, compute for FLOPs without bytes, else by intensity against `peak`'s
// ridge point. The percent needs a time and `peak` (nullptr: the GPU is unknown) with its
// bandwidth, and for FLOPs its peak for the work's dtype.
Achieved AchievedOf(const WorkTotals& work, int64_t time_ns, const GpuPeak* peak);

}  // namespace tracefuse

#endif  // TRACEFUSE_ANALYZE_OP_WORK_H_
