// Conversions between float and the narrow floating-point types ONNX stores as bit patterns
// (float16, bfloat16 and the float8 family). One implementation for kernels and for values
// (formatting, comparison), so every part of idem rounds the same way.
//
// Contracts: float -> narrow rounds to nearest, ties to even (IEEE; numpy's float16, ONNX
// Runtime's bfloat16); NaN stays a quiet NaN; narrow -> float is exact.
#ifndef IDEM_SRC_CORE_FLOAT_CONVERT_H_
#define IDEM_SRC_CORE_FLOAT_CONVERT_H_

#include <cstdint>

namespace idem {

float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float Bf16ToFloat(uint16_t b);
uint16_t FloatToBf16(float f);

// Storage types for the 16-bit float elements, so templates over element types can tell them
// apart from uint16_t. Arithmetic is done in float (ToFloat/FromFloat), as numpy does.
struct Float16 {
  uint16_t bits;
  float ToFloat() const { return HalfToFloat(bits); }
  static Float16 FromFloat(float f) { return {FloatToHalf(f)}; }
};
struct BFloat16 {
  uint16_t bits;
  float ToFloat() const { return Bf16ToFloat(bits); }
  static BFloat16 FromFloat(float f) { return {FloatToBf16(f)}; }
};

}  // namespace idem

#endif  // IDEM_SRC_CORE_FLOAT_CONVERT_H_
