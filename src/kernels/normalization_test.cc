// BatchNormalization through KernelRunner: inference and training mode against float64 references
// (rtol 1e-3, atol 1e-5), every version's attributes and outputs, spatial=0, the type sets
// (mixed T/T1/T2 from version 15), shapes (full, unknown, constant inputs), and bad input.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <cmath>
#include <set>

#include "src/core/float_convert.h"
#include "src/kernels/op.h"
#include "tests/kernel_runner.h"
#include "tests/kernel_test_util.h"
#include "tests/status_matchers.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;
using Dims = std::vector<int64_t>;

std::vector<float> Random(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<float> out(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float& v : out) {
    s = s * 1664525u + 1013904223u;
    v = lo + (hi - lo) * static_cast<float>(s >> 8) / static_cast<float>(1 << 24);
  }
  return out;
}

void ExpectClose(const std::vector<double>& actual, const std::vector<double>& expected,
                 double rtol = 1e-3, double atol = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_LE(std::abs(actual[i] - expected[i]), atol + rtol * std::abs(expected[i]))
        << "element " << i << ": " << actual[i] << " vs " << expected[i];
  }
}

struct Params {
  Dims x_shape, p_shape;
  std::vector<double> x, scale, bias, mean, var;
};

// Inputs of X's shape with per-feature parameters of p_shape (var > 0), as the types round them.
std::pair<Params, std::vector<Value>> MakeInputs(const Dims& x_shape, const Dims& p_shape,
                                                 E tx = E::kFloat, E tp = E::kFloat,
                                                 E tm = E::kFloat) {
  const int64_t f = Count(p_shape);
  std::vector<Value> in = {
      FloatTensor(tx, x_shape, Random(Count(x_shape), 1, -3, 3)),
      FloatTensor(tp, p_shape, Random(f, 2, 0.5f, 2.0f)), FloatTensor(tp, p_shape, Random(f, 3)),
      FloatTensor(tm, p_shape, Random(f, 4)), FloatTensor(tm, p_shape, Random(f, 5, 0.1f, 2.0f))};
  Params p{x_shape,        p_shape,        Doubles(in[0]), Doubles(in[1]),
           Doubles(in[2]), Doubles(in[3]), Doubles(in[4])};
  return {p, in};
}

// Feature of flat element i: its channel (spatial) or its (channel, position) without N.
int64_t FeatureOf(const Params& p, int64_t i, bool spatial) {
  const int64_t n = p.x_shape[0];
  const int64_t per_batch = Count(p.x_shape) / std::max<int64_t>(n, 1);
  const int64_t within = i % per_batch;
  if (!spatial) return within;
  const int64_t inner = p.x_shape.size() > 2 ? per_batch / p.x_shape[1] : 1;
  return within / inner;
}

std::vector<double> RefInference(const Params& p, double eps, bool spatial = true) {
  std::vector<double> y(p.x.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const int64_t f = FeatureOf(p, static_cast<int64_t>(i), spatial);
    y[i] = (p.x[i] - p.mean[f]) / std::sqrt(p.var[f] + eps) * p.scale[f] + p.bias[f];
  }
  return y;
}

struct Training {
  std::vector<double> y, batch_mean, batch_var, running_mean, running_var;
};

Training RefTraining(const Params& p, double eps, double momentum, bool spatial = true) {
  const size_t f = p.mean.size();
  Training t;
  t.batch_mean.assign(f, 0.0);
  t.batch_var.assign(f, 0.0);
  std::vector<double> count(f, 0.0);
  for (size_t i = 0; i < p.x.size(); ++i) {
    const int64_t k = FeatureOf(p, static_cast<int64_t>(i), spatial);
    t.batch_mean[k] += p.x[i];
    count[k] += 1;
  }
  for (size_t k = 0; k < f; ++k) t.batch_mean[k] /= count[k];
  for (size_t i = 0; i < p.x.size(); ++i) {
    const int64_t k = FeatureOf(p, static_cast<int64_t>(i), spatial);
    t.batch_var[k] += (p.x[i] - t.batch_mean[k]) * (p.x[i] - t.batch_mean[k]);
  }
  for (size_t k = 0; k < f; ++k) t.batch_var[k] /= count[k];
  Params q = p;
  q.mean = t.batch_mean;
  q.var = t.batch_var;
  t.y = RefInference(q, eps, spatial);
  for (size_t k = 0; k < f; ++k) {
    t.running_mean.push_back(p.mean[k] * momentum + t.batch_mean[k] * (1 - momentum));
    t.running_var.push_back(p.var[k] * momentum + t.batch_var[k] * (1 - momentum));
  }
  return t;
}

