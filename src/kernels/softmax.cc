// Softmax (1, 11, 13).
//
// Before 13 the input is coerced to 2-D at `axis` (default 1): [a_0 * ... * a_{k-1},
// a_k * ... * a_{n-1}] and each row is normalized. From 13 the normalization runs along the one
// axis `axis` (default -1). Both are the same loop over (outer, n, inner): before 13 n is the
// product of the trailing dims and inner is 1.
//
// Numerics: each slice subtracts its maximum, then exp and the sum are computed in double in
// index order, and each result rounds once to the element type. A NaN in a slice makes the
// whole slice NaN (numpy's max propagates it), as does a slice whose maximum is infinite. The
// fast kernels' float path (FastSoftmaxRows) keeps these rules with a float exp.
#include <fmt/format.h>

#include <cmath>
#include <span>
#include <type_traits>

#include "src/kernels/dispatch.h"
#include "src/kernels/fast/vector_math.h"
#include "src/kernels/op.h"

namespace idem {
namespace {

struct SoftmaxAttrs {
  bool coerce_2d = false;  // versions 1 and 11
  int64_t axis = -1;
};

Result<SoftmaxAttrs> ParseSoftmax(const NodeContext& ctx) {
  SoftmaxAttrs a;
  a.coerce_2d = ctx.version < 13;
  IDEM_ASSIGN_OR_RETURN(a.axis, AttrReader(ctx.node).Int("axis", a.coerce_2d ? 1 : -1));
  return a;
}

// The one shape rule: the output has the input's shape; the axis must be in [-r, r-1].
template <class D>
Result<DimsOf<D>> SoftmaxShape(const SoftmaxAttrs& a, std::span<const D> x) {
  IDEM_RETURN_IF_ERROR(
      NormalizeAxis(a.axis, static_cast<int64_t>(x.size()), "Softmax attribute 'axis'").status());
  return DimsOf<D>(x.begin(), x.end());
}

Result<Inference> InferSoftmax(const SoftmaxAttrs& a, const Facts& facts) {
  IDEM_ASSIGN_OR_RETURN(auto dims, InferDims(facts, {0}, [&]() {
                          return SoftmaxShape<Dim>(a, std::span<const Dim>(*facts.shape(0)));
                        }));
  return OneOutput(TensorType(facts.element_type(0), std::move(dims)));
}

// The fast kernels' float Softmax over contiguous slices (the normalized axis last, inner ==
// 1): the same maximum, then exp(x - max) in float through SLEEF (fast::Exp: about 1 ulp, the
// same bits on every SIMD target) written into Y, summed in double in index order, and each
// divided by the sum in double. Within about 2 ulp of the reference's double exp.
void FastSoftmaxRows(const float* x, int64_t rows, int64_t n, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    float* out = y + r * n;
    float max = row[0];
    for (int64_t j = 1; j < n && !std::isnan(max); ++j) {
      if (row[j] > max || std::isnan(row[j])) max = row[j];
    }
    for (int64_t j = 0; j < n; ++j) out[j] = row[j] - max;
    const std::span<float> e(out, static_cast<size_t>(n));
    fast::Exp(e, e);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += static_cast<double>(out[j]);
    for (int64_t j = 0; j < n; ++j) out[j] = static_cast<float>(static_cast<double>(out[j]) / sum);
  }
}

template <class T>
Status RunSoftmax(const SoftmaxAttrs& a, RunContext& ctx, const Tensor& x, Value& output,
                  bool fast) {
  using C = ComputeType<T>;
  const auto xs = x.shape();
  IDEM_ASSIGN_OR_RETURN(Ints ys, SoftmaxShape<int64_t>(a, xs));
  std::byte* y = nullptr;
  IDEM_ASSIGN_OR_RETURN(output, AllocateTensor(ctx, x.element_type(), ys, &y));
  if (x.element_count() == 0) return Status();
  const auto axis =
      static_cast<size_t>(NormalizeAxis(a.axis, static_cast<int64_t>(xs.size()), "axis").value());
  int64_t outer = 1, n = 1, inner = 1;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i < axis) {
      outer *= xs[i];
    } else if (i == axis || a.coerce_2d) {
      n *= xs[i];
    } else {
      inner *= xs[i];
    }
  }
  const std::byte* px = x.data().data();
  if constexpr (std::is_same_v<T, float>) {
    if (fast && inner == 1) {
      FastSoftmaxRows(reinterpret_cast<const float*>(px), outer, n, reinterpret_cast<float*>(y));
      return Status();
    }
  }
  auto at = [&](int64_t i) { return static_cast<double>(ToCompute(LoadElement<T>(px, i))); };
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      double max = at(base);
      for (int64_t j = 1; j < n && !std::isnan(max); ++j) {
        const double v = at(base + j * inner);
        if (v > max || std::isnan(v)) max = v;
      }
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(at(base + j * inner) - max);
      for (int64_t j = 0; j < n; ++j) {
        const double e = std::exp(at(base + j * inner) - max);
        StoreElement<T>(y, base + j * inner, FromCompute<T>(static_cast<C>(e / sum)));
      }
    }
  }
  return Status();
}

Result<std::unique_ptr<Kernel>> CreateSoftmax(const SoftmaxAttrs& attrs, const Facts& facts) {
  const bool fast = !facts.context().reference_kernels;
  return MakeFunctionKernel(
      attrs,
      [fast](const SoftmaxAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
             std::span<Value> outputs) -> Status {
        const Tensor& x = inputs[0]->tensor();
        return DispatchFloat(x.element_type(), "Softmax", [&](auto tag) -> Status {
          return RunSoftmax<decltype(tag)>(a, ctx, x, outputs[0], fast);
        });
      });
}

KernelSchema SoftmaxSchema(int version) {
  KernelSchema s;
  s.op_type = "Softmax";
  s.since_version = version;
  s.inputs = {{"input", "T"}};
  s.outputs = {{"output", "T"}};
  s.constraints = {{"T", TensorTypes(FloatTypes(version >= 13))}};
  s.attributes = {"axis"};
  s.foldable = true;
  DefineOp<SoftmaxAttrs>(s, ParseSoftmax, InferSoftmax, CreateSoftmax);
  return s;
}

}  // namespace

void RegisterSoftmaxKernels(KernelRegistry& registry) {
  for (int v : {1, 11, 13}) registry.Register(SoftmaxSchema(v));
}

}  // namespace idem
