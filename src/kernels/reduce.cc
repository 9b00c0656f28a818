// ReduceMax (1, 11, 12, 13, 18, 20), ReduceMean (1, 11, 13, 18).
//
// Axes are an attribute before 18 and an optional int64 input from 18 (with
// noop_with_empty_axes). One shape rule (ReduceShape, over Dim and int64_t) from the set of
// reduced axes.
//
// Numerics: ReduceMax is exact and propagates NaN (as numpy's max, the official outputs);
// bool (20) compares false < true. ReduceMean sums floating inputs in double in row-major order
// over the reduced axes and rounds once; integer inputs are summed exactly (128-bit) and divided
// with truncation toward zero, so the mean is exact and always fits the type.
// Empty sets: ReduceMax of no values is -inf for floating types and the type's lowest value
// otherwise (false for bool), as the spec says. ReduceMean of no values is undefined in the
// spec: floating types give 0 / 0 = NaN (as ONNX Runtime); integer types give 0 (ONNX Runtime
// divides an integer by zero there, which is undefined behaviour in C++).
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {
namespace {

enum class ReduceKind { kMax, kMean };

struct ReduceAttrs {
  ReduceKind kind = ReduceKind::kMax;
  std::string op;
  bool keepdims = true;
  bool noop_with_empty_axes = false;
  bool axes_input = false;                   // version 18+: axes is input 1
  std::optional<std::vector<int64_t>> axes;  // before 18: the attribute (nullopt: all axes)
};

// One flag per input axis: whether it is reduced.
using ReduceMask = ScratchVector<bool>;

// The reduced axes as a mask over the input's rank; an empty list reduces every axis unless
// noop_with_empty_axes (then none).
Result<ReduceMask> ReducedAxes(const ReduceAttrs& a, size_t rank, std::span<const int64_t> axes) {
  ReduceMask mask(rank, false);
  if (axes.empty()) {
    if (!a.noop_with_empty_axes) mask.assign(rank, true);
    return mask;
  }
  auto normalized = NormalizeAxes(axes, static_cast<int64_t>(rank), "axis");
  if (!normalized.ok()) {
    return Status(normalized.status().code(), a.op + " " + normalized.status().message());
  }
  for (int64_t axis : *normalized) mask[static_cast<size_t>(axis)] = true;
  return mask;
}

// The one shape rule: reduced dims become 1 (keepdims) or are removed.
template <class D>
DimsOf<D> ReduceShape(const ReduceAttrs& a, std::span<const D> x, const ReduceMask& mask) {
  DimsOf<D> out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!mask[i]) {
      out.push_back(x[i]);
    } else if (a.keepdims) {
      out.push_back(MakeDim<D>(1));
    }
  }
  return out;
}

Result<ReduceAttrs> ParseReduce(const NodeContext& ctx, ReduceKind kind) {
  ReduceAttrs a;
  a.kind = kind;
  a.op = ctx.node.op_type;
  const AttrReader r(ctx.node);
  IDEM_ASSIGN_OR_RETURN(int64_t keepdims, r.IntIn("keepdims", 1, {0, 1}));
  a.keepdims = keepdims == 1;
  if (ctx.version >= 18) {
    a.axes_input = true;
    IDEM_ASSIGN_OR_RETURN(int64_t noop, r.IntIn("noop_with_empty_axes", 0, {0, 1}));
    a.noop_with_empty_axes = noop == 1;
  } else if (r.has("axes")) {
    IDEM_ASSIGN_OR_RETURN(a.axes, r.Ints("axes"));
  }
  return a;
}

// The axes when known at planning: the attribute, a constant axes input, or no axes input.
std::optional<std::vector<int64_t>> KnownAxes(const ReduceAttrs& a, const Facts& facts) {
  if (!a.axes_input) return a.axes.value_or(std::vector<int64_t>{});
  if (!facts.has(1)) return std::vector<int64_t>{};
  return facts.constant_ints(1);
}

