// Gemm, MatMul and the shared reference GEMM (gemm.h), through KernelRunner: values against a
// float64 reference (rtol 1e-3, atol 1e-5), shapes (full, unknown, constant inputs), every
// version's type set and distinct behaviour, and bad input.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <cmath>
#include <cstring>
#include <set>

#include "src/core/float_convert.h"
#include "src/kernels/gemm.h"
#include "src/kernels/op.h"
#include "tests/kernel_runner.h"
#include "tests/kernel_test_util.h"
#include "tests/status_matchers.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;

// Deterministic values in [-1, 1).
// |actual - expected| <= atol + rtol * |expected| elementwise.
void ExpectClose(const std::vector<double>& actual, const std::vector<double>& expected,
                 double rtol = 1e-3, double atol = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_LE(std::abs(actual[i] - expected[i]), atol + rtol * std::abs(expected[i]))
        << "element " << i << ": " << actual[i] << " vs " << expected[i];
  }
}

// float64 reference: y[b] = a[b] (m x k) * b[b] (k x n), row-major, batch-aligned.
std::vector<double> RefMatMul(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                              int64_t k, int64_t n, int64_t batch_a, int64_t batch_b) {
  const int64_t batch = std::max(batch_a, batch_b);
  std::vector<double> y(static_cast<size_t>(batch * m * n), 0.0);
  for (int64_t t = 0; t < batch; ++t) {
    const int64_t ta = batch_a == 1 ? 0 : t, tb = batch_b == 1 ? 0 : t;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          s += static_cast<double>(a[ta * m * k + i * k + p]) * b[tb * k * n + p * n + j];
        }
        y[t * m * n + i * n + j] = s;
      }
    }
  }
  return y;
}

// ---- The reference GEMM ------------------------------------------------------------------------

// Each result is the plain running sum over k in order: the blocked GEMM gives the bits of the
// naive loop for every shape (crossing the register tile and the cache blocks), transposes and
// accumulation.
TEST(ReferenceGemmTest, EqualsTheNaiveLoopBitForBit) {
#if defined(__FP_FAST_FMAF)
  GTEST_SKIP() << "the compiler may contract a * b + c into an FMA differently in each loop";
#endif
  for (auto [m, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 1},
                                                                           {3, 5, 7},
                                                                           {4, 8, 256},
                                                                           {5, 9, 257},
                                                                           {70, 530, 300},
                                                                           {1, 1200, 3},
                                                                           {2, 700, 300}}) {
    for (int trans = 0; trans < 4; ++trans) {
      for (bool accumulate : {false, true}) {
        const bool ta = trans & 1, tb = trans & 2;
        const auto a = RandomUnit(static_cast<size_t>(m * k), 1);
        const auto b = RandomUnit(static_cast<size_t>(k * n), 2);
        const int64_t ldc = n + 3;
        std::vector<float> c = RandomUnit(static_cast<size_t>(m * ldc), 3);
        std::vector<float> expect = c;
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            float s = accumulate ? expect[i * ldc + j] : 0.0f;
            for (int64_t p = 0; p < k; ++p) {
              const float av = ta ? a[p * m + i] : a[i * k + p];
              const float bv = tb ? b[j * k + p] : b[p * n + j];
              s += av * bv;
            }
            expect[i * ldc + j] = s;
          }
        }
        ReferenceGemm<float>(ta, tb, m, n, k, a.data(), ta ? m : k, b.data(), tb ? k : n, c.data(),
                             ldc, accumulate);
        // Bitwise, including the untouched padding columns.
        ASSERT_EQ(std::memcmp(c.data(), expect.data(), c.size() * sizeof(float)), 0)
            << m << "x" << n << "x" << k << " trans " << trans << " accumulate " << accumulate;
      }
    }
  }
}

