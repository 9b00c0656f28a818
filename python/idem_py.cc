// pybind11 bindings for idem: the `idem._idem` extension module.
//
// The Python-facing API (docstrings, RawTensor, Error) is documented in python/idem/__init__.py
// and python/README.md. This file converts between Python objects and idem::Value:
//
//   numpy array (numeric, bool, complex, float16) <-> tensor, sharing memory both ways when the
//       array is C-contiguous, aligned and native-endian (input arrays are kept alive by the
//       Buffer's owner; output arrays are read-only views kept alive by a capsule owning the Value)
//   numpy object/bytes/str array                  <-> tensor(string) (outputs: object arrays of
//   bytes) idem.RawTensor(element_type, shape, data)     <-> tensors of types numpy lacks
//   (bfloat16, ...) list of the above                             <-> seq(tensor(...)) None / value
//   <-> optional(...) (empty / holding the value)
//
// Every feed is converted against the type the model declares for its input, so empty sequences
// and empty optionals get their element type from the model.
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "idem/idem.h"
#include "src/onnx/model_loader.h"
#include "tools/backend_test.h"

namespace py = pybind11;

namespace {

// Objects kept for the life of the process. Deliberately leaked: destroying Python objects after
// the interpreter has finalized would crash at exit.
struct Globals {
  py::object error_type;  // idem.Error
  // Subclasses named like onnxruntime's (InvalidArgument, InvalidGraph, NotImplemented, Fail,
  // NoSuchFile), chosen by status code.
  std::map<std::string, py::object> error_classes;
  py::object raw_tensor_type;  // idem.RawTensor (registered by __init__.py)
  py::module_ numpy;
};

Globals& G() {
  static Globals* globals = new Globals();
  return *globals;
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

// Bytes from a model (names, doc strings, string tensors) as str: UTF-8, with undecodable bytes
// kept as lone surrogates (PEP 383) so that encoding back with surrogateescape restores them
// exactly. Never raises UnicodeDecodeError.
py::str Utf8(std::string_view bytes) {
  PyObject* s =
      PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "surrogateescape");
  if (!s) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

// For messages: undecodable bytes become \xNN escapes so the text prints on any terminal.
py::str MessageText(std::string_view bytes) {
  PyObject* s =
      PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "backslashreplace");
  if (!s) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

// When an error is raised: while loading, "not found" is a missing file; afterwards it is a
// wrong name passed by the caller.
enum class Phase { kLoad, kRun };

const char* ErrorClassName(idem::StatusCode code, Phase phase) {
  using C = idem::StatusCode;
  switch (code) {
    case C::kInvalidArgument:
    case C::kOutOfRange:
      return "InvalidArgument";
    case C::kInvalidModel:
      return "InvalidGraph";
    case C::kUnsupported:
      return "NotImplemented";
    case C::kNotFound:
    case C::kIoError:
      return phase == Phase::kLoad ? "NoSuchFile" : "InvalidArgument";
    default:
      return "Fail";
  }
}

[[noreturn]] void ThrowError(idem::StatusCode code, const std::string& message,
                             Phase phase = Phase::kRun) {
  py::object cls = G().error_classes.at(ErrorClassName(code, phase));
  py::object exc = cls(MessageText(message));
  exc.attr("code") = py::str(std::string(idem::StatusCodeName(code)));
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw py::error_already_set();
}

[[noreturn]] void ThrowStatus(const idem::Status& status, Phase phase = Phase::kRun) {
  ThrowError(status.code(), status.message(), phase);
}

template <typename T>
T Unwrap(idem::Result<T> result, Phase phase = Phase::kRun) {
  if (!result.ok()) ThrowStatus(result.status(), phase);
  return std::move(result).value();
}

// A name given by the caller (str, encoded with surrogateescape to match Utf8(), or bytes).
std::string NameFromPython(const py::handle& obj, const std::string& what) {
  if (py::isinstance<py::bytes>(obj)) return std::string(py::reinterpret_borrow<py::bytes>(obj));
  if (py::isinstance<py::str>(obj)) {
    // Fast path: CPython caches a str's UTF-8 form. Strings holding surrogates (escaped bytes
    // from Utf8()) have none and take the surrogateescape encoder.
    Py_ssize_t size = 0;
    if (const char* utf8 = PyUnicode_AsUTF8AndSize(obj.ptr(), &size)) {
      return std::string(utf8, static_cast<size_t>(size));
    }
    PyErr_Clear();
    PyObject* b = PyUnicode_AsEncodedString(obj.ptr(), "utf-8", "surrogateescape");
    if (!b) {
      PyErr_Clear();
      ThrowError(idem::StatusCode::kInvalidArgument,
                 what + " " + std::string(py::str(py::repr(obj))) + " cannot be encoded as UTF-8");
    }
    return std::string(py::reinterpret_steal<py::bytes>(b));
  }
  ThrowError(idem::StatusCode::kInvalidArgument,
             what + " must be str or bytes, got " +
                 std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
}

std::string TypeNameOf(const py::handle& obj) {
  return py::str(py::type::handle_of(obj).attr("__name__"));
}

// ---------------------------------------------------------------------------------------------
// Element types <-> numpy dtypes
// ---------------------------------------------------------------------------------------------

// numpy dtype name for element types numpy represents exactly; nullptr otherwise.
const char* NumpyName(idem::ElementType t) {
  using E = idem::ElementType;
  switch (t) {
    case E::kFloat:
      return "float32";
    case E::kUint8:
      return "uint8";
    case E::kInt8:
      return "int8";
    case E::kUint16:
      return "uint16";
    case E::kInt16:
      return "int16";
    case E::kInt32:
      return "int32";
    case E::kInt64:
      return "int64";
    case E::kBool:
      return "bool";
    case E::kFloat16:
      return "float16";
    case E::kDouble:
      return "float64";
    case E::kUint32:
      return "uint32";
    case E::kUint64:
      return "uint64";
    case E::kComplex64:
      return "complex64";
    case E::kComplex128:
      return "complex128";
    default:
      return nullptr;
  }
}

py::dtype NumpyDtype(idem::ElementType t) {
  static py::dtype* cache[idem::kMaxElementTypeCode + 1] = {};
  int code = static_cast<int>(t);
  if (!cache[code]) cache[code] = new py::dtype(py::dtype::from_args(py::str(NumpyName(t))));
  return *cache[code];
}

// Element type of a (native-order) numpy dtype; nullopt for dtypes idem has no tensor type for.
// Strings ('S', 'U', 'O') map to kString.
std::optional<idem::ElementType> ElementTypeOfDtype(const py::dtype& dtype) {
  using E = idem::ElementType;
  const char kind = dtype.kind();
  const ssize_t size = dtype.itemsize();
  switch (kind) {
    case 'b':
      return E::kBool;
    case 'f':
      if (size == 2) return E::kFloat16;
      if (size == 4) return E::kFloat;
      if (size == 8) return E::kDouble;
      return std::nullopt;
    case 'i':
      if (size == 1) return E::kInt8;
      if (size == 2) return E::kInt16;
      if (size == 4) return E::kInt32;
      if (size == 8) return E::kInt64;
      return std::nullopt;
    case 'u':
      if (size == 1) return E::kUint8;
      if (size == 2) return E::kUint16;
      if (size == 4) return E::kUint32;
      if (size == 8) return E::kUint64;
      return std::nullopt;
    case 'c':
      if (size == 8) return E::kComplex64;
      if (size == 16) return E::kComplex128;
      return std::nullopt;
    case 'S':
    case 'U':
    case 'O':
      return E::kString;
    default:
      return std::nullopt;
  }
}

std::optional<idem::ElementType> ElementTypeFromName(const std::string& name) {
  for (int code = 1; code <= idem::kMaxElementTypeCode; ++code) {
    auto t = idem::ElementTypeFromCode(code);
    if (t && idem::ElementTypeName(*t) == name) return t;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Python -> idem::Value
// ---------------------------------------------------------------------------------------------

// Keeps `obj` alive for as long as the returned owner (and every Buffer/Value sharing it) lives.
// The deleter may run on any thread, with or without the GIL.
std::shared_ptr<const void> PyOwner(py::object obj) {
  auto* held = new py::object(std::move(obj));
  return std::shared_ptr<const void>(held, [](const void* p) {
    auto* o = static_cast<py::object*>(const_cast<void*>(p));
    if (!Py_IsInitialized()) return;  // interpreter gone: leak rather than crash
    py::gil_scoped_acquire gil;
    delete o;
  });
}

bool IsNumpyArray(const py::handle& obj) { return py::isinstance<py::array>(obj); }
bool IsNumpyScalar(const py::handle& obj) { return py::isinstance(obj, G().numpy.attr("generic")); }

std::vector<int64_t> ShapeOf(const py::array& arr) {
  std::vector<int64_t> shape(static_cast<size_t>(arr.ndim()));
  for (size_t i = 0; i < shape.size(); ++i) shape[i] = static_cast<int64_t>(arr.shape(i));
  return shape;
}

std::string ToByteString(const py::handle& item, const std::string& where) {
  if (py::isinstance<py::bytes>(item)) {
    char* data = nullptr;
    Py_ssize_t size = 0;
    PyBytes_AsStringAndSize(item.ptr(), &data, &size);
    return std::string(data, static_cast<size_t>(size));
  }
  if (py::isinstance<py::str>(item)) {
    // surrogateescape: a str that came out of a string tensor (see Utf8()) goes back to the
    // exact bytes it was decoded from.
    PyObject* b = PyUnicode_AsEncodedString(item.ptr(), "utf-8", "surrogateescape");
    if (!b) {
      PyErr_Clear();
      ThrowError(idem::StatusCode::kInvalidArgument, where + ": string element " +
                                                         std::string(py::str(py::repr(item))) +
                                                         " cannot be encoded as UTF-8");
    }
    return std::string(py::reinterpret_steal<py::bytes>(b));
  }
  if (py::isinstance<py::bytearray>(item)) {
    return std::string(PyByteArray_AsString(item.ptr()),
                       static_cast<size_t>(PyByteArray_Size(item.ptr())));
  }
  ThrowError(idem::StatusCode::kInvalidArgument,
             where + ": string tensor elements must be bytes or str, got " + TypeNameOf(item));
}

idem::Value StringTensorFromArray(const py::array& arr, const std::string& where) {
  std::vector<int64_t> shape = ShapeOf(arr);
  py::list items = arr.attr("ravel")().attr("tolist")();
  std::vector<std::string> strings;
  strings.reserve(items.size());
  for (const py::handle item : items) strings.push_back(ToByteString(item, where));
  return Unwrap(idem::Value::MakeStringTensor(std::move(shape), std::move(strings)));
}

idem::Value TensorFromRaw(const py::handle& obj, const std::string& where) {
  std::string name = py::str(obj.attr("element_type"));
  auto type = ElementTypeFromName(name);
  if (!type || *type == idem::ElementType::kString) {
    ThrowError(idem::StatusCode::kInvalidArgument,
               where + ": RawTensor element_type '" + name + "' is not a non-string ONNX type");
  }
  std::vector<int64_t> shape;
  for (const py::handle d : py::iterable(obj.attr("shape"))) shape.push_back(d.cast<int64_t>());
  py::object data = obj.attr("data");
  if (!py::isinstance<py::bytes>(data)) data = py::bytes(data);  // bytearray / memoryview
  char* ptr = nullptr;
  Py_ssize_t size = 0;
  PyBytes_AsStringAndSize(data.ptr(), &ptr, &size);
  // bytes objects are immutable: share them instead of copying.
  idem::Buffer buffer = idem::Buffer::Shared(PyOwner(data), ptr, static_cast<size_t>(size));
  auto value = idem::Value::MakeTensor(*type, std::move(shape), std::move(buffer));
  if (!value.ok()) ThrowError(value.status().code(), where + ": " + value.status().message());
  return std::move(value).value();
}

// Converts `obj` to a tensor. `declared` is the element type the model declares (used to convert
// plain Python scalars/lists and to decide string handling); numpy arrays keep their own dtype so
// that a mismatch is reported by idem rather than hidden by a cast.
idem::Value TensorFromPython(const py::handle& obj, idem::ElementType declared,
                             const std::string& where) {
  if (G().raw_tensor_type && py::isinstance(obj, G().raw_tensor_type)) {
    return TensorFromRaw(obj, where);
  }
  py::module_& np = G().numpy;
  py::array arr;
  if (IsNumpyArray(obj)) {
    arr = py::reinterpret_borrow<py::array>(obj);  // the hot path: no Python-level calls
  } else if (IsNumpyScalar(obj)) {
    arr = np.attr("asarray")(obj);
  } else if (declared == idem::ElementType::kString) {
    arr = np.attr("asarray")(obj, py::arg("dtype") = py::dtype("O"));
  } else if (NumpyName(declared)) {
    // Plain Python data: build with numpy's default dtype, then cast within the same kind
    // (int -> float is fine, 1.5 -> int is refused).
    arr = np.attr("asarray")(obj);
    if (arr.dtype().kind() == 'O' || arr.dtype().kind() == 'U' || arr.dtype().kind() == 'S') {
      ThrowError(idem::StatusCode::kInvalidArgument,
                 where + ": cannot convert " + TypeNameOf(obj) + " to tensor(" +
                     std::string(idem::ElementTypeName(declared)) + ")");
    }
    try {
      arr = arr.attr("astype")(NumpyDtype(declared), py::arg("casting") = "same_kind");
    } catch (py::error_already_set& e) {
      ThrowError(idem::StatusCode::kInvalidArgument,
                 where + ": cannot convert " + TypeNameOf(obj) + " to tensor(" +
                     std::string(idem::ElementTypeName(declared)) + "): " + e.what());
    }
  } else {
    ThrowError(idem::StatusCode::kInvalidArgument,
               where + ": tensor(" + std::string(idem::ElementTypeName(declared)) +
                   ") has no numpy dtype; feed an idem.RawTensor, got " + TypeNameOf(obj));
  }

  py::dtype dtype = arr.dtype();
  auto type = ElementTypeOfDtype(dtype);
  if (!type) {
    ThrowError(idem::StatusCode::kInvalidArgument,
               where + ": numpy dtype " + std::string(py::str(dtype)) + " has no ONNX tensor type");
  }
  if (*type == idem::ElementType::kString) return StringTensorFromArray(arr, where);

  // Share memory when numpy's layout is already idem's (C order, aligned, little-endian bytes
  // in native order); otherwise copy into such an array first. Flags are read through numpy's C
  // structs (pybind11's proxies), not Python attributes: this runs on every feed.
  const char order = py::detail::array_descriptor_proxy(dtype.ptr())->byteorder;
  const bool native = order == '=' || order == '|' ||
                      order == (std::endian::native == std::endian::little ? '<' : '>');
  if (!native) arr = arr.attr("astype")(dtype.attr("newbyteorder")("="));
  constexpr int kContiguousAligned =
      py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  if ((arr.flags() & kContiguousAligned) != kContiguousAligned) {
    arr = np.attr("ascontiguousarray")(arr);
  }
  std::vector<int64_t> shape = ShapeOf(arr);
  const void* data = arr.data();
  const size_t nbytes = static_cast<size_t>(arr.nbytes());
  idem::Buffer buffer = idem::Buffer::Shared(PyOwner(arr), data, nbytes);
  auto value = idem::Value::MakeTensor(*type, std::move(shape), std::move(buffer));
  if (!value.ok()) ThrowError(value.status().code(), where + ": " + value.status().message());
  return std::move(value).value();
}

idem::Value ValueFromPython(const py::handle& obj, const idem::Type& declared,
                            const std::string& where) {
  switch (declared.kind()) {
    case idem::ValueKind::kTensor:
      if (obj.is_none()) {
        ThrowError(
            idem::StatusCode::kInvalidArgument,
            where + " is " + declared.ToString() + "; None is only accepted for optional inputs");
      }
      return TensorFromPython(obj, declared.element_type(), where);
    case idem::ValueKind::kSequence: {
      if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj)) {
        ThrowError(idem::StatusCode::kInvalidArgument, where + " is " + declared.ToString() +
                                                           "; feed a list of tensors, got " +
                                                           TypeNameOf(obj));
      }
      const idem::Type& element = declared.element();
      if (!element.is_tensor()) {
        ThrowError(idem::StatusCode::kUnsupported,
                   where + ": sequences of " + element.ToString() + " are not supported");
      }
      std::vector<idem::Value> tensors;
      size_t i = 0;
      for (const py::handle item : py::iterable(py::reinterpret_borrow<py::object>(obj))) {
        tensors.push_back(ValueFromPython(item, element, where + "[" + std::to_string(i) + "]"));
        ++i;
      }
      auto value = idem::Value::MakeSequence(element.element_type(), std::move(tensors));
      if (!value.ok()) ThrowError(value.status().code(), where + ": " + value.status().message());
      return std::move(value).value();
    }
    case idem::ValueKind::kOptional: {
      if (obj.is_none()) return Unwrap(idem::Value::MakeEmptyOptional(declared.element()));
      idem::Value inner = ValueFromPython(obj, declared.element(), where);
      return Unwrap(idem::Value::MakeOptional(std::move(inner)));
    }
  }
  ThrowError(idem::StatusCode::kInternal, where + ": unknown type kind");
}

// ---------------------------------------------------------------------------------------------
// idem::Value -> Python
// ---------------------------------------------------------------------------------------------

// How string tensors come back: bytes (idem.Session) or str (idem.InferenceSession, as
// onnxruntime does), decoded with surrogateescape so every byte string round-trips.
enum class Strings { kBytes, kStr };

// numpy arrays hold at most NPY_MAXDIMS dims (32 in numpy 1.x); idem tensors may have more.
py::array MakeArray(const py::dtype& dtype, const std::vector<py::ssize_t>& shape,
                    const void* data = nullptr, py::handle base = py::handle()) {
  try {
    if (data) return py::array(dtype, shape, std::vector<py::ssize_t>{}, data, base);
    return py::array(dtype, shape);
  } catch (py::error_already_set& e) {
    ThrowError(idem::StatusCode::kOutOfRange,
               "an output tensor of rank " + std::to_string(shape.size()) +
                   " cannot be returned as a numpy array: " + e.what());
  }
}

py::object TensorToPython(const idem::Value& value, Strings strings = Strings::kBytes) {
  const idem::Tensor& t = value.tensor();
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.element_type() == idem::ElementType::kString) {
    py::array out = MakeArray(py::dtype("O"), shape);
    // Fill the object array in C order through its data pointer (each slot starts as None).
    PyObject** slots = static_cast<PyObject**>(out.mutable_data());
    size_t i = 0;
    for (const std::string& s : t.strings()) {
      py::object item = strings == Strings::kStr ? py::object(Utf8(s)) : py::object(py::bytes(s));
      Py_XDECREF(slots[i]);
      slots[i++] = item.release().ptr();
    }
    return out;
  }
  if (!NumpyName(t.element_type())) {
    const idem::Buffer& b = t.data();
    py::bytes data(reinterpret_cast<const char*>(b.data()), b.size());
    py::tuple py_shape(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) py_shape[i] = py::int_(shape[i]);
    return G().raw_tensor_type(std::string(idem::ElementTypeName(t.element_type())), py_shape,
                               data);
  }
  py::dtype dtype = NumpyDtype(t.element_type());
  if (t.element_count() == 0 || t.data().data() == nullptr) {
    return MakeArray(dtype, shape);  // nothing to share
  }
  // A read-only view of idem's bytes; the capsule owns a Value handle keeping them alive.
  auto* keep = new idem::Value(value);
  py::capsule base(keep, [](void* p) { delete static_cast<idem::Value*>(p); });
  py::array out = MakeArray(dtype, shape, t.data().data(), base);
  // Read-only: idem's values are immutable (and may be another caller's input).
  py::detail::array_proxy(out.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return out;
}

py::object ValueToPython(const idem::Value& value, Strings strings = Strings::kBytes) {
  switch (value.kind()) {
    case idem::ValueKind::kTensor:
      return TensorToPython(value, strings);
    case idem::ValueKind::kSequence: {
      py::list out;
      for (const idem::Value& v : value.sequence().values()) {
        out.append(ValueToPython(v, strings));
      }
      return out;
    }
    case idem::ValueKind::kOptional: {
      const idem::Optional& o = value.optional();
      if (!o.has_value()) return py::none();
      return ValueToPython(o.value(), strings);
    }
  }
  return py::none();
}

// ---------------------------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------------------------

py::object DimsToPython(const idem::Type& type) {
  const idem::Type* t = &type;
  while (!t->is_tensor()) t = &t->element();
  const auto& shape = t->shape();
  if (!shape) return py::none();
  py::list dims;
  for (const idem::Dim& d : *shape) {
    if (d.value) {
      dims.append(py::int_(*d.value));
    } else if (!d.param.empty()) {
      dims.append(Utf8(d.param));
    } else {
      dims.append(py::none());
    }
  }
  return dims;
}

py::list InfoList(std::span<const idem::ValueInfo> infos, const py::object& value_info_type) {
  py::list out;
  for (const idem::ValueInfo& info : infos) {
    out.append(value_info_type(Utf8(info.name), info.type.ToString(), DimsToPython(info.type)));
  }
  return out;
}

// Per-call options (idem.RunOptions): a cancellation flag another thread may set, and a time
// budget in seconds turned into a deadline when the run starts.
struct PyRunOptions {
  std::atomic<bool> terminate{false};
  std::optional<double> timeout_seconds;
};

// idem::RunOptions for a run starting now: the terminate flag by address (another thread may set
// it mid-run) and the timeout as a deadline.
std::optional<idem::RunOptions> ToRunOptions(const PyRunOptions* options) {
  if (!options) return std::nullopt;
  idem::RunOptions out;
  out.cancel = &options->terminate;
  if (options->timeout_seconds) {
    const auto budget = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(std::min(*options->timeout_seconds, 1e9)));
    out.deadline = std::chrono::steady_clock::now() + budget;
  }
  return out;
}

// Session::Run/RunNamed overloads taking idem::RunOptions (cancellation and deadline checked
// inside the run, e.g. by every Loop iteration) exist once control flow provides them; until
// then the options are checked when the run starts (CheckRunOptions). The concept keeps this
// file building either way and uses the overloads as soon as they exist.
template <typename S, typename Feeds>
concept RunsWithOptions = requires(const S& s, Feeds feeds, const idem::RunOptions& o) {
  {s.Run(feeds, o)};
};
template <typename S, typename Feeds>
concept RunsNamedWithOptions = requires(const S& s, Feeds feeds, const idem::RunOptions& o) {
  {s.RunNamed(feeds, o)};
};

template <typename S>
idem::Result<std::vector<idem::Value>> RunWithOptions(
    const S& session, std::span<const idem::Value> feeds,
    const std::optional<idem::RunOptions>& options) {
  if constexpr (RunsWithOptions<S, std::span<const idem::Value>>) {
    if (options) return session.Run(feeds, *options);
  }
  return session.Run(feeds);
}

template <typename S>
idem::Result<std::vector<idem::Value>> RunWithOptions(
    const S& session, std::span<const idem::NamedValue> feeds,
    const std::optional<idem::RunOptions>& options) {
  if constexpr (RunsNamedWithOptions<S, std::span<const idem::NamedValue>>) {
    if (options) return session.RunNamed(feeds, *options);
  }
  return session.RunNamed(feeds);
}

// Reads idem.SessionOptions-style keyword values into idem::SessionOptions.
idem::SessionOptions MakeSessionOptions(bool eliminate_identity, const py::dict& limits,
                                        const std::string& external_data,
                                        bool allow_external_hard_links) {
  idem::SessionOptions options;
  options.eliminate_identity = eliminate_identity;
  options.allow_external_hard_links = allow_external_hard_links;
  if (external_data == "map") {
    options.external_data = idem::ExternalDataMode::kMap;
  } else if (external_data == "copy") {
    options.external_data = idem::ExternalDataMode::kCopy;
  } else {
    ThrowError(idem::StatusCode::kInvalidArgument,
               "external_data must be 'map' or 'copy', got '" + external_data + "'");
  }
  idem::Limits& l = options.limits;
  for (auto [key, value] : limits) {
    const std::string name = NameFromPython(key, "limit name");
    if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)) {
      ThrowError(idem::StatusCode::kInvalidArgument, "limit '" + name + "' must be an int");
    }
    auto as_u64 = [&](uint64_t* field) {
      const py::int_ v = py::reinterpret_borrow<py::int_>(value);
      if (v < py::int_(0) || v > py::int_(UINT64_MAX)) {
        ThrowError(idem::StatusCode::kInvalidArgument, "limit '" + name + "' must be in [0, 2^64)");
      }
      *field = v.cast<uint64_t>();
    };
    auto as_int = [&](int* field) {
      const py::int_ v = py::reinterpret_borrow<py::int_>(value);
      if (v < py::int_(0) || v > py::int_(INT32_MAX)) {
        ThrowError(idem::StatusCode::kInvalidArgument, "limit '" + name + "' must be in [0, 2^31)");
      }
      *field = v.cast<int>();
    };
    if (name == "max_model_bytes")
      as_u64(&l.max_model_bytes);
    else if (name == "max_tensor_bytes")
      as_u64(&l.max_tensor_bytes);
    else if (name == "max_elements")
      as_u64(&l.max_elements);
    else if (name == "max_type_depth")
      as_int(&l.max_type_depth);
    else if (name == "max_nodes")
      as_u64(&l.max_nodes);
    else if (name == "max_values")
      as_u64(&l.max_values);
    else if (name == "max_sequence_length")
      as_u64(&l.max_sequence_length);
    else if (name == "max_graph_depth")
      as_int(&l.max_graph_depth);
    else if (name == "max_run_bytes")
      as_u64(&l.max_run_bytes);
    else
      ThrowError(idem::StatusCode::kInvalidArgument, "unknown limit '" + name + "'");
  }
  return options;
}

