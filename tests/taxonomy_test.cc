// The `tracefuse` rule set: coverage of real traces and of kernel names harvested from the
// libraries' sources (tests/data/kernel_names), agreement with the reference, a kernel as its
// main operation, one category per operation on both platforms, documented examples.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "gtest/gtest.h"
#include "test_util.h"
#include "tracefuse/pipeline/flow_graph.h"

namespace tracefuse {
namespace {

std::shared_ptr<const Classifier> Load(const char* set) {
  return *Classifier::Create(*RuleSet::Load(set));
}

std::string CategoryOf(const Classifier& c, std::string_view name) {
  return c.category_name(c.category_of(c.Classify(name, Platform::kUnknown)));
}

std::vector<std::string> AllTraces() {
  std::vector<std::string> out;
  for (const std::string& f : testing::FilesIn(testing::SharedDir() + "/traces/real", ".json.gz"))
    if (f.find("rocprof") == std::string::npos) out.push_back(f);  // not a Kineto trace
  for (const std::string& dir : testing::FilesIn(testing::SharedDir() + "/golden/fusion", "")) {
    out.push_back(dir + "/trace1.json.gz");
    out.push_back(dir + "/trace2.json.gz");
  }
  return out;
}

// The split of ../shared/traces/real used to measure generalisation (docs/rules.md,
// "Generalisation, measured"): the family rules were written from the libraries' sources and the
// design half; the check half was measured before its misses were looked at.
const std::set<std::string> kDesignHalf = {"tl_h100_bert_small",       "tl_mi300_bert_small",
                                           "tl_h100_timesformer",      "tl_mi300_timesformer",
                                           "hta_mi250_minitoy_rocm62", "hta_nccl_data",
                                           "tl_sglang_qwen3_8b_decode"};
// Traces added later join the check half: they are measured with the rules as they are before
// their misses are looked at (the Qwen3-30B-A3B decode pair: 0.00 % Other on both).
const std::set<std::string> kCheckHalf = {"tl_h100_falconsai_nsfw",
                                          "tl_mi300_falconsai_nsfw",
                                          "hta_trace_diff_control",
                                          "kineto_tbp_resnet50_nw0.pt.trace",
                                          "tl_mi300_ddp_resnet18",
                                          "tl_torch_compile_triton",
                                          "tl_b200_eager",
                                          "tl_sp_qwen3_30b_a3b_mi300x_decode",
                                          "tl_sp_qwen3_30b_a3b_b300_decode"};

std::string Half(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  stem = stem.substr(0, stem.find(".json"));
  if (kDesignHalf.count(stem)) return "design half";
  if (kCheckHalf.count(stem)) return "check half";
  return "golden fusion case";
}

// Target of the taxonomy: under 2 % of kernel time left as Other on every trace, both halves.
TEST(Taxonomy, OtherHoldsUnderTwoPercentOfKernelTimeOnEveryTrace) {
  TRACEFUSE_REQUIRE_SHARED();
  std::vector<std::string> traces = AllTraces();
  ASSERT_GE(traces.size(), 28u);
  auto profiles = ProfileTraces(traces, Load("tracefuse"), {});
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  std::map<std::string, size_t> per_half;
  for (const TraceProfile& p : *profiles) {
    std::vector<CategoryTotals> totals = p.PerCategory();
    int64_t all = 0;
    for (const CategoryTotals& t : totals) all += t.time_ns;
    const CategoryId other = *p.classifier->rule_set().category_index("Other");
    ASSERT_GT(all, 0) << p.path;
    EXPECT_LT(double(totals[other].time_ns) / double(all), 0.02)
        << p.path << " (" << Half(p.path) << ")";
    ++per_half[Half(p.path)];
  }
  EXPECT_EQ(per_half["design half"], kDesignHalf.size());
  EXPECT_EQ(per_half["check half"], kCheckHalf.size());
}

// HarvestedName is one row of tests/data/kernel_names/LIBRARY.tsv: a name as a trace shows it,
// built from the library's source, with the category of its operation.
struct HarvestedName {
  std::string library;  // the file's stem
  std::string family;
  std::string category;
  std::string name;
};

std::vector<HarvestedName> HarvestedNames() {
  std::vector<HarvestedName> out;
  for (const std::string& file : testing::FilesIn(TRACEFUSE_KERNEL_NAMES_DIR, ".tsv")) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      size_t a = line.find('\t'), b = line.find('\t', a + 1);
      EXPECT_NE(b, std::string::npos) << file << ": " << line;
      if (b == std::string::npos) continue;
      out.push_back({std::filesystem::path(file).stem().string(), line.substr(a + 1, b - a - 1),
                     line.substr(0, a), line.substr(b + 1)});
    }
  }
  return out;
}

