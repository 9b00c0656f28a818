// Control flow: If (1, 11, 13, 16, 19, 21, 23, 24, 25), Loop (same versions), Scan (8, 9, 11, 16,
// 19, 21, 23, 24, 25) and SequenceMap-17.
//
// Subgraphs are planned once with their node (NodeContext::subgraphs) and run through the
// RunContext. Nothing is copied by control flow itself: If hands back its branch's Values, Loop
// moves carried Values from one iteration into the next (so a sequence the loop owns alone is
// extended in place by SequenceInsert), and captured outer values are passed as handles. Scan and
// Loop scan outputs are the one place values are stacked into new tensors (checked against the
// run budget first). Loop and Scan check the run's cancellation flag and deadline on every
// iteration.
#include <fmt/format.h>

#include "src/core/text.h"
#include "src/kernels/sequence_internal.h"
#include "src/kernels/tensor_util.h"

namespace idem {
namespace {

using sequence_internal::MakeKernel;
using tensor_util::AllElementsAt;

// "All tensor, sequence and optional types" of If/Loop at `version` (bfloat16 from 16).
std::vector<Type> ControlFlowTypes(int version) {
  const std::vector<ElementType> elements = AllElementsAt(version, 16);
  std::vector<Type> types = TensorTypes(elements);
  if (version >= 13) types = Concat({types, SequenceTypes(elements)});
  if (version >= 16) types = Concat({types, OptionalTypes(elements)});
  return types;
}

Result<const GraphDef*> GraphAttribute(const NodeDef& node, const std::string& name) {
  const Attribute* a = node.FindAttribute(name);
  if (a == nullptr || a->kind != Attribute::Kind::kGraph || !a->graph) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("attribute {} (a graph) is required", QuoteName(name)));
  }
  return a->graph.get();
}

Result<SubgraphPlanner*> Planner(const NodeContext& ctx) {
  if (ctx.subgraphs == nullptr) {
    return Status(StatusCode::kInternal, "control flow needs the session's subgraph planner");
  }
  return ctx.subgraphs;
}

// The type two branches (or iterations) agree on: the structure is the same; dims that differ
// become unknown, and a rank that differs drops the shape.
Type MergeTypes(const Type& a, const Type& b) {
  if (a.is_tensor()) {
    if (!a.shape() || !b.shape() || a.shape()->size() != b.shape()->size()) {
      return Type::Tensor(a.element_type());
    }
    std::vector<Dim> dims = *a.shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      if (!(dims[i] == (*b.shape())[i])) dims[i] = Dim{};
    }
    return Type::Tensor(a.element_type(), std::move(dims));
  }
  if (a.is_sequence()) return Type::Sequence(MergeTypes(a.element(), b.element()));
  return Type::Optional(MergeTypes(a.element(), b.element()));
}

// A fixed number of Values (null until assigned), on the stack when few (the common case), so
// control flow allocates nothing per run or per iteration for its own bookkeeping.
class InlineValues {
 public:
  explicit InlineValues(size_t size) : size_(size) {
    if (size > kInline) {
      heap_.resize(size);
      data_ = heap_.data();
    }
  }
  InlineValues(const InlineValues&) = delete;
  InlineValues& operator=(const InlineValues&) = delete;
  Value* data() { return data_; }
  size_t size() const { return size_; }
  Value& operator[](size_t i) { return data_[i]; }
  operator std::span<Value>() { return {data_, size_}; }  // NOLINT: span view

 private:
  static constexpr size_t kInline = 8;
  Value inline_[kInline];
  std::vector<Value> heap_;
  Value* data_ = inline_;
  size_t size_;
};

// The body's condition output when it is a single bool (else false; ReadBool then says why):
// read per iteration without building a Result.
bool ReadCondition(const Value& value, bool& cond) {
  const Tensor& t = value.tensor();
  if (t.element_type() != ElementType::kBool || t.element_count() != 1) return false;
  cond = t.data().data()[0] != std::byte{0};
  return true;
}

// Copies the captured outer values of `info` from the node's inputs after the formal ones.
template <typename Feeds>
void AppendCaptures(const SubgraphInfo& info, std::span<const Value* const> inputs, Feeds& feeds) {
  for (uint32_t k = 0; k < info.capture_count; ++k)
    feeds.push_back(*inputs[info.capture_offset + k]);
}

// Charges the bytes a control-flow kernel holds between subgraph runs, and releases them when it
// goes out of scope.
class HeldBytes {
 public:
  explicit HeldBytes(RunContext& ctx) : ctx_(ctx) {}
  ~HeldBytes() { ctx_.Release(bytes_); }
  Status Set(uint64_t bytes) {
    ctx_.Release(bytes_);
    bytes_ = bytes;
    return ctx_.Charge(bytes);
  }
  Status Add(uint64_t bytes) {
    bytes_ += bytes;
    return ctx_.Charge(bytes);
  }
  uint64_t bytes() const { return bytes_; }
  // Set without building a Status: false when the run is now over its budget.
  bool Reset(uint64_t bytes) {
    ctx_.Release(bytes_);
    bytes_ = bytes;
    return ctx_.AddLive(bytes);
  }

 private:
  RunContext& ctx_;
  uint64_t bytes_ = 0;
};

// ---- If ---------------------------------------------------------------------------------------

class IfKernel final : public Kernel {
 public:
  IfKernel(SubgraphInfo then_branch, SubgraphInfo else_branch)
      : then_(std::move(then_branch)), else_(std::move(else_branch)) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    IDEM_ASSIGN_OR_RETURN(bool cond, tensor_util::ReadBool(*inputs[0], "input 'cond'"));
    const SubgraphInfo& branch = cond ? then_ : else_;
    // The captured values, on the stack when few (the common case): no allocation per run.
    constexpr size_t kInline = 4;
    Value inline_feeds[kInline];
    std::vector<Value> heap_feeds;
    std::span<Value> feeds(inline_feeds, std::min<size_t>(branch.capture_count, kInline));
    if (branch.capture_count > kInline) {
      heap_feeds.resize(branch.capture_count);
      feeds = heap_feeds;
    }
    for (uint32_t k = 0; k < branch.capture_count; ++k) {
      feeds[k] = *inputs[branch.capture_offset + k];
    }
    // The branch's outputs are the node's outputs: handed back as they are, never copied.
    Status status = ctx.RunSubgraph(branch.handle, feeds, outputs);
    if (!status.ok()) return std::move(status).WithContext(cond ? "then_branch" : "else_branch");
    return {};
  }

 private:
  SubgraphInfo then_, else_;
};

