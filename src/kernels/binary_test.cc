// Add, Sub, Mul, Div, Pow, Max, Equal, GreaterOrEqual through KernelRunner: values bit for bit
// (Pow against a double reference), broadcasting (numpy and the legacy broadcast/axis rule),
// shapes known, unknown and symbolic, every version's type set (the spec's tables) and bad inputs.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
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

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

Value I32(std::vector<int64_t> shape, std::vector<int32_t> v) {
  return MakeTensorOf<int32_t>(E::kInt32, std::move(shape), std::move(v));
}
Value I64(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return MakeTensorOf<int64_t>(E::kInt64, std::move(shape), std::move(v));
}
Value Bools(std::vector<int64_t> shape, std::vector<uint8_t> v) {
  return MakeTensorOf<uint8_t>(E::kBool, std::move(shape), std::move(v));
}

// Runs op-opset four ways (shapes known, shapes unknown, input 0 and input 1 planner constants);
// KernelRunner checks each inferred type against the result. All must give the same bits;
// returns the first.
Value RunOne(const std::string& op, int opset, const std::vector<Value>& inputs,
             const std::function<void(KernelRunner&)>& configure = {}) {
  std::vector<Value> results;
  for (int mode = 0; mode < 4; ++mode) {
    KernelRunner r(op, opset);
    if (configure) configure(r);
    if (mode == 1) r.UnknownShapes();
    if (mode >= 2) r.ConstantInput(static_cast<size_t>(mode - 2));
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

// ---- Registry -----------------------------------------------------------------------------------

std::set<std::string> TypeStrings(const TypeConstraint& c) {
  std::set<std::string> out;
  for (const Type& t : c.allowed) out.insert(t.ToString());
  return out;
}

TEST(BinaryRegistryTest, EverySpecVersionIsRegisteredAndFoldable) {
  // The spec's version tables; versions up to 17 are also checked against libonnx's schemas
  // (parameters, type sets, attributes) by RegistryOracleTest in tests/kernels_test.cc.
  const std::vector<std::pair<const char*, std::vector<int>>> ops = {
      {"Add", {1, 6, 7, 13, 14}},    {"Sub", {1, 6, 7, 13, 14}},  {"Mul", {1, 6, 7, 13, 14}},
      {"Div", {1, 6, 7, 13, 14}},    {"Pow", {1, 7, 12, 13, 15}}, {"Max", {1, 6, 8, 12, 13}},
      {"Equal", {1, 7, 11, 13, 19}}, {"GreaterOrEqual", {12, 16}}};
  const auto& r = KernelRegistry::Default();
  for (const auto& [op, versions] : ops) {
    std::vector<int> ours;
    for (const KernelSchema* s : r.Versions("", op)) {
      ours.push_back(s->since_version);
      EXPECT_TRUE(s->foldable) << s->Name();
    }
    EXPECT_EQ(ours, versions) << op;
  }
  // Equal-19 (newer than libonnx): the spec adds string.
  const KernelSchema* eq = r.Resolve("", "Equal", 19);
  ASSERT_NE(eq, nullptr);
  EXPECT_EQ(eq->since_version, 19);
  std::set<std::string> types = TypeStrings(*r.Resolve("", "Equal", 13)->FindConstraint("T"));
  types.insert("tensor(string)");
  EXPECT_EQ(TypeStrings(*eq->FindConstraint("T")), types);
  EXPECT_EQ(r.Resolve("", "Equal", 18)->since_version, 13);
}

// ---- Add, Sub, Mul, Div -------------------------------------------------------------------------

TEST(ArithTest, NumpyBroadcasting) {
  // [2,1] with [3] -> [2,3]; each output element reads a[i] and b[j].
  auto a = Floats({2, 1}, {10.0f, 20.0f});
  auto b = Floats({3}, {1.0f, 2.0f, 4.0f});
  auto add = RunOne("Add", 14, {a, b});
  EXPECT_EQ(ShapeOf(add), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Elements<float>(add), (std::vector<float>{11, 12, 14, 21, 22, 24}));
  EXPECT_EQ(Elements<float>(RunOne("Sub", 14, {a, b})), (std::vector<float>{9, 8, 6, 19, 18, 16}));
  EXPECT_EQ(Elements<float>(RunOne("Mul", 13, {a, b})),
            (std::vector<float>{10, 20, 40, 20, 40, 80}));
  EXPECT_EQ(Elements<float>(RunOne("Div", 7, {a, b})), (std::vector<float>{10, 5, 2.5, 20, 10, 5}));
  // B first: [3] with [2,1].
  EXPECT_EQ(Elements<float>(RunOne("Sub", 7, {b, a})),
            (std::vector<float>{-9, -8, -6, -19, -18, -16}));
  // Scalars and empty dims.
  EXPECT_EQ(ShapeOf(RunOne("Mul", 14, {Floats({}, {2.0f}), Floats({}, {3.0f})})),
            std::vector<int64_t>{});
  EXPECT_EQ(ShapeOf(RunOne("Mul", 14, {Floats({0, 3}, {}), Floats({1}, {3.0f})})),
            (std::vector<int64_t>{0, 3}));
  // Middle-dim broadcasting: [2,1,2] with [1,3,1].
  auto m = RunOne("Add", 14, {Floats({2, 1, 2}, {0, 1, 2, 3}), Floats({1, 3, 1}, {10, 20, 30})});
  EXPECT_EQ(ShapeOf(m), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(Elements<float>(m),
            (std::vector<float>{10, 11, 20, 21, 30, 31, 12, 13, 22, 23, 32, 33}));
  EXPECT_STATUS(KernelRunner("Mul", 14).Run({Floats({2, 2}, {1, 2, 3, 4}), b}),
                StatusCode::kInvalidArgument, "cannot be broadcast");
  EXPECT_STATUS(KernelRunner("Mul", 14).UnknownShapes().Run({Floats({2, 2}, {1, 2, 3, 4}), b}),
                StatusCode::kInvalidArgument, "cannot be broadcast");
}

TEST(ArithTest, FloatEdgeValuesAreIeee) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto d = Elements<float>(RunOne(
      "Div", 14, {Floats({4}, {1.0f, -1.0f, 0.0f, 1.0f}), Floats({4}, {0.0f, 0.0f, 0.0f, -0.0f})}));
  EXPECT_EQ(d[0], INFINITY);
  EXPECT_EQ(d[1], -INFINITY);
  EXPECT_TRUE(std::isnan(d[2]));
  EXPECT_EQ(d[3], -INFINITY);
  auto s = Elements<float>(
      RunOne("Sub", 14, {Floats({3}, {0.0f, INFINITY, 1.0f}), Floats({3}, {0.0f, INFINITY, nan})}));
  EXPECT_EQ(Bits(s[0]), 0u);  // 0 - 0 = +0
  EXPECT_TRUE(std::isnan(s[1]));
  EXPECT_TRUE(std::isnan(s[2]));
  // Products and quotients round once in float: 1/3 is the float nearest it.
  auto q = Elements<float>(RunOne("Div", 14, {Floats({1}, {1.0f}), Floats({1}, {3.0f})}));
  EXPECT_EQ(q[0], 1.0f / 3.0f);
  EXPECT_EQ(static_cast<double>(q[0]), static_cast<double>(static_cast<float>(1.0 / 3.0)));
  auto dd = RunOne(
      "Div", 7,
      {MakeTensorOf<double>(E::kDouble, {1}, {1.0}), MakeTensorOf<double>(E::kDouble, {1}, {3.0})});
  EXPECT_EQ(Elements<double>(dd)[0], 1.0 / 3.0);
}

TEST(ArithTest, HalfFloatsRoundOncePerResult) {
  // float16 1.0 * (1 + 2^-10) * ... : (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 rounds to 1 + 2^-9.
  auto h = RunOne("Mul", 14,
                  {MakeTensorOf<uint16_t>(E::kFloat16, {2}, {0x3C01, 0x7BFF}),
                   MakeTensorOf<uint16_t>(E::kFloat16, {2}, {0x3C01, 0x4000})});
  EXPECT_EQ(Elements<uint16_t>(h), (std::vector<uint16_t>{0x3C02, 0x7C00}));  // overflow: inf
  // 1 / 3 in float16: 0x3555 (0.33325); in bfloat16: 0x3EAB.
  auto hd = RunOne("Div", 14,
                   {MakeTensorOf<uint16_t>(E::kFloat16, {1}, {0x3C00}),
                    MakeTensorOf<uint16_t>(E::kFloat16, {1}, {0x4200})});
  EXPECT_EQ(Elements<uint16_t>(hd)[0], FloatToHalf(1.0f / 3.0f));
  EXPECT_EQ(Elements<uint16_t>(hd)[0], 0x3555);
  auto bd = RunOne("Div", 13,
                   {MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0x3F80}),
                    MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0x4040})});
  EXPECT_EQ(Elements<uint16_t>(bd)[0], 0x3EAB);
  auto bs = RunOne("Sub", 13,
                   {MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0x3F80}),
                    MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0x3B80})});
  EXPECT_EQ(Elements<uint16_t>(bs)[0], 0x3F7F);  // 1 - 2^-8 is exact in bfloat16
}

