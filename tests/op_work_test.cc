// The perf models' figures summed and measured against a GPU (op_work.h): the roofline's percent
// of peak and bound, and the dtype that names a sum.
#include "tracefuse/analyze/op_work.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

namespace tracefuse {
namespace {

// Work() is `flops` and `bytes` done in `dtype`.
WorkTotals Work(std::optional<uint64_t> flops, std::optional<uint64_t> bytes, DType dtype) {
  WorkTotals w;
  w.flops = flops;
  w.bytes = bytes;
  w.flops_by_dtype[static_cast<size_t>(dtype)] = flops.value_or(0);
  w.bytes_by_dtype[static_cast<size_t>(dtype)] = bytes.value_or(0);
  return w;
}

// A GPU of 1000 TFLOP/s bf16 and 4 TB/s: its ridge point is 250 FLOP/byte.
GpuPeak Gpu() {
  GpuPeak g;
  g.name = "test";
  g.tflops[static_cast<size_t>(DType::kBf16)] = 1000;
  g.hbm_tb_per_s = 4;
  return g;
}

TEST(OpWork, ComputeBoundWorkIsMeasuredAgainstThePeak) {
  const GpuPeak gpu = Gpu();
  // 1e12 FLOPs in 2e9 bytes (500 FLOP/byte) in 2 ms: 500 TFLOP/s of 1000.
  const Achieved a =
      AchievedOf(Work(1'000'000'000'000, 2'000'000'000, DType::kBf16), 2'000'000, &gpu);
  EXPECT_DOUBLE_EQ(*a.tflops_per_s, 1e12 / 2e6 / 1e3);
  EXPECT_DOUBLE_EQ(*a.tb_per_s, 2e9 / 2e6 / 1e3);
  EXPECT_EQ(a.bound, Bound::kCompute);
  EXPECT_DOUBLE_EQ(*a.percent_of_peak, 100 * (1e12 / 2e6 / 1e3) / 1000);
  EXPECT_EQ(a.roof, Roof::kComputePeak);
  EXPECT_EQ(RoofText(*a.roof, DType::kBf16), "the bf16 peak");
}

TEST(OpWork, MemoryBoundWorkIsMeasuredAgainstTheRoofAtItsIntensity) {
  const GpuPeak gpu = Gpu();
  // 1e11 FLOPs in 1e10 bytes (10 FLOP/byte): the roof is 10 x 4 = 40 TFLOP/s.
  const Achieved a =
      AchievedOf(Work(100'000'000'000, 10'000'000'000, DType::kBf16), 5'000'000, &gpu);
  EXPECT_EQ(a.bound, Bound::kMemory);
  EXPECT_DOUBLE_EQ(*a.percent_of_peak, 100 * (1e11 / 5e6 / 1e3) / (10.0 * 4));
  EXPECT_EQ(a.roof, Roof::kMemoryRoof);
  EXPECT_EQ(RoofText(*a.roof, DType::kBf16), "the HBM roof at its FLOP/byte");
}

TEST(OpWork, BytesAloneAreMemoryBoundWhateverTheGpu) {
  const GpuPeak gpu = Gpu();
  const WorkTotals copy = Work(std::nullopt, 2'000'000'000, DType::kBf16);
  const Achieved known = AchievedOf(copy, 1'000'000, &gpu);
  EXPECT_EQ(known.bound, Bound::kMemory);
  EXPECT_DOUBLE_EQ(*known.percent_of_peak, 100 * (2e9 / 1e6 / 1e3) / 4);
  EXPECT_EQ(known.roof, Roof::kHbmBandwidth);
  EXPECT_EQ(RoofText(*known.roof, DType::kBf16), "HBM bandwidth");
  const Achieved unknown = AchievedOf(copy, 1'000'000, nullptr);
  EXPECT_EQ(unknown.bound, Bound::kMemory);
  EXPECT_EQ(unknown.percent_of_peak, std::nullopt);
  EXPECT_EQ(unknown.roof, std::nullopt);  // no percent, no roof
  EXPECT_DOUBLE_EQ(*unknown.tb_per_s, 2e9 / 1e6 / 1e3);
}

TEST(OpWork, NoPercentAgainstOnePeakWhenTheRooflineNeedsTwo) {
  GpuPeak gpu = Gpu();
  gpu.hbm_tb_per_s = std::nullopt;  // a --gpu-spec row without it, say
  const Achieved a = AchievedOf(Work(1'000'000, 1'000, DType::kBf16), 1'000, &gpu);
  EXPECT_TRUE(a.tflops_per_s.has_value());
  EXPECT_EQ(a.percent_of_peak, std::nullopt);
  EXPECT_EQ(a.bound, std::nullopt);
  // Nor without the dtype's peak.
  const GpuPeak full = Gpu();
  EXPECT_EQ(AchievedOf(Work(1'000'000, 1'000, DType::kFp8), 1'000, &full).percent_of_peak,
            std::nullopt);
}

TEST(OpWork, NoRatesWithoutTime) {
  const GpuPeak gpu = Gpu();
  const Achieved a = AchievedOf(Work(1'000'000, 1'000, DType::kBf16), 0, &gpu);
  EXPECT_EQ(a.tflops_per_s, std::nullopt);
  EXPECT_EQ(a.percent_of_peak, std::nullopt);
  EXPECT_EQ(a.bound, Bound::kCompute);  // 1000 FLOP/byte, past the ridge: no time needed
}

TEST(OpWork, ZeroFlopsAreNoFlops) {
  // A convolution backward with neither gradient asked: FLOPs 0, bytes moved.
  const GpuPeak gpu = Gpu();
  const WorkTotals w = Work(0, 4'000'000, DType::kBf16);
  EXPECT_EQ(w.dtype(), DType::kBf16);
  const Achieved a = AchievedOf(w, 1'000'000, &gpu);
  EXPECT_EQ(a.bound, Bound::kMemory);
  EXPECT_DOUBLE_EQ(*a.percent_of_peak, 100 * (4e6 / 1e6 / 1e3) / 4);
}

TEST(OpWork, TheDtypeOfASumIsTheOneMostFlopsCameIn) {
  WorkTotals sum = Work(100, 10, DType::kBf16);
  sum.Add(Work(300, 10, DType::kFp8));
  sum.Add(Work(200, 10, DType::kFp32), 2);  // twice: 400
  EXPECT_EQ(*sum.flops, 100u + 300 + 2 * 200);
  EXPECT_EQ(sum.dtype(), DType::kFp32);
  // Types without a peak (int64) name a sum only alone.
  WorkTotals indices = Work(std::nullopt, 1000, DType::kUnknown);
  EXPECT_EQ(indices.dtype(), DType::kUnknown);
  indices.Add(Work(std::nullopt, 10, DType::kBf16));
  EXPECT_EQ(indices.dtype(), DType::kBf16);
}

TEST(OpWork, SumsSaturate) {
  WorkTotals sum = Work(UINT64_MAX - 1, 1, DType::kBf16);
  sum.Add(Work(5, 1, DType::kBf16), 3);
  EXPECT_EQ(*sum.flops, UINT64_MAX);
  EXPECT_EQ(*sum.bytes, 4u);
}

}  // namespace
}  // namespace tracefuse
