// The native half of the `idem-onnxruntime-node` package: idem sessions for Node.js through
// Node-API (node-addon-api). lib/backend.js turns it into onnxruntime-node's API; this file only
// loads, describes and runs, using idem's public C++ API (include/idem).
//
//   createSession(pathOrUint8Array, {eliminateIdentity, foldConstants}) -> Promise<Session>
//   Session.inputs / .outputs: [{name, isTensor, type (ONNX code), shape: [number|string]}]
//   Session.run(feeds[], outputIndices[], terminate) -> Promise<[{type, dims, data}]>
//   Session.release()
//
// Loading and running happen on libuv's worker pool (Napi::AsyncWorker), never on the JS thread.
// Feeds: the typed arrays' memory is borrowed, not copied (a reference keeps each array alive
// until the run settles). Outputs whose bytes lie inside a feed's array are handed back as views
// of that same ArrayBuffer; other outputs are copied, on the worker, into memory the returned
// ArrayBuffer owns (idem's own buffers may be shared constants or read-only file mappings, and
// JS code is allowed to write into an output's data).
#include <napi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "idem/idem.h"

namespace {

using idem::ElementType;

// The element types onnxruntime-node carries, with their JS names and typed arrays.
struct JsType {
  ElementType type;
  const char* name;
  napi_typedarray_type array;
  const char* array_name;
};

constexpr JsType kJsTypes[] = {
    {ElementType::kFloat, "float32", napi_float32_array, "Float32Array"},
    {ElementType::kUint8, "uint8", napi_uint8_array, "Uint8Array"},
    {ElementType::kInt8, "int8", napi_int8_array, "Int8Array"},
    {ElementType::kUint16, "uint16", napi_uint16_array, "Uint16Array"},
    {ElementType::kInt16, "int16", napi_int16_array, "Int16Array"},
    {ElementType::kInt32, "int32", napi_int32_array, "Int32Array"},
    {ElementType::kInt64, "int64", napi_bigint64_array, "BigInt64Array"},
    {ElementType::kString, "string", napi_uint8_array, "Array"},
    {ElementType::kBool, "bool", napi_uint8_array, "Uint8Array"},
    {ElementType::kFloat16, "float16", napi_uint16_array, "Uint16Array"},
    {ElementType::kDouble, "float64", napi_float64_array, "Float64Array"},
    {ElementType::kUint32, "uint32", napi_uint32_array, "Uint32Array"},
    {ElementType::kUint64, "uint64", napi_biguint64_array, "BigUint64Array"},
    {ElementType::kUint4, "uint4", napi_uint8_array, "Uint8Array"},
    {ElementType::kInt4, "int4", napi_uint8_array, "Uint8Array"},
};

const JsType* FindJsType(ElementType type) {
  for (const JsType& t : kJsTypes) {
    if (t.type == type) return &t;
  }
  return nullptr;
}

const JsType* FindJsType(const std::string& name) {
  for (const JsType& t : kJsTypes) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

size_t TypedArrayElementSize(napi_typedarray_type type) {
  switch (type) {
    case napi_int8_array:
    case napi_uint8_array:
    case napi_uint8_clamped_array:
      return 1;
    case napi_int16_array:
    case napi_uint16_array:
      return 2;
    case napi_int32_array:
    case napi_uint32_array:
    case napi_float32_array:
      return 4;
    case napi_float64_array:
    case napi_bigint64_array:
    case napi_biguint64_array:
      return 8;
    default:
      return 2;  // Float16Array (newer Node.js versions)
  }
}

// A JS error carrying idem's status code name in `.code` ("INVALID_ARGUMENT", ...).
Napi::Error StatusError(Napi::Env env, const idem::Status& status) {
  Napi::Error error = Napi::Error::New(env, status.message());
  error.Set("code", Napi::String::New(env, std::string(idem::StatusCodeName(status.code()))));
  return error;
}

// ONNX type text as ONNX Runtime prints it in its messages: "tensor(float)".
std::string OrtTypeText(ElementType type) {
  return "tensor(" + std::string(idem::ElementTypeName(type)) + ")";
}

Napi::Object DescribeValue(Napi::Env env, const idem::ValueInfo& info) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("name", Napi::String::New(env, info.name));
  const bool is_tensor = info.type.is_tensor();
  o.Set("isTensor", Napi::Boolean::New(env, is_tensor));
  o.Set("typeText", Napi::String::New(env, info.type.ToString()));
  if (!is_tensor) return o;
  o.Set("type", Napi::Number::New(env, static_cast<int32_t>(info.type.element_type())));
  // As onnxruntime-node reports dims: a number when fixed, the symbol's name when symbolic, ""
  // when unknown; [] when the rank is unknown.
  Napi::Array shape = Napi::Array::New(env);
  if (const auto& dims = info.type.shape()) {
    for (uint32_t i = 0; i < dims->size(); ++i) {
      const idem::Dim& d = (*dims)[i];
      if (d.value) {
        shape.Set(i, Napi::Number::New(env, static_cast<double>(*d.value)));
      } else {
        shape.Set(i, Napi::String::New(env, d.param));
      }
    }
  }
  o.Set("shape", shape);
  return o;
}

// What one output becomes in JS, prepared on the worker thread.
struct OutputData {
  ElementType type = ElementType::kUndefined;
  std::vector<int64_t> dims;
  uint64_t elements = 0;
  size_t bytes = 0;
  // >= 0: the bytes lie in feed `alias_feed`'s ArrayBuffer at `alias_offset`.
  int alias_feed = -1;
  size_t alias_offset = 0;
  // Otherwise a copy the ArrayBuffer will own (freed by its finalizer).
  std::byte* copy = nullptr;
  std::vector<std::string> strings;
  ~OutputData() { delete[] copy; }
  OutputData() = default;
  OutputData(const OutputData&) = delete;
  OutputData& operator=(const OutputData&) = delete;
  OutputData(OutputData&& o) noexcept
      : type(o.type),
        dims(std::move(o.dims)),
        elements(o.elements),
        bytes(o.bytes),
        alias_feed(o.alias_feed),
        alias_offset(o.alias_offset),
        copy(std::exchange(o.copy, nullptr)),
        strings(std::move(o.strings)) {}
};

// A feed's borrowed memory: the typed array's bytes and where they sit in its ArrayBuffer.
struct Borrowed {
  const std::byte* data = nullptr;
  size_t bytes = 0;
  size_t buffer_offset = 0;  // of `data` in the ArrayBuffer
  // False for a SharedArrayBuffer, which Node-API cannot make typed arrays on: outputs in it
  // are copied.
  bool aliasable = false;
  Napi::Reference<Napi::Object> buffer;
};

class SessionWrap;

class CreateWorker final : public Napi::AsyncWorker {
 public:
  CreateWorker(Napi::Env env, std::string path, idem::Buffer bytes, bool from_bytes,
               idem::SessionOptions options)
      : Napi::AsyncWorker(env, "idem:createSession"),
        deferred_(Napi::Promise::Deferred::New(env)),
        path_(std::move(path)),
        bytes_(std::move(bytes)),
        from_bytes_(from_bytes),
        options_(options) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override {
    idem::Result<idem::Session> session =
        from_bytes_ ? idem::Session::CreateFromBuffer(bytes_, "", options_)
                    : idem::Session::Create(path_, options_);
    if (!session.ok()) {
      status_ = session.status();
      SetError(status_.message());
      return;
    }
    session_ = std::make_shared<const idem::Session>(std::move(session).value());
  }

