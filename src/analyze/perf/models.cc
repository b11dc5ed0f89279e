// Perf models (perf_model.h): docs/perf-models.md gives every formula; each family below cites its
// source. All counts are uint64 with overflow checks (Count), because a hostile trace may record
// dims whose products exceed 64 bits: such an op gets no figures, never a wrapped number.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracefuse/analyze/perf_model.h"

namespace tracefuse {
namespace {

using Dims = std::vector<int64_t>;

// Count is a uint64 count of FLOPs, elements or bytes whose arithmetic turns it invalid on
// overflow instead of wrapping.
class Count {
 public:
  explicit Count(uint64_t value) : value_(value) {}

  static Count Invalid() {
    Count count(0);
    count.valid_ = false;
    return count;
  }

  // The value, nullopt once an operation overflowed or an operand was invalid.
  std::optional<uint64_t> value() const {
    return valid_ ? std::optional<uint64_t>(value_) : std::nullopt;
  }

  friend Count operator*(Count a, Count b) {
    uint64_t product;
    if (!a.valid_ || !b.valid_ || __builtin_mul_overflow(a.value_, b.value_, &product)) {
      return Invalid();
    }
    return Count(product);
  }
  friend Count operator+(Count a, Count b) {
    uint64_t sum;
    if (!a.valid_ || !b.valid_ || __builtin_add_overflow(a.value_, b.value_, &sum)) {
      return Invalid();
    }
    return Count(sum);
  }
  // Invalid below zero: a count is never negative.
  friend Count operator-(Count a, Count b) {
    uint64_t difference;
    if (!a.valid_ || !b.valid_ || __builtin_sub_overflow(a.value_, b.value_, &difference)) {
      return Invalid();
    }
    return Count(difference);
  }
  // Floor division; invalid by zero.
  friend Count operator/(Count a, Count b) {
    if (!a.valid_ || !b.valid_ || b.value_ == 0) return Invalid();
    return Count(a.value_ / b.value_);
  }

