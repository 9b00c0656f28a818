// Fast float matrix products for the matrix kernels (Conv via im2col, Gemm, MatMul, LSTM gates):
// C[m x n] = A[m x k] * B[k x n], with B either packed once into panels (a constant weight,
// packed when the session is created: PackB + GemmPacked) or read as it is (an operand that
// changes every run, e.g. Conv's im2col columns next to its weights as A: GemmUnpacked), plus a
// fused epilogue (bias, activation). m == 1 takes a GEMV path (Silero's LSTM, its 1-row Convs).
//
// Numerics (the contract every path keeps, so their results are interchangeable bit for bit):
//   c[i][j] = act(s + bias),  s = init, then for p = 0, 1, ..., k-1 in that order
//                                 s = fma(a[i][p], b[p][j], s)     (one rounding per step)
//   init = 0 when beta == 0 (c is then only written: it may hold anything, even NaN), otherwise
//   beta * c[i][j] (c[i][j] itself when beta == 1); bias = 0 without one (no add then), else one
//   float add; act as in Activation below.
// Vectors run across j (columns), never across p, so every result is one fixed chain of fused
// multiply-adds: the same bits on every run, for every thread count and work split, for the
// packed and the unpacked B, for m == 1 and m > 1, and on every SIMD target (AVX-512, AVX2, and
// the portable baseline, which emulates FMA lane by lane with std::fma, exact, so the same bits
// as the instruction; simd.h forces a target for the tests). Compared with a plain loop of one
// multiply and one add per step (the reference kernels), FMA rounds once instead of twice per
// step: the results differ from it in the last bits, and are at least as accurate.
#ifndef IDEM_SRC_KERNELS_FAST_PACKED_GEMM_H_
#define IDEM_SRC_KERNELS_FAST_PACKED_GEMM_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>

namespace idem::fast {

// The fused activation, applied to each result after the bias.
struct Activation {
  enum class Kind : uint8_t {
    kNone,
    kRelu,         // max(x, 0); NaN stays NaN
    kLeakyRelu,    // x < 0 ? alpha * x : x
    kClip,         // min(max(x, alpha), beta) (alpha = min, beta = max); NaN stays NaN
    kHardSigmoid,  // max(0, min(1, alpha * x + beta)) (a multiply, then an add)
    kSigmoid,      // (x < 0 ? e : 1) / (1 + e), e = exp(-|x|) from SLEEF (vector_math.h)
    // (x * clip(x + alpha, beta, gamma)) / delta, one rounding per operation (HardSwish as
    // exporters write it: Add 3, Clip 0..6, Mul, Div 6)
    kHardSwish,
  };
  Kind kind = Kind::kNone;
  float alpha = 0.0f;
  float beta = 0.0f;
  float gamma = 0.0f;
  float delta = 1.0f;
  // Then x < lower ? lower : x (a Max with a constant after the activation; NaN stays NaN),
  // then x * scale (with `scaled`), then x + shift (with `shifted`): an affine step after the
  // activation (PP-LCNet's learnable affine block), one rounding each.
  float lower = -std::numeric_limits<float>::infinity();
  bool scaled = false;
  float scale = 1.0f;
  bool shifted = false;
  float shift = 0.0f;

  static Activation None() { return {}; }
  static Activation Relu() { return {Kind::kRelu, 0.0f, 0.0f}; }
  static Activation LeakyRelu(float alpha) { return {Kind::kLeakyRelu, alpha, 0.0f}; }
  static Activation Clip(float min, float max) { return {Kind::kClip, min, max}; }
  static Activation HardSigmoid(float alpha, float beta) {
    return {Kind::kHardSigmoid, alpha, beta};
  }
  static Activation Sigmoid() { return {Kind::kSigmoid, 0.0f, 0.0f}; }
};

// What happens to each result after the products: c = act(s + bias).
struct Epilogue {
  // nullptr: no bias. Otherwise n values, bias[j] added to column j (Gemm's/MatMul's bias over
  // the output features), or with bias_per_row m values, bias[i] added to row i (Conv's bias per
  // output channel when the weights are A).
  const float* bias = nullptr;
  bool bias_per_row = false;
  Activation activation;
  // Store the product transposed: result (i, j) goes to c[j * ldc + i] (c is n x m, ldc >= m;
  // beta reads it there too). For a Conv with few output pixels (Silero's 4 frames): A = the
  // pixels' patches (pixels x Cin*kh*kw), B = the packed weights^T, c = the NCHW output
  // (channels x pixels) directly. Costs a strided store per result, nothing in the k-loop.
  bool transposed_c = false;
};

// Runs independent tasks, possibly in parallel: the runtime's intra-op threads implement it.
// The fast kernels split their work into at most concurrency() tasks of whole output tiles;
// each output is computed by one task the same way whatever the split, so results never depend
// on the thread count.
class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // How many tasks can usefully run at once (>= 1).
  virtual int concurrency() const = 0;
  // Calls fn(context, t) once for every t in [0, count), on any threads, in any order, and
  // returns when all calls have returned.
  virtual void Run(int64_t count, void (*fn)(void* context, int64_t task), void* context) const = 0;
};

