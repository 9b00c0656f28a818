// Concat (1, 4, 11, 13), ConstantOfShape (9, 20, 21, 23, 24, 25), Flatten (1, 9, 11, 13, 21, 23,
// 24, 25), Gather (1, 11, 13), Reshape (1, 5, 13, 14, 19, 21, 23, 24, 25), Size (1, 13, 19, 21,
// 23, 24, 25), Split (1, 2, 11, 13, 18), Squeeze (1, 11, 13, 21, 23, 24, 25), Transpose (1, 13,
// 21, 23, 24, 25).
//
// Reshape, Flatten and Squeeze share their input's Buffer (a new shape over the same bytes), as
// does Transpose when the permutation keeps the data order (only size-1 dims move) and Split when
// a part is a contiguous run of the input. Concat, Gather and the other Transposes and Splits copy,
// after checking the output's size against the limits and the run budget.
//
// Each shape rule is one template over the dim type (Dim while planning, int64_t at run time).
// While planning, constant inputs (a Reshape's shape, a Squeeze's axes, a Split's sizes, a
// ConstantOfShape's shape) give exact output shapes; symbolic dims are kept where the rule
// passes a dim through (Reshape's 0, the dims Flatten or Squeeze keep, Concat's other axes). Size
// gives its value when the input's element count is known, so the planner folds it.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "src/core/text.h"
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"
#include "src/kernels/tensor_rules.h"
#include "src/kernels/tensor_util.h"

namespace idem {
namespace {

using E = ElementType;
using DimList = std::vector<Dim>;
using tensor_rules::CheckNonNegative;
using tensor_rules::ConstantIntVector;
using tensor_rules::DimStrings;
using tensor_rules::HasInfo;
using tensor_rules::KnownLength;
using tensor_rules::ProductDim;
using tensor_rules::ReadIntVector;

std::vector<Type> FloatTensorTypes() {
  return TensorTypes(std::vector<ElementType>{E::kFloat16, E::kFloat, E::kDouble});
}

// "All tensor types" of an operator version (bfloat16 from 13, the float8 types from 19, ...).
std::vector<Type> AllTensorTypes(int version) {
  return TensorTypes(tensor_util::AllElementsAt(version, 13));
}

Inference OutputsOfType(ElementType type, std::vector<std::optional<DimList>> shapes) {
  Inference inf;
  for (auto& s : shapes) inf.types.push_back(TensorType(type, std::move(s)));
  return inf;
}

// An output rank within max_rank (what the loader allows a tensor).
Status CheckRank(const Limits& limits, size_t rank) {
  if (rank > limits.max_rank) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("an output of rank {} exceeds max_rank {}", rank, limits.max_rank));
  }
  return {};
}

// ---- Concat -----------------------------------------------------------------------------------

struct ConcatAttrs {
  int64_t axis = 1;
};

Result<ConcatAttrs> ParseConcat(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  ConcatAttrs a;
  if (ctx.inputs.empty()) return InvalidModel("Concat needs at least one input");
  // Concat-1 defaults the axis to 1; from version 4 it is required.
  IDEM_ASSIGN_OR_RETURN(a.axis, ctx.version == 1 ? r.Int("axis", 1) : r.Int("axis"));
  IDEM_RETURN_IF_ERROR(
      CheckNonNegative(std::span<const int64_t>(&a.axis, 1), ctx.version, 11, "attribute 'axis'"));
  return a;
}

// The other dims must agree; the axis dims add up. While planning, a dim known in one input and
// unknown in another is the known one.
template <class D>
Result<DimsOf<D>> ConcatShape(const ConcatAttrs& a, std::span<const std::span<const D>> in) {
  const auto rank = static_cast<int64_t>(in[0].size());
  if (rank == 0) return InvalidArgument("Concat's inputs must have rank >= 1; input 0 is a scalar");
  IDEM_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a.axis, rank, "attribute 'axis'"));
  DimsOf<D> out(in[0].begin(), in[0].end());
  std::optional<int64_t> total = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (static_cast<int64_t>(in[i].size()) != rank) {
      return InvalidArgument(
          fmt::format("input {} has rank {} but input 0 has rank {}; Concat's "
                      "inputs must have one rank",
                      i, in[i].size(), rank));
    }
    for (int64_t d = 0; d < rank; ++d) {
      const D& x = in[i][static_cast<size_t>(d)];
      if (d == axis) {
        auto v = KnownDim(x);
        if (!v) {
          total.reset();
        } else if (total && __builtin_add_overflow(*total, *v, &*total)) {
          return InvalidArgument("the concatenated axis overflows int64");
        }
        continue;
      }
      D& o = out[static_cast<size_t>(d)];
      auto vo = KnownDim(o), vx = KnownDim(x);
      if (vo && vx && *vo != *vx) {
        return InvalidArgument(
            fmt::format("input {} has dim {} = {} but input 0 has {}; Concat's "
                        "inputs must agree on every dim but the axis",
                        i, d, *vx, *vo));
      }
      // They must all be equal at run time, so any dim that says something is the output's.
      if (!vo && (vx || !HasInfo(o))) o = x;
    }
  }
  out[static_cast<size_t>(axis)] = MakeDim<D>(total);
  return out;
}

Result<Inference> InferConcat(const ConcatAttrs& a, const Facts& facts) {
  const ElementType type = facts.element_type(0);
  // Inputs of unknown rank count as all-unknown dims of the rank the others show.
  std::optional<size_t> rank;
  for (size_t i = 0; i < facts.size(); ++i) {
    if (facts.has(i) && facts.shape(i)) rank = facts.shape(i)->size();
  }
  if (!rank) return OneOutput(TensorType(type, std::nullopt));
  std::vector<DimList> dims;
  for (size_t i = 0; i < facts.size(); ++i) {
    dims.push_back(facts.has(i) && facts.shape(i) ? *facts.shape(i) : DimList(*rank));
  }
  std::vector<std::span<const Dim>> spans(dims.begin(), dims.end());
  IDEM_ASSIGN_OR_RETURN(DimList out, ConcatShape<Dim>(a, spans));
  return OneOutput(TensorType(type, std::move(out)));
}

