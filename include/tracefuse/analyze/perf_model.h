// Library tracefuse_analyze: perf models, the work (FLOPs, bytes moved) of a cpu_op from the
// shapes the profiler recorded on it. docs/perf-models.md gives every formula and its source;
// tests/ops/oracle.py implements them a second time.
#ifndef TRACEFUSE_ANALYZE_PERF_MODEL_H_
#define TRACEFUSE_ANALYZE_PERF_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracefuse/analyze/gpu_spec.h"
#include "tracefuse/parse/chunk_parser.h"

namespace tracefuse {

// OpShapes is a cpu_op's recorded arguments: per input its dims ("Input Dims"), its type
// ("Input type") and, when recorded, its concrete value ("Concrete Inputs"; "" for tensors).
struct OpShapes {
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::string> types;
  std::vector<std::string> concrete;  // empty when the trace records none
};

// ParseOpShapes() reads HostOp shapes as the parser keeps them (HostActivity::shapes: the raw
// JSON of the three arguments, joined by '\x1f'). The inputs are the entries both Input Dims and
// Input type have; an input is a tensor when its type is an element type (ElementSize()), and
// only a tensor's dims are read. nullopt when either is not a list, or when a tensor's dims are
// not a flat list of integers that fit int64: then none of the op's figures can be known.
// Concrete Inputs that are no list are not recorded (empty); an entry that is not a string is "".
std::optional<OpShapes> ParseOpShapes(std::string_view raw);

// ElementSize() is the bytes per element of an "Input type" ("c10::BFloat16": 2), nullopt for a
// type that is not a tensor's element type ("Scalar", "GenericList", "").
std::optional<uint32_t> ElementSize(std::string_view input_type);

// ElementDType() is the peak an element type is measured against: "float" kFp32,
// "c10::BFloat16" kBf16, "c10::Float8_e4m3fn" kFp8, "signed char" kInt8...; kUnknown for types
// the peak table has no column for (int64, bool).
DType ElementDType(std::string_view input_type);

// OpWork is what one op did: FLOPs and bytes (nullopt where its model gives none) and its dtype
// (its first tensor input's).
struct OpWork {
  std::optional<uint64_t> flops;
  std::optional<uint64_t> bytes;
  DType dtype = DType::kUnknown;
};

// ModelOp() is the work of an op of `model` with `shapes`; flops and bytes nullopt where the
// shapes do not fit the model (docs/perf-models.md, "Shapes and element types").
OpWork ModelOp(OpModel model, const OpShapes& shapes);

}  // namespace tracefuse

#endif  // TRACEFUSE_ANALYZE_PERF_MODEL_H_
