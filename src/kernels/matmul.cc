// Gemm (1, 6, 7, 9, 11, 13), MatMul (1, 9, 13), and the reference GEMM (gemm.h) that Conv,
// ConvTranspose and LSTM reuse.
//
// Numerics (reference kernels): products are accumulated in float for float, float16 and
// bfloat16 (16-bit inputs are widened to float first, each result rounded once), in double for
// double, in a fixed order (see gemm.h). Integer types wrap modulo 2^bits.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "src/kernels/dispatch.h"
#include "src/kernels/fast/packed_gemm.h"
#include "src/kernels/gemm.h"
#include "src/kernels/op.h"

namespace idem {

// ---- The reference GEMM -----------------------------------------------------------------------

namespace {

// Register tile (kMr x kNr accumulators), and the cache blocks: a kKc x kNc panel of B and a
// kMc x kKc panel of A are packed once and reused. Fixed constants: they never change the order
// in which a result is accumulated, only which memory it comes from.
constexpr int64_t kMr = 4;
constexpr int64_t kNr = 8;
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 64;
constexpr int64_t kNc = 512;

int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// B[p0 .. p0+kb) x [j0 .. j0+nb) into column panels of kNr: panel q holds kb rows of kNr values
// (columns past n are zero).
template <class U>
void PackB(bool trans_b, const U* b, int64_t ldb, int64_t p0, int64_t kb, int64_t j0, int64_t nb,
           U* out) {
  for (int64_t jp = 0; jp < nb; jp += kNr) {
    const int64_t cols = std::min(kNr, nb - jp);
    for (int64_t p = 0; p < kb; ++p) {
      U* dst = out + jp * kb + p * kNr;
      for (int64_t j = 0; j < kNr; ++j) {
        if (j >= cols) {
          dst[j] = U{};
        } else {
          const int64_t row = p0 + p, col = j0 + jp + j;
          dst[j] = trans_b ? b[col * ldb + row] : b[row * ldb + col];
        }
      }
    }
  }
}

// A[i0 .. i0+mb) x [p0 .. p0+kb) into row panels of kMr: panel q holds kb columns of kMr values
// (rows past m are zero).
template <class U>
void PackA(bool trans_a, const U* a, int64_t lda, int64_t i0, int64_t mb, int64_t p0, int64_t kb,
           U* out) {
  for (int64_t ip = 0; ip < mb; ip += kMr) {
    const int64_t rows = std::min(kMr, mb - ip);
    for (int64_t p = 0; p < kb; ++p) {
      U* dst = out + ip * kb + p * kMr;
      for (int64_t r = 0; r < kMr; ++r) {
        if (r >= rows) {
          dst[r] = U{};
        } else {
          const int64_t row = i0 + ip + r, col = p0 + p;
          dst[r] = trans_a ? a[col * lda + row] : a[row * lda + col];
        }
      }
    }
  }
}

// c[0..rows) x [0..cols) (+)= the product of a packed A panel and a packed B panel over kb. The
// accumulators start from c when `load`, so each result keeps one running sum over all of k.
template <class U>
void MicroKernel(int64_t kb, const U* __restrict a, const U* __restrict b, U* __restrict c,
                 int64_t ldc, int64_t rows, int64_t cols, bool load) {
  U acc[kMr][kNr];
  for (int64_t r = 0; r < kMr; ++r) {
    for (int64_t j = 0; j < kNr; ++j) {
      acc[r][j] = load && r < rows && j < cols ? c[r * ldc + j] : U{};
    }
  }
  for (int64_t p = 0; p < kb; ++p) {
    const U* ap = a + p * kMr;
    const U* bp = b + p * kNr;
    for (int64_t r = 0; r < kMr; ++r) {
      const U av = ap[r];
      for (int64_t j = 0; j < kNr; ++j) acc[r][j] += av * bp[j];
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) c[r * ldc + j] = acc[r][j];
  }
}

// Fewer rows than a register tile (a vector times a matrix: LSTM steps, depthwise Conv, MatMul
// of one row): no packing; each row of c is updated once per p, so every result still sums
// over p in order.
template <class U>
void GemmFewRows(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const U* a,
                 int64_t lda, const U* b, int64_t ldb, U* c, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < m; ++i) {
    U* __restrict row = c + i * ldc;
    if (!accumulate) std::fill(row, row + n, U{});
    if (trans_b) {
      for (int64_t j = 0; j < n; ++j) {
        U s = row[j];
        const U* bj = b + j * ldb;
        for (int64_t p = 0; p < k; ++p) s += (trans_a ? a[p * lda + i] : a[i * lda + p]) * bj[p];
        row[j] = s;
      }
    } else {
      for (int64_t p = 0; p < k; ++p) {
        const U av = trans_a ? a[p * lda + i] : a[i * lda + p];
        const U* __restrict bp = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) row[j] += av * bp[j];
      }
    }
  }
}