Result<std::pair<SubgraphInfo, SubgraphInfo>> PlanBranches(const NodeContext& ctx) {
  IDEM_ASSIGN_OR_RETURN(SubgraphPlanner * planner, Planner(ctx));
  IDEM_ASSIGN_OR_RETURN(const GraphDef* then_graph, GraphAttribute(ctx.node, "then_branch"));
  IDEM_ASSIGN_OR_RETURN(const GraphDef* else_graph, GraphAttribute(ctx.node, "else_branch"));
  IDEM_ASSIGN_OR_RETURN(SubgraphInfo then_info, planner->PlanSubgraph(*then_graph, {}));
  IDEM_ASSIGN_OR_RETURN(SubgraphInfo else_info, planner->PlanSubgraph(*else_graph, {}));
  const size_t n = ctx.node.outputs.size();
  if (then_info.output_types.size() != n || else_info.output_types.size() != n) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("the node has {} outputs but then_branch returns {} and "
                              "else_branch {}; all three must agree",
                              n, then_info.output_types.size(), else_info.output_types.size()));
  }
  for (size_t o = 0; o < n; ++o) {
    if (!then_info.output_types[o].SameStructure(else_info.output_types[o])) {
      return Status(
          StatusCode::kInvalidModel,
          fmt::format("output {} is {} in then_branch but {} in else_branch", o,
                      then_info.output_types[o].ToString(), else_info.output_types[o].ToString()));
    }
  }
  return std::make_pair(std::move(then_info), std::move(else_info));
}

KernelSchema IfSchema(int version) {
  KernelSchema s;
  s.op_type = "If";
  s.since_version = version;
  s.inputs = {{"cond", "B"}};
  s.outputs = {{"outputs", "V", FormalParameter::Arity::kVariadic}};
  s.constraints = {{"V", ControlFlowTypes(version)}, {"B", {Type::Tensor(ElementType::kBool)}}};
  s.attributes = {"then_branch", "else_branch"};
  s.heterogeneous_variadic = true;
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    IDEM_ASSIGN_OR_RETURN(auto branches, PlanBranches(ctx));
    std::vector<Type> types;
    for (size_t o = 0; o < branches.first.output_types.size(); ++o) {
      types.push_back(MergeTypes(branches.first.output_types[o], branches.second.output_types[o]));
    }
    return types;
  };
  s.create = [](const NodeContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    IDEM_ASSIGN_OR_RETURN(auto branches, PlanBranches(ctx));
    return MakeKernel<IfKernel>(std::move(branches.first), std::move(branches.second));
  };
  return s;
}

// ---- Loop -------------------------------------------------------------------------------------

struct LoopPlan {
  SubgraphInfo body;
  size_t carried = 0;
  size_t scans = 0;
  // Per carried value: it enters the body as optional(T) but the body returns T. ONNX Runtime
  // accepts this (test_loop16_seq_none relies on it): the next iteration gets the T wrapped in
  // an optional, and the Loop's output is T.
  std::vector<bool> wrap;
  bool any_wrap = false;         // some wrap[j] is set
  std::vector<Type> wrap_types;  // the optional's element type, where wrap is set
  std::vector<ElementType> scan_elements;
  std::vector<std::vector<int64_t>> scan_empty_shapes;  // element shape for zero iterations
  // The body hands back its condition and every carried value unchanged and has no scan outputs
  // (all its nodes are erased Identity): an iteration changes nothing, so the loop only counts
  // (and checks for interrupts) without running the body.
  bool stationary = false;
};

