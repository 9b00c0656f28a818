// Conv (1, 11, 22), ConvTranspose (1, 11, 22): any number of spatial dims, every auto_pad,
// groups (depthwise included), dilations, strides, pads, kernel_shape, optional bias;
// ConvTranspose's output_padding and output_shape.
//
// Reference kernels: Conv is im2col + the shared reference GEMM (gemm.h), ConvTranspose is the
// GEMM W^T X + col2im. Products are accumulated in float for float/float16/bfloat16 (16-bit
// values widened once; each result rounded once) and in double for double, in a fixed order:
// Conv sums over (input channel, kernel position) in row-major order, then adds the bias;
// ConvTranspose adds each (input position, kernel position) contribution in a fixed loop order,
// then the bias. Deterministic: the same bits on every run.
//
// Geometry (one rule per axis, used at plan time and at run time; ek = (k - 1) * dilation + 1):
//   Conv NOTSET:  out = (in + pad_begin + pad_end - ek) / stride + 1  (refused if ek > padded in)
//   Conv VALID:   out = (in - ek) / stride + 1                         (refused if ek > in)
//   Conv SAME_*:  out = ceil(in / stride); total = max(0, (out - 1) * stride + ek - in), the odd
//                 pixel at the end (SAME_UPPER) or the beginning (SAME_LOWER).
//   ConvTranspose full = stride * (in - 1) + output_padding + ek
//     NOTSET: out = full - pad_begin - pad_end; VALID: out = full;
//     output_shape given, or SAME_* (out = in * stride): total = full - out split as the spec
//     (version 11) says: SAME_UPPER pad_begin = total / 2, else pad_begin = total - total / 2;
//     when out exceeds full (total < 0) nothing is cropped and the positions past full hold the
//     bias only (as ONNX Runtime, which clamps the total to 0). Version 1's text swaps the
//     SAME_UPPER split; its attribute text and ONNX Runtime agree with version 11's, used here
//     for every version.
// Where ONNX Runtime 1.30 differs (checked on random cases): it refuses Conv SAME_* with
// dilations > 1 (idem follows the spec), refuses an output_shape exceeding the full output by a
// stride or more, and for ConvTranspose SAME_* with in * stride > full gives the full size
// instead of the spec's in * stride (idem: in * stride, as ONNX shape inference).
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <vector>

#include "src/core/text.h"
#include "src/kernels/dispatch.h"
#include "src/kernels/fast/packed_gemm.h"
#include "src/kernels/fast/thread_pool.h"
#include "src/kernels/fast/winograd.h"
#include "src/kernels/gemm.h"
#include "src/kernels/op.h"

namespace idem {
namespace {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct ConvAttrs {
  bool transpose = false;  // ConvTranspose
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t group = 1;
  // As given (empty when absent); lengths are checked against the spatial rank by the shape rule.
  std::vector<int64_t> kernel_shape, strides, dilations, pads;
  std::vector<int64_t> output_padding, output_shape;  // ConvTranspose
  const char* op = "Conv";
};

Status CheckAll(const std::vector<int64_t>& v, const char* name, int64_t min, const char* rule) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < min) {
      return InvalidModel(
          fmt::format("attribute '{}' has {} at index {}; {}", name, v[i], i, rule));
    }
  }
  return {};
}

Result<ConvAttrs> ParseConvAttrs(const NodeContext& ctx, bool transpose) {
  AttrReader r(ctx.node);
  ConvAttrs a;
  a.transpose = transpose;
  a.op = transpose ? "ConvTranspose" : "Conv";
  IDEM_ASSIGN_OR_RETURN(
      std::string pad,
      r.StringIn("auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}));
  a.auto_pad = pad == "SAME_UPPER"   ? AutoPad::kSameUpper
               : pad == "SAME_LOWER" ? AutoPad::kSameLower
               : pad == "VALID"      ? AutoPad::kValid
                                     : AutoPad::kNotSet;
  IDEM_ASSIGN_OR_RETURN(a.group, r.Int("group", 1));
  if (a.group < 1) {
    return InvalidModel(fmt::format("attribute 'group' is {}; it must be >= 1", a.group));
  }
  IDEM_ASSIGN_OR_RETURN(a.kernel_shape, r.Ints("kernel_shape", std::vector<int64_t>{}));
  IDEM_ASSIGN_OR_RETURN(a.strides, r.Ints("strides", std::vector<int64_t>{}));
  IDEM_ASSIGN_OR_RETURN(a.dilations, r.Ints("dilations", std::vector<int64_t>{}));
  IDEM_ASSIGN_OR_RETURN(a.pads, r.Ints("pads", std::vector<int64_t>{}));
  IDEM_RETURN_IF_ERROR(CheckAll(a.kernel_shape, "kernel_shape", 1, "kernel dims must be >= 1"));
  IDEM_RETURN_IF_ERROR(CheckAll(a.strides, "strides", 1, "strides must be >= 1"));
  IDEM_RETURN_IF_ERROR(CheckAll(a.dilations, "dilations", 1, "dilations must be >= 1"));
  IDEM_RETURN_IF_ERROR(CheckAll(a.pads, "pads", 0, "pads must be >= 0"));
  if (a.pads.size() % 2 != 0) {
    return InvalidModel(
        fmt::format("attribute 'pads' has {} values; it needs a begin and an end per spatial axis",
                    a.pads.size()));
  }
  if (a.auto_pad != AutoPad::kNotSet &&
      std::any_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p != 0; })) {
    return InvalidModel(fmt::format("attributes 'pads' and 'auto_pad' ({}) cannot be used together",
                                    QuoteName(pad)));
  }
  if (transpose) {
    IDEM_ASSIGN_OR_RETURN(a.output_padding, r.Ints("output_padding", std::vector<int64_t>{}));
    IDEM_ASSIGN_OR_RETURN(a.output_shape, r.Ints("output_shape", std::vector<int64_t>{}));
    IDEM_RETURN_IF_ERROR(
        CheckAll(a.output_padding, "output_padding", 0, "output padding must be >= 0"));
    IDEM_RETURN_IF_ERROR(CheckAll(a.output_shape, "output_shape", 1, "output dims must be >= 1"));
  }
  return a;
}

// Attribute `v` at spatial axis `axis`, or `def` when the attribute is absent.
int64_t At(const std::vector<int64_t>& v, size_t axis, int64_t def) {
  return v.empty() ? def : v[axis];
}

// Where one spatial axis's output comes from: its size and the padding before and after (a
// negative pad_end on ConvTranspose: positions past the full output).
struct Axis {
  int64_t out = 0;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;
};

Status Overflow(const ConvAttrs& a, size_t axis) {
  return InvalidArgument(
      fmt::format("{}: the sizes along spatial axis {} overflow int64", a.op, axis));
}

// The geometry of spatial axis `axis` for input size `in` and kernel size `k` (the one rule).
Result<Axis> AxisGeometry(const ConvAttrs& a, size_t axis, size_t spatial, int64_t in, int64_t k) {
  const int64_t s = At(a.strides, axis, 1);
  const int64_t d = At(a.dilations, axis, 1);
  int64_t ek = 0;  // (k - 1) * d + 1
  if (__builtin_mul_overflow(k - 1, d, &ek) || __builtin_add_overflow(ek, 1, &ek)) {
    return Overflow(a, axis);
  }
  Axis g;
  if (!a.transpose) {
    if (a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower) {
      g.out = in / s + (in % s != 0 ? 1 : 0);
      int64_t total = 0;
      if (g.out > 0 && (__builtin_mul_overflow(g.out - 1, s, &total) ||
                        __builtin_add_overflow(total, ek, &total))) {
        return Overflow(a, axis);
      }
      total = std::max<int64_t>(0, total - in);
      g.pad_begin = a.auto_pad == AutoPad::kSameLower ? total - total / 2 : total / 2;
      g.pad_end = total - g.pad_begin;
      return g;
    }
    if (a.auto_pad == AutoPad::kNotSet) {
      g.pad_begin = At(a.pads, axis, 0);
      g.pad_end = At(a.pads, spatial + axis, 0);
    }
    int64_t padded = 0;
    if (__builtin_add_overflow(in, g.pad_begin, &padded) ||
        __builtin_add_overflow(padded, g.pad_end, &padded)) {
      return Overflow(a, axis);
    }
    if (ek > padded) {
      return InvalidArgument(fmt::format(
          "Conv: the kernel along spatial axis {} ({} with dilation {}: {} positions) is larger "
          "than the padded input ({} + pads {} + {} = {})",
          axis, k, d, ek, in, g.pad_begin, g.pad_end, padded));
    }
    g.out = (padded - ek) / s + 1;
    return g;
  }
  // ConvTranspose.
  if (in < 1) {
    return InvalidArgument(
        fmt::format("ConvTranspose: spatial axis {} of X is {}; it must be >= 1", axis, in));
  }
  const int64_t op = At(a.output_padding, axis, 0);
  if (op >= std::max(s, d)) {
    return InvalidModel(fmt::format(
        "ConvTranspose: output_padding {} along spatial axis {} must be less than the stride ({}) "
        "or the dilation ({})",
        op, axis, s, d));
  }
  int64_t full = 0;
  if (__builtin_mul_overflow(in - 1, s, &full) || __builtin_add_overflow(full, op, &full) ||
      __builtin_add_overflow(full, ek, &full)) {
    return Overflow(a, axis);
  }
  std::optional<int64_t> target;
  if (!a.output_shape.empty()) {
    target = a.output_shape[a.output_shape.size() - spatial + axis];
  } else if (a.auto_pad == AutoPad::kSameUpper || a.auto_pad == AutoPad::kSameLower) {
    int64_t t = 0;
    if (__builtin_mul_overflow(in, s, &t)) return Overflow(a, axis);
    target = t;
  }
  if (target) {
    g.out = *target;
    const int64_t total = full - g.out;
    if (total >= 0) {
      g.pad_begin = a.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
      g.pad_end = total - g.pad_begin;
    } else {
      g.pad_end = total;  // positions past the full output: bias only
    }
    return g;
  }
  if (a.auto_pad == AutoPad::kNotSet) {
    g.pad_begin = At(a.pads, axis, 0);
    g.pad_end = At(a.pads, spatial + axis, 0);
  }
  // pads may be as large as int64 allows: the difference must not overflow.
  if (__builtin_sub_overflow(full, g.pad_begin, &g.out) ||
      __builtin_sub_overflow(g.out, g.pad_end, &g.out)) {
    g.out = 0;
  }
  if (g.out < 1) {
    return InvalidArgument(fmt::format(
        "ConvTranspose: pads {} + {} along spatial axis {} leave no output (the full output is "
        "{})",
        g.pad_begin, g.pad_end, axis, full));
  }
  return g;
}

