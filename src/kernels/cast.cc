// Cast (1, 6, 9, 13, 19, 21, 23, 24, 25) and CastLike (15, 19, 21, 23, 24, 25): every element
// type pair the spec allows per version, strings included.
//
// Each element is read into one of three exact intermediates (int64 for signed integers and
// bool, uint64 for unsigned integers, double for every floating type, all of which double holds
// exactly) or, for strings, parsed straight into the destination, and then written into the
// destination type with one rounding:
//   - integer -> integer: two's complement truncation (the spec's rule);
//   - float -> float: round to nearest even (float16 from double directly, as numpy; bfloat16 and
//     the 8- and 4-bit floats through float, as ONNX Runtime and the ONNX reference do); the
//     float8 tables (saturate) and float8e8m0's round_mode as the spec writes them (ONNX Runtime
//     1.30 differs at two edges: e4m3fn [480, 496) gives 448 and e5m2 [61440, 65536) NaN when
//     not saturating, where the spec says NaN and Inf);
//   - integer -> float: the nearest value (float16, bfloat16 and the narrow floats through
//     float, as ONNX Runtime);
//   - float -> integer: truncation toward zero. Out of range and NaN are undefined in ONNX; idem
//     gives what ONNX Runtime gives on x86-64 (its scalar conversions), never C++ undefined
//     behaviour: int32 and int64 get their minimum (INT32_MIN, INT64_MIN); 8- and 16-bit targets
//     take the low bits of that int32 result, uint32 the low bits of the int64 one; uint64
//     converts x >= 2^63 as (x - 2^63) with the top bit set, so NaN gives 2^63 and +Inf 0
//     (ONNX Runtime's vectorized uint32 loop differs from its own scalar one for out-of-range
//     values; idem always gives the scalar result). From the float8 types, as ONNX Runtime: NaN
//     gives 0 and +-Inf the integer type's max/min;
//   - float -> int4/uint4/int2/uint2: rounded half away from zero (as ONNX Runtime), then the
//     low bits of the int32 result above; integer -> 4/2 bits: the low bits;
//   - -> bool: nonzero (NaN included) is true.
// Number -> string: integers in decimal, bool as 1/0 (as ONNX Runtime); floats as ONNX Runtime
// prints them ("%.8g": "0.5", "1e+10", "-0", "NaN", "INF", "-INF"), except float32, which keeps
// that layout with the shortest digits that read back to the same float32 (what numpy prints and
// the official tests expect: "0.3", not "0.30000001").
// String -> number, as ONNX Runtime (std::stod / stoll / stoull semantics): leading spaces, a
// sign, decimal or hex ("0x10") floats, "inf"/"nan" in any case; a numeric prefix is used ("3abc"
// is 3, "100.5" to an integer is 100; 4- and 2-bit targets parse a float and round it); no
// number, or a value out of range, is an error naming the element. Floats other than double are
// parsed as double and rounded to float first.
// Cast to the input's own type returns the input Value (no copy).
#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "src/core/float_convert.h"
#include "src/core/text.h"
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {
namespace {

using E = ElementType;

// ---- Element type traits --------------------------------------------------------------------

template <E T>
using Tag = std::integral_constant<E, T>;

template <E T>
inline constexpr bool kSigned = T == E::kInt8 || T == E::kInt16 || T == E::kInt32 ||
                                T == E::kInt64 || T == E::kInt4 || T == E::kInt2;
template <E T>
inline constexpr bool kSubByteInt =
    T == E::kInt4 || T == E::kUint4 || T == E::kInt2 || T == E::kUint2;
template <E T>
inline constexpr bool kMini = T == E::kFloat8E4M3FN || T == E::kFloat8E4M3FNUZ ||
                              T == E::kFloat8E5M2 || T == E::kFloat8E5M2FNUZ || T == E::kFloat4E2M1;
template <E T>
inline constexpr bool kFloating = T == E::kFloat || T == E::kDouble || T == E::kFloat16 ||
                                  T == E::kBfloat16 || T == E::kFloat8E8M0 || kMini<T>;

template <E T>
constexpr MiniFloat MiniOf() {
  if constexpr (T == E::kFloat8E4M3FN) return MiniFloat::kE4M3FN;
  if constexpr (T == E::kFloat8E4M3FNUZ) return MiniFloat::kE4M3FNUZ;
  if constexpr (T == E::kFloat8E5M2) return MiniFloat::kE5M2;
  if constexpr (T == E::kFloat8E5M2FNUZ) return MiniFloat::kE5M2FNUZ;
  return MiniFloat::kE2M1;
}

// The C++ storage of the 8..64-bit integer element types.
template <E T>
struct IntStorage {
  using type = void;
};
template <>
struct IntStorage<E::kInt8> {
  using type = int8_t;
};
template <>
struct IntStorage<E::kInt16> {
  using type = int16_t;
};
template <>
struct IntStorage<E::kInt32> {
  using type = int32_t;
};
template <>
struct IntStorage<E::kInt64> {
  using type = int64_t;
};
template <>
struct IntStorage<E::kUint8> {
  using type = uint8_t;
};
template <>
struct IntStorage<E::kUint16> {
  using type = uint16_t;
};
template <>
struct IntStorage<E::kUint32> {
  using type = uint32_t;
};
template <>
struct IntStorage<E::kUint64> {
  using type = uint64_t;
};

// Calls f(Tag<T>{}) for every element type Cast handles (all but the complex types).
template <class F>
Status DispatchCastType(E type, F&& f) {
  switch (type) {
    case E::kFloat:
      return f(Tag<E::kFloat>{});
    case E::kUint8:
      return f(Tag<E::kUint8>{});
    case E::kInt8:
      return f(Tag<E::kInt8>{});
    case E::kUint16:
      return f(Tag<E::kUint16>{});
    case E::kInt16:
      return f(Tag<E::kInt16>{});
    case E::kInt32:
      return f(Tag<E::kInt32>{});
    case E::kInt64:
      return f(Tag<E::kInt64>{});
    case E::kString:
      return f(Tag<E::kString>{});
    case E::kBool:
      return f(Tag<E::kBool>{});
    case E::kFloat16:
      return f(Tag<E::kFloat16>{});
    case E::kDouble:
      return f(Tag<E::kDouble>{});
    case E::kUint32:
      return f(Tag<E::kUint32>{});
    case E::kUint64:
      return f(Tag<E::kUint64>{});
    case E::kBfloat16:
      return f(Tag<E::kBfloat16>{});
    case E::kFloat8E4M3FN:
      return f(Tag<E::kFloat8E4M3FN>{});
    case E::kFloat8E4M3FNUZ:
      return f(Tag<E::kFloat8E4M3FNUZ>{});
    case E::kFloat8E5M2:
      return f(Tag<E::kFloat8E5M2>{});
    case E::kFloat8E5M2FNUZ:
      return f(Tag<E::kFloat8E5M2FNUZ>{});
    case E::kUint4:
      return f(Tag<E::kUint4>{});
    case E::kInt4:
      return f(Tag<E::kInt4>{});
    case E::kFloat4E2M1:
      return f(Tag<E::kFloat4E2M1>{});
    case E::kFloat8E8M0:
      return f(Tag<E::kFloat8E8M0>{});
    case E::kUint2:
      return f(Tag<E::kUint2>{});
    case E::kInt2:
      return f(Tag<E::kInt2>{});
    default:
      return InvalidArgument(
          fmt::format("Cast does not convert tensor({})", ElementTypeName(type)));
  }
}

// ---- Sub-byte access (packed low bits first) --------------------------------------------------

inline unsigned LoadBits(const std::byte* p, int64_t i, int bits) {
  const int per_byte = 8 / bits;
  return (std::to_integer<unsigned>(p[i / per_byte]) >> ((i % per_byte) * bits)) &
         ((1u << bits) - 1);
}
// The buffer must be zeroed first.
inline void OrBits(std::byte* p, int64_t i, int bits, unsigned v) {
  const int per_byte = 8 / bits;
  p[i / per_byte] |=
      std::byte(static_cast<uint8_t>((v & ((1u << bits) - 1)) << ((i % per_byte) * bits)));
}

// ---- Float -> integer as ONNX Runtime on x86-64 (see the file comment) -----------------------

inline int32_t ToInt32Like(double d) {
  if (d >= -2147483648.0 && d < 2147483648.0) return static_cast<int32_t>(d);
  return std::numeric_limits<int32_t>::min();  // also NaN
}
inline int64_t ToInt64Like(double d) {
  if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return static_cast<int64_t>(d);
  return std::numeric_limits<int64_t>::min();  // also NaN
}
template <class T>
T FloatToInteger(double d) {
  if constexpr (std::is_same_v<T, int64_t>) {
    return ToInt64Like(d);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    if (d >= 9223372036854775808.0) {
      return static_cast<uint64_t>(ToInt64Like(d - 9223372036854775808.0)) ^ (uint64_t{1} << 63);
    }
    return static_cast<uint64_t>(ToInt64Like(d));
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    return static_cast<uint32_t>(ToInt64Like(d));
  } else {
    return static_cast<T>(ToInt32Like(d));  // int32 itself, and the low bits for 8/16 bits
  }
}

// float8 -> 8..64-bit integers take another path in ONNX Runtime: NaN gives 0, +-Inf the type's
// max/min, finite values truncate (and wrap, as every finite float8 fits in int32).
template <class T>
T Float8ToInteger(double d) {
  if (std::isnan(d)) return T{0};
  if (std::isinf(d)) return d > 0 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
  return static_cast<T>(static_cast<int64_t>(d));
}

// ---- Reading one element ------------------------------------------------------------------------

template <E S>
auto Read(const std::byte* p, int64_t i) {
  if constexpr (S == E::kBool) {
    return int64_t{p[i] != std::byte{0}};
  } else if constexpr (!std::is_void_v<typename IntStorage<S>::type>) {
    using T = typename IntStorage<S>::type;
    if constexpr (std::is_signed_v<T>) {
      return static_cast<int64_t>(LoadElement<T>(p, i));
    } else {
      return static_cast<uint64_t>(LoadElement<T>(p, i));
    }
  } else if constexpr (kSubByteInt<S>) {
    constexpr int kBits = (S == E::kInt4 || S == E::kUint4) ? 4 : 2;
    const unsigned raw = LoadBits(p, i, kBits);
    if constexpr (kSigned<S>) {
      return static_cast<int64_t>((raw & (1u << (kBits - 1))) ? static_cast<int>(raw) - (1 << kBits)
                                                              : static_cast<int>(raw));
    } else {
      return static_cast<uint64_t>(raw);
    }
  } else if constexpr (S == E::kFloat) {
    return static_cast<double>(LoadElement<float>(p, i));
  } else if constexpr (S == E::kDouble) {
    return LoadElement<double>(p, i);
  } else if constexpr (S == E::kFloat16) {
    return static_cast<double>(HalfToFloat(LoadElement<uint16_t>(p, i)));
  } else if constexpr (S == E::kBfloat16) {
    return static_cast<double>(Bf16ToFloat(LoadElement<uint16_t>(p, i)));
  } else if constexpr (S == E::kFloat8E8M0) {
    return static_cast<double>(E8M0ToFloat(LoadElement<uint8_t>(p, i)));
  } else if constexpr (S == E::kFloat4E2M1) {
    return static_cast<double>(
        MiniFloatToFloat(MiniFloat::kE2M1, static_cast<uint8_t>(LoadBits(p, i, 4))));
  } else {
    static_assert(kMini<S>);
    return static_cast<double>(MiniFloatToFloat(MiniOf<S>(), LoadElement<uint8_t>(p, i)));
  }
}

// ---- Writing one element ------------------------------------------------------------------------

struct CastOptions {
  bool saturate = true;
  E8M0Rounding rounding = E8M0Rounding::kUp;
};

// Writes `v` (int64_t, uint64_t or double) as element i of a D tensor.
template <E D, class V>
void Write(std::byte* out, int64_t i, V v, const CastOptions& options) {
  constexpr bool kIsFloatValue = std::is_same_v<V, double>;
  if constexpr (D == E::kBool) {
    StoreElement<uint8_t>(out, i, v != 0 ? 1 : 0);
  } else if constexpr (!std::is_void_v<typename IntStorage<D>::type>) {
    using T = typename IntStorage<D>::type;
    if constexpr (kIsFloatValue) {
      StoreElement<T>(out, i, FloatToInteger<T>(v));
    } else {
      StoreElement<T>(out, i, static_cast<T>(v));  // modular (C++20)
    }
  } else if constexpr (kSubByteInt<D>) {
    constexpr int kBits = (D == E::kInt4 || D == E::kUint4) ? 4 : 2;
    unsigned raw;
    if constexpr (kIsFloatValue) {
      raw = static_cast<unsigned>(ToInt32Like(std::round(v)));
    } else {
      raw = static_cast<unsigned>(v);
    }
    OrBits(out, i, kBits, raw);
  } else if constexpr (D == E::kFloat) {
    StoreElement<float>(out, i, static_cast<float>(v));
  } else if constexpr (D == E::kDouble) {
    StoreElement<double>(out, i, static_cast<double>(v));
  } else if constexpr (D == E::kFloat16) {
    if constexpr (kIsFloatValue) {
      StoreElement<uint16_t>(out, i, DoubleToHalf(v));
    } else {
      StoreElement<uint16_t>(out, i, FloatToHalf(static_cast<float>(v)));
    }
  } else if constexpr (D == E::kBfloat16) {
    StoreElement<uint16_t>(out, i, FloatToBf16(static_cast<float>(v)));
  } else if constexpr (D == E::kFloat8E8M0) {
    StoreElement<uint8_t>(out, i,
                          FloatToE8M0(static_cast<float>(v), options.saturate, options.rounding));
  } else if constexpr (D == E::kFloat4E2M1) {
    OrBits(out, i, 4, FloatToMiniFloat(MiniFloat::kE2M1, static_cast<float>(v), true));
  } else {
    static_assert(kMini<D>);
    StoreElement<uint8_t>(out, i,
                          FloatToMiniFloat(MiniOf<D>(), static_cast<float>(v), options.saturate));
  }
}

// ---- Strings ------------------------------------------------------------------------------------

// ONNX Runtime's "%.8g" layout with the shortest digits that read back to the same value.
std::string FormatFloat(double v, bool as_double) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-INF" : "INF";
  char buf[64];
  const std::to_chars_result r =
      as_double ? std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific)
                : std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v),
                                std::chars_format::scientific);
  // buf holds [-]d[.ddd]e(+|-)XX.
  std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
  std::string out;
  if (!sci.empty() && sci[0] == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits += c;
  }
  int exp = 0;
  std::string_view exp_text = sci.substr(e + 1);
  if (!exp_text.empty() && exp_text[0] == '+') exp_text.remove_prefix(1);
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp);
  const int precision = std::max<int>(static_cast<int>(digits.size()), 8);
  if (exp < -4 || exp >= precision) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += fmt::format("e{}{:02d}", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  } else if (exp >= 0) {
    const auto int_digits = static_cast<size_t>(exp) + 1;
    if (digits.size() <= int_digits) {
      out += digits;
      out.append(int_digits - digits.size(), '0');
    } else {
      out += digits.substr(0, int_digits);
      out += '.';
      out += digits.substr(int_digits);
    }
  } else {
    out += "0.";
    out.append(static_cast<size_t>(-exp - 1), '0');
    out += digits;
  }
  return out;
}

