// Winograd F(4, 3) transforms (winograd.h), compiled for each SIMD target like the packed GEMM
// (Highway's foreach_target re-includes this file once per target). Vectors run across tiles,
// never across a tile's points, and each lane is the same fixed sequence of float operations on
// every target (the file is compiled with -ffp-contract=off), so the bits never depend on the
// target.

#include "src/kernels/fast/winograd.h"

#include <algorithm>
#include <cstring>

// clang-format off
#include "src/kernels/fast/hwy_config.h"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/fast/winograd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/kernels/fast/sleef_hwy-inl.h"
#include "src/kernels/fast/activation-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace idem::fast::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int kW = static_cast<int>(HWY_LANES(float));

#undef IDEM_WINOGRAD_MASKED_MEMORY
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define IDEM_WINOGRAD_MASKED_MEMORY 1  // float masked loads/stores never touch masked-off lanes
#else
#define IDEM_WINOGRAD_MASKED_MEMORY 0
#endif

// The first `count` (1..kW) lanes from p, zeros after; reads nothing past p + count.
HWY_INLINE VF LoadFirst(DF d, const float* p, int64_t count) {
  if (count >= kW) return hn::LoadU(d, p);
#if IDEM_WINOGRAD_MASKED_MEMORY
  return hn::MaskedLoad(hn::FirstN(d, static_cast<size_t>(count)), d, p);
#else
  HWY_ALIGN float lanes[kW] = {};
  std::memcpy(lanes, p, static_cast<size_t>(count) * sizeof(float));
  return hn::Load(d, lanes);
#endif
}

// Stores the first `count` (1..kW) lanes to p; writes nothing past p + count.
HWY_INLINE void StoreFirst(VF v, DF d, float* p, int64_t count) {
  if (count >= kW) {
    hn::StoreU(v, d, p);
    return;
  }
#if IDEM_WINOGRAD_MASKED_MEMORY
  hn::BlendedStore(v, hn::FirstN(d, static_cast<size_t>(count)), d, p);
#else
  HWY_ALIGN float lanes[kW];
  hn::Store(v, d, lanes);
  std::memcpy(p, lanes, static_cast<size_t>(count) * sizeof(float));
#endif
}

// B^T d for six points per lane, stored: point xi's vector at dst + xi * xs (its first `count`
// lanes unless kFull).
//   [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1].
template <bool kFull>
HWY_INLINE void InputPoints(DF d, VF d0, VF d1, VF d2, VF d3, VF d4, VF d5, float* dst, int64_t xs,
                            int64_t count) {
  const VF two = hn::Set(d, 2.0f);
  const VF four = hn::Set(d, 4.0f);
  const VF d42 = hn::Sub(d4, d2);
  const VF d31 = hn::Mul(two, hn::Sub(d3, d1));
  auto store = [&](VF v, int64_t xi) {
    if (kFull) {
      hn::StoreU(v, d, dst + xi * xs);
    } else {
      StoreFirst(v, d, dst + xi * xs, count);
    }
  };
  store(hn::Add(d42, hn::Mul(four, hn::Sub(d0, d2))), 0);
  store(hn::Sub(hn::Add(d3, d4), hn::Mul(four, hn::Add(d1, d2))), 1);
  store(hn::Add(hn::Sub(d4, d3), hn::Mul(four, hn::Sub(d1, d2))), 2);
  store(hn::Add(d42, d31), 3);
  store(hn::Sub(d42, d31), 4);
  store(hn::Add(hn::Sub(d5, d3), hn::Mul(four, hn::Sub(d1, d3))), 5);
}

