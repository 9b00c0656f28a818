// Value::NewNode: the heap block every Value's node lives in, from a per-thread cache of freed
// blocks (see the comment below for why and how).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "idem/value.h"

namespace idem {

namespace {

// ---- Node allocation ----------------------------------------------------------------------------
//
// Every Value owns one heap block: its Node plus shared_ptr's control block (120 bytes). A run
// creates and frees a few per step, so each thread keeps up to kCachedBlocksPerThread freed
// blocks on a list of its own and reuses them, instead of a malloc/free pair per value (glibc's
// per-size cache is only 7 deep and falls back to its slow path when a run's pattern of sizes
// does not balance). A block freed on another thread joins that thread's list (blocks are
// interchangeable); a thread's list is freed when the thread exits, and blocks freed after that
// go straight back to the heap. At most 64 x 128 bytes = 8 KiB stay cached per thread.
// Sanitizer builds use the heap directly, so use-after-free of a Value stays detectable.
// GCC defines __SANITIZE_*__; clang (14) only answers __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define IDEM_SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define IDEM_SANITIZED_BUILD 1
#endif
#endif
#ifdef IDEM_SANITIZED_BUILD
constexpr bool kCacheNodes = false;
#else
constexpr bool kCacheNodes = true;
#endif
// 120 bytes + glibc's 8-byte header = one 128-byte chunk.
constexpr size_t kNodeBlockBytes = 120;
constexpr uint32_t kCachedBlocksPerThread = 64;

struct FreeBlock {
  FreeBlock* next;
};

// Trivially destructible, so it stays usable while (and after) the thread's destructors run.
struct NodeCache {
  FreeBlock* head = nullptr;
  uint32_t count = 0;
  bool registered = false;  // the reaper below has been constructed for this thread
  bool dead = false;        // the reaper has run: cache nothing more
};
thread_local NodeCache node_cache;

// Frees the thread's cached blocks when the thread exits.
struct NodeCacheReaper {
  ~NodeCacheReaper() {
    NodeCache& c = node_cache;
    c.dead = true;
    while (c.head != nullptr) {
      FreeBlock* b = c.head;
      c.head = b->next;
      ::operator delete(b);  // unsized: clang does not enable sized deallocation by default
    }
    c.count = 0;
  }
};
thread_local NodeCacheReaper node_cache_reaper;

void* AllocateNodeBlock() {
  if constexpr (kCacheNodes) {
    NodeCache& c = node_cache;
    if (FreeBlock* b = c.head; b != nullptr) {
      c.head = b->next;
      --c.count;
      return b;
    }
  }
  return ::operator new(kNodeBlockBytes);
}

void FreeNodeBlock(void* p) {
  if constexpr (kCacheNodes) {
    NodeCache& c = node_cache;
    if (!c.dead && c.count < kCachedBlocksPerThread) {
      if (!c.registered) [[unlikely]] {
        c.registered = true;
        (void)&node_cache_reaper;  // odr-use: constructs it, so its destructor runs at exit
      }
      c.head = new (p) FreeBlock{c.head};
      ++c.count;
      return;
    }
  }
  ::operator delete(p);  // unsized: clang does not enable sized deallocation by default
}

// What allocate_shared uses for a Value's node and control block: fixed-size blocks from the
// thread's cache.
template <typename T>
struct NodeAllocator {
  using value_type = T;
  NodeAllocator() = default;
  template <typename U>
  NodeAllocator(const NodeAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) {
    if (n == 1 && sizeof(T) <= kNodeBlockBytes && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      return static_cast<T*>(AllocateNodeBlock());
    }
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n == 1 && sizeof(T) <= kNodeBlockBytes && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      FreeNodeBlock(p);
      return;
    }
    std::allocator<T>().deallocate(p, n);
  }
  template <typename U>
  bool operator==(const NodeAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace

std::shared_ptr<Value::Node> Value::NewNode() {
  // The block holds the node and shared_ptr's control block; see NodeAllocator.
#if defined(__GLIBCXX__)
  static_assert(
      sizeof(std::_Sp_counted_ptr_inplace<Node, NodeAllocator<Node>, __gnu_cxx::_S_atomic>) <=
          kNodeBlockBytes,
      "a Value's node and control block must fit one cached block");
#endif
  return std::allocate_shared<Node>(NodeAllocator<Node>());
}

}  // namespace idem
