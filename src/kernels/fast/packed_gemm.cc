// Packed GEMM/GEMV: register-tiled microkernels compiled for each SIMD target (Highway's
// foreach_target re-includes this file once per target) and picked at run time. See the header
// for the numerics contract; the per-target code below keeps it by vectorizing only across
// columns and running each output's k-loop as one chain of fused multiply-adds.

#include "src/kernels/fast/packed_gemm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include "src/core/block_cache.h"

#ifndef IDEM_SRC_KERNELS_FAST_PACKED_GEMM_ONCE_
#define IDEM_SRC_KERNELS_FAST_PACKED_GEMM_ONCE_
namespace idem::fast::gemm_internal {

// One product, as every target's code sees it. B's element (p, j) is at
//   b + (j / 16) * b_panel_stride + p * b_row_stride + j % 16
// which covers both layouts: packed (row stride 16, panel stride 16 k) and unpacked (row stride
// ldb, panel stride 16, i.e. b + p * ldb + j).
struct Problem {
  const float* a;
  int64_t lda;
  const float* b;
  int64_t b_row_stride;
  int64_t b_panel_stride;
  bool b_padded;  // columns up to the next multiple of 16 exist (zeros): full vectors may load
  float* c;
  int64_t ldc;
  int64_t m;
  int64_t n;
  int64_t k;
  float beta;
  Epilogue epilogue;
  const TaskRunner* runner;
};

// Below this many multiply-adds (about 20-40 us of work at 100-200 GFLOP/s) a product runs on
// the calling thread only: waking a sleeping worker costs microseconds, more than Silero's
// whole products (1-5 us).
inline constexpr int64_t kMinParallelFmas = int64_t{1} << 21;

}  // namespace idem::fast::gemm_internal
#endif  // IDEM_SRC_KERNELS_FAST_PACKED_GEMM_ONCE_

// clang-format off
#include "src/kernels/fast/hwy_config.h"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/fast/packed_gemm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/kernels/fast/sleef_hwy-inl.h"
#include "src/kernels/fast/activation-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace idem::fast::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using gemm_internal::Problem;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int kW = static_cast<int>(HWY_LANES(float));
// The offset of vector `v` in a row: v lanes-wide steps, in pointer arithmetic's type.
constexpr ptrdiff_t Lanes(int v) { return ptrdiff_t{v} * kW; }
static_assert(kPanelWidth % kW == 0, "a vector never straddles two panels");

// Register tiles: kMR rows x kNV vectors of accumulators for m > 1, and 1 x kGemvNV for m == 1
// (enough independent chains to hide the FMA latency).
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr int kMR = 8;  // 24 of the 32 zmm registers
constexpr int kNV = 3;
constexpr int kGemvNV = 8;
#elif HWY_TARGET == HWY_AVX2
constexpr int kMR = 6;  // 12 of the 16 ymm registers
constexpr int kNV = 2;
constexpr int kGemvNV = 8;
#else
constexpr int kMR = 4;
constexpr int kNV = 2;
constexpr int kGemvNV = 4;
#endif

#undef IDEM_FAST_MASKED_MEMORY
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define IDEM_FAST_MASKED_MEMORY 1  // float masked loads/stores never touch masked-off lanes
#else
#define IDEM_FAST_MASKED_MEMORY 0
#endif

// The tile loops have compile-time trip counts and must be unrolled for the accumulators to live
// in registers (GCC does not unroll them by itself at -O2).
#ifndef IDEM_UNROLL
#define IDEM_UNROLL _Pragma("GCC unroll 32")
#endif

// fma(a, b, c) per lane with one rounding on every target: the instruction where the target has
// it, std::fma (exact: the same bits) lane by lane where it does not.
HWY_INLINE VF Fma(VF a, VF b, VF c) {
#if HWY_NATIVE_FMA
  return hn::MulAdd(a, b, c);
#else
  const DF d;
  HWY_ALIGN float x[kW];
  HWY_ALIGN float y[kW];
  HWY_ALIGN float z[kW];
  hn::Store(a, d, x);
  hn::Store(b, d, y);
  hn::Store(c, d, z);
  for (int l = 0; l < kW; ++l) z[l] = std::fma(x[l], y[l], z[l]);
  return hn::Load(d, z);
#endif
}

