// Constant, versions 1, 9, 11, 12, 13, 19, 21, 23, 24, 25. The value is built once at plan time;
// every run hands back that same Value (no copy).
#include <fmt/format.h>

#include <cstring>

#include "src/core/text.h"
#include "src/kernels/sequence_internal.h"
#include "src/kernels/tensor_util.h"

namespace idem {
namespace {

using sequence_internal::MakeKernel;

class ConstantKernel final : public Kernel {
 public:
  explicit ConstantKernel(Value value) : value_(std::move(value)) {}
  Status Run(std::span<const Value* const>, std::span<Value> outputs) const override {
    outputs[0] = value_;
    return {};
  }

 private:
  Value value_;
};

template <typename T>
Result<Value> FromNumbers(ElementType type, std::vector<int64_t> shape, std::span<const T> v) {
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(v.size() * sizeof(T), &out));
  if (!v.empty()) std::memcpy(out, v.data(), v.size() * sizeof(T));
  return Value::MakeTensor(type, std::move(shape), std::move(buffer));
}

// The one value_* attribute a node sets, as a Value.
Result<Value> ConstantValue(const NodeDef& node) {
  const Attribute* set = nullptr;
  for (const Attribute& a : node.attributes) {
    if (set != nullptr) {
      return Status(StatusCode::kInvalidModel,
                    fmt::format("sets both {} and {}; exactly one value attribute is allowed",
                                QuoteName(set->name), QuoteName(a.name)));
    }
    set = &a;
  }
  if (set == nullptr) {
    return Status(StatusCode::kInvalidModel, "sets no value attribute (exactly one is required)");
  }
  const Attribute& a = *set;
  auto expect = [&](Attribute::Kind kind, const char* what) -> Status {
    if (a.kind == kind) return {};
    return Status(StatusCode::kInvalidModel,
                  fmt::format("attribute {} must be {}", QuoteName(a.name), what));
  };
  if (a.name == "sparse_value") {
    return Status(StatusCode::kUnsupported,
                  "Constant with 'sparse_value': sparse tensors are "
                  "not supported");
  }
  if (a.name == "value") {
    IDEM_RETURN_IF_ERROR(expect(Attribute::Kind::kTensor, "a tensor"));
    return a.tensor;
  }
  if (a.name == "value_float") {
    IDEM_RETURN_IF_ERROR(expect(Attribute::Kind::kFloat, "a float"));
    return FromNumbers<float>(ElementType::kFloat, {}, std::span<const float>(&a.f, 1));
  }
  if (a.name == "value_floats") {
    IDEM_RETURN_IF_ERROR(expect(Attribute::Kind::kFloats, "a list of floats"));
    return FromNumbers<float>(ElementType::kFloat, {static_cast<int64_t>(a.floats.size())},
                              a.floats);
  }
  if (a.name == "value_int") {
    IDEM_RETURN_IF_ERROR(expect(Attribute::Kind::kInt, "an int"));
    return FromNumbers<int64_t>(ElementType::kInt64, {}, std::span<const int64_t>(&a.i, 1));
  }
  if (a.name == "value_ints") {
    IDEM_RETURN_IF_ERROR(expect(Attribute::Kind::kInts, "a list of ints"));
    return FromNumbers<int64_t>(ElementType::kInt64, {static_cast<int64_t>(a.ints.size())}, a.ints);
  }
  if (a.name == "value_string") {
    IDEM_RETURN_IF_ERROR(expect(Attribute::Kind::kString, "a string"));
    return Value::MakeStringTensor({}, {a.s});
  }
  if (a.name == "value_strings") {
    IDEM_RETURN_IF_ERROR(expect(Attribute::Kind::kStrings, "a list of strings"));
    return Value::MakeStringTensor({static_cast<int64_t>(a.strings.size())}, a.strings);
  }
  return Status(StatusCode::kInvalidModel, fmt::format("unknown attribute {}", QuoteName(a.name)));
}

KernelSchema ConstantSchema(int version) {
  using E = ElementType;
  KernelSchema s;
  s.op_type = "Constant";
  s.since_version = version;
  s.foldable = true;  // its value is its attribute: planned as a constant
  s.outputs = {{"output", "T"}};
  const std::vector<ElementType> elements =
      version == 1 ? std::vector<ElementType>{E::kFloat16, E::kFloat, E::kDouble}
                   : tensor_util::AllElementsAt(version, 13);
  s.constraints = {{"T", TensorTypes(elements)}};
  s.attributes = {"value"};
  if (version >= 11) s.attributes.push_back("sparse_value");
  if (version >= 12) {
    for (const char* a : {"value_float", "value_floats", "value_int", "value_ints", "value_string",
                          "value_strings"}) {
      s.attributes.emplace_back(a);
    }
  }
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    IDEM_ASSIGN_OR_RETURN(Value v, ConstantValue(ctx.node));
    if (!v.is_tensor()) {
      return Status(StatusCode::kInvalidModel, "the value must be a tensor");
    }
    std::vector<Dim> dims;
    for (int64_t d : v.tensor().shape()) dims.push_back(Dim{d, ""});
    return std::vector<Type>{Type::Tensor(v.tensor().element_type(), std::move(dims))};
  };
  s.create = [](const NodeContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    IDEM_ASSIGN_OR_RETURN(Value v, ConstantValue(ctx.node));
    return MakeKernel<ConstantKernel>(std::move(v));
  };
  return s;
}

}  // namespace

void RegisterConstantKernels(KernelRegistry& registry) {
  for (int version : {1, 9, 11, 12, 13, 19, 21, 23, 24, 25}) {
    registry.Register(ConstantSchema(version));
  }
}

}  // namespace idem