Result<Inference> InferReduce(const ReduceAttrs& a, const Facts& facts) {
  const ElementType e = facts.element_type(0);
  if (!facts.shape(0)) return OneOutput(TensorType(e, std::nullopt));
  const std::vector<Dim>& x = *facts.shape(0);
  const auto axes = KnownAxes(a, facts);
  if (!axes) {
    // Axes known only at run time: with keepdims the rank stays; a dim of 1 stays 1.
    if (!a.keepdims) return OneOutput(TensorType(e, std::nullopt));
    std::vector<Dim> dims;
    dims.reserve(x.size());
    for (const Dim& d : x) dims.push_back(d.value == 1 ? d : Dim{});
    return OneOutput(TensorType(e, std::move(dims)));
  }
  IDEM_ASSIGN_OR_RETURN(ReduceMask mask, ReducedAxes(a, x.size(), *axes));
  return OneOutput(TensorType(e, ReduceShape<Dim>(a, std::span<const Dim>(x), mask)));
}

// The value an empty reduction gives for Max.
template <class T>
ComputeType<T> MaxIdentity() {
  using C = ComputeType<T>;
  if constexpr (std::is_floating_point_v<C>) {
    return -std::numeric_limits<C>::infinity();
  } else {
    return std::numeric_limits<C>::lowest();  // false for bool
  }
}

// What a Sum/Mean accumulates in: double for floats, 128-bit integers otherwise.
template <class C>
using SumType =
    std::conditional_t<std::is_floating_point_v<C>, double,
                       std::conditional_t<std::is_signed_v<C>, __int128, unsigned __int128>>;

template <class T>
T MeanOf(SumType<ComputeType<T>> sum, int64_t count) {
  using C = ComputeType<T>;
  using Sum = SumType<C>;
  if constexpr (std::is_floating_point_v<C>) {
    return FromCompute<T>(static_cast<C>(sum / static_cast<double>(count)));  // 0 / 0 = NaN
  } else {
    return FromCompute<T>(count == 0 ? C{0} : static_cast<C>(sum / static_cast<Sum>(count)));
  }
}

// X viewed as [outer, reduced, inner] when the reduced axes are one block of X's dims (dims of
// size 1 anywhere do not matter): the output is [outer, inner]. nullopt otherwise.
struct ReduceBlock {
  int64_t outer = 1, reduced = 1, inner = 1;
};
std::optional<ReduceBlock> AsBlock(std::span<const int64_t> xs, const ReduceMask& mask) {
  ReduceBlock b;
  int phase = 0;  // 0: before the reduced block, 1: in it, 2: after it
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] == 1) continue;
    if (mask[i]) {
      if (phase == 2) return std::nullopt;
      phase = 1;
      b.reduced *= xs[i];
    } else {
      if (phase == 1) phase = 2;
      (phase == 0 ? b.outer : b.inner) *= xs[i];
    }
  }
  return b;
}

