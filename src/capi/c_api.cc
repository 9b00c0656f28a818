// The C API (include/idem/c_api.h) over the C++ API.
//
// Contracts kept here: every entry point is noexcept and catches everything (allocation failure
// included) into a status; every handle starts with a magic tag that is checked before use, so a
// NULL handle or a handle of another kind is an IDEM_INVALID_ARGUMENT status, never a crash.
#include "idem/c_api.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "idem/idem.h"
#include "src/core/text.h"

namespace {

// Tags at offset 0 of each handle. A released handle gets kDeadMagic (best effort: using a
// released handle is undefined behaviour, but a quick reuse then fails cleanly).
constexpr uint32_t kStatusMagic = 0x49535441;      // "ISTA"
constexpr uint32_t kOptionsMagic = 0x494f5054;     // "IOPT"
constexpr uint32_t kSessionMagic = 0x49534553;     // "ISES"
constexpr uint32_t kValueMagic = 0x4956414c;       // "IVAL"
constexpr uint32_t kRunOptionsMagic = 0x4952554e;  // "IRUN"
constexpr uint32_t kDeadMagic = 0xdeadbeef;

// FromStatus converts codes with a cast: every idem::StatusCode must have the same number here.
// (Adding a StatusCode after kDeadlineExceeded must add an IDEM_ code and an assert here.)
static_assert(static_cast<int>(idem::StatusCode::kOk) == IDEM_OK);
static_assert(static_cast<int>(idem::StatusCode::kInvalidArgument) == IDEM_INVALID_ARGUMENT);
static_assert(static_cast<int>(idem::StatusCode::kInvalidModel) == IDEM_INVALID_MODEL);
static_assert(static_cast<int>(idem::StatusCode::kUnsupported) == IDEM_UNSUPPORTED);
static_assert(static_cast<int>(idem::StatusCode::kNotFound) == IDEM_NOT_FOUND);
static_assert(static_cast<int>(idem::StatusCode::kOutOfRange) == IDEM_OUT_OF_RANGE);
static_assert(static_cast<int>(idem::StatusCode::kResourceExhausted) == IDEM_RESOURCE_EXHAUSTED);
static_assert(static_cast<int>(idem::StatusCode::kIoError) == IDEM_IO_ERROR);
static_assert(static_cast<int>(idem::StatusCode::kRuntimeError) == IDEM_RUNTIME_ERROR);
static_assert(static_cast<int>(idem::StatusCode::kInternal) == IDEM_INTERNAL);
static_assert(static_cast<int>(idem::StatusCode::kCancelled) == IDEM_CANCELLED);
static_assert(static_cast<int>(idem::StatusCode::kDeadlineExceeded) == IDEM_DEADLINE_EXCEEDED);
static_assert(static_cast<int>(idem::ValueKind::kOptional) == IDEM_VALUE_OPTIONAL);
static_assert(idem::kMaxElementTypeCode == IDEM_ELEMENT_INT2);

}  // namespace

struct idem_status_t {
  uint32_t magic = kStatusMagic;
  idem_status_code_t code = IDEM_INTERNAL;
  std::string message;
  bool is_static = false;  // the preallocated out-of-memory status: never freed
};

struct idem_session_options_t {
  uint32_t magic = kOptionsMagic;
  idem::SessionOptions options;
};

struct idem_session_t {
  idem_session_t(idem::Session s, std::vector<std::string> in, std::vector<std::string> out)
      : session(std::move(s)), input_types(std::move(in)), output_types(std::move(out)) {}
  uint32_t magic = kSessionMagic;
  idem::Session session;
  // Type strings computed once, so the pointers handed out live as long as the session.
  std::vector<std::string> input_types;
  std::vector<std::string> output_types;
};

struct idem_run_options_t {
  uint32_t magic = kRunOptionsMagic;
  // Atomics: cancel and the timeout setters may race with runs reading them (see c_api.h).
  std::atomic<bool> cancel{false};
  std::atomic<bool> has_timeout{false};
  std::atomic<uint64_t> timeout_ns{0};
};

struct idem_value_t {
  explicit idem_value_t(idem::Value v) : value(std::move(v)) {}
  uint32_t magic = kValueMagic;
  idem::Value value;
};

