#include "src/runtime/executor.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <new>

#include "src/core/block_cache.h"

namespace idem {
namespace {

// A fixed-capacity array on the stack, with a fallback for larger counts from the thread's block
// cache (so a steady-state Run of a big graph allocates nothing either); elements are
// value-initialized and destroyed in place.
template <typename T, size_t N>
class SmallArray {
 public:
  explicit SmallArray(size_t size) : size_(size) {
    if (size <= N) {
      data_ = std::launder(reinterpret_cast<T*>(inline_));
    } else {
      heap_ = block_cache::AllocateScratch(size * sizeof(T));  // NOLINT(bugprone-sizeof-expression)
      if (heap_ == nullptr) throw std::bad_alloc();
      data_ = reinterpret_cast<T*>(heap_);
    }
    std::uninitialized_value_construct_n(data_, size);
  }
  SmallArray(const SmallArray&) = delete;
  SmallArray& operator=(const SmallArray&) = delete;
  ~SmallArray() {
    std::destroy_n(data_, size_);
    block_cache::FreeScratch(heap_);
  }
  T* data() { return data_; }
  T& operator[](size_t i) { return data_[i]; }

 private:
  // Storage for N elements, whatever T is (pointers included).
  alignas(T) std::byte inline_[N * sizeof(T)];  // NOLINT(bugprone-sizeof-expression)
  T* data_;
  size_t size_;
  std::byte* heap_ = nullptr;
};

// Where a run finds each kind of value.
struct Sources {
  const Value* bases[5];  // indexed by ValueRef::Source; kNone stays null

  Sources(std::span<const Value> feeds, std::span<const Value> overrides,
          std::span<const Value> constants, const Value* computed)
      : bases{nullptr, feeds.data(), overrides.data(), constants.data(), computed} {}

  const Value* Get(ValueRef ref) const {
    return ref.source == ValueRef::Source::kNone ? nullptr
                                                 : bases[static_cast<int>(ref.source)] + ref.index;
  }
};

FlatPlan Flatten(const Plan& plan) {
  FlatPlan flat;
  flat.plan = &plan;
  // Last reader of every computed slot; graph outputs read them after every step.
  constexpr size_t kAfterAllSteps = ~size_t{0};
  std::vector<size_t> last_read(static_cast<size_t>(plan.computed_count), 0);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    for (const ValueRef& ref : plan.steps[s].inputs) {
      if (ref.source == ValueRef::Source::kComputed) last_read[static_cast<size_t>(ref.index)] = s;
    }
  }
  for (const ValueRef& ref : plan.output_refs) {
    if (ref.source == ValueRef::Source::kComputed) {
      last_read[static_cast<size_t>(ref.index)] = kAfterAllSteps;
    }
  }
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    bool in_place = (step.output_is_input || step.reuses_input0) && !step.inputs.empty() &&
                    step.output_count >= 1 &&
                    step.inputs[0].source == ValueRef::Source::kComputed &&
                    last_read[static_cast<size_t>(step.inputs[0].index)] == s;
    if (step.output_is_input && step.inputs.size() != 1) in_place = false;
    for (size_t i = 1; in_place && i < step.inputs.size(); ++i) {
      // The same value read twice by this step cannot be handed over.
      in_place = !(step.inputs[i].source == ValueRef::Source::kComputed &&
                   step.inputs[i].index == step.inputs[0].index);
    }
    flat.steps.push_back(
        FlatStep{step.kernel.get(), static_cast<uint32_t>(flat.step_inputs.size()),
                 static_cast<uint32_t>(step.inputs.size()), step.first_output, step.output_count,
                 static_cast<uint32_t>(flat.releases.size()),
                 static_cast<uint32_t>(step.release.size()), in_place, step.output_is_input,
                 step.output_is_input && step.inputs.size() == 1 && step.output_count == 1 &&
                     step.inputs[0].source != ValueRef::Source::kNone});
    flat.step_inputs.insert(flat.step_inputs.end(), step.inputs.begin(), step.inputs.end());
    flat.releases.insert(flat.releases.end(), step.release.begin(), step.release.end());
  }
  flat.output_refs.assign(plan.output_refs.begin(), plan.output_refs.end());
  // Move an output's value unless a later output reads the same slot: one backward pass with a
  // seen-set (linear in the number of outputs).
  flat.move_output.assign(plan.output_refs.size(), 0);
  std::vector<uint8_t> seen(static_cast<size_t>(plan.computed_count), 0);
  for (size_t o = plan.output_refs.size(); o-- > 0;) {
    const ValueRef ref = plan.output_refs[o];
    if (ref.source != ValueRef::Source::kComputed) continue;
    uint8_t& s = seen[static_cast<size_t>(ref.index)];
    flat.move_output[o] = s ? 0 : 1;
    s = 1;
  }
  flat.feed_count = plan.feed_slots.size() + plan.capture_slots.size();
  flat.output_count = plan.output_refs.size();
  if (plan.is_subgraph && plan.steps.empty()) {
    std::vector<int32_t> slot_to_feed(static_cast<size_t>(plan.computed_count), -1);
    for (size_t i = 0; i < plan.feed_slots.size(); ++i) {
      slot_to_feed[static_cast<size_t>(plan.feed_slots[i])] = static_cast<int32_t>(i);
    }
    for (size_t i = 0; i < plan.capture_slots.size(); ++i) {
      slot_to_feed[static_cast<size_t>(plan.capture_slots[i])] =
          static_cast<int32_t>(plan.feed_slots.size() + i);
    }
    flat.passthrough = true;
    for (const ValueRef& ref : plan.output_refs) {
      flat.output_feed.push_back(ref.source == ValueRef::Source::kComputed
                                     ? slot_to_feed[static_cast<size_t>(ref.index)]
                                     : -1);
    }
  }
  return flat;
}

}  // namespace

