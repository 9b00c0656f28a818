// Python objects <-> idem::Value:
//
// - numpy array (numeric, bool, complex, float16) <-> tensor, sharing memory both ways when the
//   array is C-contiguous, aligned and native-endian (input arrays are kept alive by the Buffer's
//   owner; output arrays are read-only views kept alive by a capsule owning the Value);
// - numpy object/bytes/str array <-> tensor(string) (outputs: object arrays of bytes, or str);
// - idem.RawTensor(element_type, shape, data) <-> tensors of types numpy lacks (bfloat16, ...);
// - list of the above <-> seq(tensor(...));
// - None / value <-> optional(...) (empty / holding the value).
//
// Every feed is converted against the type the model declares for its input, so empty sequences
// and empty optionals get their element type from the model.
#include "python/py_convert.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace idem_py {
namespace {

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

}  // namespace

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

namespace {

// ---------------------------------------------------------------------------------------------
// idem::Value -> Python
// ---------------------------------------------------------------------------------------------

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

}  // namespace

py::object ValueToPython(const idem::Value& value, Strings strings) {
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

}  // namespace idem_py
