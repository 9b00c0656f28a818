// KernelRunner: runs one kernel outside a session (TFLM style). Build a node (op, version,
// attributes), give input Values, and get the outputs or the Status. Types are taken from the
// inputs; the schema's constraints, inference and kernel creation run as the planner would run
// them. Kernels that need subgraphs cannot run here (use a Session).
#ifndef IDEM_TESTS_KERNEL_RUNNER_H_
#define IDEM_TESTS_KERNEL_RUNNER_H_

#include <algorithm>
#include <string>
#include <vector>

#include "src/kernels/kernel.h"

namespace idem::testing {

class NoSubgraphs final : public RunContext {
 public:
  using RunContext::RunContext;
  Status RunSubgraph(int32_t, std::span<Value>, std::span<Value>) override {
    return Status(StatusCode::kInternal, "KernelRunner has no subgraphs");
  }
};

class KernelRunner {
 public:
  KernelRunner(std::string op, int opset) : opset_(opset) { node_.op_type = std::move(op); }

  KernelRunner& Attr(Attribute a) {
    node_.attributes.push_back(std::move(a));
    return *this;
  }
  KernelRunner& IntAttr(const std::string& name, int64_t v) {
    Attribute a;
    a.name = name;
    a.kind = Attribute::Kind::kInt;
    a.i = v;
    return Attr(std::move(a));
  }
  KernelRunner& IntsAttr(const std::string& name, std::vector<int64_t> v) {
    Attribute a;
    a.name = name;
    a.kind = Attribute::Kind::kInts;
    a.ints = std::move(v);
    return Attr(std::move(a));
  }
  KernelRunner& WithLimits(const Limits& limits) {
    limits_ = limits;
    return *this;
  }

  // Plans (constraints, inference, creation) and runs with `inputs` (a null Value is an omitted
  // optional input). `outputs` is the number of node outputs.
  Result<std::vector<Value>> Run(std::vector<Value> inputs, size_t outputs = 1) {
    const KernelSchema* schema = KernelRegistry::Default().Resolve("", node_.op_type, opset_);
    if (schema == nullptr) return Status(StatusCode::kUnsupported, "no such kernel");
    for (const Attribute& a : node_.attributes) {
      if (std::find(schema->attributes.begin(), schema->attributes.end(), a.name) ==
          schema->attributes.end()) {
        return Status(StatusCode::kInvalidModel, "unknown attribute '" + a.name + "'");
      }
    }
    std::vector<Type> types;
    for (const Value& v : inputs) types.push_back(v.is_null() ? Type() : v.type());
    std::vector<const Type*> type_ptrs;
    node_.inputs.clear();
    for (size_t i = 0; i < inputs.size(); ++i) {
      type_ptrs.push_back(inputs[i].is_null() ? nullptr : &types[i]);
      node_.inputs.push_back(inputs[i].is_null() ? "" : "in" + std::to_string(i));
      if (inputs[i].is_null()) continue;
      const auto& formal = schema->inputs[std::min(i, schema->inputs.size() - 1)];
      const TypeConstraint* c = schema->FindConstraint(formal.type_param);
      if (c != nullptr && !c->Allows(types[i])) {
        return Status(StatusCode::kInvalidModel, "input " + std::to_string(i) + " is " +
                                                     types[i].ToString() + ", not allowed");
      }
    }
    node_.outputs.assign(outputs, "out");
    NodeContext ctx{node_, schema->since_version, type_ptrs, limits_, nullptr};
    IDEM_ASSIGN_OR_RETURN(std::vector<Type> inferred, schema->infer(ctx));
    IDEM_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel, schema->create(ctx));
    std::vector<const Value*> in;
    for (const Value& v : inputs) in.push_back(v.is_null() ? nullptr : &v);
    std::vector<Value> out(outputs);
    NoSubgraphs run(limits_, nullptr);
    IDEM_RETURN_IF_ERROR(kernel->RunWith(run, in, out));
    for (size_t o = 0; o < outputs; ++o) {
      if (!inferred[o].SameStructure(out[o].type())) {
        return Status(StatusCode::kInternal, "output " + std::to_string(o) + " is " +
                                                 out[o].type().ToString() + " but inference said " +
                                                 inferred[o].ToString());
      }
    }
    return out;
  }

 private:
  NodeDef node_;
  int opset_;
  Limits limits_;
};

}  // namespace idem::testing

#endif  // IDEM_TESTS_KERNEL_RUNNER_H_