// ONNX Runtime's "%.8g" (its layout, with NaN, INF and -INF).
std::string FormatG8(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-INF" : "INF";
  char buf[64];
  const int n = std::snprintf(buf, sizeof(buf), "%.8g", v);
  return std::string(buf, static_cast<size_t>(std::max(n, 0)));
}

// float32 with the shortest round-trip digits (the official tests expect numpy's digits); the
// other floating types exactly as ONNX Runtime prints them.
template <E S, class V>
std::string FormatValue(V v) {
  if constexpr (S == E::kFloat) {
    return FormatFloat(v, false);
  } else if constexpr (std::is_same_v<V, double>) {
    return FormatG8(v);
  } else {
    return fmt::format("{}", v);
  }
}

Status NotANumber(int64_t i, const std::string& s, E to, std::string_view why) {
  std::string shown = s.size() > 40 ? s.substr(0, 40) + "..." : s;
  return InvalidArgument(fmt::format("Cast: element {} of the input, {}, {} (string to {})", i,
                                     QuoteName(shown), why, ElementTypeName(to)));
}

// Parses element i (`s`) and writes it as a D element, as ONNX Runtime's std::stod / stoll /
// stoull / stoi would read it.
template <E D>
Status WriteParsed(std::byte* out, int64_t i, const std::string& s, const CastOptions& options) {
  const char* begin = s.c_str();
  char* end = nullptr;
  errno = 0;
  if constexpr (kFloating<D>) {
    const double d = std::strtod(begin, &end);
    if (end == begin) return NotANumber(i, s, D, "is not a number");
    if (errno == ERANGE) return NotANumber(i, s, D, "is out of the range of double");
    Write<D>(out, i, D == E::kDouble ? d : static_cast<double>(static_cast<float>(d)), options);
  } else if constexpr (kSubByteInt<D>) {  // parsed as a float, then the float rule
    const double d = std::strtod(begin, &end);
    if (end == begin) return NotANumber(i, s, D, "is not a number");
    if (errno == ERANGE) return NotANumber(i, s, D, "is out of the range of double");
    Write<D>(out, i, d, options);
  } else if constexpr (kSigned<D>) {  // std::stoll, then truncation
    const long long v = std::strtoll(begin, &end, 10);
    if (end == begin) return NotANumber(i, s, D, "is not an integer");
    if (errno == ERANGE) return NotANumber(i, s, D, "is out of the range of int64");
    Write<D>(out, i, static_cast<int64_t>(v), options);
  } else {  // unsigned and bool: std::stoull (which wraps a leading '-'), then truncation
    const unsigned long long v = std::strtoull(begin, &end, 10);
    if (end == begin) return NotANumber(i, s, D, "is not an integer");
    if (errno == ERANGE) return NotANumber(i, s, D, "is out of the range of uint64");
    Write<D>(out, i, static_cast<uint64_t>(v), options);
  }
  return {};
}

