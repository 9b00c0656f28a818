// Sequence operators that move tensors around without touching their bytes: SequenceConstruct,
// SequenceEmpty, SequenceLength, SequenceAt, SequenceInsert and SequenceErase (all version 11).
// A sequence holds Value handles, so building a new sequence from old tensors copies handles only;
// SequenceAt returns the stored tensor Value itself. ConcatFromSequence and SplitToSequence, which
// do move bytes, live in their own files and are registered from here.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "src/kernels/kernel.h"
#include "src/kernels/sequence_internal.h"

namespace idem {
namespace sequence_internal {

std::vector<ElementType> BaseWithBfloat16() {
  std::vector<ElementType> out;
  for (ElementType e : BaseElementTypes()) {
    if (e == ElementType::kFloat16) out.push_back(ElementType::kBfloat16);
    out.push_back(e);
  }
  return out;
}

TypeConstraint IndexConstraint(const std::string& param) {
  const std::vector<ElementType> index_types = {ElementType::kInt32, ElementType::kInt64};
  return {param, TensorTypes(index_types)};
}

std::string ShapeToString(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

Result<int64_t> NormalizeAxis(int64_t axis, int64_t rank, std::string_view what) {
  if (axis < -rank || axis >= rank) {
    if (rank == 0) {
      return Status(StatusCode::kOutOfRange,
                    fmt::format("{} {} is out of range: a rank-0 tensor has no axis", what, axis));
    }
    return Status(StatusCode::kOutOfRange,
                  fmt::format("{} {} is out of range for rank {} (accepted [{}, {}])", what, axis,
                              rank, -rank, rank - 1));
  }
  return axis < 0 ? axis + rank : axis;
}

std::optional<int64_t> DimProduct(std::span<const int64_t> shape, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) {
    if (__builtin_mul_overflow(product, shape[i], &product)) return std::nullopt;
  }
  return product;
}

}  // namespace sequence_internal

namespace {

using sequence_internal::IndexConstraint;
using sequence_internal::MakeKernel;

// The element type of a seq(tensor(t)) type.
ElementType SequenceElementType(const Type& sequence_type) {
  return sequence_type.element().element_type();
}

// Maps a position in [-length, length - 1] (or [-length, length] when `allow_end`, for inserting)
// to [0, length] and reports anything outside with the position, the length and the range.
Result<size_t> NormalizePosition(int64_t position, size_t length, bool allow_end) {
  const auto n = static_cast<int64_t>(length);
  const int64_t high = allow_end ? n : n - 1;
  if (position < -n || position > high) {
    return Status(StatusCode::kOutOfRange,
                  fmt::format("position {} is out of range for a sequence of length {} "
                              "(accepted [{}, {}])",
                              position, length, -n, high));
  }
  return static_cast<size_t>(position < 0 ? position + n : position);
}

// The common S constraint of every version-11 sequence operator: seq(tensor(t)), base 15 types.
TypeConstraint SequenceConstraint(const std::string& param) {
  return {param, SequenceTypes(BaseElementTypes())};
}

TypeConstraint TensorConstraint(const std::string& param) {
  return {param, TensorTypes(BaseElementTypes())};
}

// ---- SequenceConstruct ------------------------------------------------------------------------

class SequenceConstructKernel final : public Kernel {
 public:
  Status Run(std::span<const Value* const> inputs, std::span<Value> outputs) const override {
    // Copies the handles straight into the sequence (a few are stored inline: no allocation but
    // the node). MakeSequenceFrom re-checks that every tensor has the first one's element type.
    IDEM_ASSIGN_OR_RETURN(outputs[0],
                          Value::MakeSequenceFrom(inputs[0]->tensor().element_type(), inputs));
    return {};
  }
};

KernelSchema SequenceConstructSchema() {
  KernelSchema s;
  s.op_type = "SequenceConstruct";
  s.since_version = 11;
  s.inputs = {{"inputs", "T", FormalParameter::Arity::kVariadic}};
  s.outputs = {{"output_sequence", "S"}};
  s.constraints = {TensorConstraint("T"), SequenceConstraint("S")};
  // The planner binds T across all inputs, so they share one element type. Shapes may differ
  // between inputs, so the output element type carries none.
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    return std::vector<Type>{Type::Sequence(Type::Tensor(ctx.inputs[0]->element_type()))};
  };
  s.create = [](const NodeContext&) { return MakeKernel<SequenceConstructKernel>(); };
  return s;
}

// ---- SequenceEmpty ----------------------------------------------------------------------------

// Returns the same empty sequence on every run: Values are immutable, so sharing it is safe.
class SequenceEmptyKernel final : public Kernel {
 public:
  explicit SequenceEmptyKernel(Value empty) : empty_(std::move(empty)) {}
  Status Run(std::span<const Value* const>, std::span<Value> outputs) const override {
    outputs[0] = empty_;
    return {};
  }

