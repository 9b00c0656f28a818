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

// ---- Narrow formats beyond 16 bits: float8, float4, and double -> float16 -------------------

// double -> float16 with one rounding (to nearest, ties to even), as numpy's npy_double_to_half:
// rounding through float first could round twice.
uint16_t DoubleToHalf(double d);

// The 8- and 4-bit floats ONNX defines, stored as bit patterns in the low bits of a byte:
// float8e4m3fn (bias 7, no infinity, NaN S.1111.111, max 448), float8e4m3fnuz (bias 8, no
// infinity, no -0, NaN 0x80, max 240), float8e5m2 (bias 15, IEEE-like with infinities, max
// 57344), float8e5m2fnuz (bias 16, no infinity, no -0, NaN 0x80, max 57344) and float4e2m1
// (bias 1, no infinity or NaN, max 6).
enum class MiniFloat : uint8_t { kE4M3FN, kE4M3FNUZ, kE5M2, kE5M2FNUZ, kE2M1 };

// Exact. NaN patterns give a quiet NaN carrying the pattern's sign (the fnuz NaN 0x80 gives
// -NaN), as ONNX Runtime decodes them.
float MiniFloatToFloat(MiniFloat format, uint8_t bits);

// Rounds to nearest, ties to even, then applies the ONNX Cast tables (Cast-19 and later): with
// `saturate`, a value whose rounding exceeds the largest finite value (and +-Inf) gives +-max;
// without it, e4m3fn gives +-NaN, e5m2 +-Inf and the fnuz types their NaN. NaN stays NaN; -0 is
// 0 in the fnuz types. float4e2m1 has no NaN or infinity: it always saturates and NaN gives +6
// (the ONNX reference's choice).
uint8_t FloatToMiniFloat(MiniFloat format, float f, bool saturate);

// float8e8m0: an exponent only, 2^(bits - 127); 0xFF is NaN; no zero, no sign.
enum class E8M0Rounding : uint8_t {
  kUp,       // to the next power of two away from zero (the default of Cast's round_mode)
  kDown,     // to the power of two towards zero
  kNearest,  // to the nearest power of two, ties (1.5 * 2^k) up
};
float E8M0ToFloat(uint8_t bits);
// NaN gives NaN. Values that round past 2^127 (and +Inf) give 2^127 with `saturate`, NaN
// without; values below 2^-127 (and 0) give 2^-127 with `saturate`, NaN without. Negative values
// (undefined in ONNX) give 2^-127, as ONNX Runtime does.
uint8_t FloatToE8M0(float f, bool saturate, E8M0Rounding rounding);

}  // namespace idem

#endif  // IDEM_SRC_CORE_FLOAT_CONVERT_H_