std::string DimsText(auto dims) {
  std::vector<std::string> parts;
  parts.reserve(dims.size());
  for (const auto& d : dims) parts.push_back(KnownDim(d) ? std::to_string(*KnownDim(d)) : "?");
  return fmt::format("[{}]", fmt::join(parts, ","));
}

// The output shape of Conv/ConvTranspose from X, W and (optionally) B: checks ranks, attribute
// lengths, channels against group, the kernel, the bias; written once over D (Dim at plan time,
// int64_t at run time). `axes` (run time) receives each spatial axis's geometry.
template <class D>
Result<DimsOf<D>> ConvShape(const ConvAttrs& a, std::span<const D> x, std::span<const D> w,
                            std::optional<std::span<const D>> b,
                            ScratchVector<Axis>* axes = nullptr) {
  if (x.size() < 3) {
    return InvalidArgument(
        fmt::format("{}: X has rank {}; it must be N x C x D1 x ... (rank >= 3)", a.op, x.size()));
  }
  if (w.size() != x.size()) {
    return InvalidArgument(fmt::format("{}: W has rank {} but X has rank {}; they must match", a.op,
                                       w.size(), x.size()));
  }
  const size_t spatial = x.size() - 2;
  auto check_len = [&](const std::vector<int64_t>& v, const char* name, size_t want) -> Status {
    if (!v.empty() && v.size() != want) {
      return InvalidModel(
          fmt::format("{}: attribute '{}' has {} values; X has {} spatial axes, "
                      "so it needs {}",
                      a.op, name, v.size(), spatial, want));
    }
    return {};
  };
  IDEM_RETURN_IF_ERROR(check_len(a.kernel_shape, "kernel_shape", spatial));
  IDEM_RETURN_IF_ERROR(check_len(a.strides, "strides", spatial));
  IDEM_RETURN_IF_ERROR(check_len(a.dilations, "dilations", spatial));
  IDEM_RETURN_IF_ERROR(check_len(a.pads, "pads", 2 * spatial));
  IDEM_RETURN_IF_ERROR(check_len(a.output_padding, "output_padding", spatial));
  if (!a.output_shape.empty() && a.output_shape.size() != spatial &&
      a.output_shape.size() != spatial + 2) {
    return InvalidModel(fmt::format(
        "ConvTranspose: attribute 'output_shape' has {} values; it needs {} (the spatial dims)",
        a.output_shape.size(), spatial));
  }
  // Kernel dims: the attribute, which must agree with W.
  ScratchVector<std::optional<int64_t>> kernel(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    const auto wk = KnownDim(w[i + 2]);
    if (!a.kernel_shape.empty()) {
      if (wk && *wk != a.kernel_shape[i]) {
        return InvalidArgument(
            fmt::format("{}: attribute 'kernel_shape' {} does not match W's spatial dims {}", a.op,
                        DimsText(a.kernel_shape), DimsText(w.subspan(2))));
      }
      kernel[i] = a.kernel_shape[i];
    } else {
      kernel[i] = wk;
    }
    if (kernel[i] && *kernel[i] < 1) {
      return InvalidArgument(
          fmt::format("{}: W's kernel dim {} is {}; it must be >= 1", a.op, i + 2, *kernel[i]));
    }
  }
  // Channels.
  const auto c = KnownDim(x[1]), w0 = KnownDim(w[0]), w1 = KnownDim(w[1]);
  D m;
  if (!a.transpose) {
    if (c && *c % a.group != 0) {
      return InvalidArgument(
          fmt::format("Conv: X has {} channels, not divisible by group {}", *c, a.group));
    }
    if (c && w1 && *w1 * a.group != *c) {
      return InvalidArgument(fmt::format(
          "Conv: W's dim 1 ({}) times group ({}) must equal X's channels ({}); W is M x C/group "
          "x k1 x ...",
          *w1, a.group, *c));
    }
    if (w0 && *w0 % a.group != 0) {
      return InvalidArgument(fmt::format(
          "Conv: W's dim 0 (the {} feature maps) is not divisible by group {}", *w0, a.group));
    }
    m = w[0];
  } else {
    if (c && *c % a.group != 0) {
      return InvalidArgument(
          fmt::format("ConvTranspose: X has {} channels, not divisible by group {}", *c, a.group));
    }
    if (c && w0 && *w0 != *c) {
      return InvalidArgument(fmt::format(
          "ConvTranspose: W's dim 0 ({}) must equal X's channels ({}); W is C x M/group x k1 "
          "x ...",
          *w0, *c));
    }
    int64_t product = 0;
    if (w1 && __builtin_mul_overflow(*w1, a.group, &product)) {
      return InvalidArgument(fmt::format(
          "ConvTranspose: W's dim 1 ({}) times group ({}) overflows int64", *w1, a.group));
    }
    m = MapDim(w[1], [&](int64_t v) { return v * a.group; });
  }
  if (b) {
    const auto vm = KnownDim(m);
    const std::span<const D> bs = *b;
    if (bs.size() != 1 || (vm && KnownDim(bs[0]) && *KnownDim(bs[0]) != *vm)) {
      return InvalidArgument(
          fmt::format("{}: B has shape {}; it must be [M] with M = {} output channels", a.op,
                      DimsText(bs), vm ? std::to_string(*vm) : std::string("?")));
    }
  }
  DimsOf<D> out = {x[0], m};
  if (axes != nullptr) axes->assign(spatial, Axis{});
  for (size_t i = 0; i < spatial; ++i) {
    const auto in = KnownDim(x[i + 2]);
    if (in && kernel[i]) {
      IDEM_ASSIGN_OR_RETURN(Axis g, AxisGeometry(a, i, spatial, *in, *kernel[i]));
      if (axes != nullptr) (*axes)[i] = g;
      out.push_back(MakeDim<D>(g.out));
    } else if (a.transpose && !a.output_shape.empty()) {
      out.push_back(MakeDim<D>(a.output_shape[a.output_shape.size() - spatial + i]));
    } else {
      out.push_back(MakeDim<D>(std::nullopt));
    }
  }
  return out;
}

// The work a Conv / ConvTranspose with these dims does (checked when every dim is known): Conv
// runs outputs x (C/group x kernel) multiply-adds (its im2col matrix), ConvTranspose X's elements
// x (M/group x kernel) and then writes each output once. Pads and dilations cost nothing in the
// file, so this product, not the file's size, is what bounds the node.
template <class D>
Status CheckConvWork(const ConvAttrs& a, std::span<const D> x, std::span<const D> w,
                     std::span<const D> out, const Limits& limits) {
  auto product = [](auto dims) -> std::optional<double> {
    double p = 1;
    for (const auto& d : dims) {
      const auto v = KnownDim(d);
      if (!v) return std::nullopt;
      p *= static_cast<double>(*v);
    }
    return p;
  };
  const auto outputs = product(out), inputs = product(x), per = product(w.subspan(1));
  if (!outputs || !inputs || !per || w.size() < 2) return {};
  if (!a.transpose) {
    return CheckWork(limits, *outputs * std::max(1.0, *per), a.op,
                     "multiply-adds (outputs x C/group x kernel)");
  }
  return CheckWork(limits, *inputs * std::max(1.0, *per) + *outputs, a.op,
                   "multiply-adds (X's elements x M/group x kernel, plus the outputs)");
}

Result<Inference> InferConv(const ConvAttrs& a, const Facts& facts) {
  IDEM_ASSIGN_OR_RETURN(auto dims, InferDims(facts, {0, 1}, [&] {
                          std::optional<std::span<const Dim>> b;
                          if (facts.has(2) && facts.shape(2))
                            b = std::span<const Dim>(*facts.shape(2));
                          return ConvShape<Dim>(a, *facts.shape(0), *facts.shape(1), b);
                        }));
  if (dims) {
    IDEM_RETURN_IF_ERROR(
        CheckConvWork<Dim>(a, *facts.shape(0), *facts.shape(1), *dims, facts.context().limits));
  }
  return OneOutput(TensorType(facts.element_type(0), std::move(dims)));
}

int64_t Product(std::span<const int64_t> v) {
  int64_t p = 1;
  for (int64_t d : v) p *= d;
  return p;
}

// Scratch of n values of A, checked against the run's budget first.
template <class A>
Result<ScratchVector<A>> Scratch(RunContext& ctx, int64_t n) {
  IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(n) * sizeof(A)));
  return ScratchVector<A>(static_cast<size_t>(n));
}

// About how many values an im2col / col2im column block holds (4 MiB of floats); at least one
// line of the innermost axis.
constexpr int64_t kColumnBudget = int64_t{1} << 20;

// The lines (runs along the innermost spatial axis) a column block covers.
int64_t LinesPerBlock(int64_t rows, int64_t line, int64_t lines) {
  const int64_t per = std::max<int64_t>(1, kColumnBudget / std::max<int64_t>(1, rows * line));
  return std::min(per, lines);
}

// Unravels `index` over dims into coords (row-major).
void Unravel(int64_t index, std::span<const int64_t> dims, int64_t* coords) {
  for (size_t d = dims.size(); d-- > 0;) {
    coords[d] = dims[d] == 0 ? 0 : index % dims[d];
    index = dims[d] == 0 ? 0 : index / dims[d];
  }
}