Status RunConcat(const ConcatAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) {
  const Tensor& first = inputs[0]->tensor();
  const ElementType type = first.element_type();
  ScratchVector<std::span<const int64_t>> shapes;
  uint64_t string_bytes = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i]->tensor();
    if (t.element_type() != type) {
      return InvalidArgument(fmt::format("input {} is tensor({}) but input 0 is tensor({})", i,
                                         ElementTypeName(t.element_type()), ElementTypeName(type)));
    }
    shapes.push_back(t.shape());
    string_bytes += t.string_bytes();
  }
  IDEM_ASSIGN_OR_RETURN(Ints shape, ConcatShape<int64_t>(a, shapes));
  if (inputs.size() == 1) {
    IDEM_ASSIGN_OR_RETURN(outputs[0], WithShape(ctx, first, shape));
    return {};
  }
  const auto axis =
      static_cast<size_t>(a.axis < 0 ? a.axis + static_cast<int64_t>(shape.size()) : a.axis);
  uint64_t count = 1, outer = 1, inner = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) count = 0;
    if (d < axis) outer *= static_cast<uint64_t>(shape[d]);
    if (d > axis) inner *= static_cast<uint64_t>(shape[d]);
  }
  if (count == 0) {
    if (type == E::kString) {
      IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeStringTensor(
                                            std::vector<int64_t>(shape.begin(), shape.end()), {}));
    } else {
      IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeTensorFromDims(type, shape, Buffer()));
    }
    return {};
  }
  if (type == E::kString) {
    count = outer * inner * static_cast<uint64_t>(shape[axis]);
    IDEM_ASSIGN_OR_RETURN(uint64_t bytes, TensorBytes(type, count, ctx.limits(), string_bytes));
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
    std::vector<std::string> strings;
    strings.reserve(count);
    for (uint64_t o = 0; o < outer; ++o) {
      for (const Value* v : inputs) {
        auto s = v->tensor().strings();
        const uint64_t block = static_cast<uint64_t>(v->tensor().shape()[axis]) * inner;
        strings.insert(strings.end(), s.begin() + static_cast<std::ptrdiff_t>(o * block),
                       s.begin() + static_cast<std::ptrdiff_t>((o + 1) * block));
      }
    }
    IDEM_ASSIGN_OR_RETURN(outputs[0],
                          Value::MakeStringTensor(std::vector<int64_t>(shape.begin(), shape.end()),
                                                  std::move(strings)));
    return {};
  }
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(outputs[0], AllocateTensor(ctx, type, shape, &out));
  // Concat's types are whole bytes (no sub-byte types in any version).
  const auto size = static_cast<uint64_t>(ElementBits(type) / 8);
  for (uint64_t o = 0; o < outer; ++o) {
    for (const Value* v : inputs) {
      const uint64_t block = static_cast<uint64_t>(v->tensor().shape()[axis]) * inner * size;
      if (block == 0) continue;
      std::memcpy(out, v->tensor().data().data() + o * block, block);
      out += block;
    }
  }
  return {};
}

KernelSchema ConcatSchema(int version) {
  KernelSchema s;
  s.op_type = "Concat";
  s.since_version = version;
  s.inputs = {{"inputs", "T", FormalParameter::Arity::kVariadic}};
  s.outputs = {{"concat_result", "T"}};
  s.constraints = {{"T", version == 1 ? FloatTensorTypes() : AllTensorTypes(version)}};
  s.attributes = {"axis"};
  s.foldable = true;
  DefineOp<ConcatAttrs>(s, ParseConcat, InferConcat,
                        [](const ConcatAttrs& a, const Facts&) -> Result<std::unique_ptr<Kernel>> {
                          return MakeFunctionKernel(a, RunConcat);
                        });
  return s;
}

// ---- ConstantOfShape --------------------------------------------------------------------------

std::vector<ElementType> ConstantOfShapeTypes(int version) {
  std::vector<ElementType> e = {E::kFloat16, E::kFloat,  E::kDouble, E::kInt8,
                                E::kInt16,   E::kInt32,  E::kInt64,  E::kUint8,
                                E::kUint16,  E::kUint32, E::kUint64, E::kBool};
  if (version >= 20) {
    for (E t :
         {E::kBfloat16, E::kFloat8E4M3FN, E::kFloat8E4M3FNUZ, E::kFloat8E5M2, E::kFloat8E5M2FNUZ}) {
      e.push_back(t);
    }
  }
  if (version >= 21) {
    e.push_back(E::kUint4);
    e.push_back(E::kInt4);
  }
  if (version >= 23) e.push_back(E::kFloat4E2M1);
  if (version >= 24) e.push_back(E::kFloat8E8M0);
  if (version >= 25) {
    e.push_back(E::kUint2);
    e.push_back(E::kInt2);
  }
  return e;
}

struct ConstantOfShapeAttrs {
  ElementType type = E::kFloat;
  std::vector<std::byte> element;  // the value's bytes (sub-byte types: the low bits of one byte)
};

Result<ConstantOfShapeAttrs> ParseConstantOfShape(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  ConstantOfShapeAttrs a;
  IDEM_ASSIGN_OR_RETURN(Value value, r.TensorAttr("value", false));
  if (value.is_null()) {
    a.element.assign(4, std::byte{0});  // float 0
    return a;
  }
  const Tensor& t = value.tensor();
  const auto allowed = ConstantOfShapeTypes(ctx.version);
  if (std::find(allowed.begin(), allowed.end(), t.element_type()) == allowed.end()) {
    std::vector<std::string> names;
    names.reserve(allowed.size());
    for (ElementType e : allowed) names.emplace_back(ElementTypeName(e));
    return InvalidModel(
        fmt::format("attribute 'value' is tensor({}); ConstantOfShape-{} makes "
                    "numeric or bool tensors ({})",
                    ElementTypeName(t.element_type()), ctx.version, fmt::join(names, ", ")));
  }
  if (t.element_count() != 1) {
    return InvalidModel(
        fmt::format("attribute 'value' must hold one element; it has {} (shape "
                    "[{}])",
                    t.element_count(), fmt::join(t.shape(), ",")));
  }
  a.type = t.element_type();
  auto bytes = t.data().bytes();
  a.element.assign(bytes.begin(), bytes.end());
  return a;
}

// The output dims from the shape input's values: each must be >= 0.
template <class D>
Result<DimsOf<D>> ConstantOfShapeDims(std::span<const int64_t> shape) {
  DimsOf<D> out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return InvalidArgument(
          fmt::format("input 'input' holds {} at index {}; every dim of the "
                      "output must be >= 0",
                      shape[i], i));
    }
    out.push_back(MakeDim<D>(shape[i]));
  }
  return out;
}

Result<Inference> InferConstantOfShape(const ConstantOfShapeAttrs& a, const Facts& facts) {
  IDEM_ASSIGN_OR_RETURN(auto shape, ConstantIntVector(facts, 0, "input"));
  if (shape) {
    IDEM_ASSIGN_OR_RETURN(DimList dims, ConstantOfShapeDims<Dim>(*shape));
    return OneOutput(TensorType(a.type, std::move(dims)));
  }
  if (auto n = KnownLength(facts, 0)) {
    return OneOutput(TensorType(a.type, DimList(static_cast<size_t>(*n))));
  }
  return OneOutput(TensorType(a.type, std::nullopt));
}

