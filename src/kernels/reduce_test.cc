// ReduceMax and ReduceMean through KernelRunner: values (Max exact, Mean against a float64
// reference), shapes (keepdims, negative axes, axes as attribute before 18 and as an input from
// 18, constant or not, noop_with_empty_axes), empty sets, every version's type set (libonnx's
// schemas up to 17, the spec for 18 and 20) and bad input.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "src/core/float_convert.h"
#include "tests/kernel_runner.h"
#include "tests/kernel_test_util.h"
#include "tests/status_matchers.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;

// Runs three ways (shapes known, unknown, every input a planner constant) and checks they agree.
Value RunThree(const std::string& op, int opset, const std::vector<Value>& inputs,
               const std::function<void(KernelRunner&)>& configure = {}) {
  std::vector<Value> results;
  for (int mode = 0; mode < 3; ++mode) {
    KernelRunner r(op, opset);
    if (configure) configure(r);
    if (mode == 1) r.UnknownShapes();
    if (mode == 2) {
      for (size_t i = 0; i < inputs.size(); ++i) r.ConstantInput(i);
    }
    auto out = r.Run(inputs);
    EXPECT_TRUE(out.ok()) << op << "-" << opset << " mode " << mode << ": "
                          << out.status().message();
    if (!out.ok()) return Value();
    results.push_back(out.value()[0]);
  }
  for (size_t i = 1; i < results.size(); ++i) {
    EXPECT_EQ(DescribeDifference(results[0], results[i]), std::nullopt) << "mode " << i;
  }
  return results[0];
}

// The float64 reference: reduces x (shape [2, 3, 4]) over the axes in `mask` by `f`.
std::vector<double> Reference(const std::vector<float>& x, std::vector<bool> mask, bool mean) {
  const int64_t dims[3] = {2, 3, 4};
  std::vector<double> acc, count;
  std::vector<int64_t> index_of;
  int64_t out_dims[3];
  for (int i = 0; i < 3; ++i) out_dims[i] = mask[i] ? 1 : dims[i];
  const int64_t out_count = out_dims[0] * out_dims[1] * out_dims[2];
  // Max starts below every value; a named double keeps the ?: out of clang-tidy's narrowing check.
  const double lowest = -std::numeric_limits<double>::infinity();
  acc.assign(static_cast<size_t>(out_count), mean ? 0.0 : lowest);
  count.assign(static_cast<size_t>(out_count), 0);
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t b = 0; b < 3; ++b) {
      for (int64_t c = 0; c < 4; ++c) {
        const int64_t o =
            ((mask[0] ? 0 : a) * out_dims[1] + (mask[1] ? 0 : b)) * out_dims[2] + (mask[2] ? 0 : c);
        const double v = x[static_cast<size_t>((a * 3 + b) * 4 + c)];
        if (mean) {
          acc[static_cast<size_t>(o)] += v;
        } else {
          acc[static_cast<size_t>(o)] = std::max(acc[static_cast<size_t>(o)], v);
        }
        count[static_cast<size_t>(o)] += 1;
      }
    }
  }
  if (mean) {
    for (size_t i = 0; i < acc.size(); ++i) acc[i] /= count[i];
  }
  return acc;
}

void ExpectClose(const std::vector<float>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_LE(std::abs(actual[i] - expected[i]), 1e-5 + 1e-3 * std::abs(expected[i]))
        << i << ": " << actual[i] << " vs " << expected[i];
  }
}

// ---- Values and shapes -------------------------------------------------------------------------

