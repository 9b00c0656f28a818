// Python objects <-> idem::Value (the table in py_convert.cc says which).
#ifndef IDEM_PYTHON_PY_CONVERT_H_
#define IDEM_PYTHON_PY_CONVERT_H_

#include <string>

#include "python/py_common.h"

namespace idem_py {

// Converts a feed against the type the model declares for it (so empty sequences and empty
// optionals get their element type from the model). `where` names it in errors.
idem::Value ValueFromPython(const py::handle& obj, const idem::Type& declared,
                            const std::string& where);

// How string tensors come back: bytes (idem.Session) or str (idem.InferenceSession, as
// onnxruntime does), decoded with surrogateescape so every byte string round-trips.
enum class Strings { kBytes, kStr };

py::object ValueToPython(const idem::Value& value, Strings strings = Strings::kBytes);

}  // namespace idem_py

#endif  // IDEM_PYTHON_PY_CONVERT_H_
