// The immutable execution plan of a graph and of its subgraphs, built once per Session, and the
// validation that goes with building it.
//
// Every value in the graph gets a reference: feeds (graph inputs that must be fed), overrides
// (graph inputs with an initializer default), constants (initializers) and computed values (node
// outputs). A run owns only the computed values; everything else is borrowed from the caller's
// feeds or the plan. Identity nodes, once validated, are erased by aliasing their output to their
// input, so a chain of them costs nothing at run time.
//
// Subgraphs (If branches, Loop/Scan/SequenceMap bodies) are planned with their owning node, once.
// Their formal inputs and the outer values they read (captures) are computed slots the executor
// fills from what the owning kernel passes; a name read from an enclosing graph (any depth) becomes
// an implicit input of the owning node, after its formal inputs, so liveness and scheduling of the
// enclosing graph see it like any other input.
#ifndef IDEM_SRC_RUNTIME_PLAN_H_
#define IDEM_SRC_RUNTIME_PLAN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "idem/session.h"
#include "src/core/graph_def.h"
#include "src/kernels/kernel.h"

namespace idem {

struct ValueRef {
  enum class Source : uint8_t { kNone, kFeed, kOverride, kConstant, kComputed };
  Source source = Source::kNone;  // kNone: an omitted optional input
  int32_t index = -1;
};

struct Step {
  std::unique_ptr<Kernel> kernel;
  std::string label;             // "node 'id0' (Identity-16)", prefixed to run-time errors
  std::vector<ValueRef> inputs;  // formal inputs, then captured outer values (control flow)
  int32_t first_output = 0;      // outputs are computed slots [first_output, +output_count)
  int32_t output_count = 0;
  bool output_is_input = false;  // KernelSchema::output_is_input
  bool reuses_input0 = false;    // KernelSchema::reuses_input0
  // Liveness: computed slots whose last reader is this step (or, for outputs nobody reads, that
  // this step produced). The executor releases them right after the step.
  std::vector<int32_t> release;
};

struct Plan {
  std::vector<ValueInfo> feeds;      // Session::inputs(); a subgraph's formal inputs
  std::vector<ValueInfo> overrides;  // Session::overridable_inputs() (main graph only)
  std::vector<Value> override_defaults;
  std::vector<ValueInfo> outputs;
  std::vector<ValueRef> output_refs;
  std::vector<Value> constants;
  std::vector<Step> steps;
  int32_t computed_count = 0;
  size_t max_step_inputs = 0;
  std::string description;  // for Session::Describe()

  // Subgraphs only: feeds and captures are computed slots the executor fills from the owner's
  // feeds (formal inputs first, then captures in `captures` order).
  bool is_subgraph = false;
  std::vector<int32_t> feed_slots;
  std::vector<std::string> captures;  // outer names read, in first-use order
  std::vector<int32_t> capture_slots;
};

// The main graph's plan and every subgraph's, indexed by SubgraphInfo::handle.
struct Program {
  Plan main;
  std::vector<std::unique_ptr<Plan>> subgraphs;
  // Bytes of the values constant folding computed (over all graphs), bounded by
  // kMaxFoldedTotalBytes in plan.cc so many small folds cannot add up.
  uint64_t folded_bytes = 0;
  // The session's intra-op threads the kernels are created with (NodeContext::threads), or null.
  const fast::TaskRunner* threads = nullptr;
  // SessionOptions::memory_plan: runs of feed shapes seen before take their tensors from one
  // arena laid out by a recording run (src/core/memory_plan.h).
  bool plan_memory = false;
};

// `threads`: the session's intra-op threads (it must outlive the program's kernels), or null.
Result<Program> BuildProgram(const GraphDef& graph, const KernelRegistry& registry,
                             const SessionOptions& options,
                             const fast::TaskRunner* threads = nullptr);

// Checks a fed value against a declared type: kind, element types and fixed dims.
Status CheckValueMatchesType(const Value& value, const Type& declared);

}  // namespace idem

#endif  // IDEM_SRC_RUNTIME_PLAN_H_
