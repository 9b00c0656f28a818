#include "src/core/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

namespace idem {
namespace {

Status IoError(const std::string& path, std::string_view what, int error) {
  return Status(StatusCode::kIoError, fmt::format("{}: {}: {}", path, what, strerror(error)));
}

std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// What is at `path` now: nothing (nullopt) or a regular file (its permission bits). Anything else
// is refused.
Result<std::optional<mode_t>> ExistingMode(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::optional<mode_t>();
    return IoError(path, "cannot inspect", errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: is not a regular file ({}); write to a regular file or a new "
                              "path (for a symlink, give its target)",
                              path,
                              S_ISLNK(st.st_mode)   ? "a symbolic link"
                              : S_ISDIR(st.st_mode) ? "a directory"
                                                    : "a device, FIFO or socket"));
  }
  return std::optional<mode_t>(st.st_mode & 07777);
}

// Flushes a folder's entries (best effort: some file systems refuse fsync on a folder).
void SyncFolder(const std::string& dir) {
  if (const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

// One target's temporary file, removed on destruction unless renamed into place.
class StagedFile {
 public:
  explicit StagedFile(std::string path) : path_(std::move(path)) {}
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  StagedFile(StagedFile&& other) noexcept
      : path_(std::move(other.path_)), temp_(std::move(other.temp_)), fd_(other.fd_) {
    other.fd_ = -1;
    other.temp_.clear();
  }
  StagedFile& operator=(StagedFile&&) = delete;
  ~StagedFile() {
    if (fd_ >= 0) close(fd_);
    if (!temp_.empty()) unlink(temp_.c_str());
  }

  const std::string& path() const { return path_; }

  // Creates the temporary file beside the target: 0666 minus the umask (open applies it).
  Status Create() {
    static std::atomic<unsigned> serial{0};
    const size_t slash = path_.rfind('/');
    const std::string_view base = slash == std::string::npos
                                      ? std::string_view(path_)
                                      : std::string_view(path_).substr(slash + 1);
    const std::string dir = FolderOf(path_);
    for (int attempt = 0; attempt < 100; ++attempt) {
      // At most 64 bytes of the target's name: a target name of up to NAME_MAX bytes must not
      // make the temporary's too long.
      std::string temp = fmt::format("{}/.{}.tmp-{}-{}", dir, base.substr(0, 64), getpid(),
                                     serial.fetch_add(1, std::memory_order_relaxed));
      fd_ = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
      if (fd_ >= 0) {
        temp_ = std::move(temp);
        return {};
      }
      if (errno != EEXIST) break;
    }
    return IoError(path_, "cannot create a temporary file", errno);
  }

  Status Write(std::span<const std::byte> piece) {
    size_t done = 0;
    while (done < piece.size()) {
      const ssize_t n = write(fd_, piece.data() + done, piece.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return IoError(path_, "write failed", n < 0 ? errno : EIO);
      done += static_cast<size_t>(n);
    }
    return {};
  }

  // Gives the temporary the mode the file keeps, flushes and closes it.
  Status Finish(const std::optional<mode_t>& keep_mode) {
    if (keep_mode && fchmod(fd_, *keep_mode) != 0) {
      return IoError(path_, "cannot keep the file's mode", errno);
    }
    if (fsync(fd_) != 0) return IoError(path_, "write failed", errno);
    const int fd = fd_;
    fd_ = -1;
    if (close(fd) != 0) return IoError(path_, "write failed", errno);
    return {};
  }

  // Renames the (finished) temporary over the target.
  Status Rename() {
    if (rename(temp_.c_str(), path_.c_str()) != 0) return IoError(path_, "rename failed", errno);
    temp_.clear();
    return {};
  }

 private:
  std::string path_;
  std::string temp_;  // empty: none (not created, or renamed)
  int fd_ = -1;
};

}  // namespace

Status WriteFileAtomically(const std::string& path,
                           const std::function<Status(const ByteSink&)>& produce) {
  IDEM_ASSIGN_OR_RETURN(std::optional<mode_t> mode, ExistingMode(path));
  StagedFile file(path);
  IDEM_RETURN_IF_ERROR(file.Create());
  IDEM_RETURN_IF_ERROR(
      produce([&](std::span<const std::byte> piece) { return file.Write(piece); }));
  IDEM_RETURN_IF_ERROR(file.Finish(mode));
  IDEM_RETURN_IF_ERROR(file.Rename());
  SyncFolder(FolderOf(path));
  return {};
}

Status WriteFilesAtomically(std::span<const FileToWrite> files) {
  // Every target first: a folder or a special file in the way fails here, before anything is
  // written.
  std::vector<std::optional<mode_t>> modes;
  modes.reserve(files.size());
  for (const FileToWrite& f : files) {
    auto mode = ExistingMode(f.path);
    if (!mode.ok()) return std::move(mode).take_status().WithContext("nothing was written");
    modes.push_back(*mode);
  }
  // Every temporary written and flushed (removed again by `staged` on any failure).
  std::vector<StagedFile> staged;
  staged.reserve(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    StagedFile& file = staged.emplace_back(files[i].path);
    Status status = file.Create();
    if (status.ok()) status = file.Write(std::as_bytes(std::span(files[i].bytes)));
    if (status.ok()) status = file.Finish(modes[i]);
    if (!status.ok()) return std::move(status).WithContext("nothing was replaced");
  }
  // Then the renames. Only a race (a target changed since the check) can fail here.
  for (size_t i = 0; i < staged.size(); ++i) {
    Status status = staged[i].Rename();
    if (!status.ok()) {
      return std::move(status).WithContext(
          fmt::format("{} of {} files were already replaced", i, files.size()));
    }
  }
  std::vector<std::string> dirs;
  for (const FileToWrite& f : files) dirs.push_back(FolderOf(f.path));
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  for (const std::string& d : dirs) SyncFolder(d);
  return {};
}

}  // namespace idem