template <class U>
void GemmImpl(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const U* a, int64_t lda,
              const U* b, int64_t ldb, U* c, int64_t ldc, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, U{});
    }
    return;
  }
  if (m < kMr) {
    GemmFewRows(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
    return;
  }
  // Packing buffers of a fixed, small size (at most 640 KiB for 8-byte types); every element
  // read is written by the packing first.
  const int64_t kc = std::min(kKc, k);
  std::unique_ptr<U[]> bpack(new U[static_cast<size_t>(kc * RoundUp(std::min(kNc, n), kNr))]);
  std::unique_ptr<U[]> apack(new U[static_cast<size_t>(kc * RoundUp(std::min(kMc, m), kMr))]);
  for (int64_t j0 = 0; j0 < n; j0 += kNc) {
    const int64_t nb = std::min(kNc, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kKc) {
      const int64_t kb = std::min(kKc, k - p0);
      const bool load = accumulate || p0 > 0;
      PackB(trans_b, b, ldb, p0, kb, j0, nb, bpack.get());
      for (int64_t i0 = 0; i0 < m; i0 += kMc) {
        const int64_t mb = std::min(kMc, m - i0);
        PackA(trans_a, a, lda, i0, mb, p0, kb, apack.get());
        for (int64_t ip = 0; ip < mb; ip += kMr) {
          for (int64_t jp = 0; jp < nb; jp += kNr) {
            MicroKernel(kb, apack.get() + ip * kb, bpack.get() + jp * kb,
                        c + (i0 + ip) * ldc + j0 + jp, ldc, std::min(kMr, mb - ip),
                        std::min(kNr, nb - jp), load);
          }
        }
      }
    }
  }
}

}  // namespace

template <class T>
void ReferenceGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                   int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, bool accumulate) {
  if constexpr (std::is_integral_v<T>) {
    // Unsigned arithmetic wraps; a signed type and its unsigned counterpart may alias.
    using U = std::make_unsigned_t<T>;
    GemmImpl<U>(trans_a, trans_b, m, n, k, reinterpret_cast<const U*>(a), lda,
                reinterpret_cast<const U*>(b), ldb, reinterpret_cast<U*>(c), ldc, accumulate);
  } else {
    GemmImpl<T>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  }
}

template void ReferenceGemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t,
                                   const float*, int64_t, float*, int64_t, bool);
template void ReferenceGemm<double>(bool, bool, int64_t, int64_t, int64_t, const double*, int64_t,
                                    const double*, int64_t, double*, int64_t, bool);
template void ReferenceGemm<int32_t>(bool, bool, int64_t, int64_t, int64_t, const int32_t*, int64_t,
                                     const int32_t*, int64_t, int32_t*, int64_t, bool);
template void ReferenceGemm<int64_t>(bool, bool, int64_t, int64_t, int64_t, const int64_t*, int64_t,
                                     const int64_t*, int64_t, int64_t*, int64_t, bool);
template void ReferenceGemm<uint32_t>(bool, bool, int64_t, int64_t, int64_t, const uint32_t*,
                                      int64_t, const uint32_t*, int64_t, uint32_t*, int64_t, bool);
template void ReferenceGemm<uint64_t>(bool, bool, int64_t, int64_t, int64_t, const uint64_t*,
                                      int64_t, const uint64_t*, int64_t, uint64_t*, int64_t, bool);

namespace {

// The accumulator of element type T: float for the 16-bit floats, T otherwise.
template <class T>
using Acc = ComputeType<T>;

// n elements of T widened to the accumulator type.
template <class T>
Result<std::vector<Acc<T>>> Widen(RunContext& ctx, const T* src, int64_t n) {
  IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(n) * sizeof(Acc<T>)));
  std::vector<Acc<T>> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = ToCompute(src[i]);
  return out;
}

// Scratch of n accumulator values, checked against the run's budget first.
template <class A>
Result<std::vector<A>> Scratch(RunContext& ctx, int64_t n) {
  IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(n) * sizeof(A)));
  return std::vector<A>(static_cast<size_t>(n));
}

// The element types of Gemm-9+ and MatMul-9+: the floats and int32, int64, uint32, uint64.
template <class F>
Status DispatchMatrixTypes(ElementType type, std::string_view op, F&& f) {
  switch (type) {
    case ElementType::kInt32:
      return f(int32_t{});
    case ElementType::kInt64:
      return f(int64_t{});
    case ElementType::kUint32:
      return f(uint32_t{});
    case ElementType::kUint64:
      return f(uint64_t{});
    default:
      return DispatchFloat(type, op, std::forward<F>(f));
  }
}

// ---- MatMul -----------------------------------------------------------------------------------

struct MatMulAttrs {};

Result<MatMulAttrs> ParseMatMul(const NodeContext&) { return MatMulAttrs{}; }

