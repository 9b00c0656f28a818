// Softmax (1, 11, 13).
//
// Before 13 the input is coerced to 2-D at `axis` (default 1): [a_0 * ... * a_{k-1},
// a_k * ... * a_{n-1}] and each row is normalized. From 13 the normalization runs along the one
// axis `axis` (default -1). Both are the same loop over (outer, n, inner): before 13 n is the
// product of the trailing dims and inner is 1.
//
// Numerics: each slice subtracts its maximum, then exp and the sum are computed in double in
// index order, and each result rounds once to the element type. A NaN in a slice makes the
// whole slice NaN (numpy's max propagates it), as does a slice whose maximum is infinite.
#include <fmt/format.h>

#include <cmath>

#include "src/kernels/dispatch.h"
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

template <class T>
Status RunSoftmax(const SoftmaxAttrs& a, RunContext& ctx, const Tensor& x, Value& output) {
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
  (void)facts;
  return MakeFunctionKernel(
      attrs,
      [](const SoftmaxAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
         std::span<Value> outputs) -> Status {
        const Tensor& x = inputs[0]->tensor();
        return DispatchFloat(x.element_type(), "Softmax", [&](auto tag) -> Status {
          return RunSoftmax<decltype(tag)>(a, ctx, x, outputs[0]);
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
