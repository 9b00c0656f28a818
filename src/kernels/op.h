// The operator-definition layer: what every kernel file uses to define an operator once.
//
// One definition per operator (tract's "parse attributes once in the factory", TFLM's
// Prepare/Eval, ONNX Runtime's per-version registration):
//   1. `Parse` reads and validates the node's attributes once into a typed struct (AttrReader);
//   2. `Infer` computes the output types from the input *facts* (type, shape, and the constant
//      value when the planner knows it) and that struct; it may also give an output's value when
//      the facts determine it (Shape of a statically shaped input), which the planner then folds;
//   3. `Create` builds the kernel from the same struct and facts, so it can pre-pack constant
//      weights;
// and each shape rule is one template over the dim type (`Dim` at plan time, `int64_t` at run
// time), so plan-time inference and run-time shapes cannot disagree.
//
//   struct FooAttrs { int64_t axis; };
//   template <class D> Result<std::vector<D>> FooShape(const FooAttrs&, std::span<const D> in);
//   DefineOp<FooAttrs>(schema, ParseFoo, InferFoo, CreateFoo);
#ifndef IDEM_SRC_KERNELS_OP_H_
#define IDEM_SRC_KERNELS_OP_H_

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "src/core/block_cache.h"
#include "src/kernels/fast/packed_gemm.h"
#include "src/kernels/kernel.h"

namespace idem {

// ---- Dims: one shape rule for plan time (Dim) and run time (int64_t) -------------------------

// Known value of a dim: always for int64_t, when fixed for Dim.
inline std::optional<int64_t> KnownDim(int64_t d) { return d; }
inline std::optional<int64_t> KnownDim(const Dim& d) { return d.value; }

// A dim of type D from a value that may be unknown. At run time every dim is known, so an
// unknown value there is a bug in the rule (it returns -1, which MakeTensor refuses).
template <class D>
D MakeDim(std::optional<int64_t> v) {
  if constexpr (std::is_same_v<D, int64_t>) {
    return v.value_or(-1);
  } else {
    return v ? Dim{*v, {}} : Dim{};
  }
}

// Applies `f` (int64_t -> int64_t) to a known dim; an unknown dim stays unknown.
template <class D, class F>
D MapDim(const D& d, F&& f) {
  auto v = KnownDim(d);
  return MakeDim<D>(v ? std::optional<int64_t>(f(*v)) : std::nullopt);
}

// Whether two dims are the same: both known and equal, or (plan time) the same symbol.
template <class D>
bool SameDim(const D& a, const D& b) {
  if constexpr (std::is_same_v<D, int64_t>) {
    return a == b;
  } else {
    if (a.value && b.value) return *a.value == *b.value;
    return !a.param.empty() && a.param == b.param;
  }
}

// Product of known dims, or nullopt when one is unknown or the product overflows int64.
template <class D>
std::optional<int64_t> DimProduct(std::span<const D> dims) {
  int64_t n = 1;
  for (const D& d : dims) {
    auto v = KnownDim(d);
    if (!v || *v < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, *v, &n)) return std::nullopt;
  }
  return n;
}

// Normalizes `axis` into [0, rank) (or [0, rank] with `allow_end`); errors name `what`.
Result<int64_t> NormalizeAxis(int64_t axis, int64_t rank, std::string_view what,
                              bool allow_end = false);
// Integers a kernel reads or derives on every Run (axes, pads, indices, shapes): storage from the
// thread's block cache, so a steady-state Run does not go to the heap for them.
using Ints = ScratchVector<int64_t>;

// What a shape rule over D gives: run-time dims in Ints, plan-time ones in a plain vector.
template <class D>
using DimsOf = std::conditional_t<std::is_same_v<D, int64_t>, Ints, std::vector<D>>;

// Normalizes every axis and refuses repeats.
Result<Ints> NormalizeAxes(std::span<const int64_t> axes, int64_t rank, std::string_view what);