// numpy.matmul's shape rule: a 1-D A is [1, K] and a 1-D B is [K, 1], the added dim removed
// from the result; the batch dims (all but the last two) broadcast.
template <class D>
Result<DimsOf<D>> MatMulShape(std::span<const D> a, std::span<const D> b) {
  if (a.empty() || b.empty()) {
    return InvalidArgument(
        fmt::format("MatMul needs inputs of rank >= 1 (A has rank {}, B {})", a.size(), b.size()));
  }
  const D& ka = a.back();
  const D& kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  const auto va = KnownDim(ka), vb = KnownDim(kb);
  if (va && vb && *va != *vb) {
    return InvalidArgument(fmt::format(
        "MatMul: A's last dim ({}) differs from B's {} ({}); they are the K of the product", *va,
        b.size() == 1 ? "only dim" : "second-to-last dim", *vb));
  }
  const std::span<const D> batch_a = a.size() > 2 ? a.first(a.size() - 2) : std::span<const D>();
  const std::span<const D> batch_b = b.size() > 2 ? b.first(b.size() - 2) : std::span<const D>();
  auto batch = BroadcastDims<D>(batch_a, batch_b);
  if (!batch.ok()) {
    return InvalidArgument("MatMul batch dims: " + std::string(batch.status().message()));
  }
  DimsOf<D> out = std::move(batch).value();
  if (a.size() >= 2) out.push_back(a[a.size() - 2]);
  if (b.size() >= 2) out.push_back(b.back());
  return out;
}

// The multiply-adds of a product with these output dims and inner dim k (checked when all are
// known): outputs x K. Broadcast batch dims make it more than the inputs' sizes suggest.
template <class D>
Status CheckProductWork(std::span<const D> out, const D& k, const char* op, const Limits& limits) {
  double work = 1;
  for (const D& d : out) {
    const auto v = KnownDim(d);
    if (!v) return {};
    work *= static_cast<double>(*v);
  }
  const auto kv = KnownDim(k);
  if (!kv) return {};
  return CheckWork(limits, work * std::max(1.0, static_cast<double>(*kv)), op,
                   "multiply-adds (outputs x K)");
}

Result<Inference> InferMatMul(const MatMulAttrs&, const Facts& facts) {
  IDEM_ASSIGN_OR_RETURN(auto dims, InferDims(facts, {0, 1}, [&] {
                          return MatMulShape<Dim>(*facts.shape(0), *facts.shape(1));
                        }));
  if (dims) {
    IDEM_RETURN_IF_ERROR(
        CheckProductWork<Dim>(*dims, facts.shape(0)->back(), "MatMul", facts.context().limits));
  }
  return OneOutput(TensorType(facts.element_type(0), std::move(dims)));
}

template <class T>
Status RunMatMul(RunContext& ctx, const Tensor& a, const Tensor& b, Value& out) {
  const auto as = a.shape(), bs = b.shape();
  IDEM_ASSIGN_OR_RETURN(Ints shape, MatMulShape<int64_t>(as, bs));
  const int64_t m = as.size() >= 2 ? as[as.size() - 2] : 1;
  const int64_t k = as.back();
  const int64_t n = bs.size() >= 2 ? bs.back() : 1;
  const std::span<const int64_t> batch_a =
      as.size() > 2 ? as.first(as.size() - 2) : std::span<const int64_t>();
  const std::span<const int64_t> batch_b =
      bs.size() > 2 ? bs.first(bs.size() - 2) : std::span<const int64_t>();
  const Ints batch = BroadcastDims<int64_t>(batch_a, batch_b).value();
  IDEM_RETURN_IF_ERROR(CheckProductWork<int64_t>(shape, k, "MatMul", ctx.limits()));
  T* y = nullptr;
  IDEM_ASSIGN_OR_RETURN(out, AllocateTensorAs(ctx, a.element_type(), shape, &y));
  if (m * n == 0) return {};
  const T* pa = a.data_as<T>().data();
  const T* pb = b.data_as<T>().data();
  if constexpr (std::is_same_v<Acc<T>, T>) {
    ForEachBroadcast(batch_a, batch_b, batch, [&](int64_t i, int64_t ia, int64_t ib) {
      ReferenceGemm<T>(false, false, m, n, k, pa + ia * m * k, k, pb + ib * k * n, n, y + i * m * n,
                       n, false);
    });
  } else {
    IDEM_ASSIGN_OR_RETURN(auto wa, Widen(ctx, pa, a.element_count()));
    IDEM_ASSIGN_OR_RETURN(auto wb, Widen(ctx, pb, b.element_count()));
    IDEM_ASSIGN_OR_RETURN(auto acc, Scratch<float>(ctx, m * n));
    ForEachBroadcast(batch_a, batch_b, batch, [&](int64_t i, int64_t ia, int64_t ib) {
      ReferenceGemm<float>(false, false, m, n, k, wa.data() + ia * m * k, k, wb.data() + ib * k * n,
                           n, acc.data(), n, false);
      for (int64_t e = 0; e < m * n; ++e) y[i * m * n + e] = FromCompute<T>(acc[e]);
    });
  }
  return {};
}

