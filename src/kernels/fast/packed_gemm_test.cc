// The packed GEMM/GEMV (packed_gemm.h) against
//  - the contract as a scalar loop (one std::fma per step in increasing k, then the bias add and
//    the activation in float): every result must have exactly its bits, on every SIMD target
//    this machine has, with every thread count and packed or not;
//  - a naive double-precision reference: within rtol 1e-5 of the magnitude of the terms
//    (|init| + |bias| + sum |a b|, the scale a float sum's rounding error is measured against);
// over shapes m, n, k from 1 to 300 (odd sizes, every tail of the 16-wide panels and of the
// register tiles), transposed B, beta 0 / 1 / other, every epilogue.
#include "src/kernels/fast/packed_gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "src/core/block_cache.h"
#include "src/kernels/fast/simd.h"
#include "src/kernels/fast/vector_math.h"

extern "C" float Sleef_finz_expf1_u10purecfma(float);

namespace idem::fast {
namespace {

using Kind = Activation::Kind;

std::vector<float> RandomValues(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The activation of the contract, in scalar float (the same formulas as the kernel).
float ActivateKindScalar(float x, const Activation& act);
float ActivateScalar(float x, const Activation& act) {
  x = ActivateKindScalar(x, act);
  if (x < act.lower) x = act.lower;
  if (act.scaled) x = x * act.scale;
  if (act.shifted) x = x + act.shift;
  return x;
}
float ActivateKindScalar(float x, const Activation& act) {
  switch (act.kind) {
    case Kind::kNone:
      return x;
    case Kind::kRelu:
      return x < 0.0f ? 0.0f : x;
    case Kind::kLeakyRelu:
      return x < 0.0f ? x * act.alpha : x;
    case Kind::kClip:
      return x < act.alpha ? act.alpha : (x > act.beta ? act.beta : x);
    case Kind::kHardSigmoid: {
      const float y = act.alpha * x + act.beta;
      return y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
    }
    case Kind::kSigmoid: {
      const float e = Sleef_finz_expf1_u10purecfma(-std::abs(x));
      return (x < 0.0f ? e : 1.0f) / (1.0f + e);
    }
    case Kind::kHardSwish: {
      float t = x + act.alpha;
      t = t < act.beta ? act.beta : (t > act.gamma ? act.gamma : t);
      return (x * t) / act.delta;
    }
  }
  return x;
}

double ActivateKindDouble(double x, const Activation& act);
double ActivateDouble(double x, const Activation& act) {
  x = ActivateKindDouble(x, act);
  if (x < act.lower) x = act.lower;
  if (act.scaled) x = x * act.scale;
  if (act.shifted) x = x + act.shift;
  return x;
}
double ActivateKindDouble(double x, const Activation& act) {
  switch (act.kind) {
    case Kind::kNone:
      return x;
    case Kind::kRelu:
      return x < 0 ? 0 : x;
    case Kind::kLeakyRelu:
      return x < 0 ? x * act.alpha : x;
    case Kind::kClip:
      return std::min<double>(std::max<double>(x, act.alpha), act.beta);
    case Kind::kHardSigmoid:
      return std::min(1.0, std::max(0.0, double{act.alpha} * x + act.beta));
    case Kind::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Kind::kHardSwish:
      return x * std::min<double>(std::max<double>(x + act.alpha, act.beta), act.gamma) / act.delta;
  }
  return x;
}

// HardSwish as exporters write it, then a Max with a constant and an affine step.
Activation HardSwishAffine() {
  Activation a;
  a.kind = Kind::kHardSwish;
  a.alpha = 3.0f;
  a.beta = 0.0f;
  a.gamma = 6.0f;
  a.delta = 6.0f;
  a.lower = -0.3f;
  a.scaled = true;
  a.scale = 0.75f;
  a.shifted = true;
  a.shift = -0.125f;
  return a;
}

// One product to check: A (m x k, row stride lda), B as given (k x n or, transposed, n x k, row
// stride ldb), C's old values (m x n, row stride ldc; the padding between rows is a sentinel
// that must survive).
struct Case {
  int64_t m, n, k;
  bool transposed = false;
  float beta = 0.0f;
  float scale = 1.0f;
  bool bias = false;
  bool bias_per_row = false;
  bool transposed_c = false;  // c holds the product transposed: (i, j) at c[j * ldc + i]
  Activation act;
  int64_t lda, ldb, ldc;
  std::vector<float> a, b, c0, bias_values;

  std::string Name() const {
    return "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
           (transposed ? " transposed" : "") + (transposed_c ? " c^T" : "") +
           " beta=" + std::to_string(beta) + " scale=" + std::to_string(scale) +
           (bias ? (bias_per_row ? " bias/row" : " bias/col") : "") +
           " act=" + std::to_string(static_cast<int>(act.kind));
  }
  float B(int64_t p, int64_t j) const { return transposed ? b[j * ldb + p] : b[p * ldb + j]; }
  size_t C(int64_t i, int64_t j) const {
    return static_cast<size_t>(transposed_c ? j * ldc + i : i * ldc + j);
  }
  Epilogue MakeEpilogue() const {
    Epilogue ep;
    ep.bias = bias ? bias_values.data() : nullptr;
    ep.bias_per_row = bias_per_row;
    ep.activation = act;
    ep.transposed_c = transposed_c;
    return ep;
  }
};

constexpr float kSentinel = -12345.5f;

Case MakeCase(int64_t m, int64_t n, int64_t k, std::mt19937& rng, bool transposed = false,
              float beta = 0.0f, Activation act = {}, bool bias = false, bool bias_per_row = false,
              int64_t pad = 0, bool transposed_c = false) {
  Case t;
  t.transposed_c = transposed_c;
  t.m = m;
  t.n = n;
  t.k = k;
  t.transposed = transposed;
  t.beta = beta;
  t.act = act;
  t.bias = bias;
  t.bias_per_row = bias_per_row;
  t.lda = k + pad;
  t.ldb = (transposed ? k : n) + pad;
  t.ldc = (transposed_c ? m : n) + pad;
  t.a = RandomValues(static_cast<size_t>(m * t.lda), rng);
  t.b = RandomValues(static_cast<size_t>((transposed ? n : k) * t.ldb), rng);
  t.c0.assign(static_cast<size_t>((transposed_c ? n : m) * t.ldc), kSentinel);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      // beta == 0: c is only written, so start from garbage (NaN) to prove it is never read.
      t.c0[t.C(i, j)] = beta == 0.0f ? std::numeric_limits<float>::quiet_NaN()
                                     : std::uniform_real_distribution<float>(-1, 1)(rng);
    }
  }
  t.bias_values = RandomValues(static_cast<size_t>(bias_per_row ? m : n), rng);
  return t;
}

// The contract, one std::fma per step.
std::vector<float> Model(const Case& t) {
  std::vector<float> c = t.c0;
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < t.n; ++j) {
      float& out = c[t.C(i, j)];
      float s = t.beta == 0.0f ? 0.0f : (t.beta == 1.0f ? out : t.beta * out);
      for (int64_t p = 0; p < t.k; ++p) {
        const float bv = t.scale == 1.0f ? t.B(p, j) : t.B(p, j) * t.scale;
        s = std::fma(t.a[i * t.lda + p], bv, s);
      }
      if (t.bias) s += t.bias_values[t.bias_per_row ? i : j];
      out = ActivateScalar(s, t.act);
    }
  }
  return c;
}

