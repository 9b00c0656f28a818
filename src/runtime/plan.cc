#include "src/runtime/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "absl/container/inlined_vector.h"
#include "src/core/text.h"
#include "src/runtime/fusion.h"
#include "src/runtime/name_table.h"

namespace idem {
namespace {

// What folding a node at planning may hold: bigger results stay run-time values.
constexpr uint64_t kMaxFoldedBytes = uint64_t{16} << 20;
// What all the folds of one session may compute together (a file of many small folding nodes,
// e.g. ConstantOfShape on constant shapes, would otherwise make Create allocate without bound);
// past it, nodes run at run time under the run budget.
constexpr uint64_t kMaxFoldedTotalBytes = uint64_t{64} << 20;

// The run context of a kernel folded at planning: no subgraphs, no run options.
class FoldContext final : public RunContext {
 public:
  explicit FoldContext(const Limits& limits) : RunContext(limits_, nullptr), limits_(limits) {}
  Status RunSubgraph(int32_t, std::span<Value>, std::span<Value>) override {
    return Status(StatusCode::kInternal, "a folded kernel has no subgraphs");
  }

 private:
  Limits limits_;
};

struct NamedSlot {
  ValueRef ref;
  Type type;
  int producer = -1;     // node index, -1 for graph inputs and initializers
  bool pending = false;  // a node output whose producer is not planned yet (ref/type unset)
};

// Whether a declared type is complete enough to check feeds against.
bool HasDefinedElements(const Type& type) {
  if (type.is_tensor()) return type.element_type() != ElementType::kUndefined;
  return HasDefinedElements(type.element());
}

// A tensor type completed by a compatible one: a missing shape, or a dim unknown or symbolic,
// takes what `inferred` knows (ONNX shape inference merges declared and inferred types the same
// way). The spec is silent on a zero-iteration Loop's scan outputs; ONNX Runtime sizes them
// [0, ...] from this merged shape (tests/data/ort-differential), so idem does too.
Type RefineDeclared(const Type& declared, const Type& inferred) {
  if (!declared.is_tensor() || !inferred.is_tensor() || !inferred.shape()) return declared;
  if (!declared.shape()) return Type::Tensor(declared.element_type(), inferred.shape());
  std::vector<Dim> dims = *declared.shape();
  const std::vector<Dim>& known = *inferred.shape();
  if (dims.size() != known.size()) return declared;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!dims[i].value && known[i].value) dims[i] = known[i];
  }
  return Type::Tensor(declared.element_type(), std::move(dims));
}

std::string KindsAccepted(const TypeConstraint& c) {
  bool tensor = false, seq = false, opt = false;
  for (const Type& t : c.allowed) {
    tensor |= t.is_tensor();
    seq |= t.is_sequence();
    opt |= t.is_optional();
  }
  std::vector<std::string> kinds;
  if (tensor) kinds.emplace_back("tensors");
  if (seq) kinds.emplace_back("sequences");
  if (opt) kinds.emplace_back("optionals");
  if (kinds.size() == 1) return kinds[0] + " only";
  if (kinds.size() == 2) return kinds[0] + " and " + kinds[1] + " only";
  return "tensors, sequences and optionals";
}

std::string KindPlural(const Type& t) {
  if (t.is_sequence()) return "sequences";
  if (t.is_optional()) return "optionals";
  return "tensors";
}

// Explains why `actual` fails `constraint` at input/output `position` of `schema`, with a hint
// at the opset that would accept it.
std::string DescribeRejection(const KernelRegistry& registry, const KernelSchema& schema,
                              const TypeConstraint& constraint, size_t position, bool is_input,
                              const Type& actual) {
  bool kind_allowed = false;
  for (const Type& t : constraint.allowed) kind_allowed |= t.kind() == actual.kind();
  std::string message =
      kind_allowed ? fmt::format("{} does not accept {}", schema.Name(), actual.ToString())
                   : fmt::format("{} accepts {}", schema.Name(), KindsAccepted(constraint));
  // Find the versions of this operator that would accept the type at the same position.
  std::vector<int> accepting;
  for (const KernelSchema* other : registry.Versions(schema.domain, schema.op_type)) {
    const auto& formals = is_input ? other->inputs : other->outputs;
    if (formals.empty()) continue;
    const FormalParameter& f = formals[std::min(position, formals.size() - 1)];
    const TypeConstraint* c = other->FindConstraint(f.type_param);
    if (c != nullptr && c->Allows(actual)) accepting.push_back(other->since_version);
  }
  const std::string what =
      kind_allowed || actual.is_tensor() ? actual.ToString() : KindPlural(actual);
  auto later = std::find_if(accepting.begin(), accepting.end(),
                            [&](int v) { return v > schema.since_version; });
  if (later != accepting.end()) {
    message +=
        fmt::format(" ({} {} opset >= {})", what, what.back() == 's' ? "need" : "needs", *later);
  } else if (!accepting.empty()) {
    message += fmt::format(" ({} was accepted up to an older version)", what);
  } else {
    message += fmt::format(" (no version of {} accepts {})", schema.op_type, actual.ToString());
  }
  return message;
}

// Finds a cycle through `start`, in data-flow order: "A -> B -> A" (A produces an input of B).
// Breadth-first and iterative, so a hostile graph of a million nodes cannot overflow the stack.
std::string FindCycle(const GraphDef& graph, const NameTable<NamedSlot>& slots, int start) {
  // Edges go from a node to the producers of its inputs; parent[p] is the node that reached p.
  std::unordered_map<int, int> parent;
  std::vector<int> queue = {start};
  for (size_t head = 0; head < queue.size(); ++head) {
    const int node = queue[head];
    for (const std::string& in : graph.nodes[node].inputs) {
      const NamedSlot* found = slots.Find(in);
      if (found == nullptr || found->producer < 0) continue;
      const int producer = found->producer;
      if (producer == start) {
        // start -> node -> parent[node] -> ... -> start; long cycles are elided in the middle.
        std::vector<int> cycle = {start};
        for (int n = node; n != start; n = parent.at(n)) cycle.push_back(n);
        cycle.push_back(start);
        constexpr size_t kShown = 8;
        std::string out;
        for (size_t k = 0; k < cycle.size(); ++k) {
          if (cycle.size() > kShown && k == kShown / 2) {
            out += fmt::format(" -> ... ({} more nodes)", cycle.size() - kShown);
            k = cycle.size() - kShown / 2 - 1;
            continue;
          }
          if (k > 0) out += " -> ";
          out += graph.nodes[cycle[k]].Label(cycle[k]);
        }
        return out;
      }
      if (parent.emplace(producer, node).second) queue.push_back(producer);
    }
  }
  return {};
}

// A type for a mismatch message: ONNX notation when the structures differ, shapes otherwise.
std::string DescribeMismatch(const Type& type, const Type& other) {
  return type.SameStructure(other) ? type.ToShortString() : type.ToString();
}

}  // namespace

Status CheckValueMatchesType(const Value& value, const Type& declared) {
  if (value.is_null()) return Status(StatusCode::kInvalidArgument, "no value");
  if (value.kind() != declared.kind()) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("expected {}, got {}", declared.ToString(), value.type().ToString()));
  }
  switch (value.kind()) {
    case ValueKind::kTensor: {
      const Tensor& t = value.tensor();
      if (declared.element_type() != ElementType::kUndefined &&
          t.element_type() != declared.element_type()) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("expected {}, got tensor({})", declared.ToString(),
                                  ElementTypeName(t.element_type())));
      }
      if (const auto& shape = declared.shape()) {
        bool ok = shape->size() == t.rank();
        for (size_t i = 0; ok && i < shape->size(); ++i) {
          ok = !(*shape)[i].value || *(*shape)[i].value == t.shape()[i];
        }
        if (!ok) {
          return Status(StatusCode::kInvalidArgument,
                        fmt::format("expected shape {}, got [{}]", declared.ToShortString(),
                                    fmt::join(t.shape(), ",")));
        }
      }
      return {};
    }
    case ValueKind::kSequence: {
      const ElementType want = declared.element().element_type();
      if (!declared.element().is_tensor() ||
          (want != ElementType::kUndefined && value.sequence().element_type() != want)) {
        return Status(
            StatusCode::kInvalidArgument,
            fmt::format("expected {}, got {}", declared.ToString(), value.type().ToString()));
      }
      for (size_t i = 0; i < value.sequence().size(); ++i) {
        Status s = CheckValueMatchesType(value.sequence().at(i), declared.element());
        if (!s.ok()) return std::move(s).WithContext(fmt::format("sequence item {}", i));
      }
      return {};
    }
    case ValueKind::kOptional: {
      const Optional& o = value.optional();
      if (o.has_value()) return CheckValueMatchesType(o.value(), declared.element());
      if (!o.element_type().SameStructure(declared.element()) &&
          !(o.element_type().is_tensor() &&
            o.element_type().element_type() == ElementType::kUndefined)) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("expected {}, got an empty optional({})", declared.ToString(),
                                  o.element_type().ToString()));
      }
      return {};
    }
  }
  return {};
}

