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
#include <memory>
#include <optional>
#include <vector>

#include "src/core/text.h"
#include "src/kernels/dispatch.h"
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
Result<std::vector<D>> ConvShape(const ConvAttrs& a, std::span<const D> x, std::span<const D> w,
                                 std::optional<std::span<const D>> b,
                                 std::vector<Axis>* axes = nullptr) {
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
  std::vector<std::optional<int64_t>> kernel(spatial);
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
  std::vector<D> out = {x[0], m};
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
Result<std::vector<A>> Scratch(RunContext& ctx, int64_t n) {
  IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(n) * sizeof(A)));
  return std::vector<A>(static_cast<size_t>(n));
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

// What a Conv/ConvTranspose run needs besides X: W as accumulator values (pre-packed when W is
// a constant 16-bit tensor), the geometry.
struct Geometry {
  int64_t n = 0, c = 0, m = 0, group = 1;
  std::vector<int64_t> in, kernel, out, stride, dilation;
  std::vector<Axis> axes;
};

template <class T>
class ConvKernel final : public Kernel {
 public:
  using A = ComputeType<T>;
  ConvKernel(ConvAttrs attrs, std::shared_ptr<const std::vector<A>> packed_w)
      : attrs_(std::move(attrs)), packed_w_(std::move(packed_w)) {}

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
    IDEM_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
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
    std::vector<A> w_storage;
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
    std::vector<A> bias;
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
                 const std::vector<A>& bias, T* y) const {
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
    std::vector<A> col, acc;
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
                      const std::vector<A>& bias, T* y) const {
    const size_t spatial = g.in.size();
    const size_t last = spatial - 1;
    const int64_t cg = g.c / g.group, mg = g.m / g.group;
    const int64_t kk = Product(g.kernel);
    const int64_t rows = mg * kk;
    const int64_t xs = Product(g.in), ps = Product(g.out);
    const int64_t line = g.in.back(), lines = xs / line;
    const int64_t block_lines = LinesPerBlock(rows, line, lines);
    const int64_t block = block_lines * line;
    IDEM_ASSIGN_OR_RETURN(std::vector<A> col, Scratch<A>(ctx, rows * block));
    std::vector<A> xa, plane;
    if constexpr (!std::is_same_v<A, T>) {
      IDEM_ASSIGN_OR_RETURN(xa, Scratch<A>(ctx, cg * xs));
      IDEM_ASSIGN_OR_RETURN(plane, Scratch<A>(ctx, mg * ps));
    }
    std::vector<int64_t> kcoord(spatial), icoord(spatial);
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
          ReferenceGemm<A>(true, false, rows, cols, cg, wg, rows, xm + l0 * line, xs, col.data(),
                           cols, false);
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
};

Result<std::unique_ptr<Kernel>> CreateConv(const ConvAttrs& a, const Facts& facts) {
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