TEST(ReduceTest, EveryAxisSetAgainstTheReference) {
  const std::vector<float> x = RandomGrid(24, 5);
  const Value in = Floats({2, 3, 4}, x);
  // Every subset of the three axes, with keepdims 1 and 0, for both ops and both ways of
  // giving the axes (attribute: 13, input: 18).
  for (int bits = 1; bits < 8; ++bits) {
    std::vector<bool> mask = {(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
    std::vector<int64_t> axes, keep_shape, drop_shape;
    for (int i = 0; i < 3; ++i) {
      const int64_t d = i == 0 ? 2 : i == 1 ? 3 : 4;
      if (mask[static_cast<size_t>(i)]) {
        axes.push_back(i == 2 ? -1 : i);  // a negative axis too
        keep_shape.push_back(1);
      } else {
        keep_shape.push_back(d);
        drop_shape.push_back(d);
      }
    }
    for (const char* op : {"ReduceMax", "ReduceMean"}) {
      const bool mean = std::string(op) == "ReduceMean";
      const std::vector<double> expected = Reference(x, mask, mean);
      for (int keepdims : {1, 0}) {
        SCOPED_TRACE(::testing::Message() << op << " axes " << bits << " keepdims " << keepdims);
        const Value a = RunThree(op, 13, {in}, [&](KernelRunner& r) {
          r.IntsAttr("axes", axes).IntAttr("keepdims", keepdims);
        });
        const Value b = RunThree(op, 18, {in, I64(axes)},
                                 [&](KernelRunner& r) { r.IntAttr("keepdims", keepdims); });
        EXPECT_EQ(ShapeOf(a), keepdims ? keep_shape : drop_shape);
        EXPECT_EQ(DescribeDifference(a, b), std::nullopt);
        if (mean) {
          ExpectClose(Elements<float>(a), expected);
        } else {
          const auto got = Elements<float>(a);
          for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << i;
        }
      }
    }
  }
}

TEST(ReduceTest, DefaultAxesReduceEverything) {
  const Value in = Floats({2, 3}, {1, 5, 2, 8, 3, 4});
  for (int version : {1, 11, 13, 18}) {
    const Value m = RunThree("ReduceMean", version, {in});
    EXPECT_EQ(ShapeOf(m), (std::vector<int64_t>{1, 1})) << version;
    EXPECT_EQ(Elements<float>(m), (std::vector<float>{23.0f / 6})) << version;
  }
  const Value mx =
      RunThree("ReduceMax", 20, {in}, [](KernelRunner& r) { r.IntAttr("keepdims", 0); });
  EXPECT_EQ(ShapeOf(mx), (std::vector<int64_t>{}));
  EXPECT_EQ(Elements<float>(mx), (std::vector<float>{8}));
  // An empty axes attribute (before 18) also means every axis.
  const Value e = RunThree("ReduceMax", 13, {in}, [](KernelRunner& r) { r.IntsAttr("axes", {}); });
  EXPECT_EQ(Elements<float>(e), (std::vector<float>{8}));
  // 18: an empty axes input, too (unless noop_with_empty_axes).
  const Value f = RunThree("ReduceMax", 18, {in, I64({})});
  EXPECT_EQ(ShapeOf(f), (std::vector<int64_t>{1, 1}));
  // A scalar reduces to itself.
  const Value s = RunThree("ReduceMean", 13, {Floats({}, {2.5f})});
  EXPECT_EQ(ShapeOf(s), (std::vector<int64_t>{}));
  EXPECT_EQ(Elements<float>(s), (std::vector<float>{2.5f}));
}

TEST(ReduceTest, NoopWithEmptyAxes) {
  const Value in = Floats({2, 3}, {1, 5, 2, 8, 3, 4});
  for (const char* op : {"ReduceMax", "ReduceMean"}) {
    auto noop = [](KernelRunner& r) {
      r.IntAttr("noop_with_empty_axes", 1).IntAttr("keepdims", 0);
    };
    const Value a = RunThree(op, 18, {in}, noop);
    EXPECT_EQ(DescribeDifference(in, a), std::nullopt) << op;
    const Value b = RunThree(op, 18, {in, I64({})}, noop);
    EXPECT_EQ(DescribeDifference(in, b), std::nullopt) << op;
    // Non-empty axes still reduce.
    const Value c = RunThree(op, 18, {in, I64({1})}, noop);
    EXPECT_EQ(ShapeOf(c), (std::vector<int64_t>{2})) << op;
  }
}

TEST(ReduceTest, AxesInputKnownOnlyAtRunTime) {
  // A non-constant axes input: keepdims keeps the rank (dims unknown), keepdims 0 the rank
  // unknown; KernelRunner checks the inference is compatible with the result.
  const Value in = Floats({2, 1, 3}, RandomGrid(6, 2));
  KernelRunner keep("ReduceMean", 18);
  auto k = keep.Run({in, I64({0})});
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(ShapeOf(k.value()[0]), (std::vector<int64_t>{1, 1, 3}));
  ASSERT_TRUE(keep.inferred()[0].shape().has_value());
  EXPECT_EQ(keep.inferred()[0].shape()->size(), 3u);
  EXPECT_FALSE((*keep.inferred()[0].shape())[0].value.has_value());
  EXPECT_EQ((*keep.inferred()[0].shape())[1].value, 1);
  KernelRunner drop("ReduceMax", 18);
  drop.IntAttr("keepdims", 0);
  auto d = drop.Run({in, I64({2, 0})});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(ShapeOf(d.value()[0]), (std::vector<int64_t>{1}));
  EXPECT_FALSE(drop.inferred()[0].shape().has_value());
  // A constant axes input gives the full shape at planning.
  KernelRunner known("ReduceMax", 18);
  known.IntAttr("keepdims", 0).ConstantInput(1);
  ASSERT_TRUE(known.Run({in, I64({2, 0})}).ok());
  ASSERT_TRUE(known.inferred()[0].shape().has_value());
  EXPECT_EQ((*known.inferred()[0].shape())[0].value, 1);
}

TEST(ReduceTest, MaxPropagatesNaNAndHandlesInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Value in = Floats({3, 3}, {1, nan, 2, -inf, -inf, -inf, nan, 3, inf});
  const auto got = Elements<float>(
      RunThree("ReduceMax", 13, {in}, [](KernelRunner& r) { r.IntsAttr("axes", {1}); }));
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], -inf);
  EXPECT_TRUE(std::isnan(got[2]));
  const auto mean = Elements<float>(
      RunThree("ReduceMean", 13, {in}, [](KernelRunner& r) { r.IntsAttr("axes", {1}); }));
  EXPECT_TRUE(std::isnan(mean[0]));
  EXPECT_EQ(mean[1], -inf);
}

