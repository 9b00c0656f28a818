// Safe printing of file-controlled text (names, locations) in messages.
//
// A name in an ONNX file may hold any bytes: a newline would forge a second `error:` line in the
// CLI's output and an escape sequence would reach the terminal. Every message that prints such a
// name goes through QuoteName; Status messages are additionally passed through EscapeText when
// they are built, so no Status message ever holds a control character (a backstop for messages
// that print names without QuoteName).
#ifndef IDEM_SRC_CORE_TEXT_H_
#define IDEM_SRC_CORE_TEXT_H_

#include <string>
#include <string_view>

namespace idem {

// Copies `text`, escaping what must not reach a terminal or a log line raw: ASCII control
// characters and DEL (\n, \r, \t, \xNN), C1 controls U+0080..U+009F, line/paragraph separators
// and bidirectional controls U+2028..U+202E, U+2066..U+2069 (\uXXXX), and bytes that are not
// valid UTF-8 (\xNN). Valid printable UTF-8 (including non-ASCII letters) is kept as is.
// `keep_newlines` keeps '\n' raw (for multi-line reports such as Session::Describe).
std::string EscapeText(std::string_view text, bool keep_newlines = false);

// "'name'" with EscapeText's escapes plus \' and \\ so that the quotes are unambiguous; the
// empty name is printed as ''.
std::string QuoteName(std::string_view name);

}  // namespace idem

#endif  // IDEM_SRC_CORE_TEXT_H_
