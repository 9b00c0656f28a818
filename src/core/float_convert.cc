#include "src/core/float_convert.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace idem {

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3FFu) << 13;
    }
  } else if (exp == 0x1F) {
    bits = sign | 0x7F800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  return std::bit_cast<float>(bits);
}

// Round to nearest, ties to even (IEEE conversion, as numpy's npy_float_to_half).
uint16_t FloatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xFFu;
  uint32_t mant = x & 0x7FFFFFu;
  if (exp == 0xFF) {  // Inf or NaN (keep a quiet NaN's top payload bits)
    if (mant == 0) return static_cast<uint16_t>(sign | 0x7C00u);
    uint16_t m = static_cast<uint16_t>(mant >> 13);
    return static_cast<uint16_t>(sign | 0x7C00u | (m == 0 ? 0x200u : m));
  }
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1F) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow to Inf
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);  // underflow to zero
    mant |= 0x800000u;
    const int shift = 14 - e;
    uint32_t half_mant = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t h = sign | static_cast<uint32_t>(e) << 10 | (mant >> 13);
  const uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: ok
  return static_cast<uint16_t>(h);
}

float Bf16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t FloatToBf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu) != 0) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN stays a quiet NaN
  }
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

uint16_t DoubleToHalf(double d) {
  const uint64_t x = std::bit_cast<uint64_t>(d);
  const uint32_t sign = static_cast<uint32_t>(x >> 48) & 0x8000u;
  const uint32_t exp = static_cast<uint32_t>(x >> 52) & 0x7FFu;
  uint64_t mant = x & ((uint64_t{1} << 52) - 1);
  if (exp == 0x7FF) {  // Inf or NaN (keep a quiet NaN's top payload bits)
    if (mant == 0) return static_cast<uint16_t>(sign | 0x7C00u);
    const auto m = static_cast<uint32_t>(mant >> 42);
    return static_cast<uint16_t>(sign | 0x7C00u | (m == 0 ? 0x200u : m));
  }
  const int e = static_cast<int>(exp) - 1023 + 15;
  if (e >= 0x1F) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow to Inf
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    mant |= uint64_t{1} << 52;
    const int shift = 43 - e;  // 53 at most
    uint64_t half_mant = mant >> shift;
    const uint64_t rest = mant & ((uint64_t{1} << shift) - 1);
    const uint64_t halfway = uint64_t{1} << (shift - 1);
    if (rest > halfway || (rest == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t h = sign | static_cast<uint32_t>(e) << 10 | static_cast<uint32_t>(mant >> 42);
  const uint64_t rest = mant & ((uint64_t{1} << 42) - 1);
  const uint64_t halfway = uint64_t{1} << 41;
  if (rest > halfway || (rest == halfway && (h & 1u))) ++h;  // may carry into the exponent: ok
  return static_cast<uint16_t>(h);
}

namespace {

struct MiniFormat {
  int exp_bits;
  int man_bits;
  int bias;
  bool ieee;        // all-ones exponent encodes Inf (mantissa 0) and NaN (e5m2)
  bool uz;          // no negative zero: 0x80 is the only NaN (the fnuz types)
  uint8_t max_mag;  // the largest finite magnitude's code
  uint8_t sign_bit;
};

MiniFormat FormatOf(MiniFloat format) {
  switch (format) {
    case MiniFloat::kE4M3FN:
      return {4, 3, 7, false, false, 0x7E, 0x80};
    case MiniFloat::kE4M3FNUZ:
      return {4, 3, 8, false, true, 0x7F, 0x80};
    case MiniFloat::kE5M2:
      return {5, 2, 15, true, false, 0x7B, 0x80};
    case MiniFloat::kE5M2FNUZ:
      return {5, 2, 16, false, true, 0x7F, 0x80};
    case MiniFloat::kE2M1:
      break;
  }
  return {2, 1, 1, false, false, 0x7, 0x8};
}

}  // namespace

float MiniFloatToFloat(MiniFloat format, uint8_t bits) {
  const MiniFormat f = FormatOf(format);
  const bool negative = (bits & f.sign_bit) != 0;
  const unsigned mag = bits & (f.sign_bit - 1u);
  const float nan = std::bit_cast<float>(negative ? 0xFFC00000u : 0x7FC00000u);
  if (f.uz && bits == 0x80) return std::bit_cast<float>(0xFFC00000u);
  if (format == MiniFloat::kE4M3FN && mag == 0x7F) return nan;
  const unsigned field = mag >> f.man_bits;
  const unsigned mant = mag & ((1u << f.man_bits) - 1);
  if (f.ieee && field == (1u << f.exp_bits) - 1) {
    if (mant != 0) return nan;
    return negative ? -std::numeric_limits<float>::infinity()
                    : std::numeric_limits<float>::infinity();
  }
  const float v = field == 0 ? std::ldexp(static_cast<float>(mant), 1 - f.bias - f.man_bits)
                             : std::ldexp(static_cast<float>((1u << f.man_bits) + mant),
                                          static_cast<int>(field) - f.bias - f.man_bits);
  return negative ? -v : v;
}

uint8_t FloatToMiniFloat(MiniFloat format, float value, bool saturate) {
  const MiniFormat f = FormatOf(format);
  const bool e2m1 = format == MiniFloat::kE2M1;
  if (e2m1) saturate = true;
  const uint32_t b = std::bit_cast<uint32_t>(value);
  const uint8_t sign = (b >> 31) != 0 ? f.sign_bit : uint8_t{0};
  const uint32_t exp = (b >> 23) & 0xFFu;
  const uint32_t man = b & 0x7FFFFFu;
  const uint8_t zero = f.uz ? uint8_t{0} : sign;
  auto nan_code = [&]() -> uint8_t {
    if (e2m1) return 0x7;
    if (f.uz) return 0x80;
    return static_cast<uint8_t>(sign | 0x7F);
  };
  auto overflow = [&]() -> uint8_t {
    if (saturate) return static_cast<uint8_t>(sign | f.max_mag);
    if (f.ieee) return static_cast<uint8_t>(sign | 0x7C);  // e5m2 Inf
    return nan_code();
  };
  if (exp == 0xFF) return man != 0 ? nan_code() : overflow();
  // A float subnormal is far below half the smallest subnormal of every narrow format.
  if (exp == 0) return zero;
  const int eu = static_cast<int>(exp) - 127;
  const uint32_t sig = man | 0x800000u;     // value = sig * 2^(eu - 23)
  const int emin = 1 - f.bias;              // exponent of the smallest normal
  int q = std::max(eu, emin) - f.man_bits;  // exponent of the quantum at this magnitude
  const int shift = q - (eu - 23);          // >= 20
  if (shift >= 25) return zero;             // below half the quantum (a tie at 24 goes to 0)
  uint32_t r = sig >> shift;
  const uint32_t rest = sig & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (r & 1u))) ++r;
  if (r == 0) return zero;
  unsigned field = 0;
  unsigned mant = r;
  if (r >= (1u << f.man_bits)) {
    if (r == (2u << f.man_bits)) {
      r >>= 1;
      ++q;
    }
    const int biased = q + f.man_bits + f.bias;
    if (biased >= (1 << f.exp_bits)) return overflow();
    field = static_cast<unsigned>(biased);
    mant = r - (1u << f.man_bits);
  }
  const unsigned code = field << f.man_bits | mant;
  if (code > f.max_mag) return overflow();
  return static_cast<uint8_t>(sign | code);
}

