#include "idem/session.h"

#include "idem/session_proto.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <memory>
#include <new>

#include "src/kernels/kernel.h"
#include "src/onnx/model_loader.h"
#include "src/runtime/plan.h"

namespace idem {
namespace {

// Allocates whole, 64-byte-aligned cache lines. The session's run-time tables use it so that no
// line they sit on is shared with memory another thread writes (a caller's values, their
// reference counts): otherwise every Run on one thread would evict the lines the other thread
// reads, and two threads would run slower than one.
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

// What Run() checks a feed against, flattened at Session creation so the per-run check is a few
// compares with no Status, string or allocation. When the fast check fails (or cannot decide),
// CheckFeeds() runs to produce the exact error; the fast check never accepts what CheckFeeds
// rejects.
struct FeedCheck {
  ValueKind kind = ValueKind::kTensor;
  // tensor: its element type; sequence: its elements' (kUndefined accepts any).
  ElementType element = ElementType::kUndefined;
  bool has_shape = false;   // tensor (or sequence element) declares a shape: check rank + dims
  bool slow = false;        // not covered (optionals, unusual types): always use CheckFeeds
  HotVector<int64_t> dims;  // declared dims, -1 where symbolic or unknown
};

// A step flattened for the run loop: no pointer chasing through unique_ptr/vector members.
struct FlatStep {
  const Kernel* kernel;
  uint32_t first_input;  // into Session::Impl::step_inputs
  uint32_t input_count;
  int32_t first_output;
  int32_t output_count;
  // A step whose output is its input (KernelSchema::output_is_input: Identity kept because
  // eliminate_identity is off) reading a computed value no later step or output reads: the run
  // moves that value into the output slot and hands the kernel the slot as its input too, so
  // `output = input` is a self-assignment. The kernel still runs; it just costs no reference-count
  // traffic.
  bool forward_in_place;
};

}  // namespace

// Over-aligned so the struct owns its cache lines (see CacheLineAllocator).
struct alignas(64) Session::Impl {
  Plan plan;
  SessionOptions options;
  std::string source;
  // Derived from `plan` once, for Run's hot path.
  HotVector<FeedCheck> feed_checks;
  HotVector<FlatStep> steps;
  HotVector<ValueRef> step_inputs;
  HotVector<ValueRef> output_refs;  // plan.output_refs
  // Per output: move (rather than copy) the computed value out, because no later output refers to
  // the same slot and the run's slots die right after.
  HotVector<uint8_t> move_output;
};

namespace {

FeedCheck MakeFeedCheck(const Type& declared) {
  FeedCheck c;
  c.kind = declared.kind();
  const Type* tensor = nullptr;
  if (declared.is_tensor()) {
    tensor = &declared;
  } else if (declared.is_sequence() && declared.element().is_tensor()) {
    tensor = &declared.element();
  } else {
    c.slow = true;
    return c;
  }
  c.element = tensor->element_type();
  if (const auto& shape = tensor->shape()) {
    c.has_shape = true;
    for (const Dim& d : *shape) c.dims.push_back(d.value ? *d.value : -1);
  }
  return c;
}

inline bool ShapeMatches(std::span<const int64_t> shape, const FeedCheck& c) {
  if (shape.size() != c.dims.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (c.dims[i] >= 0 && c.dims[i] != shape[i]) return false;
  }
  return true;
}

// True when `value` certainly matches; false when CheckValueMatchesType must decide.
// Sequences: Value::MakeSequence guarantees every item is a tensor of the sequence's element
// type, so only item shapes need a look, and only when the element shape is declared.
inline bool FastMatches(const Value& value, const FeedCheck& c) {
  if (c.slow || value.is_null() || value.kind() != c.kind) return false;
  if (c.kind == ValueKind::kTensor) {
    const Tensor& t = value.tensor();
    if (c.element != ElementType::kUndefined && t.element_type() != c.element) return false;
    return !c.has_shape || ShapeMatches(t.shape(), c);
  }
  const Sequence& s = value.sequence();
  if (c.element != ElementType::kUndefined && s.element_type() != c.element) return false;
  if (!c.has_shape) return true;
  for (const Value& item : s.values()) {
    if (!ShapeMatches(item.tensor().shape(), c)) return false;
  }
  return true;
}

// A fixed-capacity array on the stack with a heap fallback for larger counts; elements are
// value-initialized and destroyed in place.
template <typename T, size_t N>
class SmallArray {
 public:
  explicit SmallArray(size_t size) : size_(size) {
    if (size <= N) {
      data_ = std::launder(reinterpret_cast<T*>(inline_));
      std::uninitialized_value_construct_n(data_, size);
    } else {
      heap_ = std::make_unique<T[]>(size);
      data_ = heap_.get();
    }
  }
  SmallArray(const SmallArray&) = delete;
  SmallArray& operator=(const SmallArray&) = delete;
  ~SmallArray() {
    if (!heap_) std::destroy_n(data_, size_);
  }
  T* data() { return data_; }
  T& operator[](size_t i) { return data_[i]; }