// ConvTranspose's W (C x Mg*K, group by group: Cg x rows each) as W_g^T (rows x Cg) per group.
void TransposeGroups(const float* w, int64_t group, int64_t cg, int64_t rows, float* out) {
  for (int64_t gi = 0; gi < group; ++gi) {
    const float* wg = w + gi * cg * rows;
    float* og = out + gi * rows * cg;
    for (int64_t c = 0; c < cg; ++c) {
      for (int64_t r = 0; r < rows; ++r) og[r * cg + c] = wg[c * rows + r];
    }
  }
}

// What a Conv/ConvTranspose run needs besides X: W as accumulator values (pre-packed when W is
// a constant 16-bit tensor), the geometry.
struct Geometry {
  int64_t n = 0, c = 0, m = 0, group = 1;
  Ints in, kernel, out, stride, dilation;
  ScratchVector<Axis> axes;
};

template <class T>
class ConvKernel final : public Kernel {
 public:
  using A = ComputeType<T>;
  ConvKernel(ConvAttrs attrs, std::shared_ptr<const std::vector<A>> packed_w)
      : attrs_(std::move(attrs)), packed_w_(std::move(packed_w)) {}
  // ConvTranspose of float with its GEMM on the fast kernels (fast::GemmUnpacked, W_g^T as A):
  // `transposed_w` is W_g^T per group, made at Create from a constant W (else per run).
  ConvKernel(ConvAttrs attrs, bool fast, std::shared_ptr<const std::vector<float>> transposed_w)
      : attrs_(std::move(attrs)), fast_(fast), transposed_w_(std::move(transposed_w)) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    const Tensor& x = inputs[0]->tensor();
    const Tensor& w = inputs[1]->tensor();
    const Tensor* b = inputs.size() > 2 && inputs[2] != nullptr ? &inputs[2]->tensor() : nullptr;
    if (w.element_type() != x.element_type() ||
        (b != nullptr && b->element_type() != x.element_type())) {
      return InvalidArgument(
          fmt::format("{}: X, W and B must have the same element type", attrs_.op));
    }
    std::optional<std::span<const int64_t>> bs;
    if (b != nullptr) bs = b->shape();
    Geometry g;
    IDEM_ASSIGN_OR_RETURN(Ints shape,
                          ConvShape<int64_t>(attrs_, x.shape(), w.shape(), bs, &g.axes));
    IDEM_RETURN_IF_ERROR(CheckConvWork<int64_t>(attrs_, x.shape(), w.shape(), shape, ctx.limits()));
    const size_t spatial = shape.size() - 2;
    g.n = shape[0];
    g.c = x.shape()[1];
    g.m = shape[1];
    g.group = attrs_.group;
    for (size_t i = 0; i < spatial; ++i) {
      g.in.push_back(x.shape()[i + 2]);
      g.kernel.push_back(w.shape()[i + 2]);
      g.out.push_back(shape[i + 2]);
      g.stride.push_back(At(attrs_.strides, i, 1));
      g.dilation.push_back(At(attrs_.dilations, i, 1));
    }
    T* y = nullptr;
    IDEM_ASSIGN_OR_RETURN(outputs[0], AllocateTensorAs(ctx, x.element_type(), shape, &y));
    if (Product(shape) == 0) return {};
    // W and B as accumulator values.
    const A* wa = nullptr;
    ScratchVector<A> w_storage;
    if constexpr (std::is_same_v<A, T>) {
      wa = w.data_as<T>().data();
    } else if (packed_w_ != nullptr &&
               static_cast<int64_t>(packed_w_->size()) == w.element_count()) {
      wa = packed_w_->data();
    } else {
      IDEM_ASSIGN_OR_RETURN(w_storage, Scratch<A>(ctx, w.element_count()));
      const T* pw = w.data_as<T>().data();
      for (int64_t i = 0; i < w.element_count(); ++i) w_storage[i] = ToCompute(pw[i]);
      wa = w_storage.data();
    }
    ScratchVector<A> bias;
    if (b != nullptr) {
      const T* pb = b->data_as<T>().data();
      for (int64_t i = 0; i < b->element_count(); ++i) bias.push_back(ToCompute(pb[i]));
    }
    const T* px = x.data_as<T>().data();
    return attrs_.transpose ? RunTranspose(ctx, g, px, wa, bias, y)
                            : RunConv(ctx, g, px, wa, bias, y);
  }

 private:
  // Y[n, g*Mg + m, p] = sum over (c, kernel position) of W[g*Mg + m, c, k] * X[n, g*Cg + c, at(p,
  // k)]
  // + B[g*Mg + m]: per (batch, group), the GEMM W_g (Mg x Kd) * col (Kd x P) on column blocks.
  Status RunConv(RunContext& ctx, const Geometry& g, const T* x, const A* w,
                 const ScratchVector<A>& bias, T* y) const {
    const size_t spatial = g.in.size();
    const int64_t cg = g.c / g.group, mg = g.m / g.group;
    const int64_t kk = Product(g.kernel);
    const int64_t kd = cg * kk;  // rows of col
    const int64_t xs = Product(g.in), ps = Product(g.out);
    const int64_t line = g.out.back(), lines = ps / line;
    bool pointwise = std::is_same_v<A, T>;  // X itself is col: 1x1 kernel, stride 1, no pads
    for (size_t i = 0; i < spatial; ++i) {
      pointwise = pointwise && g.kernel[i] == 1 && g.stride[i] == 1 && g.axes[i].pad_begin == 0 &&
                  g.axes[i].pad_end == 0;
    }
    const int64_t block_lines = LinesPerBlock(kd, line, lines);
    const int64_t block = block_lines * line;
    ScratchVector<A> col, acc;
    if (!pointwise) {
      IDEM_ASSIGN_OR_RETURN(col, Scratch<A>(ctx, kd * block));
    }
    if constexpr (!std::is_same_v<A, T>) {
      IDEM_ASSIGN_OR_RETURN(acc, Scratch<A>(ctx, mg * block));
    }
    std::vector<int64_t> kcoord(spatial), ocoord(spatial);
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t gi = 0; gi < g.group; ++gi) {
        const T* xg = x + (n * g.c + gi * cg) * xs;
        const A* wg = w + gi * mg * kd;
        T* yg = y + (n * g.m + gi * mg) * ps;
        for (int64_t l0 = 0; l0 < lines; l0 += block_lines) {
          const int64_t p0 = l0 * line;
          const int64_t cols = std::min(block_lines, lines - l0) * line;
          const A* bmat = nullptr;
          int64_t ldb = 0;
          if constexpr (std::is_same_v<A, T>) {
            if (pointwise) {
              bmat = xg + p0;
              ldb = xs;
            }
          }
          if (bmat == nullptr) {
            Im2Col(g, xg, kk, kd, l0, cols / line, line, col.data(), cols, kcoord, ocoord);
            bmat = col.data();
            ldb = cols;
          }
          if constexpr (std::is_same_v<A, T>) {
            ReferenceGemm<A>(false, false, mg, cols, kd, wg, kd, bmat, ldb, yg + p0, ps, false);
            if (!bias.empty()) {
              for (int64_t m = 0; m < mg; ++m) {
                const A bv = bias[gi * mg + m];
                for (int64_t p = 0; p < cols; ++p) yg[m * ps + p0 + p] += bv;
              }
            }
          } else {
            ReferenceGemm<A>(false, false, mg, cols, kd, wg, kd, bmat, ldb, acc.data(), cols,
                             false);
            for (int64_t m = 0; m < mg; ++m) {
              const A bv = bias.empty() ? A{0} : bias[gi * mg + m];
              for (int64_t p = 0; p < cols; ++p) {
                A v = acc[m * cols + p];
                if (!bias.empty()) v += bv;
                yg[m * ps + p0 + p] = FromCompute<T>(v);
              }
            }
          }
        }
      }
    }
    return {};
  }

  // col[r][q] for rows r = (channel c, kernel position) and the `nlines` output lines from line
  // l0: X at the input position the kernel position reads for output q, 0 in the padding.
  void Im2Col(const Geometry& g, const T* xg, int64_t kk, int64_t kd, int64_t l0, int64_t nlines,
              int64_t line, A* col, int64_t cols, std::vector<int64_t>& kcoord,
              std::vector<int64_t>& ocoord) const {
    const size_t spatial = g.in.size();
    const size_t last = spatial - 1;
    const int64_t xs = Product(g.in);
    const int64_t in_last = g.in[last], s_last = g.stride[last];
    const std::span<const int64_t> outer(g.out.data(), last);
    for (int64_t r = 0; r < kd; ++r) {
      const int64_t c = r / kk;
      Unravel(r % kk, g.kernel, kcoord.data());
      const T* xc = xg + c * xs;
      A* dst = col + r * cols;
      const int64_t shift = kcoord[last] * g.dilation[last] - g.axes[last].pad_begin;
      for (int64_t li = 0; li < nlines; ++li) {
        Unravel(l0 + li, outer, ocoord.data());
        bool valid = true;
        int64_t off = 0;
        for (size_t d = 0; d < last && valid; ++d) {
          const int64_t ip =
              ocoord[d] * g.stride[d] - g.axes[d].pad_begin + kcoord[d] * g.dilation[d];
          valid = ip >= 0 && ip < g.in[d];
          off = off * g.in[d] + ip;
        }
        A* out = dst + li * line;
        if (!valid) {
          std::fill(out, out + line, A{0});
          continue;
        }
        const T* src = xc + off * in_last;
        for (int64_t o = 0; o < line; ++o) {
          const int64_t ip = o * s_last + shift;
          out[o] = ip >= 0 && ip < in_last ? ToCompute(src[ip]) : A{0};
        }
      }
    }
  }

  // Y[n, g*Mg + m, at(i, k)] += sum over c of W[g*Cg + c, m, k] * X[n, g*Cg + c, i], then + B:
  // per (batch, group), the GEMM W_g^T ((Mg*K) x Cg) * X_g (Cg x I) on column blocks of input
  // positions, each block scattered (col2im) into an accumulator plane.
  Status RunTranspose(RunContext& ctx, const Geometry& g, const T* x, const A* w,
                      const ScratchVector<A>& bias, T* y) const {
    const size_t spatial = g.in.size();
    const size_t last = spatial - 1;
    const int64_t cg = g.c / g.group, mg = g.m / g.group;
    const int64_t kk = Product(g.kernel);
    const int64_t rows = mg * kk;
    const int64_t xs = Product(g.in), ps = Product(g.out);
    const int64_t line = g.in.back(), lines = xs / line;
    const int64_t block_lines = LinesPerBlock(rows, line, lines);
    const int64_t block = block_lines * line;
    IDEM_ASSIGN_OR_RETURN(ScratchVector<A> col, Scratch<A>(ctx, rows * block));
    ScratchVector<A> xa, plane;
    if constexpr (!std::is_same_v<A, T>) {
      IDEM_ASSIGN_OR_RETURN(xa, Scratch<A>(ctx, cg * xs));
      IDEM_ASSIGN_OR_RETURN(plane, Scratch<A>(ctx, mg * ps));
    }
    // The fast path's A: W_g^T per group (rows x Cg), from Create or made now.
    const float* wt = nullptr;
    ScratchVector<float> wt_storage;
    if constexpr (std::is_same_v<T, float>) {
      if (fast_) {
        const int64_t count = g.group * rows * cg;
        if (transposed_w_ != nullptr && static_cast<int64_t>(transposed_w_->size()) == count) {
          wt = transposed_w_->data();
        } else {
          IDEM_ASSIGN_OR_RETURN(wt_storage, Scratch<float>(ctx, count));
          TransposeGroups(w, g.group, cg, rows, wt_storage.data());
          wt = wt_storage.data();
        }
      }
    }
    Ints kcoord(spatial), icoord(spatial);
    const std::span<const int64_t> outer(g.in.data(), last);
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t gi = 0; gi < g.group; ++gi) {
        const T* xg = x + (n * g.c + gi * cg) * xs;
        const A* wg = w + gi * cg * rows;
        T* yg = y + (n * g.m + gi * mg) * ps;
        const A* xm = nullptr;
        A* acc = nullptr;
        if constexpr (std::is_same_v<A, T>) {
          xm = xg;
          acc = yg;
        } else {
          for (int64_t i = 0; i < cg * xs; ++i) xa[i] = ToCompute(xg[i]);
          xm = xa.data();
          acc = plane.data();
        }
        std::fill(acc, acc + mg * ps, A{0});
        for (int64_t l0 = 0; l0 < lines; l0 += block_lines) {
          const int64_t nlines = std::min(block_lines, lines - l0);
          const int64_t cols = nlines * line;
          if constexpr (std::is_same_v<T, float>) {
            if (fast_) {
              fast::GemmUnpacked(wt + gi * rows * cg, cg, xm + l0 * line, xs, col.data(), cols,
                                 rows, cols, cg);
            } else {
              ReferenceGemm<A>(true, false, rows, cols, cg, wg, rows, xm + l0 * line, xs,
                               col.data(), cols, false);
            }
          } else {
            ReferenceGemm<A>(true, false, rows, cols, cg, wg, rows, xm + l0 * line, xs, col.data(),
                             cols, false);
          }
          // col2im: row r = (m, kernel position) of input position q adds to its output.
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t m = r / kk;
            Unravel(r % kk, g.kernel, kcoord.data());
            const A* src = col.data() + r * cols;
            A* am = acc + m * ps;
            const int64_t shift = kcoord[last] * g.dilation[last] - g.axes[last].pad_begin;
            for (int64_t li = 0; li < nlines; ++li) {
              Unravel(l0 + li, outer, icoord.data());
              bool valid = true;
              int64_t off = 0;
              for (size_t d = 0; d < last && valid; ++d) {
                const int64_t op =
                    icoord[d] * g.stride[d] - g.axes[d].pad_begin + kcoord[d] * g.dilation[d];
                valid = op >= 0 && op < g.out[d];
                off = off * g.out[d] + op;
              }
              if (!valid) continue;
              A* dst = am + off * g.out[last];
              const A* s = src + li * line;
              for (int64_t i = 0; i < line; ++i) {
                const int64_t op = i * g.stride[last] + shift;
                if (op >= 0 && op < g.out[last]) dst[op] += s[i];
              }
            }
          }
        }
        for (int64_t m = 0; m < mg; ++m) {
          const bool has_bias = !bias.empty();
          const A bv = has_bias ? bias[gi * mg + m] : A{0};
          for (int64_t p = 0; p < ps; ++p) {
            A v = acc[m * ps + p];
            if (has_bias) v += bv;
            yg[m * ps + p] = FromCompute<T>(v);
          }
        }
      }
    }
    return {};
  }

  ConvAttrs attrs_;
  std::shared_ptr<const std::vector<A>> packed_w_;
  bool fast_ = false;
  std::shared_ptr<const std::vector<float>> transposed_w_;
};