// ---- The kernel ---------------------------------------------------------------------------------

struct CastAttrs {
  E to = E::kUndefined;
  CastOptions options;
};

template <E S, E D>
Status CastElements(const Tensor& x, std::byte* out, std::vector<std::string>* strings,
                    const CastOptions& options) {
  const int64_t n = x.element_count();
  if constexpr (S == E::kString) {
    if constexpr (D == E::kString) {
      return {};  // same type: never reached (the input is returned)
    } else {
      const auto in = x.strings();
      for (int64_t i = 0; i < n; ++i) {
        IDEM_RETURN_IF_ERROR(WriteParsed<D>(out, i, in[static_cast<size_t>(i)], options));
      }
    }
  } else {
    const std::byte* p = x.data().data();
    if constexpr (D == E::kString) {
      for (int64_t i = 0; i < n; ++i) {
        (*strings)[static_cast<size_t>(i)] = FormatValue<S>(Read<S>(p, i));
      }
    } else if constexpr (kMini<S> && S != E::kFloat4E2M1 &&
                         !std::is_void_v<typename IntStorage<D>::type>) {
      using T = typename IntStorage<D>::type;
      for (int64_t i = 0; i < n; ++i) StoreElement<T>(out, i, Float8ToInteger<T>(Read<S>(p, i)));
    } else {
      for (int64_t i = 0; i < n; ++i) Write<D>(out, i, Read<S>(p, i), options);
    }
  }
  return {};
}

