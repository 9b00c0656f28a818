#include "src/onnx/external_data.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

#include "src/core/text.h"

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
  return Status(StatusCode::kInvalidModel,
                fmt::format("external data {}: {}", QuoteName(location), why));
}

// Reads [offset, offset + size) of `fd` into memory idem owns. A file that shrank since fstat
// gives a short read and an error, never a fault.
Result<Buffer> CopyRange(int fd, uint64_t offset, uint64_t size, const std::string& location) {
  if (size > std::numeric_limits<size_t>::max()) {
    return Status(
        StatusCode::kResourceExhausted,
        fmt::format("external data {}: {} bytes do not fit in memory", QuoteName(location), size));
  }
  std::byte* out = nullptr;
  auto buffer = Buffer::Allocate(static_cast<size_t>(size), &out);
  if (!buffer.ok()) {
    return std::move(buffer).take_status().WithContext(
        fmt::format("external data {}", QuoteName(location)));
  }
  uint64_t done = 0;
  while (done < size) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size - done, uint64_t{1} << 30));
    const ssize_t n = pread(fd, out + done, chunk, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status(StatusCode::kIoError, fmt::format("external data {}: read failed: {}",
                                                      QuoteName(location), strerror(errno)));
    }
    if (n == 0) {
      return Status(StatusCode::kIoError,
                    fmt::format("external data {}: the file ended after {} of {} bytes (changed "
                                "while loading?)",
                                QuoteName(location), offset + done, offset + size));
    }
    done += static_cast<uint64_t>(n);
  }
  return buffer;
}

}  // namespace

Result<Buffer> MapExternalData(const std::string& base_dir, const std::string& location,
                               uint64_t offset, std::optional<uint64_t> length,
                               const ExternalDataOptions& options) {
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
                  fmt::format("external data {}: cannot open model folder {}: {}",
                              QuoteName(location), QuoteName(base_dir), strerror(errno)));
  }
  auto current = std::make_unique<Fd>(dir);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int next =
        openat(current->get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      if (errno == ELOOP || errno == ENOTDIR) {
        return Refuse(location,
                      fmt::format("{} is a symlink or not a folder", QuoteName(parts[i])));
      }
      return Refuse(location,
                    fmt::format("cannot open folder {}: {}", QuoteName(parts[i]), strerror(errno)));
    }
    current = std::make_unique<Fd>(next);
  }
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  int file =
      openat(current->get(), parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (file < 0) {
    if (errno == ELOOP) return Refuse(location, "the file is a symlink");
    if (errno == ENOENT) {
      return Status(StatusCode::kNotFound, fmt::format("external data {}: file not found in {}",
                                                       QuoteName(location), QuoteName(base_dir)));
    }
    return Refuse(location, fmt::format("cannot open: {}", strerror(errno)));
  }
  Fd fd(file);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return Refuse(location, "fstat failed");
  if (!S_ISREG(st.st_mode)) return Refuse(location, "not a regular file");
  if (st.st_nlink > 1 && !options.allow_hard_links) {
    return Refuse(location,
                  fmt::format("the file has {} hard links; a link may name a file outside the "
                              "model's folder, so it is refused (allow with "
                              "SessionOptions::allow_external_hard_links, CLI --allow-hard-links)",
                              st.st_nlink));
  }
  const auto file_size = static_cast<uint64_t>(st.st_size);
  if (offset > file_size) {
    return Status(StatusCode::kOutOfRange,
                  fmt::format("external data {}: offset {} is past the end of the file ({} "
                              "bytes)",
                              QuoteName(location), offset, file_size));
  }
  const uint64_t size = length ? *length : file_size - offset;
  if (size > file_size - offset) {
    return Status(StatusCode::kOutOfRange,
                  fmt::format("external data {}: offset {} + length {} is past the end of the "
                              "file ({} bytes)",
                              QuoteName(location), offset, size, file_size));
  }
  if (options.mode == ExternalDataMode::kCopy) return CopyRange(fd.get(), offset, size, location);
  auto mapped = Buffer::MapFile(fd.get(), offset, size, location);
  if (!mapped.ok()) {
    return std::move(mapped).take_status().WithContext(
        fmt::format("external data {}", QuoteName(location)));
  }
  return mapped;
}

}  // namespace idem
