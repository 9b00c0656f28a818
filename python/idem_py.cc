// pybind11 bindings for idem: the `idem._idem` extension module.
//
// The Python-facing API (docstrings, RawTensor, Error) is documented in python/idem/__init__.py
// and python/README.md. This file converts between Python objects and idem::Value:
//
//   numpy array (numeric, bool, complex, float16) <-> tensor, sharing memory both ways when the
//       array is C-contiguous, aligned and native-endian (input arrays are kept alive by the
//       Buffer's owner; output arrays are read-only views kept alive by a capsule owning the Value)
//   numpy object/bytes/str array                  <-> tensor(string) (outputs: object arrays of bytes)
//   idem.RawTensor(element_type, shape, data)     <-> tensors of types numpy lacks (bfloat16, ...)
//   list of the above                             <-> seq(tensor(...))
//   None / value                                  <-> optional(...) (empty / holding the value)
//
// Every feed is converted against the type the model declares for its input, so empty sequences
// and empty optionals get their element type from the model.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "idem/idem.h"
#include "tools/backend_test.h"

namespace py = pybind11;

namespace {

// Objects kept for the life of the process. Deliberately leaked: destroying Python objects after
// the interpreter has finalized would crash at exit.
struct Globals {
  py::object error_type;       // idem.Error
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

[[noreturn]] void ThrowError(idem::StatusCode code, const std::string& message) {
  py::object exc = G().error_type(py::str(message));
  exc.attr("code") = py::str(std::string(idem::StatusCodeName(code)));
  PyErr_SetObject(G().error_type.ptr(), exc.ptr());
  throw py::error_already_set();
}

[[noreturn]] void ThrowStatus(const idem::Status& status) {
  ThrowError(status.code(), status.message());
}

template <typename T>
T Unwrap(idem::Result<T> result) {
  if (!result.ok()) ThrowStatus(result.status());
  return std::move(result).value();
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
    case E::kFloat: return "float32";
    case E::kUint8: return "uint8";
    case E::kInt8: return "int8";
    case E::kUint16: return "uint16";
    case E::kInt16: return "int16";
    case E::kInt32: return "int32";
    case E::kInt64: return "int64";
    case E::kBool: return "bool";
    case E::kFloat16: return "float16";
    case E::kDouble: return "float64";
    case E::kUint32: return "uint32";
    case E::kUint64: return "uint64";
    case E::kComplex64: return "complex64";
    case E::kComplex128: return "complex128";
    default: return nullptr;
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
    case 'b': return E::kBool;
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
    case 'O': return E::kString;
    default: return std::nullopt;
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
bool IsNumpyScalar(const py::handle& obj) {
  return py::isinstance(obj, G().numpy.attr("generic"));
}

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
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(item.ptr(), &size);
    if (!data) throw py::error_already_set();
    return std::string(data, static_cast<size_t>(size));
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
  if (IsNumpyArray(obj) || IsNumpyScalar(obj)) {
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
               where + ": numpy dtype " + std::string(py::str(dtype)) +
                   " has no ONNX tensor type");
  }
  if (*type == idem::ElementType::kString) return StringTensorFromArray(arr, where);