TEST(BatchNormTest, InferenceModeEveryVersion) {
  auto [p, in] = MakeInputs({2, 3, 4, 5}, {3});
  for (int v : {1, 6, 7, 9, 14, 15}) {
    SCOPED_TRACE(v);
    auto make = [v] {
      KernelRunner r("BatchNormalization", v);
      r.FloatAttr("epsilon", 0.01f);
      if (v == 1) r.IntsAttr("consumed_inputs", {0, 0, 0, 1, 1});
      if (v < 7) r.IntAttr("is_test", 1);
      return r;
    };
    auto out = RunAllWays(make, in);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(ShapeOf(out[0]), p.x_shape);
    ExpectClose(Doubles(out[0]), RefInference(p, 0.01f));
  }
}

TEST(BatchNormTest, RanksOneTwoAndFive) {
  // Rank 1: (N) with C = 1 (version 9+).
  {
    auto [p, in] = MakeInputs({6}, {1});
    auto out = RunAllWays([] { return KernelRunner("BatchNormalization", 15); }, in);
    ExpectClose(Doubles(out[0]), RefInference(p, 1e-5f));
  }
  for (const Dims& x : {Dims{4, 3}, Dims{2, 3, 2, 2, 3}}) {
    auto [p, in] = MakeInputs(x, {3});
    auto out = RunAllWays([] { return KernelRunner("BatchNormalization", 9); }, in);
    EXPECT_EQ(ShapeOf(out[0]), x);
    ExpectClose(Doubles(out[0]), RefInference(p, 1e-5f));
  }
}

TEST(BatchNormTest, SpatialZeroNormalizesPerPosition) {
  for (const Dims& p_shape : {Dims{3, 2, 2}}) {
    auto [p, in] = MakeInputs({2, 3, 2, 2}, p_shape);
    for (int v : {6, 7}) {
      SCOPED_TRACE(v);
      auto out = RunAllWays(
          [v] {
            KernelRunner r("BatchNormalization", v);
            r.IntAttr("spatial", 0);
            if (v == 6) r.IntAttr("is_test", 1);
            return r;
          },
          in);
      ExpectClose(Doubles(out[0]), RefInference(p, 1e-5f, false));
    }
  }
}

TEST(BatchNormTest, TypeSetsAndMixedTypes) {
  for (E type : {E::kDouble, E::kFloat16}) {
    auto [p, in] = MakeInputs({2, 3, 3}, {3}, type, type, type);
    auto out = RunAllWays([] { return KernelRunner("BatchNormalization", 9); }, in);
    ASSERT_EQ(out[0].tensor().element_type(), type);
    auto expect = RefInference(p, 1e-5f);
    // float16: one rounding of the float result.
    if (type == E::kFloat16) {
      expect = Doubles(FloatTensor(type, p.x_shape, {expect.begin(), expect.end()}));
      ExpectClose(Doubles(out[0]), expect, 2e-3, 1e-3);
    } else {
      ExpectClose(Doubles(out[0]), expect, 1e-12, 1e-12);
    }
  }
  // Version 14: bfloat16, and U (mean/var) may differ from T.
  {
    auto [p, in] = MakeInputs({2, 3, 3}, {3}, E::kBfloat16, E::kBfloat16, E::kFloat);
    auto out = RunAllWays([] { return KernelRunner("BatchNormalization", 14); }, in);
    ASSERT_EQ(out[0].tensor().element_type(), E::kBfloat16);
    ExpectClose(Doubles(out[0]), RefInference(p, 1e-5f), 1e-2, 1e-2);
  }
  // Version 15: T, T1 and T2 independent.
  {
    auto [p, in] = MakeInputs({2, 3, 3}, {3}, E::kFloat, E::kFloat16, E::kDouble);
    auto out = RunAllWays([] { return KernelRunner("BatchNormalization", 15); }, in);
    ASSERT_EQ(out[0].tensor().element_type(), E::kFloat);
    ExpectClose(Doubles(out[0]), RefInference(p, 1e-5f));
  }
  // bfloat16 is not in versions before 14.
  auto [p, in] = MakeInputs({2, 3}, {3}, E::kBfloat16, E::kBfloat16, E::kBfloat16);
  EXPECT_STATUS(KernelRunner("BatchNormalization", 9).Run(in), StatusCode::kInvalidModel,
                "not allowed");
}