TEST(ReferenceGemmTest, IntegersWrapAndKZeroGivesZeros) {
  const std::vector<int32_t> a = {INT32_MAX, 2};
  const std::vector<int32_t> b = {2, INT32_MAX};
  int32_t c = 7;
  ReferenceGemm<int32_t>(false, false, 1, 1, 2, a.data(), 2, b.data(), 1, &c, 1, false);
  // 2 * (INT32_MAX * 2) mod 2^32 = -4.
  EXPECT_EQ(c, -4);
  const std::vector<uint64_t> ua = {UINT64_MAX}, ub = {UINT64_MAX};
  uint64_t uc = 0;
  ReferenceGemm<uint64_t>(false, false, 1, 1, 1, ua.data(), 1, ub.data(), 1, &uc, 1, false);
  EXPECT_EQ(uc, 1u);
  std::vector<double> z = {5, 5, 5, 5};
  ReferenceGemm<double>(false, false, 2, 2, 0, nullptr, 0, nullptr, 2, z.data(), 2, false);
  EXPECT_EQ(z, (std::vector<double>{0, 0, 0, 0}));
  z = {5, 5, 5, 5};
  ReferenceGemm<double>(false, false, 2, 2, 0, nullptr, 0, nullptr, 2, z.data(), 2, true);
  EXPECT_EQ(z, (std::vector<double>{5, 5, 5, 5}));
}

// ---- MatMul ------------------------------------------------------------------------------------

TEST(MatMulTest, BatchedBroadcastingMatchesFloat64) {
  // [2, 1, 3, 40] x [5, 40, 6] -> [2, 5, 3, 6]: A's batch (2, 1) against B's (5).
  const auto a = RandomUnit(size_t{2} * 3 * 40, 4), b = RandomUnit(size_t{5} * 40 * 6, 5);
  auto out = RunAllWays([] { return KernelRunner("MatMul", 13); },
                        {Floats({2, 1, 3, 40}, a), Floats({5, 40, 6}, b)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{2, 5, 3, 6}));
  std::vector<double> expect;
  for (int64_t i = 0; i < 2; ++i) {
    std::vector<float> ai(a.begin() + i * 120, a.begin() + (i + 1) * 120);
    auto part = RefMatMul(ai, b, 3, 40, 6, 1, 5);
    expect.insert(expect.end(), part.begin(), part.end());
  }
  ExpectClose(Doubles(out[0]), expect);
}

TEST(MatMulTest, OneDimensionalOperands) {
  const auto v = RandomUnit(4, 6), m = RandomUnit(size_t{4} * 3, 7);
  // [4] x [4, 3] -> [3]
  auto out =
      RunAllWays([] { return KernelRunner("MatMul", 13); }, {Floats({4}, v), Floats({4, 3}, m)});
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{3}));
  ExpectClose(Doubles(out[0]), RefMatMul(v, m, 1, 4, 3, 1, 1));
  // [3, 4] x [4] -> [3]
  out = RunAllWays([] { return KernelRunner("MatMul", 13); }, {Floats({3, 4}, m), Floats({4}, v)});
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{3}));
  ExpectClose(Doubles(out[0]), RefMatMul(m, v, 3, 4, 1, 1, 1));
  // [4] x [4] -> []
  out = RunAllWays([] { return KernelRunner("MatMul", 9); }, {Floats({4}, v), Floats({4}, v)});
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{}));
  ExpectClose(Doubles(out[0]), RefMatMul(v, v, 1, 4, 1, 1, 1));
  // [2, 3, 4] x [4] -> [2, 3]; [4] x [2, 4, 3] -> [2, 3]
  const auto batch = RandomUnit(size_t{2} * 3 * 4, 8);
  out = RunAllWays([] { return KernelRunner("MatMul", 13); },
                   {Floats({2, 3, 4}, batch), Floats({4}, v)});
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{2, 3}));
  ExpectClose(Doubles(out[0]), RefMatMul(batch, v, 3, 4, 1, 2, 1));
  out = RunAllWays([] { return KernelRunner("MatMul", 13); },
                   {Floats({4}, v), Floats({2, 4, 3}, batch)});
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{2, 3}));
  ExpectClose(Doubles(out[0]), RefMatMul(v, batch, 1, 4, 3, 1, 2));
}

TEST(MatMulTest, EmptyDimsGiveEmptyOrZeroResults) {
  // K = 0: zeros of shape [2, 3]; M = 0: shape [0, 3].
  auto out = RunAllWays([] { return KernelRunner("MatMul", 13); },
                        {Floats({2, 0}, {}), Floats({0, 3}, {})});
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Doubles(out[0]), std::vector<double>(6, 0.0));
  out = RunAllWays([] { return KernelRunner("MatMul", 13); },
                   {Floats({0, 2}, {}), Floats({2, 3}, RandomUnit(6, 1))});
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{0, 3}));
}

