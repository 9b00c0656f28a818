// The immutable execution plan of a graph, built once per Session, and the validation that goes
// with building it.
//
// Every value in the graph gets a reference: feeds (graph inputs that must be fed), overrides
// (graph inputs with an initializer default), constants (initializers) and computed values (node
// outputs). A run owns only the computed values; everything else is borrowed from the caller's
// feeds or the plan. Identity nodes, once validated, are erased by aliasing their output to their
// input, so a chain of them costs nothing at run time.
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
  std::string label;  // "node 'id0' (Identity-16)", prefixed to run-time errors
  std::vector<ValueRef> inputs;
  int32_t first_output = 0;  // outputs are computed slots [first_output, +output_count)
  int32_t output_count = 0;
  bool output_is_input = false;  // KernelSchema::output_is_input
};

struct Plan {
  std::vector<ValueInfo> feeds;      // Session::inputs()
  std::vector<ValueInfo> overrides;  // Session::overridable_inputs()
  std::vector<Value> override_defaults;
  std::vector<ValueInfo> outputs;
  std::vector<ValueRef> output_refs;
  std::vector<Value> constants;
  std::vector<Step> steps;
  int32_t computed_count = 0;
  size_t max_step_inputs = 0;
  std::string description;  // for Session::Describe()
};

Result<Plan> BuildPlan(GraphDef graph, const KernelRegistry& registry,
                       const SessionOptions& options);

// Checks a fed value against a declared type: kind, element types and fixed dims.
Status CheckValueMatchesType(const Value& value, const Type& declared);

}  // namespace idem

#endif  // IDEM_SRC_RUNTIME_PLAN_H_