// Every harvested name lands in the category of its operation (so, under 2 % Other by count on
// every library's list, as they carry no times), except the families (or names) listed here,
// each with the reason its names cannot tell their operation.
const std::map<std::string, std::string> kHarvestedExceptions = {
    {"miopen.conv_bias_grad",
     "MIOpenConvBwdB, a convolution's bias gradient (a reduction), is "
     "named like MIOpen's convolution kernels: Conv"},
    {"miopen.lrn_local_response_norm",
     "local response normalization has no category of its own "
     "(labelled Other); the norm words make it LayerNorm"},
    {"aten.layer_norm.fwd_rms",
     "ATen's RMS norm runs the layer-norm kernels, told apart only by "
     "a template flag: LayerNorm"},
    {"aten.layer_norm.bwd_rms", "as aten.layer_norm.fwd_rms"},
    {"aten.layer_norm.bwd_gamma_beta_rms", "as aten.layer_norm.fwd_rms"},
    {"aten.vectorized_elementwise_kernel.cast",
     "ATen names its casts copies "
     "(direct_copy_kernel_cuda, *_copy_kernel): "
     "MemCopy"},
    {"aten.unrolled_elementwise_kernel.cast", "as aten.vectorized_elementwise_kernel.cast"},
    {"aten.elementwise_kernel_with_index",
     "arange's kernel is named after the index it "
     "computes from: Index"},
    {"inductor.triton_poi.index",
     "an Inductor point-wise kernel is element-wise whatever aten "
     "ops its name lists (cat, index, embedding)"},
    {"inductor.triton_poi.copy", "as inductor.triton_poi.index (clone, zeros)"},
    {"inductor.triton_per.sort", "Inductor's persistent reductions are Reduce by kind"},
    {"inductor.triton_red_per.bias_grad",
     "the fused ops name an activation's backward first: "
     "GELU"},
    {"apex.contrib.xentropy",
     "a cross-entropy loss is a loss (Reduce), as "
     "flash_attention.xentropy labels it"},
    {"apex.contrib.focal_loss", "a loss's backward, named a loss: Reduce"},
    {"cub.thrust_copy", "a Thrust identity transform is named a transform: Elementwise"},
    {"fbgemm.gen_ai.moe_grouped_gemm", "a grouped GEMM is not always an MoE's: GEMM"},
    {"flashinfer.cute_dsl_grouped_gemm", "as fbgemm.gen_ai.moe_grouped_gemm"},
    {"fbgemm.gen_ai.moe_index_shuffling",
     "fbgemm's MoE token shuffling is named "
     "index_shuffling: Index"},
    {"fbgemm.gen_ai.kv_cache",
     "fbgemm's KV-cache kernels are named after prefill and "
     "dequantization"},
    {"tensorrt_llm.moe_activation",
     "doActivationKernel's activation is an enum template "
     "argument, after the MoE GEMM's types: GEMM"},
    {"vllm.triton_unified_attention", "reduce_segments: Reduce, as the reference says"},
    {"vllm.triton_silu_mul_quant",
     "_silu_mul_fp8_quant_deep_gemm ends with its library's name, "
     "DeepGEMM: GEMM"},
    {"vllm.fp8_quant", "segmented_max_reduction is named a reduction: Reduce"},
    {"apex.mlp.bias_grad",
     "biasAdd_bprop, a bias gradient, is named after the bias add: "
     "Elementwise"},
    {"grouped_gemm_triton_kernel", "as fbgemm.gen_ai.moe_grouped_gemm"},
    {"sglang.triton_req_to_token", "the KV cache's page-table writes: KV_Cache"},
    {"sglang.triton_kv_indices", "as sglang.triton_req_to_token"},
};

