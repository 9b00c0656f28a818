#include "src/kernels/kernel.h"
namespace idem {
void RegisterControlFlowKernels(KernelRegistry&) {}
}  // namespace idem
