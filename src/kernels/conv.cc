// Conv, ConvTranspose.
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {

void RegisterConvKernels(KernelRegistry& registry) { (void)registry; }

}  // namespace idem