// Per-run state: the RunContext kernels see. Lives on the caller's stack.
class RunState final : public RunContext {
 public:
  RunState(const Executor& executor, const Limits& limits, const RunOptions* options)
      : RunContext(limits, options), executor_(executor) {}

  Status RunSubgraph(int32_t handle, std::span<Value> feeds, std::span<Value> outputs) override {
    if (handle < 0 || static_cast<size_t>(handle) >= executor_.subgraphs_.size()) {
      return Status(StatusCode::kInternal, fmt::format("no subgraph #{}", handle));
    }
    const FlatPlan& flat = executor_.subgraphs_[static_cast<size_t>(handle)];
    if (feeds.size() != flat.feed_count || outputs.size() != flat.output_count) [[unlikely]] {
      return Status(StatusCode::kInternal,
                    fmt::format("subgraph #{} takes {} values and gives {}, got {} and {}", handle,
                                flat.feed_count, flat.output_count, feeds.size(), outputs.size()));
    }
    const Plan& plan = *flat.plan;
    const size_t formal = plan.feed_slots.size();
    if (flat.passthrough) {
      // Nothing to compute: outputs are feeds (moved unless another output needs them too) or
      // constants.
      for (size_t o = 0; o < outputs.size(); ++o) {
        const int32_t f = flat.output_feed[o];
        if (f < 0) {
          outputs[o] = plan.constants[static_cast<size_t>(flat.output_refs[o].index)];
        } else if (flat.move_output[o]) {
          outputs[o] = std::move(feeds[static_cast<size_t>(f)]);
        } else {
          outputs[o] = feeds[static_cast<size_t>(f)];
        }
      }
      return {};
    }
    SmallArray<Value, 32> computed(static_cast<size_t>(plan.computed_count));
    for (size_t i = 0; i < formal; ++i) {
      computed[static_cast<size_t>(plan.feed_slots[i])] = std::move(feeds[i]);
    }
    for (size_t i = 0; i < plan.capture_slots.size(); ++i) {
      computed[static_cast<size_t>(plan.capture_slots[i])] = std::move(feeds[formal + i]);
    }
    const Sources sources({}, {}, plan.constants, computed.data());
    return RunFrame(flat, sources, computed.data(), outputs);
  }