// A type parameter bound by one of a node's inputs ("T" is float, from input 'x'). A node binds
// a handful, kept inline and searched in order.
struct TypeBinding {
  std::string_view param;  // the schema's type parameter
  Type type;
  std::string_view input;  // the node's input name
};
using TypeBindings = absl::InlinedVector<TypeBinding, 4>;

const TypeBinding* FindBinding(const TypeBindings& bound, std::string_view param) {
  for (const TypeBinding& b : bound) {
    if (b.param == param) return &b;
  }
  return nullptr;
}

// "node 'id0' (Identity-16)" or "node #3 (Identity-16)": a node's label in the messages and in
// Step::label, formatted the first time one needs it (a million erased Identity nodes need none,
// and formatting one is a tenth of planning it).
class PlannerNodeLabel {
 public:
  PlannerNodeLabel(const NodeDef& node, size_t index, const KernelSchema& schema)
      : node_(node), index_(index), schema_(schema) {}
  const std::string& str() const {
    if (text_.empty()) {
      text_ = node_.name.empty()
                  ? fmt::format("node #{} ({})", index_, schema_.Name())
                  : fmt::format("node {} ({})", QuoteName(node_.name), schema_.Name());
    }
    return text_;
  }

 private:
  const NodeDef& node_;
  size_t index_;
  const KernelSchema& schema_;
  mutable std::string text_;
};

}  // namespace idem

template <>
struct fmt::formatter<idem::PlannerNodeLabel> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(const idem::PlannerNodeLabel& label, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(label.str(), ctx);
  }
};

namespace idem {
namespace {

// Per-node lists the planner builds for every node (input types, constant inputs): inline for
// the usual few inputs, so planning a million small nodes allocates nothing for them.
using TypePtrs = absl::InlinedVector<const Type*, 4>;
using ValuePtrs = absl::InlinedVector<const Value*, 4>;

// Plans one graph (the main graph or a subgraph) as a sequence of small passes. A subgraph's
// planner has a parent: names it cannot find are resolved in the enclosing graphs and captured.
class GraphPlanner {
 public:
  GraphPlanner(const GraphDef& graph, const KernelRegistry& registry, const SessionOptions& options,
               Program& program, GraphPlanner* parent, int depth)
      : graph_(graph),
        registry_(registry),
        options_(options),
        program_(program),
        parent_(parent),
        depth_(depth) {}

  // Runs every pass; `formal_types` (subgraphs only) gives the types of the formal inputs.
  Status Build(Plan& plan, std::span<const Type> formal_types) {
    plan_ = &plan;
    plan.is_subgraph = parent_ != nullptr;
    // Kernels are resolved first, in the pass that counts the names and looks for a producer to
    // fuse into, so the node list (hundreds of bytes a node) is walked once for all three; an
    // unsupported operator is still reported after the naming errors, as before.
    size_t names = graph_.inputs.size() + graph_.initializers.size();
    bool fusible = false;
    std::vector<std::string> unsupported = ResolveKernels(names, fusible);
    // One entry per named value, allocated once (growing by rehashing would hold the old and the
    // new bucket arrays at once on a million-node graph).
    slots_.Reserve(names);
    IDEM_RETURN_IF_ERROR(BindInputs(formal_types));
    const size_t first_output_entry = slots_.size();
    IDEM_RETURN_IF_ERROR(IndexProducers());
    if (!unsupported.empty()) {
      std::sort(unsupported.begin(), unsupported.end());
      unsupported.erase(std::unique(unsupported.begin(), unsupported.end()), unsupported.end());
      return Status(StatusCode::kUnsupported,
                    fmt::format("unsupported operators: {}", fmt::join(unsupported, ", ")));
    }
    // Fusion's tables (every value's readers, per-node marks) only for graphs with a producer
    // to fuse into: a million-node graph without one plans within its memory bound.
    if (fusible && !options_.reference_kernels) {
      absorbed_by_.assign(graph_.nodes.size(), -1);
      absorbed_input_.assign(graph_.nodes.size(), 0);
      uses_ = std::make_unique<ValueUses>(graph_);
    }
    output_entry_ = first_output_entry;
    previous_output_entry_ = first_output_entry;
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      planning_ = n;
      cursor_output_ = 0;
      cursor_entry_ = output_entry_;
      IDEM_RETURN_IF_ERROR(PlanNode(n));
      previous_output_entry_ = output_entry_;
      for (const std::string& out : graph_.nodes[n].outputs) output_entry_ += out.empty() ? 0 : 1;
    }
    IDEM_RETURN_IF_ERROR(BindOutputs());
    ComputeLiveness();
    Describe();
    return {};
  }

  // The slot of `name` seen from this graph: its own values first, then (subgraphs) the
  // enclosing graphs', captured into this graph. nullptr when undefined everywhere.
  const NamedSlot* Resolve(const std::string& name) {
    if (const NamedSlot* own = slots_.Find(name)) return own->pending ? nullptr : own;
    if (parent_ == nullptr) return nullptr;
    const NamedSlot* outer = parent_->Resolve(name);  // depth <= max_graph_depth
    if (outer == nullptr) return nullptr;
    if (outer->ref.source == ValueRef::Source::kConstant) {
      // An enclosing graph's constant is a constant here too (the handle is shared, not the
      // bytes copied), so nodes in the subgraph see it as a fact and can be folded.
      const auto index = static_cast<int32_t>(plan_->constants.size());
      plan_->constants.push_back(parent_->plan_->constants[static_cast<size_t>(outer->ref.index)]);
      return slots_.Emplace(name, NamedSlot{{ValueRef::Source::kConstant, index}, outer->type, -1})
          .first;
    }
    const int32_t slot = plan_->computed_count++;
    plan_->captures.push_back(name);
    plan_->capture_slots.push_back(slot);
    return slots_.Emplace(name, NamedSlot{{ValueRef::Source::kComputed, slot}, outer->type, -1})
        .first;
  }

  // Whether `name` is defined anywhere in this graph (already or by a later node).
  bool Defines(const std::string& name) const { return slots_.Contains(name); }

 private:
  class NodeSubgraphs;

  Status Invalid(std::string message) const {
    return Status(StatusCode::kInvalidModel, std::move(message));
  }

  // IR spec: a subgraph may not reuse a name of an enclosing graph.
  Status CheckNotShadowing(const std::string& name, std::string_view what) const {
    for (const GraphPlanner* p = parent_; p != nullptr; p = p->parent_) {
      if (p->Defines(name)) {
        return Invalid(
            fmt::format("{} {} shadows a value of an enclosing graph (names must be "
                        "unique across a graph and its subgraphs)",
                        what, QuoteName(name)));
      }
    }
    return {};
  }

