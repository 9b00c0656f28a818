// Gemm, MatMul.
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {

void RegisterMatMulKernels(KernelRegistry& registry) { (void)registry; }

}  // namespace idem
