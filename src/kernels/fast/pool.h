// Vectorized max pooling of float planes, for the fast kernels of MaxPool (src/kernels/pool.cc).
#ifndef IDEM_SRC_KERNELS_FAST_POOL_H_
#define IDEM_SRC_KERNELS_FAST_POOL_H_

#include <cstdint>

namespace idem::fast {

// `planes` planes of h x w floats at x (plane stride h * w) pooled into planes of oh x ow at y
// (plane stride oh * ow), every window lying wholly inside its plane (no padding reached,
// dilation 1: the caller checks (oh - 1) * sh + kh <= h and (ow - 1) * sw + kw <= w):
//   y[oy][ox] = the first of the largest of x[oy * sh + ty][ox * sw + tx] over ty < kh, tx < kw
// in row-major window order, NaN only when every tap is NaN: the reference kernel's selection,
// so the same bits on every SIMD target (vectors run across ox; strides 1 and 2 vectorized,
// others scalar).
struct MaxPoolProblem {
  const float* x = nullptr;
  int64_t planes = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  float* y = nullptr;
  int64_t oh = 0, ow = 0;
};
void MaxPool2D(const MaxPoolProblem& problem);

}  // namespace idem::fast

#endif  // IDEM_SRC_KERNELS_FAST_POOL_H_