TEST(ArithTest, IntegersWrap) {
  auto m = RunOne("Mul", 7, {I32({3}, {1 << 30, INT32_MIN, 46341}), I32({3}, {4, -1, 46341})});
  EXPECT_EQ(Elements<int32_t>(m),
            (std::vector<int32_t>{0, INT32_MIN, static_cast<int32_t>(46341u * 46341u)}));
  // uint16 * uint16 would overflow int (the promoted type) in C++: computed unsigned.
  auto u16 = RunOne("Mul", 14,
                    {MakeTensorOf<uint16_t>(E::kUint16, {1}, {65535}),
                     MakeTensorOf<uint16_t>(E::kUint16, {1}, {65535})});
  EXPECT_EQ(Elements<uint16_t>(u16)[0], 1);
  auto u8 = RunOne("Sub", 14,
                   {MakeTensorOf<uint8_t>(E::kUint8, {2}, {1, 200}),
                    MakeTensorOf<uint8_t>(E::kUint8, {2}, {2, 100})});
  EXPECT_EQ(Elements<uint8_t>(u8), (std::vector<uint8_t>{255, 100}));
  auto i64 = RunOne("Sub", 13, {I64({1}, {INT64_MIN}), I64({1}, {1})});
  EXPECT_EQ(Elements<int64_t>(i64)[0], INT64_MAX);
  auto i8 = RunOne(
      "Add", 14,
      {MakeTensorOf<int8_t>(E::kInt8, {1}, {127}), MakeTensorOf<int8_t>(E::kInt8, {1}, {1})});
  EXPECT_EQ(Elements<int8_t>(i8)[0], -128);
  auto u64 = RunOne("Mul", 13,
                    {MakeTensorOf<uint64_t>(E::kUint64, {1}, {UINT64_MAX}),
                     MakeTensorOf<uint64_t>(E::kUint64, {1}, {UINT64_MAX})});
  EXPECT_EQ(Elements<uint64_t>(u64)[0], 1u);
}

