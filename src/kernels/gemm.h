// The reference matrix product every matrix kernel shares: Gemm, MatMul, Conv (im2col),
// ConvTranspose (col2im) and LSTM.
//
// Numerics: c[i][j] is accumulated in T over p = 0, 1, ..., k-1 in that order, one multiply and
// one add per step (starting from 0, or from c[i][j] itself with `accumulate`), exactly as the
// plain loop
//   for (p = 0; p < k; ++p) s += op(a)[i][p] * op(b)[p][j];
// would. The cache blocking and packing inside never change that order, so the result has the
// same bits on every run, for every blocking and thread count. T is the accumulator type:
// float for float/float16/bfloat16 inputs (callers convert 16-bit floats to float first),
// double for double, and the integer types, whose products and sums wrap modulo 2^bits (two's
// complement; ONNX Runtime's integer MatMul/Gemm wrap the same way in practice), never C++
// signed-overflow UB.
#ifndef IDEM_SRC_KERNELS_GEMM_H_
#define IDEM_SRC_KERNELS_GEMM_H_

#include <cstdint>

namespace idem {

// c (m x n, row stride ldc) = op(a) (m x k) * op(b) (k x n), plus c's previous value when
// `accumulate`. op(a) is a (m x k, row stride lda), or with trans_a the transpose of a (k x m,
// row stride lda); likewise b (k x n, row stride ldb) or, with trans_b, b^T (b is n x k).
// k == 0 gives zeros (or leaves c unchanged with `accumulate`). c must not overlap a or b.
template <class T>
void ReferenceGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                   int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, bool accumulate);

extern template void ReferenceGemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*,
                                          int64_t, const float*, int64_t, float*, int64_t, bool);
extern template void ReferenceGemm<double>(bool, bool, int64_t, int64_t, int64_t, const double*,
                                           int64_t, const double*, int64_t, double*, int64_t, bool);
extern template void ReferenceGemm<int32_t>(bool, bool, int64_t, int64_t, int64_t, const int32_t*,
                                            int64_t, const int32_t*, int64_t, int32_t*, int64_t,
                                            bool);
extern template void ReferenceGemm<int64_t>(bool, bool, int64_t, int64_t, int64_t, const int64_t*,
                                            int64_t, const int64_t*, int64_t, int64_t*, int64_t,
                                            bool);
extern template void ReferenceGemm<uint32_t>(bool, bool, int64_t, int64_t, int64_t, const uint32_t*,
                                             int64_t, const uint32_t*, int64_t, uint32_t*, int64_t,
                                             bool);
extern template void ReferenceGemm<uint64_t>(bool, bool, int64_t, int64_t, int64_t, const uint64_t*,
                                             int64_t, const uint64_t*, int64_t, uint64_t*, int64_t,
                                             bool);

}  // namespace idem

#endif  // IDEM_SRC_KERNELS_GEMM_H_
