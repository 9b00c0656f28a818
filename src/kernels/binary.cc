// Add, Sub, Mul, Div, Pow, Max, Equal, GreaterOrEqual: elementwise operators over two inputs (Max:
// one or more) with broadcasting.
//
// Broadcasting, one shape rule for every operator here (BinaryShape, MaxShape), used over Dim at
// plan time and over int64_t at run time:
// - numpy (multidirectional) broadcasting from Add/Sub/Mul/Div-7, Pow-7, Equal-7 and Max-8 on;
// - the legacy rule of Add/Sub/Mul/Div-1 and -6, Pow-1 and Equal-1: with broadcast=0 both shapes
//   must be equal; with broadcast=1, B is either one element (of rank <= A's) or has A's dims
//   axis..axis+rank(B)-1 exactly (`axis` defaults to the suffix); the result has A's shape;
// - Max-1 and Max-6: every input has the same shape.
//
// Numerics (bit-exact with numpy's float32/float16 and ONNX Runtime): Add, Sub, Mul and Div are
// one IEEE operation per element in the element's type; float16 and bfloat16 are widened to
// float, computed in float and rounded once to nearest-even (double rounding is innocuous for
// these operations at these precisions). Integers wrap around (two's complement, computed in an
// unsigned type of at least `unsigned int`). Integer Div truncates toward zero; a zero divisor is
// an error, as ONNX Runtime 1.30 reports it ("integer division by zero"; C++ leaves it undefined);
// the minimum of a signed type divided by -1 wraps to the minimum (ONNX Runtime computes int8 and
// int16 that way; it crashes on int32/int64, where C++ leaves it undefined). Max, Equal and
// GreaterOrEqual compare in the element's type (float16/bfloat16 exactly, as float): Max follows
// numpy's maximum (a NaN in either input gives that NaN; otherwise `a > b ? a : b`, so equal
// zeros of either sign give the second). Pow: see PowElement.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {
namespace {

using E = ElementType;

// Moves a kernel's result into its output slot.
Status Emit(Value& out, Result<Value> result) {
  if (!result.ok()) return std::move(result).take_status();
  out = std::move(result).value();
  return {};
}

// ---- Shapes ---------------------------------------------------------------------------------

// The broadcasting attributes of the legacy versions (numpy broadcasting needs none).
struct BinaryAttrs {
  bool legacy = false;          // Add/Sub/Mul/Div before 7, Pow and Equal before 7
  bool broadcast = false;       // legacy broadcast=1
  std::optional<int64_t> axis;  // legacy: where B's dims start among A's (default: the suffix)
};

Result<BinaryAttrs> ParseBinary(const NodeContext& ctx) {
  BinaryAttrs attrs;
  attrs.legacy = ctx.version < 7;
  if (!attrs.legacy) return attrs;
  AttrReader r(ctx.node);
  IDEM_ASSIGN_OR_RETURN(int64_t broadcast, r.IntIn("broadcast", 0, {0, 1}));
  attrs.broadcast = broadcast == 1;
  if (r.has("axis")) {
    IDEM_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis"));
    attrs.axis = axis;
  }
  return attrs;
}

template <class D>
std::string FormatDims(std::span<const D> dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ",";
    const auto v = KnownDim(dims[i]);
    if (v) {
      out += std::to_string(*v);
    } else if constexpr (std::is_same_v<D, Dim>) {
      out += dims[i].param.empty() ? "?" : dims[i].param;
    }
  }
  return out + "]";
}