TEST(MatMulTest, FloatTypesRoundOnceFromFloat) {
  const auto a = RandomUnit(size_t{3} * 17, 9), b = RandomUnit(size_t{17} * 2, 10);
  for (E type : {E::kDouble, E::kFloat16, E::kBfloat16}) {
    SCOPED_TRACE(ElementTypeName(type));
    const Value va = FloatTensor(type, {3, 17}, a), vb = FloatTensor(type, {17, 2}, b);
    auto out = RunAllWays([] { return KernelRunner("MatMul", 13); }, {va, vb});
    ASSERT_EQ(out[0].tensor().element_type(), type);
    // Reference over the rounded inputs, then rounded to the type once.
    auto ra = Doubles(va), rb = Doubles(vb);
    std::vector<float> fa(ra.begin(), ra.end()), fb(rb.begin(), rb.end());
    auto expect = RefMatMul(fa, fb, 3, 17, 2, 1, 1);
    const double rtol = type == E::kDouble ? 1e-12 : type == E::kFloat16 ? 1e-3 : 8e-3;
    ExpectClose(Doubles(out[0]), Doubles(FloatTensor(type, {3, 2}, {expect.begin(), expect.end()})),
                rtol, 1e-5);
  }
  // float16 needs no bfloat16: MatMul-9 refuses bfloat16 (added in 13).
  EXPECT_STATUS(
      KernelRunner("MatMul", 9)
          .Run({FloatTensor(E::kBfloat16, {1, 1}, {1}), FloatTensor(E::kBfloat16, {1, 1}, {1})}),
      StatusCode::kInvalidModel, "not allowed");
}

TEST(MatMulTest, IntegerTypesWrapFromVersion9) {
  auto out = RunAllWays([] { return KernelRunner("MatMul", 9); },
                        {MakeTensorOf<int32_t>(E::kInt32, {1, 2}, {INT32_MAX, 3}),
                         MakeTensorOf<int32_t>(E::kInt32, {2, 1}, {2, -4})});
  EXPECT_EQ(out[0].tensor().data_as<int32_t>()[0], -2 - 12);
  out = RunAllWays([] { return KernelRunner("MatMul", 13); },
                   {MakeTensorOf<uint32_t>(E::kUint32, {2, 2}, {1, 2, 3, 4}),
                    MakeTensorOf<uint32_t>(E::kUint32, {2}, {5, 6})});
  auto r = out[0].tensor().data_as<uint32_t>();
  EXPECT_EQ(std::vector<uint32_t>(r.begin(), r.end()), (std::vector<uint32_t>{17, 39}));
  out = RunAllWays([] { return KernelRunner("MatMul", 13); },
                   {MakeTensorOf<int64_t>(E::kInt64, {1, 1}, {-3}),
                    MakeTensorOf<int64_t>(E::kInt64, {1, 1}, {INT64_MIN})});
  EXPECT_EQ(out[0].tensor().data_as<int64_t>()[0], INT64_MIN);  // -3 * 2^63 mod 2^64
  out = RunAllWays([] { return KernelRunner("MatMul", 13); },
                   {MakeTensorOf<uint64_t>(E::kUint64, {1, 1}, {3}),
                    MakeTensorOf<uint64_t>(E::kUint64, {1, 1}, {UINT64_MAX})});
  EXPECT_EQ(out[0].tensor().data_as<uint64_t>()[0], UINT64_MAX - 2);
  // MatMul-1 is float-only.
  EXPECT_STATUS(KernelRunner("MatMul", 1)
                    .Run({MakeTensorOf<int32_t>(E::kInt32, {1, 1}, {1}),
                          MakeTensorOf<int32_t>(E::kInt32, {1, 1}, {1})}),
                StatusCode::kInvalidModel, "not allowed");
  // Types outside every version.
  EXPECT_STATUS(KernelRunner("MatMul", 13)
                    .Run({MakeTensorOf<int8_t>(E::kInt8, {1, 1}, {1}),
                          MakeTensorOf<int8_t>(E::kInt8, {1, 1}, {1})}),
                StatusCode::kInvalidModel, "not allowed");
}