// Tiles along rows: tile g's point j is the plane's float 4g + j - pad (its row's own, since
// rows are whole tiles), except that a point before its row's start (t == 0, j < pad) or after
// its end (t == last, j >= 4 + pad) is padding: zero. Each vector of kW tiles reads its window
// [4g - pad, 4g - pad + 4 kW + 4) as two de-interleaved loads (points 0-3, then 4-5), straight
// from the plane or, at the plane's ends and the block's last partial vector, from a
// zero-padded copy.
template <int kPad>
void RowsInputPad(const WinogradPlanes& p, const float* x, int64_t channels, int64_t g0, int64_t g1,
                  float* v, int64_t ldv, const float* lane_t) {
  const DF d;
  const int64_t plane = p.in_plane(), xs = channels * ldv;
  const VF zero = hn::Zero(d);
  const int64_t last_tile = p.w / 4 - 1;  // t of a row's last tile
  const VF last_t = hn::Set(d, static_cast<float>(last_tile));
  constexpr int64_t kWindow = 4 * kW + 4;
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * plane;
    float* vc = v + c * ldv - g0;  // tile g's point 0 at vc + g
    for (int64_t g = g0; g < g1; g += kW) {
      const int64_t count = std::min<int64_t>(kW, g1 - g);
      const int64_t start = 4 * g - kPad;
      const float* win = xc + start;
      HWY_ALIGN float staged[kWindow];
      const bool inside = start >= 0 && start + kWindow <= plane && count == kW;
      if (!inside) {
        for (int64_t i = 0; i < kWindow; ++i) {
          const int64_t pos = start + i;
          staged[i] = pos >= 0 && pos < plane && i < 4 * count + 4 ? xc[pos] : 0.0f;
        }
        win = staged;
      }
      VF d0, d1, d2, d3, d4, d5, unused0, unused1;
      hn::LoadInterleaved4(d, win, d0, d1, d2, d3);
      hn::LoadInterleaved4(d, win + 4, d4, d5, unused0, unused1);
      const VF t = hn::LoadU(d, lane_t + (g - g0));
      if constexpr (kPad >= 1) d0 = hn::IfThenZeroElse(hn::Eq(t, zero), d0);
      if constexpr (kPad >= 2) d1 = hn::IfThenZeroElse(hn::Eq(t, zero), d1);
      if constexpr (kPad <= 1) d5 = hn::IfThenZeroElse(hn::Eq(t, last_t), d5);
      if constexpr (kPad == 0) d4 = hn::IfThenZeroElse(hn::Eq(t, last_t), d4);
      if (inside) {
        InputPoints<true>(d, d0, d1, d2, d3, d4, d5, vc + g, xs, kW);
      } else {
        InputPoints<false>(d, d0, d1, d2, d3, d4, d5, vc + g, xs, count);
      }
    }
  }
}

void RowsInput(const WinogradPlanes& p, const float* x, int64_t channels, int64_t g0, int64_t g1,
               float* v, int64_t ldv, float* lane_t) {
  const int64_t tpl = p.w / 4;
  int64_t t = g0 % tpl;
  for (int64_t i = 0; i < g1 - g0 + kW; ++i) {
    lane_t[i] = static_cast<float>(t);
    if (++t == tpl) t = 0;
  }
  if (p.pad == 0) {
    RowsInputPad<0>(p, x, channels, g0, g1, v, ldv, lane_t);
  } else if (p.pad == 1) {
    RowsInputPad<1>(p, x, channels, g0, g1, v, ldv, lane_t);
  } else {
    RowsInputPad<2>(p, x, channels, g0, g1, v, ldv, lane_t);
  }
}

// Tiles down columns: tile (t, x)'s point j is input row 4t + j - pad of column x; vectors run
// along a row (across columns), so every load is contiguous.
void ColumnsInput(const WinogradPlanes& p, const float* x, int64_t channels, int64_t g0, int64_t g1,
                  float* v, int64_t ldv) {
  const DF d;
  const int64_t w = p.w, plane = p.in_plane();
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * plane;
    for (int64_t t = g0 / w; t < g1 / w; ++t) {
      const float* rows[6];
      for (int64_t j = 0; j < 6; ++j) {
        const int64_t iy = 4 * t + j - p.pad;
        rows[j] = iy >= 0 && iy < p.h ? xc + iy * w : nullptr;
      }
      float* dst = v + c * ldv + (t * w - g0);
      auto point = [&](int64_t j, int64_t x0, int64_t count) {
        return rows[j] != nullptr ? LoadFirst(d, rows[j] + x0, count) : hn::Zero(d);
      };
      int64_t x0 = 0;
      for (; x0 + kW <= w; x0 += kW) {
        InputPoints<true>(d, point(0, x0, kW), point(1, x0, kW), point(2, x0, kW), point(3, x0, kW),
                          point(4, x0, kW), point(5, x0, kW), dst + x0, channels * ldv, kW);
      }
      if (x0 < w) {
        const int64_t count = w - x0;
        InputPoints<false>(d, point(0, x0, count), point(1, x0, count), point(2, x0, count),
                           point(3, x0, count), point(4, x0, count), point(5, x0, count), dst + x0,
                           channels * ldv, count);
      }
    }
  }
}