Result<LoopPlan> PlanLoop(const NodeContext& ctx) {
  IDEM_ASSIGN_OR_RETURN(SubgraphPlanner * planner, Planner(ctx));
  IDEM_ASSIGN_OR_RETURN(const GraphDef* body, GraphAttribute(ctx.node, "body"));
  LoopPlan plan;
  plan.carried = ctx.inputs.size() >= 2 ? ctx.inputs.size() - 2 : 0;
  std::vector<Type> body_inputs = {Type::Tensor(ElementType::kInt64, std::vector<Dim>{}),
                                   Type::Tensor(ElementType::kBool, std::vector<Dim>{})};
  // Carried tensors may change shape from one iteration to the next: the body sees them
  // without a shape (as ONNX's Loop inference passes them), unless it declares one.
  for (size_t j = 0; j < plan.carried; ++j) {
    const Type& t = *ctx.inputs[2 + j];
    body_inputs.push_back(t.is_tensor() ? Type::Tensor(t.element_type()) : t);
  }
  if (body->inputs.size() != body_inputs.size()) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("the body has {} inputs; a Loop with {} carried values needs {} "
                              "(iteration number, condition, carried values)",
                              body->inputs.size(), plan.carried, body_inputs.size()));
  }
  IDEM_ASSIGN_OR_RETURN(plan.body, planner->PlanSubgraph(*body, body_inputs));
  const auto& outs = plan.body.output_types;
  if (outs.size() < 1 + plan.carried) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("the body has {} outputs; it must return the condition and the {} "
                              "carried values",
                              outs.size(), plan.carried));
  }
  if (!outs[0].is_tensor() || outs[0].element_type() != ElementType::kBool) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("the body's first output (the condition) is {}; it must be "
                              "tensor(bool)",
                              outs[0].ToString()));
  }
  plan.wrap.assign(plan.carried, false);
  plan.wrap_types.resize(plan.carried);
  for (size_t j = 0; j < plan.carried; ++j) {
    const Type& in = plan.body.input_types[2 + j];
    if (in.is_optional() && in.element().SameStructure(outs[1 + j])) {
      plan.wrap[j] = true;
      plan.any_wrap = true;
      plan.wrap_types[j] = in.element();
      continue;
    }
    if (!outs[1 + j].SameStructure(body_inputs[2 + j])) {
      return Status(StatusCode::kInvalidModel,
                    fmt::format("carried value {} enters the body as {} but leaves it as {}", j,
                                body_inputs[2 + j].ToString(), outs[1 + j].ToString()));
    }
  }
  plan.scans = outs.size() - 1 - plan.carried;
  if (ctx.node.outputs.size() > plan.carried + plan.scans) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("the node has {} outputs; the body gives {} carried values and {} "
                              "scan outputs",
                              ctx.node.outputs.size(), plan.carried, plan.scans));
  }
  for (size_t k = 0; k < plan.scans; ++k) {
    const Type& t = outs[1 + plan.carried + k];
    if (!t.is_tensor()) {
      return Status(StatusCode::kUnsupported,
                    fmt::format("scan output {} is {}; idem stacks tensors only (as ONNX Runtime)",
                                k, t.ToString()));
    }
    plan.scan_elements.push_back(t.element_type());
    // Zero iterations: the spec is silent; ONNX Runtime stacks nothing into [0, dims...] with
    // the body output's shape (declared, completed by inference), an unknown or symbolic dim
    // counting 0, and into [0] when the rank is unknown. So does idem.
    std::vector<int64_t> shape;
    if (t.shape()) {
      for (const Dim& d : *t.shape()) shape.push_back(d.value.value_or(0));
    }
    plan.scan_empty_shapes.push_back(std::move(shape));
  }
  if (plan.body.passthrough && plan.scans == 0 && !plan.any_wrap) {
    const auto& feeds = plan.body.output_feeds;  // 0 iteration, 1 condition, 2.. carried
    plan.stationary = feeds[0] == 1;
    for (size_t j = 0; j < plan.carried; ++j) plan.stationary &= feeds[1 + j] == 2 + j;
  }
  return plan;
}

class LoopKernel final : public Kernel {
 public:
  LoopKernel(LoopPlan plan, Value true_value, Value false_value)
      : plan_(std::move(plan)), true_(std::move(true_value)), false_(std::move(false_value)) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    std::optional<int64_t> trip_count;
    if (inputs.size() > 0 && inputs[0] != nullptr) {
      IDEM_ASSIGN_OR_RETURN(trip_count, ReadScalarIndex(*inputs[0], "M"));
    }
    bool cond = true;
    if (inputs.size() > 1 && inputs[1] != nullptr) {
      IDEM_ASSIGN_OR_RETURN(cond, tensor_util::ReadBool(*inputs[1], "input 'cond'"));
    }
    if (plan_.stationary) return RunStationary(ctx, inputs, outputs, trip_count, cond);
    const size_t n = plan_.carried;
    InlineValues carried(n);
    for (size_t j = 0; j < n; ++j) carried[j] = *inputs[2 + j];
    std::vector<std::vector<Value>> scans(plan_.scans);
    HeldBytes held_carried(ctx), held_scans(ctx);
    // Feeds and outputs are reused across iterations: no allocation per iteration beyond what
    // the body itself makes. Layout of feeds: iteration number, condition, carried values,
    // captures (RunSubgraph moves from them, so each iteration refills every position).
    InlineValues feeds(2 + n + plan_.body.capture_count);
    InlineValues out(plan_.body.output_types.size());
    const bool check_interrupt = ctx.may_interrupt();
    const bool feed_iteration = plan_.body.input_used[0];
    const Value* const* captures = inputs.data() + plan_.body.capture_offset;
    Value cond_value = true_;  // only read while cond is true
    for (int64_t i = 0; (!trip_count || i < *trip_count) && cond; ++i) {
      if (check_interrupt) IDEM_RETURN_IF_ERROR(ctx.CheckInterrupt());
      if (feed_iteration) {
        IDEM_ASSIGN_OR_RETURN(feeds[0], tensor_util::MakeInt64Scalar(i));
      }  // else feeds[0] stays null: the body never reads it
      // The condition fed in is the previous iteration's condition output, moved (no reference
      // count traffic when the body passes it through).
      feeds[1] = std::move(cond_value);
      // Moved, not copied: a value only the loop holds stays unshared inside the body.
      for (size_t j = 0; j < n; ++j) {
        if (plan_.any_wrap && plan_.wrap[j] && !carried[j].is_optional()) {
          IDEM_ASSIGN_OR_RETURN(carried[j],
                                Value::MakeOptional(std::move(carried[j]), plan_.wrap_types[j]));
        }
        feeds[2 + j] = std::move(carried[j]);
      }
      for (uint32_t k = 0; k < plan_.body.capture_count; ++k) feeds[2 + n + k] = *captures[k];
      Status status = ctx.RunSubgraph(plan_.body.handle, feeds, out);
      if (!status.ok()) [[unlikely]] {
        return std::move(status).WithContext(fmt::format("body, iteration {}", i));
      }
      cond_value = std::move(out[0]);
      if (!ReadCondition(cond_value, cond)) [[unlikely]] {
        return tensor_util::ReadBool(cond_value, "the body's condition output").status();
      }
      uint64_t carried_bytes = 0;
      for (size_t j = 0; j < n; ++j) {
        carried[j] = std::move(out[1 + j]);
        carried_bytes += ValueBytes(carried[j]);
      }
      // Unchanged bytes (a passthrough body) leave the live total and the verdict unchanged.
      if (carried_bytes != held_carried.bytes() && !held_carried.Reset(carried_bytes))
          [[unlikely]] {
        return ctx.OverBudgetStatus();
      }
      for (size_t k = 0; k < plan_.scans; ++k) {
        Value& v = out[1 + n + k];
        IDEM_RETURN_IF_ERROR(held_scans.Add(ValueBytes(v)));
        scans[k].push_back(std::move(v));
      }
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (o < n) {
        if (plan_.wrap[o] && carried[o].is_optional()) {
          // Zero iterations: the initial optional is returned as the body's type.
          if (!carried[o].optional().has_value()) {
            return Status(StatusCode::kRuntimeError,
                          fmt::format("carried value {} is an empty optional after zero "
                                      "iterations, but the Loop's output is {}",
                                      o, plan_.wrap_types[o].ToString()));
          }
          outputs[o] = carried[o].optional().value();
          continue;
        }
        outputs[o] = std::move(carried[o]);
        continue;
      }
      const size_t k = o - n;
      // Scan outputs: the per-iteration values stacked along a new first axis. After zero
      // iterations the result has shape [0, ...] with the body output's element shape
      // (declared, completed by inference: the planner's RefineDeclared; unknown dims 0), or [0]
      // when its rank is unknown (ONNX Runtime does the same).
      auto stacked =
          tensor_util::Stack(ctx, plan_.scan_elements[k], scans[k], plan_.scan_empty_shapes[k], 0);
      if (!stacked.ok()) {
        return std::move(stacked).take_status().WithContext(fmt::format("scan output {}", k));
      }
      outputs[o] = std::move(stacked).value();
    }
    return {};
  }

 private:
  // A stationary body (see LoopPlan::stationary): the outputs are the initial carried values
  // whatever the number of iterations, so only the iterations' interrupt checks remain. A loop
  // that would never end (no trip count, the condition true and handed back unchanged) waits
  // for the run's cancel flag or deadline; without either it is refused rather than hanging
  // forever (ONNX Runtime spins).
  Status RunStationary(RunContext& ctx, std::span<const Value* const> inputs,
                       std::span<Value> outputs, std::optional<int64_t> trip_count,
                       bool cond) const {
    if (cond && ctx.may_interrupt()) {
      for (int64_t i = 0; !trip_count || i < *trip_count; ++i) {
        IDEM_RETURN_IF_ERROR(ctx.CheckInterrupt());
      }
    } else if (cond && !trip_count) {
      return Status(StatusCode::kRuntimeError,
                    "the loop never ends: it has no trip count, its condition is true and the "
                    "body hands it back unchanged (give RunOptions a deadline or a cancel flag "
                    "to run it until stopped)");
    }
    for (size_t o = 0; o < outputs.size(); ++o) outputs[o] = *inputs[2 + o];
    return {};
  }

  LoopPlan plan_;
  Value true_, false_;  // the first condition fed to the body: immutable, shared by every run
};

