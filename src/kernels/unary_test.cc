// Neg, Sqrt, Log, Tanh, Sigmoid, Relu, LeakyRelu, HardSigmoid, Clip through KernelRunner: values
// (exact ops bit for bit, transcendental ones against a double reference within ONNX's backend
// tolerances), shapes (known, unknown, constant inputs), every version's type set (the spec's
// tables) and bad inputs.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <set>

#include "src/core/float_convert.h"
#include "src/kernels/fast/simd.h"
#include "tests/kernel_runner.h"
#include "tests/status_matchers.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;

template <class T>
std::vector<T> ValuesOf(const Value& v) {
  auto s = v.tensor().data_as<T>();
  return {s.begin(), s.end()};
}

std::vector<int64_t> ShapeOf(const Value& v) {
  auto s = v.tensor().shape();
  return {s.begin(), s.end()};
}

// Runs op-opset on `inputs` three ways (shapes known, shapes unknown, input 0 a planner
// constant); KernelRunner checks each inferred type against the result. All three must give
// the same bits; returns the first.
Value RunOne(const std::string& op, int opset, const std::vector<Value>& inputs,
             const std::function<void(KernelRunner&)>& configure = {}) {
  std::vector<Value> results;
  for (int mode = 0; mode < 3; ++mode) {
    KernelRunner r(op, opset);
    if (configure) configure(r);
    if (mode == 1) r.UnknownShapes();
    if (mode == 2) r.ConstantInput(0);
    auto out = r.Run(inputs);
    EXPECT_TRUE(out.ok()) << op << "-" << opset << " mode " << mode << ": "
                          << out.status().message();
    if (!out.ok()) return Value();
    results.push_back(out.value()[0]);
  }
  for (size_t i = 1; i < results.size(); ++i) {
    EXPECT_EQ(DescribeDifference(results[0], results[i]), std::nullopt) << op << " mode " << i;
  }
  return results[0];
}

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

// |actual - expected| <= atol + rtol * |expected| (ONNX's backend-test tolerances).
void ExpectClose(const std::vector<float>& actual, const std::vector<double>& expected,
                 double rtol = 1e-3, double atol = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << i;
      continue;
    }
    if (std::isinf(expected[i])) {
      EXPECT_EQ(static_cast<double>(actual[i]), expected[i]) << i;
      continue;
    }
    EXPECT_LE(std::abs(actual[i] - expected[i]), atol + rtol * std::abs(expected[i]))
        << i << ": " << actual[i] << " vs " << expected[i];
  }
}

const std::vector<float> kSamples = {-100.0f, -88.5f, -20.0f, -3.5f, -1.0f, -0.25f, -1e-8f,
                                     0.0f,    1e-8f,  0.125f, 0.5f,  1.0f,  2.75f,  10.0f,
                                     20.0f,   88.5f,  100.0f, 1e30f, -1e30f};

// ---- Registry ---------------------------------------------------------------------------------

std::set<std::string> TypeStrings(const TypeConstraint& c) {
  std::set<std::string> out;
  for (const Type& t : c.allowed) out.insert(t.ToString());
  return out;
}

TEST(UnaryRegistryTest, EverySpecVersionIsRegisteredAndFoldable) {
  // The spec's version tables; versions up to 17 are also checked against libonnx's schemas
  // (parameters, type sets, attributes) by RegistryOracleTest in tests/kernels_test.cc.
  const std::vector<std::pair<const char*, std::vector<int>>> ops = {
      {"Neg", {1, 6, 13}},       {"Sqrt", {1, 6, 13}},        {"Log", {1, 6, 13}},
      {"Tanh", {1, 6, 13}},      {"Sigmoid", {1, 6, 13}},     {"Relu", {1, 6, 13, 14}},
      {"LeakyRelu", {1, 6, 16}}, {"HardSigmoid", {1, 6, 22}}, {"Clip", {1, 6, 11, 12, 13}}};
  const auto& r = KernelRegistry::Default();
  for (const auto& [op, versions] : ops) {
    std::vector<int> ours;
    for (const KernelSchema* s : r.Versions("", op)) {
      ours.push_back(s->since_version);
      EXPECT_TRUE(s->foldable) << s->Name();
    }
    EXPECT_EQ(ours, versions) << op;
  }
  // HardSigmoid-22 (newer than libonnx): the spec adds bfloat16.
  const KernelSchema* hs = r.Resolve("", "HardSigmoid", 22);
  ASSERT_NE(hs, nullptr);
  EXPECT_EQ(hs->since_version, 22);
  EXPECT_EQ(TypeStrings(hs->constraints.at(0)),
            (std::set<std::string>{"tensor(bfloat16)", "tensor(float16)", "tensor(float)",
                                   "tensor(double)"}));
  EXPECT_EQ(r.Resolve("", "HardSigmoid", 21)->since_version, 6);
}

