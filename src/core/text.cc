#include "src/core/text.h"

#include <fmt/format.h>

#include <cstdint>

namespace idem {
namespace {

// Length of the valid UTF-8 sequence starting at text[i] (2..4), or 0 when it is not one.
// Rejects overlong forms, surrogates and code points above U+10FFFF.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
    cp = b0 & 0x1fu;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    cp = b0 & 0x0fu;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    cp = b0 & 0x07u;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if ((b & 0xc0u) != 0x80u) return 0;
    cp = (cp << 6) | (b & 0x3fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  return n;
}

void Append(std::string& out, std::string_view text, bool keep_newlines, bool quote_mode) {
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\n' && keep_newlines) {
        out += '\n';
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c == 0x7f) {
        out += fmt::format("\\x{:02x}", c);
      } else if (quote_mode && (c == '\'' || c == '\\')) {
        out += '\\';
        out += static_cast<char>(c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const size_t n = Utf8SequenceLength(text, i);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
      continue;
    }
    uint32_t cp = 0;
    if (n == 3) {
      cp = ((c & 0x0fu) << 12) | ((static_cast<unsigned char>(text[i + 1]) & 0x3fu) << 6) |
           (static_cast<unsigned char>(text[i + 2]) & 0x3fu);
    }
    if (n == 2 && c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
      // U+0080..U+009F: C1 controls (U+009B is a CSI on some terminals).
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));
    } else if ((cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) {
      // Line/paragraph separators and bidirectional overrides: they would reorder or split
      // what the reader sees.
      out += fmt::format("\\u{:04x}", cp);
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
}

}  // namespace

std::string EscapeText(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  Append(out, text, keep_newlines, /*quote_mode=*/false);
  return out;
}

std::string QuoteName(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  out += '\'';
  Append(out, name, /*keep_newlines=*/false, /*quote_mode=*/true);
  out += '\'';
  return out;
}

}  // namespace idem
