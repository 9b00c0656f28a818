// Errors as values. Every fallible idem call returns a Status or a Result<T>; idem never throws
// across its public API and never aborts on bad input.
//
// A message names what broke and where, outermost context first, e.g.
//   model.onnx: node 'id0' (Identity-13): input 'x' is seq(tensor(float)); Identity-13 accepts
//   tensors only (sequences need opset >= 14)
// Context is prepended with WithContext() as an error travels outwards.
#ifndef IDEM_STATUS_H_
#define IDEM_STATUS_H_

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "idem/export.h"

namespace idem {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // a caller-supplied value (feed, option) is wrong
  kInvalidModel,       // the model file or graph breaks an ONNX rule
  kUnsupported,        // valid ONNX that idem does not implement (operator, opset, IR version)
  kNotFound,           // a named thing (file, input, output) does not exist
  kOutOfRange,         // an index or a size is outside what is allowed
  kResourceExhausted,  // a configured limit was hit
  kIoError,            // the operating system refused a read or write
  kRuntimeError,       // an operator's run-time precondition failed (e.g. empty optional)
  kInternal,           // a bug in idem
  kCancelled,          // the caller cancelled the run (RunOptions::cancel)
  kDeadlineExceeded,   // the run passed RunOptions::deadline
};

IDEM_API std::string_view StatusCodeName(StatusCode code);

class IDEM_API [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  // Control characters and invalid UTF-8 in `message` are escaped (see src/core/text.h), so a
  // message is always one printable line whatever names a file holds.
  Status(StatusCode code, std::string message);

  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns this error with "context: " prepended (no-op on OK); `context` is escaped likewise.
  Status WithContext(std::string_view context) &&;

  // "<code name>: <message>" for logs; "OK" when ok.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a T or a non-OK Status. Accessing value() of an error is a programming bug (asserts).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : state_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(state_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(state_);
  }
  Status take_status() && { return ok() ? Status() : std::get<Status>(std::move(state_)); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> state_;
};

// Builds a Status from fmt-style arguments without pulling fmt into public headers.
IDEM_API Status MakeError(StatusCode code, std::string message);

}  // namespace idem

// Propagation helpers for idem's own sources.
#define IDEM_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::idem::Status idem_status_ = (expr);        \
    if (!idem_status_.ok()) return idem_status_; \
  } while (false)

#define IDEM_CONCAT_INNER_(a, b) a##b
#define IDEM_CONCAT_(a, b) IDEM_CONCAT_INNER_(a, b)
#define IDEM_ASSIGN_OR_RETURN(lhs, expr) \
  IDEM_ASSIGN_OR_RETURN_IMPL_(IDEM_CONCAT_(idem_result_, __LINE__), lhs, expr)
#define IDEM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)   \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()

#endif  // IDEM_STATUS_H_