// ---- Neg, Sqrt ----------------------------------------------------------------------------------

TEST(NegTest, FlipsTheSignBitAndWrapsIntegers) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto y = RunOne("Neg", 13, {Floats({2, 2}, {1.5f, -0.0f, 0.0f, nan})});
  EXPECT_EQ(ShapeOf(y), (std::vector<int64_t>{2, 2}));
  auto v = ValuesOf<float>(y);
  EXPECT_EQ(v[0], -1.5f);
  EXPECT_EQ(Bits(v[1]), 0x00000000u);
  EXPECT_EQ(Bits(v[2]), 0x80000000u);
  EXPECT_EQ(Bits(v[3]), Bits(nan) ^ 0x80000000u);  // numpy flips a NaN's sign bit too
  auto i = RunOne("Neg", 6, {MakeTensorOf<int32_t>(E::kInt32, {3}, {INT32_MIN, 7, -7})});
  EXPECT_EQ(ValuesOf<int32_t>(i), (std::vector<int32_t>{INT32_MIN, -7, 7}));
  auto i8 = RunOne("Neg", 13, {MakeTensorOf<int8_t>(E::kInt8, {2}, {-128, 127})});
  EXPECT_EQ(ValuesOf<int8_t>(i8), (std::vector<int8_t>{-128, -127}));
  auto h = RunOne("Neg", 13, {MakeTensorOf<uint16_t>(E::kFloat16, {2}, {0x3C00, 0xFC00})});
  EXPECT_EQ(ValuesOf<uint16_t>(h), (std::vector<uint16_t>{0xBC00, 0x7C00}));
  auto b = RunOne("Neg", 13, {MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0x3F80})});
  EXPECT_EQ(ValuesOf<uint16_t>(b), (std::vector<uint16_t>{0xBF80}));
  // Type sets: integers from Neg-6, bfloat16 from Neg-13, no unsigned ones.
  EXPECT_FALSE(KernelRunner("Neg", 1).Run({MakeTensorOf<int32_t>(E::kInt32, {1}, {1})}).ok());
  EXPECT_FALSE(KernelRunner("Neg", 6).Run({MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0})}).ok());
  EXPECT_FALSE(KernelRunner("Neg", 13).Run({MakeTensorOf<uint8_t>(E::kUint8, {1}, {1})}).ok());
}

TEST(SqrtTest, CorrectlyRoundedAndNaNBelowZero) {
  auto y = RunOne("Sqrt", 13, {Floats({5}, {4.0f, 2.0f, -1.0f, -0.0f, INFINITY})});
  auto v = ValuesOf<float>(y);
  EXPECT_EQ(v[0], 2.0f);
  EXPECT_EQ(v[1], static_cast<float>(std::sqrt(2.0)));  // IEEE sqrt is correctly rounded
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(Bits(v[3]), 0x80000000u);
  EXPECT_EQ(v[4], INFINITY);
  auto d = RunOne("Sqrt", 6, {MakeTensorOf<double>(E::kDouble, {1}, {2.0})});
  EXPECT_EQ(ValuesOf<double>(d)[0], std::sqrt(2.0));
  // float16: computed in float, rounded once (sqrt(2) = 1.4142 -> 0x3DA8).
  auto h = RunOne("Sqrt", 13, {MakeTensorOf<uint16_t>(E::kFloat16, {1}, {0x4000})});
  EXPECT_EQ(ValuesOf<uint16_t>(h)[0], FloatToHalf(std::sqrt(2.0f)));
  EXPECT_EQ(ValuesOf<uint16_t>(h)[0], 0x3DA8);
  EXPECT_FALSE(KernelRunner("Sqrt", 6).Run({MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0})}).ok());
  EXPECT_FALSE(KernelRunner("Sqrt", 13).Run({MakeTensorOf<int32_t>(E::kInt32, {1}, {4})}).ok());
}