KernelSchema LoopSchema(int version) {
  KernelSchema s;
  s.op_type = "Loop";
  s.since_version = version;
  s.inputs = {{"M", "I", FormalParameter::Arity::kOptional},
              {"cond", "B", FormalParameter::Arity::kOptional},
              {"v_initial", "V", FormalParameter::Arity::kVariadic, 0}};
  s.outputs = {{"v_final_and_scan_outputs", "V", FormalParameter::Arity::kVariadic}};
  s.constraints = {{"V", ControlFlowTypes(version)},
                   {"I", {Type::Tensor(ElementType::kInt64)}},
                   {"B", {Type::Tensor(ElementType::kBool)}}};
  s.attributes = {"body"};
  s.heterogeneous_variadic = true;
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    IDEM_ASSIGN_OR_RETURN(LoopPlan plan, PlanLoop(ctx));
    std::vector<Type> types;
    const auto& outs = plan.body.output_types;
    for (size_t j = 0; j < plan.carried; ++j) {
      types.push_back(plan.wrap[j] ? outs[1 + j] : MergeTypes(*ctx.inputs[2 + j], outs[1 + j]));
    }
    for (size_t k = 0; k < plan.scans; ++k) {
      const Type& t = outs[1 + plan.carried + k];
      std::vector<Dim> dims = {Dim{}};
      if (t.shape()) {
        dims.insert(dims.end(), t.shape()->begin(), t.shape()->end());
        types.push_back(Type::Tensor(t.element_type(), std::move(dims)));
      } else {
        types.push_back(Type::Tensor(t.element_type()));
      }
    }
    return types;
  };
  s.create = [](const NodeContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    IDEM_ASSIGN_OR_RETURN(LoopPlan plan, PlanLoop(ctx));
    IDEM_ASSIGN_OR_RETURN(Value t, tensor_util::MakeBoolScalar(true));
    IDEM_ASSIGN_OR_RETURN(Value f, tensor_util::MakeBoolScalar(false));
    return MakeKernel<LoopKernel>(std::move(plan), std::move(t), std::move(f));
  };
  return s;
}

// ---- Scan -------------------------------------------------------------------------------------

struct ScanPlan {
  SubgraphInfo body;
  int version = 9;
  size_t states = 0;
  size_t scan_inputs = 0;
  size_t scan_outputs = 0;
  std::vector<int64_t> input_axes, input_directions, output_axes, output_directions;
  std::vector<ElementType> output_elements;
  // Per scan output, the body output's shape when its rank is known (unknown dims 0): what a
  // scan over a zero-length axis stacks nothing into.
  std::vector<std::optional<std::vector<int64_t>>> empty_shapes;
};

Result<std::vector<int64_t>> IntsAttribute(const NodeDef& node, const std::string& name,
                                           size_t count, int64_t fallback) {
  const Attribute* a = node.FindAttribute(name);
  if (a == nullptr) return std::vector<int64_t>(count, fallback);
  if (a->kind != Attribute::Kind::kInts || a->ints.size() != count) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("attribute {} must list {} ints", QuoteName(name), count));
  }
  return a->ints;
}

// Scan directions are 0 (forward) or 1 (reverse); anything else is an invalid model, never read
// as one of them.
Result<std::vector<int64_t>> DirectionsAttribute(const NodeDef& node, const std::string& name,
                                                 size_t count) {
  IDEM_ASSIGN_OR_RETURN(std::vector<int64_t> directions, IntsAttribute(node, name, count, 0));
  for (size_t i = 0; i < directions.size(); ++i) {
    if (directions[i] != 0 && directions[i] != 1) {
      return Status(StatusCode::kInvalidModel,
                    fmt::format("attribute '{}'[{}] is {}; a direction is 0 (forward) or 1 "
                                "(reverse)",
                                name, i, directions[i]));
    }
  }
  return directions;
}