Status RunCast(const CastAttrs& attrs, RunContext& ctx, std::span<const Value* const> inputs,
               std::span<Value> outputs) {
  const Tensor& x = inputs[0]->tensor();
  if (x.element_type() == attrs.to) {
    outputs[0] = *inputs[0];
    return {};
  }
  const int64_t n = x.element_count();
  if (attrs.to == E::kString) {
    // Every string is charged before any is made (their lengths are bounded: at most 24 bytes).
    IDEM_ASSIGN_OR_RETURN(uint64_t bytes, TensorBytes(E::kString, static_cast<uint64_t>(n),
                                                      ctx.limits(), static_cast<uint64_t>(n) * 24));
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
    std::vector<std::string> strings(static_cast<size_t>(n));
    IDEM_RETURN_IF_ERROR(DispatchCastType(x.element_type(), [&](auto s) -> Status {
      return CastElements<decltype(s)::value, E::kString>(x, nullptr, &strings, attrs.options);
    }));
    IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeStringTensor(
                                          std::vector<int64_t>(x.shape().begin(), x.shape().end()),
                                          std::move(strings)));
    return {};
  }
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Value result, AllocateTensor(ctx, attrs.to, x.shape(), &out));
  if (ElementBits(attrs.to) < 8) {
    std::memset(out, 0, result.tensor().data().size());
  }
  IDEM_RETURN_IF_ERROR(DispatchCastType(x.element_type(), [&](auto s) -> Status {
    return DispatchCastType(attrs.to, [&](auto d) -> Status {
      return CastElements<decltype(s)::value, decltype(d)::value>(x, out, nullptr, attrs.options);
    });
  }));
  outputs[0] = std::move(result);
  return {};
}

