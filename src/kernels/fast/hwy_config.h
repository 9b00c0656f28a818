// Included by the fast kernels before any Highway header: which SIMD targets they are compiled
// for. AVX-512 (HWY_AVX3), AVX2 (with FMA) and Highway's portable baseline (HWY_EMU128, or
// HWY_SCALAR with compilers where EMU128 is broken): SSSE3/SSE4 add code size and nothing the
// baseline lacks for these kernels (neither has FMA, so they would run the same lane-wise
// std::fma emulation as the baseline).
#ifndef IDEM_SRC_KERNELS_FAST_HWY_CONFIG_H_
#define IDEM_SRC_KERNELS_FAST_HWY_CONFIG_H_

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#endif  // IDEM_SRC_KERNELS_FAST_HWY_CONFIG_H_
