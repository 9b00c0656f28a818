#include "src/runtime/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "src/core/text.h"

namespace idem {
namespace {

Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidModel, std::move(message));
}

struct NamedSlot {
  ValueRef ref;
  Type type;
  int producer = -1;  // node index, -1 for graph inputs and initializers
};

// Whether a declared type is complete enough to check feeds against.
bool HasDefinedElements(const Type& type) {
  if (type.is_tensor()) return type.element_type() != ElementType::kUndefined;
  return HasDefinedElements(type.element());
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
std::string FindCycle(const GraphDef& graph, const std::unordered_map<std::string, int>& producer,
                      int start) {
  // Edges go from a node to the producers of its inputs; parent[p] is the node that reached p.
  std::unordered_map<int, int> parent;
  std::vector<int> queue = {start};
  for (size_t head = 0; head < queue.size(); ++head) {
    const int node = queue[head];
    for (const std::string& in : graph.nodes[node].inputs) {
      auto it = producer.find(in);
      if (it == producer.end()) continue;
      if (it->second == start) {
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
      if (parent.emplace(it->second, node).second) queue.push_back(it->second);
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

Result<Plan> BuildPlan(GraphDef graph, const KernelRegistry& registry,
                       const SessionOptions& options) {
  Plan plan;
  std::unordered_map<std::string, NamedSlot> slots;
  std::unordered_map<std::string, Value> initializers;
  std::string header = fmt::format("IR version {}\nopsets:", graph.ir_version);
  for (const auto& [domain, version] : graph.opsets) {
    header += fmt::format(" {}={}", domain.empty() ? "ai.onnx" : EscapeText(domain), version);
  }
  header += "\n";
  std::string node_lines;

  for (NamedValue& init : graph.initializers) {
    if (!initializers.emplace(init.name, init.value).second) {
      return Invalid(fmt::format("initializer '{}' is defined twice", init.name));
    }
  }
  std::set<std::string> input_names;
  for (const ValueInfo& input : graph.inputs) {
    if (input.name.empty()) return Invalid("a graph input has an empty name");
    if (!input_names.insert(input.name).second) {
      return Invalid(fmt::format("graph input '{}' is listed twice", input.name));
    }
    auto init = initializers.find(input.name);
    if (init != initializers.end()) {
      if (!init->second.type().CompatibleWith(input.type)) {
        return Invalid(fmt::format("graph input '{}' is declared {} but its initializer is {}",
                                   input.name, input.type.ToShortString(),
                                   init->second.type().ToShortString()));
      }
      const auto index = static_cast<int32_t>(plan.overrides.size());
      plan.overrides.push_back(input);
      plan.override_defaults.push_back(init->second);
      slots[input.name] = {{ValueRef::Source::kOverride, index}, init->second.type(), -1};
      initializers.erase(init);
      continue;
    }
    if (!HasDefinedElements(input.type)) {
      return Invalid(fmt::format("graph input '{}' has type {} with an undefined element type",
                                 input.name, input.type.ToString()));
    }
    const auto index = static_cast<int32_t>(plan.feeds.size());
    plan.feeds.push_back(input);
    slots[input.name] = {{ValueRef::Source::kFeed, index}, input.type, -1};
  }
  // Initializers that are not graph inputs are constants (in graph order for determinism).
  for (const NamedValue& init : graph.initializers) {
    if (initializers.count(init.name) == 0) continue;
    const auto index = static_cast<int32_t>(plan.constants.size());
    plan.constants.push_back(init.value);
    slots[init.name] = {{ValueRef::Source::kConstant, index}, init.value.type(), -1};
  }

  std::unordered_map<std::string, Type> declared;
  for (const ValueInfo& info : graph.value_infos) declared.emplace(info.name, info.type);
  for (const ValueInfo& info : graph.outputs) declared.emplace(info.name, info.type);

  // Producers of every name, to report two producers, cycles and out-of-order uses precisely.
  std::unordered_map<std::string, int> producer;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const NodeDef& node = graph.nodes[n];
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      if (slots.count(out) != 0) {
        return Invalid(
            fmt::format("{}: output '{}' is already a graph input or initializer; "
                        "each value has one producer",
                        node.Label(n), out));
      }
      auto [it, inserted] = producer.emplace(out, static_cast<int>(n));
      if (!inserted) {
        return Invalid(
            fmt::format("'{}' is produced by both {} and {}; each value has one "
                        "producer",
                        out, graph.nodes[it->second].Label(it->second), node.Label(n)));
      }
    }
  }

  // Resolve every node's kernel first so all unsupported operators are reported at once.
  std::vector<const KernelSchema*> schemas(graph.nodes.size());
  std::vector<std::string> unsupported;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const NodeDef& node = graph.nodes[n];
    auto opset = graph.opsets.find(node.domain);
    if (opset == graph.opsets.end()) {
      unsupported.push_back(
          fmt::format("{} (domain '{}' is not in opset_import)", node.Label(n), node.domain));
      continue;
    }
    schemas[n] = registry.Resolve(node.domain, node.op_type, opset->second);
    if (schemas[n] == nullptr) {
      auto versions = registry.Versions(node.domain, node.op_type);
      unsupported.push_back(
          versions.empty() ? fmt::format("{}-{}", node.op_type, opset->second)
                           : fmt::format("{}-{} (idem implements it from opset {})", node.op_type,
                                         opset->second, versions.front()->since_version));
    }
  }
  if (!unsupported.empty()) {
    std::sort(unsupported.begin(), unsupported.end());
    unsupported.erase(std::unique(unsupported.begin(), unsupported.end()), unsupported.end());
    return Status(StatusCode::kUnsupported,
                  fmt::format("unsupported operators: {}", fmt::join(unsupported, ", ")));
  }

  std::vector<const Type*> input_types;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const NodeDef& node = graph.nodes[n];
    const KernelSchema& schema = *schemas[n];
    const std::string label = node.name.empty()
                                  ? fmt::format("node #{} ({})", n, schema.Name())
                                  : fmt::format("node '{}' ({})", node.name, schema.Name());
    // Arity.
    size_t min_inputs = 0, max_inputs = 0;
    bool variadic = false;
    for (const FormalParameter& f : schema.inputs) {
      if (f.arity == FormalParameter::Arity::kSingle) min_inputs = max_inputs + 1;
      if (f.arity == FormalParameter::Arity::kVariadic) {
        variadic = true;
        min_inputs = max_inputs + 1;
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
    if (node.outputs.empty() || node.outputs.size() > schema.outputs.size()) {
      return Invalid(fmt::format("{}: has {} outputs; {} produces {}", label, node.outputs.size(),
                                 schema.Name(), schema.outputs.size()));
    }
    if (node.outputs[0].empty()) {
      return Invalid(fmt::format("{}: output 0 has an empty name ({}'s first output is required)",
                                 label, schema.Name()));
    }
    for (const Attribute& a : node.attributes) {
      if (std::find(schema.attributes.begin(), schema.attributes.end(), a.name) ==
          schema.attributes.end()) {
        return Invalid(fmt::format(
            "{}: unknown attribute '{}' ({} defines {})", label, a.name, schema.Name(),
            schema.attributes.empty() ? std::string("none")
                                      : fmt::format("{}", fmt::join(schema.attributes, ", "))));
      }
    }
    // Inputs defined before use, and their types.
    Step step;
    input_types.assign(node.inputs.size(), nullptr);
    step.inputs.assign(node.inputs.size(), ValueRef{});
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& name = node.inputs[i];
      const FormalParameter& formal = schema.inputs[std::min(i, schema.inputs.size() - 1)];
      if (name.empty()) {
        if (formal.arity != FormalParameter::Arity::kOptional) {
          return Invalid(
              fmt::format("{}: input {} ('{}') is required but empty", label, i, formal.name));
        }
        continue;
      }
      auto it = slots.find(name);
      if (it == slots.end()) {
        auto prod = producer.find(name);
        if (prod == producer.end()) {
          return Invalid(
              fmt::format("{}: input '{}' is undefined (not a graph input, initializer "
                          "or node output)",
                          label, name));
        }
        std::string cycle = FindCycle(graph, producer, static_cast<int>(n));
        if (!cycle.empty()) {
          return Invalid(fmt::format("{}: input '{}' is part of a cycle: {}", label, name, cycle));
        }
        return Invalid(
            fmt::format("{}: input '{}' is used before {} produces it (nodes must be "
                        "topologically sorted)",
                        label, name, graph.nodes[prod->second].Label(prod->second)));
      }
      input_types[i] = &it->second.type;
      step.inputs[i] = it->second.ref;
    }
    // Type constraints, with each type parameter bound consistently.
    std::unordered_map<std::string, std::pair<Type, std::string>> bound;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (input_types[i] == nullptr) continue;
      const FormalParameter& formal = schema.inputs[std::min(i, schema.inputs.size() - 1)];
      const TypeConstraint* c = schema.FindConstraint(formal.type_param);
      const Type& actual = *input_types[i];
      if (c != nullptr && !c->Allows(actual)) {
        return Invalid(fmt::format("{}: input '{}' is {}; {}", label, node.inputs[i],
                                   actual.ToString(),
                                   DescribeRejection(registry, schema, *c, i, true, actual)));
      }
      if (c == nullptr) continue;
      auto [b, inserted] = bound.emplace(formal.type_param, std::make_pair(actual, node.inputs[i]));
      if (!inserted && !b->second.first.SameStructure(actual)) {
        return Invalid(fmt::format("{}: input '{}' is {} but input '{}' is {}; both are type {}",
                                   label, node.inputs[i], actual.ToString(), b->second.second,
                                   b->second.first.ToString(), formal.type_param));
      }
    }
    NodeContext context{node, schema.since_version, input_types, options.limits};
    auto inferred = schema.infer(context);
    if (!inferred.ok()) return std::move(inferred).take_status().WithContext(label);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const FormalParameter& formal = schema.outputs[o];
      const TypeConstraint* c = schema.FindConstraint(formal.type_param);
      const Type& out_type = (*inferred)[o];
      if (c != nullptr && !c->Allows(out_type)) {
        return Invalid(fmt::format("{}: output '{}' would be {}; {}", label, node.outputs[o],
                                   out_type.ToString(),
                                   DescribeRejection(registry, schema, *c, o, false, out_type)));
      }
      auto b = bound.find(formal.type_param);
      if (b != bound.end() && !b->second.first.SameStructure(out_type)) {
        return Invalid(fmt::format("{}: output '{}' would be {} but type {} is {}", label,
                                   node.outputs[o], out_type.ToString(), formal.type_param,
                                   b->second.first.ToString()));
      }
      if (node.outputs[o].empty()) continue;
      auto d = declared.find(node.outputs[o]);
      if (d != declared.end() && !d->second.CompatibleWith(out_type)) {
        return Invalid(fmt::format("{}: output '{}' is declared {} but the node produces {}", label,
                                   node.outputs[o], DescribeMismatch(d->second, out_type),
                                   DescribeMismatch(out_type, d->second)));
      }
    }
    // Identity elimination: the output is the input's reference.
    const bool erase =
        options.eliminate_identity && schema.domain.empty() && schema.op_type == "Identity";
    node_lines +=
        fmt::format("  {}: {} -> {}{}\n", label, EscapeText(fmt::format("{}", fmt::join(node.inputs, ", "))),
                    EscapeText(fmt::format("{}", fmt::join(node.outputs, ", "))),
                    erase ? "  (erased: aliases its input)" : "");
    if (erase) {
      slots[node.outputs[0]] = {step.inputs[0], (*inferred)[0], static_cast<int>(n)};
      continue;
    }
    step.first_output = plan.computed_count;
    step.output_count = static_cast<int32_t>(node.outputs.size());
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o].empty()) continue;
      slots[node.outputs[o]] = {
          {ValueRef::Source::kComputed, plan.computed_count + static_cast<int32_t>(o)},
          (*inferred)[o],
          static_cast<int>(n)};
    }
    plan.computed_count += step.output_count;
    auto kernel = schema.create(context);
    if (!kernel.ok()) return std::move(kernel).take_status().WithContext(label);
    step.kernel = std::move(kernel).value();
    step.label = label;
    step.output_is_input = schema.output_is_input;
    plan.max_step_inputs = std::max(plan.max_step_inputs, step.inputs.size());
    plan.steps.push_back(std::move(step));
  }

  std::set<std::string> output_names;
  for (const ValueInfo& output : graph.outputs) {
    if (output.name.empty()) return Invalid("a graph output has an empty name");
    if (!output_names.insert(output.name).second) {
      return Invalid(fmt::format("graph output '{}' is listed twice", output.name));
    }
    auto it = slots.find(output.name);
    if (it == slots.end()) {
      return Invalid(fmt::format("graph output '{}' is never produced", output.name));
    }
    if (!output.type.CompatibleWith(it->second.type)) {
      return Invalid(fmt::format("graph output '{}' is declared {} but the graph produces {}",
                                 output.name, DescribeMismatch(output.type, it->second.type),
                                 DescribeMismatch(it->second.type, output.type)));
    }
    plan.outputs.push_back(output);
    plan.output_refs.push_back(it->second.ref);
  }
  if (plan.outputs.empty()) return Invalid("the graph has no outputs");

  std::string io;
  for (const ValueInfo& v : plan.feeds)
    io += fmt::format("input  {} {}\n", EscapeText(v.name), v.type.ToShortString());
  for (const ValueInfo& v : plan.overrides) {
    io += fmt::format("input  {} {} (initializer default)\n", EscapeText(v.name),
                      v.type.ToShortString());
  }
  for (const ValueInfo& v : plan.outputs)
    io += fmt::format("output {} {}\n", EscapeText(v.name), v.type.ToShortString());
  plan.description = header + io + fmt::format("nodes ({}):\n", graph.nodes.size()) + node_lines;
  return plan;
}

}  // namespace idem