Result<std::unique_ptr<Kernel>> CreateFastMatMul(const Facts& facts, fast::Activation activation);

Result<std::unique_ptr<Kernel>> CreateMatMul(const MatMulAttrs& attrs, const Facts& facts) {
  const FusedActivation& fused = facts.context().fused_activation;
  if (!facts.context().reference_kernels && facts.element_type(0) == ElementType::kFloat) {
    return CreateFastMatMul(facts, ToFastActivation(fused));
  }
  if (fused.any()) return CannotFuse("MatMul");
  return MakeFunctionKernel(attrs,
                            [](const MatMulAttrs&, RunContext& ctx,
                               std::span<const Value* const> in, std::span<Value> out) -> Status {
                              const Tensor& a = in[0]->tensor();
                              const Tensor& b = in[1]->tensor();
                              return DispatchMatrixTypes(a.element_type(), "MatMul", [&](auto tag) {
                                return RunMatMul<decltype(tag)>(ctx, a, b, out[0]);
                              });
                            });
}

// ---- Gemm -------------------------------------------------------------------------------------

struct GemmAttrs {
  float alpha = 1.0f;
  float beta = 1.0f;
  bool trans_a = false;
  bool trans_b = false;
  // Gemm-1/6's `broadcast`: C may broadcast to (M, N) only when set. From Gemm-7 C always
  // broadcasts unidirectionally.
  bool broadcast = true;
};

Result<GemmAttrs> ParseGemm(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  GemmAttrs g;
  IDEM_ASSIGN_OR_RETURN(g.alpha, r.Float("alpha", 1.0f));
  IDEM_ASSIGN_OR_RETURN(g.beta, r.Float("beta", 1.0f));
  // Any nonzero value transposes (as ONNX Runtime reads these flags).
  IDEM_ASSIGN_OR_RETURN(int64_t ta, r.Int("transA", 0));
  IDEM_ASSIGN_OR_RETURN(int64_t tb, r.Int("transB", 0));
  g.trans_a = ta != 0;
  g.trans_b = tb != 0;
  if (ctx.version < 7) {
    IDEM_ASSIGN_OR_RETURN(int64_t bc, r.Int("broadcast", 0));
    g.broadcast = bc != 0;
  }
  return g;
}

// Y is (M, N) for A (M, K) (or (K, M) with transA) and B (K, N) (or (N, K) with transB); C, when
// given, must broadcast unidirectionally to (M, N) (or, for Gemm-1/6 without `broadcast`, be
// (M, N) itself).
template <class D>
Result<DimsOf<D>> GemmShape(const GemmAttrs& g, std::span<const D> a, std::span<const D> b,
                            std::optional<std::span<const D>> c) {
  if (a.size() != 2 || b.size() != 2) {
    return InvalidArgument(
        fmt::format("Gemm needs 2-D A and B (A has rank {}, B rank {})", a.size(), b.size()));
  }
  const D& m = g.trans_a ? a[1] : a[0];
  const D& ka = g.trans_a ? a[0] : a[1];
  const D& kb = g.trans_b ? b[1] : b[0];
  const D& n = g.trans_b ? b[0] : b[1];
  if (KnownDim(ka) && KnownDim(kb) && *KnownDim(ka) != *KnownDim(kb)) {
    return InvalidArgument(
        fmt::format("Gemm: K differs between A ({}, transA={}) and B ({}, transB={})",
                    *KnownDim(ka), g.trans_a ? 1 : 0, *KnownDim(kb), g.trans_b ? 1 : 0));
  }
  if (c) {
    const std::span<const D> cs = *c;
    if (cs.size() > 2 || (!g.broadcast && cs.size() != 2)) {
      return InvalidArgument(fmt::format("Gemm: C has rank {}; it must {}", cs.size(),
                                         g.broadcast ? "broadcast to (M, N) (rank <= 2)"
                                                     : "be (M, N) (attribute 'broadcast' is 0)"));
    }
    const D* target[2] = {&m, &n};
    for (size_t i = 0; i < cs.size(); ++i) {
      const D& want = *target[2 - cs.size() + i];
      const auto vc = KnownDim(cs[i]), vw = KnownDim(want);
      if (vc && vw && *vc != *vw && (*vc != 1 || !g.broadcast)) {
        return InvalidArgument(
            fmt::format("Gemm: C's dim {} is {}; it must be {}{} ({} of the (M, N) result)", i, *vc,
                        *vw, g.broadcast ? " or 1" : "", 2 - cs.size() + i == 0 ? "M" : "N"));
      }
    }
  }
  return DimsOf<D>{m, n};
}

