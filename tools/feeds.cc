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

Result<std::pair<std::string, std::string>> SplitNameValue(std::string_view arg,
                                                           std::string_view option,
                                                           std::string_view value_name) {
  const size_t eq = arg.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{} {}: expected NAME={}", option, QuoteName(arg), value_name));
  }
  return std::pair(std::string(arg.substr(0, eq)), std::string(arg.substr(eq + 1)));
}

Result<const ValueInfo*> FindInput(const Session& session, std::string_view name) {
  for (const ValueInfo& v : session.inputs()) {
    if (v.name == name) return &v;
  }
  for (const ValueInfo& v : session.overridable_inputs()) {
    if (v.name == name) return &v;
  }
  std::vector<std::string> names;
  for (const ValueInfo& v : session.inputs()) names.push_back(QuoteName(v.name));
  std::string list =
      names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "));
  // Initializers that may be fed are listed too, unless they are many (IR < 4 models declare
  // every weight as an input): then only counted.
  constexpr size_t kMaxListed = 16;
  const auto overridable = session.overridable_inputs();
  if (!overridable.empty() && overridable.size() <= kMaxListed) {
    names.clear();
    for (const ValueInfo& v : overridable) names.push_back(QuoteName(v.name));
    list += fmt::format("; overridable initializers: {}", fmt::join(names, ", "));
  } else if (!overridable.empty()) {
    list += fmt::format("; {} overridable initializers", overridable.size());
  }
  return Status(StatusCode::kInvalidArgument,
                fmt::format("the model has no input {} (inputs: {})", QuoteName(name), list));
}

Result<std::vector<NamedValue>> ReadFeeds(const Session& session, const std::string& model_arg,
                                          const std::string& model,
                                          const std::vector<std::string>& input_args) {
  std::vector<NamedValue> feeds;
  for (const std::string& arg : input_args) {
    IDEM_ASSIGN_OR_RETURN(const auto name_file, SplitNameValue(arg, "--input", "FILE"));
    const auto& [name, file] = name_file;
    auto info = FindInput(session, name);
    if (!info.ok()) {
      return Status(info.status().code(), fmt::format("{}: --input {}: {}", model, QuoteName(arg),
                                                      info.status().message()));
    }
    for (const NamedValue& f : feeds) {
      if (f.name == name) {
        return Status(
            StatusCode::kInvalidArgument,
            fmt::format("--input {}: input {} is given twice", QuoteName(arg), QuoteName(name)));
      }
    }
    auto value = ReadValueFile(file, (*info)->type, {});
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