TEST(ArithTest, IntegerDivisionTruncatesAndRefusesZero) {
  auto d = RunOne("Div", 14, {I32({5}, {7, -7, 7, -7, INT32_MIN}), I32({5}, {2, 2, -2, -2, -1})});
  EXPECT_EQ(Elements<int32_t>(d), (std::vector<int32_t>{3, -3, -3, 3, INT32_MIN}));
  auto d8 = RunOne("Div", 14,
                   {MakeTensorOf<int8_t>(E::kInt8, {2}, {-128, -128}),
                    MakeTensorOf<int8_t>(E::kInt8, {2}, {-1, 3})});
  EXPECT_EQ(Elements<int8_t>(d8), (std::vector<int8_t>{-128, -42}));
  auto d64 = RunOne("Div", 7, {I64({1}, {INT64_MIN}), I64({}, {-1})});
  EXPECT_EQ(Elements<int64_t>(d64)[0], INT64_MIN);
  auto u = RunOne(
      "Div", 14,
      {MakeTensorOf<uint8_t>(E::kUint8, {2}, {255, 7}), MakeTensorOf<uint8_t>(E::kUint8, {}, {2})});
  EXPECT_EQ(Elements<uint8_t>(u), (std::vector<uint8_t>{127, 3}));
  // Integer division by zero: an error, as ONNX Runtime gives (never a trap).
  EXPECT_STATUS(KernelRunner("Div", 14).Run({I32({2}, {1, 2}), I32({2}, {1, 0})}),
                StatusCode::kInvalidArgument, "integer division by zero");
  EXPECT_STATUS(KernelRunner("Div", 14).Run({MakeTensorOf<uint64_t>(E::kUint64, {1}, {1}),
                                             MakeTensorOf<uint64_t>(E::kUint64, {}, {0})}),
                StatusCode::kInvalidArgument, "integer division by zero");
}

TEST(ArithTest, TypeSetsPerVersion) {
  auto u8 = MakeTensorOf<uint8_t>(E::kUint8, {1}, {1});
  auto bf = MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0x3F80});
  auto i32 = I32({1}, {1});
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    SCOPED_TRACE(op);
    EXPECT_FALSE(KernelRunner(op, 13).Run({u8, u8}).ok());
    EXPECT_TRUE(KernelRunner(op, 14).Run({u8, u8}).ok());
    EXPECT_FALSE(KernelRunner(op, 7).Run({bf, bf}).ok());
    EXPECT_TRUE(KernelRunner(op, 13).Run({bf, bf}).ok());
    EXPECT_FALSE(KernelRunner(op, 1).Run({i32, i32}).ok());
    EXPECT_TRUE(KernelRunner(op, 6).Run({i32, i32}).ok());
    EXPECT_STATUS(KernelRunner(op, 14).Run({i32, I64({1}, {1})}), StatusCode::kInvalidModel,
                  "both must have one type");
    EXPECT_FALSE(KernelRunner(op, 14).Run({i32}).ok());
  }
}

// ---- Legacy broadcasting (versions 1 and 6) -----------------------------------------------------

Value Iota(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>(i));
  return Floats(std::move(shape), v);
}

TEST(LegacyBroadcastTest, SuffixAxisAndOneElement) {
  auto a = Iota({2, 3, 4});
  auto bcast = [](int64_t axis) {
    return [axis](KernelRunner& r) {
      r.IntAttr("broadcast", 1);
      if (axis >= -10) r.IntAttr("axis", axis);
    };
  };
  // Suffix: B [4] matches A's last dim.
  auto s = RunOne("Add", 6, {a, Floats({4}, {100, 200, 300, 400})}, bcast(-100));
  EXPECT_EQ(ShapeOf(s), (std::vector<int64_t>{2, 3, 4}));
  auto sv = Elements<float>(s);
  EXPECT_EQ(sv[0], 100);
  EXPECT_EQ(sv[5], 205);
  EXPECT_EQ(sv[23], 423);
  // axis=1: B [3] along A's dim 1.
  auto m = Elements<float>(RunOne("Mul", 6, {a, Floats({3}, {1, 10, 100})}, bcast(1)));
  EXPECT_EQ(m[3], 3);      // [0,0,3] * 1
  EXPECT_EQ(m[4], 40);     // [0,1,0] * 10
  EXPECT_EQ(m[23], 2300);  // [1,2,3] * 100
  // axis=0 with B [2, 3].
  auto z = Elements<float>(RunOne("Sub", 1, {a, Floats({2, 3}, {0, 1, 2, 3, 4, 5})}, bcast(0)));
  EXPECT_EQ(z[4], 3);    // 4 - B[0,1]
  EXPECT_EQ(z[23], 18);  // 23 - B[1,2]
  // A negative axis counts from A's end.
  auto n = Elements<float>(RunOne("Div", 6, {a, Floats({3}, {1, 2, 4})}, bcast(-2)));
  EXPECT_EQ(n[23], 23.0f / 4.0f);
  // One element of any rank up to A's: a [1,1] B.
  auto one = Elements<float>(RunOne("Add", 6, {a, Floats({1, 1}, {0.5f})}, bcast(-100)));
  EXPECT_EQ(one[7], 7.5f);
  // broadcast=0: shapes must be equal.
  auto same = Elements<float>(RunOne("Add", 6, {Floats({2}, {1, 2}), Floats({2}, {3, 4})}));
  EXPECT_EQ(same, (std::vector<float>{4, 6}));
  // Pow-1 and Equal-1 follow the same rule.
  auto p = Elements<float>(
      RunOne("Pow", 1, {Floats({2, 2}, {1, 2, 3, 4}), Floats({2}, {2, 1})}, bcast(-100)));
  EXPECT_EQ(p, (std::vector<float>{1, 2, 9, 4}));
  auto e = Elements<uint8_t>(
      RunOne("Equal", 1, {I32({2, 2}, {1, 2, 3, 4}), I32({2}, {1, 3})}, bcast(0)));
  EXPECT_EQ(e, (std::vector<uint8_t>{1, 0, 1, 0}));
}