// ---- Log, Tanh, Sigmoid: against double within tolerance ----------------------------------------

TEST(TranscendentalTest, WithinOnnxTolerancesOfDouble) {
  std::vector<float> positive;
  positive.reserve(std::size(kSamples));
  for (float x : kSamples) positive.push_back(std::abs(x));
  struct Case {
    const char* op;
    std::vector<float> in;
    double (*reference)(double);
  };
  const std::vector<Case> cases = {
      {"Log", positive, [](double x) { return std::log(x); }},
      {"Tanh", kSamples, [](double x) { return std::tanh(x); }},
      {"Sigmoid", kSamples, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    const int64_t n = static_cast<int64_t>(c.in.size());
    auto y = RunOne(c.op, 13, {Floats({n}, c.in)});
    std::vector<double> expected;
    for (float x : c.in) expected.push_back(c.reference(x));
    ExpectClose(ValuesOf<float>(y), expected);
    // double is computed in double.
    std::vector<double> din(c.in.begin(), c.in.end());
    auto d = RunOne(c.op, 6, {MakeTensorOf<double>(E::kDouble, {n}, din)});
    auto dv = ValuesOf<double>(d);
    for (size_t i = 0; i < din.size(); ++i) {
      if (std::isinf(expected[i])) {
        EXPECT_EQ(dv[i], expected[i]) << i;
        continue;
      }
      EXPECT_NEAR(dv[i], expected[i], 1e-12 * std::max(1.0, std::abs(expected[i]))) << i;
    }
    // float16 and bfloat16 (13): computed in float, rounded once.
    std::vector<uint16_t> h, b;
    for (float x : c.in) {
      h.push_back(FloatToHalf(x));
      b.push_back(FloatToBf16(x));
    }
    auto hy = ValuesOf<uint16_t>(RunOne(c.op, 13, {MakeTensorOf<uint16_t>(E::kFloat16, {n}, h)}));
    auto by = ValuesOf<uint16_t>(RunOne(c.op, 13, {MakeTensorOf<uint16_t>(E::kBfloat16, {n}, b)}));
    for (size_t i = 0; i < h.size(); ++i) {
      const double hx = c.reference(HalfToFloat(h[i]));
      const double bx = c.reference(Bf16ToFloat(b[i]));
      // One rounding to 11 (8) significant bits.
      if (std::isfinite(hx)) {
        EXPECT_LE(std::abs(HalfToFloat(hy[i]) - hx), 1e-7 + std::abs(hx) * 0x1p-11) << i;
      }
      if (std::isfinite(bx)) {
        EXPECT_LE(std::abs(Bf16ToFloat(by[i]) - bx), 1e-38 + std::abs(bx) * 0x1p-8) << i;
      }
    }
    EXPECT_FALSE(
        KernelRunner(c.op, 6).Run({MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0x3F80})}).ok());
  }
}