Result<Inference> InferGemm(const GemmAttrs& g, const Facts& facts) {
  IDEM_ASSIGN_OR_RETURN(auto dims, InferDims(facts, {0, 1}, [&] {
                          std::optional<std::span<const Dim>> c;
                          if (facts.has(2) && facts.shape(2))
                            c = std::span<const Dim>(*facts.shape(2));
                          return GemmShape<Dim>(g, *facts.shape(0), *facts.shape(1), c);
                        }));
  if (dims) {
    const std::vector<Dim>& a = *facts.shape(0);
    IDEM_RETURN_IF_ERROR(
        CheckProductWork<Dim>(*dims, g.trans_a ? a[0] : a[1], "Gemm", facts.context().limits));
  }
  return OneOutput(TensorType(facts.element_type(0), std::move(dims)));
}

// A double converted to an integer type: truncated toward zero, saturated at the type's range,
// NaN -> 0 (C++'s conversion is undefined outside the range).
template <class T>
T SaturatingCast(double v) {
  if (std::isnan(v)) return T{0};
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) {
    return std::numeric_limits<T>::lowest();
  }
  return static_cast<T>(v);
}

// Y = alpha * (A B) + beta * C. Floats: alpha * acc, then + beta * c, rounded as numpy's float32
// (or double) expression; with beta == 0, C is not read (ONNX Runtime skips it too). Integers:
// wrap-around arithmetic when alpha == 1 and beta is 0 or 1, else the value computed in double,
// truncated toward zero and saturated.
template <class T>
Status RunGemm(const GemmAttrs& g, RunContext& ctx, const Tensor& a, const Tensor& b,
               const Tensor* c, Value& out) {
  std::optional<std::span<const int64_t>> cs;
  if (c != nullptr) cs = c->shape();
  IDEM_ASSIGN_OR_RETURN(Ints shape, GemmShape<int64_t>(g, a.shape(), b.shape(), cs));
  const int64_t m = shape[0], n = shape[1];
  const int64_t k = g.trans_a ? a.shape()[0] : a.shape()[1];
  IDEM_RETURN_IF_ERROR(CheckProductWork<int64_t>(shape, k, "Gemm", ctx.limits()));
  T* y = nullptr;
  IDEM_ASSIGN_OR_RETURN(out, AllocateTensorAs(ctx, a.element_type(), shape, &y));
  if (m * n == 0) return {};
  const T* pa = a.data_as<T>().data();
  const T* pb = b.data_as<T>().data();
  const int64_t lda = a.shape()[1], ldb = b.shape()[1];
  using A = Acc<T>;
  std::vector<A> acc_storage;
  A* acc = nullptr;
  if constexpr (std::is_same_v<A, T>) {
    ReferenceGemm<T>(g.trans_a, g.trans_b, m, n, k, pa, lda, pb, ldb, y, n, false);
    acc = y;
  } else {
    IDEM_ASSIGN_OR_RETURN(auto wa, Widen(ctx, pa, a.element_count()));
    IDEM_ASSIGN_OR_RETURN(auto wb, Widen(ctx, pb, b.element_count()));
    IDEM_ASSIGN_OR_RETURN(acc_storage, Scratch<float>(ctx, m * n));
    acc = acc_storage.data();
    ReferenceGemm<float>(g.trans_a, g.trans_b, m, n, k, wa.data(), lda, wb.data(), ldb, acc, n,
                         false);
  }
  // C's strides over (i, j) under unidirectional broadcasting.
  int64_t ci = 0, cj = 0;
  const T* pc = nullptr;
  if (c != nullptr && g.beta != 0.0f) {
    pc = c->data_as<T>().data();
    const auto s = c->shape();
    if (s.size() == 2) {
      ci = s[0] == 1 ? 0 : s[1];
      cj = s[1] == 1 ? 0 : 1;
    } else if (s.size() == 1) {
      cj = s[0] == 1 ? 0 : 1;
    }
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const A v = acc[i * n + j];
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        const T cv = pc != nullptr ? pc[i * ci + j * cj] : T{0};
        if (g.alpha == 1.0f && (pc == nullptr || g.beta == 1.0f)) {
          y[i * n + j] = static_cast<T>(static_cast<U>(v) + static_cast<U>(cv));
        } else {
          const double r = static_cast<double>(v) * static_cast<double>(g.alpha) +
                           (pc != nullptr ? static_cast<double>(cv) * g.beta : 0.0);
          y[i * n + j] = SaturatingCast<T>(r);
        }
      } else {
        A r = static_cast<A>(g.alpha) * v;
        if (pc != nullptr) r = r + static_cast<A>(g.beta) * ToCompute(pc[i * ci + j * cj]);
        y[i * n + j] = FromCompute<T>(r);
      }
    }
  }
  return {};
}

Result<std::unique_ptr<Kernel>> CreateFastGemm(const GemmAttrs& g, const Facts& facts,
                                               fast::Activation activation);

