#include "src/kernels/tensor_util.h"

#include <fmt/format.h>

#include <cstring>

namespace idem::tensor_util {

std::vector<ElementType> AllElementsAt(int version, int bfloat16_since) {
  using E = ElementType;
  std::vector<ElementType> e = BaseElementTypes();
  if (version >= bfloat16_since) e.push_back(E::kBfloat16);
  if (version >= 19) {
    for (E t : {E::kFloat8E4M3FN, E::kFloat8E4M3FNUZ, E::kFloat8E5M2, E::kFloat8E5M2FNUZ}) {
      e.push_back(t);
    }
  }
  if (version >= 21) {
    e.push_back(E::kUint4);
    e.push_back(E::kInt4);
  }
  if (version >= 23) e.push_back(E::kFloat4E2M1);
  if (version >= 24) e.push_back(E::kFloat8E8M0);
  if (version >= 25) {
    e.push_back(E::kUint2);
    e.push_back(E::kInt2);
  }
  return e;
}

Result<Value> MakeInt64Tensor(std::span<const int64_t> shape, std::span<const int64_t> values) {
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(values.size() * 8, &out));
  if (!values.empty()) std::memcpy(out, values.data(), values.size() * 8);
  return Value::MakeTensorFromDims(ElementType::kInt64, shape, std::move(buffer));
}

Result<Value> MakeBoolScalar(bool value) {
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(1, &out));
  out[0] = std::byte{value ? uint8_t{1} : uint8_t{0}};
  return Value::MakeTensorFromDims(ElementType::kBool, {}, std::move(buffer));
}

Result<Value> MakeInt64Scalar(int64_t value) {
  return MakeInt64Tensor({}, std::span<const int64_t>(&value, 1));
}

Result<bool> ReadBool(const Value& value, std::string_view what) {
  const Tensor& t = value.tensor();
  if (t.element_type() != ElementType::kBool || t.element_count() != 1) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{} must be a single bool, got {} elements of {}", what,
                              t.element_count(), ElementTypeName(t.element_type())));
  }
  return t.data().data()[0] != std::byte{0};
}

namespace {

// Copies `count` elements of `bits` bits from src (starting at element src_index) to dst
// (starting at element dst_index). Byte-aligned types use memcpy.
void CopyElements(std::byte* dst, uint64_t dst_index, const std::byte* src, uint64_t src_index,
                  uint64_t count, int bits) {
  if (count == 0) return;
  if (bits % 8 == 0) {
    const uint64_t size = static_cast<uint64_t>(bits / 8);
    std::memcpy(dst + dst_index * size, src + src_index * size, count * size);
    return;
  }
  // 4- and 2-bit types: element k sits in byte k*bits/8 at bit (k*bits)%8, low bits first.
  const auto mask = static_cast<uint8_t>((1u << bits) - 1);
  for (uint64_t k = 0; k < count; ++k) {
    const uint64_t s = (src_index + k) * static_cast<uint64_t>(bits);
    const uint64_t d = (dst_index + k) * static_cast<uint64_t>(bits);
    const auto v = static_cast<uint8_t>((static_cast<uint8_t>(src[s / 8]) >> (s % 8)) & mask);
    auto& out = reinterpret_cast<uint8_t&>(dst[d / 8]);
    out = static_cast<uint8_t>((out & ~(mask << (d % 8))) | (v << (d % 8)));
  }
}

}  // namespace

Result<Value> Stack(RunContext& ctx, ElementType type, std::span<const Value> parts,
                    std::span<const int64_t> empty_shape, int64_t axis) {
  std::vector<int64_t> part_shape;
  if (parts.empty()) {
    part_shape.assign(empty_shape.begin(), empty_shape.end());
  } else {
    const auto s = parts[0].tensor().shape();
    part_shape.assign(s.begin(), s.end());
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = parts[i].tensor();
    if (t.element_type() != type ||
        !std::equal(t.shape().begin(), t.shape().end(), part_shape.begin(), part_shape.end())) {
      return Status(StatusCode::kRuntimeError,
                    fmt::format("iteration {} produced tensor({}) of shape [{}] but iteration 0 "
                                "produced tensor({}) of shape [{}]; stacked outputs must agree",
                                i, ElementTypeName(t.element_type()), fmt::join(t.shape(), ","),
                                ElementTypeName(type), fmt::join(part_shape, ",")));
    }
  }
  if (axis < 0 || axis > static_cast<int64_t>(part_shape.size())) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("stacking axis {} is out of range", axis));
  }
  std::vector<int64_t> shape = part_shape;
  shape.insert(shape.begin() + axis, static_cast<int64_t>(parts.size()));
  uint64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= static_cast<uint64_t>(part_shape[d]);
  for (size_t d = static_cast<size_t>(axis); d < part_shape.size(); ++d) {
    inner *= static_cast<uint64_t>(part_shape[d]);
  }
  // A zero dim anywhere makes the result empty: the copy loops below (over `outer`, which may be
  // 2^62 when a later dim is 0) are skipped, so the cost stays bounded by the bytes produced.
  const uint64_t count = inner == 0 || parts.empty() ? 0 : outer * inner * parts.size();
  // Every part is copied whole, so the strings' lengths add up over the parts (which may all be
  // the same Value: a loop stacking one captured string N times copies it N times).
  uint64_t string_bytes = 0;
  if (type == ElementType::kString && count != 0) {
    for (const Value& p : parts) {
      if (__builtin_add_overflow(string_bytes, p.tensor().string_bytes(), &string_bytes)) {
        string_bytes = ~uint64_t{0};
        break;
      }
    }
  }
  IDEM_ASSIGN_OR_RETURN(uint64_t bytes, TensorBytes(type, count, ctx.limits(), string_bytes));
  IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
  if (count == 0) {
    if (type == ElementType::kString) return Value::MakeStringTensor(std::move(shape), {});
    return Value::MakeTensor(type, std::move(shape), Buffer());
  }
  if (type == ElementType::kString) {
    std::vector<std::string> strings;
    strings.reserve(count);
    for (uint64_t o = 0; o < outer; ++o) {
      for (const Value& p : parts) {
        auto s = p.tensor().strings();
        strings.insert(strings.end(), s.begin() + static_cast<std::ptrdiff_t>(o * inner),
                       s.begin() + static_cast<std::ptrdiff_t>((o + 1) * inner));
      }
    }
    return Value::MakeStringTensor(std::move(shape), std::move(strings));
  }
  const int bits = ElementBits(type);
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(*PackedByteSize(type, count), &out));
  uint64_t at = 0;
  for (uint64_t o = 0; o < outer; ++o) {
    for (const Value& p : parts) {
      CopyElements(out, at, p.tensor().data().data(), o * inner, inner, bits);
      at += inner;
    }
  }
  return Value::MakeTensor(type, std::move(shape), std::move(buffer));
}

