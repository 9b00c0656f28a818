#include "tools/generate.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "idem/buffer.h"
#include "idem/element_type.h"

namespace idem::tools {

namespace {

std::vector<int64_t> ShapeOf(const Type& type) {
  std::vector<int64_t> shape;
  if (!type.shape()) return {2};
  for (const Dim& d : *type.shape()) shape.push_back(d.value ? *d.value : 2);
  return shape;
}

Result<Value> GenerateTensor(const Type& type, uint64_t seed) {
  const std::vector<int64_t> shape = ShapeOf(type);
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d != 0 && count > (uint64_t{1} << 24) / static_cast<uint64_t>(d))) {
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("generated input of shape too large ({} elements max)", 1 << 24));
    }
    count *= static_cast<uint64_t>(d);
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
  for (uint64_t i = 0; i < *bytes; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    data[i] = static_cast<std::byte>(state >> 56);
  }
  return Value::MakeTensor(type.element_type(), shape, std::move(buffer));
}

}  // namespace

Result<Value> GenerateValue(const Type& type, uint64_t seed) {
  switch (type.kind()) {
    case ValueKind::kTensor:
      return GenerateTensor(type, seed);
    case ValueKind::kSequence: {
      std::vector<Value> items;
      for (uint64_t k = 0; k < 2; ++k) {
        IDEM_ASSIGN_OR_RETURN(Value v, GenerateValue(type.element(), seed * 31 + k + 1));
        items.push_back(std::move(v));
      }
      return Value::MakeSequence(type.element().element_type(), std::move(items));
    }
    case ValueKind::kOptional: {
      IDEM_ASSIGN_OR_RETURN(Value v, GenerateValue(type.element(), seed * 17 + 3));
      return Value::MakeOptional(std::move(v));
    }
  }
  return Status(StatusCode::kInternal, "unknown value kind");
}

}  // namespace idem::tools