TEST(LegacyBroadcastTest, BadShapesAndAttributes) {
  auto a = Iota({2, 3, 4});
  auto with = [](int64_t broadcast, std::optional<int64_t> axis) {
    KernelRunner r("Add", 6);
    r.IntAttr("broadcast", broadcast);
    if (axis) r.IntAttr("axis", *axis);
    return r;
  };
  // broadcast=0 needs equal shapes (numpy broadcasting is opset 7's).
  EXPECT_STATUS(with(0, std::nullopt).Run({a, Floats({4}, {1, 2, 3, 4})}),
                StatusCode::kInvalidArgument, "with broadcast=0");
  EXPECT_STATUS(KernelRunner("Add", 1).Run({Floats({2}, {1, 2}), Floats({1}, {1})}),
                StatusCode::kInvalidArgument, "B's shape must be A's");
  // A 1 in B does not stretch unless B has one element.
  EXPECT_STATUS(with(1, std::nullopt).Run({a, Floats({3, 1}, {1, 2, 3})}),
                StatusCode::kInvalidArgument, "must equal A's dims from axis 1");
  EXPECT_STATUS(with(1, 0).Run({a, Floats({4}, {1, 2, 3, 4})}), StatusCode::kInvalidArgument,
                "from axis 0");
  EXPECT_STATUS(with(1, 2).Run({a, Floats({3, 4}, std::vector<float>(12, 1))}),
                StatusCode::kInvalidArgument, "axis 2 puts B's 2 dims outside A's 3");
  EXPECT_STATUS(with(1, -4).Run({a, Floats({4}, {1, 2, 3, 4})}), StatusCode::kInvalidArgument,
                "axis -4");
  EXPECT_STATUS(with(1, std::nullopt).Run({Floats({2}, {1, 2}), Floats({1, 2}, {1, 2})}),
                StatusCode::kInvalidArgument, "B's rank must not exceed A's");
  EXPECT_STATUS(with(2, std::nullopt).Run({a, a}), StatusCode::kInvalidModel,
                "attribute 'broadcast' is 2");
  // The same at run time when the planner does not know the shapes.
  EXPECT_STATUS(with(1, std::nullopt).UnknownShapes().Run({a, Floats({3, 1}, {1, 2, 3})}),
                StatusCode::kInvalidArgument, "must equal A's dims");
  // The numpy versions take no broadcast attribute.
  EXPECT_STATUS(KernelRunner("Add", 7).IntAttr("broadcast", 1).Run({a, a}),
                StatusCode::kInvalidModel, "unknown attribute");
}

// ---- Pow ----------------------------------------------------------------------------------------

TEST(PowTest, FloatsAgainstDouble) {
  const std::vector<float> x = {2.0f, 0.5f, 10.0f, 3.3f, -2.0f, -8.0f, 0.0f, 0.0f, 1.0f, 7.5f};
  const std::vector<float> y = {10.0f, -3.0f, 0.5f, 2.2f, 3.0f, 1.0f / 3, -1.0f, 0.0f, NAN, -0.7f};
  auto z = Elements<float>(RunOne("Pow", 15, {Floats({10}, x), Floats({10}, y)}));
  for (size_t i = 0; i < x.size(); ++i) {
    const double expected = std::pow(static_cast<double>(x[i]), static_cast<double>(y[i]));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(z[i])) << i;
    } else if (std::isinf(expected)) {
      EXPECT_EQ(static_cast<double>(z[i]), expected) << i;
    } else {
      EXPECT_LE(std::abs(z[i] - expected), 1e-5 + 1e-3 * std::abs(expected)) << i;
    }
  }
  EXPECT_EQ(z[0], 1024.0f);
  EXPECT_EQ(z[4], -8.0f);
  EXPECT_EQ(z[7], 1.0f);  // 0^0
  EXPECT_EQ(z[8], 1.0f);  // 1^NaN
  // Float base, integer exponent (computed in double): exact small powers.
  auto fi = Elements<float>(
      RunOne("Pow", 12, {Floats({4}, {2.0f, -3.0f, 0.5f, 0.0f}), I64({4}, {3, 3, -2, -1})}));
  EXPECT_EQ(fi, (std::vector<float>{8.0f, -27.0f, 4.0f, INFINITY}));
  auto fu = Elements<float>(
      RunOne("Pow", 12, {Floats({1}, {2.0f}), MakeTensorOf<uint32_t>(E::kUint32, {1}, {20})}));
  EXPECT_EQ(fu[0], 1048576.0f);
  // float16 base.
  auto h = RunOne("Pow", 13,
                  {MakeTensorOf<uint16_t>(E::kFloat16, {1}, {0x4000}),
                   MakeTensorOf<uint16_t>(E::kFloat16, {1}, {0x4200})});
  EXPECT_EQ(Elements<uint16_t>(h)[0], 0x4800);  // 2^3 = 8
  auto d = RunOne(
      "Pow", 7,
      {MakeTensorOf<double>(E::kDouble, {1}, {2.0}), MakeTensorOf<double>(E::kDouble, {1}, {0.5})});
  EXPECT_EQ(Elements<double>(d)[0], std::sqrt(2.0));
}

