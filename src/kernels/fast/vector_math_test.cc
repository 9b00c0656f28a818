// The vector math (vector_math.h) against std:: in double precision, over a sweep of float bit
// patterns (every 1021st of the 2^32, so every binade, both signs, zeros, subnormals, infinities
// and NaNs): the largest error in ulp of the correctly rounded result, bounded per function;
// special values; the same bits on every SIMD target this machine has; tails and in-place use.
#include "src/kernels/fast/vector_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "src/kernels/fast/simd.h"

extern "C" {
float Sleef_finz_expf1_u10purecfma(float);
float Sleef_finz_logf1_u10purecfma(float);
float Sleef_finz_tanhf1_u10purecfma(float);
float Sleef_cinz_expf1_u10purec(float);
float Sleef_cinz_logf1_u10purec(float);
float Sleef_cinz_tanhf1_u10purec(float);
}

namespace idem::fast {
namespace {

using VectorFn = void (*)(std::span<const float>, std::span<float>);

struct Function {
  const char* name;
  VectorFn fn;
  double (*reference)(double);
  double max_ulp;  // the bound the test enforces (the measured value is printed)
};

double SigmoidReference(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double ExpReference(double x) { return std::exp(x); }
double LogReference(double x) { return std::log(x); }
double TanhReference(double x) { return std::tanh(x); }

// SLEEF's u10 functions: about 1.0 ulp from the exact result at most (measured on this sweep:
// exp 0.953, log 0.589, tanh 1.000 (a hair over 1 just below a power of two)). Sigmoid adds the
// rounding of the add and the division to exp's error (measured 2.14).
const Function kFunctions[] = {
    {"Exp", Exp, ExpReference, 1.0},
    {"Log", Log, LogReference, 1.0},
    {"Tanh", Tanh, TanhReference, 1.001},
    {"Sigmoid", Sigmoid, SigmoidReference, 2.5},
};

std::vector<float> Sweep() {
  std::vector<float> x;
  for (uint64_t u = 0; u <= 0xFFFFFFFFu; u += 1021) x.push_back(std::bit_cast<float>(uint32_t(u)));
  for (float v : {0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
                  88.72f, 88.73f, -87.33f, -103.9f, -104.0f}) {
    x.push_back(v);
  }
  return x;
}

// The error of `got` against the exact value `want` in ulp of the float binade `want` falls in
// (subnormal spacing 2^-149 below FLT_MIN). A result that overflows float must be infinite.
double UlpError(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  if (std::isinf(want) || std::abs(want) > std::numeric_limits<float>::max()) {
    // Exactly representable infinities, or past FLT_MAX (the correctly rounded float may be
    // FLT_MAX or inf): within an ulp of FLT_MAX either way.
    if (std::isinf(want)) return got == want ? 0.0 : INFINITY;
    return std::abs(got) >= std::numeric_limits<float>::max() &&
                   std::signbit(got) == std::signbit(want)
               ? 0.0
               : INFINITY;
  }
  if (std::isinf(got)) return INFINITY;
  int exponent = 0;
  std::frexp(want, &exponent);  // |want| in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, std::max(exponent - 24, -149));
  return std::abs(double{got} - want) / ulp;
}

TEST(VectorMath, WithinTheUlpBoundOfTheDoubleReference) {
  const std::vector<float> x = Sweep();
  std::vector<float> y(x.size());
  for (const Function& f : kFunctions) {
    f.fn(x, y);
    double worst = 0.0;
    float worst_x = 0.0f;
    for (size_t i = 0; i < x.size(); ++i) {
      const double e = UlpError(y[i], f.reference(double{x[i]}));
      if (e > worst) {
        worst = e;
        worst_x = x[i];
      }
    }
    std::cout << std::setprecision(6) << f.name << ": max error " << worst
              << " ulp (at x = " << worst_x << ") over " << x.size() << " values\n";
    EXPECT_LE(worst, f.max_ulp) << f.name << " at x = " << worst_x;
  }
}

TEST(VectorMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-inf, inf, nan, 0.0f, -0.0f, -200.0f, 200.0f, -1.0f};
  std::vector<float> y(x.size());
  Exp(x, y);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], inf);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], 1.0f);
  EXPECT_EQ(y[4], 1.0f);
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_EQ(y[6], inf);
  Log(x, y);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], inf);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], -inf);
  EXPECT_EQ(y[4], -inf);
  EXPECT_TRUE(std::isnan(y[5]));
  EXPECT_TRUE(std::isnan(y[7]));
  Tanh(x, y);
  EXPECT_EQ(y[0], -1.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(std::bit_cast<uint32_t>(y[3]), std::bit_cast<uint32_t>(0.0f));
  EXPECT_EQ(std::bit_cast<uint32_t>(y[4]), std::bit_cast<uint32_t>(-0.0f));
  EXPECT_EQ(y[5], -1.0f);
  EXPECT_EQ(y[6], 1.0f);
  Sigmoid(x, y);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], 0.5f);
  EXPECT_EQ(y[4], 0.5f);
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_EQ(y[6], 1.0f);
}