Result<Value> ZerosLike(RunContext& ctx, const Tensor& t) {
  const auto shape = t.shape();
  const auto count = static_cast<uint64_t>(t.element_count());
  std::vector<int64_t> dims(shape.begin(), shape.end());
  if (t.element_type() == ElementType::kString) {
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(count * sizeof(std::string)));
    return Value::MakeStringTensor(std::move(dims), std::vector<std::string>(count));
  }
  IDEM_ASSIGN_OR_RETURN(uint64_t bytes, TensorBytes(t.element_type(), count, ctx.limits()));
  IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
  std::byte* out = nullptr;  // Buffer::Allocate zeroes
  IDEM_ASSIGN_OR_RETURN(Buffer buffer,
                        Buffer::Allocate(*PackedByteSize(t.element_type(), count), &out));
  return Value::MakeTensor(t.element_type(), std::move(dims), std::move(buffer));
}

Result<Value> TakeAlongAxis(RunContext& ctx, const Tensor& t, int64_t axis, int64_t index) {
  const auto shape = t.shape();
  std::vector<int64_t> out_shape(shape.begin(), shape.end());
  out_shape.erase(out_shape.begin() + axis);
  uint64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= static_cast<uint64_t>(shape[d]);
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) {
    inner *= static_cast<uint64_t>(shape[d]);
  }
  const uint64_t extent = static_cast<uint64_t>(shape[axis]);
  const ElementType type = t.element_type();
  if (inner == 0) {
    // Empty slice (a zero dim after the axis): nothing to copy, whatever `outer` is (it may be
    // 2^62 with a later dim 0), so the cost stays bounded by the bytes produced.
    if (type == ElementType::kString) return Value::MakeStringTensor(std::move(out_shape), {});
    return Value::MakeTensor(type, std::move(out_shape), Buffer());
  }
  if (type == ElementType::kString) {
    std::vector<std::string> strings;
    strings.reserve(outer * inner);
    auto s = t.strings();
    for (uint64_t o = 0; o < outer; ++o) {
      const uint64_t start = (o * extent + static_cast<uint64_t>(index)) * inner;
      strings.insert(strings.end(), s.begin() + static_cast<std::ptrdiff_t>(start),
                     s.begin() + static_cast<std::ptrdiff_t>(start + inner));
    }
    return Value::MakeStringTensor(std::move(out_shape), std::move(strings));
  }
  const int bits = ElementBits(type);
  const uint64_t start = static_cast<uint64_t>(index) * inner;
  if (outer == 1 && (start * static_cast<uint64_t>(bits)) % 8 == 0 &&
      (inner * static_cast<uint64_t>(bits)) % 8 == 0) {
    // Contiguous and byte-aligned: share the buffer.
    const uint64_t offset = start * static_cast<uint64_t>(bits) / 8;
    const uint64_t size = inner * static_cast<uint64_t>(bits) / 8;
    return Value::MakeTensor(type, std::move(out_shape), t.data().Slice(offset, size));
  }
  IDEM_ASSIGN_OR_RETURN(uint64_t bytes, TensorBytes(type, outer * inner, ctx.limits()));
  IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Buffer buffer,
                        Buffer::Allocate(*PackedByteSize(type, outer * inner), &out));
  for (uint64_t o = 0; o < outer; ++o) {
    CopyElements(out, o * inner, t.data().data(),
                 (o * extent + static_cast<uint64_t>(index)) * inner, inner, bits);
  }
  return Value::MakeTensor(type, std::move(out_shape), std::move(buffer));
}

Result<Value> Reshaped(const Tensor& t, std::vector<int64_t> shape) {
  if (t.element_type() == ElementType::kString) {
    auto s = t.strings();
    return Value::MakeStringTensor(std::move(shape), std::vector<std::string>(s.begin(), s.end()));
  }
  return Value::MakeTensor(t.element_type(), std::move(shape), t.data());
}

}  // namespace idem::tensor_util