// The element types of T1 and T2 at `version`, in the spec's words.
std::vector<E> CastTypes(int version) {
  std::vector<E> t = {E::kFloat16, E::kFloat, E::kDouble, E::kInt8,   E::kInt16,  E::kInt32,
                      E::kInt64,   E::kUint8, E::kUint16, E::kUint32, E::kUint64, E::kBool};
  if (version >= 9) t.push_back(E::kString);
  if (version >= 13) t.push_back(E::kBfloat16);
  if (version >= 19) {
    for (E e : {E::kFloat8E4M3FN, E::kFloat8E4M3FNUZ, E::kFloat8E5M2, E::kFloat8E5M2FNUZ}) {
      t.push_back(e);
    }
  }
  if (version >= 21) {
    t.push_back(E::kUint4);
    t.push_back(E::kInt4);
  }
  if (version >= 23) t.push_back(E::kFloat4E2M1);
  if (version >= 24) t.push_back(E::kFloat8E8M0);
  if (version >= 25) {
    t.push_back(E::kUint2);
    t.push_back(E::kInt2);
  }
  return t;
}

// Cast-1's `to` is a string: the TensorProto.DataType name ("FLOAT", "INT64", ...).
std::optional<E> TypeFromName(std::string name) {
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::pair<const char*, E> kNames[] = {
      {"FLOAT", E::kFloat},     {"UINT8", E::kUint8},       {"INT8", E::kInt8},
      {"UINT16", E::kUint16},   {"INT16", E::kInt16},       {"INT32", E::kInt32},
      {"INT64", E::kInt64},     {"STRING", E::kString},     {"BOOL", E::kBool},
      {"FLOAT16", E::kFloat16}, {"DOUBLE", E::kDouble},     {"UINT32", E::kUint32},
      {"UINT64", E::kUint64},   {"BFLOAT16", E::kBfloat16},
  };
  for (const auto& [n, e] : kNames) {
    if (name == n) return e;
  }
  return std::nullopt;
}

