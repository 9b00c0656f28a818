#include "tools/generate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "idem/buffer.h"
#include "idem/element_type.h"
#include "src/core/float_convert.h"

namespace idem::tools {

namespace {

std::vector<int64_t> ShapeOf(const Type& type) {
  std::vector<int64_t> shape;
  if (!type.shape()) return {2};
  for (const Dim& d : *type.shape()) shape.push_back(d.value ? *d.value : 2);
  return shape;
}

// The byte width of a byte-aligned integer or bool type, 0 for every other type.
int SmallIntegerWidth(ElementType type) {
  using E = ElementType;
  switch (type) {
    case E::kBool:
    case E::kInt8:
    case E::kUint8:
      return 1;
    case E::kInt16:
    case E::kUint16:
      return 2;
    case E::kInt32:
    case E::kUint32:
      return 4;
    case E::kInt64:
    case E::kUint64:
      return 8;
    default:
      return 0;
  }
}

// The byte width of a floating-point type kUnitRange fills, 0 for every other type (the float8
// and float4 types keep bit patterns: nothing times them).
int UnitRangeWidth(ElementType type) {
  using E = ElementType;
  switch (type) {
    case E::kFloat16:
    case E::kBfloat16:
      return 2;
    case E::kFloat:
      return 4;
    case E::kDouble:
      return 8;
    default:
      return 0;
  }
}

// Stores `unit` (in [-1, 1), a multiple of 2^-24) as one element of a UnitRangeWidth type.
void StoreUnit(ElementType type, double unit, std::byte* at) {
  using E = ElementType;
  switch (type) {
    case E::kFloat16: {
      const uint16_t bits = FloatToHalf(static_cast<float>(unit));
      std::memcpy(at, &bits, sizeof(bits));
      return;
    }
    case E::kBfloat16: {
      const uint16_t bits = FloatToBf16(static_cast<float>(unit));
      std::memcpy(at, &bits, sizeof(bits));
      return;
    }
    case E::kFloat: {
      const auto f = static_cast<float>(unit);
      std::memcpy(at, &f, sizeof(f));
      return;
    }
    default:
      std::memcpy(at, &unit, sizeof(unit));
      return;
  }
}

Result<Value> GenerateTensor(const Type& type, uint64_t seed, FloatFill fill) {
  const std::vector<int64_t> shape = ShapeOf(type);
  // A zero dim makes the tensor empty whatever the others are (they are bounded by the checked
  // element count when it is made).
  const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  uint64_t count = empty ? 0 : 1;
  for (int64_t d : shape) {
    if (d < 0 || (!empty && count > kMaxGeneratedElements / static_cast<uint64_t>(d))) {
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("generated input of shape too large ({} elements max)",
                                kMaxGeneratedElements));
    }
    if (!empty) count *= static_cast<uint64_t>(d);
  }
  if (IsStringType(type.element_type())) {
    std::vector<std::string> strings;
    for (uint64_t i = 0; i < count; ++i) strings.push_back(fmt::format("s{}_{}", seed, i));
    return Value::MakeStringTensor(shape, std::move(strings));
  }
  const auto bytes = PackedByteSize(type.element_type(), count);
  if (!bytes) return Status(StatusCode::kUnsupported, "cannot generate this element type");
  std::byte* data = nullptr;
  IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(*bytes, &data));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 56;
  };
  const int width = SmallIntegerWidth(type.element_type());
  const int unit_width = fill == FloatFill::kUnitRange ? UnitRangeWidth(type.element_type()) : 0;
  if (unit_width != 0) {
    // 24 bits of the generator per element: k / 2^23 - 1 for k in [0, 2^24), exact in every
    // type above (rounded to nearest in float16 and bfloat16, which stay in [-1, 1]).
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t k = next();
      k = k << 8 | next();
      k = k << 8 | next();
      StoreUnit(type.element_type(), static_cast<double>(k) / double{1 << 23} - 1.0,
                data + i * static_cast<uint64_t>(unit_width));
    }
  } else if (width == 0) {
    for (uint64_t i = 0; i < *bytes; ++i) data[i] = static_cast<std::byte>(next());
  } else {
    // Integers and bools are 0..3 (bools 0 or 1), little-endian: such inputs are often trip
    // counts, conditions, positions or sizes, and random 64-bit values would make a Loop run for
    // ever (a model with a Loop count input used to take 16 GB under `optimize --check`).
    const uint64_t modulus = type.element_type() == ElementType::kBool ? 2 : 4;
    for (uint64_t i = 0; i < count; ++i) {
      data[i * static_cast<uint64_t>(width)] = static_cast<std::byte>(next() % modulus);
    }
  }
  return Value::MakeTensor(type.element_type(), shape, std::move(buffer));
}

}  // namespace

Result<Value> GenerateValue(const Type& type, uint64_t seed, FloatFill fill) {
  switch (type.kind()) {
    case ValueKind::kTensor:
      return GenerateTensor(type, seed, fill);
    case ValueKind::kSequence: {
      std::vector<Value> items;
      for (uint64_t k = 0; k < 2; ++k) {
        IDEM_ASSIGN_OR_RETURN(Value v, GenerateValue(type.element(), seed * 31 + k + 1, fill));
        items.push_back(std::move(v));
      }
      return Value::MakeSequence(type.element().element_type(), std::move(items));
    }
    case ValueKind::kOptional: {
      IDEM_ASSIGN_OR_RETURN(Value v, GenerateValue(type.element(), seed * 17 + 3, fill));
      return Value::MakeOptional(std::move(v));
    }
  }
  return Status(StatusCode::kInternal, "unknown value kind");
}

}  // namespace idem::tools