  // Share memory when numpy's layout is already idem's (C order, aligned, little-endian bytes
  // in native order); otherwise copy into such an array first.
  const bool native = dtype.attr("isnative").cast<bool>();
  if (!native) arr = arr.attr("astype")(dtype.attr("newbyteorder")("="));
  py::object flags = arr.attr("flags");
  if (!flags.attr("c_contiguous").cast<bool>() || !flags.attr("aligned").cast<bool>()) {
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
        ThrowError(idem::StatusCode::kInvalidArgument,
                   where + " is " + declared.ToString() +
                       "; None is only accepted for optional inputs");
      }
      return TensorFromPython(obj, declared.element_type(), where);
    case idem::ValueKind::kSequence: {
      if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj)) {
        ThrowError(idem::StatusCode::kInvalidArgument,
                   where + " is " + declared.ToString() + "; feed a list of tensors, got " +
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

py::object TensorToPython(const idem::Value& value) {
  const idem::Tensor& t = value.tensor();
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.element_type() == idem::ElementType::kString) {
    py::array out(py::dtype("O"), shape);
    // Fill the object array through a flat view (each slot starts as None).
    py::object flat = out.attr("reshape")(-1);
    size_t i = 0;
    for (const std::string& s : t.strings()) {
      flat[py::int_(i++)] = py::bytes(s);
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
    return py::array(dtype, shape);  // nothing to share
  }
  // A read-only view of idem's bytes; the capsule owns a Value handle keeping them alive.
  auto* keep = new idem::Value(value);
  py::capsule base(keep, [](void* p) { delete static_cast<idem::Value*>(p); });
  py::array out(dtype, shape, std::vector<py::ssize_t>{}, t.data().data(), base);
  out.attr("flags").attr("writeable") = false;
  return out;
}

py::object ValueToPython(const idem::Value& value) {
  switch (value.kind()) {
    case idem::ValueKind::kTensor: return TensorToPython(value);
    case idem::ValueKind::kSequence: {
      py::list out;
      for (const idem::Value& v : value.sequence().values()) out.append(ValueToPython(v));
      return out;
    }
    case idem::ValueKind::kOptional: {
      const idem::Optional& o = value.optional();
      if (!o.has_value()) return py::none();
      return ValueToPython(o.value());
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
      dims.append(py::str(d.param));
    } else {
      dims.append(py::none());
    }
  }
  return dims;
}

py::list InfoList(std::span<const idem::ValueInfo> infos, const py::object& value_info_type) {
  py::list out;
  for (const idem::ValueInfo& info : infos) {
    out.append(value_info_type(info.name, info.type.ToString(), DimsToPython(info.type)));
  }
  return out;
}

class PySession {
 public:
  PySession(const py::object& model, bool eliminate_identity, const std::string& base_dir) {
    idem::SessionOptions options;
    options.eliminate_identity = eliminate_identity;
    py::object source = model;
    if (py::hasattr(source, "SerializeToString") && !py::isinstance<py::bytes>(source)) {
      source = source.attr("SerializeToString")();
    }
    std::optional<idem::Result<idem::Session>> created;
    if (py::isinstance<py::bytes>(source) || py::isinstance<py::bytearray>(source) ||
        py::isinstance<py::memoryview>(source)) {
      // Tensors' raw_data stays in the model's bytes, so the session borrows an immutable
      // `bytes` object (bytearray and memoryview contents may change: copied into one first)
      // and every value keeps a reference to it.
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
    } else {
      std::string path = py::str(py::module_::import("os").attr("fspath")(source));
      py::gil_scoped_release release;
      created.emplace(idem::Session::Create(path, options));
    }
    session_ = std::make_unique<idem::Session>(Unwrap(std::move(*created)));
  }

  const idem::Session& session() const { return *session_; }

  std::vector<idem::Value> Run(const py::object& feeds) const {
    std::span<const idem::ValueInfo> inputs = session_->inputs();
    std::optional<idem::Result<std::vector<idem::Value>>> result;
    if (py::isinstance<py::dict>(feeds)) {
      std::vector<idem::NamedValue> named;
      for (auto [key, obj] : py::reinterpret_borrow<py::dict>(feeds)) {
        std::string name = py::str(key);
        const idem::ValueInfo* info = Find(name);
        if (!info) {
          ThrowError(idem::StatusCode::kNotFound,
                     "'" + name + "' is not an input of the model (inputs: " + InputNames() + ")");
        }
        named.push_back({name, ValueFromPython(obj, info->type, "input '" + name + "'")});
      }
      py::gil_scoped_release release;
      result.emplace(session_->RunNamed(named));
    } else if (py::isinstance<py::list>(feeds) || py::isinstance<py::tuple>(feeds)) {
      py::sequence seq = py::reinterpret_borrow<py::sequence>(feeds);
      if (seq.size() != inputs.size()) {
        ThrowError(idem::StatusCode::kInvalidArgument,
                   "expected " + std::to_string(inputs.size()) + " feeds (" + InputNames() +
                       "), got " + std::to_string(seq.size()));
      }
      std::vector<idem::Value> values;
      for (size_t i = 0; i < inputs.size(); ++i) {
        values.push_back(
            ValueFromPython(seq[i], inputs[i].type, "input '" + inputs[i].name + "'"));
      }
      py::gil_scoped_release release;
      result.emplace(session_->Run(values));
    } else {
      ThrowError(idem::StatusCode::kInvalidArgument,
                 "feeds must be a dict (name -> value) or a list in input order, got " +
                     TypeNameOf(feeds));
    }
    return Unwrap(std::move(*result));
  }

 private:
  const idem::ValueInfo* Find(const std::string& name) const {
    for (const auto& info : session_->inputs()) {
      if (info.name == name) return &info;
    }
    for (const auto& info : session_->overridable_inputs()) {
      if (info.name == name) return &info;
    }
    return nullptr;
  }
  std::string InputNames() const {
    std::string names;
    for (const auto& info : session_->inputs()) {
      if (!names.empty()) names += ", ";
      names += "'" + info.name + "'";
    }
    return names;
  }

  std::unique_ptr<idem::Session> session_;
};

const char* OutcomeName(idem::tools::CaseResult::Outcome outcome) {
  switch (outcome) {
    case idem::tools::CaseResult::Outcome::kPass: return "PASS";
    case idem::tools::CaseResult::Outcome::kFail: return "FAIL";
    case idem::tools::CaseResult::Outcome::kSkip: return "SKIP";
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
    d["graph"] = k.graph;
    d["node"] = k.node;
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

  py::class_<PySession>(m, "Session")
      .def(py::init<const py::object&, bool, const std::string&>(), py::arg("model"),
           py::arg("eliminate_identity") = true, py::arg("base_dir") = "")
      .def_property_readonly(
          "inputs",
          [value_info_type](const PySession& s) {
            return InfoList(s.session().inputs(), value_info_type);
          })
      .def_property_readonly(
          "overridable_inputs",
          [value_info_type](const PySession& s) {
            return InfoList(s.session().overridable_inputs(), value_info_type);
          })
      .def_property_readonly(
          "outputs",
          [value_info_type](const PySession& s) {
            return InfoList(s.session().outputs(), value_info_type);
          })
      .def("run",
           [](const PySession& s, const py::object& feeds) {
             std::vector<idem::Value> outputs = s.Run(feeds);
             py::list out;
             for (const idem::Value& v : outputs) out.append(ValueToPython(v));
             return out;
           },
           py::arg("feeds"))
      .def("run_dict",
           [](const PySession& s, const py::object& feeds) {
             std::vector<idem::Value> outputs = s.Run(feeds);
             py::dict out;
             auto infos = s.session().outputs();
             for (size_t i = 0; i < outputs.size(); ++i) {
               out[py::str(infos[i].name)] = ValueToPython(outputs[i]);
             }
             return out;
           },
           py::arg("feeds"))
      .def("describe", [](const PySession& s) { return s.session().Describe(); });

  m.def(
      "run_backend_test",
      [](const std::string& folder, bool skip_unsupported) {
        idem::tools::CaseResult result;
        {
          py::gil_scoped_release release;
          result = idem::tools::RunBackendCase(folder, skip_unsupported);
        }
        return py::make_tuple(OutcomeName(result.outcome), result.reason);
      },
      py::arg("folder"), py::arg("skip_unsupported") = false);

  RegisterOptimize(m);  // idem.optimize block above
}