  // Runs one frame; `result` receives the plan's outputs.
  Status RunFrame(const FlatPlan& flat, const Sources& sources, Value* computed,
                  std::span<Value> result) {
    const Plan& plan = *flat.plan;
    SmallArray<uint64_t, 128> bytes(static_cast<size_t>(plan.computed_count));
    SmallArray<const Value*, 16> inputs(plan.max_step_inputs);
    const ValueRef* step_inputs = flat.step_inputs.data();
    const int32_t* releases = flat.releases.data();
    const uint64_t live_at_entry = live_bytes();
    Status failure;
    for (size_t s = 0; s < flat.steps.size(); ++s) {
      const FlatStep& step = flat.steps[s];
      uint64_t forwarded_bytes = 0;
      if (step.forward_in_place) {
        const auto in = static_cast<size_t>(step_inputs[step.first_input].index);
        Value& slot = computed[static_cast<size_t>(step.first_output)];
        slot = std::move(computed[in]);
        forwarded_bytes = bytes[in];
        bytes[in] = 0;
        inputs[0] = &slot;
        for (uint32_t i = 1; i < step.input_count; ++i) {
          inputs[i] = sources.Get(step_inputs[step.first_input + i]);
        }
      } else {
        for (uint32_t i = 0; i < step.input_count; ++i) {
          inputs[i] = sources.Get(step_inputs[step.first_input + i]);
        }
      }
      Value* outputs = computed + step.first_output;
      if (step.copies_input) {
        if (!step.forward_in_place) outputs[0] = *inputs[0];
      } else {
        Status status = step.kernel->RunWith(
            *this, std::span<const Value* const>(inputs.data(), step.input_count),
            std::span<Value>(outputs, static_cast<size_t>(step.output_count)));
        if (!status.ok()) [[unlikely]] {
          failure = std::move(status).WithContext(plan.steps[s].label);
          break;
        }
      }
      if (step.aliases_input) {
        // Nothing created: a forwarded value keeps its charge under its new slot; otherwise the
        // output shares the input's storage and is not charged (bytes[] stays 0).
        bytes[static_cast<size_t>(step.first_output)] = forwarded_bytes;
      } else {
        // Budget: charge what the step created. An output that is one of its inputs
        // (SequenceAt's stored tensor) adds nothing; a forwarded value's old size is replaced.
        Release(forwarded_bytes);
        if (!ChargeOutputs(step, inputs.data(), outputs, bytes.data())) [[unlikely]] {
          failure = OverBudgetStatus().WithContext(plan.steps[s].label);
          break;
        }
      }
      // Liveness: values this step read for the last time.
      for (uint32_t r = 0; r < step.release_count; ++r) {
        const auto slot = static_cast<size_t>(releases[step.first_release + r]);
        Release(bytes[slot]);
        bytes[slot] = 0;
        computed[slot] = Value();
      }
    }
    if (failure.ok()) {
      for (size_t o = 0; o < flat.output_refs.size(); ++o) {
        const ValueRef ref = flat.output_refs[o];
        if (flat.move_output[o]) {
          result[o] = std::move(computed[static_cast<size_t>(ref.index)]);
        } else {
          result[o] = *sources.Get(ref);
        }
      }
    }
    // The frame's values leave the budget: outputs belong to the caller now (a control-flow
    // kernel charges what it keeps), everything else dies with the frame.
    Release(live_bytes() - live_at_entry);
    return failure;
  }

 private:
  // Charges the outputs of `step` that are not one of its inputs into bytes[]; false when the run
  // is now over its budget.
  bool ChargeOutputs(const FlatStep& step, const Value* const* inputs, const Value* outputs,
                     uint64_t* bytes) {
    bool over_budget = false;
    for (int32_t o = 0; o < step.output_count; ++o) {
      const Value& out = outputs[o];
      if (out.is_null()) continue;
      bool shared = false;
      if (!(step.forward_in_place && o == 0)) {
        for (uint32_t i = 0; i < step.input_count && !shared; ++i) {
          shared = inputs[i] != nullptr && inputs[i]->SharesStorageWith(out);
        }
      }
      if (shared) continue;  // bytes[] stays 0
      const uint64_t b = ValueBytes(out);
      bytes[static_cast<size_t>(step.first_output + o)] = b;
      over_budget |= !AddLive(b);
    }
    return !over_budget;
  }

  const Executor& executor_;
};

