// BatchNormalization (1, 6, 7, 9, 14, 15).
//
// Inference mode: Y = scale * (X - mean) / sqrt(var + epsilon) + B per element, evaluated in
// that order in float (double for double X), as the ONNX reference's float32 numpy expression,
// so results match it bit for bit. sqrt(var + epsilon) is computed once per channel (the same
// bits as per element).
// Training mode (training_mode=1 from version 14; before 14, asking for the optional outputs, as
// ONNX Runtime decides): the batch mean and population variance per channel (accumulated in
// double, two passes), Y normalized with them, running_mean = mean * momentum + batch_mean *
// (1 - momentum) and likewise running_var; versions before 14 also give saved_mean (the batch
// mean) and saved_var (the batch population variance).
// Versions 1-7 with spatial=0 normalize per (channel, position): scale, B, mean and var then
// have the shape of X without its batch dim.
#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {
namespace {

struct BatchNormAttrs {
  float epsilon = 1e-5f;
  float momentum = 0.9f;
  bool spatial = true;
  bool training = false;
  int version = 1;
  size_t outputs = 1;  // the node's outputs (including omitted ones)
};

Result<BatchNormAttrs> ParseBatchNorm(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  BatchNormAttrs a;
  a.version = ctx.version;
  a.outputs = ctx.node.outputs.size();
  IDEM_ASSIGN_OR_RETURN(a.epsilon, r.Float("epsilon", 1e-5f));
  IDEM_ASSIGN_OR_RETURN(a.momentum, r.Float("momentum", 0.9f));
  if (!(a.epsilon >= 0.0f) || !std::isfinite(a.epsilon)) {
    return InvalidModel(
        fmt::format("attribute 'epsilon' is {}; it must be finite and >= 0", a.epsilon));
  }
  if (ctx.version == 1) {
    // Legacy and required in version 1; it has no effect.
    IDEM_ASSIGN_OR_RETURN(auto consumed, r.Ints("consumed_inputs"));
    (void)consumed;
  }
  if (ctx.version < 9) {
    IDEM_ASSIGN_OR_RETURN(int64_t spatial, r.Int("spatial", 1));
    a.spatial = spatial != 0;
  }
  bool extra_outputs = false;
  for (size_t o = 1; o < ctx.node.outputs.size(); ++o) {
    extra_outputs = extra_outputs || !ctx.node.outputs[o].empty();
  }
  if (ctx.version >= 14) {
    IDEM_ASSIGN_OR_RETURN(int64_t mode, r.IntIn("training_mode", 0, {0, 1}));
    a.training = mode == 1;
    if (!a.training && extra_outputs) {
      return InvalidModel(
          "BatchNormalization: running_mean and running_var are outputs only in training mode "
          "(attribute 'training_mode' is 0)");
    }
  } else {
    a.training = extra_outputs;
    if (ctx.version < 7) {
      IDEM_ASSIGN_OR_RETURN(int64_t is_test, r.Int("is_test", 0));
      if (is_test != 0 && extra_outputs) {
        return InvalidModel(
            "BatchNormalization: attribute 'is_test' is set (test mode) but the node asks for "
            "the training outputs mean, var, saved_mean or saved_var");
      }
    }
  }
  return a;
}

const char* kParamNames[] = {"X", "scale", "B", "mean", "var"};

// Y has X's shape; scale, B, mean and var must each be (C) (or, with spatial=0, X's shape
// without the batch dim). X of rank 1 is (N) with C = 1.
template <class D>
Result<DimsOf<D>> BatchNormShape(const BatchNormAttrs& a, std::span<const D> x,
                                 std::span<const std::span<const D>> params) {
  if (x.empty()) return InvalidArgument("BatchNormalization: X must have rank >= 1 (N x C x ...)");
  DimsOf<D> want;
  if (a.spatial) {
    want.push_back(x.size() >= 2 ? x[1] : MakeDim<D>(1));
  } else {
    want.assign(x.begin() + 1, x.end());
    if (want.empty()) want.push_back(MakeDim<D>(1));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const std::span<const D> p = params[i];
    bool ok = p.size() == want.size();
    for (size_t d = 0; ok && d < p.size(); ++d) {
      const auto vp = KnownDim(p[d]), vw = KnownDim(want[d]);
      ok = !vp || !vw || *vp == *vw;
    }
    if (!ok) {
      std::vector<std::string> w, g;
      for (const D& d : want) w.push_back(KnownDim(d) ? std::to_string(*KnownDim(d)) : "?");
      for (const D& d : p) g.push_back(KnownDim(d) ? std::to_string(*KnownDim(d)) : "?");
      return InvalidArgument(fmt::format(
          "BatchNormalization: input '{}' has shape [{}]; it must be [{}] ({})", kParamNames[i + 1],
          fmt::join(g, ","), fmt::join(w, ","),
          a.spatial ? "the channel count C = X's dim 1" : "X's shape without N (spatial=0)"));
    }
  }
  return DimsOf<D>(x.begin(), x.end());
}

Result<Inference> InferBatchNorm(const BatchNormAttrs& a, const Facts& facts) {
  IDEM_ASSIGN_OR_RETURN(auto dims, InferDims(facts, {0, 1, 2, 3, 4}, [&] {
                          std::vector<std::span<const Dim>> params;
                          for (size_t i = 1; i <= 4; ++i) params.emplace_back(*facts.shape(i));
                          return BatchNormShape<Dim>(a, *facts.shape(0), params);
                        }));
  Inference inf;
  inf.types.push_back(TensorType(facts.element_type(0), std::move(dims)));
  // running (or saved) statistics: the type and shape of mean (v14+: U/T2; before: T).
  for (size_t o = 1; o < a.outputs; ++o) {
    inf.types.push_back(TensorType(facts.element_type(3), facts.shape(3)));
  }
  return inf;
}

// Writes values (as double) into a new tensor of `type` and `shape`.
Result<Value> StatsTensor(RunContext& ctx, ElementType type, std::span<const int64_t> shape,
                          const ScratchVector<double>& values) {
  std::byte* data = nullptr;
  IDEM_ASSIGN_OR_RETURN(Value v, AllocateTensor(ctx, type, shape, &data));
  IDEM_RETURN_IF_ERROR(DispatchFloat(type, "BatchNormalization", [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < values.size(); ++i) {
      StoreElement<T>(data, static_cast<int64_t>(i),
                      FromCompute<T>(static_cast<ComputeType<T>>(values[i])));
    }
    return Status();
  }));
  return v;
}

