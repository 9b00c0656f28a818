#include "src/core/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>

#include "src/core/block_cache.h"

#if defined(__has_include)
#if __has_include(<sanitizer/asan_interface.h>)
#include <sanitizer/asan_interface.h>
#endif
#endif
#ifndef ASAN_POISON_MEMORY_REGION
#define ASAN_POISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#define ASAN_UNPOISON_MEMORY_REGION(addr, size) ((void)(addr), (void)(size))
#endif

namespace idem::memory_plan {
namespace {

constexpr size_t kHeader = block_cache::kHeaderBytes;
constexpr uint64_t kAlive = ~uint64_t{0};

uint64_t RoundUp64(uint64_t n) { return (n + 63) / 64 * 64; }
// The bytes a planned tensor of `size` takes in the arena: its header and its data.
uint64_t SlotBytes(uint64_t size) { return RoundUp64(kHeader + size); }

Status HeapRefused(size_t size) {
  return Status(StatusCode::kResourceExhausted, fmt::format("cannot allocate {} bytes", size));
}

// The data is freed with its control block (the allocators' deallocate), not by the deleter.
struct KeepDeleter {
  void operator()(const void* /*data*/) const noexcept {}
};

// The allocators below put shared_ptr's control block in the 64-byte header in front of the
// data, so a tensor costs no allocation of its own: allocate() hands out the header.
template <typename T>
T* HeaderAs(std::byte* header, size_t n) {
  static_assert(sizeof(T) <= kHeader && alignof(T) <= Buffer::kAlignment,
                "shared_ptr's control block must fit the header");
  if (n != 1) throw std::bad_alloc();  // shared_ptr asks for exactly one control block
  return reinterpret_cast<T*>(header);
}

}  // namespace

// ---- Recording --------------------------------------------------------------------------------

struct Recorder::State {
  struct Event {
    uint64_t size;
    uint64_t allocated;  // clock values
    uint64_t freed;      // kAlive until freed
  };
  std::mutex mutex;
  uint64_t clock = 0;
  bool finished = false;
  bool overflow = false;
  std::vector<Event> events;

  // A recorded tensor went: note when, and give its block back (to the heap during the run, so
  // the recording run leaves no blocks behind; to the cache after it, where the run's outputs'
  // blocks are wanted again).
  void Freed(uint32_t index, block_cache::RawBlock block) {
    bool cache = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (finished) {
        cache = true;
      } else {
        events[index].freed = clock++;
      }
    }
    block_cache::ReturnBlock(block, cache);
  }
};

namespace {

template <typename T>
struct RecordedAllocator {
  using value_type = T;
  std::shared_ptr<Recorder::State> state;
  std::byte* block;
  uint32_t class_index;
  uint32_t index;
  RecordedAllocator(std::shared_ptr<Recorder::State> s, block_cache::RawBlock b, uint32_t i)
      : state(std::move(s)), block(b.block), class_index(b.class_index), index(i) {}
  template <typename U>
  RecordedAllocator(const RecordedAllocator<U>& o) noexcept  // NOLINT(google-explicit-constructor)
      : state(o.state), block(o.block), class_index(o.class_index), index(o.index) {}
  T* allocate(size_t n) { return HeaderAs<T>(block, n); }
  void deallocate(T* /*p*/, size_t /*n*/) noexcept { state->Freed(index, {block, class_index}); }
  template <typename U>
  bool operator==(const RecordedAllocator<U>& o) const noexcept {
    return block == o.block;
  }
};

}  // namespace

Recorder::Recorder() : state_(std::make_shared<State>()) {}

Recorder::~Recorder() {
  // A run that failed before Finish: its tensors still return their blocks (to the cache).
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->finished = true;
}

