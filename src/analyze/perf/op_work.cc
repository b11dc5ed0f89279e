#include "tracefuse/analyze/op_work.h"

#include <algorithm>

#include "tracefuse/analyze/perf_model.h"
#include "tracefuse/base/strings.h"

namespace tracefuse {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  uint64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}

uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  uint64_t product;
  return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

void AddTimes(std::optional<uint64_t>* total, std::optional<uint64_t> more, uint64_t times) {
  if (!more) return;
  *total = SaturatingAdd(total->value_or(0), SaturatingMul(*more, times));
}

WorkTotals WorkOfOp(const ShapedOp& op) {
  WorkTotals totals;
  const std::optional<OpShapes> shapes = ParseOpShapes(op.shapes);
  if (!shapes) return totals;
  const OpWork work = ModelOp(op.model, *shapes);
  totals.flops = work.flops;
  totals.bytes = work.bytes;
  const auto dtype = static_cast<size_t>(work.dtype);
  totals.flops_by_dtype[dtype] = work.flops.value_or(0);
  totals.bytes_by_dtype[dtype] = work.bytes.value_or(0);
  return totals;
}

}  // namespace

void WorkTotals::Add(const WorkTotals& other, uint64_t times) {
  if (!other.flops && !other.bytes) return;
  AddTimes(&flops, other.flops, times);
  AddTimes(&bytes, other.bytes, times);
  for (size_t d = 0; d < kDTypes; ++d) {
    flops_by_dtype[d] =
        SaturatingAdd(flops_by_dtype[d], SaturatingMul(other.flops_by_dtype[d], times));
    bytes_by_dtype[d] =
        SaturatingAdd(bytes_by_dtype[d], SaturatingMul(other.bytes_by_dtype[d], times));
  }
}

DType WorkTotals::dtype() const {
  const std::array<uint64_t, kDTypes>& weight =
      flops.value_or(0) > 0 ? flops_by_dtype : bytes_by_dtype;
  // kUnknown (int64, bool) has no peak to measure against: it names the whole only alone.
  const auto heaviest = std::max_element(weight.begin() + 1, weight.end());
  return *heaviest == 0 ? DType::kUnknown : static_cast<DType>(heaviest - weight.begin());
}

std::vector<WorkTotals> WorkOfSets(const OpTree& tree) {
  if (tree.work_sets.size() <= 1) return {};
  std::vector<WorkTotals> op_work;
  op_work.reserve(tree.shaped_ops.size());
  for (const ShapedOp& op : tree.shaped_ops) op_work.push_back(WorkOfOp(op));
  std::vector<WorkTotals> sets(tree.work_sets.size() - 1);
  for (size_t s = 0; s < sets.size(); ++s) {
    for (uint32_t i = tree.work_sets[s]; i < tree.work_sets[s + 1]; ++i) {
      sets[s].Add(op_work[tree.work[i].shaped_op], tree.work[i].count);
    }
  }
  return sets;
}

std::optional<double> CategoryWork::tflops_per_s() const {
  if (flops == 0 || time_ns <= 0) return std::nullopt;
  return static_cast<double>(flops) / static_cast<double>(time_ns) / 1e3;
}

void CategoryWork::Add(uint64_t more_flops, int64_t more_ns) {
  flops = SaturatingAdd(flops, more_flops);
  time_ns += more_ns;
}

