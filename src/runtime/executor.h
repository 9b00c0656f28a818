// The executor: runs any Plan (the main graph or a subgraph) with per-run state on the caller's
// stack. Immutable after construction and shared by every Run on every thread.
//
// Per run: computed values live in a slot array; after each step the slots whose last reader it
// was are released (liveness from the plan), and the bytes of live computed values are accounted
// against Limits::max_run_bytes (see ValueBytes: shared buffers count once per value holding
// them, which over-counts, never under-counts). Kernels reach subgraphs, the run options and the
// budget through the RunContext.
#ifndef IDEM_SRC_RUNTIME_EXECUTOR_H_
#define IDEM_SRC_RUNTIME_EXECUTOR_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <vector>

#include "src/core/memory_plan.h"
#include "src/runtime/plan.h"

namespace idem {

// Allocates whole, 64-byte-aligned cache lines. The run-time tables use it so that no line they
// sit on is shared with memory another thread writes (a caller's values, their reference counts):
// otherwise every Run on one thread would evict the lines the other thread reads, and two threads
// would run slower than one.
template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr size_t kLine = 64;
  CacheLineAllocator() = default;
  template <typename U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) {
    const size_t bytes = (n * sizeof(T) + kLine - 1) / kLine * kLine;
    return static_cast<T*>(::operator new (bytes, std::align_val_t{kLine}));
  }
  void deallocate(T* p, size_t) { ::operator delete (p, std::align_val_t{kLine}); }
  bool operator==(const CacheLineAllocator&) const { return true; }
};

template <typename T>
using HotVector = std::vector<T, CacheLineAllocator<T>>;

// A step flattened for the run loop: no pointer chasing through unique_ptr/vector members.
struct FlatStep {
  const Kernel* kernel;
  uint32_t first_input;  // into FlatPlan::step_inputs
  uint32_t input_count;
  int32_t first_output;
  int32_t output_count;
  uint32_t first_release;  // into FlatPlan::releases
  uint32_t release_count;
  // The step's first input is a computed value no later step or output reads, and the kernel
  // either returns it (output_is_input: Identity kept because eliminate_identity is off) or may
  // take it over (reuses_input0: SequenceInsert, Optional, OptionalGetElement). The run moves
  // that value into the output slot and hands the kernel the slot as its input too.
  bool forward_in_place;
  // The step's outputs are its input (output_is_input: an Identity kept because
  // eliminate_identity is off), so it creates no bytes: the run skips its budget accounting and
  // only moves a forwarded value's byte count to the output slot.
  bool aliases_input;
  // aliases_input with one input and one output (Identity): the run copies (or, forwarded, has
  // already moved) the input into the output slot itself, without calling the kernel.
  bool copies_input;
};

struct FlatPlan {
  const Plan* plan = nullptr;
  HotVector<FlatStep> steps;
  HotVector<ValueRef> step_inputs;
  HotVector<int32_t> releases;
  HotVector<ValueRef> output_refs;
  // Per output: move (rather than copy) the computed value out, because no later output refers
  // to the same slot and the run's slots die right after.
  HotVector<uint8_t> move_output;
  // Subgraphs without steps (bodies of erased Identity nodes only): per output, the feed position
  // it returns (-1: a constant), so a run maps feeds to outputs without building a frame.
  bool passthrough = false;
  // Subgraphs: how many values a run takes (formal inputs + captures) and gives, precomputed so
  // a loop's per-iteration check is two compares.
  size_t feed_count = 0;
  size_t output_count = 0;
  HotVector<int32_t> output_feed;
};

class Executor {
 public:
  explicit Executor(Program program);
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const Plan& main() const { return program_.main; }
  const Program& program() const { return program_; }

  // Runs the main graph. `feeds` in plan order (already checked), `overrides` likewise.
  Result<std::vector<Value>> Run(std::span<const Value> feeds, std::span<const Value> overrides,
                                 const Limits& limits, const RunOptions* options) const;
  // As Run, into `outputs` (one slot per plan output, overwritten): no vector is allocated.
  Status RunTo(std::span<const Value> feeds, std::span<const Value> overrides, const Limits& limits,
               const RunOptions* options, std::span<Value> outputs) const;

 private:
  friend class RunState;

  // A memory plan for one set of feed shapes (src/core/memory_plan.h), made by the first
  // successful run of those shapes and immutable once published.
  struct MemoryPlanEntry {
    std::vector<int64_t> key;               // per feed: element type, rank, dims
    std::optional<memory_plan::Plan> plan;  // nullopt: the recording made none (run unplanned)
  };
  static constexpr size_t kMaxMemoryPlans = 4;

  Status RunPlanned(std::span<const Value> feeds, std::span<const Value> overrides,
                    const Limits& limits, const RunOptions* options,
                    std::span<Value> outputs) const;
  Status RunFrameWith(std::span<const Value> feeds, std::span<const Value> overrides,
                      const Limits& limits, const RunOptions* options, std::span<Value> outputs,
                      memory_plan::TensorSource* source) const;
  const MemoryPlanEntry* FindMemoryPlan(std::span<const Value> feeds) const;

  Program program_;
  FlatPlan main_;
  std::vector<FlatPlan> subgraphs_;
  // Published plans: memory_plans_[0, memory_plan_count_) are complete (release/acquire on the
  // count); writers hold memory_plans_mutex_. recording_ lets one run record at a time.
  mutable std::array<std::unique_ptr<const MemoryPlanEntry>, kMaxMemoryPlans> memory_plans_;
  mutable std::atomic<size_t> memory_plan_count_{0};
  mutable std::mutex memory_plans_mutex_;
  mutable std::atomic<bool> recording_{false};
};

}  // namespace idem

#endif  // IDEM_SRC_RUNTIME_EXECUTOR_H_