 private:
  Value empty_;
};

// The `dtype` attribute (default float), checked against the 15 types S allows.
Result<ElementType> SequenceEmptyDtype(const NodeDef& node) {
  IDEM_ASSIGN_OR_RETURN(int64_t code,
                        GetIntAttribute(node, "dtype", static_cast<int64_t>(ElementType::kFloat)));
  const std::optional<ElementType> type = ElementTypeFromCode(code);
  const std::vector<ElementType> allowed = BaseElementTypes();
  if (!type || std::find(allowed.begin(), allowed.end(), *type) == allowed.end()) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("attribute 'dtype' is {} ({}); SequenceEmpty-11 makes sequences of "
                              "uint8, uint16, uint32, uint64, int8, int16, int32, int64, "
                              "float16, float, double, string, bool, complex64 or complex128",
                              code, type ? ElementTypeName(*type) : "not an element type"));
  }
  return *type;
}

KernelSchema SequenceEmptySchema() {
  KernelSchema s;
  s.op_type = "SequenceEmpty";
  s.since_version = 11;
  s.outputs = {{"output", "S"}};
  s.constraints = {SequenceConstraint("S")};
  s.attributes = {"dtype"};
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    IDEM_ASSIGN_OR_RETURN(ElementType dtype, SequenceEmptyDtype(ctx.node));
    return std::vector<Type>{Type::Sequence(Type::Tensor(dtype))};
  };
  s.create = [](const NodeContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    IDEM_ASSIGN_OR_RETURN(ElementType dtype, SequenceEmptyDtype(ctx.node));
    IDEM_ASSIGN_OR_RETURN(Value empty, Value::MakeSequence(dtype, {}));
    return MakeKernel<SequenceEmptyKernel>(std::move(empty));
  };
  return s;
}

// ---- SequenceLength ---------------------------------------------------------------------------

class SequenceLengthKernel final : public Kernel {
 public:
  Status Run(std::span<const Value* const> inputs, std::span<Value> outputs) const override {
    const auto length = static_cast<int64_t>(inputs[0]->sequence().size());
    std::byte* bytes = nullptr;
    IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(sizeof(length), &bytes));
    std::memcpy(bytes, &length, sizeof(length));
    IDEM_ASSIGN_OR_RETURN(outputs[0],
                          Value::MakeTensor(ElementType::kInt64, {}, std::move(buffer)));
    return {};
  }
};

KernelSchema SequenceLengthSchema() {
  KernelSchema s;
  s.op_type = "SequenceLength";
  s.since_version = 11;
  s.inputs = {{"input_sequence", "S"}};
  s.outputs = {{"length", "I"}};
  s.constraints = {SequenceConstraint("S"), {"I", {Type::Tensor(ElementType::kInt64)}}};
  s.infer = [](const NodeContext&) -> Result<std::vector<Type>> {
    return std::vector<Type>{Type::Tensor(ElementType::kInt64, std::vector<Dim>{})};
  };
  s.create = [](const NodeContext&) { return MakeKernel<SequenceLengthKernel>(); };
  return s;
}

// ---- SequenceAt -------------------------------------------------------------------------------

// Returns the stored tensor Value itself: the spec says "a tensor copy", but Values are immutable,
// so sharing is indistinguishable from copying.
class SequenceAtKernel final : public Kernel {
 public:
  Status Run(std::span<const Value* const> inputs, std::span<Value> outputs) const override {
    const Sequence& sequence = inputs[0]->sequence();
    IDEM_ASSIGN_OR_RETURN(int64_t position, ReadScalarIndex(*inputs[1], "position"));
    IDEM_ASSIGN_OR_RETURN(size_t index, NormalizePosition(position, sequence.size(), false));
    outputs[0] = sequence.at(index);
    return {};
  }
};

KernelSchema SequenceAtSchema() {
  KernelSchema s;
  s.op_type = "SequenceAt";
  s.since_version = 11;
  s.inputs = {{"input_sequence", "S"}, {"position", "I"}};
  s.outputs = {{"tensor", "T"}};
  s.constraints = {SequenceConstraint("S"), TensorConstraint("T"), IndexConstraint("I")};
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    return std::vector<Type>{Type::Tensor(SequenceElementType(*ctx.inputs[0]))};
  };
  s.create = [](const NodeContext&) { return MakeKernel<SequenceAtKernel>(); };
  return s;
}

// ---- SequenceInsert ---------------------------------------------------------------------------