// The legacy rule: B's dims placed at their position among A's (1 elsewhere), so numpy
// broadcasting of A with the result gives A's shape.
template <class D>
Result<DimsOf<D>> LegacyAlign(const BinaryAttrs& attrs, std::span<const D> a,
                              std::span<const D> b) {
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  if (!attrs.broadcast) {
    bool same = ra == rb;
    for (size_t i = 0; same && i < b.size(); ++i) {
      const auto va = KnownDim(a[i]), vb = KnownDim(b[i]);
      if (va && vb && *va != *vb) same = false;
    }
    if (!same) {
      return InvalidArgument(fmt::format(
          "with broadcast=0 (the legacy rule before opset 7) B's shape must be A's; A is {} and "
          "B is {}",
          FormatDims(a), FormatDims(b)));
    }
    return DimsOf<D>(b.begin(), b.end());
  }
  if (rb > ra) {
    return InvalidArgument(fmt::format(
        "with broadcast=1 (the legacy rule before opset 7) B's rank must not exceed A's; A is {} "
        "and B is {}",
        FormatDims(a), FormatDims(b)));
  }
  DimsOf<D> aligned(static_cast<size_t>(ra), MakeDim<D>(1));
  // One element (a scalar or all dims 1) broadcasts to anything. At plan time B's count may be
  // unknown: only when every known dim is 1 can it still be one element.
  bool maybe_one = true;
  for (const D& d : b) {
    const auto v = KnownDim(d);
    if (v && *v != 1) maybe_one = false;
  }
  const auto count = DimProduct(b);
  if (count && *count == 1) return aligned;
  int64_t axis = attrs.axis.value_or(ra - rb);
  if (axis < 0) axis += ra;
  Status window;
  if (axis < 0 || axis > ra - rb) {
    window = InvalidArgument(fmt::format(
        "with broadcast=1 (the legacy rule before opset 7) axis {} puts B's {} dims outside A's "
        "{}; A is {} and B is {}",
        attrs.axis.value_or(axis), rb, ra, FormatDims(a), FormatDims(b)));
  } else {
    for (int64_t j = 0; j < rb && window.ok(); ++j) {
      const auto va = KnownDim(a[static_cast<size_t>(axis + j)]);
      const auto vb = KnownDim(b[static_cast<size_t>(j)]);
      if (va && vb && *va != *vb) {
        window = InvalidArgument(fmt::format(
            "with broadcast=1 (the legacy rule before opset 7) B's dims must equal A's dims from "
            "axis {} on, or B must have one element; A is {} and B is {}",
            axis, FormatDims(a), FormatDims(b)));
      }
      aligned[static_cast<size_t>(axis + j)] = b[static_cast<size_t>(j)];
    }
  }
  if (!window.ok()) {
    if (!count && maybe_one) return DimsOf<D>(static_cast<size_t>(ra), MakeDim<D>(1));
    return window;
  }
  return aligned;
}

// The output shape of a two-input operator.
template <class D>
Result<DimsOf<D>> BinaryShape(const BinaryAttrs& attrs, std::span<const D> a,
                              std::span<const D> b) {
  if (!attrs.legacy) return BroadcastDims<D>(a, b);
  IDEM_ASSIGN_OR_RETURN(DimsOf<D> aligned, LegacyAlign<D>(attrs, a, b));
  return BroadcastDims<D>(a, std::span<const D>(aligned));
}

// Output type from the facts: `out` elements, the broadcast shape when both ranks are known.
Result<Inference> InferBinary(const BinaryAttrs& attrs, const Facts& facts, std::string_view op,
                              bool same_types, ElementType out) {
  if (facts.size() != 2 || !facts.has(0) || !facts.has(1)) {
    return InvalidModel(fmt::format("{} takes two inputs", op));
  }
  if (same_types && facts.element_type(0) != facts.element_type(1)) {
    return InvalidModel(fmt::format("{}: inputs are {} and {}; both must have one type", op,
                                    facts.type(0).ToString(), facts.type(1).ToString()));
  }
  IDEM_ASSIGN_OR_RETURN(auto dims, InferDims(facts, {0, 1}, [&] {
                          return BinaryShape<Dim>(attrs, *facts.shape(0), *facts.shape(1));
                        }));
  return OneOutput(TensorType(out, std::move(dims)));
}