Result<CastAttrs> ParseCast(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  CastAttrs a;
  std::optional<E> to;
  std::string shown;
  if (ctx.version == 1) {
    IDEM_ASSIGN_OR_RETURN(std::string name, r.String("to"));
    to = TypeFromName(name);
    shown = QuoteName(name);
  } else {
    IDEM_ASSIGN_OR_RETURN(int64_t code, r.Int("to"));
    to = ElementTypeFromCode(code);
    shown = std::to_string(code);
  }
  const std::vector<E> allowed = CastTypes(ctx.version);
  if (!to || std::find(allowed.begin(), allowed.end(), *to) == allowed.end()) {
    return InvalidModel(fmt::format("attribute 'to' is {}, not one of the types Cast-{} casts to",
                                    shown, ctx.version));
  }
  a.to = *to;
  if (ctx.version >= 19) {
    IDEM_ASSIGN_OR_RETURN(int64_t saturate, r.IntIn("saturate", 1, {0, 1}));
    a.options.saturate = saturate == 1;
  }
  if (ctx.version >= 24) {
    IDEM_ASSIGN_OR_RETURN(std::string mode,
                          r.StringIn("round_mode", "up", {"up", "down", "nearest"}));
    a.options.rounding = mode == "up"     ? E8M0Rounding::kUp
                         : mode == "down" ? E8M0Rounding::kDown
                                          : E8M0Rounding::kNearest;
  }
  return a;
}

