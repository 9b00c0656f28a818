// The heap blocks behind Buffer::Allocate: one allocation holds the bytes and the shared_ptr
// control block that owns them, and freed blocks wait on a per-thread cache for the next
// allocation of their size class, so a steady-state Run allocates nothing.
#ifndef IDEM_SRC_CORE_BLOCK_CACHE_H_
#define IDEM_SRC_CORE_BLOCK_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "idem/buffer.h"

namespace idem::block_cache {

// Blocks are grouped into size classes: multiples of 64 bytes up to 256, then four classes per
// power of two (so a block is at most 25% larger than asked). Each thread keeps at most
// kMaxPerClass freed blocks of a class and kMaxBytes bytes in all; the rest go back to the heap.
inline constexpr uint32_t kMaxPerClass = 256;
inline constexpr size_t kMaxBytes = size_t{128} << 20;
// Bytes in front of the data: the control block, padded so the data keeps Buffer::kAlignment.
inline constexpr size_t kHeaderBytes = 64;

// `size` bytes (size > 0), zeroed unless `zeroed` is false (then they hold whatever the block
// held: only for a caller that writes every byte before sharing the Buffer),
// Buffer::kAlignment-aligned, owned by the returned Buffer (the writable pointer goes to
// `*writable`). Taken from the calling thread's cache when a block of
// the size class is there, else from the heap (kResourceExhausted when the heap refuses). The
// block returns to the cache of the thread that drops the last reference. Sanitizer builds
// never reuse blocks, so use-after-free stays detectable.
Result<Buffer> Allocate(size_t size, std::byte** writable, bool zeroed = true);

// Raw scratch from the same cache for run-time tables (uninitialized, Buffer::kAlignment-aligned,
// `size` > 0 bytes): null when the heap refuses. Give it back with FreeScratch on any thread.
std::byte* AllocateScratch(size_t size);
void FreeScratch(std::byte* scratch);

// std::allocator's stand-in over AllocateScratch/FreeScratch, for the small vectors kernels build
// on every Run (shapes, axes, indices read from a tensor): a steady-state Run takes them from the
// thread's cache instead of the heap.
template <typename T>
struct ScratchAllocator {
  using value_type = T;
  ScratchAllocator() = default;
  // Implicit, as the Allocator requirements ask (rebinding copies).
  template <typename U>
  ScratchAllocator(const ScratchAllocator<U>& /*other*/) noexcept {}
  T* allocate(size_t n) {
    // T may be a pointer (ScratchVector<const D*>): its size is what is wanted.
    constexpr size_t kElement = sizeof(T);  // NOLINT(bugprone-sizeof-expression)
    if (n > (size_t{1} << 60) / kElement) throw std::bad_array_new_length();
    std::byte* p = AllocateScratch(n * kElement);
    if (p == nullptr) throw std::bad_alloc();
    return reinterpret_cast<T*>(p);
  }
  void deallocate(T* p, size_t /*n*/) noexcept { FreeScratch(reinterpret_cast<std::byte*>(p)); }
  template <typename U>
  bool operator==(const ScratchAllocator<U>& /*other*/) const noexcept {
    return true;
  }
};

// What the calling thread's cache holds now (tests and the memory figures in docs/limits.md).
struct Stats {
  size_t blocks = 0;
  size_t bytes = 0;
};
Stats ThreadStats();

// The total size (header included) of the class a request of `size` bytes falls in; 0 when such
// blocks are never cached (larger than kMaxBytes).
size_t ClassBytes(size_t size);

// Whether this build reuses blocks at all (false under AddressSanitizer and ThreadSanitizer).
bool Enabled();

// Raw blocks for allocators built on the cache (src/core/memory_plan.h). A block is
// kHeaderBytes of header (the caller's) followed by `size` bytes of data, Buffer::kAlignment
// aligned, uninitialized; `class_index` names its size class. Null when the heap refuses.
struct RawBlock {
  std::byte* block = nullptr;
  uint32_t class_index = 0;
};
RawBlock TakeBlock(size_t size);
// Returns a TakeBlock block: to the calling thread's cache when `cache` (and there is room),
// else to the heap.
void ReturnBlock(RawBlock block, bool cache);

}  // namespace idem::block_cache

namespace idem {
// A vector whose storage comes from the thread's block cache (see ScratchAllocator).
template <typename T>
using ScratchVector = std::vector<T, block_cache::ScratchAllocator<T>>;
}  // namespace idem

#endif  // IDEM_SRC_CORE_BLOCK_CACHE_H_
