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
// Layouts, the same JSON document token for token, only the whitespace differing: "kineto" (the
// default: several lines per event, as PyTorch's profiler writes through Kineto's C++ writer),
// "lines" (one event per line) and "compact" (the whole trace on one line, as json.dump writes).
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "fmt/format.h"

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
  uint64_t giant_name_bytes = 0;  // one more kernel, in the second step, with a name this long
  bool summary = false;
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

class TraceWriter {
 public:
  TraceWriter(Writer& w, const Options& o) : w_(w), o_(o), amd_(o.platform == "amd"), rng_{o.seed} {
    if (o.giant_name_bytes > 0) giant_name_ = GiantName(o.giant_name_bytes);
  }

  void Header() {
    const Gpu& g = amd_ ? kMi300x : kH100;
    if (w_.kineto()) {
      w_.Raw(fmt::format(kKinetoHeader, g.name, g.total_global_mem, g.compute_major,
                         g.compute_minor, g.warp_size, g.num_sms, g.shared_mem_per_block,
                         g.tracer_keys[0], g.tracer_keys[1], o_.rank, o_.world_size));
    } else {
      w_.Raw(fmt::format(kFlatHeader, fmt::arg("nl", w_.layout() == Layout::kLines ? "\n" : ""),
                         fmt::arg("name", g.name), fmt::arg("mem", g.total_global_mem),
                         fmt::arg("major", g.compute_major), fmt::arg("minor", g.compute_minor),
                         fmt::arg("warp", g.warp_size), fmt::arg("sms", g.num_sms),
                         fmt::arg("shared", g.shared_mem_per_block),
                         fmt::arg("tracer0", g.tracer_keys[0]),
                         fmt::arg("tracer1", g.tracer_keys[1]), fmt::arg("rank", o_.rank),
                         fmt::arg("world", o_.world_size)));
    }
    Metadata("process_name", 0, "python3");
    Metadata("thread_name", 1, "python3");
    Metadata("process_name", 2, g.name);
  }

  uint64_t kernels() const { return kernels_; }
  uint64_t events() const { return events_; }

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