  void OnOK() override;
  void OnError(const Napi::Error&) override {
    deferred_.Reject(StatusError(Env(), status_).Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::string path_;
  idem::Buffer bytes_;
  bool from_bytes_;
  idem::SessionOptions options_;
  idem::Status status_;
  std::shared_ptr<const idem::Session> session_;
};

class RunWorker final : public Napi::AsyncWorker {
 public:
  RunWorker(Napi::Env env, std::shared_ptr<const idem::Session> session,
            std::vector<Borrowed> borrowed, std::vector<idem::Value> feeds,
            std::vector<uint32_t> fetch)
      : Napi::AsyncWorker(env, "idem:run"),
        deferred_(Napi::Promise::Deferred::New(env)),
        session_(std::move(session)),
        borrowed_(std::move(borrowed)),
        feeds_(std::move(feeds)),
        fetch_(std::move(fetch)) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override {
    idem::Result<std::vector<idem::Value>> outputs = session_->Run(feeds_);
    if (!outputs.ok()) return Fail(outputs.status());
    outputs_.reserve(fetch_.size());
    for (uint32_t index : fetch_) {
      const idem::Value& v = (*outputs)[index];
      if (!v.is_tensor()) {
        return Fail(idem::Status(
            idem::StatusCode::kUnsupported,
            "output '" + session_->outputs()[index].name + "' is " + v.type().ToString() +
                ": non tensor type is temporarily not supported (onnxruntime-node's API "
                "carries tensors only)"));
      }
      const idem::Tensor& t = v.tensor();
      OutputData out;
      out.type = t.element_type();
      if (FindJsType(out.type) == nullptr) {
        return Fail(idem::Status(idem::StatusCode::kUnsupported,
                                 "output '" + session_->outputs()[index].name + "' is " +
                                     OrtTypeText(out.type) +
                                     ", which onnxruntime-node's Tensor cannot hold"));
      }
      out.dims.assign(t.shape().begin(), t.shape().end());
      out.elements = static_cast<uint64_t>(t.element_count());
      if (out.type == ElementType::kString) {
        out.strings.assign(t.strings().begin(), t.strings().end());
      } else {
        const idem::Buffer& data = t.data();
        out.bytes = data.size();
        const size_t element_size = ElementSizeForAlias(out.type);
        for (size_t f = 0; f < borrowed_.size() && out.bytes > 0; ++f) {
          const Borrowed& b = borrowed_[f];
          if (b.aliasable && b.data != nullptr && data.data() >= b.data &&
              data.data() + out.bytes <= b.data + b.bytes) {
            const size_t offset = b.buffer_offset + static_cast<size_t>(data.data() - b.data);
            if (offset % element_size == 0) {
              out.alias_feed = static_cast<int>(f);
              out.alias_offset = offset;
              break;
            }
          }
        }
        if (out.alias_feed < 0 && out.bytes > 0) {
          out.copy = new (std::nothrow) std::byte[out.bytes];
          if (out.copy == nullptr) {
            return Fail(idem::Status(idem::StatusCode::kResourceExhausted,
                                     "out of memory copying output '" +
                                         session_->outputs()[index].name + "' (" +
                                         std::to_string(out.bytes) + " bytes)"));
          }
          std::memcpy(out.copy, data.data(), out.bytes);
        }
      }
      outputs_.push_back(std::move(out));
    }
    // Nothing of idem's refers to the feeds' memory any more once the outputs are prepared.
    feeds_.clear();
  }

  void OnOK() override {
    Napi::Env env = Env();
    try {
      Napi::Array result = Napi::Array::New(env, outputs_.size());
      for (uint32_t i = 0; i < outputs_.size(); ++i) {
        result.Set(i, ToJs(env, outputs_[i]));
      }
      Release();
      deferred_.Resolve(result);
    } catch (const Napi::Error& e) {  // e.g. no memory for an ArrayBuffer: reject, never hang
      Release();
      deferred_.Reject(e.Value());
    }
  }

  void OnError(const Napi::Error&) override {
    Release();
    deferred_.Reject(StatusError(Env(), status_).Value());
  }

 private:
  static size_t ElementSizeForAlias(ElementType type) {
    const int bits = idem::ElementBits(type);
    return bits >= 8 ? static_cast<size_t>(bits / 8) : 1;
  }

  void Fail(idem::Status status) {
    status_ = std::move(status);
    SetError(status_.message());
  }

  void Release() {
    feeds_.clear();
    outputs_.clear();
    for (Borrowed& b : borrowed_) b.buffer.Reset();
  }

  Napi::Value ToJs(Napi::Env env, OutputData& out) {
    const JsType* js = FindJsType(out.type);
    Napi::Object o = Napi::Object::New(env);
    o.Set("type", Napi::String::New(env, js->name));
    Napi::Array dims = Napi::Array::New(env, out.dims.size());
    for (uint32_t d = 0; d < out.dims.size(); ++d) {
      dims.Set(d, Napi::Number::New(env, static_cast<double>(out.dims[d])));
    }
    o.Set("dims", dims);
    if (out.type == ElementType::kString) {
      Napi::Array strings = Napi::Array::New(env, out.strings.size());
      for (uint32_t s = 0; s < out.strings.size(); ++s) {
        strings.Set(s, Napi::String::New(env, out.strings[s].data(), out.strings[s].size()));
      }
      o.Set("data", strings);
      return o;
    }
    napi_value buffer = nullptr;
    size_t offset = 0;
    if (out.alias_feed >= 0) {
      buffer = borrowed_[out.alias_feed].buffer.Value();
      offset = out.alias_offset;
    } else if (out.bytes == 0) {
      NAPI_THROW_IF_FAILED(env, napi_create_arraybuffer(env, 0, nullptr, &buffer), Napi::Value());
    } else {
      std::byte* copy = out.copy;
      napi_status status = napi_create_external_arraybuffer(
          env, copy, out.bytes,
          [](napi_env, void* data, void*) { delete[] static_cast<std::byte*>(data); }, nullptr,
          &buffer);
      if (status == napi_ok) {
        out.copy = nullptr;  // the ArrayBuffer owns it now
      } else {
        // Runtimes that refuse external buffers: copy once more into a JS-owned one.
        void* data = nullptr;
        NAPI_THROW_IF_FAILED(env, napi_create_arraybuffer(env, out.bytes, &data, &buffer),
                             Napi::Value());
        std::memcpy(data, copy, out.bytes);
      }
    }
    const size_t length = out.bytes / ElementSizeForAlias(out.type);
    napi_value array = nullptr;
    NAPI_THROW_IF_FAILED(
        env, napi_create_typedarray(env, js->array, length, buffer, offset, &array), Napi::Value());
    o.Set("data", Napi::Value(env, array));
    return o;
  }

  Napi::Promise::Deferred deferred_;
  std::shared_ptr<const idem::Session> session_;
  // Declared before the values that point into them, so those go first.
  std::vector<Borrowed> borrowed_;
  std::vector<idem::Value> feeds_;
  std::vector<uint32_t> fetch_;
  std::vector<OutputData> outputs_;
  idem::Status status_;
};

class SessionWrap final : public Napi::ObjectWrap<SessionWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "IdemSession",
        {InstanceMethod("run", &SessionWrap::Run), InstanceMethod("release", &SessionWrap::Release),
         InstanceAccessor("inputs", &SessionWrap::Inputs, nullptr),
         InstanceAccessor("outputs", &SessionWrap::Outputs, nullptr),
         InstanceAccessor("describe", &SessionWrap::Describe, nullptr)});
  }