// Checks against the double reference: before the activation within rtol 1e-5 of the terms'
// magnitude; the activation is then applied to both (it only contracts errors, except Sigmoid's
// own few ulp, covered by the 1e-5 relative slack on its result).
void ExpectNearReference(const Case& t, const std::vector<float>& c) {
  int reported = 0;
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < t.n; ++j) {
      const double old = t.c0[t.C(i, j)];
      double s = t.beta == 0.0f ? 0.0 : double{t.beta} * old;
      double mag = std::abs(s);
      for (int64_t p = 0; p < t.k; ++p) {
        const double term = double{t.a[i * t.lda + p]} * (double{t.B(p, j)} * double{t.scale});
        s += term;
        mag += std::abs(term);
      }
      if (t.bias) {
        const double bias = t.bias_values[t.bias_per_row ? i : j];
        s += bias;
        mag += std::abs(bias);
      }
      const double want = ActivateDouble(s, t.act);
      const double got = c[t.C(i, j)];
      const double tol = 1e-5 * (mag + std::abs(want)) + 1e-30;
      if (!(std::abs(got - want) <= tol) && reported++ < 5) {
        ADD_FAILURE() << t.Name() << " c[" << i << "][" << j << "] = " << got << ", reference "
                      << want << " (tolerance " << tol << ")";
      }
    }
  }
}