// The first `count` (1..kW) lanes from p, zeros after; reads nothing past p + count.
HWY_INLINE VF LoadFirst(DF d, const float* p, int count) {
#if IDEM_FAST_MASKED_MEMORY
  return hn::MaskedLoad(hn::FirstN(d, static_cast<size_t>(count)), d, p);
#else
  HWY_ALIGN float lanes[kW] = {};
  std::memcpy(lanes, p, static_cast<size_t>(count) * sizeof(float));
  return hn::Load(d, lanes);
#endif
}

// Stores the first `count` (1..kW) lanes to p; writes nothing past p + count.
HWY_INLINE void StoreFirst(VF v, DF d, float* p, int count) {
#if IDEM_FAST_MASKED_MEMORY
  hn::BlendedStore(v, hn::FirstN(d, static_cast<size_t>(count)), d, p);
#else
  HWY_ALIGN float lanes[kW];
  hn::Store(v, d, lanes);
  std::memcpy(p, lanes, static_cast<size_t>(count) * sizeof(float));
#endif
}

// Lanes l < count (1..kW) of p[l * stride] (zeros after), and the store back: a column of C
// when C is stored transposed.
HWY_INLINE VF LoadStrided(DF d, const float* p, int64_t stride, int count) {
  HWY_ALIGN float lanes[kW] = {};
  for (int l = 0; l < count; ++l) lanes[l] = p[l * stride];
  return hn::Load(d, lanes);
}
HWY_INLINE void StoreStrided(VF v, DF d, float* p, int64_t stride, int count) {
  HWY_ALIGN float lanes[kW];
  hn::Store(v, d, lanes);
  for (int l = 0; l < count; ++l) p[l * stride] = lanes[l];
}