  explicit SessionWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<SessionWrap>(info) {}

  void Init(std::shared_ptr<const idem::Session> session) { session_ = std::move(session); }

 private:
  const idem::Session& Live(Napi::Env env) const {
    if (!session_) throw Napi::Error::New(env, "Session already disposed.");
    return *session_;
  }

  Napi::Value Inputs(const Napi::CallbackInfo& info) {
    const idem::Session& s = Live(info.Env());
    Napi::Array a = Napi::Array::New(info.Env(), s.inputs().size());
    for (uint32_t i = 0; i < s.inputs().size(); ++i)
      a.Set(i, DescribeValue(info.Env(), s.inputs()[i]));
    return a;
  }

  Napi::Value Outputs(const Napi::CallbackInfo& info) {
    const idem::Session& s = Live(info.Env());
    Napi::Array a = Napi::Array::New(info.Env(), s.outputs().size());
    for (uint32_t i = 0; i < s.outputs().size(); ++i) {
      a.Set(i, DescribeValue(info.Env(), s.outputs()[i]));
    }
    return a;
  }

  Napi::Value Describe(const Napi::CallbackInfo& info) {
    return Napi::String::New(info.Env(), Live(info.Env()).Describe());
  }

  Napi::Value Release(const Napi::CallbackInfo& info) {
    Live(info.Env());
    session_.reset();  // runs in flight keep their own reference
    return info.Env().Undefined();
  }

