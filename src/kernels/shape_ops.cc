// Shape (1, 13, 15, 19, 21, 23, 24, 25), Slice (1, 10, 11, 13), Unsqueeze (1, 11, 13, 21, 23, 24,
// 25).
//
// Unsqueeze shares its input's bytes (a new shape over the same Buffer), as does a Slice that
// selects everything or one contiguous run of the input; other Slices copy the selected elements
// (checked against the limits and the run budget first). Shape gives its value while planning
// when the dims it reports are known, so the planner folds it; Unsqueeze and Slice with constant
// axes/starts/ends give exact shapes, keeping symbolic dims they pass through.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "src/core/text.h"
#include "src/kernels/op.h"
#include "src/kernels/tensor_rules.h"
#include "src/kernels/tensor_util.h"

namespace idem {
namespace {

using E = ElementType;
using DimList = std::vector<Dim>;
using tensor_rules::CheckNonNegative;
using tensor_rules::ConstantIntVector;
using tensor_rules::KnownLength;
using tensor_rules::ReadIntVector;

// ---- Shape ------------------------------------------------------------------------------------

struct ShapeAttrs {
  int64_t start = 0;
  std::optional<int64_t> end;  // the last axis when absent
};

Result<ShapeAttrs> ParseShape(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  ShapeAttrs a;
  if (ctx.version >= 15) {
    IDEM_ASSIGN_OR_RETURN(a.start, r.Int("start", 0));
    if (r.has("end")) {
      IDEM_ASSIGN_OR_RETURN(a.end, r.Int("end"));
    }
  }
  return a;
}

// The dims Shape reports: [start, end) after adding the rank to negative axes and clamping both
// to [0, rank] (an empty range when start >= end).
template <class D>
DimsOf<D> ShapeDims(const ShapeAttrs& a, std::span<const D> in) {
  const auto rank = static_cast<int64_t>(in.size());
  auto clamp = [rank](int64_t axis) {
    if (axis < 0) axis = axis < -rank ? 0 : axis + rank;
    return std::clamp<int64_t>(axis, 0, rank);
  };
  const int64_t start = clamp(a.start);
  const int64_t end = a.end ? clamp(*a.end) : rank;
  if (start >= end) return {};
  return DimsOf<D>(in.begin() + start, in.begin() + end);
}

Result<Inference> InferShape(const ShapeAttrs& a, const Facts& facts) {
  // The length is known when the input's rank is (ONNX's inference does the same; a
  // zero-iteration Loop's scan output shapes depend on it).
  if (!facts.shape(0)) return OneOutput(TensorType(E::kInt64, DimList(1)));
  const DimList dims = ShapeDims<Dim>(a, *facts.shape(0));
  Inference inf =
      OneOutput(TensorType(E::kInt64, DimList{Dim{static_cast<int64_t>(dims.size()), {}}}));
  std::vector<int64_t> values;
  for (const Dim& d : dims) {
    if (!d.value) return inf;
    values.push_back(*d.value);
  }
  const auto length = static_cast<int64_t>(values.size());
  IDEM_ASSIGN_OR_RETURN(Value v, tensor_util::MakeInt64Tensor(std::span(&length, 1), values));
  inf.values.push_back(std::move(v));
  return inf;
}

Status RunShape(const ShapeAttrs& a, RunContext&, std::span<const Value* const> inputs,
                std::span<Value> outputs) {
  const Ints dims = ShapeDims<int64_t>(a, inputs[0]->tensor().shape());
  const auto length = static_cast<int64_t>(dims.size());
  IDEM_ASSIGN_OR_RETURN(outputs[0], tensor_util::MakeInt64Tensor(std::span(&length, 1), dims));
  return {};
}

KernelSchema ShapeSchema(int version) {
  KernelSchema s;
  s.op_type = "Shape";
  s.since_version = version;
  s.inputs = {{"data", "T"}};
  s.outputs = {{"shape", "T1"}};
  s.constraints = {{"T", TensorTypes(tensor_util::AllElementsAt(version, 13))},
                   {"T1", {Type::Tensor(E::kInt64)}}};
  if (version >= 15) s.attributes = {"start", "end"};
  s.foldable = true;
  DefineOp<ShapeAttrs>(s, ParseShape, InferShape,
                       [](const ShapeAttrs& a, const Facts&) -> Result<std::unique_ptr<Kernel>> {
                         return MakeFunctionKernel(a, RunShape);
                       });
  return s;
}

// ---- Unsqueeze --------------------------------------------------------------------------------

struct UnsqueezeAttrs {
  std::optional<std::vector<int64_t>> axes;  // the attribute (versions 1, 11)
};

Result<UnsqueezeAttrs> ParseUnsqueeze(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  UnsqueezeAttrs a;
  if (ctx.version < 13) {
    IDEM_ASSIGN_OR_RETURN(a.axes, r.Ints("axes"));
    // Unsqueeze-1: "a list of non-negative integers" (negative axes arrive with version 11).
    IDEM_RETURN_IF_ERROR(CheckNonNegative(*a.axes, ctx.version, 11, "attribute 'axes'"));
  }
  return a;
}

// The input's dims with a 1 inserted at each axis (axes index the output, of rank r + n).
template <class D>
Result<DimsOf<D>> UnsqueezeShape(std::span<const D> in, std::span<const int64_t> axes) {
  const auto rank = static_cast<int64_t>(in.size() + axes.size());
  IDEM_ASSIGN_OR_RETURN(Ints normalized, NormalizeAxes(axes, rank, "axis"));
  ScratchVector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t axis : normalized) inserted[static_cast<size_t>(axis)] = true;
  DimsOf<D> out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) {
    out.push_back(inserted[static_cast<size_t>(i)] ? MakeDim<D>(1) : in[next++]);
  }
  return out;
}