// One register tile: rows [0, MR) of `a` (already offset to the tile's first row) times columns
// [j0, j0 + cols) of B into c (offset to the tile's first element; with transposed_c, element
// (i, j) of the tile is at c[j * ldc + i]). The last of the NV vectors
// holds 1..kW valid columns: cols in ((NV - 1) kW, NV kW]. bias is offset to the tile (its first
// row or column) or null.
template <int MR, int NV>
HWY_NOINLINE void RunTile(const Problem& pr, const float* HWY_RESTRICT a, int64_t j0, int64_t cols,
                          float* HWY_RESTRICT c, const float* HWY_RESTRICT bias) {
  const DF d;
  const bool full = cols == int64_t{NV} * kW;
  const int last = static_cast<int>(cols - int64_t{NV - 1} * kW);  // valid lanes, last vector
  const int64_t lda = pr.lda;
  const int64_t ldc = pr.ldc;
  const int64_t row_stride = pr.b_row_stride;
  const bool transposed_c = pr.epilogue.transposed_c;  // c[j][i] (c offset to element (0, 0))

  const float* bp[NV];
  IDEM_UNROLL
  for (int v = 0; v < NV; ++v) {
    const int64_t col = j0 + int64_t{v} * kW;
    // B is null when k is 0 (nothing packed, nothing read): no offset from null.
    bp[v] = pr.b == nullptr ? nullptr
                            : pr.b + (col / kPanelWidth) * pr.b_panel_stride + col % kPanelWidth;
  }

  VF acc[MR][NV];
  if (pr.beta == 0.0f) {
    IDEM_UNROLL
    for (int i = 0; i < MR; ++i) {
      IDEM_UNROLL
      for (int v = 0; v < NV; ++v) acc[i][v] = hn::Zero(d);
    }
  } else {
    const VF beta = hn::Set(d, pr.beta);
    IDEM_UNROLL
    for (int i = 0; i < MR; ++i) {
      IDEM_UNROLL
      for (int v = 0; v < NV; ++v) {
        const bool whole = full || v < NV - 1;
        VF old;
        if (transposed_c) {
          old = LoadStrided(d, c + Lanes(v) * ldc + i, ldc, whole ? kW : last);
        } else {
          const float* p = c + i * ldc + Lanes(v);
          old = whole ? hn::LoadU(d, p) : LoadFirst(d, p, last);
        }
        acc[i][v] = pr.beta == 1.0f ? old : hn::Mul(beta, old);
      }
    }
  }

  const int64_t k = pr.k;
  if (full || pr.b_padded) {
    for (int64_t p = 0; p < k; ++p) {
      VF bv[NV];
      IDEM_UNROLL
      for (int v = 0; v < NV; ++v) bv[v] = hn::LoadU(d, bp[v] + p * row_stride);
      IDEM_UNROLL
      for (int i = 0; i < MR; ++i) {
        const VF av = hn::Set(d, a[i * lda + p]);
        IDEM_UNROLL
        for (int v = 0; v < NV; ++v) acc[i][v] = Fma(av, bv[v], acc[i][v]);
      }
    }
  } else {
    for (int64_t p = 0; p < k; ++p) {
      VF bv[NV];
      IDEM_UNROLL
      for (int v = 0; v < NV - 1; ++v) bv[v] = hn::LoadU(d, bp[v] + p * row_stride);
      bv[NV - 1] = LoadFirst(d, bp[NV - 1] + p * row_stride, last);
      IDEM_UNROLL
      for (int i = 0; i < MR; ++i) {
        const VF av = hn::Set(d, a[i * lda + p]);
        IDEM_UNROLL
        for (int v = 0; v < NV; ++v) acc[i][v] = Fma(av, bv[v], acc[i][v]);
      }
    }
  }

  const Epilogue& ep = pr.epilogue;
  IDEM_UNROLL
  for (int i = 0; i < MR; ++i) {
    IDEM_UNROLL
    for (int v = 0; v < NV; ++v) {
      const bool whole = full || v < NV - 1;
      VF x = acc[i][v];
      if (bias != nullptr) {
        const VF bb = ep.bias_per_row ? hn::Set(d, bias[i])
                      : whole         ? hn::LoadU(d, bias + Lanes(v))
                                      : LoadFirst(d, bias + Lanes(v), last);
        x = hn::Add(x, bb);
      }
      x = Activate(d, x, ep.activation);
      if (transposed_c) {
        StoreStrided(x, d, c + Lanes(v) * ldc + i, ldc, whole ? kW : last);
      } else if (whole) {
        hn::StoreU(x, d, c + i * ldc + Lanes(v));
      } else {
        StoreFirst(x, d, c + i * ldc + Lanes(v), last);
      }
    }
  }
}

using TileFn = void (*)(const Problem&, const float*, int64_t, int64_t, float*, const float*);

template <int MR, int... NV>
constexpr std::array<TileFn, sizeof...(NV)> TileRow(std::integer_sequence<int, NV...>) {
  return {&RunTile<MR, NV + 1>...};
}
template <int... MR>
constexpr std::array<std::array<TileFn, kNV>, sizeof...(MR)> TileTable(
    std::integer_sequence<int, MR...>) {
  return {TileRow<MR + 1>(std::make_integer_sequence<int, kNV>())...};
}
// kTiles[rows - 1][vectors - 1]; kGemvTiles[vectors - 1] for m == 1.
constexpr auto kTiles = TileTable(std::make_integer_sequence<int, kMR>());
constexpr auto kGemvTiles = TileRow<1>(std::make_integer_sequence<int, kGemvNV>());

// The tile grid of a product and the order it is walked in: the operand that is larger
// (A: m x k, B: k x n) is walked once, in the outer loop; the other stays in cache.
struct Grid {
  int64_t tile_rows;
  int64_t tile_cols;
  int64_t row_blocks;
  int64_t col_blocks;
  bool rows_outer;
  int64_t outer() const { return rows_outer ? row_blocks : col_blocks; }
  int64_t inner() const { return rows_outer ? col_blocks : row_blocks; }
};