TEST(TranscendentalTest, EdgeValues) {
  auto log = ValuesOf<float>(RunOne("Log", 13, {Floats({4}, {0.0f, -1.0f, 1.0f, INFINITY})}));
  EXPECT_EQ(log[0], -INFINITY);
  EXPECT_TRUE(std::isnan(log[1]));
  EXPECT_EQ(Bits(log[2]), 0u);
  EXPECT_EQ(log[3], INFINITY);
  // Sigmoid saturates without NaN: exp(-x) overflows to inf for very negative x.
  auto sig = ValuesOf<float>(
      RunOne("Sigmoid", 13, {Floats({4}, {-1000.0f, 1000.0f, -INFINITY, INFINITY})}));
  EXPECT_EQ(sig, (std::vector<float>{0.0f, 1.0f, 0.0f, 1.0f}));
  auto nan = ValuesOf<float>(RunOne("Tanh", 13, {Floats({1}, {NAN})}));
  EXPECT_TRUE(std::isnan(nan[0]));
  auto tanh = ValuesOf<float>(RunOne("Tanh", 13, {Floats({2}, {-INFINITY, 50.0f})}));
  EXPECT_EQ(tanh, (std::vector<float>{-1.0f, 1.0f}));
}

// The fast kernels' float Log, Tanh and Sigmoid (SLEEF, reference_kernels off) against the exact
// result (double std:: calls) rounded once: within 3 ulp (SLEEF's 1 ulp bound, 2.14 measured
// for Sigmoid, plus the reference's half ulp), the same special values, and the same bits on
// every SIMD target of this machine. Inputs: every 4099th float bit pattern in the op's domain,
// both signs, plus edges.
TEST(TranscendentalTest, FastFloatPathsMatchTheReference) {
  std::vector<float> in = {0.0f, -0.0f,  1.0f,  -1.0f,  INFINITY, -INFINITY,
                           NAN,  1e-30f, 88.0f, -88.0f, 20.0f,    -20.0f};
  // NaNs of both signs, quiet and signalling, with payloads.
  for (uint32_t bits : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFA00001u, 0x7FC12345u}) {
    in.push_back(std::bit_cast<float>(bits));
  }
  for (uint32_t bits = 0; bits < 0x7F800000u; bits += 4099) {
    in.push_back(std::bit_cast<float>(bits));
    in.push_back(-std::bit_cast<float>(bits));
  }
  const auto n = static_cast<int64_t>(in.size());
  for (const char* op : {"Log", "Tanh", "Sigmoid"}) {
    SCOPED_TRACE(op);
    // The exact result rounded once (the reference kernel's float Sigmoid flushes to 0 below
    // -88.7, where the fast one still gives the subnormal).
    std::vector<float> want;
    for (float v : in) {
      const double x = v;
      const double exact = std::string(op) == "Log"    ? std::log(x)
                           : std::string(op) == "Tanh" ? std::tanh(x)
                                                       : 1.0 / (1.0 + std::exp(-x));
      want.push_back(static_cast<float>(exact));
    }
    auto reference = KernelRunner(op, 13).Reference().Run({Floats({n}, in)});
    ASSERT_TRUE(reference.ok());
    const std::vector<float> reference_values = ValuesOf<float>((*reference)[0]);
    std::vector<float> first;
    for (int64_t target : fast::SimdTargets()) {
      fast::ScopedSimdTarget force(target);
      auto got = KernelRunner(op, 13).Run({Floats({n}, in)});
      ASSERT_TRUE(got.ok());
      const std::vector<float> y = ValuesOf<float>((*got)[0]);
      // Log and Tanh give the reference's NaN bits: a NaN input quieted, the default NaN for a
      // domain error (Sigmoid's NaN goes through exp(-|x|), whose sign differs by design).
      if (std::string(op) != "Sigmoid") {
        for (size_t i = 0; i < y.size(); ++i) {
          if (!std::isnan(reference_values[i])) continue;
          EXPECT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(reference_values[i]))
              << fast::SimdTargetName(target) << " input bits 0x" << std::hex
              << std::bit_cast<uint32_t>(in[i]);
        }
      }
      if (first.empty()) {
        first = y;
      } else {
        EXPECT_EQ(DescribeDifference((*got)[0], Floats({n}, first)), std::nullopt)
            << fast::SimdTargetName(target);
      }
      int bad = 0;
      for (size_t i = 0; i < y.size() && bad < 5; ++i) {
        if (std::isnan(want[i]) || std::isnan(y[i])) {
          bad += std::isnan(want[i]) != std::isnan(y[i]);
          EXPECT_EQ(std::isnan(want[i]), std::isnan(y[i])) << in[i];
          continue;
        }
        const double ulp =
            std::max(std::abs(static_cast<double>(std::nextafter(want[i], INFINITY)) -
                              static_cast<double>(want[i])),
                     static_cast<double>(std::numeric_limits<float>::denorm_min()));
        const bool ok = std::isinf(want[i])
                            ? y[i] == want[i]
                            : std::abs(static_cast<double>(y[i]) - want[i]) <= 3 * ulp;
        bad += !ok;
        EXPECT_TRUE(ok) << op << "(" << in[i] << ") = " << y[i] << ", reference " << want[i];
      }
    }
  }
}