// An exception names a family, or a part of the names it covers.
bool IsHarvestedException(const HarvestedName& h) {
  return std::any_of(kHarvestedExceptions.begin(), kHarvestedExceptions.end(), [&](const auto& e) {
    return e.first == h.family || h.name.find(e.first) != std::string::npos;
  });
}

TEST(Taxonomy, HarvestedLibraryNamesLandInTheirCategory) {
  auto c = Load("tracefuse");
  std::vector<HarvestedName> names = HarvestedNames();
  EXPECT_GE(names.size(), 1000u);
  std::map<std::string, std::pair<size_t, size_t>> other_by_library;  // (Other, all)
  for (const HarvestedName& h : names) {
    const std::string ours = CategoryOf(*c, h.name);
    auto& [other, all] = other_by_library[h.library];
    ++all;
    other += ours == "Other" && h.category != "Other";
    if (IsHarvestedException(h)) continue;
    EXPECT_EQ(ours, h.category) << h.library << " " << h.family << ": " << h.name;
  }
  for (const auto& [library, counts] : other_by_library)
    EXPECT_LT(double(counts.first) / double(counts.second), 0.02) << library;
}

// Every category is documented by names from at least three libraries.
// The built-in rule sets' databases compiled at build time (this test links them, as tracefuse
// does) classify every harvested name as a database compiled at run time does; a rule set that
// is not built in is compiled.
TEST(Taxonomy, PrecompiledDatabasesClassifyAsCompiledOnes) {
  const std::vector<HarvestedName> names = HarvestedNames();
  for (const std::string& set : RuleSet::BuiltinNames()) {
    auto rules = RuleSet::Load(set);
    ASSERT_TRUE(rules.ok()) << rules.status();
    auto precompiled = Classifier::Create(*rules);
    auto compiled = Classifier::Create(*rules, /*use_precompiled=*/false);
    ASSERT_TRUE(precompiled.ok() && compiled.ok()) << set;
    EXPECT_TRUE((*precompiled)->precompiled()) << set;
    EXPECT_FALSE((*compiled)->precompiled()) << set;
    for (const HarvestedName& h : names) {
      for (Platform p : {Platform::kAmd, Platform::kNvidia, Platform::kUnknown}) {
        ASSERT_EQ((*precompiled)->Classify(h.name, p), (*compiled)->Classify(h.name, p))
            << set << ": " << h.name;
      }
    }
  }
  auto edited = RuleSet::FromYaml(
      "name: edited\nextends: tracefuse\nrules:\n  - category: GEMM\n    contains: zz_gemm\n",
      "edited.yaml");
  ASSERT_TRUE(edited.ok()) << edited.status();
  auto classifier = Classifier::Create(*edited);
  ASSERT_TRUE(classifier.ok()) << classifier.status();
  EXPECT_FALSE((*classifier)->precompiled());
  EXPECT_EQ(
      (*classifier)
          ->category_name(
              (*classifier)
                  ->category_of((*classifier)->Classify("my_zz_gemm_kernel", Platform::kAmd))),
      "GEMM");
}

// The built-in rule sets that the build read and serialized (this test links them, as tracefuse
// does) are what reading their embedded rule files gives.
TEST(Taxonomy, PrecompiledRuleSetsAreTheirRuleFiles) {
  for (const std::string& set : RuleSet::BuiltinNames()) {
    auto built = RuleSet::Load(set);
    auto read = RuleSet::FromYaml(RuleSet::BuiltinText(set), set);
    ASSERT_TRUE(built.ok() && read.ok()) << set;
    EXPECT_TRUE((*built)->precompiled()) << set;
    EXPECT_FALSE((*read)->precompiled()) << set;
    EXPECT_EQ((*built)->Serialize(), (*read)->Serialize()) << set;
  }
}

