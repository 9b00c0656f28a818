// SLEEF's deterministic vector math on Highway vectors, per target (Highway's -inl.h convention:
// include it after hwy/highway.h inside a file compiled for every target, outside any namespace).
//
// Exp/Log/Tanh(d, v) on full float vectors (ScalableTag<float>) call SLEEF's `finz` functions
// (1.0-ulp, FMA-based, deterministic): Sleef_finz_<fn>f16_u10avx512f on AVX-512,
// Sleef_finz_<fn>f8_u10avx2 on AVX2 and, on the portable baseline, the scalar
// Sleef_finz_<fn>f1_u10purecfma lane by lane. SLEEF guarantees that every `finz` variant of a
// function returns the same bits for the same input, so results do not depend on the target.
// The one exception: on a CPU without FMA (none has AVX2 without it; pre-2013 x86-64 only) the
// baseline uses the `cinz` variants (Sleef_cinz_<fn>f1_u10purec, deterministic too, same 1.0-ulp
// bound) whose bits may differ from the FMA ones in the last place.
//
// sleef.h declares its AVX/AVX-512 functions only when the whole file is compiled with -mavx /
// -mavx512f, which the dispatching build is not, so the few used here are declared below, each
// inside the target region whose registers it takes.

// Target-independent part, once.
#ifndef IDEM_SRC_KERNELS_FAST_SLEEF_HWY_INL_H_ONCE_
#define IDEM_SRC_KERNELS_FAST_SLEEF_HWY_INL_H_ONCE_

#include "src/kernels/fast/simd.h"

extern "C" {
float Sleef_finz_expf1_u10purecfma(float);
float Sleef_finz_logf1_u10purecfma(float);
float Sleef_finz_tanhf1_u10purecfma(float);
float Sleef_cinz_expf1_u10purec(float);
float Sleef_cinz_logf1_u10purec(float);
float Sleef_cinz_tanhf1_u10purec(float);
}

namespace idem::fast::sleef_scalar {

using Fn = float (*)(float);
struct Functions {
  Fn exp;
  Fn log;
  Fn tanh;
};

// The scalar functions for this CPU: the FMA (`finz`) ones where it has FMA.
inline const Functions& Get() {
  static const Functions functions =
      CpuHasFma() ? Functions{Sleef_finz_expf1_u10purecfma, Sleef_finz_logf1_u10purecfma,
                              Sleef_finz_tanhf1_u10purecfma}
                  : Functions{Sleef_cinz_expf1_u10purec, Sleef_cinz_logf1_u10purec,
                              Sleef_cinz_tanhf1_u10purec};
  return functions;
}

}  // namespace idem::fast::sleef_scalar

#endif  // IDEM_SRC_KERNELS_FAST_SLEEF_HWY_INL_H_ONCE_

// Per-target part.
#if defined(IDEM_SRC_KERNELS_FAST_SLEEF_HWY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef IDEM_SRC_KERNELS_FAST_SLEEF_HWY_INL_H_
#undef IDEM_SRC_KERNELS_FAST_SLEEF_HWY_INL_H_
#else
#define IDEM_SRC_KERNELS_FAST_SLEEF_HWY_INL_H_
#endif

#include <immintrin.h>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace idem::fast::HWY_NAMESPACE::sleef_hwy {

namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

extern "C" {
__m512 Sleef_finz_expf16_u10avx512f(__m512);
__m512 Sleef_finz_logf16_u10avx512f(__m512);
__m512 Sleef_finz_tanhf16_u10avx512f(__m512);
}
#define IDEM_SLEEF_VECTOR_FN(name, fn)                                 \
  template <class D>                                                   \
  HWY_INLINE hn::Vec<D> name##Raw(D, hn::Vec<D> v) {                   \
    static_assert(hn::MaxLanes(D()) == 16, "full float vectors only"); \
    return hn::Vec<D>{Sleef_finz_##fn##f16_u10avx512f(v.raw)};         \
  }

#elif HWY_TARGET == HWY_AVX2