std::vector<UnitCategoryWork> UnitCategoryWorkOf(const TraceProfile& profile, const OpTree& tree,
                                                 const std::vector<WorkTotals>& set_work) {
  const bool any_flops = std::any_of(set_work.begin(), set_work.end(),
                                     [](const WorkTotals& w) { return w.flops.value_or(0) > 0; });
  if (!any_flops) return {};  // no pass over the kernels: most graph-replay traces
  auto flops_of = [&](uint32_t unit) -> uint64_t {
    const uint32_t set = tree.unit_work[unit];
    return set == kNoWork ? 0 : set_work[set].flops.value_or(0);
  };
  // Kernel time per (unit, category), for the units with FLOPs only: per unit a short list of
  // its categories (most units run kernels of one or two), linked through one pool.
  struct CategoryTime {
    int64_t ns = 0;
    uint32_t next = kNone;
    CategoryId category = 0;
  };
  std::vector<uint32_t> first(tree.units.size(), kNone);
  std::vector<CategoryTime> pool;
  const std::vector<CategoryId> category = profile.NameCategories();
  profile.kernels.ForEach([&](const KernelRecord& k) {
    if (k.group == kNoGroup || tree.group_unit[k.group] == kNoUnit) return;
    const uint32_t unit = tree.group_unit[k.group];
    if (flops_of(unit) == 0) return;
    // The unit's entry of the kernel's category, appended at the end of its list when new.
    uint32_t entry = first[unit], last = kNone;
    while (entry != kNone && pool[entry].category != category[k.name]) {
      last = entry;
      entry = pool[entry].next;
    }
    if (entry == kNone) {
      entry = static_cast<uint32_t>(pool.size());
      pool.push_back(CategoryTime{0, kNone, category[k.name]});
      (last == kNone ? first[unit] : pool[last].next) = entry;
    }
    pool[entry].ns += k.dur_ns;
  });
  // Each unit credits its FLOPs to its category with the most time (ties: the lower id).
  std::vector<UnitCategoryWork> units(tree.units.size());
  for (uint32_t unit = 0; unit < first.size(); ++unit) {
    const CategoryTime* top = nullptr;
    for (uint32_t i = first[unit]; i != kNone; i = pool[i].next) {
      const CategoryTime& c = pool[i];
      if (top == nullptr || c.ns > top->ns || (c.ns == top->ns && c.category < top->category)) {
        top = &c;
      }
    }
    if (top != nullptr)
      units[unit] = UnitCategoryWork{true, top->category, flops_of(unit), top->ns};
  }
  return units;
}

std::vector<CategoryWork> CategoryWorkOf(const TraceProfile& profile, const OpTree& tree,
                                         const std::vector<WorkTotals>& set_work) {
  std::vector<CategoryWork> work(profile.category_count());
  for (const UnitCategoryWork& unit : UnitCategoryWorkOf(profile, tree, set_work)) {
    if (unit.credits) work[unit.category].Add(unit.flops, unit.time_ns);
  }
  return work;
}

std::string_view BoundName(Bound bound) { return bound == Bound::kCompute ? "compute" : "memory"; }

std::string RoofText(Roof roof, DType dtype) {
  switch (roof) {
    case Roof::kComputePeak:
      return StrCat("the ", DTypeName(dtype), " peak");
    case Roof::kMemoryRoof:
      return "the HBM roof at its FLOP/byte";
    case Roof::kHbmBandwidth:
      break;
  }
  return "HBM bandwidth";
}

Achieved AchievedOf(const WorkTotals& work, int64_t time_ns, const GpuPeak* peak) {
  Achieved a;
  const bool has_flops = work.flops.value_or(0) > 0;
  const bool has_bytes = work.bytes.value_or(0) > 0;
  if (time_ns > 0) {
    // FLOPs per nanosecond are GFLOP/s: a thousandth of a TFLOP/s.
    const double per_ns = 1.0 / static_cast<double>(time_ns) / 1e3;
    if (work.flops) a.tflops_per_s = static_cast<double>(*work.flops) * per_ns;
    if (work.bytes) a.tb_per_s = static_cast<double>(*work.bytes) * per_ns;
  }
  if (!has_flops) {
    // Bytes alone are memory-bound whatever the GPU; their share of its bandwidth needs it.
    if (!has_bytes) return a;
    a.bound = Bound::kMemory;
    if (a.tb_per_s && peak != nullptr && peak->hbm_tb_per_s) {
      a.percent_of_peak = 100 * *a.tb_per_s / *peak->hbm_tb_per_s;
      a.roof = Roof::kHbmBandwidth;
    }
    return a;
  }
  if (!has_bytes) a.bound = Bound::kCompute;
  if (peak == nullptr) return a;
  const std::optional<double> tflops = peak->Tflops(work.dtype());
  const std::optional<double> hbm = peak->hbm_tb_per_s;
  // The roofline needs both peaks: at intensity AI (FLOP/byte) the most a GPU can do is
  // min(peak, AI x bandwidth), and its ridge point, where the two meet, is peak / bandwidth.
  // Without the bandwidth, no percent rather than one measured against the compute peak alone.
  if (!tflops || !hbm) return a;
  double roof = *tflops;
  a.roof = Roof::kComputePeak;
  if (has_bytes) {
    const double intensity = static_cast<double>(*work.flops) / static_cast<double>(*work.bytes);
    roof = std::min(*tflops, intensity * *hbm);
    a.bound = intensity >= *tflops / *hbm ? Bound::kCompute : Bound::kMemory;
    if (a.bound == Bound::kMemory) a.roof = Roof::kMemoryRoof;
  }
  if (!a.tflops_per_s) {
    a.roof.reset();
    return a;
  }
  a.percent_of_peak = 100 * *a.tflops_per_s / roof;
  return a;
}

}  // namespace tracefuse