// The shape rule at run time, then fill(out_bytes, b_dims, out_dims) into a new tensor of
// `out_type` (b_dims: B's dims aligned to A's under the legacy broadcast rule).
template <class Fill>
Result<Value> RunBroadcastInto(RunContext& ctx, const BinaryAttrs& attrs, const Tensor& a,
                               const Tensor& b, ElementType out_type, Fill&& fill) {
  Ints b_dims(b.shape().begin(), b.shape().end());
  if (attrs.legacy) {
    IDEM_ASSIGN_OR_RETURN(b_dims, LegacyAlign<int64_t>(attrs, a.shape(), b.shape()));
  }
  IDEM_ASSIGN_OR_RETURN(Ints dims,
                        BroadcastDims<int64_t>(a.shape(), std::span<const int64_t>(b_dims)));
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Value v, AllocateTensorForOverwrite(ctx, out_type, dims, &out));
  fill(out, std::span<const int64_t>(b_dims), std::span<const int64_t>(dims));
  return v;
}

// body(out_bytes, i, ia, ib) for every output element i (ia, ib: the input elements it reads).
template <class Body>
Result<Value> RunBroadcast(RunContext& ctx, const BinaryAttrs& attrs, const Tensor& a,
                           const Tensor& b, ElementType out_type, Body&& body) {
  return RunBroadcastInto(
      ctx, attrs, a, b, out_type,
      [&](std::byte* out, std::span<const int64_t> b_dims, std::span<const int64_t> dims) {
        ForEachBroadcast(a.shape(), b_dims, dims,
                         [&](int64_t i, int64_t ia, int64_t ib) { body(out, i, ia, ib); });
      });
}

// out = op(a, b) over elements TA, TB giving TO (run by run, vectorizable).
template <class TA, class TB, class TO, class Op>
Result<Value> MapBroadcast(RunContext& ctx, const BinaryAttrs& attrs, const Tensor& a,
                           const Tensor& b, ElementType out_type, Op&& op) {
  return RunBroadcastInto(
      ctx, attrs, a, b, out_type,
      [&](std::byte* out, std::span<const int64_t> b_dims, std::span<const int64_t> dims) {
        MapBroadcastInto<TA, TB, TO>(a.data().data(), a.shape(), b.data().data(), b_dims, dims, out,
                                     op);
      });
}

Status SameElementType(std::string_view op, const Tensor& a, const Tensor& b) {
  if (a.element_type() == b.element_type()) return {};
  return InvalidArgument(
      fmt::format("{}: inputs are tensor({}) and tensor({}); both must have one type", op,
                  ElementTypeName(a.element_type()), ElementTypeName(b.element_type())));
}

// ---- Arithmetic -----------------------------------------------------------------------------

// The unsigned type integer arithmetic on T wraps in: at least `unsigned int`, so uint8/uint16
// operands are not promoted to (signed, overflowing) int.
template <class T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <class T>
WrapType<T> Unsigned(T v) {
  return static_cast<WrapType<T>>(static_cast<std::make_unsigned_t<T>>(v));
}

struct AddFn {
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(Unsigned(a) + Unsigned(b));
    } else {
      return a + b;
    }
  }
};
struct SubFn {
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(Unsigned(a) - Unsigned(b));
    } else {
      return a - b;
    }
  }
};
struct MulFn {
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(Unsigned(a) * Unsigned(b));
    } else {
      return a * b;
    }
  }
};
// Integer division truncates toward zero; the caller refuses zero divisors first. The minimum
// of a signed type divided by -1 wraps (to the minimum) instead of overflowing.
struct DivFn {
  template <class C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return static_cast<C>(WrapType<C>{0} - Unsigned(a));
      }
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};

// Whether any element of the integer tensor t is zero.
template <class T>
bool HasZero(const Tensor& t) {
  const std::byte* p = t.data().data();
  for (int64_t i = 0; i < t.element_count(); ++i) {
    if (LoadElement<T>(p, i) == T{0}) return true;
  }
  return false;
}

