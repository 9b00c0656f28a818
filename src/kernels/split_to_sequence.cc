// SplitToSequence-11 and -24 (24 adds bfloat16): cuts a tensor along an axis into a sequence of
// chunks, of one size (a scalar `split`, the last chunk taking the remainder), of listed sizes (a
// 1-D `split` that must add up to the axis' extent), or of size 1 (no `split`; `keepdims` = 0 then
// drops the axis).
//
// When every dim before the axis is 1 (always so for axis 0), a chunk is a contiguous byte range
// of the input, so chunks are Buffer slices sharing the input's bytes. Otherwise, and for strings,
// chunks are copied.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "src/kernels/kernel.h"
#include "src/kernels/sequence_internal.h"

namespace idem::sequence_internal {
namespace {

// The input's bytes bound the chunk count except when the tensor has no elements (e.g. shape
// [0, 2^40]), where a size-1 split could otherwise ask for 2^40 empty tensors; so the count is
// capped by Limits::max_sequence_length.
struct SplitAttributes {
  int64_t axis = 0;
  bool keepdims = true;
  uint64_t max_chunks = 0;  // Limits::max_sequence_length
};

Result<SplitAttributes> ReadSplitAttributes(const NodeDef& node) {
  SplitAttributes attributes;
  IDEM_ASSIGN_OR_RETURN(attributes.axis, GetIntAttribute(node, "axis", 0));
  // As in ONNX's reference, any non-zero keepdims keeps the axis.
  IDEM_ASSIGN_OR_RETURN(int64_t keepdims, GetIntAttribute(node, "keepdims", 1));
  attributes.keepdims = keepdims != 0;
  return attributes;
}

// Every value of an int32/int64 tensor, widened to int64.
std::vector<int64_t> ReadIndexValues(const Tensor& t) {
  if (t.element_type() == ElementType::kInt32) {
    auto values = t.data_as<int32_t>();
    return {values.begin(), values.end()};
  }
  auto values = t.data_as<int64_t>();
  return {values.begin(), values.end()};
}

Status TooManyChunks(uint64_t count, uint64_t max_chunks) {
  return Status(StatusCode::kResourceExhausted,
                fmt::format("the split would make {} tensors; at most {} are allowed here "
                            "(max_sequence_length, and a bound of the input's size)",
                            count, max_chunks));
}

// Every chunk costs a Value plus its shape whatever its size, so the chunk count is bounded by
// what the input justifies, not only by max_sequence_length: otherwise an empty tensor with a huge
// axis (shape [0, 10^6, ...] of rank 70, a few bytes on disk) makes a million tensors.
constexpr uint64_t kValueBytesOverhead = Value::kBudgetOverhead;

uint64_t ChunkBudget(const Tensor& input, uint64_t max_sequence_length) {
  constexpr uint64_t kValueOverhead = 128;  // Value node + shape vector header
  // Always allowed, whatever the input. Small on purpose: it is granted per node, so what many
  // nodes make together is bounded by the run budget (every chunk is charged with its Value
  // overhead, see ValueBytes), not by this floor.
  constexpr uint64_t kFloorBytes = uint64_t{1} << 20;
  constexpr uint64_t kBytesPerInputByte = 32;
  const uint64_t per_chunk = kValueOverhead + 8 * input.rank();
  const int bits = ElementBits(input.element_type());
  const uint64_t element_bytes = bits >= 8 ? static_cast<uint64_t>(bits / 8) : 1;
  const uint64_t count = static_cast<uint64_t>(input.element_count());
  const uint64_t input_bytes =
      count > (uint64_t{1} << 50) / element_bytes ? (uint64_t{1} << 50) : count * element_bytes;
  const uint64_t budget = std::max(kFloorBytes, input_bytes * kBytesPerInputByte);
  return std::min(max_sequence_length, budget / per_chunk);
}

// The chunk lengths along the axis (whose extent is `dim`) that the `split` input asks for.
Result<std::vector<int64_t>> ChunkLengths(const Value* split, int64_t dim, uint64_t max_chunks) {
  if (split == nullptr) {
    if (static_cast<uint64_t>(dim) > max_chunks) return TooManyChunks(dim, max_chunks);
    return std::vector<int64_t>(static_cast<size_t>(dim), 1);
  }
  const Tensor& t = split->tensor();
  if (t.rank() == 0) {
    const int64_t size = ReadIndexValues(t)[0];
    if (size <= 0) {
      return Status(StatusCode::kRuntimeError,
                    fmt::format("a scalar 'split' must be positive, got {}", size));
    }
    const int64_t full = dim / size;
    const int64_t rest = dim % size;
    const auto count = static_cast<uint64_t>(full) + (rest > 0 ? 1 : 0);
    if (count > max_chunks) return TooManyChunks(count, max_chunks);
    std::vector<int64_t> lengths(static_cast<size_t>(full), size);
    if (rest > 0) lengths.push_back(rest);  // the uneven last chunk
    return lengths;
  }
  if (t.rank() != 1) {
    return Status(
        StatusCode::kRuntimeError,
        fmt::format("'split' must be a scalar or 1-D, got shape {}", ShapeToString(t.shape())));
  }
  std::vector<int64_t> lengths = ReadIndexValues(t);
  if (lengths.size() > max_chunks) return TooManyChunks(lengths.size(), max_chunks);
  int64_t sum = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 0) {
      return Status(StatusCode::kRuntimeError,
                    fmt::format("'split' value {} at index {} is negative; all values must be "
                                ">= 0",
                                lengths[i], i));
    }
    // Each value is below 2^63 and the sum is compared with a dim, so stop once it exceeds one.
    if (__builtin_add_overflow(sum, lengths[i], &sum)) sum = INT64_MAX;
  }
  if (sum != dim) {
    return Status(StatusCode::kRuntimeError,
                  fmt::format("'split' sizes {} add up to {}, but the axis has {} elements",
                              ShapeToString(lengths), sum, dim));
  }
  return lengths;
}