// ---- Fast float Conv (SessionOptions::reference_kernels off) ------------------------------------
//
// 1-D and 2-D float Convs run on the fast kernels (src/kernels/fast): each output is one chain of
// fused multiply-adds over its terms in a fixed order, starting from 0, then + bias, then the
// fused activation (fast/packed_gemm.h's contract; padding read as zeros), except on the
// Winograd path. Which order depends on the path: (input channel, kernel row, kernel column)
// for depthwise and im2col, (kernel row, kernel column, input channel) for few pixels and for
// the one-row or one-column kernels read in place. A given Conv always takes the same path for
// the same shapes and values, so its results are the same bits on every run, SIMD target and
// thread count, whether W is constant or fed, and differ from the reference kernel's (a
// multiply and an add per step) in the last bits only. Per (batch, group):
//   depthwise (one input channel per group): fast::DepthwiseConv2D over phase planes of the
//     zero-padded input;
//   few output pixels (P < kPixelPath, Silero's 1-4 frames): the pixels' patches (P x K,
//     tap-major) times W_g^T packed once at Create (K x Mg), stored transposed into NCHW;
//   one row or one column of 3 taps at unit stride (openWakeWord's 1x3 and 3x1 Convs, at least
//     kWinogradChannels channels in and out, X and W within WinogradBounded's range): Winograd
//     F(4, 3) (fast/winograd.h), 6 products of the transformed weights (made on the first run
//     when W is constant) by the transformed input tiles, in blocks of tiles. Half the
//     multiply-adds, and other roundings (within about 1e-7 of the sum of |w x| over the tile's
//     6 inputs, not only the output's own 3: see fast/winograd.h);
//   one column of taps without padding, or one row padded to keep the width: a product per tap
//     reading X in place (RunTapMajor, RunRowTaps);
//   otherwise: W_g (Mg x K, as stored) times the im2col columns (K x P, or X itself for a 1x1
//     stride-1 unpadded Conv), in blocks of output rows, each block one product.
// Other element types and spatial ranks run the reference kernel.

// Below this many output pixels per image a Conv multiplies the patches by the packed weights
// (vectors across output channels); from it on, the weights by the columns (vectors across
// pixels).
constexpr int64_t kPixelPath = 32;
// About how many floats one im2col block holds (its rows x pixels): 512 KiB, cache-sized.
constexpr int64_t kFastColumnFloats = int64_t{1} << 17;
// Winograd needs this many channels in and out per group to pay for its transforms (which cost
// about what 2-3 multiply-adds per tile and channel do), and a tap axis at most this long (the
// tile counts stay far inside float's exact integers).
constexpr int64_t kWinogradChannels = 8;
constexpr int64_t kWinogradMaxLine = int64_t{1} << 20;
// About how many floats one block of Winograd tiles holds (its transformed inputs and products).
constexpr int64_t kWinogradBlockFloats = int64_t{1} << 17;

// The 2-D view of a 1-D or 2-D Conv (a 1-D one has height 1).
struct Conv2D {
  int64_t n = 0, c = 0, m = 0, group = 1, cg = 0, mg = 0;
  int64_t h = 1, w = 1, kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0;  // padding before (top, left)
  int64_t oh = 1, ow = 1;
  int64_t kk() const { return kh * kw; }
  int64_t k() const { return cg * kh * kw; }
  int64_t pixels() const { return oh * ow; }
  int64_t in_plane() const { return h * w; }
  bool pointwise() const {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && pt == 0 && pl == 0 && oh == h && ow == w;
  }
};

// The 2-D view of a Conv of rank 3 or 4 whose output shape (and axes) ConvShape gave.
Conv2D MakeConv2D(const ConvAttrs& a, std::span<const int64_t> xs, std::span<const int64_t> ws,
                  std::span<const int64_t> shape, std::span<const Axis> axes) {
  const size_t rank = xs.size();
  Conv2D g;
  g.n = shape[0];
  g.c = xs[1];
  g.m = shape[1];
  g.group = a.group;
  g.cg = g.c / g.group;
  g.mg = g.m / g.group;
  const size_t last = rank - 3;  // the width axis
  g.w = xs[rank - 1];
  g.kw = ws[rank - 1];
  g.sw = At(a.strides, last, 1);
  g.dw = At(a.dilations, last, 1);
  g.pl = axes[last].pad_begin;
  g.ow = shape[rank - 1];
  if (rank == 4) {
    g.h = xs[2];
    g.kh = ws[2];
    g.sh = At(a.strides, 0, 1);
    g.dh = At(a.dilations, 0, 1);
    g.pt = axes[0].pad_begin;
    g.oh = shape[2];
  }
  return g;
}

// The Winograd view of a Conv (fast/winograd.h), or nullopt when it does not take that path:
// 3 taps along the width (padded to keep it, a multiple of 4) or down the height (no padding
// across the width, any padding above and below), unit strides and dilations.
std::optional<fast::WinogradPlanes> WinogradGeometry(const Conv2D& g) {
  if (g.cg < kWinogradChannels || g.mg < kWinogradChannels || g.sh != 1 || g.sw != 1 || g.dh != 1 ||
      g.dw != 1 || g.w > kWinogradMaxLine || g.h > kWinogradMaxLine || g.oh > kWinogradMaxLine) {
    return std::nullopt;
  }
  fast::WinogradPlanes p;
  p.h = g.h;
  p.w = g.w;
  if (g.kh == 1 && g.kw == 3 && g.pt == 0 && g.oh == g.h && g.ow == g.w && g.w % 4 == 0) {
    p.along_rows = true;
    p.oh = g.h;
    p.pad = g.pl;
    return p;
  }
  if (g.kw == 1 && g.kh == 3 && g.pl == 0 && g.ow == g.w && g.pt <= 2) {
    p.along_rows = false;
    p.oh = g.oh;
    p.pad = g.pt;
    return p;
  }
  return std::nullopt;
}