// numpy (multidirectional) broadcasting of shapes, written once over D. At plan time two
// unknown dims give an unknown dim; a known dim other than 1 against an unknown one is that dim.
template <class D>
Result<DimsOf<D>> BroadcastDims(std::span<const D> a, std::span<const D> b) {
  const size_t rank = std::max(a.size(), b.size());
  DimsOf<D> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const D da = i < rank - a.size() ? MakeDim<D>(1) : a[i - (rank - a.size())];
    const D db = i < rank - b.size() ? MakeDim<D>(1) : b[i - (rank - b.size())];
    const auto va = KnownDim(da), vb = KnownDim(db);
    if (va && vb) {
      if (*va != *vb && *va != 1 && *vb != 1) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("shapes cannot be broadcast: dim {} is {} in one and {} in the "
                                  "other (numpy broadcasting needs equal dims or 1)",
                                  i, *va, *vb));
      }
      out[i] = MakeDim<D>(*va == 1 ? *vb : *va);
    } else if (va || vb) {
      // One dim known: a known 1 broadcasts to the unknown one; any other known value is it.
      const bool a_known = static_cast<bool>(va);
      const bool known_is_one = (a_known ? *va : *vb) == 1;
      out[i] = known_is_one == a_known ? db : da;
    } else {
      out[i] = SameDim(da, db) ? da : D{};
    }
  }
  return out;
}

// ---- Facts ----------------------------------------------------------------------------------

// What the planner knows about input `i` of the node: its type (shape included when known) and
// its value when it is a constant (an initializer, a Constant, or folded at planning).
class Facts {
 public:
  explicit Facts(const NodeContext& ctx) : ctx_(ctx) {}
  size_t size() const { return ctx_.inputs.size(); }
  // Whether input i is given (not omitted, not past the node's inputs).
  bool has(size_t i) const { return i < ctx_.inputs.size() && ctx_.inputs[i] != nullptr; }
  const Type& type(size_t i) const { return *ctx_.inputs[i]; }
  ElementType element_type(size_t i) const { return type(i).element_type(); }
  // The dims when the rank is known.
  const std::optional<std::vector<Dim>>& shape(size_t i) const { return type(i).shape(); }
  // The constant value of input i, or null.
  const Value* constant(size_t i) const {
    return has(i) && i < ctx_.constants.size() ? ctx_.constants[i] : nullptr;
  }
  // The constant's elements as int64 (int32 and int64 tensors), or nullopt when not constant.
  std::optional<std::vector<int64_t>> constant_ints(size_t i) const;
  // Every dim of input i known.
  std::optional<std::vector<int64_t>> static_shape(size_t i) const;
  const NodeContext& context() const { return ctx_; }

 private:
  const NodeContext& ctx_;
};

// Builds a tensor type from plan-time dims (rank unknown when `dims` is nullopt).
inline Type TensorType(ElementType e, std::optional<std::vector<Dim>> dims) {
  return Type::Tensor(e, std::move(dims));
}

// ---- Attributes -----------------------------------------------------------------------------

// Typed attribute reads with defaults; errors name the attribute and what was expected.
class AttrReader {
 public:
  explicit AttrReader(const NodeDef& node) : node_(node) {}
  bool has(const std::string& name) const { return node_.FindAttribute(name) != nullptr; }
  Result<int64_t> Int(const std::string& name, std::optional<int64_t> def = std::nullopt) const;
  Result<float> Float(const std::string& name, std::optional<float> def = std::nullopt) const;
  Result<std::string> String(const std::string& name,
                             std::optional<std::string> def = std::nullopt) const;
  Result<std::vector<int64_t>> Ints(const std::string& name,
                                    std::optional<std::vector<int64_t>> def = std::nullopt) const;
  Result<std::vector<float>> Floats(const std::string& name,
                                    std::optional<std::vector<float>> def = std::nullopt) const;
  Result<std::vector<std::string>> Strings(
      const std::string& name, std::optional<std::vector<std::string>> def = std::nullopt) const;
  // kTensor attribute (null Value when absent and not required).
  Result<Value> TensorAttr(const std::string& name, bool required) const;
  // An int attribute that must be one of `allowed` (e.g. 0/1 flags).
  Result<int64_t> IntIn(const std::string& name, int64_t def,
                        std::initializer_list<int64_t> allowed) const;
  // A string attribute that must be one of `allowed`.
  Result<std::string> StringIn(const std::string& name, std::string def,
                               std::initializer_list<std::string_view> allowed) const;