void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& want,
                    const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]) && reported++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << " (0x" << std::hex
                    << std::bit_cast<uint32_t>(got[i]) << "), the contract gives " << want[i]
                    << " (0x" << std::bit_cast<uint32_t>(want[i]) << std::dec << ")";
    }
  }
}

std::vector<float> RunPacked(const Case& t, const TaskRunner* runner = nullptr) {
  const PackedB packed = PackB(t.b.data(), t.ldb, t.k, t.n, t.transposed, t.scale);
  std::vector<float> c = t.c0;
  GemmPacked(t.a.data(), t.lda, packed, c.data(), t.ldc, t.m, t.beta, t.MakeEpilogue(), runner);
  return c;
}

std::vector<float> RunUnpacked(const Case& t, const TaskRunner* runner = nullptr) {
  std::vector<float> c = t.c0;
  GemmUnpacked(t.a.data(), t.lda, t.b.data(), t.ldb, c.data(), t.ldc, t.m, t.n, t.k, t.beta,
               t.MakeEpilogue(), runner);
  return c;
}

// Runs tasks on `threads` fresh threads (the first on the caller), each taking the next task.
class ThreadRunner final : public TaskRunner {
 public:
  explicit ThreadRunner(int threads) : threads_(threads) {}
  int concurrency() const override { return threads_; }
  int runs() const { return runs_.load(); }
  void Run(int64_t count, void (*fn)(void*, int64_t), void* context) const override {
    runs_.fetch_add(1);
    std::atomic<int64_t> next{0};
    auto work = [&] {
      for (int64_t t; (t = next.fetch_add(1)) < count;) fn(context, t);
    };
    std::vector<std::thread> pool;
    for (int i = 1; i < threads_; ++i) pool.emplace_back(work);
    work();
    for (std::thread& th : pool) th.join();
  }

 private:
  int threads_;
  mutable std::atomic<int> runs_{0};
};

// Shapes: every size class the kernels treat differently (1, below and above a vector, a panel
// of 16, the tile widths 16/48/64/128 and their neighbours, odd sizes up to 300).
const std::vector<int64_t> kSizes = {1,  2,  3,  5,  7,  8,  9,   15,  16,  17,  31,  33,
                                     47, 48, 49, 63, 64, 65, 100, 127, 128, 129, 255, 300};

std::vector<Case> ManyCases() {
  std::mt19937 rng(20240518);
  std::vector<Case> cases;
  const std::vector<int64_t> ks = {1, 2, 3, 9, 16, 27, 64, 129, 300};
  const Activation acts[] = {Activation::None(),
                             Activation::Relu(),
                             Activation::LeakyRelu(0.1f),
                             Activation::Clip(-0.25f, 0.5f),
                             Activation::HardSigmoid(0.2f, 0.5f),
                             Activation::Sigmoid(),
                             HardSwishAffine()};
  int variant = 0;
  for (int64_t m : kSizes) {
    for (int64_t n : kSizes) {
      // Two k per (m, n), cycling through ks, and every variant in turn; the big ones capped so
      // the whole suite stays fast.
      for (int r = 0; r < 2; ++r) {
        const int64_t k = ks[(variant + r * 4) % ks.size()];
        if (m * n * k > 4'000'000) continue;
        const int v = variant++;
        const float beta = v % 3 == 0 ? 0.0f : (v % 3 == 1 ? 1.0f : 0.5f);
        cases.push_back(MakeCase(m, n, k, rng, v % 2 == 1, beta, acts[v % 6], v % 4 != 0,
                                 v % 8 == 3, v % 5 == 0 ? 3 : 0, v % 9 == 4));
        if (v % 7 == 0) cases.back().scale = 0.75f;
      }
    }
  }
  // The largest shapes of the brief, once each.
  cases.push_back(MakeCase(300, 300, 300, rng, false, 0.0f, {}, true));
  cases.push_back(MakeCase(1, 300, 300, rng, true, 1.0f, Activation::Sigmoid(), true));
  cases.push_back(MakeCase(300, 1, 300, rng, false, 0.5f, Activation::Relu()));
  return cases;
}

TEST(PackedGemm, MatchesTheContractAndTheReference) {
  for (const Case& t : ManyCases()) {
    SCOPED_TRACE(t.Name());
    const std::vector<float> want = Model(t);
    const std::vector<float> packed = RunPacked(t);
    ExpectSameBits(packed, want, "packed " + t.Name());
    ExpectNearReference(t, packed);
    if (!t.transposed && t.scale == 1.0f) {
      ExpectSameBits(RunUnpacked(t), want, "unpacked " + t.Name());
    }
    if (::testing::Test::HasFailure()) return;
  }
}