TEST(ReduceTest, EmptySets) {
  // Reducing an axis of size 0: Max gives -inf (floats) or the lowest value; Mean gives NaN
  // (floats) or 0 (integers).
  const Value f = Floats({2, 0}, {});
  auto axes1 = [](KernelRunner& r) { r.IntsAttr("axes", {1}); };
  EXPECT_EQ(Elements<float>(RunThree("ReduceMax", 13, {f}, axes1)),
            (std::vector<float>{-INFINITY, -INFINITY}));
  const auto m = Elements<float>(RunThree("ReduceMean", 13, {f}, axes1));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_TRUE(std::isnan(m[0]) && std::isnan(m[1]));
  const Value i = MakeTensorOf<int32_t>(E::kInt32, {1, 0}, {});
  EXPECT_EQ(Elements<int32_t>(RunThree("ReduceMax", 13, {i}, axes1)),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::min()}));
  EXPECT_EQ(Elements<int32_t>(RunThree("ReduceMean", 13, {i}, axes1)), (std::vector<int32_t>{0}));
  const Value u = MakeTensorOf<uint8_t>(E::kUint8, {1, 0}, {});
  EXPECT_EQ(Elements<uint8_t>(RunThree("ReduceMax", 13, {u}, axes1)), (std::vector<uint8_t>{0}));
  const Value b = MakeTensorOf<uint8_t>(E::kBool, {1, 0}, {});
  EXPECT_EQ(Elements<uint8_t>(RunThree("ReduceMax", 20, {b, I64({1})})), (std::vector<uint8_t>{0}));
  // Reducing the non-empty axis of an empty tensor gives an empty result.
  EXPECT_EQ(
      ShapeOf(RunThree("ReduceMean", 13, {f}, [](KernelRunner& r) { r.IntsAttr("axes", {0}); })),
      (std::vector<int64_t>{1, 0}));
}