TEST(MatMulTest, BadShapesAreRefusedWithTheRule) {
  auto run = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                bool unknown = false) {
    int64_t na = 1, nb = 1;
    for (int64_t d : a) na *= d;
    for (int64_t d : b) nb *= d;
    KernelRunner r("MatMul", 13);
    if (unknown) r.UnknownShapes();
    return r.Run({Floats(a, RandomUnit(static_cast<size_t>(na), 1)),
                  Floats(b, RandomUnit(static_cast<size_t>(nb), 2))});
  };
  for (bool unknown : {false, true}) {  // at plan time and (shapes unknown) at run time
    EXPECT_STATUS(run({2, 3}, {4, 2}, unknown), StatusCode::kInvalidArgument,
                  "A's last dim (3) differs from B's second-to-last dim (4)");
    EXPECT_STATUS(run({3}, {4}, unknown), StatusCode::kInvalidArgument, "only dim (4)");
    EXPECT_STATUS(run({2, 2, 3}, {3, 3, 2}, unknown), StatusCode::kInvalidArgument,
                  "MatMul batch dims");
    EXPECT_STATUS(run({}, {3}, unknown), StatusCode::kInvalidArgument, "rank >= 1");
  }
}

TEST(MatMulTest, OutputCheckedAgainstLimitsBeforeAllocating) {
  Limits limits;
  limits.max_tensor_bytes = 1000;
  // [300, 1] x [1, 300] -> 90000 floats.
  auto r = KernelRunner("MatMul", 13)
               .WithLimits(limits)
               .Run({Floats({300, 1}, RandomUnit(300, 1)), Floats({1, 300}, RandomUnit(300, 2))});
  EXPECT_STATUS(r, StatusCode::kResourceExhausted, "max_tensor_bytes");
}

// ---- Gemm --------------------------------------------------------------------------------------

// float64 reference of alpha * op(A) op(B) + beta * C with C broadcast from c_shape.
std::vector<double> RefGemm(const std::vector<float>& a, const std::vector<float>& b,
                            const std::vector<float>* c, std::vector<int64_t> c_shape, int64_t m,
                            int64_t n, int64_t k, bool ta, bool tb, double alpha, double beta) {
  std::vector<double> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        s += static_cast<double>(ta ? a[p * m + i] : a[i * k + p]) *
             (tb ? b[j * k + p] : b[p * n + j]);
      }
      double cv = 0;
      if (c != nullptr) {
        while (c_shape.size() < 2) c_shape.insert(c_shape.begin(), 1);
        cv = (*c)[(c_shape[0] == 1 ? 0 : i) * c_shape[1] + (c_shape[1] == 1 ? 0 : j)];
      }
      y[i * n + j] = alpha * s + beta * cv;
    }
  }
  return y;
}

TEST(GemmTest, TransposesAlphaBetaAndEveryBroadcastOfC) {
  const int64_t m = 5, n = 7, k = 33;
  for (int trans = 0; trans < 4; ++trans) {
    const bool ta = trans & 1, tb = trans & 2;
    for (std::vector<int64_t> cs :
         std::vector<std::vector<int64_t>>{{}, {1}, {n}, {1, n}, {m, 1}, {m, n}, {1, 1}}) {
      SCOPED_TRACE(fmt::format("trans {} C [{}]", trans, fmt::join(cs, ",")));
      int64_t cn = 1;
      for (int64_t d : cs) cn *= d;
      const auto a = RandomUnit(m * k, 11), b = RandomUnit(k * n, 12), c = RandomUnit(cn, 13);
      auto make = [&] {
        KernelRunner r("Gemm", 13);
        r.IntAttr("transA", ta)
            .IntAttr("transB", tb)
            .FloatAttr("alpha", 0.5f)
            .FloatAttr("beta", -2.0f);
        return r;
      };
      auto out =
          RunAllWays(make, {Floats(ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, a),
                            Floats(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, b),
                            Floats(cs, c)});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{m, n}));
      ExpectClose(Doubles(out[0]), RefGemm(a, b, &c, cs, m, n, k, ta, tb, 0.5, -2.0));
    }
  }
}