TEST(Taxonomy, EveryCategoryHasExamplesFromThreeLibraries) {
  auto c = Load("tracefuse");
  std::map<std::string, std::set<std::string>> libraries;
  for (const HarvestedName& h : HarvestedNames())
    if (CategoryOf(*c, h.name) == h.category) libraries[h.category].insert(h.library);
  for (const std::string& category : c->rule_set().categories()) {
    if (category == c->rule_set().default_rule().category) continue;
    EXPECT_GE(libraries[category].size(), 3u) << category;
  }
}

// A GEMM or convolution library's kernel is GEMM or Conv, whatever epilogue its name shows:
// never an activation or element-wise kernel (cutlass_80_tensorop_bf16_s16816gemm_relu_... is a
// GEMM with a fused ReLU). The signatures are the libraries' own naming schemes.
TEST(Taxonomy, GemmAndConvolutionKernelsAreNeverActivationsOrElementwise) {
  const std::regex signature(
      "cijk_|nvjet|gemm(?!a)|gemv|xmma|cutlass_\\w*(tensorop|simt|wmma)|"
      "scudnn|implicit_convolve|igemm_|(fprop|dgrad|wgrad)[_0-9]|sp3asmconv|gcnasmconv|naive_conv|"
      "grouped_conv|winograd",
      std::regex::icase);
  const std::set<std::string> forbidden = {"SwiGLU", "GELU", "ReLU", "Elementwise"};
  auto c = Load("tracefuse");
  std::vector<std::string> names;
  for (const HarvestedName& h : HarvestedNames()) names.push_back(h.name);
  if (testing::HaveShared()) {
    auto profiles = ProfileTraces(AllTraces(), c, {});
    ASSERT_TRUE(profiles.ok()) << profiles.status();
    for (const TraceProfile& p : *profiles)
      names.insert(names.end(), p.names.begin(), p.names.end());
  }
  size_t checked = 0;
  for (const std::string& name : names) {
    if (name.rfind("triton_", 0) == 0 || !std::regex_search(name, signature)) continue;
    ++checked;
    EXPECT_FALSE(forbidden.count(CategoryOf(*c, name))) << CategoryOf(*c, name) << ": " << name;
  }
  EXPECT_GT(checked, 200u);
}

// compare pairs categories across platforms, so one operation must land in one category on both:
// on each same-model pair (AMD first), a category found on one side only is a real difference
// (listed here with its reason), never two names for one operation. The Qwen3-30B-A3B decode
// pair runs aiter's and SGLang's fused RoPE + KV-cache store kernels: RoPE on both.
TEST(Taxonomy, SameModelPairsShareTheirCategories) {
  TRACEFUSE_REQUIRE_SHARED();
  const std::string real = testing::SharedDir() + "/traces/real/";
  struct Pair {
    std::string model, amd, nvidia;
    std::set<std::string> expected_one_sided;
  };
  const std::vector<Pair> pairs = {
      {"bert_small", "tl_mi300_bert_small", "tl_h100_bert_small", {}},
      {"falconsai_nsfw", "tl_mi300_falconsai_nsfw", "tl_h100_falconsai_nsfw", {}},
      {"timesformer", "tl_mi300_timesformer", "tl_h100_timesformer", {}},
      {"qwen3_30b_a3b_decode",
       "tl_sp_qwen3_30b_a3b_mi300x_decode",
       "tl_sp_qwen3_30b_a3b_b300_decode",
       {}}};
  for (const auto& [model, amd, nvidia, expected] : pairs) {
    auto profiles =
        ProfileTraces({real + amd + ".json.gz", real + nvidia + ".json.gz"}, Load("tracefuse"), {});
    ASSERT_TRUE(profiles.ok()) << profiles.status();
    std::set<std::string> sides[2];
    for (int i = 0; i < 2; ++i) {
      const TraceProfile& p = (*profiles)[i];
      std::vector<CategoryTotals> totals = p.PerCategory();
      for (CategoryId id : CategoryIds(totals.size()))
        if (totals[id].kernels > 0) sides[i].insert(p.category_name(id));
    }
    std::set<std::string> one_sided;
    for (int i = 0; i < 2; ++i)
      for (const std::string& category : sides[i])
        if (!sides[1 - i].count(category)) one_sided.insert(category);
    EXPECT_EQ(one_sided, expected) << model;
  }
}