// The reduction of a block view, the inner positions side by side: every output accumulates
// its elements in the same order as the general loop below (so the same bits), but the inner
// loop runs over independent outputs (vectorizable, no dependency chain) instead of striding.
// The accumulators of kTile outputs at a time live on the stack, so the scratch is fixed
// whatever the output's size (the output itself is checked against the budget).
template <class T>
void ReduceBlockRows(const ReduceAttrs& a, const std::byte* __restrict px, std::byte* __restrict y,
                     const ReduceBlock& b) {
  using C = ComputeType<T>;
  constexpr int64_t kTile = 256;
  const int64_t inner = b.inner;
  for (int64_t o = 0; o < b.outer; ++o) {
    const std::byte* xo = px + o * b.reduced * inner * static_cast<int64_t>(sizeof(T));
    std::byte* yo = y + o * inner * static_cast<int64_t>(sizeof(T));
    if (a.kind == ReduceKind::kMax) {
      for (int64_t j = 0; j < inner; ++j) {
        C best = MaxIdentity<T>();
        for (int64_t r = 0; r < b.reduced; ++r) {
          const C v = ToCompute(LoadElement<T>(xo, r * inner + j));
          bool take = v > best;
          if constexpr (std::is_floating_point_v<C>) take = take || std::isnan(v);
          if (take) best = v;
        }
        StoreElement<T>(yo, j, FromCompute<T>(best));
      }
      continue;
    }
    for (int64_t j0 = 0; j0 < inner; j0 += kTile) {
      const int64_t n = std::min(kTile, inner - j0);
      SumType<C> acc[kTile] = {};
      for (int64_t r = 0; r < b.reduced; ++r) {
        for (int64_t j = 0; j < n; ++j) {
          acc[j] += static_cast<SumType<C>>(ToCompute(LoadElement<T>(xo, r * inner + j0 + j)));
        }
      }
      for (int64_t j = 0; j < n; ++j) StoreElement<T>(yo, j0 + j, MeanOf<T>(acc[j], b.reduced));
    }
  }
}

template <class T>
Status RunReduce(const ReduceAttrs& a, RunContext& ctx, const Tensor& x, const ReduceMask& mask,
                 Value& output) {
  using C = ComputeType<T>;
  const auto xs = x.shape();
  const size_t rank = xs.size();
  const Ints ys = ReduceShape<int64_t>(a, xs, mask);
  std::byte* y = nullptr;
  IDEM_ASSIGN_OR_RETURN(output, AllocateTensor(ctx, x.element_type(), ys, &y));
  const int64_t out_count = output.tensor().element_count();
  if (out_count == 0) return Status();
  if (x.element_count() > 0) {
    if (const std::optional<ReduceBlock> block = AsBlock(xs, mask)) {
      ReduceBlockRows<T>(a, x.data().data(), y, *block);
      return Status();
    }
  }
  // Kept and reduced axes with their element strides in X. When X is empty the strides are
  // unused (every reduction is over the empty set) and their products may exceed int64.
  Ints strides(rank, 0);
  const bool empty = x.element_count() == 0;
  if (!empty) {
    int64_t stride = 1;
    for (size_t i = rank; i-- > 0;) {
      strides[i] = stride;
      stride *= xs[i];
    }
  }
  Ints kept_dims, kept_strides, red_dims, red_strides;
  int64_t red_count = empty ? 0 : 1;
  for (size_t i = 0; i < rank; ++i) {
    if (mask[i]) {
      red_dims.push_back(xs[i]);
      red_strides.push_back(strides[i]);
      red_count *= empty ? 0 : xs[i];
    } else {
      kept_dims.push_back(xs[i]);
      kept_strides.push_back(strides[i]);
    }
  }
  const std::byte* px = x.data().data();
  Ints kpos(kept_dims.size(), 0), rpos(red_dims.size(), 0);
  int64_t base = 0;
  for (int64_t o = 0; o < out_count; ++o) {
    int64_t offset = base;
    std::fill(rpos.begin(), rpos.end(), 0);
    if (a.kind == ReduceKind::kMax) {
      C best = MaxIdentity<T>();
      for (int64_t r = 0; r < red_count; ++r) {
        const C v = ToCompute(LoadElement<T>(px, offset));
        bool take = v > best;
        if constexpr (std::is_floating_point_v<C>) take = take || std::isnan(v);
        if (take) best = v;
        for (size_t i = red_dims.size(); i-- > 0;) {
          offset += red_strides[i];
          if (++rpos[i] < red_dims[i]) break;
          offset -= red_strides[i] * red_dims[i];
          rpos[i] = 0;
        }
      }
      StoreElement<T>(y, o, FromCompute<T>(best));
    } else {
      using Sum = SumType<C>;
      Sum sum = 0;
      for (int64_t r = 0; r < red_count; ++r) {
        sum += static_cast<Sum>(ToCompute(LoadElement<T>(px, offset)));
        for (size_t i = red_dims.size(); i-- > 0;) {
          offset += red_strides[i];
          if (++rpos[i] < red_dims[i]) break;
          offset -= red_strides[i] * red_dims[i];
          rpos[i] = 0;
        }
      }
      StoreElement<T>(y, o, MeanOf<T>(sum, red_count));
    }
    for (size_t i = kept_dims.size(); i-- > 0;) {
      base += kept_strides[i];
      if (++kpos[i] < kept_dims[i]) break;
      base -= kept_strides[i] * kept_dims[i];
      kpos[i] = 0;
    }
  }
  return Status();
}