 private:
  const Attribute* Find(const std::string& name, Attribute::Kind kind, const char* kind_name,
                        Status* error) const;
  const NodeDef& node_;
};

// Error helpers that name the rule violated.
inline Status InvalidModel(std::string message) {
  return Status(StatusCode::kInvalidModel, std::move(message));
}
inline Status InvalidArgument(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

// ---- Run-time helpers -----------------------------------------------------------------------

// Allocates the output tensor of `type` and `shape`: the element count and bytes are checked
// against max_elements, max_tensor_bytes and the run's remaining budget before allocating.
// `*data` receives the writable bytes, zeroed. The bytes come from the run's memory plan (an
// offset in the run's arena, src/core/memory_plan.h) or from the block cache
// (src/core/block_cache.h: a per-thread cache of freed blocks), so a steady-state Run allocates
// nothing for them.
Result<Value> AllocateTensor(RunContext& ctx, ElementType type, std::span<const int64_t> shape,
                             std::byte** data);
template <typename T>
Result<Value> AllocateTensorAs(RunContext& ctx, ElementType type, std::span<const int64_t> shape,
                               T** data) {
  std::byte* raw = nullptr;
  auto v = AllocateTensor(ctx, type, shape, &raw);
  *data = reinterpret_cast<T*>(raw);
  return v;
}
// The same without zeroing (a reused block holds an earlier tensor's bytes): for kernels that
// write every element of the output before returning it, whatever their input (the fast Conv,
// MaxPool and the elementwise operators), so a Run does not clear what it overwrites anyway.
Result<Value> AllocateTensorForOverwrite(RunContext& ctx, ElementType type,
                                         std::span<const int64_t> shape, std::byte** data);
template <typename T>
Result<Value> AllocateTensorForOverwriteAs(RunContext& ctx, ElementType type,
                                           std::span<const int64_t> shape, T** data) {
  std::byte* raw = nullptr;
  auto v = AllocateTensorForOverwrite(ctx, type, shape, &raw);
  *data = reinterpret_cast<T*>(raw);
  return v;
}

// Reads an int32/int64 tensor's elements (a shape, axes, pads or indices input).
Ints ReadInt64s(const Tensor& t);
// Reads a float/double/float16/bfloat16 tensor's elements as double (scales, a scalar operand).
ScratchVector<double> ReadDoubles(const Tensor& t);

// ---- Definition ------------------------------------------------------------------------------

// Sets schema.prepare from the three parts of an operator definition. `parse` runs once per
// node; `infer` and `create` get the parsed struct.
template <class Attrs>
void DefineOp(KernelSchema& schema, std::function<Result<Attrs>(const NodeContext&)> parse,
              std::function<Result<Inference>(const Attrs&, const Facts&)> infer,
              std::function<Result<std::unique_ptr<Kernel>>(const Attrs&, const Facts&)> create) {
  schema.prepare = [parse = std::move(parse), infer = std::move(infer),
                    create = std::move(create)](const NodeContext& ctx) -> Result<PreparedNode> {
    IDEM_ASSIGN_OR_RETURN(Attrs attrs, parse(ctx));
    const Facts facts(ctx);
    PreparedNode prepared;
    IDEM_ASSIGN_OR_RETURN(prepared.inference, infer(attrs, facts));
    IDEM_ASSIGN_OR_RETURN(prepared.kernel, create(attrs, facts));
    return prepared;
  };
}

// A kernel from a lambda (inputs, outputs, ctx) over a copy of the attributes, for operators
// with nothing to pre-pack.
template <class Attrs, class F>
class FunctionKernel final : public Kernel {
 public:
  FunctionKernel(Attrs attrs, F f) : attrs_(std::move(attrs)), f_(std::move(f)) {}
  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    return f_(attrs_, ctx, inputs, outputs);
  }

 private:
  Attrs attrs_;
  F f_;
};
template <class Attrs, class F>
std::unique_ptr<Kernel> MakeFunctionKernel(Attrs attrs, F f) {
  return std::make_unique<FunctionKernel<Attrs, F>>(std::move(attrs), std::move(f));
}

// An inference with one output type.
inline Inference OneOutput(Type type) {
  Inference inf;
  inf.types.push_back(std::move(type));
  return inf;
}

