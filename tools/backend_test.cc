#include "tools/backend_test.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "src/onnx/model_loader.h"
#include "src/onnx/proto_convert.h"
#include "tools/npy.h"

namespace idem::tools {
namespace fs = std::filesystem;

Result<std::vector<std::string>> FindCaseFolders(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return Status(StatusCode::kNotFound, fmt::format("{}: no such file or folder", path));
  }
  if (fs::is_regular_file(fs::path(path) / "model.onnx", ec)) return std::vector<std::string>{path};
  std::vector<std::string> cases;
  fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec);
  if (ec) return Status(StatusCode::kIoError, fmt::format("{}: {}", path, ec.message()));
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->is_directory(ec) && fs::is_regular_file(it->path() / "model.onnx", ec)) {
      cases.push_back(it->path().string());
      it.disable_recursion_pending();
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

Result<Value> ReadValueFile(const std::string& path, const Type& declared, const Limits& limits) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0) {
    IDEM_ASSIGN_OR_RETURN(Value tensor, ReadNpy(path));
    // A .npy fed to an optional(tensor) input is that optional's value.
    if (declared.is_optional() && declared.element().is_tensor()) {
      return Value::MakeOptional(std::move(tensor));
    }
    return tensor;
  }
  IDEM_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path, limits.max_model_bytes));
  // Values in test data may not use external data: nothing outside the file is read.
  LoadContext context{"", limits};
  auto value = ValueFromProtoBytes(std::as_bytes(std::span(bytes)), declared, context);
  if (!value.ok()) return std::move(value).take_status().WithContext(path);
  return value;
}

Result<std::vector<Value>> ReadDataSetValues(const std::string& folder, const std::string& prefix,
                                             std::span<const ValueInfo> declared,
                                             const Limits& limits) {
  std::vector<Value> values;
  for (size_t k = 0;; ++k) {
    const std::string path = fmt::format("{}/{}_{}.pb", folder, prefix, k);
    std::error_code ec;
    if (!fs::exists(path, ec)) break;
    if (k >= declared.size()) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: the model has only {} {}s", path, declared.size(), prefix));
    }
    auto value = ReadValueFile(path, declared[k].type, limits);
    if (!value.ok()) {
      return std::move(value).take_status().WithContext(
          fmt::format("{} '{}'", prefix, declared[k].name));
    }
    values.push_back(std::move(value).value());
  }
  if (values.size() != declared.size()) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: found {} {}_K.pb files, the model has {} {}s", folder,
                              values.size(), prefix, declared.size(), prefix));
  }
  return values;
}

CaseResult RunBackendCase(const std::string& folder, bool skip_unsupported,
                          const SessionOptions& options) {
  CaseResult result;
  result.name = fs::path(folder).filename().string();
  if (result.name.empty()) result.name = fs::path(folder).parent_path().filename().string();
  auto session = Session::Create(folder + "/model.onnx", options);
  if (!session.ok()) {
    const bool unsupported = session.status().code() == StatusCode::kUnsupported;
    result.outcome =
        unsupported && skip_unsupported ? CaseResult::Outcome::kSkip : CaseResult::Outcome::kFail;
    result.reason = session.status().message();
    // Report skips as "unsupported Op-version, ..." without the file prefix.
    constexpr std::string_view kMarker = "unsupported operators: ";
    if (const size_t at = result.reason.find(kMarker); unsupported && at != std::string::npos) {
      result.reason = "unsupported " + result.reason.substr(at + kMarker.size());
    }
    return result;
  }
  std::vector<std::string> data_sets;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("test_data_set_", 0) == 0 && entry.is_directory(ec)) {
      data_sets.push_back(entry.path().string());
    }
  }
  std::sort(data_sets.begin(), data_sets.end());
  if (data_sets.empty()) {
    result.reason = "no test_data_set_* folder";
    return result;
  }
  for (const std::string& data_set : data_sets) {
    const std::string set_name = fs::path(data_set).filename().string();
    auto inputs = ReadDataSetValues(data_set, "input", session->inputs(), options.limits);
    if (!inputs.ok()) {
      result.reason = fmt::format("{}: {}", set_name, inputs.status().message());
      return result;
    }
    auto expected = ReadDataSetValues(data_set, "output", session->outputs(), options.limits);
    if (!expected.ok()) {
      result.reason = fmt::format("{}: {}", set_name, expected.status().message());
      return result;
    }
    auto actual = session->Run(*inputs);
    if (!actual.ok()) {
      result.reason = fmt::format("{}: {}", set_name, actual.status().message());
      return result;
    }
    for (size_t k = 0; k < expected->size(); ++k) {
      if (auto why = DescribeDifference((*expected)[k], (*actual)[k])) {
        result.reason =
            fmt::format("{}: output '{}': {}", set_name, session->outputs()[k].name, *why);
        return result;
      }
    }
  }
  result.outcome = CaseResult::Outcome::kPass;
  return result;
}

Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string temp =
      (dir / fmt::format(".{}.tmp-{}-XXXXXX", target.filename().string(), getpid())).string();
  int fd = mkstemp(temp.data());
  if (fd < 0) {
    return Status(StatusCode::kIoError,
                  fmt::format("{}: cannot create a temporary file: {}", path, strerror(errno)));
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == bytes.size() && fsync(fd) == 0;
  const int saved_errno = errno;
  close(fd);
  if (!ok || rename(temp.c_str(), path.c_str()) != 0) {
    unlink(temp.c_str());
    return Status(StatusCode::kIoError,
                  fmt::format("{}: write failed: {}", path, strerror(ok ? errno : saved_errno)));
  }
  return {};
}

}  // namespace idem::tools