Result<Buffer> Recorder::Allocate(size_t size, std::byte** writable, bool zeroed) {
  State& s = *state_;
  if (s.overflow || s.events.size() >= kMaxAllocations) {
    s.overflow = true;
    return block_cache::Allocate(size, writable, zeroed);
  }
  const block_cache::RawBlock block = block_cache::TakeBlock(size);
  if (block.block == nullptr) return HeapRefused(size);
  uint32_t index = 0;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    index = static_cast<uint32_t>(s.events.size());
    s.events.push_back({size, s.clock++, kAlive});
  }
  std::byte* data = block.block + kHeader;
  if (zeroed) std::memset(data, 0, size);
  std::shared_ptr<const void> owner(static_cast<const void*>(data), KeepDeleter{},
                                    RecordedAllocator<std::byte>(state_, block, index));
  *writable = data;
  return Buffer::Shared(std::move(owner), data, size);
}

std::optional<Plan> Recorder::Finish(uint64_t max_arena_bytes) {
  std::vector<State::Event> events;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->finished = true;
    if (state_->overflow) return std::nullopt;
    events = state_->events;
  }
  const size_t n = events.size();
  Plan plan;
  plan.sizes.resize(n);
  plan.offsets.assign(n, kUnplanned);
  std::vector<uint32_t> order;
  for (size_t k = 0; k < n; ++k) {
    plan.sizes[k] = events[k].size;
    if (events[k].freed != kAlive) order.push_back(static_cast<uint32_t>(k));
  }
  // Greedy, largest first: each tensor goes to the lowest offset not used by a placed tensor
  // alive at the same time.
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return events[a].size > events[b].size; });
  std::vector<uint32_t> placed;
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // [begin, end) of overlapping-in-time ones
  for (const uint32_t k : order) {
    busy.clear();
    for (const uint32_t j : placed) {
      if (events[j].allocated < events[k].freed && events[k].allocated < events[j].freed) {
        busy.emplace_back(plan.offsets[j], plan.offsets[j] + SlotBytes(events[j].size));
      }
    }
    std::sort(busy.begin(), busy.end());
    const uint64_t need = SlotBytes(events[k].size);
    uint64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (begin >= offset + need) break;
      offset = std::max(offset, end);
    }
    plan.offsets[k] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + need);
    if (plan.arena_bytes > max_arena_bytes) return std::nullopt;
    placed.push_back(k);
  }
  // Conflicts: the earlier planned tensors whose bytes each one reuses.
  plan.conflict_begin.assign(n + 1, 0);
  for (size_t k = 0; k < n; ++k) {
    plan.conflict_begin[k] = static_cast<uint32_t>(plan.conflicts.size());
    if (plan.offsets[k] == kUnplanned) continue;
    const uint64_t begin = plan.offsets[k];
    const uint64_t end = begin + SlotBytes(plan.sizes[k]);
    for (size_t j = 0; j < k; ++j) {
      if (plan.offsets[j] == kUnplanned) continue;
      const uint64_t jb = plan.offsets[j];
      if (jb < end && begin < jb + SlotBytes(plan.sizes[j])) {
        if (plan.conflicts.size() >= kMaxConflicts) return std::nullopt;
        plan.conflicts.push_back(static_cast<uint32_t>(j));
      }
    }
  }
  plan.conflict_begin[n] = static_cast<uint32_t>(plan.conflicts.size());
  return plan;
}

// ---- The arena ------------------------------------------------------------------------------

