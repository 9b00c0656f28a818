#include "idem/session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <tuple>
#include <unordered_map>

#include "idem/session_proto.h"
#include "src/core/text.h"
#include "src/kernels/fast/thread_pool.h"
#include "src/kernels/kernel.h"
#include "src/onnx/model_loader.h"
#include "src/runtime/executor.h"
#include "src/runtime/plan.h"

namespace idem {
namespace {

// SessionOptions::intra_op_threads above this is refused (a typo, not a machine).
constexpr int kMaxIntraOpThreads = 1024;

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

}  // namespace

// Over-aligned so the struct owns its cache lines (see CacheLineAllocator).
struct alignas(64) Session::Impl {
  explicit Impl(Program program) : executor(std::move(program)), plan(executor.main()) {}
  // The intra-op workers (null with one thread); first, so it outlives the kernels using it.
  std::unique_ptr<fast::ThreadPool> threads;
  Executor executor;
  const Plan& plan;  // executor.main()
  SessionOptions options;
  std::string source;
  ModelMetadata metadata;
  // Derived from `plan` once, for Run's hot path.
  HotVector<FeedCheck> feed_checks;
  // RunNamed: input name -> feed index (>= 0) or -(override index) - 1. Built once, so feeding
  // many inputs by name is linear.
  std::unordered_map<std::string, int64_t> input_index;
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
    if (!s.ok())
      return std::move(s).WithContext(fmt::format("input {}", QuoteName(plan.feeds[i].name)));
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
  impl.input_index.reserve(plan.feeds.size() + plan.overrides.size());
  for (size_t i = 0; i < plan.feeds.size(); ++i) {
    impl.input_index.emplace(plan.feeds[i].name, static_cast<int64_t>(i));
  }
  for (size_t i = 0; i < plan.overrides.size(); ++i) {
    impl.input_index.emplace(plan.overrides[i].name, -static_cast<int64_t>(i) - 1);
  }
}

Result<Session> Finish(Result<GraphDef> graph, const SessionOptions& options,
                       Result<Session> (*make)(std::unique_ptr<Session::Impl>)) {
  if (!graph.ok()) return std::move(graph).take_status();
  ModelMetadata metadata = std::move(graph->metadata);
  std::string source = graph->source;
  if (options.intra_op_threads < 1 || options.intra_op_threads > kMaxIntraOpThreads) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("SessionOptions::intra_op_threads is {}; it must be in [1, {}]",
                              options.intra_op_threads, kMaxIntraOpThreads));
  }
  std::unique_ptr<fast::ThreadPool> threads;
  if (options.intra_op_threads > 1) {
    threads = std::make_unique<fast::ThreadPool>(options.intra_op_threads);
  }
  auto program =
      BuildProgram(std::move(graph).value(), KernelRegistry::Default(), options, threads.get());
  if (!program.ok()) {
    Status status = std::move(program).take_status();
    return source.empty() ? std::move(status) : std::move(status).WithContext(source);
  }
  auto impl = std::make_unique<Session::Impl>(std::move(program).value());
  impl->threads = std::move(threads);
  impl->options = options;
  impl->source = std::move(source);
  impl->metadata = std::move(metadata);
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
  // The OS reads a path up to its first NUL: "a.onnx\0x" would silently open "a.onnx".
  if (path.find('\0') != std::string::npos) {
    return Status(StatusCode::kInvalidArgument,
                  "the model path contains a NUL character (paths cannot contain NUL)");
  }
  return Finish(LoadGraphFromFile(path, options.limits, ExternalDataOptions::From(options)),
                options, &SessionFactory::Make);
}

Result<Session> Session::CreateFromBytes(std::span<const std::byte> bytes,
                                         const std::string& base_dir,
                                         const SessionOptions& options) {
  return Finish(
      LoadGraphFromBytes(bytes, base_dir, options.limits, ExternalDataOptions::From(options)),
      options, &SessionFactory::Make);
}

Result<Session> Session::CreateFromBuffer(const Buffer& bytes, const std::string& base_dir,
                                          const SessionOptions& options) {
  return Finish(LoadGraphFromBuffer(bytes, base_dir, options.limits), options,
                &SessionFactory::Make);
}

Result<Session> CreateSessionFromProto(const onnx::ModelProto& model, const std::string& base_dir,
                                       const SessionOptions& options) {
  // The copy is made in src/onnx (LoadGraphFromProto of a const model): protobuf stays there.
  return Finish(
      LoadGraphFromProto(model, base_dir, options.limits, ExternalDataOptions::From(options)),
      options, &SessionFactory::Make);
}

Result<Session> CreateSessionFromProto(onnx::ModelProto&& model, const std::string& base_dir,
                                       const SessionOptions& options) {
  return Finish(
      LoadGraphFromProto(model, base_dir, options.limits, ExternalDataOptions::From(options)),
      options, &SessionFactory::Make);
}

std::span<const ValueInfo> Session::inputs() const { return impl_->plan.feeds; }
std::span<const ValueInfo> Session::overridable_inputs() const { return impl_->plan.overrides; }
std::span<const ValueInfo> Session::outputs() const { return impl_->plan.outputs; }
std::string Session::Describe() const { return impl_->plan.description; }
const ModelMetadata& Session::metadata() const { return impl_->metadata; }