namespace {

idem_status_t* OutOfMemory() noexcept {
  // Constructed on first use; "out of memory" fits the small-string buffer, so no allocation.
  static idem_status_t oom = [] {
    idem_status_t s;
    s.code = IDEM_RESOURCE_EXHAUSTED;
    s.message = "out of memory";
    s.is_static = true;
    return s;
  }();
  return &oom;
}

idem_status_t* MakeStatus(idem_status_code_t code, const std::string& message) noexcept {
  try {
    auto* s = new idem_status_t;
    s->code = code;
    // As every idem::Status message: one printable line whatever names the model holds
    // (EscapeText leaves already-escaped text unchanged).
    s->message = idem::EscapeText(message);
    return s;
  } catch (...) {
    return OutOfMemory();
  }
}

idem_status_t* MakeStatus(idem_status_code_t code, const char* message) noexcept {
  try {
    return MakeStatus(code, std::string(message));
  } catch (...) {
    return OutOfMemory();
  }
}

idem_status_t* FromStatus(const idem::Status& status) noexcept {
  if (status.ok()) return nullptr;
  try {
    return MakeStatus(static_cast<idem_status_code_t>(status.code()), status.message());
  } catch (...) {
    return OutOfMemory();
  }
}

// Runs `body` (which returns idem_status_t*), turning any exception into a status.
// `body` receives the C function's name for its messages (__func__ inside a lambda is
// "operator()").
template <typename F>
idem_status_t* Guard(const char* function, F&& body) noexcept {
  try {
    return body(function);
  } catch (const std::bad_alloc&) {
    return MakeStatus(IDEM_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::length_error&) {
    return MakeStatus(IDEM_RESOURCE_EXHAUSTED, "out of memory (length error)");
  } catch (const std::exception& e) {
    return MakeStatus(IDEM_INTERNAL, std::string("unexpected exception: ") + e.what());
  } catch (...) {
    return MakeStatus(IDEM_INTERNAL, "unexpected exception");
  }
}

// True when `handle` is non-null and tagged `magic`. Reads the tag bytewise, which is defined
// whatever the handle's actual type.
bool HasMagic(const void* handle, uint32_t magic) {
  if (handle == nullptr) return false;
  uint32_t tag;
  std::memcpy(&tag, handle, sizeof(tag));
  return tag == magic;
}

idem_status_t* BadHandle(const char* function, const char* what, const void* handle) {
  return MakeStatus(IDEM_INVALID_ARGUMENT,
                    std::string(function) + ": " + what +
                        (handle == nullptr ? " is NULL" : " is not a valid handle of its kind"));
}

idem_status_t* NullOut(const char* function, const char* what) {
  return MakeStatus(IDEM_INVALID_ARGUMENT, std::string(function) + ": " + what + " is NULL");
}

#define IDEM_CHECK_HANDLE(handle, magic, what) \
  if (!HasMagic(handle, magic)) return BadHandle(fn, what, handle)
#define IDEM_CHECK_OUT(ptr) \
  if ((ptr) == nullptr) return NullOut(fn, #ptr)

// Wraps a C++ value in a new handle.
idem_value_t* NewValue(idem::Value value) { return new idem_value_t(std::move(value)); }

idem_status_t* Created(idem::Result<idem::Value> result, idem_value_t** out) {
  if (!result.ok()) return FromStatus(result.status());
  *out = NewValue(std::move(result).value());
  return nullptr;
}

idem_status_t* ReadDims(const char* function, const int64_t* dims, size_t rank,
                        std::vector<int64_t>* shape) {
  if (rank > 0 && dims == nullptr) {
    return MakeStatus(IDEM_INVALID_ARGUMENT,
                      std::string(function) + ": dims is NULL with rank " + std::to_string(rank));
  }
  shape->assign(dims, dims + rank);
  return nullptr;
}

// Checks and returns a tensor handle's tensor (nullptr and *error when not a tensor).
const idem::Tensor* TensorOf(const idem_value_t* value, const char* function,
                             idem_status_t** error) {
  if (!HasMagic(value, kValueMagic)) {
    *error = BadHandle(function, "value", value);
    return nullptr;
  }
  if (!value->value.is_tensor()) {
    *error =
        MakeStatus(IDEM_INVALID_ARGUMENT, std::string(function) + ": value is " +
                                              value->value.type().ToString() + ", not a tensor");
    return nullptr;
  }
  return &value->value.tensor();
}

idem_status_t* KindError(const char* function, const idem_value_t* value, const char* kind) {
  return MakeStatus(IDEM_INVALID_ARGUMENT, std::string(function) + ": value is " +
                                               value->value.type().ToString() + ", not " + kind);
}

// Copies `n_inputs` value handles (the array parameter `what`) into `feeds`, checking each.
idem_status_t* CollectFeeds(const char* function, const char* what,
                            const idem_value_t* const* inputs, size_t n_inputs,
                            std::vector<idem::Value>* feeds) {
  if (n_inputs > 0 && inputs == nullptr) {
    return MakeStatus(IDEM_INVALID_ARGUMENT, std::string(function) + ": " + what +
                                                 " is NULL with count " + std::to_string(n_inputs));
  }
  feeds->reserve(n_inputs);
  for (size_t i = 0; i < n_inputs; ++i) {
    if (!HasMagic(inputs[i], kValueMagic)) {
      return BadHandle(function, (std::string(what) + "[" + std::to_string(i) + "]").c_str(),
                       inputs[i]);
    }
    feeds->push_back(inputs[i]->value);
  }
  return nullptr;
}

idem_status_t* CreateSession(idem::Result<idem::Session> created, idem_session_t** out) {
  if (!created.ok()) return FromStatus(created.status());
  std::vector<std::string> in, out_types;
  for (const idem::ValueInfo& info : created->inputs()) in.push_back(info.type.ToString());
  for (const idem::ValueInfo& info : created->outputs()) out_types.push_back(info.type.ToString());
  *out = new idem_session_t(std::move(created).value(), std::move(in), std::move(out_types));
  return nullptr;
}

const idem::SessionOptions& OptionsOr(const idem_session_options_t* options) {
  static const idem::SessionOptions kDefaults;
  return options == nullptr ? kDefaults : options->options;
}

}  // namespace

// The functions below are declared extern "C" in c_api.h, so their definitions have C linkage.

// ---- Version ---------------------------------------------------------------------------------

const char* idem_version(void) { return IDEM_VERSION_STRING; }

// ---- Status ----------------------------------------------------------------------------------

idem_status_code_t idem_status_code(const idem_status_t* status) {
  if (status == nullptr) return IDEM_OK;
  if (!HasMagic(status, kStatusMagic)) return IDEM_INVALID_ARGUMENT;
  return status->code;
}

const char* idem_status_message(const idem_status_t* status) {
  if (status == nullptr) return "";
  if (!HasMagic(status, kStatusMagic)) return "idem_status_message: not a status handle";
  return status->message.c_str();
}

void idem_status_release(idem_status_t* status) {
  if (!HasMagic(status, kStatusMagic) || status->is_static) return;
  status->magic = kDeadMagic;
  delete status;
}

// ---- Session options -------------------------------------------------------------------------

idem_status_t* idem_session_options_create(idem_session_options_t** out_options) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_OUT(out_options);
    *out_options = new idem_session_options_t;
    return nullptr;
  });
}