Status RunConstantOfShape(const ConstantOfShapeAttrs& a, RunContext& ctx,
                          std::span<const Value* const> inputs, std::span<Value> outputs) {
  IDEM_ASSIGN_OR_RETURN(Ints values, ReadIntVector(inputs[0]->tensor(), "input"));
  IDEM_ASSIGN_OR_RETURN(Ints shape, ConstantOfShapeDims<int64_t>(values));
  IDEM_RETURN_IF_ERROR(CheckRank(ctx.limits(), shape.size()));
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeTensorFromDims(a.type, shape, Buffer()));
    return {};
  }
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(outputs[0], AllocateTensor(ctx, a.type, shape, &out));
  const Tensor& t = outputs[0].tensor();
  const size_t bytes = t.data().size();
  const int bits = ElementBits(a.type);
  if (bits % 8 != 0) {
    // Sub-byte elements: the value's bits repeated through each byte; the unused high bits of a
    // last partial byte stay 0.
    const auto mask = static_cast<unsigned>((1u << bits) - 1);
    const unsigned v = static_cast<unsigned>(a.element[0]) & mask;
    unsigned pattern = 0;
    for (int shift = 0; shift < 8; shift += bits) pattern |= v << shift;
    std::memset(out, static_cast<int>(pattern), bytes);
    const auto total_bits = static_cast<uint64_t>(t.element_count()) * static_cast<uint64_t>(bits);
    if (total_bits % 8 != 0) {
      out[bytes - 1] &= static_cast<std::byte>((1u << (total_bits % 8)) - 1);
    }
    return {};
  }
  const size_t size = a.element.size();
  if (std::all_of(a.element.begin(), a.element.end(),
                  [&](std::byte b) { return b == a.element[0]; })) {
    std::memset(out, static_cast<int>(a.element[0]), bytes);
    return {};
  }
  // Doubling copies: the first element, then the filled prefix over the rest.
  std::memcpy(out, a.element.data(), size);
  for (size_t filled = size; filled < bytes;) {
    const size_t n = std::min(filled, bytes - filled);
    std::memcpy(out + filled, out, n);
    filled += n;
  }
  return {};
}

KernelSchema ConstantOfShapeSchema(int version) {
  KernelSchema s;
  s.op_type = "ConstantOfShape";
  s.since_version = version;
  s.inputs = {{"input", "T1"}};
  s.outputs = {{"output", "T2"}};
  s.constraints = {{"T1", {Type::Tensor(E::kInt64)}},
                   {"T2", TensorTypes(ConstantOfShapeTypes(version))}};
  s.attributes = {"value"};
  s.foldable = true;
  DefineOp<ConstantOfShapeAttrs>(
      s, ParseConstantOfShape, InferConstantOfShape,
      [](const ConstantOfShapeAttrs& a, const Facts&) -> Result<std::unique_ptr<Kernel>> {
        return MakeFunctionKernel(a, RunConstantOfShape);
      });
  return s;
}

// ---- Flatten ----------------------------------------------------------------------------------

struct FlattenAttrs {
  int64_t axis = 1;
};

Result<FlattenAttrs> ParseFlatten(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  FlattenAttrs a;
  IDEM_ASSIGN_OR_RETURN(a.axis, r.Int("axis", 1));
  // Flatten-1 and -9 take an axis in [0, r]; negative axes arrived with version 11.
  IDEM_RETURN_IF_ERROR(
      CheckNonNegative(std::span<const int64_t>(&a.axis, 1), ctx.version, 11, "attribute 'axis'"));
  return a;
}

template <class D>
Result<DimsOf<D>> FlattenShape(const FlattenAttrs& a, std::span<const D> in) {
  const auto rank = static_cast<int64_t>(in.size());
  // An axis in [-r, r]; a negative one counts from the back (-1 is r - 1, as numpy's).
  if (a.axis < -rank || a.axis > rank) {
    return InvalidArgument(fmt::format("attribute 'axis' {} is outside [{}, {}] for rank {}",
                                       a.axis, -rank, rank, rank));
  }
  const int64_t axis = a.axis < 0 ? a.axis + rank : a.axis;
  const auto split = static_cast<size_t>(axis);
  IDEM_ASSIGN_OR_RETURN(D outer, ProductDim<D>(in.subspan(0, split)));
  IDEM_ASSIGN_OR_RETURN(D inner, ProductDim<D>(in.subspan(split)));
  return DimsOf<D>{outer, inner};
}

Result<Inference> InferFlatten(const FlattenAttrs& a, const Facts& facts) {
  IDEM_ASSIGN_OR_RETURN(
      auto dims, InferDims(facts, {0}, [&] { return FlattenShape<Dim>(a, *facts.shape(0)); }));
  // The output is 2-D whatever the input's rank.
  if (!dims) dims = DimList(2);
  return OneOutput(TensorType(facts.element_type(0), std::move(dims)));
}

KernelSchema FlattenSchema(int version) {
  KernelSchema s;
  s.op_type = "Flatten";
  s.since_version = version;
  s.inputs = {{"input", "T"}};
  s.outputs = {{"output", "T"}};
  s.constraints = {{"T", version == 1 ? FloatTensorTypes() : AllTensorTypes(version)}};
  s.attributes = {"axis"};
  s.foldable = true;
  DefineOp<FlattenAttrs>(
      s, ParseFlatten, InferFlatten,
      [](const FlattenAttrs& a, const Facts&) -> Result<std::unique_ptr<Kernel>> {
        return MakeFunctionKernel(
            a,
            [](const FlattenAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
               std::span<Value> outputs) -> Status {
              const Tensor& t = inputs[0]->tensor();
              IDEM_ASSIGN_OR_RETURN(Ints shape, FlattenShape<int64_t>(a, t.shape()));
              IDEM_ASSIGN_OR_RETURN(outputs[0], WithShape(ctx, t, shape));
              return Status();
            });
      });
  return s;
}

// ---- Gather -----------------------------------------------------------------------------------

struct GatherAttrs {
  int64_t axis = 0;
};

Result<GatherAttrs> ParseGather(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  GatherAttrs a;
  IDEM_ASSIGN_OR_RETURN(a.axis, r.Int("axis", 0));
  return a;
}

// data[:axis] + indices + data[axis+1:].
template <class D>
Result<DimsOf<D>> GatherShape(const GatherAttrs& a, std::span<const D> data,
                              std::span<const D> indices) {
  const auto rank = static_cast<int64_t>(data.size());
  if (rank == 0) return InvalidArgument("Gather's data must have rank >= 1; it is a scalar");
  IDEM_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a.axis, rank, "attribute 'axis'"));
  DimsOf<D> out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return out;
}

// Every index must lie in [-s, s-1] for the axis of size s; the error names the first that
// does not.
Status CheckGatherIndices(std::span<const int64_t> indices, int64_t axis, int64_t size) {
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < -size || indices[i] >= size) {
      return InvalidArgument(
          fmt::format("indices[{}] is {}, outside [{}, {}] for axis {} of size "
                      "{}",
                      i, indices[i], -size, size - 1, axis, size));
    }
  }
  return {};
}

Result<Inference> InferGather(const GatherAttrs& a, const Facts& facts) {
  IDEM_ASSIGN_OR_RETURN(auto dims, InferDims(facts, {0, 1}, [&] {
                          return GatherShape<Dim>(a, *facts.shape(0), *facts.shape(1));
                        }));
  // Constant indices against a known axis size: an index out of range fails at planning.
  if (facts.shape(0) && !facts.shape(0)->empty()) {
    const auto rank = static_cast<int64_t>(facts.shape(0)->size());
    IDEM_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a.axis, rank, "attribute 'axis'"));
    const auto size = (*facts.shape(0))[static_cast<size_t>(axis)].value;
    if (auto indices = facts.constant_ints(1); indices && size) {
      IDEM_RETURN_IF_ERROR(CheckGatherIndices(*indices, axis, *size));
    }
  }
  return OneOutput(TensorType(facts.element_type(0), std::move(dims)));
}