TEST(GemmTest, OptionalCFromVersion11AndDefaults) {
  const auto a = RandomUnit(size_t{3} * 4, 14), b = RandomUnit(size_t{4} * 2, 15);
  for (int v : {11, 13}) {
    auto out =
        RunAllWays([v] { return KernelRunner("Gemm", v); }, {Floats({3, 4}, a), Floats({4, 2}, b)});
    ExpectClose(Doubles(out[0]), RefGemm(a, b, nullptr, {}, 3, 2, 4, false, false, 1, 1));
  }
  // beta = 0 does not read C (an infinite C gives no NaN).
  std::vector<float> inf(2, INFINITY);
  auto out = RunAllWays(
      [] {
        KernelRunner r("Gemm", 7);
        r.FloatAttr("beta", 0.0f);
        return r;
      },
      {Floats({3, 4}, a), Floats({4, 2}, b), Floats({2}, inf)});
  ExpectClose(Doubles(out[0]), RefGemm(a, b, nullptr, {}, 3, 2, 4, false, false, 1, 1));
}

TEST(GemmTest, Version1And6BroadcastAttribute) {
  const auto a = RandomUnit(size_t{2} * 3, 16), b = RandomUnit(size_t{3} * 4, 17),
             c = RandomUnit(4, 18);
  for (int v : {1, 6}) {
    SCOPED_TRACE(v);
    // broadcast=0 (the default) needs C of shape (M, N).
    EXPECT_STATUS(
        KernelRunner("Gemm", v).Run({Floats({2, 3}, a), Floats({3, 4}, b), Floats({4}, c)}),
        StatusCode::kInvalidArgument, "be (M, N) (attribute 'broadcast' is 0)");
    EXPECT_STATUS(
        KernelRunner("Gemm", v).Run({Floats({2, 3}, a), Floats({3, 4}, b), Floats({1, 4}, c)}),
        StatusCode::kInvalidArgument, "C's dim 0 is 1; it must be 2 (M");
    auto full = RandomUnit(8, 19);
    auto out = RunAllWays([v] { return KernelRunner("Gemm", v); },
                          {Floats({2, 3}, a), Floats({3, 4}, b), Floats({2, 4}, full)});
    ExpectClose(Doubles(out[0]), RefGemm(a, b, &full, {2, 4}, 2, 4, 3, false, false, 1, 1));
    out = RunAllWays(
        [v] {
          KernelRunner r("Gemm", v);
          r.IntAttr("broadcast", 1);
          return r;
        },
        {Floats({2, 3}, a), Floats({3, 4}, b), Floats({4}, c)});
    ExpectClose(Doubles(out[0]), RefGemm(a, b, &c, {4}, 2, 4, 3, false, false, 1, 1));
  }
  // `broadcast` is not an attribute of Gemm-7.
  EXPECT_STATUS(KernelRunner("Gemm", 7)
                    .IntAttr("broadcast", 1)
                    .Run({Floats({2, 3}, a), Floats({3, 4}, b), Floats({4}, c)}),
                StatusCode::kInvalidModel, "unknown attribute");
}

