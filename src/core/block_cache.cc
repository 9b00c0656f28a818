// Buffer::Allocate's blocks. Why: a Run creates and frees a handful of tensors per step; with a
// malloc/free pair each (plus one for shared_ptr's control block), a steady-state Run of Silero
// made ~280 heap calls, and PaddleOCR det's multi-megabyte maps went back to the system after
// every Run, so each 4 KiB page of the next one cost a fault and a zeroing (two thirds of det's
// time once). Here a block is [control block | padding | data]: one heap allocation per buffer,
// none once the thread's cache holds a freed block of the class.
#include "src/core/block_cache.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <memory>
#include <new>

namespace idem::block_cache {
namespace {

// GCC defines __SANITIZE_*__; clang (14) only answers __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define IDEM_BLOCK_CACHE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define IDEM_BLOCK_CACHE_SANITIZED 1
#endif
#endif
#ifdef IDEM_BLOCK_CACHE_SANITIZED
constexpr bool kReuse = false;
#else
constexpr bool kReuse = true;
#endif

constexpr std::align_val_t kAlign{Buffer::kAlignment};
static_assert(kHeaderBytes % Buffer::kAlignment == 0, "the data must stay aligned");

// Classes 0-3: 64, 128, 192, 256 bytes; then, for 2^k < total <= 2^(k+1), four classes of
// 5/4, 6/4, 7/4 and 8/4 times 2^k. The last class holds kMaxBytes.
constexpr uint32_t kUncached = ~uint32_t{0};
constexpr uint32_t kClasses = 4 + (std::bit_width(kMaxBytes) - 1 - 8) * 4;

struct ClassOf {
  uint32_t index;  // kUncached: larger than kMaxBytes
  size_t bytes;    // the block's size, header included
};

ClassOf Classify(size_t total) {
  if (total <= 256) {
    const size_t lines = (total + 63) / 64;
    return {static_cast<uint32_t>(lines - 1), lines * 64};
  }
  const auto k = static_cast<int>(std::bit_width(total - 1)) - 1;  // 2^k < total <= 2^(k+1)
  const size_t step = size_t{1} << (k - 2);
  const size_t sub = (total + step - 1) / step;  // 5..8
  const size_t bytes = sub * step;
  if (bytes > kMaxBytes) return {kUncached, total};
  return {static_cast<uint32_t>(4 + (k - 8) * 4 + (sub - 5)), bytes};
}

struct FreeBlock {
  FreeBlock* next;
};

// Trivially destructible, so it stays usable while (and after) the thread's destructors run.
struct ThreadCache {
  FreeBlock* heads[kClasses];
  uint32_t counts[kClasses];
  size_t bytes;
  bool registered;  // the reaper below has been constructed for this thread
  bool dead;        // the reaper has run: cache nothing more
};
thread_local ThreadCache t_cache{};

void FreeToHeap(std::byte* block) { ::operator delete[](block, kAlign); }

size_t ClassSize(uint32_t index) {
  if (index < 4) return (index + 1) * size_t{64};
  const uint32_t k = 8 + (index - 4) / 4;
  const size_t sub = 5 + (index - 4) % 4;
  return sub << (k - 2);
}

// Frees the thread's cached blocks when the thread exits.
struct Reaper {
  Reaper() = default;
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;
  ~Reaper() {
    ThreadCache& c = t_cache;
    c.dead = true;
    for (uint32_t i = 0; i < kClasses; ++i) {
      while (c.heads[i] != nullptr) {
        FreeBlock* b = c.heads[i];
        c.heads[i] = b->next;
        FreeToHeap(reinterpret_cast<std::byte*>(b));
      }
      c.counts[i] = 0;
    }
    c.bytes = 0;
  }
};
thread_local Reaper t_reaper;

void Release(std::byte* block, uint32_t index) {
  if (kReuse && index != kUncached) {
    ThreadCache& c = t_cache;
    const size_t bytes = ClassSize(index);
    if (!c.dead && c.counts[index] < kMaxPerClass && c.bytes <= kMaxBytes - bytes) {
      if (!c.registered) [[unlikely]] {
        c.registered = true;
        (void)&t_reaper;  // odr-use: constructs it, so its destructor runs at thread exit
      }
      c.heads[index] = new (block) FreeBlock{c.heads[index]};
      ++c.counts[index];
      c.bytes += bytes;
      return;
    }
  }
  FreeToHeap(block);
}

std::byte* Take(uint32_t index) {
  if (!kReuse || index == kUncached) return nullptr;
  ThreadCache& c = t_cache;
  FreeBlock* b = c.heads[index];
  if (b == nullptr) return nullptr;
  c.heads[index] = b->next;
  --c.counts[index];
  c.bytes -= ClassSize(index);
  return reinterpret_cast<std::byte*>(b);
}

// shared_ptr's control block lives in the block's header: allocate() hands out the header, and
// deallocate() (called after the control block is destroyed, when the last shared or weak
// reference goes) releases the whole block.
template <typename T>
struct HeaderAllocator {
  using value_type = T;
  std::byte* block;
  uint32_t index;
  HeaderAllocator(std::byte* b, uint32_t i) : block(b), index(i) {}
  template <typename U>
  HeaderAllocator(const HeaderAllocator<U>& o) noexcept  // NOLINT(google-explicit-constructor)
      : block(o.block), index(o.index) {}
  T* allocate(size_t n) {
    static_assert(sizeof(T) <= kHeaderBytes && alignof(T) <= Buffer::kAlignment,
                  "shared_ptr's control block must fit the block header");
    if (n != 1) throw std::bad_alloc();  // shared_ptr asks for exactly one control block
    return reinterpret_cast<T*>(block);
  }
  void deallocate(T* /*p*/, size_t /*n*/) noexcept { Release(block, index); }
  template <typename U>
  bool operator==(const HeaderAllocator<U>& o) const noexcept {
    return block == o.block;
  }
};

// The data is freed with its control block (HeaderAllocator::deallocate), not by the deleter.
struct KeepDeleter {
  void operator()(const void* /*data*/) const noexcept {}
};

}  // namespace

size_t ClassBytes(size_t size) {
  if (size > kMaxBytes) return 0;
  const ClassOf c = Classify(size + kHeaderBytes);
  return c.index == kUncached ? 0 : c.bytes;
}

bool Enabled() { return kReuse; }

Stats ThreadStats() {
  Stats s;
  const ThreadCache& c = t_cache;
  for (const uint32_t count : c.counts) s.blocks += count;
  s.bytes = c.bytes;
  return s;
}

Result<Buffer> Allocate(size_t size, std::byte** writable, bool zeroed) {
  if (size > (size_t{1} << 62)) {
    return Status(StatusCode::kResourceExhausted, fmt::format("cannot allocate {} bytes", size));
  }
  const ClassOf c = Classify(size + kHeaderBytes);
  std::byte* block = Take(c.index);
  if (block == nullptr) {
    block = static_cast<std::byte*>(::operator new[](c.bytes, kAlign, std::nothrow));
    if (block == nullptr) {
      return Status(StatusCode::kResourceExhausted, fmt::format("cannot allocate {} bytes", size));
    }
  }
  std::byte* data = block + kHeaderBytes;
  // Zeroed whatever the block held before, so no result can depend on an earlier tensor (unless
  // the caller overwrites every byte anyway).
  if (zeroed) std::memset(data, 0, size);
  std::shared_ptr<const void> owner(static_cast<const void*>(data), KeepDeleter{},
                                    HeaderAllocator<std::byte>(block, c.index));
  *writable = data;
  return Buffer::Shared(std::move(owner), data, size);
}

std::byte* AllocateScratch(size_t size) {
  if (size > (size_t{1} << 62)) return nullptr;
  const ClassOf c = Classify(size + kHeaderBytes);
  std::byte* block = Take(c.index);
  if (block == nullptr) {
    block = static_cast<std::byte*>(::operator new[](c.bytes, kAlign, std::nothrow));
    if (block == nullptr) return nullptr;
  }
  std::memcpy(block, &c.index, sizeof(c.index));  // the header remembers the class
  return block + kHeaderBytes;
}

RawBlock TakeBlock(size_t size) {
  if (size > (size_t{1} << 62)) return {};
  const ClassOf c = Classify(size + kHeaderBytes);
  std::byte* block = Take(c.index);
  if (block == nullptr) {
    block = static_cast<std::byte*>(::operator new[](c.bytes, kAlign, std::nothrow));
    if (block == nullptr) return {};
  }
  return {block, c.index};
}

void ReturnBlock(RawBlock block, bool cache) {
  if (block.block == nullptr) return;
  if (cache) {
    Release(block.block, block.class_index);
  } else {
    FreeToHeap(block.block);
  }
}

void FreeScratch(std::byte* scratch) {
  if (scratch == nullptr) return;
  std::byte* block = scratch - kHeaderBytes;
  uint32_t index = 0;
  std::memcpy(&index, block, sizeof(index));
  Release(block, index);
}

}  // namespace idem::block_cache