Status RunGather(const GatherAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) {
  const Tensor& data = inputs[0]->tensor();
  const Tensor& index_tensor = inputs[1]->tensor();
  IDEM_ASSIGN_OR_RETURN(Ints shape, GatherShape<int64_t>(a, data.shape(), index_tensor.shape()));
  IDEM_RETURN_IF_ERROR(CheckRank(ctx.limits(), shape.size()));
  const auto axis =
      static_cast<size_t>(a.axis < 0 ? a.axis + static_cast<int64_t>(data.rank()) : a.axis);
  const int64_t extent = data.shape()[axis];
  Ints indices = ReadInt64s(index_tensor);
  IDEM_RETURN_IF_ERROR(CheckGatherIndices(indices, static_cast<int64_t>(axis), extent));
  for (int64_t& i : indices) {
    if (i < 0) i += extent;
  }
  uint64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= static_cast<uint64_t>(data.shape()[d]);
  for (size_t d = axis + 1; d < data.rank(); ++d) inner *= static_cast<uint64_t>(data.shape()[d]);
  const ElementType type = data.element_type();
  if (outer == 0 || inner == 0 || indices.empty()) {
    // Nothing to copy (the other dims may be huge: [0, 2^60] is a valid empty tensor).
    if (type == E::kString) {
      IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeStringTensor(
                                            std::vector<int64_t>(shape.begin(), shape.end()), {}));
    } else {
      IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeTensorFromDims(type, shape, Buffer()));
    }
    return {};
  }
  uint64_t count = 0;
  if (__builtin_mul_overflow(outer * inner, static_cast<uint64_t>(indices.size()), &count) ||
      count > ctx.limits().max_elements) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("an output of shape [{}] exceeds max_elements {}",
                              fmt::join(shape, ","), ctx.limits().max_elements));
  }
  if (type == E::kString) {
    auto src = data.strings();
    uint64_t string_bytes = 0;
    // The per-element part of the size first, so the strings are only walked when it fits.
    IDEM_ASSIGN_OR_RETURN(uint64_t element_bytes, TensorBytes(type, count, ctx.limits()));
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(element_bytes));
    for (uint64_t o = 0; o < outer; ++o) {
      for (int64_t i : indices) {
        const uint64_t at = (o * static_cast<uint64_t>(extent) + static_cast<uint64_t>(i)) * inner;
        for (uint64_t k = 0; k < inner; ++k) string_bytes += src[at + k].size();
      }
    }
    IDEM_ASSIGN_OR_RETURN(uint64_t bytes, TensorBytes(type, count, ctx.limits(), string_bytes));
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
    std::vector<std::string> strings;
    strings.reserve(count);
    for (uint64_t o = 0; o < outer; ++o) {
      for (int64_t i : indices) {
        const uint64_t at = (o * static_cast<uint64_t>(extent) + static_cast<uint64_t>(i)) * inner;
        strings.insert(strings.end(), src.begin() + static_cast<std::ptrdiff_t>(at),
                       src.begin() + static_cast<std::ptrdiff_t>(at + inner));
      }
    }
    IDEM_ASSIGN_OR_RETURN(outputs[0],
                          Value::MakeStringTensor(std::vector<int64_t>(shape.begin(), shape.end()),
                                                  std::move(strings)));
    return {};
  }
  // Gather's types are whole bytes (no sub-byte types in any version).
  const auto size = static_cast<uint64_t>(ElementBits(type) / 8);
  const uint64_t block = inner * size;
  if (outer == 1 && indices.size() == 1) {
    // One contiguous block: share the input's bytes.
    const uint64_t at = static_cast<uint64_t>(indices[0]) * block;
    IDEM_ASSIGN_OR_RETURN(outputs[0],
                          Value::MakeTensorFromDims(type, shape, data.data().Slice(at, block)));
    return {};
  }
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(outputs[0], AllocateTensor(ctx, type, shape, &out));
  const std::byte* src = data.data().data();
  for (uint64_t o = 0; o < outer; ++o) {
    const std::byte* base = src + o * static_cast<uint64_t>(extent) * block;
    for (int64_t i : indices) {
      std::memcpy(out, base + static_cast<uint64_t>(i) * block, block);
      out += block;
    }
  }
  return {};
}

KernelSchema GatherSchema(int version) {
  KernelSchema s;
  s.op_type = "Gather";
  s.since_version = version;
  s.inputs = {{"data", "T"}, {"indices", "Tind"}};
  s.outputs = {{"output", "T"}};
  s.constraints = {{"T", AllTensorTypes(version)},
                   {"Tind", TensorTypes(std::vector<ElementType>{E::kInt32, E::kInt64})}};
  s.attributes = {"axis"};
  s.foldable = true;
  DefineOp<GatherAttrs>(s, ParseGather, InferGather,
                        [](const GatherAttrs& a, const Facts&) -> Result<std::unique_ptr<Kernel>> {
                          return MakeFunctionKernel(a, RunGather);
                        });
  return s;
}

// ---- Reshape ----------------------------------------------------------------------------------

struct ReshapeAttrs {
  bool allowzero = false;
  std::optional<std::vector<int64_t>> shape;  // Reshape-1's attribute
};

Result<ReshapeAttrs> ParseReshape(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  ReshapeAttrs a;
  if (ctx.version == 1) {
    // consumed_inputs is a legacy optimization hint with no effect.
    IDEM_ASSIGN_OR_RETURN(a.shape, r.Ints("shape"));
  }
  if (ctx.version >= 14) {
    IDEM_ASSIGN_OR_RETURN(int64_t z, r.IntIn("allowzero", 0, {0, 1}));
    a.allowzero = z == 1;
  }
  return a;
}

