#include "tools/feeds.h"

#include <fmt/format.h>

#include <filesystem>

#include "src/core/text.h"
#include "tools/backend_test.h"

namespace idem::tools {

namespace fs = std::filesystem;

std::string ModelPath(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return (fs::path(path) / "model.onnx").string();
  return path;
}

Result<std::vector<NamedValue>> ReadFeeds(const Session& session, const std::string& model_arg,
                                          const std::string& model,
                                          const std::vector<std::string>& input_args) {
  std::vector<NamedValue> feeds;
  for (const std::string& arg : input_args) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("--input {}: expected NAME=FILE", QuoteName(arg)));
    }
    const std::string name = arg.substr(0, eq);
    const std::string file = arg.substr(eq + 1);
    const ValueInfo* info = nullptr;
    for (const ValueInfo& v : session.inputs()) {
      if (v.name == name) info = &v;
    }
    for (const ValueInfo& v : session.overridable_inputs()) {
      if (v.name == name) info = &v;
    }
    if (info == nullptr) {
      std::vector<std::string> names;
      for (const ValueInfo& v : session.inputs()) names.push_back(QuoteName(v.name));
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: --input {}: the model has no input {} (inputs: {})", model,
                                QuoteName(arg), QuoteName(name), fmt::join(names, ", ")));
    }
    for (const NamedValue& f : feeds) {
      if (f.name == name) {
        return Status(
            StatusCode::kInvalidArgument,
            fmt::format("--input {}: input {} is given twice", QuoteName(arg), QuoteName(name)));
      }
    }
    auto value = ReadValueFile(file, info->type, {});
    if (!value.ok()) {
      return Status(value.status().code(),
                    fmt::format("input {}: {}", QuoteName(name), value.status().message()));
    }
    feeds.push_back({name, std::move(value).value()});
  }
  // A backend-test folder with no --input runs on its first data set.
  std::error_code ec;
  if (input_args.empty() && !session.inputs().empty() && fs::is_directory(model_arg, ec)) {
    const std::string data_set = (fs::path(model_arg) / "test_data_set_0").string();
    IDEM_ASSIGN_OR_RETURN(std::vector<Value> values,
                          ReadDataSetValues(data_set, "input", session.inputs(), {}));
    for (size_t i = 0; i < values.size(); ++i) {
      feeds.push_back({session.inputs()[i].name, values[i]});
    }
  }
  return feeds;
}

}  // namespace idem::tools
