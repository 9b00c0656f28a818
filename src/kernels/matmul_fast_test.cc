// The fast float Gemm and MatMul (matmul.cc, "Fast float Gemm and MatMul") against the reference
// kernels (SessionOptions::reference_kernels) over shape sweeps: 1 x 1, odd sizes around the
// 16-wide panels and the register tiles, GEMV (one row), 1-D operands, broadcast batches, transA /
// transB, alpha / beta, every shape C may have. Tolerance: |fast - reference| <= 1e-5 * (sum of
// |terms|) (the reference kernel run on the operands' magnitudes). Also checked for every case
// (tests/fast_test_util.h): the same bits with B (and C) constant or fed, on a second run, with 2
// and 3 threads, and on every SIMD target of this machine.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/kernels/fast/thread_pool.h"
#include "tests/fast_test_util.h"
#include "tests/kernel_runner.h"

namespace idem::testing {
namespace {

using Dims = std::vector<int64_t>;

TEST(MatMulFast, MatchesTheReferenceOverTheSweep) {
  struct Spec {
    Dims a, b;
  };
  const std::vector<Spec> specs = {
      {{1, 1}, {1, 1}},
      {{1, 7}, {7, 33}},
      {{5, 3}, {3, 17}},
      {{17, 129}, {129, 31}},
      {{64, 48}, {48, 300}},
      {{9, 16}, {16, 16}},
      {{1, 256}, {256, 512}},
      {{4, 258}, {258, 1}},
      {{7}, {7, 5}},
      {{3, 7}, {7}},
      {{7}, {7}},
      {{2, 3, 4, 5}, {5, 6}},
      {{3, 1, 4, 5}, {2, 5, 6}},
      {{2, 6, 40}, {2, 40, 19}},
      {{1, 8, 80, 12}, {1, 8, 12, 80}},
      {{3, 0}, {0, 4}},
      {{0, 3}, {3, 4}},
  };
  uint32_t seed = 1;
  for (const Spec& s : specs) {
    FastCase c;
    c.make = [] { return KernelRunner("MatMul", 13); };
    c.inputs = {RandomTensor(s.a, seed), RandomTensor(s.b, seed + 1)};
    seed += 3;
    c.weights = {1};
    c.linear = true;
    c.mtol = 1e-5;
    CheckFast(c, "MatMul case " + std::to_string(&s - specs.data()));
  }
}

TEST(GemmFast, MatchesTheReferenceOverTheSweep) {
  struct Spec {
    int64_t m, k, n;
    bool ta, tb;
    float alpha, beta;
    Dims c;  // empty: no C
  };
  const std::vector<Spec> specs = {
      {1, 1, 1, false, false, 1.0f, 1.0f, {}},
      {1, 96, 64, false, true, 1.0f, 1.0f, {64}},
      {1, 1536, 96, false, false, 1.0f, 1.0f, {1, 96}},
      {3, 5, 7, true, false, 0.5f, 2.0f, {3, 7}},
      {3, 5, 7, false, true, 2.0f, 0.25f, {3, 1}},
      {17, 33, 29, true, true, 1.5f, 1.0f, {1}},
      {8, 16, 48, false, false, 1.0f, 0.0f, {8, 48}},
      {31, 40, 1, false, true, 1.0f, 1.0f, {31, 1}},
      {2, 128, 512, false, true, 1.0f, 1.0f, {512}},
      {65, 70, 33, false, false, 0.125f, 3.0f, {65, 33}},
      {4, 0, 5, false, false, 1.0f, 1.0f, {5}},
  };
  uint32_t seed = 50;
  for (const Spec& s : specs) {
    FastCase c;
    c.make = [s] {
      KernelRunner r("Gemm", 13);
      if (s.ta) r.IntAttr("transA", 1);
      if (s.tb) r.IntAttr("transB", 1);
      if (s.alpha != 1.0f) r.FloatAttr("alpha", s.alpha);
      if (s.beta != 1.0f) r.FloatAttr("beta", s.beta);
      return r;
    };
    c.inputs = {RandomTensor(s.ta ? Dims{s.k, s.m} : Dims{s.m, s.k}, seed),
                RandomTensor(s.tb ? Dims{s.n, s.k} : Dims{s.k, s.n}, seed + 1)};
    if (!s.c.empty()) c.inputs.push_back(RandomTensor(s.c, seed + 2));
    seed += 3;
    c.weights = {1, 2};
    if (s.c.empty()) c.weights = {1};
    c.linear = true;  // alpha, beta > 0: the reference on magnitudes is the sum of |terms|
    c.mtol = 1e-5;
    CheckFast(c, "Gemm " + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
                     std::to_string(s.n) + (s.ta ? " transA" : "") + (s.tb ? " transB" : ""));
  }
}

TEST(GemmFast, LargeProductsSplitOverThreadsWithTheSameBits) {
  FastCase c;
  c.make = [] { return KernelRunner("Gemm", 13).IntAttr("transB", 1); };
  c.inputs = {RandomTensor({200, 300}, 1), RandomTensor({100, 300}, 2), RandomTensor({100}, 3)};
  c.weights = {1, 2};
  c.linear = true;
  c.mtol = 1e-5;
  CheckFast(c, "Gemm 200x300x100");
  fast::ThreadPool pool(2);
  ASSERT_TRUE(RunFast(c, false, true, &pool).ok());
  EXPECT_GT(pool.splits(), 0u);
}

TEST(MatMulFast, OtherTypesRunTheReferenceKernel) {
  for (ElementType e : {ElementType::kFloat16, ElementType::kDouble}) {
    const std::vector<Value> in = {FloatTensor(e, {3, 4}, RandomUnit(12, 1)),
                                   FloatTensor(e, {4, 5}, RandomUnit(20, 2))};
    auto fast = KernelRunner("MatMul", 13).ConstantInput(1).Run(in);
    auto reference = KernelRunner("MatMul", 13).ConstantInput(1).Reference().Run(in);
    ASSERT_TRUE(fast.ok() && reference.ok());
    EXPECT_EQ(DescribeDifference((*reference)[0], (*fast)[0]), std::nullopt);
  }
}

TEST(GemmFast, BadInputStillRefused) {
  auto r = KernelRunner("Gemm", 13).Run({RandomTensor({2, 3}, 1), RandomTensor({4, 5}, 2)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("K differs"), std::string::npos) << r.status().message();
  auto c = KernelRunner("Gemm", 13)
               .Run({RandomTensor({2, 3}, 1), RandomTensor({3, 5}, 2), RandomTensor({3}, 3)});
  ASSERT_FALSE(c.ok());
  auto m = KernelRunner("MatMul", 13).Run({RandomTensor({2, 3}, 1), RandomTensor({4, 5}, 2)});
  ASSERT_FALSE(m.ok());
  // The per-run packing of a fed B is checked against the run budget.
  Limits small;
  small.max_run_bytes = 8192;
  auto over = KernelRunner("Gemm", 13)
                  .WithLimits(small)
                  .Run({RandomTensor({1, 64}, 1), RandomTensor({64, 64}, 2)});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted) << over.status().message();
}

}  // namespace
}  // namespace idem::testing