template <class T>
Status RunBatchNorm(const BatchNormAttrs& a, RunContext& ctx, std::span<const Value* const> in,
                    std::span<Value> out) {
  using A = ComputeType<T>;
  const Tensor& x = in[0]->tensor();
  ScratchVector<std::span<const int64_t>> param_shapes;
  for (size_t i = 1; i <= 4; ++i) param_shapes.push_back(in[i]->tensor().shape());
  IDEM_ASSIGN_OR_RETURN(Ints shape, BatchNormShape<int64_t>(a, x.shape(), param_shapes));
  const int64_t n = shape[0];
  const int64_t c = shape.size() >= 2 ? shape[1] : 1;
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  // Feature f of element (b, ch, s): ch (spatial) or ch * inner + s.
  const int64_t features = a.spatial ? c : c * inner;
  ScratchVector<double> scale = ReadDoubles(in[1]->tensor());
  ScratchVector<double> bias = ReadDoubles(in[2]->tensor());
  ScratchVector<double> mean = ReadDoubles(in[3]->tensor());
  ScratchVector<double> var = ReadDoubles(in[4]->tensor());
  T* y = nullptr;
  IDEM_ASSIGN_OR_RETURN(out[0], AllocateTensorAs(ctx, x.element_type(), shape, &y));
  const T* px = x.data_as<T>().data();
  auto feature = [&](int64_t ch, int64_t s) { return a.spatial ? ch : ch * inner + s; };

  ScratchVector<double> batch_mean, batch_var;
  if (a.training) {
    // Two passes in double, each feature over N (and the positions when spatial).
    batch_mean.assign(static_cast<size_t>(features), 0.0);
    batch_var.assign(static_cast<size_t>(features), 0.0);
    const double count = static_cast<double>(n) * (a.spatial ? static_cast<double>(inner) : 1.0);
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < c; ++ch) {
        const T* row = px + (b * c + ch) * inner;
        for (int64_t s = 0; s < inner; ++s) {
          batch_mean[static_cast<size_t>(feature(ch, s))] += ToCompute(row[s]);
        }
      }
    }
    for (double& m : batch_mean) m = count > 0 ? m / count : 0.0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t ch = 0; ch < c; ++ch) {
        const T* row = px + (b * c + ch) * inner;
        for (int64_t s = 0; s < inner; ++s) {
          const size_t f = static_cast<size_t>(feature(ch, s));
          const double d = static_cast<double>(ToCompute(row[s])) - batch_mean[f];
          batch_var[f] += d * d;
        }
      }
    }
    for (double& v : batch_var) v = count > 0 ? v / count : 0.0;
  }
  // The statistics Y uses, rounded to the compute type as the reference's float32 arrays are.
  const ScratchVector<double>& use_mean = a.training ? batch_mean : mean;
  const ScratchVector<double>& use_var = a.training ? batch_var : var;
  ScratchVector<A> m(static_cast<size_t>(features)), s(m.size()), b(m.size()), den(m.size());
  for (size_t f = 0; f < m.size(); ++f) {
    m[f] = static_cast<A>(use_mean[f]);
    s[f] = static_cast<A>(scale[f]);
    b[f] = static_cast<A>(bias[f]);
    den[f] = std::sqrt(static_cast<A>(use_var[f]) + static_cast<A>(a.epsilon));
  }
  for (int64_t bi = 0; bi < n; ++bi) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t base = (bi * c + ch) * inner;
      for (int64_t p = 0; p < inner; ++p) {
        const size_t f = static_cast<size_t>(feature(ch, p));
        const A v = ToCompute(px[base + p]);
        y[base + p] = FromCompute<T>(s[f] * (v - m[f]) / den[f] + b[f]);
      }
    }
  }
  if (a.training) {
    const Tensor& mean_in = in[3]->tensor();
    const Tensor& var_in = in[4]->tensor();
    const double mo = a.momentum;
    ScratchVector<double> running_mean(mean.size()), running_var(var.size());
    for (size_t f = 0; f < mean.size(); ++f) {
      running_mean[f] = mean[f] * mo + batch_mean[f] * (1.0 - mo);
      running_var[f] = var[f] * mo + batch_var[f] * (1.0 - mo);
    }
    const ScratchVector<double>* stats[] = {&running_mean, &running_var, &batch_mean, &batch_var};
    for (size_t o = 1; o < out.size() && o <= 4; ++o) {
      const Tensor& like = o == 2 || o == 4 ? var_in : mean_in;
      IDEM_ASSIGN_OR_RETURN(out[o],
                            StatsTensor(ctx, like.element_type(), like.shape(), *stats[o - 1]));
    }
  }
  return {};
}

