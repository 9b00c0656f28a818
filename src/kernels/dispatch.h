// Element-type dispatch and the elementwise loops every numeric kernel shares.
//
// Dispatch calls a generic lambda with a value of the element's storage type (`T{}`): numeric
// C++ types for the integer/float elements, Float16/BFloat16 (src/core/float_convert.h) for the
// 16-bit floats, bool for bool. A type outside the set gives a Status naming the operator, so a
// kernel's switch over element types is written once, here.
//
//   IDEM_RETURN_IF_ERROR(DispatchNumeric(type, "Relu", [&](auto tag) {
//     using T = decltype(tag);
//     ...
//     return Status();
//   }));
#ifndef IDEM_SRC_KERNELS_DISPATCH_H_
#define IDEM_SRC_KERNELS_DISPATCH_H_

#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "src/core/float_convert.h"
#include "src/kernels/op.h"

namespace idem {

// Whether T is one of the 16-bit float storage types.
template <class T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// The type arithmetic on T is done in: float for float16/bfloat16, T otherwise.
template <class T>
using ComputeType = std::conditional_t<kIsHalfLike<T>, float, T>;

template <class T>
inline ComputeType<T> ToCompute(T v) {
  if constexpr (kIsHalfLike<T>) {
    return v.ToFloat();
  } else {
    return v;
  }
}
template <class T>
inline T FromCompute(ComputeType<T> v) {
  if constexpr (kIsHalfLike<T>) {
    return T::FromFloat(v);
  } else {
    return v;
  }
}

namespace dispatch_internal {
Status Unsupported(ElementType type, std::string_view op);
}  // namespace dispatch_internal

// Floating types: float, double, float16, bfloat16.
template <class F>
Status DispatchFloat(ElementType type, std::string_view op, F&& f) {
  switch (type) {
    case ElementType::kFloat:
      return f(float{});
    case ElementType::kDouble:
      return f(double{});
    case ElementType::kFloat16:
      return f(Float16{});
    case ElementType::kBfloat16:
      return f(BFloat16{});
    default:
      return dispatch_internal::Unsupported(type, op);
  }
}

// Integer types: int8..int64, uint8..uint64.
template <class F>
Status DispatchInteger(ElementType type, std::string_view op, F&& f) {
  switch (type) {
    case ElementType::kInt8:
      return f(int8_t{});
    case ElementType::kInt16:
      return f(int16_t{});
    case ElementType::kInt32:
      return f(int32_t{});
    case ElementType::kInt64:
      return f(int64_t{});
    case ElementType::kUint8:
      return f(uint8_t{});
    case ElementType::kUint16:
      return f(uint16_t{});
    case ElementType::kUint32:
      return f(uint32_t{});
    case ElementType::kUint64:
      return f(uint64_t{});
    default:
      return dispatch_internal::Unsupported(type, op);
  }
}

// Every numeric type (integers and floats).
template <class F>
Status DispatchNumeric(ElementType type, std::string_view op, F&& f) {
  switch (type) {
    case ElementType::kFloat:
    case ElementType::kDouble:
    case ElementType::kFloat16:
    case ElementType::kBfloat16:
      return DispatchFloat(type, op, std::forward<F>(f));
    default:
      return DispatchInteger(type, op, std::forward<F>(f));
  }
}

// Numeric types and bool.
template <class F>
Status DispatchNumericOrBool(ElementType type, std::string_view op, F&& f) {
  if (type == ElementType::kBool) return f(bool{});
  return DispatchNumeric(type, op, std::forward<F>(f));
}

// Any fixed-width element type by its byte size (data movement: Transpose, Gather, Concat...):
// calls f with an unsigned integer of that size. Sub-byte types and strings are not handled.
template <class F>
Status DispatchBySize(ElementType type, std::string_view op, F&& f) {
  switch (ElementBits(type)) {
    case 8:
      return f(uint8_t{});
    case 16:
      return f(uint16_t{});
    case 32:
      return f(uint32_t{});
    case 64:
      return f(uint64_t{});
    case 128: {
      struct U128 {
        uint64_t lo, hi;
      };
      return f(U128{});
    }
    default:
      return dispatch_internal::Unsupported(type, op);
  }
}

// ---- Broadcasting ---------------------------------------------------------------------------

// Element strides of `shape` aligned to an output of rank `rank` (left-padded), 0 along
// broadcast dims.
Ints BroadcastStrides(std::span<const int64_t> shape, size_t rank);

// Calls run(i, ia, step_a, ib, step_b, n) for runs covering every element of the broadcast of
// `a` and `b` to `out` (which must be their broadcast shape), in row-major output order: output
// elements i .. i + n - 1 read a[ia + j * step_a] and b[ib + j * step_b]. Dims of size 1 are
// dropped and neighbours merged where both operands step through them as one (x[..., i, j] at
// stride s_i = s_j * n_j), so each run is the longest stretch with fixed steps: one run for
// same-shape and scalar operands, C runs of H * W for a per-channel [1, C, 1, 1] against
// [N, C, H, W]. Steps are 0 or 1 for the broadcasts exporters write.
template <class Run>
void ForEachBroadcastRun(std::span<const int64_t> a, std::span<const int64_t> b,
                         std::span<const int64_t> out, Run&& run) {
  int64_t count = 1;
  for (int64_t d : out) count *= d;
  if (count == 0) return;
  int64_t ca = 1, cb = 1;
  for (int64_t d : a) ca *= d;
  for (int64_t d : b) cb *= d;
  if (ca == count && cb == count) return run(int64_t{0}, int64_t{0}, 1, int64_t{0}, 1, count);
  if (cb == 1 && ca == count) return run(int64_t{0}, int64_t{0}, 1, int64_t{0}, 0, count);
  if (ca == 1 && cb == count) return run(int64_t{0}, int64_t{0}, 0, int64_t{0}, 1, count);
  const size_t rank = out.size();
  const Ints ta = BroadcastStrides(a, rank), tb = BroadcastStrides(b, rank);
  Ints dims, sa, sb;
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    if (!dims.empty() && sa.back() == ta[d] * out[d] && sb.back() == tb[d] * out[d]) {
      dims.back() *= out[d];
      sa.back() = ta[d];
      sb.back() = tb[d];
    } else {
      dims.push_back(out[d]);
      sa.push_back(ta[d]);
      sb.push_back(tb[d]);
    }
  }
  if (dims.empty()) return run(int64_t{0}, int64_t{0}, 0, int64_t{0}, 0, int64_t{1});
  const size_t outer = dims.size() - 1;
  const int64_t inner = dims[outer], step_a = sa[outer], step_b = sb[outer];
  Ints index(outer, 0);
  int64_t ia = 0, ib = 0;
  for (int64_t i = 0; i < count; i += inner) {
    run(i, ia, step_a, ib, step_b, inner);
    for (size_t d = outer; d-- > 0;) {
      ia += sa[d];
      ib += sb[d];
      if (++index[d] < dims[d]) break;
      ia -= sa[d] * dims[d];
      ib -= sb[d] * dims[d];
      index[d] = 0;
    }
  }
}