// W [group * mg][cg][3 taps] transformed per group for Winograd: group gi's 6 x mg x cg floats
// at u + gi * 6 * mg * cg.
void WinogradWeights(const float* w, int64_t group, int64_t mg, int64_t cg, float* u) {
  for (int64_t gi = 0; gi < group; ++gi) {
    fast::WinogradFilters(w + gi * mg * cg * 3, mg, cg, u + gi * fast::kWinogradPoints * mg * cg);
  }
}

// W_g^T packed for the pixel path, per group, its K rows tap-major: row (tap, c) =
// (ky * kw + kx) * cg + c, the order of FastPatches' columns.
std::vector<fast::PackedB> PackConvWeights(const float* w, int64_t group, int64_t mg, int64_t cg,
                                           int64_t taps) {
  const int64_t k = cg * taps;
  std::vector<fast::PackedB> packed;
  packed.reserve(static_cast<size_t>(group));
  std::vector<float> reordered(static_cast<size_t>(mg * k));  // [o][tap][c]
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t o = 0; o < mg; ++o) {
      const float* src = w + (g * mg + o) * k;
      float* dst = reordered.data() + o * k;
      for (int64_t c = 0; c < cg; ++c) {
        for (int64_t t = 0; t < taps; ++t) dst[t * cg + c] = src[c * taps + t];
      }
    }
    packed.push_back(fast::PackB(reordered.data(), k, k, mg, /*transposed=*/true));
  }
  return packed;
}

// W [group * mg][cg][taps] (its kernel one column or one row of taps) as [group][taps][mg][cg]:
// tap t's weights of group gi, an mg x cg matrix, at taps + (gi * count + t) * mg * cg
// (FastConvKernel::RunTapMajor and RunRowTaps).
void TapMajorWeights(const float* w, int64_t group, int64_t mg, int64_t cg, int64_t count,
                     float* taps) {
  for (int64_t gi = 0; gi < group; ++gi) {
    for (int64_t t = 0; t < count; ++t) {
      for (int64_t m = 0; m < mg; ++m) {
        const float* row = w + (gi * mg + m) * cg * count + t;
        float* out = taps + ((gi * count + t) * mg + m) * cg;
        for (int64_t c = 0; c < cg; ++c) out[c] = row[c * count];
      }
    }
  }
}

// Rows [oy0, oy0 + rows) of the im2col columns of group input xg: col[r][q], r = (channel, ky,
// kx), q = (oy - oy0) * ow + ox; zeros where the kernel reads padding.
void FastIm2Col(const Conv2D& g, const float* xg, int64_t oy0, int64_t rows, float* col) {
  const int64_t cols = rows * g.ow;
  for (int64_t c = 0; c < g.cg; ++c) {
    const float* xc = xg + c * g.in_plane();
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        float* dst = col + ((c * g.kh + ky) * g.kw + kx) * cols;
        const int64_t shift = kx * g.dw - g.pl;  // ix = ox * sw + shift
        // Outputs whose ix is inside [0, w): [lo, hi).
        int64_t lo = shift >= 0 ? 0 : (-shift + g.sw - 1) / g.sw;
        int64_t hi = g.w - 1 - shift < 0 ? 0 : (g.w - 1 - shift) / g.sw + 1;
        lo = std::min(lo, g.ow);
        hi = std::clamp(hi, lo, g.ow);
        if (g.sw == 1 && g.sh == 1 && g.ow == g.w) {
          // Consecutive output rows read consecutive input rows of the same length: the valid
          // rows are one contiguous run of X shifted by `shift`, copied at once, then the
          // columns that read padding are zeroed (rows of a few floats cost a call each
          // otherwise).
          const int64_t iy0 = oy0 - g.pt + ky * g.dh;  // the input row of output row oy0
          const int64_t r_lo = std::clamp<int64_t>(-iy0, 0, rows);
          const int64_t r_hi = std::clamp<int64_t>(g.h - iy0, r_lo, rows);
          std::fill(dst, dst + r_lo * g.ow, 0.0f);
          std::fill(dst + r_hi * g.ow, dst + rows * g.ow, 0.0f);
          if (r_hi > r_lo) {
            const int64_t n = (r_hi - r_lo) * g.ow;
            const int64_t s0 = (iy0 + r_lo) * g.w + shift;  // may start or end outside X
            const int64_t b = std::clamp<int64_t>(-s0, 0, n);
            const int64_t e = std::clamp<int64_t>(g.h * g.w - s0, b, n);
            float* out = dst + r_lo * g.ow;
            std::fill(out, out + b, 0.0f);
            std::copy(xc + (s0 + b), xc + (s0 + e), out + b);
            std::fill(out + e, out + n, 0.0f);
            for (int64_t r = r_lo; r < r_hi; ++r) {
              float* o = dst + r * g.ow;
              std::fill(o, o + lo, 0.0f);
              std::fill(o + hi, o + g.ow, 0.0f);
            }
          }
          continue;
        }
        for (int64_t r = 0; r < rows; ++r) {
          float* out = dst + r * g.ow;
          const int64_t iy = (oy0 + r) * g.sh - g.pt + ky * g.dh;
          if (iy < 0 || iy >= g.h) {
            std::fill(out, out + g.ow, 0.0f);
            continue;
          }
          const float* row = xc + iy * g.w;
          std::fill(out, out + lo, 0.0f);
          if (g.sw == 1) {
            std::copy(row + shift + lo, row + shift + hi, out + lo);
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) out[ox] = row[ox * g.sw + shift];
          }
          std::fill(out + hi, out + g.ow, 0.0f);
        }
      }
    }
  }
}

// The pixel path's patches of group input xg, tap-major: patches[q][(ky * kw + kx) * cg + c]
// for output pixel q = oy * ow + ox is channel c at that tap's input position, zero where it
// reads padding. With `xt` (PatchesTransposedFloats(g) floats), through a zero-padded copy of the
// input with the channels last, so that every (pixel, tap) is one contiguous run of cg floats;
// without it (that copy would be much larger than the patches: large strides or dilations),
// element by element.
int64_t PatchesRows(const Conv2D& g) { return (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1; }
int64_t PatchesCols(const Conv2D& g) { return (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1; }
double PatchesTransposedFloats(const Conv2D& g) {
  return static_cast<double>(PatchesRows(g)) * static_cast<double>(PatchesCols(g)) *
         static_cast<double>(g.cg);
}

void FastPatches(const Conv2D& g, const float* xg, float* patches, float* xt) {
  const int64_t k = g.k();
  if (xt != nullptr) {
    const int64_t rows = PatchesRows(g), cols = PatchesCols(g);
    std::fill(xt, xt + rows * cols * g.cg, 0.0f);
    // Padded position (r, s) is input (r - pt, s - pl).
    const int64_t iy_end = std::min(g.h, rows - g.pt), ix_end = std::min(g.w, cols - g.pl);
    for (int64_t c = 0; c < g.cg; ++c) {
      const float* xc = xg + c * g.in_plane();
      for (int64_t iy = 0; iy < iy_end; ++iy) {
        float* dst = xt + ((iy + g.pt) * cols + g.pl) * g.cg + c;
        const float* src = xc + iy * g.w;
        for (int64_t ix = 0; ix < ix_end; ++ix) dst[ix * g.cg] = src[ix];
      }
    }
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        float* dst = patches + (oy * g.ow + ox) * k;
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          const float* row = xt + ((oy * g.sh + ky * g.dh) * cols + ox * g.sw) * g.cg;
          if (g.dw == 1) {  // the kernel row's taps are adjacent: one run of kw * cg floats
            std::copy_n(row, g.kw * g.cg, dst);
            dst += g.kw * g.cg;
            continue;
          }
          for (int64_t kx = 0; kx < g.kw; ++kx, dst += g.cg) {
            std::copy_n(row + kx * g.dw * g.cg, g.cg, dst);
          }
        }
      }
    }
    return;
  }
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      float* dst = patches + (oy * g.ow + ox) * k;
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
        for (int64_t kx = 0; kx < g.kw; ++kx, dst += g.cg) {
          const int64_t ix = ox * g.sw - g.pl + kx * g.dw;
          if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) {
            std::fill(dst, dst + g.cg, 0.0f);
            continue;
          }
          const float* src = xg + iy * g.w + ix;
          for (int64_t c = 0; c < g.cg; ++c) dst[c] = src[c * g.in_plane()];
        }
      }
    }
  }
}