TEST(ReduceTest, IntegerMeanIsExactAndTruncates) {
  // int64 values whose sum overflows int64: the mean is exact.
  const int64_t big = std::numeric_limits<int64_t>::max();
  const Value x = MakeTensorOf<int64_t>(E::kInt64, {3}, {big, big, big - 3});
  EXPECT_EQ(Elements<int64_t>(RunThree("ReduceMean", 13, {x})), (std::vector<int64_t>{big - 1}));
  // Truncation toward zero: mean(-3, -4) = -3.5 -> -3; mean(7, 8) = 7.5 -> 7.
  const Value y = MakeTensorOf<int32_t>(E::kInt32, {2, 2}, {-3, 7, -4, 8});
  EXPECT_EQ(Elements<int32_t>(
                RunThree("ReduceMean", 13, {y}, [](KernelRunner& r) { r.IntsAttr("axes", {0}); })),
            (std::vector<int32_t>{-3, 7}));
  const uint64_t umax = std::numeric_limits<uint64_t>::max();
  const Value z = MakeTensorOf<uint64_t>(E::kUint64, {2}, {umax, umax - 1});
  EXPECT_EQ(Elements<uint64_t>(RunThree("ReduceMean", 13, {z})), (std::vector<uint64_t>{umax - 1}));
}

TEST(ReduceTest, TypeSets) {
  const Value i8 = MakeTensorOf<int8_t>(E::kInt8, {3}, {-5, 7, -128});
  EXPECT_FALSE(KernelRunner("ReduceMax", 11).Run({i8}).ok());
  EXPECT_EQ(Elements<int8_t>(RunThree("ReduceMax", 12, {i8})), (std::vector<int8_t>{7}));
  EXPECT_FALSE(KernelRunner("ReduceMean", 13).Run({i8}).ok());  // never in ReduceMean
  const Value b = MakeTensorOf<uint8_t>(E::kBool, {3}, {0, 1, 0});
  EXPECT_FALSE(KernelRunner("ReduceMax", 18).Run({b}).ok());
  EXPECT_EQ(Elements<uint8_t>(RunThree("ReduceMax", 20, {b})), (std::vector<uint8_t>{1}));
  const Value bf = MakeTensorOf<uint16_t>(
      E::kBfloat16, {3}, {FloatToBf16(1.0f), FloatToBf16(2.0f), FloatToBf16(4.0f)});
  EXPECT_FALSE(KernelRunner("ReduceMean", 11).Run({bf}).ok());
  // bfloat16 mean: 7/3 rounds once to the nearest bfloat16.
  EXPECT_EQ(Elements<uint16_t>(RunThree("ReduceMean", 13, {bf})),
            (std::vector<uint16_t>{FloatToBf16(7.0f / 3)}));
  EXPECT_EQ(Elements<uint16_t>(RunThree("ReduceMax", 13, {bf})),
            (std::vector<uint16_t>{FloatToBf16(4.0f)}));
  const Value h = MakeTensorOf<uint16_t>(E::kFloat16, {3},
                                         {FloatToHalf(1.0f), FloatToHalf(2.0f), FloatToHalf(4.0f)});
  EXPECT_EQ(Elements<uint16_t>(RunThree("ReduceMean", 1, {h})),
            (std::vector<uint16_t>{FloatToHalf(7.0f / 3)}));
  const Value d = MakeTensorOf<double>(E::kDouble, {3}, {0.1, 0.2, 0.4});
  EXPECT_NEAR(Elements<double>(RunThree("ReduceMean", 13, {d}))[0], 0.7 / 3, 1e-16);
}

