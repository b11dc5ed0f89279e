#include "tracefuse/classify/kernel_roles.h"

#include "gtest/gtest.h"

namespace tracefuse {
namespace {

KernelRole Role(std::string_view name) { return KernelRoles::Builtin()->RoleOf(name); }

TEST(KernelRoles, BuiltinFileReads) {
  auto roles = KernelRoles::FromYaml(KernelRoles::BuiltinText(), "data/kernel-roles.yaml");
  ASSERT_TRUE(roles.ok()) << roles.status();
}

// Each helper kind by the naming schemes of the libraries that run it.
TEST(KernelRoles, HelpersByLibraryScheme) {
  struct Case {
    const char* name;
    const char* helper;
  };
  const Case cases[] = {
      {"void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, "
       "__nv_bfloat16, false, float, __nv_bfloat16, __nv_bfloat16, true, false, false>"
       "(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, "
       "__nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float const*, "
       "__nv_bfloat16*, void*, long, float*, int*)",
       "split-K reduce"},
      {"void cutlass::Kernel<cutlass::reduction::kernel::ReduceSplitK<cutlass::MatrixShape<4, "
       "64>, cutlass::epilogue::thread::LinearCombination<float, 4, float, float>, "
       "cutlass::reduction::thread::ReduceAdd<float, float, 4>, 4> >(...)",
       "split-K reduce"},
      {"Cijk_Ailk_Bljk_HHS_BH_PostGSU4_VW1", "split-K reduce"},
      {"void reduce_1Block_kernel<float, 128, 7>(float const*, float*, int)", "split-K reduce"},
      {"Cijk_Ailk_Bljk_SB_BetaOnly", "GEMM beta scaling"},
      {"void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, "
       "3, false>(__hip_bfloat16*, float const*, float const*, __hip_bfloat16 const*, int const*, "
       "int const*, int, float const*)",
       "split-KV combine"},
      {"void vllm::paged_attention_v2_reduce_kernel<c10::BFloat16, 128, 128, 512>(...)",
       "split-KV combine"},
      {"void flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, "
       "false, cutlass::bfloat16_t>, 4, 1, true>(Flash_fwd_params)",
       "split-KV combine"},
      {"void flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>, cute::C<128> >, 6, 256, 1, "
       "false, true, cutlass::bfloat16_t, float, 90>(...)",
       "split-KV combine"},
      {"void flashinfer::MergeStatesKernel<8u, 16u, 8u, 4u, __nv_bfloat16, __nv_bfloat16>(...)",
       "split-KV combine"},
      {"void flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, 512, 64>(Flash_fwd_mla_params)",
       "split-KV combine"},
      {"_fwd_kernel_stage2", "split-KV combine"},
      {"_fwd_kernel_reduce_segments", "split-KV combine"},
      {"_splitK_reduce", "split-KV combine"},
      {"void fbgemm_gpu::gen_ai::attention::gqa_attn_splitk_reduce_wmma_kernel<__nv_bfloat16>(...)",
       "split-KV combine"},
      {"void ck_tile::kentry<64, 1, ck_tile::FmhaFwdSplitKVCombineKernel<ck_tile::"
       "BlockFmhaFwdSplitKVCombinePipeline<...> > >(...)",
       "split-KV combine"},
      {"cudnn::engines_precompiled::nchwToNhwcKernel", "layout transform"},
      {"void cudnn::ops::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, false, true, "
       "(cudnnKernelDataType_t)2>(cudnn::ops::nhwc2nchw_params_t<float>, ...)",
       "layout transform"},
      {"batched_transpose_32x32_half", "layout transform"},
      {"Im2Col", "im2col"},
      {"void at::native::im2col_kernel<c10::BFloat16>(long, c10::BFloat16 const*, ...)", "im2col"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
       "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
       "fill"},
      {"SubTensorOpWithScalar4d", "fill"},
  };
  for (const Case& c : cases) {
    const KernelRole role = Role(c.name);
    EXPECT_EQ(role.helper, c.helper) << c.name;
  }
}

// What is no helper stays a main kernel: the GEMMs, attention and reductions that the helper
// literals border on.
TEST(KernelRoles, MainKernelsAreNotHelpers) {
  for (const char* name : {
           "nvjet_sm103_tst_32x64_64x16_4x1_v_bz_splitK_TNN",
           "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x16x256_MI16x16x1_SN_LDSB1_GSU1",
           "void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16>(...)",
           "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
           "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(...)",
           "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768>(...)",
           "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
           "void at::native::elementwise_kernel_manual_unroll<128, 8, "
           "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda("
           "at::TensorIteratorBase&)::{lambda()#3}>(...)",
       }) {
    EXPECT_FALSE(Role(name).is_helper()) << name << ": " << Role(name).helper;
  }
}

TEST(KernelRoles, FusedKernelsStateWhatTheyCover) {
  using Covers = std::vector<std::string>;
  EXPECT_EQ(Role("void (anonymous namespace)::fused_qknorm_warp<128l, true, __nv_bfloat16>("
                 "(anonymous namespace)::QKNormParams)")
                .covers,
            (Covers{"RMSNorm"}));
  EXPECT_EQ(Role("kernel_cutlass_kernel_flashinfernormkernelsfused_add_rmsnormFusedAddRMSNorm"
                 "Kernel_object_at__tensorptrbf16gmemalign128o204820481")
                .covers,
            (Covers{"RMSNorm", "Elementwise"}));
  EXPECT_EQ(Role("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi8ELb0ELb0ELb1ELi1EEEvPT0_"
                 "PT_PfS4_S4_S4_diiiiiiib")
                .covers,
            (Covers{"RMSNorm", "Elementwise", "Quantization"}));
  EXPECT_EQ(Role("_fused_qk_rope_reshape_and_cache_kernel").covers, (Covers{"RoPE", "KV_Cache"}));
  EXPECT_EQ(Role("void (anonymous namespace)::fused_rope_store_kernel<true, 128l, true, "
                 "__nv_bfloat16, long, 16u>((anonymous namespace)::FusedRopeStoreParams)")
                .covers,
            (Covers{"RoPE", "KV_Cache"}));
  EXPECT_EQ(Role("void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, "
                 "true>(c10::BFloat16*, c10::BFloat16 const*, int)")
                .covers,
            (Covers{"SwiGLU", "Elementwise"}));
  // Inductor names its ops: a mean of squares and an rsqrt are an RMSNorm, the rest is theirs.
  EXPECT_EQ(Role("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0").covers,
            (Covers{"RMSNorm", "Elementwise", "MemCopy", "Reduce"}));
  EXPECT_EQ(Role("triton_poi_fused_mul_silu_1").covers, (Covers{"SwiGLU", "Elementwise"}));
  EXPECT_TRUE(Role("nvjet_sm90_tst_128x64_64x4_2x1_v_bz_TNT").covers.empty());
}

TEST(KernelRoles, InductorOpsJoinWordsIntoTheLongestKnownOp) {
  const LaunchingOpTable& table = *LaunchingOpTable::Builtin();
  using Ops = std::vector<std::string>;
  EXPECT_EQ(InductorOps("triton_red_fused__to_copy_add_mean_0", table),
            (Ops{"aten::_to_copy", "aten::add", "aten::mean"}));
  EXPECT_EQ(InductorOps("triton_per_fused_native_layer_norm_12", table),
            (Ops{"aten::native_layer_norm"}));
  // Words that name no op are passed over; the trailing number is not an op.
  EXPECT_EQ(InductorOps("triton_poi_fused_frobnicate_mul_3", table), (Ops{"aten::mul"}));
  EXPECT_TRUE(InductorOps("triton_tem_fused_mm_0", table).empty());
  EXPECT_TRUE(InductorOps("void at::native::vectorized_elementwise_kernel", table).empty());
}

TEST(KernelRoles, HeavyAndAbsorbs) {
  const KernelRoles& roles = *KernelRoles::Builtin();
  for (const char* heavy : {"GEMM", "MoE_GEMM", "Attention", "Conv"}) {
    EXPECT_TRUE(roles.heavy(heavy)) << heavy;
  }
  for (const char* light : {"Elementwise", "RMSNorm", "SwiGLU", "RoPE", "MemCopy"}) {
    EXPECT_FALSE(roles.heavy(light)) << light;
  }
  EXPECT_TRUE(roles.absorbs("GEMM", "Elementwise"));
  EXPECT_TRUE(roles.absorbs("RMSNorm", "RMSNorm"));  // a category absorbs its own
  EXPECT_TRUE(roles.absorbs("MoE_GEMM", "MoE_Routing"));
  EXPECT_FALSE(roles.absorbs("Elementwise", "GEMM"));
  EXPECT_FALSE(roles.absorbs("SwiGLU", "GEMM"));
}

TEST(KernelRoles, FileErrorsNameTheLine) {
  auto status = [](const std::string& text) {
    return std::string(KernelRoles::FromYaml(text, "roles.yaml").status().message());
  };
  EXPECT_EQ(status("heavy: [GEMM]\nhelpers: [1]\nbogus: 1\n"), "roles.yaml:3: unknown key 'bogus'");
  EXPECT_EQ(status("helpers:\n  - helper: split-K reduce\n    any: [splitkreduce]\n"),
            "roles.yaml:2: a helper without 'serves'");
  EXPECT_EQ(status("fused:\n  - any: [x]\n"), "roles.yaml:2: a rule is a map with 'covers'");
  EXPECT_EQ(status("absorbs: [GEMM]\n"),
            "roles.yaml:1: 'absorbs' maps a category to the categories it absorbs");
  EXPECT_EQ(status("heavy: GEMM\n"), "roles.yaml:1: a list of categories");
}

}  // namespace
}  // namespace tracefuse
