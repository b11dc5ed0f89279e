// OpModelOf() and FamilyOf() (chunk_parser.h): which perf model applies to a cpu_op, by its exact
// name, as docs/perf-models.md lists them.
#include <iterator>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "tracefuse/parse/chunk_parser.h"

namespace tracefuse {
namespace {

using NamedModel = std::pair<std::string_view, OpModel>;

// kNamedModels is docs/perf-models.md's tables, in their order: the op names with a model.
constexpr NamedModel kNamedModels[] = {
    // GEMM
    {"aten::mm", OpModel::kMm},
    {"aten::addmm", OpModel::kAddmm},
    {"aten::bmm", OpModel::kBmm},
    {"aten::baddbmm", OpModel::kBaddbmm},
    {"aten::_scaled_mm", OpModel::kScaledMm},
    // attention
    {"aten::_scaled_dot_product_flash_attention", OpModel::kSdpaFlash},
    {"aten::_scaled_dot_product_efficient_attention", OpModel::kSdpaEfficient},
    {"aten::_scaled_dot_product_cudnn_attention", OpModel::kSdpaCudnn},
    {"aten::_flash_attention_forward", OpModel::kFlashForward},
    {"aten::_efficient_attention_forward", OpModel::kEfficientForward},
    {"aten::_scaled_dot_product_flash_attention_backward", OpModel::kSdpaFlashBackward},
    {"aten::_scaled_dot_product_efficient_attention_backward", OpModel::kSdpaEfficientBackward},
    {"aten::_scaled_dot_product_cudnn_attention_backward", OpModel::kSdpaCudnnBackward},
    {"aten::_flash_attention_backward", OpModel::kFlashBackward},
    {"aten::_efficient_attention_backward", OpModel::kEfficientBackward},
    // convolution
    {"aten::convolution", OpModel::kConvolution},
    {"aten::_convolution", OpModel::kConvolution},
    {"aten::cudnn_convolution", OpModel::kCudnnConvolution},
    {"aten::miopen_convolution", OpModel::kMiopenConvolution},
    {"aten::convolution_backward", OpModel::kConvolutionBackward},
    // element-wise
    {"aten::add", OpModel::kElementwise},
    {"aten::add_", OpModel::kElementwise},
    {"aten::sub", OpModel::kElementwise},
    {"aten::sub_", OpModel::kElementwise},
    {"aten::mul", OpModel::kElementwise},
    {"aten::mul_", OpModel::kElementwise},
    {"aten::div", OpModel::kElementwise},
    {"aten::div_", OpModel::kElementwise},
    {"aten::neg", OpModel::kElementwise},
    {"aten::exp", OpModel::kElementwise},
    {"aten::log", OpModel::kElementwise},
    {"aten::sqrt", OpModel::kElementwise},
    {"aten::rsqrt", OpModel::kElementwise},
    {"aten::pow", OpModel::kElementwise},
    {"aten::abs", OpModel::kElementwise},
    {"aten::relu", OpModel::kElementwise},
    {"aten::relu_", OpModel::kElementwise},
    {"aten::gelu", OpModel::kElementwise},
    {"aten::silu", OpModel::kElementwise},
    {"aten::silu_", OpModel::kElementwise},
    {"aten::sigmoid", OpModel::kElementwise},
    {"aten::tanh", OpModel::kElementwise},
    {"aten::where", OpModel::kElementwise},
    {"aten::clamp", OpModel::kElementwise},
    {"aten::clamp_", OpModel::kElementwise},
    {"aten::masked_fill", OpModel::kElementwise},
    {"aten::masked_fill_", OpModel::kElementwise},
    {"aten::gelu_backward", OpModel::kElementwise},
    {"aten::silu_backward", OpModel::kElementwise},
    {"aten::threshold_backward", OpModel::kElementwise},
    {"aten::sigmoid_backward", OpModel::kElementwise},
    {"aten::tanh_backward", OpModel::kElementwise},
    // reduction
    {"aten::sum", OpModel::kReduction},
    {"aten::mean", OpModel::kReduction},
    {"aten::amax", OpModel::kReduction},
    {"aten::amin", OpModel::kReduction},
    {"aten::argmax", OpModel::kReduction},
    {"aten::argmin", OpModel::kReduction},
    {"aten::var", OpModel::kReduction},
    {"aten::std", OpModel::kReduction},
    {"aten::norm", OpModel::kReduction},
    {"aten::linalg_vector_norm", OpModel::kReduction},
    {"aten::logsumexp", OpModel::kReduction},
    // normalisation: the backward of _native_batch_norm_legit(_no_training) is
    // native_batch_norm_backward (native_functions.yaml has no backward of their own)
    {"aten::native_layer_norm", OpModel::kNormalization},
    {"aten::native_layer_norm_backward", OpModel::kNormalization},
    {"aten::native_group_norm", OpModel::kNormalization},
    {"aten::native_group_norm_backward", OpModel::kNormalization},
    {"aten::native_batch_norm", OpModel::kNormalization},
    {"aten::native_batch_norm_backward", OpModel::kNormalization},
    {"aten::_native_batch_norm_legit", OpModel::kNormalization},
    {"aten::_native_batch_norm_legit_no_training", OpModel::kNormalization},
    {"aten::cudnn_batch_norm", OpModel::kNormalization},
    {"aten::cudnn_batch_norm_backward", OpModel::kNormalization},
    {"aten::miopen_batch_norm", OpModel::kNormalization},
    {"aten::miopen_batch_norm_backward", OpModel::kNormalization},
    {"aten::_fused_rms_norm", OpModel::kNormalization},
    {"aten::_fused_rms_norm_backward", OpModel::kNormalization},
    // softmax
    {"aten::_softmax", OpModel::kSoftmax},
    {"aten::_log_softmax", OpModel::kSoftmax},
    {"aten::_softmax_backward_data", OpModel::kSoftmax},
    {"aten::_log_softmax_backward_data", OpModel::kSoftmax},
    // copy
    {"aten::copy_", OpModel::kCopy},
};

// ModelsByName() is kNamedModels by name, built once. The parser asks it of every cpu_op whose
// args it may read, so a hash lookup rather than a search of sorted names.
const absl::flat_hash_map<std::string_view, OpModel>& ModelsByName() {
  static const auto* const by_name = new absl::flat_hash_map<std::string_view, OpModel>(
      std::begin(kNamedModels), std::end(kNamedModels));
  return *by_name;
}

}  // namespace

OpModel OpModelOf(std::string_view name) {
  const auto& models = ModelsByName();
  const auto it = models.find(name);
  return it != models.end() ? it->second : OpModel::kNone;
}

OpModelFamily FamilyOf(OpModel model) {
  switch (model) {
    case OpModel::kNone:
      return OpModelFamily::kNone;
    case OpModel::kMm:
    case OpModel::kAddmm:
    case OpModel::kBmm:
    case OpModel::kBaddbmm:
    case OpModel::kScaledMm:
      return OpModelFamily::kGemm;
    case OpModel::kSdpaFlash:
    case OpModel::kSdpaEfficient:
    case OpModel::kSdpaCudnn:
    case OpModel::kFlashForward:
    case OpModel::kEfficientForward:
    case OpModel::kSdpaFlashBackward:
    case OpModel::kSdpaEfficientBackward:
    case OpModel::kSdpaCudnnBackward:
    case OpModel::kFlashBackward:
    case OpModel::kEfficientBackward:
      return OpModelFamily::kAttention;
    case OpModel::kConvolution:
    case OpModel::kCudnnConvolution:
    case OpModel::kMiopenConvolution:
    case OpModel::kConvolutionBackward:
      return OpModelFamily::kConvolution;
    case OpModel::kElementwise:
    case OpModel::kReduction:
    case OpModel::kNormalization:
    case OpModel::kSoftmax:
    case OpModel::kCopy:
      return OpModelFamily::kMemory;
  }
  return OpModelFamily::kNone;
}

}  // namespace tracefuse