// Columns per panel of a packed B.
inline constexpr int64_t kPanelWidth = 16;

// One block of rows of B for PackBParts: k rows (or, transposed, k columns) at b, row stride ld.
struct BPart {
  const float* b;
  int64_t ld;
  int64_t k;
};

// B (k x n) packed for GemmPacked: ceil(n / 16) panels of 16 columns, each k rows of 16 floats
// (row p of the panel holds b[p][16 * panel + 0..15]; columns past n are zero). 64-byte aligned.
// The layout does not depend on the SIMD target: a PackedB made under one target runs under
// any other.
class PackedB {
 public:
  PackedB() = default;
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  int64_t panels() const { return (n_ + kPanelWidth - 1) / kPanelWidth; }
  const float* data() const { return data_.get(); }
  // Bytes held (PackedBBytes(k, n)).
  size_t bytes() const { return static_cast<size_t>(panels() * k_ * kPanelWidth) * sizeof(float); }

 private:
  friend PackedB PackBParts(std::span<const BPart> parts, int64_t n, bool transposed, float scale);
  struct AlignedDelete {
    void operator()(float* p) const;
  };
  int64_t k_ = 0;
  int64_t n_ = 0;
  std::unique_ptr<float[], AlignedDelete> data_;
};

// The bytes PackB(k, n) allocates, or -1 when that does not fit in int64 (check the result
// against the memory budget before packing). k, n >= 0.
int64_t PackedBBytes(int64_t k, int64_t n);

// Packs B: b[p][j] = b[p * ldb + j] (k x n, ldb >= n), or with `transposed` b[p][j] =
// b[j * ldb + p] (B stored n x k, ldb >= k: Gemm's transB, LSTM's W). Each value is multiplied
// by `scale` (Gemm's alpha folded into the weights: one rounding; scale 1 keeps them exact).
PackedB PackB(const float* b, int64_t ldb, int64_t k, int64_t n, bool transposed,
              float scale = 1.0f);
// Dense: ldb = n (or k when transposed).
PackedB PackB(const float* b, int64_t k, int64_t n, bool transposed, float scale = 1.0f);

// Rows of B stacked from parts: B = [part 0; part 1; ...] along k (each part k_i x n, or n x k_i
// when transposed, row stride ld). The LSTM gates as one product: [x, h] * [W; R]^T.
PackedB PackBParts(std::span<const BPart> parts, int64_t n, bool transposed, float scale = 1.0f);

// c = A * B as the header says: a is m x b.k() (row stride lda >= k), c is m x b.n() (row
// stride ldc >= n; n x m with transposed_c), beta as above (0: overwrite; 1: accumulate into c). c
// must not overlap a. m == 0 or n == 0: nothing; k == 0: c = act(init + bias).
void GemmPacked(const float* a, int64_t lda, const PackedB& b, float* c, int64_t ldc, int64_t m,
                float beta = 0.0f, const Epilogue& epilogue = {},
                const TaskRunner* runner = nullptr);

// The same product with B read where it is: b[p][j] = b[p * ldb + j] (k x n, ldb >= n), e.g.
// Conv's im2col columns (or the input itself for a 1x1 Conv) with the weights as A, which needs
// no packing (A is only read one element at a time). c must not overlap a or b.
void GemmUnpacked(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                  int64_t m, int64_t n, int64_t k, float beta = 0.0f, const Epilogue& epilogue = {},
                  const TaskRunner* runner = nullptr);

// x[i] = act(x[i]) for every element, with the bits the fused epilogue gives (an activation
// the planner fused into a kernel that then ran an unfused path).
void Activate(const Activation& activation, std::span<float> x);

// A depthwise 2-D convolution (one input channel per output plane, Conv's group == channels):
//   y[oy][ox] = act(s + bias), s = 0, then for ky = 0..kh-1, kx = 0..kw-1 in that order
//                                 s = fma(w[ky * kw + kx], x at (oy, ox) for tap (ky, kx), s)
// the chain of the header's contract with k = kh * kw (so the same bits as the packed GEMM over
// that Conv's im2col columns, padding read as zeros). The input comes as `phases` planes made by
// the caller from the zero-padded input: plane f holds the padded columns f, f + sw, f + 2 sw, ...
// of every padded row (row stride ld, plane stride phase_stride), so every tap reads contiguous
// memory: tap (ky, kx) of output (oy, ox) is plane (kx * dw) % sw, row oy * sh + ky * dh, column
// ox + (kx * dw) / sw. Each plane row must hold ow + ((kw - 1) * dw) / sw readable floats.
struct DepthwiseProblem {
  const float* planes = nullptr;
  int64_t ld = 0;            // row stride of a plane
  int64_t phase_stride = 0;  // distance between planes
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  const float* w = nullptr;  // kh x kw taps
  int64_t kh = 1, kw = 1;
  float* y = nullptr;  // oh x ow, row stride ow
  int64_t oh = 0, ow = 0;
  const float* bias = nullptr;  // one value, or null
  Activation activation;
};
void DepthwiseConv2D(const DepthwiseProblem& problem);

}  // namespace idem::fast

#endif  // IDEM_SRC_KERNELS_FAST_PACKED_GEMM_H_