Result<std::unique_ptr<Kernel>> CreateGemm(const GemmAttrs& attrs, const Facts& facts) {
  const FusedActivation& fused = facts.context().fused_activation;
  if (!facts.context().reference_kernels && facts.element_type(0) == ElementType::kFloat) {
    return CreateFastGemm(attrs, facts, ToFastActivation(fused));
  }
  if (fused.any()) return CannotFuse("Gemm");
  return MakeFunctionKernel(attrs,
                            [](const GemmAttrs& g, RunContext& ctx,
                               std::span<const Value* const> in, std::span<Value> out) -> Status {
                              const Tensor& a = in[0]->tensor();
                              const Tensor& b = in[1]->tensor();
                              const Tensor* c =
                                  in.size() > 2 && in[2] != nullptr ? &in[2]->tensor() : nullptr;
                              return DispatchMatrixTypes(a.element_type(), "Gemm", [&](auto tag) {
                                return RunGemm<decltype(tag)>(g, ctx, a, b, c, out[0]);
                              });
                            });
}

// ---- Fast float Gemm and MatMul (SessionOptions::reference_kernels off) -------------------------
//
// Float products run on the fast kernels (src/kernels/fast/packed_gemm.h): every result is one
// chain of fused multiply-adds over k in order, then + the bias, then the fused activation, the
// same bits on every run, SIMD target and thread count, and for a constant or a fed B. Gemm packs
// alpha * op(B) once at Create when B is a constant (else on every run: the same bits) and turns
// beta * C into the bias (C of M x N: the product's starting value); MatMul packs a constant B
// once and reads a fed one where it is.

// A transposed (k x m stored, row stride lda) as a dense m x k matrix.
void TransposeInto(const float* a, int64_t lda, int64_t m, int64_t k, float* out) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t p = 0; p < k; ++p) out[i * k + p] = a[p * lda + i];
  }
}

class FastGemmKernel final : public Kernel {
 public:
  FastGemmKernel(GemmAttrs g, std::shared_ptr<const fast::PackedB> packed,
                 std::array<int64_t, 2> b_shape, fast::Activation activation,
                 const fast::TaskRunner* threads)
      : g_(g),
        packed_(std::move(packed)),
        b_shape_(b_shape),
        activation_(activation),
        threads_(threads) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> in,
                 std::span<Value> out) const override {
    const Tensor& a = in[0]->tensor();
    // A packed B is not read (absorbed_inputs): only its shape, kept from Create.
    const Tensor* b = packed_ == nullptr ? &in[1]->tensor() : nullptr;
    const Tensor* c = in.size() > 2 && in[2] != nullptr ? &in[2]->tensor() : nullptr;
    if (a.element_type() != ElementType::kFloat ||
        (b != nullptr && b->element_type() != ElementType::kFloat) ||
        (c != nullptr && c->element_type() != ElementType::kFloat)) {
      return InvalidArgument("Gemm: A, B and C must have the same element type");
    }
    std::optional<std::span<const int64_t>> cs;
    if (c != nullptr) cs = c->shape();
    const std::span<const int64_t> b_shape = b != nullptr ? b->shape() : b_shape_;
    IDEM_ASSIGN_OR_RETURN(Ints shape, GemmShape<int64_t>(g_, a.shape(), b_shape, cs));
    const int64_t m = shape[0], n = shape[1];
    const int64_t k = g_.trans_a ? a.shape()[0] : a.shape()[1];
    IDEM_RETURN_IF_ERROR(CheckProductWork<int64_t>(shape, k, "Gemm", ctx.limits()));
    float* y = nullptr;
    IDEM_ASSIGN_OR_RETURN(out[0],
                          AllocateTensorForOverwriteAs(ctx, ElementType::kFloat, shape, &y));
    if (m * n == 0) return {};
    // B: packed at Create, or now.
    std::shared_ptr<const fast::PackedB> packed = packed_;
    std::optional<fast::PackedB> local;
    if (packed == nullptr) {
      const int64_t bytes = fast::PackedBBytes(k, n);
      if (bytes < 0) return InvalidArgument("Gemm: the packed B overflows int64");
      IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(bytes)));
      local = fast::PackB(b->data_as<float>().data(), b_shape[1], k, n, g_.trans_b, g_.alpha);
    }
    const fast::PackedB& pb = packed != nullptr ? *packed : *local;
    // A as m x k rows.
    const float* pa = a.data_as<float>().data();
    ScratchVector<float> a_rows;
    if (g_.trans_a && m > 1) {
      IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(m * k) * sizeof(float)));
      a_rows.resize(static_cast<size_t>(m * k));
      TransposeInto(pa, a.shape()[1], m, k, a_rows.data());
      pa = a_rows.data();
    }
    const int64_t lda = g_.trans_a ? (m > 1 ? k : 1) : a.shape()[1];
    // C: beta * C as a bias over the columns (or rows), or as the starting value.
    fast::Epilogue ep;
    ep.activation = activation_;
    float beta = 0.0f;
    ScratchVector<float> bias;
    if (c != nullptr && g_.beta != 0.0f) {
      const float* pc = c->data_as<float>().data();
      const auto s = c->shape();
      const int64_t count = c->element_count();
      const bool rows = s.size() == 2 && s[1] == 1 && s[0] == m && m > 1;
      if (count == 1 || !rows) {
        if (count == 1 || count == n) {
          IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(n) * sizeof(float)));
          bias.resize(static_cast<size_t>(n));
          for (int64_t j = 0; j < n; ++j) bias[j] = g_.beta * pc[count == 1 ? 0 : j];
          ep.bias = bias.data();
        } else {
          // C is M x N: the product starts from beta * C.
          std::copy(pc, pc + m * n, y);
          beta = g_.beta;
        }
      } else {
        IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(m) * sizeof(float)));
        bias.resize(static_cast<size_t>(m));
        for (int64_t i = 0; i < m; ++i) bias[i] = g_.beta * pc[i];
        ep.bias = bias.data();
        ep.bias_per_row = true;
      }
    }
    fast::GemmPacked(pa, lda, pb, y, n, m, beta, ep, threads_);
    return {};
  }

  uint64_t absorbed_inputs() const override { return packed_ != nullptr ? uint64_t{1} << 1 : 0; }

 private:
  GemmAttrs g_;
  std::shared_ptr<const fast::PackedB> packed_;  // alpha * op(B), when B is a constant
  std::array<int64_t, 2> b_shape_{};             // B's shape, when packed
  fast::Activation activation_;
  const fast::TaskRunner* threads_;
};