Grid MakeGrid(const Problem& pr) {
  Grid g;
  g.tile_rows = pr.m == 1 ? 1 : kMR;
  g.tile_cols = int64_t{pr.m == 1 ? kGemvNV : kNV} * kW;
  g.row_blocks = (pr.m + g.tile_rows - 1) / g.tile_rows;
  g.col_blocks = (pr.n + g.tile_cols - 1) / g.tile_cols;
  g.rows_outer = pr.m > pr.n;
  return g;
}

void RunBlocks(const Problem& pr, const Grid& g, int64_t outer_begin, int64_t outer_end) {
  const float* bias = pr.epilogue.bias;
  const bool bias_per_row = pr.epilogue.bias_per_row;
  const int64_t inner = g.inner();
  for (int64_t o = outer_begin; o < outer_end; ++o) {
    for (int64_t q = 0; q < inner; ++q) {
      const int64_t rb = g.rows_outer ? o : q;
      const int64_t cb = g.rows_outer ? q : o;
      const int64_t i0 = rb * g.tile_rows;
      const int64_t j0 = cb * g.tile_cols;
      const int64_t rows = std::min(g.tile_rows, pr.m - i0);
      const int64_t cols = std::min(g.tile_cols, pr.n - j0);
      const int64_t vectors = (cols + kW - 1) / kW;
      const TileFn fn = pr.m == 1 ? kGemvTiles[vectors - 1] : kTiles[rows - 1][vectors - 1];
      const float* tile_bias = bias == nullptr ? nullptr : (bias_per_row ? bias + i0 : bias + j0);
      float* tile_c = pr.epilogue.transposed_c ? pr.c + j0 * pr.ldc + i0 : pr.c + i0 * pr.ldc + j0;
      fn(pr, pr.a + i0 * pr.lda, j0, cols, tile_c, tile_bias);
    }
  }
}

}  // namespace

void GemmTarget(const Problem& pr) {
  const Grid g = MakeGrid(pr);
  const int64_t outer = g.outer();
  int64_t tasks = 1;
  int64_t fmas = 0;
  const bool large = __builtin_mul_overflow(pr.m * pr.n, std::max<int64_t>(pr.k, 1), &fmas) ||
                     fmas >= gemm_internal::kMinParallelFmas;
  if (pr.runner != nullptr && pr.runner->concurrency() > 1 && large) {
    tasks = std::min<int64_t>(pr.runner->concurrency(), outer);
  }
  if (tasks <= 1) {
    RunBlocks(pr, g, 0, outer);
    return;
  }
  struct Context {
    const Problem* pr;
    const Grid* g;
    int64_t outer;
    int64_t tasks;
  } context{&pr, &g, outer, tasks};
  pr.runner->Run(
      tasks,
      [](void* raw, int64_t t) {
        const Context& ctx = *static_cast<const Context*>(raw);
        RunBlocks(*ctx.pr, *ctx.g, t * ctx.outer / ctx.tasks, (t + 1) * ctx.outer / ctx.tasks);
      },
      &context);
}

// V vectors of outputs of one row (the last holding `last` lanes, 1..kW) from a tap offset
// table: V is a constant, so the accumulators stay in registers (with a run-time count they
// were spilled to the stack on every tap; Silero's 24-wide rows were mostly that).
template <int V>
HWY_INLINE void DepthwiseColumns(DF d, const DepthwiseProblem& pr, const int64_t* offsets,
                                 int64_t taps, const float* row, float* HWY_RESTRICT yrow,
                                 int last) {
  VF acc[V];
  IDEM_UNROLL
  for (VF& a : acc) a = hn::Zero(d);
  for (int64_t t = 0; t < taps; ++t) {
    const float* HWY_RESTRICT src = row + offsets[t];
    const VF wv = hn::Set(d, pr.w[t]);
    IDEM_UNROLL
    for (int u = 0; u + 1 < V; ++u) acc[u] = Fma(wv, hn::LoadU(d, src + Lanes(u)), acc[u]);
    const VF xv =
        last == kW ? hn::LoadU(d, src + Lanes(V - 1)) : LoadFirst(d, src + Lanes(V - 1), last);
    acc[V - 1] = Fma(wv, xv, acc[V - 1]);
  }
  IDEM_UNROLL
  for (int u = 0; u < V; ++u) {
    VF x = acc[u];
    if (pr.bias != nullptr) x = hn::Add(x, hn::Set(d, *pr.bias));
    x = Activate(d, x, pr.activation);
    if (u < V - 1 || last == kW) {
      hn::StoreU(x, d, yrow + Lanes(u));
    } else {
      StoreFirst(x, d, yrow + Lanes(u), last);
    }
  }
}

