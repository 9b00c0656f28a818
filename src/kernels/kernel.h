// Kernel registry: what each operator version accepts (its formal inputs/outputs and type
// constraints, exactly as the ONNX spec lists them), how it infers output types, and how it runs.
//
// Kernels never see protobuf: they get idem Values and the protobuf-free NodeDef attributes.
// A Kernel instance is created once per node at plan time and must be safe to Run() from many
// threads at once (no mutable state; per-run data lives in the arguments).
#ifndef IDEM_SRC_KERNELS_KERNEL_H_
#define IDEM_SRC_KERNELS_KERNEL_H_

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "idem/options.h"
#include "idem/value.h"
#include "idem/status.h"
#include "idem/type.h"
#include "idem/value.h"
#include "src/core/graph_def.h"

namespace idem {

class Kernel {
 public:
  virtual ~Kernel() = default;
  // `inputs` has one entry per node input; nullptr for an omitted optional input. `outputs` has
  // one (null) slot per node output for the kernel to fill. Errors carry no node context (the
  // runtime adds it).
  virtual Status Run(std::span<const Value* const> inputs, std::span<Value> outputs) const = 0;
};

struct FormalParameter {
  enum class Arity { kSingle, kOptional, kVariadic };
  std::string name;
  std::string type_param;  // key into KernelSchema::constraints
  Arity arity = Arity::kSingle;
};

struct TypeConstraint {
  std::string param;
  std::vector<Type> allowed;  // compared with Type::SameStructure
  bool Allows(const Type& type) const;
};

// What the planner knows about a node when it infers types and creates the kernel.
struct NodeContext {
  const NodeDef& node;
  int version;                          // the resolved since-version
  std::span<const Type* const> inputs;  // nullptr for omitted optional inputs
  Limits limits;                        // the session's; kernels bound what they build by it
};

struct KernelSchema {
  std::string domain;  // "" is the default ONNX domain
  std::string op_type;
  int since_version = 1;
  std::vector<FormalParameter> inputs;
  std::vector<FormalParameter> outputs;
  std::vector<TypeConstraint> constraints;
  std::vector<std::string> attributes;  // names the operator defines; others are an error
  // True when the kernel's single output is always its first input's Value itself (Identity).
  // The runtime may then hand the kernel its output slot as the input (a self-assignment).
  bool output_is_input = false;
  // Output types from input types and attributes; also checks rules the constraints cannot
  // express (same element type across inputs, attribute ranges). Types may carry shapes.
  std::function<Result<std::vector<Type>>(const NodeContext&)> infer;
  std::function<Result<std::unique_ptr<Kernel>>(const NodeContext&)> create;

  const TypeConstraint* FindConstraint(const std::string& param) const;
  std::string Name() const { return op_type + "-" + std::to_string(since_version); }
};

class KernelRegistry {
 public:
  // The registry with every kernel idem ships. Built once, immutable, thread-safe to read.
  static const KernelRegistry& Default();

  void Register(KernelSchema schema);

  // The newest version of (domain, op_type) whose since_version <= opset, or nullptr.
  const KernelSchema* Resolve(const std::string& domain, const std::string& op_type,
                              int64_t opset) const;
  // Every registered version, oldest first (empty if the operator is unknown).
  std::vector<const KernelSchema*> Versions(const std::string& domain,
                                            const std::string& op_type) const;
  std::vector<const KernelSchema*> All() const;

 private:
  // (domain, op_type) -> since_version -> schema
  std::map<std::pair<std::string, std::string>, std::map<int, std::unique_ptr<KernelSchema>>>
      schemas_;
};

// Type-set building blocks, in the spec's order.
std::vector<ElementType> BaseElementTypes();  // the 15 of Identity-1
std::vector<Type> TensorTypes(std::span<const ElementType> elements);
std::vector<Type> SequenceTypes(std::span<const ElementType> elements);
std::vector<Type> OptionalTypes(std::span<const ElementType> elements);  // tensor and seq ones
std::vector<Type> Concat(std::initializer_list<std::vector<Type>> parts);

// Common attribute access with defaults; errors name the attribute.
Result<int64_t> GetIntAttribute(const NodeDef& node, const std::string& name,
                                std::optional<int64_t> default_value);

// Reads a scalar (or single-element) int32/int64 tensor, e.g. a position input.
Result<int64_t> ReadScalarIndex(const Value& value, const std::string& input_name);

void RegisterIdentityKernels(KernelRegistry& registry);
void RegisterSequenceKernels(KernelRegistry& registry);
void RegisterOptionalKernels(KernelRegistry& registry);

}  // namespace idem

#endif  // IDEM_SRC_KERNELS_KERNEL_H_