// ---- Bad input ---------------------------------------------------------------------------------

TEST(ReduceTest, BadInputIsRefused) {
  const Value in = Floats({2, 3}, RandomGrid(6, 9));
  EXPECT_STATUS(KernelRunner("ReduceMax", 13).IntsAttr("axes", {2}).Run({in}),
                StatusCode::kInvalidArgument, "axis 2 is outside [-2, 1]");
  EXPECT_STATUS(KernelRunner("ReduceMax", 13).IntsAttr("axes", {2}).UnknownShapes().Run({in}),
                StatusCode::kInvalidArgument, "axis 2 is outside");
  EXPECT_STATUS(KernelRunner("ReduceMean", 11).IntsAttr("axes", {0, -2}).Run({in}),
                StatusCode::kInvalidArgument, "repeated");
  EXPECT_STATUS(KernelRunner("ReduceMean", 18).Run({in, I64({-3})}), StatusCode::kInvalidArgument,
                "axis -3 is outside");
  EXPECT_STATUS(KernelRunner("ReduceMean", 18).ConstantInput(1).Run({in, I64({5})}),
                StatusCode::kInvalidArgument, "axis 5 is outside");
  EXPECT_STATUS(
      KernelRunner("ReduceMean", 18).Run({in, MakeTensorOf<int64_t>(E::kInt64, {1, 1}, {0})}),
      StatusCode::kInvalidArgument, "must be 1-D");
  EXPECT_STATUS(KernelRunner("ReduceMax", 13).IntAttr("keepdims", 2).Run({in}),
                StatusCode::kInvalidModel, "keepdims");
  EXPECT_STATUS(KernelRunner("ReduceMax", 18).IntAttr("noop_with_empty_axes", 5).Run({in}),
                StatusCode::kInvalidModel, "noop_with_empty_axes");
  // Attributes of the other generation are refused.
  EXPECT_FALSE(KernelRunner("ReduceMax", 18).IntsAttr("axes", {0}).Run({in}).ok());
  EXPECT_FALSE(KernelRunner("ReduceMax", 13).IntAttr("noop_with_empty_axes", 1).Run({in}).ok());
  // axes must be int64.
  EXPECT_FALSE(
      KernelRunner("ReduceMax", 18).Run({in, MakeTensorOf<int32_t>(E::kInt32, {1}, {0})}).ok());
}

TEST(ReduceTest, OutputSizeIsCheckedAgainstTheLimits) {
  // An empty input whose kept dims are large: the output holds no elements of the input but
  // many of its own; it is refused before allocating.
  const Value x = Floats({0, 1 << 20, 64}, {});
  Limits limits;
  limits.max_tensor_bytes = 1 << 20;
  EXPECT_STATUS(KernelRunner("ReduceMax", 13).IntsAttr("axes", {0}).WithLimits(limits).Run({x}),
                StatusCode::kResourceExhausted, "");
}

// ---- Registry ----------------------------------------------------------------------------------

std::set<std::string> TypeStrings(const TypeConstraint& c) {
  std::set<std::string> out;
  for (const Type& t : c.allowed) out.insert(t.ToString());
  return out;
}