void idem_session_options_release(idem_session_options_t* options) {
  if (!HasMagic(options, kOptionsMagic)) return;
  options->magic = kDeadMagic;
  delete options;
}

namespace {

// The field behind `limit`, as a pointer to either a uint64_t or an int (the other is null).
struct LimitField {
  uint64_t* u64 = nullptr;
  int* i32 = nullptr;
};

LimitField FieldOf(idem::Limits& limits, int32_t limit) {
  switch (limit) {
    case IDEM_LIMIT_MAX_MODEL_BYTES:
      return {&limits.max_model_bytes, nullptr};
    case IDEM_LIMIT_MAX_TENSOR_BYTES:
      return {&limits.max_tensor_bytes, nullptr};
    case IDEM_LIMIT_MAX_ELEMENTS:
      return {&limits.max_elements, nullptr};
    case IDEM_LIMIT_MAX_TYPE_DEPTH:
      return {nullptr, &limits.max_type_depth};
    case IDEM_LIMIT_MAX_NODES:
      return {&limits.max_nodes, nullptr};
    case IDEM_LIMIT_MAX_VALUES:
      return {&limits.max_values, nullptr};
    case IDEM_LIMIT_MAX_SEQUENCE_LENGTH:
      return {&limits.max_sequence_length, nullptr};
    case IDEM_LIMIT_MAX_GRAPH_DEPTH:
      return {nullptr, &limits.max_graph_depth};
    case IDEM_LIMIT_MAX_RUN_BYTES:
      return {&limits.max_run_bytes, nullptr};
  }
  return {};
}

idem_status_t* UnknownLimit(const char* function, int32_t limit) {
  return MakeStatus(IDEM_INVALID_ARGUMENT,
                    std::string(function) + ": unknown limit " + std::to_string(limit));
}

}  // namespace

idem_status_t* idem_session_options_set_limit(idem_session_options_t* options, int32_t limit,
                                              uint64_t value) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(options, kOptionsMagic, "options");
    LimitField field = FieldOf(options->options.limits, limit);
    if (field.u64 != nullptr) {
      *field.u64 = value;
    } else if (field.i32 != nullptr) {
      if (value > static_cast<uint64_t>(INT_MAX)) {
        return MakeStatus(IDEM_INVALID_ARGUMENT,
                          std::string(fn) + ": limit " + std::to_string(limit) + " is at most " +
                              std::to_string(INT_MAX) + ", got " + std::to_string(value));
      }
      *field.i32 = static_cast<int>(value);
    } else {
      return UnknownLimit(fn, limit);
    }
    return nullptr;
  });
}

idem_status_t* idem_session_options_get_limit(const idem_session_options_t* options, int32_t limit,
                                              uint64_t* out_value) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(options, kOptionsMagic, "options");
    IDEM_CHECK_OUT(out_value);
    idem::Limits limits = options->options.limits;
    LimitField field = FieldOf(limits, limit);
    if (field.u64 != nullptr) {
      *out_value = *field.u64;
    } else if (field.i32 != nullptr) {
      *out_value = static_cast<uint64_t>(*field.i32);
    } else {
      return UnknownLimit(fn, limit);
    }
    return nullptr;
  });
}

idem_status_t* idem_session_options_set_eliminate_identity(idem_session_options_t* options,
                                                           int enabled) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(options, kOptionsMagic, "options");
    options->options.eliminate_identity = enabled != 0;
    return nullptr;
  });
}

idem_status_t* idem_session_options_set_external_data_mode(idem_session_options_t* options,
                                                           int32_t mode) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(options, kOptionsMagic, "options");
    switch (mode) {
      case IDEM_EXTERNAL_DATA_MAP:
        options->options.external_data = idem::ExternalDataMode::kMap;
        return nullptr;
      case IDEM_EXTERNAL_DATA_COPY:
        options->options.external_data = idem::ExternalDataMode::kCopy;
        return nullptr;
    }
    return MakeStatus(IDEM_INVALID_ARGUMENT,
                      std::string(fn) + ": unknown mode " + std::to_string(mode));
  });
}

idem_status_t* idem_session_options_set_allow_external_hard_links(idem_session_options_t* options,
                                                                  int allowed) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(options, kOptionsMagic, "options");
    options->options.allow_external_hard_links = allowed != 0;
    return nullptr;
  });
}

idem_status_t* idem_session_options_set_intra_op_threads(idem_session_options_t* options,
                                                         int32_t threads) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(options, kOptionsMagic, "options");
    if (threads < 1 || threads > 1024) {
      return MakeStatus(IDEM_INVALID_ARGUMENT, std::string(fn) + ": threads is " +
                                                   std::to_string(threads) +
                                                   "; it must be in [1, 1024]");
    }
    options->options.intra_op_threads = threads;
    return nullptr;
  });
}

