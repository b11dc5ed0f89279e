// Library tracefuse_analyze: GPU peaks as data. data/gpus.yaml (embedded at build time) lists, per
// GPU, its dense peak TFLOP/s per element type and its memory bandwidth, each row citing the
// vendor's datasheet; `--gpu-spec FILE` adds a user's rows (a file of the same layout) to it,
// each replacing the built-in row of its name.
// Traces name their GPU in deviceProperties[].name ("NVIDIA H100 80GB HBM3", "AMD Instinct
// MI300X VF"); FindGpu() matches such a name to a row.
#ifndef TRACEFUSE_ANALYZE_GPU_SPEC_H_
#define TRACEFUSE_ANALYZE_GPU_SPEC_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tracefuse {

// DType is an element type as the perf models and the peak table know it.
enum class DType : uint8_t { kUnknown, kFp64, kFp32, kTf32, kBf16, kFp16, kFp8, kInt8 };
inline constexpr size_t kDTypes = 8;

// DTypeName() is "fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", or "" for kUnknown: the
// keys of data/gpus.yaml's `tflops` maps and of the reports' `peak` objects.
std::string_view DTypeName(DType type);

// GpuPeak is one row of the peak table.
struct GpuPeak {
  std::string name;                // "H100 SXM"
  std::vector<std::string> match;  // lower-case substrings of deviceProperties names
  std::string source;              // the datasheet the figures come from
  // Dense peak TFLOP/s (TOPS for int8) per DType, indexed by the enum; nullopt where the vendor
  // lists none.
  std::array<std::optional<double>, kDTypes> tflops{};
  std::optional<double> hbm_tb_per_s;

  std::optional<double> Tflops(DType type) const { return tflops[static_cast<size_t>(type)]; }
};

// GpuSpecs is a peak table, rows in file order (FindGpu() takes the first that matches).
struct GpuSpecs {
  std::vector<GpuPeak> gpus;
};

// BuiltinGpuSpecs() is data/gpus.yaml, parsed once.
const GpuSpecs& BuiltinGpuSpecs();

// ParseGpuSpecs() reads a peak table in data/gpus.yaml's layout; `display_name` prefixes its
// one-line InvalidArgument errors ("FILE: gpus[3] (H100 SXM): ..."). It also rejects what
// FindGpu() would misread: an upper-case match, and a row that an earlier row's match hides.
absl::StatusOr<GpuSpecs> ParseGpuSpecs(std::string_view yaml, const std::string& display_name);

// LoadGpuSpecs() reads the peak table at `path` (`--gpu-spec FILE`); NotFound when it cannot be
// opened.
absl::StatusOr<GpuSpecs> LoadGpuSpecs(const std::string& path);

// WithBuiltinGpuSpecs() is the built-in table under `rows` (`--gpu-spec FILE`): the rows of
// `rows` first, in their order, so that FindGpu() tries them first, then each built-in row whose
// name none of them has. A user's row thus replaces the built-in row of its name, and adds a GPU
// the table lacks.
GpuSpecs WithBuiltinGpuSpecs(GpuSpecs rows);

// FindGpu() is the first row of `specs` one of whose `match` strings is a substring of
// `device_name` lower-cased, a trailing " VF" (an SR-IOV virtual function) removed; nullptr for
// none, and for an empty name.
const GpuPeak* FindGpu(const GpuSpecs& specs, std::string_view device_name);

}  // namespace tracefuse

#endif  // TRACEFUSE_ANALYZE_GPU_SPEC_H_