// A tensor type with `axis` removed from its shape (unknown shape stays unknown).
Type WithoutAxis(const Type& t, int64_t axis) {
  if (!t.shape() || axis < 0 || axis >= static_cast<int64_t>(t.shape()->size())) {
    return Type::Tensor(t.element_type());
  }
  std::vector<Dim> dims = *t.shape();
  dims.erase(dims.begin() + axis);
  return Type::Tensor(t.element_type(), std::move(dims));
}

Result<ScanPlan> PlanScan(const NodeContext& ctx, int version) {
  IDEM_ASSIGN_OR_RETURN(SubgraphPlanner * planner, Planner(ctx));
  IDEM_ASSIGN_OR_RETURN(const GraphDef* body, GraphAttribute(ctx.node, "body"));
  ScanPlan plan;
  plan.version = version;
  IDEM_ASSIGN_OR_RETURN(int64_t m, GetIntAttribute(ctx.node, "num_scan_inputs", std::nullopt));
  const size_t first = version == 8 ? 1 : 0;  // Scan-8: sequence_lens comes first
  const size_t values = ctx.inputs.size() - first;
  if (m < 1 || static_cast<size_t>(m) > values) {
    return Status(
        StatusCode::kInvalidModel,
        fmt::format("num_scan_inputs is {} but the node has {} state and scan inputs", m, values));
  }
  plan.scan_inputs = static_cast<size_t>(m);
  plan.states = values - plan.scan_inputs;
  if (version == 8) {
    IDEM_ASSIGN_OR_RETURN(plan.input_directions,
                          DirectionsAttribute(ctx.node, "directions", plan.scan_inputs));
    plan.input_axes.assign(plan.scan_inputs, 0);
  } else {
    IDEM_ASSIGN_OR_RETURN(plan.input_axes,
                          IntsAttribute(ctx.node, "scan_input_axes", plan.scan_inputs, 0));
    IDEM_ASSIGN_OR_RETURN(plan.input_directions,
                          DirectionsAttribute(ctx.node, "scan_input_directions", plan.scan_inputs));
  }
  // Body input types: the states, then one slice of each scan input (Scan-8: per batch entry).
  std::vector<Type> body_inputs;
  for (size_t j = 0; j < plan.states; ++j) {
    const Type& t = *ctx.inputs[first + j];
    body_inputs.push_back(version == 8 ? WithoutAxis(t, 0) : t);
  }
  for (size_t j = 0; j < plan.scan_inputs; ++j) {
    Type t = *ctx.inputs[first + plan.states + j];
    if (version == 8) t = WithoutAxis(t, 0);
    int64_t axis = plan.input_axes[j];
    const int64_t rank = t.shape() ? static_cast<int64_t>(t.shape()->size()) : -1;
    if (rank >= 0) {
      if (axis < -rank || axis >= rank) {
        return Status(
            StatusCode::kInvalidModel,
            fmt::format("scan_input_axes[{}] = {} is outside the input's rank {}", j, axis, rank));
      }
      if (axis < 0) axis += rank;
    }
    body_inputs.push_back(WithoutAxis(t, axis));
  }
  if (body->inputs.size() != body_inputs.size()) {
    return Status(
        StatusCode::kInvalidModel,
        fmt::format("the body has {} inputs; this Scan passes {} ({} states, {} scan "
                    "inputs)",
                    body->inputs.size(), body_inputs.size(), plan.states, plan.scan_inputs));
  }
  IDEM_ASSIGN_OR_RETURN(plan.body, planner->PlanSubgraph(*body, body_inputs));
  const auto& outs = plan.body.output_types;
  if (outs.size() < plan.states) {
    return Status(
        StatusCode::kInvalidModel,
        fmt::format("the body has {} outputs, fewer than the {} states", outs.size(), plan.states));
  }
  for (size_t j = 0; j < plan.states; ++j) {
    if (!outs[j].SameStructure(body_inputs[j])) {
      return Status(StatusCode::kInvalidModel,
                    fmt::format("state {} enters the body as {} but leaves it as {}", j,
                                body_inputs[j].ToString(), outs[j].ToString()));
    }
  }
  plan.scan_outputs = outs.size() - plan.states;
  if (ctx.node.outputs.size() > outs.size()) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("the node has {} outputs; the body gives {}", ctx.node.outputs.size(),
                              outs.size()));
  }
  for (size_t k = 0; k < plan.scan_outputs; ++k) {
    const Type& t = outs[plan.states + k];
    plan.output_elements.push_back(t.element_type());
    std::optional<std::vector<int64_t>> empty;
    if (t.is_tensor() && t.shape()) {
      empty.emplace();
      for (const Dim& d : *t.shape()) empty->push_back(d.value.value_or(0));
    }
    plan.empty_shapes.push_back(std::move(empty));
  }
  if (version == 8) {
    plan.output_axes.assign(plan.scan_outputs, 0);
    plan.output_directions.assign(plan.scan_outputs, 0);
  } else {
    IDEM_ASSIGN_OR_RETURN(plan.output_axes,
                          IntsAttribute(ctx.node, "scan_output_axes", plan.scan_outputs, 0));
    IDEM_ASSIGN_OR_RETURN(
        plan.output_directions,
        DirectionsAttribute(ctx.node, "scan_output_directions", plan.scan_outputs));
  }
  return plan;
}

