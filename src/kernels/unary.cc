// Neg, Sqrt, Log, Tanh, Sigmoid, Relu, LeakyRelu, HardSigmoid, Clip: one input, an output of its
// type and shape.
//
// Numerics: float16 and bfloat16 are widened to float, computed in float and rounded once to
// nearest-even; float is computed in float, double in double (std:: functions, so the same bits
// on every run). Neg and Sqrt are one IEEE operation (bit-exact with numpy); Relu, HardSigmoid
// and Clip are written as numpy's reference formulas (np.maximum(x, 0),
// clip(x * alpha + beta, 0, 1)), so they give numpy's bits, zeros' signs included; LeakyRelu is
// the spec's `x >= 0 ? x : alpha * x`, which keeps -0 (numpy's formula would give +0). Log, Tanh
// and Sigmoid (1 / (1 + exp(-x))) are within a few ulps of the exact result (ONNX's backend
// tolerances). Integers (Neg, Relu, Clip) are exact; Neg of the minimum wraps to the minimum (two's
// complement, computed unsigned).
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "src/kernels/dispatch.h"
#include "src/kernels/fast/vector_math.h"
#include "src/kernels/op.h"

namespace idem {
namespace {

using E = ElementType;

template <class Attrs, class F>
std::unique_ptr<Kernel> KernelOf(Attrs attrs, F f) {
  return MakeFunctionKernel(std::move(attrs), std::move(f));
}

// numpy's maximum and minimum (the float loops): a NaN first operand is kept; otherwise
// `a > b ? a : b` (`a < b ? a : b`), so a NaN second operand or equal operands give b.
template <class C>
C NpMaximum(C a, C b) {
  if constexpr (!std::is_integral_v<C>) {
    if (std::isnan(a)) return a;
  }
  return a > b ? a : b;
}
template <class C>
C NpMinimum(C a, C b) {
  if constexpr (!std::is_integral_v<C>) {
    if (std::isnan(a)) return a;
  }
  return a < b ? a : b;
}

// Moves a kernel's result into its output slot.
Status Emit(Value& out, Result<Value> result) {
  if (!result.ok()) return std::move(result).take_status();
  out = std::move(result).value();
  return {};
}

// ---- The elementwise functions (on the compute type C) --------------------------------------

struct NoAttrs {};

struct NegFn {
  template <class C>
  C operator()(const NoAttrs&, C x) const {
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;
      using W = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, U>;
      return static_cast<C>(static_cast<U>(W{0} - static_cast<W>(static_cast<U>(x))));
    } else {
      return -x;
    }
  }
};
struct SqrtFn {
  template <class C>
  C operator()(const NoAttrs&, C x) const {
    return std::sqrt(x);
  }
};
struct LogFn {
  template <class C>
  C operator()(const NoAttrs&, C x) const {
    return std::log(x);
  }
};
struct TanhFn {
  template <class C>
  C operator()(const NoAttrs&, C x) const {
    return std::tanh(x);
  }
};
// numpy's reference, 1 / (1 + exp(-x)): exp(-x) overflows to inf for x < -88 (float), giving 0.
struct SigmoidFn {
  template <class C>
  C operator()(const NoAttrs&, C x) const {
    return C(1) / (C(1) + std::exp(-x));
  }
};
struct ReluFn {
  template <class C>
  C operator()(const NoAttrs&, C x) const {
    return NpMaximum(x, C(0));
  }
};

struct LeakyReluAttrs {
  float alpha = 0.01f;
};
// The spec's rule as written: x for x >= 0 (so -0 stays -0, as in ONNX Runtime; numpy's
// clip(x, 0, inf) + clip(x, -inf, 0) * alpha gives +0 there), alpha * x otherwise (a NaN is
// quieted by the product, as numpy's formula quiets it).
struct LeakyReluFn {
  template <class C>
  C operator()(const LeakyReluAttrs& a, C x) const {
    return x >= C(0) ? x : x * static_cast<C>(a.alpha);
  }
};

struct HardSigmoidAttrs {
  float alpha = 0.2f;
  float beta = 0.5f;
};
struct HardSigmoidFn {
  template <class C>
  C operator()(const HardSigmoidAttrs& a, C x) const {
    const C scaled = x * static_cast<C>(a.alpha);
    const C shifted = scaled + static_cast<C>(a.beta);
    return NpMinimum(NpMaximum(shifted, C(0)), C(1));
  }
};

// ---- Definitions ----------------------------------------------------------------------------

// Which dispatch an operator's type sets need.
enum class Types { kFloat, kSignedOrFloat, kNumeric };

template <Types kTypes, class F>
Status Dispatch(ElementType e, std::string_view op, F&& f) {
  if constexpr (kTypes == Types::kNumeric) {
    return DispatchNumeric(e, op, std::forward<F>(f));
  } else {
    if constexpr (kTypes == Types::kSignedOrFloat) {
      switch (e) {
        case E::kInt8:
          return f(int8_t{});
        case E::kInt16:
          return f(int16_t{});
        case E::kInt32:
          return f(int32_t{});
        case E::kInt64:
          return f(int64_t{});
        default:
          break;
      }
    }
    return DispatchFloat(e, op, std::forward<F>(f));
  }
}

// The output: the input's type and shape.
Result<Inference> InferSame(const Facts& facts, std::string_view op) {
  if (facts.size() != 1 || !facts.has(0)) {
    return InvalidModel(fmt::format("{} takes one input", op));
  }
  return OneOutput(TensorType(facts.element_type(0), facts.shape(0)));
}

struct UnaryDef {
  const char* op;
  std::vector<int> versions;
  std::string input = "X";
  std::string output = "Y";
};

// The fast kernels' float Log, Tanh and Sigmoid (SessionOptions::reference_kernels off): SLEEF's
// vectorized functions (src/kernels/fast/vector_math.h: about 1 ulp, 2 for Sigmoid, the same
// bits on every SIMD target) instead of the reference's std:: calls in double.
using FloatMap = void (*)(std::span<const float>, std::span<float>);
FloatMap FastMapOf(std::string_view op) {
  if (op == "Log") return fast::Log;
  if (op == "Tanh") return fast::Tanh;
  if (op == "Sigmoid") return fast::Sigmoid;
  return nullptr;
}

// Registers every version of a one-input operator y = fn(attrs, x). `types(version)` is the
// version's type set, `attributes(version)` its attribute names, `parse` reads the attributes.
template <class Attrs, class Fn, Types kTypes, class TypesOf, class AttributesOf, class Parse>
void RegisterUnary(KernelRegistry& registry, const UnaryDef& def, TypesOf types,
                   AttributesOf attributes, Parse parse) {
  for (int version : def.versions) {
    KernelSchema s;
    s.op_type = def.op;
    s.since_version = version;
    s.inputs = {{def.input, "T"}};
    s.outputs = {{def.output, "T"}};
    s.constraints = {{"T", TensorTypes(types(version))}};
    s.attributes = attributes(version);
    s.foldable = true;
    const std::string op = def.op;
    DefineOp<Attrs>(
        s, parse, [op](const Attrs&, const Facts& facts) { return InferSame(facts, op); },
        [op](const Attrs& attrs, const Facts& facts) -> Result<std::unique_ptr<Kernel>> {
          const FloatMap fast_map = facts.context().reference_kernels ? nullptr : FastMapOf(op);
          return KernelOf(
              attrs,
              [op, fast_map](const Attrs& attrs, RunContext& ctx,
                             std::span<const Value* const> inputs,
                             std::span<Value> outputs) -> Status {
                const Tensor& x = inputs[0]->tensor();
                if (fast_map != nullptr && x.element_type() == ElementType::kFloat) {
                  float* y = nullptr;
                  IDEM_ASSIGN_OR_RETURN(outputs[0], AllocateTensorForOverwriteAs(
                                                        ctx, ElementType::kFloat, x.shape(), &y));
                  const auto n = static_cast<size_t>(x.element_count());
                  if (n > 0) fast_map(x.data_as<float>(), std::span<float>(y, n));
                  return Status();
                }
                return Dispatch<kTypes>(x.element_type(), op, [&](auto tag) -> Status {
                  using T = decltype(tag);
                  return Emit(outputs[0], MapUnary<T, T>(ctx, x, x.element_type(), [&](T v) {
                                return FromCompute<T>(Fn()(attrs, ToCompute(v)));
                              }));
                });
              });
        });
    registry.Register(std::move(s));
  }
}

Result<NoAttrs> ParseNone(const NodeContext&) { return NoAttrs{}; }

// float16, float, double; bfloat16 from `bf16_since`.
auto FloatsFrom(int bf16_since) {
  return [bf16_since](int version) { return FloatTypes(version >= bf16_since); };
}
// consumed_inputs (a legacy optimization hint, ignored) in version 1 only, plus `names`.
auto AttributesWith(const std::vector<std::string>& names) {
  return [names](int version) {
    std::vector<std::string> out = names;
    if (version < 6) out.push_back("consumed_inputs");
    return out;
  };
}

// ---- Clip -----------------------------------------------------------------------------------

// Clip-1 and Clip-6 take the bounds as attributes; Clip-11 on as optional scalar inputs.
struct ClipAttrs {
  bool bounds_are_inputs = false;
  float min = std::numeric_limits<float>::lowest();
  float max = std::numeric_limits<float>::max();
};

Result<ClipAttrs> ParseClip(const NodeContext& ctx) {
  ClipAttrs attrs;
  attrs.bounds_are_inputs = ctx.version >= 11;
  if (attrs.bounds_are_inputs) return attrs;
  AttrReader r(ctx.node);
  IDEM_ASSIGN_OR_RETURN(attrs.min, r.Float("min", std::numeric_limits<float>::lowest()));
  IDEM_ASSIGN_OR_RETURN(attrs.max, r.Float("max", std::numeric_limits<float>::max()));
  return attrs;
}

// min/max inputs must hold one element: a scalar, as the spec says, or a one-element vector,
// which ONNX Runtime also takes.
template <class D>
Status CheckClipBound(std::span<const D> dims, const char* name) {
  const auto count = DimProduct(dims);
  if (dims.size() > 1 || (count && *count != 1)) {
    std::vector<std::string> parts;
    for (const D& d : dims) {
      const auto v = KnownDim(d);
      parts.push_back(v ? std::to_string(*v) : "?");
    }
    return InvalidArgument(
        fmt::format("Clip: {} must be a scalar (a tensor of empty shape); it has "
                    "shape [{}]",
                    name, fmt::join(parts, ",")));
  }
  return {};
}

Result<Inference> InferClip(const ClipAttrs& attrs, const Facts& facts) {
  const size_t inputs = attrs.bounds_are_inputs ? 3 : 1;
  if (facts.size() > inputs || !facts.has(0)) {
    return InvalidModel(fmt::format("Clip-{} takes {}", facts.context().version,
                                    inputs == 1 ? "one input (the bounds are attributes)"
                                                : "the input and optional min and max"));
  }
  if (attrs.bounds_are_inputs) {
    const char* names[] = {"", "min", "max"};
    for (size_t i = 1; i < 3; ++i) {
      if (!facts.has(i)) continue;
      if (facts.element_type(i) != facts.element_type(0)) {
        return InvalidModel(fmt::format("Clip: {} is {} but the input is {}; both are type T",
                                        names[i], facts.type(i).ToString(),
                                        facts.type(0).ToString()));
      }
      if (facts.shape(i)) {
        IDEM_RETURN_IF_ERROR(CheckClipBound<Dim>(*facts.shape(i), names[i]));
      }
    }
  }
  return OneOutput(TensorType(facts.element_type(0), facts.shape(0)));
}

// The default bounds: numeric_limits<T>::lowest() and max() (for float16 and bfloat16 their
// largest finite values, as ONNX Runtime's).
template <class T>
T Lowest() {
  if constexpr (std::is_same_v<T, Float16>) {
    return T{0xFBFF};
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return T{0xFF7F};
  } else {
    return std::numeric_limits<T>::lowest();
  }
}
template <class T>
T Highest() {
  if constexpr (std::is_same_v<T, Float16>) {
    return T{0x7BFF};
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return T{0x7F7F};
  } else {
    return std::numeric_limits<T>::max();
  }
}

// Min(max, Max(input, min)) as ONNX Runtime computes it, compared in the compute type and giving
// an element unrounded (the input's, or a bound's): x < lo gives lo (hi when lo > hi, Clip-13's
// rule), x > hi gives hi. A NaN input stays NaN and a NaN bound clips nothing (as ONNX Runtime
// and numpy give).
Result<std::unique_ptr<Kernel>> CreateClip(const ClipAttrs& attrs, const Facts&) {
  return KernelOf(
      attrs,
      [](const ClipAttrs& attrs, RunContext& ctx, std::span<const Value* const> inputs,
         std::span<Value> outputs) -> Status {
        const Tensor& x = inputs[0]->tensor();
        return DispatchNumeric(x.element_type(), "Clip", [&](auto tag) -> Status {
          using T = decltype(tag);
          using C = ComputeType<T>;
          T lo_t = Lowest<T>(), hi_t = Highest<T>();
          C lo = ToCompute(lo_t), hi = ToCompute(hi_t);
          if (!attrs.bounds_are_inputs) {
            // Clip-1/6 (float types only) compare with the float attributes themselves.
            if constexpr (std::is_integral_v<C>) {
              return dispatch_internal::Unsupported(x.element_type(), "Clip before opset 12");
            } else {
              lo = static_cast<C>(attrs.min);
              hi = static_cast<C>(attrs.max);
              lo_t = FromCompute<T>(lo);
              hi_t = FromCompute<T>(hi);
            }
          } else {
            const char* names[] = {"", "min", "max"};
            for (size_t i = 1; i < 3 && i < inputs.size(); ++i) {
              if (inputs[i] == nullptr) continue;
              const Tensor& b = inputs[i]->tensor();
              if (b.element_type() != x.element_type()) {
                return InvalidArgument(fmt::format(
                    "Clip: {} is tensor({}) but the input is tensor({})", names[i],
                    ElementTypeName(b.element_type()), ElementTypeName(x.element_type())));
              }
              IDEM_RETURN_IF_ERROR(CheckClipBound<int64_t>(b.shape(), names[i]));
              (i == 1 ? lo_t : hi_t) = LoadElement<T>(b.data().data(), 0);
            }
            lo = ToCompute(lo_t);
            hi = ToCompute(hi_t);
          }
          return Emit(outputs[0], MapUnary<T, T>(ctx, x, x.element_type(), [&](T v) {
                        const C c = ToCompute(v);
                        if (c < lo) return lo > hi ? hi_t : lo_t;
                        if (c > hi) return hi_t;
                        return v;
                      }));
        });
      });
}

void RegisterClip(KernelRegistry& registry) {
  for (int version : {1, 6, 11, 12, 13}) {
    KernelSchema s;
    s.op_type = "Clip";
    s.since_version = version;
    s.outputs = {{"output", "T"}};
    if (version < 11) {
      s.inputs = {{"input", "T"}};
      s.attributes = {"max", "min"};
      if (version < 6) s.attributes.push_back("consumed_inputs");
    } else {
      s.inputs = {{"input", "T"},
                  {"min", "T", FormalParameter::Arity::kOptional},
                  {"max", "T", FormalParameter::Arity::kOptional}};
    }
    s.constraints = {
        {"T", TensorTypes(version >= 12 ? NumericTypes(version >= 13) : FloatTypes(false))}};
    s.foldable = true;
    DefineOp<ClipAttrs>(s, ParseClip, InferClip, CreateClip);
    registry.Register(std::move(s));
  }
}

}  // namespace