class SplitToSequenceKernel final : public Kernel {
 public:
  explicit SplitToSequenceKernel(SplitAttributes attributes) : attributes_(attributes) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    const Tensor& input = inputs[0]->tensor();
    const Value* split = inputs.size() > 1 ? inputs[1] : nullptr;
    const auto rank = static_cast<int64_t>(input.rank());
    IDEM_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(attributes_.axis, rank, "axis"));
    const int64_t dim = input.shape()[axis];
    IDEM_ASSIGN_OR_RETURN(std::vector<int64_t> lengths,
                          ChunkLengths(split, dim, ChunkBudget(input, attributes_.max_chunks)));
    // The chunks' Value overhead and any copied bytes count against the run budget.
    IDEM_RETURN_IF_ERROR(
        ctx.CheckAllocation(lengths.size() * (kValueBytesOverhead + 8 * input.rank()) +
                            input.data().size() + input.string_bytes()));
    // keepdims applies only to the default split into size-1 chunks.
    const bool drop_axis = split == nullptr && !attributes_.keepdims;

    // Row = one index over the dims before the axis; the input's elements are `outer` rows of
    // `dim * inner` elements. These products are bounded by the element count, except when a
    // zero dim hides an overflow, in which case there is nothing to copy either.
    const auto outer = DimProduct(input.shape(), 0, static_cast<size_t>(axis));
    const auto inner = DimProduct(input.shape(), static_cast<size_t>(axis) + 1, input.rank());
    const bool empty = input.element_count() == 0;
    const int64_t rows = empty ? 0 : *outer;
    const int64_t inner_elements = empty ? 0 : *inner;
    const ElementType type = input.element_type();
    const int bits = ElementBits(type);
    if (type != ElementType::kString && bits % 8 != 0) {
      return Status(StatusCode::kUnsupported,
                    fmt::format("SplitToSequence does not handle sub-byte tensor({})",
                                ElementTypeName(type)));
    }
    const auto width = static_cast<size_t>(bits / 8);

    std::vector<Value> chunks;
    chunks.reserve(lengths.size());
    int64_t offset = 0;  // along the axis
    for (int64_t length : lengths) {
      std::vector<int64_t> shape(input.shape().begin(), input.shape().end());
      if (drop_axis) {
        shape.erase(shape.begin() + axis);
      } else {
        shape[axis] = length;
      }
      const auto chunk_row = static_cast<size_t>(length * inner_elements);
      const auto input_row = static_cast<size_t>(dim * inner_elements);
      const auto start = static_cast<size_t>(offset * inner_elements);
      offset += length;
      Value chunk;
      if (type == ElementType::kString) {
        std::vector<std::string> strings;
        strings.reserve(chunk_row * static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) {
          auto source = input.strings().subspan(r * input_row + start, chunk_row);
          strings.insert(strings.end(), source.begin(), source.end());
        }
        IDEM_ASSIGN_OR_RETURN(chunk, Value::MakeStringTensor(std::move(shape), std::move(strings)));
      } else if (rows <= 1) {
        // One row (or none): the chunk is a contiguous range of the input's bytes.
        Buffer bytes = rows == 0 ? Buffer() : input.data().Slice(start * width, chunk_row * width);
        IDEM_ASSIGN_OR_RETURN(chunk, Value::MakeTensor(type, std::move(shape), std::move(bytes)));
      } else {
        std::byte* out = nullptr;
        IDEM_ASSIGN_OR_RETURN(
            Buffer bytes, Buffer::Allocate(chunk_row * static_cast<size_t>(rows) * width, &out));
        if (chunk_row > 0) {
          for (int64_t r = 0; r < rows; ++r) {
            std::memcpy(out + r * chunk_row * width,
                        input.data().data() + (r * input_row + start) * width, chunk_row * width);
          }
        }
        IDEM_ASSIGN_OR_RETURN(chunk, Value::MakeTensor(type, std::move(shape), std::move(bytes)));
      }
      chunks.push_back(std::move(chunk));
    }
    IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeSequence(type, std::move(chunks)));
    return {};
  }

 private:
  SplitAttributes attributes_;
};