class ScanKernel final : public Kernel {
 public:
  explicit ScanKernel(ScanPlan plan) : plan_(std::move(plan)) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    const size_t first = plan_.version == 8 ? 1 : 0;
    std::vector<Value> states(plan_.states), scan_inputs(plan_.scan_inputs);
    for (size_t j = 0; j < plan_.states; ++j) states[j] = *inputs[first + j];
    for (size_t j = 0; j < plan_.scan_inputs; ++j) {
      scan_inputs[j] = *inputs[first + plan_.states + j];
    }
    std::vector<Value> results;
    if (plan_.version != 8) {
      IDEM_RETURN_IF_ERROR(RunOne(ctx, inputs, std::move(states), scan_inputs, results));
    } else {
      IDEM_RETURN_IF_ERROR(RunBatched(ctx, inputs, states, scan_inputs, results));
    }
    for (size_t o = 0; o < outputs.size(); ++o) outputs[o] = std::move(results[o]);
    return {};
  }

 private:
  // Scan-8: every input has a batch axis 0; each batch entry is scanned on its own and the
  // results are stacked along a new axis 0.
  Status RunBatched(RunContext& ctx, std::span<const Value* const> inputs,
                    const std::vector<Value>& states, const std::vector<Value>& scan_inputs,
                    std::vector<Value>& results) const {
    const Value* all = plan_.states > 0 ? &states[0] : &scan_inputs[0];
    if (all->tensor().rank() < 1) {
      return Status(StatusCode::kInvalidArgument, "Scan-8 inputs need a batch axis");
    }
    const int64_t batch = all->tensor().shape()[0];
    std::vector<std::vector<Value>> per_output(plan_.states + plan_.scan_outputs);
    // The per-entry results are held until stacked: charged, so a huge batch of empty entries
    // ([2^40, 0, 2], no bytes) is stopped by the run budget; and the run options are checked per
    // entry, since an entry with an empty scan axis runs no iteration that would check them.
    HeldBytes held(ctx);
    for (int64_t b = 0; b < batch; ++b) {
      IDEM_RETURN_IF_ERROR(ctx.CheckInterrupt());
      std::vector<Value> st(plan_.states), sc(plan_.scan_inputs);
      for (size_t j = 0; j < plan_.states; ++j) {
        if (states[j].tensor().rank() < 1 || states[j].tensor().shape()[0] != batch) {
          return Status(StatusCode::kInvalidArgument,
                        fmt::format("state {} does not have the batch size {}", j, batch));
        }
        IDEM_ASSIGN_OR_RETURN(st[j], tensor_util::TakeAlongAxis(ctx, states[j].tensor(), 0, b));
      }
      for (size_t j = 0; j < plan_.scan_inputs; ++j) {
        if (scan_inputs[j].tensor().rank() < 1 || scan_inputs[j].tensor().shape()[0] != batch) {
          return Status(StatusCode::kInvalidArgument,
                        fmt::format("scan input {} does not have the batch size {}", j, batch));
        }
        IDEM_ASSIGN_OR_RETURN(sc[j],
                              tensor_util::TakeAlongAxis(ctx, scan_inputs[j].tensor(), 0, b));
      }
      // sequence_lens: entry b scans the first len items of batch entry b (the last len going
      // backwards, counted from item len-1, for a reverse direction); the scan outputs' remaining
      // items are zeros. The spec is silent on all of this: it is what ONNX Runtime does,
      // including refusing lengths outside [1, the scan axis].
      int64_t len = -1;
      if (inputs[0] != nullptr) {
        const Tensor& lens = inputs[0]->tensor();
        if (lens.element_count() != batch) {
          return Status(StatusCode::kInvalidArgument,
                        fmt::format("sequence_lens has {} entries for a batch of {}",
                                    lens.element_count(), batch));
        }
        len = lens.data_as<int64_t>()[static_cast<size_t>(b)];
        const int64_t axis_length = sc[0].tensor().rank() < 1 ? 0 : sc[0].tensor().shape()[0];
        if (len < 1 || len > axis_length) {
          return Status(StatusCode::kInvalidArgument,
                        fmt::format("sequence_lens[{}] is {}; it must be in [1, {}] (the scan "
                                    "axis)",
                                    b, len, axis_length));
        }
      }
      std::vector<Value> r;
      IDEM_RETURN_IF_ERROR(RunOne(ctx, inputs, std::move(st), sc, r, len));
      for (size_t o = 0; o < r.size(); ++o) {
        IDEM_RETURN_IF_ERROR(held.Add(ValueBytes(r[o])));
        per_output[o].push_back(std::move(r[o]));
      }
    }
    for (size_t o = 0; o < per_output.size(); ++o) {
      const ElementType type = o < plan_.states ? states[o].tensor().element_type()
                                                : plan_.output_elements[o - plan_.states];
      IDEM_ASSIGN_OR_RETURN(Value v, tensor_util::Stack(ctx, type, per_output[o], {}, 0));
      results.push_back(std::move(v));
    }
    return {};
  }

  // Scans `scan_inputs` along their axes. `sequence_length` >= 0 (Scan-8's sequence_lens) scans
  // only that many items and pads each scan output with zero items to the full axis length.
  Status RunOne(RunContext& ctx, std::span<const Value* const> inputs, std::vector<Value> states,
                const std::vector<Value>& scan_inputs, std::vector<Value>& results,
                int64_t sequence_length = -1) const {
    std::vector<int64_t> axes(plan_.scan_inputs);
    int64_t length = -1;
    for (size_t j = 0; j < plan_.scan_inputs; ++j) {
      const Tensor& t = scan_inputs[j].tensor();
      const auto rank = static_cast<int64_t>(t.rank());
      int64_t axis = plan_.input_axes[j];
      if (axis < -rank || axis >= rank) {
        return Status(
            StatusCode::kInvalidArgument,
            fmt::format("scan input {} has rank {}; axis {} is outside it", j, rank, axis));
      }
      if (axis < 0) axis += rank;
      axes[j] = axis;
      const int64_t extent = t.shape()[static_cast<size_t>(axis)];
      if (length >= 0 && extent != length) {
        return Status(
            StatusCode::kInvalidArgument,
            fmt::format("scan inputs have different lengths ({} and {})", length, extent));
      }
      length = extent;
    }
    const int64_t full_length = length;
    if (sequence_length >= 0) length = std::min(length, sequence_length);
    std::vector<std::vector<Value>> scans(plan_.scan_outputs);
    HeldBytes held(ctx);
    std::vector<Value> feeds;
    std::vector<Value> out(plan_.body.output_types.size());
    for (int64_t t = 0; t < length; ++t) {
      IDEM_RETURN_IF_ERROR(ctx.CheckInterrupt());
      feeds.clear();
      for (Value& v : states) feeds.push_back(std::move(v));
      for (size_t j = 0; j < plan_.scan_inputs; ++j) {
        const int64_t index = plan_.input_directions[j] == 1 ? length - 1 - t : t;
        IDEM_ASSIGN_OR_RETURN(
            Value slice, tensor_util::TakeAlongAxis(ctx, scan_inputs[j].tensor(), axes[j], index));
        feeds.push_back(std::move(slice));
      }
      AppendCaptures(plan_.body, inputs, feeds);
      Status status = ctx.RunSubgraph(plan_.body.handle, feeds, out);
      if (!status.ok()) {
        return std::move(status).WithContext(fmt::format("body, iteration {}", t));
      }
      for (size_t j = 0; j < plan_.states; ++j) states[j] = std::move(out[j]);
      for (size_t k = 0; k < plan_.scan_outputs; ++k) {
        Value& v = out[plan_.states + k];
        if (!v.is_tensor())
          return Status(StatusCode::kRuntimeError, "scan outputs must be tensors");
        IDEM_RETURN_IF_ERROR(held.Add(ValueBytes(v)));
        scans[k].push_back(std::move(v));
      }
    }
    for (Value& v : states) results.push_back(std::move(v));
    for (size_t k = 0; k < plan_.scan_outputs; ++k) {
      if (length < full_length && !scans[k].empty()) {
        // Scan-8 padding: zero items shaped like the computed ones.
        IDEM_ASSIGN_OR_RETURN(Value zero, tensor_util::ZerosLike(ctx, scans[k][0].tensor()));
        IDEM_RETURN_IF_ERROR(
            held.Add(ValueBytes(zero)));  // the items share one buffer; Stack copies them
        scans[k].resize(static_cast<size_t>(full_length), zero);
      }
      // Prepending (direction 1) is appending then reversing.
      if (plan_.output_directions[k] == 1) std::reverse(scans[k].begin(), scans[k].end());
      int64_t axis = plan_.output_axes[k];
      // A zero-length scan (the spec is silent; ONNX Runtime 1.30 fails it) stacks nothing into
      // the body output's shape (as planned, unknown dims 0) with 0 at the axis; [0] when the
      // rank is unknown.
      const auto& empty = plan_.empty_shapes[k];
      const std::vector<int64_t> no_dims;
      const std::vector<int64_t>& empty_shape = scans[k].empty() && empty ? *empty : no_dims;
      const int64_t rank = scans[k].empty() ? (empty ? static_cast<int64_t>(empty->size()) + 1 : 0)
                                            : static_cast<int64_t>(scans[k][0].tensor().rank()) + 1;
      if (axis < -rank || (rank > 0 && axis >= rank)) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("scan_output_axes[{}] = {} is outside the output's rank {}{}", k,
                                  axis, rank,
                                  scans[k].empty() ? " (zero iterations; the body does not declare "
                                                     "this output's rank)"
                                                   : ""));
      }
      if (axis < 0) axis += rank;
      IDEM_ASSIGN_OR_RETURN(
          Value v, tensor_util::Stack(ctx, plan_.output_elements[k], scans[k], empty_shape, axis));
      results.push_back(std::move(v));
    }
    return {};
  }

  ScanPlan plan_;
};