// The depthwise phase planes of one input channel (see fast::DepthwiseProblem): plane f, row pr,
// column t holds padded column t * sw + f of padded row pr. Returns the row stride.
int64_t DepthwisePlaneRow(const Conv2D& g) { return g.ow + ((g.kw - 1) * g.dw) / g.sw; }
int64_t DepthwisePlaneRows(const Conv2D& g) { return (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1; }
void FastPhasePlanes(const Conv2D& g, const float* xc, float* planes) {
  const int64_t ld = DepthwisePlaneRow(g), rows = DepthwisePlaneRows(g);
  if (g.sw == 1) {
    // One plane: zero it at once, then copy the input rows in (a plane of a few short rows was
    // three library calls per row, as much as the convolution of it).
    std::fill(planes, planes + rows * ld, 0.0f);
    const int64_t lo = std::min(ld, std::max<int64_t>(g.pl, 0));
    const int64_t hi = std::clamp<int64_t>(g.w + g.pl, lo, ld);
    for (int64_t pr = std::max<int64_t>(g.pt, 0); pr < rows && pr - g.pt < g.h; ++pr) {
      const float* src = xc + (pr - g.pt) * g.w;
      std::copy(src + (lo - g.pl), src + (hi - g.pl), planes + pr * ld + lo);
    }
    return;
  }
  for (int64_t f = 0; f < g.sw; ++f) {
    float* plane = planes + f * rows * ld;
    for (int64_t pr = 0; pr < rows; ++pr) {
      float* out = plane + pr * ld;
      const int64_t iy = pr - g.pt;
      if (iy < 0 || iy >= g.h) {
        std::fill(out, out + ld, 0.0f);
        continue;
      }
      // Columns t in [lo, hi) read inside the row: 0 <= t * sw + f - pl < w.
      const float* src = xc + iy * g.w;
      const int64_t shift = f - g.pl;
      const int64_t lo = std::min(ld, shift < 0 ? (-shift + g.sw - 1) / g.sw : 0);
      const int64_t hi = std::clamp<int64_t>((g.w - shift + g.sw - 1) / g.sw, lo, ld);
      std::fill(out, out + lo, 0.0f);
      if (g.sw == 1) {
        std::copy(src + (lo + shift), src + (hi + shift), out + lo);
      } else {
        for (int64_t t = lo; t < hi; ++t) out[t] = src[t * g.sw + shift];
      }
      std::fill(out + hi, out + ld, 0.0f);
    }
  }
}

class FastConvKernel final : public Kernel {
 public:
  FastConvKernel(ConvAttrs attrs, std::shared_ptr<const std::vector<fast::PackedB>> packed,
                 bool constant_w, fast::Activation activation, const fast::TaskRunner* threads)
      : attrs_(attrs),
        packed_(std::move(packed)),
        constant_w_(constant_w),
        activation_(activation),
        threads_(threads),
        reference_(std::move(attrs), nullptr) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    const Tensor& x = inputs[0]->tensor();
    const Tensor& w = inputs[1]->tensor();
    const Tensor* b = inputs.size() > 2 && inputs[2] != nullptr ? &inputs[2]->tensor() : nullptr;
    const size_t rank = x.shape().size();
    if (x.element_type() != ElementType::kFloat || w.element_type() != ElementType::kFloat ||
        (b != nullptr && b->element_type() != ElementType::kFloat) || rank < 3 || rank > 4) {
      IDEM_RETURN_IF_ERROR(reference_.RunWith(ctx, inputs, outputs));
      if (!outputs[0].is_null() && outputs[0].tensor().element_type() == ElementType::kFloat) {
        const Tensor& t = outputs[0].tensor();
        fast::Activate(activation_, std::span<float>(const_cast<float*>(t.data_as<float>().data()),
                                                     static_cast<size_t>(t.element_count())));
      }
      return {};
    }
    std::optional<std::span<const int64_t>> bs;
    if (b != nullptr) bs = b->shape();
    ScratchVector<Axis> axes;
    IDEM_ASSIGN_OR_RETURN(Ints shape, ConvShape<int64_t>(attrs_, x.shape(), w.shape(), bs, &axes));
    IDEM_RETURN_IF_ERROR(CheckConvWork<int64_t>(attrs_, x.shape(), w.shape(), shape, ctx.limits()));
    const Conv2D g = MakeConv2D(attrs_, x.shape(), w.shape(), shape, axes);
    float* y = nullptr;
    IDEM_ASSIGN_OR_RETURN(outputs[0],
                          AllocateTensorForOverwriteAs(ctx, ElementType::kFloat, shape, &y));
    if (Product(shape) == 0) return {};
    const float* px = x.data_as<float>().data();
    const float* pw = w.data_as<float>().data();
    const float* pb = b != nullptr ? b->data_as<float>().data() : nullptr;
    // One input channel per group: depthwise, except one group of many outputs (openWakeWord's
    // first 3x3 Conv: 1 channel in, 24 out), a product of the weights by its im2col columns
    // (K = kh * kw), with the same bits.
    if (g.cg == 1 && !(g.mg > 1 && g.pixels() < kPixelPath) && !(g.group == 1 && g.mg >= 16)) {
      return RunDepthwise(ctx, g, px, pw, pb, y);
    }
    // A pointwise Conv reads X in place as the columns, unless so few pixels would leave most
    // vector lanes empty.
    if (g.pixels() < kPixelPath && g.mg >= 16 && !(g.pointwise() && g.pixels() >= 8)) {
      return RunPixels(ctx, g, px, pw, pb, y);
    }
    return RunColumns(ctx, g, px, pw, pb, y);
  }

 private:
  int64_t Fmas(const Conv2D& g) const {
    const double f = static_cast<double>(g.n) * static_cast<double>(g.m) *
                     static_cast<double>(g.pixels()) * static_cast<double>(g.k());
    return f > 4e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(f);
  }

  Status RunDepthwise(RunContext& ctx, const Conv2D& g, const float* x, const float* w,
                      const float* b, float* y) const {
    const int64_t ld = DepthwisePlaneRow(g), rows = DepthwisePlaneRows(g);
    int64_t floats = 0;
    if (__builtin_mul_overflow(g.sw * ld, rows, &floats)) {
      return InvalidArgument("Conv: the depthwise input planes overflow int64");
    }
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(floats) * sizeof(float)));
    fast::ParallelFor(threads_, g.n * g.group, Fmas(g), [&](int64_t begin, int64_t end) {
      float* planes = fast::ThreadScratch(0, static_cast<size_t>(floats));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t n = item / g.group, gi = item % g.group;
        FastPhasePlanes(g, x + (n * g.c + gi) * g.in_plane(), planes);
        for (int64_t j = 0; j < g.mg; ++j) {
          const int64_t o = gi * g.mg + j;
          fast::DepthwiseProblem pr;
          pr.planes = planes;
          pr.ld = ld;
          pr.phase_stride = rows * ld;
          pr.sh = g.sh;
          pr.sw = g.sw;
          pr.dh = g.dh;
          pr.dw = g.dw;
          pr.w = w + o * g.kk();
          pr.kh = g.kh;
          pr.kw = g.kw;
          pr.y = y + (n * g.m + o) * g.pixels();
          pr.oh = g.oh;
          pr.ow = g.ow;
          pr.bias = b != nullptr ? b + o : nullptr;
          pr.activation = activation_;
          fast::DepthwiseConv2D(pr);
        }
      }
    });
    return {};
  }

  Status RunPixels(RunContext& ctx, const Conv2D& g, const float* x, const float* w, const float* b,
                   float* y) const {
    const int64_t k = g.k(), p = g.pixels();
    std::shared_ptr<const std::vector<fast::PackedB>> packed = packed_;
    if (packed == nullptr && constant_w_) {
      // A constant W whose output size was not known at Create: packed on the first run that
      // takes this path, once (the same bits as packing at Create).
      std::call_once(lazy_packed_->once, [&] {
        lazy_packed_->packed = std::make_shared<const std::vector<fast::PackedB>>(
            PackConvWeights(w, g.group, g.mg, g.cg, g.kk()));
      });
      packed = lazy_packed_->packed;
    }
    if (packed == nullptr) {
      int64_t bytes = fast::PackedBBytes(k, g.mg);
      if (bytes < 0 || __builtin_mul_overflow(bytes, g.group, &bytes)) {
        return InvalidArgument("Conv: the packed weights overflow int64");
      }
      IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(bytes)));
      packed = std::make_shared<const std::vector<fast::PackedB>>(
          PackConvWeights(w, g.group, g.mg, g.cg, g.kk()));
    }
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(p * k) * sizeof(float)));
    float* patches = fast::ThreadScratch(0, static_cast<size_t>(p * k));
    // The channels-last copy, unless it would hold more than a few times the patches.
    float* xt = nullptr;
    const double xt_floats = PatchesTransposedFloats(g);
    if (xt_floats <= 4.0 * static_cast<double>(p * k) + 4096.0) {
      IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(xt_floats) * sizeof(float)));
      xt = fast::ThreadScratch(1, static_cast<size_t>(xt_floats));
    }
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t gi = 0; gi < g.group; ++gi) {
        FastPatches(g, x + (n * g.c + gi * g.cg) * g.in_plane(), patches, xt);
        fast::Epilogue ep;
        ep.bias = b != nullptr ? b + gi * g.mg : nullptr;
        ep.activation = activation_;
        ep.transposed_c = true;
        fast::GemmPacked(patches, k, (*packed)[static_cast<size_t>(gi)],
                         y + (n * g.m + gi * g.mg) * p, p, p, 0.0f, ep, threads_);
      }
    }
    return {};
  }

  // A Conv of one column of taps (kw == 1, kh > 1) at unit strides and dilation that reads no
  // padding and keeps the width (openWakeWord's 3x1 layers): the im2col row of (channel c, tap
  // ky) is X's plane c from row ky on, contiguous, so no columns are built. Each tap is one
  // product reading X in place (B's rows are the planes, ldb = h * w) with that tap's weights
  // (TapMajorWeights), accumulated into Y (beta 1; the bias and activation with the last tap).
  // The sum runs over (ky, c) instead of im2col's (c, ky): other roundings, the same bits on
  // every run, thread count and target, with W constant (repacked at Create) or fed.
  static bool TapMajor(const Conv2D& g) {
    return g.kw == 1 && g.kh > 1 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.pt == 0 && g.pl == 0 &&
           g.ow == g.w && g.oh + g.kh - 1 <= g.h;
  }

  // The epilogue of group gi's product (weights as A): its bias per output channel, then the
  // fused activation.
  fast::Epilogue GroupEpilogue(const Conv2D& g, const float* b, int64_t gi) const {
    fast::Epilogue ep;
    ep.bias = b != nullptr ? b + gi * g.mg : nullptr;
    ep.bias_per_row = true;
    ep.activation = activation_;
    return ep;
  }

  // The tap-major weights: a constant W's (made on first use), else `w` repacked into the
  // thread's scratch slot 1.
  Result<const float*> Taps(RunContext& ctx, const Conv2D& g, const float* w) const {
    if (constant_w_) {
      std::call_once(taps_->once, [&] {
        taps_->data.resize(static_cast<size_t>(g.group * g.mg * g.k()));
        TapMajorWeights(w, g.group, g.mg, g.cg, g.kk(), taps_->data.data());
      });
      return taps_->data.data();
    }
    const int64_t floats = g.group * g.mg * g.k();
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(floats) * sizeof(float)));
    float* t = fast::ThreadScratch(1, static_cast<size_t>(floats));
    TapMajorWeights(w, g.group, g.mg, g.cg, g.kk(), t);
    return t;
  }

  Status RunTapMajor(RunContext& ctx, const Conv2D& g, const float* x, const float* w,
                     const float* b, float* y) const {
    const int64_t p = g.pixels();
    IDEM_ASSIGN_OR_RETURN(const float* taps, Taps(ctx, g, w));
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t gi = 0; gi < g.group; ++gi) {
        const fast::Epilogue last = GroupEpilogue(g, b, gi);
        const float* xg = x + (n * g.c + gi * g.cg) * g.in_plane();
        float* yg = y + (n * g.m + gi * g.mg) * p;
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          fast::GemmUnpacked(taps + (gi * g.kh + ky) * g.mg * g.cg, g.cg, xg + ky * g.w,
                             g.in_plane(), yg, p, g.mg, p, g.cg, ky == 0 ? 0.0f : 1.0f,
                             ky + 1 == g.kh ? last : fast::Epilogue{}, threads_);
        }
      }
    }
    return {};
  }

  // One row of taps (kh == 1, kw > 1) at unit strides and dilation, padded to keep the width
  // (openWakeWord's 1x3 layers; 1-D Convs too): tap kx of output q (row-major over the plane)
  // reads X's plane at q + kx - pl, except where that crosses a row's end into padding. The
  // columns [pl, pixels - pr), whose reads all stay inside the plane, are one product per tap
  // reading X in place, as RunTapMajor; then the columns within pl of a row's start or pr of
  // its end (some tap reads padding there, or the neighbouring row) are computed again from a
  // small im2col of just those columns, padding as zeros, and written over. Both sum over
  // (kx, c) the same way: every output gets the bits of the tap-major sum over X padded with
  // zeros. Rows at least 8 times the pads wide: the recomputed edges then cost at most an eighth
  // more products (narrower rows build their im2col in RunColumns).
  static bool RowTaps(const Conv2D& g) {
    return g.kh == 1 && g.kw > 1 && g.sh == 1 && g.sw == 1 && g.dw == 1 && g.pt == 0 &&
           g.oh == g.h && g.ow == g.w && g.pl < g.kw && g.w >= 8 * (g.kw - 1);
  }

  Status RunRowTaps(RunContext& ctx, const Conv2D& g, const float* x, const float* w,
                    const float* b, float* y) const {
    const int64_t p = g.pixels(), taps_count = g.kw, pl = g.pl, pr = g.kw - 1 - g.pl;
    IDEM_ASSIGN_OR_RETURN(const float* taps, Taps(ctx, g, w));
    // The edge columns of a row: ox < pl or ox >= w - pr.
    ScratchVector<int64_t> edge_ox;
    for (int64_t ox = 0; ox < g.w; ++ox) {
      if (ox < pl || ox >= g.w - pr) edge_ox.push_back(ox);
    }
    const auto per_row = static_cast<int64_t>(edge_ox.size());
    const int64_t edges = g.oh * per_row;
    const int64_t edge_floats = (taps_count * g.cg + g.mg) * edges;
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(edge_floats) * sizeof(float)));
    float* edge_cols = fast::ThreadScratch(2, static_cast<size_t>(taps_count * g.cg * edges));
    float* edge_out = fast::ThreadScratch(3, static_cast<size_t>(g.mg * edges));
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t gi = 0; gi < g.group; ++gi) {
        const fast::Epilogue last = GroupEpilogue(g, b, gi);
        const float* xg = x + (n * g.c + gi * g.cg) * g.in_plane();
        float* yg = y + (n * g.m + gi * g.mg) * p;
        auto tap_weights = [&](int64_t kx) { return taps + (gi * taps_count + kx) * g.mg * g.cg; };
        auto epilogue = [&](int64_t kx) { return kx + 1 == taps_count ? last : fast::Epilogue{}; };
        if (p - pr > pl) {
          for (int64_t kx = 0; kx < taps_count; ++kx) {
            fast::GemmUnpacked(tap_weights(kx), g.cg, xg + kx, g.in_plane(), yg + pl, p, g.mg,
                               p - pr - pl, g.cg, kx == 0 ? 0.0f : 1.0f, epilogue(kx), threads_);
          }
        }
        // The edge columns' im2col, per tap [cg][edges] (column oy * per_row + e), each run
        // of a fixed (tap, channel, edge column) a strided copy down the rows, then their
        // products.
        for (int64_t kx = 0; kx < taps_count; ++kx) {
          for (int64_t e = 0; e < per_row; ++e) {
            const int64_t ix = edge_ox[static_cast<size_t>(e)] + kx - pl;
            const bool inside = ix >= 0 && ix < g.w;
            for (int64_t c = 0; c < g.cg; ++c) {
              float* col = edge_cols + (kx * g.cg + c) * edges + e;
              if (!inside) {
                for (int64_t oy = 0; oy < g.oh; ++oy) col[oy * per_row] = 0.0f;
                continue;
              }
              const float* src = xg + c * g.in_plane() + ix;
              for (int64_t oy = 0; oy < g.oh; ++oy) col[oy * per_row] = src[oy * g.w];
            }
          }
        }
        for (int64_t kx = 0; kx < taps_count; ++kx) {
          fast::GemmUnpacked(tap_weights(kx), g.cg, edge_cols + kx * g.cg * edges, edges, edge_out,
                             edges, g.mg, edges, g.cg, kx == 0 ? 0.0f : 1.0f, epilogue(kx),
                             threads_);
        }
        for (int64_t m = 0; m < g.mg; ++m) {
          for (int64_t e = 0; e < per_row; ++e) {
            float* dst = yg + m * p + edge_ox[static_cast<size_t>(e)];
            const float* src = edge_out + m * edges + e;
            for (int64_t oy = 0; oy < g.oh; ++oy) dst[oy * g.w] = src[oy * per_row];
          }
        }
      }
    }
    return {};
  }

  // Winograd F(4, 3) over blocks of tiles, each block transformed, multiplied (6 products of
  // the group's transformed weights by the block's transformed tiles) and transformed back on
  // one thread (the bias and fused activation in the output transform); the blocks split over
  // the threads.
  // The Winograd weights: a constant W's (made on first use), else `w` transformed into the
  // thread's scratch slot 1; null when W holds huge or non-finite values (WinogradBounded).
  Result<const float*> WinogradWeightsOf(RunContext& ctx, const Conv2D& g, const float* w) const {
    const int64_t floats = fast::kWinogradPoints * g.group * g.mg * g.cg;
    if (constant_w_) {
      std::call_once(winograd_->once, [&] {
        if (!fast::WinogradBounded(w, g.m * g.k())) return;
        winograd_->data.resize(static_cast<size_t>(floats));
        WinogradWeights(w, g.group, g.mg, g.cg, winograd_->data.data());
      });
      return winograd_->data.empty() ? nullptr : winograd_->data.data();
    }
    if (!fast::WinogradBounded(w, g.m * g.k())) return nullptr;
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(floats) * sizeof(float)));
    float* t = fast::ThreadScratch(1, static_cast<size_t>(floats));
    WinogradWeights(w, g.group, g.mg, g.cg, t);
    return t;
  }

  Status RunWinograd(RunContext& ctx, const Conv2D& g, const fast::WinogradPlanes& planes,
                     const float* x, const float* u, const float* b, float* y) const {
    constexpr int64_t kPoints = fast::kWinogradPoints;
    const int64_t tiles = planes.tiles();
    // Blocks of about kWinogradBlockFloats of transformed tiles and products, of equal sizes in
    // whole units: 48 tiles (whole register tiles of the product: 3 vectors of 16) along rows;
    // whole rows of tiles down columns, in 48s where a few rows make them.
    const int64_t wanted = std::max<int64_t>(1, kWinogradBlockFloats / (kPoints * (g.cg + g.mg)));
    int64_t unit = 48;
    if (!planes.along_rows) {
      const int64_t lcm = std::lcm(planes.w, int64_t{48});
      unit = lcm <= std::max<int64_t>(wanted, 96) ? lcm : planes.w;
    }
    int64_t blocks = std::max<int64_t>(1, (tiles + wanted - 1) / wanted);
    const int64_t per_block = (tiles + blocks - 1) / blocks;
    const int64_t block =
        std::min((per_block + unit - 1) / unit * unit, (tiles + unit - 1) / unit * unit);
    blocks = (tiles + block - 1) / block;
    const int64_t ld = (block + 15) / 16 * 16;
    const int64_t v_floats = kPoints * g.cg * ld + ld + 16, m_floats = kPoints * g.mg * ld;
    IDEM_RETURN_IF_ERROR(
        ctx.CheckAllocation(static_cast<uint64_t>(v_floats + m_floats) * sizeof(float)));
    fast::ParallelFor(
        threads_, g.n * g.group * blocks, Fmas(g) / 2, [&](int64_t begin, int64_t end) {
          float* v = fast::ThreadScratch(2, static_cast<size_t>(v_floats));
          float* lane_t = v + kPoints * g.cg * ld;
          float* products = fast::ThreadScratch(3, static_cast<size_t>(m_floats));
          for (int64_t item = begin; item < end; ++item) {
            const int64_t n = item / (g.group * blocks);
            const int64_t gi = item / blocks % g.group;
            const int64_t g0 = item % blocks * block, g1 = std::min(tiles, g0 + block);
            fast::WinogradInput(planes, x + (n * g.c + gi * g.cg) * g.in_plane(), g.cg, g0, g1, v,
                                ld, lane_t);
            const float* ug = u + gi * kPoints * g.mg * g.cg;
            for (int64_t xi = 0; xi < kPoints; ++xi) {
              fast::GemmUnpacked(ug + xi * g.mg * g.cg, g.cg, v + xi * g.cg * ld, ld,
                                 products + xi * g.mg * ld, ld, g.mg, g1 - g0, g.cg);
            }
            fast::WinogradOutput(planes, products, ld, g.mg, b != nullptr ? b + gi * g.mg : nullptr,
                                 activation_, g0, g1, y + (n * g.m + gi * g.mg) * g.pixels());
          }
        });
    return {};
  }

  Status RunColumns(RunContext& ctx, const Conv2D& g, const float* x, const float* w,
                    const float* b, float* y) const {
    const int64_t k = g.k(), p = g.pixels();
    auto epilogue = [&](int64_t gi) { return GroupEpilogue(g, b, gi); };
    if (g.pointwise()) {
      // X itself is the columns: one product per (batch, group), split by the GEMM.
      for (int64_t n = 0; n < g.n; ++n) {
        for (int64_t gi = 0; gi < g.group; ++gi) {
          fast::GemmUnpacked(w + gi * g.mg * k, k, x + (n * g.c + gi * g.cg) * g.in_plane(),
                             g.in_plane(), y + (n * g.m + gi * g.mg) * p, p, g.mg, p, k, 0.0f,
                             epilogue(gi), threads_);
        }
      }
      return {};
    }
    if (auto planes = WinogradGeometry(g)) {
      // Huge or non-finite values (in X or W) take the direct path: see WinogradBounded.
      if (fast::WinogradBounded(x, g.n * g.c * g.in_plane())) {
        IDEM_ASSIGN_OR_RETURN(const float* u, WinogradWeightsOf(ctx, g, w));
        if (u != nullptr) return RunWinograd(ctx, g, *planes, x, u, b, y);
      }
    }
    if (TapMajor(g)) return RunTapMajor(ctx, g, x, w, b, y);
    if (RowTaps(g)) return RunRowTaps(ctx, g, x, w, b, y);
    // Blocks of output rows whose columns fill about kFastColumnFloats (at least one row).
    const int64_t block_rows =
        std::clamp<int64_t>(kFastColumnFloats / std::max<int64_t>(1, k * g.ow), 1, g.oh);
    const int64_t blocks = (g.oh + block_rows - 1) / block_rows;
    const int64_t floats = k * block_rows * g.ow;
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(floats) * sizeof(float)));
    fast::ParallelFor(threads_, g.n * g.group * blocks, Fmas(g), [&](int64_t begin, int64_t end) {
      float* col = fast::ThreadScratch(0, static_cast<size_t>(floats));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t n = item / (g.group * blocks);
        const int64_t gi = item / blocks % g.group;
        const int64_t oy0 = item % blocks * block_rows;
        const int64_t rows = std::min(block_rows, g.oh - oy0);
        const int64_t cols = rows * g.ow;
        FastIm2Col(g, x + (n * g.c + gi * g.cg) * g.in_plane(), oy0, rows, col);
        fast::GemmUnpacked(w + gi * g.mg * k, k, col, cols,
                           y + (n * g.m + gi * g.mg) * p + oy0 * g.ow, p, g.mg, cols, k, 0.0f,
                           epilogue(gi));
      }
    });
    return {};
  }

  ConvAttrs attrs_;
  std::shared_ptr<const std::vector<fast::PackedB>> packed_;  // W_g^T per group, or null
  // Weights derived from a constant W on the first run that needs them (Run is const and may
  // run on several threads at once, hence call_once), so that only the paths a model's runs
  // take cost memory: tap-major (TapMajorWeights) and Winograd's (empty when W is out of
  // WinogradBounded's range).
  struct DerivedWeights {
    std::once_flag once;
    std::vector<float> data;
  };
  bool constant_w_;
  // The pixel path's packed weights of a constant W when packed_ is null (see CreateFastConv).
  struct LazyPacked {
    std::once_flag once;
    std::shared_ptr<const std::vector<fast::PackedB>> packed;
  };
  std::unique_ptr<LazyPacked> lazy_packed_ = std::make_unique<LazyPacked>();
  std::unique_ptr<DerivedWeights> taps_ = std::make_unique<DerivedWeights>();
  std::unique_ptr<DerivedWeights> winograd_ = std::make_unique<DerivedWeights>();
  fast::Activation activation_;
  const fast::TaskRunner* threads_;
  ConvKernel<float> reference_;  // other ranks
};

