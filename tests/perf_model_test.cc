// Perf models (perf_model.h, op_model_names.cc): hand-computed FLOPs and bytes per formula of
// docs/perf-models.md, on shapes as PyTorch records them (many taken from ../shared's real traces),
// and malformed shapes, which must give no figures without crashing.
#include "tracefuse/analyze/perf_model.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracefuse/analyze/gpu_spec.h"
#include "tracefuse/parse/chunk_parser.h"

namespace tracefuse {
namespace {

// Arg is one recorded input: its "Input Dims" entry, its "Input type" and its "Concrete Inputs"
// value.
struct Arg {
  std::string dims;
  std::string type;
  std::string concrete;
};

Arg Tensor(const std::string& dims, const std::string& type) { return {dims, type, ""}; }
Arg Scalar(const std::string& value) { return {"[]", "Scalar", value}; }
Arg ScalarList(const std::string& value) { return {"[]", "ScalarList", value}; }
Arg None() { return {"[]", "", ""}; }  // an absent optional tensor

const std::string kBf16 = "c10::BFloat16";
const std::string kFloat = "float";

// Raw() is the args as the parser keeps them (HostActivity::shapes); Concrete Inputs empty when
// `concrete` is false, as before PyTorch 2.1.
std::string Raw(const std::vector<Arg>& args, bool concrete = true) {
  std::string dims, types, values;
  for (const Arg& arg : args) {
    const char* separator = dims.empty() ? "" : ", ";
    dims += separator + arg.dims;
    types += separator + ("\"" + arg.type + "\"");
    values += separator + ("\"" + arg.concrete + "\"");
  }
  return "[" + dims + "]\x1f[" + types + "]\x1f" + (concrete ? "[" + values + "]" : "");
}

// Model() is the work of the op named `name` (its model told by OpModelOf()) with `args`.
OpWork Model(std::string_view name, const std::vector<Arg>& args, bool concrete = true) {
  const std::optional<OpShapes> shapes = ParseOpShapes(Raw(args, concrete));
  EXPECT_TRUE(shapes.has_value()) << Raw(args, concrete);
  return shapes ? ModelOp(OpModelOf(name), *shapes) : OpWork();
}

std::optional<uint64_t> Some(uint64_t value) { return value; }
constexpr std::optional<uint64_t> kNone = std::nullopt;

// --- GEMM ---

TEST(PerfModel, Mm) {
  const OpWork work = Model("aten::mm", {Tensor("[128, 5]", kFloat), Tensor("[5, 128]", kFloat)});
  EXPECT_EQ(work.flops, Some(2ull * 128 * 128 * 5));
  EXPECT_EQ(work.bytes, Some((128ull * 5 + 5 * 128) * 4 + 128 * 128 * 4));
  EXPECT_EQ(work.dtype, DType::kFp32);
}

TEST(PerfModel, AddmmReadsItsBias) {
  const OpWork work =
      Model("aten::addmm", {Tensor("[1000]", kFloat), Tensor("[32, 2048]", kFloat),
                            Tensor("[2048, 1000]", kFloat), Scalar("1"), Scalar("1")});
  EXPECT_EQ(work.flops, Some(2ull * 32 * 1000 * 2048));
  EXPECT_EQ(work.bytes, Some((1000ull + 32 * 2048 + 2048 * 1000) * 4 + 32 * 1000 * 4));
}

TEST(PerfModel, Bmm) {
  const OpWork work =
      Model("aten::bmm", {Tensor("[96, 3137, 64]", kBf16), Tensor("[96, 64, 3137]", kBf16)});
  EXPECT_EQ(work.flops, Some(2ull * 96 * 3137 * 3137 * 64));
  EXPECT_EQ(work.bytes, Some(2 * (96ull * 3137 * 64) * 2 + 96ull * 3137 * 3137 * 2));
  EXPECT_EQ(work.dtype, DType::kBf16);
}

TEST(PerfModel, Baddbmm) {
  const OpWork work =
      Model("aten::baddbmm", {Tensor("[4, 16, 32]", "c10::Half"), Tensor("[4, 16, 8]", "c10::Half"),
                              Tensor("[4, 8, 32]", "c10::Half"), Scalar("1"), Scalar("1")});
  EXPECT_EQ(work.flops, Some(2ull * 4 * 16 * 32 * 8));
  EXPECT_EQ(work.bytes, Some((4ull * 16 * 32 + 4 * 16 * 8 + 4 * 8 * 32) * 2 + 4 * 16 * 32 * 2));
  EXPECT_EQ(work.dtype, DType::kFp16);
}

TEST(PerfModel, TransposedGemmUsesTheLogicalShapes) {
  // A weight's gradient, grad.t() @ input: the trace records the transposed view's shape.
  const OpWork work =
      Model("aten::mm", {Tensor("[1000, 32]", kFloat), Tensor("[32, 2048]", kFloat)});
  EXPECT_EQ(work.flops, Some(2ull * 1000 * 2048 * 32));
  EXPECT_EQ(work.bytes, Some((1000ull * 32 + 32 * 2048) * 4 + 1000 * 2048 * 4));
}

TEST(PerfModel, ScaledMmFp8) {
  const std::string fp8 = "c10::Float8_e4m3fn";
  const OpWork work = Model("aten::_scaled_mm",
                            {Tensor("[16, 32]", fp8), Tensor("[32, 64]", fp8), Tensor("[]", kFloat),
                             Tensor("[]", kFloat), None(), None(), Scalar("15"), Scalar("False")});
  EXPECT_EQ(work.flops, Some(2ull * 16 * 64 * 32));
  // A and B at 1 byte, the 0-d scales at 4, the output at the op's dtype (fp8) too.
  EXPECT_EQ(work.bytes, Some(16ull * 32 + 32 * 64 + 4 + 4 + 16 * 64));
  EXPECT_EQ(work.dtype, DType::kFp8);
}

// --- Attention ---

// Sdpa() is a recorded aten::_scaled_dot_product_flash_attention(query, key, value, dropout_p,
// is_causal, return_debug_mask, scale).
std::vector<Arg> Sdpa(const std::string& q, const std::string& kv, const std::string& causal) {
  return {Tensor(q, kBf16), Tensor(kv, kBf16), Tensor(kv, kBf16), Scalar("0."),
          Scalar(causal),   Scalar("False"),   Scalar("0.125")};
}

TEST(PerfModel, SdpaFlash) {
  const OpWork work = Model("aten::_scaled_dot_product_flash_attention",
                            Sdpa("[4, 12, 197, 64]", "[4, 12, 197, 64]", "False"));
  EXPECT_EQ(work.flops, Some(2ull * 4 * 12 * 197 * 197 * (64 + 64)));
  EXPECT_EQ(work.bytes, Some(3 * (4ull * 12 * 197 * 64) * 2 + 4ull * 12 * 197 * 64 * 2));
  EXPECT_EQ(work.dtype, DType::kBf16);
}

TEST(PerfModel, SdpaFlashCausalHalvesTheFlops) {
  const OpWork work = Model("aten::_scaled_dot_product_flash_attention",
                            Sdpa("[4, 12, 197, 64]", "[4, 12, 197, 64]", "True"));
  EXPECT_EQ(work.flops, Some(2ull * 4 * 12 * 197 * 197 * (64 + 64) / 2));
  EXPECT_EQ(work.bytes, Some(3 * (4ull * 12 * 197 * 64) * 2 + 4ull * 12 * 197 * 64 * 2));
}

TEST(PerfModel, GroupedQueryAttentionCountsQueryHeads) {
  const OpWork work = Model("aten::_scaled_dot_product_flash_attention",
                            Sdpa("[2, 32, 128, 64]", "[2, 8, 256, 64]", "False"));
  EXPECT_EQ(work.flops, Some(2ull * 2 * 32 * 128 * 256 * (64 + 64)));
  EXPECT_EQ(work.bytes,
            Some((2ull * 32 * 128 * 64 + 2 * (2 * 8 * 256 * 64)) * 2 + 2ull * 32 * 128 * 64 * 2));
}

// FlashForward() is a recorded aten::_flash_attention_forward(query, key, value, cum_seq_q,
// cum_seq_k, max_q, max_k, dropout_p, is_causal, return_debug_mask, scale, window_size_left,
// window_size_right, seqused_k, alibi_slopes): q, k, v [B, L, H, D].
std::vector<Arg> FlashForward(const std::string& qkv, const std::string& causal) {
  return {Tensor(qkv, kBf16),
          Tensor(qkv, kBf16),
          Tensor(qkv, kBf16),
          None(),
          None(),
          Scalar("197"),
          Scalar("197"),
          Scalar("0."),
          Scalar(causal),
          Scalar("False"),
          Scalar("0.125"),
          None(),
          None(),
          None(),
          None()};
}

TEST(PerfModel, FlashAttentionForwardIsSequenceMajor) {
  const OpWork work =
      Model("aten::_flash_attention_forward", FlashForward("[4, 197, 12, 64]", "False"));
  EXPECT_EQ(work.flops, Some(2ull * 4 * 12 * 197 * 197 * (64 + 64)));
  EXPECT_EQ(work.bytes, Some(3 * (4ull * 197 * 12 * 64) * 2 + 4ull * 12 * 197 * 64 * 2));
  const OpWork causal =
      Model("aten::_flash_attention_forward", FlashForward("[4, 197, 12, 64]", "True"));
  EXPECT_EQ(causal.flops, Some(2ull * 4 * 12 * 197 * 197 * (64 + 64) / 2));
}

TEST(PerfModel, VarlenAttentionHasNoModel) {
  // Variable-length calls pack the batch's sequences: q [total tokens, H, D].
  std::vector<Arg> args = FlashForward("[282, 8, 64]", "False");
  args[3] = Tensor("[3]", "int");
  args[4] = Tensor("[3]", "int");
  const OpWork work = Model("aten::_flash_attention_forward", args);
  EXPECT_EQ(work.flops, kNone);
  EXPECT_EQ(work.bytes, kNone);
}

// EfficientForward() is a recorded aten::_efficient_attention_forward(query, key, value, bias,
// cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, custom_mask_type,
// compute_log_sumexp, scale, seqlen_k, window_size): q, k, v [B, L, H, D].
std::vector<Arg> EfficientForward(const std::string& q, const std::string& k, const std::string& v,
                                  const std::string& mask_type) {
  return {Tensor(q, kBf16), Tensor(k, kBf16), Tensor(v, kBf16), None(),       None(),
          None(),           Scalar(""),       Scalar(""),       Scalar("0."), Scalar(mask_type),
          Scalar("True"),   Scalar(""),       None(),           None()};
}

TEST(PerfModel, EfficientAttentionCustomMaskType) {
  // Dv (32) differs from D (64): P·V does 2·Lq·Lk·Dv FLOPs.
  const OpWork plain =
      Model("aten::_efficient_attention_forward",
            EfficientForward("[1, 100, 4, 64]", "[1, 300, 4, 64]", "[1, 300, 4, 32]", "0"));
  EXPECT_EQ(plain.flops, Some(2ull * 1 * 4 * 100 * 300 * (64 + 32)));
  EXPECT_EQ(plain.bytes, Some((1ull * 100 * 4 * 64 + 1 * 300 * 4 * 64 + 1 * 300 * 4 * 32) * 2 +
                              1ull * 4 * 100 * 32 * 2));
  for (const char* causal_from : {"1", "2"}) {  // top left, bottom right
    const OpWork causal = Model(
        "aten::_efficient_attention_forward",
        EfficientForward("[1, 100, 4, 64]", "[1, 300, 4, 64]", "[1, 300, 4, 32]", causal_from));
    EXPECT_EQ(causal.flops, Some(2ull * 1 * 4 * 100 * 300 * (64 + 32) / 2)) << causal_from;
  }
}

TEST(PerfModel, SdpaEfficientAndCudnnForwards) {
  // (query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, ...)
  const std::string qkv = "[2, 16, 1024, 128]";
  const std::vector<Arg> efficient = {
      Tensor(qkv, kBf16), Tensor(qkv, kBf16), Tensor(qkv, kBf16), None(),
      Scalar("True"),     Scalar("0."),       Scalar("True"),     Scalar("")};
  const OpWork work = Model("aten::_scaled_dot_product_efficient_attention", efficient);
  EXPECT_EQ(work.flops, Some(2ull * 2 * 16 * 1024 * 1024 * (128 + 128) / 2));
  EXPECT_EQ(work.bytes, Some(3 * (2ull * 16 * 1024 * 128) * 2 + 2ull * 16 * 1024 * 128 * 2));
  std::vector<Arg> cudnn = efficient;
  cudnn.insert(cudnn.begin() + 7, Scalar("False"));  // return_debug_mask
  cudnn[6] = Scalar("False");
  EXPECT_EQ(Model("aten::_scaled_dot_product_cudnn_attention", cudnn).flops,
            Some(2ull * 2 * 16 * 1024 * 1024 * (128 + 128)));
}

// Backward() is a backward attention op's args: grad_out, q, k and v, all `qkv`, then `after`.
std::vector<Arg> Backward(const std::string& qkv, const std::vector<Arg>& after) {
  std::vector<Arg> args = {Tensor(qkv, kBf16), Tensor(qkv, kBf16), Tensor(qkv, kBf16),
                           Tensor(qkv, kBf16)};
  args.insert(args.end(), after.begin(), after.end());
  return args;
}

TEST(PerfModel, SdpaFlashBackward) {
  // (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k,
  // dropout_p, is_causal, philox_seed, philox_offset, scale)
  auto args = [](const std::string& causal) {
    return Backward("[1, 8, 141, 64]",
                    {Tensor("[1, 8, 141, 64]", kBf16), Tensor("[1, 8, 141]", kFloat), None(),
                     None(), Scalar("141"), Scalar("141"), Scalar("0."), Scalar(causal),
                     Tensor("[]", "long int"), Tensor("[]", "long int"), Scalar("0.125")});
  };
  const uint64_t read = 5 * (1ull * 8 * 141 * 64) * 2 + 1ull * 8 * 141 * 4 + 8 + 8;
  const uint64_t gradients = 3 * (1ull * 8 * 141 * 64) * 2;
  const OpWork work = Model("aten::_scaled_dot_product_flash_attention_backward", args("False"));
  EXPECT_EQ(work.flops, Some(5ull * 1 * 8 * 141 * 141 * (64 + 64)));
  EXPECT_EQ(work.bytes, Some(read + gradients));
  const OpWork causal = Model("aten::_scaled_dot_product_flash_attention_backward", args("True"));
  EXPECT_EQ(causal.flops, Some(5ull * 1 * 8 * 141 * 141 * (64 + 64) / 2));
}

TEST(PerfModel, CausalBackwardRoundsDown) {
  // B·H·Lq·Lk·(D + Dv) = 1·1·1·1·(1 + 2): 5·3 / 2 rounds down to 7.
  std::vector<Arg> args = {Tensor("[1, 1, 1, 2]", kBf16),
                           Tensor("[1, 1, 1, 1]", kBf16),
                           Tensor("[1, 1, 1, 1]", kBf16),
                           Tensor("[1, 1, 1, 2]", kBf16),
                           Tensor("[1, 1, 1, 2]", kBf16),
                           Tensor("[1, 1, 1]", kFloat),
                           None(),
                           None(),
                           Scalar("1"),
                           Scalar("1"),
                           Scalar("0."),
                           Scalar("True")};
  EXPECT_EQ(Model("aten::_scaled_dot_product_flash_attention_backward", args).flops,
            Some(5ull * 1 * 1 * 1 * 1 * (1 + 2) / 2));
}

TEST(PerfModel, SdpaEfficientBackward) {
  // (grad_out_, query, key, value, attn_bias, out, logsumexp, philox_seed, philox_offset,
  // dropout_p, grad_input_mask, is_causal, scale)
  const std::vector<Arg> args = Backward(
      "[2, 4, 64, 32]", {None(), Tensor("[2, 4, 64, 32]", kBf16), Tensor("[2, 4, 64]", kFloat),
                         Tensor("[]", "long int"), Tensor("[]", "long int"), Scalar("0."),
                         ScalarList("[True, True, True, False]"), Scalar("True"), Scalar("")});
  const OpWork work = Model("aten::_scaled_dot_product_efficient_attention_backward", args);
  EXPECT_EQ(work.flops, Some(5ull * 2 * 4 * 64 * 64 * (32 + 32) / 2));
  EXPECT_EQ(work.bytes, Some(5 * (2ull * 4 * 64 * 32) * 2 + 2ull * 4 * 64 * 4 + 8 + 8 +
                             3 * (2ull * 4 * 64 * 32) * 2));
}

TEST(PerfModel, SdpaCudnnBackward) {
  // (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias,
  // cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, scale)
  auto args = [](const std::string& causal) {
    return Backward("[1, 2, 16, 8]",
                    {Tensor("[1, 2, 16, 8]", kBf16), Tensor("[1, 2, 16, 1]", kFloat),
                     Tensor("[]", "long int"), Tensor("[]", "long int"), None(), None(), None(),
                     Scalar("16"), Scalar("16"), Scalar("0."), Scalar(causal), Scalar("")});
  };
  EXPECT_EQ(Model("aten::_scaled_dot_product_cudnn_attention_backward", args("False")).flops,
            Some(5ull * 1 * 2 * 16 * 16 * (8 + 8)));
  EXPECT_EQ(Model("aten::_scaled_dot_product_cudnn_attention_backward", args("True")).flops,
            Some(5ull * 1 * 2 * 16 * 16 * (8 + 8) / 2));
}

TEST(PerfModel, FlashAttentionBackward) {
  // (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k,
  // dropout_p, is_causal, rng_state, unused, scale, window_size_left, window_size_right)
  const std::vector<Arg> args =
      Backward("[4, 197, 12, 64]",
               {Tensor("[4, 197, 12, 64]", kBf16), Tensor("[4, 12, 197]", kFloat), None(), None(),
                Scalar("197"), Scalar("197"), Scalar("0."), Scalar("True"),
                Tensor("[2]", "long int"), Tensor("[0]", kBf16), Scalar("0.125"), None(), None()});
  const OpWork work = Model("aten::_flash_attention_backward", args);
  EXPECT_EQ(work.flops, Some(5ull * 4 * 12 * 197 * 197 * (64 + 64) / 2));
  EXPECT_EQ(work.bytes, Some(5 * (4ull * 197 * 12 * 64) * 2 + 4ull * 12 * 197 * 4 + 2 * 8 + 0 +
                             3 * (4ull * 197 * 12 * 64) * 2));
}

TEST(PerfModel, EfficientAttentionBackward) {
  // (grad_out_, query, key, value, bias, out, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
  // max_seqlen_k, logsumexp, dropout_p, philox_seed, philox_offset, custom_mask_type,
  // bias_requires_grad, scale, num_splits_key, window_size, shared_storage_dqdkdv)
  auto args = [](const std::string& mask_type) {
    return Backward("[1, 128, 4, 64]",
                    {None(), Tensor("[1, 128, 4, 64]", kBf16), None(), None(), Scalar("128"),
                     Scalar("128"), Tensor("[1, 4, 128]", kFloat), Scalar("0."),
                     Tensor("[]", "long int"), Tensor("[]", "long int"), Scalar(mask_type),
                     Scalar("False"), Scalar(""), Scalar(""), Scalar(""), Scalar("False")});
  };
  EXPECT_EQ(Model("aten::_efficient_attention_backward", args("0")).flops,
            Some(5ull * 1 * 4 * 128 * 128 * (64 + 64)));
  EXPECT_EQ(Model("aten::_efficient_attention_backward", args("1")).flops,
            Some(5ull * 1 * 4 * 128 * 128 * (64 + 64) / 2));
}

TEST(PerfModel, AttentionWithoutConcreteInputsIsNotCausal) {
  const OpWork work =
      Model("aten::_scaled_dot_product_flash_attention",
            Sdpa("[4, 12, 197, 64]", "[4, 12, 197, 64]", "True"), /*concrete=*/false);
  EXPECT_EQ(work.flops, Some(2ull * 4 * 12 * 197 * 197 * (64 + 64)));
}

TEST(PerfModel, AttentionWithDisagreeingDimsHasNoModel) {
  // q·kᵀ needs q's and k's head dims equal; p·v needs k's and v's lengths equal.
  EXPECT_EQ(Model("aten::_scaled_dot_product_flash_attention",
                  Sdpa("[4, 12, 197, 64]", "[4, 12, 197, 32]", "False"))
                .flops,
            kNone);
  EXPECT_EQ(Model("aten::_efficient_attention_forward",
                  EfficientForward("[1, 100, 4, 64]", "[1, 300, 4, 64]", "[1, 200, 4, 64]", "0"))
                .bytes,
            kNone);
}

// --- Convolution ---

// Convolution() is a recorded aten::convolution(input, weight, bias, stride, padding, dilation,
// transposed, output_padding, groups).
std::vector<Arg> Convolution(const std::string& input, const std::string& weight, const Arg& bias,
                             const std::string& stride, const std::string& padding,
                             const std::string& dilation, const std::string& transposed,
                             const std::string& output_padding, const std::string& groups) {
  return {Tensor(input, kFloat), Tensor(weight, kFloat),     bias,
          ScalarList(stride),    ScalarList(padding),        ScalarList(dilation),
          Scalar(transposed),    ScalarList(output_padding), Scalar(groups)};
}

TEST(PerfModel, Convolution2dWithStridePaddingDilation) {
  const OpWork work = Model("aten::convolution",
                            Convolution("[2, 3, 32, 32]", "[8, 3, 3, 3]", Tensor("[8]", kFloat),
                                        "[2, 2]", "[1, 1]", "[2, 2]", "False", "[0, 0]", "1"));
  const uint64_t output_size = (32 + 2 * 1 - 2 * (3 - 1) - 1) / 2 + 1;
  EXPECT_EQ(work.flops, Some(2ull * 2 * 8 * output_size * output_size * 3 * 3 * 3));
  EXPECT_EQ(work.bytes, Some((2ull * 3 * 32 * 32 + 8 * 3 * 3 * 3 + 8) * 4 +
                             2ull * 8 * output_size * output_size * 4));
  // aten::_convolution has the same arguments first, then four flags.
  std::vector<Arg> args = Convolution("[2, 3, 32, 32]", "[8, 3, 3, 3]", Tensor("[8]", kFloat),
                                      "[2, 2]", "[1, 1]", "[2, 2]", "False", "[0, 0]", "1");
  for (const char* flag : {"False", "False", "True", "True"}) args.push_back(Scalar(flag));
  EXPECT_EQ(Model("aten::_convolution", args).flops, work.flops);
}

TEST(PerfModel, GroupedConvolutionWithOneValueForAllDims) {
  const OpWork work =
      Model("aten::convolution", Convolution("[4, 64, 28, 28]", "[128, 16, 3, 3]", None(), "[1]",
                                             "[1]", "[1]", "False", "[0]", "4"));
  const uint64_t output_size = (28 + 2 * 1 - 1 * (3 - 1) - 1) / 1 + 1;
  EXPECT_EQ(work.flops, Some(2ull * 4 * 128 * output_size * output_size * (64 / 4) * 3 * 3));
  EXPECT_EQ(work.bytes, Some((4ull * 64 * 28 * 28 + 128 * 16 * 3 * 3) * 4 +
                             4ull * 128 * output_size * output_size * 4));
}

TEST(PerfModel, DepthwiseConvolution) {
  const OpWork work =
      Model("aten::convolution", Convolution("[8, 32, 56, 56]", "[32, 1, 3, 3]", None(), "[2, 2]",
                                             "[1, 1]", "[1, 1]", "False", "[0, 0]", "32"));
  const uint64_t output_size = (56 + 2 * 1 - 1 * (3 - 1) - 1) / 2 + 1;
  EXPECT_EQ(work.flops, Some(2ull * 8 * 32 * output_size * output_size * 1 * 3 * 3));
}

TEST(PerfModel, StridedConvolution1d) {
  const OpWork work =
      Model("aten::convolution", Convolution("[16, 80, 3000]", "[384, 80, 3]", None(), "[2]", "[1]",
                                             "[1]", "False", "[0]", "1"));
  const uint64_t output_size = (3000 + 2 * 1 - 1 * (3 - 1) - 1) / 2 + 1;
  EXPECT_EQ(work.flops, Some(2ull * 16 * 384 * output_size * 80 * 3));
  EXPECT_EQ(work.bytes,
            Some((16ull * 80 * 3000 + 384 * 80 * 3) * 4 + 16ull * 384 * output_size * 4));
}

TEST(PerfModel, TransposedConvolution) {
  // weight [Cin 16, Cout/groups 4, 4, 4], 2 groups: 8 output channels.
  const OpWork work =
      Model("aten::convolution", Convolution("[1, 16, 8, 8]", "[16, 4, 4, 4]", None(), "[2, 2]",
                                             "[1, 1]", "[1, 1]", "True", "[1, 1]", "2"));
  const uint64_t output_size = (8 - 1) * 2 - 2 * 1 + 1 * (4 - 1) + 1 + 1;
  EXPECT_EQ(work.flops, Some(2ull * 1 * 16 * 8 * 8 * 4 * 4 * 4));
  EXPECT_EQ(work.bytes, Some((1ull * 16 * 8 * 8 + 16 * 4 * 4 * 4) * 4 +
                             1ull * (4 * 2) * output_size * output_size * 4));
}

TEST(PerfModel, CudnnConvolutionArgumentOrder) {
  // From tl_h100_falconsai_nsfw: cudnn_convolution(self, weight, padding, stride, dilation,
  // groups, benchmark, deterministic, allow_tf32).
  const OpWork work = Model("aten::cudnn_convolution",
                            {Tensor("[4, 3, 224, 224]", kBf16), Tensor("[768, 3, 16, 16]", kBf16),
                             ScalarList("[0, 0]"), ScalarList("[16, 16]"), ScalarList("[1, 1]"),
                             Scalar("1"), Scalar("False"), Scalar("False"), Scalar("True")});
  const uint64_t output_size = (224 + 2 * 0 - 1 * (16 - 1) - 1) / 16 + 1;
  EXPECT_EQ(work.flops, Some(2ull * 4 * 768 * output_size * output_size * 3 * 16 * 16));
  EXPECT_EQ(work.bytes, Some((4ull * 3 * 224 * 224 + 768 * 3 * 16 * 16) * 2 +
                             4ull * 768 * output_size * output_size * 2));
}

TEST(PerfModel, MiopenConvolutionArgumentOrder) {
  // From tl_mi300_ddp_resnet18: miopen_convolution(self, weight, bias, padding, stride, dilation,
  // groups, benchmark, deterministic).
  const OpWork work = Model("aten::miopen_convolution",
                            {Tensor("[512, 3, 224, 224]", kBf16), Tensor("[64, 3, 7, 7]", kBf16),
                             None(), ScalarList("[3, 3]"), ScalarList("[2, 2]"),
                             ScalarList("[1, 1]"), Scalar("1"), Scalar("False"), Scalar("False")});
  const uint64_t output_size = (224 + 2 * 3 - 1 * (7 - 1) - 1) / 2 + 1;
  EXPECT_EQ(work.flops, Some(2ull * 512 * 64 * output_size * output_size * 3 * 7 * 7));
  EXPECT_EQ(work.bytes, Some((512ull * 3 * 224 * 224 + 64 * 3 * 7 * 7) * 2 +
                             512ull * 64 * output_size * output_size * 2));
}

// ConvolutionBackward() is a recorded aten::convolution_backward(grad_output, input, weight,
// bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask), of
// tl_mi300_ddp_resnet18's first convolution.
std::vector<Arg> ConvolutionBackward(const std::string& output_mask) {
  return {Tensor("[512, 64, 112, 112]", kBf16),
          Tensor("[512, 3, 224, 224]", kBf16),
          Tensor("[64, 3, 7, 7]", kBf16),
          ScalarList("[0]"),
          ScalarList("[2, 2]"),
          ScalarList("[3, 3]"),
          ScalarList("[1, 1]"),
          Scalar("False"),
          ScalarList("[0, 0]"),
          Scalar("1"),
          ScalarList(output_mask)};
}

TEST(PerfModel, ConvolutionBackwardFollowsOutputMask) {
  const uint64_t forward_flops = 2ull * 512 * 64 * 112 * 112 * 3 * 7 * 7;
  const uint64_t read = (512ull * 64 * 112 * 112 + 512ull * 3 * 224 * 224 + 64 * 3 * 7 * 7) * 2;
  const OpWork weight_only =
      Model("aten::convolution_backward", ConvolutionBackward("[False, True, False]"));
  EXPECT_EQ(weight_only.flops, Some(forward_flops));
  EXPECT_EQ(weight_only.bytes, Some(read + 64ull * 3 * 7 * 7 * 2));
  const OpWork both =
      Model("aten::convolution_backward", ConvolutionBackward("[True, True, False]"));
  EXPECT_EQ(both.flops, Some(2 * forward_flops));
  EXPECT_EQ(both.bytes, Some(read + (512ull * 3 * 224 * 224 + 64 * 3 * 7 * 7) * 2));
  // output_mask not recorded: both gradients.
  std::vector<Arg> no_mask = ConvolutionBackward("");
  no_mask.pop_back();
  EXPECT_EQ(Model("aten::convolution_backward", no_mask).flops, Some(2 * forward_flops));
}

TEST(PerfModel, ConvolutionWithoutConcreteInputsHasNoModel) {
  // PyTorch before 2.1 (kineto_tbp_resnet50_nw0): the strides are unknown.
  const std::vector<Arg> args = {Tensor("[32, 3, 224, 224]", kFloat),
                                 Tensor("[64, 3, 7, 7]", kFloat),
                                 None(),
                                 {"[]", "GenericList", ""},
                                 {"[]", "GenericList", ""},
                                 {"[]", "GenericList", ""},
                                 {"[]", "Bool", ""},
                                 {"[]", "GenericList", ""},
                                 {"[]", "Int", ""}};
  const OpWork work = Model("aten::convolution", args, /*concrete=*/false);
  EXPECT_EQ(work.flops, kNone);
  EXPECT_EQ(work.bytes, kNone);
  EXPECT_EQ(work.dtype, DType::kFp32);
}

TEST(PerfModel, ConvolutionWithBadParametersHasNoModel) {
  auto flops = [](const std::string& weight, const std::string& stride, const std::string& groups) {
    return Model("aten::convolution", Convolution("[2, 3, 32, 32]", weight, None(), stride,
                                                  "[0, 0]", "[1, 1]", "False", "[0, 0]", groups))
        .flops;
  };
  EXPECT_EQ(flops("[8, 3, 3, 3]", "[0, 0]", "1"), kNone);     // stride 0
  EXPECT_EQ(flops("[8, 3, 3, 3]", "[1, 1, 1]", "1"), kNone);  // 3 strides for 2 dims
  EXPECT_EQ(flops("[8, 3, 3, 3]", "[1, 1]", "0"), kNone);     // no groups
  EXPECT_EQ(flops("[8, 3, 3, 3]", "[1, 1]", "3"), kNone);     // 3 channels are not 3 groups of 3
  EXPECT_EQ(flops("[8, 3, 33, 33]", "[1, 1]", "1"), kNone);   // kernel larger than the input
  EXPECT_EQ(flops("[8, 3, 3]", "[1, 1]", "1"), kNone);        // weight of another rank
  EXPECT_EQ(flops("[8, 3, 0, 0]", "[1, 1]", "1"), kNone);     // an empty kernel
  // Output sizes beyond 64 bits, or below zero.
  EXPECT_EQ(
      Model("aten::convolution", Convolution("[1, 1, 8]", "[1, 1, 1]", None(), "[1]",
                                             "[9223372036854775807]", "[1]", "False", "[0]", "1"))
          .flops,
      kNone);
  EXPECT_EQ(Model("aten::convolution", Convolution("[1, 1, 0]", "[1, 1, 1]", None(), "[1]", "[0]",
                                                   "[1]", "True", "[0]", "1"))
                .flops,
            kNone);
  // A transposed output size of (1 - 1)·1 - 2·1 + 1·(1 - 1) + 1 + 1 = 0.
  EXPECT_EQ(Model("aten::convolution", Convolution("[1, 1, 1]", "[1, 1, 1]", None(), "[1]", "[1]",
                                                   "[1]", "True", "[1]", "1"))
                .flops,
            kNone);
}

// --- Memory-bound ops ---

TEST(PerfModel, ElementwiseWritesTheBroadcastShape) {
  const OpWork work =
      Model("aten::add", {Tensor("[8, 1, 16]", kFloat), Tensor("[4, 1]", kFloat), Scalar("1")});
  EXPECT_EQ(work.flops, kNone);
  EXPECT_EQ(work.bytes, Some((8ull * 1 * 16 + 4 * 1) * 4 + 8ull * 4 * 16 * 4));
  // A Python number is a 0-d double tensor (tl_h100_timesformer).
  const OpWork scaled =
      Model("aten::mul", {Tensor("[3136, 12, 8, 8]", kBf16), Tensor("[]", "double")});
  EXPECT_EQ(scaled.bytes, Some(3136ull * 12 * 8 * 8 * 2 + 8 + 3136ull * 12 * 8 * 8 * 2));
  EXPECT_EQ(scaled.dtype, DType::kBf16);
  const OpWork mismatched =
      Model("aten::add", {Tensor("[3, 4]", kFloat), Tensor("[5]", kFloat), Scalar("1")});
  EXPECT_EQ(mismatched.bytes, kNone);
}

TEST(PerfModel, ReductionCountsWhatItReads) {
  const OpWork work =
      Model("aten::sum", {Tensor("[512, 1000]", kBf16), ScalarList("[0]"), Scalar("True"), None()});
  EXPECT_EQ(work.flops, kNone);
  EXPECT_EQ(work.bytes, Some(512ull * 1000 * 2));
}

TEST(PerfModel, LayerNormForwardAndBackward) {
  const OpWork forward =
      Model("aten::native_layer_norm",
            {Tensor("[4, 197, 768]", kBf16), ScalarList("[768]"), Tensor("[768]", kBf16),
             Tensor("[768]", kBf16), Scalar("9.9999999999999998e-13")});
  EXPECT_EQ(forward.flops, kNone);
  EXPECT_EQ(forward.bytes, Some((4ull * 197 * 768 + 768 + 768) * 2 + 4ull * 197 * 768 * 2));
  // (grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)
  const OpWork backward =
      Model("aten::native_layer_norm_backward",
            {Tensor("[4, 197, 768]", kBf16), Tensor("[4, 197, 768]", kBf16), ScalarList("[768]"),
             Tensor("[4, 197, 1]", kFloat), Tensor("[4, 197, 1]", kFloat), Tensor("[768]", kBf16),
             Tensor("[768]", kBf16), ScalarList("[True, True, True]")});
  EXPECT_EQ(backward.bytes, Some((2 * (4ull * 197 * 768) + 768 + 768) * 2 +
                                 2 * (4ull * 197 * 1) * 4 + 4ull * 197 * 768 * 2));
}

TEST(PerfModel, Softmax) {
  const OpWork work = Model("aten::_softmax",
                            {Tensor("[8, 12, 3137, 3137]", kBf16), Scalar("-1"), Scalar("False")});
  EXPECT_EQ(work.flops, kNone);
  EXPECT_EQ(work.bytes, Some(8ull * 12 * 3137 * 3137 * 2 + 8ull * 12 * 3137 * 3137 * 2));
}

TEST(PerfModel, CopyBetweenDtypes) {
  // kineto_tbp_resnet50_nw0: an image's uint8 pixels into a float tensor.
  const OpWork work = Model(
      "aten::copy_",
      {Tensor("[3, 224, 224]", kFloat), Tensor("[3, 224, 224]", "unsigned char"), Scalar("False")});
  EXPECT_EQ(work.flops, kNone);
  EXPECT_EQ(work.bytes, Some(3ull * 224 * 224 * 1 + 3ull * 224 * 224 * 4));
  EXPECT_EQ(work.dtype, DType::kFp32);
}

// --- Malformed shapes ---

TEST(PerfModel, ShapesThatDoNotFitGiveNoFigures) {
  auto mm = [](const std::vector<Arg>& args) { return Model("aten::mm", args); };
  // Too few entries.
  EXPECT_EQ(mm({Tensor("[128, 5]", kFloat)}).bytes, kNone);
  // Inner sizes differ.
  EXPECT_EQ(mm({Tensor("[128, 5]", kFloat), Tensor("[6, 128]", kFloat)}).flops, kNone);
  // Operands of the wrong rank, or not tensors.
  EXPECT_EQ(mm({Tensor("[2, 128, 5]", kFloat), Tensor("[5, 128]", kFloat)}).flops, kNone);
  EXPECT_EQ(mm({Scalar("1"), Tensor("[5, 128]", kFloat)}).flops, kNone);
  EXPECT_EQ(Model("aten::bmm", {Tensor("[2, 4, 5]", kFloat), Tensor("[3, 5, 4]", kFloat)}).flops,
            kNone);
  // Negative dims.
  const OpWork negative = mm({Tensor("[-128, 5]", kFloat), Tensor("[5, 128]", kFloat)});
  EXPECT_EQ(negative.flops, kNone);
  EXPECT_EQ(negative.bytes, kNone);
  EXPECT_EQ(Model("aten::relu", {Tensor("[-1]", kFloat)}).bytes, kNone);
  // Products beyond 64 bits.
  const OpWork overflow =
      mm({Tensor("[4294967296, 4294967296]", kFloat), Tensor("[4294967296, 4294967296]", kFloat)});
  EXPECT_EQ(overflow.flops, kNone);
  EXPECT_EQ(overflow.bytes, kNone);
  EXPECT_EQ(Model("aten::exp", {Tensor("[9223372036854775807, 2]", kFloat)}).bytes, kNone);
  // No tensor at all.
  EXPECT_EQ(Model("aten::sum", {Scalar("1")}).bytes, kNone);
  EXPECT_EQ(Model("aten::copy_", {Tensor("[4]", kFloat), Scalar("1")}).bytes, kNone);
}

TEST(PerfModel, ModelOpOfNoModel) {
  const OpShapes shapes{{{128, 5}}, {"float"}, {}};
  const OpWork work = ModelOp(OpModel::kNone, shapes);
  EXPECT_EQ(work.flops, kNone);
  EXPECT_EQ(work.bytes, kNone);
}

TEST(PerfModel, ParseOpShapes) {
  const std::optional<OpShapes> shapes = ParseOpShapes(
      "[[1, 141, 512], [], [512]]\x1f[\"c10::BFloat16\", \"ScalarList\", \"c10::BFloat16\"]"
      "\x1f[\"\", \"[512]\", \"\"]");
  ASSERT_TRUE(shapes.has_value());
  EXPECT_EQ(shapes->dims, (std::vector<std::vector<int64_t>>{{1, 141, 512}, {}, {512}}));
  EXPECT_EQ(shapes->types,
            (std::vector<std::string>{"c10::BFloat16", "ScalarList", "c10::BFloat16"}));
  EXPECT_EQ(shapes->concrete, (std::vector<std::string>{"", "[512]", ""}));
}

TEST(PerfModel, ParseOpShapesTensorListsAreNotTensors) {
  // A TensorList's dims are a list of lists, and its type no element type: not a tensor.
  const std::optional<OpShapes> shapes =
      ParseOpShapes("[[[2, 3], [4]], [2]]\x1f[\"TensorList\", \"float\"]\x1f");
  ASSERT_TRUE(shapes.has_value());
  EXPECT_EQ(shapes->dims, (std::vector<std::vector<int64_t>>{{}, {2}}));
  EXPECT_EQ(shapes->types, (std::vector<std::string>{"TensorList", "float"}));
  EXPECT_TRUE(shapes->concrete.empty());
  EXPECT_EQ(ModelOp(OpModel::kElementwise, *shapes).bytes, Some(2ull * 4 + 2 * 4));
}

TEST(PerfModel, ParseOpShapesInputsAreTheEntriesOfBothLists) {
  // A longer list's extra entries are no inputs (docs/perf-models.md, as the oracle reads them).
  const std::optional<OpShapes> shapes = ParseOpShapes("[[1], [2]]\x1f[\"float\"]\x1f");
  ASSERT_TRUE(shapes.has_value());
  EXPECT_EQ(shapes->dims, (std::vector<std::vector<int64_t>>{{1}}));
}

TEST(PerfModel, ParseOpShapesMalformed) {
  for (const char* raw : {
           "",                                             // nothing
           "[[1]]",                                        // no separators
           "[[1]]\x1f[\"float\"]",                         // one separator
           "{}\x1f[\"float\"]\x1f",                        // dims not a list
           "[[1]]\x1f\"float\"\x1f",                       // types not a list
           "[[1]]\x1f\x1f",                                // types missing
           "[[1]\x1f[\"float\"]\x1f",                      // not JSON
           "[[18446744073709551615]]\x1f[\"float\"]\x1f",  // a size beyond int64
           "[[1e30]]\x1f[\"float\"]\x1f",                  // a size read as a float
           "[[1.5], [2]]\x1f[\"float\", \"float\"]\x1f",   // a tensor whose sizes are not sizes
           "[[true]]\x1f[\"float\"]\x1f",                  // ... nor is true
       }) {
    EXPECT_FALSE(ParseOpShapes(raw).has_value()) << raw;
  }
  // Concrete Inputs that are no list are not recorded; a list's entries that are not strings
  // are "" (not recorded), as are those past its end.
  const std::optional<OpShapes> no_list = ParseOpShapes("[[1]]\x1f[\"float\"]\x1f{");
  ASSERT_TRUE(no_list.has_value());
  EXPECT_TRUE(no_list->concrete.empty());
  const std::optional<OpShapes> mixed =
      ParseOpShapes("[[1], []]\x1f[\"float\", \"Scalar\"]\x1f[1, \"2\", \"extra\"]");
  ASSERT_TRUE(mixed.has_value());
  EXPECT_EQ(mixed->concrete, (std::vector<std::string>{"", "2", "extra"}));
  // A type that is not a string is no tensor's.
  const std::optional<OpShapes> untyped = ParseOpShapes("[[1]]\x1f[7]\x1f");
  ASSERT_TRUE(untyped.has_value());
  EXPECT_EQ(untyped->types, std::vector<std::string>{""});
}

// --- Element types and names ---

TEST(PerfModel, ElementTypes) {
  EXPECT_EQ(ElementSize("double"), 8u);
  EXPECT_EQ(ElementSize("c10::BFloat16"), 2u);
  EXPECT_EQ(ElementSize("c10::Float8_e5m2fnuz"), 1u);
  EXPECT_EQ(ElementSize("long int"), 8u);
  EXPECT_EQ(ElementSize("long"), 8u);
  EXPECT_EQ(ElementSize("Scalar"), std::nullopt);
  EXPECT_EQ(ElementSize(""), std::nullopt);
  EXPECT_EQ(ElementDType("float"), DType::kFp32);
  EXPECT_EQ(ElementDType("c10::Half"), DType::kFp16);
  EXPECT_EQ(ElementDType("c10::Float8_e4m3fnuz"), DType::kFp8);
  EXPECT_EQ(ElementDType("signed char"), DType::kInt8);
  EXPECT_EQ(ElementDType("long int"), DType::kUnknown);
  EXPECT_EQ(ElementDType("bool"), DType::kUnknown);
  EXPECT_EQ(ElementDType("GenericList"), DType::kUnknown);
}

TEST(PerfModel, OpModelOfNames) {
  EXPECT_EQ(OpModelOf("aten::mm"), OpModel::kMm);
  EXPECT_EQ(OpModelOf("aten::_scaled_mm"), OpModel::kScaledMm);
  EXPECT_EQ(OpModelOf("aten::_efficient_attention_backward"), OpModel::kEfficientBackward);
  EXPECT_EQ(OpModelOf("aten::convolution"), OpModel::kConvolution);
  EXPECT_EQ(OpModelOf("aten::_convolution"), OpModel::kConvolution);
  EXPECT_EQ(OpModelOf("aten::miopen_convolution"), OpModel::kMiopenConvolution);
  EXPECT_EQ(OpModelOf("aten::masked_fill_"), OpModel::kElementwise);
  EXPECT_EQ(OpModelOf("aten::linalg_vector_norm"), OpModel::kReduction);
  EXPECT_EQ(OpModelOf("aten::native_layer_norm_backward"), OpModel::kNormalization);
  EXPECT_EQ(OpModelOf("aten::_fused_rms_norm"), OpModel::kNormalization);
  EXPECT_EQ(OpModelOf("aten::_log_softmax_backward_data"), OpModel::kSoftmax);
  EXPECT_EQ(OpModelOf("aten::copy_"), OpModel::kCopy);
  // Not listed: they count through the ops they call, or have no model.
  for (const char* name : {"aten::linear", "aten::matmul", "aten::cudnn_convolution_transpose",
                           "aten::to", "mm", "aten::mm ", "", "ProfilerStep#3"}) {
    EXPECT_EQ(OpModelOf(name), OpModel::kNone) << name;
  }
}

TEST(PerfModel, FamilyOf) {
  EXPECT_EQ(FamilyOf(OpModel::kNone), OpModelFamily::kNone);
  EXPECT_EQ(FamilyOf(OpModel::kBaddbmm), OpModelFamily::kGemm);
  EXPECT_EQ(FamilyOf(OpModel::kScaledMm), OpModelFamily::kGemm);
  EXPECT_EQ(FamilyOf(OpModel::kSdpaCudnnBackward), OpModelFamily::kAttention);
  EXPECT_EQ(FamilyOf(OpModel::kCudnnConvolution), OpModelFamily::kConvolution);
  EXPECT_EQ(FamilyOf(OpModel::kConvolutionBackward), OpModelFamily::kConvolution);
  for (OpModel memory : {OpModel::kElementwise, OpModel::kReduction, OpModel::kNormalization,
                         OpModel::kSoftmax, OpModel::kCopy}) {
    EXPECT_EQ(FamilyOf(memory), OpModelFamily::kMemory);
  }
}

}  // namespace
}  // namespace tracefuse