idem_status_t* idem_session_options_set_reference_kernels(idem_session_options_t* options,
                                                          int enabled) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(options, kOptionsMagic, "options");
    options->options.reference_kernels = enabled != 0;
    return nullptr;
  });
}

// ---- Sessions --------------------------------------------------------------------------------

idem_status_t* idem_session_create(const char* path, const idem_session_options_t* options,
                                   idem_session_t** out_session) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_OUT(out_session);
    IDEM_CHECK_OUT(path);
    if (options != nullptr) IDEM_CHECK_HANDLE(options, kOptionsMagic, "options");
    return CreateSession(idem::Session::Create(path, OptionsOr(options)), out_session);
  });
}

idem_status_t* idem_session_create_from_bytes(const void* bytes, size_t size, const char* base_dir,
                                              const idem_session_options_t* options,
                                              idem_session_t** out_session) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_OUT(out_session);
    if (bytes == nullptr && size > 0) return NullOut(fn, "bytes");
    if (options != nullptr) IDEM_CHECK_HANDLE(options, kOptionsMagic, "options");
    std::span<const std::byte> span(static_cast<const std::byte*>(bytes), size);
    return CreateSession(
        idem::Session::CreateFromBytes(span, base_dir ? base_dir : "", OptionsOr(options)),
        out_session);
  });
}

void idem_session_release(idem_session_t* session) {
  if (!HasMagic(session, kSessionMagic)) return;
  session->magic = kDeadMagic;
  delete session;
}

namespace {

template <typename Infos>
idem_status_t* InfoAt(const char* function, const Infos& infos, size_t index, const char* what) {
  if (index >= infos.size()) {
    return MakeStatus(IDEM_OUT_OF_RANGE, std::string(function) + ": " + what + " " +
                                             std::to_string(index) + " of " +
                                             std::to_string(infos.size()));
  }
  return nullptr;
}

}  // namespace

idem_status_t* idem_session_input_count(const idem_session_t* session, size_t* out_count) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(session, kSessionMagic, "session");
    IDEM_CHECK_OUT(out_count);
    *out_count = session->session.inputs().size();
    return nullptr;
  });
}

idem_status_t* idem_session_output_count(const idem_session_t* session, size_t* out_count) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(session, kSessionMagic, "session");
    IDEM_CHECK_OUT(out_count);
    *out_count = session->session.outputs().size();
    return nullptr;
  });
}

idem_status_t* idem_session_input_name(const idem_session_t* session, size_t index,
                                       const char** out_name) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(session, kSessionMagic, "session");
    IDEM_CHECK_OUT(out_name);
    auto infos = session->session.inputs();
    if (idem_status_t* e = InfoAt(fn, infos, index, "input")) return e;
    *out_name = infos[index].name.c_str();
    return nullptr;
  });
}

idem_status_t* idem_session_output_name(const idem_session_t* session, size_t index,
                                        const char** out_name) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(session, kSessionMagic, "session");
    IDEM_CHECK_OUT(out_name);
    auto infos = session->session.outputs();
    if (idem_status_t* e = InfoAt(fn, infos, index, "output")) return e;
    *out_name = infos[index].name.c_str();
    return nullptr;
  });
}

idem_status_t* idem_session_input_type(const idem_session_t* session, size_t index,
                                       const char** out_type) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(session, kSessionMagic, "session");
    IDEM_CHECK_OUT(out_type);
    if (idem_status_t* e = InfoAt(fn, session->input_types, index, "input")) return e;
    *out_type = session->input_types[index].c_str();
    return nullptr;
  });
}

idem_status_t* idem_session_output_type(const idem_session_t* session, size_t index,
                                        const char** out_type) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(session, kSessionMagic, "session");
    IDEM_CHECK_OUT(out_type);
    if (idem_status_t* e = InfoAt(fn, session->output_types, index, "output")) return e;
    *out_type = session->output_types[index].c_str();
    return nullptr;
  });
}

namespace {

// The idem::RunOptions for one run: the deadline is computed now, from the relative timeout.
idem::RunOptions ToRunOptions(const idem_run_options_t* run_options) {
  idem::RunOptions options;
  if (run_options == nullptr) return options;
  options.cancel = &run_options->cancel;
  if (run_options->has_timeout.load(std::memory_order_acquire)) {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point now = Clock::now();
    const uint64_t ns = run_options->timeout_ns.load(std::memory_order_relaxed);
    // Saturate instead of overflowing the clock's signed representation.
    const auto room =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::time_point::max() - now);
    if (ns >= static_cast<uint64_t>(room.count())) {
      options.deadline = Clock::time_point::max();
    } else {
      options.deadline = now + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::nanoseconds(static_cast<int64_t>(ns)));
    }
  }
  return options;
}