// The fast kernel of a float Conv / ConvTranspose, with W prepared once when it is a constant.
Result<std::unique_ptr<Kernel>> CreateFastConv(const ConvAttrs& a, const Facts& facts,
                                               fast::Activation activation) {
  const Value* wv = facts.constant(1);
  const Tensor* w = wv != nullptr && wv->is_tensor() &&
                            wv->tensor().element_type() == ElementType::kFloat &&
                            wv->tensor().shape().size() >= 3
                        ? &wv->tensor()
                        : nullptr;
  if (w != nullptr) {
    // Checks W's shape against the attributes first (the run refuses it with the same error).
    const auto ws = w->shape();
    if (a.group < 1 || ws[0] < 1) w = nullptr;
  }
  if (a.transpose) {
    std::shared_ptr<const std::vector<float>> transposed;
    if (w != nullptr && w->shape()[0] % a.group == 0) {
      const auto ws = w->shape();
      const int64_t cg = ws[0] / a.group;
      const int64_t rows = w->element_count() / std::max<int64_t>(1, ws[0]);
      auto t = std::make_shared<std::vector<float>>(static_cast<size_t>(w->element_count()));
      TransposeGroups(w->data_as<float>().data(), a.group, cg, rows, t->data());
      transposed = std::move(t);
    }
    return std::unique_ptr<Kernel>(std::make_unique<ConvKernel<float>>(a, true, transposed));
  }
  std::shared_ptr<const std::vector<fast::PackedB>> packed;
  if (w != nullptr && (w->shape().size() == 3 || w->shape().size() == 4) &&
      w->shape()[0] % a.group == 0) {
    const auto ws = w->shape();
    const int64_t mg = ws[0] / a.group;
    const int64_t k = w->element_count() / ws[0];
    // The pixel path's packed weights, when it will run: few output pixels and enough output
    // channels. Depthwise Convs never take it. When the output size is not known here (a
    // dynamic input, as PaddleOCR rec's width), the first run that takes the path packs them
    // (FastConvKernel::RunPixels), so that models whose runs never do hold no second copy.
    std::optional<int64_t> pixels;
    if (auto xs = facts.has(0) ? facts.static_shape(0) : std::nullopt) {
      std::vector<int64_t> bshape;
      std::optional<std::span<const int64_t>> bs;
      if (auto b = facts.has(2) ? facts.static_shape(2) : std::nullopt) {
        bshape = *b;
        bs = std::span<const int64_t>(bshape);
      }
      auto out = ConvShape<int64_t>(a, *xs, ws, bs);
      if (out.ok()) pixels = Product(std::span<const int64_t>(*out).subspan(2));
    }
    const bool depthwise = ws[1] == 1 && mg == 1;
    if (!depthwise && mg >= 16 && pixels && *pixels < kPixelPath && k > 0) {
      const int64_t bytes = fast::PackedBBytes(k, mg);
      if (bytes >= 0 && static_cast<uint64_t>(bytes) <= facts.context().limits.max_tensor_bytes) {
        packed = std::make_shared<const std::vector<fast::PackedB>>(
            PackConvWeights(w->data_as<float>().data(), a.group, mg, ws[1], k / ws[1]));
      }
    }
  }
  return std::unique_ptr<Kernel>(std::make_unique<FastConvKernel>(
      a, std::move(packed), facts.constant(1) != nullptr, activation, facts.context().threads));
}