// The fast kernels square a float by a constant exponent 2 (float or integer, of one element):
// x * x, one rounding; within an ulp of the reference kernel's std::pow.
TEST(PowTest, ConstantExponentTwoSquares) {
  std::vector<float> x = {0.0f, -0.0f, 1.5f, -3.25f, 1e20f, -1e-20f, INFINITY, -INFINITY, NAN};
  for (int i = 0; i < 200; ++i)
    x.push_back(std::ldexp(static_cast<float>(i) * 0.37f - 37.0f, i % 9 - 4));
  const auto n = static_cast<int64_t>(x.size());
  for (const Value& two : {Floats({}, {2.0f}), Floats({1}, {2.0f}), I64({}, {2})}) {
    auto fast = KernelRunner("Pow", 15).ConstantInput(1).Run({Floats({n}, x), two});
    auto reference =
        KernelRunner("Pow", 15).ConstantInput(1).Reference().Run({Floats({n}, x), two});
    ASSERT_TRUE(fast.ok() && reference.ok());
    const auto f = Elements<float>((*fast)[0]);
    const auto r = Elements<float>((*reference)[0]);
    for (size_t i = 0; i < x.size(); ++i) {
      const float square = x[i] * x[i];
      if (std::isnan(square)) {
        EXPECT_TRUE(std::isnan(f[i])) << i;
        continue;
      }
      EXPECT_EQ(std::bit_cast<uint32_t>(f[i]), std::bit_cast<uint32_t>(square)) << i;
      if (std::isinf(square)) {
        EXPECT_EQ(r[i], square) << i;
        continue;
      }
      EXPECT_LE(std::abs(static_cast<double>(f[i]) - r[i]),
                std::abs(static_cast<double>(std::nextafter(r[i], INFINITY)) - r[i]))
          << i;
    }
  }
  // Another constant exponent, or a fed one, runs std::pow.
  auto cube =
      KernelRunner("Pow", 15).ConstantInput(1).Run({Floats({1}, {1.1f}), Floats({}, {3.0f})});
  ASSERT_TRUE(cube.ok());
  EXPECT_EQ(Elements<float>((*cube)[0])[0], std::pow(1.1f, 3.0f));
}

TEST(PowTest, IntegerBases) {
  // Integer exponents: exact, wrapping; negative exponents truncate (0^-n: the minimum, as
  // ONNX Runtime gives on x86-64).
  auto z = RunOne(
      "Pow", 12,
      {I32({9}, {2, 3, -2, 2, 2, 2, 1, -1, 0}), I32({9}, {10, 19, 3, 31, 32, -1, -5, -3, -1})});
  EXPECT_EQ(Elements<int32_t>(z),
            (std::vector<int32_t>{1024, 1162261467, -8, INT32_MIN, 0, 0, 1, -1, INT32_MIN}));
  auto big = RunOne("Pow", 13, {I64({2}, {3, 7}), I64({2}, {39, 0})});
  EXPECT_EQ(Elements<int64_t>(big), (std::vector<int64_t>{4052555153018976267, 1}));
  auto wrap = RunOne("Pow", 13, {I64({1}, {3}), MakeTensorOf<uint8_t>(E::kUint8, {1}, {41})});
  // 3^41 mod 2^64, as int64 (numpy's wrapping integer power).
  uint64_t expected = 1;
  for (int i = 0; i < 41; ++i) expected *= 3;
  EXPECT_EQ(Elements<int64_t>(wrap)[0], static_cast<int64_t>(expected));
  // Floating exponents: pow in double, truncated; NaN and out of range give the minimum (what
  // ONNX Runtime gives on x86-64).
  auto f = RunOne("Pow", 12,
                  {I32({5}, {2, 3, -2, 5, 10}), Floats({5}, {0.5f, 2.7f, 1.5f, -1.0f, 10.0f})});
  EXPECT_EQ(Elements<int32_t>(f), (std::vector<int32_t>{1, 19, INT32_MIN, 0, INT32_MIN}));
  // Type sets: integer bases from 12, bfloat16 exponents from 15.
  auto bf = MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0x3F80});
  EXPECT_FALSE(KernelRunner("Pow", 7).Run({I32({1}, {2}), I32({1}, {2})}).ok());
  EXPECT_FALSE(KernelRunner("Pow", 7).Run({Floats({1}, {2}), I32({1}, {2})}).ok());
  EXPECT_FALSE(KernelRunner("Pow", 13).Run({Floats({1}, {2}), bf}).ok());
  EXPECT_TRUE(KernelRunner("Pow", 15).Run({Floats({1}, {2}), bf}).ok());
  EXPECT_FALSE(KernelRunner("Pow", 15)
                   .Run({MakeTensorOf<uint8_t>(E::kUint8, {1}, {2}), I32({1}, {2})})
                   .ok());
  EXPECT_STATUS(
      KernelRunner("Pow", 7).Run({Floats({1}, {2}), MakeTensorOf<double>(E::kDouble, {1}, {2})}),
      StatusCode::kInvalidModel, "both must have one type");
}

