// Concat, ConstantOfShape, Flatten, Gather, Reshape, Size, Split, Squeeze, Transpose.
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {

void RegisterTensorKernels(KernelRegistry& registry) { (void)registry; }

}  // namespace idem