// What every run function does before it delivers outputs: check the handles and the output
// count (`count_error` words the mismatch), collect the feeds, run. On success `*result` holds
// the outputs.
template <typename CountError>
idem_status_t* CheckedRun(const char* fn, const idem_session_t* session,
                          const idem_run_options_t* run_options, const idem_value_t* const* inputs,
                          size_t n_inputs, bool outputs_null, size_t n_outputs,
                          CountError count_error, std::vector<idem::Value>* result) {
  IDEM_CHECK_HANDLE(session, kSessionMagic, "session");
  if (run_options != nullptr) IDEM_CHECK_HANDLE(run_options, kRunOptionsMagic, "run_options");
  if (outputs_null && n_outputs > 0) return NullOut(fn, "outputs");
  const size_t expected = session->session.outputs().size();
  if (n_outputs != expected) {
    return MakeStatus(IDEM_INVALID_ARGUMENT, std::string(fn) + ": " + count_error(expected));
  }
  std::vector<idem::Value> feeds;
  if (idem_status_t* e = CollectFeeds(fn, "inputs", inputs, n_inputs, &feeds)) return e;
  idem::Result<std::vector<idem::Value>> run =
      run_options == nullptr ? session->session.Run(feeds)
                             : session->session.Run(feeds, ToRunOptions(run_options));
  if (!run.ok()) return FromStatus(run.status());
  *result = std::move(run).value();
  return nullptr;
}

idem_status_t* RunSession(const char* fn, const idem_session_t* session,
                          const idem_run_options_t* run_options, const idem_value_t* const* inputs,
                          size_t n_inputs, idem_value_t** outputs, size_t n_outputs) {
  std::vector<idem::Value> result;
  if (idem_status_t* e = CheckedRun(
          fn, session, run_options, inputs, n_inputs, outputs == nullptr, n_outputs,
          [n_outputs](size_t expected) {
            return "room for " + std::to_string(n_outputs) + " outputs, the model has " +
                   std::to_string(expected);
          },
          &result)) {
    return e;
  }
  // Wrap every output before publishing any, so a failed allocation leaks nothing.
  std::vector<std::unique_ptr<idem_value_t>> made;
  made.reserve(n_outputs);
  for (idem::Value& v : result) made.emplace_back(NewValue(std::move(v)));
  for (size_t i = 0; i < n_outputs; ++i) outputs[i] = made[i].release();
  return nullptr;
}

}  // namespace

idem_status_t* idem_session_run(const idem_session_t* session, const idem_value_t* const* inputs,
                                size_t n_inputs, idem_value_t** outputs, size_t n_outputs) {
  if (outputs != nullptr) {
    for (size_t i = 0; i < n_outputs; ++i) outputs[i] = nullptr;
  }
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    return RunSession(fn, session, nullptr, inputs, n_inputs, outputs, n_outputs);
  });
}

idem_status_t* idem_session_run_with_options(const idem_session_t* session,
                                             const idem_run_options_t* run_options,
                                             const idem_value_t* const* inputs, size_t n_inputs,
                                             idem_value_t** outputs, size_t n_outputs) {
  if (outputs != nullptr) {
    for (size_t i = 0; i < n_outputs; ++i) outputs[i] = nullptr;
  }
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    return RunSession(fn, session, run_options, inputs, n_inputs, outputs, n_outputs);
  });
}

// ---- Shapes ----------------------------------------------------------------------------------

namespace {

// The tensor type of input (is_input) or output `index`, or an error status.
idem_status_t* TensorInfo(const char* fn, const idem_session_t* session, bool is_input,
                          size_t index, const idem::Type** out_type) {
  IDEM_CHECK_HANDLE(session, kSessionMagic, "session");
  auto infos = is_input ? session->session.inputs() : session->session.outputs();
  const char* what = is_input ? "input" : "output";
  if (idem_status_t* e = InfoAt(fn, infos, index, what)) return e;
  const idem::Type& type = infos[index].type;
  if (type.kind() != idem::ValueKind::kTensor) {
    return MakeStatus(IDEM_INVALID_ARGUMENT, std::string(fn) + ": " + what + " " +
                                                 idem::QuoteName(infos[index].name) + " is " +
                                                 type.ToString() + ", not a tensor");
  }
  *out_type = &type;
  return nullptr;
}

idem_status_t* Shape(const char* fn, const idem_session_t* session, bool is_input, size_t index,
                     int64_t* dims_out, size_t capacity, int64_t* out_rank) {
  const idem::Type* type = nullptr;
  if (idem_status_t* e = TensorInfo(fn, session, is_input, index, &type)) return e;
  IDEM_CHECK_OUT(out_rank);
  if (capacity > 0 && dims_out == nullptr) {
    return MakeStatus(IDEM_INVALID_ARGUMENT, std::string(fn) + ": dims_out is NULL with capacity " +
                                                 std::to_string(capacity));
  }
  const auto& shape = type->shape();
  if (!shape) {
    *out_rank = -1;
    return nullptr;
  }
  if (capacity > 0 && capacity < shape->size()) {
    return MakeStatus(IDEM_OUT_OF_RANGE, std::string(fn) + ": rank " +
                                             std::to_string(shape->size()) + ", dims_out holds " +
                                             std::to_string(capacity));
  }
  if (capacity > 0) {
    for (size_t d = 0; d < shape->size(); ++d) dims_out[d] = (*shape)[d].value.value_or(-1);
  }
  *out_rank = static_cast<int64_t>(shape->size());
  return nullptr;
}

idem_status_t* DimName(const char* fn, const idem_session_t* session, bool is_input, size_t index,
                       size_t dim, const char** out_name) {
  const idem::Type* type = nullptr;
  if (idem_status_t* e = TensorInfo(fn, session, is_input, index, &type)) return e;
  IDEM_CHECK_OUT(out_name);
  const auto& shape = type->shape();
  if (!shape || dim >= shape->size()) {
    return MakeStatus(IDEM_OUT_OF_RANGE, std::string(fn) + ": dim " + std::to_string(dim) + " of " +
                                             (shape ? "rank " + std::to_string(shape->size())
                                                    : "an undeclared shape"));
  }
  const idem::Dim& d = (*shape)[dim];
  *out_name = (!d.value && !d.param.empty()) ? d.param.c_str() : nullptr;
  return nullptr;
}

}  // namespace

