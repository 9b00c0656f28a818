// DescribeDifference: how two values differ, bit for bit (what `idem test` reports).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "idem/value.h"

namespace idem {

namespace {

std::string ShapeString(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

std::string DescribeTensorDifference(const Tensor& e, const Tensor& a) {
  if (e.element_type() != a.element_type()) {
    return fmt::format("element type: expected {}, got {}", ElementTypeName(e.element_type()),
                       ElementTypeName(a.element_type()));
  }
  if (!std::equal(e.shape().begin(), e.shape().end(), a.shape().begin(), a.shape().end())) {
    return fmt::format("shape: expected {}, got {}", ShapeString(e.shape()),
                       ShapeString(a.shape()));
  }
  if (e.element_type() == ElementType::kString) {
    for (size_t i = 0; i < e.strings().size(); ++i) {
      if (e.strings()[i] != a.strings()[i]) {
        return fmt::format("element {}: strings differ ({} vs {} bytes)", i, e.strings()[i].size(),
                           a.strings()[i].size());
      }
    }
    return {};
  }
  const int bits = ElementBits(e.element_type());
  const auto eb = e.data().bytes();
  const auto ab = a.data().bytes();
  if (bits < 8) {
    // Compare element by element so the padding bits of the last byte never matter.
    const int per_byte = 8 / bits;
    const unsigned mask = (1u << bits) - 1;
    for (int64_t i = 0; i < e.element_count(); ++i) {
      const int shift = static_cast<int>(i % per_byte) * bits;
      const unsigned ev = (std::to_integer<unsigned>(eb[i / per_byte]) >> shift) & mask;
      const unsigned av = (std::to_integer<unsigned>(ab[i / per_byte]) >> shift) & mask;
      if (ev != av) return fmt::format("element {}: expected 0x{:x}, got 0x{:x}", i, ev, av);
    }
    return {};
  }
  const size_t width = static_cast<size_t>(bits / 8);
  if (eb.size() == ab.size() && (eb.empty() || std::memcmp(eb.data(), ab.data(), eb.size()) == 0)) {
    return {};
  }
  for (size_t i = 0; i < eb.size() && i < ab.size(); i += width) {
    if (std::memcmp(eb.data() + i, ab.data() + i, width) != 0) {
      std::string ex, ax;
      for (size_t k = width; k-- > 0;) {
        ex += fmt::format("{:02x}", std::to_integer<unsigned>(eb[i + k]));
        ax += fmt::format("{:02x}", std::to_integer<unsigned>(ab[i + k]));
      }
      return fmt::format("element {}: expected bits 0x{}, got 0x{}", i / width, ex, ax);
    }
  }
  return "payload sizes differ";
}

}  // namespace

std::optional<std::string> DescribeDifference(const Value& expected, const Value& actual) {
  if (expected.is_null() || actual.is_null()) {
    if (expected.is_null() && actual.is_null()) return std::nullopt;
    return std::string("one value is missing");
  }
  if (expected.kind() != actual.kind()) {
    return fmt::format("kind: expected {}, got {}", expected.type().ToString(),
                       actual.type().ToString());
  }
  switch (expected.kind()) {
    case ValueKind::kTensor: {
      std::string why = DescribeTensorDifference(expected.tensor(), actual.tensor());
      if (why.empty()) return std::nullopt;
      return why;
    }
    case ValueKind::kSequence: {
      const Sequence& e = expected.sequence();
      const Sequence& a = actual.sequence();
      if (e.element_type() != a.element_type()) {
        return fmt::format("sequence element type: expected {}, got {}",
                           ElementTypeName(e.element_type()), ElementTypeName(a.element_type()));
      }
      if (e.size() != a.size()) {
        return fmt::format("sequence length: expected {}, got {}", e.size(), a.size());
      }
      for (size_t i = 0; i < e.size(); ++i) {
        if (auto why = DescribeDifference(e.at(i), a.at(i))) {
          return fmt::format("sequence item {}: {}", i, *why);
        }
      }
      return std::nullopt;
    }
    case ValueKind::kOptional: {
      const Optional& e = expected.optional();
      const Optional& a = actual.optional();
      if (e.has_value() != a.has_value()) {
        return fmt::format("optional: expected {}, got {}", e.has_value() ? "a value" : "empty",
                           a.has_value() ? "a value" : "empty");
      }
      if (!e.has_value()) {
        // An empty optional's declared element type may be undefined in test data; compare kinds
        // only when both sides know theirs.
        const Type& et = e.element_type();
        const Type& at = a.element_type();
        if (et.is_tensor() && et.element_type() == ElementType::kUndefined) return std::nullopt;
        if (at.is_tensor() && at.element_type() == ElementType::kUndefined) return std::nullopt;
        if (!et.SameStructure(at)) {
          return fmt::format("empty optional type: expected {}, got {}", et.ToString(),
                             at.ToString());
        }
        return std::nullopt;
      }
      if (auto why = DescribeDifference(e.value(), a.value())) {
        return fmt::format("optional value: {}", *why);
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace idem
