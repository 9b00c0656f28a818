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
  KernelRunner& FloatAttr(const std::string& name, float v) {
    Attribute a;
    a.name = name;
    a.kind = Attribute::Kind::kFloat;
    a.f = v;
    return Attr(std::move(a));
  }
  KernelRunner& FloatsAttr(const std::string& name, std::vector<float> v) {
    Attribute a;
    a.name = name;
    a.kind = Attribute::Kind::kFloats;
    a.floats = std::move(v);
    return Attr(std::move(a));
  }
  KernelRunner& StringAttr(const std::string& name, std::string v) {
    Attribute a;
    a.name = name;
    a.kind = Attribute::Kind::kString;
    a.s = std::move(v);
    return Attr(std::move(a));
  }
  KernelRunner& StringsAttr(const std::string& name, std::vector<std::string> v) {
    Attribute a;
    a.name = name;
    a.kind = Attribute::Kind::kStrings;
    a.strings = std::move(v);
    return Attr(std::move(a));
  }
  KernelRunner& TensorAttr(const std::string& name, Value v) {
    Attribute a;
    a.name = name;
    a.kind = Attribute::Kind::kTensor;
    a.tensor = std::move(v);
    return Attr(std::move(a));
  }
  // Input i is known to the planner as a constant (an initializer): inference sees its value
  // and may fold the node (the runner then checks the folded value equals the kernel's).
  KernelRunner& ConstantInput(size_t i) {
    constant_inputs_.push_back(i);
    return *this;
  }
  // Input types as the planner would see them when shapes are unknown (rank unknown), to test
  // inference without shapes; by default the planner sees the inputs' full shapes.
  KernelRunner& UnknownShapes() {
    unknown_shapes_ = true;
    return *this;
  }
  // The types inference gave in the last Run.
  const std::vector<Type>& inferred() const { return inferred_; }
  // Creates the reference kernel (SessionOptions::reference_kernels), the fast kernels' oracle.
  KernelRunner& Reference(bool reference = true) {
    reference_ = reference;
    return *this;
  }
  // The intra-op threads the kernel is created with (NodeContext::threads); null: none.
  KernelRunner& Threads(const fast::TaskRunner* threads) {
    threads_ = threads;
    return *this;
  }
  KernelRunner& WithLimits(const Limits& limits) {
    limits_ = limits;
    return *this;
  }
  // Runs the created kernel this many times on the same inputs (weights a kernel derives on its
  // first run are then reused); Run fails unless every run gives the same bits.
  KernelRunner& RunsPerKernel(int runs) {
    runs_ = runs;
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
    for (const Value& v : inputs) {
      if (v.is_null()) {
        types.emplace_back();
      } else if (unknown_shapes_ && v.is_tensor()) {
        types.push_back(Type::Tensor(v.tensor().element_type()));
      } else {
        types.push_back(v.type());
      }
    }
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
    std::vector<const Value*> constants(inputs.size(), nullptr);
    for (size_t i : constant_inputs_) {
      if (i < inputs.size() && !inputs[i].is_null()) constants[i] = &inputs[i];
    }
    NodeContext ctx{node_, schema->since_version, type_ptrs, limits_, nullptr, constants};
    ctx.reference_kernels = reference_;
    ctx.threads = threads_;
    IDEM_ASSIGN_OR_RETURN(PreparedNode prepared, schema->prepare(ctx));
    std::vector<Type> inferred = prepared.inference.types;
    inferred_ = inferred;
    if (inferred.size() < outputs) {
      return Status(StatusCode::kInternal, "inference gave too few output types");
    }
    std::unique_ptr<Kernel> kernel = std::move(prepared.kernel);
    std::vector<const Value*> in;
    for (const Value& v : inputs) in.push_back(v.is_null() ? nullptr : &v);
    // As the planner does: a constant the kernel absorbed (packed weights) is not passed.
    for (size_t i : constant_inputs_) {
      if (i < in.size() && i < 64 && (kernel->absorbed_inputs() >> i & 1) != 0) in[i] = nullptr;
    }
    std::vector<Value> out(outputs);
    NoSubgraphs run(limits_, nullptr);
    IDEM_RETURN_IF_ERROR(kernel->RunWith(run, in, out));
    for (int again = 1; again < runs_; ++again) {
      std::vector<Value> next(outputs);
      IDEM_RETURN_IF_ERROR(kernel->RunWith(run, in, next));
      for (size_t o = 0; o < outputs; ++o) {
        if (out[o].is_null() || next[o].is_null()) continue;
        if (auto why = DescribeDifference(out[o], next[o])) {
          return Status(StatusCode::kInternal, "run " + std::to_string(again + 1) + ", output " +
                                                   std::to_string(o) + " differs: " + *why);
        }
      }
    }
    for (size_t o = 0; o < outputs; ++o) {
      if (out[o].is_null()) {
        return Status(StatusCode::kInternal, "output " + std::to_string(o) + " was not set");
      }
      // Inference must agree with what the kernel made: structure, and every dim it claims.
      if (!inferred[o].SameStructure(out[o].type()) || !inferred[o].CompatibleWith(out[o].type())) {
        return Status(StatusCode::kInternal,
                      "output " + std::to_string(o) + " is " + out[o].type().ToShortString() +
                          " but inference said " + inferred[o].ToShortString());
      }
      // A value inference claims (folded at planning) must be the kernel's, bit for bit.
      if (o < prepared.inference.values.size() && !prepared.inference.values[o].is_null()) {
        if (auto why = DescribeDifference(prepared.inference.values[o], out[o])) {
          return Status(StatusCode::kInternal,
                        "output " + std::to_string(o) + " inferred value differs: " + *why);
        }
      }
    }
    return out;
  }

 private:
  NodeDef node_;
  int opset_;
  Limits limits_;
  std::vector<size_t> constant_inputs_;
  bool unknown_shapes_ = false;
  int runs_ = 1;
  bool reference_ = false;
  const fast::TaskRunner* threads_ = nullptr;
  std::vector<Type> inferred_;
};

}  // namespace idem::testing

#endif  // IDEM_TESTS_KERNEL_RUNNER_H_
