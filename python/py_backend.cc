// idem.run_backend_test: one ONNX backend-test case folder, as `idem test` runs it.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>

#include "python/py_common.h"
#include "tools/backend_test.h"

namespace idem_py {
namespace {

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

void RegisterBackend(py::module_& m) {
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
}

}  // namespace idem_py
