// ConcatFromSequence-11: joins the tensors of a sequence along an existing axis (new_axis = 0,
// like numpy.concatenate) or stacks them along a new one (new_axis = 1, like numpy.stack).
//
// A one-tensor sequence is joined without copying: the result reuses the tensor's Buffer with the
// new shape. Otherwise the bytes are gathered once into a fresh buffer.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "src/kernels/kernel.h"
#include "src/kernels/sequence_internal.h"

namespace idem::sequence_internal {
namespace {

struct ConcatAttributes {
  int64_t axis = 0;
  bool new_axis = false;
};

Result<ConcatAttributes> ReadConcatAttributes(const NodeDef& node) {
  ConcatAttributes attributes;
  IDEM_ASSIGN_OR_RETURN(attributes.axis, GetIntAttribute(node, "axis", std::nullopt));
  IDEM_ASSIGN_OR_RETURN(int64_t new_axis, GetIntAttribute(node, "new_axis", 0));
  if (new_axis != 0 && new_axis != 1) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("attribute 'new_axis' is {}; it must be 0 or 1", new_axis));
  }
  attributes.new_axis = new_axis == 1;
  return attributes;
}

// Axis range check for input tensors of rank `rank`: [-r, r-1], or [-r-1, r] with new_axis.
Result<int64_t> NormalizeConcatAxis(const ConcatAttributes& attributes, int64_t rank) {
  return NormalizeAxis(attributes.axis, attributes.new_axis ? rank + 1 : rank, "axis");
}

class ConcatFromSequenceKernel final : public Kernel {
 public:
  explicit ConcatFromSequenceKernel(ConcatAttributes attributes) : attributes_(attributes) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    const Sequence& sequence = inputs[0]->sequence();
    if (sequence.size() == 0) {
      return Status(StatusCode::kRuntimeError,
                    "the sequence is empty: ConcatFromSequence needs at least one tensor");
    }
    const Tensor& first = sequence.at(0).tensor();
    const auto rank = static_cast<int64_t>(first.rank());
    IDEM_ASSIGN_OR_RETURN(const int64_t axis, NormalizeConcatAxis(attributes_, rank));

    // Every tensor must match the first one's shape, except on the axis when concatenating.
    // The result's dims are built on the stack for the usual ranks (no allocation).
    const size_t out_rank = first.rank() + (attributes_.new_axis ? 1 : 0);
    std::array<int64_t, 8> small_shape;
    std::vector<int64_t> large_shape;
    std::span<int64_t> out_shape;
    if (out_rank <= small_shape.size()) {
      out_shape = std::span<int64_t>(small_shape.data(), out_rank);
    } else {
      large_shape.resize(out_rank);
      out_shape = large_shape;
    }
    {
      const auto dims = first.shape();
      if (attributes_.new_axis) {
        std::copy(dims.begin(), dims.begin() + axis, out_shape.begin());
        out_shape[static_cast<size_t>(axis)] = static_cast<int64_t>(sequence.size());
        std::copy(dims.begin() + axis, dims.end(), out_shape.begin() + axis + 1);
      } else {
        std::copy(dims.begin(), dims.end(), out_shape.begin());
      }
    }
    for (size_t i = 1; i < sequence.size(); ++i) {
      const Tensor& t = sequence.at(i).tensor();
      bool compatible = t.rank() == first.rank();
      for (int64_t d = 0; compatible && d < rank; ++d) {
        compatible = t.shape()[d] == first.shape()[d] || (!attributes_.new_axis && d == axis);
      }
      if (!compatible) {
        return Status(
            StatusCode::kRuntimeError,
            fmt::format("cannot {} tensor 0 of shape {} and tensor {} of shape {} on "
                        "axis {}: {}",
                        attributes_.new_axis ? "stack" : "concatenate",
                        ShapeToString(first.shape()), i, ShapeToString(t.shape()), attributes_.axis,
                        attributes_.new_axis ? "stacking needs identical shapes"
                                             : "all dims but the axis must match"));
      }
      // Zero-element tensors may carry huge dims, so even this sum is checked.
      if (!attributes_.new_axis &&
          __builtin_add_overflow(out_shape[axis], t.shape()[axis], &out_shape[axis])) {
        return Status(
            StatusCode::kOutOfRange,
            fmt::format("the concatenated extent on axis {} overflows int64", attributes_.axis));
      }
    }

