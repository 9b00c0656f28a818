#include "tools/backend_test.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <random>

#include "src/core/float_convert.h"
#include "src/core/text.h"
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
  LoadContext context{"", limits, {}};
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
    // onnx 1.12's generator writes bfloat16 test data as uint16 bit patterns (numpy has no
    // bfloat16: test_cast_FLOAT_to_BFLOAT16 and the castlike cases): a uint16 tensor where the
    // model declares bfloat16 is read as those bits.
    const Type& want = declared[k].type;
    const bool bf16 = want.is_tensor() && want.element_type() == ElementType::kBfloat16;
    if (bf16 && !value.ok()) {
      value = ReadValueFile(path, Type::Tensor(ElementType::kUint16, want.shape()), limits);
    }
    if (bf16 && value.ok() && value->is_tensor() &&
        value->tensor().element_type() == ElementType::kUint16) {
      const Tensor& t = value->tensor();
      value = Value::MakeTensorFromDims(ElementType::kBfloat16, t.shape(), t.data());
    }
    if (!value.ok()) {
      return std::move(value).take_status().WithContext(
          fmt::format("{} {}", prefix, QuoteName(declared[k].name)));
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

namespace {

// The float element types the tolerance applies to.
bool IsTolerantType(ElementType type) {
  return type == ElementType::kFloat || type == ElementType::kDouble ||
         type == ElementType::kFloat16 || type == ElementType::kBfloat16;
}

// Element `i` of a float tensor of one of the IsTolerantType types, as a double (exact).
double ElementAsDouble(const Tensor& t, int64_t i) {
  const std::byte* bytes = t.data().bytes().data();
  switch (t.element_type()) {
    case ElementType::kFloat: {
      float f;
      std::memcpy(&f, bytes + i * 4, 4);
      return f;
    }
    case ElementType::kDouble: {
      double d;
      std::memcpy(&d, bytes + i * 8, 8);
      return d;
    }
    case ElementType::kFloat16: {
      uint16_t h;
      std::memcpy(&h, bytes + i * 2, 2);
      return HalfToFloat(h);
    }
    default: {  // bfloat16
      uint16_t b;
      std::memcpy(&b, bytes + i * 2, 2);
      return Bf16ToFloat(b);
    }
  }
}

// How a value of `type` is printed: float types at their own precision (shortest round trip).
std::string FormatElement(double v, ElementType type) {
  if (type == ElementType::kDouble) return fmt::format("{}", v);
  return fmt::format("{}", static_cast<float>(v));
}

std::optional<std::string> DescribeTensorDifferenceWithin(const Value& expected,
                                                          const Value& actual,
                                                          const Tolerance& tol) {
  const Tensor& e = expected.tensor();
  const Tensor& a = actual.tensor();
  // Element type and shape (and every non-float element) stay exact.
  if (!IsTolerantType(e.element_type()) || e.element_type() != a.element_type() ||
      !std::equal(e.shape().begin(), e.shape().end(), a.shape().begin(), a.shape().end())) {
    return DescribeDifference(expected, actual);
  }
  int64_t differing = 0;
  int64_t worst = -1;
  double worst_excess = -1;  // error minus allowed; +inf for a NaN or infinity mismatch
  for (int64_t i = 0; i < e.element_count(); ++i) {
    const double ev = ElementAsDouble(e, i);
    const double av = ElementAsDouble(a, i);
    double excess;
    if (std::isnan(ev) || std::isnan(av) || std::isinf(ev) || std::isinf(av)) {
      // A NaN matches any NaN; an infinity only the same infinity; never a finite number.
      const bool match = (std::isnan(ev) && std::isnan(av)) || ev == av;
      if (match) continue;
      excess = std::numeric_limits<double>::infinity();
    } else {
      const double error = std::fabs(av - ev);
      const double allowed = tol.atol + tol.rtol * std::fabs(ev);
      if (error <= allowed) continue;
      excess = error - allowed;
    }
    ++differing;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  if (differing == 0) return std::nullopt;
  const double ev = ElementAsDouble(e, worst);
  const double av = ElementAsDouble(a, worst);
  const ElementType type = e.element_type();
  std::string error;
  if (std::isfinite(ev) && std::isfinite(av)) {
    error = fmt::format(", |error| {:.6g} > allowed {:.6g}", std::fabs(av - ev),
                        tol.atol + tol.rtol * std::fabs(ev));
  }
  return fmt::format(
      "{} of {} elements differ beyond atol {} + rtol {} x |expected|; worst: element {}: "
      "expected {}, got {}{}",
      differing, e.element_count(), tol.atol, tol.rtol, worst, FormatElement(ev, type),
      FormatElement(av, type), error);
}

}  // namespace

std::optional<std::string> DescribeDifferenceWithin(const Value& expected, const Value& actual,
                                                    const std::optional<Tolerance>& tolerance) {
  if (!tolerance || expected.is_null() || actual.is_null() || expected.kind() != actual.kind()) {
    return DescribeDifference(expected, actual);
  }
  switch (expected.kind()) {
    case ValueKind::kTensor:
      return DescribeTensorDifferenceWithin(expected, actual, *tolerance);
    case ValueKind::kSequence: {
      const Sequence& e = expected.sequence();
      const Sequence& a = actual.sequence();
      if (e.element_type() != a.element_type() || e.size() != a.size()) {
        return DescribeDifference(expected, actual);
      }
      for (size_t i = 0; i < e.size(); ++i) {
        if (auto why = DescribeDifferenceWithin(e.at(i), a.at(i), tolerance)) {
          return fmt::format("sequence item {}: {}", i, *why);
        }
      }
      return std::nullopt;
    }
    case ValueKind::kOptional: {
      const Optional& e = expected.optional();
      const Optional& a = actual.optional();
      if (!e.has_value() || !a.has_value()) return DescribeDifference(expected, actual);
      if (auto why = DescribeDifferenceWithin(e.value(), a.value(), tolerance)) {
        return fmt::format("optional value: {}", *why);
      }
      return std::nullopt;
    }
  }
  return DescribeDifference(expected, actual);
}

RunOptions RunOptionsWithTimeout(double timeout_seconds) {
  RunOptions run_options;
  if (timeout_seconds > 0) {
    // Clamped so that a huge timeout cannot overflow the clock's representation.
    const double capped = std::min(timeout_seconds, 1e9);
    run_options.deadline = std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(capped));
  }
  return run_options;
}

CaseResult RunBackendCase(const std::string& folder, bool skip_unsupported,
                          const SessionOptions& options, double timeout_seconds,
                          const std::optional<Tolerance>& tolerance) {
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
    auto actual = session->Run(*inputs, RunOptionsWithTimeout(timeout_seconds));
    if (!actual.ok()) {
      result.reason = fmt::format("{}: {}", set_name, actual.status().message());
      return result;
    }
    for (size_t k = 0; k < expected->size(); ++k) {
      if (auto why = DescribeDifferenceWithin((*expected)[k], (*actual)[k], tolerance)) {
        result.reason =
            fmt::format("{}: output {}: {}", set_name, QuoteName(session->outputs()[k].name), *why);
        return result;
      }
    }
  }
  result.outcome = CaseResult::Outcome::kPass;
  return result;
}

