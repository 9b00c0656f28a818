// Kernel registry: what each operator version accepts (its formal inputs/outputs and type
// constraints, exactly as the ONNX spec lists them), how it infers output types, and how it runs.
//
// Kernels never see protobuf: they get idem Values and the protobuf-free NodeDef attributes.
// A Kernel instance is created once per node at plan time and must be safe to Run() from many
// threads at once (no mutable state; per-run data lives in the arguments).
#ifndef IDEM_SRC_KERNELS_KERNEL_H_
#define IDEM_SRC_KERNELS_KERNEL_H_

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "idem/options.h"
#include "idem/status.h"
#include "idem/type.h"
#include "idem/value.h"
#include "src/core/graph_def.h"

namespace idem {

namespace fast {
class TaskRunner;  // src/kernels/fast/packed_gemm.h
}  // namespace fast
namespace memory_plan {
class TensorSource;  // src/core/memory_plan.h
}  // namespace memory_plan

// Bytes a value holds for run-time budget accounting: a tensor's buffer (strings: their bytes plus
// a per-string overhead), a sequence's cached total, an optional's element. Shared buffers are
// counted for each value holding them (conservative). O(1) except for string tensors.
inline uint64_t ValueBytes(const Value& value) { return value.BudgetBytes(); }

// What a kernel sees of the run it belongs to: run options (cancellation, deadline), the run-time
// budget, and the subgraphs of control-flow nodes. One per Run (subgraph runs share it); used by
// one thread at a time.
class RunContext {
 public:
  RunContext(const Limits& limits, const RunOptions* options)
      : limits_(limits), options_(options) {}
  virtual ~RunContext() = default;

  // Runs subgraph `handle` (from SubgraphInfo) with `feeds`: its formal inputs followed by its
  // captured outer values. Feeds are moved from (so a value the caller owns alone stays unshared
  // and can be extended in place). `outputs` (one per subgraph output) receives the results; no
  // allocation is needed for either, so a loop can reuse both across iterations.
  virtual Status RunSubgraph(int32_t handle, std::span<Value> feeds, std::span<Value> outputs) = 0;

  // Whether CheckInterrupt can ever fail in this run (a cancel flag or a deadline was given), so
  // a loop can skip the call per iteration when it cannot.
  bool may_interrupt() const {
    return options_ != nullptr && (options_->cancel != nullptr || options_->deadline.has_value());
  }
  // kCancelled / kDeadlineExceeded when the run must stop. Control flow calls it per iteration.
  Status CheckInterrupt() const {
    if (options_ == nullptr) return {};
    if (options_->cancel != nullptr && options_->cancel->load(std::memory_order_relaxed)) {
      return Status(StatusCode::kCancelled, "the run was cancelled (RunOptions::cancel)");
    }
    if (options_->deadline && std::chrono::steady_clock::now() >= *options_->deadline) {
      return Status(StatusCode::kDeadlineExceeded,
                    "the run passed its deadline (RunOptions::deadline)");
    }
    return {};
  }
  // Checks a tensor of `bytes` a kernel is about to allocate against max_tensor_bytes and the
  // run's remaining budget (max_run_bytes minus live bytes). Call before allocating.
  Status CheckAllocation(uint64_t bytes) const;
  // Live-byte accounting (the executor charges node outputs; kernels holding values across
  // subgraph runs, like Loop's carried and scan values, charge them too).
  Status Charge(uint64_t bytes) {
    if (!AddLive(bytes)) [[unlikely]]
      return OverBudget();
    return {};
  }
  // Charge without building a Status: false when the run is now over its budget.
  bool AddLive(uint64_t bytes) {
    live_bytes_ += bytes;
    if (live_bytes_ > peak_bytes_) peak_bytes_ = live_bytes_;
    return live_bytes_ <= limits_.max_run_bytes;
  }
  Status OverBudgetStatus() const { return OverBudget(); }
  void Release(uint64_t bytes) { live_bytes_ -= std::min(bytes, live_bytes_); }
  uint64_t live_bytes() const { return live_bytes_; }
  uint64_t peak_bytes() const { return peak_bytes_; }
  const Limits& limits() const { return limits_; }
  // Where AllocateTensor takes output bytes: the run's memory plan (a recording or an arena,
  // src/core/memory_plan.h), or null for the block cache.
  memory_plan::TensorSource* tensor_source() const { return tensor_source_; }
  void set_tensor_source(memory_plan::TensorSource* source) { tensor_source_ = source; }