TEST(BatchNormTest, TrainingModeVersion15) {
  auto [p, in] = MakeInputs({3, 2, 4, 3}, {2}, E::kFloat, E::kFloat, E::kDouble);
  auto out = RunAllWays(
      [] {
        KernelRunner r("BatchNormalization", 15);
        r.IntAttr("training_mode", 1).FloatAttr("momentum", 0.8f).FloatAttr("epsilon", 0.01f);
        return r;
      },
      in, 3);
  ASSERT_EQ(out.size(), 3u);
  const Training t = RefTraining(p, 0.01f, 0.8f);
  ExpectClose(Doubles(out[0]), t.y);
  EXPECT_EQ(out[1].tensor().element_type(), E::kDouble);
  EXPECT_EQ(ShapeOf(out[1]), (Dims{2}));
  ExpectClose(Doubles(out[1]), t.running_mean, 1e-6, 1e-7);
  ExpectClose(Doubles(out[2]), t.running_var, 1e-6, 1e-7);
  // Training mode with only Y.
  auto only_y = RunAllWays(
      [] {
        KernelRunner r("BatchNormalization", 14);
        r.IntAttr("training_mode", 1);
        return r;
      },
      in);
  ExpectClose(Doubles(only_y[0]), RefTraining(p, 1e-5f, 0.9f).y);
}

TEST(BatchNormTest, TrainingOutputsBeforeVersion14) {
  auto [p, in] = MakeInputs({4, 3, 5}, {3});
  for (int v : {6, 7, 9}) {
    SCOPED_TRACE(v);
    auto out = RunAllWays([v] { return KernelRunner("BatchNormalization", v); }, in, 5);
    ASSERT_EQ(out.size(), 5u);
    const Training t = RefTraining(p, 1e-5f, 0.9f);
    ExpectClose(Doubles(out[0]), t.y);
    ExpectClose(Doubles(out[1]), t.running_mean);
    ExpectClose(Doubles(out[2]), t.running_var);
    ExpectClose(Doubles(out[3]), t.batch_mean);
    ExpectClose(Doubles(out[4]), t.batch_var);
  }
  // spatial=0: statistics per (channel, position) over N.
  auto [q, qin] = MakeInputs({4, 3, 5}, {3, 5});
  auto out = RunAllWays(
      [] {
        KernelRunner r("BatchNormalization", 7);
        r.IntAttr("spatial", 0);
        return r;
      },
      qin, 3);
  const Training t = RefTraining(q, 1e-5f, 0.9f, false);
  ExpectClose(Doubles(out[0]), t.y);
  ExpectClose(Doubles(out[1]), t.running_mean);
}