extern "C" {
__m256 Sleef_finz_expf8_u10avx2(__m256);
__m256 Sleef_finz_logf8_u10avx2(__m256);
__m256 Sleef_finz_tanhf8_u10avx2(__m256);
}
#define IDEM_SLEEF_VECTOR_FN(name, fn)                                \
  template <class D>                                                  \
  HWY_INLINE hn::Vec<D> name##Raw(D, hn::Vec<D> v) {                  \
    static_assert(hn::MaxLanes(D()) == 8, "full float vectors only"); \
    return hn::Vec<D>{Sleef_finz_##fn##f8_u10avx2(v.raw)};            \
  }

#else  // the portable baseline: the scalar functions lane by lane

#define IDEM_SLEEF_VECTOR_FN(name, fn)                                \
  template <class D>                                                  \
  HWY_INLINE hn::Vec<D> name##Raw(D d, hn::Vec<D> v) {                \
    HWY_ALIGN float lanes[hn::MaxLanes(D())];                         \
    hn::Store(v, d, lanes);                                           \
    const sleef_scalar::Fn f = sleef_scalar::Get().fn;                \
    for (size_t i = 0; i < hn::Lanes(d); ++i) lanes[i] = f(lanes[i]); \
    return hn::Load(d, lanes);                                        \
  }

#endif

IDEM_SLEEF_VECTOR_FN(Exp, exp)
IDEM_SLEEF_VECTOR_FN(Log, log)
IDEM_SLEEF_VECTOR_FN(Tanh, tanh)
#undef IDEM_SLEEF_VECTOR_FN

// SLEEF's same-bits promise does not cover a NaN's sign: its AVX-512 logf(-1) is +NaN, its AVX2
// and scalar ones -NaN. So a NaN result is made target-independent here: a NaN input comes back
// quieted, any other NaN is x86's default NaN (0xFFC00000), as glibc's logf/expf/tanhf (the
// reference kernels' std:: calls) give on this hardware.
template <class D>
HWY_INLINE hn::Vec<D> CanonicalNaN(D d, hn::Vec<D> v, hn::Vec<D> r) {
  const hn::RebindToUnsigned<D> du;
  const hn::Vec<D> quieted = hn::BitCast(d, hn::Or(hn::BitCast(du, v), hn::Set(du, 0x00400000u)));
  const hn::Vec<D> default_nan = hn::BitCast(d, hn::Set(du, 0xFFC00000u));
  return hn::IfThenElse(hn::IsNaN(r), hn::IfThenElse(hn::IsNaN(v), quieted, default_nan), r);
}

template <class D>
HWY_INLINE hn::Vec<D> Exp(D d, hn::Vec<D> v) {
  return CanonicalNaN(d, v, ExpRaw(d, v));
}
template <class D>
HWY_INLINE hn::Vec<D> Log(D d, hn::Vec<D> v) {
  return CanonicalNaN(d, v, LogRaw(d, v));
}
template <class D>
HWY_INLINE hn::Vec<D> Tanh(D d, hn::Vec<D> v) {
  return CanonicalNaN(d, v, TanhRaw(d, v));
}

// sigmoid(x) = (x < 0 ? e : 1) / (1 + e) with e = exp(-|x|): one exp (the same bits on every
// target) and one add and one division (one IEEE rounding each). e <= 1, so nothing overflows
// and nothing cancels: the result keeps a few ulp down into the subnormals (1 / (1 + exp(-x))
// would flush sigmoid(x < -88.7) to 0, where exp(-x) overflows).
template <class D>
HWY_INLINE hn::Vec<D> Sigmoid(D d, hn::Vec<D> v) {
  const hn::Vec<D> one = hn::Set(d, 1.0f);
  const hn::Vec<D> e = Exp(d, hn::Neg(hn::Abs(v)));
  return hn::Div(hn::IfThenElse(hn::Lt(v, hn::Zero(d)), e, one), hn::Add(one, e));
}

}  // namespace idem::fast::HWY_NAMESPACE::sleef_hwy
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