// ONNX Runtime also takes a scalar axes input (one axis); so does idem.
Result<std::optional<std::vector<int64_t>>> UnsqueezeAxes(const UnsqueezeAttrs& a,
                                                          const Facts& facts) {
  if (a.axes) return a.axes;
  return ConstantIntVector(facts, 1, "axes", true);
}

Result<Inference> InferUnsqueeze(const UnsqueezeAttrs& a, const Facts& facts) {
  const ElementType type = facts.element_type(0);
  IDEM_ASSIGN_OR_RETURN(auto axes, UnsqueezeAxes(a, facts));
  if (!facts.shape(0)) return OneOutput(TensorType(type, std::nullopt));
  if (axes) {
    IDEM_ASSIGN_OR_RETURN(DimList dims, UnsqueezeShape<Dim>(*facts.shape(0), *axes));
    return OneOutput(TensorType(type, std::move(dims)));
  }
  // Axes known at run time only: the rank is known when their count is.
  if (auto n = KnownLength(facts, 1, true)) {
    return OneOutput(TensorType(type, DimList(facts.shape(0)->size() + static_cast<size_t>(*n))));
  }
  return OneOutput(TensorType(type, std::nullopt));
}

Status RunUnsqueeze(const UnsqueezeAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
                    std::span<Value> outputs) {
  const Tensor& t = inputs[0]->tensor();
  Ints read;
  std::span<const int64_t> axes;
  if (a.axes) {
    axes = *a.axes;
  } else {
    IDEM_ASSIGN_OR_RETURN(read, ReadIntVector(inputs[1]->tensor(), "axes", true));
    axes = read;
  }
  IDEM_ASSIGN_OR_RETURN(Ints shape, UnsqueezeShape<int64_t>(t.shape(), axes));
  if (shape.size() > ctx.limits().max_rank) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("an output of rank {} exceeds max_rank {}", shape.size(),
                              ctx.limits().max_rank));
  }
  IDEM_ASSIGN_OR_RETURN(outputs[0], WithShape(ctx, t, shape));
  return {};
}

KernelSchema UnsqueezeSchema(int version) {
  KernelSchema s;
  s.op_type = "Unsqueeze";
  s.since_version = version;
  s.inputs = {{"data", "T"}};
  if (version >= 13) s.inputs.push_back({"axes", "tensor(int64)"});
  s.outputs = {{"expanded", "T"}};
  s.constraints = {{"T", TensorTypes(tensor_util::AllElementsAt(version, 13))},
                   {"tensor(int64)", {Type::Tensor(E::kInt64)}}};
  if (version < 13) s.attributes = {"axes"};
  s.foldable = true;
  DefineOp<UnsqueezeAttrs>(
      s, ParseUnsqueeze, InferUnsqueeze,
      [](const UnsqueezeAttrs& a, const Facts&) -> Result<std::unique_ptr<Kernel>> {
        return MakeFunctionKernel(a, RunUnsqueeze);
      });
  return s;
}

