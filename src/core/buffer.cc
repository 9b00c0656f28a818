#include "idem/buffer.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "src/core/block_cache.h"
#include "src/core/buffer_pages.h"

namespace idem {
namespace {

// Owns one mmap'ed region; unmaps on destruction.
struct Mapping {
  void* base = nullptr;
  size_t length = 0;
  Mapping(void* b, size_t l) : base(b), length(l) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (base != nullptr) munmap(base, length);
  }
};

}  // namespace

Result<Buffer> Buffer::Allocate(size_t size, std::byte** writable) {
  if (size == 0) {
    *writable = nullptr;
    return Buffer();
  }
  return block_cache::Allocate(size, writable);
}

Result<Buffer> Buffer::CopyOf(std::span<const std::byte> bytes) {
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Buffer buffer, Allocate(bytes.size(), &out));
  if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
  return buffer;
}

Buffer Buffer::Borrow(const void* data, size_t size) {
  // No owner: lifetime is the caller's promise.
  return Buffer(nullptr, static_cast<const std::byte*>(data), size);
}

Buffer Buffer::Shared(std::shared_ptr<const void> owner, const void* data, size_t size) {
  return Buffer(std::move(owner), static_cast<const std::byte*>(data), size);
}

Result<Buffer> Buffer::MapFile(int fd, uint64_t offset, uint64_t length, const std::string& name) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    return Status(StatusCode::kIoError, fmt::format("{}: fstat failed: {}", name, strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status(StatusCode::kInvalidModel, fmt::format("{}: not a regular file", name));
  }
  const auto file_size = static_cast<uint64_t>(st.st_size);
  if (offset > file_size || length > file_size - offset) {
    return Status(StatusCode::kOutOfRange,
                  fmt::format("{}: range [{}, {}+{}) lies outside the file ({} bytes)", name,
                              offset, offset, length, file_size));
  }
  if (length == 0) return Buffer();
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t aligned_offset = offset - offset % page;
  const uint64_t map_length = length + (offset - aligned_offset);
  void* base =
      mmap(nullptr, map_length, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(aligned_offset));
  if (base == MAP_FAILED) {
    return Status(StatusCode::kIoError, fmt::format("{}: mmap failed: {}", name, strerror(errno)));
  }
  auto mapping = std::make_shared<const Mapping>(base, map_length);
  const auto* data = static_cast<const std::byte*>(base) + (offset - aligned_offset);
  return Buffer(std::move(mapping), data, length);
}

Result<Buffer> CopyToOwnPages(std::span<const std::byte> bytes) {
  if (bytes.empty()) return Buffer();
  void* base = mmap(nullptr, bytes.size(), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (base == MAP_FAILED) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("cannot map {} bytes: {}", bytes.size(), strerror(errno)));
  }
  auto mapping = std::make_shared<const Mapping>(base, bytes.size());
  std::memcpy(base, bytes.data(), bytes.size());
  mprotect(base, bytes.size(), PROT_READ);  // failure only leaves the pages writable
  return Buffer::Shared(std::move(mapping), base, bytes.size());
}

Buffer Buffer::Slice(size_t offset, size_t length) const {
  return Buffer(owner_, data_ + offset, length);
}

}  // namespace idem