py::dict LimitsToPython(const idem::Limits& l) {
  py::dict d;
  d["max_model_bytes"] = l.max_model_bytes;
  d["max_tensor_bytes"] = l.max_tensor_bytes;
  d["max_elements"] = l.max_elements;
  d["max_type_depth"] = l.max_type_depth;
  d["max_nodes"] = l.max_nodes;
  d["max_values"] = l.max_values;
  d["max_sequence_length"] = l.max_sequence_length;
  d["max_graph_depth"] = l.max_graph_depth;
  d["max_run_bytes"] = l.max_run_bytes;
  return d;
}

class PySession {
 public:
  PySession(const py::object& model, bool eliminate_identity, const std::string& base_dir,
            const py::dict& limits, const std::string& external_data,
            bool allow_external_hard_links) {
    const idem::SessionOptions options =
        MakeSessionOptions(eliminate_identity, limits, external_data, allow_external_hard_links);
    py::object source = model;
    if (py::hasattr(source, "SerializeToString") && !py::isinstance<py::bytes>(source)) {
      source = source.attr("SerializeToString")();
    }
    std::optional<idem::Result<idem::Session>> created;
    if (py::isinstance<py::bytes>(source) || py::isinstance<py::bytearray>(source) ||
        py::isinstance<py::memoryview>(source)) {
      // Tensors' raw_data stays in the model's bytes, so the session borrows an immutable
      // `bytes` object and every value keeps a reference to it. bytearray and memoryview contents
      // may change, so they are copied into one first; bytes() of a strided or reversed memoryview
      // copies in logical order and never reads past the exporter's memory.
      if (!py::isinstance<py::bytes>(source)) {
        source = py::module_::import("builtins").attr("bytes")(source);
      }
      py::buffer_info info = py::reinterpret_borrow<py::buffer>(source).request();
      auto* held = new py::object(source);
      std::shared_ptr<const void> owner(held, [](const py::object* o) {
        // The last value may die on a thread without the GIL, or after the interpreter is gone.
        if (Py_IsInitialized()) {
          py::gil_scoped_acquire acquire;
          delete o;
        }
      });
      const idem::Buffer bytes = idem::Buffer::Shared(
          std::move(owner), info.ptr, static_cast<size_t>(info.size * info.itemsize));
      py::gil_scoped_release release;
      created.emplace(idem::Session::CreateFromBuffer(bytes, base_dir, options));
    } else if (py::isinstance<py::str>(source) || py::hasattr(source, "__fspath__")) {
      py::object fspath = py::module_::import("os").attr("fsencode")(source);
      std::string path = std::string(py::reinterpret_borrow<py::bytes>(fspath));
      py::gil_scoped_release release;
      created.emplace(idem::Session::Create(path, options));
    } else {
      ThrowError(idem::StatusCode::kInvalidArgument,
                 "a model is a path (str or os.PathLike), bytes, bytearray, memoryview or an "
                 "object with SerializeToString(); got " +
                     TypeNameOf(model),
                 Phase::kLoad);
    }
    session_ = std::make_unique<idem::Session>(Unwrap(std::move(*created), Phase::kLoad));
    limits_ = options.limits;
    eliminate_identity_ = options.eliminate_identity;
    // Name lookups by hash: a model may have tens of thousands of inputs and outputs, and a run
    // fed by name must stay linear in their number.
    const auto inputs = session_->inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      input_index_.emplace(inputs[i].name, static_cast<int64_t>(i));
    }
    const auto overrides = session_->overridable_inputs();
    for (size_t i = 0; i < overrides.size(); ++i) {
      input_index_.emplace(overrides[i].name, -static_cast<int64_t>(i) - 1);
    }
    const auto outputs = session_->outputs();
    for (size_t i = 0; i < outputs.size(); ++i) output_index_.emplace(outputs[i].name, i);
  }

  const idem::Session& session() const { return *session_; }
  const idem::Limits& limits() const { return limits_; }
  bool eliminate_identity() const { return eliminate_identity_; }

  std::vector<idem::Value> Run(const py::object& feeds, const PyRunOptions* run_options) const {
    std::span<const idem::ValueInfo> inputs = session_->inputs();
    std::optional<idem::Result<std::vector<idem::Value>>> result;
    if (py::isinstance<py::dict>(feeds)) {
      // A dict naming exactly the required inputs (the usual case) runs positionally; one that
      // overrides an initializer or names an input twice (as str and bytes) goes through
      // RunNamed, which also reports the duplicate.
      std::vector<idem::NamedValue> named;
      std::vector<idem::Value> positional(inputs.size());
      size_t filled = 0;
      bool only_inputs = true;
      for (auto [key, obj] : py::reinterpret_borrow<py::dict>(feeds)) {
        std::string name = NameFromPython(key, "an input name");
        const auto it = input_index_.find(name);
        const size_t index = it != input_index_.end() && it->second >= 0
                                 ? static_cast<size_t>(it->second)
                                 : inputs.size();
        const idem::ValueInfo* info = Find(name);
        if (!info) {
          ThrowError(idem::StatusCode::kNotFound,
                     "'" + name + "' is not an input of the model (inputs: " + InputNames() + ")");
        }
        idem::Value value = ValueFromPython(obj, info->type, "input '" + name + "'");
        if (index < inputs.size() && positional[index].is_null()) {
          positional[index] = value;
          ++filled;
        } else {
          only_inputs = false;
        }
        named.push_back({std::move(name), std::move(value)});
      }
      CheckRunOptions(run_options);
      const std::optional<idem::RunOptions> options = ToRunOptions(run_options);
      py::gil_scoped_release release;
      if (only_inputs && filled == inputs.size()) {
        result.emplace(
            RunWithOptions(*session_, std::span<const idem::Value>(positional), options));
      } else {
        result.emplace(
            RunWithOptions(*session_, std::span<const idem::NamedValue>(named), options));
      }
    } else if (py::isinstance<py::list>(feeds) || py::isinstance<py::tuple>(feeds)) {
      py::sequence seq = py::reinterpret_borrow<py::sequence>(feeds);
      if (seq.size() != inputs.size()) {
        ThrowError(idem::StatusCode::kInvalidArgument, "expected " + std::to_string(inputs.size()) +
                                                           " feeds (" + InputNames() + "), got " +
                                                           std::to_string(seq.size()));
      }
      std::vector<idem::Value> values;
      for (size_t i = 0; i < inputs.size(); ++i) {
        values.push_back(ValueFromPython(seq[i], inputs[i].type, "input '" + inputs[i].name + "'"));
      }
      CheckRunOptions(run_options);
      const std::optional<idem::RunOptions> options = ToRunOptions(run_options);
      py::gil_scoped_release release;
      result.emplace(RunWithOptions(*session_, std::span<const idem::Value>(values), options));
    } else {
      ThrowError(idem::StatusCode::kInvalidArgument,
                 "feeds must be a dict (name -> value) or a list in input order, got " +
                     TypeNameOf(feeds));
    }
    return Unwrap(std::move(*result));
  }

 private:
  // The run options as they stand when the run starts: a set terminate flag or a spent time
  // budget stops the run before any kernel runs.
  static void CheckRunOptions(const PyRunOptions* options) {
    if (!options) return;
    if (options->terminate.load()) {
      ThrowError(idem::StatusCode::kCancelled, "the run was cancelled (RunOptions.terminate)");
    }
    if (options->timeout_seconds && *options->timeout_seconds <= 0) {
      ThrowError(idem::StatusCode::kDeadlineExceeded,
                 "the run's deadline passed before it started (RunOptions.timeout)");
    }
  }

  const idem::ValueInfo* Find(const std::string& name) const {
    const auto it = input_index_.find(name);
    if (it == input_index_.end()) return nullptr;
    if (it->second >= 0) return &session_->inputs()[static_cast<size_t>(it->second)];
    return &session_->overridable_inputs()[static_cast<size_t>(-it->second - 1)];
  }
  std::string InputNames() const { return NameList(session_->inputs()); }

 public:
  // Index of the output named `name` in outputs(), or nullopt.
  std::optional<size_t> OutputIndex(const std::string& name) const {
    const auto it = output_index_.find(name);
    if (it == output_index_.end()) return std::nullopt;
    return it->second;
  }

  // "'a', 'b', ... and 123 more": names for messages, bounded however many the model has.
  static std::string NameList(std::span<const idem::ValueInfo> infos) {
    constexpr size_t kShown = 8;
    std::string names;
    for (size_t i = 0; i < infos.size() && i < kShown; ++i) {
      if (!names.empty()) names += ", ";
      names += "'" + infos[i].name + "'";
    }
    if (infos.size() > kShown) names += " and " + std::to_string(infos.size() - kShown) + " more";
    return names;
  }

 private:
  std::unique_ptr<idem::Session> session_;
  idem::Limits limits_;
  bool eliminate_identity_ = true;
  // inputs() name -> index (>= 0), overridable_inputs() name -> -(index) - 1.
  std::unordered_map<std::string, int64_t> input_index_;
  std::unordered_map<std::string, size_t> output_index_;
};