void DepthwiseTarget(const DepthwiseProblem& pr) {
  const DF d;
  constexpr int kU = 4;  // vectors of outputs per step (independent FMA chains)
  const int64_t taps = pr.kh * pr.kw;
  const int64_t ow = pr.ow;
  // Each tap's offset from an output row's first input (row oy * sh of plane 0), computed once
  // without a division per step: tap (ky, kx) reads plane (kx dw) % sw, row ky dh, column
  // (kx dw) / sw. Kernels of more than kTable taps compute theirs on the way.
  constexpr int64_t kTable = 64;
  int64_t table[kTable];
  if (taps <= kTable) {
    int64_t phase = 0, column = 0;
    const int64_t phase_step = pr.dw % pr.sw, column_step = pr.dw / pr.sw;
    for (int64_t kx = 0; kx < pr.kw; ++kx) {
      for (int64_t ky = 0; ky < pr.kh; ++ky) {
        table[ky * pr.kw + kx] = phase * pr.phase_stride + ky * pr.dh * pr.ld + column;
      }
      phase += phase_step;
      column += column_step;
      if (phase >= pr.sw) {
        phase -= pr.sw;
        ++column;
      }
    }
  }
  auto offset = [&](int64_t t) {
    if (taps <= kTable) return table[t];
    const int64_t ky = t / pr.kw, shift = t % pr.kw * pr.dw;
    return (shift % pr.sw) * pr.phase_stride + ky * pr.dh * pr.ld + shift / pr.sw;
  };
  if (taps <= kTable) {
    for (int64_t oy = 0; oy < pr.oh; ++oy) {
      float* yrow = pr.y + oy * ow;
      const float* row = pr.planes + oy * pr.sh * pr.ld;
      for (int64_t ox0 = 0; ox0 < ow; ox0 += int64_t{kU} * kW) {
        const int64_t cols = std::min<int64_t>(int64_t{kU} * kW, ow - ox0);
        const int vectors = static_cast<int>((cols + kW - 1) / kW);
        const int last = static_cast<int>(cols - int64_t{vectors - 1} * kW);
        // Four instantiations only, each inlined into every SIMD target (tried: up to eight
        // vectors; this file then took over ten minutes to compile under the sanitizers, with
        // no measurable gain).
        static_assert(kU == 4, "DepthwiseColumns is instantiated for 1..4 vectors");
        switch (vectors) {
          case 1:
            DepthwiseColumns<1>(d, pr, table, taps, row + ox0, yrow + ox0, last);
            break;
          case 2:
            DepthwiseColumns<2>(d, pr, table, taps, row + ox0, yrow + ox0, last);
            break;
          case 3:
            DepthwiseColumns<3>(d, pr, table, taps, row + ox0, yrow + ox0, last);
            break;
          default:
            DepthwiseColumns<4>(d, pr, table, taps, row + ox0, yrow + ox0, last);
            break;
        }
      }
    }
    return;
  }
  // Kernels of more than kTable taps.
  for (int64_t oy = 0; oy < pr.oh; ++oy) {
    float* HWY_RESTRICT yrow = pr.y + oy * ow;
    const float* row = pr.planes + oy * pr.sh * pr.ld;
    for (int64_t ox0 = 0; ox0 < ow; ox0 += int64_t{kU} * kW) {
      const int64_t cols = std::min<int64_t>(int64_t{kU} * kW, ow - ox0);
      const int vectors = static_cast<int>((cols + kW - 1) / kW);
      const int last = static_cast<int>(cols - int64_t{vectors - 1} * kW);
      VF acc[kU];
      IDEM_UNROLL
      for (VF& a : acc) a = hn::Zero(d);
      if (vectors == kU && last == kW) {
        for (int64_t t = 0; t < taps; ++t) {
          const float* HWY_RESTRICT src = row + offset(t) + ox0;
          const VF wv = hn::Set(d, pr.w[t]);
          IDEM_UNROLL
          for (int u = 0; u < kU; ++u) acc[u] = Fma(wv, hn::LoadU(d, src + Lanes(u)), acc[u]);
        }
      } else {
        for (int64_t t = 0; t < taps; ++t) {
          const float* HWY_RESTRICT src = row + offset(t) + ox0;
          const VF wv = hn::Set(d, pr.w[t]);
          for (int u = 0; u < vectors; ++u) {
            const VF xv =
                u < vectors - 1 ? hn::LoadU(d, src + Lanes(u)) : LoadFirst(d, src + Lanes(u), last);
            acc[u] = Fma(wv, xv, acc[u]);
          }
        }
      }
      for (int u = 0; u < vectors; ++u) {
        VF x = acc[u];
        if (pr.bias != nullptr) x = hn::Add(x, hn::Set(d, *pr.bias));
        x = Activate(d, x, pr.activation);
        if (u < vectors - 1 || last == kW) {
          hn::StoreU(x, d, yrow + ox0 + Lanes(u));
        } else {
          StoreFirst(x, d, yrow + ox0 + Lanes(u), last);
        }
      }
    }
  }
}