// numpy's reshape with ONNX's 0 (copy the input's dim, unless allowzero) and one -1 (whatever
// the element count leaves). While planning, symbolic dims that appear on both sides cancel, so
// [N, 3, 4] -> [0, -1] gives [N, 12].
template <class D>
Result<DimsOf<D>> ReshapeShape(const ReshapeAttrs& a, std::span<const D> in,
                               std::span<const int64_t> shape) {
  DimsOf<D> out;
  std::optional<size_t> infer;
  bool has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t v = shape[i];
    if (v == -1) {
      if (infer) {
        return InvalidArgument(
            fmt::format("the shape holds -1 at index {} and at index {}; at "
                        "most one dim may be -1",
                        *infer, i));
      }
      infer = i;
      out.push_back(MakeDim<D>(1));  // placeholder
    } else if (v == 0 && !a.allowzero) {
      if (i >= in.size()) {
        return InvalidArgument(
            fmt::format("the shape holds 0 at index {} (copy the input's dim) "
                        "but the input has rank {}",
                        i, in.size()));
      }
      out.push_back(in[i]);
    } else if (v < 0) {
      return InvalidArgument(
          fmt::format("the shape holds {} at index {}; dims must be >= -1", v, i));
    } else {
      has_zero = has_zero || v == 0;
      out.push_back(MakeDim<D>(v));
    }
  }
  if (a.allowzero && has_zero && infer) {
    return InvalidArgument("with allowzero = 1 the shape may not hold both 0 and -1");
  }
  // Symbolic dims on both sides cancel (never at run time, where every dim is known).
  ScratchVector<bool> in_used(in.size(), false), out_used(out.size(), false);
  if (infer) out_used[*infer] = true;
  for (size_t o = 0; o < out.size(); ++o) {
    if (out_used[o] || KnownDim(out[o])) continue;
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in_used[i] && !KnownDim(in[i]) && SameDim(in[i], out[o])) {
        in_used[i] = out_used[o] = true;
        break;
      }
    }
  }
  // Products of the dims left (unknown when one is unknown).
  int64_t in_count = 1, out_count = 1;
  bool in_known = true, out_known = true;
  auto multiply = [](int64_t& n, bool& known, const D& d) {
    auto v = KnownDim(d);
    if (!known) return true;
    if (!v) {
      known = false;
      return true;
    }
    return !__builtin_mul_overflow(n, *v, &n);
  };
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in_used[i] && !multiply(in_count, in_known, in[i])) {
      return InvalidArgument("the input's element count overflows int64");
    }
  }
  for (size_t o = 0; o < out.size(); ++o) {
    if (!out_used[o] && !multiply(out_count, out_known, out[o])) {
      return InvalidArgument(
          fmt::format("the shape [{}] has more elements than int64 holds", fmt::join(shape, ",")));
    }
  }
  if (infer) {
    if (!in_known || !out_known) {
      out[*infer] = D{};
    } else if (out_count == 0 || in_count % out_count != 0) {
      return InvalidArgument(
          fmt::format("an input of shape [{}] cannot be reshaped to [{}]: the "
                      "-1 dim has no whole size",
                      fmt::join(DimStrings(in), ","), fmt::join(shape, ",")));
    } else {
      out[*infer] = MakeDim<D>(in_count / out_count);
    }
  } else if (in_known && out_known && in_count != out_count) {
    return InvalidArgument(
        fmt::format("an input of shape [{}] cannot be reshaped to [{}]: the "
                    "element counts differ",
                    fmt::join(DimStrings(in), ","), fmt::join(shape, ",")));
  }
  return out;
}

Result<Inference> InferReshape(const ReshapeAttrs& a, const Facts& facts) {
  const ElementType type = facts.element_type(0);
  std::optional<std::vector<int64_t>> shape = a.shape;
  if (!shape) {
    IDEM_ASSIGN_OR_RETURN(shape, ConstantIntVector(facts, 1, "shape"));
  }
  if (shape) {
    if (!facts.shape(0)) {
      // Without the input's dims only the rank, and the dims given outright, are known.
      DimList dims;
      for (int64_t v : *shape)
        dims.push_back(v > 0 || (v == 0 && a.allowzero) ? Dim{v, {}} : Dim{});
      return OneOutput(TensorType(type, std::move(dims)));
    }
    IDEM_ASSIGN_OR_RETURN(DimList dims, ReshapeShape<Dim>(a, *facts.shape(0), *shape));
    return OneOutput(TensorType(type, std::move(dims)));
  }
  if (auto n = KnownLength(facts, 1)) {
    return OneOutput(TensorType(type, DimList(static_cast<size_t>(*n))));
  }
  return OneOutput(TensorType(type, std::nullopt));
}

Status RunReshape(const ReshapeAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
                  std::span<Value> outputs) {
  const Tensor& t = inputs[0]->tensor();
  Ints read;
  std::span<const int64_t> shape;
  if (a.shape) {
    shape = *a.shape;
  } else {
    IDEM_ASSIGN_OR_RETURN(read, ReadIntVector(inputs[1]->tensor(), "shape"));
    shape = read;
  }
  IDEM_ASSIGN_OR_RETURN(Ints dims, ReshapeShape<int64_t>(a, t.shape(), shape));
  IDEM_RETURN_IF_ERROR(CheckRank(ctx.limits(), dims.size()));
  IDEM_ASSIGN_OR_RETURN(outputs[0], WithShape(ctx, t, dims));
  return {};
}

KernelSchema ReshapeSchema(int version) {
  KernelSchema s;
  s.op_type = "Reshape";
  s.since_version = version;
  s.inputs = {{"data", "T"}};
  if (version >= 5) s.inputs.push_back({"shape", "tensor(int64)"});
  s.outputs = {{"reshaped", "T"}};
  s.constraints = {{"T", version == 1 ? FloatTensorTypes() : AllTensorTypes(version)},
                   {"tensor(int64)", {Type::Tensor(E::kInt64)}}};
  if (version == 1) s.attributes = {"consumed_inputs", "shape"};
  if (version >= 14) s.attributes = {"allowzero"};
  s.foldable = true;
  DefineOp<ReshapeAttrs>(
      s, ParseReshape, InferReshape,
      [](const ReshapeAttrs& a, const Facts&) -> Result<std::unique_ptr<Kernel>> {
        return MakeFunctionKernel(a, RunReshape);
      });
  return s;
}

// ---- Size -------------------------------------------------------------------------------------

struct NoAttrs {};

Result<Inference> InferSize(const NoAttrs&, const Facts& facts) {
  Inference inf = OneOutput(TensorType(E::kInt64, DimList{}));
  // The count is known when every dim is, or when one dim is 0.
  std::optional<int64_t> count;
  if (facts.shape(0)) {
    count = DimProduct<Dim>(*facts.shape(0));
    for (const Dim& d : *facts.shape(0)) {
      if (d.value == 0) count = 0;
    }
  }
  if (count) {
    IDEM_ASSIGN_OR_RETURN(Value v, tensor_util::MakeInt64Scalar(*count));
    inf.values.push_back(std::move(v));
  }
  return inf;
}

KernelSchema SizeSchema(int version) {
  KernelSchema s;
  s.op_type = "Size";
  s.since_version = version;
  s.inputs = {{"data", "T"}};
  s.outputs = {{"size", "T1"}};
  s.constraints = {{"T", AllTensorTypes(version)}, {"T1", {Type::Tensor(E::kInt64)}}};
  s.foldable = true;
  DefineOp<NoAttrs>(
      s, [](const NodeContext&) -> Result<NoAttrs> { return NoAttrs{}; }, InferSize,
      [](const NoAttrs& a, const Facts&) -> Result<std::unique_ptr<Kernel>> {
        return MakeFunctionKernel(
            a,
            [](const NoAttrs&, RunContext&, std::span<const Value* const> inputs,
               std::span<Value> outputs) -> Status {
              IDEM_ASSIGN_OR_RETURN(
                  outputs[0], tensor_util::MakeInt64Scalar(inputs[0]->tensor().element_count()));
              return Status();
            });
      });
  return s;
}