// ---- Max ----------------------------------------------------------------------------------------

TEST(MaxTest, VariadicBroadcasting) {
  auto a = Floats({3}, {1.0f, 5.0f, -1.0f});
  auto b = Floats({2, 1}, {0.0f, 4.0f});
  auto c = Floats({}, {2.0f});
  auto m = RunOne("Max", 13, {a, b, c});
  EXPECT_EQ(ShapeOf(m), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Elements<float>(m), (std::vector<float>{2, 5, 2, 4, 5, 4}));
  auto one = RunOne("Max", 8, {a});
  EXPECT_EQ(Elements<float>(one), (std::vector<float>{1, 5, -1}));
  auto i = RunOne("Max", 12, {I32({2}, {1, 5}), I32({1}, {3}), I32({2, 1}, {0, 9})});
  EXPECT_EQ(Elements<int32_t>(i), (std::vector<int32_t>{3, 5, 9, 9}));
  auto u = RunOne("Max", 13,
                  {MakeTensorOf<uint64_t>(E::kUint64, {2}, {UINT64_MAX, 1}),
                   MakeTensorOf<uint64_t>(E::kUint64, {2}, {0, 2})});
  EXPECT_EQ(Elements<uint64_t>(u), (std::vector<uint64_t>{UINT64_MAX, 2}));
  EXPECT_STATUS(KernelRunner("Max", 13).Run({a, Floats({2}, {1, 2})}), StatusCode::kInvalidArgument,
                "cannot be broadcast");
}

TEST(MaxTest, NumpyMaximumNaNAndZeros) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto m = Elements<float>(RunOne(
      "Max", 13, {Floats({4}, {nan, 1.0f, -0.0f, 0.0f}), Floats({4}, {1.0f, nan, 0.0f, -0.0f})}));
  EXPECT_TRUE(std::isnan(m[0]));
  EXPECT_TRUE(std::isnan(m[1]));
  EXPECT_EQ(Bits(m[2]), 0x00000000u);  // equal: the second, as np.maximum
  EXPECT_EQ(Bits(m[3]), 0x80000000u);
  auto h = RunOne("Max", 13,
                  {MakeTensorOf<uint16_t>(E::kBfloat16, {2}, {0x3F80, 0xBF80}),
                   MakeTensorOf<uint16_t>(E::kBfloat16, {2}, {0x4000, 0xC000})});
  EXPECT_EQ(Elements<uint16_t>(h), (std::vector<uint16_t>{0x4000, 0xBF80}));
}

TEST(MaxTest, OldVersionsNeedOneShapeAndFloats) {
  auto a = Floats({2}, {1.0f, 5.0f});
  EXPECT_EQ(Elements<float>(RunOne("Max", 6, {a, Floats({2}, {3.0f, 4.0f})})),
            (std::vector<float>{3, 5}));
  EXPECT_STATUS(KernelRunner("Max", 6).Run({a, Floats({1}, {3.0f})}), StatusCode::kInvalidArgument,
                "Max before opset 8 needs inputs of one shape");
  EXPECT_STATUS(KernelRunner("Max", 6).UnknownShapes().Run({a, Floats({2, 1}, {3.0f, 1.0f})}),
                StatusCode::kInvalidArgument, "one shape");
  EXPECT_TRUE(KernelRunner("Max", 1).IntsAttr("consumed_inputs", {0}).Run({a, a}).ok());
  EXPECT_FALSE(KernelRunner("Max", 8).Run({I32({1}, {1}), I32({1}, {2})}).ok());
  EXPECT_FALSE(KernelRunner("Max", 12).Run({MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0})}).ok());
  EXPECT_STATUS(KernelRunner("Max", 13).Run({a, MakeTensorOf<double>(E::kDouble, {2}, {1, 2})}),
                StatusCode::kInvalidModel, "all must have one type");
  EXPECT_STATUS(KernelRunner("Max", 13).Run({}), StatusCode::kInvalidModel, "at least one");
}

// ---- Equal, GreaterOrEqual ----------------------------------------------------------------------

