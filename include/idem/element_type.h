// Tensor element types, numbered exactly as onnx.TensorProto.DataType.
#ifndef IDEM_ELEMENT_TYPE_H_
#define IDEM_ELEMENT_TYPE_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "idem/export.h"

namespace idem {

enum class ElementType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBfloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUint4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUint2 = 25,
  kInt2 = 26,
};

inline constexpr int32_t kMaxElementTypeCode = 26;

// Converts a wire code; nullopt for codes idem does not know (including 0).
IDEM_API std::optional<ElementType> ElementTypeFromCode(int64_t code);

// ONNX spelling used in type strings: "float", "bfloat16", "float8e4m3fn", "int4", ...
IDEM_API std::string_view ElementTypeName(ElementType type);

// Bits one element occupies in packed (raw_data) form: 2, 4, 8, 16, 32, 64 or 128. 0 for string
// and undefined.
IDEM_API int ElementBits(ElementType type);

inline bool IsStringType(ElementType type) { return type == ElementType::kString; }

// Bytes needed to store `count` packed elements (sub-byte types round up), or nullopt when that
// overflows size_t. Strings return nullopt.
IDEM_API std::optional<uint64_t> PackedByteSize(ElementType type, uint64_t count);

}  // namespace idem

#endif  // IDEM_ELEMENT_TYPE_H_