// ---- Relu, LeakyRelu, HardSigmoid ---------------------------------------------------------------

TEST(ReluTest, NumpyMaximumWithZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto v = ValuesOf<float>(RunOne("Relu", 6, {Floats({5}, {-2.0f, -0.0f, 0.0f, 3.5f, nan})}));
  EXPECT_EQ(Bits(v[0]), 0u);
  EXPECT_EQ(Bits(v[1]), 0u);  // np.maximum(-0.0, 0) is +0
  EXPECT_EQ(Bits(v[2]), 0u);
  EXPECT_EQ(v[3], 3.5f);
  EXPECT_TRUE(std::isnan(v[4]));
  auto i = RunOne("Relu", 14, {MakeTensorOf<int8_t>(E::kInt8, {3}, {-128, 0, 127})});
  EXPECT_EQ(ValuesOf<int8_t>(i), (std::vector<int8_t>{0, 0, 127}));
  auto i64 = RunOne("Relu", 14, {MakeTensorOf<int64_t>(E::kInt64, {2}, {INT64_MIN, 5})});
  EXPECT_EQ(ValuesOf<int64_t>(i64), (std::vector<int64_t>{0, 5}));
  auto h = RunOne("Relu", 13, {MakeTensorOf<uint16_t>(E::kBfloat16, {2}, {0xBF80, 0x3F80})});
  EXPECT_EQ(ValuesOf<uint16_t>(h), (std::vector<uint16_t>{0, 0x3F80}));
  EXPECT_FALSE(KernelRunner("Relu", 13).Run({MakeTensorOf<int32_t>(E::kInt32, {1}, {1})}).ok());
  EXPECT_FALSE(KernelRunner("Relu", 6).Run({MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0})}).ok());
  EXPECT_FALSE(KernelRunner("Relu", 14).Run({MakeTensorOf<uint8_t>(E::kUint8, {1}, {1})}).ok());
}

TEST(LeakyReluTest, AlphaScalesNegatives) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-2.0f, -0.3f, 0.0f, -0.0f, 1.25f, -1e-44f, nan};
  auto v = ValuesOf<float>(RunOne("LeakyRelu", 16, {Floats({7}, x)}));  // alpha 0.01
  EXPECT_EQ(v[0], -2.0f * 0.01f);
  EXPECT_EQ(v[1], -0.3f * 0.01f);
  EXPECT_EQ(Bits(v[2]), 0u);
  // f(x) = x for x >= 0: -0 stays -0 (ONNX Runtime's bits too; numpy's formula gives +0).
  EXPECT_EQ(Bits(v[3]), 0x80000000u);
  EXPECT_EQ(v[4], 1.25f);
  EXPECT_EQ(Bits(v[5]), 0x80000000u);  // -1e-44 * 0.01 underflows to -0, sign kept
  EXPECT_TRUE(std::isnan(v[6]));
  auto a = ValuesOf<float>(RunOne("LeakyRelu", 6, {Floats({2}, {-4.0f, 4.0f})},
                                  [](KernelRunner& r) { r.FloatAttr("alpha", 0.5f); }));
  EXPECT_EQ(a, (std::vector<float>{-2.0f, 4.0f}));
  auto d = RunOne("LeakyRelu", 1, {MakeTensorOf<double>(E::kDouble, {1}, {-3.0})},
                  [](KernelRunner& r) { r.FloatAttr("alpha", 0.1f); });
  EXPECT_EQ(ValuesOf<double>(d)[0], -3.0 * static_cast<double>(0.1f));
  EXPECT_FALSE(
      KernelRunner("LeakyRelu", 6).Run({MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0})}).ok());
  EXPECT_TRUE(
      KernelRunner("LeakyRelu", 16).Run({MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0})}).ok());
}