class SequenceInsertKernel final : public Kernel {
 public:
  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    const Sequence& sequence = inputs[0]->sequence();
    if (sequence.size() >= ctx.limits().max_sequence_length) {
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("the sequence would exceed max_sequence_length {}",
                                ctx.limits().max_sequence_length));
    }
    const Value& tensor = *inputs[1];
    if (tensor.tensor().element_type() != sequence.element_type()) {
      return Status(StatusCode::kRuntimeError,
                    fmt::format("cannot insert a tensor({}) into a seq(tensor({})): the tensors of "
                                "one sequence share one element type",
                                ElementTypeName(tensor.tensor().element_type()),
                                ElementTypeName(sequence.element_type())));
    }
    size_t index = sequence.size();  // default: append at the back
    if (inputs.size() > 2 && inputs[2] != nullptr) {
      IDEM_ASSIGN_OR_RETURN(int64_t position, ReadScalarIndex(*inputs[2], "position"));
      IDEM_ASSIGN_OR_RETURN(index, NormalizePosition(position, sequence.size(), true));
    }
    // The runtime handed over a sequence no one else reads (inputs[0] is our output slot): extend
    // it in place when this handle is its only reference, so a Loop appending N tensors is
    // linear in N.
    if (inputs[0] == &outputs[0] && outputs[0].InsertIntoUnsharedSequence(index, tensor)) {
      return {};
    }
    std::vector<Value> tensors;
    tensors.reserve(sequence.size() + 1);
    tensors.insert(tensors.end(), sequence.values().begin(),
                   sequence.values().begin() + static_cast<std::ptrdiff_t>(index));
    tensors.push_back(tensor);
    tensors.insert(tensors.end(), sequence.values().begin() + static_cast<std::ptrdiff_t>(index),
                   sequence.values().end());
    IDEM_ASSIGN_OR_RETURN(outputs[0],
                          Value::MakeSequence(sequence.element_type(), std::move(tensors)));
    return {};
  }
};

KernelSchema SequenceInsertSchema() {
  KernelSchema s;
  s.op_type = "SequenceInsert";
  s.since_version = 11;
  s.inputs = {{"input_sequence", "S"},
              {"tensor", "T"},
              {"position", "I", FormalParameter::Arity::kOptional}};
  s.outputs = {{"output_sequence", "S"}};
  s.constraints = {TensorConstraint("T"), SequenceConstraint("S"), IndexConstraint("I")};
  s.reuses_input0 = true;
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    const ElementType sequence_element = SequenceElementType(*ctx.inputs[0]);
    const ElementType tensor_element = ctx.inputs[1]->element_type();
    if (sequence_element != tensor_element) {
      return Status(StatusCode::kInvalidModel,
                    fmt::format("input 'tensor' is {} but 'input_sequence' is {}: 'tensor' must "
                                "have the sequence's element type",
                                ctx.inputs[1]->ToString(), ctx.inputs[0]->ToString()));
    }
    // The inserted tensor may have any shape, so the result declares none.
    return std::vector<Type>{Type::Sequence(Type::Tensor(sequence_element))};
  };
  s.create = [](const NodeContext&) { return MakeKernel<SequenceInsertKernel>(); };
  return s;
}

// ---- SequenceErase ----------------------------------------------------------------------------

class SequenceEraseKernel final : public Kernel {
 public:
  Status Run(std::span<const Value* const> inputs, std::span<Value> outputs) const override {
    const Sequence& sequence = inputs[0]->sequence();
    int64_t position = -1;  // default: the last tensor
    const bool has_position = inputs.size() > 1 && inputs[1] != nullptr;
    if (has_position) {
      IDEM_ASSIGN_OR_RETURN(position, ReadScalarIndex(*inputs[1], "position"));
    } else if (sequence.size() == 0) {
      return Status(StatusCode::kOutOfRange,
                    "the sequence is empty: there is no last tensor to erase");
    }
    IDEM_ASSIGN_OR_RETURN(size_t index, NormalizePosition(position, sequence.size(), false));
    std::vector<Value> tensors;
    tensors.reserve(sequence.size() - 1);
    for (size_t i = 0; i < sequence.size(); ++i) {
      if (i != index) tensors.push_back(sequence.at(i));
    }
    IDEM_ASSIGN_OR_RETURN(outputs[0],
                          Value::MakeSequence(sequence.element_type(), std::move(tensors)));
    return {};
  }
};

KernelSchema SequenceEraseSchema() {
  KernelSchema s;
  s.op_type = "SequenceErase";
  s.since_version = 11;
  s.inputs = {{"input_sequence", "S"}, {"position", "I", FormalParameter::Arity::kOptional}};
  s.outputs = {{"output_sequence", "S"}};
  s.constraints = {SequenceConstraint("S"), IndexConstraint("I")};
  // Erasing keeps the remaining tensors as they were, so the input's type (shape included) holds.
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    return std::vector<Type>{*ctx.inputs[0]};
  };
  s.create = [](const NodeContext&) { return MakeKernel<SequenceEraseKernel>(); };
  return s;
}

}  // namespace

void RegisterSequenceKernels(KernelRegistry& registry) {
  registry.Register(SequenceConstructSchema());
  registry.Register(SequenceEmptySchema());
  registry.Register(SequenceLengthSchema());
  registry.Register(SequenceAtSchema());
  registry.Register(SequenceInsertSchema());
  registry.Register(SequenceEraseSchema());
  sequence_internal::RegisterConcatFromSequence(registry);
  sequence_internal::RegisterSplitToSequence(registry);
}

}  // namespace idem