Result<std::unique_ptr<Kernel>> CreateConv(const ConvAttrs& a, const Facts& facts) {
  const FusedActivation& fused = facts.context().fused_activation;
  if (!facts.context().reference_kernels && facts.element_type(0) == ElementType::kFloat &&
      !(a.transpose && fused.any())) {
    return CreateFastConv(a, facts, ToFastActivation(fused));
  }
  if (fused.any()) return CannotFuse(a.op);
  std::unique_ptr<Kernel> kernel;
  IDEM_RETURN_IF_ERROR(DispatchFloat(facts.element_type(0), a.op, [&](auto tag) {
    using T = decltype(tag);
    using A = ComputeType<T>;
    std::shared_ptr<const std::vector<A>> packed;
    if constexpr (!std::is_same_v<A, T>) {
      // A constant 16-bit W is widened once here instead of on every run.
      const Value* w = facts.constant(1);
      if (w != nullptr && w->is_tensor() && w->tensor().element_type() == facts.element_type(0)) {
        const Tensor& t = w->tensor();
        auto v = std::make_shared<std::vector<A>>(static_cast<size_t>(t.element_count()));
        const T* p = t.data_as<T>().data();
        for (int64_t i = 0; i < t.element_count(); ++i)
          (*v)[static_cast<size_t>(i)] = ToCompute(p[i]);
        packed = std::move(v);
      }
    }
    kernel = std::make_unique<ConvKernel<T>>(a, std::move(packed));
    return Status();
  }));
  return kernel;
}

KernelSchema ConvSchema(int version, bool transpose) {
  KernelSchema s;
  s.op_type = transpose ? "ConvTranspose" : "Conv";
  s.since_version = version;
  s.inputs = {{"X", "T"}, {"W", "T"}, {"B", "T", FormalParameter::Arity::kOptional}};
  s.outputs = {{"Y", "T"}};
  s.constraints = {{"T", TensorTypes(FloatTypes(version >= 22))}};
  s.attributes = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"};
  if (transpose) {
    s.attributes.push_back("output_padding");
    s.attributes.push_back("output_shape");
  }
  // Not folded at planning: its work is outputs x kernel (or K), not proportional to the file, so
  // a small model could make Session::Create compute for hours with no deadline to stop it.
  s.foldable = false;
  DefineOp<ConvAttrs>(
      s, [transpose](const NodeContext& ctx) { return ParseConvAttrs(ctx, transpose); }, InferConv,
      CreateConv);
  return s;
}

}  // namespace

void RegisterConvKernels(KernelRegistry& registry) {
  for (int v : {1, 11, 22}) {
    registry.Register(ConvSchema(v, false));
    registry.Register(ConvSchema(v, true));
  }
}

}  // namespace idem
