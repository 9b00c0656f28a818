// A static memory plan for runs whose feeds keep their shapes (issue 18): every tensor a kernel
// allocates gets an offset in one arena, as TensorFlow Lite Micro's greedy planner does.
//
// Why: the block cache (block_cache.h) keeps each freed block for its own size class, so a run
// of PaddleOCR det holds, per class, as many blocks as that class ever needs at once: 121 MiB of
// blocks for about 42 MiB of tensors alive at any moment. One arena laid out for the run's
// lifetimes holds about the largest set of tensors alive together.
//
// How: a Recorder serves one run (from the heap; blocks freed during the run go back to the
// heap, so the recording run does not leave its blocks in the cache) and notes when each tensor
// is allocated and freed. Plan() then places every tensor freed before the run ended (the
// run's outputs and whatever else escapes keep coming from the block cache) at the lowest
// offset whose bytes no tensor alive at the same time uses, largest tensors first. Later runs
// of the same shapes take an Arena over the plan: one block (from the block cache, so a
// steady-state run allocates nothing) and, per allocation, a Buffer at its planned offset.
//
// Safety does not rest on runs behaving like the recorded one. Each planned tensor has a live
// flag in the arena block, cleared when the tensor's last reference goes (on any thread), and a
// tensor is placed only when every earlier tensor whose bytes it overlaps is dead; otherwise it
// comes from the block cache. A size that differs from the recording (another branch, another
// trip count) sends the rest of the run to the block cache. A tensor that outlives its run keeps
// the whole arena block alive, so no later run can reuse those bytes; the executor copies a run's
// outputs out of its arena (a run unlike the recording may return a tensor the recording freed),
// so a caller keeping an output does not keep the arena. Under AddressSanitizer the
// bytes of dead tensors are poisoned, so a use after free inside the arena is still reported.
#ifndef IDEM_SRC_CORE_MEMORY_PLAN_H_
#define IDEM_SRC_CORE_MEMORY_PLAN_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "idem/buffer.h"
#include "src/core/block_cache.h"

namespace idem::memory_plan {

// Where a run's tensors come from (RunContext::tensor_source; null: the block cache).
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  // As block_cache::Allocate: `size` > 0 bytes, zeroed unless `zeroed` is false.
  virtual Result<Buffer> Allocate(size_t size, std::byte** writable, bool zeroed) = 0;
};

// Recordings with more allocations than this make no plan (a long Loop): the planner is
// quadratic in them.
inline constexpr size_t kMaxAllocations = 4096;
// A plan's conflict lists (below) hold at most this many entries in all.
inline constexpr size_t kMaxConflicts = size_t{1} << 20;
inline constexpr uint64_t kUnplanned = ~uint64_t{0};
// The largest arena whose block the block cache keeps (with its live flags and header), so a
// steady-state run takes it from the cache.
inline constexpr uint64_t kMaxArenaBytes =
    block_cache::kMaxBytes - kMaxAllocations - 2 * block_cache::kHeaderBytes;

struct Plan {
  // Bytes of the arena's tensor region (each tensor takes its size plus a 64-byte header for its
  // reference count, rounded up to 64).
  uint64_t arena_bytes = 0;
  // Per allocation, in the order the run makes them: its size and its offset in the arena
  // (kUnplanned: from the block cache).
  std::vector<uint64_t> sizes;
  std::vector<uint64_t> offsets;
  // Per allocation k: conflicts[conflict_begin[k] .. conflict_begin[k + 1]) are the earlier
  // planned allocations whose bytes overlap k's; each must be dead before k takes its bytes.
  std::vector<uint32_t> conflict_begin;
  std::vector<uint32_t> conflicts;
};

// Serves one run and records its allocations. Not thread-safe for Allocate (a run allocates on
// its own thread); the recorded tensors may be freed on any thread, during or after the run.
class Recorder final : public TensorSource {
 public:
  Recorder();
  ~Recorder() override;
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  Result<Buffer> Allocate(size_t size, std::byte** writable, bool zeroed) override;
  // Call once the run is over and its outputs are handed out: the plan, or nullopt when the run
  // made more than kMaxAllocations allocations, its arena would exceed `max_arena_bytes`, or its
  // conflicts exceed kMaxConflicts. Tensors still alive now stay out of the plan (and return to
  // the block cache when they go).
  std::optional<Plan> Finish(uint64_t max_arena_bytes);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// Places `plan`'s tensors for one run. The arena block is taken at the first allocation.
class Arena final : public TensorSource {
 public:
  explicit Arena(const Plan& plan) : plan_(plan) {}
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  Result<Buffer> Allocate(size_t size, std::byte** writable, bool zeroed) override;
  // How many of this run's allocations took their planned place (tests).
  size_t placed() const { return placed_; }
  // Whether `data` points into this run's arena: a placed tensor's bytes, or the end of them (an
  // empty view still holds the tensor).
  bool Holds(const std::byte* data) const {
    const auto p = reinterpret_cast<uintptr_t>(data), begin = reinterpret_cast<uintptr_t>(tensors_);
    return block_ != nullptr && p >= begin && p - begin <= plan_.arena_bytes;
  }

 private:
  bool MakeBlock();

  const Plan& plan_;
  std::shared_ptr<const void> block_;  // the arena block; each placed tensor holds a copy
  std::byte* tensors_ = nullptr;       // the tensor region
  std::atomic<uint8_t>* live_ = nullptr;
  size_t next_ = 0;
  size_t placed_ = 0;
  bool diverged_ = false;
};

}  // namespace idem::memory_plan

#endif  // IDEM_SRC_CORE_MEMORY_PLAN_H_
