// ReduceMax, ReduceMean.
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {

void RegisterReduceKernels(KernelRegistry& registry) { (void)registry; }

}  // namespace idem