TEST(HardSigmoidTest, ClipsAlphaXPlusBeta) {
  auto v =
      ValuesOf<float>(RunOne("HardSigmoid", 6, {Floats({5}, {-10.0f, -1.0f, 0.0f, 1.0f, 10.0f})}));
  EXPECT_EQ(Bits(v[0]), 0u);
  EXPECT_EQ(v[1], -1.0f * 0.2f + 0.5f);  // two float roundings, as numpy
  EXPECT_EQ(v[2], 0.5f);
  EXPECT_EQ(v[3], 1.0f * 0.2f + 0.5f);
  EXPECT_EQ(v[4], 1.0f);
  auto a = ValuesOf<float>(
      RunOne("HardSigmoid", 22, {Floats({3}, {-1.0f, 0.0f, 1.0f})},
             [](KernelRunner& r) { r.FloatAttr("alpha", 0.5f).FloatAttr("beta", 0.25f); }));
  EXPECT_EQ(a, (std::vector<float>{0.0f, 0.25f, 0.75f}));
  auto nan = ValuesOf<float>(RunOne("HardSigmoid", 6, {Floats({1}, {NAN})}));
  EXPECT_TRUE(std::isnan(nan[0]));
  EXPECT_FALSE(
      KernelRunner("HardSigmoid", 6).Run({MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0})}).ok());
  EXPECT_TRUE(
      KernelRunner("HardSigmoid", 22).Run({MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0})}).ok());
}

TEST(UnaryAttributesTest, WrongKindsAndUnknownNamesAreRefused) {
  auto x = Floats({1}, {1.0f});
  EXPECT_STATUS(KernelRunner("LeakyRelu", 16).IntAttr("alpha", 1).Run({x}),
                StatusCode::kInvalidModel, "attribute 'alpha' must be a float");
  EXPECT_STATUS(KernelRunner("HardSigmoid", 6).StringAttr("beta", "x").Run({x}),
                StatusCode::kInvalidModel, "attribute 'beta' must be a float");
  EXPECT_STATUS(KernelRunner("Relu", 6).IntsAttr("consumed_inputs", {0}).Run({x}),
                StatusCode::kInvalidModel, "unknown attribute");
  EXPECT_TRUE(KernelRunner("Relu", 1).IntsAttr("consumed_inputs", {0}).Run({x}).ok());
  EXPECT_STATUS(KernelRunner("Clip", 11).FloatAttr("min", 0).Run({x}), StatusCode::kInvalidModel,
                "unknown attribute");
}

// ---- Clip ---------------------------------------------------------------------------------------

TEST(ClipTest, AttributesBeforeOpset11) {
  auto x = Floats({2, 3}, {-5.0f, -1.0f, 0.0f, 0.5f, 2.0f, INFINITY});
  auto y = RunOne("Clip", 6, {x},
                  [](KernelRunner& r) { r.FloatAttr("min", -1.0f).FloatAttr("max", 1.0f); });
  EXPECT_EQ(ShapeOf(y), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ValuesOf<float>(y), (std::vector<float>{-1.0f, -1.0f, 0.0f, 0.5f, 1.0f, 1.0f}));
  // Defaults: numeric_limits<float>::lowest() and max(), so infinities are clipped to them.
  auto d = ValuesOf<float>(RunOne("Clip", 6, {Floats({3}, {-INFINITY, 3.0f, INFINITY})}));
  EXPECT_EQ(d, (std::vector<float>{std::numeric_limits<float>::lowest(), 3.0f,
                                   std::numeric_limits<float>::max()}));
  auto one = ValuesOf<float>(RunOne("Clip", 1, {Floats({2}, {-3.0f, 3.0f})}, [](KernelRunner& r) {
    r.FloatAttr("min", 0.0f).IntsAttr("consumed_inputs", {0});
  }));
  EXPECT_EQ(one, (std::vector<float>{0.0f, 3.0f}));
  EXPECT_STATUS(KernelRunner("Clip", 6).Run({x, Floats({}, {0.0f})}), StatusCode::kInvalidModel,
                "");
  EXPECT_FALSE(KernelRunner("Clip", 11).Run({MakeTensorOf<int32_t>(E::kInt32, {1}, {1})}).ok());
}

