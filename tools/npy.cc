#include "tools/npy.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>

#include "src/core/text.h"
#include "src/onnx/model_loader.h"

namespace idem::tools {
namespace {

struct Descr {
  const char* code;
  ElementType type;
};

constexpr Descr kDescrs[] = {
    {"b1", ElementType::kBool},      {"i1", ElementType::kInt8},
    {"i2", ElementType::kInt16},     {"i4", ElementType::kInt32},
    {"i8", ElementType::kInt64},     {"u1", ElementType::kUint8},
    {"u2", ElementType::kUint16},    {"u4", ElementType::kUint32},
    {"u8", ElementType::kUint64},    {"f2", ElementType::kFloat16},
    {"f4", ElementType::kFloat},     {"f8", ElementType::kDouble},
    {"c8", ElementType::kComplex64}, {"c16", ElementType::kComplex128},
};

// The header's dict, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// A hand parser for the Python dict literal numpy writes (numpy.lib.format): keys and strings in
// single or double quotes, True/False, and a tuple of non-negative decimal integers. One pass, no
// recursion, no exceptions; anything else is refused with the offset where it went wrong.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  Result<Header> Parse() {
    Header header;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    SkipSpace();
    if (!Eat('{')) return Error("expected '{'");
    while (true) {
      SkipSpace();
      if (Eat('}')) break;
      std::string key;
      IDEM_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      if (!Eat(':')) return Error("expected ':' after a key");
      SkipSpace();
      if (key == "descr") {
        if (seen_descr) return Error("'descr' appears twice");
        seen_descr = true;
        IDEM_RETURN_IF_ERROR(ParseString(&header.descr));
      } else if (key == "fortran_order") {
        if (seen_order) return Error("'fortran_order' appears twice");
        seen_order = true;
        IDEM_RETURN_IF_ERROR(ParseBool(&header.fortran_order));
      } else if (key == "shape") {
        if (seen_shape) return Error("'shape' appears twice");
        seen_shape = true;
        IDEM_RETURN_IF_ERROR(ParseShape(&header.shape));
      } else {
        return Error(fmt::format("unexpected key {}", QuoteName(key)));
      }
      SkipSpace();
      if (Eat(',')) continue;
      if (Eat('}')) break;
      return Error("expected ',' or '}'");
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("text after the closing '}'");
    if (!seen_descr || !seen_order || !seen_shape) {
      return Status(StatusCode::kInvalidArgument,
                    "header must have the keys 'descr', 'fortran_order' and 'shape'");
    }
    return header;
  }

 private:
  Status Error(std::string_view why) const {
    return Status(StatusCode::kInvalidArgument, fmt::format("header: {} at offset {}", why, pos_));
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool EatWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }
  Status ParseString(std::string* out) {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      return Error("expected a quoted string");
    }
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return Error("unterminated string");
    const std::string_view body = text_.substr(pos_, end - pos_);
    if (body.find('\\') != std::string_view::npos) return Error("escapes in strings");
    *out = std::string(body);
    pos_ = end + 1;
    return {};
  }
  Status ParseBool(bool* out) {
    if (EatWord("True")) {
      *out = true;
    } else if (EatWord("False")) {
      *out = false;
    } else {
      return Error("expected True or False");
    }
    return {};
  }
  Status ParseShape(std::vector<int64_t>* shape) {
    if (!Eat('(')) return Error("expected '(' for the shape");
    while (true) {
      SkipSpace();
      if (Eat(')')) return {};
      if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') {
        return Error("a dim must be a non-negative integer");
      }
      uint64_t value = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        const uint64_t digit = static_cast<uint64_t>(text_[pos_] - '0');
        if (value > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - digit) / 10) {
          return Error("a dim overflows int64");
        }
        value = value * 10 + digit;
        ++pos_;
      }
      Eat('L');  // Python 2 longs, as old numpy wrote them
      if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
        return Error("a dim must be an integer");
      }
      shape->push_back(static_cast<int64_t>(value));
      SkipSpace();
      if (Eat(',')) continue;
      if (Eat(')')) return {};
      return Error("expected ',' or ')' in the shape");
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// Parses a decimal width such as "4" or "16" (descr's tail) without overflow.
std::optional<uint64_t> ParseWidth(std::string_view digits) {
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// Reorders `count` cells of `width` bytes from Fortran order (first index fastest) to C order
// (last index fastest), walking the C-order index with an odometer (no recursion on rank).
void FortranToC(const std::byte* in, std::byte* out, std::span<const int64_t> shape, uint64_t count,
                size_t width) {
  const size_t rank = shape.size();
  std::vector<uint64_t> stride(rank, 1);  // Fortran strides, in cells
  for (size_t d = 1; d < rank; ++d) stride[d] = stride[d - 1] * static_cast<uint64_t>(shape[d - 1]);
  std::vector<int64_t> coord(rank, 0);
  uint64_t offset = 0;
  for (uint64_t c = 0; c < count; ++c) {
    std::memcpy(out + c * width, in + offset * width, width);
    for (size_t d = rank; d-- > 0;) {
      offset += stride[d];
      if (++coord[d] < shape[d]) break;
      offset -= static_cast<uint64_t>(shape[d]) * stride[d];
      coord[d] = 0;
    }
  }
}

}  // namespace