float E8M0ToFloat(uint8_t bits) {
  if (bits == 0xFF) return std::bit_cast<float>(0x7FC00000u);
  return std::ldexp(1.0f, static_cast<int>(bits) - 127);
}

uint8_t FloatToE8M0(float value, bool saturate, E8M0Rounding rounding) {
  const uint32_t b = std::bit_cast<uint32_t>(value);
  const uint32_t exp = (b >> 23) & 0xFFu;
  uint32_t man = b & 0x7FFFFFu;
  if (exp == 0xFF && man != 0) return 0xFF;  // NaN
  if ((b >> 31) != 0) return 0x00;           // negative (undefined): 2^-127, as ONNX Runtime
  if (exp == 0xFF) return saturate ? 0xFE : 0xFF;
  if (exp == 0 && man == 0) return saturate ? 0x00 : 0xFF;
  int k = static_cast<int>(exp) - 127;  // value = 2^k * (1 + man / 2^23)
  if (exp == 0) {                       // subnormal: normalize
    k = -126;
    while ((man & 0x800000u) == 0) {
      man <<= 1;
      --k;
    }
    man &= 0x7FFFFFu;
  }
  if (rounding == E8M0Rounding::kUp && man != 0) ++k;
  if (rounding == E8M0Rounding::kNearest && man >= 0x400000u) ++k;
  const int code = k + 127;
  if (code < 0) return saturate ? 0x00 : 0xFF;
  if (code > 254) return saturate ? 0xFE : 0xFF;
  return static_cast<uint8_t>(code);
}

}  // namespace idem
