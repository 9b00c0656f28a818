// Sequence operators: registered by RegisterSequenceKernels (filled in by the sequence issue).
#include "src/kernels/kernel.h"

namespace idem {

void RegisterSequenceKernels(KernelRegistry& registry) {}

}  // namespace idem