TEST(GemmTest, TypeSetsByVersion) {
  const auto a = RandomUnit(size_t{2} * 3, 20), b = RandomUnit(size_t{3} * 2, 21),
             c = RandomUnit(2, 22);
  for (E type : {E::kFloat16, E::kDouble, E::kBfloat16}) {
    SCOPED_TRACE(ElementTypeName(type));
    const Value va = FloatTensor(type, {2, 3}, a), vb = FloatTensor(type, {3, 2}, b),
                vc = FloatTensor(type, {2}, c);
    auto out = RunAllWays(
        [] {
          KernelRunner r("Gemm", 13);
          r.FloatAttr("alpha", 2.0f);
          return r;
        },
        {va, vb, vc});
    ASSERT_EQ(out[0].tensor().element_type(), type);
    auto ra = Doubles(va), rb = Doubles(vb), rc = Doubles(vc);
    std::vector<float> fa(ra.begin(), ra.end()), fb(rb.begin(), rb.end()), fc(rc.begin(), rc.end());
    ExpectClose(Doubles(out[0]), RefGemm(fa, fb, &fc, {2}, 2, 2, 3, false, false, 2, 1),
                type == E::kBfloat16 ? 8e-3 : 1e-3, 1e-5);
  }
  // Integers from version 9: exact wrap-around with alpha = beta = 1.
  auto out = RunAllWays([] { return KernelRunner("Gemm", 9); },
                        {MakeTensorOf<int64_t>(E::kInt64, {1, 2}, {INT64_MAX, 1}),
                         MakeTensorOf<int64_t>(E::kInt64, {2, 1}, {1, 1}),
                         MakeTensorOf<int64_t>(E::kInt64, {1}, {1})});
  EXPECT_EQ(out[0].tensor().data_as<int64_t>()[0], INT64_MIN + 1);
  // Other alpha: computed in double, truncated toward zero, saturated.
  out = RunAllWays(
      [] {
        KernelRunner r("Gemm", 11);
        r.FloatAttr("alpha", 0.5f).FloatAttr("beta", 3.0f);
        return r;
      },
      {MakeTensorOf<int32_t>(E::kInt32, {2, 1}, {7, INT32_MAX}),
       MakeTensorOf<int32_t>(E::kInt32, {1, 1}, {1}), MakeTensorOf<int32_t>(E::kInt32, {1}, {-1})});
  auto r = out[0].tensor().data_as<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(r.begin(), r.end()),
            (std::vector<int32_t>{0, 1073741820}));  // 3.5 - 3 -> 0; 1073741823.5 - 3
  out = RunAllWays(
      [] {
        KernelRunner r("Gemm", 13);
        r.FloatAttr("alpha", 4.0f);
        return r;
      },
      {MakeTensorOf<uint32_t>(E::kUint32, {1, 1}, {UINT32_MAX}),
       MakeTensorOf<uint32_t>(E::kUint32, {1, 1}, {1})});
  EXPECT_EQ(out[0].tensor().data_as<uint32_t>()[0], UINT32_MAX);  // saturated
  EXPECT_STATUS(KernelRunner("Gemm", 7).Run({MakeTensorOf<int32_t>(E::kInt32, {1, 1}, {1}),
                                             MakeTensorOf<int32_t>(E::kInt32, {1, 1}, {1}),
                                             MakeTensorOf<int32_t>(E::kInt32, {1}, {1})}),
                StatusCode::kInvalidModel, "not allowed");
  EXPECT_STATUS(
      KernelRunner("Gemm", 11)
          .Run({FloatTensor(E::kBfloat16, {1, 1}, {1}), FloatTensor(E::kBfloat16, {1, 1}, {1})}),
      StatusCode::kInvalidModel, "not allowed");
}

TEST(GemmTest, BadShapesAreRefusedWithTheRule) {
  auto run = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                const std::vector<int64_t>& c, bool unknown, int64_t ta = 0) {
    auto count = [](const std::vector<int64_t>& s) {
      int64_t n = 1;
      for (int64_t d : s) n *= d;
      return static_cast<size_t>(n);
    };
    KernelRunner r("Gemm", 13);
    r.IntAttr("transA", ta);
    if (unknown) r.UnknownShapes();
    return r.Run({Floats(a, RandomUnit(count(a), 1)), Floats(b, RandomUnit(count(b), 2)),
                  Floats(c, RandomUnit(count(c), 3))});
  };
  for (bool unknown : {false, true}) {
    EXPECT_STATUS(run({2, 3}, {4, 2}, {2}, unknown), StatusCode::kInvalidArgument,
                  "K differs between A (3, transA=0) and B (4");
    EXPECT_STATUS(run({3, 2}, {2, 2}, {2}, unknown, 1), StatusCode::kInvalidArgument,
                  "K differs between A (3, transA=1)");
    EXPECT_STATUS(run({2, 3, 1}, {3, 2}, {2}, unknown), StatusCode::kInvalidArgument,
                  "2-D A and B");
    EXPECT_STATUS(run({2, 3}, {3, 2}, {3}, unknown), StatusCode::kInvalidArgument,
                  "C's dim 0 is 3; it must be 2 or 1 (N");
    EXPECT_STATUS(run({2, 3}, {3, 2}, {3, 2}, unknown), StatusCode::kInvalidArgument,
                  "C's dim 0 is 3; it must be 2 or 1 (M");
    EXPECT_STATUS(run({2, 3}, {3, 2}, {1, 2, 2}, unknown), StatusCode::kInvalidArgument,
                  "C has rank 3");
  }
  Limits limits;
  limits.max_tensor_bytes = 1000;
  EXPECT_STATUS(
      KernelRunner("Gemm", 13)
          .WithLimits(limits)
          .Run({Floats({300, 1}, RandomUnit(300, 1)), Floats({1, 300}, RandomUnit(300, 2))}),
      StatusCode::kResourceExhausted, "max_tensor_bytes");
}