 private:
  alignas(T) std::byte inline_[N * sizeof(T)];
  T* data_;
  size_t size_;
  std::unique_ptr<T[]> heap_;
};

// Where a run finds each kind of value. Lives on the caller's stack; the Session is never written
// to, so any number of threads may run one Session at once.
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

Result<std::vector<Value>> RunPlan(const Session::Impl& impl, std::span<const Value> feeds,
                                   std::span<const Value> overrides) {
  const Plan& plan = impl.plan;
  std::vector<Value> outputs;
  outputs.reserve(impl.output_refs.size());
  if (impl.steps.empty()) {
    // Nothing to compute (every node was an erased Identity): outputs are feeds or constants.
    const Sources sources(feeds, overrides, plan.constants, nullptr);
    for (const ValueRef& ref : impl.output_refs) outputs.push_back(*sources.Get(ref));
    return outputs;
  }
  SmallArray<Value, 128> computed(static_cast<size_t>(plan.computed_count));
  SmallArray<const Value*, 16> inputs(plan.max_step_inputs);
  const Sources sources(feeds, overrides, plan.constants, computed.data());
  const ValueRef* step_inputs = impl.step_inputs.data();
  for (size_t s = 0; s < impl.steps.size(); ++s) {
    const FlatStep& step = impl.steps[s];
    if (step.forward_in_place) {
      Value& slot = computed[static_cast<size_t>(step.first_output)];
      slot = std::move(computed[static_cast<size_t>(step_inputs[step.first_input].index)]);
      inputs[0] = &slot;
    } else {
      for (uint32_t i = 0; i < step.input_count; ++i) {
        inputs[i] = sources.Get(step_inputs[step.first_input + i]);
      }
    }
    Status status = step.kernel->Run(std::span<const Value* const>(inputs.data(), step.input_count),
                                     std::span<Value>(computed.data() + step.first_output,
                                                      static_cast<size_t>(step.output_count)));
    if (!status.ok()) [[unlikely]] {
      return std::move(status).WithContext(plan.steps[s].label);
    }
  }
  for (size_t o = 0; o < impl.output_refs.size(); ++o) {
    const ValueRef ref = impl.output_refs[o];
    if (impl.move_output[o]) {
      outputs.push_back(std::move(computed[static_cast<size_t>(ref.index)]));
    } else {
      outputs.push_back(*sources.Get(ref));
    }
  }
  return outputs;
}

Status CheckFeeds(const Plan& plan, std::span<const Value> feeds) {
  if (feeds.size() != plan.feeds.size()) {
    std::vector<std::string> names;
    for (const ValueInfo& v : plan.feeds) names.push_back(v.name);
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("expected {} feeds ({}), got {}", plan.feeds.size(),
                              fmt::join(names, ", "), feeds.size()));
  }
  for (size_t i = 0; i < feeds.size(); ++i) {
    Status s = CheckValueMatchesType(feeds[i], plan.feeds[i].type);
    if (!s.ok()) return std::move(s).WithContext(fmt::format("input '{}'", plan.feeds[i].name));
  }
  return {};
}

// True when every feed certainly matches; otherwise CheckFeeds() decides (and explains).
inline bool FeedsMatchFast(const Session::Impl& impl, std::span<const Value> feeds) {
  if (feeds.size() != impl.feed_checks.size()) return false;
  for (size_t i = 0; i < feeds.size(); ++i) {
    if (!FastMatches(feeds[i], impl.feed_checks[i])) return false;
  }
  return true;
}

void PrepareHotPath(Session::Impl& impl) {
  const Plan& plan = impl.plan;
  for (const ValueInfo& feed : plan.feeds) impl.feed_checks.push_back(MakeFeedCheck(feed.type));

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
    const bool in_place = step.output_is_input && step.inputs.size() == 1 &&
                          step.output_count == 1 &&
                          step.inputs[0].source == ValueRef::Source::kComputed &&
                          last_read[static_cast<size_t>(step.inputs[0].index)] == s;
    impl.steps.push_back(FlatStep{step.kernel.get(), static_cast<uint32_t>(impl.step_inputs.size()),
                                  static_cast<uint32_t>(step.inputs.size()), step.first_output,
                                  step.output_count, in_place});
    impl.step_inputs.insert(impl.step_inputs.end(), step.inputs.begin(), step.inputs.end());
  }