// Same bits on every run, thread count and SIMD target (each target this machine has, forced).
TEST(PackedGemm, DeterministicAcrossRunsThreadsAndTargets) {
  std::mt19937 rng(7);
  std::vector<Case> cases;
  cases.push_back(MakeCase(64, 6400 / 16, 576, rng, false, 0.0f, Activation::Relu(), true, true));
  cases.push_back(MakeCase(1, 512, 256, rng, true, 0.0f, {}, true));
  cases.push_back(MakeCase(1, 4096, 600, rng, false, 0.0f, Activation::LeakyRelu(0.01f), true));
  cases.push_back(MakeCase(97, 131, 77, rng, true, 1.0f, Activation::Sigmoid(), true));
  cases.push_back(MakeCase(257, 131, 77, rng, true, 1.0f, Activation::Sigmoid(), true));
  cases.push_back(MakeCase(300, 33, 300, rng, false, 0.5f, Activation::HardSigmoid(0.2f, 0.5f)));
  cases.push_back(MakeCase(4, 258, 256, rng, true, 0.0f, Activation::Relu(), true, false, 0, true));
  cases.push_back(MakeCase(400, 64, 90, rng, false, 1.0f, {}, true, false, 5, true));
  const std::vector<int64_t> targets = SimdTargets();
  ASSERT_FALSE(targets.empty());
  for (const Case& t : cases) {
    SCOPED_TRACE(t.Name());
    const std::vector<float> want = Model(t);
    const std::vector<float> first = RunPacked(t);
    ExpectSameBits(first, want, "packed");
    ExpectSameBits(RunPacked(t), first, "second run");
    for (int threads : {1, 2, 3, 4, 7}) {
      const ThreadRunner runner(threads);
      ExpectSameBits(RunPacked(t, &runner), first, std::to_string(threads) + " threads");
      // Products of 2^21 multiply-adds and more are split (smaller ones stay on one thread).
      if (threads > 1 && t.m * t.n * t.k >= (int64_t{1} << 21)) {
        EXPECT_GT(runner.runs(), 0) << "not split over " << threads << " threads";
      }
      if (!t.transposed) {
        ExpectSameBits(RunUnpacked(t, &runner), first, std::to_string(threads) + " unpacked");
      }
    }
    for (int64_t target : targets) {
      const ScopedSimdTarget forced(target);
      ASSERT_EQ(ActiveSimdTarget(), target) << SimdTargetName(target);
      const ThreadRunner runner(2);
      ExpectSameBits(RunPacked(t), first, SimdTargetName(target));
      ExpectSameBits(RunPacked(t, &runner), first, SimdTargetName(target) + ", 2 threads");
      if (!t.transposed)
        ExpectSameBits(RunUnpacked(t), first, SimdTargetName(target) + " unpacked");
    }
  }
}