Result<std::unique_ptr<Kernel>> CreateReduce(const ReduceAttrs& attrs, const Facts& facts) {
  (void)facts;
  return MakeFunctionKernel(
      attrs,
      [](const ReduceAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
         std::span<Value> outputs) -> Status {
        const Tensor& x = inputs[0]->tensor();
        Ints axes;
        if (a.axes_input && inputs.size() > 1 && inputs[1] != nullptr) {
          const Tensor& t = inputs[1]->tensor();
          if (t.rank() != 1) {
            return InvalidArgument(
                fmt::format("{}: input 'axes' has rank {}; it must be 1-D", a.op, t.rank()));
          }
          axes = ReadInt64s(t);
        } else if (a.axes) {
          axes.assign(a.axes->begin(), a.axes->end());
        }
        if (a.noop_with_empty_axes && axes.empty()) {
          outputs[0] = *inputs[0];  // a reduction over no axes: the input itself
          return Status();
        }
        IDEM_ASSIGN_OR_RETURN(ReduceMask mask, ReducedAxes(a, x.rank(), axes));
        auto run = [&](auto tag) -> Status {
          return RunReduce<decltype(tag)>(a, ctx, x, mask, outputs[0]);
        };
        if (a.kind == ReduceKind::kMax) return DispatchNumericOrBool(x.element_type(), a.op, run);
        return DispatchNumeric(x.element_type(), a.op, run);
      });
}

// ---- Registration -----------------------------------------------------------------------------

KernelSchema ReduceSchema(ReduceKind kind, int version) {
  using E = ElementType;
  KernelSchema s;
  s.op_type = kind == ReduceKind::kMax ? "ReduceMax" : "ReduceMean";
  s.since_version = version;
  s.inputs = {{"data", "T"}};
  s.outputs = {{"reduced", "T"}};
  std::vector<E> types = {E::kUint32,  E::kUint64, E::kInt32, E::kInt64,
                          E::kFloat16, E::kFloat,  E::kDouble};
  if (version >= 13) types.push_back(E::kBfloat16);
  if (kind == ReduceKind::kMax && version >= 12) {
    types.push_back(E::kUint8);
    types.push_back(E::kInt8);
  }
  if (kind == ReduceKind::kMax && version >= 20) types.push_back(E::kBool);
  s.constraints = {{"T", TensorTypes(types)}};
  if (version >= 18) {
    s.inputs.push_back({"axes", "tensor(int64)", FormalParameter::Arity::kOptional});
    s.constraints.push_back({"tensor(int64)", {Type::Tensor(E::kInt64)}});
    s.attributes = {"keepdims", "noop_with_empty_axes"};
  } else {
    s.attributes = {"axes", "keepdims"};
  }
  s.foldable = true;
  DefineOp<ReduceAttrs>(
      s, [kind](const NodeContext& ctx) { return ParseReduce(ctx, kind); }, InferReduce,
      CreateReduce);
  return s;
}

}  // namespace

void RegisterReduceKernels(KernelRegistry& registry) {
  for (int v : {1, 11, 12, 13, 18, 20}) registry.Register(ReduceSchema(ReduceKind::kMax, v));
  for (int v : {1, 11, 13, 18}) registry.Register(ReduceSchema(ReduceKind::kMean, v));
}

}  // namespace idem
