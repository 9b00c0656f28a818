#include "src/kernels/fast/pool.h"

#include <algorithm>
#include <cmath>
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

#if HWY_TARGET != HWY_SCALAR
// Windows of width 2 at width stride 2 that tile each row exactly (w == 2 * ow; openWakeWord's
// 2x2 and 1x2 pools, whose rows of 16 outputs and fewer the row-wise vectors above cannot take):
// first every input row's pair maxima, Take(x[2i], x[2i + 1]), over a whole plane at once (its
// rows are one contiguous run of pairs), then each output row folds its kh rows of those. Take
// keeps the first maximum in tap order (NaN lowest, ties to the earlier tap), which is
// associative, so folding each window row's pair first and then the rows gives the bits of the
// reference's tap-by-tap fold. Two window rows at row stride 2 are folded in one pass, in
// registers across planes when the output rows are narrower than half a vector (FoldRowPairs).
constexpr int64_t kPairTile = 4096;  // floats of pair maxima per plane, on the stack

// out[i] = Take(in[2i], in[2i + 1]) for i < n.
HWY_INLINE void PairMaxima(const float* HWY_RESTRICT in, int64_t n, float* HWY_RESTRICT out) {
  const DF d;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const VF lo = hn::LoadU(d, in + 2 * i);
    const VF hi = hn::LoadU(d, in + 2 * i + kW);
    hn::StoreU(Take(hn::ConcatEven(d, hi, lo), hn::ConcatOdd(d, hi, lo)), d, out + i);
  }
  if (i < n) {  // the last pairs, through a zero-padded copy (no read past the plane)
    HWY_ALIGN float pairs[2 * kW] = {};
    HWY_ALIGN float best[kW];
    std::copy_n(in + 2 * i, 2 * (n - i), pairs);
    const VF lo = hn::Load(d, pairs);
    const VF hi = hn::Load(d, pairs + kW);
    hn::Store(Take(hn::ConcatEven(d, hi, lo), hn::ConcatOdd(d, hi, lo)), d, best);
    std::copy_n(best, n - i, out + i);
  }
}

// y[i] = Take(y[i], v[i]) for i < n: the fold so far, then the next window row's pair.
HWY_INLINE void TakeInto(const float* HWY_RESTRICT v, int64_t n, float* HWY_RESTRICT y) {
  const DF d;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    hn::StoreU(Take(hn::LoadU(d, y + i), hn::LoadU(d, v + i)), d, y + i);
  }
  if (i < n) {
    HWY_ALIGN float a[kW] = {};
    HWY_ALIGN float b[kW] = {};
    std::copy_n(y + i, n - i, a);
    std::copy_n(v + i, n - i, b);
    hn::Store(Take(hn::Load(d, a), hn::Load(d, b)), d, a);
    std::copy_n(a, n - i, y + i);
  }
}

// y[i] = Take(a[i], b[i]) for i < n: a 2-row window's fold in one pass (y may be neither).
HWY_INLINE void TakeRows(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, int64_t n,
                         float* HWY_RESTRICT y) {
  const DF d;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) hn::StoreU(Take(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, y + i);
  if (i < n) {
    std::copy_n(a + i, n - i, y + i);
    TakeInto(b + i, n - i, y + i);
  }
}

// Take on one lane: the fold of rows narrower than a vector.
HWY_INLINE float TakeLane(float best, float v) {
  return v > best || (std::isnan(best) && !std::isnan(v)) ? v : best;  // NaN lowest
}