// A kernel from a lambda over the attributes (MakeFunctionKernel, as a Kernel pointer).
template <class Attrs, class F>
std::unique_ptr<Kernel> KernelOf(Attrs attrs, F f) {
  return MakeFunctionKernel(std::move(attrs), std::move(f));
}

template <class Fn>
Result<std::unique_ptr<Kernel>> CreateArith(const BinaryAttrs& attrs, std::string op) {
  return KernelOf(
      attrs,
      [op](const BinaryAttrs& attrs, RunContext& ctx, std::span<const Value* const> inputs,
           std::span<Value> outputs) -> Status {
        const Tensor& a = inputs[0]->tensor();
        const Tensor& b = inputs[1]->tensor();
        IDEM_RETURN_IF_ERROR(SameElementType(op, a, b));
        return DispatchNumeric(a.element_type(), op, [&](auto tag) -> Status {
          using T = decltype(tag);
          if constexpr (std::is_integral_v<T> && std::is_same_v<Fn, DivFn>) {
            // What ONNX Runtime does (it checks the divisor before dividing).
            if (HasZero<T>(b)) {
              return InvalidArgument(
                  fmt::format("{}: integer division by zero (B has a zero element)", op));
            }
          }
          return Emit(outputs[0],
                      MapBroadcast<T, T, T>(ctx, attrs, a, b, a.element_type(), [](T x, T y) {
                        return FromCompute<T>(Fn()(ToCompute(x), ToCompute(y)));
                      }));
        });
      });
}

// Add, Sub, Mul, Div share their versions and type sets.
std::vector<ElementType> ArithTypes(int version) {
  std::vector<ElementType> types = {E::kFloat16, E::kFloat, E::kDouble};
  if (version >= 6) {
    for (E e : {E::kUint32, E::kUint64, E::kInt32, E::kInt64}) types.push_back(e);
  }
  if (version >= 13) types.push_back(E::kBfloat16);
  if (version >= 14) {
    for (E e : {E::kUint8, E::kUint16, E::kInt8, E::kInt16}) types.push_back(e);
  }
  return types;
}

// The attribute names of the legacy-broadcasting versions.
std::vector<std::string> LegacyAttributes(int version, bool consumed_inputs) {
  if (version >= 7) return {};
  std::vector<std::string> names = {"axis", "broadcast"};
  if (consumed_inputs && version < 6) names.push_back("consumed_inputs");
  return names;
}

template <class Fn>
KernelSchema ArithSchema(const std::string& op, int version) {
  KernelSchema s;
  s.op_type = op;
  s.since_version = version;
  s.inputs = {{"A", "T"}, {"B", "T"}};
  s.outputs = {{"C", "T"}};
  s.constraints = {{"T", TensorTypes(ArithTypes(version))}};
  s.attributes = LegacyAttributes(version, /*consumed_inputs=*/true);
  s.foldable = true;
  DefineOp<BinaryAttrs>(
      s, ParseBinary,
      [op](const BinaryAttrs& attrs, const Facts& facts) {
        return InferBinary(attrs, facts, op, true, facts.has(0) ? facts.element_type(0) : E{});
      },
      [op](const BinaryAttrs& attrs, const Facts&) { return CreateArith<Fn>(attrs, op); });
  return s;
}

// ---- Pow ------------------------------------------------------------------------------------

// A floating value converted to integer T as ONNX Runtime does on x86-64 (static_cast, which
// truncates toward zero) where that is defined; NaN and values out of T's range (undefined in C++,
// the minimum of T on x86-64) give the minimum of T.
template <class T>
T FloatToIntLikeOrt(double v) {
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = -lo;  // 2^(bits-1): the first value past the maximum
  if (!(v >= lo && v < hi)) return std::numeric_limits<T>::min();
  return static_cast<T>(v);
}

