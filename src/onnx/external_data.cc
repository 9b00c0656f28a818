#include "src/onnx/external_data.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace idem {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Status Refuse(const std::string& location, const std::string& why) {
  return Status(StatusCode::kInvalidModel, fmt::format("external data '{}': {}", location, why));
}

}  // namespace

Result<Buffer> MapExternalData(const std::string& base_dir, const std::string& location,
                               uint64_t offset, std::optional<uint64_t> length) {
  if (base_dir.empty()) {
    return Refuse(location, "external data needs a model folder (load the model from a file)");
  }
  if (location.empty()) return Refuse(location, "empty location");
  if (location.front() == '/') return Refuse(location, "absolute paths are not allowed");
  if (location.find('\0') != std::string::npos) return Refuse(location, "NUL in location");

  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= location.size()) {
    size_t slash = location.find('/', start);
    if (slash == std::string::npos) slash = location.size();
    std::string part = location.substr(start, slash - start);
    if (part == "..") return Refuse(location, "'..' would leave the model's folder");
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    start = slash + 1;
  }
  if (parts.empty()) return Refuse(location, "location names no file");

  int dir = open(base_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    return Status(StatusCode::kIoError,
                  fmt::format("external data '{}': cannot open model folder '{}': {}", location,
                              base_dir, strerror(errno)));
  }
  auto current = std::make_unique<Fd>(dir);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int next =
        openat(current->get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      if (errno == ELOOP || errno == ENOTDIR) {
        return Refuse(location, fmt::format("'{}' is a symlink or not a folder", parts[i]));
      }
      return Refuse(location,
                    fmt::format("cannot open folder '{}': {}", parts[i], strerror(errno)));
    }
    current = std::make_unique<Fd>(next);
  }
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  int file =
      openat(current->get(), parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (file < 0) {
    if (errno == ELOOP) return Refuse(location, "the file is a symlink");
    if (errno == ENOENT) {
      return Status(StatusCode::kNotFound,
                    fmt::format("external data '{}': file not found in '{}'", location, base_dir));
    }
    return Refuse(location, fmt::format("cannot open: {}", strerror(errno)));
  }
  Fd fd(file);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return Refuse(location, "fstat failed");
  if (!S_ISREG(st.st_mode)) return Refuse(location, "not a regular file");
  const auto file_size = static_cast<uint64_t>(st.st_size);
  if (offset > file_size) {
    return Status(StatusCode::kOutOfRange,
                  fmt::format("external data '{}': offset {} is past the end of the file ({} "
                              "bytes)",
                              location, offset, file_size));
  }
  const uint64_t size = length ? *length : file_size - offset;
  if (size > file_size - offset) {
    return Status(StatusCode::kOutOfRange,
                  fmt::format("external data '{}': offset {} + length {} is past the end of the "
                              "file ({} bytes)",
                              location, offset, size, file_size));
  }
  auto mapped = Buffer::MapFile(fd.get(), offset, size, location);
  if (!mapped.ok()) {
    return std::move(mapped).take_status().WithContext(fmt::format("external data '{}'", location));
  }
  return mapped;
}

}  // namespace idem