  // run(feeds: tensor-like[] in inputs order, fetch: output indices[]) -> Promise.
  Napi::Value Run(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const idem::Session& session = Live(env);
    if (info.Length() < 2 || !info[0].IsArray() || !info[1].IsArray()) {
      throw Napi::TypeError::New(env, "run(feeds[], fetchIndices[]) expected");
    }
    Napi::Array feeds = info[0].As<Napi::Array>();
    Napi::Array fetch = info[1].As<Napi::Array>();
    const auto inputs = session.inputs();
    if (feeds.Length() != inputs.size()) {
      throw Napi::TypeError::New(env, "run: one feed per input expected");
    }
    std::vector<Borrowed> borrowed;
    std::vector<idem::Value> values;
    borrowed.reserve(inputs.size());
    values.reserve(inputs.size());
    for (uint32_t i = 0; i < inputs.size(); ++i) {
      values.push_back(ToValue(env, inputs[i], feeds.Get(i), borrowed));
    }
    std::vector<uint32_t> indices;
    for (uint32_t i = 0; i < fetch.Length(); ++i) {
      Napi::Value v = fetch.Get(i);
      const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
      if (!(d >= 0 && d < static_cast<double>(session.outputs().size())) ||
          d != static_cast<double>(static_cast<uint32_t>(d))) {
        throw Napi::RangeError::New(env, "run: bad output index");
      }
      indices.push_back(static_cast<uint32_t>(d));
    }
    auto* worker =
        new RunWorker(env, session_, std::move(borrowed), std::move(values), std::move(indices));
    Napi::Promise promise = worker->Promise();
    worker->Queue();
    return promise;
  }