 private:
  Status OverBudget() const;
  const Limits& limits_;
  const RunOptions* options_;
  memory_plan::TensorSource* tensor_source_ = nullptr;
  uint64_t live_bytes_ = 0;
  uint64_t peak_bytes_ = 0;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // `inputs` has one entry per node input; nullptr for an omitted optional input. `outputs` has
  // one (null) slot per node output for the kernel to fill. Errors carry no node context (the
  // runtime adds it). Kernels that need the run (subgraphs, budget checks) override RunWith.
  virtual Status Run(std::span<const Value* const> inputs, std::span<Value> outputs) const {
    (void)inputs;
    (void)outputs;
    return Status(StatusCode::kInternal, "this kernel needs a run context");
  }
  // What the executor calls. Control-flow nodes get their captured outer values after their
  // formal inputs in `inputs`.
  virtual Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                         std::span<Value> outputs) const {
    (void)ctx;
    return Run(inputs, outputs);
  }
  // The constant inputs this kernel took in whole when it was created and never reads at run time
  // (bit i: input i, i < 64), as ONNX Runtime's PrePack with is_packed: weights it keeps in its
  // own packed form, with their shape. The planner then passes null for such an input when it is
  // a plan constant, and frees the constant once nothing else reads it, so the weights are not
  // held twice. A kernel that declares an input must still accept it when it is passed (tests,
  // or a constant the planner keeps), and ignore it.
  virtual uint64_t absorbed_inputs() const { return 0; }
};

struct FormalParameter {
  enum class Arity { kSingle, kOptional, kVariadic };
  std::string name;
  std::string type_param;  // key into KernelSchema::constraints
  Arity arity = Arity::kSingle;
  int variadic_min = 1;  // kVariadic: the fewest values it takes (Loop's v_initial: 0)
};

struct TypeConstraint {
  std::string param;
  std::vector<Type> allowed;  // compared with Type::SameStructure
  // Whether `type` has the structure of one of `allowed`. Once Index() ran (the registry runs it
  // on every schema it holds), a plain tensor type is one bit test instead of a scan of up to
  // ~40 types: planning checks every input and output of every node.
  bool Allows(const Type& type) const;
  void Index();
  // Bit e: tensor(element type e) is allowed. Valid when `indexed`.
  uint64_t tensor_elements = 0;
  bool indexed = false;
};

// What planning a subgraph tells its owner.
struct SubgraphInfo {
  int32_t handle = -1;             // for RunContext::RunSubgraph
  std::vector<Type> output_types;  // inferred (declared where the subgraph declares them)
  std::vector<Type> input_types;   // the formal inputs' types as planned
  std::vector<bool> input_used;    // whether the body reads each formal input at all
  uint32_t capture_offset = 0;     // where this subgraph's captured values start in the inputs
  uint32_t capture_count = 0;      // of the owning node at run time
  // The subgraph computes nothing (it has no nodes, or only Identity nodes, all erased): each
  // output is one of its feeds, output o being feed output_feeds[o] (formal inputs first, then
  // captures). An owner may then skip RunSubgraph (Loop turns a body that hands back its
  // condition and carried values unchanged into a counter).
  bool passthrough = false;
  std::vector<uint32_t> output_feeds;  // set when passthrough
};

// Plans the subgraphs of the node being planned (implemented by the runtime). Each graph is
// planned once per node; a second call for the same graph returns the first result.
class SubgraphPlanner {
 public:
  virtual ~SubgraphPlanner() = default;
  // `input_types`: one per formal input of `graph`; where the graph declares a type it must be
  // compatible and is used, an untyped input takes the given type.
  virtual Result<SubgraphInfo> PlanSubgraph(const GraphDef& graph,
                                            std::span<const Type> input_types) = 0;
};

// An activation the planner fused into the node that produces its input (SessionOptions::
// reference_kernels off, src/runtime/fusion.h): the kernel applies it to every output element,
// then the lower bound (a following Max with a constant) and the affine step after it (a Mul and
// an Add by constants), with the fast kernels' formulas
// (fast::Activation). Only the fast float Conv, Gemm and MatMul are given one; a kernel that
// cannot apply it refuses it with an internal error.
struct FusedActivation {
  enum class Kind : uint8_t { kNone, kRelu, kLeakyRelu, kClip, kHardSigmoid, kSigmoid, kHardSwish };
  Kind kind = Kind::kNone;
  float alpha = 0.0f;
  float beta = 0.0f;
  float gamma = 0.0f;
  float delta = 1.0f;
  float lower = -std::numeric_limits<float>::infinity();  // max(x, lower) after the activation
  bool scaled = false;                                    // then x * scale
  float scale = 1.0f;
  bool shifted = false;  // then x + shift
  float shift = 0.0f;
  bool any() const {
    return kind != Kind::kNone || lower != -std::numeric_limits<float>::infinity() || scaled ||
           shifted;
  }
};

// What the planner knows about a node when it infers types and creates the kernel.
struct NodeContext {
  const NodeDef& node;
  int version;                           // the resolved since-version
  std::span<const Type* const> inputs;   // nullptr for omitted optional inputs
  Limits limits;                         // the session's; kernels bound what they build by it
  SubgraphPlanner* subgraphs = nullptr;  // null outside a session's planner (kernel tests)
  // The value of each input the planner knows as a constant (initializers, Constant outputs,
  // folded values); null where unknown. Empty or one entry per input.
  std::span<const Value* const> constants = {};
  // SessionOptions::reference_kernels: create the reference kernel (the oracle), not the fast one.
  bool reference_kernels = false;
  // The session's intra-op threads (SessionOptions::intra_op_threads), or null for the calling
  // thread only. Outlives every kernel created with it.
  const fast::TaskRunner* threads = nullptr;
  // The activation fused into this node (none unless the planner fused one).
  FusedActivation fused_activation = {};
};