// Where the reference's classify_kernel says GEMM, Attention, KV_Cache, Sort or Softmax,
// tracefuse agrees, except for these names (matched by substring), each with its reason.
const std::map<std::string, std::pair<std::string, std::string>> kDisagreements = {
    {"kernel_grouped_conv_fwd",
     {"Conv",
      "Composable Kernel grouped convolutions; their mangled names contain "
      "'MergeTransform', which the reference's substring test takes for a sort"}},
    {"topkGatingSoftmax",
     {"MoE_Routing", "MoE top-k gating: the softmax is fused into expert routing"}},
    {"topksoftmax",
     {"MoE_Routing", "aiter's MoE top-k gating (topksoftmax_*): as topkGatingSoftmax"}},
    {"moe::dev::routing::",
     {"MoE_Routing",
      "TensorRT-LLM's MoE routing kernels, whose template arguments name their softmax "
      "post-processing (SoftmaxPostprocess)"}},
    {"rope_reshape_and_cache",
     {"RoPE",
      "RoPE fused with the KV-cache write (aiter's _fused_qk_rope_reshape_and_cache): one "
      "operation, RoPE on both platforms, as SGLang's fused_rope_store_kernel"}},
    {"MoeSortingKernel",
     {"MoE_Routing", "ck_tile's MoE sorting orders tokens by expert: expert routing, not a sort"}},
};

TEST(Taxonomy, AgreesWithTheReferenceOnItsSpecificTypes) {
  TRACEFUSE_REQUIRE_SHARED();
  auto tracefuse = Load("tracefuse");
  auto wafer = Load("wafer-kernel");
  auto profiles = ProfileTraces(AllTraces(), tracefuse, {});
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  size_t checked = 0, excepted = 0;
  for (const TraceProfile& p : *profiles) {
    for (const std::string& name : p.names) {
      std::string reference = CategoryOf(*wafer, name);
      if (reference != "GEMM" && reference != "Attention" && reference != "KV_Cache" &&
          reference != "Sort" && reference != "Softmax")
        continue;
      ++checked;
      std::string ours = CategoryOf(*tracefuse, name);
      auto exception =
          std::find_if(kDisagreements.begin(), kDisagreements.end(),
                       [&](const auto& e) { return name.find(e.first) != std::string::npos; });
      if (exception != kDisagreements.end()) {
        EXPECT_EQ(ours, exception->second.first) << name;
        ++excepted;
        continue;
      }
      EXPECT_EQ(ours, reference) << name;
    }
  }
  EXPECT_GT(checked, 100u);
  EXPECT_GT(excepted, 0u);
}

