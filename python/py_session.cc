// idem.Session (the native half of idem.Session / idem.InferenceSession): creating a session
// from a path, bytes or a ModelProto, feeding it by name or position, run options (cancellation,
// timeout), limits, metadata.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "python/py_common.h"
#include "python/py_convert.h"

namespace idem_py {
namespace {

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
idem::SessionOptions MakeSessionOptions(bool eliminate_identity, bool fold_constants,
                                        const py::dict& limits, const std::string& external_data,
                                        bool allow_external_hard_links) {
  idem::SessionOptions options;
  options.eliminate_identity = eliminate_identity;
  options.fold_constants = fold_constants;
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
  for (const auto& item : limits) {
    // Named handles, not a structured binding: lambdas below capture them (clang 14 cannot
    // capture structured bindings).
    const py::handle key = item.first;
    const py::handle value = item.second;
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
  PySession(const py::object& model, bool eliminate_identity, bool fold_constants,
            const std::string& base_dir, const py::dict& limits, const std::string& external_data,
            bool allow_external_hard_links) {
    const idem::SessionOptions options = MakeSessionOptions(
        eliminate_identity, fold_constants, limits, external_data, allow_external_hard_links);
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
    fold_constants_ = options.fold_constants;
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
  bool fold_constants() const { return fold_constants_; }

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
  bool fold_constants_ = true;
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

}  // namespace

void RegisterSession(py::module_& m) {
  py::object value_info_type =
      py::module_::import("collections")
          .attr("namedtuple")("ValueInfo", py::make_tuple("name", "type", "shape"));
  value_info_type.attr("__module__") = "idem";
  value_info_type.attr("__doc__") =
      "A model input or output: name, ONNX type string such as 'tensor(float)' or "
      "'optional(seq(tensor(int64)))', and shape (list of int / str / None per dim, or None when "
      "the rank is unknown; for seq/optional types, the shape of the contained tensor).";
  m.attr("ValueInfo") = value_info_type;

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
      .def(py::init<const py::object&, bool, bool, const std::string&, const py::dict&,
                    const std::string&, bool>(),
           py::arg("model"), py::arg("eliminate_identity") = true, py::arg("fold_constants") = true,
           py::arg("base_dir") = "", py::arg("limits") = py::dict(),
           py::arg("external_data") = "map", py::arg("allow_external_hard_links") = false)
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
      .def_property_readonly("fold_constants", &PySession::fold_constants)
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
}

}  // namespace idem_py
