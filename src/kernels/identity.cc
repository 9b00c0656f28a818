// Identity, versions 1 to 25. The output is the input's Value itself: no byte is copied, whatever
// the size. (The planner usually erases Identity nodes altogether; this kernel runs when that
// rewrite is off.)
#include "src/kernels/kernel.h"
#include "src/kernels/tensor_util.h"

namespace idem {
namespace {

class IdentityKernel final : public Kernel {
 public:
  Status Run(std::span<const Value* const> inputs, std::span<Value> outputs) const override {
    // The runtime may pass the output slot as the input (KernelSchema::output_is_input); skip the
    // self-assignment, which would still cost two atomic reference-count updates.
    if (&outputs[0] != inputs[0]) outputs[0] = *inputs[0];
    return {};
  }
};

// Element types each version accepts in a plain tensor (sequences and optionals never widen beyond
// the base 15): Identity gained bfloat16 at 13, then the shared schedule of newer types.
std::vector<ElementType> TensorElementsAt(int version) {
  return tensor_util::AllElementsAt(version, /*bfloat16_since=*/13);
}

KernelSchema IdentitySchema(int version) {
  const std::vector<ElementType> base = BaseElementTypes();
  const std::vector<ElementType> tensors = TensorElementsAt(version);
  std::vector<Type> allowed = TensorTypes(tensors);
  if (version >= 14) allowed = Concat({allowed, SequenceTypes(base)});
  if (version >= 16) allowed = Concat({allowed, OptionalTypes(base)});
  const std::string param = version >= 14 ? "V" : "T";

  KernelSchema s;
  s.op_type = "Identity";
  s.since_version = version;
  s.inputs = {{"input", param}};
  s.outputs = {{"output", param}};
  s.constraints = {{param, std::move(allowed)}};
  s.output_is_input = true;
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    return std::vector<Type>{*ctx.inputs[0]};
  };
  s.create = [](const NodeContext&) -> Result<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(std::make_unique<IdentityKernel>());
  };
  return s;
}

}  // namespace

void RegisterIdentityKernels(KernelRegistry& registry) {
  for (int version : {1, 13, 14, 16, 19, 21, 23, 24, 25})
    registry.Register(IdentitySchema(version));
}

}  // namespace idem