// Every target on the general shape sweep too (the baseline's and AVX2's tile tails differ from
// AVX-512's): a subset of ManyCases to keep it quick.
TEST(PackedGemm, EveryTargetMatchesTheContract) {
  const std::vector<Case> cases = ManyCases();
  for (int64_t target : SimdTargets()) {
    const ScopedSimdTarget forced(target);
    for (size_t i = 0; i < cases.size(); i += 5) {
      const Case& t = cases[i];
      const std::vector<float> want = Model(t);
      ExpectSameBits(RunPacked(t), want, SimdTargetName(target) + " packed " + t.Name());
      if (!t.transposed && t.scale == 1.0f) {
        ExpectSameBits(RunUnpacked(t), want, SimdTargetName(target) + " unpacked " + t.Name());
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(PackedGemm, ReportsTheTargets) {
  const std::vector<int64_t> targets = SimdTargets();
  ASSERT_FALSE(targets.empty());
  std::string names;
  for (int64_t t : targets) names += SimdTargetName(t) + " ";
  // The baseline is always there, and the best target is the one dispatched to.
  EXPECT_EQ(ActiveSimdTarget(), targets.front()) << names;
  const std::string baseline = SimdTargetName(targets.back());
  EXPECT_TRUE(baseline == "EMU128" || baseline == "SCALAR") << names;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_NE(names.find("AVX2"), std::string::npos) << names;
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    EXPECT_EQ(SimdTargetName(targets.front()), "AVX3") << names;
  }
  std::cout << "fast kernel targets on this machine: " << names << "\n";
}

TEST(PackedGemm, ZeroSizes) {
  std::mt19937 rng(3);
  // k == 0: c = act(init + bias).
  for (float beta : {0.0f, 1.0f, 2.0f}) {
    Case t = MakeCase(5, 37, 0, rng, false, beta, Activation::Clip(-0.5f, 0.25f), true);
    ExpectSameBits(RunPacked(t), Model(t), "k == 0");
    ExpectSameBits(RunUnpacked(t), Model(t), "k == 0 unpacked");
  }
  // m == 0 or n == 0: nothing is touched.
  std::vector<float> c(8, kSentinel);
  const std::vector<float> a(8, 1.0f);
  const PackedB empty_n = PackB(a.data(), 2, 0, false);
  EXPECT_EQ(empty_n.bytes(), 0u);
  GemmPacked(a.data(), 2, empty_n, c.data(), 4, 2);
  const PackedB b = PackB(a.data(), 2, 4, false);
  GemmPacked(a.data(), 2, b, c.data(), 4, 0);
  GemmUnpacked(a.data(), 2, a.data(), 4, c.data(), 4, 2, 0, 2);
  for (float v : c) EXPECT_EQ(v, kSentinel);
}

TEST(PackedGemm, NaNPropagatesThroughEveryActivation) {
  for (const Activation& act : {Activation::None(), Activation::Relu(), Activation::LeakyRelu(0.1f),
                                Activation::Clip(-1.0f, 1.0f), Activation::HardSigmoid(0.2f, 0.5f),
                                Activation::Sigmoid(), HardSwishAffine()}) {
    std::mt19937 rng(11);
    Case t = MakeCase(3, 40, 5, rng, false, 0.0f, act);
    t.a[1 * t.lda + 2] = std::numeric_limits<float>::quiet_NaN();  // row 1 is all NaN
    for (int64_t target : SimdTargets()) {
      const ScopedSimdTarget forced(target);
      const std::vector<float> c = RunPacked(t);
      for (int64_t j = 0; j < t.n; ++j) {
        EXPECT_TRUE(std::isnan(c[1 * t.ldc + j]))
            << SimdTargetName(target) << " act " << static_cast<int>(act.kind) << " j " << j;
        EXPECT_FALSE(std::isnan(c[0 * t.ldc + j]));
      }
    }
  }
}

TEST(PackedGemm, ActivationsAtTheirEdges) {
  // One column of A times an identity B: the activations see exactly the values of A.
  const std::vector<float> x = {-std::numeric_limits<float>::infinity(),
                                -100.0f,
                                -2.5f,
                                -1.0f,
                                -0.0f,
                                0.0f,
                                0.25f,
                                1.0f,
                                2.5f,
                                100.0f,
                                std::numeric_limits<float>::infinity()};
  const int64_t m = static_cast<int64_t>(x.size());
  const float one = 1.0f;
  const PackedB identity = PackB(&one, 1, 1, false);
  for (const Activation& act :
       {Activation::Relu(), Activation::LeakyRelu(0.1f), Activation::Clip(-1.0f, 2.0f),
        Activation::HardSigmoid(0.2f, 0.5f), Activation::Sigmoid()}) {
    std::vector<float> c(x.size());
    Epilogue ep;
    ep.activation = act;
    GemmPacked(x.data(), 1, identity, c.data(), 1, m, 0.0f, ep);
    for (size_t i = 0; i < x.size(); ++i) {
      // s = fma(x, 1, 0): -0 becomes +0, everything else stays itself.
      const float s = std::fma(x[i], 1.0f, 0.0f);
      EXPECT_EQ(std::bit_cast<uint32_t>(c[i]), std::bit_cast<uint32_t>(ActivateScalar(s, act)))
          << "act " << static_cast<int>(act.kind) << " x " << x[i];
      const double want = ActivateDouble(x[i], act);
      if (std::isinf(want)) {
        EXPECT_EQ(c[i], want) << x[i];
      } else {
        EXPECT_NEAR(c[i], want, 1e-6 * std::max(1.0, std::abs(want))) << x[i];
      }
    }
  }
}

// A fused Sigmoid gives the bits of the product followed by vector_math's Sigmoid.
TEST(PackedGemm, FusedSigmoidIsVectorMathSigmoid) {
  std::mt19937 rng(9);
  Case fused = MakeCase(37, 70, 45, rng, false, 0.0f, Activation::Sigmoid(), true);
  Case plain = fused;
  plain.act = Activation::None();
  const std::vector<float> want_fused = RunPacked(fused);
  std::vector<float> after = RunPacked(plain);
  for (int64_t i = 0; i < plain.m; ++i) {
    std::span<float> row(after.data() + i * plain.ldc, static_cast<size_t>(plain.n));
    Sigmoid(row, row);
  }
  ExpectSameBits(want_fused, after, "fused vs after");
}

TEST(PackedGemm, PackBPartsStacksRows) {
  std::mt19937 rng(5);
  // LSTM-like: W is 4H x I, R is 4H x H (both transposed), stacked along k.
  const int64_t hidden = 24, input = 13, n = 4 * hidden;
  const std::vector<float> w = RandomValues(static_cast<size_t>(n * input), rng);
  const std::vector<float> r = RandomValues(static_cast<size_t>(n * hidden), rng);
  std::vector<float> stacked(static_cast<size_t>(n * (input + hidden)));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t p = 0; p < input; ++p) stacked[j * (input + hidden) + p] = w[j * input + p];
    for (int64_t p = 0; p < hidden; ++p) {
      stacked[j * (input + hidden) + input + p] = r[j * hidden + p];
    }
  }
  const BPart parts[] = {{w.data(), input, input}, {r.data(), hidden, hidden}};
  const PackedB from_parts = PackBParts(parts, n, true);
  const PackedB whole = PackB(stacked.data(), input + hidden, n, true);
  ASSERT_EQ(from_parts.k(), input + hidden);
  ASSERT_EQ(from_parts.bytes(), whole.bytes());
  EXPECT_EQ(std::memcmp(from_parts.data(), whole.data(), whole.bytes()), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(whole.data()) % 64, 0u);
  // The padding columns are zeros.
  EXPECT_EQ(whole.panels(), 6);
  EXPECT_EQ(whole.bytes(), static_cast<size_t>(int64_t{6} * 16 * (input + hidden)) * sizeof(float));
}

// The layout, float by float, in both orientations and with a scale, from memory that held NaNs:
// the block cache hands out blocks uninitialized, so every value and every zero of the last
// panel's padding must be written by the packing itself.
TEST(PackedGemm, PackBWritesEveryFloatOfItsLayout) {
  std::mt19937 rng(12);
  for (const bool transposed : {false, true}) {
    for (const float scale : {1.0f, 0.5f}) {
      const int64_t k = 19, n = 37, ld = transposed ? k + 3 : n + 5;
      const std::vector<float> b =
          RandomValues(static_cast<size_t>(ld * (transposed ? n : k)), rng);
      const size_t bytes = static_cast<size_t>(PackedBBytes(k, n));
      std::byte* dirty = block_cache::AllocateScratch(bytes);
      ASSERT_NE(dirty, nullptr);
      std::memset(dirty, 0xFF, bytes);  // NaN bit patterns
      block_cache::FreeScratch(dirty);
      const PackedB packed = PackB(b.data(), ld, k, n, transposed, scale);
      ASSERT_EQ(packed.bytes(), bytes);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(packed.data()) % 64, 0u);
      for (int64_t panel = 0; panel < packed.panels(); ++panel) {
        for (int64_t p = 0; p < k; ++p) {
          for (int64_t c = 0; c < kPanelWidth; ++c) {
            const int64_t j = panel * kPanelWidth + c;
            const float want = j >= n ? 0.0f : (transposed ? b[j * ld + p] : b[p * ld + j]) * scale;
            const float got = packed.data()[(panel * k + p) * kPanelWidth + c];
            ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
                << "transposed " << transposed << " scale " << scale << " row " << p << " column "
                << j;
          }
        }
      }
    }
  }
}

TEST(PackedGemm, PackedBBytes) {
  EXPECT_EQ(PackedBBytes(10, 1), 10 * 16 * 4);
  EXPECT_EQ(PackedBBytes(10, 16), 10 * 16 * 4);
  EXPECT_EQ(PackedBBytes(10, 17), 10 * 32 * 4);
  EXPECT_EQ(PackedBBytes(0, 17), 0);
  EXPECT_EQ(PackedBBytes(3, 0), 0);
  EXPECT_EQ(PackedBBytes(-1, 4), -1);
  EXPECT_EQ(PackedBBytes(int64_t{1} << 40, int64_t{1} << 30), -1);
  EXPECT_EQ(PackedBBytes(std::numeric_limits<int64_t>::max(), 1), -1);
}

}  // namespace
}  // namespace idem::fast