// ---- Split ------------------------------------------------------------------------------------

struct SplitAttrs {
  int version = 0;
  int64_t axis = 0;
  size_t outputs = 0;
  std::optional<std::vector<int64_t>> split;  // the attribute (versions 1, 2, 11)
  std::optional<int64_t> num_outputs;         // version 18
};

Result<SplitAttrs> ParseSplit(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  SplitAttrs a;
  a.version = ctx.version;
  a.outputs = ctx.node.outputs.size();
  if (a.outputs == 0) return InvalidModel("Split needs at least one output");
  IDEM_ASSIGN_OR_RETURN(a.axis, r.Int("axis", 0));
  IDEM_RETURN_IF_ERROR(
      CheckNonNegative(std::span<const int64_t>(&a.axis, 1), ctx.version, 11, "attribute 'axis'"));
  const bool split_input = ctx.inputs.size() > 1 && ctx.inputs[1] != nullptr;
  if (ctx.version < 13 && r.has("split")) {
    IDEM_ASSIGN_OR_RETURN(a.split, r.Ints("split"));
    if (split_input) {
      return InvalidModel(
          "Split-1 takes the sizes as attribute 'split' or as input 'split', not "
          "both");
    }
    if (a.split->size() != a.outputs) {
      return InvalidModel(
          fmt::format("attribute 'split' has {} sizes for {} outputs", a.split->size(), a.outputs));
    }
    for (int64_t v : *a.split) {
      if (v < 0) {
        return InvalidModel(fmt::format("attribute 'split' holds {}; sizes must be >= 0", v));
      }
    }
  }
  if (ctx.version >= 18) {
    if (r.has("num_outputs")) {
      IDEM_ASSIGN_OR_RETURN(a.num_outputs, r.Int("num_outputs"));
      if (split_input) {
        return InvalidModel("Split-18 takes input 'split' or attribute 'num_outputs', not both");
      }
      if (*a.num_outputs < 1 || static_cast<size_t>(*a.num_outputs) != a.outputs) {
        return InvalidModel(
            fmt::format("attribute 'num_outputs' is {} but the node has {} "
                        "outputs; they must be equal",
                        *a.num_outputs, a.outputs));
      }
    } else if (!split_input) {
      return InvalidModel("Split-18 needs input 'split' or attribute 'num_outputs'");
    }
  }
  return a;
}

// The sizes of the parts along the axis of size `dim` (nullopt while planning when unknown).
Result<ScratchVector<std::optional<int64_t>>> SplitSizes(const SplitAttrs& a,
                                                         std::optional<int64_t> dim,
                                                         const std::optional<Ints>& given) {
  ScratchVector<std::optional<int64_t>> sizes;
  if (given) {
    if (given->size() != a.outputs) {
      return InvalidArgument(
          fmt::format("input 'split' has {} sizes for {} outputs", given->size(), a.outputs));
    }
    int64_t total = 0;
    for (int64_t v : *given) {
      if (v < 0)
        return InvalidArgument(fmt::format("input 'split' holds {}; sizes must be >= 0", v));
      if (__builtin_add_overflow(total, v, &total)) {
        return InvalidArgument("the split sizes overflow int64");
      }
      sizes.push_back(v);
    }
    if (dim && total != *dim) {
      return InvalidArgument(
          fmt::format("the split sizes [{}] add up to {} but the axis has size "
                      "{}",
                      fmt::join(*given, ","), total, *dim));
    }
    return sizes;
  }
  const auto n = static_cast<int64_t>(a.outputs);
  if (!dim) return ScratchVector<std::optional<int64_t>>(a.outputs);
  if (a.num_outputs) {
    // Split-18: parts of ceil(dim / n), the last one smaller.
    const int64_t chunk = *dim / n + (*dim % n != 0 ? 1 : 0);
    const int64_t last = *dim - chunk * (n - 1);
    if (last < 0) {
      return InvalidArgument(
          fmt::format("an axis of size {} does not split into {} parts of {} "
                      "(num_outputs)",
                      *dim, n, chunk));
    }
    sizes.assign(a.outputs, chunk);
    sizes.back() = last;
    return sizes;
  }
  if (*dim % n != 0) {
    return InvalidArgument(
        fmt::format("an axis of size {} does not split into {} equal parts", *dim, n));
  }
  sizes.assign(a.outputs, *dim / n);
  return sizes;
}

// The outputs' shapes: the input's with the axis dim replaced by each part's size.
template <class D>
Result<ScratchVector<DimsOf<D>>> SplitShapes(const SplitAttrs& a, std::span<const D> in,
                                             const std::optional<Ints>& given) {
  const auto rank = static_cast<int64_t>(in.size());
  if (rank == 0) return InvalidArgument("Split's input must have rank >= 1; it is a scalar");
  IDEM_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a.axis, rank, "attribute 'axis'"));
  IDEM_ASSIGN_OR_RETURN(auto sizes, SplitSizes(a, KnownDim(in[static_cast<size_t>(axis)]), given));
  ScratchVector<DimsOf<D>> out;
  for (const auto& size : sizes) {
    DimsOf<D> dims(in.begin(), in.end());
    dims[static_cast<size_t>(axis)] = MakeDim<D>(size);
    out.push_back(std::move(dims));
  }
  return out;
}

// Split-1's input 'split' has the data's (float) type; its values must be whole sizes.
Result<std::vector<int64_t>> ReadFloatSizes(const Tensor& t) {
  std::vector<int64_t> out;
  for (double v : ReadDoubles(t)) {
    if (!(v >= 0 && v <= 9.0e15) || v != static_cast<double>(static_cast<int64_t>(v))) {
      return InvalidArgument(
          fmt::format("input 'split' holds {}; sizes must be whole numbers >= 0", v));
    }
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

Result<std::optional<Ints>> GivenSplit(const SplitAttrs& a, const Value* split_input) {
  if (a.split) return std::optional<Ints>(std::in_place, a.split->begin(), a.split->end());
  if (split_input == nullptr) return std::optional<Ints>();
  const Tensor& t = split_input->tensor();
  if (a.version == 1) {
    IDEM_ASSIGN_OR_RETURN(auto sizes, ReadFloatSizes(t));
    return std::optional<Ints>(std::in_place, sizes.begin(), sizes.end());
  }
  IDEM_ASSIGN_OR_RETURN(Ints sizes, ReadIntVector(t, "split"));
  return std::optional<Ints>(std::move(sizes));
}

Result<Inference> InferSplit(const SplitAttrs& a, const Facts& facts) {
  const ElementType type = facts.element_type(0);
  const bool split_input = facts.has(1);
  const Value* constant = facts.constant(1);
  std::optional<Ints> given;
  if (!split_input || constant != nullptr) {
    IDEM_ASSIGN_OR_RETURN(given, GivenSplit(a, constant));
  }
  std::vector<std::optional<DimList>> shapes(a.outputs);
  if (facts.shape(0)) {
    if (split_input && constant == nullptr) {
      // Sizes unknown until run time: every dim but the axis is known.
      const auto rank = static_cast<int64_t>(facts.shape(0)->size());
      if (rank == 0) return InvalidArgument("Split's input must have rank >= 1; it is a scalar");
      IDEM_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a.axis, rank, "attribute 'axis'"));
      for (auto& s : shapes) {
        s = *facts.shape(0);
        (*s)[static_cast<size_t>(axis)] = Dim{};
      }
    } else {
      IDEM_ASSIGN_OR_RETURN(auto dims, SplitShapes<Dim>(a, *facts.shape(0), given));
      for (size_t o = 0; o < dims.size(); ++o) shapes[o] = std::move(dims[o]);
    }
  }
  return OutputsOfType(type, std::move(shapes));
}

