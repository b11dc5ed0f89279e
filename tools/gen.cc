// tracefuse-gen: writes a synthetic Kineto (PyTorch profiler) trace of an LLM decode workload,
// AMD-like or NVIDIA-like, of a requested size, deterministically for a seed.
//
// Each step is one CUDA/HIP graph replay (every kernel of the replay shares the launch's
// correlation id, layers x kernels-per-layer of them) followed by eager kernels with their own
// correlation ids, surrounded by the events real traces are full of: python_function, cpu_op,
// cuda_runtime launches, ac2g flow pairs, user_annotation, gpu_memcpy / gpu_memset and metadata.
// The AMD variant runs a few operations unfused (a separate reduce after attention, a separate
// residual add, more sort kernels), so `tracefuse compare` has something to find.
//
// --world-size N above 1 makes the trace one rank (--rank) of a tensor-parallel job: each layer of
// the replay ends with an all-reduce that every rank leaves at the same time, when the slowest
// rank's compute is done plus a transfer. Per-rank durations come from (seed, rank, kernel) alone,
// so the N invocations agree without talking; --slow-rank R makes rank R compute --slow-factor
// times as long, and --expect-ranks FILE writes every rank's computation, collective and wait.
//
// Layouts, the same JSON document token for token, only the whitespace differing: "kineto" (the
// default: several lines per event, as PyTorch's profiler writes through Kineto's C++ writer),
// "lines" (one event per line) and "compact" (the whole trace on one line, as json.dump writes).
//
// --eager writes instead a pair of eager PyTorch traces, trace 1 (-o) on --platform and trace 2
// (--pair-output) on the other, with the fusion differences that `tracefuse ops` finds
// (FindFusionDifferences() in include/tracefuse/op_compare.h) planted in them, and --expect
// FILE writes what `ops TRACE1 TRACE2 --format json` must report for them. Each ProfilerStep#N
// runs a model of --layers decoder layers under nn.Module frames (Model/DecoderLayer/Attention,
// .../RMSNorm, .../MLP), cpu_ops nesting others (aten::linear -> aten::addmm), one launch per
// kernel (hipLaunchKernel or cudaLaunchKernel), sampling ops, a copy to the host, and a graph
// replay that no cpu_op encloses: --replay llama (the default), a dense model's --layers layers in
// one launch, or --replay moe, a Qwen3-MoE decode's --layers layers (after one layer of SGLang's
// on MI300X and on B300) in three launches. --plant picks the kinds planted (default
// op,module,graph); what each must be reported as follows the spec (op_compare.h, FusionRelation;
// data/kernel-roles.yaml for the kernels' roles):
//   - op: aten::scaled_dot_product_attention runs a fill and the attention on one side, the
//     attention alone on the other, in every layer: a split (a fill is a helper of the kernel
//     that follows it); one aten::linear per step (in one layer) runs its bias add as a kernel of
//     its own on one side: a fusion, the GEMM absorbing the add.
//   - module: an RMSNorm as six ATen ops (pow, mean, add, rsqrt, mul, mul) against _C::rms_norm,
//     and aten::silu + aten::mul against _C::silu_and_mul, in every layer: fusions.
//   - graph (the llama replay): an add after one GEMM on one side, a fusion that the GEMM covers;
//     after one attention, SGLang's split-KV stage 2 and a copy on one side: a split (the stage 2
//     is a helper of the attention) and a fusion (the attention, the nearest kernel that can,
//     absorbs the copy) over the attention's operation and the copy.
//   - replay (the MoE replay, which it chooses), in every layer: o_proj as a split-K GEMM and its
//     reduction against one GEMM (split), split-KV attention and its combine against one-pass
//     attention (split), copy + norm + copy + norm against one q/k-norm kernel (fusion), residual
//     add + RMSNorm against a fused add + RMSNorm (fusion, which the fused norm covers: its name
//     states the add), im2col + GEMM against layout transform + convolution + transform
//     (algorithm: fused_by null).
//   - none: only the controls, which are there in every run and which nothing may report:
//     kernel names and durations that differ, a RoPE op named differently on each side (one
//     kernel each), a CPU-only op on the AMD side only, aten::to launching a copy on AMD and
//     nothing on NVIDIA; and in the MoE replay, its three launches a step, cut at different
//     kernels on the two sides (between a main kernel and its helper, where a side has one), and
//     two adjacent kernels (the MoE sort and the quantization) swapped in one layer on one side.
// The seed draws the durations and flips which side fuses each plant; the plants alternate
// between the sides. --steps defaults to 4 (--size, when given, is trace 1's size). The
// expectation is {"fusion_differences": [...]} in the report's schema, except that times are
// integer nanoseconds ("time_ns", "extra_time_ns", "saving_ns", an example kernel's "time_ns") so
// that a test can compare them exactly, and that the example gives both traces' unit positions,
// "indices": {"trace1": I, "trace2": J}, for the pair in either order.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "tracefuse/reduce/op_tree.h"

namespace {

struct Options {
  std::string platform = "amd";
  std::string size = "64M";
  std::string layout = "kineto";
  std::string output = "-";
  uint64_t seed = 1;
  int layers = 8;
  int eager_per_step = 6;
  int python_per_kernel = 3;
  int python_per_step = 24;
  int cpu_ops_per_step = 8;
  uint64_t steps = 0;  // 0: as many as the size allows
  int rank = 0;        // distributedInfo of one process of a distributed job
  int world_size = 1;
  int slow_rank = -1;  // the rank whose every compute kernel takes slow_factor as long
  double slow_factor = 1.3;
  std::string expect_ranks;       // what each rank's trace must show, as JSON
  bool plant_idle = false;        // plant a kernel before its launch, one without, an overlap
  std::string expect_idle;        // what the device's idle split, launches, integrity must be
  uint64_t giant_name_bytes = 0;  // one more kernel, in the second step, with a name this long
  bool summary = false;
  bool eager = false;
  std::string pair_output;  // --eager: trace 2
  std::string expect;       // --eager: the expected fusion differences
  std::string plant = "op,module,graph";
  std::string replay = "llama";  // --eager: the graph replay's model, llama or moe
};

// splitmix64: small, fast and deterministic.
struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi) nanoseconds.
  int64_t Range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Next() % uint64_t(hi - lo));
  }
};

struct KernelKind {
  const char* name;
  int64_t dur_ns;  // typical duration
};

const std::vector<KernelKind> kAmdLayer = {
    {"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", 4500},
    {"Cijk_Ailk_Bljk_BBS_BH_MT128x128x64_MI16x16x1_SN_1LDSB1_ISA942", 21000},
    {"void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, "
     "(vllm::Fp8KVCacheDataType)0>(__hip_bfloat16 const*, __hip_bfloat16 const*, "
     "__hip_bfloat16*, __hip_bfloat16*, long const*, int, int, int, int, int, int, float const*, "
     "float const*)",
     3000},
    {"kernel_unified_attention_3d", 38000},
    {"_fwd_kernel_reduce_segments", 2000},
    {"Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x1_SN_1LDSB1_ISA942", 12000},
    {"void at::native::vectorized_elementwise_kernel<4, "
     "at::native::CUDAFunctor_add<c10::BFloat16>, "
     "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, "
     "3ul>)",
     1800},
    {"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1", 4400},
    {"Cijk_Ailk_Bljk_BBS_BH_MT256x128x64_MI16x16x1_SN_1LDSB1_ISA942", 30000},
    {"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>"
     "(c10::BFloat16*, c10::BFloat16 const*, int)",
     3500},
    {"Cijk_Ailk_Bljk_BBS_BH_MT128x64x64_MI16x16x1_SN_1LDSB1_ISA942", 16000},
};

const std::vector<KernelKind> kNvidiaLayer = {
    {"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", 3900},
    {"nvjet_tst_128x64_64x6_2x1_v_bz_coopB_TNT", 17000},
    {"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, "
     "(vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, "
     "__nv_bfloat16*, long const*, int, int, int, int, int, int, float const*, float const*)",
     2600},
    {"fmhaSm100fKernel_QkvE4m3OBfloat16HQk128HV128SeparateQkvCausalForGenPersistent", 30000},
    {"nvjet_tst_64x64_64x8_1x1_v_bz_TNT", 9000},
    {"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1", 4000},
    {"nvjet_tst_256x128_64x4_2x1_v_bz_coopB_TNT", 24000},
    {"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>"
     "(c10::BFloat16*, c10::BFloat16 const*, int)",
     2900},
    {"nvjet_tst_128x64_64x6_2x1_v_bz_TNT", 13000},
};

const std::vector<KernelKind> kAmdSampling = {
    {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, float, "
     "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, c10::BFloat16 const*, "
     "int)",
     6000},
    {"void rocprim::detail::onesweep_histograms_kernel<rocprim::detail::wrapped_radix_sort_config<"
     "rocprim::default_config, float, long>, false, float, unsigned long>(float const*, unsigned "
     "long*, unsigned long, unsigned int, unsigned int)",
     2500},
    {"void rocprim::detail::onesweep_scan_histograms_kernel<rocprim::detail::wrapped_radix_sort_"
     "config<rocprim::default_config, float, long>, unsigned long>(unsigned long*)",
     1500},
    {"void rocprim::detail::onesweep_iteration_kernel<rocprim::detail::wrapped_radix_sort_config<"
     "rocprim::default_config, float, long>, false, float*, float*, long*, long*, unsigned long>"
     "(float*, float*, long*, long*, unsigned long*, unsigned long*, unsigned long, unsigned int, "
     "unsigned int, unsigned int)",
     4200},
    {"void rocprim::detail::onesweep_iteration_kernel<rocprim::detail::wrapped_radix_sort_config<"
     "rocprim::default_config, float, long>, false, float*, float*, long*, long*, unsigned long>"
     "(float*, float*, long*, long*, unsigned long*, unsigned long*, unsigned long, unsigned int, "
     "unsigned int, unsigned int)",
     4200},
};

const std::vector<KernelKind> kNvidiaSampling = {
    {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, float, "
     "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, c10::BFloat16 const*, "
     "int)",
     5000},
    {"void cub::CUB_200200_1000_NS::DeviceRadixSortOnesweepKernel<cub::CUB_200200_1000_NS::"
     "DeviceRadixSortPolicy<float, long, unsigned long>::Policy900, false, float, long, unsigned "
     "long, int, int, cub::CUB_200200_1000_NS::detail::identity_decomposer_t>(int*, int*, unsigned "
     "long*, unsigned long const*, float*, float const*, long*, long const*, int, int, int, "
     "cub::CUB_200200_1000_NS::detail::identity_decomposer_t)",
     7000},
};

const std::vector<KernelKind> kEager = {
    {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, "
     "std::array<char*, 1ul> >(int, at::native::FillFunctor<int>, std::array<char*, 1ul>)",
     1500},
    {"void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned "
     "int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
     "at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::"
     "TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)",
     3100},
    {"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
     "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
     "{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::"
     "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
     "{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, "
     "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::"
     "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
     "{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::"
     "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::"
     "{lambda(float)#1} const&)::{lambda(int)#1})",
     2200},
};

const char* kStepCpuOps[] = {"aten::empty", "aten::copy_", "aten::index_select", "aten::to"};

const char* kPythonFrames[] = {
    "vllm/v1/worker/gpu_model_runner.py(1201): execute_model",
    "vllm/model_executor/models/llama.py(377): forward",
    "torch/nn/modules/module.py(1762): _call_impl",
    "vllm/v1/sample/sampler.py(58): forward",
    "<built-in method \"fill_\" of Tensor object at 0x7f3a2c1e5f30>",
};

uint64_t ParseSize(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string unit(end);
  double mult = 1;
  if (unit == "K" || unit == "k" || unit == "KiB") mult = 1024.0;
  if (unit == "M" || unit == "MiB") mult = 1024.0 * 1024;
  if (unit == "G" || unit == "GiB") mult = 1024.0 * 1024 * 1024;
  if (unit == "KB") mult = 1e3;
  if (unit == "MB") mult = 1e6;
  if (unit == "GB") mult = 1e9;
  return static_cast<uint64_t>(v * mult);
}

enum class Layout { kKineto, kLines, kCompact };

// RecordedShapes() are the args a profiler with record_shapes=True adds to a cpu_op: its inputs'
// dims, types and scalar values, for a decode step of 16 tokens of a 4096-wide bf16 model, so
// that the perf models (docs/perf-models.md) have GEMMs, attention, copies and element-wise ops
// to count.
std::string_view RecordedShapes(std::string_view op) {
  static const std::map<std::string_view, std::string_view> kShapes = {
      {"aten::addmm",
       R"(, "Input Dims": [[4096], [16, 4096], [4096, 4096], [], []], "Input type": )"
       R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"], )"
       R"("Concrete Inputs": ["", "", "", "1", "1"])"},
      {"aten::mm", R"(, "Input Dims": [[16, 4096], [4096, 4096]], "Input type": )"
                   R"(["c10::BFloat16", "c10::BFloat16"], "Concrete Inputs": ["", ""])"},
      {"aten::_scaled_dot_product_flash_attention",
       R"(, "Input Dims": [[1, 32, 16, 128], [1, 8, 16, 128], [1, 8, 16, 128], [], [], [], []], )"
       R"("Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", )"
       R"("Scalar", "Scalar"], "Concrete Inputs": ["", "", "", "0.", "True", "False", "0.08"])"},
      {"aten::copy_",
       R"(, "Input Dims": [[16, 4096], [16, 4096], []], "Input type": )"
       R"(["c10::BFloat16", "float", "Scalar"], "Concrete Inputs": ["", "", "False"])"},
      {"aten::argmax",
       R"(, "Input Dims": [[16, 128256], [], []], "Input type": )"
       R"(["c10::BFloat16", "Scalar", "Scalar"], "Concrete Inputs": ["", "-1", "False"])"},
      {"aten::empty", R"(, "Input Dims": [[], [], [], [], [], []], "Input type": )"
                      R"(["GenericList", "Scalar", "", "", "", ""], "Concrete Inputs": )"
                      R"(["[16, 4096]", "15", "", "", "", ""])"},
  };
  constexpr std::string_view kElementwise =
      R"(, "Input Dims": [[16, 4096], [16, 4096]], "Input type": )"
      R"(["c10::BFloat16", "c10::BFloat16"], "Concrete Inputs": ["", ""])";
  const auto it = kShapes.find(op);
  if (it != kShapes.end()) return it->second;
  return op.substr(0, 6) == "aten::" ? kElementwise : std::string_view();
}