  // Pass 1: graph inputs, initializers.
  Status BindInputs(std::span<const Type> formal_types) {
    Plan& plan = *plan_;
    std::unordered_map<std::string, Value> initializers;
    for (const NamedValue& init : graph_.initializers) {
      if (!initializers.emplace(init.name, init.value).second) {
        return Invalid(fmt::format("initializer {} is defined twice", QuoteName(init.name)));
      }
    }
    std::set<std::string> input_names;
    for (size_t k = 0; k < graph_.inputs.size(); ++k) {
      const ValueInfo& input = graph_.inputs[k];
      if (input.name.empty()) return Invalid("a graph input has an empty name");
      if (!input_names.insert(input.name).second) {
        return Invalid(fmt::format("graph input {} is listed twice", QuoteName(input.name)));
      }
      IDEM_RETURN_IF_ERROR(CheckNotShadowing(input.name, "graph input"));
      if (plan.is_subgraph) {
        // Formal inputs: the owner's types where the subgraph leaves them untyped.
        const bool typed = k >= graph_.input_typed.size() || graph_.input_typed[k];
        Type type = typed ? input.type : formal_types[k];
        // Shapes may change from one iteration to the next (as in ONNX Runtime), so only the
        // structure is checked.
        if (typed && !input.type.SameStructure(formal_types[k]) &&
            !(input.type.is_tensor() && input.type.element_type() == ElementType::kUndefined)) {
          return Invalid(fmt::format("input {} is declared {} but receives {}",
                                     QuoteName(input.name), input.type.ToString(),
                                     formal_types[k].ToString()));
        }
        if (typed && !HasDefinedElements(input.type)) type = formal_types[k];
        // What the owner knows completes the declaration (ONNX's subgraph inference merges
        // them the same way; a Loop passes its carried tensors without shapes, as ONNX does).
        if (typed && type.CompatibleWith(formal_types[k])) {
          type = RefineDeclared(type, formal_types[k]);
        }
        initializers.erase(input.name);
        const int32_t slot = plan.computed_count++;
        plan.feeds.push_back({input.name, type});
        plan.feed_slots.push_back(slot);
        slots_[input.name] = {{ValueRef::Source::kComputed, slot}, type, -1};
        continue;
      }
      auto init = initializers.find(input.name);
      if (init != initializers.end()) {
        if (!init->second.type().CompatibleWith(input.type)) {
          return Invalid(fmt::format("graph input {} is declared {} but its initializer is {}",
                                     QuoteName(input.name), input.type.ToShortString(),
                                     init->second.type().ToShortString()));
        }
        const auto index = static_cast<int32_t>(plan.overrides.size());
        plan.overrides.push_back(input);
        plan.override_defaults.push_back(init->second);
        slots_[input.name] = {{ValueRef::Source::kOverride, index}, init->second.type(), -1};
        initializers.erase(init);
        continue;
      }
      if (!HasDefinedElements(input.type)) {
        return Invalid(fmt::format("graph input {} has type {} with an undefined element type",
                                   QuoteName(input.name), input.type.ToString()));
      }
      const auto index = static_cast<int32_t>(plan.feeds.size());
      plan.feeds.push_back(input);
      slots_[input.name] = {{ValueRef::Source::kFeed, index}, input.type, -1};
    }
    // Initializers that are not graph inputs are constants (in graph order for determinism).
    for (const NamedValue& init : graph_.initializers) {
      if (initializers.count(init.name) == 0) continue;
      IDEM_RETURN_IF_ERROR(CheckNotShadowing(init.name, "initializer"));
      const auto index = static_cast<int32_t>(plan.constants.size());
      plan.constants.push_back(init.value);
      slots_[init.name] = {{ValueRef::Source::kConstant, index}, init.value.type(), -1};
    }
    for (const ValueInfo& info : graph_.value_infos) declared_.emplace(info.name, info.type);
    for (size_t k = 0; k < graph_.outputs.size(); ++k) {
      const bool typed = k >= graph_.output_typed.size() || graph_.output_typed[k];
      if (typed) declared_.emplace(graph_.outputs[k].name, graph_.outputs[k].type);
    }
    return {};
  }