py::dict MetadataToPython(const idem::ModelMetadata& m) {
  py::dict d;
  d["producer_name"] = Utf8(m.producer_name);
  d["producer_version"] = Utf8(m.producer_version);
  d["domain"] = Utf8(m.domain);
  d["model_version"] = m.model_version;
  d["doc_string"] = Utf8(m.doc_string);
  d["graph_name"] = Utf8(m.graph_name);
  d["graph_doc_string"] = Utf8(m.graph_doc_string);
  py::list props;
  for (const auto& [key, value] : m.metadata_props) {
    props.append(py::make_tuple(Utf8(key), Utf8(value)));
  }
  d["metadata_props"] = props;
  return d;
}

const char* OutcomeName(idem::tools::CaseResult::Outcome outcome) {
  switch (outcome) {
    case idem::tools::CaseResult::Outcome::kPass:
      return "PASS";
    case idem::tools::CaseResult::Outcome::kFail:
      return "FAIL";
    case idem::tools::CaseResult::Outcome::kSkip:
      return "SKIP";
  }
  return "FAIL";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// idem.optimize (issue 9): the Identity remover. Self-contained block: RegisterOptimize() is the
// only entry point, called once at the end of PYBIND11_MODULE.
// ---------------------------------------------------------------------------------------------
namespace {

py::dict OptimizeReportToPython(const idem::OptimizeReport& report) {
  py::list kept;
  for (const idem::KeptIdentity& k : report.kept_nodes) {
    py::dict d;
    // Names come from the file and may be invalid UTF-8: decoded like every other name
    // (surrogateescape), never raising.
    d["graph"] = Utf8(k.graph);
    d["node"] = Utf8(k.node);
    d["index"] = k.node_index;
    d["rule"] = std::string(idem::KeepRuleName(k.rule));
    d["reason"] = std::string(idem::KeepRuleDescription(k.rule));
    kept.append(d);
  }
  py::dict d;
  d["removed"] = report.removed;
  d["kept"] = report.kept;
  d["kept_nodes"] = kept;
  return d;
}

void RegisterOptimize(py::module_& m) {
  // Bytes in, bytes out.
  m.def("_optimize_bytes", [](py::bytes model) {
    std::string_view in = model;
    std::string out;
    idem::Result<idem::OptimizeReport> report = idem::OptimizeReport{};
    {
      py::gil_scoped_release release;
      report = idem::OptimizeModelBytes(std::as_bytes(std::span(in.data(), in.size())), &out);
    }
    if (!report.ok()) ThrowStatus(report.status());
    return py::make_tuple(py::bytes(out), OptimizeReportToPython(*report));
  });
  // Path in, bytes out: the file is read as `idem optimize` reads it (a regular file, opened
  // non-blocking, at most max_model_bytes), so a FIFO or a device is refused, never read forever.
  m.def("_optimize_path", [](const std::string& in) {
    std::string out;
    idem::Result<idem::OptimizeReport> report = idem::OptimizeReport{};
    {
      py::gil_scoped_release release;
      const idem::OptimizeOptions options;
      auto bytes = idem::ReadFileBytes(in, options.limits.max_model_bytes);
      if (!bytes.ok()) {
        report = bytes.status();
      } else {
        report = idem::OptimizeModelBytes(std::as_bytes(std::span(bytes->data(), bytes->size())),
                                          &out, options);
      }
    }
    if (!report.ok()) ThrowStatus(report.status(), Phase::kLoad);  // a missing file: NoSuchFile
    return py::make_tuple(py::bytes(out), OptimizeReportToPython(*report));
  });
  // Path in, path out (atomic write, in-place and external-data checks).
  m.def("_optimize_file", [](const std::string& in, const std::string& out, bool in_place) {
    idem::OptimizeOptions options;
    options.in_place = in_place;
    idem::Result<idem::OptimizeReport> report = idem::OptimizeReport{};
    {
      py::gil_scoped_release release;
      report = idem::OptimizeModelFile(in, out, options);
    }
    if (!report.ok()) ThrowStatus(report.status());
    return OptimizeReportToPython(*report);
  });
}

}  // namespace
// ---------------------------------------------------------------------------------------------
// end of idem.optimize block
// ---------------------------------------------------------------------------------------------

PYBIND11_MODULE(_idem, m) {
  m.doc() = "Native core of the idem Python package; use `import idem` instead.";
  G().numpy = py::module_::import("numpy");

  // idem.Error derives from both RuntimeError and ValueError so that either `except` catches it.
  py::tuple bases = py::make_tuple(py::reinterpret_borrow<py::object>(PyExc_RuntimeError),
                                   py::reinterpret_borrow<py::object>(PyExc_ValueError));
  py::dict ns;
  ns["__module__"] = "idem";
  ns["__doc__"] =
      "An error reported by idem. str(error) is idem's message (naming the model, node, input and "
      "rule involved); `code` is the status code name, e.g. 'INVALID_MODEL'.";
  ns["code"] = "UNKNOWN";
  G().error_type = py::reinterpret_borrow<py::object>((PyObject*)&PyType_Type)("Error", bases, ns);
  m.attr("Error") = G().error_type;

  m.def(
      "_set_raw_tensor_class", [](py::object cls) { G().raw_tensor_type = std::move(cls); },
      "Registers idem.RawTensor (called by idem/__init__.py).");

  py::object value_info_type =
      py::module_::import("collections")
          .attr("namedtuple")("ValueInfo", py::make_tuple("name", "type", "shape"));
  value_info_type.attr("__module__") = "idem";
  value_info_type.attr("__doc__") =
      "A model input or output: name, ONNX type string such as 'tensor(float)' or "
      "'optional(seq(tensor(int64)))', and shape (list of int / str / None per dim, or None when "
      "the rank is unknown; for seq/optional types, the shape of the contained tensor).";
  m.attr("ValueInfo") = value_info_type;

  // The exception classes onnxruntime users catch, each a subclass of idem.Error.
  const std::pair<const char*, const char*> kErrorClasses[] = {
      {"InvalidArgument", "A caller-supplied value (feed, name, option, model source) is wrong."},
      {"InvalidGraph", "The model breaks an ONNX rule (unreadable, ill-typed or ill-formed)."},
      {"NotImplemented", "Valid ONNX that idem does not implement (operator, opset, type)."},
      {"NoSuchFile", "The model file (or its external data) cannot be found or read."},
      {"Fail", "Any other failure: a limit, a run-time precondition, cancellation, a deadline."},
  };
  for (const auto& [name, doc] : kErrorClasses) {
    py::dict cls_ns;
    cls_ns["__module__"] = "idem";
    cls_ns["__doc__"] = doc;
    py::object cls = py::reinterpret_borrow<py::object>((PyObject*)&PyType_Type)(
        name, py::make_tuple(G().error_type), cls_ns);
    G().error_classes[name] = cls;
    m.attr(name) = cls;
  }

  py::class_<PyRunOptions>(m, "RunOptions")
      .def(py::init<>())
      .def_property(
          "terminate", [](const PyRunOptions& o) { return o.terminate.load(); },
          [](PyRunOptions& o, bool v) { o.terminate.store(v); })
      .def_property(
          "timeout", [](const PyRunOptions& o) { return o.timeout_seconds; },
          [](PyRunOptions& o, std::optional<double> v) {
            // NaN has no deadline to turn into (converting it to a clock duration is undefined).
            if (v && std::isnan(*v)) {
              ThrowError(idem::StatusCode::kInvalidArgument,
                         "RunOptions.timeout must be a number of seconds or None, got nan");
            }
            o.timeout_seconds = v;
          });

  m.def("default_limits", [] { return LimitsToPython(idem::Limits{}); });

  m.def("supported_operators", [] {
    py::list out;
    for (const idem::OperatorInfo& op : idem::SupportedOperators()) {
      out.append(py::make_tuple(op.domain, op.op_type, op.since_version));
    }
    return out;
  });

  // Runs and converts the outputs named in `output_names` (None: all, in outputs() order).
  // `run_options` is taken as an object, not `const PyRunOptions*`: pybind11 would load None
  // into a pointer only on its second (converting) pass, after a failed attribute lookup that
  // costs more than the rest of a small run's conversions.
  auto run = [](const PySession& s, const py::object& feeds, const py::object& output_names,
                bool strings_as_str, const py::object& run_options_obj) {
    const Strings strings = strings_as_str ? Strings::kStr : Strings::kBytes;
    const PyRunOptions* run_options =
        run_options_obj.is_none() ? nullptr : &run_options_obj.cast<const PyRunOptions&>();
    std::vector<size_t> picks;
    auto infos = s.session().outputs();
    if (!output_names.is_none()) {
      if (py::isinstance<py::str>(output_names) || py::isinstance<py::bytes>(output_names) ||
          !py::isinstance<py::iterable>(output_names)) {
        ThrowError(
            idem::StatusCode::kInvalidArgument,
            "output_names must be a list of output names or None, got " + TypeNameOf(output_names));
      }
      for (const py::handle name_obj : py::reinterpret_borrow<py::iterable>(output_names)) {
        const std::string name = NameFromPython(name_obj, "an output name");
        const std::optional<size_t> index = s.OutputIndex(name);
        if (!index) {
          ThrowError(idem::StatusCode::kInvalidArgument,
                     "'" + name + "' is not an output of the model (outputs: " +
                         PySession::NameList(infos) + ")");
        }
        picks.push_back(*index);
      }
    }
    std::vector<idem::Value> outputs = s.Run(feeds, run_options);
    py::list out;
    if (output_names.is_none()) {
      for (const idem::Value& v : outputs) out.append(ValueToPython(v, strings));
    } else {
      for (size_t i : picks) out.append(ValueToPython(outputs[i], strings));
    }
    return out;
  };

  py::class_<PySession>(m, "Session")
      .def(py::init<const py::object&, bool, const std::string&, const py::dict&,
                    const std::string&, bool>(),
           py::arg("model"), py::arg("eliminate_identity") = true, py::arg("base_dir") = "",
           py::arg("limits") = py::dict(), py::arg("external_data") = "map",
           py::arg("allow_external_hard_links") = false)
      .def_property_readonly("inputs",
                             [value_info_type](const PySession& s) {
                               return InfoList(s.session().inputs(), value_info_type);
                             })
      .def_property_readonly("overridable_inputs",
                             [value_info_type](const PySession& s) {
                               return InfoList(s.session().overridable_inputs(), value_info_type);
                             })
      .def_property_readonly("outputs",
                             [value_info_type](const PySession& s) {
                               return InfoList(s.session().outputs(), value_info_type);
                             })
      .def_property_readonly(
          "metadata", [](const PySession& s) { return MetadataToPython(s.session().metadata()); })
      .def_property_readonly("limits",
                             [](const PySession& s) { return LimitsToPython(s.limits()); })
      .def_property_readonly("eliminate_identity", &PySession::eliminate_identity)
      .def("run", run, py::arg("feeds"), py::arg("output_names") = py::none(),
           py::arg("strings_as_str") = false, py::arg("run_options") = py::none())
      .def(
          "run_dict",
          [](const PySession& s, const py::object& feeds) {
            std::vector<idem::Value> outputs = s.Run(feeds, nullptr);
            py::dict out;
            auto infos = s.session().outputs();
            for (size_t i = 0; i < outputs.size(); ++i) {
              out[Utf8(infos[i].name)] = ValueToPython(outputs[i]);
            }
            return out;
          },
          py::arg("feeds"))
      .def("describe", [](const PySession& s) { return MessageText(s.session().Describe()); });

  m.def(
      "run_backend_test",
      [](const std::string& folder, bool skip_unsupported, std::optional<double> rtol,
         std::optional<double> atol) {
        if (folder.find('\0') != std::string::npos) {
          ThrowError(idem::StatusCode::kInvalidArgument,
                     "the folder path contains a NUL character (paths cannot contain NUL)");
        }
        // As `idem test`: either one switches float outputs to the tolerance rule.
        std::optional<idem::tools::Tolerance> tolerance;
        if (rtol || atol) {
          for (const auto& [name, v] : {std::pair{"rtol", rtol}, std::pair{"atol", atol}}) {
            if (v && !(*v >= 0)) {
              ThrowError(idem::StatusCode::kInvalidArgument,
                         fmt::format("{} must be a non-negative number, got {}", name, *v));
            }
          }
          tolerance = idem::tools::Tolerance{rtol.value_or(0), atol.value_or(0)};
        }
        idem::tools::CaseResult result;
        {
          py::gil_scoped_release release;
          result = idem::tools::RunBackendCase(folder, skip_unsupported, {}, 0, tolerance);
        }
        return py::make_tuple(OutcomeName(result.outcome), result.reason);
      },
      py::arg("folder"), py::arg("skip_unsupported") = false, py::arg("rtol") = py::none(),
      py::arg("atol") = py::none());

  RegisterOptimize(m);  // idem.optimize block above
}