idem_status_t* idem_session_input_shape(const idem_session_t* session, size_t index,
                                        int64_t* dims_out, size_t capacity, int64_t* out_rank) {
  return Guard(__func__, [&](const char* fn) {
    return Shape(fn, session, true, index, dims_out, capacity, out_rank);
  });
}

idem_status_t* idem_session_output_shape(const idem_session_t* session, size_t index,
                                         int64_t* dims_out, size_t capacity, int64_t* out_rank) {
  return Guard(__func__, [&](const char* fn) {
    return Shape(fn, session, false, index, dims_out, capacity, out_rank);
  });
}

idem_status_t* idem_session_input_dim_name(const idem_session_t* session, size_t index, size_t dim,
                                           const char** out_name) {
  return Guard(__func__,
               [&](const char* fn) { return DimName(fn, session, true, index, dim, out_name); });
}

idem_status_t* idem_session_output_dim_name(const idem_session_t* session, size_t index, size_t dim,
                                            const char** out_name) {
  return Guard(__func__,
               [&](const char* fn) { return DimName(fn, session, false, index, dim, out_name); });
}

// ---- Run options -----------------------------------------------------------------------------

idem_status_t* idem_run_options_create(idem_run_options_t** out_run_options) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_OUT(out_run_options);
    *out_run_options = new idem_run_options_t;
    return nullptr;
  });
}

void idem_run_options_release(idem_run_options_t* run_options) {
  if (!HasMagic(run_options, kRunOptionsMagic)) return;
  run_options->magic = kDeadMagic;
  delete run_options;
}

idem_status_t* idem_run_options_cancel(idem_run_options_t* run_options) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(run_options, kRunOptionsMagic, "run_options");
    run_options->cancel.store(true, std::memory_order_relaxed);
    return nullptr;
  });
}

idem_status_t* idem_run_options_reset_cancel(idem_run_options_t* run_options) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(run_options, kRunOptionsMagic, "run_options");
    run_options->cancel.store(false, std::memory_order_relaxed);
    return nullptr;
  });
}

idem_status_t* idem_run_options_set_timeout_ns(idem_run_options_t* run_options,
                                               uint64_t timeout_ns) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(run_options, kRunOptionsMagic, "run_options");
    // timeout first, then the flag (release): a run that sees the flag sees this timeout.
    run_options->timeout_ns.store(timeout_ns, std::memory_order_relaxed);
    run_options->has_timeout.store(true, std::memory_order_release);
    return nullptr;
  });
}

idem_status_t* idem_run_options_clear_timeout(idem_run_options_t* run_options) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(run_options, kRunOptionsMagic, "run_options");
    run_options->has_timeout.store(false, std::memory_order_release);
    return nullptr;
  });
}

namespace {

idem_status_t* RunSessionInto(const char* fn, const idem_session_t* session,
                              const idem_run_options_t* run_options,
                              const idem_value_t* const* inputs, size_t n_inputs,
                              idem_output_buffer_t* outputs, size_t n_outputs) {
  std::vector<idem::Value> values;
  if (idem_status_t* e = CheckedRun(
          fn, session, run_options, inputs, n_inputs, outputs == nullptr, n_outputs,
          [n_outputs](size_t expected) {
            return std::to_string(n_outputs) + " output buffers, the model has " +
                   std::to_string(expected) + " outputs";
          },
          &values)) {
    return e;
  }
  const auto infos = session->session.outputs();
  const std::vector<idem::Value>* result = &values;
  // Check every destination before writing any: an error leaves caller memory untouched.
  for (size_t i = 0; i < n_outputs; ++i) {
    const idem::Value& v = (*result)[i];
    const std::string prefix = std::string(fn) + ": output " + idem::QuoteName(infos[i].name);
    if (!v.is_tensor() || v.tensor().element_type() == idem::ElementType::kString) {
      return MakeStatus(IDEM_INVALID_ARGUMENT,
                        prefix + " is " + v.type().ToString() +
                            "; only non-string tensors can be written to caller memory "
                            "(use idem_session_run)");
    }
    const idem::Tensor& t = v.tensor();
    if (t.data().size() > outputs[i].capacity ||
        (outputs[i].data == nullptr && !t.data().empty())) {
      return MakeStatus(IDEM_OUT_OF_RANGE, prefix + " needs " + std::to_string(t.data().size()) +
                                               " bytes, buffer holds " +
                                               std::to_string(outputs[i].capacity));
    }
    if (t.rank() > outputs[i].dims_capacity || (outputs[i].dims == nullptr && t.rank() > 0)) {
      return MakeStatus(IDEM_OUT_OF_RANGE, prefix + " has rank " + std::to_string(t.rank()) +
                                               ", dims holds " +
                                               std::to_string(outputs[i].dims_capacity));
    }
  }
  for (size_t i = 0; i < n_outputs; ++i) {
    const idem::Tensor& t = (*result)[i].tensor();
    if (!t.data().empty()) std::memcpy(outputs[i].data, t.data().data(), t.data().size());
    for (size_t d = 0; d < t.rank(); ++d) outputs[i].dims[d] = t.shape()[d];
    outputs[i].byte_size = t.data().size();
    outputs[i].rank = t.rank();
    outputs[i].element_type = static_cast<int32_t>(t.element_type());
  }
  return nullptr;
}

}  // namespace