  // Pass 2: the producer of every name, to report two producers, cycles and out-of-order uses.
  Status IndexProducers() {
    // Each insertion probes the index at a random place: the slot of a node's first output
    // kPrefetchAhead nodes on is loaded while this one is inserted. The hash computed for the
    // prefetch is kept (a ring of kPrefetchAhead) for that output's insertion.
    constexpr size_t kPrefetchAhead = 8;
    std::array<size_t, kPrefetchAhead> first_output_hash{};
    const auto hash_first_output = [&](size_t m) {
      const NodeDef& node = graph_.nodes[m];
      if (node.outputs.empty()) return;
      first_output_hash[m % kPrefetchAhead] = slots_.HashOf(node.outputs[0]);
      slots_.Prefetch(first_output_hash[m % kPrefetchAhead]);
    };
    for (size_t m = 0; m < std::min(kPrefetchAhead, graph_.nodes.size()); ++m) {
      hash_first_output(m);
    }
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      const NodeDef& node = graph_.nodes[n];
      const size_t own_first_hash = first_output_hash[n % kPrefetchAhead];
      if (n + kPrefetchAhead < graph_.nodes.size()) hash_first_output(n + kPrefetchAhead);
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        const std::string& out = node.outputs[o];
        if (out.empty()) continue;
        const size_t hash = o == 0 ? own_first_hash : slots_.HashOf(out);
        auto [it, inserted] =
            slots_.Emplace(out, hash, NamedSlot{{}, Type{}, static_cast<int>(n), /*pending=*/true});
        if (!inserted && !it->pending) {
          return Invalid(
              fmt::format("{}: output {} is already a graph input or initializer; "
                          "each value has one producer",
                          node.Label(n), QuoteName(out)));
        }
        if (!inserted) {
          const int first = it->producer;
          return Invalid(
              fmt::format("{} is produced by both {} and {}; each value has one "
                          "producer",
                          QuoteName(out), graph_.nodes[first].Label(first), node.Label(n)));
        }
        // The label is built only where a shadowing is possible (a million-node main graph
        // would otherwise format a million labels for nothing).
        if (parent_ != nullptr) {
          IDEM_RETURN_IF_ERROR(CheckNotShadowing(out, node.Label(n) + ": output"));
        }
      }
    }
    return {};
  }

  // Every node's kernel, so all unsupported operators are reported at once (subgraphs report
  // theirs when planned); returns their descriptions. Adds every node's named outputs to
  // `names`, and sets `fusible` when a node is a Conv, Gemm or MatMul (a producer to fuse into).
  std::vector<std::string> ResolveKernels(size_t& names, bool& fusible) {
    schemas_.assign(graph_.nodes.size(), nullptr);
    std::vector<std::string> unsupported;
    // Runs of one operator are common (a chain of Identity, Conv after Conv): the previous
    // node's schema is reused without a registry lookup.
    const NodeDef* previous = nullptr;
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      const NodeDef& node = graph_.nodes[n];
      names += node.outputs.size();
      if (previous != nullptr && node.op_type == previous->op_type &&
          node.domain == previous->domain) {
        schemas_[n] = schemas_[n - 1];
        continue;
      }
      previous = nullptr;
      fusible = fusible ||
                (node.domain.empty() &&
                 (node.op_type == "Conv" || node.op_type == "Gemm" || node.op_type == "MatMul"));
      auto opset = Opsets().find(node.domain);
      if (opset == Opsets().end()) {
        unsupported.push_back(fmt::format("{} (domain {} is not in opset_import)", node.Label(n),
                                          QuoteName(node.domain)));
        continue;
      }
      schemas_[n] = registry_.Resolve(node.domain, node.op_type, opset->second);
      if (schemas_[n] != nullptr) previous = &node;
      if (schemas_[n] == nullptr) {
        auto versions = registry_.Versions(node.domain, node.op_type);
        unsupported.push_back(
            versions.empty() ? fmt::format("{}-{}", node.op_type, opset->second)
                             : fmt::format("{}-{} (idem implements it from opset {})", node.op_type,
                                           opset->second, versions.front()->since_version));
      }
    }
    return unsupported;
  }

  Status CheckArity(const NodeDef& node, const KernelSchema& schema,
                    const PlannerNodeLabel& label) const {
    size_t min_inputs = 0, max_inputs = 0;
    bool variadic = false;
    for (const FormalParameter& f : schema.inputs) {
      if (f.arity == FormalParameter::Arity::kSingle) min_inputs = max_inputs + 1;
      if (f.arity == FormalParameter::Arity::kVariadic) {
        variadic = true;
        if (f.variadic_min > 0) min_inputs = max_inputs + static_cast<size_t>(f.variadic_min);
      }
      ++max_inputs;
    }
    // Trailing omitted ("") inputs do not count.
    size_t given = node.inputs.size();
    while (given > 0 && node.inputs[given - 1].empty()) --given;
    if (given < min_inputs || (!variadic && node.inputs.size() > max_inputs)) {
      return Invalid(fmt::format(
          "{}: has {} inputs; {} takes {}", label, node.inputs.size(), schema.Name(),
          variadic                   ? fmt::format("at least {}", min_inputs)
          : min_inputs == max_inputs ? std::to_string(min_inputs)
                                     : fmt::format("{} to {}", min_inputs, max_inputs)));
    }
    bool variadic_out =
        !schema.outputs.empty() && schema.outputs.back().arity == FormalParameter::Arity::kVariadic;
    if (node.outputs.empty() || (!variadic_out && node.outputs.size() > schema.outputs.size())) {
      return Invalid(fmt::format("{}: has {} outputs; {} produces {}", label, node.outputs.size(),
                                 schema.Name(), schema.outputs.size()));
    }
    if (node.outputs[0].empty() && schema.outputs[0].arity != FormalParameter::Arity::kOptional) {
      return Invalid(fmt::format("{}: output 0 has an empty name ({}'s first output is required)",
                                 label, schema.Name()));
    }
    for (const Attribute& a : node.attributes) {
      if (std::find(schema.attributes.begin(), schema.attributes.end(), a.name) ==
          schema.attributes.end()) {
        return Invalid(fmt::format(
            "{}: unknown attribute {} ({} defines {})", label, QuoteName(a.name), schema.Name(),
            schema.attributes.empty() ? std::string("none")
                                      : fmt::format("{}", fmt::join(schema.attributes, ", "))));
      }
    }
    return {};
  }

  // Inputs defined before use (here or in an enclosing graph), and their types.
  Status BindNodeInputs(size_t n, const KernelSchema& schema, const PlannerNodeLabel& label,
                        Step& step, TypePtrs& input_types) {
    const NodeDef& node = graph_.nodes[n];
    input_types.assign(node.inputs.size(), nullptr);
    step.inputs.assign(node.inputs.size(), ValueRef{});
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& name = node.inputs[i];
      const FormalParameter& formal = schema.inputs[std::min(i, schema.inputs.size() - 1)];
      if (name.empty()) {
        if (formal.arity != FormalParameter::Arity::kOptional) {
          return Invalid(fmt::format("{}: input {} ({}) is required but empty", label, i,
                                     QuoteName(formal.name)));
        }
        continue;
      }
      const NamedSlot* local = PreviousNodeOutput(name);
      if (local == nullptr) local = slots_.Find(name);
      const NamedSlot* slot = local != nullptr ? local : Resolve(name);
      if (slot == nullptr || slot->pending) {
        if (slot == nullptr) {
          return Invalid(fmt::format(
              "{}: input {} is undefined (not a graph input, initializer "
              "or node output{})",
              label, QuoteName(name), parent_ != nullptr ? " here or in an enclosing graph" : ""));
        }
        std::string cycle = FindCycle(graph_, slots_, static_cast<int>(n));
        if (!cycle.empty()) {
          return Invalid(
              fmt::format("{}: input {} is part of a cycle: {}", label, QuoteName(name), cycle));
        }
        return Invalid(fmt::format(
            "{}: input {} is used before {} produces it (nodes must be "
            "topologically sorted)",
            label, QuoteName(name), graph_.nodes[slot->producer].Label(slot->producer)));
      }
      input_types[i] = &slot->type;
      step.inputs[i] = slot->ref;
    }
    return {};
  }

  // Folds node `node` into constants when its outputs are known at planning: every output's
  // value given by inference, or a foldable kernel whose inputs are all constant tensors, run
  // once here. A fold that fails or exceeds kMaxFoldedBytes is left to run time (its error, if
  // any, is the run's). Returns whether the node was folded.
  Result<bool> FoldNode(const NodeDef& node, const KernelSchema& schema,
                        const PlannerNodeLabel& label, PreparedNode& prepared,
                        std::span<const Value* const> constant_inputs, bool all_constant,
                        bool no_captures, int producer) {
    if (!options_.fold_constants) return false;
    std::vector<Value> values = std::move(prepared.inference.values);
    const size_t outputs = node.outputs.size();
    bool known = values.size() == outputs && outputs > 0;
    for (const Value& v : values) known = known && !v.is_null();
    if (!known) {
      values.clear();
      if (!schema.foldable || !all_constant || !no_captures || outputs == 0) return false;
      const uint64_t remaining = kMaxFoldedTotalBytes - program_.folded_bytes;
      if (remaining == 0) return false;
      Limits fold_limits = options_.limits;
      // The fold's allocations are refused before they are made once they would pass either
      // bound, so a fold that will be discarded costs no work.
      fold_limits.max_run_bytes = std::min({fold_limits.max_run_bytes, kMaxFoldedBytes, remaining});
      FoldContext run(fold_limits);
      values.assign(outputs, Value());
      if (!prepared.kernel->RunWith(run, constant_inputs, values).ok()) return false;
      uint64_t bytes = 0;
      for (const Value& v : values) {
        if (v.is_null() || !v.is_tensor()) return false;
        bytes += v.BudgetBytes();
      }
      if (bytes > kMaxFoldedBytes || bytes > kMaxFoldedTotalBytes - program_.folded_bytes) {
        return false;
      }
      program_.folded_bytes += bytes;
    }
    for (size_t o = 0; o < outputs; ++o) {
      if (!values[o].type().SameStructure(prepared.inference.types[o])) {
        return Status(
            StatusCode::kInternal,
            fmt::format("{}: folded output {} is {} but inference said {}", label, o,
                        values[o].type().ToString(), prepared.inference.types[o].ToString()));
      }
    }
    AddNodeLine(node, label, "  (folded at planning)");
    for (size_t o = 0; o < outputs; ++o) {
      if (node.outputs[o].empty()) continue;
      const auto index = static_cast<int32_t>(plan_->constants.size());
      Type type = values[o].type();
      plan_->constants.push_back(std::move(values[o]));
      OutputSlot(o) = {{ValueRef::Source::kConstant, index}, std::move(type), producer};
    }
    return true;
  }

  // Describe()'s line for a node; past kMaxDescribedNodes only counted, so describing a
  // million-node graph costs no more than describing ten thousand.
  static constexpr size_t kMaxDescribedNodes = 10000;
  void AddNodeLine(const NodeDef& node, const PlannerNodeLabel& label, std::string_view note) {
    if (node_lines_count_++ >= kMaxDescribedNodes) return;
    node_lines_ += fmt::format("  {}: {} -> {}{}\n", label,
                               EscapeText(fmt::format("{}", fmt::join(node.inputs, ", "))),
                               EscapeText(fmt::format("{}", fmt::join(node.outputs, ", "))), note);
  }

  // Each formal parameter's type constraint (or null), looked up by name once for a run of
  // nodes with the same schema instead of once per node.
  struct SchemaConstraints {
    const KernelSchema* schema = nullptr;
    absl::InlinedVector<const TypeConstraint*, 4> inputs, outputs;
  };
  const SchemaConstraints& ConstraintsOf(const KernelSchema& schema) {
    if (constraints_.schema != &schema) {
      constraints_.schema = &schema;
      constraints_.inputs.clear();
      constraints_.outputs.clear();
      for (const FormalParameter& f : schema.inputs) {
        constraints_.inputs.push_back(schema.FindConstraint(f.type_param));
      }
      for (const FormalParameter& f : schema.outputs) {
        constraints_.outputs.push_back(schema.FindConstraint(f.type_param));
      }
    }
    return constraints_;
  }

  // Type constraints, with each type parameter bound consistently.
  Status CheckInputTypes(const NodeDef& node, const KernelSchema& schema,
                         const PlannerNodeLabel& label, std::span<const Type* const> input_types,
                         TypeBindings& bound) {
    const SchemaConstraints& constraints = ConstraintsOf(schema);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (input_types[i] == nullptr) continue;
      const size_t formal_index = std::min(i, schema.inputs.size() - 1);
      const FormalParameter& formal = schema.inputs[formal_index];
      const TypeConstraint* c = constraints.inputs[formal_index];
      const Type& actual = *input_types[i];
      if (c != nullptr && !c->Allows(actual)) {
        return Invalid(fmt::format("{}: input {} is {}; {}", label, QuoteName(node.inputs[i]),
                                   actual.ToString(),
                                   DescribeRejection(registry_, schema, *c, i, true, actual)));
      }
      if (c == nullptr) continue;
      // Heterogeneous variadics (Loop's carried values) bind nothing across positions.
      if (formal.arity == FormalParameter::Arity::kVariadic && schema.heterogeneous_variadic) {
        continue;
      }
      const TypeBinding* b = FindBinding(bound, formal.type_param);
      if (b == nullptr) {
        bound.push_back({formal.type_param, actual, node.inputs[i]});
      } else if (!b->type.SameStructure(actual)) {
        return Invalid(fmt::format("{}: input {} is {} but input {} is {}; both are type {}", label,
                                   QuoteName(node.inputs[i]), actual.ToString(),
                                   QuoteName(b->input), b->type.ToString(), formal.type_param));
      }
    }
    return {};
  }

  Status CheckOutputTypes(const NodeDef& node, const KernelSchema& schema,
                          const PlannerNodeLabel& label, const std::vector<Type>& inferred,
                          const TypeBindings& bound) {
    if (inferred.size() < node.outputs.size()) {
      return Status(StatusCode::kInternal,
                    fmt::format("{}: inference gave {} types for {} outputs", label,
                                inferred.size(), node.outputs.size()));
    }
    const SchemaConstraints& constraints = ConstraintsOf(schema);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const size_t formal_index = std::min(o, schema.outputs.size() - 1);
      const FormalParameter& formal = schema.outputs[formal_index];
      const TypeConstraint* c = constraints.outputs[formal_index];
      const Type& out_type = inferred[o];
      if (c != nullptr && !c->Allows(out_type)) {
        return Invalid(fmt::format("{}: output {} would be {}; {}", label,
                                   QuoteName(node.outputs[o]), out_type.ToString(),
                                   DescribeRejection(registry_, schema, *c, o, false, out_type)));
      }
      const bool free_variadic =
          formal.arity == FormalParameter::Arity::kVariadic && schema.heterogeneous_variadic;
      const TypeBinding* b = FindBinding(bound, formal.type_param);
      if (!free_variadic && b != nullptr && !b->type.SameStructure(out_type)) {
        return Invalid(fmt::format("{}: output {} would be {} but type {} is {}", label,
                                   QuoteName(node.outputs[o]), out_type.ToString(),
                                   formal.type_param, b->type.ToString()));
      }
      if (node.outputs[o].empty()) continue;
      auto d = declared_.find(node.outputs[o]);
      if (d != declared_.end() && !d->second.CompatibleWith(out_type)) {
        return Invalid(fmt::format("{}: output {} is declared {} but the node produces {}", label,
                                   QuoteName(node.outputs[o]),
                                   DescribeMismatch(d->second, out_type),
                                   DescribeMismatch(out_type, d->second)));
      }
    }
    return {};
  }

  Status PlanNode(size_t n);

  // An erased node's output: `input`'s value and type, refined by a declared output type.
  Status PlanErased(size_t n, const PlannerNodeLabel& label, const ValueRef& input,
                    const Type& type) {
    const NodeDef& node = graph_.nodes[n];
    const std::string& output = node.outputs[0];
    Type produced = type;
    if (!output.empty()) {
      if (auto d = declared_.find(output); d != declared_.end()) {
        if (!d->second.CompatibleWith(produced)) {
          return Invalid(fmt::format("{}: output {} is declared {} but the node produces {}", label,
                                     QuoteName(output), DescribeMismatch(d->second, produced),
                                     DescribeMismatch(produced, d->second)));
        }
        produced = RefineDeclared(produced, d->second);
      }
    }
    AddNodeLine(node, label, "  (erased: aliases its input)");
    if (!output.empty()) OutputSlot(0) = {input, std::move(produced), static_cast<int>(n)};
    return {};
  }

  // Graph outputs: each names a value of this graph (or, in a subgraph, of an enclosing one).
  Status BindOutputs() {
    Plan& plan = *plan_;
    std::set<std::string> output_names;
    for (size_t k = 0; k < graph_.outputs.size(); ++k) {
      const ValueInfo& output = graph_.outputs[k];
      if (output.name.empty()) return Invalid("a graph output has an empty name");
      if (!output_names.insert(output.name).second && !plan.is_subgraph) {
        return Invalid(fmt::format("graph output {} is listed twice", QuoteName(output.name)));
      }
      const NamedSlot* slot = Resolve(output.name);
      if (slot == nullptr) {
        return Invalid(fmt::format("graph output {} is never produced", QuoteName(output.name)));
      }
      const bool typed = k >= graph_.output_typed.size() || graph_.output_typed[k];
      if (typed && !output.type.CompatibleWith(slot->type)) {
        return Invalid(fmt::format(
            "graph output {} is declared {} but the graph produces {}", QuoteName(output.name),
            DescribeMismatch(output.type, slot->type), DescribeMismatch(slot->type, output.type)));
      }
      // Declared types carry shapes the inferred ones may lack; untyped outputs take the
      // inferred type.
      Type type = typed && HasDefinedElements(output.type) ? output.type : slot->type;
      if (plan.is_subgraph) type = RefineDeclared(type, slot->type);
      plan.outputs.push_back({output.name, std::move(type)});
      plan.output_refs.push_back(slot->ref);
    }
    if (plan.outputs.empty()) return Invalid("the graph has no outputs");
    return {};
  }

  // Last reader of every computed slot; graph outputs are read after every step and never
  // released. Outputs nobody reads are released right after their producer.
  void ComputeLiveness() {
    Plan& plan = *plan_;
    constexpr int64_t kNever = -1, kAfterAll = -2;
    std::vector<int64_t> last(static_cast<size_t>(plan.computed_count), kNever);
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      for (const ValueRef& ref : plan.steps[s].inputs) {
        if (ref.source == ValueRef::Source::kComputed) {
          last[static_cast<size_t>(ref.index)] = static_cast<int64_t>(s);
        }
      }
    }
    for (const ValueRef& ref : plan.output_refs) {
      if (ref.source == ValueRef::Source::kComputed)
        last[static_cast<size_t>(ref.index)] = kAfterAll;
    }
    for (Step& step : plan.steps) {
      for (int32_t o = 0; o < step.output_count; ++o) {
        const int32_t slot = step.first_output + o;
        if (last[static_cast<size_t>(slot)] == kNever) step.release.push_back(slot);
      }
    }
    for (size_t slot = 0; slot < last.size(); ++slot) {
      if (last[slot] >= 0) {
        plan.steps[static_cast<size_t>(last[slot])].release.push_back(static_cast<int32_t>(slot));
      }
    }
  }

  void Describe() {
    Plan& plan = *plan_;
    if (plan.is_subgraph) return;
    std::string header = DescribeVersions(graph_);
    if (graph_.raw_bytes_in_place + graph_.raw_bytes_copied > 0) {
      const std::string shifted =
          graph_.raw_bytes_shifted == 0
              ? std::string()
              : fmt::format(" ({} moved into alignment)", graph_.raw_bytes_shifted);
      header += fmt::format("raw_data: {} bytes in place{}, {} bytes copied (misaligned)\n",
                            graph_.raw_bytes_in_place, shifted, graph_.raw_bytes_copied);
    }
    std::string io;
    for (const ValueInfo& v : plan.feeds)
      io += fmt::format("input  {} {}\n", EscapeText(v.name), v.type.ToShortString());
    for (const ValueInfo& v : plan.overrides) {
      io += fmt::format("input  {} {} (initializer default)\n", EscapeText(v.name),
                        v.type.ToShortString());
    }
    for (const ValueInfo& v : plan.outputs)
      io += fmt::format("output {} {}\n", EscapeText(v.name), v.type.ToShortString());
    plan.description =
        header + io + fmt::format("nodes ({}):\n", graph_.nodes.size()) + node_lines_;
    if (node_lines_count_ > kMaxDescribedNodes) {
      plan.description +=
          fmt::format("  ... and {} more nodes\n", node_lines_count_ - kMaxDescribedNodes);
    }
    std::string().swap(node_lines_);
  }

  // The slot of `name` when the node planned before this one produced it, found by entry number
  // without hashing or probing (exporters write graphs in producer order, so most inputs are
  // the previous node's outputs; a random index probe per input was a fifth of planning a
  // 1,000,000-node chain). nullptr otherwise: the caller then looks it up.
  NamedSlot* PreviousNodeOutput(std::string_view name) {
    constexpr size_t kMaxChecked = 4;
    const size_t count = std::min(output_entry_ - previous_output_entry_, kMaxChecked);
    for (size_t i = 0; i < count; ++i) {
      if (NamedSlot* slot = slots_.Entry(previous_output_entry_ + i, name)) return slot;
    }
    return nullptr;
  }

  // The slot of output o (a non-empty name) of the node being planned: IndexProducers inserted
  // every node's outputs in node order, so it is reached by its entry number without probing.
  NamedSlot& OutputSlot(size_t o) {
    // Callers walk the outputs in order: a cursor keeps that linear in the node's outputs.
    const NodeDef& node = graph_.nodes[planning_];
    if (o < cursor_output_) {
      cursor_output_ = 0;
      cursor_entry_ = output_entry_;
    }
    for (; cursor_output_ < o; ++cursor_output_) {
      cursor_entry_ += node.outputs[cursor_output_].empty() ? 0 : 1;
    }
    if (NamedSlot* slot = slots_.Entry(cursor_entry_, node.outputs[o])) return *slot;
    return slots_[node.outputs[o]];
  }

  const std::map<std::string, int64_t>& Opsets() const {
    return opsets_override_ != nullptr ? *opsets_override_ : graph_.opsets;
  }

  // Fusion (src/runtime/fusion.h): what node n (a Conv, Gemm or MatMul about to be planned)
  // absorbs. Folds a following BatchNormalization into new constant weights (updating the step's
  // inputs, `types` and `constants`) and gives the epilogue of the activations after it; the
  // absorbed nodes are listed in `absorbed` (with the input their value arrives on).
  struct Absorbed {
    size_t node;
    size_t input;
  };
  FusedActivation PlanFusion(size_t n, Step& step, TypePtrs& types, ValuePtrs& constants,
                             std::vector<Type>& type_storage, std::vector<Absorbed>& absorbed);
  // A node absorbed by an earlier one: checked like any node, then its output aliases the value
  // it received (which already holds its result).
  Status PlanAbsorbed(size_t n, const PlannerNodeLabel& label);
  // The value of `name` when it is a constant here or in an enclosing graph (never captures),
  // including the tensor of a Constant node of this graph not planned yet (exporters put them
  // anywhere before their first reader, e.g. between a Conv and the activation it fuses).
  const Value* KnownConstant(std::string_view name) const {
    for (const GraphPlanner* p = this; p != nullptr; p = p->parent_) {
      const NamedSlot* it = p->slots_.Find(name);
      if (it == nullptr) continue;
      if (it->pending) {
        // Only this graph's slots are pending while it plans (an enclosing graph planned all
        // nodes before its subgraphs' readers).
        if (p != this) return nullptr;
        const NodeDef& node = graph_.nodes[static_cast<size_t>(it->producer)];
        if (node.op_type != "Constant" || !node.domain.empty() || node.outputs.size() != 1 ||
            node.attributes.size() != 1 || node.attributes[0].name != "value" ||
            node.attributes[0].kind != Attribute::Kind::kTensor ||
            node.attributes[0].tensor.is_null() || !node.attributes[0].tensor.is_tensor()) {
          return nullptr;
        }
        return &node.attributes[0].tensor;
      }
      if (it->ref.source != ValueRef::Source::kConstant) return nullptr;
      return &p->plan_->constants[static_cast<size_t>(it->ref.index)];
    }
    return nullptr;
  }

  const GraphDef& graph_;
  const std::map<std::string, int64_t>* opsets_override_ = nullptr;
  const KernelRegistry& registry_;
  const SessionOptions& options_;
  Program& program_;
  GraphPlanner* parent_;
  int depth_;
  Plan* plan_ = nullptr;
  // Keyed by views of the names in graph_ (and, for captures, in the subgraphs it owns), which
  // outlive the planner: a million-node graph does not copy its names again.
  NameTable<NamedSlot> slots_;
  // The node PlanNode is planning, and the entry number of its first named output in slots_.
  size_t planning_ = 0;
  size_t output_entry_ = 0;
  // The entry of the previous node's first output (== output_entry_ for the first node).
  size_t previous_output_entry_ = 0;
  // OutputSlot's cursor: output cursor_output_ of that node is entry cursor_entry_.
  size_t cursor_output_ = 0;
  size_t cursor_entry_ = 0;
  std::unordered_map<std::string_view, Type> declared_;
  size_t node_lines_count_ = 0;
  std::vector<const KernelSchema*> schemas_;
  Step scratch_step_;              // PlanNode's step under construction (see there)
  SchemaConstraints constraints_;  // ConstraintsOf's last answer
  std::string node_lines_;
  // Null with reference kernels or nothing to fuse into; then absorbed_by_ is empty too.
  std::unique_ptr<ValueUses> uses_;
  // Per node: the producer that absorbed it (-1: none) and the input its value arrives on.
  std::vector<int> absorbed_by_;
  std::vector<size_t> absorbed_input_;
};

