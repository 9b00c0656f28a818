// Softmax through KernelRunner: values against a float64 reference for every axis, the pre-13
// coerce-to-2-D semantics (axis default 1) against 13's single axis (default -1), large and
// infinite inputs, shapes (known, unknown, constant), the type sets and bad input.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "src/core/float_convert.h"
#include "src/kernels/fast/simd.h"
#include "tests/kernel_runner.h"
#include "tests/kernel_test_util.h"
#include "tests/status_matchers.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;

Value RunThree(int opset, const Value& x, const std::function<void(KernelRunner&)>& configure) {
  std::vector<Value> results;
  for (int mode = 0; mode < 3; ++mode) {
    KernelRunner r("Softmax", opset);
    configure(r);
    if (mode == 1) r.UnknownShapes();
    if (mode == 2) r.ConstantInput(0);
    auto out = r.Run({x});
    EXPECT_TRUE(out.ok()) << "Softmax-" << opset << " mode " << mode << ": "
                          << out.status().message();
    if (!out.ok()) return Value();
    results.push_back(out.value()[0]);
  }
  for (size_t i = 1; i < results.size(); ++i) {
    EXPECT_EQ(DescribeDifference(results[0], results[i]), std::nullopt) << "mode " << i;
  }
  return results[0];
}

// Reference over x of shape [2, 3, 4]: softmax over the elements sharing every index outside
// `axes` (one axis for 13; the axes from `axis` on for the 2-D coercion).
std::vector<double> Reference(const std::vector<float>& x, const std::vector<bool>& axes) {
  const int dims[3] = {2, 3, 4};
  std::vector<double> out(x.size());
  auto key = [&](int a, int b, int c) {
    return (axes[0] ? 0 : a) * 100 + (axes[1] ? 0 : b) * 10 + (axes[2] ? 0 : c);
  };
  for (int a = 0; a < dims[0]; ++a) {
    for (int b = 0; b < dims[1]; ++b) {
      for (int c = 0; c < dims[2]; ++c) {
        const int k = key(a, b, c);
        double max = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int i = 0; i < 24; ++i) {
          if (key(i / 12, i / 4 % 3, i % 4) == k) max = std::max<double>(max, x[i]);
        }
        for (int i = 0; i < 24; ++i) {
          if (key(i / 12, i / 4 % 3, i % 4) == k) sum += std::exp(x[i] - max);
        }
        const int i = (a * 3 + b) * 4 + c;
        out[static_cast<size_t>(i)] = std::exp(x[static_cast<size_t>(i)] - max) / sum;
      }
    }
  }
  return out;
}

void ExpectClose(const std::vector<float>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_LE(std::abs(actual[i] - expected[i]), 1e-5 + 1e-3 * std::abs(expected[i]))
        << i << ": " << actual[i] << " vs " << expected[i];
  }
}

TEST(SoftmaxTest, EveryAxisAndBothSemantics) {
  const std::vector<float> x = RandomGrid(24, 11);
  const Value in = Floats({2, 3, 4}, x);
  for (int64_t axis = -3; axis < 3; ++axis) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    SCOPED_TRACE(axis);
    // 13: the one axis.
    const std::vector<bool> one = {a == 0, a == 1, a == 2};
    ExpectClose(
        Elements<float>(RunThree(13, in, [&](KernelRunner& r) { r.IntAttr("axis", axis); })),
        Reference(x, one));
    // 1 and 11: the axes from `axis` on, flattened.
    const std::vector<bool> tail = {a <= 0, a <= 1, a <= 2};
    for (int version : {1, 11}) {
      ExpectClose(
          Elements<float>(RunThree(version, in, [&](KernelRunner& r) { r.IntAttr("axis", axis); })),
          Reference(x, tail));
    }
  }
  // Defaults: 1 before 13 (coerce at axis 1: normalizes over 3 x 4), -1 from 13.
  ExpectClose(Elements<float>(RunThree(11, in, [](KernelRunner&) {})),
              Reference(x, {false, true, true}));
  ExpectClose(Elements<float>(RunThree(13, in, [](KernelRunner&) {})),
              Reference(x, {false, false, true}));
}

// The fast float path (reference_kernels off, the normalized axis last): float exp through SLEEF,
// within 4e-7 relative (a few ulp) of the reference's double exp; the same bits on every SIMD
// target; NaN and infinite slices as the reference; other axes run the reference loop.
TEST(SoftmaxTest, FastFloatPathMatchesTheReference) {
  std::vector<float> x = RandomGrid(size_t{7} * 300, 5);
  for (float& v : x) v *= 8.0f;
  x[300 * 2 + 17] = NAN;       // slice 2: all NaN
  x[300 * 4 + 5] = INFINITY;   // slice 4: NaN (inf - inf)
  x[300 * 5 + 9] = -INFINITY;  // slice 5: that element 0
  for (int64_t axis : {-1, 1, 0}) {
    SCOPED_TRACE(axis);
    const Value in = Floats({7, 300}, x);
    auto reference = KernelRunner("Softmax", 13).IntAttr("axis", axis).Reference().Run({in});
    ASSERT_TRUE(reference.ok());
    const std::vector<float> want = Elements<float>((*reference)[0]);
    std::optional<Value> first;
    for (int64_t target : fast::SimdTargets()) {
      fast::ScopedSimdTarget force(target);
      auto got = KernelRunner("Softmax", 13).IntAttr("axis", axis).Run({in});
      ASSERT_TRUE(got.ok());
      if (first) {
        EXPECT_EQ(DescribeDifference(*first, (*got)[0]), std::nullopt)
            << fast::SimdTargetName(target);
      }
      first = (*got)[0];
      const std::vector<float> y = Elements<float>((*got)[0]);
      for (size_t i = 0; i < y.size(); ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(y[i])) << i;
          continue;
        }
        EXPECT_LE(std::abs(y[i] - want[i]), 1e-37 + 4e-7 * std::abs(want[i]))
            << i << ": " << y[i] << " vs " << want[i];
      }
    }
  }
}