void ExpectMatchesLibonnx(const char* op, int version) {
  SCOPED_TRACE(std::string(op) + "-" + std::to_string(version));
  const onnx::OpSchema* theirs = onnx::OpSchemaRegistry::Schema(op, version, "");
  ASSERT_NE(theirs, nullptr);
  ASSERT_EQ(theirs->SinceVersion(), version);
  const KernelSchema* ours = KernelRegistry::Default().Resolve("", op, version);
  ASSERT_NE(ours, nullptr);
  EXPECT_EQ(ours->since_version, version);
  EXPECT_TRUE(ours->foldable);
  ASSERT_EQ(ours->inputs.size(), theirs->inputs().size());
  for (size_t i = 0; i < ours->inputs.size(); ++i) {
    EXPECT_EQ(ours->inputs[i].name, theirs->inputs()[i].GetName());
    EXPECT_EQ(static_cast<int>(ours->inputs[i].arity),
              static_cast<int>(theirs->inputs()[i].GetOption()));
  }
  ASSERT_EQ(ours->outputs.size(), theirs->outputs().size());
  const TypeConstraint* c = ours->FindConstraint("T");
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(theirs->typeConstraintParams().size(), 1u);
  const auto& param = theirs->typeConstraintParams()[0];
  EXPECT_EQ(TypeStrings(*c),
            std::set<std::string>(param.allowed_type_strs.begin(), param.allowed_type_strs.end()));
  std::set<std::string> their_attributes;
  for (const auto& [name, attribute] : theirs->attributes()) their_attributes.insert(name);
  EXPECT_EQ(std::set<std::string>(ours->attributes.begin(), ours->attributes.end()),
            their_attributes);
}

TEST(ReduceRegistryTest, EveryVersionMatchesTheSchemas) {
  const auto& r = KernelRegistry::Default();
  for (int v : {1, 11, 12, 13}) ExpectMatchesLibonnx("ReduceMax", v);
  for (int v : {1, 11, 13}) ExpectMatchesLibonnx("ReduceMean", v);
  auto versions = [&](const char* op) {
    std::vector<int> out;
    for (const KernelSchema* s : r.Versions("", op)) out.push_back(s->since_version);
    return out;
  };
  EXPECT_EQ(versions("ReduceMax"), (std::vector<int>{1, 11, 12, 13, 18, 20}));
  EXPECT_EQ(versions("ReduceMean"), (std::vector<int>{1, 11, 13, 18}));
  // 18 (newer than libonnx): axes becomes an optional int64 input, noop_with_empty_axes.
  for (const char* op : {"ReduceMax", "ReduceMean"}) {
    const KernelSchema* s18 = r.Resolve("", op, 18);
    const KernelSchema* s13 = r.Resolve("", op, 13);
    ASSERT_EQ(s18->inputs.size(), 2u);
    EXPECT_EQ(s18->inputs[1].name, "axes");
    EXPECT_EQ(s18->inputs[1].arity, FormalParameter::Arity::kOptional);
    EXPECT_EQ(TypeStrings(*s18->FindConstraint(s18->inputs[1].type_param)),
              (std::set<std::string>{"tensor(int64)"}));
    EXPECT_EQ(std::set<std::string>(s18->attributes.begin(), s18->attributes.end()),
              (std::set<std::string>{"keepdims", "noop_with_empty_axes"}));
    EXPECT_EQ(TypeStrings(*s18->FindConstraint("T")), TypeStrings(*s13->FindConstraint("T")));
  }
  std::set<std::string> with_bool =
      TypeStrings(*r.Resolve("", "ReduceMax", 18)->FindConstraint("T"));
  with_bool.insert("tensor(bool)");
  EXPECT_EQ(TypeStrings(*r.Resolve("", "ReduceMax", 20)->FindConstraint("T")), with_bool);
}

}  // namespace
}  // namespace idem::testing