  // One feed as an idem Value, checked against the input the way ONNX Runtime checks feeds (its
  // messages, which clients parse: "index: 1 Got: 24 Expected: 16").
  static idem::Value ToValue(Napi::Env env, const idem::ValueInfo& input, Napi::Value feed,
                             std::vector<Borrowed>& borrowed) {
    const std::string& name = input.name;
    if (!feed.IsObject()) throw Napi::TypeError::New(env, "Tensor must be an object.");
    if (!input.type.is_tensor()) {
      throw Napi::Error::New(env, "input '" + name + "' is " + input.type.ToString() +
                                      ": non tensor type is temporarily not supported "
                                      "(onnxruntime-node's API feeds tensors only)");
    }
    Napi::Object tensor = feed.As<Napi::Object>();
    Napi::Value location = tensor.Get("location");
    if (!location.IsUndefined() && !location.IsString()) {
      throw Napi::TypeError::New(env, "Tensor.location must be a string.");
    }
    if (location.IsString()) {
      const std::string where = location.As<Napi::String>().Utf8Value();
      if (where == "none") {
        throw Napi::Error::New(env, "input '" + name + "': the tensor is disposed.");
      }
      if (where != "cpu" && where != "cpu-pinned") {
        throw Napi::Error::New(env, "input '" + name + "': tensor location '" + where +
                                        "' is not supported (idem runs on the CPU)");
      }
    }
    Napi::Value type_value = tensor.Get("type");
    if (!type_value.IsString()) throw Napi::TypeError::New(env, "Tensor.type must be a string.");
    const std::string type_name = type_value.As<Napi::String>().Utf8Value();
    const JsType* js = FindJsType(type_name);
    if (js == nullptr) {
      throw Napi::TypeError::New(env, "Tensor.type is not supported: " + type_name);
    }
    Napi::Value dims_value = tensor.Get("dims");
    if (!dims_value.IsArray()) throw Napi::TypeError::New(env, "Tensor.dims must be an array.");
    Napi::Array dims_array = dims_value.As<Napi::Array>();
    std::vector<int64_t> dims(dims_array.Length());
    uint64_t elements = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < dims.size(); ++d) {
      Napi::Value dv = dims_array.Get(d);
      if (!dv.IsNumber()) {
        throw Napi::TypeError::New(env, "Tensor.dims[" + std::to_string(d) + "] is not a number.");
      }
      const double x = dv.As<Napi::Number>().DoubleValue();
      if (!(x >= 0) || x > 9007199254740991.0 ||
          x != static_cast<double>(static_cast<int64_t>(x))) {
        throw Napi::RangeError::New(
            env, "Tensor.dims[" + std::to_string(d) + "] is invalid: " + dv.ToString().Utf8Value());
      }
      dims[d] = static_cast<int64_t>(x);
      if (dims[d] != 0 && elements > UINT64_MAX / static_cast<uint64_t>(dims[d])) overflow = true;
      elements *= static_cast<uint64_t>(dims[d]);
    }
    if (overflow) throw Napi::RangeError::New(env, "Tensor.dims: the element count overflows");