// The SubgraphPlanner handed to one node's kernel schema: plans each of the node's graphs once,
// registers the plan in the Program, and turns the names it captured into implicit inputs of the
// node.
class GraphPlanner::NodeSubgraphs final : public SubgraphPlanner {
 public:
  NodeSubgraphs(GraphPlanner& owner, size_t formal_inputs)
      : owner_(owner), formal_inputs_(formal_inputs) {}

  Result<SubgraphInfo> PlanSubgraph(const GraphDef& graph,
                                    std::span<const Type> input_types) override {
    for (const auto& [g, info] : planned_) {
      if (g == &graph) return info;
    }
    if (owner_.depth_ + 1 > owner_.options_.limits.max_graph_depth) {
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("subgraphs nest deeper than max_graph_depth {}",
                                owner_.options_.limits.max_graph_depth));
    }
    if (input_types.size() != graph.inputs.size()) {
      return Status(StatusCode::kInvalidModel,
                    fmt::format("subgraph {} has {} inputs; the node passes {}",
                                QuoteName(graph.name), graph.inputs.size(), input_types.size()));
    }
    auto plan = std::make_unique<Plan>();
    // The subgraph inherits the model's opsets.
    GraphPlanner sub(graph, owner_.registry_, owner_.options_, owner_.program_, &owner_,
                     owner_.depth_ + 1);
    sub.opsets_override_ = &owner_.Opsets();
    Status status = sub.Build(*plan, input_types);
    if (!status.ok()) {
      return std::move(status).WithContext(fmt::format(
          "subgraph {}", QuoteName(graph.name.empty() ? std::string("(unnamed)") : graph.name)));
    }
    SubgraphInfo info;
    info.handle = static_cast<int32_t>(owner_.program_.subgraphs.size());
    for (const ValueInfo& v : plan->outputs) info.output_types.push_back(v.type);
    for (const ValueInfo& v : plan->feeds) info.input_types.push_back(v.type);
    // Which formal inputs the subgraph reads (so an owner may skip building unused ones, like
    // Loop's iteration number).
    for (int32_t slot : plan->feed_slots) {
      bool used = false;
      auto reads = [slot](const ValueRef& r) {
        return r.source == ValueRef::Source::kComputed && r.index == slot;
      };
      for (const Step& step : plan->steps) {
        used = used || std::any_of(step.inputs.begin(), step.inputs.end(), reads);
      }
      used = used || std::any_of(plan->output_refs.begin(), plan->output_refs.end(), reads);
      info.input_used.push_back(used);
    }
    SetPassthrough(*plan, info);
    info.capture_offset = static_cast<uint32_t>(formal_inputs_ + captures_.size());
    info.capture_count = static_cast<uint32_t>(plan->captures.size());
    for (const std::string& name : plan->captures) {
      // Resolved (and captured into the owner, if outer) while the subgraph was planned.
      const NamedSlot* slot = owner_.Resolve(name);
      captures_.push_back(slot->ref);
    }
    owner_.program_.subgraphs.push_back(std::move(plan));
    planned_.emplace_back(&graph, info);
    return info;
  }

  const std::vector<ValueRef>& captures() const { return captures_; }

 private:
  // Fills info.passthrough/output_feeds when every output of `plan` is one of its feeds.
  static void SetPassthrough(const Plan& plan, SubgraphInfo& info) {
    if (!plan.steps.empty()) return;
    std::unordered_map<int32_t, uint32_t> feed_of_slot;
    for (size_t i = 0; i < plan.feed_slots.size(); ++i) {
      feed_of_slot.emplace(plan.feed_slots[i], static_cast<uint32_t>(i));
    }
    for (size_t i = 0; i < plan.capture_slots.size(); ++i) {
      feed_of_slot.emplace(plan.capture_slots[i],
                           static_cast<uint32_t>(plan.feed_slots.size() + i));
    }
    std::vector<uint32_t> output_feeds;
    for (const ValueRef& ref : plan.output_refs) {
      if (ref.source != ValueRef::Source::kComputed) return;  // a constant: not a feed
      auto it = feed_of_slot.find(ref.index);
      if (it == feed_of_slot.end()) return;
      output_feeds.push_back(it->second);
    }
    info.passthrough = true;
    info.output_feeds = std::move(output_feeds);
  }

 private:
  GraphPlanner& owner_;
  size_t formal_inputs_;
  std::vector<std::pair<const GraphDef*, SubgraphInfo>> planned_;
  std::vector<ValueRef> captures_;
};