  // One decode step: a graph replay, then eager sampling kernels.
  void Step() {
    const std::vector<KernelKind>& layer = amd_ ? kAmdLayer : kNvidiaLayer;
    const std::vector<KernelKind>& sampling = amd_ ? kAmdSampling : kNvidiaSampling;
    int64_t step_start = cpu_ts_;
    Annotation(fmt::format("execute_context_1({})_generation_1({})", 1 + step_ % 7, step_),
               step_start, StepCpuSpan(sampling.size()));
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
    gpu_ts_ = std::max(gpu_ts_, cpu_ts_ + 5000);
    for (int l = 0; l < o_.layers; ++l) {
      for (const KernelKind& k : layer) Kernel(k, corr, ext);
      w_.MaybeFlush();
    }
    // Eager sampling and bookkeeping kernels, one launch each.
    for (const KernelKind& k : sampling) EagerKernel(k);
    if (step_ == 1 && !giant_name_.empty()) EagerKernel(KernelKind{giant_name_.c_str(), 5000});
    for (int e = 0; e < o_.eager_per_step; ++e) EagerKernel(kEager[e % kEager.size()]);
    Memcpy();
    ++step_;
    cpu_ts_ = std::max(cpu_ts_, gpu_ts_) + 20000;
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
  // StepCpuSpan() is how long a step's CPU side takes, from its first Python frame to its last
  // launch: the step annotation covers it, as vLLM's does, so that every op nests in its step.
  int64_t StepCpuSpan(size_t sampling_kernels) const {
    const int64_t eager = static_cast<int64_t>(sampling_kernels) + o_.eager_per_step;
    return 1000 * (o_.python_per_step + o_.cpu_ops_per_step) + 1000 + 5000 +
           eager * (1000 * o_.python_per_kernel + 1000 + 5000);
  }
  void Annotation(const std::string& name, int64_t ts, int64_t dur) {
    Complete("user_annotation", name, ts, dur, 1234, 1234);
    w_.Raw("\"External id\": ");
    w_.Int(static_cast<int64_t>(next_ext_++));
    EndComplete();
  }
  void Python(const char* frame, int64_t dur) {
    Complete("python_function", frame, cpu_ts_, dur, 1234, 1234);
    w_.Raw("\"Python parent id\": ");
    w_.Int(static_cast<int64_t>(python_id_));
    w_.Raw(", \"Python id\": ");
    w_.Int(static_cast<int64_t>(++python_id_));
    w_.Raw(", \"Python thread\": 0");
    EndComplete();
    cpu_ts_ += 1000;
  }
  void CpuOp(std::string_view name, uint64_t ext, int64_t dur) {
    Complete("cpu_op", name, cpu_ts_, dur, 1234, 1234);
    w_.Raw("\"External id\": ");
    w_.Int(static_cast<int64_t>(ext));
    w_.Sep(kGlued);
    w_.Raw("\"Record function id\": 0, \"Ev Idx\": ");
    w_.Int(static_cast<int64_t>(ext));
    EndComplete();
    cpu_ts_ += 1000;
  }
  void Launch(const char* name, uint64_t corr, uint64_t ext) {
    Complete("cuda_runtime", name, cpu_ts_, 4500, 1234, 1234);
    w_.Raw("\"External id\": ");
    w_.Int(static_cast<int64_t>(ext));
    w_.Sep(kTemplateLine);
    w_.Raw("\"cbid\": 211, \"correlation\": ");
    w_.Int(static_cast<int64_t>(corr));
    EndComplete();
    Flow("s", corr, cpu_ts_, 1234, 1234);
    pending_flow_ = corr;
    cpu_ts_ += 5000;
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
  // A GPU event's device, stream and correlation, on the lines of its tracer's template:
  // roctracer's "device, stream" then "correlation", CUPTI's "device" then "stream, correlation".
  void DeviceStreamCorrelation(uint64_t corr) {
    w_.Raw(amd_ ? "\"device\": 0, \"stream\": 7" : "\"device\": 0");
    w_.Sep(kTemplateLine);
    w_.Raw(amd_ ? "\"correlation\": " : "\"stream\": 7, \"correlation\": ");
    w_.Int(static_cast<int64_t>(corr));
  }
  void Kernel(const KernelKind& k, uint64_t corr, uint64_t ext) {
    ++kernels_;
    int64_t dur = k.dur_ns + rng_.Range(0, k.dur_ns / 8 + 1);
    Complete("kernel", k.name, gpu_ts_, dur, 0, 7);
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
    if (pending_flow_ == corr) {
      Flow("f", corr, gpu_ts_, 0, 7);
      pending_flow_ = 0;
    }
    gpu_ts_ += dur + 1000;
  }
  void EagerKernel(const KernelKind& k) {
    for (int i = 0; i < o_.python_per_kernel; ++i) Python(kPythonFrames[1 + (i + step_) % 4], 9000);
    uint64_t corr = next_corr_++;
    uint64_t ext = next_ext_++;
    CpuOp("aten::fill_", ext, 8250);
    Launch(amd_ ? "hipLaunchKernel" : "cudaLaunchKernel", corr, ext);
    gpu_ts_ = std::max(gpu_ts_, cpu_ts_);
    Kernel(k, corr, ext);
  }
  void Memcpy() {
    uint64_t corr = next_corr_++;
    Complete("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", gpu_ts_, 2100, 0, 7);
    w_.KinetoOnly(kTemplateIndent);  // no "External id" before the template
    DeviceStreamCorrelation(corr);
    w_.Sep(kTemplateLine);
    w_.Raw("\"bytes\": 4096, \"memory bandwidth (GB/s)\": 1.95");
    EndComplete();
    gpu_ts_ += 3100;
  }

  // GiantName() is a kernel name of exactly `bytes` bytes (at least 32), for the tests of
  // --max-event-bytes: what a corrupt trace or a runaway template instantiation looks like.
  static std::string GiantName(uint64_t bytes) {
    std::string name = "void giant_kernel<";
    const std::string end = ">(float*)";
    name.resize(std::max<uint64_t>(bytes, 32) - end.size(), 'T');
    return name + end;
  }

  Writer& w_;
  const Options& o_;
  bool amd_;
  std::string giant_name_;
  Rng rng_;
  int64_t cpu_ts_ = 1751410836000000000 / 1000 * 1000 - 1751410000000000000 + 5000000000;
  int64_t gpu_ts_ = 0;
  uint64_t next_corr_ = 1000;
  uint64_t next_ext_ = 1;
  uint64_t python_id_ = 0;
  uint64_t pending_flow_ = 0;
  uint64_t step_ = 0;
  uint64_t kernels_ = 0;
  uint64_t events_ = 0;  // complete ("X") events
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"tracefuse-gen: write a synthetic Kineto trace of an LLM decode workload"};
  app.add_option("--platform", o.platform, "amd or nvidia")
      ->check(CLI::IsMember({"amd", "nvidia"}))
      ->capture_default_str();
  app.add_option("--size", o.size, "approximate size (e.g. 64M, 1G, 5GiB)")->capture_default_str();
  app.add_option("--steps", o.steps, "decode steps (overrides --size when set)");
  app.add_option("--layers", o.layers, "layers per graph replay")
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
  app.add_option("--world-size", o.world_size, "distributedInfo.world_size")->capture_default_str();
  app.add_option("--giant-name", o.giant_name_bytes,
                 "add one kernel with a name of this many bytes (e.g. 300M), in the second step")
      ->transform(CLI::AsSizeValue(false));
  app.add_flag("--summary", o.summary,
               "print bytes, complete events and kernels written to stderr");
  app.add_option("-o,--output", o.output, "output file (written atomically; - for stdout)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::string tmp = o.output == "-" ? "" : fmt::format("{}.tmp.{}", o.output, getpid());
  FILE* f = o.output == "-" ? stdout : std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    std::fprintf(stderr, "tracefuse-gen: error: %s: %s\n", o.output.c_str(), std::strerror(errno));
    return 3;
  }
  const uint64_t target = ParseSize(o.size);
  bool ok;
  {
    Writer w(f, o.layout == "kineto"  ? Layout::kKineto
                : o.layout == "lines" ? Layout::kLines
                                      : Layout::kCompact);
    TraceWriter t(w, o);
    t.Header();
    for (uint64_t s = 0; o.steps ? s < o.steps : w.bytes() < target; ++s) t.Step();
    t.Footer();
    w.Flush();
    ok = w.ok();
    if (o.summary) {
      std::fprintf(stderr, "bytes=%llu events=%llu kernels=%llu\n",
                   static_cast<unsigned long long>(w.bytes()),
                   static_cast<unsigned long long>(t.events()),
                   static_cast<unsigned long long>(t.kernels()));
    }
  }
  if (o.output != "-") {
    ok = (std::fclose(f) == 0) && ok;
    if (!ok || std::rename(tmp.c_str(), o.output.c_str()) != 0) {
      std::fprintf(stderr, "tracefuse-gen: error: %s: %s\n", o.output.c_str(),
                   std::strerror(errno));
      std::remove(tmp.c_str());
      return 3;
    }
  }
  return ok ? 0 : 3;
}