KernelSchema ScanSchema(int version) {
  KernelSchema s;
  s.op_type = "Scan";
  s.since_version = version;
  if (version == 8) {
    s.inputs = {{"sequence_lens", "I", FormalParameter::Arity::kOptional},
                {"initial_state_and_scan_inputs", "V", FormalParameter::Arity::kVariadic}};
    s.attributes = {"body", "directions", "num_scan_inputs"};
  } else {
    s.inputs = {{"initial_state_and_scan_inputs", "V", FormalParameter::Arity::kVariadic}};
    s.attributes = {"body",
                    "num_scan_inputs",
                    "scan_input_axes",
                    "scan_input_directions",
                    "scan_output_axes",
                    "scan_output_directions"};
  }
  s.outputs = {{"final_state_and_scan_outputs", "V", FormalParameter::Arity::kVariadic}};
  s.constraints = {{"V", TensorTypes(AllElementsAt(version, 16))},
                   {"I", {Type::Tensor(ElementType::kInt64)}}};
  s.heterogeneous_variadic = true;
  s.infer = [version](const NodeContext& ctx) -> Result<std::vector<Type>> {
    IDEM_ASSIGN_OR_RETURN(ScanPlan plan, PlanScan(ctx, version));
    std::vector<Type> types;
    const size_t first = version == 8 ? 1 : 0;
    const auto& outs = plan.body.output_types;
    if (version == 8) {
      for (size_t j = 0; j < plan.states; ++j) {
        types.push_back(Type::Tensor(ctx.inputs[first + j]->element_type()));
      }
      for (size_t k = 0; k < plan.scan_outputs; ++k) {
        types.push_back(Type::Tensor(plan.output_elements[k]));
      }
      return types;
    }
    // Scan-9+: shapes as ONNX's shape inference gives them (what a zero-iteration Loop that
    // stacks them sizes its output by): a state is the body's output; a scan output is the
    // body's output with the sequence length (the first scan input's axis, where known)
    // inserted at its output axis.
    Dim length;
    for (size_t j = 0; j < plan.scan_inputs && !length.value; ++j) {
      const Type& t = *ctx.inputs[first + plan.states + j];
      if (!t.shape()) continue;
      const int64_t rank = static_cast<int64_t>(t.shape()->size());
      const int64_t axis = plan.input_axes[j] < 0 ? plan.input_axes[j] + rank : plan.input_axes[j];
      if (axis >= 0 && axis < rank) length = (*t.shape())[static_cast<size_t>(axis)];
    }
    for (size_t j = 0; j < plan.states; ++j) types.push_back(outs[j]);
    for (size_t k = 0; k < plan.scan_outputs; ++k) {
      const Type& t = outs[plan.states + k];
      if (!t.shape()) {
        types.push_back(Type::Tensor(t.element_type()));
        continue;
      }
      std::vector<Dim> dims = *t.shape();
      const int64_t rank = static_cast<int64_t>(dims.size()) + 1;
      int64_t axis = plan.output_axes[k] < 0 ? plan.output_axes[k] + rank : plan.output_axes[k];
      if (axis < 0 || axis >= rank) {
        types.push_back(Type::Tensor(t.element_type()));
        continue;
      }
      dims.insert(dims.begin() + axis, length);
      types.push_back(Type::Tensor(t.element_type(), std::move(dims)));
    }
    return types;
  };
  s.create = [version](const NodeContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    IDEM_ASSIGN_OR_RETURN(ScanPlan plan, PlanScan(ctx, version));
    return MakeKernel<ScanKernel>(std::move(plan));
  };
  return s;
}