// ---- Slice ------------------------------------------------------------------------------------

// What selects the slice: Slice-1's attributes, or the inputs of later versions.
struct SliceParams {
  Ints starts, ends;
  std::optional<Ints> axes, steps;
};

struct SliceAttrs {
  std::optional<SliceParams> params;  // Slice-1
};

Result<SliceAttrs> ParseSlice(const NodeContext& ctx) {
  SliceAttrs a;
  if (ctx.version > 1) return a;
  AttrReader r(ctx.node);
  SliceParams p;
  IDEM_ASSIGN_OR_RETURN(std::vector<int64_t> starts, r.Ints("starts"));
  IDEM_ASSIGN_OR_RETURN(std::vector<int64_t> ends, r.Ints("ends"));
  p.starts.assign(starts.begin(), starts.end());
  p.ends.assign(ends.begin(), ends.end());
  if (r.has("axes")) {
    IDEM_ASSIGN_OR_RETURN(std::vector<int64_t> axes, r.Ints("axes"));
    p.axes.emplace(axes.begin(), axes.end());
  }
  if (p.ends.size() != p.starts.size() || (p.axes && p.axes->size() != p.starts.size())) {
    return InvalidModel("attributes 'starts', 'ends' and 'axes' must have one length");
  }
  a.params = std::move(p);
  return a;
}

// The output's dims, and per input dim the first element taken and the step.
template <class D>
struct SliceGeometry {
  DimsOf<D> dims;
  Ints begin, step;
};

// The spec's rule (Slice-13's text, which the earlier versions share): negative starts and ends
// have the dim added; starts clamp to [0, dim] ([0, dim-1] stepping backward), ends to [0, dim]
// ([-1, dim-1] backward). While planning, an unknown dim gives an unknown output dim unless the
// slice takes all of it (0 to INT64_MAX by 1, or -1 to INT64_MIN by -1).
template <class D>
Result<SliceGeometry<D>> SliceShape(std::span<const D> in, const SliceParams& p) {
  const size_t n = p.starts.size();
  if (p.ends.size() != n || (p.axes && p.axes->size() != n) || (p.steps && p.steps->size() != n)) {
    return InvalidArgument(
        fmt::format("starts, ends, axes and steps must have one length (got {}, {}, {}, {})", n,
                    p.ends.size(), p.axes ? p.axes->size() : n, p.steps ? p.steps->size() : n));
  }
  const auto rank = static_cast<int64_t>(in.size());
  Ints axes;
  if (p.axes) {
    IDEM_ASSIGN_OR_RETURN(axes, NormalizeAxes(*p.axes, rank, "axis"));
  } else {
    if (static_cast<int64_t>(n) > rank) {
      return InvalidArgument(
          fmt::format("{} starts for an input of rank {} (without axes, they "
                      "apply to the first dims)",
                      n, rank));
    }
    for (size_t k = 0; k < n; ++k) axes.push_back(static_cast<int64_t>(k));
  }
  SliceGeometry<D> g;
  g.dims.assign(in.begin(), in.end());
  g.begin.assign(in.size(), 0);
  g.step.assign(in.size(), 1);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  for (size_t k = 0; k < n; ++k) {
    const auto a = static_cast<size_t>(axes[k]);
    const int64_t st = p.steps ? (*p.steps)[k] : 1;
    if (st == 0) return InvalidArgument("a step of 0 is not allowed");
    g.step[a] = st;
    auto known = KnownDim(in[a]);
    if (!known) {
      const bool all = (st == 1 && p.starts[k] == 0 && p.ends[k] == kMax) ||
                       (st == -1 && p.starts[k] == -1 && p.ends[k] == kMin);
      if (!all) g.dims[a] = MakeDim<D>(std::nullopt);
      continue;
    }
    const int64_t dim = *known;
    int64_t s = p.starts[k], e = p.ends[k];
    // Adding dim to a negative value cannot overflow; clamping follows at once.
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    // ceil(distance / |step|) without overflow: a step of INT64_MAX or INT64_MIN is valid (one
    // element), and neither `distance + step - 1` nor `-step` may be computed in int64.
    int64_t count = 0;
    if (st > 0 && e > s) {
      count =
          static_cast<int64_t>(static_cast<uint64_t>(e - s - 1) / static_cast<uint64_t>(st)) + 1;
    }
    if (st < 0 && s > e) {
      const uint64_t magnitude = uint64_t{0} - static_cast<uint64_t>(st);
      count = static_cast<int64_t>(static_cast<uint64_t>(s - e - 1) / magnitude) + 1;
    }
    g.begin[a] = s;
    g.dims[a] = MakeDim<D>(count);
  }
  return g;
}

