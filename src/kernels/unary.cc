// Neg, Sqrt, Log, Tanh, Sigmoid, Relu, LeakyRelu, HardSigmoid, Clip.
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {

void RegisterUnaryKernels(KernelRegistry& registry) { (void)registry; }

}  // namespace idem