TEST(SoftmaxTest, LargeAndInfiniteInputs) {
  // Large values do not overflow (the maximum is subtracted first).
  const Value big = Floats({1, 4}, {10000, 10001, 10002, 10003});
  ExpectClose(Elements<float>(RunThree(13, big, [](KernelRunner&) {})),
              {0.0320586, 0.0871443, 0.2368828, 0.6439142});
  // -inf entries give 0; a slice of only -inf, or with +inf or NaN, is NaN (as numpy).
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Value x = Floats({4, 2}, {-inf, 0, -inf, -inf, inf, 1, nan, 1});
  const auto y = Elements<float>(RunThree(13, x, [](KernelRunner&) {}));
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 1.0f);
  for (size_t i = 2; i < 8; ++i) EXPECT_TRUE(std::isnan(y[i])) << i;
}

TEST(SoftmaxTest, TypesAndShapes) {
  const uint16_t two = FloatToHalf(2.0f), quarter = FloatToHalf(0.25f);
  const Value h = MakeTensorOf<uint16_t>(E::kFloat16, {1, 4}, {two, two, two, two});
  auto rh = KernelRunner("Softmax", 1).Run({h});
  ASSERT_TRUE(rh.ok());
  EXPECT_EQ(Elements<uint16_t>(rh.value()[0]),
            (std::vector<uint16_t>{quarter, quarter, quarter, quarter}));
  const Value bf =
      MakeTensorOf<uint16_t>(E::kBfloat16, {2}, {FloatToBf16(1.0f), FloatToBf16(1.0f)});
  EXPECT_FALSE(KernelRunner("Softmax", 11).Run({bf}).ok());
  auto rb = KernelRunner("Softmax", 13).Run({bf});
  ASSERT_TRUE(rb.ok());
  EXPECT_EQ(Elements<uint16_t>(rb.value()[0]),
            (std::vector<uint16_t>{FloatToBf16(0.5f), FloatToBf16(0.5f)}));
  const Value d = MakeTensorOf<double>(E::kDouble, {3}, {1, 2, 3});
  const auto rd = Elements<double>(KernelRunner("Softmax", 13).Run({d}).value()[0]);
  const double s = std::exp(-2.0) + std::exp(-1.0) + 1.0;
  EXPECT_NEAR(rd[2], 1.0 / s, 1e-15);
  // Empty tensors keep their shape.
  auto e = KernelRunner("Softmax", 13).Run({Floats({0, 3}, {})});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e.value()[0].tensor().element_count(), 0);
  EXPECT_FALSE(KernelRunner("Softmax", 13).Run({MakeTensorOf<int32_t>(E::kInt32, {1}, {1})}).ok());
}

TEST(SoftmaxTest, BadAxisIsRefused) {
  const Value x = Floats({2, 3}, RandomGrid(6, 1));
  for (int version : {1, 11, 13}) {
    EXPECT_STATUS(KernelRunner("Softmax", version).IntAttr("axis", 2).Run({x}),
                  StatusCode::kInvalidArgument, "'axis' 2 is outside [-2, 1]");
    EXPECT_STATUS(KernelRunner("Softmax", version).IntAttr("axis", -3).UnknownShapes().Run({x}),
                  StatusCode::kInvalidArgument, "'axis' -3 is outside");
  }
  // A scalar has no axis.
  EXPECT_STATUS(KernelRunner("Softmax", 13).Run({Floats({}, {1})}), StatusCode::kInvalidArgument,
                "outside");
}

TEST(SoftmaxRegistryTest, EveryVersionMatchesTheSchemas) {
  const auto& r = KernelRegistry::Default();
  std::vector<int> versions;
  for (const KernelSchema* s : r.Versions("", "Softmax")) versions.push_back(s->since_version);
  EXPECT_EQ(versions, (std::vector<int>{1, 11, 13}));
  for (int v : versions) {
    SCOPED_TRACE(v);
    const onnx::OpSchema* theirs = onnx::OpSchemaRegistry::Schema("Softmax", v, "");
    ASSERT_NE(theirs, nullptr);
    EXPECT_EQ(theirs->SinceVersion(), v);
    const KernelSchema* ours = r.Resolve("", "Softmax", v);
    EXPECT_TRUE(ours->foldable);
    EXPECT_EQ(ours->inputs[0].name, theirs->inputs()[0].GetName());
    EXPECT_EQ(ours->outputs[0].name, theirs->outputs()[0].GetName());
    std::set<std::string> ours_t, theirs_t;
    for (const Type& t : ours->FindConstraint("T")->allowed) ours_t.insert(t.ToString());
    for (const auto& s : theirs->typeConstraintParams()[0].allowed_type_strs) theirs_t.insert(s);
    EXPECT_EQ(ours_t, theirs_t);
    std::set<std::string> attrs;
    for (const auto& [name, a] : theirs->attributes()) attrs.insert(name);
    EXPECT_EQ(std::set<std::string>(ours->attributes.begin(), ours->attributes.end()), attrs);
  }
}

}  // namespace
}  // namespace idem::testing
