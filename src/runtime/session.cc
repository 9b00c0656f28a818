#include "idem/session.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "src/kernels/kernel.h"
#include "src/onnx/model_loader.h"
#include "src/runtime/plan.h"

namespace idem {

struct Session::Impl {
  Plan plan;
  SessionOptions options;
  std::string source;
};

namespace {

// Per-run state: the values computed by this run. Lives on the caller's stack; the Session is
// never written to.
class RunState {
 public:
  RunState(const Plan& plan, std::span<const Value> feeds, std::span<const Value> overrides)
      : plan_(plan), feeds_(feeds), overrides_(overrides) {
    if (plan.computed_count > 0) computed_.resize(static_cast<size_t>(plan.computed_count));
  }

  const Value* Get(ValueRef ref) const {
    switch (ref.source) {
      case ValueRef::Source::kFeed: return &feeds_[ref.index];
      case ValueRef::Source::kOverride: return &overrides_[ref.index];
      case ValueRef::Source::kConstant: return &plan_.constants[ref.index];
      case ValueRef::Source::kComputed: return &computed_[ref.index];
      case ValueRef::Source::kNone: return nullptr;
    }
    return nullptr;
  }

  Status Execute() {
    if (plan_.steps.empty()) return {};
    std::vector<const Value*> inputs(plan_.max_step_inputs);
    for (const Step& step : plan_.steps) {
      for (size_t i = 0; i < step.inputs.size(); ++i) inputs[i] = Get(step.inputs[i]);
      std::span<Value> outputs(computed_.data() + step.first_output,
                               static_cast<size_t>(step.output_count));
      Status status = step.kernel->Run(std::span(inputs.data(), step.inputs.size()), outputs);
      if (!status.ok()) return std::move(status).WithContext(step.label);
    }
    return {};
  }

 private:
  const Plan& plan_;
  std::span<const Value> feeds_;
  std::span<const Value> overrides_;
  std::vector<Value> computed_;
};

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

Result<std::vector<Value>> RunPlan(const Plan& plan, std::span<const Value> feeds,
                                   std::span<const Value> overrides) {
  RunState state(plan, feeds, overrides);
  IDEM_RETURN_IF_ERROR(state.Execute());
  std::vector<Value> outputs;
  outputs.reserve(plan.output_refs.size());
  for (const ValueRef& ref : plan.output_refs) outputs.push_back(*state.Get(ref));
  return outputs;
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
  return Finish(LoadGraphFromFile(path, options.limits), options, &SessionFactory::Make);
}

Result<Session> Session::CreateFromBytes(std::span<const std::byte> bytes,
                                         const std::string& base_dir,
                                         const SessionOptions& options) {
  return Finish(LoadGraphFromBytes(bytes, base_dir, options.limits), options,
                &SessionFactory::Make);
}

Result<Session> Session::CreateFromProto(const onnx::ModelProto& model,
                                         const std::string& base_dir,
                                         const SessionOptions& options) {
  onnx::ModelProto copy = model;  // the loader consumes its argument
  return Finish(LoadGraphFromProto(copy, base_dir, options.limits), options,
                &SessionFactory::Make);
}

std::span<const ValueInfo> Session::inputs() const { return impl_->plan.feeds; }
std::span<const ValueInfo> Session::overridable_inputs() const { return impl_->plan.overrides; }
std::span<const ValueInfo> Session::outputs() const { return impl_->plan.outputs; }
std::string Session::Describe() const { return impl_->plan.description; }

Result<std::vector<Value>> Session::Run(std::span<const Value> feeds) const {
  const Plan& plan = impl_->plan;
  IDEM_RETURN_IF_ERROR(CheckFeeds(plan, feeds));
  return RunPlan(plan, feeds, plan.override_defaults);
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
        return Status(StatusCode::kInvalidArgument, fmt::format("input '{}' is fed twice", nv.name));
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
  IDEM_RETURN_IF_ERROR(CheckFeeds(plan, feeds));
  return RunPlan(plan, feeds, overrides);
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
      return Status(StatusCode::kOutOfRange,
                    fmt::format("RunInto: output '{}' needs {} bytes, buffer holds {}",
                                plan.outputs[i].name, v.tensor().data().size(),
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