// Kineto's separators between two fields of an event, where the one-line layouts write ", "
// (Writer::Sep). Its writer (libkineto's output_json.cpp, 2024) formats an event from fixed lines
// ("ph" to "tid", then "ts" and "dur", then "args"), and a GPU event's args from the tracer's
// multi-line template with the newlines taken out, which leaves each line's indentation behind;
// a CPU op's "External id" is glued to its record-function args without a space.
constexpr std::string_view kNextLine = ",\n    ";
constexpr std::string_view kTemplateLine = ",      ";
constexpr std::string_view kGlued = ",";
// A GPU event without "External id" starts its args with the template's first indentation.
constexpr std::string_view kTemplateIndent = "      ";

class Writer {
 public:
  Writer(FILE* f, Layout layout) : f_(f), layout_(layout) { buf_.reserve(kFlush + (1 << 16)); }
  ~Writer() { Flush(); }

  Layout layout() const { return layout_; }
  bool kineto() const { return layout_ == Layout::kKineto; }
  void Raw(std::string_view s) { buf_.append(s); }
  // Whitespace that only Kineto's layout has.
  void KinetoOnly(std::string_view s) {
    if (kineto()) buf_.append(s);
  }
  // A separator between two fields: `kineto` in Kineto's layout, ", " in the others.
  void Sep(std::string_view kineto_sep) { buf_.append(kineto() ? kineto_sep : ", "); }
  void Int(int64_t v) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof(tmp), v);
    buf_.append(tmp, r.ptr);
  }
  // Nanoseconds as decimal microseconds with three fractional digits.
  void Micros(int64_t ns) {
    Int(ns / 1000);
    char frac[4] = {'.', char('0' + (ns / 100) % 10), char('0' + (ns / 10) % 10),
                    char('0' + ns % 10)};
    buf_.append(frac, 4);
  }
  void Str(std::string_view s) {
    buf_.push_back('"');
    for (char c : s) {
      if (c == '"' || c == '\\') buf_.push_back('\\');
      buf_.push_back(c);
    }
    buf_.push_back('"');
  }
  // Starts the next event of the traceEvents array, up to its first key. Kineto writes each
  // event as "  {", its fields indented by four, "  }", and a comma after every event but the last.
  void BeginEvent() {
    if (!first_event_) buf_.append(",");
    first_event_ = false;
    switch (layout_) {
      case Layout::kKineto:
        buf_.append("\n  {\n    ");
        break;
      case Layout::kLines:
        buf_.append("\n  {");
        break;
      case Layout::kCompact:
        buf_.append("{");
    }
  }
  void EndEvent() { buf_.append(kineto() ? "\n  }" : "}"); }
  // The args object: Kineto opens it on a line of its own and indents its keys by six.
  void BeginArgs() { buf_.append(kineto() ? ",\n    \"args\": {\n      " : ", \"args\": {"); }
  void EndArgs() { buf_.append(kineto() ? "\n    }" : "}"); }
  void MaybeFlush() {
    if (buf_.size() >= kFlush) Flush();
  }
  void Flush() {
    if (!buf_.empty()) {
      if (std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) ok_ = false;
      written_ += buf_.size();
      buf_.clear();
    }
  }
  uint64_t bytes() const { return written_ + buf_.size(); }
  bool ok() const { return ok_; }

 private:
  static constexpr size_t kFlush = 8u << 20;
  FILE* f_;
  Layout layout_;
  bool first_event_ = true;
  bool ok_ = true;
  std::string buf_;
  uint64_t written_ = 0;
};

struct Gpu {
  const char* name;
  int64_t total_global_mem;
  int compute_major;
  int compute_minor;
  int warp_size;
  int num_sms;
  int shared_mem_per_block;
  const char* tracer_keys[2];  // the tracer's version keys, which tell the platform
};

const Gpu kMi300x = {"AMD Instinct MI300X",
                     205822885888,
                     9,
                     4,
                     64,
                     304,
                     65536,
                     {"\"roctracer_version\": 4.1", "\"hip_runtime_version\": 60342134"}};
const Gpu kH100 = {"NVIDIA H100 80GB HBM3",
                   84929347584,
                   9,
                   0,
                   32,
                   132,
                   49152,
                   {"\"cupti_version\": 22", "\"cuda_runtime_version\": 12040"}};