void ActivateTarget(const Activation& act, float* x, int64_t n) {
  const DF d;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) hn::StoreU(Activate(d, hn::LoadU(d, x + i), act), d, x + i);
  if (i < n) {
    const int rest = static_cast<int>(n - i);
    StoreFirst(Activate(d, LoadFirst(d, x + i, rest), act), d, x + i, rest);
  }
}

}  // namespace idem::fast::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace idem::fast {

HWY_EXPORT(GemmTarget);
HWY_EXPORT(DepthwiseTarget);
HWY_EXPORT(ActivateTarget);

void Activate(const Activation& activation, std::span<float> x) {
  if ((activation.kind == Activation::Kind::kNone &&
       activation.lower == -std::numeric_limits<float>::infinity() && !activation.scaled &&
       !activation.shifted) ||
      x.empty()) {
    return;
  }
  HWY_DYNAMIC_DISPATCH(ActivateTarget)(activation, x.data(), static_cast<int64_t>(x.size()));
}

void DepthwiseConv2D(const DepthwiseProblem& problem) {
  if (problem.oh <= 0 || problem.ow <= 0) return;
  HWY_DYNAMIC_DISPATCH(DepthwiseTarget)(problem);
}

void PackedB::AlignedDelete::operator()(float* p) const {
  block_cache::FreeScratch(reinterpret_cast<std::byte*>(p));
}

int64_t PackedBBytes(int64_t k, int64_t n) {
  if (k < 0 || n < 0) return -1;
  const int64_t padded = (n / kPanelWidth + (n % kPanelWidth != 0)) * kPanelWidth;
  int64_t floats = 0;
  int64_t bytes = 0;
  if (__builtin_mul_overflow(padded, k, &floats) ||
      __builtin_mul_overflow(floats, int64_t{sizeof(float)}, &bytes)) {
    return -1;
  }
  return bytes;
}

