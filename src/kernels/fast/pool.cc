#include "src/kernels/fast/pool.h"

#include <algorithm>
#include <cstddef>

// clang-format off
#include "src/kernels/fast/hwy_config.h"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/fast/pool.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace idem::fast::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int64_t kW = static_cast<int64_t>(HWY_LANES(float));

// The reference kernel's rule: a tap replaces the best so far when it is larger, or when the
// best is NaN and the tap is not (so ties keep the first, and NaN wins only alone).
HWY_INLINE VF Take(VF best, VF v) {
  const auto take = hn::Or(hn::Gt(v, best), hn::AndNot(hn::IsNaN(v), hn::IsNaN(best)));
  return hn::IfThenElse(take, v, best);
}

// Lanes l = 0..kW-1 of p[l * kStride].
template <int kStride>
HWY_INLINE VF LoadTaps(DF d, const float* HWY_RESTRICT p) {
#if HWY_TARGET == HWY_SCALAR  // one lane: no deinterleaving (and no ConcatEven)
  return hn::LoadU(d, p);
#else
  if constexpr (kStride == 1) {
    return hn::LoadU(d, p);
  } else {
    return hn::ConcatEven(d, hn::LoadU(d, p + kW), hn::LoadU(d, p));
  }
#endif
}

// Outputs [ox, ox + n) of one row, n <= kW, any stride: each tap's lanes gathered into a
// vector first (lanes past n repeat lane 0 and are dropped), so the selection stays branch-free
// (a scalar compare on random data mispredicts half the time).
HWY_INLINE void GatheredOutputs(const MaxPoolProblem& pr, const float* HWY_RESTRICT top, int64_t ox,
                                int64_t n, float* HWY_RESTRICT y) {
  const DF d;
  HWY_ALIGN float lanes[kW];
  VF best = hn::Zero(d);
  for (int64_t ty = 0; ty < pr.kh; ++ty) {
    const float* row = top + ty * pr.w + ox * pr.sw;
    for (int64_t tx = 0; tx < pr.kw; ++tx) {
      for (int64_t l = 0; l < n; ++l) lanes[l] = row[l * pr.sw + tx];
      for (int64_t l = n; l < kW; ++l) lanes[l] = lanes[0];
      const VF v = hn::Load(d, lanes);
      best = ty == 0 && tx == 0 ? v : Take(best, v);
    }
  }
  hn::Store(best, d, lanes);
  for (int64_t l = 0; l < n; ++l) y[l] = lanes[l];
}

// kStride: the width stride when whole vectors load it directly (1 or 2), 0 otherwise.
template <int kStride>
void Planes(const MaxPoolProblem& pr) {
  const DF d;
  for (int64_t p = 0; p < pr.planes; ++p) {
    const float* plane = pr.x + p * pr.h * pr.w;
    float* y = pr.y + p * pr.oh * pr.ow;
    for (int64_t oy = 0; oy < pr.oh; ++oy, y += pr.ow) {
      const float* top = plane + oy * pr.sh * pr.w;
      int64_t ox = 0;
      if constexpr (kStride > 0) {
        // Whole vectors while every load stays inside the row: the last column read is
        // ox * stride + kw - 1 + kW * stride - 1.
        for (; ox + kW <= pr.ow && ox * kStride + pr.kw - 1 + kW * kStride <= pr.w; ox += kW) {
          const float* first = top + ox * kStride;
          VF best = LoadTaps<kStride>(d, first);
          for (int64_t ty = 0; ty < pr.kh; ++ty) {
            const float* row = first + ty * pr.w;
            for (int64_t tx = ty == 0 ? 1 : 0; tx < pr.kw; ++tx) {
              best = Take(best, LoadTaps<kStride>(d, row + tx));
            }
          }
          hn::StoreU(best, d, y + ox);
        }
      }
      for (; ox < pr.ow; ox += kW) {
        GatheredOutputs(pr, top, ox, std::min<int64_t>(kW, pr.ow - ox), y + ox);
      }
    }
  }
}

}  // namespace

void MaxPool2DTarget(const MaxPoolProblem& pr) {
#if HWY_TARGET == HWY_SCALAR
  Planes<0>(pr);
#else
  if (pr.sw == 1) {
    Planes<1>(pr);
  } else if (pr.sw == 2) {
    Planes<2>(pr);
  } else {
    Planes<0>(pr);
  }
#endif
}

}  // namespace idem::fast::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace idem::fast {

HWY_EXPORT(MaxPool2DTarget);

void MaxPool2D(const MaxPoolProblem& problem) {
  if (problem.planes <= 0 || problem.oh <= 0 || problem.ow <= 0) return;
  HWY_DYNAMIC_DISPATCH(MaxPool2DTarget)(problem);
}

}  // namespace idem::fast
#endif  // HWY_ONCE
