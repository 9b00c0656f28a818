// Resize.
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {

void RegisterResizeKernels(KernelRegistry& registry) { (void)registry; }

}  // namespace idem
