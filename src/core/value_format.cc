// FormatValue: values as text (nested brackets, elements as numbers), without recursion on a
// rank or nesting the file controls.
#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <string>

#include "idem/value.h"
#include "src/core/float_convert.h"

namespace idem {

namespace {

template <typename T>
T Load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string FormatElement(const Tensor& t, int64_t i) {
  const std::byte* p = t.data().data();
  switch (t.element_type()) {
    case ElementType::kFloat:
      return fmt::format("{}", Load<float>(p + 4 * i));
    case ElementType::kDouble:
      return fmt::format("{}", Load<double>(p + 8 * i));
    case ElementType::kFloat16:
      return fmt::format("{}", HalfToFloat(Load<uint16_t>(p + 2 * i)));
    case ElementType::kBfloat16:
      return fmt::format("{}", std::bit_cast<float>(uint32_t{Load<uint16_t>(p + 2 * i)} << 16));
    case ElementType::kUint8:
      return fmt::format("{}", Load<uint8_t>(p + i));
    case ElementType::kInt8:
      return fmt::format("{}", Load<int8_t>(p + i));
    case ElementType::kUint16:
      return fmt::format("{}", Load<uint16_t>(p + 2 * i));
    case ElementType::kInt16:
      return fmt::format("{}", Load<int16_t>(p + 2 * i));
    case ElementType::kUint32:
      return fmt::format("{}", Load<uint32_t>(p + 4 * i));
    case ElementType::kInt32:
      return fmt::format("{}", Load<int32_t>(p + 4 * i));
    case ElementType::kUint64:
      return fmt::format("{}", Load<uint64_t>(p + 8 * i));
    case ElementType::kInt64:
      return fmt::format("{}", Load<int64_t>(p + 8 * i));
    case ElementType::kBool:
      return Load<uint8_t>(p + i) ? "true" : "false";
    case ElementType::kComplex64:
      return fmt::format("({}{:+}j)", Load<float>(p + 8 * i), Load<float>(p + 8 * i + 4));
    case ElementType::kComplex128:
      return fmt::format("({}{:+}j)", Load<double>(p + 16 * i), Load<double>(p + 16 * i + 8));
    case ElementType::kString: {
      std::string out = "\"";
      for (unsigned char c : t.strings()[static_cast<size_t>(i)]) {
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
          out += static_cast<char>(c);
        } else {
          out += fmt::format("\\x{:02x}", c);
        }
      }
      return out + "\"";
    }
    case ElementType::kUint4:
    case ElementType::kInt4:
    case ElementType::kUint2:
    case ElementType::kInt2: {
      const int bits = ElementBits(t.element_type());
      const int per_byte = 8 / bits;
      const unsigned raw =
          (std::to_integer<unsigned>(p[i / per_byte]) >> (static_cast<int>(i % per_byte) * bits)) &
          ((1u << bits) - 1);
      const bool is_signed =
          t.element_type() == ElementType::kInt4 || t.element_type() == ElementType::kInt2;
      const int value = is_signed && (raw >> (bits - 1)) ? static_cast<int>(raw) - (1 << bits)
                                                         : static_cast<int>(raw);
      return fmt::format("{}", value);
    }
    case ElementType::kFloat4E2M1: {
      const unsigned raw = (std::to_integer<unsigned>(p[i / 2]) >> ((i % 2) * 4)) & 0xfu;
      return fmt::format("0x{:x}", raw);
    }
    default:  // float8 variants: show the bit pattern
      return fmt::format("0x{:02x}", std::to_integer<unsigned>(p[i]));
  }
}

// Prints a tensor as nested brackets without recursion: the rank comes from the file (tens of
// thousands of dims of size 1 once crashed a recursive version). Elements are visited in C order
// with an odometer over the dims; between two elements, the dims that wrapped close and reopen.
// After the last printed element, each still-open level with items left gets "...".
void FormatTensor(const Tensor& t, size_t max_elements, std::string& out) {
  if (t.rank() == 0) {
    out += FormatElement(t, 0);
    return;
  }
  if (t.element_count() == 0) {
    // No elements: "[]" whatever the shape. Walking the dims instead would loop over every
    // outer index of e.g. [1610612735, 0] (fuzz_value regression).
    out += "[]";
    return;
  }
  const size_t rank = t.rank();
  const auto shape = t.shape();
  const int64_t shown = static_cast<int64_t>(
      std::min<uint64_t>(static_cast<uint64_t>(t.element_count()), max_elements));
  if (shown == 0) {
    out += "[...]";
    return;
  }
  std::vector<int64_t> coord(rank, 0);
  out.append(rank, '[');
  for (int64_t index = 0; index < shown; ++index) {
    if (index > 0) {
      // Advance the odometer; `wrapped` dims went back to 0.
      size_t wrapped = 0;
      for (size_t d = rank; d-- > 0;) {
        if (++coord[d] < shape[d]) break;
        coord[d] = 0;
        ++wrapped;
      }
      out.append(wrapped, ']');
      out += ", ";
      out.append(wrapped, '[');
    }
    out += FormatElement(t, index);
  }
  for (size_t d = rank; d-- > 0;) {
    if (coord[d] + 1 < shape[d]) out += "...";
    out += ']';
  }
}

}  // namespace

std::string FormatValue(const Value& value, size_t max_elements) {
  if (value.is_null()) return "<null>";
  switch (value.kind()) {
    case ValueKind::kTensor: {
      std::string out;
      FormatTensor(value.tensor(), max_elements, out);
      return out;
    }
    case ValueKind::kSequence: {
      std::string out = "seq{";
      const Sequence& s = value.sequence();
      for (size_t i = 0; i < s.size(); ++i) {
        if (i == 4) {
          out += fmt::format(", ... ({} more)", s.size() - 4);
          break;
        }
        if (i) out += ", ";
        out += FormatValue(s.at(i), max_elements);
      }
      return out + "}";
    }
    case ValueKind::kOptional:
      return value.optional().has_value()
                 ? fmt::format("optional{{{}}}",
                               FormatValue(value.optional().value(), max_elements))
                 : std::string("optional{empty}");
  }
  return "?";
}

}  // namespace idem
