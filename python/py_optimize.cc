// idem.optimize: the Identity remover (bytes in and out, a path in, or a path in and out).
#include <pybind11/pybind11.h>

#include <span>
#include <string>
#include <string_view>

#include "python/py_common.h"
#include "src/onnx/model_loader.h"

namespace idem_py {
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

}  // namespace

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

}  // namespace idem_py