// Through the planner: C is required before Gemm-11; shape errors name the node.
TEST(GemmTest, PlannerChecksArityAndNamesTheNode) {
  const auto f32 = [](const std::vector<int64_t>& d) { return TensorTypeProto(E::kFloat, d); };
  for (int v : {7, 9}) {
    EXPECT_STATUS(PlanError(OneNode("Gemm", v, {{"a", f32({2, 3})}, {"b", f32({3, 4})}},
                                    {{"y", Unshaped(E::kFloat)}})),
                  StatusCode::kInvalidModel,
                  "has 2 inputs; Gemm-" + std::to_string(v) + " takes 3");
  }
  EXPECT_TRUE(
      PlanError(OneNode("Gemm", 11, {{"a", f32({2, 3})}, {"b", f32({3, 4})}}, {{"y", f32({2, 4})}}))
          .ok());
  EXPECT_STATUS(PlanError(OneNode("MatMul", 13, {{"a", f32({2, 3})}, {"b", f32({4, 4})}},
                                  {{"y", Unshaped(E::kFloat)}})),
                StatusCode::kInvalidArgument, "node 'n0' (MatMul-13)");
}

// Every Gemm and MatMul version onnx 1.12 knows: formal parameters, type sets and attributes
// as its schemas.
TEST(MatMulRegistryTest, MatchesLibonnxSchemas) {
  const auto& registry = KernelRegistry::Default();
  std::vector<int> gemm, matmul;
  for (const KernelSchema* s : registry.Versions("", "Gemm")) gemm.push_back(s->since_version);
  for (const KernelSchema* s : registry.Versions("", "MatMul")) matmul.push_back(s->since_version);
  EXPECT_EQ(gemm, (std::vector<int>{1, 6, 7, 9, 11, 13}));
  EXPECT_EQ(matmul, (std::vector<int>{1, 9, 13}));
  for (const auto& [op, versions] : {std::pair{"Gemm", gemm}, std::pair{"MatMul", matmul}}) {
    for (int version : versions) {
      SCOPED_TRACE(std::string(op) + "-" + std::to_string(version));
      const onnx::OpSchema* theirs = onnx::OpSchemaRegistry::Schema(op, version, "");
      ASSERT_NE(theirs, nullptr);
      const KernelSchema* ours = registry.Resolve("", op, version);
      ASSERT_EQ(ours->inputs.size(), theirs->inputs().size());
      for (size_t i = 0; i < ours->inputs.size(); ++i) {
        EXPECT_EQ(ours->inputs[i].name, theirs->inputs()[i].GetName());
        EXPECT_EQ(ours->inputs[i].type_param, theirs->inputs()[i].GetTypeStr());
        EXPECT_EQ(static_cast<int>(ours->inputs[i].arity),
                  static_cast<int>(theirs->inputs()[i].GetOption()));
      }
      ASSERT_EQ(ours->outputs.size(), theirs->outputs().size());
      for (const auto& param : theirs->typeConstraintParams()) {
        const TypeConstraint* c = ours->FindConstraint(param.type_param_str);
        ASSERT_NE(c, nullptr);
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
}

// ---- Hardening (issue 17)
// ------------------------------------------------------------------------

TEST(MatMulTest, WorkIsBoundedByMaxElements) {
  Limits limits;
  limits.max_elements = 1 << 12;
  // One output of K = 8192 multiply-adds: over a bound of 4096, however small the output.
  const Value a = Floats({1, 8192}, RandomUnit(8192, 5));
  const Value b = Floats({8192, 1}, RandomUnit(8192, 6));
  for (bool unknown : {false, true}) {
    KernelRunner m("MatMul", 13);
    m.WithLimits(limits);
    if (unknown) m.UnknownShapes();
    EXPECT_STATUS(m.Run({a, b}), StatusCode::kResourceExhausted,
                  "MatMul: the node's work, 8192 multiply-adds (outputs x K), exceeds the per-node "
                  "work bound max_elements = 4096");
    KernelRunner g("Gemm", 13);
    g.WithLimits(limits);
    if (unknown) g.UnknownShapes();
    EXPECT_STATUS(g.Run({a, b}), StatusCode::kResourceExhausted, "Gemm: the node's work, 8192");
  }
  EXPECT_TRUE(
      KernelRunner("MatMul", 13)
          .WithLimits(limits)
          .Run({Floats({1, 4096}, RandomUnit(4096, 5)), Floats({4096, 1}, RandomUnit(4096, 6))})
          .ok());
}

}  // namespace
}  // namespace idem::testing