idem_status_t* idem_session_run_into(const idem_session_t* session,
                                     const idem_value_t* const* inputs, size_t n_inputs,
                                     idem_output_buffer_t* outputs, size_t n_outputs) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    return RunSessionInto(fn, session, nullptr, inputs, n_inputs, outputs, n_outputs);
  });
}

idem_status_t* idem_session_run_into_with_options(const idem_session_t* session,
                                                  const idem_run_options_t* run_options,
                                                  const idem_value_t* const* inputs,
                                                  size_t n_inputs, idem_output_buffer_t* outputs,
                                                  size_t n_outputs) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    return RunSessionInto(fn, session, run_options, inputs, n_inputs, outputs, n_outputs);
  });
}

// ---- Values ----------------------------------------------------------------------------------

idem_status_t* idem_value_create_tensor(int32_t element_type, const int64_t* dims, size_t rank,
                                        const void* data, size_t byte_size,
                                        idem_release_fn release_fn, void* release_ctx,
                                        idem_value_t** out_value) {
  // Take ownership of the data first, so every failure below (allocation included: shared_ptr
  // calls the deleter if its control block cannot be allocated) releases it exactly once.
  std::shared_ptr<const void> owner;
  if (release_fn != nullptr) {
    try {
      owner = std::shared_ptr<const void>(
          data, [release_fn, release_ctx](const void* p) { release_fn(release_ctx, p); });
    } catch (...) {
      return OutOfMemory();
    }
  }
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_OUT(out_value);
    if (data == nullptr && byte_size > 0) return NullOut(fn, "data");
    std::optional<idem::ElementType> type = idem::ElementTypeFromCode(element_type);
    if (!type) {
      return MakeStatus(IDEM_INVALID_ARGUMENT,
                        std::string(fn) + ": unknown element type " + std::to_string(element_type));
    }
    if (*type == idem::ElementType::kString) {
      return MakeStatus(
          IDEM_INVALID_ARGUMENT,
          std::string(fn) + ": string tensors are made with idem_value_create_string_tensor");
    }
    std::vector<int64_t> shape;
    if (idem_status_t* e = ReadDims(fn, dims, rank, &shape)) return e;
    idem::Buffer buffer = owner ? idem::Buffer::Shared(std::move(owner), data, byte_size)
                                : idem::Buffer::Borrow(data, byte_size);
    return Created(idem::Value::MakeTensor(*type, std::move(shape), std::move(buffer)), out_value);
  });
}

idem_status_t* idem_value_create_string_tensor(const int64_t* dims, size_t rank,
                                               const char* const* strings, const size_t* lengths,
                                               size_t count, idem_value_t** out_value) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_OUT(out_value);
    if (count > 0 && (strings == nullptr || lengths == nullptr)) {
      return NullOut(fn, strings == nullptr ? "strings" : "lengths");
    }
    std::vector<int64_t> shape;
    if (idem_status_t* e = ReadDims(fn, dims, rank, &shape)) return e;
    std::vector<std::string> copies;
    copies.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (strings[i] == nullptr && lengths[i] > 0) {
        return NullOut(fn, ("strings[" + std::to_string(i) + "]").c_str());
      }
      copies.emplace_back(strings[i] == nullptr ? "" : std::string(strings[i], lengths[i]));
    }
    return Created(idem::Value::MakeStringTensor(std::move(shape), std::move(copies)), out_value);
  });
}

idem_status_t* idem_value_create_sequence(int32_t element_type, const idem_value_t* const* tensors,
                                          size_t count, idem_value_t** out_value) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_OUT(out_value);
    std::optional<idem::ElementType> type = idem::ElementTypeFromCode(element_type);
    if (!type) {
      return MakeStatus(IDEM_INVALID_ARGUMENT,
                        std::string(fn) + ": unknown element type " + std::to_string(element_type));
    }
    std::vector<idem::Value> elements;
    if (idem_status_t* e = CollectFeeds(fn, "tensors", tensors, count, &elements)) return e;
    return Created(idem::Value::MakeSequence(*type, std::move(elements)), out_value);
  });
}

idem_status_t* idem_value_create_optional(const idem_value_t* element, idem_value_t** out_value) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_OUT(out_value);
    IDEM_CHECK_HANDLE(element, kValueMagic, "element");
    return Created(idem::Value::MakeOptional(element->value), out_value);
  });
}

idem_status_t* idem_value_create_empty_optional(int32_t element_kind, int32_t element_type,
                                                idem_value_t** out_value) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_OUT(out_value);
    std::optional<idem::ElementType> type = idem::ElementTypeFromCode(element_type);
    if (!type) {
      return MakeStatus(IDEM_INVALID_ARGUMENT,
                        std::string(fn) + ": unknown element type " + std::to_string(element_type));
    }
    idem::Type tensor = idem::Type::Tensor(*type);
    switch (element_kind) {
      case IDEM_VALUE_TENSOR:
        return Created(idem::Value::MakeEmptyOptional(tensor), out_value);
      case IDEM_VALUE_SEQUENCE:
        return Created(idem::Value::MakeEmptyOptional(idem::Type::Sequence(tensor)), out_value);
      case IDEM_VALUE_OPTIONAL:
        break;
    }
    return MakeStatus(IDEM_INVALID_ARGUMENT,
                      std::string(fn) + ": an optional holds a tensor or a sequence, not " +
                          std::to_string(element_kind));
  });
}