KernelSchema SplitToSequenceSchema(int version) {
  const std::vector<ElementType> elements = version >= 24 ? BaseWithBfloat16() : BaseElementTypes();
  KernelSchema s;
  s.op_type = "SplitToSequence";
  s.since_version = version;
  s.inputs = {{"input", "T"}, {"split", "I", FormalParameter::Arity::kOptional}};
  s.outputs = {{"output_sequence", "S"}};
  s.constraints = {
      {"T", TensorTypes(elements)}, IndexConstraint("I"), {"S", SequenceTypes(elements)}};
  s.attributes = {"axis", "keepdims"};
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    IDEM_ASSIGN_OR_RETURN(SplitAttributes attributes, ReadSplitAttributes(ctx.node));
    const Type& input = *ctx.inputs[0];
    if (input.shape()) {
      IDEM_RETURN_IF_ERROR(
          NormalizeAxis(attributes.axis, static_cast<int64_t>(input.shape()->size()), "axis")
              .status());
    }
    if (ctx.inputs.size() > 1 && ctx.inputs[1] != nullptr && ctx.inputs[1]->shape() &&
        ctx.inputs[1]->shape()->size() > 1) {
      return Status(StatusCode::kInvalidModel,
                    fmt::format("input 'split' is {}; it must be a scalar or 1-D",
                                ctx.inputs[1]->ToShortString()));
    }
    return std::vector<Type>{Type::Sequence(Type::Tensor(input.element_type()))};
  };
  s.create = [](const NodeContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    IDEM_ASSIGN_OR_RETURN(SplitAttributes attributes, ReadSplitAttributes(ctx.node));
    attributes.max_chunks = ctx.limits.max_sequence_length;
    return MakeKernel<SplitToSequenceKernel>(attributes);
  };
  return s;
}

}  // namespace

void RegisterSplitToSequence(KernelRegistry& registry) {
  registry.Register(SplitToSequenceSchema(11));
  registry.Register(SplitToSequenceSchema(24));
}

}  // namespace idem::sequence_internal