  impl.output_refs.assign(plan.output_refs.begin(), plan.output_refs.end());
  impl.move_output.assign(plan.output_refs.size(), 0);
  for (size_t o = 0; o < plan.output_refs.size(); ++o) {
    const ValueRef ref = plan.output_refs[o];
    if (ref.source != ValueRef::Source::kComputed) continue;
    bool later_use = false;
    for (size_t p = o + 1; p < plan.output_refs.size() && !later_use; ++p) {
      later_use =
          plan.output_refs[p].source == ref.source && plan.output_refs[p].index == ref.index;
    }
    impl.move_output[o] = later_use ? 0 : 1;
  }
}

Result<Session> Finish(Result<GraphDef> graph, const SessionOptions& options,
                       Result<Session> (*make)(std::unique_ptr<Session::Impl>)) {
  if (!graph.ok()) return std::move(graph).take_status();
  std::string source = graph->source;
  auto plan = BuildPlan(std::move(graph).value(), KernelRegistry::Default(), options);
  if (!plan.ok()) {
    Status status = std::move(plan).take_status();
    return source.empty() ? std::move(status) : std::move(status).WithContext(source);
  }
  auto impl = std::make_unique<Session::Impl>();
  impl->plan = std::move(plan).value();
  impl->options = options;
  impl->source = std::move(source);
  PrepareHotPath(*impl);
  return make(std::move(impl));
}

}  // namespace