bool BoundedTarget(const float* x, int64_t n) {
  const DF d;
  const VF limit = hn::Set(d, kWinogradMaxMagnitude);
  auto ok = hn::Le(hn::Zero(d), limit);  // all true
  int64_t i = 0;
  for (; i + kW <= n; i += kW) ok = hn::And(ok, hn::Le(hn::Abs(hn::LoadU(d, x + i)), limit));
  if (i < n) ok = hn::And(ok, hn::Le(hn::Abs(LoadFirst(d, x + i, n - i)), limit));
  return hn::AllTrue(d, ok);
}

void InputTarget(const WinogradPlanes& p, const float* x, int64_t channels, int64_t g0, int64_t g1,
                 float* v, int64_t ldv, float* lane_t) {
  if (p.along_rows) {
    RowsInput(p, x, channels, g0, g1, v, ldv, lane_t);
  } else {
    ColumnsInput(p, x, channels, g0, g1, v, ldv);
  }
}

// The 4 outputs of a vector of tiles from the 6 product rows at m (xi's row at m + xi * xs):
// A^T m, + bias (with one), then the activation. Its kind is a constant (OutputKind), so no
// switch runs per vector.
template <bool kFull>
HWY_INLINE void OutputVector(DF d, const float* m, int64_t xs, int64_t count, bool has_bias,
                             VF bias, const Activation& act, VF& o0, VF& o1, VF& o2, VF& o3) {
  auto load = [&](int64_t xi) {
    return kFull ? hn::LoadU(d, m + xi * xs) : LoadFirst(d, m + xi * xs, count);
  };
  const VF m0 = load(0), m1 = load(1), m2 = load(2), m3 = load(3), m4 = load(4), m5 = load(5);
  const VF s12 = hn::Add(m1, m2);
  const VF d12 = hn::Sub(m1, m2);
  const VF s34 = hn::Add(m3, m4);
  const VF d34 = hn::Sub(m3, m4);
  o0 = hn::Add(hn::Add(m0, s12), s34);
  o1 = hn::Add(d12, hn::Mul(hn::Set(d, 2.0f), d34));
  o2 = hn::Add(s12, hn::Mul(hn::Set(d, 4.0f), s34));
  o3 = hn::Add(hn::Add(d12, hn::Mul(hn::Set(d, 8.0f), d34)), m5);
  if (has_bias) {
    o0 = hn::Add(o0, bias);
    o1 = hn::Add(o1, bias);
    o2 = hn::Add(o2, bias);
    o3 = hn::Add(o3, bias);
  }
  o0 = Activate(d, o0, act);
  o1 = Activate(d, o1, act);
  o2 = Activate(d, o2, act);
  o3 = Activate(d, o3, act);
}

// The output transform with the activation's kind a constant.
template <Activation::Kind kKind>
void OutputKind(const WinogradPlanes& p, const float* m, int64_t ldm, int64_t outputs,
                const float* bias, const Activation& activation, int64_t g0, int64_t g1, float* y) {
  const DF d;
  // A copy the stores to y cannot alias, so its fields stay in registers.
  Activation act = activation;
  act.kind = kKind;
  const int64_t w = p.w, xs = outputs * ldm;
  const bool has_bias = bias != nullptr;
  VF o0, o1, o2, o3;
  for (int64_t o = 0; o < outputs; ++o) {
    float* yo = y + o * p.out_plane();
    const float* mo = m + o * ldm - g0;  // tile g's products at mo + g
    const VF b = hn::Set(d, has_bias ? bias[o] : 0.0f);
    if (p.along_rows) {
      // Tile g's outputs are the plane's floats 4g .. 4g + 3: one interleaved store per vector.
      int64_t g = g0;
      for (; g + kW <= g1; g += kW) {
        OutputVector<true>(d, mo + g, xs, kW, has_bias, b, act, o0, o1, o2, o3);
        hn::StoreInterleaved4(o0, o1, o2, o3, d, yo + 4 * g);
      }
      if (g < g1) {
        const int64_t count = g1 - g;
        OutputVector<false>(d, mo + g, xs, count, has_bias, b, act, o0, o1, o2, o3);
        HWY_ALIGN float staged[4 * kW];
        hn::StoreInterleaved4(o0, o1, o2, o3, d, staged);
        std::memcpy(yo + 4 * g, staged, static_cast<size_t>(4 * count) * sizeof(float));
      }
      continue;
    }
    for (int64_t t = g0 / w; t < g1 / w; ++t) {
      float* row = yo + 4 * t * w;
      const bool whole = 4 * t + 3 < p.oh;  // all 4 output rows inside the plane
      int64_t x0 = 0;
      for (; whole && x0 + kW <= w; x0 += kW) {
        OutputVector<true>(d, mo + t * w + x0, xs, kW, has_bias, b, act, o0, o1, o2, o3);
        hn::StoreU(o0, d, row + x0);
        hn::StoreU(o1, d, row + w + x0);
        hn::StoreU(o2, d, row + 2 * w + x0);
        hn::StoreU(o3, d, row + 3 * w + x0);
      }
      for (; x0 < w; x0 += kW) {
        const int64_t count = std::min<int64_t>(kW, w - x0);
        OutputVector<false>(d, mo + t * w + x0, xs, count, has_bias, b, act, o0, o1, o2, o3);
        const VF outs[4] = {o0, o1, o2, o3};
        for (int64_t i = 0; i < 4 && 4 * t + i < p.oh; ++i) {
          StoreFirst(outs[i], d, row + i * w + x0, count);
        }
      }
    }
  }
}