TEST(ClipTest, OptionalBoundInputs) {
  auto x = Floats({4}, {-5.0f, 0.0f, 5.0f, NAN});
  auto both = ValuesOf<float>(RunOne("Clip", 11, {x, Floats({}, {-1.0f}), Floats({}, {2.0f})}));
  EXPECT_EQ(both[0], -1.0f);
  EXPECT_EQ(both[1], 0.0f);
  EXPECT_EQ(both[2], 2.0f);
  EXPECT_TRUE(std::isnan(both[3]));  // NaN stays NaN
  // An omitted min (empty name) and an absent max: only one bound.
  auto max_only = ValuesOf<float>(RunOne("Clip", 13, {x, Value(), Floats({}, {1.0f})}));
  EXPECT_EQ(max_only[0], -5.0f);
  EXPECT_EQ(max_only[2], 1.0f);
  auto min_only = ValuesOf<float>(RunOne("Clip", 13, {x, Floats({}, {1.0f})}));
  EXPECT_EQ(min_only[0], 1.0f);
  EXPECT_EQ(min_only[2], 5.0f);
  auto none = ValuesOf<float>(RunOne("Clip", 12, {x}));
  EXPECT_EQ(none[0], -5.0f);
  // min > max: every element becomes max (Clip-13's rule, also ONNX Runtime's for 11 and 12).
  auto crossed = ValuesOf<float>(RunOne("Clip", 13, {x, Floats({}, {3.0f}), Floats({}, {1.0f})}));
  EXPECT_EQ(crossed[0], 1.0f);
  EXPECT_EQ(crossed[1], 1.0f);
  EXPECT_EQ(crossed[2], 1.0f);
  // A NaN bound clips nothing (ONNX Runtime, numpy).
  auto nan_min = ValuesOf<float>(RunOne("Clip", 13, {x, Floats({}, {NAN}), Floats({}, {2.0f})}));
  EXPECT_EQ(nan_min[0], -5.0f);
  EXPECT_EQ(nan_min[2], 2.0f);
  // A one-element vector is taken as ONNX Runtime takes it.
  auto vec = ValuesOf<float>(RunOne("Clip", 13, {x, Floats({1}, {0.0f})}));
  EXPECT_EQ(vec[0], 0.0f);
}

TEST(ClipTest, IntegersAndHalfFloats) {
  auto i8 =
      RunOne("Clip", 12,
             {MakeTensorOf<int8_t>(E::kInt8, {5}, {-128, -5, 0, 5, 127}),
              MakeTensorOf<int8_t>(E::kInt8, {}, {-6}), MakeTensorOf<int8_t>(E::kInt8, {}, {6})});
  EXPECT_EQ(ValuesOf<int8_t>(i8), (std::vector<int8_t>{-6, -5, 0, 5, 6}));
  // Integer defaults are the type's limits.
  auto u64 = RunOne("Clip", 13,
                    {MakeTensorOf<uint64_t>(E::kUint64, {2}, {0, UINT64_MAX}), Value(),
                     MakeTensorOf<uint64_t>(E::kUint64, {}, {UINT64_MAX - 1})});
  EXPECT_EQ(ValuesOf<uint64_t>(u64), (std::vector<uint64_t>{0, UINT64_MAX - 1}));
  // float16: bounds compared exactly; the default bounds are float16's largest finite values.
  auto h = RunOne("Clip", 13,
                  {MakeTensorOf<uint16_t>(E::kFloat16, {3}, {0xFC00, 0x3C00, 0x7C00}),
                   MakeTensorOf<uint16_t>(E::kFloat16, {}, {0x3800})});
  EXPECT_EQ(ValuesOf<uint16_t>(h), (std::vector<uint16_t>{0x3800, 0x3C00, 0x7BFF}));
  auto b = RunOne("Clip", 13, {MakeTensorOf<uint16_t>(E::kBfloat16, {2}, {0xFF80, 0x7F80})});
  EXPECT_EQ(ValuesOf<uint16_t>(b), (std::vector<uint16_t>{0xFF7F, 0x7F7F}));
  // Type sets: integers from 12, bfloat16 from 13.
  EXPECT_FALSE(KernelRunner("Clip", 11).Run({MakeTensorOf<int8_t>(E::kInt8, {1}, {1})}).ok());
  EXPECT_FALSE(KernelRunner("Clip", 12).Run({MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0})}).ok());
}