Result<std::optional<Ints>> SliceInput(const Value* v, std::string_view name) {
  if (v == nullptr) return std::optional<Ints>();
  IDEM_ASSIGN_OR_RETURN(Ints ints, ReadIntVector(v->tensor(), name));
  return std::optional<Ints>(std::move(ints));
}

// The params from the inputs (null entries: omitted axes or steps).
Result<SliceParams> ReadSliceParams(std::span<const Value* const> in) {
  SliceParams p;
  IDEM_ASSIGN_OR_RETURN(p.starts, ReadIntVector(in[1]->tensor(), "starts"));
  IDEM_ASSIGN_OR_RETURN(p.ends, ReadIntVector(in[2]->tensor(), "ends"));
  IDEM_ASSIGN_OR_RETURN(p.axes, SliceInput(in.size() > 3 ? in[3] : nullptr, "axes"));
  IDEM_ASSIGN_OR_RETURN(p.steps, SliceInput(in.size() > 4 ? in[4] : nullptr, "steps"));
  return p;
}

Result<Inference> InferSlice(const SliceAttrs& a, const Facts& facts) {
  const ElementType type = facts.element_type(0);
  if (!facts.shape(0)) return OneOutput(TensorType(type, std::nullopt));
  const DimList& in = *facts.shape(0);
  std::optional<SliceParams> params = a.params;
  if (!params) {
    // Every given input constant: the params are known.
    std::vector<const Value*> values = {nullptr};
    bool all = true;
    for (size_t i = 1; i < facts.size(); ++i) {
      values.push_back(facts.has(i) ? facts.constant(i) : nullptr);
      all = all && (!facts.has(i) || facts.constant(i) != nullptr);
    }
    if (all && facts.size() >= 3) {
      IDEM_ASSIGN_OR_RETURN(params, ReadSliceParams(values));
    }
  }
  if (params) {
    IDEM_ASSIGN_OR_RETURN(SliceGeometry<Dim> g, SliceShape<Dim>(in, *params));
    return OneOutput(TensorType(type, std::move(g.dims)));
  }
  // Params known at run time only: the dims of axes they do not name pass through, when the axes
  // are known (a constant, or omitted with a known count of starts).
  std::optional<std::vector<int64_t>> axes;
  if (facts.has(3)) {
    IDEM_ASSIGN_OR_RETURN(axes, ConstantIntVector(facts, 3, "axes"));
  } else if (auto n = KnownLength(facts, 1); n && *n <= static_cast<int64_t>(in.size())) {
    axes.emplace();
    for (int64_t k = 0; k < *n; ++k) axes->push_back(k);
  }
  DimList dims(in.size());
  if (axes) {
    IDEM_ASSIGN_OR_RETURN(Ints normalized,
                          NormalizeAxes(*axes, static_cast<int64_t>(in.size()), "axis"));
    dims = in;
    for (int64_t axis : normalized) dims[static_cast<size_t>(axis)] = Dim{};
  }
  return OneOutput(TensorType(type, std::move(dims)));
}