void OutputTarget(const WinogradPlanes& p, const float* m, int64_t ldm, int64_t outputs,
                  const float* bias, const Activation& act, int64_t g0, int64_t g1, float* y) {
  using K = Activation::Kind;
  switch (act.kind) {
    case K::kNone:
      return OutputKind<K::kNone>(p, m, ldm, outputs, bias, act, g0, g1, y);
    case K::kRelu:
      return OutputKind<K::kRelu>(p, m, ldm, outputs, bias, act, g0, g1, y);
    case K::kLeakyRelu:
      return OutputKind<K::kLeakyRelu>(p, m, ldm, outputs, bias, act, g0, g1, y);
    case K::kClip:
      return OutputKind<K::kClip>(p, m, ldm, outputs, bias, act, g0, g1, y);
    case K::kHardSigmoid:
      return OutputKind<K::kHardSigmoid>(p, m, ldm, outputs, bias, act, g0, g1, y);
    case K::kSigmoid:
      return OutputKind<K::kSigmoid>(p, m, ldm, outputs, bias, act, g0, g1, y);
    case K::kHardSwish:
      return OutputKind<K::kHardSwish>(p, m, ldm, outputs, bias, act, g0, g1, y);
  }
}

}  // namespace
}  // namespace idem::fast::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace idem::fast {

HWY_EXPORT(BoundedTarget);
HWY_EXPORT(InputTarget);

bool WinogradBounded(const float* x, int64_t n) {
  return n <= 0 || HWY_DYNAMIC_DISPATCH(BoundedTarget)(x, n);
}
HWY_EXPORT(OutputTarget);

void WinogradFilters(const float* w, int64_t outputs, int64_t channels, float* u) {
  // G: [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1].
  static constexpr double kG[6][3] = {{1.0 / 4, 0, 0},
                                      {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                      {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                      {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                      {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                      {0, 0, 1}};
  for (int64_t o = 0; o < outputs; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* g = w + (o * channels + c) * 3;
      for (int64_t xi = 0; xi < 6; ++xi) {
        const double s = kG[xi][0] * g[0] + kG[xi][1] * g[1] + kG[xi][2] * g[2];
        u[(xi * outputs + o) * channels + c] = static_cast<float>(s);
      }
    }
  }
}

void WinogradInput(const WinogradPlanes& p, const float* x, int64_t channels, int64_t g0,
                   int64_t g1, float* v, int64_t ldv, float* lane_t) {
  if (g1 <= g0) return;
  HWY_DYNAMIC_DISPATCH(InputTarget)(p, x, channels, g0, g1, v, ldv, lane_t);
}

void WinogradOutput(const WinogradPlanes& p, const float* m, int64_t ldm, int64_t outputs,
                    const float* bias, const Activation& activation, int64_t g0, int64_t g1,
                    float* y) {
  if (g1 <= g0) return;
  HWY_DYNAMIC_DISPATCH(OutputTarget)(p, m, ldm, outputs, bias, activation, g0, g1, y);
}

}  // namespace idem::fast
#endif  // HWY_ONCE