Status RunSplit(const SplitAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
                std::span<Value> outputs) {
  const Tensor& t = inputs[0]->tensor();
  IDEM_ASSIGN_OR_RETURN(auto given, GivenSplit(a, inputs.size() > 1 ? inputs[1] : nullptr));
  IDEM_ASSIGN_OR_RETURN(auto shapes, SplitShapes<int64_t>(a, t.shape(), given));
  const auto axis =
      static_cast<size_t>(a.axis < 0 ? a.axis + static_cast<int64_t>(t.rank()) : a.axis);
  const Ints strides = RowMajorStrides(t.shape());
  bool outer_one = true;
  for (size_t d = 0; d < axis; ++d) outer_one = outer_one && t.shape()[d] == 1;
  const int bits = ElementBits(t.element_type());
  int64_t start = 0;
  for (size_t o = 0; o < shapes.size(); ++o) {
    const int64_t offset = start * strides[axis];
    const int64_t length = shapes[o][axis];
    const int64_t count = length * strides[axis];
    if (outer_one && t.element_type() != E::kString && bits % 8 == 0) {
      // A contiguous run of the input: share its bytes.
      const auto size = static_cast<size_t>(bits / 8);
      IDEM_ASSIGN_OR_RETURN(outputs[o],
                            Value::MakeTensorFromDims(
                                t.element_type(), shapes[o],
                                count == 0 ? Buffer()
                                           : t.data().Slice(static_cast<size_t>(offset) * size,
                                                            static_cast<size_t>(count) * size)));
    } else {
      IDEM_ASSIGN_OR_RETURN(outputs[o], StridedCopy(ctx, t, shapes[o], strides, offset));
    }
    start += length;
  }
  return {};
}

KernelSchema SplitSchema(int version) {
  KernelSchema s;
  s.op_type = "Split";
  s.since_version = version;
  s.inputs = {{"input", "T"}};
  if (version == 1) s.inputs.push_back({"split", "T", FormalParameter::Arity::kOptional});
  if (version >= 13) {
    s.inputs.push_back({"split", "tensor(int64)", FormalParameter::Arity::kOptional});
  }
  s.outputs = {{version == 1 ? "outputs..." : "outputs", "T", FormalParameter::Arity::kVariadic}};
  s.constraints = {{"T", version == 1 ? FloatTensorTypes() : AllTensorTypes(version)}};
  if (version >= 13) s.constraints.push_back({"tensor(int64)", {Type::Tensor(E::kInt64)}});
  s.attributes = {"axis"};
  if (version < 13) s.attributes.push_back("split");
  if (version >= 18) s.attributes.push_back("num_outputs");
  s.foldable = true;
  DefineOp<SplitAttrs>(s, ParseSplit, InferSplit,
                       [](const SplitAttrs& a, const Facts&) -> Result<std::unique_ptr<Kernel>> {
                         return MakeFunctionKernel(a, RunSplit);
                       });
  return s;
}

// ---- Squeeze ----------------------------------------------------------------------------------

struct SqueezeAttrs {
  int version = 0;
  std::optional<std::vector<int64_t>> axes;  // the attribute (versions 1, 11)
};

Result<SqueezeAttrs> ParseSqueeze(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  SqueezeAttrs a;
  a.version = ctx.version;
  if (ctx.version < 13 && r.has("axes")) {
    IDEM_ASSIGN_OR_RETURN(a.axes, r.Ints("axes"));
    IDEM_RETURN_IF_ERROR(CheckNonNegative(*a.axes, ctx.version, 11, "attribute 'axes'"));
  }
  return a;
}

// The input without the listed axes (each of dim 1), or without every dim of 1 when no axes are
// given. An empty axes list counts as none given, as in ONNX Runtime. While planning, an unknown
// dim named in axes counts as 1; without axes, an unknown dim leaves the rank unknown (nullopt).
template <class D>
Result<std::optional<DimsOf<D>>> SqueezeShape(std::span<const D> in, const Ints* axes) {
  const auto rank = static_cast<int64_t>(in.size());
  ScratchVector<bool> drop(in.size(), false);
  if (axes && !axes->empty()) {
    IDEM_ASSIGN_OR_RETURN(Ints normalized, NormalizeAxes(*axes, rank, "axis"));
    for (int64_t axis : normalized) {
      auto v = KnownDim(in[static_cast<size_t>(axis)]);
      if (v && *v != 1) {
        return InvalidArgument(
            fmt::format("axis {} has dim {}; only dims of 1 can be squeezed", axis, *v));
      }
      drop[static_cast<size_t>(axis)] = true;
    }
  } else {
    for (size_t d = 0; d < in.size(); ++d) {
      auto v = KnownDim(in[d]);
      if (!v) return std::optional<DimsOf<D>>();
      drop[d] = *v == 1;
    }
  }
  DimsOf<D> out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!drop[d]) out.push_back(in[d]);
  }
  return std::optional<DimsOf<D>>(std::move(out));
}

Result<std::optional<Ints>> SqueezeAxes(const SqueezeAttrs& a, const Value* axes_input) {
  if (a.version < 13) {
    if (!a.axes) return std::optional<Ints>();
    return std::optional<Ints>(std::in_place, a.axes->begin(), a.axes->end());
  }
  if (axes_input == nullptr) return std::optional<Ints>();
  IDEM_ASSIGN_OR_RETURN(Ints axes, ReadIntVector(axes_input->tensor(), "axes"));
  return std::optional<Ints>(std::move(axes));
}

Result<Inference> InferSqueeze(const SqueezeAttrs& a, const Facts& facts) {
  const ElementType type = facts.element_type(0);
  if (a.version >= 13 && facts.has(1) && facts.constant(1) == nullptr) {
    // Axes known at run time only: the rank is when the input's and the axes' lengths are.
    auto n = KnownLength(facts, 1);
    if (facts.shape(0) && n && *n > 0 && *n <= static_cast<int64_t>(facts.shape(0)->size())) {
      return OneOutput(TensorType(type, DimList(facts.shape(0)->size() - static_cast<size_t>(*n))));
    }
    return OneOutput(TensorType(type, std::nullopt));
  }
  IDEM_ASSIGN_OR_RETURN(auto axes, SqueezeAxes(a, facts.constant(1)));
  if (!facts.shape(0)) return OneOutput(TensorType(type, std::nullopt));
  IDEM_ASSIGN_OR_RETURN(auto dims, SqueezeShape<Dim>(*facts.shape(0), axes ? &*axes : nullptr));
  return OneOutput(TensorType(type, std::move(dims)));
}