Status RunSlice(const SliceAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
                std::span<Value> outputs) {
  const Tensor& t = inputs[0]->tensor();
  SliceParams read;
  if (!a.params) {
    IDEM_ASSIGN_OR_RETURN(read, ReadSliceParams(inputs));
  }
  const SliceParams& p = a.params ? *a.params : read;
  IDEM_ASSIGN_OR_RETURN(SliceGeometry<int64_t> g, SliceShape<int64_t>(t.shape(), p));
  const auto shape = t.shape();
  const size_t rank = shape.size();
  uint64_t count = 1;
  for (int64_t d : g.dims) count *= static_cast<uint64_t>(d);
  if (std::equal(g.dims.begin(), g.dims.end(), shape.begin(), shape.end()) &&
      std::all_of(g.step.begin(), g.step.end(), [](int64_t s) { return s == 1; })) {
    // Everything selected (or an empty input): the same elements.
    IDEM_ASSIGN_OR_RETURN(outputs[0], WithShape(ctx, t, g.dims));
    return {};
  }
  if (count == 0 || t.element_count() == 0) {
    // Nothing to gather (the input may be empty with huge dims, [0, 2^60, 4]).
    if (t.element_type() == E::kString) {
      IDEM_ASSIGN_OR_RETURN(
          outputs[0],
          Value::MakeStringTensor(std::vector<int64_t>(g.dims.begin(), g.dims.end()), {}));
    } else {
      IDEM_ASSIGN_OR_RETURN(outputs[0],
                            Value::MakeTensorFromDims(t.element_type(), g.dims, Buffer()));
    }
    return {};
  }
  const Ints in_strides = RowMajorStrides(shape);
  Ints strides(rank);
  int64_t offset = 0;
  for (size_t d = 0; d < rank; ++d) {
    offset += g.begin[d] * in_strides[d];
    // A step only matters where more than one element is taken (then |step| < dim).
    strides[d] = in_strides[d] * (g.dims[d] > 1 ? g.step[d] : 1);
  }
  // One contiguous run of the input (outer dims of 1, then one dim sliced by step 1, then whole
  // dims): share its bytes.
  const int bits = ElementBits(t.element_type());
  size_t first = 0;
  while (first < rank && g.dims[first] == 1) ++first;
  bool contiguous = t.element_type() != E::kString && bits % 8 == 0;
  for (size_t d = first; contiguous && d < rank; ++d) {
    contiguous = d == first ? g.step[d] == 1 : g.dims[d] == shape[d] && g.step[d] == 1;
  }
  if (contiguous) {
    const auto size = static_cast<size_t>(bits / 8);
    IDEM_ASSIGN_OR_RETURN(
        outputs[0], Value::MakeTensorFromDims(t.element_type(), g.dims,
                                              t.data().Slice(static_cast<size_t>(offset) * size,
                                                             static_cast<size_t>(count) * size)));
    return {};
  }
  IDEM_ASSIGN_OR_RETURN(outputs[0], StridedCopy(ctx, t, g.dims, strides, offset));
  return {};
}

KernelSchema SliceSchema(int version) {
  KernelSchema s;
  s.op_type = "Slice";
  s.since_version = version;
  if (version == 1) {
    s.inputs = {{"data", "T"}};
    s.attributes = {"starts", "ends", "axes"};
  } else {
    s.inputs = {{"data", "T"},
                {"starts", "Tind"},
                {"ends", "Tind"},
                {"axes", "Tind", FormalParameter::Arity::kOptional},
                {"steps", "Tind", FormalParameter::Arity::kOptional}};
  }
  s.outputs = {{"output", "T"}};
  std::vector<ElementType> elements = BaseElementTypes();
  if (version >= 13) elements.push_back(E::kBfloat16);
  s.constraints = {{"T", TensorTypes(elements)}};
  if (version > 1) {
    s.constraints.push_back({"Tind", TensorTypes(std::vector<ElementType>{E::kInt32, E::kInt64})});
  }
  s.foldable = true;
  DefineOp<SliceAttrs>(s, ParseSlice, InferSlice,
                       [](const SliceAttrs& a, const Facts&) -> Result<std::unique_ptr<Kernel>> {
                         return MakeFunctionKernel(a, RunSlice);
                       });
  return s;
}

}  // namespace

void RegisterShapeKernels(KernelRegistry& registry) {
  for (int version : {1, 13, 15, 19, 21, 23, 24, 25}) registry.Register(ShapeSchema(version));
  for (int version : {1, 11, 13, 21, 23, 24, 25}) registry.Register(UnsqueezeSchema(version));
  for (int version : {1, 10, 11, 13}) registry.Register(SliceSchema(version));
}

}  // namespace idem
