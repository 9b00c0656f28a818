// AveragePool (1, 7, 10, 11, 19, 22), MaxPool (1, 8, 10, 11, 12, 22), GlobalAveragePool (1, 22).
//
// Reference kernels over any number of spatial dims (1-D, 2-D, 3-D, ...). One shape rule
// (PoolShape, over Dim at plan time and int64_t at run time) built on ResolvePoolAxis, which also
// gives the run-time pads, so planning and running cannot disagree.
//
// Numerics: averages accumulate in double in row-major window order and round once to the
// element type; max is exact. Semantics chosen where the spec is silent, as ONNX Runtime does:
//  - ceil_mode: a last window that would start in the right padding is dropped (the v22 text);
//  - count_include_pad: the divisor counts window positions inside [-pad_begin, in + pad_end)
//    (a ceil_mode window reaching past the end padding does not count the part beyond);
//  - MaxPool ignores NaN inside a window unless every element is NaN (the ONNX reference pools
//    over the non-NaN values); ties keep the first element in row-major window order, and
//    Indices is that element's flat index in X (storage_order 1: column-major spatial index);
//  - a window that covers no input element (pads larger than the kernel) is an error for
//    MaxPool (there is no element to select); AveragePool gives 0 / pool_size with
//    count_include_pad and NaN (0 / 0 in floating point) without.
// auto_pad follows the spec where ONNX Runtime 1.30 does not: SAME pads are computed with the
// dilated kernel extent (ONNX Runtime uses the undilated kernel, so its output and pads differ
// when dilations > 1), a negative SAME pad is 0 (ONNX Runtime fails), and VALID ignores
// ceil_mode as the spec's two formulas agree (ONNX Runtime's ceil_mode can add an output).
// Explicit pads (NOTSET) agree with ONNX Runtime in every mode.
#include "src/kernels/fast/pool.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {
namespace {

enum class PoolKind { kAverage, kMax, kGlobalAverage };
enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct PoolAttrs {
  PoolKind kind = PoolKind::kAverage;
  std::string op;  // the operator's name, for messages
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel;     // kernel_shape
  std::vector<int64_t> strides;    // one per spatial dim, >= 1
  std::vector<int64_t> dilations;  // one per spatial dim, >= 1
  std::vector<int64_t> pads;       // [x1_begin, x2_begin, ..., x1_end, x2_end, ...], >= 0
  std::vector<int64_t> extent;     // (kernel - 1) * dilation + 1, checked for overflow
  bool ceil_mode = false;
  bool count_include_pad = false;
  bool column_major = false;  // storage_order 1
  bool want_indices = false;  // MaxPool's Indices output is requested
};

// One spatial axis resolved for an input size: output size and the pads actually applied.
struct PoolAxis {
  int64_t out = 0;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;
};

Status AxisError(const PoolAttrs& a, size_t i, std::string what) {
  return InvalidArgument(fmt::format("{}: spatial axis {}: {}", a.op, i, what));
}

// ceil(a / b) for b > 0, without forming a + b - 1 (which overflows for a span near INT64_MAX
// and a huge stride).
int64_t CeilDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b + (a % b != 0 ? 1 : 0) : -((-a) / b);
}

