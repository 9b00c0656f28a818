// Winograd F(4, 3) along one axis: a Conv whose kernel is one row (1x3) or one column (3x1) of
// three taps at unit stride and dilation computes four outputs of a line from six inputs with 6
// products per (output channel, input channel) instead of 12 (Lavin and Gray, "Fast Algorithms
// for Convolutional Neural Networks", 2015; points 0, 1, -1, 2, -2 and infinity):
//   y = A^T [(G g) . (B^T d)]  for each tile of 6 inputs d and 3 taps g,
// summed over the input channels as 6 matrix products U[xi] (M x C) * V[xi] (C x tiles), one per
// transform point xi (the packed GEMM, packed_gemm.h). openWakeWord's embedding model is 18 such
// Convs; this halves their multiply-adds.
//
// Numerics: the filters are transformed in double and rounded once; the input and output
// transforms are fixed sequences of float adds, subtracts and multiplies by powers of two (no
// fused multiply-add: this file is compiled without contraction), the same on every SIMD target
// and every split of the tiles, so the Conv's results are the same bits on every target and
// thread count. They are not the bits of the direct sum: each output rounds differently, within
// about 1e-7 of the sum of |w x| over its tile's terms (tested against the reference kernel at
// 1e-5). Over the tile's, not only its own: the transforms mix a tile's 6 inputs, so an output
// beside an input 1000 times larger than its own 3 carries an error of about 1e-4 of its own
// magnitude (a direct sum's error would be about 1e-7 of it), and the error grows with that
// spread. Inputs beyond kWinogradMaxMagnitude (where sums could overflow) take the direct path.
#ifndef IDEM_SRC_KERNELS_FAST_WINOGRAD_H_
#define IDEM_SRC_KERNELS_FAST_WINOGRAD_H_

#include <cstdint>

#include "src/kernels/fast/packed_gemm.h"

namespace idem::fast {

inline constexpr int64_t kWinogradPoints = 6;   // inputs per tile, and transform points
inline constexpr int64_t kWinogradOutputs = 4;  // outputs per tile

// Inputs and weights of magnitude at most this keep every intermediate of the transforms and
// products finite (2^48 squared, times the transforms' factors and up to 2^20 channels, stays
// under float's 2^128). Larger values (or inf, NaN) take the direct path: a tile's 6 inputs mix,
// so one inf would turn all 4 of its outputs to NaN where the direct sum gives finite values.
inline constexpr float kWinogradMaxMagnitude = 281474976710656.0f;  // 2^48

// Whether every one of the n floats at x is at most kWinogradMaxMagnitude in magnitude (false
// for inf and NaN).
bool WinogradBounded(const float* x, int64_t n);

// The 3 taps of each (output o, channel c) pair, w[(o * channels + c) * 3 + k], transformed:
// u[(xi * outputs + o) * channels + c] = sum over k of G[xi][k] w[o][c][k] (6 x outputs x
// channels floats), rounded once from double.
void WinogradFilters(const float* w, int64_t outputs, int64_t channels, float* u);

// Channel planes of h x w floats and the axis the taps run along.
//   along_rows (a 1x3 Conv): taps along each row; the output plane is h x w (the row padded by
//     pad before and 2 - pad after); w a multiple of 4. Tile g = row * (w / 4) + t covers the
//     outputs 4t .. 4t + 3 of its row, so the tiles of a plane run over it in memory order.
//   columns (a 3x1 Conv): taps down each column; the output plane is oh x w, input row
//     4t + j - pad for tile point j (rows outside [0, h) read as zeros). Tile g = t * w + x.
struct WinogradPlanes {
  bool along_rows = true;
  int64_t h = 0, w = 0;
  int64_t oh = 0;   // output rows (h when along_rows)
  int64_t pad = 0;  // padding before the first input on the tap axis, 0..2
  // Tiles per line (a row when along_rows, a column otherwise).
  int64_t line_tiles() const { return ((along_rows ? w : oh) + 3) / 4; }
  int64_t tiles() const { return along_rows ? h * (w / 4) : line_tiles() * w; }
  int64_t in_plane() const { return h * w; }
  int64_t out_plane() const { return oh * w; }
};

// Input transform of tiles [g0, g1) (for columns: g0 and g1 multiples of w) of `channels` planes
// at x (plane stride in_plane()): v[(xi * channels + c) * ldv + (g - g0)] = (B^T d)[xi]. ldv >=
// g1 - g0. `lane_t` is scratch for g1 - g0 + 16 floats (along_rows only, else unused).
void WinogradInput(const WinogradPlanes& p, const float* x, int64_t channels, int64_t g0,
                   int64_t g1, float* v, int64_t ldv, float* lane_t);

// Output transform of tiles [g0, g1) for `outputs` planes at y (plane stride out_plane()) from
// the products m[(xi * outputs + o) * ldm + (g - g0)]: y = act(A^T m + bias[o]) (no add without
// a bias; the activation's bits as in the packed GEMM's epilogue), outputs past the plane's end
// of a line not written.
void WinogradOutput(const WinogradPlanes& p, const float* m, int64_t ldm, int64_t outputs,
                    const float* bias, const Activation& activation, int64_t g0, int64_t g1,
                    float* y);

}  // namespace idem::fast

#endif  // IDEM_SRC_KERNELS_FAST_WINOGRAD_H_