void idem_value_release(idem_value_t* value) {
  if (!HasMagic(value, kValueMagic)) return;
  value->magic = kDeadMagic;
  delete value;  // may run a release_fn; idem's destructors do not throw
}

idem_status_t* idem_value_kind(const idem_value_t* value, idem_value_kind_t* out_kind) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(value, kValueMagic, "value");
    IDEM_CHECK_OUT(out_kind);
    *out_kind = static_cast<idem_value_kind_t>(value->value.kind());
    return nullptr;
  });
}

#define IDEM_TENSOR_OR_RETURN(var)                              \
  idem_status_t* tensor_error = nullptr;                        \
  const idem::Tensor* var = TensorOf(value, fn, &tensor_error); \
  if (var == nullptr) return tensor_error

idem_status_t* idem_tensor_element_type(const idem_value_t* value, int32_t* out_element_type) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_TENSOR_OR_RETURN(t);
    IDEM_CHECK_OUT(out_element_type);
    *out_element_type = static_cast<int32_t>(t->element_type());
    return nullptr;
  });
}

idem_status_t* idem_tensor_rank(const idem_value_t* value, size_t* out_rank) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_TENSOR_OR_RETURN(t);
    IDEM_CHECK_OUT(out_rank);
    *out_rank = t->rank();
    return nullptr;
  });
}

idem_status_t* idem_tensor_dims(const idem_value_t* value, const int64_t** out_dims) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_TENSOR_OR_RETURN(t);
    IDEM_CHECK_OUT(out_dims);
    *out_dims = t->shape().data();
    return nullptr;
  });
}

idem_status_t* idem_tensor_data(const idem_value_t* value, const void** out_data) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_TENSOR_OR_RETURN(t);
    IDEM_CHECK_OUT(out_data);
    if (t->element_type() == idem::ElementType::kString) {
      return MakeStatus(IDEM_INVALID_ARGUMENT, std::string(fn) +
                                                   ": a string tensor has no packed data "
                                                   "(use idem_tensor_string)");
    }
    *out_data = t->data().data();
    return nullptr;
  });
}

idem_status_t* idem_tensor_byte_size(const idem_value_t* value, size_t* out_byte_size) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_TENSOR_OR_RETURN(t);
    IDEM_CHECK_OUT(out_byte_size);
    *out_byte_size = t->data().size();
    return nullptr;
  });
}

idem_status_t* idem_tensor_string(const idem_value_t* value, size_t index, const char** out_data,
                                  size_t* out_length) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_TENSOR_OR_RETURN(t);
    IDEM_CHECK_OUT(out_data);
    IDEM_CHECK_OUT(out_length);
    if (t->element_type() != idem::ElementType::kString) {
      return MakeStatus(IDEM_INVALID_ARGUMENT, std::string(fn) + ": value is not a string tensor");
    }
    auto strings = t->strings();
    if (index >= strings.size()) {
      return MakeStatus(IDEM_OUT_OF_RANGE, std::string(fn) + ": string " + std::to_string(index) +
                                               " of " + std::to_string(strings.size()));
    }
    *out_data = strings[index].data();
    *out_length = strings[index].size();
    return nullptr;
  });
}

idem_status_t* idem_sequence_length(const idem_value_t* value, size_t* out_length) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(value, kValueMagic, "value");
    IDEM_CHECK_OUT(out_length);
    if (!value->value.is_sequence()) return KindError(fn, value, "a sequence");
    *out_length = value->value.sequence().size();
    return nullptr;
  });
}

idem_status_t* idem_sequence_at(const idem_value_t* value, size_t index,
                                idem_value_t** out_element) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(value, kValueMagic, "value");
    IDEM_CHECK_OUT(out_element);
    if (!value->value.is_sequence()) return KindError(fn, value, "a sequence");
    const idem::Sequence& seq = value->value.sequence();
    if (index >= seq.size()) {
      return MakeStatus(IDEM_OUT_OF_RANGE, std::string(fn) + ": position " + std::to_string(index) +
                                               " of a sequence of " + std::to_string(seq.size()));
    }
    *out_element = NewValue(seq.at(index));
    return nullptr;
  });
}

idem_status_t* idem_optional_has_value(const idem_value_t* value, int* out_has_value) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(value, kValueMagic, "value");
    IDEM_CHECK_OUT(out_has_value);
    if (!value->value.is_optional()) return KindError(fn, value, "an optional");
    *out_has_value = value->value.optional().has_value() ? 1 : 0;
    return nullptr;
  });
}

idem_status_t* idem_optional_value(const idem_value_t* value, idem_value_t** out_element) {
  return Guard(__func__, [&](const char* fn) -> idem_status_t* {
    IDEM_CHECK_HANDLE(value, kValueMagic, "value");
    IDEM_CHECK_OUT(out_element);
    if (!value->value.is_optional()) return KindError(fn, value, "an optional");
    const idem::Optional& opt = value->value.optional();
    if (!opt.has_value()) {
      return MakeStatus(IDEM_INVALID_ARGUMENT, std::string(fn) + ": the optional (" +
                                                   value->value.type().ToString() + ") is empty");
    }
    *out_element = NewValue(opt.value());
    return nullptr;
  });
}