Result<Inference> InferCast(const CastAttrs& a, const Facts& facts) {
  return OneOutput(TensorType(a.to, facts.shape(0)));
}

Result<std::unique_ptr<Kernel>> CreateCast(const CastAttrs& a, const Facts&) {
  return MakeFunctionKernel(a, RunCast);
}

KernelSchema CastSchema(int version) {
  KernelSchema s;
  s.op_type = "Cast";
  s.since_version = version;
  s.inputs = {{"input", "T1"}};
  s.outputs = {{"output", "T2"}};
  const std::vector<E> types = CastTypes(version);
  s.constraints = {{"T1", TensorTypes(types)}, {"T2", TensorTypes(types)}};
  s.attributes = {"to"};
  if (version >= 19) s.attributes.push_back("saturate");
  if (version >= 24) s.attributes.push_back("round_mode");
  s.foldable = true;
  DefineOp<CastAttrs>(s, ParseCast, InferCast, CreateCast);
  return s;
}

// CastLike (15, 19, 21, 23, 24, 25): Cast to the element type of `target_type` (only its type
// is read). Its type sets and attributes are Cast's at the same version (15: Cast-13's).
Result<CastAttrs> ParseCastLike(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  CastAttrs a;
  if (ctx.inputs.size() < 2 || ctx.inputs[1] == nullptr || !ctx.inputs[1]->is_tensor()) {
    return InvalidModel("CastLike needs its input 'target_type' (a tensor)");
  }
  a.to = ctx.inputs[1]->element_type();
  if (ctx.version >= 19) {
    IDEM_ASSIGN_OR_RETURN(int64_t saturate, r.IntIn("saturate", 1, {0, 1}));
    a.options.saturate = saturate == 1;
  }
  if (ctx.version >= 24) {
    IDEM_ASSIGN_OR_RETURN(std::string mode,
                          r.StringIn("round_mode", "up", {"up", "down", "nearest"}));
    a.options.rounding = mode == "up"     ? E8M0Rounding::kUp
                         : mode == "down" ? E8M0Rounding::kDown
                                          : E8M0Rounding::kNearest;
  }
  return a;
}

KernelSchema CastLikeSchema(int version) {
  KernelSchema s;
  s.op_type = "CastLike";
  s.since_version = version;
  s.inputs = {{"input", "T1"}, {"target_type", "T2"}};
  s.outputs = {{"output", "T2"}};
  const std::vector<E> types = CastTypes(version == 15 ? 13 : version);
  s.constraints = {{"T1", TensorTypes(types)}, {"T2", TensorTypes(types)}};
  if (version >= 19) s.attributes.push_back("saturate");
  if (version >= 24) s.attributes.push_back("round_mode");
  s.foldable = true;
  DefineOp<CastAttrs>(s, ParseCastLike, InferCast, CreateCast);
  return s;
}

}  // namespace

void RegisterCastKernels(KernelRegistry& registry) {
  for (int v : {1, 6, 9, 13, 19, 21, 23, 24, 25}) registry.Register(CastSchema(v));
  for (int v : {15, 19, 21, 23, 24, 25}) registry.Register(CastLikeSchema(v));
}

}  // namespace idem
