#include "idem/element_type.h"

#include <array>
#include <limits>

namespace idem {
namespace {

struct ElementInfo {
  std::string_view name;
  int bits;
};

// Indexed by TensorProto.DataType code.
constexpr std::array<ElementInfo, kMaxElementTypeCode + 1> kInfo = {{
    {"undefined", 0},      {"float", 32},       {"uint8", 8},          {"int8", 8},
    {"uint16", 16},        {"int16", 16},       {"int32", 32},         {"int64", 64},
    {"string", 0},         {"bool", 8},         {"float16", 16},       {"double", 64},
    {"uint32", 32},        {"uint64", 64},      {"complex64", 64},     {"complex128", 128},
    {"bfloat16", 16},      {"float8e4m3fn", 8}, {"float8e4m3fnuz", 8}, {"float8e5m2", 8},
    {"float8e5m2fnuz", 8}, {"uint4", 4},        {"int4", 4},           {"float4e2m1", 4},
    {"float8e8m0", 8},     {"uint2", 2},        {"int2", 2},
}};

}  // namespace

std::optional<ElementType> ElementTypeFromCode(int64_t code) {
  if (code < 1 || code > kMaxElementTypeCode) return std::nullopt;
  return static_cast<ElementType>(code);
}

std::string_view ElementTypeName(ElementType type) {
  auto code = static_cast<int32_t>(type);
  if (code < 0 || code > kMaxElementTypeCode) return "invalid";
  return kInfo[code].name;
}

int ElementBits(ElementType type) {
  auto code = static_cast<int32_t>(type);
  if (code < 0 || code > kMaxElementTypeCode) return 0;
  return kInfo[code].bits;
}

std::optional<uint64_t> PackedByteSize(ElementType type, uint64_t count) {
  const int bits = ElementBits(type);
  if (bits == 0) return std::nullopt;
  if (bits < 8) {
    const uint64_t per_byte = 8 / bits;
    return count / per_byte + (count % per_byte != 0 ? 1 : 0);
  }
  const uint64_t bytes = static_cast<uint64_t>(bits / 8);
  if (count > std::numeric_limits<uint64_t>::max() / bytes) return std::nullopt;
  return count * bytes;
}

}  // namespace idem
