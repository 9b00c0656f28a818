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

// B^T d for six points per lane:
//   [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1].
HWY_INLINE void InputPoints(DF d, const VF* in, VF* out) {
  const VF two = hn::Set(d, 2.0f);
  const VF four = hn::Set(d, 4.0f);
  const VF d42 = hn::Sub(in[4], in[2]);
  const VF d31 = hn::Mul(two, hn::Sub(in[3], in[1]));
  out[0] = hn::Add(d42, hn::Mul(four, hn::Sub(in[0], in[2])));
  out[1] = hn::Sub(hn::Add(in[3], in[4]), hn::Mul(four, hn::Add(in[1], in[2])));
  out[2] = hn::Add(hn::Sub(in[4], in[3]), hn::Mul(four, hn::Sub(in[1], in[2])));
  out[3] = hn::Add(d42, d31);
  out[4] = hn::Sub(d42, d31);
  out[5] = hn::Add(hn::Sub(in[5], in[3]), hn::Mul(four, hn::Sub(in[1], in[3])));
}

// act(A^T m (+ bias)): [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1].
HWY_INLINE void OutputPoints(DF d, const VF* m, const float* bias, const Activation& act, VF* out) {
  const VF s12 = hn::Add(m[1], m[2]);
  const VF d12 = hn::Sub(m[1], m[2]);
  const VF s34 = hn::Add(m[3], m[4]);
  const VF d34 = hn::Sub(m[3], m[4]);
  out[0] = hn::Add(hn::Add(m[0], s12), s34);
  out[1] = hn::Add(d12, hn::Mul(hn::Set(d, 2.0f), d34));
  out[2] = hn::Add(s12, hn::Mul(hn::Set(d, 4.0f), s34));
  out[3] = hn::Add(hn::Add(d12, hn::Mul(hn::Set(d, 8.0f), d34)), m[5]);
  if (bias != nullptr) {
    const VF b = hn::Set(d, *bias);
    for (int i = 0; i < 4; ++i) out[i] = hn::Add(out[i], b);
  }
  for (int i = 0; i < 4; ++i) out[i] = Activate(d, out[i], act);
}

// Tiles along rows: tile g's point j is the plane's float 4g + j - pad (its row's own, since
// rows are whole tiles), except that a point before its row's start (t == 0, j < pad) or after
// its end (t == last, j >= 4 + pad) is padding: zero. Each vector of kW tiles reads its window
// [4g - 4, 4g + 4 kW + 4) as three de-interleaved loads, straight from the plane or, at the
// plane's ends and the block's last partial vector, from a zero-padded copy.
void RowsInput(const WinogradPlanes& p, const float* x, int64_t channels, int64_t g0, int64_t g1,
               float* v, int64_t ldv, float* lane_t) {
  const DF d;
  const int64_t tpl = p.w / 4, plane = p.in_plane();
  {
    int64_t t = g0 % tpl;
    for (int64_t i = 0; i < g1 - g0 + kW; ++i) {
      lane_t[i] = static_cast<float>(t);
      if (++t == tpl) t = 0;
    }
  }
  const VF zero = hn::Zero(d);
  const VF last_t = hn::Set(d, static_cast<float>(tpl - 1));
  constexpr int64_t kWindow = 4 * kW + 8;
  for (int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * plane;
    for (int64_t g = g0; g < g1; g += kW) {
      const int64_t count = std::min<int64_t>(kW, g1 - g);
      const int64_t start = 4 * g - 4;
      const float* win = xc + start;
      HWY_ALIGN float staged[kWindow];
      if (start < 0 || start + kWindow > plane || count < kW) {
        for (int64_t i = 0; i < kWindow; ++i) {
          const int64_t pos = start + i;
          staged[i] = pos >= 0 && pos < plane && i < 4 * count + 8 ? xc[pos] : 0.0f;
        }
        win = staged;
      }
      VF a[12];
      hn::LoadInterleaved4(d, win, a[0], a[1], a[2], a[3]);
      hn::LoadInterleaved4(d, win + 4, a[4], a[5], a[6], a[7]);
      hn::LoadInterleaved4(d, win + 8, a[8], a[9], a[10], a[11]);
      const VF t = hn::LoadU(d, lane_t + (g - g0));
      const auto first = hn::Eq(t, zero);
      const auto last = hn::Eq(t, last_t);
      VF in[6];
      for (int64_t j = 0; j < 6; ++j) {
        const int64_t o = j - p.pad;  // -2..5: the point's offset from 4g
        in[j] = a[o + 4];
        if (o < 0) in[j] = hn::IfThenZeroElse(first, in[j]);
        if (o >= 4) in[j] = hn::IfThenZeroElse(last, in[j]);
      }
      VF out[6];
      InputPoints(d, in, out);
      for (int64_t xi = 0; xi < 6; ++xi) {
        StoreFirst(out[xi], d, v + (xi * channels + c) * ldv + (g - g0), count);
      }
    }
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
      for (int64_t x0 = 0; x0 < w; x0 += kW) {
        const int64_t count = std::min<int64_t>(kW, w - x0);
        VF in[6];
        for (int64_t j = 0; j < 6; ++j) {
          in[j] = rows[j] != nullptr ? LoadFirst(d, rows[j] + x0, count) : hn::Zero(d);
        }
        VF out[6];
        InputPoints(d, in, out);
        float* dst = v + c * ldv + (t * w + x0 - g0);
        for (int64_t xi = 0; xi < 6; ++xi) StoreFirst(out[xi], d, dst + xi * channels * ldv, count);
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

// The output transform with the activation's kind a constant (its switch out of the loops).
template <Activation::Kind kKind>
void OutputKind(const WinogradPlanes& p, const float* m, int64_t ldm, int64_t outputs,
                const float* bias, const Activation& activation, int64_t g0, int64_t g1, float* y) {
  const DF d;
  // A copy the stores to y cannot alias, so its fields stay in registers.
  Activation act = activation;
  act.kind = kKind;
  const int64_t w = p.w;
  for (int64_t o = 0; o < outputs; ++o) {
    float* yo = y + o * p.out_plane();
    const float* b = bias != nullptr ? bias + o : nullptr;
    auto points = [&](int64_t g, int64_t count, VF* out) {
      VF in[6];
      for (int64_t xi = 0; xi < 6; ++xi) {
        in[xi] = LoadFirst(d, m + (xi * outputs + o) * ldm + (g - g0), count);
      }
      OutputPoints(d, in, b, act, out);
    };
    if (p.along_rows) {
      // Tile g's outputs are the plane's floats 4g .. 4g + 3: one interleaved store per vector.
      for (int64_t g = g0; g < g1; g += kW) {
        const int64_t count = std::min<int64_t>(kW, g1 - g);
        VF out[4];
        points(g, count, out);
        if (count == kW) {
          hn::StoreInterleaved4(out[0], out[1], out[2], out[3], d, yo + 4 * g);
        } else {
          HWY_ALIGN float staged[4 * kW];
          hn::StoreInterleaved4(out[0], out[1], out[2], out[3], d, staged);
          std::memcpy(yo + 4 * g, staged, static_cast<size_t>(4 * count) * sizeof(float));
        }
      }
      continue;
    }
    for (int64_t t = g0 / w; t < g1 / w; ++t) {
      for (int64_t x0 = 0; x0 < w; x0 += kW) {
        const int64_t count = std::min<int64_t>(kW, w - x0);
        VF out[4];
        points(t * w + x0, count, out);
        for (int64_t i = 0; i < 4 && 4 * t + i < p.oh; ++i) {
          StoreFirst(out[i], d, yo + (4 * t + i) * w + x0, count);
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
