// Vectorized transcendental functions over float spans, through SLEEF's deterministic `finz`
// functions (sleef_hwy-inl.h): the same bits on every run and on every SIMD target the binary
// dispatches to (AVX-512, AVX2, the portable baseline). On a CPU without FMA (which has none of
// the vector targets) the baseline uses SLEEF's `cinz` variants, deterministic too and within
// the same bound, whose bits differ from the FMA ones in the last place on a few inputs
// (measured over 1.4 million floats: exp 645, log 2, tanh 1).
//
// Accuracy, in ulp of the exact result (measured by vector_math_test against std:: in double over
// every 1021st float bit pattern: 4.2 million values, every binade, both signs, subnormals):
//   Exp, Log, Tanh: SLEEF's u10 bound, about 1 ulp (measured: exp 0.953, log 0.589, tanh 1.000).
//   Sigmoid = (x < 0 ? e : 1) / (1 + e), e = Exp(-|x|): measured 2.14 ulp (the test bounds 2.5).
// Special values follow C: Exp(-inf) = 0, Exp(x > 88.72...) = inf, Log(0) = -inf, Log(x < 0) =
// NaN, Log(inf) = inf, Tanh(+-inf) = +-1, Sigmoid(-inf) = 0, Sigmoid(inf) = 1; NaN -> NaN.
#ifndef IDEM_SRC_KERNELS_FAST_VECTOR_MATH_H_
#define IDEM_SRC_KERNELS_FAST_VECTOR_MATH_H_

#include <span>

namespace idem::fast {

// out[i] = f(in[i]) for every i < in.size() (out.size() must be in.size()). in and out may be
// the same memory (in place); they must not overlap otherwise.
void Exp(std::span<const float> in, std::span<float> out);
void Log(std::span<const float> in, std::span<float> out);
void Tanh(std::span<const float> in, std::span<float> out);
void Sigmoid(std::span<const float> in, std::span<float> out);

}  // namespace idem::fast

#endif  // IDEM_SRC_KERNELS_FAST_VECTOR_MATH_H_