Status RunSqueeze(const SqueezeAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
                  std::span<Value> outputs) {
  const Tensor& t = inputs[0]->tensor();
  IDEM_ASSIGN_OR_RETURN(auto axes, SqueezeAxes(a, inputs.size() > 1 ? inputs[1] : nullptr));
  IDEM_ASSIGN_OR_RETURN(std::optional<Ints> dims,
                        SqueezeShape<int64_t>(t.shape(), axes ? &*axes : nullptr));
  // Every dim is known at run time, so the rule always gives the dims.
  const std::span<const int64_t> shape = dims ? std::span<const int64_t>(*dims) : t.shape();
  IDEM_ASSIGN_OR_RETURN(outputs[0], WithShape(ctx, t, shape));
  return {};
}

KernelSchema SqueezeSchema(int version) {
  KernelSchema s;
  s.op_type = "Squeeze";
  s.since_version = version;
  s.inputs = {{"data", "T"}};
  if (version >= 13)
    s.inputs.push_back({"axes", "tensor(int64)", FormalParameter::Arity::kOptional});
  s.outputs = {{"squeezed", "T"}};
  s.constraints = {{"T", AllTensorTypes(version)}, {"tensor(int64)", {Type::Tensor(E::kInt64)}}};
  if (version < 13) s.attributes = {"axes"};
  s.foldable = true;
  DefineOp<SqueezeAttrs>(
      s, ParseSqueeze, InferSqueeze,
      [](const SqueezeAttrs& a, const Facts&) -> Result<std::unique_ptr<Kernel>> {
        return MakeFunctionKernel(a, RunSqueeze);
      });
  return s;
}

// ---- Transpose --------------------------------------------------------------------------------

struct TransposeAttrs {
  std::optional<std::vector<int64_t>> perm;  // default: the dims reversed
};

Result<TransposeAttrs> ParseTranspose(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  TransposeAttrs a;
  if (r.has("perm")) {
    IDEM_ASSIGN_OR_RETURN(a.perm, r.Ints("perm"));
    std::vector<bool> seen(a.perm->size(), false);
    for (int64_t p : *a.perm) {
      if (p < 0 || p >= static_cast<int64_t>(a.perm->size()) || seen[static_cast<size_t>(p)]) {
        return InvalidModel(fmt::format("attribute 'perm' [{}] is not a permutation of 0..{}",
                                        fmt::join(*a.perm, ","),
                                        static_cast<int64_t>(a.perm->size()) - 1));
      }
      seen[static_cast<size_t>(p)] = true;
    }
  }
  return a;
}

Result<Ints> TransposePerm(const TransposeAttrs& a, size_t rank) {
  if (!a.perm) {
    Ints perm(rank);
    for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
    return perm;
  }
  if (a.perm->size() != rank) {
    return InvalidArgument(fmt::format("attribute 'perm' has {} axes but the input has rank {}",
                                       a.perm->size(), rank));
  }
  return Ints(a.perm->begin(), a.perm->end());
}

// out[i] = in[perm[i]].
template <class D>
Result<DimsOf<D>> TransposeShape(const TransposeAttrs& a, std::span<const D> in) {
  IDEM_ASSIGN_OR_RETURN(Ints perm, TransposePerm(a, in.size()));
  DimsOf<D> out;
  out.reserve(perm.size());
  for (int64_t p : perm) out.push_back(in[static_cast<size_t>(p)]);
  return out;
}

Result<Inference> InferTranspose(const TransposeAttrs& a, const Facts& facts) {
  IDEM_ASSIGN_OR_RETURN(
      auto dims, InferDims(facts, {0}, [&] { return TransposeShape<Dim>(a, *facts.shape(0)); }));
  if (!dims && a.perm) dims = DimList(a.perm->size());
  return OneOutput(TensorType(facts.element_type(0), std::move(dims)));
}

Status RunTranspose(const TransposeAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
                    std::span<Value> outputs) {
  const Tensor& t = inputs[0]->tensor();
  IDEM_ASSIGN_OR_RETURN(Ints perm, TransposePerm(a, t.rank()));
  IDEM_ASSIGN_OR_RETURN(Ints shape, TransposeShape<int64_t>(a, t.shape()));
  // When the dims other than 1 keep their order, so do the elements: share the bytes.
  bool in_order = true;
  int64_t last = -1;
  for (int64_t p : perm) {
    if (t.shape()[static_cast<size_t>(p)] == 1) continue;
    in_order = in_order && p > last;
    last = p;
  }
  if (in_order) {
    IDEM_ASSIGN_OR_RETURN(outputs[0], WithShape(ctx, t, shape));
    return {};
  }
  const Ints in_strides = RowMajorStrides(t.shape());
  Ints strides;
  strides.reserve(perm.size());
  for (int64_t p : perm) strides.push_back(in_strides[static_cast<size_t>(p)]);
  IDEM_ASSIGN_OR_RETURN(outputs[0], StridedCopy(ctx, t, shape, strides, 0));
  return {};
}

KernelSchema TransposeSchema(int version) {
  KernelSchema s;
  s.op_type = "Transpose";
  s.since_version = version;
  s.inputs = {{"data", "T"}};
  s.outputs = {{"transposed", "T"}};
  s.constraints = {{"T", AllTensorTypes(version)}};
  s.attributes = {"perm"};
  s.foldable = true;
  DefineOp<TransposeAttrs>(
      s, ParseTranspose, InferTranspose,
      [](const TransposeAttrs& a, const Facts&) -> Result<std::unique_ptr<Kernel>> {
        return MakeFunctionKernel(a, RunTranspose);
      });
  return s;
}

}  // namespace

void RegisterTensorKernels(KernelRegistry& registry) {
  for (int v : {1, 4, 11, 13}) registry.Register(ConcatSchema(v));
  for (int v : {9, 20, 21, 23, 24, 25}) registry.Register(ConstantOfShapeSchema(v));
  for (int v : {1, 9, 11, 13, 21, 23, 24, 25}) registry.Register(FlattenSchema(v));
  for (int v : {1, 11, 13}) registry.Register(GatherSchema(v));
  for (int v : {1, 5, 13, 14, 19, 21, 23, 24, 25}) registry.Register(ReshapeSchema(v));
  for (int v : {1, 13, 19, 21, 23, 24, 25}) registry.Register(SizeSchema(v));
  for (int v : {1, 2, 11, 13, 18}) registry.Register(SplitSchema(v));
  for (int v : {1, 11, 13, 21, 23, 24, 25}) registry.Register(SqueezeSchema(v));
  for (int v : {1, 13, 21, 23, 24, 25}) registry.Register(TransposeSchema(v));
}

}  // namespace idem
