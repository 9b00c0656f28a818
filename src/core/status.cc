#include "idem/status.h"

#include <string>

#include "src/core/text.h"

namespace idem {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kInvalidModel:
      return "INVALID_MODEL";
    case StatusCode::kUnsupported:
      return "UNSUPPORTED";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kIoError:
      return "IO_ERROR";
    case StatusCode::kRuntimeError:
      return "RUNTIME_ERROR";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kCancelled:
      return "CANCELLED";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
  }
  return "UNKNOWN";
}

namespace {

// Whether EscapeText would change `text` (a fast scan: plain ASCII is the common case).
bool NeedsEscape(std::string_view text) {
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f) return true;
  }
  return false;
}

std::string Sanitize(std::string text) {
  return NeedsEscape(text) ? EscapeText(text) : std::move(text);
}

}  // namespace

Status::Status(StatusCode code, std::string message)
    : code_(code), message_(Sanitize(std::move(message))) {}

Status Status::WithContext(std::string_view context) && {
  if (!ok()) message_ = Sanitize(std::string(context)) + ": " + message_;
  return std::move(*this);
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status MakeError(StatusCode code, std::string message) { return {code, std::move(message)}; }

}  // namespace idem
