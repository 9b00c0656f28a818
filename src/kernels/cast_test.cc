// Cast and CastLike through KernelRunner: every version's type set, the conversion rules (exact
// ones against computed expectations, the undefined ones against what ONNX Runtime 1.30 gives),
// float8/float4/e8m0/4-bit/2-bit encodings, strings both ways, and bad input.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "src/core/float_convert.h"
#include "src/kernels/schema_oracle_test.h"
#include "tests/kernel_runner.h"
#include "tests/kernel_test_util.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;

std::vector<std::string> StringsOf(const Value& v) {
  auto s = v.tensor().strings();
  return {s.begin(), s.end()};
}

Value Strings(std::vector<std::string> s) {
  const auto n = static_cast<int64_t>(s.size());
  return Value::MakeStringTensor({n}, std::move(s)).value();
}

// Bytes of a packed tensor (4- and 2-bit types).
std::vector<uint8_t> Bytes(const Value& v) {
  const Buffer& b = v.tensor().data();
  std::vector<uint8_t> out(b.size());
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

Value Packed(E type, int64_t count, std::vector<uint8_t> bytes) {
  return MakeTensorOf<uint8_t>(type, {count}, std::move(bytes));
}

KernelRunner CastRunner(E to, int opset) {
  KernelRunner r("Cast", opset);
  r.IntAttr("to", static_cast<int64_t>(to));
  return r;
}

// Casts `x` three ways (shapes known, shapes unknown, input constant); all must agree.
Result<Value> CastAll(const Value& x, E to, int opset = 25, std::optional<int64_t> saturate = {},
                      std::optional<std::string> round_mode = {}) {
  auto make = [&] {
    KernelRunner r = CastRunner(to, opset);
    if (saturate) r.IntAttr("saturate", *saturate);
    if (round_mode) r.StringAttr("round_mode", *round_mode);
    return r;
  };
  IDEM_ASSIGN_OR_RETURN(auto a, make().Run({x}));
  IDEM_ASSIGN_OR_RETURN(auto b, make().UnknownShapes().Run({x}));
  IDEM_ASSIGN_OR_RETURN(auto c, make().ConstantInput(0).Run({x}));
  EXPECT_FALSE(DescribeDifference(a[0], b[0]));
  EXPECT_FALSE(DescribeDifference(a[0], c[0]));
  EXPECT_EQ(a[0].tensor().element_type(), to);
  return a[0];
}

// ---- Registry -------------------------------------------------------------------------------

TEST(CastRegistryTest, VersionsMatchLibonnxAndTheSpec) {
  for (int v : {1, 6, 9, 13}) ExpectMatchesLibonnx("Cast", v);
  ExpectMatchesLibonnx("CastLike", 15);
  const auto& r = KernelRegistry::Default();
  std::vector<int> since;
  for (const KernelSchema* s : r.Versions("", "Cast")) since.push_back(s->since_version);
  EXPECT_EQ(since, (std::vector<int>{1, 6, 9, 13, 19, 21, 23, 24, 25}));
  // The spec's T1/T2 sizes per version (19: + 4 float8; 21: + uint4, int4; 23: + float4e2m1;
  // 24: + float8e8m0; 25: + uint2, int2), and both sets equal.
  const std::vector<std::pair<int, size_t>> sizes = {
      {19, 18}, {21, 20}, {23, 21}, {24, 22}, {25, 24}};
  for (const auto& [v, n] : sizes) {
    const KernelSchema* s = r.Resolve("", "Cast", v);
    EXPECT_EQ(TypeSet(*s, "T1").size(), n) << v;
    EXPECT_EQ(TypeSet(*s, "T1"), TypeSet(*s, "T2")) << v;
    const KernelSchema* like = r.Resolve("", "CastLike", v);
    ASSERT_NE(like, nullptr);
    EXPECT_EQ(TypeSet(*like, "T1"), TypeSet(*s, "T1")) << v;
  }
  EXPECT_TRUE(TypeSet(*r.Resolve("", "Cast", 19), "T1").count("tensor(float8e5m2fnuz)"));
  EXPECT_FALSE(TypeSet(*r.Resolve("", "Cast", 19), "T1").count("tensor(int4)"));
  EXPECT_FALSE(TypeSet(*r.Resolve("", "Cast", 24), "T1").count("tensor(int2)"));
  EXPECT_EQ(r.Resolve("", "Cast", 19)->attributes, (std::vector<std::string>{"to", "saturate"}));
  EXPECT_EQ(r.Resolve("", "Cast", 24)->attributes,
            (std::vector<std::string>{"to", "saturate", "round_mode"}));
  EXPECT_TRUE(r.Resolve("", "Cast", 13)->foldable);
}

// ---- Numbers ---------------------------------------------------------------------------------

TEST(CastTest, SameTypeIsTheInputItself) {
  Value x = Floats({2, 2}, {1, 2, 3, 4});
  auto out = CastRunner(E::kFloat, 13).Run({x}).value();
  EXPECT_TRUE(out[0].SharesStorageWith(x));
  Value s = Strings({"a"});
  EXPECT_TRUE(CastRunner(E::kString, 13).Run({s}).value()[0].SharesStorageWith(s));
}

TEST(CastTest, KeepsTheShape) {
  Value x = MakeTensorOf<int32_t>(E::kInt32, {2, 1, 3}, {1, 2, 3, 4, 5, 6});
  Value y = CastAll(x, E::kDouble).value();
  EXPECT_EQ(std::vector<int64_t>(y.tensor().shape().begin(), y.tensor().shape().end()),
            (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(Elements<double>(y), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // An empty tensor stays empty.
  Value empty = MakeTensorOf<float>(E::kFloat, {0, 3}, {});
  EXPECT_EQ(CastAll(empty, E::kInt8).value().tensor().element_count(), 0);
}

TEST(CastTest, IntegersTruncateAndReinterpret) {
  // The spec's example: 200 (int16) -> -56 (int8).
  Value x = MakeTensorOf<int16_t>(E::kInt16, {4}, {200, -1, 32767, -32768});
  EXPECT_EQ(Elements<int8_t>(CastAll(x, E::kInt8).value()), (std::vector<int8_t>{-56, -1, -1, 0}));
  EXPECT_EQ(Elements<uint32_t>(CastAll(x, E::kUint32).value()),
            (std::vector<uint32_t>{200, 0xFFFFFFFFu, 32767, 0xFFFF8000u}));
  Value u = MakeTensorOf<uint64_t>(E::kUint64, {2}, {~uint64_t{0}, uint64_t{1} << 63});
  EXPECT_EQ(Elements<int64_t>(CastAll(u, E::kInt64).value()),
            (std::vector<int64_t>{-1, std::numeric_limits<int64_t>::min()}));
  EXPECT_EQ(Elements<uint8_t>(CastAll(u, E::kBool).value()), (std::vector<uint8_t>{1, 1}));
}

TEST(CastTest, IntegersToFloatRoundOnce) {
  // 2^24 + 1 is not a float: ties to even gives 2^24; 2^53 + 1 likewise for double.
  Value x = MakeTensorOf<int64_t>(E::kInt64, {3}, {(1 << 24) + 1, (int64_t{1} << 53) + 1, -3});
  EXPECT_EQ(Elements<float>(CastAll(x, E::kFloat).value()),
            (std::vector<float>{16777216.0f, 9007199254740992.0f, -3.0f}));
  EXPECT_EQ(Elements<double>(CastAll(x, E::kDouble).value()),
            (std::vector<double>{16777217.0, 9007199254740992.0, -3.0}));
  Value u = MakeTensorOf<uint64_t>(E::kUint64, {1}, {~uint64_t{0}});
  EXPECT_EQ(Elements<float>(CastAll(u, E::kFloat).value())[0], 18446744073709551616.0f);
  // int -> float16: 65520 and above overflow to Inf.
  Value h = MakeTensorOf<int32_t>(E::kInt32, {3}, {65504, 65520, -2049});
  EXPECT_EQ(Elements<uint16_t>(CastAll(h, E::kFloat16).value()),
            (std::vector<uint16_t>{0x7BFF, 0x7C00, 0xE800}));
}

TEST(CastTest, DoubleToFloat16RoundsOnce) {
  // 1 + 2^-11 + 2^-40 is just above the tie between 1 and 1 + 2^-10: rounded once it goes up;
  // through float it would lose the 2^-40 and tie to even (1.0).
  const double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  Value x = MakeTensorOf<double>(E::kDouble, {2}, {d, 1.0 + std::ldexp(1.0, -11)});
  EXPECT_EQ(Elements<uint16_t>(CastAll(x, E::kFloat16).value()),
            (std::vector<uint16_t>{0x3C01, 0x3C00}));
  EXPECT_EQ(DoubleToHalf(65519.99), 0x7BFF);
  EXPECT_EQ(DoubleToHalf(65520.0), 0x7C00);
  EXPECT_EQ(DoubleToHalf(std::ldexp(1.0, -25)), 0x0000);  // a tie below the smallest subnormal
  EXPECT_EQ(DoubleToHalf(std::ldexp(1.5, -25)), 0x0001);
  EXPECT_EQ(DoubleToHalf(-0.0), 0x8000);
  // Every float16 value survives float16 -> double -> float16.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float f = HalfToFloat(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(DoubleToHalf(f), bits) << h;
    ASSERT_EQ(DoubleToHalf(f), FloatToHalf(f)) << h;
  }
}

TEST(CastTest, FloatToBoolIsNonzero) {
  Value x = Floats({5}, {0.0f, -0.0f, NAN, 1e-45f, -INFINITY});
  EXPECT_EQ(Elements<uint8_t>(CastAll(x, E::kBool).value()), (std::vector<uint8_t>{0, 0, 1, 1, 1}));
  Value b = MakeTensorOf<uint8_t>(E::kBool, {2}, {1, 0});
  EXPECT_EQ(Elements<float>(CastAll(b, E::kFloat).value()), (std::vector<float>{1.0f, 0.0f}));
  EXPECT_EQ(Elements<int64_t>(CastAll(b, E::kInt64).value()), (std::vector<int64_t>{1, 0}));
}

// Out of range and NaN are undefined in the spec; these are the results ONNX Runtime 1.30 gives
// on x86-64 (measured with onnxruntime-node, one element per run: its scalar conversions).
TEST(CastTest, FloatToIntegerOutOfRangeAsOnnxRuntime) {
  const std::vector<float> in = {NAN,    INFINITY, -INFINITY, 3e9f,  -3e9f,
                                 300.7f, -129.5f,  5e9f,      1e20f, -1.5f};
  Value x = Floats({10}, in);
  EXPECT_EQ(Elements<int8_t>(CastAll(x, E::kInt8).value()),
            (std::vector<int8_t>{0, 0, 0, 0, 0, 44, 127, 0, 0, -1}));
  EXPECT_EQ(Elements<uint8_t>(CastAll(x, E::kUint8).value()),
            (std::vector<uint8_t>{0, 0, 0, 0, 0, 44, 127, 0, 0, 255}));
  EXPECT_EQ(Elements<int16_t>(CastAll(x, E::kInt16).value()),
            (std::vector<int16_t>{0, 0, 0, 0, 0, 300, -129, 0, 0, -1}));
  constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(Elements<int32_t>(CastAll(x, E::kInt32).value()),
            (std::vector<int32_t>{kMin32, kMin32, kMin32, kMin32, kMin32, 300, -129, kMin32, kMin32,
                                  -1}));
  EXPECT_EQ(Elements<uint32_t>(CastAll(x, E::kUint32).value()),
            (std::vector<uint32_t>{0, 0, 0, 3000000000u, 1294967296u, 300, 4294967167u, 705032704u,
                                   0, 4294967295u}));
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(Elements<int64_t>(CastAll(x, E::kInt64).value()),
            (std::vector<int64_t>{kMin64, kMin64, kMin64, 3000000000, -3000000000, 300, -129,
                                  5000000000, kMin64, -1}));
  EXPECT_EQ(Elements<uint64_t>(CastAll(x, E::kUint64).value()),
            (std::vector<uint64_t>{uint64_t{1} << 63, 0, uint64_t{1} << 63, 3000000000u,
                                   18446744070709551616u, 300, 18446744073709551487u, 5000000000u,
                                   0, 18446744073709551615u}));
  // double and float16 sources follow the same rules.
  Value d = MakeTensorOf<double>(E::kDouble, {3}, {NAN, 1e300, -2.9});
  EXPECT_EQ(Elements<int32_t>(CastAll(d, E::kInt32).value()),
            (std::vector<int32_t>{kMin32, kMin32, -2}));
  Value h = MakeTensorOf<uint16_t>(E::kFloat16, {3}, {0x7E00, 0x7C00, 0x7BFF});  // NaN, Inf, 65504
  EXPECT_EQ(Elements<int16_t>(CastAll(h, E::kInt16).value()),
            (std::vector<int16_t>{0, 0, -32}));  // 65504 wraps to -32
}

TEST(CastTest, Float8ToIntegerSaturatesInfinities) {
  // As ONNX Runtime: from float8, NaN gives 0 and +-Inf the integer type's max/min.
  Value x = MakeTensorOf<uint8_t>(E::kFloat8E5M2, {5}, {0x7C, 0xFC, 0x7F, 0x7B, 0xC5});
  // +Inf, -Inf, NaN, 57344, -5
  EXPECT_EQ(Elements<int8_t>(CastAll(x, E::kInt8).value()),
            (std::vector<int8_t>{127, -128, 0, 0, -5}));
  EXPECT_EQ(Elements<uint32_t>(CastAll(x, E::kUint32).value()),
            (std::vector<uint32_t>{4294967295u, 0, 0, 57344, 4294967291u}));
  EXPECT_EQ(Elements<int64_t>(CastAll(x, E::kInt64).value()),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min(), 0, 57344, -5}));
}

// ---- Float8, float4, e8m0 ---------------------------------------------------------------------

TEST(CastTest, Float8E4M3FNRoundsToNearestEvenAndSaturates) {
  Value x = Floats({12}, {448, 464, 465, 480, INFINITY, -INFINITY, NAN, -0.0f, 100,
                          std::ldexp(1.0f, -10), std::ldexp(3.0f, -10), 1e-30f});
  // 464 ties to 448 (even); 100 ties between 96 and 104 -> 96; 2^-10 is half the smallest
  // subnormal -> 0; 3 * 2^-10 ties between 2^-9 and 2^-8 -> 2^-8 (code 2).
  EXPECT_EQ(Elements<uint8_t>(CastAll(x, E::kFloat8E4M3FN, 19).value()),
            (std::vector<uint8_t>{0x7E, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x7F, 0x80, 0x6C, 0x00, 0x02,
                                  0x00}));
  // Without saturation what rounds past 448 (and Inf) is NaN, keeping the sign.
  EXPECT_EQ(Elements<uint8_t>(CastAll(x, E::kFloat8E4M3FN, 19, 0).value()),
            (std::vector<uint8_t>{0x7E, 0x7E, 0x7F, 0x7F, 0x7F, 0xFF, 0x7F, 0x80, 0x6C, 0x00, 0x02,
                                  0x00}));
}

TEST(CastTest, Float8FnuzAndE5M2FollowTheSpecTables) {
  Value x = Floats({7}, {240, 248, INFINITY, -INFINITY, NAN, -0.0f, 61440});
  EXPECT_EQ(Elements<uint8_t>(CastAll(x, E::kFloat8E4M3FNUZ, 19).value()),
            (std::vector<uint8_t>{0x7F, 0x7F, 0x7F, 0xFF, 0x80, 0x00, 0x7F}));
  EXPECT_EQ(Elements<uint8_t>(CastAll(x, E::kFloat8E4M3FNUZ, 19, 0).value()),
            (std::vector<uint8_t>{0x7F, 0x80, 0x80, 0x80, 0x80, 0x00, 0x80}));
  // e5m2 keeps two mantissa bits: 240 = 1.111b * 2^7 ties up to 256 (even); 61440 ties between
  // 57344 and 65536 (even) -> overflow: max with saturate, Inf without.
  EXPECT_EQ(Elements<uint8_t>(CastAll(x, E::kFloat8E5M2, 19).value()),
            (std::vector<uint8_t>{0x5C, 0x5C, 0x7B, 0xFB, 0x7F, 0x80, 0x7B}));
  EXPECT_EQ(Elements<uint8_t>(CastAll(x, E::kFloat8E5M2, 19, 0).value()),
            (std::vector<uint8_t>{0x5C, 0x5C, 0x7C, 0xFC, 0x7F, 0x80, 0x7C}));
  EXPECT_EQ(Elements<uint8_t>(CastAll(x, E::kFloat8E5M2FNUZ, 19, 0).value()),
            (std::vector<uint8_t>{0x60, 0x60, 0x80, 0x80, 0x80, 0x00, 0x80}));
  EXPECT_EQ(Elements<uint8_t>(CastAll(Floats({1}, {224}), E::kFloat8E5M2, 19).value()),
            (std::vector<uint8_t>{0x5B}));  // 1.11b * 2^7 is exact
}

TEST(CastTest, EveryFloat8CodeRoundTrips) {
  const std::vector<std::pair<E, MiniFloat>> formats = {{E::kFloat8E4M3FN, MiniFloat::kE4M3FN},
                                                        {E::kFloat8E4M3FNUZ, MiniFloat::kE4M3FNUZ},
                                                        {E::kFloat8E5M2, MiniFloat::kE5M2},
                                                        {E::kFloat8E5M2FNUZ, MiniFloat::kE5M2FNUZ}};
  std::vector<uint8_t> codes(256);
  for (int i = 0; i < 256; ++i) codes[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  for (const auto& [type, format] : formats) {
    SCOPED_TRACE(std::string(ElementTypeName(type)));
    Value x = MakeTensorOf<uint8_t>(type, {256}, codes);
    const std::vector<float> f = Elements<float>(CastAll(x, E::kFloat, 19).value());
    const std::vector<uint8_t> back =
        Elements<uint8_t>(CastAll(Floats({256}, f), type, 19, 0).value());
    for (int i = 0; i < 256; ++i) {
      const auto c = static_cast<uint8_t>(i);
      EXPECT_EQ(std::bit_cast<uint32_t>(f[static_cast<size_t>(i)]),
                std::bit_cast<uint32_t>(MiniFloatToFloat(format, c)))
          << i;
      if (std::isnan(f[static_cast<size_t>(i)])) continue;  // every NaN code reads as NaN
      EXPECT_EQ(back[static_cast<size_t>(i)], c) << i;
    }
  }
  // Decoded values: e4m3fn 0x01 = 2^-9, 0x7E = 448; e5m2 0x7C = Inf; fnuz 0x80 = NaN.
  EXPECT_EQ(MiniFloatToFloat(MiniFloat::kE4M3FN, 0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(MiniFloatToFloat(MiniFloat::kE4M3FN, 0xFE), -448.0f);
  EXPECT_TRUE(std::isinf(MiniFloatToFloat(MiniFloat::kE5M2, 0x7C)));
  EXPECT_TRUE(std::isnan(MiniFloatToFloat(MiniFloat::kE5M2FNUZ, 0x80)));
  EXPECT_EQ(MiniFloatToFloat(MiniFloat::kE5M2FNUZ, 0x01), std::ldexp(1.0f, -17));
}

TEST(CastTest, Float4E2M1PacksLowNibbleFirst) {
  // Values: 0, 0.5, 1, 1.5, 2, 3, 4, 6. Ties to even: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1,
  // 2.5 -> 2, 5 -> 4; saturates (100 -> 6, -Inf -> -6); NaN -> +6 (0x7).
  Value x =
      Floats({11}, {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 5.1f, 100.0f, -INFINITY, NAN});
  Value y = CastAll(x, E::kFloat4E2M1, 23).value();
  EXPECT_EQ(Bytes(y), (std::vector<uint8_t>{0x20, 0x42, 0x64, 0x76, 0xF7, 0x07}));
  EXPECT_EQ(Elements<float>(CastAll(y, E::kFloat, 23).value()),
            (std::vector<float>{0, 1, 1, 2, 2, 4, 4, 6, 6, -6, 6}));
  EXPECT_STATUS(CastRunner(E::kFloat4E2M1, 21).Run({x}), StatusCode::kInvalidModel,
                "not one of the types Cast-21 casts to");
}

TEST(CastTest, Float8E8M0RoundModes) {
  Value x = Floats({8}, {3.0f, 2.9f, 1.0f, 0.0f, INFINITY, -2.0f, NAN, 1e-40f});
  // up: 3 -> 4, 2.9 -> 4; down: 3 -> 2; nearest: 3 = 1.5 * 2 ties up -> 4, 2.9 -> 2.
  // 0 and values below 2^-127 give 2^-127 (0x00) with saturate, NaN (0xFF) without;
  // negative values give 0x00 (undefined; as ONNX Runtime).
  EXPECT_EQ(Elements<uint8_t>(CastAll(x, E::kFloat8E8M0, 24).value()),
            (std::vector<uint8_t>{129, 129, 127, 0x00, 0xFE, 0x00, 0xFF, 0x00}));
  EXPECT_EQ(Elements<uint8_t>(CastAll(x, E::kFloat8E8M0, 24, 1, "down").value()),
            (std::vector<uint8_t>{128, 128, 127, 0x00, 0xFE, 0x00, 0xFF, 0x00}));
  EXPECT_EQ(Elements<uint8_t>(CastAll(x, E::kFloat8E8M0, 24, 0, "nearest").value()),
            (std::vector<uint8_t>{129, 128, 127, 0xFF, 0xFF, 0x00, 0xFF, 0xFF}));
  Value e = MakeTensorOf<uint8_t>(E::kFloat8E8M0, {3}, {127, 0, 0xFF});
  const std::vector<float> f = Elements<float>(CastAll(e, E::kFloat, 24).value());
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], std::ldexp(1.0f, -127));
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_STATUS(CastRunner(E::kFloat8E8M0, 24).StringAttr("round_mode", "sideways").Run({x}),
                StatusCode::kInvalidModel, "round_mode");
}

// ---- 4- and 2-bit integers -------------------------------------------------------------------

TEST(CastTest, FourAndTwoBitIntegers) {
  // Floats round half away from zero (as ONNX Runtime), then keep the low bits: 7.6 -> 8 -> -8.
  Value x = Floats({5}, {2.5f, -2.5f, 7.6f, -9.0f, NAN});
  Value i4 = CastAll(x, E::kInt4, 21).value();
  EXPECT_EQ(Bytes(i4), (std::vector<uint8_t>{0xD3, 0x78, 0x00}));  // 3, -3, -8, 7, 0
  EXPECT_EQ(Elements<int8_t>(CastAll(i4, E::kInt8, 21).value()),
            (std::vector<int8_t>{3, -3, -8, 7, 0}));
  // Integers keep the low bits: 200 -> 8 (uint4) / -8 (int4); -1 -> 15 (uint4).
  Value n = MakeTensorOf<int16_t>(E::kInt16, {3}, {200, -1, 7});
  EXPECT_EQ(Elements<uint8_t>(CastAll(CastAll(n, E::kUint4, 21).value(), E::kUint8, 21).value()),
            (std::vector<uint8_t>{8, 15, 7}));
  EXPECT_EQ(Elements<int8_t>(CastAll(CastAll(n, E::kInt4, 21).value(), E::kInt8, 21).value()),
            (std::vector<int8_t>{-8, -1, 7}));
  // 2-bit: four to a byte; int2 holds -2..1.
  Value t = MakeTensorOf<int32_t>(E::kInt32, {5}, {1, 2, 3, -1, -2});
  Value i2 = CastAll(t, E::kInt2, 25).value();
  EXPECT_EQ(Bytes(i2), (std::vector<uint8_t>{0xF9, 0x02}));  // 1, -2, -1, -1 | -2
  EXPECT_EQ(Elements<int8_t>(CastAll(i2, E::kInt8, 25).value()),
            (std::vector<int8_t>{1, -2, -1, -1, -2}));
  EXPECT_EQ(Elements<float>(CastAll(Packed(E::kUint2, 3, {0x39}), E::kFloat, 25).value()),
            (std::vector<float>{1, 2, 3}));
  // int4 <-> uint4 reinterpret the nibble.
  EXPECT_EQ(Bytes(CastAll(Packed(E::kInt4, 2, {0xF8}), E::kUint4, 21).value()),
            (std::vector<uint8_t>{0xF8}));
}

// ---- Strings ---------------------------------------------------------------------------------

TEST(CastTest, NumbersToStrings) {
  Value f = Floats(
      {10}, {0.3f, 1e10f, 1.0f, -0.0f, NAN, INFINITY, -INFINITY, 123456789.0f, 0.6048455f, 1e-5f});
  EXPECT_EQ(StringsOf(CastAll(f, E::kString).value()),
            (std::vector<std::string>{"0.3", "1e+10", "1", "-0", "NaN", "INF", "-INF",
                                      "1.2345679e+08", "0.6048455", "1e-05"}));
  // Every float keeps its value: the string reads back to the same bits.
  std::vector<float> many;
  for (uint32_t bits = 0x00800000; bits < 0x7F000000; bits += 0x00F4243) {
    many.push_back(std::bit_cast<float>(bits));
  }
  const auto count = static_cast<int64_t>(many.size());
  std::vector<std::string> s = StringsOf(CastAll(Floats({count}, many), E::kString).value());
  for (size_t i = 0; i < many.size(); ++i) {
    ASSERT_EQ(std::strtof(s[i].c_str(), nullptr), many[i]) << s[i];
  }
  // double, float16: ONNX Runtime's "%.8g".
  Value d = MakeTensorOf<double>(E::kDouble, {3}, {0.1, 1.0 / 3, 1e16});
  EXPECT_EQ(StringsOf(CastAll(d, E::kString).value()),
            (std::vector<std::string>{"0.1", "0.33333333", "1e+16"}));
  Value h = MakeTensorOf<uint16_t>(E::kFloat16, {2}, {0x3555, 0x3C00});
  EXPECT_EQ(StringsOf(CastAll(h, E::kString).value()),
            (std::vector<std::string>{"0.33325195", "1"}));
  Value i = MakeTensorOf<int8_t>(E::kInt8, {2}, {-5, 127});
  EXPECT_EQ(StringsOf(CastAll(i, E::kString).value()), (std::vector<std::string>{"-5", "127"}));
  Value u = MakeTensorOf<uint64_t>(E::kUint64, {1}, {~uint64_t{0}});
  EXPECT_EQ(StringsOf(CastAll(u, E::kString).value()),
            (std::vector<std::string>{"18446744073709551615"}));
  Value b = MakeTensorOf<uint8_t>(E::kBool, {2}, {1, 0});
  EXPECT_EQ(StringsOf(CastAll(b, E::kString).value()), (std::vector<std::string>{"1", "0"}));
  Value i4 = Packed(E::kInt4, 2, {0x8F});
  EXPECT_EQ(StringsOf(CastAll(i4, E::kString, 21).value()), (std::vector<std::string>{"-1", "-8"}));
}

TEST(CastTest, StringsToNumbersAsOnnxRuntimeParses) {
  Value s = Strings({"1.5", " 2", "3abc", "0x10", "-INF", "nan", "+INF", "1e-5", "100"});
  const std::vector<float> f = Elements<float>(CastAll(s, E::kFloat).value());
  EXPECT_EQ(f[0], 1.5f);
  EXPECT_EQ(f[1], 2.0f);
  EXPECT_EQ(f[2], 3.0f);
  EXPECT_EQ(f[3], 16.0f);
  EXPECT_EQ(f[4], -INFINITY);
  EXPECT_TRUE(std::isnan(f[5]));
  EXPECT_EQ(f[6], INFINITY);
  EXPECT_EQ(f[7], 1e-5f);
  EXPECT_EQ(f[8], 100.0f);
  EXPECT_EQ(Elements<double>(CastAll(Strings({"0.1"}), E::kDouble).value())[0], 0.1);
  // Integers: a decimal prefix ("100.5" is 100), truncated to the type; unsigned wraps '-'.
  Value n = Strings({"100.5", "-1", "300", " 7"});
  EXPECT_EQ(Elements<int32_t>(CastAll(n, E::kInt32).value()),
            (std::vector<int32_t>{100, -1, 300, 7}));
  EXPECT_EQ(Elements<uint8_t>(CastAll(n, E::kUint8).value()),
            (std::vector<uint8_t>{100, 255, 44, 7}));
  EXPECT_EQ(Elements<uint8_t>(CastAll(Strings({"0", "2"}), E::kBool).value()),
            (std::vector<uint8_t>{0, 1}));
  // 4-bit targets parse a float and round: "7.9" -> 8, "1e3" -> 1000 & 15 = 8, "0x1A" -> 10.
  EXPECT_EQ(
      Elements<uint8_t>(
          CastAll(CastAll(Strings({"7.9", "1e3", "0x1A"}), E::kUint4, 21).value(), E::kUint8, 21)
              .value()),
      (std::vector<uint8_t>{8, 8, 10}));
  // float16 and float8 from strings go through float (as ONNX Runtime).
  EXPECT_EQ(Elements<uint16_t>(CastAll(Strings({"65504", "1e9"}), E::kFloat16).value()),
            (std::vector<uint16_t>{0x7BFF, 0x7C00}));
  EXPECT_EQ(Elements<uint8_t>(CastAll(Strings({"500"}), E::kFloat8E4M3FN, 19).value()),
            (std::vector<uint8_t>{0x7E}));
}

TEST(CastTest, StringsThatAreNotNumbersAreErrors) {
  for (const char* bad : {"abc", "", "-"}) {
    EXPECT_STATUS(CastRunner(E::kFloat, 13).Run({Strings({"1", bad})}),
                  StatusCode::kInvalidArgument, "element 1 of the input");
  }
  EXPECT_STATUS(CastRunner(E::kDouble, 13).Run({Strings({"1e400"})}), StatusCode::kInvalidArgument,
                "out of the range of double");
  EXPECT_STATUS(CastRunner(E::kInt64, 13).Run({Strings({"99999999999999999999"})}),
                StatusCode::kInvalidArgument, "out of the range of int64");
  EXPECT_STATUS(CastRunner(E::kInt32, 13).Run({Strings({"inf"})}), StatusCode::kInvalidArgument,
                "is not an integer");
  EXPECT_STATUS(CastRunner(E::kBool, 13).Run({Strings({"true"})}), StatusCode::kInvalidArgument,
                "'true', is not an integer (string to bool)");
  // A long string is shown shortened.
  auto r = CastRunner(E::kFloat, 13).Run({Strings({std::string(1000, 'x')})});
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 200u);
}

// ---- Attributes and versions -----------------------------------------------------------------

TEST(CastTest, CastOneTakesTheTypeByName) {
  Value x = MakeTensorOf<int32_t>(E::kInt32, {2}, {1, -2});
  KernelRunner r("Cast", 1);
  auto out = r.StringAttr("to", "DOUBLE").Run({x}).value();
  EXPECT_EQ(Elements<double>(out[0]), (std::vector<double>{1, -2}));
  EXPECT_STATUS(KernelRunner("Cast", 1).StringAttr("to", "STRING").Run({x}),
                StatusCode::kInvalidModel, "not one of the types Cast-1 casts to");
  EXPECT_STATUS(KernelRunner("Cast", 1).StringAttr("to", "REAL").Run({x}),
                StatusCode::kInvalidModel, "'REAL'");
  EXPECT_STATUS(KernelRunner("Cast", 6).StringAttr("to", "FLOAT").Run({x}),
                StatusCode::kInvalidModel, "attribute 'to' must be an int");
}

TEST(CastTest, TypeSetsPerVersion) {
  Value x = Floats({1}, {1.0f});
  EXPECT_STATUS(CastRunner(E::kString, 6).Run({x}), StatusCode::kInvalidModel,
                "not one of the types Cast-6 casts to");
  EXPECT_STATUS(CastRunner(E::kBfloat16, 9).Run({x}), StatusCode::kInvalidModel, "Cast-9");
  EXPECT_STATUS(CastRunner(E::kFloat8E4M3FN, 13).Run({x}), StatusCode::kInvalidModel, "Cast-13");
  EXPECT_STATUS(CastRunner(E::kInt2, 24).Run({x}), StatusCode::kInvalidModel, "Cast-24");
  EXPECT_STATUS(CastRunner(E::kComplex64, 25).Run({x}), StatusCode::kInvalidModel, "Cast-25");
  EXPECT_STATUS(KernelRunner("Cast", 13).IntAttr("to", 99).Run({x}), StatusCode::kInvalidModel,
                "attribute 'to' is 99");
  EXPECT_STATUS(KernelRunner("Cast", 13).Run({x}), StatusCode::kInvalidModel,
                "required attribute 'to' is missing");
  EXPECT_STATUS(CastRunner(E::kFloat8E5M2, 19).IntAttr("saturate", 2).Run({x}),
                StatusCode::kInvalidModel, "attribute 'saturate' is 2");
  // saturate only exists from 19; round_mode from 24.
  EXPECT_STATUS(CastRunner(E::kFloat, 13).IntAttr("saturate", 1).Run({x}),
                StatusCode::kInvalidModel, "unknown attribute 'saturate'");
  EXPECT_STATUS(CastRunner(E::kFloat, 23).StringAttr("round_mode", "up").Run({x}),
                StatusCode::kInvalidModel, "unknown attribute 'round_mode'");
  // Inputs outside T1 are refused (string input to Cast-6).
  EXPECT_FALSE(CastRunner(E::kFloat, 6).Run({Strings({"1"})}).ok());
}

TEST(CastTest, OutputSizesAreCheckedBeforeAllocating) {
  Limits limits;
  limits.max_tensor_bytes = 1000;
  Value x = MakeTensorOf<uint8_t>(E::kUint8, {200}, std::vector<uint8_t>(200, 1));
  EXPECT_TRUE(CastRunner(E::kInt32, 13).WithLimits(limits).Run({x}).ok());  // 800 bytes
  EXPECT_STATUS(CastRunner(E::kDouble, 13).WithLimits(limits).Run({x}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
  EXPECT_STATUS(CastRunner(E::kString, 13).WithLimits(limits).Run({x}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
}

TEST(CastLikeTest, TakesTheTargetsType) {
  Value x = Floats({3}, {1.5f, -2.5f, 1e10f});
  Value like = MakeTensorOf<int16_t>(E::kInt16, {1}, {0});
  auto out = KernelRunner("CastLike", 15).Run({x, like}).value();
  EXPECT_EQ(out[0].tensor().element_type(), E::kInt16);
  EXPECT_EQ(Elements<int16_t>(out[0]), (std::vector<int16_t>{1, -2, 0}));
  EXPECT_TRUE(
      KernelRunner("CastLike", 15).Run({x, Floats({}, {0})}).value()[0].SharesStorageWith(x));
  Value f8 = MakeTensorOf<uint8_t>(E::kFloat8E5M2, {1}, {0});
  auto sat = KernelRunner("CastLike", 19).IntAttr("saturate", 0).Run({Floats({1}, {1e6f}), f8});
  EXPECT_EQ(Elements<uint8_t>(sat.value()[0]), (std::vector<uint8_t>{0x7C}));
  EXPECT_FALSE(KernelRunner("CastLike", 15).Run({x, f8}).ok());  // float8 needs CastLike-19
}

}  // namespace
}  // namespace idem::testing
