// Optional operators: Optional-15, OptionalHasElement-15/-18 and OptionalGetElement-15/-18.
// None copies tensor data: Optional wraps its input's Value, OptionalGetElement returns the
// contained Value itself, and OptionalHasElement answers with one of two static bool scalars.
#include <fmt/format.h>

#include "src/kernels/kernel.h"
#include "src/kernels/sequence_internal.h"

namespace idem {
namespace {

using sequence_internal::MakeKernel;

// Tensor and sequence types of the 15 base element types (V of Optional-15, for instance).
std::vector<Type> TensorAndSequenceTypes() {
  return Concat({TensorTypes(BaseElementTypes()), SequenceTypes(BaseElementTypes())});
}

// ---- Optional ---------------------------------------------------------------------------------

// With an input, wraps it (with the element type resolved at plan time, so no Type is built per
// run); without one, returns the same empty optional (built once from the `type` attribute).
class OptionalKernel final : public Kernel {
 public:
  OptionalKernel(Type element_type, Value empty)
      : element_type_(std::move(element_type)), empty_(std::move(empty)) {}
  Status Run(std::span<const Value* const> inputs, std::span<Value> outputs) const override {
    if (!inputs.empty() && inputs[0] != nullptr) {
      if (inputs[0] == &outputs[0]) {
        // The runtime handed the input over (no one else reads it, KernelSchema::reuses_input0):
        // wrap the handle itself rather than a copy.
        Value element = std::move(outputs[0]);
        IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeOptional(std::move(element), element_type_));
      } else {
        IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeOptional(*inputs[0], element_type_));
      }
    } else {
      outputs[0] = empty_;
    }
    return {};
  }

 private:
  Type element_type_;
  Value empty_;  // null when the node has an input
};

bool HasInput(const NodeContext& ctx) { return !ctx.inputs.empty() && ctx.inputs[0] != nullptr; }

// The optional's element type: the input's type, or else the `type` attribute. When both are
// given they must agree.
Result<Type> OptionalElementType(const NodeContext& ctx) {
  const Attribute* attribute = ctx.node.FindAttribute("type");
  std::optional<Type> declared;
  if (attribute != nullptr) {
    if (attribute->kind != Attribute::Kind::kType) {
      return Status(StatusCode::kInvalidModel, "attribute 'type' must be a type (TypeProto)");
    }
    declared = attribute->type;
  }
  if (HasInput(ctx)) {
    const Type& input = *ctx.inputs[0];
    if (declared && !declared->SameStructure(input)) {
      return Status(StatusCode::kInvalidModel,
                    fmt::format("input is {} but attribute 'type' says {}", input.ToString(),
                                declared->ToString()));
    }
    return input;
  }
  if (!declared) {
    return Status(StatusCode::kInvalidModel,
                  "Optional needs an input or the 'type' attribute to know its element type");
  }
  // The output constraint rejects other kinds and element types; undefined must be caught here
  // because an empty optional of an undefined type could not be checked downstream.
  const Type& leaf = declared->is_tensor() ? *declared : declared->element();
  if (declared->is_optional() || !leaf.is_tensor() ||
      leaf.element_type() == ElementType::kUndefined) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("attribute 'type' is {}; an optional holds a tensor or a sequence "
                              "of tensors of a defined element type",
                              declared->ToString()));
  }
  return *declared;
}

KernelSchema OptionalSchema() {
  KernelSchema s;
  s.op_type = "Optional";
  s.since_version = 15;
  s.inputs = {{"input", "V", FormalParameter::Arity::kOptional}};
  s.outputs = {{"output", "O"}};
  s.constraints = {{"V", TensorAndSequenceTypes()}, {"O", OptionalTypes(BaseElementTypes())}};
  s.attributes = {"type"};
  s.reuses_input0 = true;  // wraps a handed-over input without copying its handle
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    IDEM_ASSIGN_OR_RETURN(Type element, OptionalElementType(ctx));
    return std::vector<Type>{Type::Optional(std::move(element))};
  };
  s.create = [](const NodeContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    IDEM_ASSIGN_OR_RETURN(Type element, OptionalElementType(ctx));
    Value empty;
    if (!HasInput(ctx)) {
      IDEM_ASSIGN_OR_RETURN(empty, Value::MakeEmptyOptional(element));
    }
    return MakeKernel<OptionalKernel>(std::move(element), std::move(empty));
  };
  return s;
}

