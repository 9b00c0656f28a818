// Not-1. (Add, with Sub, Mul and Div, is defined once in binary.cc.)
#include <fmt/format.h>

#include "src/kernels/sequence_internal.h"
#include "src/kernels/tensor_util.h"

namespace idem {
namespace {

using sequence_internal::MakeKernel;

class NotKernel final : public Kernel {
 public:
  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    const Tensor& t = inputs[0]->tensor();
    const uint64_t n = static_cast<uint64_t>(t.element_count());
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(n));
    std::byte* out = nullptr;
    IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(n, &out));
    const std::byte* in = t.data().data();
    for (uint64_t i = 0; i < n; ++i) {
      out[i] = in[i] == std::byte{0} ? std::byte{1} : std::byte{0};
    }
    const auto shape = t.shape();
    IDEM_ASSIGN_OR_RETURN(
        outputs[0],
        Value::MakeTensor(ElementType::kBool, {shape.begin(), shape.end()}, std::move(buffer)));
    return {};
  }
};

KernelSchema NotSchema() {
  KernelSchema s;
  s.op_type = "Not";
  s.since_version = 1;
  s.inputs = {{"X", "T"}};
  s.outputs = {{"Y", "T"}};
  s.constraints = {{"T", {Type::Tensor(ElementType::kBool)}}};
  s.foldable = true;
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    return std::vector<Type>{*ctx.inputs[0]};
  };
  s.create = [](const NodeContext&) { return MakeKernel<NotKernel>(); };
  return s;
}

}  // namespace

void RegisterElementwiseKernels(KernelRegistry& registry) { registry.Register(NotSchema()); }

}  // namespace idem