class FastMatMulKernel final : public Kernel {
 public:
  FastMatMulKernel(std::shared_ptr<const std::vector<fast::PackedB>> packed,
                   std::vector<int64_t> b_shape, fast::Activation activation,
                   const fast::TaskRunner* threads)
      : packed_(std::move(packed)),
        b_shape_(std::move(b_shape)),
        activation_(activation),
        threads_(threads) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> in,
                 std::span<Value> out) const override {
    const Tensor& a = in[0]->tensor();
    // A packed B is not read (absorbed_inputs): only its shape, kept from Create.
    const Tensor* b = packed_ == nullptr ? &in[1]->tensor() : nullptr;
    if (a.element_type() != ElementType::kFloat ||
        (b != nullptr && b->element_type() != ElementType::kFloat)) {
      return InvalidArgument("MatMul: A and B must have the same element type");
    }
    const std::span<const int64_t> as = a.shape();
    const std::span<const int64_t> bs =
        b != nullptr ? b->shape() : std::span<const int64_t>(b_shape_);
    IDEM_ASSIGN_OR_RETURN(Ints shape, MatMulShape<int64_t>(as, bs));
    const int64_t m = as.size() >= 2 ? as[as.size() - 2] : 1;
    const int64_t k = as.back();
    IDEM_RETURN_IF_ERROR(CheckProductWork<int64_t>(shape, k, "MatMul", ctx.limits()));
    const int64_t n = bs.size() >= 2 ? bs.back() : 1;
    const std::span<const int64_t> batch_a =
        as.size() > 2 ? as.first(as.size() - 2) : std::span<const int64_t>();
    const std::span<const int64_t> batch_b =
        bs.size() > 2 ? bs.first(bs.size() - 2) : std::span<const int64_t>();
    const Ints batch = BroadcastDims<int64_t>(batch_a, batch_b).value();
    float* y = nullptr;
    IDEM_ASSIGN_OR_RETURN(out[0],
                          AllocateTensorForOverwriteAs(ctx, ElementType::kFloat, shape, &y));
    if (m * n == 0) return {};
    const float* pa = a.data_as<float>().data();
    const float* pb = b != nullptr ? b->data_as<float>().data() : nullptr;
    fast::Epilogue ep;
    ep.activation = activation_;
    ForEachBroadcast(batch_a, batch_b, batch, [&](int64_t i, int64_t ia, int64_t ib) {
      if (packed_ != nullptr) {
        fast::GemmPacked(pa + ia * m * k, k, (*packed_)[static_cast<size_t>(ib)], y + i * m * n, n,
                         m, 0.0f, ep, threads_);
      } else {
        fast::GemmUnpacked(pa + ia * m * k, k, pb + ib * k * n, n, y + i * m * n, n, m, n, k, 0.0f,
                           ep, threads_);
      }
    });
    return {};
  }

  uint64_t absorbed_inputs() const override { return packed_ != nullptr ? uint64_t{1} << 1 : 0; }

 private:
  std::shared_ptr<const std::vector<fast::PackedB>> packed_;  // each matrix of a constant B
  std::vector<int64_t> b_shape_;                              // B's shape, when packed
  fast::Activation activation_;
  const fast::TaskRunner* threads_;
};

// Whether packing `count` matrices of k x n fits the session's tensor limit.
bool PackFits(int64_t k, int64_t n, int64_t count, const Limits& limits) {
  int64_t bytes = fast::PackedBBytes(k, n);
  return bytes >= 0 && !__builtin_mul_overflow(bytes, count, &bytes) &&
         static_cast<uint64_t>(bytes) <= limits.max_tensor_bytes;
}