namespace {

// The arena block's own control block: the block returns to the cache when the run and every
// tensor placed in it are done with it.
template <typename T>
struct ArenaBlockAllocator {
  using value_type = T;
  block_cache::RawBlock block;
  size_t bytes;  // after the header
  ArenaBlockAllocator(block_cache::RawBlock b, size_t n) : block(b), bytes(n) {}
  template <typename U>
  ArenaBlockAllocator(const ArenaBlockAllocator<U>& o) noexcept  // NOLINT
      : block(o.block), bytes(o.bytes) {}
  T* allocate(size_t n) { return HeaderAs<T>(block.block, n); }
  void deallocate(T* /*p*/, size_t /*n*/) noexcept {
    ASAN_UNPOISON_MEMORY_REGION(block.block + kHeader, bytes);
    block_cache::ReturnBlock(block, /*cache=*/true);
  }
  template <typename U>
  bool operator==(const ArenaBlockAllocator<U>& o) const noexcept {
    return block.block == o.block.block;
  }
};

// A placed tensor's control block: when the tensor goes, its live flag clears (release, so the
// next tensor placed over its bytes sees every write to them done) and its bytes are poisoned.
template <typename T>
struct PlacedAllocator {
  using value_type = T;
  std::byte* header;
  std::shared_ptr<const void> arena;
  std::atomic<uint8_t>* live;
  uint64_t size;
  PlacedAllocator(std::byte* h, std::shared_ptr<const void> a, std::atomic<uint8_t>* l, uint64_t s)
      : header(h), arena(std::move(a)), live(l), size(s) {}
  template <typename U>
  PlacedAllocator(const PlacedAllocator<U>& o) noexcept  // NOLINT(google-explicit-constructor)
      : header(o.header), arena(o.arena), live(o.live), size(o.size) {}
  T* allocate(size_t n) { return HeaderAs<T>(header, n); }
  void deallocate(T* /*p*/, size_t /*n*/) noexcept {
    ASAN_POISON_MEMORY_REGION(header, kHeader + size);
    live->store(0, std::memory_order_release);
  }
  template <typename U>
  bool operator==(const PlacedAllocator<U>& o) const noexcept {
    return header == o.header;
  }
};

}  // namespace

bool Arena::MakeBlock() {
  const size_t n = plan_.sizes.size();
  const uint64_t flag_bytes = RoundUp64(n);
  const uint64_t bytes = flag_bytes + plan_.arena_bytes;
  const block_cache::RawBlock block = block_cache::TakeBlock(bytes);
  if (block.block == nullptr) return false;
  std::byte* data = block.block + kHeader;
  live_ = reinterpret_cast<std::atomic<uint8_t>*>(data);
  for (size_t k = 0; k < n; ++k) new (&live_[k]) std::atomic<uint8_t>(0);
  tensors_ = data + flag_bytes;
  ASAN_POISON_MEMORY_REGION(tensors_, plan_.arena_bytes);
  block_ = std::shared_ptr<const void>(static_cast<const void*>(data), KeepDeleter{},
                                       ArenaBlockAllocator<std::byte>(block, bytes));
  return true;
}

Result<Buffer> Arena::Allocate(size_t size, std::byte** writable, bool zeroed) {
  if (diverged_) return block_cache::Allocate(size, writable, zeroed);
  const size_t k = next_++;
  // Another size: not the recorded run, so the indices no longer say which tensor this is. A
  // refused arena block: the block cache may still serve.
  const bool planned = k < plan_.sizes.size() && plan_.sizes[k] == size;
  if (!planned || (plan_.offsets[k] != kUnplanned && block_ == nullptr && !MakeBlock())) {
    diverged_ = true;
    return block_cache::Allocate(size, writable, zeroed);
  }
  if (plan_.offsets[k] == kUnplanned) return block_cache::Allocate(size, writable, zeroed);
  for (uint32_t c = plan_.conflict_begin[k]; c < plan_.conflict_begin[k + 1]; ++c) {
    if (live_[plan_.conflicts[c]].load(std::memory_order_acquire) != 0) {
      return block_cache::Allocate(size, writable, zeroed);  // an earlier tensor outlived its plan
    }
  }
  std::byte* header = tensors_ + plan_.offsets[k];
  ASAN_UNPOISON_MEMORY_REGION(header, kHeader + size);
  std::byte* data = header + kHeader;
  if (zeroed) std::memset(data, 0, size);
  live_[k].store(1, std::memory_order_relaxed);
  std::shared_ptr<const void> owner(static_cast<const void*>(data), KeepDeleter{},
                                    PlacedAllocator<std::byte>(header, block_, &live_[k], size));
  ++placed_;
  *writable = data;
  return Buffer::Shared(std::move(owner), data, size);
}

}  // namespace idem::memory_plan