TEST(VectorMath, SameBitsOnEveryTarget) {
  const std::vector<float> x = Sweep();
  const std::vector<int64_t> targets = SimdTargets();
  ASSERT_FALSE(targets.empty());
  for (const Function& f : kFunctions) {
    std::vector<float> want(x.size());
    f.fn(x, want);
    for (int64_t target : targets) {
      const ScopedSimdTarget forced(target);
      ASSERT_EQ(ActiveSimdTarget(), target);
      std::vector<float> got(x.size());
      f.fn(x, got);
      size_t differ = 0;
      size_t first = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]) &&
            !(std::isnan(got[i]) && std::isnan(want[i])) && differ++ == 0) {
          first = i;
        }
      }
      EXPECT_EQ(differ, 0u) << f.name << " on " << SimdTargetName(target)
                            << ": first at x = " << x[first] << ": " << got[first] << " vs "
                            << want[first];
    }
  }
}

TEST(VectorMath, TailsAndInPlace) {
  std::vector<float> x(67);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -3.0f + 0.37f * static_cast<float>(i);
  for (const Function& f : kFunctions) {
    std::vector<float> whole(x.size());
    f.fn(x, whole);
    for (size_t n = 0; n <= x.size(); ++n) {
      // Out of place into a buffer one longer: the extra element is never written.
      std::vector<float> out(n + 1, -7.0f);
      f.fn(std::span<const float>(x.data(), n), std::span<float>(out.data(), n));
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(whole[i]))
            << f.name << " n " << n << " i " << i;
      }
      EXPECT_EQ(out[n], -7.0f) << f.name << " wrote past n = " << n;
      // In place, starting at an odd offset.
      std::vector<float> buffer(n + 1, 0.0f);
      std::copy(x.begin(), x.begin() + static_cast<ptrdiff_t>(n), buffer.begin() + 1);
      f.fn(std::span<const float>(buffer.data() + 1, n), std::span<float>(buffer.data() + 1, n));
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(buffer[i + 1]), std::bit_cast<uint32_t>(whole[i]))
            << f.name << " in place, n " << n;
      }
    }
  }
}

// The functions the baseline falls back to on a CPU without FMA (never chosen on this machine):
// within the same bound, and how often their bits differ from the FMA ones (printed).
TEST(VectorMath, NoFmaFallbackIsAccurateToo) {
  struct Scalar {
    const char* name;
    float (*cinz)(float);
    float (*finz)(float);
    double (*reference)(double);
    double max_ulp;
  };
  const Scalar functions[] = {
      {"exp", Sleef_cinz_expf1_u10purec, Sleef_finz_expf1_u10purecfma, ExpReference, 1.0},
      {"log", Sleef_cinz_logf1_u10purec, Sleef_finz_logf1_u10purecfma, LogReference, 1.0},
      {"tanh", Sleef_cinz_tanhf1_u10purec, Sleef_finz_tanhf1_u10purecfma, TanhReference, 1.001},
  };
  std::vector<float> x = Sweep();
  for (const Scalar& f : functions) {
    double worst = 0.0;
    size_t differ = 0;
    for (size_t i = 0; i < x.size(); i += 3) {
      const float c = f.cinz(x[i]);
      worst = std::max(worst, UlpError(c, f.reference(double{x[i]})));
      const float g = f.finz(x[i]);
      differ += std::bit_cast<uint32_t>(c) != std::bit_cast<uint32_t>(g) &&
                !(std::isnan(c) && std::isnan(g));
    }
    std::cout << "cinz " << f.name << ": max error " << worst << " ulp; differs from finz on "
              << differ << " of " << (x.size() + 2) / 3 << " values\n";
    EXPECT_LE(worst, f.max_ulp) << f.name;
  }
}

}  // namespace
}  // namespace idem::fast