namespace idem::testing {
namespace {

// Every axis set of a rank-4 tensor with a dim of 1 (reduced axes in one block, the block path,
// and split by kept axes, the general loop): ReduceMean is exactly the double sum of the reduced
// elements in row-major order over their count, rounded once; ReduceMax exactly the maximum.
TEST(ReduceTest, EveryAxisSetIsTheRowMajorDoubleSumBitForBit) {
  const std::vector<int64_t> dims = {3, 1, 5, 7};
  const std::vector<float> x = RandomUnit(size_t{3} * 5 * 7, 11);
  const Value in = Floats(dims, x);
  for (int bits = 1; bits < 16; ++bits) {
    std::vector<int64_t> axes, out_dims;
    for (int i = 0; i < 4; ++i) {
      const bool reduced = (bits >> i & 1) != 0;
      if (reduced) axes.push_back(i);
      out_dims.push_back(reduced ? 1 : dims[static_cast<size_t>(i)]);
    }
    const int64_t outs = out_dims[0] * out_dims[1] * out_dims[2] * out_dims[3];
    std::vector<double> sum(static_cast<size_t>(outs), 0.0);
    std::vector<float> max(static_cast<size_t>(outs), -INFINITY);
    std::vector<int64_t> count(static_cast<size_t>(outs), 0);
    for (int64_t a = 0; a < 3; ++a) {
      for (int64_t c = 0; c < 5; ++c) {
        for (int64_t d = 0; d < 7; ++d) {
          const int64_t oa = out_dims[0] == 1 ? 0 : a, oc = out_dims[2] == 1 ? 0 : c,
                        od = out_dims[3] == 1 ? 0 : d;
          const auto o = static_cast<size_t>((oa * out_dims[2] + oc) * out_dims[3] + od);
          const float v = x[static_cast<size_t>((a * 5 + c) * 7 + d)];
          sum[o] += v;
          max[o] = std::max(max[o], v);
          ++count[o];
        }
      }
    }
    SCOPED_TRACE(::testing::Message() << "axes bits " << bits);
    const Value mean = RunThree("ReduceMean", 13, {in}, [&](KernelRunner& r) {
      r.IntsAttr("axes", axes).IntAttr("keepdims", 1);
    });
    const Value top = RunThree("ReduceMax", 13, {in}, [&](KernelRunner& r) {
      r.IntsAttr("axes", axes).IntAttr("keepdims", 1);
    });
    EXPECT_EQ(ShapeOf(mean), out_dims);
    const std::vector<float> got_mean = Elements<float>(mean), got_max = Elements<float>(top);
    ASSERT_EQ(got_mean.size(), sum.size());
    for (size_t o = 0; o < sum.size(); ++o) {
      const auto want = static_cast<float>(sum[o] / static_cast<double>(count[o]));
      EXPECT_EQ(std::bit_cast<uint32_t>(got_mean[o]), std::bit_cast<uint32_t>(want)) << o;
      EXPECT_EQ(std::bit_cast<uint32_t>(got_max[o]), std::bit_cast<uint32_t>(max[o])) << o;
    }
  }
}

// More inner positions than the block path keeps accumulators for at once (256): every tile,
// the partial last one included, gives the row-major double sum bit for bit.
TEST(ReduceTest, WideInnerBlocksAreTiled) {
  constexpr int64_t kRows = 4, kWide = 600;
  const std::vector<float> x = RandomUnit(static_cast<size_t>(kRows * kWide), 5);
  const Value mean =
      RunThree("ReduceMean", 13, {Floats({kRows, 1, kWide}, x)},
               [](KernelRunner& r) { r.IntsAttr("axes", {0}).IntAttr("keepdims", 0); });
  EXPECT_EQ(ShapeOf(mean), (std::vector<int64_t>{1, kWide}));
  const std::vector<float> got = Elements<float>(mean);
  ASSERT_EQ(got.size(), static_cast<size_t>(kWide));
  for (int64_t j = 0; j < kWide; ++j) {
    double sum = 0;
    for (int64_t r = 0; r < kRows; ++r) sum += x[static_cast<size_t>(r * kWide + j)];
    const auto want = static_cast<float>(sum / kRows);
    EXPECT_EQ(std::bit_cast<uint32_t>(got[static_cast<size_t>(j)]), std::bit_cast<uint32_t>(want))
        << j;
  }
}

}  // namespace
}  // namespace idem::testing