// ---- SequenceMap ------------------------------------------------------------------------------

struct SequenceMapPlan {
  SubgraphInfo body;
  std::vector<bool> is_sequence;             // per node input
  std::vector<ElementType> output_elements;  // per output sequence
};

Result<SequenceMapPlan> PlanSequenceMap(const NodeContext& ctx) {
  IDEM_ASSIGN_OR_RETURN(SubgraphPlanner * planner, Planner(ctx));
  IDEM_ASSIGN_OR_RETURN(const GraphDef* body, GraphAttribute(ctx.node, "body"));
  SequenceMapPlan plan;
  std::vector<Type> body_inputs;
  for (const Type* t : ctx.inputs) {
    plan.is_sequence.push_back(t->is_sequence());
    body_inputs.push_back(t->is_sequence() ? t->element() : *t);
  }
  if (body->inputs.size() != body_inputs.size()) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("the body has {} inputs; the node passes {}", body->inputs.size(),
                              body_inputs.size()));
  }
  IDEM_ASSIGN_OR_RETURN(plan.body, planner->PlanSubgraph(*body, body_inputs));
  if (plan.body.output_types.size() != ctx.node.outputs.size()) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("the body has {} outputs; the node has {}",
                              plan.body.output_types.size(), ctx.node.outputs.size()));
  }
  for (const Type& t : plan.body.output_types) {
    if (!t.is_tensor()) {
      return Status(StatusCode::kInvalidModel,
                    fmt::format("body outputs must be tensors, got {}", t.ToString()));
    }
    plan.output_elements.push_back(t.element_type());
  }
  return plan;
}

class SequenceMapKernel final : public Kernel {
 public:
  explicit SequenceMapKernel(SequenceMapPlan plan) : plan_(std::move(plan)) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    const size_t formal = plan_.is_sequence.size();
    const size_t length = inputs[0]->sequence().size();
    for (size_t i = 1; i < formal; ++i) {
      if (plan_.is_sequence[i] && inputs[i]->sequence().size() != length) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("input {} has {} elements but input_sequence has {}", i,
                                  inputs[i]->sequence().size(), length));
      }
    }
    std::vector<std::vector<Value>> results(outputs.size());
    HeldBytes held(ctx);
    std::vector<Value> feeds;
    std::vector<Value> out(outputs.size());
    for (size_t n = 0; n < length; ++n) {
      IDEM_RETURN_IF_ERROR(ctx.CheckInterrupt());
      feeds.clear();
      for (size_t i = 0; i < formal; ++i) {
        feeds.push_back(plan_.is_sequence[i] ? inputs[i]->sequence().at(n) : *inputs[i]);
      }
      AppendCaptures(plan_.body, inputs, feeds);
      Status status = ctx.RunSubgraph(plan_.body.handle, feeds, out);
      if (!status.ok()) {
        return std::move(status).WithContext(fmt::format("body, element {}", n));
      }
      for (size_t o = 0; o < outputs.size(); ++o) {
        IDEM_RETURN_IF_ERROR(held.Add(ValueBytes(out[o])));
        results[o].push_back(std::move(out[o]));
      }
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      IDEM_ASSIGN_OR_RETURN(outputs[o],
                            Value::MakeSequence(plan_.output_elements[o], std::move(results[o])));
    }
    return {};
  }

 private:
  SequenceMapPlan plan_;
};

KernelSchema SequenceMapSchema() {
  const std::vector<ElementType> base = BaseElementTypes();
  KernelSchema s;
  s.op_type = "SequenceMap";
  s.since_version = 17;
  s.inputs = {{"input_sequence", "S"},
              {"additional_inputs", "V", FormalParameter::Arity::kVariadic, 0}};
  s.outputs = {{"out_sequence", "S", FormalParameter::Arity::kVariadic}};
  s.constraints = {{"S", SequenceTypes(base)},
                   {"V", Concat({TensorTypes(base), SequenceTypes(base)})}};
  s.attributes = {"body"};
  s.heterogeneous_variadic = true;
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    IDEM_ASSIGN_OR_RETURN(SequenceMapPlan plan, PlanSequenceMap(ctx));
    std::vector<Type> types;
    for (const Type& t : plan.body.output_types) types.push_back(Type::Sequence(t));
    return types;
  };
  s.create = [](const NodeContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    IDEM_ASSIGN_OR_RETURN(SequenceMapPlan plan, PlanSequenceMap(ctx));
    return MakeKernel<SequenceMapKernel>(std::move(plan));
  };
  return s;
}

}  // namespace

void RegisterControlFlowKernels(KernelRegistry& registry) {
  for (int version : {1, 11, 13, 16, 19, 21, 23, 24, 25}) {
    registry.Register(IfSchema(version));
    registry.Register(LoopSchema(version));
  }
  for (int version : {8, 9, 11, 16, 19, 21, 23, 24, 25}) registry.Register(ScanSchema(version));
  registry.Register(SequenceMapSchema());
}

}  // namespace idem