    const ElementType type = first.element_type();
    if (sequence.size() == 1 && type != ElementType::kString) {
      // Same bytes, new shape: share the tensor's buffer.
      IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeTensorFromDims(type, out_shape, first.data()));
      return {};
    }

    // A sequence may hold the same tensor many times, so the total is checked, not assumed.
    int64_t total = 0;
    for (const Value& v : sequence.values()) {
      if (__builtin_add_overflow(total, v.tensor().element_count(), &total)) {
        return Status(StatusCode::kResourceExhausted,
                      "the concatenated tensor would have more than 2^63 elements");
      }
    }
    // Each output row (one index over the dims before the axis) is the tensors' rows in order.
    // A tensor's row holds its extent on the axis (1 when stacking) times the dims after it.
    // With no elements at all there is nothing to gather (and the dims before the axis, which
    // could then overflow when multiplied, are not needed).
    const int64_t outer = total == 0 ? 0 : *DimProduct(first.shape(), 0, axis);
    std::vector<int64_t> row_elements(sequence.size());
    // The tensors that contribute elements: the gather loops visit only these, so their work is
    // the output's size, not `outer` x the sequence length (2^20 rows x 2^22 empty tensors would
    // be 2^42 steps copying nothing).
    std::vector<size_t> filled;
    for (size_t i = 0; i < sequence.size(); ++i) {
      row_elements[i] = outer == 0 ? 0 : sequence.at(i).tensor().element_count() / outer;
      if (row_elements[i] > 0) filled.push_back(i);
    }

    // max_tensor_bytes and the run budget, before anything is allocated. Every element is copied
    // once, so a string result holds the sum of the tensors' string lengths (the same tensor
    // may appear many times in the sequence).
    uint64_t string_bytes = 0;
    if (type == ElementType::kString) {
      for (const Value& v : sequence.values()) {
        if (__builtin_add_overflow(string_bytes, v.tensor().string_bytes(), &string_bytes)) {
          string_bytes = ~uint64_t{0};
          break;
        }
      }
    }
    IDEM_ASSIGN_OR_RETURN(uint64_t budget_bytes, TensorBytes(type, static_cast<uint64_t>(total),
                                                             ctx.limits(), string_bytes));
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(budget_bytes));
    if (type == ElementType::kString) {
      std::vector<std::string> strings;
      strings.reserve(static_cast<size_t>(total));
      for (int64_t o = 0; o < outer; ++o) {
        for (size_t i : filled) {
          auto source = sequence.at(i).tensor().strings().subspan(
              static_cast<size_t>(o * row_elements[i]), static_cast<size_t>(row_elements[i]));
          strings.insert(strings.end(), source.begin(), source.end());
        }
      }
      IDEM_ASSIGN_OR_RETURN(
          outputs[0],
          Value::MakeStringTensor(std::vector<int64_t>(out_shape.begin(), out_shape.end()),
                                  std::move(strings)));
      return {};
    }

    const int bits = ElementBits(type);
    if (bits % 8 != 0) {
      return Status(StatusCode::kUnsupported,
                    fmt::format("ConcatFromSequence does not handle sub-byte tensor({})",
                                ElementTypeName(type)));
    }
    const auto width = static_cast<size_t>(bits / 8);
    size_t out_bytes = 0;
    if (__builtin_mul_overflow(static_cast<size_t>(total), width, &out_bytes)) {
      return Status(StatusCode::kResourceExhausted,
                    "the concatenated tensor's byte size overflows size_t");
    }
    std::byte* out = nullptr;
    IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(out_bytes, &out));
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t i : filled) {
        const size_t row_bytes = static_cast<size_t>(row_elements[i]) * width;
        std::memcpy(out, sequence.at(i).tensor().data().data() + o * row_bytes, row_bytes);
        out += row_bytes;
      }
    }
    IDEM_ASSIGN_OR_RETURN(outputs[0],
                          Value::MakeTensorFromDims(type, out_shape, std::move(buffer)));
    return {};
  }

 private:
  ConcatAttributes attributes_;
};

KernelSchema ConcatFromSequenceSchema() {
  KernelSchema s;
  s.op_type = "ConcatFromSequence";
  s.since_version = 11;
  s.inputs = {{"input_sequence", "S"}};
  s.outputs = {{"concat_result", "T"}};
  s.constraints = {{"S", SequenceTypes(BaseElementTypes())},
                   {"T", TensorTypes(BaseElementTypes())}};
  s.attributes = {"axis", "new_axis"};
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    IDEM_ASSIGN_OR_RETURN(ConcatAttributes attributes, ReadConcatAttributes(ctx.node));
    const Type& element = ctx.inputs[0]->element();
    // When the sequence declares its tensors' rank, the axis can be checked now.
    if (element.shape()) {
      IDEM_RETURN_IF_ERROR(
          NormalizeConcatAxis(attributes, static_cast<int64_t>(element.shape()->size())).status());
    }
    // The result's shape depends on the sequence's length, known only at run time.
    return std::vector<Type>{Type::Tensor(element.element_type())};
  };
  s.create = [](const NodeContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    IDEM_ASSIGN_OR_RETURN(ConcatAttributes attributes, ReadConcatAttributes(ctx.node));
    return MakeKernel<ConcatFromSequenceKernel>(attributes);
  };
  return s;
}

}  // namespace

void RegisterConcatFromSequence(KernelRegistry& registry) {
  registry.Register(ConcatFromSequenceSchema());
}

}  // namespace idem::sequence_internal
