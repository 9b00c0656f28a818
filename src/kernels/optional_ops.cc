// Optional operators: registered by RegisterOptionalKernels (filled in by the sequence issue).
#include "src/kernels/kernel.h"

namespace idem {

void RegisterOptionalKernels(KernelRegistry& registry) {}

}  // namespace idem