    // ONNX Runtime's checks, in its order: element type, then (for a declared shape of rank >= 1)
    // rank, then each fixed dim. A declared scalar is not checked by ONNX Runtime at all; idem
    // takes a one-element feed for it as the scalar (`new Tensor('int64', [16000n])` has dims
    // [1]).
    const ElementType declared = input.type.element_type();
    if (declared != js->type && declared != ElementType::kUndefined) {
      throw Napi::Error::New(env, "Unexpected input data type. Actual: (" + OrtTypeText(js->type) +
                                      ") , expected: (" + OrtTypeText(declared) + ")");
    }
    if (const auto& shape = input.type.shape()) {
      if (shape->empty()) {
        if (!dims.empty()) {
          if (elements != 1) {
            throw Napi::Error::New(
                env, "input '" + name + "' is a scalar in the model; got " +
                         std::to_string(elements) +
                         " elements (idem takes a one-element tensor of any rank as the scalar)");
          }
          dims.clear();
        }
      } else if (shape->size() != dims.size()) {
        throw Napi::Error::New(env, "Invalid rank for input: " + name +
                                        " Got: " + std::to_string(dims.size()) +
                                        " Expected: " + std::to_string(shape->size()) +
                                        " Please fix either the inputs/outputs or the model.");
      } else {
        std::string bad;
        for (size_t d = 0; d < dims.size(); ++d) {
          const auto& want = (*shape)[d].value;
          if (want && *want != dims[d]) {
            bad += " index: " + std::to_string(d) + " Got: " + std::to_string(dims[d]) +
                   " Expected: " + std::to_string(*want) + "\n";
          }
        }
        if (!bad.empty()) {
          throw Napi::Error::New(env, "Got invalid dimensions for input: " + name +
                                          " for the following indices\n" + bad +
                                          " Please fix either the inputs/outputs or the model.");
        }
      }
    }

    Napi::Value data = tensor.Get("data");
    if (js->type == ElementType::kString) {
      if (!data.IsArray()) {
        throw Napi::TypeError::New(env, "Tensor.data must be an array for string tensors.");
      }
      Napi::Array array = data.As<Napi::Array>();
      if (array.Length() != elements) {
        throw Napi::RangeError::New(
            env, "input '" + name + "': Tensor.data has " + std::to_string(array.Length()) +
                     " strings; its dims call for " + std::to_string(elements));
      }
      std::vector<std::string> strings(array.Length());
      for (uint32_t s = 0; s < strings.size(); ++s) {
        Napi::Value sv = array.Get(s);
        if (!sv.IsString()) {
          throw Napi::TypeError::New(env,
                                     "Tensor.data[" + std::to_string(s) + "] must be a string.");
        }
        strings[s] = sv.As<Napi::String>().Utf8Value();
      }
      idem::Result<idem::Value> v = idem::Value::MakeStringTensor(dims, std::move(strings));
      if (!v.ok()) throw StatusError(env, v.status());
      return std::move(v).value();
    }

