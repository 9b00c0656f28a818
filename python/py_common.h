// Shared by the files of the `idem._idem` extension module (python/): the process-wide Python
// objects, text conversion of model bytes, and how idem's errors are raised as idem.Error
// subclasses. Each file registers its part of the module (Register* below, called by
// PYBIND11_MODULE in idem_py.cc).
#ifndef IDEM_PYTHON_PY_COMMON_H_
#define IDEM_PYTHON_PY_COMMON_H_

#include <pybind11/pybind11.h>

#include <map>
#include <string>
#include <string_view>

#include "idem/idem.h"

namespace idem_py {

namespace py = pybind11;

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

Globals& G();

// Bytes from a model (names, doc strings, string tensors) as str: UTF-8, with undecodable bytes
// kept as lone surrogates (PEP 383) so that encoding back with surrogateescape restores them
// exactly. Never raises UnicodeDecodeError.
py::str Utf8(std::string_view bytes);

// For messages: undecodable bytes become \xNN escapes so the text prints on any terminal.
py::str MessageText(std::string_view bytes);

// When an error is raised: while loading, "not found" is a missing file; afterwards it is a
// wrong name passed by the caller.
enum class Phase { kLoad, kRun };

// Raises the idem.Error subclass for `code` (InvalidArgument, InvalidGraph, NotImplemented,
// NoSuchFile, Fail) with `message` and the code's name as its `code` attribute.
[[noreturn]] void ThrowError(idem::StatusCode code, const std::string& message,
                             Phase phase = Phase::kRun);
[[noreturn]] void ThrowStatus(const idem::Status& status, Phase phase = Phase::kRun);

template <typename T>
T Unwrap(idem::Result<T> result, Phase phase = Phase::kRun) {
  if (!result.ok()) ThrowStatus(result.status(), phase);
  return std::move(result).value();
}

// A name given by the caller (str, encoded with surrogateescape to match Utf8(), or bytes).
std::string NameFromPython(const py::handle& obj, const std::string& what);

std::string TypeNameOf(const py::handle& obj);

// The module's parts, in the order PYBIND11_MODULE registers them.
void RegisterErrors(py::module_& m);    // py_errors.cc: idem.Error and its subclasses
void RegisterSession(py::module_& m);   // py_session.cc: Session, RunOptions, limits, operators
void RegisterOptimize(py::module_& m);  // py_optimize.cc: the Identity remover
void RegisterBackend(py::module_& m);   // py_backend.cc: run_backend_test

}  // namespace idem_py

#endif  // IDEM_PYTHON_PY_COMMON_H_