Status GraphPlanner::PlanNode(size_t n) {
  const NodeDef& node = graph_.nodes[n];
  const KernelSchema& schema = *schemas_[n];
  const PlannerNodeLabel label(node, n, schema);
  if (!absorbed_by_.empty() && absorbed_by_[n] >= 0) return PlanAbsorbed(n, label);
  IDEM_RETURN_IF_ERROR(CheckArity(node, schema, label));
  // The scratch step keeps its input list's memory from node to node until one is scheduled
  // (erased and folded nodes, most of a long chain, then allocate nothing for it).
  Step& step = scratch_step_;
  TypePtrs input_types;
  IDEM_RETURN_IF_ERROR(BindNodeInputs(n, schema, label, step, input_types));
  TypeBindings bound;
  IDEM_RETURN_IF_ERROR(CheckInputTypes(node, schema, label, input_types, bound));
  // Identity elimination (keyed on the schema's contract, not the operator's name): the output
  // is the input's value, so its type is the input's (already checked against the constraint)
  // and no inference or kernel is needed, unless a constant input may fold the node instead.
  const bool erase = options_.eliminate_identity && schema.output_is_input &&
                     node.inputs.size() == 1 && node.outputs.size() == 1;
  if (erase && !(options_.fold_constants && schema.foldable &&
                 step.inputs[0].source == ValueRef::Source::kConstant)) {
    return PlanErased(n, label, step.inputs[0], *input_types[0]);
  }

  NodeSubgraphs subgraphs(*this, node.inputs.size());
  // Facts: the value of every input that is a constant of this graph.
  ValuePtrs constant_inputs(node.inputs.size(), nullptr);
  bool all_constant = true;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].empty()) continue;
    const ValueRef& ref = step.inputs[i];
    if (ref.source == ValueRef::Source::kConstant) {
      constant_inputs[i] = &plan_->constants[static_cast<size_t>(ref.index)];
      all_constant = all_constant && constant_inputs[i]->is_tensor();
    } else {
      all_constant = false;
    }
  }
  // Fusion: a BatchNormalization folded into the weights, activations into the epilogue.
  std::vector<Type> fused_types;
  std::vector<Absorbed> absorbed;
  FusedActivation fused;
  if (uses_ != nullptr) {
    fused = PlanFusion(n, step, input_types, constant_inputs, fused_types, absorbed);
  }
  NodeContext context{node,       schema.since_version, input_types, options_.limits,
                      &subgraphs, constant_inputs};
  context.reference_kernels = options_.reference_kernels;
  context.threads = program_.threads;
  context.fused_activation = fused;
  auto prepared = schema.prepare(context);
  if (!prepared.ok()) return std::move(prepared).take_status().WithContext(label.str());
  std::vector<Type>* inferred = &prepared->inference.types;
  // Planning subgraphs may have added constants (an outer constant read by a nested body), which
  // can move this plan's constants: take the facts' pointers again.
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (constant_inputs[i] != nullptr) {
      constant_inputs[i] = &plan_->constants[static_cast<size_t>(step.inputs[i].index)];
    }
  }
  IDEM_RETURN_IF_ERROR(CheckOutputTypes(node, schema, label, *inferred, bound));
  // Constant folding: outputs the facts determine, or a pure kernel over constant inputs run
  // once now, become constants of the plan (no step runs for them).
  IDEM_ASSIGN_OR_RETURN(bool folded,
                        FoldNode(node, schema, label, *prepared, constant_inputs, all_constant,
                                 subgraphs.captures().empty(), static_cast<int>(n)));
  if (folded) return {};
  // A declared output (value_info or graph output; compatible, as just checked) completes what
  // inference left unknown, as ONNX's shape inference merges them; only a zero-iteration Loop's
  // scan output shapes depend on it (see RefineDeclared).
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    auto d = node.outputs[o].empty() ? declared_.end() : declared_.find(node.outputs[o]);
    if (d != declared_.end()) (*inferred)[o] = RefineDeclared((*inferred)[o], d->second);
  }

  // Identity elimination of a node a constant input did not fold.
  AddNodeLine(node, label, erase ? "  (erased: aliases its input)" : "");
  if (erase) {
    OutputSlot(0) = {step.inputs[0], (*inferred)[0], static_cast<int>(n)};
    return {};
  }
  // Schedule: outputs become computed slots; the kernel is created once.
  Plan& plan = *plan_;
  step.first_output = plan.computed_count;
  step.output_count = static_cast<int32_t>(node.outputs.size());
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    if (node.outputs[o].empty()) continue;
    OutputSlot(o) = {{ValueRef::Source::kComputed, plan.computed_count + static_cast<int32_t>(o)},
                     (*inferred)[o],
                     static_cast<int>(n)};
  }
  plan.computed_count += step.output_count;
  // Captured outer values are implicit inputs, after the formal ones.
  step.inputs.insert(step.inputs.end(), subgraphs.captures().begin(), subgraphs.captures().end());
  step.kernel = std::move(prepared->kernel);
  // Constants the kernel took in whole (packed weights) are not passed at run time, so that
  // ReleaseUnreadConstants can free them.
  if (const uint64_t absorbed = step.kernel->absorbed_inputs(); absorbed != 0) {
    for (size_t i = 0; i < node.inputs.size() && i < 64; ++i) {
      if ((absorbed >> i & 1) != 0 && step.inputs[i].source == ValueRef::Source::kConstant) {
        step.inputs[i] = ValueRef{};
      }
    }
  }
  step.label = label.str();
  step.output_is_input = schema.output_is_input;
  step.reuses_input0 = schema.reuses_input0;
  plan.max_step_inputs = std::max(plan.max_step_inputs, step.inputs.size());
  plan.steps.push_back(std::move(step));
  scratch_step_ = Step{};
  for (const Absorbed& a : absorbed) {
    absorbed_by_[a.node] = static_cast<int>(n);
    absorbed_input_[a.node] = a.input;
  }
  return {};
}