// The output size and pads of spatial axis i for input size `in` (the spec's formulas).
Result<PoolAxis> ResolvePoolAxis(const PoolAttrs& a, size_t i, int64_t in) {
  const int64_t s = a.strides[i], ek = a.extent[i];
  PoolAxis axis;
  switch (a.auto_pad) {
    case AutoPad::kValid:
      if (in < ek) {
        return AxisError(a, i,
                         fmt::format("the kernel extent {} (kernel_shape {}, dilation {}) is "
                                     "larger than the input size {} (auto_pad VALID)",
                                     ek, a.kernel[i], a.dilations[i], in));
      }
      axis.out = (in - ek) / s + 1;
      return axis;
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower: {
      axis.out = CeilDiv(in, s);
      // The padded extent (out - 1) * stride + kernel extent must fit int64 (the windows are
      // measured in it; (out - 1) * stride + (extent - in) alone let in + pads overflow); the
      // pads are what it exceeds the input by.
      int64_t span = 0;
      if (axis.out > 0 && (__builtin_mul_overflow(axis.out - 1, s, &span) ||
                           __builtin_add_overflow(span, ek, &span))) {
        return AxisError(a, i, "the padding auto_pad needs overflows int64");
      }
      const int64_t total = axis.out > 0 ? std::max<int64_t>(span - in, 0) : 0;
      const int64_t small = total / 2, large = total - total / 2;
      axis.pad_begin = a.auto_pad == AutoPad::kSameUpper ? small : large;
      axis.pad_end = total - axis.pad_begin;
      return axis;
    }
    case AutoPad::kNotSet:
      break;
  }
  axis.pad_begin = a.pads[i];
  axis.pad_end = a.pads[i + a.kernel.size()];
  int64_t padded = 0;
  if (__builtin_add_overflow(in, axis.pad_begin, &padded) ||
      __builtin_add_overflow(padded, axis.pad_end, &padded)) {
    return AxisError(a, i, "the padded input size overflows int64");
  }
  if (padded < ek) {
    return AxisError(
        a, i,
        fmt::format("the kernel extent {} (kernel_shape {}, dilation {}) is larger "
                    "than the padded input size {} (input {} + pads {} and {})",
                    ek, a.kernel[i], a.dilations[i], padded, in, axis.pad_begin, axis.pad_end));
  }
  const int64_t span = padded - ek;
  axis.out = (a.ceil_mode ? CeilDiv(span, s) : span / s) + 1;
  // A last window starting in the end padding is dropped (ceil_mode only can produce one).
  int64_t last_start = 0;
  if (a.ceil_mode &&
      (__builtin_mul_overflow(axis.out - 1, s, &last_start) || last_start >= in + axis.pad_begin)) {
    --axis.out;
  }
  return axis;
}

// The one shape rule: [N, C, out_1, ..., out_k] (GlobalAveragePool: [N, C, 1, ..., 1]).
template <class D>
Result<DimsOf<D>> PoolShape(const PoolAttrs& a, std::span<const D> x) {
  if (a.kind == PoolKind::kGlobalAverage) {
    if (x.size() < 2) {
      return InvalidArgument(fmt::format(
          "{}: X has rank {}; it must be at least 2 (N x C x D1 x ... x Dn)", a.op, x.size()));
    }
    DimsOf<D> out(x.begin(), x.begin() + 2);
    for (size_t i = 2; i < x.size(); ++i) out.push_back(MakeDim<D>(1));
    return out;
  }
  if (x.size() != a.kernel.size() + 2) {
    return InvalidArgument(
        fmt::format("{}: X has rank {}; kernel_shape has {} spatial dims, so X must have rank {} "
                    "(N x C x D1 x ... x Dn)",
                    a.op, x.size(), a.kernel.size(), a.kernel.size() + 2));
  }
  DimsOf<D> out(x.begin(), x.begin() + 2);
  for (size_t i = 0; i < a.kernel.size(); ++i) {
    const auto in = KnownDim(x[i + 2]);
    if (!in) {
      out.push_back(MakeDim<D>(std::nullopt));
      continue;
    }
    IDEM_ASSIGN_OR_RETURN(PoolAxis axis, ResolvePoolAxis(a, i, *in));
    out.push_back(MakeDim<D>(axis.out));
  }
  return out;
}

// ---- Attributes -------------------------------------------------------------------------------

Result<std::vector<int64_t>> PerAxis(const AttrReader& r, const std::string& name, size_t spatial,
                                     size_t count, int64_t def, int64_t min) {
  IDEM_ASSIGN_OR_RETURN(std::vector<int64_t> v, r.Ints(name, std::vector<int64_t>(count, def)));
  if (v.size() != count) {
    return InvalidModel(
        fmt::format("attribute '{}' has {} values; it must have {} for the {} "
                    "spatial axes of kernel_shape",
                    name, v.size(), count, spatial));
  }
  for (int64_t x : v) {
    if (x < min) {
      return InvalidModel(
          fmt::format("attribute '{}' holds {}; every value must be >= {}", name, x, min));
    }
  }
  return v;
}