// Shapes at plan time: runs the rule `rule(std::span<const Dim>...)` when every listed input's
// rank is known, else gives an unknown rank.
template <class Rule>
Result<std::optional<std::vector<Dim>>> InferDims(const Facts& facts,
                                                  std::initializer_list<size_t> inputs,
                                                  Rule&& rule) {
  for (size_t i : inputs) {
    if (!facts.has(i) || !facts.shape(i)) return std::optional<std::vector<Dim>>();
  }
  IDEM_ASSIGN_OR_RETURN(std::vector<Dim> dims, rule());
  return std::optional<std::vector<Dim>>(std::move(dims));
}

// Numeric type sets in the spec's words.
std::vector<ElementType> FloatTypes(bool bfloat16);    // float16, float, double (+ bfloat16)
std::vector<ElementType> IntegerTypes();               // int8..int64, uint8..uint64
std::vector<ElementType> NumericTypes(bool bfloat16);  // integers + floats

// ---- Data movement (added for the tensor family) ----------------------------------------------

// A tensor with `t`'s elements and a new `shape` of the same element count: shares t's Buffer
// (no bytes copied); a string tensor copies its strings, checked against the budget first.
Result<Value> WithShape(RunContext& ctx, const Tensor& t, std::span<const int64_t> shape);

// A new tensor of t's element type and shape `out_shape` whose element at output multi-index k
// is t's element number `offset + sum_d k[d] * strides[d]` (strides in elements; negative and
// zero strides allowed; every such element must lie inside t). The size is checked against the
// limits and the run budget before allocating. Every element type: strings, sub-byte types
// (bit by bit) and byte types (runs of contiguous elements copied with memcpy). Transpose,
// Slice and Split are this copy with different strides.
Result<Value> StridedCopy(RunContext& ctx, const Tensor& t, std::span<const int64_t> out_shape,
                          std::span<const int64_t> strides, int64_t offset);

// Row-major element strides of `shape` (meaningful when the tensor is not empty).
Ints RowMajorStrides(std::span<const int64_t> shape);

// ---- Work bound (added for the fuzzing and hardening of issue 17) -----------------------------

// The work of one node, for kernels whose work is not proportional to their inputs and outputs
// (Conv, ConvTranspose, Gemm, MatMul, LSTM, the pools: outputs x kernel): multiply-adds, or
// window taps, counted as a product of dims in double (no product overflows; a count far past
// 2^53 is still far past any limit). A node may do at most Limits::max_elements steps of work,
// the size one tensor may have (a Conv's work is the element count of its im2col matrix, a
// MatMul's that of the [M, N, K] products it sums), so a few bytes of attributes (a 2^30 kernel
// with pads to match) cannot buy hours of compute: kResourceExhausted naming `what` and the
// count, before anything is allocated. Call it from the shape rule's users at plan time (every
// dim known: the model is refused at Session::Create) and at run time. `op` names the operator,
// `unit` what was counted ("multiply-adds (outputs x C/group x kernel)").
Status CheckWork(const Limits& limits, double work, std::string_view op, std::string_view unit);

// ---- Fast kernels (added for issue 18) ---------------------------------------------------------

// The planner's fused activation (NodeContext::fused_activation) as the fast kernels' epilogue.
inline fast::Activation ToFastActivation(const FusedActivation& a) {
  fast::Activation out;
  out.kind = static_cast<fast::Activation::Kind>(a.kind);
  out.alpha = a.alpha;
  out.beta = a.beta;
  out.gamma = a.gamma;
  out.delta = a.delta;
  out.lower = a.lower;
  out.scaled = a.scaled;
  out.scale = a.scale;
  out.shifted = a.shifted;
  out.shift = a.shift;
  return out;
}
static_assert(static_cast<int>(FusedActivation::Kind::kHardSwish) ==
              static_cast<int>(fast::Activation::Kind::kHardSwish));

// The refusal of a kernel given an activation to fuse that its path cannot apply.
inline Status CannotFuse(std::string_view op) {
  return Status(
      StatusCode::kInternal,
      fmt::format("{}: the planner fused an activation into a kernel that cannot apply it", op));
}

}  // namespace idem

#endif  // IDEM_SRC_KERNELS_OP_H_
