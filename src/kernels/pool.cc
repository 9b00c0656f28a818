// AveragePool, MaxPool, GlobalAveragePool.
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {

void RegisterPoolKernels(KernelRegistry& registry) { (void)registry; }

}  // namespace idem