// ---- OptionalHasElement -----------------------------------------------------------------------

// True for a non-empty optional or (version 18) a plain tensor or sequence; false for an empty
// optional or (version 18) an omitted input.
class OptionalHasElementKernel final : public Kernel {
 public:
  Status Run(std::span<const Value* const> inputs, std::span<Value> outputs) const override {
    const Value* input = inputs.empty() ? nullptr : inputs[0];
    const bool has_element =
        input != nullptr && (!input->is_optional() || input->optional().has_value());
    IDEM_ASSIGN_OR_RETURN(outputs[0], BoolScalar(has_element));
    return {};
  }

 private:
  // The two possible answers live in static storage, so no run allocates bytes for them.
  static Result<Value> BoolScalar(bool value) {
    static constexpr std::byte kFalse{0};
    static constexpr std::byte kTrue{1};
    return Value::MakeTensor(ElementType::kBool, {}, Buffer::Borrow(value ? &kTrue : &kFalse, 1));
  }
};

KernelSchema OptionalHasElementSchema(int version) {
  KernelSchema s;
  s.op_type = "OptionalHasElement";
  s.since_version = version;
  if (version >= 18) {
    s.inputs = {{"input", "O", FormalParameter::Arity::kOptional}};
    s.constraints = {{"O", Concat({OptionalTypes(BaseElementTypes()), TensorAndSequenceTypes()})}};
  } else {
    s.inputs = {{"input", "O"}};
    s.constraints = {{"O", OptionalTypes(BaseElementTypes())}};
  }
  s.outputs = {{"output", "B"}};
  s.constraints.push_back({"B", {Type::Tensor(ElementType::kBool)}});
  s.infer = [](const NodeContext&) -> Result<std::vector<Type>> {
    return std::vector<Type>{Type::Tensor(ElementType::kBool, std::vector<Dim>{})};
  };
  s.create = [](const NodeContext&) { return MakeKernel<OptionalHasElementKernel>(); };
  return s;
}

// ---- OptionalGetElement -----------------------------------------------------------------------

// Returns the optional's contained Value itself, or (version 18) a plain tensor or sequence as is.
class OptionalGetElementKernel final : public Kernel {
 public:
  Status Run(std::span<const Value* const> inputs, std::span<Value> outputs) const override {
    const Value& input = *inputs[0];
    const bool handed_over = inputs[0] == &outputs[0];  // KernelSchema::reuses_input0
    if (!input.is_optional()) {
      if (!handed_over) outputs[0] = input;  // else the slot already holds it
      return {};
    }
    const Optional& optional = input.optional();
    if (!optional.has_value()) {
      return Status(StatusCode::kRuntimeError,
                    fmt::format("the optional is empty: there is no {} to get",
                                optional.element_type().ToString()));
    }
    if (handed_over) {
      // Moves the element out when the run held the optional's only reference.
      outputs[0] = std::move(outputs[0]).TakeOptionalElement();
    } else {
      outputs[0] = optional.value();
    }
    return {};
  }
};

KernelSchema OptionalGetElementSchema(int version) {
  KernelSchema s;
  s.op_type = "OptionalGetElement";
  s.since_version = version;
  s.inputs = {{"input", "O"}};
  s.outputs = {{"output", "V"}};
  s.constraints = {
      {"O", version >= 18 ? Concat({OptionalTypes(BaseElementTypes()), TensorAndSequenceTypes()})
                          : OptionalTypes(BaseElementTypes())},
      {"V", TensorAndSequenceTypes()}};
  s.reuses_input0 = true;  // takes the element out of a handed-over optional
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    const Type& input = *ctx.inputs[0];
    return std::vector<Type>{input.is_optional() ? input.element() : input};
  };
  s.create = [](const NodeContext&) { return MakeKernel<OptionalGetElementKernel>(); };
  return s;
}

}  // namespace

void RegisterOptionalKernels(KernelRegistry& registry) {
  registry.Register(OptionalSchema());
  for (int version : {15, 18}) {
    registry.Register(OptionalHasElementSchema(version));
    registry.Register(OptionalGetElementSchema(version));
  }
}

}  // namespace idem
