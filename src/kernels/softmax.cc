// Softmax.
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {

void RegisterSoftmaxKernels(KernelRegistry& registry) { (void)registry; }

}  // namespace idem