 private:
  uint64_t value_;
  bool valid_ = true;
};

// Dim() is a recorded size as a Count: a negative size is no size, and invalidates what uses it.
Count Dim(int64_t size) {
  return size >= 0 ? Count(static_cast<uint64_t>(size)) : Count::Invalid();
}

Count Numel(const Dims& dims) {
  Count numel(1);  // a 0-d tensor holds one element
  for (int64_t size : dims) numel = numel * Dim(size);
  return numel;
}

struct ElementType {
  std::string_view name;  // as "Input type" records it
  uint32_t size;
  DType dtype;
};

// kElementTypes is docs/perf-models.md, "Shapes and element types": the types of tensors.
constexpr ElementType kElementTypes[] = {
    {"double", 8, DType::kFp64},
    {"float", 4, DType::kFp32},
    {"c10::BFloat16", 2, DType::kBf16},
    {"c10::Half", 2, DType::kFp16},
    {"c10::Float8_e4m3fn", 1, DType::kFp8},
    {"c10::Float8_e4m3fnuz", 1, DType::kFp8},
    {"c10::Float8_e5m2", 1, DType::kFp8},
    {"c10::Float8_e5m2fnuz", 1, DType::kFp8},
    {"signed char", 1, DType::kInt8},
    // The peak table has columns for none of these.
    {"unsigned char", 1, DType::kUnknown},
    {"short int", 2, DType::kUnknown},
    {"int", 4, DType::kUnknown},
    {"long int", 8, DType::kUnknown},
    {"long", 8, DType::kUnknown},  // int64 as some builds name it (hta_trace_diff_control)
    {"bool", 1, DType::kUnknown},
};

const ElementType* FindElementType(std::string_view input_type) {
  for (const ElementType& type : kElementTypes) {
    if (type.name == input_type) return &type;
  }
  return nullptr;
}

// --- Reading the recorded arguments ---

// TensorDims() is the dims of input `i` when it is a tensor; nullptr when it is not, or when the
// op recorded fewer inputs.
const Dims* TensorDims(const OpShapes& shapes, size_t i) {
  if (i >= shapes.dims.size() || i >= shapes.types.size()) return nullptr;
  return FindElementType(shapes.types[i]) != nullptr ? &shapes.dims[i] : nullptr;
}

// TensorBytes() is the size of input `i` in bytes (a tensor's numel at its element size).
Count TensorBytes(const OpShapes& shapes, size_t i) {
  return Numel(shapes.dims[i]) * Count(FindElementType(shapes.types[i])->size);
}

// BytesRead() is every tensor input read once, at its own element size.
Count BytesRead(const OpShapes& shapes) {
  Count bytes(0);
  for (size_t i = 0; i < shapes.dims.size(); ++i) {
    if (TensorDims(shapes, i) != nullptr) bytes = bytes + TensorBytes(shapes, i);
  }
  return bytes;
}

// FirstTensorType() is the op's dtype: its first tensor input's element type.
const ElementType* FirstTensorType(const OpShapes& shapes) {
  for (size_t i = 0; i < shapes.dims.size(); ++i) {
    if (TensorDims(shapes, i) != nullptr) return FindElementType(shapes.types[i]);
  }
  return nullptr;
}

// ReadPlusWritten() is the bytes of an op that reads its tensor inputs and writes `written`
// elements at its dtype's size.
Count ReadPlusWritten(const OpShapes& shapes, Count written) {
  const ElementType* dtype = FirstTensorType(shapes);
  if (dtype == nullptr) return Count::Invalid();
  return BytesRead(shapes) + written * Count(dtype->size);
}

// Concrete() is the recorded value of scalar input `i` ("[2, 2]", "True"); "" when the trace
// records none (PyTorch before 2.1) or the op fewer inputs.
std::string_view Concrete(const OpShapes& shapes, size_t i) {
  return i < shapes.concrete.size() ? std::string_view(shapes.concrete[i]) : std::string_view();
}

// TrimSpaces() is `text` without its leading and trailing spaces.
std::string_view TrimSpaces(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

std::optional<int64_t> ParseInt(std::string_view text) {
  text = TrimSpaces(text);
  if (text.empty()) return std::nullopt;
  int64_t value;
  const char* end = text.data() + text.size();
  auto [parsed_to, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || parsed_to != end) return std::nullopt;
  return value;
}

std::optional<bool> ParseBool(std::string_view text) {
  if (text == "True") return true;
  if (text == "False") return false;
  return std::nullopt;
}

// ListItems() splits a Concrete Input list, "[2, 2]", into its items ("2", "2"); nullopt for
// anything but a non-empty list.
std::optional<std::vector<std::string_view>> ListItems(std::string_view text) {
  if (text.size() < 3 || text.front() != '[' || text.back() != ']') return std::nullopt;
  text = text.substr(1, text.size() - 2);
  std::vector<std::string_view> items;
  for (;;) {
    const size_t comma = text.find(',');
    items.push_back(TrimSpaces(text.substr(0, comma)));
    if (comma == std::string_view::npos) return items;
    text.remove_prefix(comma + 1);
  }
}

std::optional<std::vector<int64_t>> ParseIntList(std::string_view text) {
  std::optional<std::vector<std::string_view>> items = ListItems(text);
  if (!items) return std::nullopt;
  std::vector<int64_t> values;
  for (std::string_view item : *items) {
    std::optional<int64_t> value = ParseInt(item);
    if (!value) return std::nullopt;
    values.push_back(*value);
  }
  return values;
}

std::optional<std::vector<bool>> ParseBoolList(std::string_view text) {
  std::optional<std::vector<std::string_view>> items = ListItems(text);
  if (!items) return std::nullopt;
  std::vector<bool> values;
  for (std::string_view item : *items) {
    std::optional<bool> value = ParseBool(item);
    if (!value) return std::nullopt;
    values.push_back(*value);
  }
  return values;
}

// --- The models ---

// Figures is what a model gives: FLOPs (nullopt for memory-bound ops) and bytes moved.
struct Figures {
  std::optional<Count> flops;
  Count bytes;
};

// GemmArgs says where a GEMM's operands are: A at `a`, B right after it.
struct GemmArgs {
  size_t a;
  bool batched;  // A [b, M, K], B [b, K, N] rather than A [M, K], B [K, N]
};

GemmArgs GemmArgsOf(OpModel model) {
  switch (model) {
    case OpModel::kAddmm:  // (self: the bias, mat1, mat2, ...)
      return {1, false};
    case OpModel::kBmm:  // (self, mat2)
      return {0, true};
    case OpModel::kBaddbmm:  // (self, batch1, batch2, ...)
      return {1, true};
    default:  // kMm (self, mat2); kScaledMm (self, mat2, scale_a, scale_b, ...)
      return {0, false};
  }
}

// GemmFigures(): C = A·B does M·N dot products of K terms, a multiply and an add each:
// 2·b·M·N·K FLOPs, b·M·N elements written. The recorded dims are the logical shapes, so a
// transposed operand needs nothing special.
std::optional<Figures> GemmFigures(OpModel model, const OpShapes& shapes) {
  const GemmArgs args = GemmArgsOf(model);
  const Dims* a = TensorDims(shapes, args.a);
  const Dims* b = TensorDims(shapes, args.a + 1);
  const size_t rank = args.batched ? 3 : 2;
  if (a == nullptr || b == nullptr || a->size() != rank || b->size() != rank) return std::nullopt;
  const size_t batch_dims = rank - 2;
  const int64_t m = (*a)[batch_dims], k = (*a)[batch_dims + 1];
  const int64_t k_of_b = (*b)[batch_dims], n = (*b)[batch_dims + 1];
  if (k != k_of_b || (args.batched && (*a)[0] != (*b)[0])) return std::nullopt;
  const Count batch = args.batched ? Dim((*a)[0]) : Count(1);
  const Count written = batch * Dim(m) * Dim(n);
  return Figures{Count(2) * written * Dim(k), ReadPlusWritten(shapes, written)};
}

enum class Pass { kForward, kBackward };
enum class Layout { kBHLD, kBLHD };  // q, k, v as [batch, heads, length, head dim] or [B, L, H, D]
enum class CausalFlag { kIsCausal, kMaskType };  // `bool is_causal`, `int custom_mask_type`

// AttentionArgs says where an attention op's arguments are (native_functions.yaml's signatures).
struct AttentionArgs {
  Pass pass;
  size_t q;  // k and v follow
  Layout layout;
  size_t causal;  // the Concrete Input that says whether the attention is causal
  CausalFlag flag;
};

AttentionArgs AttentionArgsOf(OpModel model) {
  switch (model) {
    case OpModel::kSdpaFlash:
      return {Pass::kForward, /*q=*/0, Layout::kBHLD, /*causal=*/4, CausalFlag::kIsCausal};
    case OpModel::kSdpaEfficient:
    case OpModel::kSdpaCudnn:
      return {Pass::kForward, /*q=*/0, Layout::kBHLD, /*causal=*/6, CausalFlag::kIsCausal};
    case OpModel::kFlashForward:
      return {Pass::kForward, /*q=*/0, Layout::kBLHD, /*causal=*/8, CausalFlag::kIsCausal};
    case OpModel::kEfficientForward:
      return {Pass::kForward, /*q=*/0, Layout::kBLHD, /*causal=*/9, CausalFlag::kMaskType};
    case OpModel::kSdpaFlashBackward:
    case OpModel::kSdpaEfficientBackward:
      return {Pass::kBackward, /*q=*/1, Layout::kBHLD, /*causal=*/11, CausalFlag::kIsCausal};
    case OpModel::kSdpaCudnnBackward:
      return {Pass::kBackward, /*q=*/1, Layout::kBHLD, /*causal=*/14, CausalFlag::kIsCausal};
    case OpModel::kFlashBackward:
      return {Pass::kBackward, /*q=*/1, Layout::kBLHD, /*causal=*/11, CausalFlag::kIsCausal};
    default:  // kEfficientBackward
      return {Pass::kBackward, /*q=*/1, Layout::kBLHD, /*causal=*/14, CausalFlag::kMaskType};
  }
}

// AttentionDims is one of q, k, v in the [B, H, L, D] order whatever its layout.
struct AttentionDims {
  int64_t batch, heads, length, head_dim;
};

std::optional<AttentionDims> ReadAttentionDims(const Dims* dims, Layout layout) {
  if (dims == nullptr || dims->size() != 4) return std::nullopt;  // varlen calls pack q in 3-D
  const Dims& d = *dims;
  if (layout == Layout::kBHLD) return AttentionDims{d[0], d[1], d[2], d[3]};
  return AttentionDims{d[0], d[2], d[1], d[3]};
}

bool IsCausal(const OpShapes& shapes, const AttentionArgs& args) {
  const std::string_view value = Concrete(shapes, args.causal);
  if (args.flag == CausalFlag::kIsCausal) return value == "True";
  const std::optional<int64_t> mask_type = ParseInt(value);  // 1, 2: causal from top left, bottom
  return mask_type.has_value() && *mask_type != 0;
}

// AttentionFigures(): per query head, S = Q·Kᵀ is 2·Lq·Lk·D FLOPs and O = P·V 2·Lq·Lk·Dv
// (grouped-query attention shares key heads, not the work). Causal attention computes half the
// score matrix. The backward is 2.5 times the forward: five GEMMs (recomputed S, dV, dP, dQ, dK)
// to the forward's two, as FlashAttention counts it (Dao et al., "FlashAttention: Fast and
// Memory-Efficient Exact Attention with IO-Awareness", 2022; flops() in the Dao-AILab/
// flash-attention repository's benchmarks/benchmark_flash_attention.py: bwd = 2.5 * fwd).
std::optional<Figures> AttentionFigures(OpModel model, const OpShapes& shapes) {
  const AttentionArgs args = AttentionArgsOf(model);
  const Dims* q_dims = TensorDims(shapes, args.q);
  const Dims* k_dims = TensorDims(shapes, args.q + 1);
  const Dims* v_dims = TensorDims(shapes, args.q + 2);
  const std::optional<AttentionDims> q = ReadAttentionDims(q_dims, args.layout);
  const std::optional<AttentionDims> k = ReadAttentionDims(k_dims, args.layout);
  const std::optional<AttentionDims> v = ReadAttentionDims(v_dims, args.layout);
  if (!q || !k || !v) return std::nullopt;
  // The two GEMMs' inner sizes (D of Q·Kᵀ, Lk of P·V) and the batch must agree.
  if (q->head_dim != k->head_dim || k->length != v->length || q->batch != k->batch ||
      q->batch != v->batch) {
    return std::nullopt;
  }
  const Count score_terms = Dim(q->batch) * Dim(q->heads) * Dim(q->length) * Dim(k->length) *
                            (Dim(q->head_dim) + Dim(v->head_dim));
  const bool causal = IsCausal(shapes, args);
  if (args.pass == Pass::kForward) {
    const Count flops = causal ? score_terms : Count(2) * score_terms;
    const Count output = Dim(q->batch) * Dim(q->heads) * Dim(q->length) * Dim(v->head_dim);
    return Figures{flops, ReadPlusWritten(shapes, output)};
  }
  const Count flops = causal ? Count(5) * score_terms / Count(2) : Count(5) * score_terms;
  const Count gradients = Numel(*q_dims) + Numel(*k_dims) + Numel(*v_dims);
  return Figures{flops, ReadPlusWritten(shapes, gradients)};
}

// ConvArgs says where a convolution's arguments are (native_functions.yaml's signatures), in
// aten::convolution's order.
struct ConvArgs {
  size_t input, weight, stride, padding, dilation;
  std::optional<size_t> transposed, output_padding;  // absent: the op is never transposed
  size_t groups;
};

ConvArgs ConvArgsOf(OpModel model) {
  switch (model) {
    case OpModel::kConvolution:
      // (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, ...)
      return {0, 1, 3, 4, 5, 6, 7, 8};
    case OpModel::kCudnnConvolution:
      // (self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
      return {0, 1, /*stride=*/3, /*padding=*/2, 4, std::nullopt, std::nullopt, 5};
    case OpModel::kMiopenConvolution:
      // (self, weight, bias, padding, stride, dilation, groups, benchmark, deterministic)
      return {0, 1, /*stride=*/4, /*padding=*/3, 5, std::nullopt, std::nullopt, 6};
    default:  // kConvolutionBackward: (grad_output, input, weight, bias_sizes, stride, padding,
              // dilation, transposed, output_padding, groups, output_mask)
      return {1, 2, 4, 5, 6, 7, 8, 9};
  }
}

// ConvParams is a convolution's scalar arguments, one value per spatial dimension.
struct ConvParams {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups;
  bool transposed;
};

// SpatialParam() reads a per-dimension list: `spatial` values, or one that applies to all.
std::optional<std::vector<int64_t>> SpatialParam(std::string_view text, size_t spatial,
                                                 int64_t min_value) {
  std::optional<std::vector<int64_t>> values = ParseIntList(text);
  if (!values || (values->size() != 1 && values->size() != spatial)) return std::nullopt;
  for (int64_t value : *values) {
    if (value < min_value) return std::nullopt;
  }
  if (values->size() == 1) values->assign(spatial, values->front());
  return values;
}

std::optional<ConvParams> ReadConvParams(const OpShapes& shapes, const ConvArgs& args,
                                         size_t spatial) {
  auto spatial_param = [&](size_t arg, int64_t min_value) {
    return SpatialParam(Concrete(shapes, arg), spatial, min_value);
  };
  const std::optional<std::vector<int64_t>> stride = spatial_param(args.stride, 1);
  const std::optional<std::vector<int64_t>> padding = spatial_param(args.padding, 0);
  const std::optional<std::vector<int64_t>> dilation = spatial_param(args.dilation, 1);
  const std::optional<int64_t> groups = ParseInt(Concrete(shapes, args.groups));
  std::optional<std::vector<int64_t>> output_padding = std::vector<int64_t>(spatial, 0);
  std::optional<bool> transposed = false;
  if (args.transposed) {
    transposed = ParseBool(Concrete(shapes, *args.transposed));
    output_padding = spatial_param(*args.output_padding, 0);
  }
  if (!stride || !padding || !dilation || !groups || *groups < 1 || !output_padding ||
      !transposed) {
    return std::nullopt;
  }
  return ConvParams{*stride, *padding, *dilation, *output_padding, *groups, *transposed};
}

// OutputSize() is one spatial size of a convolution's output (the formulas of PyTorch's
// torch.nn.Conv2d and ConvTranspose2d docs), invalid when it is not positive: PyTorch refuses
// such a convolution.
Count OutputSize(int64_t size, int64_t kernel, const ConvParams& params, size_t dim) {
  const Count span = Dim(params.dilation[dim]) * (Dim(kernel) - Count(1)) + Count(1);
  const Count padding = Count(2) * Dim(params.padding[dim]);
  if (!params.transposed) {
    return (Dim(size) + padding - span) / Dim(params.stride[dim]) + Count(1);
  }
  const Count output = (Dim(size) - Count(1)) * Dim(params.stride[dim]) + span +
                       Dim(params.output_padding[dim]) - padding;
  return output.value() == uint64_t{0} ? Count::Invalid() : output;
}

// ConvWork is one forward convolution's FLOPs and output elements.
struct ConvWork {
  Count flops;
  Count output;
};

// ForwardConv(): each output position of each output channel is a dot product of
// (Cin/groups)·ΠK terms: 2·N·Cout·ΠO·(Cin/groups)·ΠK FLOPs. A transposed convolution (weight
// [Cin, Cout/groups, K...]) does the work of the convolution it transposes, whose output is its
// input: 2·N·Cin·ΠS·(Cout/groups)·ΠK.
std::optional<ConvWork> ForwardConv(const Dims& input, const Dims& weight,
                                    const ConvParams& params) {
  Count kernel_terms(1), input_positions(1), output_positions(1);
  for (size_t dim = 0; dim + 2 < input.size(); ++dim) {
    kernel_terms = kernel_terms * Dim(weight[dim + 2]);
    input_positions = input_positions * Dim(input[dim + 2]);
    output_positions = output_positions * OutputSize(input[dim + 2], weight[dim + 2], params, dim);
  }
  const Count batch = Dim(input[0]), groups = Dim(params.groups);
  if (params.transposed) {
    if (input[1] != weight[0]) return std::nullopt;  // weight [Cin, Cout/groups, K...]
    const Count dot_products = batch * Dim(input[1]) * input_positions;
    return ConvWork{Count(2) * dot_products * Dim(weight[1]) * kernel_terms,
                    batch * Dim(weight[1]) * groups * output_positions};
  }
  // weight [Cout, Cin/groups, K...]; compared as Counts, as the product may overflow.
  if (Dim(input[1]).value() != (Dim(weight[1]) * groups).value()) return std::nullopt;
  const Count output = batch * Dim(weight[0]) * output_positions;
  return ConvWork{Count(2) * output * Dim(weight[1]) * kernel_terms, output};
}

// ConvFigures() reads a convolution's tensors and scalar arguments; without Concrete Inputs
// (PyTorch before 2.1) strides and padding are unknown, so there is no model.
std::optional<Figures> ConvFigures(OpModel model, const OpShapes& shapes) {
  const ConvArgs args = ConvArgsOf(model);
  const Dims* input = TensorDims(shapes, args.input);
  const Dims* weight = TensorDims(shapes, args.weight);
  if (input == nullptr || weight == nullptr || input->size() < 3 ||
      input->size() != weight->size()) {
    return std::nullopt;
  }
  const std::optional<ConvParams> params = ReadConvParams(shapes, args, input->size() - 2);
  if (!params) return std::nullopt;
  const std::optional<ConvWork> forward = ForwardConv(*input, *weight, *params);
  if (!forward) return std::nullopt;
  if (model != OpModel::kConvolutionBackward) {
    return Figures{forward->flops, ReadPlusWritten(shapes, forward->output)};
  }
  // The backward computes the input's gradient and the weight's, each one forward's FLOPs, as
  // output_mask asks (both when it is not recorded); the bias's gradient is a reduction.
  bool input_gradient = true, weight_gradient = true;
  const std::string_view mask_text = Concrete(shapes, 10);
  if (!mask_text.empty()) {
    const std::optional<std::vector<bool>> mask = ParseBoolList(mask_text);
    if (!mask || mask->size() < 2) return std::nullopt;
    input_gradient = (*mask)[0];
    weight_gradient = (*mask)[1];
  }
  const Count passes(uint64_t{input_gradient} + uint64_t{weight_gradient});
  const Count written =
      (input_gradient ? Numel(*input) : Count(0)) + (weight_gradient ? Numel(*weight) : Count(0));
  return Figures{forward->flops * passes, ReadPlusWritten(shapes, written)};
}

// BroadcastShape() is the shape of the tensor inputs broadcast together (NumPy's rules: aligned
// at the last dimension, each size equal or 1); nullopt when they do not broadcast or there is no
// tensor.
std::optional<Dims> BroadcastShape(const OpShapes& shapes) {
  std::optional<Dims> shape;
  for (size_t i = 0; i < shapes.dims.size(); ++i) {
    const Dims* dims = TensorDims(shapes, i);
    if (dims == nullptr) continue;
    if (!shape) shape.emplace();
    if (dims->size() > shape->size()) {
      shape->insert(shape->begin(), dims->size() - shape->size(), 1);
    }
    const size_t offset = shape->size() - dims->size();
    for (size_t d = 0; d < dims->size(); ++d) {
      int64_t& size = (*shape)[offset + d];
      const int64_t other = (*dims)[d];
      if (size == 1) {
        size = other;
      } else if (other != 1 && other != size) {
        return std::nullopt;
      }
    }
  }
  return shape;
}

// Memory-bound ops: bytes only (docs/perf-models.md, "Memory-bound ops"), their time measured
// against the memory bandwidth.
std::optional<Figures> MemoryFigures(OpModel model, const OpShapes& shapes) {
  switch (model) {
    case OpModel::kElementwise: {  // writes the inputs' broadcast shape
      const std::optional<Dims> shape = BroadcastShape(shapes);
      if (!shape) return std::nullopt;
      return Figures{std::nullopt, ReadPlusWritten(shapes, Numel(*shape))};
    }
    case OpModel::kReduction:  // its output is at most as large, usually a scalar per row
      if (FirstTensorType(shapes) == nullptr) return std::nullopt;
      return Figures{std::nullopt, BytesRead(shapes)};
    case OpModel::kNormalization:
    case OpModel::kSoftmax: {  // writes as many elements as its first tensor input has
      for (size_t i = 0; i < shapes.dims.size(); ++i) {
        const Dims* first = TensorDims(shapes, i);
        if (first != nullptr) return Figures{std::nullopt, ReadPlusWritten(shapes, Numel(*first))};
      }
      return std::nullopt;
    }
    default:  // kCopy: copy_(self, src) reads src and writes self, each at its own size
      if (TensorDims(shapes, 0) == nullptr || TensorDims(shapes, 1) == nullptr) return std::nullopt;
      return Figures{std::nullopt, TensorBytes(shapes, 1) + TensorBytes(shapes, 0)};
  }
}

std::optional<Figures> FiguresOf(OpModel model, const OpShapes& shapes) {
  switch (FamilyOf(model)) {
    case OpModelFamily::kNone:
      return std::nullopt;
    case OpModelFamily::kGemm:
      return GemmFigures(model, shapes);
    case OpModelFamily::kAttention:
      return AttentionFigures(model, shapes);
    case OpModelFamily::kConvolution:
      return ConvFigures(model, shapes);
    case OpModelFamily::kMemory:
      return MemoryFigures(model, shapes);
  }
  return std::nullopt;
}

// --- Parsing the recorded arguments ---

// ReadDims() is a tensor's "Input Dims" entry as sizes: nullopt unless it is a flat list of
// integers that fit int64 (a size past that, which nlohmann reads as a float, is no real size).
std::optional<Dims> ReadDims(const nlohmann::json& entry) {
  if (!entry.is_array()) return std::nullopt;
  Dims dims;
  for (const nlohmann::json& size : entry) {
    if (size.is_number_unsigned()) {
      if (size.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return std::nullopt;
      }
    } else if (!size.is_number_integer()) {
      return std::nullopt;
    }
    dims.push_back(size.get<int64_t>());
  }
  return dims;
}

// ReadConcrete() is "Concrete Inputs" when it is a list, an entry that is not a string read as
// "" (not recorded), as entries past its end are; empty when there is no list.
std::vector<std::string> ReadConcrete(std::string_view raw) {
  if (raw.empty()) return {};
  const nlohmann::json values = nlohmann::json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (!values.is_array()) return {};
  std::vector<std::string> concrete;
  for (const nlohmann::json& value : values) {
    concrete.push_back(value.is_string() ? value.get<std::string>() : std::string());
  }
  return concrete;
}

}  // namespace

std::optional<uint32_t> ElementSize(std::string_view input_type) {
  const ElementType* type = FindElementType(input_type);
  return type != nullptr ? std::optional<uint32_t>(type->size) : std::nullopt;
}

DType ElementDType(std::string_view input_type) {
  const ElementType* type = FindElementType(input_type);
  return type != nullptr ? type->dtype : DType::kUnknown;
}

std::optional<OpShapes> ParseOpShapes(std::string_view raw) {
  const size_t first = raw.find('\x1f');
  const size_t second = first == std::string_view::npos ? first : raw.find('\x1f', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const nlohmann::json dims =
      nlohmann::json::parse(raw.substr(0, first), nullptr, /*allow_exceptions=*/false);
  const nlohmann::json types = nlohmann::json::parse(raw.substr(first + 1, second - first - 1),
                                                     nullptr, /*allow_exceptions=*/false);
  if (!dims.is_array() || !types.is_array()) return std::nullopt;
  // An input is an entry of both lists; a longer list's extra entries are no inputs.
  const size_t inputs = std::min(dims.size(), types.size());
  OpShapes shapes;
  for (size_t i = 0; i < inputs; ++i) {
    const bool tensor = types[i].is_string() && ElementSize(types[i].get<std::string>());
    if (!tensor) {
      shapes.dims.emplace_back();
      shapes.types.emplace_back(types[i].is_string() ? types[i].get<std::string>() : "");
      continue;
    }
    // A tensor whose sizes are not sizes makes every figure of the op unknowable.
    std::optional<Dims> sizes = ReadDims(dims[i]);
    if (!sizes) return std::nullopt;
    shapes.dims.push_back(std::move(*sizes));
    shapes.types.push_back(types[i].get<std::string>());
  }
  shapes.concrete = ReadConcrete(raw.substr(second + 1));
  return shapes;
}

OpWork ModelOp(OpModel model, const OpShapes& shapes) {
  OpWork work;
  const ElementType* dtype = FirstTensorType(shapes);
  if (dtype != nullptr) work.dtype = dtype->dtype;
  const std::optional<Figures> figures = FiguresOf(model, shapes);
  if (!figures) return work;
  // An overflow anywhere means the shapes are not real ones: no figure at all rather than some.
  const std::optional<uint64_t> bytes = figures->bytes.value();
  const std::optional<uint64_t> flops =
      figures->flops ? figures->flops->value() : std::optional<uint64_t>();
  if (!bytes || (figures->flops && !flops)) return work;
  work.bytes = bytes;
  work.flops = flops;
  return work;
}

}  // namespace tracefuse