PackedB PackBParts(std::span<const BPart> parts, int64_t n, bool transposed, float scale) {
  PackedB packed;
  int64_t k = 0;
  for (const BPart& part : parts) k += part.k;
  if (k < 0 || n <= 0) return packed;  // no columns (or bad sizes): an empty PackedB
  packed.k_ = k;
  packed.n_ = n;
  const size_t floats = static_cast<size_t>(packed.panels() * k * kPanelWidth);
  if (floats == 0) return packed;
  // From the block cache: a session's weights are packed at every Create, and a block freed by
  // the last session is reused without the page faults of fresh memory.
  std::byte* block = block_cache::AllocateScratch(floats * sizeof(float));
  if (block == nullptr) throw std::bad_alloc();
  packed.data_.reset(reinterpret_cast<float*>(block));
  float* out = packed.data_.get();
  // Every float is written once: the values, then zeros in the last panel's columns past n.
  const int64_t panel_stride = k * kPanelWidth;
  const int64_t full_panels = n / kPanelWidth;
  const int64_t tail = n % kPanelWidth;
  int64_t row0 = 0;
  for (const BPart& part : parts) {
    if (transposed) {
      // Column j of B is row j of the part (contiguous in p): read along it.
      for (int64_t j = 0; j < n; ++j) {
        float* column =
            out + (j / kPanelWidth) * panel_stride + row0 * kPanelWidth + j % kPanelWidth;
        const float* source = part.b + j * part.ld;
        if (scale == 1.0f) {
          for (int64_t p = 0; p < part.k; ++p) column[p * kPanelWidth] = source[p];
        } else {
          for (int64_t p = 0; p < part.k; ++p) column[p * kPanelWidth] = source[p] * scale;
        }
      }
    } else {
      // Row p of B: 16 contiguous floats per panel.
      for (int64_t p = 0; p < part.k; ++p) {
        const float* source = part.b + p * part.ld;
        float* row = out + (row0 + p) * kPanelWidth;
        for (int64_t panel = 0; panel * kPanelWidth < n; ++panel) {
          const int64_t width = panel < full_panels ? kPanelWidth : tail;
          float* to = row + panel * panel_stride;
          const float* from = source + panel * kPanelWidth;
          if (scale == 1.0f) {
            std::memcpy(to, from, static_cast<size_t>(width) * sizeof(float));
          } else {
            for (int64_t c = 0; c < width; ++c) to[c] = from[c] * scale;
          }
        }
      }
    }
    row0 += part.k;
  }
  if (tail != 0) {
    float* last = out + full_panels * panel_stride;
    for (int64_t p = 0; p < k; ++p) {
      std::fill(last + p * kPanelWidth + tail, last + (p + 1) * kPanelWidth, 0.0f);
    }
  }
  return packed;
}

PackedB PackB(const float* b, int64_t ldb, int64_t k, int64_t n, bool transposed, float scale) {
  const BPart part{b, ldb, k};
  return PackBParts(std::span<const BPart>(&part, 1), n, transposed, scale);
}

PackedB PackB(const float* b, int64_t k, int64_t n, bool transposed, float scale) {
  return PackB(b, transposed ? k : n, k, n, transposed, scale);
}

void GemmPacked(const float* a, int64_t lda, const PackedB& b, float* c, int64_t ldc, int64_t m,
                float beta, const Epilogue& epilogue, const TaskRunner* runner) {
  if (m <= 0 || b.n() <= 0) return;
  const gemm_internal::Problem pr{a,     lda,  b.data(), kPanelWidth, b.k() * kPanelWidth,
                                  true,  c,    ldc,      m,           b.n(),
                                  b.k(), beta, epilogue, runner};
  HWY_DYNAMIC_DISPATCH(GemmTarget)(pr);
}

void GemmUnpacked(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                  int64_t m, int64_t n, int64_t k, float beta, const Epilogue& epilogue,
                  const TaskRunner* runner) {
  if (m <= 0 || n <= 0) return;
  const gemm_internal::Problem pr{a,   lda, b, ldb, kPanelWidth, false,    c,
                                  ldc, m,   n, k,   beta,        epilogue, runner};
  HWY_DYNAMIC_DISPATCH(GemmTarget)(pr);
}

}  // namespace idem::fast
#endif  // HWY_ONCE