// base^exponent for integer T, exact and wrapping (numpy's integer power), by squaring. A
// negative exponent gives the truncated quotient: 1 for base 1, +-1 for base -1, 0 otherwise;
// base 0 gives the minimum of T (ONNX Runtime computes pow(0, negative) = inf in double and
// converts it, which is the minimum on x86-64).
template <class T>
T IntPow(T base, bool negative, uint64_t magnitude) {
  if (negative) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (magnitude & 1u) != 0 ? T{-1} : T{1};
    }
    if (base == 0) return std::numeric_limits<T>::min();
    return 0;
  }
  WrapType<T> result = 1, square = Unsigned(base);
  while (magnitude != 0) {
    if ((magnitude & 1u) != 0) result = static_cast<WrapType<T>>(result * square);
    square = static_cast<WrapType<T>>(square * square);
    magnitude >>= 1;
  }
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(result));
}

// One element of Pow: x of T, exponent y of T1.
// - T float/float16/bfloat16 with a float/float16/bfloat16 exponent: std::pow in float, rounded
//   once to T (numpy's float32 power is powf);
// - T double, or a double or integer exponent: std::pow in double, rounded to T (what ONNX Runtime
//   computes for a float base and an integer exponent: C++'s pow(float, int64) is double);
// - integer T with an integer exponent: exact, wrapping (IntPow);
// - integer T with a floating exponent: std::pow in double, converted as FloatToIntLikeOrt.
template <class T, class T1>
T PowElement(T x, T1 y) {
  if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_integral_v<T1>) {
      if constexpr (std::is_signed_v<T1>) {
        const bool negative = y < 0;
        const uint64_t magnitude =
            negative ? uint64_t{0} - static_cast<uint64_t>(static_cast<int64_t>(y))
                     : static_cast<uint64_t>(y);
        return IntPow<T>(x, negative, magnitude);
      } else {
        return IntPow<T>(x, false, static_cast<uint64_t>(y));
      }
    } else {
      return FloatToIntLikeOrt<T>(
          std::pow(static_cast<double>(x), static_cast<double>(ToCompute(y))));
    }
  } else {
    using C = ComputeType<T>;
    if constexpr (std::is_same_v<C, float> && std::is_same_v<ComputeType<T1>, float>) {
      return FromCompute<T>(std::pow(ToCompute(x), ToCompute(y)));
    } else {
      const double r =
          std::pow(static_cast<double>(ToCompute(x)), static_cast<double>(ToCompute(y)));
      return FromCompute<T>(static_cast<C>(r));
    }
  }
}

// Whether the fast kernels square: Pow of a float X by a constant exponent of one element equal
// to 2 (SessionOptions::reference_kernels off).
bool SquaresFloats(const Facts& facts) {
  if (facts.context().reference_kernels || !facts.has(0) || facts.element_type(0) != E::kFloat) {
    return false;
  }
  const Value* y = facts.constant(1);
  if (y == nullptr || !y->is_tensor() || y->tensor().element_count() != 1) return false;
  const Tensor& t = y->tensor();
  switch (t.element_type()) {
    case E::kInt64:
      return t.data_as<int64_t>()[0] == 2;
    case E::kInt32:
      return t.data_as<int32_t>()[0] == 2;
    default: {
      const ScratchVector<double> v = ReadDoubles(t);
      return v.size() == 1 && v[0] == 2.0;
    }
  }
}

// Pow's base types: int32, int64 and the floats.
template <class F>
Status DispatchPowBase(ElementType type, F&& f) {
  if (type == E::kInt32) return f(int32_t{});
  if (type == E::kInt64) return f(int64_t{});
  return DispatchFloat(type, "Pow", std::forward<F>(f));
}