Result<Value> ReadNpy(const std::string& path) {
  auto bad = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument, fmt::format("{}: {}", path, why));
  };
  IDEM_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path, uint64_t{1} << 40));
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    return bad("not a .npy file (bad magic)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("truncated header");
    for (int i = 0; i < 4; ++i) {
      header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    }
    header_start = 12;
  } else {
    return bad(fmt::format("unsupported .npy version {}", major));
  }
  if (header_len > bytes.size() - header_start) {
    return bad(fmt::format("header length {} runs past the end of the file ({} bytes)", header_len,
                           bytes.size()));
  }
  auto parsed = HeaderParser(std::string_view(bytes).substr(header_start, header_len)).Parse();
  if (!parsed.ok()) return std::move(parsed).take_status().WithContext(path);
  Header header = std::move(parsed).value();

  // descr: byte order, kind letter, width in bytes ("<f4", "|u1", "|S12").
  const std::string& descr = header.descr;
  if (descr.size() < 3 || std::string_view("<>|=").find(descr[0]) == std::string_view::npos ||
      !std::isalpha(static_cast<unsigned char>(descr[1]))) {
    return bad(fmt::format("dtype {} is not supported", QuoteName(descr)));
  }
  const char order = descr[0];
  const char kind = descr[1];
  const auto width = ParseWidth(std::string_view(descr).substr(2));
  if (!width || *width == 0)
    return bad(fmt::format("dtype {} has no valid width", QuoteName(descr)));

  // Element count: the product of the non-zero dims must fit in int64 whatever their order (the
  // rule Value::MakeTensor applies).
  uint64_t nonzero_product = 1;
  bool has_zero = false;
  for (int64_t d : header.shape) {
    if (d == 0) {
      has_zero = true;
      continue;
    }
    if (nonzero_product >
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(d)) {
      return bad(fmt::format("the product of the shape ({}) overflows int64",
                             fmt::join(header.shape, ", ")));
    }
    nonzero_product *= static_cast<uint64_t>(d);
  }
  const uint64_t count = has_zero ? 0 : nonzero_product;
  const size_t data_start = header_start + header_len;
  const size_t available = bytes.size() - data_start;

  if (kind == 'S') {
    const uint64_t n = *width;
    if (count > available / n || count * n != available) {
      return bad(fmt::format("payload holds {} bytes, shape needs {} strings of {} bytes",
                             available, count, n));
    }
    std::string reordered;
    std::string_view cells = std::string_view(bytes).substr(data_start);
    if (header.fortran_order && header.shape.size() > 1) {
      reordered.resize(available);
      FortranToC(reinterpret_cast<const std::byte*>(cells.data()),
                 reinterpret_cast<std::byte*>(reordered.data()), header.shape, count,
                 static_cast<size_t>(n));
      cells = reordered;
    }
    std::vector<std::string> strings;
    strings.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      std::string_view s = cells.substr(i * n, n);
      const size_t end = s.find_last_not_of('\0');
      strings.emplace_back(end == std::string_view::npos ? std::string_view()
                                                         : s.substr(0, end + 1));
    }
    return Value::MakeStringTensor(std::move(header.shape), std::move(strings));
  }
  if (order == '>' && *width > 1) return bad("big-endian arrays are not supported");
  const std::string code = fmt::format("{}{}", kind, *width);
  for (const Descr& d : kDescrs) {
    if (code != d.code) continue;
    auto needed = PackedByteSize(d.type, count);
    if (!needed || *needed != available) {
      return bad(
          fmt::format("payload holds {} bytes, shape needs {}", available, needed ? *needed : 0));
    }
    if (d.type == ElementType::kBool) {
      // numpy stores bools as bytes 0/1; any other byte would be a bool no kernel expects (it
      // prints as true but is written back as that byte): refused, not misread.
      const std::string_view cells = std::string_view(bytes).substr(data_start);
      if (const size_t at = cells.find_first_not_of(std::string_view("\0\1", 2));
          at != std::string_view::npos) {
        return bad(fmt::format("bool element {} is byte {}, not 0 or 1", at,
                               static_cast<unsigned char>(cells[at])));
      }
    }
    if (header.fortran_order && header.shape.size() > 1 && count > 1) {
      // Transposed into C order: idem's tensors are row-major.
      std::byte* out = nullptr;
      IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(available, &out));
      FortranToC(reinterpret_cast<const std::byte*>(bytes.data() + data_start), out, header.shape,
                 count, static_cast<size_t>(*width));
      return Value::MakeTensor(d.type, std::move(header.shape), std::move(buffer));
    }
    auto owner = std::make_shared<std::string>(std::move(bytes));
    return Value::MakeTensor(d.type, std::move(header.shape),
                             Buffer::Shared(owner, owner->data() + data_start, available));
  }
  return bad(fmt::format("dtype {} is not supported", QuoteName(descr)));
}

}  // namespace idem::tools
