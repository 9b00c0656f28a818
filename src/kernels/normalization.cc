// BatchNormalization.
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {

void RegisterNormalizationKernels(KernelRegistry& registry) { (void)registry; }

}  // namespace idem
