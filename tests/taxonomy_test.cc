// The `tracefuse` rule set: coverage of real traces, agreement with the reference, documented
// examples and the order of its rules.
#include <map>

#include "gtest/gtest.h"
#include "test_util.h"
#include "tracefuse/pipeline.h"

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

// Target of the taxonomy: under 2 % of kernel time left as Other on every trace.
TEST(Taxonomy, OtherHoldsUnderTwoPercentOfKernelTimeOnEveryTrace) {
  TRACEFUSE_REQUIRE_SHARED();
  std::vector<std::string> traces = AllTraces();
  ASSERT_GE(traces.size(), 26u);
  auto profiles = ProfileTraces(traces, Load("tracefuse"), {});
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  for (const TraceProfile& p : *profiles) {
    std::vector<CategoryTotals> totals = p.PerCategory();
    int64_t all = 0;
    for (const CategoryTotals& t : totals) all += t.time_ns;
    const CategoryId other = *p.classifier->rule_set().category_index("Other");
    ASSERT_GT(all, 0) << p.path;
    EXPECT_LT(double(totals[other].time_ns) / double(all), 0.02) << p.path;
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
      {"triton_poi_fused__unsafe_view_add_3", "Triton_Pointwise"},
      {"triton_red_fused_sum_2", "Triton_Reduce"},
      {"triton_per_fused_native_layer_norm_0", "LayerNorm"},  // a norm, even when Triton-fused
      {"triton_per_fused_sum_1", "Triton_Persistent"},
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
      {"SubTensorOpWithScalar1d", "Elementwise"},
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
