// Immutable, reference-counted bytes.
//
// A Buffer is a (pointer, size) view plus a shared owner that keeps the bytes alive. The owner is
// one of: heap memory idem allocated (64-byte aligned), caller memory idem borrows (the caller
// keeps it alive and unchanged for as long as any Buffer or Value refers to it), or a read-only
// file mapping. Copying a Buffer or taking a Slice() is O(1) and never copies bytes.
// Buffers are safe to share between threads: nothing mutates the bytes once the Buffer exists.
#ifndef IDEM_BUFFER_H_
#define IDEM_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "idem/export.h"
#include "idem/status.h"

namespace idem {

class IDEM_API Buffer {
 public:
  // Empty buffer (size 0, data() may be null).
  Buffer() = default;

  // Allocates `size` zeroed bytes aligned to kAlignment and hands out a writable pointer for the
  // caller to fill before the Buffer is shared. Fails with kResourceExhausted instead of throwing.
  static Result<Buffer> Allocate(size_t size, std::byte** writable);

  // Copies `bytes` into a new heap buffer.
  static Result<Buffer> CopyOf(std::span<const std::byte> bytes);

  // Wraps caller memory without copying. The caller guarantees `data` outlives every Buffer and
  // Value derived from this one and is not modified meanwhile.
  static Buffer Borrow(const void* data, size_t size);

  // Wraps memory kept alive by `owner` (e.g. a std::string or a protobuf message).
  static Buffer Shared(std::shared_ptr<const void> owner, const void* data, size_t size);

  // Maps [offset, offset+length) of an open regular file read-only. The range must lie inside the
  // file (checked with fstat). The descriptor may be closed after the call.
  static Result<Buffer> MapFile(int fd, uint64_t offset, uint64_t length, const std::string& name);

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<const std::byte> bytes() const { return {data_, size_}; }

  // A view of [offset, offset+length) sharing this buffer's owner. Precondition: in range.
  Buffer Slice(size_t offset, size_t length) const;

  static constexpr size_t kAlignment = 64;

 private:
  Buffer(std::shared_ptr<const void> owner, const std::byte* data, size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}

  std::shared_ptr<const void> owner_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace idem

#endif  // IDEM_BUFFER_H_
