#include "src/kernels/fast/simd.h"

// clang-format off
#include "src/kernels/fast/hwy_config.h"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/fast/simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace idem::fast::HWY_NAMESPACE {

int64_t CurrentTarget() { return HWY_TARGET; }

}  // namespace idem::fast::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace idem::fast {

HWY_EXPORT(CurrentTarget);

std::vector<int64_t> SimdTargets() {
  std::vector<int64_t> targets;
  for (int64_t t = hwy::SupportedTargets() & HWY_TARGETS; t != 0; t &= t - 1) {
    targets.push_back(t & -t);  // lowest bit first: the best target
  }
  return targets;
}

std::string SimdTargetName(int64_t target) { return hwy::TargetName(target); }

int64_t ActiveSimdTarget() { return HWY_DYNAMIC_DISPATCH(CurrentTarget)(); }

bool CpuHasFma() {
  static const bool has_fma = __builtin_cpu_supports("fma");
  return has_fma;
}

ScopedSimdTarget::ScopedSimdTarget(int64_t target) { hwy::SetSupportedTargetsForTest(target); }

ScopedSimdTarget::~ScopedSimdTarget() { hwy::SetSupportedTargetsForTest(0); }

}  // namespace idem::fast
#endif  // HWY_ONCE