// Calls body(out_index, a_index, b_index) for every element of the broadcast of `a` and `b` to
// `out`, in row-major output order (the runs of ForEachBroadcastRun, element by element, with
// the common steps specialized so the compiler vectorizes them).
template <class Body>
void ForEachBroadcast(std::span<const int64_t> a, std::span<const int64_t> b,
                      std::span<const int64_t> out, Body&& body) {
  ForEachBroadcastRun(
      a, b, out, [&](int64_t i, int64_t ia, int64_t step_a, int64_t ib, int64_t step_b, int64_t n) {
        if (step_a == 1 && step_b == 1) {
          for (int64_t j = 0; j < n; ++j) body(i + j, ia + j, ib + j);
        } else if (step_a == 1 && step_b == 0) {
          for (int64_t j = 0; j < n; ++j) body(i + j, ia + j, ib);
        } else if (step_a == 0 && step_b == 1) {
          for (int64_t j = 0; j < n; ++j) body(i + j, ia, ib + j);
        } else {
          for (int64_t j = 0; j < n; ++j) {
            body(i + j, ia + j * step_a, ib + j * step_b);
          }
        }
      });
}

// Typed element access over a tensor's bytes (unaligned-safe).
template <class T>
inline T LoadElement(const std::byte* p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}
template <class T>
inline void StoreElement(std::byte* p, int64_t i, T v) {
  std::memcpy(p + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

// out[j] = op(a[j * step_a], b[j * step_b]) for j < n, over raw element bytes. `out` is a fresh
// tensor that overlaps neither input: saying so (__restrict) is what lets the compiler keep the
// pointers in registers and vectorize, since a store through std::byte* may alias anything.
template <class TA, class TB, class TO, class Op>
inline void MapRun(const std::byte* __restrict a, int64_t step_a, const std::byte* __restrict b,
                   int64_t step_b, std::byte* __restrict out, int64_t n, Op op) {
  if (step_a == 1 && step_b == 1) {
    for (int64_t j = 0; j < n; ++j) {
      StoreElement<TO>(out, j, op(LoadElement<TA>(a, j), LoadElement<TB>(b, j)));
    }
  } else if (step_a == 1 && step_b == 0) {
    const TB y = LoadElement<TB>(b, 0);
    for (int64_t j = 0; j < n; ++j) StoreElement<TO>(out, j, op(LoadElement<TA>(a, j), y));
  } else if (step_a == 0 && step_b == 1) {
    const TA x = LoadElement<TA>(a, 0);
    for (int64_t j = 0; j < n; ++j) StoreElement<TO>(out, j, op(x, LoadElement<TB>(b, j)));
  } else {
    for (int64_t j = 0; j < n; ++j) {
      StoreElement<TO>(out, j, op(LoadElement<TA>(a, j * step_a), LoadElement<TB>(b, j * step_b)));
    }
  }
}

// out = op(a, b) over the broadcast of a (shape a_dims) and b (b_dims) to out_dims, into the
// fresh tensor bytes `out`.
template <class TA, class TB, class TO, class Op>
void MapBroadcastInto(const std::byte* a, std::span<const int64_t> a_dims, const std::byte* b,
                      std::span<const int64_t> b_dims, std::span<const int64_t> out_dims,
                      std::byte* out, Op op) {
  ForEachBroadcastRun(
      a_dims, b_dims, out_dims,
      [&](int64_t i, int64_t ia, int64_t step_a, int64_t ib, int64_t step_b, int64_t n) {
        MapRun<TA, TB, TO>(a + ia * static_cast<int64_t>(sizeof(TA)), step_a,
                           b + ib * static_cast<int64_t>(sizeof(TB)), step_b,
                           out + i * static_cast<int64_t>(sizeof(TO)), n, op);
      });
}

// out = op(a, b) elementwise with broadcasting: allocates the output of element type `out_type`
// (checked against the budget) and writes every element. `op` maps (TA, TB) -> TO.
template <class TA, class TB, class TO, class Op>
Result<Value> BroadcastBinary(RunContext& ctx, const Tensor& a, const Tensor& b,
                              ElementType out_type, Op&& op) {
  IDEM_ASSIGN_OR_RETURN(Ints shape, BroadcastDims<int64_t>(a.shape(), b.shape()));
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Value v, AllocateTensorForOverwrite(ctx, out_type, shape, &out));
  MapBroadcastInto<TA, TB, TO>(a.data().data(), a.shape(), b.data().data(), b.shape(), shape, out,
                               op);
  return v;
}

// out[i] = op(x[i]) for i < n; `out` (a fresh tensor) does not overlap x (see MapRun).
template <class TI, class TO, class Op>
inline void MapElements(const std::byte* __restrict x, std::byte* __restrict out, int64_t n,
                        Op op) {
  for (int64_t i = 0; i < n; ++i) StoreElement<TO>(out, i, op(LoadElement<TI>(x, i)));
}

// out = op(x) elementwise: allocates the output of `out_type` and shape of x.
template <class TI, class TO, class Op>
Result<Value> MapUnary(RunContext& ctx, const Tensor& x, ElementType out_type, Op&& op) {
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Value v, AllocateTensorForOverwrite(ctx, out_type, x.shape(), &out));
  MapElements<TI, TO>(x.data().data(), out, x.element_count(), op);
  return v;
}

}  // namespace idem

#endif  // IDEM_SRC_KERNELS_DISPATCH_H_
