// Tensor helpers shared by the control-flow, constant, elementwise and shape kernels. Internal to
// idem_kernels.
#ifndef IDEM_SRC_KERNELS_TENSOR_UTIL_H_
#define IDEM_SRC_KERNELS_TENSOR_UTIL_H_

#include <cstdint>
#include <span>
#include <vector>

#include "src/kernels/kernel.h"

namespace idem::tensor_util {

// The element types "all tensor types" means at `version`: the 15 base types, bfloat16 from
// `bfloat16_since` (operators added it at different versions), the float8 types from 19, 4-bit
// from 21, float4e2m1 from 23, float8e8m0 from 24, 2-bit from 25.
std::vector<ElementType> AllElementsAt(int version, int bfloat16_since);

// A new tensor of `type` and `shape` whose bytes (or strings) are written by `fill`. The size is
// checked against ctx (max_tensor_bytes, run budget) before allocating.
Result<Value> MakeInt64Tensor(std::span<const int64_t> shape, std::span<const int64_t> values);
Result<Value> MakeBoolScalar(bool value);
Result<Value> MakeInt64Scalar(int64_t value);

// Reads a single-element bool tensor.
Result<bool> ReadBool(const Value& value, std::string_view what);

// Stacks same-typed, same-shaped tensors along a new axis `axis` (0 <= axis <= rank): the result
// has shape[axis] = parts.size(). `empty_shape` gives the element shape when parts is empty.
Result<Value> Stack(RunContext& ctx, ElementType type, std::span<const Value> parts,
                    std::span<const int64_t> empty_shape, int64_t axis);

// Takes index `index` along `axis` of `t` (the result has that axis removed). Zero-copy when the
// slice is contiguous (axis 0, or all outer dims 1) and byte-aligned.
Result<Value> TakeAlongAxis(RunContext& ctx, const Tensor& t, int64_t axis, int64_t index);

// A tensor of `t`'s type and shape whose elements are all zero (empty strings for a string
// tensor), checked against the run budget first.
Result<Value> ZerosLike(RunContext& ctx, const Tensor& t);

// A tensor with `t`'s data (shared, never copied) and a new shape of the same element count.
Result<Value> Reshaped(const Tensor& t, std::vector<int64_t> shape);

}  // namespace idem::tensor_util

#endif  // IDEM_SRC_KERNELS_TENSOR_UTIL_H_