    if (!data.IsTypedArray()) {
      throw Napi::TypeError::New(env, "Tensor.data must be a typed array for numeric tensor.");
    }
    napi_typedarray_type array_type;
    size_t length = 0;
    void* raw = nullptr;
    napi_value array_buffer = nullptr;
    size_t byte_offset = 0;
    NAPI_THROW_IF_FAILED(env,
                         napi_get_typedarray_info(env, data, &array_type, &length, &raw,
                                                  &array_buffer, &byte_offset),
                         idem::Value());
    const bool float16_array = js->type == ElementType::kFloat16 &&
                               TypedArrayElementSize(array_type) == 2 &&
                               array_type != napi_int16_array;
    if (array_type != js->array && !float16_array) {
      throw Napi::TypeError::New(env, "Tensor.data must be a " + std::string(js->array_name) +
                                          " for " + type_name + " tensors.");
    }
    const size_t bytes = length * TypedArrayElementSize(array_type);
    const std::optional<uint64_t> want = idem::PackedByteSize(js->type, elements);
    if (!want || *want != bytes) {
      throw Napi::RangeError::New(env, "input '" + name + "': Tensor.data holds " +
                                           std::to_string(bytes) + " bytes; " + type_name +
                                           " dims [" + DimsText(dims) + "] call for " +
                                           (want ? std::to_string(*want) : "too many"));
    }
    Borrowed b;
    b.data = static_cast<const std::byte*>(raw);
    b.bytes = bytes;
    b.buffer_offset = byte_offset;
    bool is_array_buffer = false;
    NAPI_THROW_IF_FAILED(env, napi_is_arraybuffer(env, array_buffer, &is_array_buffer),
                         idem::Value());
    b.aliasable = is_array_buffer;
    b.buffer = Napi::Persistent(Napi::Object(env, array_buffer));
    idem::Result<idem::Value> v =
        idem::Value::MakeTensor(js->type, dims, idem::Buffer::Borrow(raw, bytes));
    if (!v.ok()) throw StatusError(env, v.status());
    borrowed.push_back(std::move(b));
    return std::move(v).value();
  }

  static std::string DimsText(const std::vector<int64_t>& dims) {
    std::string s;
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
    return s;
  }

  std::shared_ptr<const idem::Session> session_;
};

struct AddonData {
  Napi::FunctionReference session_class;
};

void CreateWorker::OnOK() {
  Napi::Env env = Env();
  Napi::Object object = env.GetInstanceData<AddonData>()->session_class.New({});
  SessionWrap::Unwrap(object)->Init(std::move(session_));
  deferred_.Resolve(object);
}

// createSession(pathOrUint8Array, {eliminateIdentity, foldConstants}) -> Promise<IdemSession>
Napi::Value CreateSession(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[1].IsObject()) {
    throw Napi::TypeError::New(env, "createSession(pathOrBuffer, options) expected");
  }
  Napi::Object o = info[1].As<Napi::Object>();
  idem::SessionOptions options;
  if (o.Has("eliminateIdentity"))
    options.eliminate_identity = o.Get("eliminateIdentity").ToBoolean();
  if (o.Has("foldConstants")) options.fold_constants = o.Get("foldConstants").ToBoolean();
  CreateWorker* worker = nullptr;
  if (info[0].IsString()) {
    worker = new CreateWorker(env, info[0].As<Napi::String>().Utf8Value(), idem::Buffer(), false,
                              options);
  } else if (info[0].IsTypedArray() &&
             info[0].As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array) {
    // Copied here, on the JS thread: the caller may reuse its bytes as soon as this returns.
    Napi::Uint8Array bytes = info[0].As<Napi::Uint8Array>();
    idem::Result<idem::Buffer> copy = idem::Buffer::CopyOf(std::span<const std::byte>(
        reinterpret_cast<const std::byte*>(bytes.Data()), bytes.ByteLength()));
    if (!copy.ok()) throw StatusError(env, copy.status());
    worker = new CreateWorker(env, "", std::move(copy).value(), true, options);
  } else {
    throw Napi::TypeError::New(env, "createSession: a path or a Uint8Array expected");
  }
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new AddonData();
  data->session_class = Napi::Persistent(SessionWrap::Define(env));
  env.SetInstanceData(data);
  exports.Set("createSession", Napi::Function::New(env, CreateSession, "createSession"));
  Napi::Array types = Napi::Array::New(env);
  for (uint32_t i = 0; i < std::size(kJsTypes); ++i) {
    types.Set(i, Napi::String::New(env, kJsTypes[i].name));
  }
  exports.Set("types", types);
  return exports;
}

}  // namespace

NODE_API_MODULE(idem_node, Init)