// GCC 12 at -O3 reports the std::optional<Reader> of SoleReader as maybe uninitialized where it
// is read only after being tested (a known false positive of -Wmaybe-uninitialized with
// optional<pair>, GCC bug 80635); CI builds with -Werror.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
FusedActivation GraphPlanner::PlanFusion(size_t n, Step& step, TypePtrs& types,
                                         ValuePtrs& constants, std::vector<Type>& type_storage,
                                         std::vector<Absorbed>& absorbed) {
  FusedActivation act;
  const NodeDef& node = graph_.nodes[n];
  const bool conv = node.op_type == "Conv";
  if (!node.domain.empty() || (!conv && node.op_type != "Gemm" && node.op_type != "MatMul") ||
      node.outputs.size() != 1 || node.outputs[0].empty() || types.empty() || types[0] == nullptr ||
      !types[0]->is_tensor() || types[0]->element_type() != ElementType::kFloat) {
    return act;
  }
  std::function<ConstantOf(const NodeDef&)> constant_of = [this](const NodeDef& reader) {
    return ConstantOf([this, &reader](size_t i) -> const Value* {
      return i < reader.inputs.size() && !reader.inputs[i].empty() ? KnownConstant(reader.inputs[i])
                                                                   : nullptr;
    });
  };
  std::function<int(size_t)> version = [this](size_t m) { return schemas_[m]->since_version; };
  // The rank a constant operand may have without changing the output's shape.
  size_t rank = 0;
  if (node.op_type == "Gemm") {
    rank = 2;
  } else if (types[0]->shape()) {
    rank = types[0]->shape()->size();
  }
  std::string_view tail = node.outputs[0];
  auto reader = uses_->SoleReader(tail);
  // BatchNormalization, and Mul / Add by scalar constants, into the Conv's constant weights.
  if (conv && constants.size() > 1 && constants[1] != nullptr &&
      (types.size() < 3 || types[2] == nullptr || constants[2] != nullptr)) {
    std::optional<Value> w, b;
    auto current_w = [&]() -> const Value& { return w ? *w : *constants[1]; };
    auto current_b = [&]() -> const Value* {
      if (b) return &*b;
      return types.size() > 2 && types[2] != nullptr ? constants[2] : nullptr;
    };
    while (reader) {
      const NodeDef& next = graph_.nodes[reader->first];
      std::optional<std::pair<Value, Value>> folded;
      if (reader->second == 0) {
        folded = FoldBatchNorm(current_w(), current_b(), next, version(reader->first),
                               constant_of(next));
      }
      if (!folded) {
        auto scalar = FusibleScalarStep(next, version(reader->first), reader->second, rank,
                                        constant_of(next));
        if (scalar) folded = FoldScalarStep(current_w(), current_b(), *scalar);
      }
      if (!folded) break;
      w = std::move(folded->first);
      b = std::move(folded->second);
      absorbed.push_back({reader->first, reader->second});
      tail = next.outputs[0];
      reader = uses_->SoleReader(tail);
    }
    if (w) {
      const auto w_index = static_cast<int32_t>(plan_->constants.size());
      plan_->constants.push_back(std::move(*w));
      plan_->constants.push_back(std::move(*b));
      step.inputs.resize(3);
      step.inputs[1] = {ValueRef::Source::kConstant, w_index};
      step.inputs[2] = {ValueRef::Source::kConstant, w_index + 1};
      type_storage.reserve(2);
      type_storage.push_back(plan_->constants[static_cast<size_t>(w_index)].type());
      type_storage.push_back(plan_->constants[static_cast<size_t>(w_index) + 1].type());
      types.resize(3);
      types[1] = &type_storage[0];
      types[2] = &type_storage[1];
      constants.resize(3);
      // Pointers into the plan's constants may have moved: take them all again.
      for (size_t i = 0; i < constants.size(); ++i) {
        if (step.inputs[i].source == ValueRef::Source::kConstant) {
          constants[i] = &plan_->constants[static_cast<size_t>(step.inputs[i].index)];
        }
      }
    }
  }
  // An activation (or HardSwish's four nodes), a Max with a constant, then Mul and Add by
  // constants.
  bool activated = false;
  if (reader && reader->second == 0) {
    const NodeDef& next = graph_.nodes[reader->first];
    if (auto a = FusibleActivation(next, version(reader->first), constant_of(next))) {
      act = *a;
      activated = true;
      absorbed.push_back({reader->first, 0});
      tail = next.outputs[0];
      reader = uses_->SoleReader(tail);
    }
  }
  if (!activated && !reader) {
    if (auto hs =
            MatchHardSwish(graph_, uses_->Readers(tail), *uses_, rank, version, constant_of)) {
      act = hs->activation;
      for (const auto& [m, input] : hs->nodes) absorbed.push_back({m, input});
      tail = hs->output;
      reader = uses_->SoleReader(tail);
    }
  }
  if (reader) {
    const NodeDef& next = graph_.nodes[reader->first];
    if (auto lower = FusibleMaxBound(next, version(reader->first), reader->second, rank,
                                     constant_of(next))) {
      act.lower = std::max(act.lower, *lower);
      absorbed.push_back({reader->first, reader->second});
      tail = next.outputs[0];
      reader = uses_->SoleReader(tail);
    }
  }
  for (bool multiply : {true, false}) {
    if (!reader) break;
    const NodeDef& next = graph_.nodes[reader->first];
    auto scalar =
        FusibleScalarStep(next, version(reader->first), reader->second, rank, constant_of(next));
    if (!scalar || scalar->multiply != multiply) continue;
    if (multiply) {
      act.scaled = true;
      act.scale = scalar->value;
    } else {
      act.shifted = true;
      act.shift = scalar->value;
    }
    absorbed.push_back({reader->first, reader->second});
    tail = next.outputs[0];
    reader = uses_->SoleReader(tail);
  }
  return act;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

Status GraphPlanner::PlanAbsorbed(size_t n, const PlannerNodeLabel& label) {
  const NodeDef& node = graph_.nodes[n];
  const KernelSchema& schema = *schemas_[n];
  IDEM_RETURN_IF_ERROR(CheckArity(node, schema, label));
  // The scratch step keeps its input list's memory from node to node until one is scheduled
  // (erased and folded nodes, most of a long chain, then allocate nothing for it).
  Step& step = scratch_step_;
  TypePtrs input_types;
  IDEM_RETURN_IF_ERROR(BindNodeInputs(n, schema, label, step, input_types));
  TypeBindings bound;
  IDEM_RETURN_IF_ERROR(CheckInputTypes(node, schema, label, input_types, bound));
  const NamedSlot* found = slots_.Find(node.inputs[absorbed_input_[n]]);
  const NamedSlot* slot = found == nullptr || found->pending ? nullptr : found;
  if (slot == nullptr) {
    return Status(StatusCode::kInternal, fmt::format("{}: the fused value is not planned", label));
  }
  NamedSlot alias = *slot;
  std::vector<Type> produced(node.outputs.size(), alias.type);
  IDEM_RETURN_IF_ERROR(CheckOutputTypes(node, schema, label, produced, bound));
  const auto producer = static_cast<size_t>(absorbed_by_[n]);
  AddNodeLine(
      node, label,
      fmt::format("  (fused into {})",
                  PlannerNodeLabel(graph_.nodes[producer], producer, *schemas_[producer]).str()));
  alias.producer = static_cast<int>(n);
  OutputSlot(0) = alias;
  return {};
}

}  // namespace