KernelSchema PowSchema(int version) {
  std::vector<ElementType> base = {E::kFloat16, E::kFloat, E::kDouble};
  if (version >= 12) {
    base.push_back(E::kInt32);
    base.push_back(E::kInt64);
  }
  if (version >= 13) base.push_back(E::kBfloat16);
  KernelSchema s;
  s.op_type = "Pow";
  s.since_version = version;
  s.outputs = {{"Z", "T"}};
  if (version < 12) {
    s.inputs = {{"X", "T"}, {"Y", "T"}};
    s.constraints = {{"T", TensorTypes(base)}};
  } else {
    std::vector<ElementType> exponent = NumericTypes(version >= 15);
    s.inputs = {{"X", "T"}, {"Y", "T1"}};
    s.constraints = {{"T", TensorTypes(base)}, {"T1", TensorTypes(exponent)}};
  }
  s.attributes = LegacyAttributes(version, /*consumed_inputs=*/false);
  s.foldable = true;
  const bool same_types = version < 12;
  DefineOp<BinaryAttrs>(
      s, ParseBinary,
      [same_types](const BinaryAttrs& attrs, const Facts& facts) {
        return InferBinary(attrs, facts, "Pow", same_types,
                           facts.has(0) ? facts.element_type(0) : E{});
      },
      [same_types](const BinaryAttrs& attrs,
                   const Facts& facts) -> Result<std::unique_ptr<Kernel>> {
        if (SquaresFloats(facts)) {
          // The fast kernels' Pow(x, 2) on float: x * x, one rounding (what ONNX Runtime
          // computes for this exponent; within an ulp of std::pow's result).
          return KernelOf(
              attrs,
              [](const BinaryAttrs& attrs, RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) -> Status {
                const Tensor& x = inputs[0]->tensor();
                const Tensor& y = inputs[1]->tensor();
                return DispatchNumeric(y.element_type(), "Pow", [&](auto ytag) {
                  using T1 = decltype(ytag);
                  return Emit(outputs[0],
                              MapBroadcast<float, T1, float>(ctx, attrs, x, y, E::kFloat,
                                                             [](float v, T1) { return v * v; }));
                });
              });
        }
        return KernelOf(
            attrs,
            [same_types](const BinaryAttrs& attrs, RunContext& ctx,
                         std::span<const Value* const> inputs, std::span<Value> outputs) -> Status {
              const Tensor& x = inputs[0]->tensor();
              const Tensor& y = inputs[1]->tensor();
              if (same_types) IDEM_RETURN_IF_ERROR(SameElementType("Pow", x, y));
              return DispatchPowBase(x.element_type(), [&](auto xtag) -> Status {
                using T = decltype(xtag);
                return DispatchNumeric(y.element_type(), "Pow", [&](auto ytag) -> Status {
                  using T1 = decltype(ytag);
                  return Emit(outputs[0], MapBroadcast<T, T1, T>(ctx, attrs, x, y, x.element_type(),
                                                                 PowElement<T, T1>));
                });
              });
            });
      });
  return s;
}

// ---- Comparisons ----------------------------------------------------------------------------

struct EqualFn {
  template <class C>
  bool operator()(C a, C b) const {
    return a == b;
  }
};
struct GreaterOrEqualFn {
  template <class C>
  bool operator()(C a, C b) const {
    return a >= b;
  }
};

template <class Fn>
Result<std::unique_ptr<Kernel>> CreateCompare(const BinaryAttrs& attrs, std::string op) {
  return KernelOf(
      attrs,
      [op](const BinaryAttrs& attrs, RunContext& ctx, std::span<const Value* const> inputs,
           std::span<Value> outputs) -> Status {
        const Tensor& a = inputs[0]->tensor();
        const Tensor& b = inputs[1]->tensor();
        IDEM_RETURN_IF_ERROR(SameElementType(op, a, b));
        if (a.element_type() == E::kString) {
          if constexpr (std::is_same_v<Fn, EqualFn>) {
            const auto sa = a.strings(), sb = b.strings();
            IDEM_ASSIGN_OR_RETURN(
                outputs[0], RunBroadcast(ctx, attrs, a, b, E::kBool,
                                         [&](std::byte* out, int64_t i, int64_t ia, int64_t ib) {
                                           StoreElement<bool>(out, i, sa[ia] == sb[ib]);
                                         }));
            return Status();
          }
        }
        return DispatchNumericOrBool(a.element_type(), op, [&](auto tag) -> Status {
          using T = decltype(tag);
          return Emit(outputs[0],
                      MapBroadcast<T, T, bool>(ctx, attrs, a, b, E::kBool, [](T x, T y) {
                        return Fn()(ToCompute(x), ToCompute(y));
                      }));
        });
      });
}