std::vector<OperatorInfo> SupportedOperators() {
  std::vector<OperatorInfo> out;
  for (const KernelSchema* schema : KernelRegistry::Default().All()) {
    out.push_back({schema->domain, schema->op_type, schema->since_version});
  }
  std::sort(out.begin(), out.end(), [](const OperatorInfo& a, const OperatorInfo& b) {
    return std::tie(a.domain, a.op_type, a.since_version) <
           std::tie(b.domain, b.op_type, b.since_version);
  });
  return out;
}

// The hot path: one pass of compares over the feeds, the steps (none when every node is an erased
// Identity), and one allocation for the returned vector. No map lookups, strings, locks or
// Status objects unless something fails.
Result<std::vector<Value>> Session::Run(std::span<const Value> feeds) const {
  const Impl& impl = *impl_;
  if (!FeedsMatchFast(impl, feeds)) [[unlikely]] {
    IDEM_RETURN_IF_ERROR(CheckFeeds(impl.plan, feeds));
  }
  return impl.executor.Run(feeds, impl.plan.override_defaults, impl.options.limits, nullptr);
}

Result<std::vector<Value>> Session::Run(std::span<const Value> feeds,
                                        const RunOptions& run_options) const {
  const Impl& impl = *impl_;
  if (!FeedsMatchFast(impl, feeds)) [[unlikely]] {
    IDEM_RETURN_IF_ERROR(CheckFeeds(impl.plan, feeds));
  }
  return impl.executor.Run(feeds, impl.plan.override_defaults, impl.options.limits, &run_options);
}

namespace {

Status RunToSlots(const Session::Impl& impl, std::span<const Value> feeds, std::span<Value> outputs,
                  const RunOptions* run_options) {
  if (outputs.size() != impl.plan.output_refs.size()) [[unlikely]] {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("Run: {} output slots for {} outputs", outputs.size(),
                              impl.plan.output_refs.size()));
  }
  if (!FeedsMatchFast(impl, feeds)) [[unlikely]] {
    IDEM_RETURN_IF_ERROR(CheckFeeds(impl.plan, feeds));
  }
  return impl.executor.RunTo(feeds, impl.plan.override_defaults, impl.options.limits, run_options,
                             outputs);
}

}  // namespace

Status Session::Run(std::span<const Value> feeds, std::span<Value> outputs) const {
  return RunToSlots(*impl_, feeds, outputs, nullptr);
}

Status Session::Run(std::span<const Value> feeds, std::span<Value> outputs,
                    const RunOptions& run_options) const {
  return RunToSlots(*impl_, feeds, outputs, &run_options);
}

Result<std::vector<Value>> Session::RunNamed(std::span<const NamedValue> named) const {
  return RunNamed(named, RunOptions{});
}

Result<std::vector<Value>> Session::RunNamed(std::span<const NamedValue> named,
                                             const RunOptions& run_options) const {
  const Plan& plan = impl_->plan;
  std::vector<Value> feeds(plan.feeds.size());
  std::vector<Value> overrides = plan.override_defaults;
  for (const NamedValue& nv : named) {
    auto it = impl_->input_index.find(nv.name);
    if (it == impl_->input_index.end()) {
      return Status(StatusCode::kNotFound,
                    fmt::format("{} is not an input of the model", QuoteName(nv.name)));
    }
    if (it->second >= 0) {
      const auto i = static_cast<size_t>(it->second);
      if (!feeds[i].is_null()) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("input {} is fed twice", QuoteName(nv.name)));
      }
      feeds[i] = nv.value;
    } else {
      const auto i = static_cast<size_t>(-(it->second + 1));
      Status s = CheckValueMatchesType(nv.value, plan.overrides[i].type);
      if (!s.ok()) return std::move(s).WithContext(fmt::format("input {}", QuoteName(nv.name)));
      overrides[i] = nv.value;
    }
  }
  for (size_t i = 0; i < feeds.size(); ++i) {
    if (feeds[i].is_null()) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("input {} ({}) is not fed", QuoteName(plan.feeds[i].name),
                                plan.feeds[i].type.ToShortString()));
    }
  }
  if (!FeedsMatchFast(*impl_, feeds)) IDEM_RETURN_IF_ERROR(CheckFeeds(plan, feeds));
  return impl_->executor.Run(feeds, overrides, impl_->options.limits, &run_options);
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
                    fmt::format("RunInto: output {} is {}; only non-string tensors can be "
                                "written to caller memory (use Run)",
                                QuoteName(plan.outputs[i].name), v.type().ToString()));
    }
    if (v.tensor().data().size() > destinations[i].capacity ||
        (destinations[i].data == nullptr && v.tensor().data().size() > 0)) {
      return Status(StatusCode::kOutOfRange,
                    fmt::format("RunInto: output {} needs {} bytes, buffer holds {}",
                                QuoteName(plan.outputs[i].name), v.tensor().data().size(),
                                destinations[i].capacity));
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