TEST(CompareTest, EqualAndGreaterOrEqual) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = Floats({5}, {nan, -0.0f, 1.0f, 2.0f, -INFINITY});
  auto y = Floats({5}, {nan, 0.0f, 2.0f, 1.0f, -INFINITY});
  auto eq = RunOne("Equal", 13, {x, y});
  EXPECT_EQ(eq.tensor().element_type(), E::kBool);
  EXPECT_EQ(Elements<uint8_t>(eq), (std::vector<uint8_t>{0, 1, 0, 0, 1}));
  EXPECT_EQ(Elements<uint8_t>(RunOne("GreaterOrEqual", 12, {x, y})),
            (std::vector<uint8_t>{0, 1, 0, 1, 1}));
  // Broadcasting, integers, bool.
  auto ib = RunOne("Equal", 7, {I64({2, 1}, {1, 2}), I64({3}, {1, 2, 3})});
  EXPECT_EQ(ShapeOf(ib), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Elements<uint8_t>(ib), (std::vector<uint8_t>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(Elements<uint8_t>(RunOne("Equal", 11, {Bools({2}, {0, 1}), Bools({}, {1})})),
            (std::vector<uint8_t>{0, 1}));
  auto ge = RunOne("GreaterOrEqual", 16,
                   {MakeTensorOf<uint64_t>(E::kUint64, {2}, {UINT64_MAX, 0}),
                    MakeTensorOf<uint64_t>(E::kUint64, {}, {1})});
  EXPECT_EQ(Elements<uint8_t>(ge), (std::vector<uint8_t>{1, 0}));
  // float16 compared exactly: 0x3C01 (1 + 2^-10) > 0x3C00.
  auto h = RunOne("GreaterOrEqual", 16,
                  {MakeTensorOf<uint16_t>(E::kFloat16, {2}, {0x3C00, 0x3C00}),
                   MakeTensorOf<uint16_t>(E::kFloat16, {2}, {0x3C01, 0x3C00})});
  EXPECT_EQ(Elements<uint8_t>(h), (std::vector<uint8_t>{0, 1}));
}

TEST(CompareTest, TypeSetsPerVersion) {
  auto f = Floats({1}, {1.0f});
  auto bf = MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0x3F80});
  EXPECT_FALSE(KernelRunner("Equal", 7).Run({f, f}).ok());
  EXPECT_TRUE(KernelRunner("Equal", 11).Run({f, f}).ok());
  EXPECT_FALSE(KernelRunner("Equal", 11).Run({bf, bf}).ok());
  EXPECT_TRUE(KernelRunner("Equal", 13).Run({bf, bf}).ok());
  EXPECT_FALSE(KernelRunner("GreaterOrEqual", 12).Run({bf, bf}).ok());
  EXPECT_TRUE(KernelRunner("GreaterOrEqual", 16).Run({bf, bf}).ok());
  EXPECT_FALSE(KernelRunner("GreaterOrEqual", 16).Run({Bools({1}, {1}), Bools({1}, {1})}).ok());
  EXPECT_STATUS(KernelRunner("Equal", 13).Run({f, MakeTensorOf<double>(E::kDouble, {1}, {1})}),
                StatusCode::kInvalidModel, "both must have one type");
}

TEST(CompareTest, EqualStringsFrom19) {
  auto a = Value::MakeStringTensor({3}, {"a", std::string("b\0c", 3), ""}).value();
  auto b = Value::MakeStringTensor({3}, {"a", std::string("b\0d", 3), ""}).value();
  EXPECT_FALSE(KernelRunner("Equal", 13).Run({a, b}).ok());
  auto eq = RunOne("Equal", 19, {a, b});
  EXPECT_EQ(Elements<uint8_t>(eq), (std::vector<uint8_t>{1, 0, 1}));
  auto one = Value::MakeStringTensor({}, {"a"}).value();
  EXPECT_EQ(Elements<uint8_t>(RunOne("Equal", 19, {a, one})), (std::vector<uint8_t>{1, 0, 0}));
}

// ---- Shapes at plan time, limits ----------------------------------------------------------------

TEST(BinaryShapeTest, SymbolicAndUnknownDims) {
  auto sym = [](const char* p) { return Dim{std::nullopt, p}; };
  auto known = [](int64_t v) { return Dim{v, {}}; };
  using Dims = std::vector<Dim>;
  // numpy: N x 1 with 3 -> N x 3; N with N -> N; N with M -> unknown; ? with 1 -> ?.
  const Dims a = {sym("N"), known(1)}, b = {known(3)};
  auto r = BroadcastDims<Dim>(a, b).value();
  EXPECT_EQ(r, (Dims{sym("N"), known(3)}));
  EXPECT_EQ(BroadcastDims<Dim>(Dims{sym("N")}, Dims{sym("N")}).value(), Dims{sym("N")});
  EXPECT_EQ(BroadcastDims<Dim>(Dims{sym("N")}, Dims{sym("M")}).value(), Dims{Dim{}});
  // Through inference: Add-14 of float[N,1] and float[3] is float[N,3].
  const Type ta = Type::Tensor(E::kFloat, a), tb = Type::Tensor(E::kFloat, b);
  const Type* types[] = {&ta, &tb};
  NodeDef node;
  node.op_type = "Add";
  node.inputs = {"a", "b"};
  node.outputs = {"c"};
  const KernelSchema* s = KernelRegistry::Default().Resolve("", "Add", 14);
  auto prepared = s->prepare(NodeContext{node, 14, types, Limits{}}).value();
  EXPECT_EQ(prepared.inference.types[0].ToShortString(), "float[N,3]");
  // Legacy: A's shape, whatever B's unknown dims are.
  node.attributes.push_back(Attribute{});
  node.attributes.back().name = "broadcast";
  node.attributes.back().kind = Attribute::Kind::kInt;
  node.attributes.back().i = 1;
  const Type tl = Type::Tensor(E::kFloat, Dims{sym("N"), known(3), known(4)});
  const Type tr = Type::Tensor(E::kFloat, Dims{Dim{}, Dim{}});
  const Type* legacy[] = {&tl, &tr};
  auto l = KernelRegistry::Default()
               .Resolve("", "Add", 6)
               ->prepare(NodeContext{node, 6, legacy, Limits{}})
               .value();
  EXPECT_EQ(l.inference.types[0].ToShortString(), "float[N,3,4]");
}