template <class Fn>
KernelSchema CompareSchema(const std::string& op, int version, std::vector<ElementType> types) {
  KernelSchema s;
  s.op_type = op;
  s.since_version = version;
  s.inputs = {{"A", "T"}, {"B", "T"}};
  s.outputs = {{"C", "T1"}};
  s.constraints = {{"T", TensorTypes(types)}, {"T1", TensorTypes(std::vector{E::kBool})}};
  s.attributes = LegacyAttributes(version, /*consumed_inputs=*/false);
  s.foldable = true;
  DefineOp<BinaryAttrs>(
      s, ParseBinary,
      [op](const BinaryAttrs& attrs, const Facts& facts) {
        return InferBinary(attrs, facts, op, true, E::kBool);
      },
      [op](const BinaryAttrs& attrs, const Facts&) { return CreateCompare<Fn>(attrs, op); });
  return s;
}

std::vector<ElementType> EqualTypes(int version) {
  if (version < 11) return {E::kBool, E::kInt32, E::kInt64};
  std::vector<ElementType> types = NumericTypes(version >= 13);
  types.push_back(E::kBool);
  if (version >= 19) types.push_back(E::kString);
  return types;
}

// ---- Max ------------------------------------------------------------------------------------

struct MaxAttrs {
  bool broadcast = true;  // Max-8 on; Max-1 and Max-6 need one shape
};

// numpy's maximum: a NaN in a gives a, in b gives b; otherwise the larger (b when equal).
template <class T>
T MaxOf(T a, T b) {
  const auto ca = ToCompute(a), cb = ToCompute(b);
  if constexpr (!std::is_integral_v<decltype(ca)>) {
    if (std::isnan(ca)) return a;
  }
  return ca > cb ? a : b;
}

// The output shape of Max over its inputs' shapes.
template <class D>
Result<DimsOf<D>> MaxShape(const MaxAttrs& attrs, std::span<const std::span<const D>> in) {
  DimsOf<D> out(in[0].begin(), in[0].end());
  for (size_t k = 1; k < in.size(); ++k) {
    if (attrs.broadcast) {
      IDEM_ASSIGN_OR_RETURN(out, BroadcastDims<D>(std::span<const D>(out), in[k]));
      continue;
    }
    bool same = in[k].size() == out.size();
    for (size_t d = 0; same && d < out.size(); ++d) {
      const auto vo = KnownDim(out[d]), vk = KnownDim(in[k][d]);
      if (vo && vk && *vo != *vk) same = false;
      if (!vo && vk) out[d] = in[k][d];
    }
    if (!same) {
      return InvalidArgument(fmt::format(
          "Max before opset 8 needs inputs of one shape (no broadcasting); input 0 is {} and "
          "input {} is {}",
          FormatDims(in[0]), k, FormatDims(in[k])));
    }
  }
  return out;
}