Result<std::unique_ptr<Kernel>> CreateBatchNorm(const BatchNormAttrs& attrs, const Facts&) {
  return MakeFunctionKernel(
      attrs,
      [](const BatchNormAttrs& a, RunContext& ctx, std::span<const Value* const> in,
         std::span<Value> out) -> Status {
        return DispatchFloat(in[0]->tensor().element_type(), "BatchNormalization", [&](auto tag) {
          return RunBatchNorm<decltype(tag)>(a, ctx, in, out);
        });
      });
}

KernelSchema BatchNormSchema(int version) {
  KernelSchema s;
  s.op_type = "BatchNormalization";
  s.since_version = version;
  using Arity = FormalParameter::Arity;
  if (version < 14) {
    s.inputs = {{"X", "T"}, {"scale", "T"}, {"B", "T"}, {"mean", "T"}, {"var", "T"}};
    s.outputs = {{"Y", "T"},
                 {"mean", "T", Arity::kOptional},
                 {"var", "T", Arity::kOptional},
                 {"saved_mean", "T", Arity::kOptional},
                 {"saved_var", "T", Arity::kOptional}};
    s.constraints = {{"T", TensorTypes(FloatTypes(false))}};
  } else {
    const char* t1 = version >= 15 ? "T1" : "T";
    const char* t2 = version >= 15 ? "T2" : "U";
    s.inputs = {{"X", "T"}, {"scale", t1}, {"B", t1}, {"input_mean", t2}, {"input_var", t2}};
    s.outputs = {
        {"Y", "T"}, {"running_mean", t2, Arity::kOptional}, {"running_var", t2, Arity::kOptional}};
    s.constraints = {{"T", TensorTypes(FloatTypes(true))}};
    if (version >= 15) s.constraints.push_back({"T1", TensorTypes(FloatTypes(true))});
    s.constraints.push_back({t2, TensorTypes(FloatTypes(true))});
  }
  switch (version) {
    case 1:
      s.attributes = {"consumed_inputs", "epsilon", "is_test", "momentum", "spatial"};
      break;
    case 6:
      s.attributes = {"epsilon", "is_test", "momentum", "spatial"};
      break;
    case 7:
      s.attributes = {"epsilon", "momentum", "spatial"};
      break;
    case 9:
      s.attributes = {"epsilon", "momentum"};
      break;
    default:
      s.attributes = {"epsilon", "momentum", "training_mode"};
      break;
  }
  s.foldable = true;
  DefineOp<BatchNormAttrs>(s, ParseBatchNorm, InferBatchNorm, CreateBatchNorm);
  return s;
}

}  // namespace

void RegisterNormalizationKernels(KernelRegistry& registry) {
  for (int v : {1, 6, 7, 9, 14, 15}) registry.Register(BatchNormSchema(v));
}

}  // namespace idem