Result<PoolAttrs> ParsePool(const NodeContext& ctx, PoolKind kind) {
  PoolAttrs a;
  a.kind = kind;
  a.op = ctx.node.op_type;
  if (kind == PoolKind::kGlobalAverage) return a;
  const AttrReader r(ctx.node);
  IDEM_ASSIGN_OR_RETURN(
      std::string pad,
      r.StringIn("auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}));
  a.auto_pad = pad == "SAME_UPPER"   ? AutoPad::kSameUpper
               : pad == "SAME_LOWER" ? AutoPad::kSameLower
               : pad == "VALID"      ? AutoPad::kValid
                                     : AutoPad::kNotSet;
  IDEM_ASSIGN_OR_RETURN(a.kernel, r.Ints("kernel_shape"));
  if (a.kernel.empty()) {
    return InvalidModel("attribute 'kernel_shape' is empty; it needs one size per spatial axis");
  }
  for (int64_t k : a.kernel) {
    if (k < 1) {
      return InvalidModel(
          fmt::format("attribute 'kernel_shape' holds {}; every size must be >= 1", k));
    }
  }
  const size_t n = a.kernel.size();
  IDEM_ASSIGN_OR_RETURN(a.strides, PerAxis(r, "strides", n, n, 1, 1));
  IDEM_ASSIGN_OR_RETURN(a.dilations, PerAxis(r, "dilations", n, n, 1, 1));
  IDEM_ASSIGN_OR_RETURN(a.pads, PerAxis(r, "pads", n, 2 * n, 0, 0));
  if (a.auto_pad != AutoPad::kNotSet) {
    for (int64_t p : a.pads) {
      if (p != 0) {
        return InvalidModel(
            fmt::format("attributes 'pads' and 'auto_pad' ({}) cannot be used together", pad));
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t ek = 0;
    if (__builtin_mul_overflow(a.kernel[i] - 1, a.dilations[i], &ek) ||
        __builtin_add_overflow(ek, 1, &ek)) {
      return InvalidModel(fmt::format("kernel_shape {} with dilation {} overflows int64",
                                      a.kernel[i], a.dilations[i]));
    }
    a.extent.push_back(ek);
  }
  IDEM_ASSIGN_OR_RETURN(int64_t ceil_mode, r.IntIn("ceil_mode", 0, {0, 1}));
  IDEM_ASSIGN_OR_RETURN(int64_t include, r.IntIn("count_include_pad", 0, {0, 1}));
  IDEM_ASSIGN_OR_RETURN(int64_t order, r.IntIn("storage_order", 0, {0, 1}));
  a.ceil_mode = ceil_mode == 1;
  a.count_include_pad = include == 1;
  a.column_major = order == 1;
  a.want_indices = ctx.node.outputs.size() > 1 && !ctx.node.outputs[1].empty();
  return a;
}

// The window taps a pool runs, bounded by CheckWork when every dim is known: each output reads at
// most min(kernel, input) positions along each spatial axis (taps on the padding are skipped), so
// a kernel_shape of 2^30 with pads to match costs what it reads, and is refused past the bound.
template <class D>
Status CheckPoolWork(const PoolAttrs& a, std::span<const D> x, std::span<const D> y,
                     const Limits& limits) {
  if (a.kind == PoolKind::kGlobalAverage) return {};
  double work = 1;
  for (const D& d : y) {
    const auto v = KnownDim(d);
    if (!v) return {};
    work *= static_cast<double>(*v);
  }
  for (size_t i = 0; i < a.kernel.size() && i + 2 < x.size(); ++i) {
    const auto in = KnownDim(x[i + 2]);
    if (!in) return {};
    work *= std::max(1.0, static_cast<double>(std::min(a.kernel[i], *in)));
  }
  return CheckWork(limits, work, a.op, "window taps (outputs x kernel positions inside X)");
}

Result<Inference> InferPool(const PoolAttrs& a, const Facts& facts) {
  const ElementType e = facts.element_type(0);
  IDEM_ASSIGN_OR_RETURN(auto dims, InferDims(facts, {0}, [&]() {
                          return PoolShape<Dim>(a, std::span<const Dim>(*facts.shape(0)));
                        }));
  if (dims) {
    IDEM_RETURN_IF_ERROR(CheckPoolWork<Dim>(a, *facts.shape(0), *dims, facts.context().limits));
  }
  Inference inf = OneOutput(TensorType(e, dims));
  if (a.kind == PoolKind::kMax) inf.types.push_back(TensorType(ElementType::kInt64, dims));
  return inf;
}

// ---- Kernels ----------------------------------------------------------------------------------

// Per spatial axis and output position: the window's valid taps [lo, hi) (inside the input) and
// the taps inside the padded input (count_include_pad's divisor).
struct AxisWindows {
  int64_t in = 0, out = 0, pad_begin = 0, stride = 1, dilation = 1;
  Ints lo, hi, padded;
};

AxisWindows MakeWindows(const PoolAttrs& a, size_t i, int64_t in, const PoolAxis& axis) {
  AxisWindows w;
  w.in = in;
  w.out = axis.out;
  w.stride = a.strides[i];
  w.dilation = a.dilations[i];
  w.pad_begin = axis.pad_begin;
  const int64_t k = a.kernel[i], d = w.dilation;
  // Distances from each window's start (o * stride into the padded input) to the end of X and to
  // the end of the padding, within the padded extent in + pads, which the shape rule checked to
  // fit int64.
  const int64_t input_end = in + axis.pad_begin;
  const int64_t padded_end = input_end + axis.pad_end;
  w.lo.reserve(static_cast<size_t>(axis.out));
  w.hi.reserve(static_cast<size_t>(axis.out));
  w.padded.reserve(static_cast<size_t>(axis.out));
  for (int64_t o = 0; o < axis.out; ++o) {
    const int64_t offset = o * w.stride;
    const int64_t start = offset - axis.pad_begin;
    const int64_t lo = start < 0 ? CeilDiv(-start, d) : 0;
    const int64_t left = input_end - offset;  // in - start
    const int64_t hi = left > 0 ? std::min(k, CeilDiv(left, d)) : 0;
    const int64_t end = padded_end - offset;  // taps before the end of the padding
    w.lo.push_back(std::min(lo, k));
    w.hi.push_back(std::max(hi, std::min(lo, k)));
    w.padded.push_back(end > 0 ? std::min(k, CeilDiv(end, d)) : 0);
  }
  return w;
}

// The fast kernels' 2-D float MaxPool / AveragePool (SessionOptions::reference_kernels off): the
// reference loop below specialized to two spatial axes, the same taps in the same order, so the
// same bits (max: the first of the largest, NaN only when every tap is NaN; average: the taps
// summed in double in row-major order, divided once).
void Pool2D(const PoolAttrs& a, const float* x, int64_t planes, int64_t h, int64_t w,
            std::span<const AxisWindows> axes, float* y) {
  const AxisWindows& ay = axes[0];
  const AxisWindows& ax = axes[1];
  for (int64_t p = 0; p < planes; ++p) {
    const float* plane = x + p * h * w;
    for (int64_t oy = 0; oy < ay.out; ++oy) {
      const int64_t y0 = oy * ay.stride - ay.pad_begin;
      const int64_t ty_lo = ay.lo[oy], ty_hi = ay.hi[oy];
      for (int64_t ox = 0; ox < ax.out; ++ox, ++y) {
        const int64_t x0 = ox * ax.stride - ax.pad_begin;
        const int64_t tx_lo = ax.lo[ox], tx_hi = ax.hi[ox];
        if (a.kind == PoolKind::kMax) {
          float best = plane[(y0 + ty_lo * ay.dilation) * w + x0 + tx_lo * ax.dilation];
          for (int64_t ty = ty_lo; ty < ty_hi; ++ty) {
            const float* row = plane + (y0 + ty * ay.dilation) * w + x0;
            for (int64_t tx = tx_lo; tx < tx_hi; ++tx) {
              const float v = row[tx * ax.dilation];
              if (v > best || (std::isnan(best) && !std::isnan(v))) best = v;
            }
          }
          *y = best;
        } else {
          double sum = 0;
          for (int64_t ty = ty_lo; ty < ty_hi; ++ty) {
            const float* row = plane + (y0 + ty * ay.dilation) * w + x0;
            for (int64_t tx = tx_lo; tx < tx_hi; ++tx)
              sum += static_cast<double>(row[tx * ax.dilation]);
          }
          const int64_t count = (ty_hi - ty_lo) * (tx_hi - tx_lo);
          const int64_t pool_size = ay.padded[oy] * ax.padded[ox];
          *y = static_cast<float>(sum /
                                  static_cast<double>(a.count_include_pad ? pool_size : count));
        }
      }
    }
  }
}

// Whether every window lies wholly inside X, undilated (fast::MaxPool2D's precondition).
bool FullWindows(const PoolAttrs& a, std::span<const AxisWindows> axes) {
  for (size_t i = 0; i < axes.size(); ++i) {
    // (out - 1) * stride is below the padded input size (the shape rule checked it fits int64);
    // adding the kernel can still overflow for absurd pads.
    int64_t end = 0;
    if (axes[i].dilation != 1 || axes[i].pad_begin != 0 ||
        __builtin_add_overflow((axes[i].out - 1) * axes[i].stride, a.kernel[i], &end) ||
        end > axes[i].in) {
      return false;
    }
  }
  return true;
}

template <class T>
Status RunPool(const PoolAttrs& a, RunContext& ctx, const Tensor& x, std::span<Value> outputs,
               bool fast) {
  using C = ComputeType<T>;
  const auto xs = x.shape();
  IDEM_ASSIGN_OR_RETURN(Ints ys, PoolShape<int64_t>(a, xs));
  IDEM_RETURN_IF_ERROR(CheckPoolWork<int64_t>(a, xs, ys, ctx.limits()));
  T* y = nullptr;
  IDEM_ASSIGN_OR_RETURN(outputs[0], AllocateTensorForOverwriteAs(ctx, x.element_type(), ys, &y));
  int64_t* indices = nullptr;
  if (a.kind == PoolKind::kMax && a.want_indices && outputs.size() > 1) {
    IDEM_ASSIGN_OR_RETURN(outputs[1],
                          AllocateTensorForOverwriteAs(ctx, ElementType::kInt64, ys, &indices));
  }
  if (outputs[0].tensor().element_count() == 0) return Status();
  // Every output dim is now >= 1 and their product is within max_elements.
  const size_t k = xs.size() - 2;
  // The windows: three int64 per output position of each axis (every dim is now >= 1 and within
  // max_elements, so the sum cannot overflow), checked against the budget like the output.
  uint64_t window_bytes = 0;
  for (size_t i = 0; i < k; ++i)
    window_bytes += 3 * sizeof(int64_t) * static_cast<uint64_t>(ys[i + 2]);
  IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(window_bytes));
  ScratchVector<AxisWindows> axes;
  int64_t out_plane = 1;
  for (size_t i = 0; i < k; ++i) {
    IDEM_ASSIGN_OR_RETURN(PoolAxis axis, ResolvePoolAxis(a, i, xs[i + 2]));
    axes.push_back(MakeWindows(a, i, xs[i + 2], axis));
    out_plane *= ys[i + 2];
  }
  const int64_t planes = xs[0] * xs[1];
  if (a.kind == PoolKind::kMax) {
    for (size_t i = 0; i < k; ++i) {
      for (int64_t o = 0; o < axes[i].out; ++o) {
        if (axes[i].lo[o] >= axes[i].hi[o]) {
          outputs[0] = Value();
          if (outputs.size() > 1) outputs[1] = Value();
          return AxisError(a, i,
                           fmt::format("the window at output position {} covers only padding "
                                       "(MaxPool needs at least one input element per window)",
                                       o));
        }
      }
    }
  }
  // Element strides of the spatial axes within a plane: row-major (reading X) and the
  // storage_order the Indices output uses (column-major: the first spatial axis varies fastest).
  // When X has no elements no window has a tap, and the strides (whose products could then
  // exceed int64) are not used.
  const int64_t in_plane = x.element_count() / planes;
  Ints row(k, 0), index_stride(k, 0);
  if (x.element_count() > 0) {
    row[k - 1] = 1;
    for (size_t i = k; i-- > 1;) row[i - 1] = row[i] * xs[i + 2];
    if (a.column_major) {
      index_stride[0] = 1;
      for (size_t i = 1; i < k; ++i) index_stride[i] = index_stride[i - 1] * xs[i + 1];
    } else {
      index_stride = row;
    }
  }
  const std::byte* px = x.data().data();
  if constexpr (std::is_same_v<T, float>) {
    if (fast && k == 2 && indices == nullptr && a.kind == PoolKind::kMax && FullWindows(a, axes)) {
      fast::MaxPoolProblem pr;
      pr.x = reinterpret_cast<const float*>(px);
      pr.planes = planes;
      pr.h = xs[2];
      pr.w = xs[3];
      pr.kh = a.kernel[0];
      pr.kw = a.kernel[1];
      pr.sh = a.strides[0];
      pr.sw = a.strides[1];
      pr.y = y;
      pr.oh = ys[2];
      pr.ow = ys[3];
      fast::MaxPool2D(pr);
      return Status();
    }
    if (fast && k == 2 && indices == nullptr) {
      Pool2D(a, reinterpret_cast<const float*>(px), planes, xs[2], xs[3], axes, y);
      return Status();
    }
  }
  std::vector<int64_t> opos(k, 0), tap(k, 0);
  int64_t out_index = 0;
  for (int64_t p = 0; p < planes; ++p) {
    std::fill(opos.begin(), opos.end(), 0);
    for (int64_t oi = 0; oi < out_plane; ++oi, ++out_index) {
      bool empty = false;
      // count_include_pad's divisor, in double: the product of window sizes of a few huge
      // kernels (2^31 each) would overflow int64; double holds any real divisor exactly.
      double pool_size = 1;
      for (size_t i = 0; i < k; ++i) {
        tap[i] = axes[i].lo[opos[i]];
        empty = empty || tap[i] >= axes[i].hi[opos[i]];
        pool_size *= static_cast<double>(axes[i].padded[opos[i]]);
      }
      double sum = 0;
      int64_t count = 0;
      C best{};
      int64_t best_index = -1;
      // The window's taps in row-major order: `tap` runs over [lo, hi) of every axis.
      for (bool more = !empty; more;) {
        int64_t offset = 0, index = 0;
        for (size_t i = 0; i < k; ++i) {
          const AxisWindows& w = axes[i];
          const int64_t pos = opos[i] * w.stride - w.pad_begin + tap[i] * w.dilation;
          offset += pos * row[i];
          index += pos * index_stride[i];
        }
        const C v = ToCompute(LoadElement<T>(px, p * in_plane + offset));
        if (a.kind == PoolKind::kMax) {
          bool take = best_index < 0 || v > best;
          if constexpr (std::is_floating_point_v<C>) {
            take = take || (std::isnan(best) && !std::isnan(v));
          }
          if (take) {
            best = v;
            best_index = p * in_plane + index;
          }
        } else {
          sum += static_cast<double>(v);
          ++count;
        }
        size_t i = k;
        while (i-- > 0) {
          if (++tap[i] < axes[i].hi[opos[i]]) break;
          tap[i] = axes[i].lo[opos[i]];
        }
        more = i != static_cast<size_t>(-1);
      }
      if (a.kind == PoolKind::kMax) {
        StoreElement<T>(reinterpret_cast<std::byte*>(y), out_index, FromCompute<T>(best));
        if (indices != nullptr) indices[out_index] = best_index;
      } else {
        const double divisor = a.count_include_pad ? pool_size : static_cast<double>(count);
        StoreElement<T>(reinterpret_cast<std::byte*>(y), out_index,
                        FromCompute<T>(static_cast<C>(sum / divisor)));
      }
      for (size_t i = k; i-- > 0;) {
        if (++opos[i] < axes[i].out) break;
        opos[i] = 0;
      }
    }
  }
  return Status();
}

// The fast kernels' float plane sum: eight partial sums in double (element i into sum i % 8),
// added in a fixed order at the end. The reference's one running sum is a chain of dependent
// adds (4 cycles per element: 20% of PaddleOCR cls went there); these are independent. Plain C++
// compiled once, so the same bits on every machine; within a few 1e-16 relative of the
// sequential double sum, so the float mean almost always rounds the same.
double SumEightWays(const float* __restrict x, int64_t n) {
  double s[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) s[k] += static_cast<double>(x[i + k]);
  }
  for (int k = 0; i < n; ++i, ++k) s[k] += static_cast<double>(x[i]);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

template <class T>
Status RunGlobalAverage(RunContext& ctx, const Tensor& x, std::span<Value> outputs,
                        const PoolAttrs& a, bool fast) {
  using C = ComputeType<T>;
  IDEM_ASSIGN_OR_RETURN(Ints ys, PoolShape<int64_t>(a, x.shape()));
  T* y = nullptr;
  IDEM_ASSIGN_OR_RETURN(outputs[0], AllocateTensorForOverwriteAs(ctx, x.element_type(), ys, &y));
  const int64_t planes = ys[0] * ys[1];
  if (planes == 0) return Status();
  const int64_t plane = x.element_count() / planes;
  if constexpr (std::is_same_v<T, float>) {
    if (fast && plane > 0) {
      const float* pf = x.data_as<float>().data();
      for (int64_t p = 0; p < planes; ++p) {
        y[p] = static_cast<float>(SumEightWays(pf + p * plane, plane) / static_cast<double>(plane));
      }
      return Status();
    }
  }
  const std::byte* px = x.data().data();
  for (int64_t p = 0; p < planes; ++p) {
    double sum = 0;
    for (int64_t i = 0; i < plane; ++i) {
      sum += static_cast<double>(ToCompute(LoadElement<T>(px, p * plane + i)));
    }
    // An empty plane gives 0 / 0 = NaN (the mean of no values).
    StoreElement<T>(reinterpret_cast<std::byte*>(y), p,
                    FromCompute<T>(static_cast<C>(sum / static_cast<double>(plane))));
  }
  return Status();
}

Result<std::unique_ptr<Kernel>> CreatePool(const PoolAttrs& attrs, const Facts& facts) {
  const bool fast = !facts.context().reference_kernels;
  return MakeFunctionKernel(
      attrs,
      [fast](const PoolAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
             std::span<Value> outputs) -> Status {
        const Tensor& x = inputs[0]->tensor();
        auto run = [&](auto tag) -> Status {
          using T = decltype(tag);
          if (a.kind == PoolKind::kGlobalAverage) {
            return RunGlobalAverage<T>(ctx, x, outputs, a, fast);
          }
          return RunPool<T>(a, ctx, x, outputs, fast);
        };
        if (a.kind == PoolKind::kMax && x.element_type() == ElementType::kInt8)
          return run(int8_t{});
        if (a.kind == PoolKind::kMax && x.element_type() == ElementType::kUint8) {
          return run(uint8_t{});
        }
        return DispatchFloat(x.element_type(), a.op, run);
      });
}

// ---- Registration -----------------------------------------------------------------------------

std::vector<ElementType> PoolFloats(int version) {
  std::vector<ElementType> t = FloatTypes(false);
  if (version >= 22) t.insert(t.begin(), ElementType::kBfloat16);
  return t;
}

KernelSchema PoolSchema(PoolKind kind, int version) {
  KernelSchema s;
  s.since_version = version;
  s.inputs = {{"X", "T"}};
  s.outputs = {{"Y", "T"}};
  std::vector<ElementType> types = PoolFloats(version);
  switch (kind) {
    case PoolKind::kAverage:
      s.op_type = "AveragePool";
      s.attributes = {"auto_pad", "kernel_shape", "pads", "strides"};
      if (version >= 7) s.attributes.push_back("count_include_pad");
      if (version >= 10) s.attributes.push_back("ceil_mode");
      if (version >= 19) s.attributes.push_back("dilations");
      break;
    case PoolKind::kMax:
      s.op_type = "MaxPool";
      s.attributes = {"auto_pad", "kernel_shape", "pads", "strides"};
      if (version >= 8) {
        s.attributes.push_back("storage_order");
        s.outputs.push_back({"Indices", "I", FormalParameter::Arity::kOptional});
      }
      if (version >= 10) {
        s.attributes.push_back("ceil_mode");
        s.attributes.push_back("dilations");
      }
      if (version >= 12) {
        types.push_back(ElementType::kInt8);
        types.push_back(ElementType::kUint8);
      }
      break;
    case PoolKind::kGlobalAverage:
      s.op_type = "GlobalAveragePool";
      break;
  }
  s.constraints = {{"T", TensorTypes(types)}};
  if (kind == PoolKind::kMax && version >= 8) {
    s.constraints.push_back({"I", {Type::Tensor(ElementType::kInt64)}});
  }
  // Not folded at planning: its work is outputs x kernel (or K), not proportional to the file, so
  // a small model could make Session::Create compute for hours with no deadline to stop it.
  s.foldable = false;
  DefineOp<PoolAttrs>(
      s, [kind](const NodeContext& ctx) { return ParsePool(ctx, kind); }, InferPool, CreatePool);
  return s;
}

}  // namespace

void RegisterPoolKernels(KernelRegistry& registry) {
  for (int v : {1, 7, 10, 11, 19, 22}) registry.Register(PoolSchema(PoolKind::kAverage, v));
  for (int v : {1, 8, 10, 11, 12, 22}) registry.Register(PoolSchema(PoolKind::kMax, v));
  for (int v : {1, 22}) registry.Register(PoolSchema(PoolKind::kGlobalAverage, v));
}

}  // namespace idem