namespace {

// Drops the plan's constants that no step and no output reads: initializers nothing uses, the
// inputs of folded nodes, weights a BatchNormalization was folded into (the folded copy is read
// instead) and weights a kernel absorbed (Kernel::absorbed_inputs). Their slots stay, empty, so
// indices do not move. A constant also held elsewhere (the GraphDef until Create returns, a
// subgraph's copy, a kernel) stays alive there; this only lets go of the plan's reference.
void ReleaseUnreadConstants(Plan& plan) {
  std::vector<uint8_t> read(plan.constants.size(), 0);
  auto mark = [&](const ValueRef& ref) {
    if (ref.source == ValueRef::Source::kConstant) read[static_cast<size_t>(ref.index)] = 1;
  };
  for (const Step& step : plan.steps) {
    for (const ValueRef& ref : step.inputs) mark(ref);
  }
  for (const ValueRef& ref : plan.output_refs) mark(ref);
  for (size_t i = 0; i < plan.constants.size(); ++i) {
    if (read[i] == 0) plan.constants[i] = Value();
  }
}

}  // namespace

Result<Program> BuildProgram(const GraphDef& graph, const KernelRegistry& registry,
                             const SessionOptions& options, const fast::TaskRunner* threads) {
  Program program;
  program.threads = threads;
  program.plan_memory = options.memory_plan;
  GraphPlanner planner(graph, registry, options, program, nullptr, 0);
  IDEM_RETURN_IF_ERROR(planner.Build(program.main, {}));
  ReleaseUnreadConstants(program.main);
  for (const std::unique_ptr<Plan>& subgraph : program.subgraphs) {
    ReleaseUnreadConstants(*subgraph);
  }
  return program;
}

}  // namespace idem