namespace {

Status IoError(const std::string& path, std::string_view what, int error) {
  return Status(StatusCode::kIoError, fmt::format("{}: {}: {}", path, what, strerror(error)));
}

// Writes all of `bytes` to `fd` and flushes it to the disk.
Status WriteAndSync(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(path, "write failed", errno);
    if (n == 0) return IoError(path, "write failed", EIO);
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) return IoError(path, "fsync failed", errno);
  return {};
}

}  // namespace

Status WriteFilesAtomically(std::span<const FileToWrite> files) {
  // Phase 1: check every target. An existing target must be a regular file (a folder or a
  // special file in the way fails here, before anything is written); its mode is kept.
  std::vector<std::optional<mode_t>> modes;
  for (const FileToWrite& f : files) {
    struct stat st {};
    if (lstat(f.path.c_str(), &st) == 0) {
      if (!S_ISREG(st.st_mode)) {
        return Status(
            StatusCode::kIoError,
            fmt::format("{}: exists and is not a regular file; nothing was written", f.path));
      }
      modes.push_back(st.st_mode & 07777);
    } else if (errno == ENOENT) {
      modes.push_back(std::nullopt);
    } else {
      return IoError(f.path, "cannot inspect", errno);
    }
  }
  // Phase 2: write every temporary file (beside its target, so rename stays on one file system)
  // and flush it. New files are created 0666 minus the umask, as any other tool would.
  std::vector<std::string> temps;
  auto remove_temps = [&](size_t from) {
    for (size_t i = from; i < temps.size(); ++i) unlink(temps[i].c_str());
  };
  static unsigned serial = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const fs::path target(files[i].path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::string temp;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
      temp = (dir / fmt::format(".{}.tmp-{}-{}", target.filename().string(), getpid(), serial++))
                 .string();
      fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
      if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
      const int error = errno;
      remove_temps(0);
      return Status(StatusCode::kIoError,
                    fmt::format("{}: cannot create a temporary file: {}; nothing was replaced",
                                files[i].path, strerror(error)));
    }
    temps.push_back(temp);
    Status status = WriteAndSync(fd, files[i].bytes, files[i].path);
    if (status.ok() && modes[i] && fchmod(fd, *modes[i]) != 0) {
      status = IoError(files[i].path, "cannot keep the file's mode", errno);
    }
    if (close(fd) != 0 && status.ok()) status = IoError(files[i].path, "close failed", errno);
    if (!status.ok()) {
      remove_temps(0);
      return std::move(status).WithContext("nothing was replaced");
    }
  }
  // Phase 3: rename into place. Only a race (a target changed since phase 1) can fail here.
  for (size_t i = 0; i < files.size(); ++i) {
    if (rename(temps[i].c_str(), files[i].path.c_str()) != 0) {
      const int error = errno;
      remove_temps(i);
      return Status(StatusCode::kIoError,
                    fmt::format("{}: rename failed: {} ({} of {} files were already replaced)",
                                files[i].path, strerror(error), i, files.size()));
    }
  }
  // Make the renames durable too.
  std::vector<std::string> dirs;
  for (const FileToWrite& f : files) {
    const fs::path target(f.path);
    dirs.push_back(target.has_parent_path() ? target.parent_path().string() : ".");
  }
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  for (const std::string& d : dirs) {
    const int fd = open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      fsync(fd);
      close(fd);
    }
  }
  return {};
}

}  // namespace idem::tools