Session::Session(std::unique_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

// Helper with access to the private constructor.
struct SessionFactory {
  static Result<Session> Make(std::unique_ptr<Session::Impl> impl) {
    return Session(std::unique_ptr<const Session::Impl>(std::move(impl)));
  }
};

Result<Session> Session::Create(const std::string& path, const SessionOptions& options) {
  return Finish(LoadGraphFromFile(path, options.limits, ExternalDataOptions::From(options)), options, &SessionFactory::Make);
}

Result<Session> Session::CreateFromBytes(std::span<const std::byte> bytes,
                                         const std::string& base_dir,
                                         const SessionOptions& options) {
  return Finish(LoadGraphFromBytes(bytes, base_dir, options.limits,
                                   ExternalDataOptions::From(options)), options,
                &SessionFactory::Make);
}

Result<Session> CreateSessionFromProto(const onnx::ModelProto& model, const std::string& base_dir,
                                       const SessionOptions& options) {
  onnx::ModelProto copy = model;
  return CreateSessionFromProto(std::move(copy), base_dir, options);
}

Result<Session> CreateSessionFromProto(onnx::ModelProto&& model, const std::string& base_dir,
                                       const SessionOptions& options) {
  return Finish(LoadGraphFromProto(model, base_dir, options.limits,
                                   ExternalDataOptions::From(options)), options,
                &SessionFactory::Make);
}

std::span<const ValueInfo> Session::inputs() const { return impl_->plan.feeds; }
std::span<const ValueInfo> Session::overridable_inputs() const { return impl_->plan.overrides; }
std::span<const ValueInfo> Session::outputs() const { return impl_->plan.outputs; }
std::string Session::Describe() const { return impl_->plan.description; }

// The hot path: one pass of compares over the feeds, the steps (none when every node is an erased
// Identity), and one allocation for the returned vector. No map lookups, strings, locks or
// Status objects unless something fails.
Result<std::vector<Value>> Session::Run(std::span<const Value> feeds) const {
  const Impl& impl = *impl_;
  if (!FeedsMatchFast(impl, feeds)) [[unlikely]] {
    IDEM_RETURN_IF_ERROR(CheckFeeds(impl.plan, feeds));
  }
  return RunPlan(impl, feeds, impl.plan.override_defaults);
}

Result<std::vector<Value>> Session::RunNamed(std::span<const NamedValue> named) const {
  const Plan& plan = impl_->plan;
  std::vector<Value> feeds(plan.feeds.size());
  std::vector<Value> overrides = plan.override_defaults;
  for (const NamedValue& nv : named) {
    bool found = false;
    for (size_t i = 0; i < plan.feeds.size() && !found; ++i) {
      if (plan.feeds[i].name != nv.name) continue;
      if (!feeds[i].is_null()) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("input '{}' is fed twice", nv.name));
      }
      feeds[i] = nv.value;
      found = true;
    }
    for (size_t i = 0; i < plan.overrides.size() && !found; ++i) {
      if (plan.overrides[i].name != nv.name) continue;
      Status s = CheckValueMatchesType(nv.value, plan.overrides[i].type);
      if (!s.ok()) return std::move(s).WithContext(fmt::format("input '{}'", nv.name));
      overrides[i] = nv.value;
      found = true;
    }
    if (!found) {
      return Status(StatusCode::kNotFound,
                    fmt::format("'{}' is not an input of the model", nv.name));
    }
  }
  for (size_t i = 0; i < feeds.size(); ++i) {
    if (feeds[i].is_null()) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("input '{}' ({}) is not fed", plan.feeds[i].name,
                                plan.feeds[i].type.ToShortString()));
    }
  }
  if (!FeedsMatchFast(*impl_, feeds)) IDEM_RETURN_IF_ERROR(CheckFeeds(plan, feeds));
  return RunPlan(*impl_, feeds, overrides);
}

Result<std::vector<std::vector<int64_t>>> Session::RunInto(
    std::span<const Value> feeds, std::span<const OutputBuffer> destinations) const {
  const Plan& plan = impl_->plan;
  if (destinations.size() != plan.outputs.size()) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("RunInto: {} output buffers for {} outputs", destinations.size(),
                              plan.outputs.size()));
  }
  IDEM_ASSIGN_OR_RETURN(std::vector<Value> outputs, Run(feeds));
  // Check every destination before writing any, so an error leaves caller memory untouched.
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Value& v = outputs[i];
    if (!v.is_tensor() || v.tensor().element_type() == ElementType::kString) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("RunInto: output '{}' is {}; only non-string tensors can be "
                                "written to caller memory (use Run)",
                                plan.outputs[i].name, v.type().ToString()));
    }
    if (v.tensor().data().size() > destinations[i].capacity ||
        (destinations[i].data == nullptr && v.tensor().data().size() > 0)) {
      return Status(
          StatusCode::kOutOfRange,
          fmt::format("RunInto: output '{}' needs {} bytes, buffer holds {}", plan.outputs[i].name,
                      v.tensor().data().size(), destinations[i].capacity));
    }
  }
  std::vector<std::vector<int64_t>> shapes;
  shapes.reserve(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Buffer& data = outputs[i].tensor().data();
    if (!data.empty()) std::memcpy(destinations[i].data, data.data(), data.size());
    const auto shape = outputs[i].tensor().shape();
    shapes.emplace_back(shape.begin(), shape.end());
  }
  return shapes;
}

}  // namespace idem