void RegisterUnaryKernels(KernelRegistry& registry) {
  const auto none = AttributesWith({});
  RegisterUnary<NoAttrs, NegFn, Types::kSignedOrFloat>(
      registry, {"Neg", {1, 6, 13}},
      [](int version) {
        std::vector<ElementType> types = FloatTypes(version >= 13);
        if (version >= 6) {
          for (E e : {E::kInt8, E::kInt16, E::kInt32, E::kInt64}) types.push_back(e);
        }
        return types;
      },
      none, ParseNone);
  RegisterUnary<NoAttrs, SqrtFn, Types::kFloat>(registry, {"Sqrt", {1, 6, 13}}, FloatsFrom(13),
                                                none, ParseNone);
  RegisterUnary<NoAttrs, LogFn, Types::kFloat>(registry, {"Log", {1, 6, 13}, "input", "output"},
                                               FloatsFrom(13), none, ParseNone);
  RegisterUnary<NoAttrs, TanhFn, Types::kFloat>(registry, {"Tanh", {1, 6, 13}, "input", "output"},
                                                FloatsFrom(13), none, ParseNone);
  RegisterUnary<NoAttrs, SigmoidFn, Types::kFloat>(registry, {"Sigmoid", {1, 6, 13}},
                                                   FloatsFrom(13), none, ParseNone);
  RegisterUnary<NoAttrs, ReluFn, Types::kSignedOrFloat>(
      registry, {"Relu", {1, 6, 13, 14}},
      [](int version) {
        std::vector<ElementType> types = FloatTypes(version >= 13);
        if (version >= 14) {
          for (E e : {E::kInt8, E::kInt16, E::kInt32, E::kInt64}) types.push_back(e);
        }
        return types;
      },
      none, ParseNone);
  RegisterUnary<LeakyReluAttrs, LeakyReluFn, Types::kFloat>(
      registry, {"LeakyRelu", {1, 6, 16}}, FloatsFrom(16), AttributesWith({"alpha"}),
      [](const NodeContext& ctx) -> Result<LeakyReluAttrs> {
        LeakyReluAttrs attrs;
        IDEM_ASSIGN_OR_RETURN(attrs.alpha, AttrReader(ctx.node).Float("alpha", 0.01f));
        return attrs;
      });
  RegisterUnary<HardSigmoidAttrs, HardSigmoidFn, Types::kFloat>(
      registry, {"HardSigmoid", {1, 6, 22}}, FloatsFrom(22), AttributesWith({"alpha", "beta"}),
      [](const NodeContext& ctx) -> Result<HardSigmoidAttrs> {
        HardSigmoidAttrs attrs;
        AttrReader r(ctx.node);
        IDEM_ASSIGN_OR_RETURN(attrs.alpha, r.Float("alpha", 0.2f));
        IDEM_ASSIGN_OR_RETURN(attrs.beta, r.Float("beta", 0.5f));
        return attrs;
      });
  RegisterClip(registry);
}

}  // namespace idem