Executor::Executor(Program program) : program_(std::move(program)) {
  main_ = Flatten(program_.main);
  subgraphs_.reserve(program_.subgraphs.size());
  for (const auto& plan : program_.subgraphs) subgraphs_.push_back(Flatten(*plan));
}

Result<std::vector<Value>> Executor::Run(std::span<const Value> feeds,
                                         std::span<const Value> overrides, const Limits& limits,
                                         const RunOptions* options) const {
  std::vector<Value> outputs(main_.output_refs.size());
  IDEM_RETURN_IF_ERROR(RunTo(feeds, overrides, limits, options, outputs));
  return outputs;
}

Status Executor::RunTo(std::span<const Value> feeds, std::span<const Value> overrides,
                       const Limits& limits, const RunOptions* options,
                       std::span<Value> outputs) const {
  const Plan& plan = program_.main;
  if (main_.steps.empty()) {
    // Nothing to compute (every node was an erased Identity): outputs are feeds or constants.
    const Sources sources(feeds, overrides, plan.constants, nullptr);
    for (size_t o = 0; o < main_.output_refs.size(); ++o) {
      outputs[o] = *sources.Get(main_.output_refs[o]);
    }
    return {};
  }
  // Plans are keyed by the feeds' shapes only, so runs with other overrides go unplanned.
  if (program_.plan_memory && overrides.data() == plan.override_defaults.data()) {
    return RunPlanned(feeds, overrides, limits, options, outputs);
  }
  return RunFrameWith(feeds, overrides, limits, options, outputs, nullptr);
}

Status Executor::RunFrameWith(std::span<const Value> feeds, std::span<const Value> overrides,
                              const Limits& limits, const RunOptions* options,
                              std::span<Value> outputs, memory_plan::TensorSource* source) const {
  const Plan& plan = program_.main;
  RunState state(*this, limits, options);
  state.set_tensor_source(source);
  SmallArray<Value, 128> computed(static_cast<size_t>(plan.computed_count));
  const Sources sources(feeds, overrides, plan.constants, computed.data());
  return state.RunFrame(main_, sources, computed.data(), outputs);
}

namespace {

// The memory-plan key of `feeds` (element type, rank and dims of each); false when a feed is not
// a tensor (sequences and optionals are not planned).
bool MemoryPlanKey(std::span<const Value> feeds, std::vector<int64_t>* key) {
  for (const Value& feed : feeds) {
    if (!feed.is_tensor()) return false;
    const Tensor& t = feed.tensor();
    key->push_back(static_cast<int64_t>(t.element_type()));
    key->push_back(static_cast<int64_t>(t.shape().size()));
    key->insert(key->end(), t.shape().begin(), t.shape().end());
  }
  return true;
}

bool MemoryPlanKeyMatches(const std::vector<int64_t>& key, std::span<const Value> feeds) {
  size_t at = 0;
  for (const Value& feed : feeds) {
    if (!feed.is_tensor()) return false;
    const Tensor& t = feed.tensor();
    const std::span<const int64_t> shape = t.shape();
    if (key.size() < at + 2 + shape.size() || key[at] != static_cast<int64_t>(t.element_type()) ||
        key[at + 1] != static_cast<int64_t>(shape.size())) {
      return false;
    }
    at += 2;
    for (const int64_t d : shape) {
      if (key[at++] != d) return false;
    }
  }
  return at == key.size();
}

// Whether a tensor of `v` (or of its sequence or optional) has its bytes in `arena`.
bool InArena(const memory_plan::Arena& arena, const Value& v) {
  if (v.is_null()) return false;
  if (v.is_tensor()) return arena.Holds(v.tensor().data().data());
  if (v.is_sequence()) {
    for (const Value& t : v.sequence().values()) {
      if (InArena(arena, t)) return true;
    }
    return false;
  }
  return v.optional().has_value() && InArena(arena, v.optional().value());
}

// `v` with every tensor whose bytes are in `arena` copied to a block of its own: an output (a
// tensor the recording freed, returned by a run unlike it) would otherwise keep the whole arena
// block alive for as long as the caller holds it, and each later run would take another.
Result<Value> CopiedOutOf(const memory_plan::Arena& arena, Value v) {
  if (!InArena(arena, v)) return v;
  if (v.is_tensor()) {
    const Tensor& t = v.tensor();
    if (t.data().empty()) return Value::MakeTensorFromDims(t.element_type(), t.shape(), Buffer());
    std::byte* data = nullptr;
    IDEM_ASSIGN_OR_RETURN(Buffer copy,
                          block_cache::Allocate(t.data().size(), &data, /*zeroed=*/false));
    std::memcpy(data, t.data().data(), t.data().size());
    return Value::MakeTensorFromDims(t.element_type(), t.shape(), std::move(copy));
  }
  if (v.is_sequence()) {
    std::vector<Value> tensors;
    tensors.reserve(v.sequence().size());
    for (const Value& t : v.sequence().values()) {
      IDEM_ASSIGN_OR_RETURN(Value copied, CopiedOutOf(arena, t));
      tensors.push_back(std::move(copied));
    }
    return Value::MakeSequence(v.sequence().element_type(), std::move(tensors));
  }
  IDEM_ASSIGN_OR_RETURN(Value element, CopiedOutOf(arena, v.optional().value()));
  return Value::MakeOptional(std::move(element), v.optional().element_type());
}

}  // namespace