TEST(ClipTest, BadBounds) {
  auto x = Floats({3}, {1.0f, 2.0f, 3.0f});
  // Known at plan time and at run time (shapes unknown to the planner).
  EXPECT_STATUS(KernelRunner("Clip", 13).Run({x, Floats({2}, {0.0f, 1.0f})}),
                StatusCode::kInvalidArgument, "Clip: min must be a scalar");
  EXPECT_STATUS(KernelRunner("Clip", 13).UnknownShapes().Run({x, Floats({2}, {0.0f, 1.0f})}),
                StatusCode::kInvalidArgument, "Clip: min must be a scalar");
  EXPECT_STATUS(KernelRunner("Clip", 13).UnknownShapes().Run({x, Value(), Floats({0}, {})}),
                StatusCode::kInvalidArgument, "Clip: max must be a scalar");
  EXPECT_STATUS(KernelRunner("Clip", 13).Run({x, Value(), Floats({1, 1}, {1.0f})}),
                StatusCode::kInvalidArgument, "shape [1,1]");
  // Bound of another type than the input.
  EXPECT_STATUS(KernelRunner("Clip", 13).Run({x, MakeTensorOf<double>(E::kDouble, {}, {0.0})}),
                StatusCode::kInvalidModel, "Clip: min is tensor(double)");
}

// ---- Shapes, limits -----------------------------------------------------------------------------

TEST(UnaryShapesTest, KeepsShapesAndSymbols) {
  for (const char* op :
       {"Neg", "Sqrt", "Log", "Tanh", "Sigmoid", "Relu", "LeakyRelu", "HardSigmoid", "Clip"}) {
    SCOPED_TRACE(op);
    auto empty = RunOne(op, 13 + (std::string(op) == "LeakyRelu" ? 3 : 0), {Floats({2, 0, 3}, {})});
    EXPECT_EQ(ShapeOf(empty), (std::vector<int64_t>{2, 0, 3}));
    auto scalar = RunOne(op, 13 + (std::string(op) == "LeakyRelu" ? 3 : 0), {Floats({}, {0.5f})});
    EXPECT_EQ(ShapeOf(scalar), std::vector<int64_t>{});
    KernelRunner r(op, 13);
    ASSERT_TRUE(r.UnknownShapes().Run({Floats({2}, {1, 2})}).ok());
    EXPECT_FALSE(r.inferred()[0].shape().has_value());  // rank unknown in, unknown out
  }
}

TEST(UnaryLimitsTest, OutputCheckedBeforeAllocating) {
  Limits limits;
  limits.max_tensor_bytes = 64;
  std::vector<float> big(32, 1.0f);  // 128 bytes out
  for (const char* op : {"Neg", "Relu", "Sigmoid", "Clip"}) {
    EXPECT_STATUS(KernelRunner(op, 13).WithLimits(limits).Run({Floats({32}, big)}),
                  StatusCode::kResourceExhausted, "")
        << op;
  }
}

}  // namespace
}  // namespace idem::testing