TEST(BatchNormTest, BadInputIsRefusedWithTheRule) {
  auto [p, in] = MakeInputs({2, 3, 4}, {3});
  using C = StatusCode;
  EXPECT_STATUS(KernelRunner("BatchNormalization", 1).Run(in), C::kInvalidModel,
                "required attribute 'consumed_inputs' is missing");
  EXPECT_STATUS(KernelRunner("BatchNormalization", 15).Run(in, 3), C::kInvalidModel,
                "only in training mode (attribute 'training_mode' is 0)");
  EXPECT_STATUS(KernelRunner("BatchNormalization", 15).IntAttr("training_mode", 2).Run(in),
                C::kInvalidModel, "attribute 'training_mode' is 2; it must be one of 0, 1");
  EXPECT_STATUS(KernelRunner("BatchNormalization", 6).IntAttr("is_test", 1).Run(in, 5),
                C::kInvalidModel, "'is_test' is set (test mode)");
  EXPECT_STATUS(KernelRunner("BatchNormalization", 15).FloatAttr("epsilon", -1.0f).Run(in),
                C::kInvalidModel, "attribute 'epsilon' is -1");
  EXPECT_STATUS(KernelRunner("BatchNormalization", 9).IntAttr("spatial", 0).Run(in),
                C::kInvalidModel, "unknown attribute");
  for (bool unknown : {false, true}) {
    SCOPED_TRACE(unknown);
    // A parameter of the wrong length, or rank.
    for (size_t i = 1; i <= 4; ++i) {
      std::vector<Value> bad = in;
      bad[i] = Floats({4}, {1, 1, 1, 1});
      KernelRunner r("BatchNormalization", 15);
      if (unknown) r.UnknownShapes();
      const std::string name = i == 1 ? "scale" : i == 2 ? "B" : i == 3 ? "mean" : "var";
      EXPECT_STATUS(r.Run(bad), C::kInvalidArgument,
                    "input '" + name + "' has shape [4]; it must be [3]");
    }
    std::vector<Value> bad = in;
    bad[3] = Floats({3, 1}, {1, 1, 1});
    KernelRunner r("BatchNormalization", 15);
    if (unknown) r.UnknownShapes();
    EXPECT_STATUS(r.Run(bad), C::kInvalidArgument, "has shape [3,1]");
    bad = in;
    bad[0] = Floats({}, {1});
    KernelRunner r0("BatchNormalization", 15);
    if (unknown) r0.UnknownShapes();
    EXPECT_STATUS(r0.Run(bad), C::kInvalidArgument, "X must have rank >= 1");
  }
  // spatial=0 needs X's shape without N.
  EXPECT_STATUS(KernelRunner("BatchNormalization", 7).IntAttr("spatial", 0).Run(in),
                C::kInvalidArgument, "it must be [3,4] (X's shape without N (spatial=0))");
  Limits limits;
  limits.max_tensor_bytes = 64;
  EXPECT_STATUS(KernelRunner("BatchNormalization", 15).WithLimits(limits).Run(in),
                C::kResourceExhausted, "max_tensor_bytes");
}

TEST(BatchNormRegistryTest, MatchesLibonnxSchemas) {
  const auto& registry = KernelRegistry::Default();
  std::vector<int> since;
  for (const KernelSchema* s : registry.Versions("", "BatchNormalization")) {
    since.push_back(s->since_version);
  }
  EXPECT_EQ(since, (std::vector<int>{1, 6, 7, 9, 14, 15}));
  for (int version : since) {
    SCOPED_TRACE(version);
    const onnx::OpSchema* theirs =
        onnx::OpSchemaRegistry::Schema("BatchNormalization", version, "");
    ASSERT_NE(theirs, nullptr);
    const KernelSchema* ours = registry.Resolve("", "BatchNormalization", version);
    ASSERT_EQ(ours->inputs.size(), theirs->inputs().size());
    for (size_t i = 0; i < ours->inputs.size(); ++i) {
      EXPECT_EQ(ours->inputs[i].name, theirs->inputs()[i].GetName());
      EXPECT_EQ(ours->inputs[i].type_param, theirs->inputs()[i].GetTypeStr());
    }
    ASSERT_EQ(ours->outputs.size(), theirs->outputs().size());
    for (size_t i = 0; i < ours->outputs.size(); ++i) {
      EXPECT_EQ(ours->outputs[i].name, theirs->outputs()[i].GetName());
      EXPECT_EQ(ours->outputs[i].type_param, theirs->outputs()[i].GetTypeStr());
      EXPECT_EQ(static_cast<int>(ours->outputs[i].arity),
                static_cast<int>(theirs->outputs()[i].GetOption()));
    }
    ASSERT_EQ(ours->constraints.size(), theirs->typeConstraintParams().size());
    for (const auto& param : theirs->typeConstraintParams()) {
      const TypeConstraint* c = ours->FindConstraint(param.type_param_str);
      ASSERT_NE(c, nullptr) << param.type_param_str;
      std::set<std::string> mine;
      for (const Type& t : c->allowed) mine.insert(t.ToString());
      EXPECT_EQ(mine, std::set<std::string>(param.allowed_type_strs.begin(),
                                            param.allowed_type_strs.end()));
    }
    std::set<std::string> attrs;
    for (const auto& [name, attribute] : theirs->attributes()) attrs.insert(name);
    EXPECT_EQ(std::set<std::string>(ours->attributes.begin(), ours->attributes.end()), attrs);
  }
}

}  // namespace
}  // namespace idem::testing
