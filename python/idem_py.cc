// pybind11 bindings for idem: the `idem._idem` extension module.
//
// The Python-facing API (docstrings, RawTensor, Error) is documented in python/idem/__init__.py
// and python/README.md. The module is made of one file per job:
//   py_errors.cc    idem.Error and its subclasses, text conversion of model bytes
//   py_convert.cc   Python objects <-> idem::Value
//   py_session.cc   Session, RunOptions, limits, supported operators
//   py_optimize.cc  the Identity remover
//   py_backend.cc   run_backend_test
#include <pybind11/pybind11.h>

#include <utility>

#include "python/py_common.h"

namespace py = pybind11;

PYBIND11_MODULE(_idem, m) {
  m.doc() = "Native core of the idem Python package; use `import idem` instead.";
  m.attr("__version__") = IDEM_VERSION_STRING;  // the project's version (python/CMakeLists.txt)
  idem_py::G().numpy = py::module_::import("numpy");
  idem_py::RegisterErrors(m);
  m.def(
      "_set_raw_tensor_class",
      [](py::object cls) { idem_py::G().raw_tensor_type = std::move(cls); },
      "Registers idem.RawTensor (called by idem/__init__.py).");

  idem_py::RegisterSession(m);
  idem_py::RegisterOptimize(m);
  idem_py::RegisterBackend(m);
}
