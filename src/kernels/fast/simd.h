// Which SIMD target the fast kernels (src/kernels/fast) run on, and a test hook forcing one.
//
// The fast kernels are compiled for several targets (src/kernels/fast/hwy_config.h: AVX-512,
// AVX2, a portable baseline) and dispatch at run time (Highway's HWY_DYNAMIC_DISPATCH) to the
// best one this CPU supports, so one binary runs on any x86-64. Their results are the same bits
// on every target (packed_gemm.h and vector_math.h say how); the tests check that by forcing
// each target this machine has.
#ifndef IDEM_SRC_KERNELS_FAST_SIMD_H_
#define IDEM_SRC_KERNELS_FAST_SIMD_H_

#include <cstdint>
#include <string>
#include <vector>

namespace idem::fast {

// The targets compiled in that this CPU supports, best first (Highway target bits, e.g.
// HWY_AVX3, HWY_AVX2, and HWY_SCALAR or HWY_EMU128). Never empty: the baseline runs everywhere.
std::vector<int64_t> SimdTargets();

// "AVX3" (AVX-512), "AVX2", "EMU128", ...
std::string SimdTargetName(int64_t target);

// The target the fast kernels dispatch to now.
int64_t ActiveSimdTarget();

// Whether this CPU has fused multiply-add. The baseline target emulates FMA lane by lane with
// std::fma (exact, the same bits as the hardware instruction; slow where the CPU lacks FMA).
bool CpuHasFma();

// Test hook: while it lives, every fast kernel dispatches to `target` (one of SimdTargets()).
// Process-wide (Highway's dispatch state): create it only while no fast kernel is running.
class ScopedSimdTarget {
 public:
  explicit ScopedSimdTarget(int64_t target);
  ~ScopedSimdTarget();
  ScopedSimdTarget(const ScopedSimdTarget&) = delete;
  ScopedSimdTarget& operator=(const ScopedSimdTarget&) = delete;
};

}  // namespace idem::fast

#endif  // IDEM_SRC_KERNELS_FAST_SIMD_H_
