// Errors: idem::Status as idem.Error subclasses named like onnxruntime's, and text conversion
// of the bytes a model holds.
#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "python/py_common.h"

namespace idem_py {

Globals& G() {
  static Globals* globals = new Globals();
  return *globals;
}

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

namespace {

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

}  // namespace

void ThrowError(idem::StatusCode code, const std::string& message, Phase phase) {
  py::object cls = G().error_classes.at(ErrorClassName(code, phase));
  py::object exc = cls(MessageText(message));
  exc.attr("code") = py::str(std::string(idem::StatusCodeName(code)));
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw py::error_already_set();
}

void ThrowStatus(const idem::Status& status, Phase phase) {
  ThrowError(status.code(), status.message(), phase);
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

void RegisterErrors(py::module_& m) {
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
}

}  // namespace idem_py