const Executor::MemoryPlanEntry* Executor::FindMemoryPlan(std::span<const Value> feeds) const {
  const size_t count = memory_plan_count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    if (MemoryPlanKeyMatches(memory_plans_[i]->key, feeds)) return memory_plans_[i].get();
  }
  return nullptr;
}

Status Executor::RunPlanned(std::span<const Value> feeds, std::span<const Value> overrides,
                            const Limits& limits, const RunOptions* options,
                            std::span<Value> outputs) const {
  if (const MemoryPlanEntry* entry = FindMemoryPlan(feeds)) {
    if (!entry->plan.has_value() || entry->plan->arena_bytes == 0) {
      return RunFrameWith(feeds, overrides, limits, options, outputs, nullptr);
    }
    memory_plan::Arena arena(*entry->plan);
    IDEM_RETURN_IF_ERROR(RunFrameWith(feeds, overrides, limits, options, outputs, &arena));
    if (arena.placed() > 0) {
      for (Value& output : outputs) {
        IDEM_ASSIGN_OR_RETURN(output, CopiedOutOf(arena, std::move(output)));
      }
    }
    return {};
  }
  // No plan for these shapes: record this run, unless every plan is taken or another run is
  // recording now.
  auto entry = std::make_unique<MemoryPlanEntry>();
  bool idle = false;
  if (memory_plan_count_.load(std::memory_order_acquire) >= kMaxMemoryPlans ||
      !MemoryPlanKey(feeds, &entry->key) ||
      !recording_.compare_exchange_strong(idle, true, std::memory_order_acq_rel)) {
    return RunFrameWith(feeds, overrides, limits, options, outputs, nullptr);
  }
  Status status;
  {
    memory_plan::Recorder recorder;
    status = RunFrameWith(feeds, overrides, limits, options, outputs, &recorder);
    // The run's tensors are all freed now, but for the outputs (and what they hold).
    if (status.ok()) {
      // The arena block must fit the block cache, or every run would take it from the heap.
      entry->plan = recorder.Finish(memory_plan::kMaxArenaBytes);
    }
  }
  [[maybe_unused]] bool published = false;
  if (status.ok()) {
    std::lock_guard<std::mutex> lock(memory_plans_mutex_);
    const size_t count = memory_plan_count_.load(std::memory_order_relaxed);
    if (count < kMaxMemoryPlans && FindMemoryPlan(feeds) == nullptr) {
      memory_plans_[count] = std::move(entry);
      memory_plan_count_.store(count + 1, std::memory_order_release);
      published = true;
    }
  }
  recording_.store(false, std::memory_order_release);
#ifdef __GLIBC__
  // The recording run's tensors went back to the heap (not the block cache); glibc keeps most of
  // such freed memory mapped (its mmap threshold grows with the blocks freed), which would leave
  // the process holding a run's worth of heap beside the arena the next runs take. Once per
  // published plan (at most kMaxMemoryPlans per session): a run that fails publishes none and
  // records again next time, and must not pay for a trim each time.
  if (published) malloc_trim(0);
#endif
  return status;
}

}  // namespace idem