Result<std::unique_ptr<Kernel>> CreateFastGemm(const GemmAttrs& g, const Facts& facts,
                                               fast::Activation activation) {
  std::shared_ptr<const fast::PackedB> packed;
  std::array<int64_t, 2> b_shape{};
  const Value* bv = facts.constant(1);
  if (bv != nullptr && bv->is_tensor() && bv->tensor().element_type() == ElementType::kFloat &&
      bv->tensor().shape().size() == 2) {
    const Tensor& b = bv->tensor();
    const int64_t k = g.trans_b ? b.shape()[1] : b.shape()[0];
    const int64_t n = g.trans_b ? b.shape()[0] : b.shape()[1];
    if (PackFits(k, n, 1, facts.context().limits)) {
      packed = std::make_shared<const fast::PackedB>(
          fast::PackB(b.data_as<float>().data(), b.shape()[1], k, n, g.trans_b, g.alpha));
      b_shape = {b.shape()[0], b.shape()[1]};
    }
  }
  return std::unique_ptr<Kernel>(std::make_unique<FastGemmKernel>(
      g, std::move(packed), b_shape, activation, facts.context().threads));
}

Result<std::unique_ptr<Kernel>> CreateFastMatMul(const Facts& facts, fast::Activation activation) {
  std::shared_ptr<const std::vector<fast::PackedB>> packed;
  std::vector<int64_t> b_shape;
  const Value* bv = facts.constant(1);
  if (bv != nullptr && bv->is_tensor() && bv->tensor().element_type() == ElementType::kFloat &&
      !bv->tensor().shape().empty()) {
    const Tensor& b = bv->tensor();
    const auto bs = b.shape();
    const int64_t k = bs.size() >= 2 ? bs[bs.size() - 2] : bs[0];
    const int64_t n = bs.size() >= 2 ? bs.back() : 1;
    const int64_t count = k * n == 0 ? 0 : b.element_count() / (k * n);
    if (k * n > 0 && PackFits(k, n, count, facts.context().limits)) {
      auto all = std::make_shared<std::vector<fast::PackedB>>();
      all->reserve(static_cast<size_t>(count));
      const float* pb = b.data_as<float>().data();
      for (int64_t i = 0; i < count; ++i) all->push_back(fast::PackB(pb + i * k * n, k, n, false));
      packed = std::move(all);
      b_shape.assign(bs.begin(), bs.end());
    }
  }
  return std::unique_ptr<Kernel>(std::make_unique<FastMatMulKernel>(
      std::move(packed), std::move(b_shape), activation, facts.context().threads));
}

// ---- Registration -----------------------------------------------------------------------------

// The type sets of Gemm and MatMul by version, in the spec's order.
std::vector<Type> MatrixTypes(int version) {
  using E = ElementType;
  std::vector<ElementType> types = {E::kFloat16, E::kFloat, E::kDouble};
  if (version >= 9) {
    for (E e : {E::kUint32, E::kUint64, E::kInt32, E::kInt64}) types.push_back(e);
  }
  if (version >= 13) types.push_back(E::kBfloat16);
  return TensorTypes(types);
}

KernelSchema GemmSchema(int version) {
  KernelSchema s;
  s.op_type = "Gemm";
  s.since_version = version;
  s.inputs = {
      {"A", "T"},
      {"B", "T"},
      {"C", "T",
       version >= 11 ? FormalParameter::Arity::kOptional : FormalParameter::Arity::kSingle}};
  s.outputs = {{"Y", "T"}};
  s.constraints = {{"T", MatrixTypes(version)}};
  if (version < 7) {
    s.attributes = {"alpha", "beta", "broadcast", "transA", "transB"};
  } else {
    s.attributes = {"alpha", "beta", "transA", "transB"};
  }
  // Not folded at planning: its work is outputs x kernel (or K), not proportional to the file, so
  // a small model could make Session::Create compute for hours with no deadline to stop it.
  s.foldable = false;
  DefineOp<GemmAttrs>(s, ParseGemm, InferGemm, CreateGemm);
  return s;
}

KernelSchema MatMulSchema(int version) {
  KernelSchema s;
  s.op_type = "MatMul";
  s.since_version = version;
  s.inputs = {{"A", "T"}, {"B", "T"}};
  s.outputs = {{"Y", "T"}};
  s.constraints = {{"T", MatrixTypes(version)}};
  // Not folded at planning: its work is outputs x kernel (or K), not proportional to the file, so
  // a small model could make Session::Create compute for hours with no deadline to stop it.
  s.foldable = false;
  DefineOp<MatMulAttrs>(s, ParseMatMul, InferMatMul, CreateMatMul);
  return s;
}

}  // namespace

void RegisterMatMulKernels(KernelRegistry& registry) {
  for (int v : {1, 6, 7, 9, 11, 13}) registry.Register(GemmSchema(v));
  for (int v : {1, 9, 13}) registry.Register(MatMulSchema(v));
}

}  // namespace idem
