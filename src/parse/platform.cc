#include "tracefuse/parse/platform.h"

#include "tracefuse/base/strings.h"

namespace tracefuse {

std::string_view TraceFormatName(TraceFormat format) {
  switch (format) {
    case TraceFormat::kNsysSqlite:
      return "Nsight Systems SQLite";
    case TraceFormat::kRocprofv3Json:
      return "rocprofv3 JSON";
    case TraceFormat::kRocpdSqlite:
      return "rocpd SQLite";
    default:
      return "Kineto JSON";
  }
}

std::string_view PlatformName(Platform p) {
  switch (p) {
    case Platform::kAmd:
      return "AMD";
    case Platform::kNvidia:
      return "NVIDIA";
    default:
      return "unknown";
  }
}

namespace {

constexpr std::string_view kAmdNameMarks[] = {
    "Cijk_", "ck::", "ck_tile", "rocprim::", "wvSplitK", "__amd_rocclr", "_ZN2ck", "rccl"};
constexpr std::string_view kNvidiaNameMarks[] = {"nvjet",         "sm80_",   "sm90_",  "sm100_",
                                                 "cutlass",       "ampere_", "volta_", "turing_",
                                                 "ncclDevKernel", "cudnn"};

template <size_t N>
bool ContainsAny(std::string_view s, const std::string_view (&marks)[N]) {
  for (auto m : marks)
    if (s.find(m) != std::string_view::npos) return true;
  return false;
}

bool ContainsIgnoreCase(std::string_view haystack, std::string_view lower_needle) {
  return AsciiLower(haystack).find(lower_needle) != std::string::npos;
}

}  // namespace

Platform DetectPlatform(const TraceMetadata& m, const EventEvidence& events,
                        const std::vector<std::string>& kernel_names, std::string* evidence_out) {
  auto decide = [&](Platform p, std::string why) {
    *evidence_out = std::move(why);
    return p;
  };
  // A vendor's profiler traces its own GPUs only.
  switch (m.format) {
    case TraceFormat::kNsysSqlite:
      return decide(Platform::kNvidia, "an Nsight Systems export");
    case TraceFormat::kRocprofv3Json:
    case TraceFormat::kRocpdSqlite:
      return decide(Platform::kAmd, "a rocprofv3 output");
    case TraceFormat::kKineto:
      break;
  }
  // The reference's rule first, so that both agree wherever it decides.
  if (m.roctracer_version_truthy) return decide(Platform::kAmd, "roctracer_version is set");
  if (m.warp_size == kAmdWarpSize)
    return decide(Platform::kAmd, "deviceProperties[0].warpSize is 64");
  if (m.has_hip_runtime_version) return decide(Platform::kAmd, "hip_runtime_version is set");
  if (m.has_cupti_version) return decide(Platform::kNvidia, "cupti_version is set");
  if (m.has_cuda_runtime_version) return decide(Platform::kNvidia, "cuda_runtime_version is set");
  if (m.gpu_name) {
    const std::string& g = *m.gpu_name;
    if (ContainsIgnoreCase(g, "amd") || ContainsIgnoreCase(g, "radeon") ||
        ContainsIgnoreCase(g, "instinct")) {
      return decide(Platform::kAmd, StrCat("GPU name '", g, "'"));
    }
    if (ContainsIgnoreCase(g, "nvidia") || ContainsIgnoreCase(g, "tesla") ||
        ContainsIgnoreCase(g, "geforce") || ContainsIgnoreCase(g, "quadro")) {
      return decide(Platform::kNvidia, StrCat("GPU name '", g, "'"));
    }
  }
  if (events.kernels_with_kind > 0) {
    return decide(Platform::kAmd,
                  StrCat(events.kernels_with_kind, " kernel events carry args.kind (roctracer)"));
  }
  if (events.hip_runtime_calls != events.cuda_runtime_calls) {
    bool amd = events.hip_runtime_calls > events.cuda_runtime_calls;
    return decide(amd ? Platform::kAmd : Platform::kNvidia,
                  StrCat(events.hip_runtime_calls, " hip* vs ", events.cuda_runtime_calls,
                         " cuda* runtime calls"));
  }
  size_t amd = 0, nvidia = 0;
  for (const std::string& n : kernel_names) {
    amd += ContainsAny(n, kAmdNameMarks);
    nvidia += ContainsAny(n, kNvidiaNameMarks);
  }
  if (amd != nvidia) {
    return decide(amd > nvidia ? Platform::kAmd : Platform::kNvidia,
                  StrCat(amd, " AMD-library vs ", nvidia, " NVIDIA-library kernel names"));
  }
  return decide(Platform::kUnknown, "no platform marker found");
}

}  // namespace tracefuse