// One or more real kernel names per type: the documentation of the taxonomy, checked.
TEST(Taxonomy, DocumentedExamples) {
  auto c = Load("tracefuse");
  const std::vector<std::pair<std::string, std::string>> examples = {
      {"Cijk_Ailk_Bljk_BBS_BH_MT256x256x64_MI16x16x1_SN_1LDSB1_ISA942", "GEMM"},
      {"nvjet_tst_128x64_64x6_2x1_v_bz_coopB_TNT", "GEMM"},
      {"void "
       "cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_align2>(...)",
       "GEMM"},
      {"volta_sgemm_64x64_nt", "GEMM"},
      {"void cublasLt::splitKreduce_kernel<32, 16, int, float, float>(...)", "GEMM"},
      {"_ZN2ck27kernel_gemm_xdl_cshuffle_v3INS_28GridwiseGemm_xdl_cshuffle_v3E", "GEMM"},
      {"triton_tem_fused_mm_0", "GEMM"},
      {"_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1_swiglu", "MoE_GEMM"},
      {"bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_dynBatch_sm100f", "MoE_GEMM"},
      {"void vllm::moe::topkGatingSoftmax<4, 128, 4, 16, 32, int>(...)", "MoE_Routing"},
      {"void moe::dev::routing::routingIndicesHistogramKernel<...>(...)", "MoE_Routing"},
      {"kernel_unified_attention_3d", "Attention"},
      {"void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64>>(...)",
       "Attention"},
      {"fmhaSm100fKernel_QkvE4m3OBfloat16HQk128HV128SeparateQkvCausalForGenPersistent",
       "Attention"},
      {"void flashinfer::BatchPrefillWithPagedKVCacheKernel<...>(...)", "Attention"},
      {"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16>(...)", "KV_Cache"},
      {"void vllm::rotary_embedding_kernel<c10::BFloat16, true>(...)", "RoPE"},
      {"void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(...)", "RMSNorm"},
      {"std::enable_if<...>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(...)",
       "RMSNorm"},
      {"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "RMSNorm"},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(...)",
       "LayerNorm"},
      {"void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(...)", "BatchNorm"},
      {"MIOpenBatchNormFwdTrainSpatial", "BatchNorm"},
      {"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(...)",
       "SwiGLU"},
      {"void at::native::vectorized_elementwise_kernel<4, "
       "at::native::GeluCUDAKernelImpl(...)>(...)",
       "GELU"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
       "namespace)::launch_relu(...)>(...)",
       "ReLU"},
      {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, float, float, float>(...)",
       "Softmax"},
      {"void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>(...)",
       "Conv"},
      {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16",
       "Conv"},
      {"volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", "Conv"},
      {"igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x64x32_wt32x32x8", "Conv"},
      {"void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(...)",
       "Pooling"},
      {"triton_poi_fused__unsafe_view_add_3", "Elementwise"},
      {"triton_red_fused_sum_2", "Reduce"},
      {"triton_per_fused_native_layer_norm_0", "LayerNorm"},  // a norm, even when Triton-fused
      {"triton_per_fused_sum_1", "Reduce"},
      {"triton_poi_fused_convolution_relu_4", "ReLU"},  // finishes a convolution, is not one
      {"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>"
       "(...)",
       "GEMM"},  // a GEMM with a fused ReLU epilogue
      {"miopenSp3AsmConv_v21_1_3_gfx9_fp32_stride1", "Conv"},
      {"void at::native::(anonymous namespace)::RowwiseMomentsCUDAKernel<float, float>(...)",
       "LayerNorm"},  // group norm statistics
      {"void at::native::(anonymous namespace)::adaptive_average_pool<float>(...)", "Pooling"},
      {"void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned "
       "int, 1, 4, bool>(...)",
       "Elementwise"},
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       "Communication"},
      {"void rcclGenericKernel<1, false>(ncclDevKernelArgsStorage<4096ul>)", "Communication"},
      {"void vllm::cross_device_reduce_1stage<c10::BFloat16, 8>(...)", "Communication"},
      {"void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float>(...)",
       "Optimizer"},
      {"void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>(...)",
       "Quantization"},
      {"void flashinfer::sampling::TopKTopPSamplingFromProbKernel<...>(...)", "Sampling"},
      {"void cub::DeviceRadixSortOnesweepKernel<...>(...)", "Sort"},
      {"void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(...)", "Sort"},
      {"void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long>(...)",
       "Index"},
      {"void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long>(...)",
       "Index"},
      {"void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 4>(...)",
       "Index"},
      {"Memcpy DtoH (Device -> Pinned)", "MemCopy"},
      {"__amd_rocclr_fillBufferAligned", "MemCopy"},
      {"batched_transpose_32x32_half", "MemCopy"},
      {"void at::native::elementwise_kernel<128, 2, at::native::direct_copy_kernel_cuda(...)>(...)",
       "MemCopy"},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
       "at::native::MeanOps<float, float>>>(...)",
       "Reduce"},
      {"_fwd_kernel_reduce_segments", "Reduce"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(...)",
       "Elementwise"},
      {"SubTensorOpWithScalar1d", "Elementwise"},  // MIOpen SetTensor: a fill, as ATen's
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
       "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
       "Elementwise"},
      // RoPE fused with the KV-cache store: RoPE on both platforms; plain reshape_and_cache
      // (above) is KV_Cache.
      {"_fused_qk_rope_reshape_and_cache_kernel", "RoPE"},
      {"void (anonymous namespace)::fused_rope_store_kernel<true, 128l, true, __nv_bfloat16, long, "
       "16u>((anonymous namespace)::FusedRopeStoreParams)",
       "RoPE"},
      {"triton_poi_fused_add_all_reduce_embedding_0", "Elementwise"},  // Inductor, not a collective
      {"triton__0d1d2d3d4d5d", "Elementwise"},  // Inductor's first, positional names
      {"void foo::ep::internode::dispatch<false, 2, false, 16384, 7, 2>(...)",
       "Communication"},          // a DeepEP fork under its own namespace
      {"sage_fwd", "Attention"},  // SageAttention, aiter's Triton port
      {"void fbgemm_gpu::_block_bucketize_sparse_features_cuda_kernel1<long, long>(...)", "Index"},
      // Names from public profiles that no rule was written for at first (issue 11's review).
      {"void (anonymous namespace)::fast_hadamard_transform_kernel<...>(HadamardParamsBase)",
       "Quantization"},  // not Optimizer: "adam" is inside "hadamard"
      {"bmm_E2m1_E2m1E2m1_Fp32_t128x8x512u2_s3_et64x8_m64x8x64_cga1x1x1_16dp256b_rM_TN_transOut_"
       "schPd2x1x2x3_bN_clmp_swiGlu_lbW4_lsfbW4_dynB_sm100f",
       "MoE_GEMM"},
      {"_rms_layernorm_forward", "RMSNorm"},  // Unsloth
      {"post_reorder_deepgemm_triton_kernel", "MoE_Routing"},
      {"void marlin::gptq_marlin_repack_kernel<256, 4, false, false>(...)", "Quantization"},
      {"void kdequant_mm_int32_fp16<4, 512>(int*, float*, float*, __half*, __half*, int, int, int)",
       "Quantization"},  // bitsandbytes
      {"_quantized_linear_fp8_kernel", "GEMM"},
      {"chunk_kda_fwd_kernel_intra_sub_chunk", "SSM"},  // Kimi Delta Attention (fla)
      {"RNN_blockPersist_fp_LSTM_HMMA", "GEMM"},        // cuDNN's persistent RNN
      {"void DSE::vector_fft<0, 1, 256, 16, 16, 1, float, float, float2>(...)", "Conv"},
      {"_cce_lse_forward_kernel", "Reduce"},  // Apple's Cut Cross-Entropy
      {"void beam_search<__half>(...)", "Sampling"},
      {"tg_betac_alphaab", "GEMM"},  // MIOpenGEMM
      {"void cudnn::ops::convertTensor_kernel<float, __half, float, (cudnnKernelDataType_t)0>(...)",
       "MemCopy"},
      {"void at::native::(anonymous namespace)::searchsorted_cuda_kernel<float, long>(...)",
       "Sort"},  // as the reference says
      {"some_kernel_no_rule_knows", "Other"},
  };
  for (const auto& [name, category] : examples) EXPECT_EQ(CategoryOf(*c, name), category) << name;
}

TEST(Taxonomy, EveryCategoryHasAnExampleAndIsReachable) {
  auto c = Load("tracefuse");
  for (const std::string& category : c->rule_set().categories()) {
    bool used = category == c->rule_set().default_rule().category;
    for (const Rule& r : c->rule_set().rules()) used |= r.category == category;
    EXPECT_TRUE(used) << category << " has no rule";
  }
}

}  // namespace
}  // namespace tracefuse