KernelSchema MaxSchema(int version) {
  KernelSchema s;
  s.op_type = "Max";
  s.since_version = version;
  s.inputs = {{"data_0", "T", FormalParameter::Arity::kVariadic}};
  s.outputs = {{"max", "T"}};
  s.constraints = {
      {"T", TensorTypes(version >= 12 ? NumericTypes(version >= 13) : FloatTypes(false))}};
  if (version < 6) s.attributes = {"consumed_inputs"};
  s.foldable = true;
  DefineOp<MaxAttrs>(
      s,
      [](const NodeContext& ctx) -> Result<MaxAttrs> {
        MaxAttrs attrs;
        attrs.broadcast = ctx.version >= 8;
        return attrs;
      },
      [](const MaxAttrs& attrs, const Facts& facts) -> Result<Inference> {
        if (facts.size() == 0) return InvalidModel("Max takes at least one input");
        std::vector<std::span<const Dim>> shapes;
        bool ranks_known = true;
        for (size_t i = 0; i < facts.size(); ++i) {
          if (!facts.has(i)) return InvalidModel(fmt::format("Max: input {} is omitted", i));
          if (facts.element_type(i) != facts.element_type(0)) {
            return InvalidModel(fmt::format("Max: inputs are {} and {}; all must have one type",
                                            facts.type(0).ToString(), facts.type(i).ToString()));
          }
          if (facts.shape(i)) {
            shapes.emplace_back(*facts.shape(i));
          } else {
            ranks_known = false;
          }
        }
        std::optional<std::vector<Dim>> dims;
        if (ranks_known) {
          IDEM_ASSIGN_OR_RETURN(dims, MaxShape<Dim>(attrs, shapes));
        } else if (!shapes.empty()) {
          // The known shapes must still agree among themselves.
          IDEM_RETURN_IF_ERROR(MaxShape<Dim>(attrs, shapes).status());
        }
        return OneOutput(TensorType(facts.element_type(0), std::move(dims)));
      },
      [](const MaxAttrs& attrs, const Facts&) -> Result<std::unique_ptr<Kernel>> {
        return KernelOf(
            attrs,
            [](const MaxAttrs& attrs, RunContext& ctx, std::span<const Value* const> inputs,
               std::span<Value> outputs) -> Status {
              ScratchVector<std::span<const int64_t>> shapes;
              const Tensor& first = inputs[0]->tensor();
              for (const Value* v : inputs) {
                IDEM_RETURN_IF_ERROR(SameElementType("Max", first, v->tensor()));
                shapes.push_back(v->tensor().shape());
              }
              IDEM_ASSIGN_OR_RETURN(Ints dims, MaxShape<int64_t>(attrs, shapes));
              return DispatchNumeric(first.element_type(), "Max", [&](auto tag) -> Status {
                using T = decltype(tag);
                std::byte* out = nullptr;
                IDEM_ASSIGN_OR_RETURN(outputs[0],
                                      AllocateTensor(ctx, first.element_type(), dims, &out));
                // out = input 0 broadcast, then out = max(out, input k) for each further input, in
                // order (numpy's reduce over np.maximum).
                for (size_t k = 0; k < inputs.size(); ++k) {
                  const std::byte* p = inputs[k]->tensor().data().data();
                  ForEachBroadcast(std::span<const int64_t>(dims), shapes[k], dims,
                                   [&](int64_t i, int64_t, int64_t ik) {
                                     const T v = LoadElement<T>(p, ik);
                                     StoreElement<T>(out, i,
                                                     k == 0 ? v : MaxOf(LoadElement<T>(out, i), v));
                                   });
                }
                return Status();
              });
            });
      });
  return s;
}

}  // namespace

void RegisterBinaryKernels(KernelRegistry& registry) {
  for (int version : {1, 6, 7, 13, 14}) {
    registry.Register(ArithSchema<AddFn>("Add", version));
    registry.Register(ArithSchema<SubFn>("Sub", version));
    registry.Register(ArithSchema<MulFn>("Mul", version));
    registry.Register(ArithSchema<DivFn>("Div", version));
  }
  for (int version : {1, 7, 12, 13, 15}) registry.Register(PowSchema(version));
  for (int version : {1, 6, 8, 12, 13}) registry.Register(MaxSchema(version));
  for (int version : {1, 7, 11, 13, 19}) {
    registry.Register(CompareSchema<EqualFn>("Equal", version, EqualTypes(version)));
  }
  for (int version : {12, 16}) {
    registry.Register(
        CompareSchema<GreaterOrEqualFn>("GreaterOrEqual", version, NumericTypes(version >= 16)));
  }
}

}  // namespace idem
