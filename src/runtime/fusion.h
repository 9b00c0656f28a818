// Planning for speed (issue 18): what the planner fuses into a Conv, Gemm or MatMul when the fast
// kernels run (SessionOptions::reference_kernels off):
//   - a BatchNormalization (inference mode) right after a Conv whose W (and B) are constants is
//     folded into new constant weights: W'[m] = W[m] * s[m], B'[m] = (B[m] - mean[m]) * s[m] +
//     bias[m], s = scale / sqrt(var + epsilon), computed in double and rounded once to float;
//   - then a Relu, LeakyRelu, Clip (constant bounds), HardSigmoid or Sigmoid, and after it a Max
//     with a constant scalar, become the kernel's epilogue (NodeContext::fused_activation).
// A node is fused only when the value it consumes has no other reader anywhere (this graph's
// nodes and outputs, and every subgraph that names it); the fused node's outputs then alias the
// producer's output, like an erased Identity. Results stay within the fast kernels' tolerance of
// the unfused reference kernels (tests: src/runtime/fusion_test.cc).
#ifndef IDEM_SRC_RUNTIME_FUSION_H_
#define IDEM_SRC_RUNTIME_FUSION_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/core/graph_def.h"
#include "src/kernels/kernel.h"

namespace idem {

// Who reads each value of one graph.
class ValueUses {
 public:
  using Reader = std::pair<size_t, size_t>;  // node index, input position
  explicit ValueUses(const GraphDef& graph);
  // The node and input position of the only reader of `name`: nullopt when it has none, more
  // than one, is a graph output or is read inside a subgraph.
  std::optional<Reader> SoleReader(std::string_view name) const;
  // Every node input reading `name` in node order; empty when it is also a graph output or read
  // inside a subgraph.
  std::vector<Reader> Readers(std::string_view name) const;

 private:
  struct Use {
    bool outside = false;  // a graph output, or named in a subgraph
    std::vector<Reader> readers;
  };
  std::unordered_map<std::string_view, Use> uses_;
};

// The constant value of a node input, or null (the planner's facts).
using ConstantOf = std::function<const Value*(size_t input)>;

// The epilogue form of activation node `node` at its resolved `version`, or nullopt when it is
// not one the fast kernels fuse (or its bounds are not constants, or it is not float).
std::optional<FusedActivation> FusibleActivation(const NodeDef& node, int version,
                                                 const ConstantOf& constant);

// The lower bound a Max(x, c) node adds (c a float constant of one element and at most `rank`
// dims), with x its input `x_input`; nullopt otherwise.
std::optional<float> FusibleMaxBound(const NodeDef& node, int version, size_t x_input, size_t rank,
                                     const ConstantOf& constant);

// The constant a Mul or Add node (numpy broadcasting, version >= 7) applies to its input
// `x_input`: the other input, a float constant of one element and at most `rank` dims.
struct ScalarStep {
  bool multiply = false;  // Mul (else Add)
  float value = 0.0f;
};
std::optional<ScalarStep> FusibleScalarStep(const NodeDef& node, int version, size_t x_input,
                                            size_t rank, const ConstantOf& constant);

// HardSwish as exporters write it on value t: Add(t, a) -> Clip(lo, hi) -> Mul(t, clip) ->
// Div(mul, d), a, lo, hi, d constants (of one element, at most `rank` dims). `readers` are t's
// readers (both nodes reading t);
// `version_of` gives a node's resolved version; `sole` the only reader of a value; `constant_of`
// the facts of a node. On a match: the activation (kHardSwish) and the four nodes with the input
// each receives its value on, in graph order.
struct HardSwishMatch {
  FusedActivation activation;
  std::vector<std::pair<size_t, size_t>> nodes;
  std::string_view output;  // the Div's output
};
std::optional<HardSwishMatch> MatchHardSwish(
    const GraphDef& graph, const std::vector<ValueUses::Reader>& readers, const ValueUses& uses,
    size_t rank, const std::function<int(size_t)>& version_of,
    const std::function<ConstantOf(const NodeDef&)>& constant_of);

// W' and B' of a Conv (W, optional B: float constants) followed by a Mul or Add by a scalar
// constant: W' = W * c, B' = B * c, or B' = B + c (double, rounded once).
std::optional<std::pair<Value, Value>> FoldScalarStep(const Value& w, const Value* b,
                                                      const ScalarStep& step);

// W' and B' of a Conv (W, optional B: float constants) followed by BatchNormalization `bn` at
// `version` with constant parameters; nullopt when the node or its parameters are not foldable.
std::optional<std::pair<Value, Value>> FoldBatchNorm(const Value& w, const Value* b,
                                                     const NodeDef& bn, int version,
                                                     const ConstantOf& constant);

}  // namespace idem

#endif  // IDEM_SRC_RUNTIME_FUSION_H_
