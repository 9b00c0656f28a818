// Data movement through per-axis index maps, shared by Pad (every mode) and Resize (nearest):
// output element (o_0, ..., o_{r-1}) is input element (maps[0][o_0], ..., maps[r-1][o_{r-1}]),
// or the fill value when any maps[d][o_d] is negative. Works for every element type: fixed-width
// types by their bytes, 4- and 2-bit types by their bits, strings by copy. Internal to
// idem_kernels (implemented in pad.cc).
#ifndef IDEM_SRC_KERNELS_AXIS_GATHER_H_
#define IDEM_SRC_KERNELS_AXIS_GATHER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "src/kernels/kernel.h"
#include "src/kernels/op.h"

namespace idem::axis_gather {

// One element of a tensor's type: `bytes` holds its packed bytes (for 4- and 2-bit types the
// value in the low bits of bytes[0]), `text` a string element. Default: zero, "" or false.
struct Fill {
  ScratchVector<std::byte> bytes;
  std::string text;
};

// The fill that element 0 of `t` (a tensor of one element) gives.
Fill FillFromElement(const Tensor& t);

// Checks an output of `type` and `shape` against max_elements, max_tensor_bytes and the run's
// budget (strings: their count only), and the per-axis index maps a Gather over that shape
// builds, before anything is built; returns the element count.
Result<uint64_t> CheckOutput(RunContext& ctx, ElementType type, std::span<const int64_t> shape);

// The tensor of `out_shape` gathered from `in` through `maps` (maps[d].size() == out_shape[d];
// entries are input coordinates along d, or -1 for `fill`). `maps` is not read when the output
// is empty, so callers need not build maps for huge dims of an empty output. The output is
// checked against the budget (string outputs with their exact byte count) before allocating.
Result<Value> Gather(RunContext& ctx, const Tensor& in, std::span<const int64_t> out_shape,
                     std::span<const Ints> maps, const Fill& fill);

}  // namespace idem::axis_gather

#endif  // IDEM_SRC_KERNELS_AXIS_GATHER_H_