// What inference says about a node's outputs: their types (with shapes where known) and, where
// the input facts determine it, an output's value (the planner folds such outputs into
// constants). `values` is empty or one entry per output (null Value where unknown).
struct Inference {
  std::vector<Type> types;
  std::vector<Value> values;
};

// A node prepared once at plan time: inference and the kernel, from one parse of its attributes.
struct PreparedNode {
  Inference inference;
  std::unique_ptr<Kernel> kernel;
};

struct KernelSchema {
  std::string domain;  // "" is the default ONNX domain
  std::string op_type;
  int since_version = 1;
  // Last opset this version covers: the next version's since_version minus one, filled in by
  // KernelRegistry::Register (kMaxOpset for the newest). Resolution picks the schema whose
  // [since_version, end_version] contains the model's opset.
  int end_version = kMaxOpset;
  static constexpr int kMaxOpset = 1 << 30;
  std::vector<FormalParameter> inputs;
  std::vector<FormalParameter> outputs;
  std::vector<TypeConstraint> constraints;
  std::vector<std::string> attributes;  // names the operator defines; others are an error
  // True when the kernel's single output is always its first input's Value itself (Identity).
  // The runtime may then hand the kernel its output slot as the input (a self-assignment).
  bool output_is_input = false;
  // True when the kernel may take over its first input if it receives it as its own output slot
  // (inputs[0] == &outputs[0]): the runtime then hands over a value no one else reads, which the
  // kernel may extend in place (SequenceInsert appending to a sequence the run owns alone) or
  // move into its result (Optional wrapping it, OptionalGetElement taking the element out) instead
  // of copying handles. The kernel must accept both calling forms.
  bool reuses_input0 = false;
  // True when the values of a variadic input (or output) may each have their own type (Loop's
  // carried values, If's outputs): the type parameter is not bound across positions.
  bool heterogeneous_variadic = false;
  // Output types from input types and attributes; also checks rules the constraints cannot
  // express (same element type across inputs, attribute ranges). Types may carry shapes.
  // One definition (see src/kernels/op.h, DefineOp): parses the attributes once, infers the
  // outputs from the input facts and creates the kernel. Register() fills it from `infer` and
  // `create` for operators defined the older way.
  std::function<Result<PreparedNode>(const NodeContext&)> prepare;
  std::function<Result<std::vector<Type>>(const NodeContext&)> infer;
  std::function<Result<std::unique_ptr<Kernel>>(const NodeContext&)> create;
  // The kernel computes its outputs from its inputs alone (no subgraphs, no randomness), so the
  // planner may run it once at Session::Create when every input is a constant.
  bool foldable = false;

  const TypeConstraint* FindConstraint(const std::string& param) const;
  std::string Name() const { return op_type + "-" + std::to_string(since_version); }
};

class KernelRegistry {
 public:
  // The registry with every kernel idem ships. Built once, immutable, thread-safe to read.
  static const KernelRegistry& Default();

  void Register(KernelSchema schema);

  // The version of (domain, op_type) whose [since_version, end_version] contains opset, or
  // nullptr.
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
Result<int64_t> ReadScalarIndex(const Value& value, std::string_view input_name);

// A tensor of `count` elements of `type`: allocation size with overflow checks against limits.
// A string tensor also counts `string_bytes`, the total length of the strings it will hold (a
// kernel gathering strings passes its sources' Tensor::string_bytes()).
Result<uint64_t> TensorBytes(ElementType type, uint64_t count, const Limits& limits,
                             uint64_t string_bytes = 0);

void RegisterIdentityKernels(KernelRegistry& registry);
void RegisterControlFlowKernels(KernelRegistry& registry);
void RegisterConstantKernels(KernelRegistry& registry);
void RegisterElementwiseKernels(KernelRegistry& registry);
void RegisterShapeKernels(KernelRegistry& registry);
void RegisterSequenceKernels(KernelRegistry& registry);
void RegisterOptionalKernels(KernelRegistry& registry);
// The operator families of the real models (one file each; see op.h).
void RegisterUnaryKernels(KernelRegistry& registry);
void RegisterBinaryKernels(KernelRegistry& registry);
void RegisterCastKernels(KernelRegistry& registry);
void RegisterTensorKernels(KernelRegistry& registry);
void RegisterPadKernels(KernelRegistry& registry);
void RegisterConvKernels(KernelRegistry& registry);
void RegisterMatMulKernels(KernelRegistry& registry);
void RegisterNormalizationKernels(KernelRegistry& registry);
void RegisterPoolKernels(KernelRegistry& registry);
void RegisterReduceKernels(KernelRegistry& registry);
void RegisterSoftmaxKernels(KernelRegistry& registry);
void RegisterRnnKernels(KernelRegistry& registry);
void RegisterResizeKernels(KernelRegistry& registry);

}  // namespace idem

#endif  // IDEM_SRC_KERNELS_KERNEL_H_