// The fold of 2-row windows at row stride 2 over rows of the pair maxima narrower than half a
// vector (openWakeWord's pools to 8, 4, 2 and 1 outputs wide), when every plane's rows pair up
// exactly (h == 2 oh): then each run of 2 ow pair maxima is one output row's two window rows,
// across planes too, and a vector of them gives kW / 2 outputs: Take(lanes of the first row,
// lanes of the second), gathered in registers. `outputs` outputs from 2 * outputs pair maxima.
// ow must divide kW / 2.
HWY_INLINE void FoldRowPairs(const float* HWY_RESTRICT pairs, int64_t ow, int64_t outputs,
                             float* HWY_RESTRICT y) {
  const DF d;
  HWY_ALIGN int32_t first[kW];
  HWY_ALIGN int32_t second[kW];
  for (int64_t l = 0; l < kW; ++l) {
    const int64_t o = l % (kW / 2);  // the upper half repeats the lower one (dropped)
    first[l] = static_cast<int32_t>(o / ow * 2 * ow + o % ow);
    second[l] = static_cast<int32_t>(first[l] + ow);
  }
  const auto take_first = hn::SetTableIndices(d, first);
  const auto take_second = hn::SetTableIndices(d, second);
  auto half = [&](const float* p) {
    const VF v = hn::LoadU(d, p);
    return Take(hn::TableLookupLanes(v, take_first), hn::TableLookupLanes(v, take_second));
  };
  int64_t o = 0;
  for (; o + kW <= outputs; o += kW) {
    hn::StoreU(hn::ConcatLowerLower(d, half(pairs + 2 * o + kW), half(pairs + 2 * o)), d, y + o);
  }
  for (; o < outputs; ++o) {
    const int64_t unit = o / ow, j = o % ow;
    const float* row = pairs + unit * 2 * ow + j;
    y[o] = TakeLane(row[0], row[ow]);
  }
}

void PairPlanes(const MaxPoolProblem& pr) {
  const int64_t plane_pairs = pr.h * pr.ow;  // at most kPairTile (MaxPool2DTarget's check)
  if (pr.kh == 1 && pr.sh == 1 && pr.oh == pr.h) {
    // The output is every row's pair maxima, and the planes follow each other in X and Y: one
    // run over all of them.
    PairMaxima(pr.x, pr.planes * plane_pairs, pr.y);
    return;
  }
  HWY_ALIGN float pairs[kPairTile];
  // As many whole planes' pair maxima at once as the tile holds (narrow planes: many).
  const int64_t per_chunk = std::max<int64_t>(1, kPairTile / plane_pairs);
  for (int64_t p0 = 0; p0 < pr.planes; p0 += per_chunk) {
    const int64_t count = std::min(per_chunk, pr.planes - p0);
    PairMaxima(pr.x + p0 * pr.h * pr.w, count * plane_pairs, pairs);
    if (pr.kh == 2 && pr.sh == 2 && pr.h == 2 * pr.oh && pr.ow < kW && (kW / 2) % pr.ow == 0) {
      FoldRowPairs(pairs, pr.ow, count * pr.oh * pr.ow, pr.y + p0 * pr.oh * pr.ow);
      continue;
    }
    for (int64_t q = 0; q < count; ++q) {
      float* y = pr.y + (p0 + q) * pr.oh * pr.ow;
      for (int64_t oy = 0; oy < pr.oh; ++oy, y += pr.ow) {
        const float* first = pairs + q * plane_pairs + oy * pr.sh * pr.ow;
        if (pr.ow >= kW && pr.kh == 2) {
          TakeRows(first, first + pr.ow, pr.ow, y);
          continue;
        }
        if (pr.ow >= kW) {
          std::copy_n(first, pr.ow, y);
          for (int64_t ty = 1; ty < pr.kh; ++ty) TakeInto(first + ty * pr.ow, pr.ow, y);
          continue;
        }
        // Rows narrower than a vector (openWakeWord's last pools: 4, 2 and 1 outputs wide):
        // lane by lane, with Take's rule, instead of a padded copy per row.
        for (int64_t j = 0; j < pr.ow; ++j) {
          float best = first[j];
          for (int64_t ty = 1; ty < pr.kh; ++ty) best = TakeLane(best, first[ty * pr.ow + j]);
          y[j] = best;
        }
      }
    }
  }
}
#endif

}  // namespace

void MaxPool2DTarget(const MaxPoolProblem& pr) {
#if HWY_TARGET == HWY_SCALAR
  Planes<0>(pr);
#else
  if (pr.sw == 1) {
    Planes<1>(pr);
  } else if (pr.sw == 2 && pr.kw == 2 && pr.w == 2 * pr.ow && pr.h * pr.ow <= kPairTile) {
    PairPlanes(pr);
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