// The keys before the events as Kineto writes them: a blank first line, one key per line, the
// device's keys over a few lines of their own (in Kineto's grouping of the same keys).
constexpr std::string_view kKinetoHeader = R"(
{{
  "schemaVersion": 1,
  "deviceProperties": [
    {{
      "id": 0, "name": "{}", "totalGlobalMem": {},
      "computeMajor": {}, "computeMinor": {},
      "warpSize": {}, "numSms": {},
      "maxThreadsPerBlock": 1024, "sharedMemPerBlock": {}
    }}
  ],
  {},
  {},
  "distributedInfo": {{"backend": "nccl", "rank": {}, "world_size": {}}},
  "traceEvents": [)";

// The same keys in the one-line layouts ({nl}: a newline in "lines", nothing in "compact").
constexpr std::string_view kFlatHeader =
    "{{{nl}  \"schemaVersion\": 1,{nl}  \"deviceProperties\": [{{\"id\": 0, \"name\": \"{name}\", "
    "\"totalGlobalMem\": {mem}, \"computeMajor\": {major}, \"computeMinor\": {minor}, "
    "\"warpSize\": {warp}, \"numSms\": {sms}, \"maxThreadsPerBlock\": 1024, "
    "\"sharedMemPerBlock\": {shared}}}],{nl}  {tracer0}, {tracer1},{nl}  \"distributedInfo\": "
    "{{\"backend\": \"nccl\", \"rank\": {rank}, \"world_size\": {world}}},{nl}  \"traceEvents\": [";

// What follows the events. Kineto ends the file without a newline.
constexpr std::string_view kTrailerKeys[] = {"\"traceName\": \"tracefuse-gen\"",
                                             "\"displayTimeUnit\": \"ms\"",
                                             "\"baseTimeNanoseconds\": 1751410836000000000"};

// EventWriter writes the events both modes share, in the platform's (roctracer's or CUPTI's)
// field layout: the CPU thread is pid/tid 1234, the GPU stream pid 0 tid 7.
class EventWriter {
 public:
  EventWriter(Writer& w, bool amd) : w_(w), amd_(amd) {}

  bool amd() const { return amd_; }
  uint64_t kernels() const { return kernels_; }
  uint64_t events() const { return events_; }

  void Header(int rank, int world_size) {
    const Gpu& g = amd_ ? kMi300x : kH100;
    if (w_.kineto()) {
      w_.Raw(fmt::format(kKinetoHeader, g.name, g.total_global_mem, g.compute_major,
                         g.compute_minor, g.warp_size, g.num_sms, g.shared_mem_per_block,
                         g.tracer_keys[0], g.tracer_keys[1], rank, world_size));
    } else {
      w_.Raw(fmt::format(kFlatHeader, fmt::arg("nl", w_.layout() == Layout::kLines ? "\n" : ""),
                         fmt::arg("name", g.name), fmt::arg("mem", g.total_global_mem),
                         fmt::arg("major", g.compute_major), fmt::arg("minor", g.compute_minor),
                         fmt::arg("warp", g.warp_size), fmt::arg("sms", g.num_sms),
                         fmt::arg("shared", g.shared_mem_per_block),
                         fmt::arg("tracer0", g.tracer_keys[0]),
                         fmt::arg("tracer1", g.tracer_keys[1]), fmt::arg("rank", rank),
                         fmt::arg("world", world_size)));
    }
    Metadata("process_name", 0, "python3");
    Metadata("thread_name", 1, "python3");
    Metadata("process_name", 2, g.name);
  }

  void Footer() {
    const auto& k = kTrailerKeys;
    switch (w_.layout()) {
      case Layout::kKineto:
        w_.Raw(fmt::format("\n  ],\n  {},\n  {},\n  {}\n}}", k[0], k[1], k[2]));
        break;
      case Layout::kLines:
        w_.Raw(fmt::format("\n  ],\n  {}, {}, {}\n}}\n", k[0], k[1], k[2]));
        break;
      case Layout::kCompact:
        w_.Raw(fmt::format("],   {}, {}, {}}}", k[0], k[1], k[2]));
    }
  }

  void Annotation(std::string_view name, int64_t ts, int64_t dur, uint64_t ext) {
    Complete("user_annotation", name, ts, dur, 1234, 1234);
    w_.Raw("\"External id\": ");
    w_.Int(static_cast<int64_t>(ext));
    EndComplete();
  }
  void Python(std::string_view frame, int64_t ts, int64_t dur, uint64_t parent, uint64_t id) {
    Complete("python_function", frame, ts, dur, 1234, 1234);
    w_.Raw("\"Python parent id\": ");
    w_.Int(static_cast<int64_t>(parent));
    w_.Raw(", \"Python id\": ");
    w_.Int(static_cast<int64_t>(id));
    w_.Raw(", \"Python thread\": 0");
    EndComplete();
  }
  void CpuOp(std::string_view name, int64_t ts, int64_t dur, uint64_t ext) {
    Complete("cpu_op", name, ts, dur, 1234, 1234);
    w_.Raw("\"External id\": ");
    w_.Int(static_cast<int64_t>(ext));
    w_.Sep(kGlued);
    w_.Raw("\"Record function id\": 0, \"Ev Idx\": ");
    w_.Int(static_cast<int64_t>(ext));
    w_.Raw(RecordedShapes(name));
    EndComplete();
  }
  void Runtime(std::string_view name, int64_t ts, int64_t dur, uint64_t ext, uint64_t corr) {
    Complete("cuda_runtime", name, ts, dur, 1234, 1234);
    w_.Raw("\"External id\": ");
    w_.Int(static_cast<int64_t>(ext));
    w_.Sep(kTemplateLine);
    w_.Raw("\"cbid\": 211, \"correlation\": ");
    w_.Int(static_cast<int64_t>(corr));
    EndComplete();
  }
  void Flow(const char* ph, uint64_t id, int64_t ts, int pid, int tid) {
    w_.BeginEvent();
    w_.Raw("\"ph\": \"");
    w_.Raw(ph);
    w_.Raw("\", \"id\": ");
    w_.Int(static_cast<int64_t>(id));
    w_.Raw(", \"pid\": ");
    w_.Int(pid);
    w_.Raw(", \"tid\": ");
    w_.Int(tid);
    w_.Raw(", \"ts\": ");
    w_.Micros(ts);
    w_.Sep(kNextLine);
    w_.Raw("\"cat\": \"ac2g\", \"name\": \"ac2g\"");
    if (ph[0] == 'f') w_.Raw(", \"bp\": \"e\"");
    w_.EndEvent();
  }
  void Kernel(std::string_view name, int64_t ts, int64_t dur, uint64_t corr, uint64_t ext) {
    ++kernels_;
    Complete("kernel", name, ts, dur, 0, 7);
    w_.Raw("\"External id\": ");
    w_.Int(static_cast<int64_t>(ext));
    w_.Sep(kTemplateLine);
    DeviceStreamCorrelation(corr);
    if (amd_) {
      // ROCm's Kineto pads the launch dimensions: "grid":     [1024, 1, 1].
      w_.Raw(", \"kind\": \"Dispatch Kernel\"");
      w_.Sep(kTemplateLine);
      w_.Raw("\"grid\": ");
      w_.KinetoOnly("    ");
      w_.Raw("[1024, 1, 1], \"block\": ");
      w_.KinetoOnly("    ");
      w_.Raw("[256, 1, 1]");
    } else {
      w_.Sep(kTemplateLine);
      w_.Raw("\"grid\": [1024, 1, 1]");
      w_.Sep(kTemplateLine);
      w_.Raw("\"block\": [256, 1, 1]");
    }
    EndComplete();
  }
  void Memcpy(int64_t ts, int64_t dur, uint64_t corr) {
    Complete("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", ts, dur, 0, 7);
    w_.KinetoOnly(kTemplateIndent);  // no "External id" before the template
    DeviceStreamCorrelation(corr);
    w_.Sep(kTemplateLine);
    w_.Raw("\"bytes\": 4096, \"memory bandwidth (GB/s)\": 1.95");
    EndComplete();
  }

 private:
  void Metadata(const char* what, int pid, const char* value) {
    w_.BeginEvent();
    w_.Raw("\"name\": ");
    w_.Str(what);
    w_.Raw(", \"ph\": \"M\", \"ts\": 0, \"pid\": ");
    w_.Int(pid);
    w_.Raw(", \"tid\": 0");
    w_.BeginArgs();
    w_.Raw("\"name\": ");
    w_.Str(value);
    w_.EndArgs();
    w_.EndEvent();
  }
  // A complete event up to its args, which the caller writes between BeginArgs and EndArgs.
  void Complete(const char* cat, std::string_view name, int64_t ts, int64_t dur, int pid, int tid) {
    ++events_;
    w_.BeginEvent();
    w_.Raw("\"ph\": \"X\", \"cat\": \"");
    w_.Raw(cat);
    w_.Raw("\", \"name\": ");
    w_.Str(name);
    w_.Raw(", \"pid\": ");
    w_.Int(pid);
    w_.Raw(", \"tid\": ");
    w_.Int(tid);
    w_.Sep(kNextLine);
    w_.Raw("\"ts\": ");
    w_.Micros(ts);
    w_.Raw(", \"dur\": ");
    w_.Micros(dur);
    w_.BeginArgs();
  }
  void EndComplete() {
    w_.EndArgs();
    w_.EndEvent();
  }
  // A GPU event's device, stream and correlation, on the lines of its tracer's template:
  // roctracer's "device, stream" then "correlation", CUPTI's "device" then "stream, correlation".
  void DeviceStreamCorrelation(uint64_t corr) {
    w_.Raw(amd_ ? "\"device\": 0, \"stream\": 7" : "\"device\": 0");
    w_.Sep(kTemplateLine);
    w_.Raw(amd_ ? "\"correlation\": " : "\"stream\": 7, \"correlation\": ");
    w_.Int(static_cast<int64_t>(corr));
  }

  Writer& w_;
  bool amd_;
  uint64_t kernels_ = 0;
  uint64_t events_ = 0;  // complete ("X") events
};

// The CPU clock's start, shared by both modes: the trace's baseTimeNanoseconds past a round second.
constexpr int64_t kCpuStartNs =
    1751410836000000000 / 1000 * 1000 - 1751410000000000000 + 5000000000;

// The collective that ends each layer of a multi-rank run: names that real NCCL and RCCL traces
// show for a bf16 all-reduce, which tracefuse's rules classify as Communication.
constexpr const char* kNcclAllReduce =
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
constexpr const char* kRcclAllReduce = "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)";

// A hash of a few numbers, so that every invocation of a multi-rank run draws the same per-rank
// variation without sharing a generator's state.
uint64_t Mix(uint64_t seed, uint64_t a, uint64_t b) {
  return Rng{seed ^ (a * 0xD1B54A32D192ED03ULL) ^ (b * 0x8CB92BA72F3D8DD7ULL)}.Next();
}

// What one rank of a multi-rank run spends, in nanoseconds, for --expect-ranks.
struct RankTotals {
  int64_t computation_ns = 0;
  int64_t collective_ns = 0;
  int64_t wait_ns = 0;
};

// IdleExpectation is what --expect-idle writes: this rank's device's idle split, launches per API
// and integrity (include/tracefuse/reduce/gpu_timeline.h), kept as the writer places each
// activity on the GPU clock, in start order on the one stream the generator writes: a gap is
// the time since the furthest end so far, the launch of the activity that ends it is known.
class IdleExpectation {
 public:
  void Launch(uint64_t corr, std::string_view api, int64_t ts, int64_t dur) {
    launches_.emplace(corr, KnownLaunch{ts, dur, std::string(api)});
  }
  void Activity(int64_t start, int64_t end, uint64_t corr) {
    auto launch = launches_.find(corr);
    const bool launched = launch != launches_.end();
    if (any_ && start > busy_end_) {
      ++gaps_;
      if (!launched) {
        unattributed_ns_ += start - busy_end_;
      } else {
        const int64_t e = std::clamp(launch->second.ts + launch->second.dur, busy_end_, start);
        cpu_wait_ns_ += e - busy_end_;
        launch_latency_ns_ += start - e;
      }
    }
    if (any_ && end > start && start < stream_end_) {
      ++overlaps_;
      overlap_ns_ += std::min(stream_end_, end) - start;
      involved_ns_ += std::min(stream_end_, end) - start;
    }
    if (end > start) stream_end_ = any_stream_ ? std::max(stream_end_, end) : end;
    any_stream_ |= end > start;
    busy_end_ = any_ ? std::max(busy_end_, end) : end;
    any_ = true;
    activity_ns_ += end - start;
    if (!launched) return;
    KnownLaunch& l = launch->second;
    if (start < l.ts) {
      ++before_launch_;
      involved_ns_ += end - start;
    }
    if (l.counted) return;
    l.counted = true;
    by_api_[l.api].first.push_back(l.dur);
    by_api_[l.api].second.push_back(start - (l.ts + l.dur));
  }
  std::string Json() const {
    std::string launches;
    for (const auto& [api, values] : by_api_) {
      launches += fmt::format(
          "{}\n    {{\"api\": \"{}\", \"count\": {}, \"cpu_us\": {}, \"delay_us\": {}}}",
          launches.empty() ? "" : ",", api, values.first.size(), Quantiles(values.first),
          Quantiles(values.second));
    }
    return fmt::format(
        "{{\"devices\": [{{\"device\": 0,\n  \"idle\": {{\"cpu_wait_us\": {}, "
        "\"launch_latency_us\": {}, \"unattributed_us\": {}, \"gaps\": {}}},\n  \"launches\": "
        "[{}],\n  \"integrity\": {{\"same_stream_overlaps\": {}, \"same_stream_overlap_us\": {}, "
        "\"before_launch\": {}, \"involved_us\": {}, \"activity_us\": {}}}}}]}}\n",
        Us(cpu_wait_ns_), Us(launch_latency_ns_), Us(unattributed_ns_), gaps_, launches, overlaps_,
        Us(overlap_ns_), before_launch_, Us(involved_ns_), Us(activity_ns_));
  }

 private:
  struct KnownLaunch {
    int64_t ts = 0, dur = 0;
    std::string api;
    bool counted = false;  // its first activity is placed
  };
  // Us() is nanoseconds as microseconds with three decimals, negative ones too.
  static std::string Us(int64_t ns) {
    return fmt::format("{}{}.{:03}", ns < 0 ? "-" : "", std::abs(ns) / 1000, std::abs(ns) % 1000);
  }
  // Quantiles() is {"median", "p90", "max"} by nearest rank: the ceil(q * n)-th smallest.
  static std::string Quantiles(std::vector<int64_t> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return fmt::format("{{\"median\": {}, \"p90\": {}, \"max\": {}}}", Us(values[(n + 1) / 2 - 1]),
                       Us(values[(9 * n + 9) / 10 - 1]), Us(values[n - 1]));
  }

  std::map<uint64_t, KnownLaunch> launches_;
  bool any_ = false, any_stream_ = false;
  int64_t busy_end_ = 0, stream_end_ = 0;
  int64_t cpu_wait_ns_ = 0, launch_latency_ns_ = 0, unattributed_ns_ = 0;
  uint64_t gaps_ = 0;
  uint64_t overlaps_ = 0, before_launch_ = 0;
  int64_t overlap_ns_ = 0, involved_ns_ = 0, activity_ns_ = 0;
  std::map<std::string, std::pair<std::vector<int64_t>, std::vector<int64_t>>> by_api_;
};

// TraceWriter writes one rank's trace, but keeps every rank's GPU clock: a multi-rank run is N
// invocations that cannot talk to each other, so each one replays the whole job to know when the
// slowest rank reaches each collective, and hence when the collective ends on its own rank.
class TraceWriter {
 public:
  TraceWriter(Writer& w, const Options& o)
      : events_(w, o.platform == "amd"),
        w_(w),
        o_(o),
        amd_(o.platform == "amd"),
        rng_{o.seed},
        me_(o.world_size > 1 ? o.rank : 0),
        gpu_ts_(o.world_size > 1 ? o.world_size : 1, 0),
        totals_(gpu_ts_.size()),
        rank_dur_(gpu_ts_.size()) {
    if (o.giant_name_bytes > 0) giant_name_ = GiantName(o.giant_name_bytes);
    if (!o.expect_idle.empty()) expect_idle_ = std::make_unique<IdleExpectation>();
  }

  void Header() { events_.Header(o_.rank, o_.world_size); }
  void Footer() { events_.Footer(); }
  uint64_t kernels() const { return events_.kernels(); }
  uint64_t events() const { return events_.events(); }
  uint64_t collectives() const { return collectives_; }
  const std::vector<RankTotals>& totals() const { return totals_; }
  const IdleExpectation* expect_idle() const { return expect_idle_.get(); }

  // One decode step: a graph replay, then eager sampling kernels.
  void Step() {
    const std::vector<KernelKind>& layer = amd_ ? kAmdLayer : kNvidiaLayer;
    const std::vector<KernelKind>& sampling = amd_ ? kAmdSampling : kNvidiaSampling;
    int64_t step_start = cpu_ts_;
    events_.Annotation(fmt::format("execute_context_1({})_generation_1({})", 1 + step_ % 7, step_),
                       step_start, StepCpuSpan(sampling.size()), next_ext_++);
    if (o_.plant_idle) PlantIdle();
    // The scheduler and model runner's Python frames and the ATen calls around the replay.
    for (int i = 0; i < o_.python_per_step; ++i)
      Python(kPythonFrames[i % 5], 40000 - 1000 * (i % 30));
    for (int i = 0; i < o_.cpu_ops_per_step; ++i) {
      CpuOp(kStepCpuOps[i % 4], next_ext_++, 900);
    }
    // Graph replay: one launch, one correlation id, every layer's kernels.
    uint64_t corr = next_corr_++;
    uint64_t ext = next_ext_++;
    CpuOp("vllm::unified_attention_with_output", ext, 12000);
    Launch(amd_ ? "hipGraphLaunch" : "cudaGraphLaunch", corr, ext);
    for (int64_t& ts : gpu_ts_) ts = std::max(ts, cpu_ts_ + 5000);
    for (int l = 0; l < o_.layers; ++l) {
      for (const KernelKind& k : layer) Kernel(k, corr, ext);
      // Tensor parallelism: each layer's output is summed across the ranks, inside the graph.
      if (o_.world_size > 1) AllReduce(corr, ext);
      w_.MaybeFlush();
    }
    // Eager sampling and bookkeeping kernels, one launch each.
    for (const KernelKind& k : sampling) EagerKernel(k);
    if (step_ == 1 && !giant_name_.empty()) EagerKernel(KernelKind{giant_name_.c_str(), 5000});
    for (int e = 0; e < o_.eager_per_step; ++e) EagerKernel(kEager[e % kEager.size()]);
    Memcpy();
    ++step_;
    // The next step starts when the slowest rank is done, so that the ranks share step starts.
    cpu_ts_ = std::max(cpu_ts_, *std::max_element(gpu_ts_.begin(), gpu_ts_.end())) + 20000;
  }

 private:
  // StepCpuSpan() is how long a step's CPU side takes, from its first Python frame to its last
  // launch: the step annotation covers it, as vLLM's does, so that every op nests in its step.
  int64_t StepCpuSpan(size_t sampling_kernels) const {
    const int64_t eager = static_cast<int64_t>(sampling_kernels) + o_.eager_per_step;
    return 1000 * (o_.python_per_step + o_.cpu_ops_per_step) + 1000 + 5000 +
           eager * (1000 * o_.python_per_kernel + 1000 + 5000) + (o_.plant_idle ? kPlantCpuNs : 0);
  }
  // PlantIdle() writes, while the GPU idles at a step's start, what --plant-idle plants: a
  // kernel that starts 1.5 us before its launch call (wrong times), one with no launch in the
  // trace 2 us after the previous one ends (an unattributed gap), and two kernels launched back to
  // back of which the second starts 300 ns before the first ends on the same stream (what
  // programmatic dependent launch does). They take kPlantCpuNs of the step's CPU time.
  static constexpr int64_t kPlantCpuNs = 2000 + 5000 + 2 * 5000;
  void PlantIdle() {
    const KernelKind& k = (amd_ ? kAmdLayer : kNvidiaLayer).front();
    for (int64_t& ts : gpu_ts_) ts = std::max(ts, cpu_ts_ + 500);
    const uint64_t early = next_corr_++;
    const uint64_t ext = next_ext_++;
    cpu_ts_ += 2000;  // the GPU has been idle 20 us: the kernel starts first
    Launch(amd_ ? "hipLaunchKernel" : "cudaLaunchKernel", early, ext, /*flow=*/false);
    Kernel(k, early, ext);
    for (int64_t& ts : gpu_ts_) ts += 2000;
    Kernel(k, next_corr_++, next_ext_++);
    const uint64_t first = next_corr_++, second = next_corr_++;
    Launch(amd_ ? "hipLaunchKernel" : "cudaLaunchKernel", first, ext, /*flow=*/false);
    Launch(amd_ ? "hipLaunchKernel" : "cudaLaunchKernel", second, ext, /*flow=*/false);
    for (int64_t& ts : gpu_ts_) ts = std::max(ts, cpu_ts_);
    Kernel(k, first, ext);
    for (int64_t& ts : gpu_ts_) ts -= 1300;  // Kernel() left 1 us after it
    Kernel(k, second, ext);
  }
  void Python(const char* frame, int64_t dur) {
    const uint64_t parent = python_id_;
    events_.Python(frame, cpu_ts_, dur, parent, ++python_id_);
    cpu_ts_ += 1000;
  }
  void CpuOp(std::string_view name, uint64_t ext, int64_t dur) {
    events_.CpuOp(name, cpu_ts_, dur, ext);
    cpu_ts_ += 1000;
  }
  void Launch(const char* name, uint64_t corr, uint64_t ext, bool flow = true) {
    events_.Runtime(name, cpu_ts_, 4500, ext, corr);
    if (expect_idle_) expect_idle_->Launch(corr, name, cpu_ts_, 4500);
    if (flow) {
      events_.Flow("s", corr, cpu_ts_, 1234, 1234);
      pending_flow_ = corr;
    }
    cpu_ts_ += 5000;
  }
  void Kernel(const KernelKind& k, uint64_t corr, uint64_t ext) {
    // Every rank draws the same base duration from rng_, so one rank's draws stay in step with
    // every other's, and a single-rank run draws exactly what it always did.
    const int64_t base = k.dur_ns + rng_.Range(0, k.dur_ns / 8 + 1);
    for (size_t r = 0; r < gpu_ts_.size(); ++r) rank_dur_[r] = RankDuration(k, base, r);
    events_.Kernel(k.name, gpu_ts_[me_], rank_dur_[me_], corr, ext);
    if (expect_idle_) expect_idle_->Activity(gpu_ts_[me_], gpu_ts_[me_] + rank_dur_[me_], corr);
    if (pending_flow_ == corr) {
      events_.Flow("f", corr, gpu_ts_[me_], 0, 7);
      pending_flow_ = 0;
    }
    for (size_t r = 0; r < gpu_ts_.size(); ++r) {
      totals_[r].computation_ns += rank_dur_[r];
      gpu_ts_[r] += rank_dur_[r] + 1000;
    }
    ++compute_kernels_;
  }
  // RankDuration() is how long rank r runs a kernel whose shared draw is `base`: a few percent of
  // per-rank noise, from (seed, rank, kernel) alone, and --slow-factor on the slow rank.
  int64_t RankDuration(const KernelKind& k, int64_t base, size_t r) const {
    if (o_.world_size <= 1) return base;
    int64_t dur = base + static_cast<int64_t>(Mix(o_.seed, r + 1, compute_kernels_) %
                                              uint64_t(k.dur_ns / 16 + 1));
    if (static_cast<int>(r) == o_.slow_rank)
      dur = std::llround(static_cast<double>(dur) * o_.slow_factor);
    return dur;
  }
  // AllReduce() ends every rank's compute segment with a collective: it starts on each rank when
  // that rank's compute is done, and ends on all of them when the last rank's is, plus the
  // transfer, so a rank that finished early waits and all of them start the next segment together.
  void AllReduce(uint64_t corr, uint64_t ext) {
    const int64_t last = *std::max_element(gpu_ts_.begin(), gpu_ts_.end());
    const int64_t transfer = 9000 + static_cast<int64_t>(Mix(o_.seed, 0, collectives_) % 3000);
    const int64_t end = last + transfer;
    events_.Kernel(amd_ ? kRcclAllReduce : kNcclAllReduce, gpu_ts_[me_], end - gpu_ts_[me_], corr,
                   ext);
    if (expect_idle_) expect_idle_->Activity(gpu_ts_[me_], end, corr);
    // The rank that arrived last runs the shortest collective: the transfer alone.
    for (size_t r = 0; r < gpu_ts_.size(); ++r) {
      totals_[r].collective_ns += end - gpu_ts_[r];
      totals_[r].wait_ns += last - gpu_ts_[r];
      gpu_ts_[r] = end + 1000;
    }
    ++collectives_;
  }
  void EagerKernel(const KernelKind& k) {
    for (int i = 0; i < o_.python_per_kernel; ++i) Python(kPythonFrames[1 + (i + step_) % 4], 9000);
    uint64_t corr = next_corr_++;
    uint64_t ext = next_ext_++;
    CpuOp("aten::fill_", ext, 8250);
    Launch(amd_ ? "hipLaunchKernel" : "cudaLaunchKernel", corr, ext);
    for (int64_t& ts : gpu_ts_) ts = std::max(ts, cpu_ts_);
    Kernel(k, corr, ext);
  }
  void Memcpy() {
    if (expect_idle_) expect_idle_->Activity(gpu_ts_[me_], gpu_ts_[me_] + 2100, next_corr_);
    events_.Memcpy(gpu_ts_[me_], 2100, next_corr_++);
    for (int64_t& ts : gpu_ts_) ts += 3100;
  }

  // GiantName() is a kernel name of exactly `bytes` bytes (at least 32), for the tests of
  // --max-event-bytes: what a corrupt trace or a runaway template instantiation looks like.
  static std::string GiantName(uint64_t bytes) {
    std::string name = "void giant_kernel<";
    const std::string end = ">(float*)";
    name.resize(std::max<uint64_t>(bytes, 32) - end.size(), 'T');
    return name + end;
  }

  EventWriter events_;
  Writer& w_;
  const Options& o_;
  bool amd_;
  std::string giant_name_;
  std::unique_ptr<IdleExpectation> expect_idle_;  // with --expect-idle
  Rng rng_;
  size_t me_;                    // this trace's rank
  std::vector<int64_t> gpu_ts_;  // each rank's GPU clock: where its next kernel may start
  std::vector<RankTotals> totals_;
  std::vector<int64_t> rank_dur_;  // the kernel being written, on each rank
  uint64_t compute_kernels_ = 0;
  uint64_t collectives_ = 0;
  int64_t cpu_ts_ = kCpuStartNs;
  uint64_t next_corr_ = 1000;
  uint64_t next_ext_ = 1;
  uint64_t python_id_ = 0;
  uint64_t pending_flow_ = 0;
  uint64_t step_ = 0;
};

// ---- --eager: a pair of eager traces with planted fusion differences ----

// Role is one kernel of the eager model, run under the name its platform's library gives it.
enum Role : uint8_t {
  kEmbedding,
  kQkvGemm,
  kRope,
  kFill,
  kAttention,
  kOutGemm,
  kAdd,
  kPow,
  kMean,
  kAddScalar,
  kRsqrt,
  kMul,
  kRmsNorm,
  kGateUpGemm,
  kSilu,
  kSiluAndMul,
  kDownGemm,
  kArgmax,
  kSortHistogram,
  kSortPass,
  kCopy,
  kGraphNorm0,
  kGraphKvCache,
  kGraphAttention,
  kGraphNorm1,
  kSplitKvStage2,
  kTritonCopy,
  // The MoE decode replay (--replay moe), after one layer of SGLang's Qwen3-MoE decode on MI300X
  // and on B300.
  kMoeNorm,  // fused residual add + RMSNorm
  kMoeQkvGemm,
  kQkCopy,  // unfused q/k norm: copy, norm, copy, norm
  kQkNorm,
  kQkNormFused,       // one kernel for the q and k norms
  kMoeRope,           // RoPE and the KV-cache store
  kSplitKvAttention,  // split-KV decode attention and its combine
  kSplitKvCombine,
  kDecodeAttention,  // one-pass decode attention
  kSplitKGemm,       // o_proj as a split-K GEMM and its reduction
  kSplitKReduce,
  kOprojGemm,  // o_proj in one GEMM
  kPlainNorm,  // an RMSNorm without the residual add
  kRouterGemm,
  kMoeTopk,
  kMoeSort,
  kMoeQuant,
  kMoeGemmUp,
  kMoeGemmDown,
  kIm2col,  // a convolution as im2col + GEMM ...
  kConvGemm,
  kToNhwc,  // ... or as layout transform + convolution + transform back
  kConv,
  kToNchw,
  kLmHead,
  kRoleCount,
};

// RoleKernel's category is the one tracefuse's default rule set gives both names (checked with
// `tracefuse classify`): the expectations are written from it, not from a classifier.
struct RoleKernel {
  const char* amd;
  const char* nvidia;
  const char* category;
  int64_t amd_ns;
  int64_t nvidia_ns;
};

// hipBLASLt's names, as the MI300X trace has them (tile, global split-U).
#define TF_TENSILE(tile, gsu)                                                                    \
  "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_" tile                                           \
  "_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_"                                                        \
  "ASEM1_CLR1_CADS0_DTLA0_DTLB0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_" gsu                 \
  "_GSUAMBSK_"                                                                                   \
  "GLS0_ISA942_IU1_K1_LDSTI0_LBSPPA128_LBSPPB256_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_"   \
  "MIWT1_1_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_" \
  "SRVW0_SSO0_SVW8_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_"      \
  "WSGRB0_WS64_WG16_16_1_WGM1_WGMXCC1_WGMXCCGn1"
// Composable Kernel's MoE GEMM (blocks: block size, M, N, K per tile).
#define TF_CK_MOE(blocks)                                                                        \
  "void ck::kernel_moe_gemm<ck::GridwiseMoeGemm<ck::tensor_layout::gemm::RowMajor, "             \
  "ck::tensor_layout::gemm::ColumnMajor, ck::Tuple<>, ck::tensor_layout::gemm::RowMajor, "       \
  "ck::bhalf_t, ck::bhalf_t, ck::Tuple<>, ck::bhalf_t, float, float, " blocks                    \
  ", 8, 8, 16, 16, 1, 2, true, 2, 1, true>, true, 2, 1>(ck::GridwiseMoeGemm<ck::tensor_layout::" \
  "gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::Tuple<>, ck::tensor_layout::gemm::" \
  "RowMajor, ck::bhalf_t, ck::bhalf_t, ck::Tuple<>, ck::bhalf_t, float, float, " blocks          \
  ", 8, 8, 16, 16, 1, 2, true, 2, 1, true>::Argument)"

#define TF_ELEMENTWISE(functor, arity)                                                      \
  "void at::native::vectorized_elementwise_kernel<4, " functor ", std::array<char*, " arity \
  "ul> >(int, " functor ", std::array<char*, " arity "ul>)"

const RoleKernel kRoles[kRoleCount] = {
    {"void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned "
     "int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, "
     "at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::"
     "TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)",
     nullptr, "Index", 3100, 2800},
    {"Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x1_SN_1LDSB1_ISA942",
     "nvjet_tst_128x64_64x6_2x1_v_bz_coopB_TNT", "GEMM", 21000, 17000},
    {"void aiter::kn_entry_2c_sbhd_cached_indirect<aiter::OpCachedFwd<c10::BFloat16>, true>("
     "c10::BFloat16*, c10::BFloat16 const*, long const*, int, int)",
     "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, "
     "c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)",
     "RoPE", 2400, 2100},
    {TF_ELEMENTWISE("at::native::FillFunctor<c10::BFloat16>", "1"), nullptr, "Elementwise", 1500,
     1300},
    {"attn_fwd",
     "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 64, 4, cutlass::bfloat16_t> >, false, "
     "true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
     "Attention", 38000, 30000},
    {"Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x1_SN_1LDSB1_ISA942",
     "nvjet_tst_64x64_64x8_1x1_v_bz_TNT", "GEMM", 12000, 9000},
    {TF_ELEMENTWISE("at::native::CUDAFunctor_add<c10::BFloat16>", "3"), nullptr, "Elementwise",
     1800, 1600},
    {TF_ELEMENTWISE("at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl<float, "
                    "float>(at::TensorIteratorBase&, float)::{lambda(float)#1}",
                    "2"),
     nullptr, "Elementwise", 1700, 1500},
    {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
     "at::native::MeanOps<float, "
     "float, float, float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, "
     "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4, 4>)",
     nullptr, "Reduce", 2600, 2300},
    {TF_ELEMENTWISE("at::native::CUDAFunctor_add<float>", "3"), nullptr, "Elementwise", 1500, 1400},
    {TF_ELEMENTWISE("at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::"
                    "operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}",
                    "2"),
     nullptr, "Elementwise", 1600, 1400},
    {TF_ELEMENTWISE("at::native::binary_internal::MulFunctor<float>", "3"), nullptr, "Elementwise",
     1700, 1500},
    {"void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, long, "
     "c10::BFloat16 const*, float, int, int)",
     nullptr, "RMSNorm", 4500, 3900},
    {"Cijk_Ailk_Bljk_BBS_BH_MT256x128x64_MI16x16x1_SN_1LDSB1_ISA942",
     "nvjet_tst_256x128_64x4_2x1_v_bz_coopB_TNT", "GEMM", 30000, 24000},
    {TF_ELEMENTWISE("at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::"
                    "{lambda()#1}::operator()() const::{lambda()#5}::operator()() const::"
                    "{lambda(c10::BFloat16)#1}",
                    "2"),
     nullptr, "SwiGLU", 2000, 1800},
    {"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>"
     "(c10::BFloat16*, c10::BFloat16 const*, int)",
     nullptr, "SwiGLU", 3500, 2900},
    {"Cijk_Ailk_Bljk_BBS_BH_MT128x64x64_MI16x16x1_SN_1LDSB1_ISA942",
     "nvjet_tst_128x64_64x6_2x1_v_bz_TNT", "GEMM", 16000, 13000},
    {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, "
     "at::native::ArgMaxOps<c10::BFloat16>, unsigned int, long, 4, 4> >(at::native::ReduceOp<"
     "c10::BFloat16, at::native::ArgMaxOps<c10::BFloat16>, unsigned int, long, 4, 4>)",
     nullptr, "Reduce", 2500, 2200},
    {kAmdSampling[1].name,
     "void at_cuda_detail::cub::DeviceRadixSortHistogramKernel<at_cuda_detail::cub::"
     "DeviceRadixSortPolicy<float, long, unsigned long>::Policy900, false, float, unsigned long, "
     "at_cuda_detail::cub::detail::identity_decomposer_t>(unsigned long*, float const*, unsigned "
     "long, int, int, at_cuda_detail::cub::detail::identity_decomposer_t)",
     "Sort", 2500, 2000},
    {kAmdSampling[3].name,
     "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::"
     "DeviceRadixSortPolicy<float, long, unsigned long>::Policy900, false, float, long, unsigned "
     "long, int, int, at_cuda_detail::cub::detail::identity_decomposer_t>(int*, int*, unsigned "
     "long*, unsigned long const*, float*, float const*, long*, long const*, int, int, int, "
     "at_cuda_detail::cub::detail::identity_decomposer_t)",
     "Sort", 4200, 7000},
    {kEager[2].name, nullptr, "MemCopy", 2200, 2000},
    {kAmdLayer[0].name, nullptr, "RMSNorm", 4500, 3900},
    {kAmdLayer[2].name, kNvidiaLayer[2].name, "KV_Cache", 3000, 2600},
    {kAmdLayer[3].name, kNvidiaLayer[3].name, "Attention", 38000, 30000},
    {kAmdLayer[7].name, nullptr, "RMSNorm", 4400, 4000},
    {"_fwd_kernel_stage2", nullptr, "Attention", 2000, 1800},
    {"triton_poi_fused__to_copy_1", nullptr, "Elementwise", 1200, 1100},
    // The MoE decode replay. Names from the two real traces where they have one (MI300X: aiter,
    // hipBLASLt, CK; B300: flashinfer, nvjet, cuBLASLt, TensorRT-LLM's MoE), else from the same
    // libraries (vLLM, FlashAttention 2, MIOpen, cuDNN, ATen).
    {"_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi8ELb1ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_"
     "diiiiiiib",
     "kernel_cutlass_kernel_flashinfernormkernelsfused_add_rmsnormFusedAddRMSNormKernel_object_at__"
     "tensorptrbf16gmemalign128o204820481_tensorptrbf16gmemalign128o204820481_tensorptrbf16gmemalig"
     "n_0",
     "RMSNorm", 4600, 3400},
    {TF_TENSILE("MT64x16x256", "GSU1"), "nvjet_sm103_tst_64x16_64x16_4x1_v_bz_TNT", "GEMM", 14000,
     6400},
    {"void at::native::elementwise_kernel_manual_unroll<128, 8, at::native::gpu_kernel_impl_nocast<"
     "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
     "const::{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, "
     "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
     "const::{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>("
     "at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambd"
     "a()#3}::operator()() const::{lambda()#1}::operator()() const::{lambda(c10::BFloat16)#1} "
     "const&)",
     kEager[2].name, "MemCopy", 4600, 1600},
    {"_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_d"
     "iiiiiiib",
     "kernel_cutlass_kernel_flashinfernormkernelsrmsnormRMSNormKernel_object_at__tensorptrbf16gmema"
     "lign128o204820481_tensorptrbf16gmemalign16o20481_tensorptrbf16gmemalign128o204820481___True_4"
     "__0",
     "RMSNorm", 4300, 2800},
    {"void (anonymous namespace)::fused_qknorm_warp<128l, true, __hip_bfloat16>((anonymous "
     "namespace)::QKNormParams)",
     "void (anonymous namespace)::fused_qknorm_warp<128l, true, __nv_bfloat16>((anonymous "
     "namespace)::QKNormParams)",
     "RMSNorm", 5200, 2900},
    {"_fused_qk_rope_reshape_and_cache_kernel",
     "void (anonymous namespace)::fused_rope_store_kernel<true, 128l, true, __nv_bfloat16, long, "
     "16u>((anonymous namespace)::FusedRopeStoreParams)",
     "RoPE", 4800, 2300},
    {"void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, "
     "(vllm::Fp8KVCacheDataType)0, 1, 128, 256, false, 8, 1, ck_tile::ComposedAttention<0u, false> "
     ">(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16 const*, int, float, int "
     "const*, int const*, int const*, int, float const*, int, int, int, float*, float*, "
     "__hip_bfloat16*, __hip_bfloat16*, int, float const*, float const*, float const*)",
     "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, "
     "false, false, false, false, true, false, false>(flash::Flash_fwd_params)",
     "Attention", 20200, 9000},
    {"void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, 3, "
     "false>(__hip_bfloat16*, float const*, float const*, __hip_bfloat16 const*, int const*, int "
     "const*, int, int, float const*)",
     "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, "
     "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, "
     "4, true>(flash::Flash_fwd_params)",
     "Attention", 4500, 2600},
    {"kernel_unified_attention_2d",
     "fmhaSm100fKernel_QkvBfloat16OBfloat16H128PagedKvCausalP64MultiCtasKvCgaVarSeqQ8Kv128StaticSwa"
     "psAbForGen",
     "Attention", 23000, 10000},
    {TF_TENSILE("MT32x16x256", "GSU4"), "nvjet_sm103_tst_32x64_64x16_4x1_v_bz_splitK_TNN", "GEMM",
     9800, 7400},
    {"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_PostGSU4_VW1",
     "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, "
     "false, float, __nv_bfloat16, __nv_bfloat16, true, false, false, false>(cublasLt::cublasSplitK"
     "Params<float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float "
     "const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, void*, long, float*, int*, float "
     "const*, float const*, float const*, float const*, float const*)",
     "GEMM", 2900, 3300},
    {TF_TENSILE("MT32x16x256", "GSU1"), "nvjet_sm103_tst_128x16_64x8_2x1_v_bz_TNT", "GEMM", 11600,
     8600},
    {"_ZN5aiter20rmsnorm_quant_kernelIDF16bDF16bLi256ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diii"
     "iiiib",
     "kernel_cutlass_kernel_flashinfernormkernelsrmsnormRMSNormKernel_object_at__tensorptrbf16gmema"
     "lign128o204820481_tensorptrbf16gmemalign16o20481_tensorptrbf16gmemalign128o204820481___True_4"
     "__0",
     "RMSNorm", 4000, 2800},
    {TF_TENSILE("MT16x16x512", "GSU1"), "nvjet_sm103_tst_384x16_64x4_4x1_v_bz_TNT", "GEMM", 8500,
     5000},
    {"aiter::topksoftmax_4x128x8_bf16",
     "void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, int, 8>(float const*, bool const*, float*, "
     "int, int*, int*, int, int, int)",
     "MoE_Routing", 4400, 3600},
    {"void ck_tile::kentry<2, ck_tile::MoeSortingKernel<ck_tile::MoeSortingProblemEx<int, float, "
     "2, true, false, false, true, 0> >, ck_tile::MoeSortingKernel<ck_tile::MoeSortingProblemEx<int"
     ", float, 2, true, false, false, true, 0> >::Kargs>(ck_tile::MoeSortingKernel<ck_tile::MoeSort"
     "ingProblemEx<int, float, 2, true, false, false, true, 0> >::Kargs)",
     "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, "
     "int, int, unsigned long, int*)",
     "MoE_Routing", 8100, 4200},
    {"void aiter::dynamic_per_token_scaled_quant_kernel<c10::BFloat16, __hip_fp8_e4m3_fnuz, 256, "
     "false>(__hip_fp8_e4m3_fnuz*, float*, c10::BFloat16 const*, float const*, int, int)",
     "void vllm::dynamic_per_token_scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::"
     "Float8_e4m3fn*, float*, c10::BFloat16 const*, float const*, int)",
     "Quantization", 3100, 2400},
    {TF_CK_MOE("256, 16, 128, 128"),
     "bmm_Bfloat16_Bfloat16Bfloat16_Fp32_t128x8x128u2_s6_et128x8_m128x8x16_c1x1x1_16dp256b_rM_BN_tr"
     "ansOut_schPd2x1x2x3_bN_ldgsts_ldgstsSf_rgTma_clmp_swiGlu_dynB_sm100f",
     "MoE_GEMM", 128000, 62000},
    {TF_CK_MOE("256, 16, 64, 256"),
     "bmm_Bfloat16_Bfloat16Bfloat16_Fp32_t128x8x128u2_s5_et128x8_m128x8x16_c1x1x1_16dp256b_rM_BN_tr"
     "ansOut_schPd2x1x2x3_bN_rgTma_clmp_dynB_sm100f",
     "MoE_GEMM", 65000, 32000},
    {"void at::native::im2col_kernel<c10::BFloat16>(long, c10::BFloat16 const*, long, long, long, "
     "long, long, long, long, long, long, long, long, long, c10::BFloat16*)",
     nullptr, "Conv", 3800, 2700},
    {TF_TENSILE("MT128x16x128", "GSU1"), "nvjet_sm103_tst_128x16_64x8_2x1_v_bz_NNT", "GEMM", 12500,
     7900},
    {"batched_transpose_32x16_half",
     "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, "
     "false, true, (cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>,"
     " __nv_bfloat16 const*, __nv_bfloat16*)",
     "MemCopy", 2600, 2100},
    {"igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt64x128x32_wt32x32x8_ws1x2_wr1x2_ta1x8x2x1_1x4x1x64_tb1x8x"
     "4x1_1x4x1x64",
     "sm100_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgrou"
     "psize1x1x1_execute_segment_k_off_kernel__5x_cudnn",
     "Conv", 14500, 8800},
    {"batched_transpose_16x32_half",
     "void cudnn::engines_precompiled::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, true, "
     "false, (cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nhwc2nchw_params_t<float>, "
     "__nv_bfloat16 const*, __nv_bfloat16*)",
     "MemCopy", 2500, 2000},
    {TF_TENSILE("MT256x16x64", "GSU1"), "nvjet_sm103_tst_256x16_64x6_2x1_v_bz_TNT", "GEMM", 52000,
     31000},
};
#undef TF_CK_MOE
#undef TF_TENSILE
#undef TF_ELEMENTWISE

// The ATen ops of an RMSNorm that no kernel fuses, one kernel each.
constexpr std::pair<const char*, Role> kUnfusedRmsNorm[] = {
    {"aten::pow", kPow},     {"aten::mean", kMean}, {"aten::add", kAddScalar},
    {"aten::rsqrt", kRsqrt}, {"aten::mul", kMul},   {"aten::mul", kMul}};

// One layer of the eager trace's graph replay.
constexpr Role kGraphLayer[] = {kGraphNorm0, kQkvGemm,    kGraphKvCache, kGraphAttention, kOutGemm,
                                kGraphNorm1, kGateUpGemm, kSiluAndMul,   kDownGemm};

// Launched is one kernel as the expectations need it.
struct Launched {
  Role role;
  const char* name;  // the platform's
  int64_t dur_ns;
  uint32_t unit;  // its unit's position in its step, from 1: top-level ops and launches count
};

// EagerTrace writes one trace of the pair: an eager PyTorch trace whose CPU events nest by time
// (ProfilerStep#N, nn.Module frames, cpu_ops, launches). A frame's duration is known only when
// it closes, so a step's events are held until the step ends, then written in start order,
// followed by the step's kernels.
class EagerTrace {
 public:
  EagerTrace(Writer& w, bool amd, uint64_t seed) : events_(w, amd), w_(w), rng_{seed} {}

  bool amd() const { return events_.amd(); }
  uint64_t kernels() const { return events_.kernels(); }
  uint64_t events() const { return events_.events(); }
  void Header(const Options& o) { events_.Header(o.rank, o.world_size); }
  void Footer() { events_.Footer(); }

  void BeginStep(uint64_t step) {
    units_ = 0;
    Open(Cpu::kAnnotation, fmt::format("ProfilerStep#{}", step));
  }
  void EndStep() {
    Close();
    WriteStep();
    cpu_ = std::max(cpu_, gpu_) + 20000;
  }
  // nn.Module frames are the module scopes; other Python frames are not.
  void BeginModule(std::string_view module) {
    Open(Cpu::kPython, fmt::format("nn.Module: {}", module));
  }
  void BeginPython(std::string_view frame) { Open(Cpu::kPython, std::string(frame)); }
  void BeginOp(std::string_view op) { Open(Cpu::kOp, std::string(op)); }
  void End() { Close(); }

  // Op() is a cpu_op with one inner op (as aten::linear calls aten::addmm) that launches `roles`,
  // or with no launch for an empty list.
  std::vector<Launched> Op(std::string_view op, std::string_view inner,
                           std::initializer_list<Role> roles) {
    std::vector<Launched> out;
    BeginOp(op);
    if (!inner.empty()) BeginOp(inner);
    for (Role r : roles) out.push_back(Launch(r));
    if (!inner.empty()) End();
    End();
    return out;
  }

  // Launch() launches one kernel from the innermost open frame, with its own correlation id.
  Launched Launch(Role role) {
    const uint64_t corr = next_corr_++;
    Runtime(amd() ? "hipLaunchKernel" : "cudaLaunchKernel", corr);
    gpu_ = std::max(gpu_, cpu_ + 2000);
    return Kernel(role, corr);
  }
  // GraphLaunch() replays `roles` under one launch and one correlation id; with `cuts`
  // (ascending positions in `roles`), as one launch per piece, each piece starting at a cut.
  std::vector<Launched> GraphLaunch(const std::vector<Role>& roles,
                                    const std::vector<size_t>& cuts = {}) {
    std::vector<Launched> out;
    for (size_t piece = 0, at = 0; piece <= cuts.size(); ++piece) {
      const size_t end = piece < cuts.size() ? cuts[piece] : roles.size();
      const uint64_t corr = next_corr_++;
      Runtime(amd() ? "hipGraphLaunch" : "cudaGraphLaunch", corr);
      gpu_ = std::max(gpu_, cpu_ + 5000);
      for (; at < end; ++at) out.push_back(Kernel(roles[at], corr));
    }
    return out;
  }
  // MemcpyDtoH() is a device-to-host copy: a runtime call and a gpu_memcpy, not a kernel.
  void MemcpyDtoH() {
    const uint64_t corr = next_corr_++;
    Runtime(amd() ? "hipMemcpyAsync" : "cudaMemcpyAsync", corr);
    gpu_ = std::max(gpu_, cpu_ + 2000);
    gpu_events_.push_back(Gpu{nullptr, gpu_, 2100, corr, 0});
    gpu_ += 3100;
  }

 private:
  struct Cpu {
    enum Kind : uint8_t { kAnnotation, kPython, kOp, kRuntime } kind;
    std::string name;
    int64_t ts = 0;
    int64_t dur = 0;
    uint64_t ext = 0;   // annotation, op, runtime: External id; Python: Python id
    uint64_t corr = 0;  // runtime: correlation; Python: Python parent id
  };
  struct Gpu {
    const char* name;  // nullptr: the memcpy
    int64_t ts;
    int64_t dur;
    uint64_t corr;
    uint64_t ext;
  };

  void Open(Cpu::Kind kind, std::string name) {
    Cpu e{kind, std::move(name), cpu_};
    if (kind == Cpu::kPython) {
      e.ext = ++python_id_;
      e.corr = python_stack_.empty() ? 0 : python_stack_.back();
      python_stack_.push_back(e.ext);
    } else {
      e.ext = next_ext_++;
    }
    if (kind == Cpu::kOp && ops_open_++ == 0) ++units_;
    open_.push_back(cpu_events_.size());
    cpu_events_.push_back(std::move(e));
    cpu_ += 1000;
  }
  // A frame ends half a microsecond after its last child and its next sibling starts a microsecond
  // later, so no two events share a start or an end and nesting never depends on tie rules.
  void Close() {
    Cpu& e = cpu_events_[open_.back()];
    open_.pop_back();
    e.dur = cpu_ + 500 - e.ts;
    cpu_ += 1500;
    if (e.kind == Cpu::kPython) python_stack_.pop_back();
    if (e.kind == Cpu::kOp) --ops_open_;
  }
  // Runtime() is a runtime call in the innermost open frame, with the External id of the
  // innermost open op, as Kineto links a launch to its op (0 outside every op).
  void Runtime(std::string_view name, uint64_t corr) {
    uint64_t ext = 0;
    for (auto it = open_.rbegin(); it != open_.rend() && ext == 0; ++it) {
      if (cpu_events_[*it].kind == Cpu::kOp) ext = cpu_events_[*it].ext;
    }
    if (ops_open_ == 0) ++units_;  // a launch no op encloses is a unit of its own
    cpu_events_.push_back(Cpu{Cpu::kRuntime, std::string(name), cpu_, 3000, ext, corr});
    cpu_ += 4000;
  }
  Launched Kernel(Role role, uint64_t corr) {
    const RoleKernel& k = kRoles[role];
    const int64_t typical = amd() ? k.amd_ns : k.nvidia_ns;
    // Within 1/8 of the typical duration either way, to the nanosecond, so that the sides' times
    // and their sums are neither equal nor round.
    const int64_t dur = typical - typical / 8 + rng_.Range(0, typical / 4 + 1);
    const char* name = amd() || k.nvidia == nullptr ? k.amd : k.nvidia;
    const uint64_t ext = cpu_events_.empty() ? 0 : cpu_events_.back().ext;
    gpu_events_.push_back(Gpu{name, gpu_, dur, corr, ext});
    gpu_ += dur + 800;
    return Launched{role, name, dur, units_};
  }
  void WriteStep() {
    for (const Cpu& e : cpu_events_) {
      switch (e.kind) {
        case Cpu::kAnnotation:
          events_.Annotation(e.name, e.ts, e.dur, e.ext);
          break;
        case Cpu::kPython:
          events_.Python(e.name, e.ts, e.dur, e.corr, e.ext);
          break;
        case Cpu::kOp:
          events_.CpuOp(e.name, e.ts, e.dur, e.ext);
          break;
        case Cpu::kRuntime:
          events_.Runtime(e.name, e.ts, e.dur, e.ext, e.corr);
          events_.Flow("s", e.corr, e.ts, 1234, 1234);
      }
    }
    uint64_t flowed = 0;  // a replay's flow ends at its first kernel
    for (const Gpu& g : gpu_events_) {
      if (g.name == nullptr) {
        events_.Memcpy(g.ts, g.dur, g.corr);
        continue;
      }
      events_.Kernel(g.name, g.ts, g.dur, g.corr, g.ext);
      if (g.corr != flowed) events_.Flow("f", g.corr, g.ts, 0, 7);
      flowed = g.corr;
    }
    cpu_events_.clear();
    gpu_events_.clear();
    w_.MaybeFlush();
  }

  EventWriter events_;
  Writer& w_;
  Rng rng_;
  std::vector<Cpu> cpu_events_;
  std::vector<Gpu> gpu_events_;
  std::vector<size_t> open_;  // indices of the open frames in cpu_events_
  std::vector<uint64_t> python_stack_;
  int64_t cpu_ = kCpuStartNs;
  int64_t gpu_ = 0;
  uint64_t next_corr_ = 1000;
  uint64_t next_ext_ = 1;
  uint64_t python_id_ = 0;
  int ops_open_ = 0;
  uint32_t units_ = 0;  // in this step so far
};

// Plant is one planted fusion difference; which side runs it fused varies with the seed.
enum Plant : uint8_t {
  kPlantAttention,  // op: aten::scaled_dot_product_attention, fill + attention vs attention
  kPlantBias,       // op: one aten::linear per step, GEMM + bias add vs GEMM
  kPlantRmsNorm,    // module: six ATen ops vs _C::rms_norm
  kPlantSilu,       // module: aten::silu + aten::mul vs _C::silu_and_mul
  kPlantGraphAdd,   // graph: an add and an RMSNorm that names it vs the RMSNorm
  kPlantGraphAttn,  // graph: attention, its split-KV stage 2 and a copy vs the attention
  // replay (the MoE replay), in every layer:
  kPlantSplitK,   // o_proj as a split-K GEMM and its reduction vs one GEMM
  kPlantSplitKv,  // split-KV attention and its combine vs one-pass attention
  kPlantQkNorm,   // copy, norm, copy, norm vs one q/k-norm kernel
  kPlantAddNorm,  // residual add + RMSNorm vs a fused add + RMSNorm
  kPlantConv,     // im2col + GEMM vs layout transform + convolution + transform (algorithm)
  kPlantCount,
};
constexpr Plant kReplayPlants[] = {kPlantSplitK, kPlantSplitKv, kPlantQkNorm, kPlantAddNorm,
                                   kPlantConv};

enum class DiffKind : uint8_t { kOp, kModule, kGraph };         // FusionDifferenceKind's
enum class Relation : uint8_t { kSplit, kFusion, kAlgorithm };  // FusionRelation's order
constexpr const char* kRelationNames[] = {"split", "fusion", "algorithm"};

using PerSideOps = std::array<std::vector<std::string>, 2>;
using PerSideKernels = std::array<std::vector<Launched>, 2>;

// Instance is one instance of a planted difference, as FindFusionDifferences() must find it:
// each side's kernels over the difference's stretch in start order, the side that runs fewer
// kernels (the side that fuses; for kAlgorithm, which has none, still the one with fewer), the
// other side's kernels that it does not run (`extras`, indices into that side's list) and the
// fused side's kernel that does their work (`fused_index`, -1 for kAlgorithm).
struct Instance {
  Instance() = default;
  Instance(DiffKind kind, Relation relation, std::string_view scope, std::string_view op,
           PerSideOps ops, PerSideKernels kernels, int fused, std::vector<size_t> extras,
           int fused_index, std::array<uint32_t, 2> index)
      : kind(kind),
        relation(relation),
        scope(scope),
        op(op),
        ops(std::move(ops)),
        kernels(std::move(kernels)),
        fused(fused),
        extras(std::move(extras)),
        fused_index(fused_index),
        index(index) {}

  DiffKind kind = DiffKind::kOp;
  Relation relation = Relation::kFusion;
  std::string_view scope;
  std::string_view op;  // empty: null (module)
  PerSideOps ops;
  PerSideKernels kernels;
  int fused = 0;
  std::vector<size_t> extras;
  int fused_index = 0;
  std::array<uint32_t, 2> index{};  // each side's first unit of the instance, in its step
};

// Difference is one expected entry of `fusion_differences`, summed over its instances.
struct Difference {
  DiffKind kind = DiffKind::kOp;
  Relation relation = Relation::kFusion;
  std::string scope;
  std::string op;  // empty: null (module)
  int fused = 0;   // 0: trace 1, 1: trace 2
  uint64_t instances = 0;
  PerSideOps ops;
  PerSideOps types;
  uint64_t kernels[2] = {0, 0};
  std::map<std::string, uint64_t> categories[2];
  int64_t time_ns[2] = {0, 0};
  int64_t extra_time_ns = 0;
  std::vector<size_t> extras;  // as in every Instance
  int fused_index = 0;
  // The example: the first instance, in step order, whose two sides differ most in time.
  int64_t example_delta = -1;
  uint64_t example_step = 0;
  std::array<uint32_t, 2> example_index{};
  PerSideKernels example;

  int64_t saving_ns() const { return time_ns[1 - fused] - time_ns[fused]; }
};

// Expectations adds up the instances of each planted difference: the same kind, relation,
// scope, op(s), kernel categories and fused side make one entry, as FindFusionDifferences()
// aggregates.
class Expectations {
 public:
  // Add() is one instance. Instances come in step order, and in order within a step.
  void Add(uint64_t step, const Instance& in) {
    PerSideOps types;
    int64_t time[2] = {0, 0};
    for (int s = 0; s < 2; ++s) {
      for (const Launched& k : in.kernels[s]) {
        types[s].push_back(kRoles[k.role].category);
        time[s] += k.dur_ns;
      }
    }
    Difference* d = Find(in, types);
    if (d == nullptr) {
      d = &differences_.emplace_back();
      d->kind = in.kind;
      d->relation = in.relation;
      d->scope = in.scope;
      d->op = in.op;
      d->fused = in.fused;
      d->ops = in.ops;
      d->types = types;
      d->extras = in.extras;
      d->fused_index = in.fused_index;
    }
    ++d->instances;
    for (int s = 0; s < 2; ++s) {
      d->kernels[s] += in.kernels[s].size();
      for (const Launched& k : in.kernels[s]) ++d->categories[s][kRoles[k.role].category];
      d->time_ns[s] += time[s];
    }
    for (size_t i : in.extras) d->extra_time_ns += in.kernels[1 - in.fused][i].dur_ns;
    if (std::llabs(time[0] - time[1]) > d->example_delta) {
      d->example_delta = std::llabs(time[0] - time[1]);
      d->example_step = step;
      d->example_index = in.index;
      d->example = in.kernels;
    }
  }

  // Json() is the expected `fusion_differences` (see --expect in the header comment).
  std::string Json() {
    // By saving, then by what does not depend on which trace is which.
    auto key = [](const Difference& d) {
      const int unfused = 1 - d.fused;
      return std::tie(d.kind, d.relation, d.scope, d.op, d.types[unfused], d.types[d.fused],
                      d.ops[unfused], d.ops[d.fused]);
    };
    std::stable_sort(differences_.begin(), differences_.end(),
                     [&](const Difference& a, const Difference& b) {
                       if (a.saving_ns() != b.saving_ns()) return a.saving_ns() > b.saving_ns();
                       return key(a) < key(b);
                     });
    std::string out = "{\"fusion_differences\": [";
    const char* kinds[] = {"op", "module", "graph"};
    for (size_t i = 0; i < differences_.size(); ++i) {
      const Difference& d = differences_[i];
      const bool algorithm = d.relation == Relation::kAlgorithm;
      out += fmt::format(
          "{}\n  {{\"kind\": \"{}\", \"scope\": {}, \"op\": {}, \"relation\": \"{}\", "
          "\"fused_by\": {}, \"instances\": {},",
          i ? "," : "", kinds[static_cast<int>(d.kind)], Quote(d.scope),
          d.op.empty() ? "null" : Quote(d.op), kRelationNames[static_cast<int>(d.relation)],
          algorithm ? "null" : fmt::format("\"trace{}\"", d.fused + 1), d.instances);
      for (int s = 0; s < 2; ++s) {
        out += fmt::format(
            "\n   \"trace{}\": {{\"ops\": {}, \"kernels\": {}, \"categories\": {}, "
            "\"time_ns\": {}, \"kernel_types\": {}}},",
            s + 1, List(d.ops[s]), d.kernels[s], Counts(d.categories[s]), d.time_ns[s],
            List(d.types[s]));
      }
      // The extra kernels by category and by family: the example's, times the instances.
      const std::vector<Launched>& unfused = d.example[1 - d.fused];
      std::map<std::string, uint64_t> categories;
      std::map<std::pair<std::string, std::string>, uint64_t> families;
      for (size_t e : d.extras) {
        const char* category = kRoles[unfused[e].role].category;
        categories[category] += d.instances;
        families[{tracefuse::KernelFamily(unfused[e].name), category}] += d.instances;
      }
      std::vector<std::pair<std::pair<std::string, std::string>, uint64_t>> by_count(
          families.begin(), families.end());
      std::stable_sort(by_count.begin(), by_count.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      std::string extra_kernels = "[";
      for (const auto& [family, count] : by_count) {
        extra_kernels += fmt::format("{}{{\"name\": {}, \"category\": {}, \"count\": {}}}",
                                     extra_kernels.size() > 1 ? ", " : "", Quote(family.first),
                                     Quote(family.second), count);
      }
      extra_kernels += "]";
      std::string fused_kernel = "null", fused_category = "null";
      if (d.fused_index >= 0) {
        const Launched& k = d.example[d.fused][static_cast<size_t>(d.fused_index)];
        fused_kernel = Quote(tracefuse::KernelFamily(k.name));
        fused_category = Quote(kRoles[k.role].category);
      }
      out += fmt::format(
          "\n   \"extra_categories\": {}, \"extra_kernels\": {}, \"extra_time_ns\": {}, "
          "\"fused_kernel\": {}, \"fused_kernel_category\": {}, \"saving_ns\": {},"
          "\n   \"example\": {{\"step\": {}, \"indices\": {{\"trace1\": {}, \"trace2\": {}}}, "
          "\"trace1\": {}, \"trace2\": {}}}}}",
          Counts(categories), extra_kernels, d.extra_time_ns, fused_kernel, fused_category,
          d.saving_ns(), d.example_step, d.example_index[0], d.example_index[1],
          Kernels(d.example[0], d.fused == 1 ? d.extras : std::vector<size_t>()),
          Kernels(d.example[1], d.fused == 0 ? d.extras : std::vector<size_t>()));
    }
    out += differences_.empty() ? "]}\n" : "\n]}\n";
    return out;
  }

 private:
  Difference* Find(const Instance& in, const PerSideOps& types) {
    for (Difference& d : differences_) {
      if (d.kind == in.kind && d.relation == in.relation && d.scope == in.scope && d.op == in.op &&
          d.ops == in.ops && d.types == types && d.fused == in.fused) {
        return &d;
      }
    }
    return nullptr;
  }
  static std::string Quote(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + '"';
  }
  static std::string List(const std::vector<std::string>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + Quote(items[i]);
    return out + "]";
  }
  static std::string Counts(const std::map<std::string, uint64_t>& counts) {
    std::string out = "{";
    for (const auto& [name, n] : counts) {
      out += fmt::format("{}{}: {}", out.size() > 1 ? ", " : "", Quote(name), n);
    }
    return out + "}";
  }
  // Kernels() is an example's kernels, `extras` (indices) flagged.
  static std::string Kernels(const std::vector<Launched>& kernels,
                             const std::vector<size_t>& extras) {
    std::string out = "[";
    for (size_t i = 0; i < kernels.size(); ++i) {
      const Launched& k = kernels[i];
      const bool extra = std::find(extras.begin(), extras.end(), i) != extras.end();
      out += fmt::format("{}{{\"name\": {}, \"type\": \"{}\", \"time_ns\": {}, \"extra\": {}}}",
                         out.size() > 1 ? ", " : "", Quote(tracefuse::KernelFamily(k.name)),
                         kRoles[k.role].category, k.dur_ns, extra ? "true" : "false");
    }
    return out + "]";
  }

  std::vector<Difference> differences_;
};

// EagerPair writes both traces of --eager step by step (the model is in the header comment) and
// adds up what `tracefuse ops` must find in them: the expectations need both sides' kernels of
// each instance, so the two traces are written side by side.
class EagerPair {
 public:
  EagerPair(Writer& trace1, Writer& trace2, const Options& o, const bool (&plants)[kPlantCount])
      : o_(o),
        sides_{EagerTrace(trace1, o.platform == "amd", o.seed * 2 + 1),
               EagerTrace(trace2, o.platform != "amd", o.seed * 2 + 2)} {
    std::copy(plants, plants + kPlantCount, plants_);
  }

  EagerTrace& side(int s) { return sides_[s]; }
  Expectations& expectations() { return expect_; }

  void Header() {
    for (EagerTrace& t : sides_) t.Header(o_);
  }
  void Footer() {
    for (EagerTrace& t : sides_) t.Footer();
  }

  void Step() {
    StepKernels k[2];
    for (int s = 0; s < 2; ++s) Model(s, &k[s]);
    Expect(k);
    ++step_;
  }

 private:
  // What one side's step ran where the plants are, for the expectations.
  struct StepKernels {
    std::vector<std::vector<Launched>> attention, rms_norm, silu;  // per layer
    std::vector<Launched> bias;                                    // the planted layer's o_proj
    std::vector<Launched> replay;
    uint32_t replay_unit = 0;              // the replay's first launch, as a unit of the step
    size_t graph_add = 0, graph_attn = 0;  // the planted places' first kernel in the replay
    // The MoE replay: per layer and replay plant, the planted kernels' positions in `replay`.
    std::vector<std::array<std::vector<size_t>, std::size(kReplayPlants)>> planted;
  };

  // FusedSide() alternates the plants between the sides, and the seed flips them all. For
  // kPlantConv, which no side fuses, it is the side that runs im2col + GEMM (fewer kernels).
  int FusedSide(Plant p) const { return static_cast<int>((o_.seed + p) % 2); }
  bool Unfused(int side, Plant p) const { return plants_[p] && side != FusedSide(p); }
  int PlantedLayer(uint64_t offset) const {
    return static_cast<int>((o_.seed + offset) % o_.layers);
  }
  bool MoeReplay() const { return o_.replay == "moe"; }

  void Model(int s, StepKernels* k) {
    EagerTrace& t = sides_[s];
    t.BeginStep(step_);
    t.BeginModule("Model_0");
    t.Op("aten::embedding", "aten::index_select", {kEmbedding});
    for (int l = 0; l < o_.layers; ++l) {
      t.BeginModule(fmt::format("DecoderLayer_{}", l));
      k->rms_norm.push_back(RmsNorm(s, "RMSNorm_0", Unfused(s, kPlantRmsNorm)));
      Attention(s, l, k);
      t.Op("aten::add", "", {kAdd});
      RmsNorm(s, "RMSNorm_1", false);
      t.BeginModule("MLP_0");
      t.Op("aten::linear", "aten::addmm", {kGateUpGemm});
      if (Unfused(s, kPlantSilu)) {
        std::vector<Launched> silu = t.Op("aten::silu", "", {kSilu});
        silu.push_back(t.Op("aten::mul", "", {kMul})[0]);
        k->silu.push_back(silu);
      } else {
        k->silu.push_back(t.Op("_C::silu_and_mul", "", {kSiluAndMul}));
      }
      t.Op("aten::linear", "aten::addmm", {kDownGemm});
      t.End();
      t.Op("aten::add", "", {kAdd});
      t.End();
    }
    RmsNorm(s, "RMSNorm_0", false);
    t.End();
    t.BeginModule("Linear_0");  // the LM head
    t.Op("aten::linear", "aten::mm", {kGateUpGemm});
    t.End();
    Sampling(s);
    if (MoeReplay()) {
      const std::vector<Role> roles = Moe(s, k);
      k->replay = t.GraphLaunch(roles, Cuts(s, roles));
    } else {
      k->replay = t.GraphLaunch(Replay(s, k));
    }
    k->replay_unit = k->replay.front().unit;
    t.EndStep();
  }

  std::vector<Launched> RmsNorm(int s, std::string_view module, bool unfused) {
    EagerTrace& t = sides_[s];
    t.BeginModule(module);
    std::vector<Launched> out;
    if (unfused) {
      for (const auto& [op, role] : kUnfusedRmsNorm) out.push_back(t.Op(op, "", {role})[0]);
    } else {
      out = t.Op("_C::rms_norm", "", {kRmsNorm});
    }
    t.End();
    return out;
  }

  void Attention(int s, int layer, StepKernels* k) {
    EagerTrace& t = sides_[s];
    t.BeginModule("Attention_0");
    t.Op("aten::linear", "aten::addmm", {kQkvGemm});
    t.Op(t.amd() ? "aiter::rope_cached_positions_2c_fwd_inplace" : "_C::rotary_embedding", "",
         {kRope});
    t.BeginPython("<built-in function scaled_dot_product_attention>");
    t.BeginOp("aten::scaled_dot_product_attention");
    std::vector<Launched> attention;
    if (Unfused(s, kPlantAttention)) attention = t.Op("aten::zeros", "aten::fill_", {kFill});
    attention.push_back(t.Op("aten::_scaled_dot_product_flash_attention", "", {kAttention})[0]);
    t.End();
    t.End();
    k->attention.push_back(attention);
    // o_proj: the planted layer's runs its bias add as a kernel of its own on the unfused side.
    if (Unfused(s, kPlantBias) && layer == PlantedLayer(0)) {
      t.BeginOp("aten::linear");
      k->bias = t.Op("aten::matmul", "aten::mm", {kOutGemm});
      k->bias.push_back(t.Op("aten::add_", "", {kAdd})[0]);
      t.End();
    } else {
      std::vector<Launched> out = t.Op("aten::linear", "aten::addmm", {kOutGemm});
      if (layer == PlantedLayer(0)) k->bias = out;
    }
    t.End();
  }

  void Sampling(int s) {
    EagerTrace& t = sides_[s];
    t.Op("aten::argmax", "", {kArgmax});
    t.Op("aten::topk", "", {kSortHistogram, kSortPass});
    if (t.amd()) {
      t.Op("aten::empty", "", {});
      t.Op("aten::to", "aten::_to_copy", {kCopy});
    } else {
      t.Op("aten::to", "", {});
    }
    t.BeginOp("aten::copy_");
    t.MemcpyDtoH();
    t.End();
  }

  // Replay() is the dense replay (--replay llama): kGraphLayer per layer, one launch.
  std::vector<Role> Replay(int s, StepKernels* k) const {
    std::vector<Role> roles;
    for (int l = 0; l < o_.layers; ++l) {
      for (Role r : kGraphLayer) {
        roles.push_back(r);
        if (r == kOutGemm && l == PlantedLayer(0)) {
          k->graph_add = roles.size() - 1;
          if (Unfused(s, kPlantGraphAdd)) roles.push_back(kAdd);
        }
        if (r == kGraphAttention && l == PlantedLayer(1)) {
          k->graph_attn = roles.size() - 1;
          if (Unfused(s, kPlantGraphAttn)) {
            roles.push_back(kSplitKvStage2);
            roles.push_back(kTritonCopy);
          }
        }
      }
    }
    return roles;
  }

  // SwapSide() and SwapLayer() say where a step's MoE replay runs its MoE sort and the
  // activations' quantization in the other order (a control).
  int SwapSide() const { return static_cast<int>((o_.seed + step_) % 2); }
  int SwapLayer() const { return static_cast<int>((o_.seed * 3 + step_) % o_.layers); }

  // Moe() is the MoE decode replay (--replay moe), one layer after another:
  //   fused add + RMSNorm, QKV GEMM, q/k norm [kPlantQkNorm], RoPE + KV store, attention
  //   [kPlantSplitKv], o_proj [kPlantSplitK], residual add + RMSNorm [kPlantAddNorm], router GEMM,
  //   top-k, MoE sort, quantization, MoE GEMM, a convolution [kPlantConv], MoE GEMM;
  // then the final RMSNorm and the LM head. Each plant lies between two heavy kernels that both
  // sides run alike (GEMM, attention, MoE GEMM), so that no two plants meet in one stretch. No
  // decode layer of this model convolves: the convolution stands between the MoE GEMMs because
  // there the alignment is unique. Next to another GEMM, or before the next layer's RMSNorm and
  // QKV GEMM, its GEMM could be matched with that GEMM at the same cost (an unfused q/k norm
  // leaves RMSNorms for the others to slide to), and the diff could pick either.
  std::vector<Role> Moe(int s, StepKernels* k) const {
    std::vector<Role> roles;
    k->planted.assign(static_cast<size_t>(o_.layers), {});
    for (int l = 0; l < o_.layers; ++l) {
      auto& planted = k->planted[static_cast<size_t>(l)];
      auto add = [&](std::initializer_list<Role> rs, Plant p = kPlantCount) {
        for (Role r : rs) {
          if (p != kPlantCount) {
            const size_t slot = static_cast<size_t>(
                std::find(std::begin(kReplayPlants), std::end(kReplayPlants), p) -
                std::begin(kReplayPlants));
            planted[slot].push_back(roles.size());
          }
          roles.push_back(r);
        }
      };
      add({kMoeNorm, kMoeQkvGemm});
      if (Unfused(s, kPlantQkNorm)) {
        add({kQkCopy, kQkNorm, kQkCopy, kQkNorm}, kPlantQkNorm);
      } else {
        add({kQkNormFused}, kPlantQkNorm);
      }
      add({kMoeRope});
      if (Unfused(s, kPlantSplitKv)) {
        add({kSplitKvAttention, kSplitKvCombine}, kPlantSplitKv);
      } else {
        add({kDecodeAttention}, kPlantSplitKv);
      }
      if (Unfused(s, kPlantSplitK)) {
        add({kSplitKGemm, kSplitKReduce}, kPlantSplitK);
      } else {
        add({kOprojGemm}, kPlantSplitK);
      }
      if (Unfused(s, kPlantAddNorm)) {
        add({kAdd, kPlainNorm}, kPlantAddNorm);
      } else {
        add({kMoeNorm}, kPlantAddNorm);
      }
      add({kRouterGemm, kMoeTopk});
      if (s == SwapSide() && l == SwapLayer()) {
        add({kMoeQuant, kMoeSort});
      } else {
        add({kMoeSort, kMoeQuant});
      }
      add({kMoeGemmUp});
      if (plants_[kPlantConv] && s == FusedSide(kPlantConv)) {
        add({kIm2col, kConvGemm}, kPlantConv);
      } else {
        add({kToNhwc, kConv, kToNchw}, kPlantConv);
      }
      add({kMoeGemmDown});
    }
    roles.push_back(kPlainNorm);
    roles.push_back(kLmHead);
    return roles;
  }

  // Cuts() splits the MoE replay into three graph launches (a control: piecewise graphs), the
  // pieces ending at different kernels on the two sides: on a side that runs a helper (a split-K
  // reduction, a split-KV combine), the first launch ends just before the first one, so that the
  // helper runs in another launch than its main kernel; elsewhere a third of the way in, moved by
  // the seed, and the second two thirds in, moved the other way on each side.
  std::vector<size_t> Cuts(int s, const std::vector<Role>& roles) const {
    const size_t n = roles.size();
    const uint64_t draw = Mix(o_.seed, step_ + 1, static_cast<uint64_t>(s) + 1);
    size_t first = n / 3 + (s == 0 ? draw % 3 : 3 + draw % 3);
    for (size_t i = 0; i < n; ++i) {
      if (roles[i] == kSplitKReduce || roles[i] == kSplitKvCombine) {
        first = i;
        break;
      }
    }
    size_t second = 2 * n / 3 + (s == 0 ? 4 + (draw >> 8) % 3 : (draw >> 8) % 3);
    first = std::clamp<size_t>(first, 1, n - 2);
    second = std::clamp<size_t>(second, first + 1, n - 1);
    return {first, second};
  }

  void Expect(const StepKernels (&k)[2]);

  const Options& o_;
  EagerTrace sides_[2];
  bool plants_[kPlantCount] = {};
  Expectations expect_;
  uint64_t step_ = 0;
};

void EagerPair::Expect(const StepKernels (&k)[2]) {
  // Each side's ops: the unfused list on the unfused side.
  auto ops_of = [](int fused, std::vector<std::string> unfused,
                   std::vector<std::string> fused_ops) {
    PerSideOps ops;
    ops[fused] = std::move(fused_ops);
    ops[1 - fused] = std::move(unfused);
    return ops;
  };
  // Kernels `count` long from each side's `first` (the unfused side's `extra` more), in the replay.
  auto replay = [&](const size_t(&first)[2], size_t count, int fused, size_t extra) {
    PerSideKernels kernels;
    for (int s = 0; s < 2; ++s) {
      const auto begin = k[s].replay.begin() + static_cast<ptrdiff_t>(first[s]);
      kernels[s].assign(begin, begin + static_cast<ptrdiff_t>(count + (s == fused ? 0 : extra)));
    }
    return kernels;
  };
  const std::array<uint32_t, 2> replay_units = {k[0].replay_unit, k[1].replay_unit};
  const std::string sdpa = "aten::scaled_dot_product_attention";
  const std::string linear = "aten::linear";
  const std::string graph = "[graph launch]";
  const std::string attention = "Model/DecoderLayer/Attention";
  for (int l = 0; l < o_.layers; ++l) {
    if (plants_[kPlantAttention]) {
      // The fill is a helper of the attention that follows it: one operation, split.
      const auto& a0 = k[0].attention[l];
      const auto& a1 = k[1].attention[l];
      expect_.Add(step_,
                  Instance(DiffKind::kOp, Relation::kSplit, attention, sdpa, {{{sdpa}, {sdpa}}},
                           {a0, a1}, FusedSide(kPlantAttention), {0}, 0, {a0[0].unit, a1[0].unit}));
    }
    if (plants_[kPlantRmsNorm]) {
      const int f = FusedSide(kPlantRmsNorm);
      std::vector<std::string> unfused;
      for (const auto& [op, role] : kUnfusedRmsNorm) unfused.emplace_back(op);
      const auto& n0 = k[0].rms_norm[l];
      const auto& n1 = k[1].rms_norm[l];
      expect_.Add(step_,
                  Instance(DiffKind::kModule, Relation::kFusion, "Model/DecoderLayer/RMSNorm", "",
                           ops_of(f, std::move(unfused), {"_C::rms_norm"}), {n0, n1}, f,
                           {0, 1, 2, 3, 4, 5}, 0, {n0[0].unit, n1[0].unit}));
    }
    if (plants_[kPlantSilu]) {
      const int f = FusedSide(kPlantSilu);
      const auto& m0 = k[0].silu[l];
      const auto& m1 = k[1].silu[l];
      expect_.Add(step_, Instance(DiffKind::kModule, Relation::kFusion, "Model/DecoderLayer/MLP",
                                  "", ops_of(f, {"aten::silu", "aten::mul"}, {"_C::silu_and_mul"}),
                                  {m0, m1}, f, {1}, 0, {m0[0].unit, m1[0].unit}));
    }
  }
  if (plants_[kPlantBias]) {
    // The add is covered by the GEMM beside it, whose category absorbs an element-wise epilogue.
    expect_.Add(
        step_, Instance(DiffKind::kOp, Relation::kFusion, attention, linear, {{{linear}, {linear}}},
                        {k[0].bias, k[1].bias}, FusedSide(kPlantBias), {1}, 0,
                        {k[0].bias[0].unit, k[1].bias[0].unit}));
  }
  // The add after the o_proj GEMM: the RMSNorm after it names the add it fuses (Inductor's
  // triton_red_fused__to_copy_add_mean_...), so it is the kernel that does the add's work.
  const size_t add_at[2] = {k[0].graph_add + 1, k[1].graph_add + 1};
  const size_t attn_at[2] = {k[0].graph_attn, k[1].graph_attn};
  if (plants_[kPlantGraphAdd]) {
    const int f = FusedSide(kPlantGraphAdd);
    expect_.Add(step_,
                Instance(DiffKind::kGraph, Relation::kFusion, "", graph, {{{graph}, {graph}}},
                         replay(add_at, 1, f, 1), f, {0}, 0, replay_units));
  }
  if (plants_[kPlantGraphAttn]) {
    const int f = FusedSide(kPlantGraphAttn);
    // The split-KV stage 2 is a helper of the attention: the attention's operation is split.
    expect_.Add(step_, Instance(DiffKind::kGraph, Relation::kSplit, "", graph, {{{graph}, {graph}}},
                                replay(attn_at, 1, f, 1), f, {1}, 0, replay_units));
    // The copy after it is another operation, which the attention (the nearest kernel that can)
    // absorbs: a fusion over the attention's operation and the copy.
    expect_.Add(step_,
                Instance(DiffKind::kGraph, Relation::kFusion, "", graph, {{{graph}, {graph}}},
                         replay(attn_at, 1, f, 2), f, {2}, 0, replay_units));
  }
  if (!MoeReplay()) return;
  for (int l = 0; l < o_.layers; ++l) {
    for (size_t p = 0; p < std::size(kReplayPlants); ++p) {
      const Plant plant = kReplayPlants[p];
      if (!plants_[plant]) continue;
      Instance in;
      in.kind = DiffKind::kGraph;
      in.op = graph;
      in.ops = {{{graph}, {graph}}};
      in.relation = Relation::kSplit;
      in.fused = FusedSide(plant);
      in.index = replay_units;
      for (int s = 0; s < 2; ++s) {
        for (size_t at : k[s].planted[static_cast<size_t>(l)][p]) {
          in.kernels[s].push_back(k[s].replay[at]);
        }
      }
      switch (plant) {
        case kPlantSplitK:   // GEMM + split-K reduce vs GEMM
        case kPlantSplitKv:  // attention + split-KV combine vs attention
          in.extras = {1};
          break;
        case kPlantQkNorm:  // copy, norm, copy, norm vs the q/k norm: the first norm is matched
          in.relation = Relation::kFusion;
          in.extras = {0, 2, 3};
          break;
        case kPlantAddNorm:  // add, norm vs fused add + norm, which states the add
          in.relation = Relation::kFusion;
          in.extras = {0};
          break;
        default:  // kPlantConv: transform, conv, transform vs im2col + GEMM
          in.relation = Relation::kAlgorithm;
          in.extras = {0, 1, 2};
          in.fused_index = -1;
      }
      expect_.Add(step_, in);
    }
  }
}

// Output is a file written through a temporary name and renamed into place once complete, so
// that a failed run leaves nothing behind; "-" is standard output, and an existing path that is
// no regular file (/dev/null, a FIFO) is written where it is: a rename would replace it.
class Output {
 public:
  explicit Output(std::string path) : path_(std::move(path)) {}
  ~Output() {
    if (f_ != nullptr && f_ != stdout) {
      std::fclose(f_);
      if (!tmp_.empty()) std::remove(tmp_.c_str());
    }
  }

  FILE* file() const { return f_; }
  bool Open() {
    if (path_ == "-") {
      f_ = stdout;
      return true;
    }
    struct stat st;
    if (stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
      f_ = std::fopen(path_.c_str(), "wb");
      if (f_ == nullptr) Error();
      return f_ != nullptr;
    }
    tmp_ = fmt::format("{}.tmp.{}", path_, getpid());
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (f_ == nullptr) Error();
    return f_ != nullptr;
  }
  // Commit() closes the file and renames it into place when `ok`, else removes it.
  bool Commit(bool ok) {
    if (f_ == stdout) return ok;
    ok = (std::fclose(f_) == 0) && ok;
    f_ = nullptr;
    if (tmp_.empty()) {
      if (!ok) Error();
      return ok;
    }
    if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      Error();
      std::remove(tmp_.c_str());
      return false;
    }
    return true;
  }

 private:
  void Error() const {
    std::fprintf(stderr, "tracefuse-gen: error: %s: %s\n", path_.c_str(), std::strerror(errno));
  }

  std::string path_;
  std::string tmp_;
  FILE* f_ = nullptr;
};

Layout ParseLayout(const std::string& layout) {
  return layout == "kineto"  ? Layout::kKineto
         : layout == "lines" ? Layout::kLines
                             : Layout::kCompact;
}

void PrintSummary(const Writer& w, uint64_t events, uint64_t kernels) {
  std::fprintf(stderr, "bytes=%llu events=%llu kernels=%llu\n",
               static_cast<unsigned long long>(w.bytes()), static_cast<unsigned long long>(events),
               static_cast<unsigned long long>(kernels));
}

// Nanoseconds as the trace writes them: microseconds with three decimals.
std::string MicrosText(int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

// RankExpectations() is --expect-ranks' JSON: what every rank's trace holds, one rank a line.
std::string RankExpectations(const Options& o, const TraceWriter& t) {
  std::string json = fmt::format(
      "{{\"world_size\": {}, \"slow_rank\": {}, \"collectives_per_rank\": {}, \"ranks\": [",
      o.world_size, o.slow_rank < 0 ? "null" : std::to_string(o.slow_rank), t.collectives());
  for (size_t r = 0; r < t.totals().size(); ++r) {
    const RankTotals& rank = t.totals()[r];
    json += fmt::format(
        "{}\n  {{\"rank\": {}, \"computation_us\": {}, \"collective_us\": {}, \"wait_us\": {}}}",
        r ? "," : "", r, MicrosText(rank.computation_ns), MicrosText(rank.collective_ns),
        MicrosText(rank.wait_ns));
  }
  return json + "\n]}\n";
}

int RunDecode(const Options& o) {
  Output out(o.output), expected(o.expect_ranks), expected_idle(o.expect_idle);
  if (!out.Open() || (!o.expect_ranks.empty() && !expected.Open()) ||
      (!o.expect_idle.empty() && !expected_idle.Open())) {
    return 3;
  }
  const uint64_t target = ParseSize(o.size);
  bool ok;
  {
    Writer w(out.file(), ParseLayout(o.layout));
    TraceWriter t(w, o);
    t.Header();
    for (uint64_t s = 0; o.steps ? s < o.steps : w.bytes() < target; ++s) t.Step();
    t.Footer();
    w.Flush();
    ok = w.ok();
    if (o.summary) PrintSummary(w, t.events(), t.kernels());
    if (!o.expect_ranks.empty()) {
      const std::string json = RankExpectations(o, t);
      ok = std::fwrite(json.data(), 1, json.size(), expected.file()) == json.size() && ok;
    }
    if (t.expect_idle() != nullptr) {
      const std::string json = t.expect_idle()->Json();
      ok = std::fwrite(json.data(), 1, json.size(), expected_idle.file()) == json.size() && ok;
    }
  }
  ok = out.Commit(ok);
  if (!o.expect_ranks.empty()) ok = expected.Commit(ok);
  if (!o.expect_idle.empty()) ok = expected_idle.Commit(ok);
  return ok ? 0 : 3;
}

// CheckRanks() returns what is wrong with the multi-rank options, empty when nothing is.
std::string CheckRanks(const Options& o) {
  if (o.world_size < 1) return "--world-size must be 1 or more";
  if (o.world_size > 1 && (o.rank < 0 || o.rank >= o.world_size))
    return "--rank must be below --world-size";
  if (o.slow_rank >= 0 && o.world_size < 2) return "--slow-rank needs --world-size 2 or more";
  if (o.slow_rank >= o.world_size) return "--slow-rank must be below --world-size";
  if (!o.expect_ranks.empty() && o.world_size < 2)
    return "--expect-ranks needs --world-size 2 or more";
  if (o.expect_ranks == "-") return "--expect-ranks takes a file";
  if (o.expect_idle == "-") return "--expect-idle takes a file";
  return "";
}

// AddRankOptions() declares the options of a multi-rank run, which --eager does not write.
void AddRankOptions(CLI::App& app, Options& o, CLI::Option* eager) {
  CLI::Option* slow =
      app.add_option("--slow-rank", o.slow_rank,
                     "with --world-size: the rank whose compute kernels take --slow-factor as "
                     "long, which every other rank waits for at each collective")
          ->check(CLI::NonNegativeNumber);
  CLI::Option* factor =
      app.add_option("--slow-factor", o.slow_factor, "how much longer --slow-rank computes")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
  CLI::Option* expect_ranks = app.add_option(
      "--expect-ranks", o.expect_ranks,
      "with --world-size: write every rank's computation, collective and wait times (us) to "
      "this JSON file");
  CLI::Option* plant_idle = app.add_flag(
      "--plant-idle", o.plant_idle,
      "at each step's start, plant a kernel that starts before its launch call, one without a "
      "launch and one that overlaps the kernel before it on its stream");
  CLI::Option* expect_idle = app.add_option(
      "--expect-idle", o.expect_idle,
      "write this rank's device's idle split, launches per API and integrity (us), as `stats "
      "--format json` must report them, to this JSON file");
  factor->needs(slow);
  for (CLI::Option* option : {slow, factor, expect_ranks, plant_idle, expect_idle}) {
    eager->excludes(option);
  }
}

// kPlantKinds are --plant's kinds, each with the plants it turns on.
struct PlantKind {
  std::string_view name;
  std::initializer_list<Plant> plants;
};
const PlantKind kPlantKinds[] = {
    {"op", {kPlantAttention, kPlantBias}},
    {"module", {kPlantRmsNorm, kPlantSilu}},
    {"graph", {kPlantGraphAdd, kPlantGraphAttn}},
    {"replay", {kPlantSplitK, kPlantSplitKv, kPlantQkNorm, kPlantAddNorm, kPlantConv}},
};

// ParsePlants() reads --plant: "none", or kinds separated by commas. It returns an error
// message, empty when the list is valid.
std::string ParsePlants(const std::string& list, bool (*plants)[kPlantCount]) {
  if (list == "none") return "";
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    const std::string_view kind = std::string_view(list).substr(start, comma - start);
    bool known = false;
    for (const PlantKind& k : kPlantKinds) {
      if (kind != k.name) continue;
      known = true;
      if (plants != nullptr) {
        for (Plant p : k.plants) (*plants)[p] = true;
      }
    }
    if (!known)
      return fmt::format("unknown kind '{}' (none, or a list of op, module, graph, replay)", kind);
    if (comma == std::string::npos) return "";
    start = comma + 1;
  }
}

// kEagerSteps is --eager's length when neither --steps nor --size says.
constexpr uint64_t kEagerSteps = 4;

int RunEager(Options o, bool sized, bool replay_given) {
  bool plants[kPlantCount] = {};
  ParsePlants(o.plant, &plants);
  const bool graph = plants[kPlantGraphAdd] || plants[kPlantGraphAttn];
  if (plants[kPlantSplitK]) {
    // The replay plants are the MoE replay's: --plant replay chooses it.
    if (replay_given && o.replay != "moe") {
      std::fprintf(stderr, "tracefuse-gen: error: --plant replay needs --replay moe\n");
      return 2;
    }
    o.replay = "moe";
  }
  if (graph && o.replay != "llama") {
    std::fprintf(stderr, "tracefuse-gen: error: --plant graph needs --replay llama\n");
    return 2;
  }
  if (o.layers < 2 && graph) {
    // Two places in one replay layer, fused by different sides, would align two ways.
    std::fprintf(stderr, "tracefuse-gen: error: --plant graph needs --layers 2 or more\n");
    return 2;
  }
  Output out1(o.output), out2(o.pair_output), expected(o.expect);
  if (!out1.Open() || !out2.Open() || (!o.expect.empty() && !expected.Open())) return 3;
  const uint64_t target = ParseSize(o.size);
  const uint64_t steps = o.steps ? o.steps : sized ? UINT64_MAX : kEagerSteps;
  bool ok;
  {
    const Layout layout = ParseLayout(o.layout);
    Writer w1(out1.file(), layout);
    Writer w2(out2.file(), layout);
    EagerPair pair(w1, w2, o, plants);
    pair.Header();
    for (uint64_t s = 0; s < steps && (o.steps || !sized || w1.bytes() < target); ++s) pair.Step();
    pair.Footer();
    w1.Flush();
    w2.Flush();
    ok = w1.ok() && w2.ok();
    if (!o.expect.empty()) {
      const std::string json = pair.expectations().Json();
      ok = std::fwrite(json.data(), 1, json.size(), expected.file()) == json.size() && ok;
    }
    if (o.summary) {
      PrintSummary(w1, pair.side(0).events(), pair.side(0).kernels());
      PrintSummary(w2, pair.side(1).events(), pair.side(1).kernels());
    }
  }
  ok = out1.Commit(ok);
  ok = out2.Commit(ok);
  if (!o.expect.empty()) ok = expected.Commit(ok);
  return ok ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"tracefuse-gen: write a synthetic Kineto trace of an LLM decode workload"};
  app.add_option("--platform", o.platform, "amd or nvidia (with --eager: trace 1's)")
      ->check(CLI::IsMember({"amd", "nvidia"}))
      ->capture_default_str();
  app.add_option("--size", o.size, "approximate size (e.g. 64M, 1G, 5GiB)")->capture_default_str();
  app.add_option("--steps", o.steps, "decode steps (overrides --size when set)");
  app.add_option("--layers", o.layers, "layers per graph replay (with --eager: model layers)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--eager-per-step", o.eager_per_step, "eager kernels per step")
      ->capture_default_str();
  app.add_option("--python-per-step", o.python_per_step, "python_function events per step")
      ->capture_default_str();
  app.add_option("--cpu-ops-per-step", o.cpu_ops_per_step,
                 "cpu_op events per step outside launches")
      ->capture_default_str();
  app.add_option("--python-per-kernel", o.python_per_kernel,
                 "python_function events per eager kernel")
      ->capture_default_str();
  app.add_option("--layout", o.layout,
                 "kineto: several lines per event, as PyTorch writes; lines: one event per line; "
                 "compact: one line")
      ->check(CLI::IsMember({"kineto", "lines", "compact"}))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  app.add_option("--rank", o.rank, "distributedInfo.rank (one trace per rank of a job)")
      ->capture_default_str();
  app.add_option("--world-size", o.world_size,
                 "distributedInfo.world_size; above 1, each layer ends with an all-reduce "
                 "synchronised across the ranks")
      ->capture_default_str();
  CLI::Option* giant =
      app.add_option(
             "--giant-name", o.giant_name_bytes,
             "add one kernel with a name of this many bytes (e.g. 300M), in the second step")
          ->transform(CLI::AsSizeValue(false));
  app.add_flag("--summary", o.summary,
               "print bytes, complete events and kernels written to stderr (one line per trace)");
  app.add_option("-o,--output", o.output, "output file (written atomically; - for stdout)")
      ->capture_default_str();
  CLI::Option* eager = app.add_flag(
      "--eager", o.eager,
      "write a pair of eager PyTorch traces (trace 1 to --output, on --platform; trace 2 to "
      "--pair-output, on the other platform) with planted fusion differences; "
      "4 steps unless --steps or --size");
  CLI::Option* pair = app.add_option("--pair-output", o.pair_output,
                                     "with --eager: trace 2's file (written atomically)");
  CLI::Option* expect = app.add_option(
      "--expect", o.expect,
      "with --eager: write the fusion differences `tracefuse ops TRACE1 TRACE2 --format json` "
      "must report to this file (times in ns)");
  CLI::Option* plant =
      app.add_option("--plant", o.plant,
                     "with --eager: the kinds of fusion difference planted, a list of op, module, "
                     "graph, replay (the MoE replay's, which it chooses), or none (the controls "
                     "only)")
          ->check([](const std::string& list) { return ParsePlants(list, nullptr); })
          ->capture_default_str();
  CLI::Option* replay =
      app.add_option("--replay", o.replay,
                     "with --eager: the graph replay's model: llama (one launch a step, where "
                     "--plant graph plants) or moe (a Qwen3-MoE decode in three launches a step, "
                     "where --plant replay plants)")
          ->check(CLI::IsMember({"llama", "moe"}))
          ->capture_default_str();
  eager->needs(pair);
  eager->excludes(giant);
  pair->needs(eager);
  expect->needs(eager);
  plant->needs(eager);
  replay->needs(eager);
  AddRankOptions(app, o, eager);
  CLI11_PARSE(app, argc, argv);
  if (o.eager && (o.pair_output == "-" || o.expect == "-")) {
    std::fprintf(stderr, "tracefuse-gen: error: --pair-output and --expect take a file\n");
    return 2;
  }
  if (const std::string problem = CheckRanks(o); !problem.empty()) {
    std::fprintf(stderr, "tracefuse-gen: error: %s\n", problem.c_str());
    return 2;
  }
  return o.eager ? RunEager(o, app.count("--size") > 0, app.count("--replay") > 0) : RunDecode(o);
}