TEST(BinaryLimitsTest, BroadcastOutputCheckedBeforeAllocating) {
  Limits limits;
  limits.max_tensor_bytes = (1 << 20) - 1;  // the bool output has 2^20 bytes
  auto col = Floats({1024, 1}, std::vector<float>(1024, 1.0f));
  auto row = Floats({1, 1024}, std::vector<float>(1024, 1.0f));  // 4 MiB broadcast
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Equal", "GreaterOrEqual"}) {
    EXPECT_STATUS(KernelRunner(op, 16).WithLimits(limits).Run({col, row}),
                  StatusCode::kResourceExhausted, "max_tensor_bytes")
        << op;
  }
  limits.max_elements = 1000;
  limits.max_tensor_bytes = uint64_t{1} << 40;
  EXPECT_STATUS(KernelRunner("Equal", 16).WithLimits(limits).Run({col, row}),
                StatusCode::kResourceExhausted, "max_elements");
}

}  // namespace
}  // namespace idem::testing

namespace idem::testing {
namespace {

// out[i] = op(a[ia], b[ib]) by numpy's broadcasting rule, computed index by index (the oracle for
// the run-by-run loops): every pair of shapes below, Add/Sub/Mul/Div on floats and Add on int32,
// bit for bit.
TEST(ArithTest, BroadcastRunsMatchElementByElementIndexing) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs = {
      {{2, 3, 4}, {2, 3, 4}},       {{2, 3, 4}, {4}},          {{2, 3, 4}, {3, 1}},
      {{2, 3, 4}, {2, 1, 4}},       {{2, 3, 4}, {}},           {{}, {2, 3, 4}},
      {{1, 3, 1, 5}, {2, 1, 4, 1}}, {{4, 1}, {1, 5}},          {{1, 1, 1}, {1, 1}},
      {{3, 1, 5}, {1, 1, 1}},       {{1, 129, 24}, {1, 1, 1}}, {{2, 1, 3, 1, 2}, {1, 4, 1, 5, 1}},
      {{1, 7, 1}, {6, 1, 9}},
  };
  auto broadcast = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    const size_t rank = std::max(a.size(), b.size());
    std::vector<int64_t> out(rank);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
      const int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
      out[i] = std::max(da, db);
    }
    return out;
  };
  // The flat index into `shape` (right-aligned to `out`) of output coordinate `coord`.
  auto index_of = [](const std::vector<int64_t>& shape, const std::vector<int64_t>& coord) {
    int64_t index = 0;
    const size_t offset = coord.size() - shape.size();
    for (size_t i = 0; i < shape.size(); ++i) {
      index = index * shape[i] + (shape[i] == 1 ? 0 : coord[offset + i]);
    }
    return index;
  };
  uint32_t seed = 1;
  for (const auto& [sa, sb] : pairs) {
    const std::vector<int64_t> so = broadcast(sa, sb);
    int64_t na = 1, nb = 1, no = 1;
    for (int64_t d : sa) na *= d;
    for (int64_t d : sb) nb *= d;
    for (int64_t d : so) no *= d;
    const std::vector<float> fa = RandomUnit(static_cast<size_t>(na), seed++);
    std::vector<float> fb = RandomUnit(static_cast<size_t>(nb), seed++);
    for (float& v : fb) v += 2.0f;  // no division by zero
    std::vector<int32_t> ia(fa.size()), ib(fb.size());
    for (size_t i = 0; i < fa.size(); ++i) ia[i] = static_cast<int32_t>(fa[i] * 1e9f);
    for (size_t i = 0; i < fb.size(); ++i) ib[i] = static_cast<int32_t>(fb[i] * 7e8f);
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      SCOPED_TRACE(::testing::Message() << op << " " << ::testing::PrintToString(sa) << " "
                                        << ::testing::PrintToString(sb));
      const Value got = RunOne(op, 14, {Floats(sa, fa), Floats(sb, fb)});
      ASSERT_EQ(ShapeOf(got), so);
      const std::vector<float> values = Elements<float>(got);
      std::vector<int64_t> coord(so.size(), 0);
      for (int64_t i = 0; i < no; ++i) {
        const float x = fa[static_cast<size_t>(index_of(sa, coord))];
        const float y = fb[static_cast<size_t>(index_of(sb, coord))];
        const float want = std::string(op) == "Add"   ? x + y
                           : std::string(op) == "Sub" ? x - y
                           : std::string(op) == "Mul" ? x * y
                                                      : x / y;
        ASSERT_EQ(std::bit_cast<uint32_t>(values[static_cast<size_t>(i)]),
                  std::bit_cast<uint32_t>(want))
            << "element " << i;
        for (size_t d = coord.size(); d-- > 0;) {
          if (++coord[d] < so[d]) break;
          coord[d] = 0;
        }
      }
    }
    const Value sum = RunOne("Add", 14, {I32(sa, ia), I32(sb, ib)});
    const std::vector<int32_t> values = Elements<int32_t>(sum);
    std::vector<int64_t> coord(so.size(), 0);
    for (int64_t i = 0; i < no; ++i) {
      const auto x = static_cast<uint32_t>(ia[static_cast<size_t>(index_of(sa, coord))]);
      const auto y = static_cast<uint32_t>(ib[static_cast<size_t>(index_of(sb, coord))]);
      ASSERT_EQ(values[static_cast<size_t>(i)], static_cast<int32_t>(x + y)) << "element " << i;
      for (size_t d = coord.size(); d-- > 0;) {
        if (++coord[d] < so[d]) break;
        coord[d] = 0;
      }
    }
  }
}

}  // namespace
}  // namespace idem::testing
