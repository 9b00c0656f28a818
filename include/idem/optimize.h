// `idem optimize`: removes every removable Identity node from an ONNX model file, exactly.
//
// The rewrite works on the ModelProto, not on idem's plan, so it applies to any model: operators
// idem cannot run, custom domains, functions and subgraphs at any depth. It deletes Identity
// nodes (domain "" or "ai.onnx", unless a model-local function of that name shadows the operator)
// and renames value references; nothing else in the file changes (inputs, outputs, initializers,
// sparse initializers, metadata, doc strings, training info, functions, opset imports, ir_version
// and fields this build's protobuf schema does not know are kept). External data is never read.
//
// Rules, in every graph (main graph, graph attributes at any depth, function bodies, training
// info graphs), for an Identity y = Identity(x):
//   - y is not an output of its graph: every use of y (in this graph, in nested graphs that read
//     it, in quantization annotations) becomes x, and the node is deleted;
//   - y is an output of its graph: x's definition (the producing node's output slot) and every
//     use of x are renamed y, and the node is deleted; unless one of the KeepRules below holds.
// Chains collapse. A model with nothing to remove comes back byte-identical; running the rewrite
// on its own result removes nothing. Time and memory are linear in the model's size.
#ifndef IDEM_OPTIMIZE_H_
#define IDEM_OPTIMIZE_H_

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idem/export.h"
#include "idem/options.h"
#include "idem/status.h"

namespace idem {

// Why an Identity node stays.
enum class KeepRule {
  kGraphInput,          // y is a graph output and x an input of the same graph
  kInitializer,         // y is a graph output and x an initializer (dense or sparse)
  kOuterScope,          // y is a graph output and x a value of an enclosing graph (pass-through)
  kAlreadyOutput,       // y is a graph output and x already is one (or was taken by another)
  kNameCollision,       // a nested graph defines the name that changes or the one replacing it
  kTypeMismatch,        // y is a graph output and the declared types of x and y differ
  kNestedGraphOutput,   // the renamed value is named directly as a nested graph's output
  kAnnotations,         // both x and y carry quantization annotations
  kShadowedByFunction,  // a model-local function named Identity replaces the operator
  kGraphAttributeByReference,  // function body takes graph attributes by reference (ref_attr_name)
  kMalformed,                  // not one input and one output, empty names, attributes, or y == x
  kMultiplyDefined,            // x or y is defined more than once in its graph
  kUndefinedInput,             // x is defined nowhere in scope
  kUnsorted,                   // x or y is used before its definition (not topologically sorted)
  kShardingSpec,   // a sharding spec (NodeProto.device_configurations) names the renamed value
  kUnknownFields,  // the Identity node has fields newer than idem's schema (overload, metadata,
                   // device_configurations such as a pipeline stage): its meaning is not known
};

// Short stable identifier, e.g. "graph-input", "outer-scope".
IDEM_API std::string_view KeepRuleName(KeepRule rule);
// One-line explanation, e.g. "x is an input of its graph".
IDEM_API std::string_view KeepRuleDescription(KeepRule rule);

struct KeptIdentity {
  // Where the node is: "graph", "graph/if0.then_branch", "function custom:F",
  // "training_info[0].algorithm". A nested graph is "<parent>/<node>.<attribute>" (with "[k]"
  // for the k-th graph of a `graphs` attribute); a node without a name is "#<index>". Names
  // longer than 64 bytes are clipped ("...") in paths.
  std::string graph;
  std::string node;       // the node's name ("" when it has none)
  size_t node_index = 0;  // position in its graph's node list (of the input model)
  KeepRule rule = KeepRule::kMalformed;
};

struct OptimizeReport {
  size_t removed = 0;  // Identity nodes deleted
  size_t kept = 0;     // Identity nodes left in place (== kept_nodes.size())
  std::vector<KeptIdentity> kept_nodes;
};

struct OptimizeOptions {
  // max_model_bytes bounds the input; max_graph_depth bounds subgraph nesting and max_nodes the
  // nodes of all graphs together; max_values and the load memory estimate
  // (max_load_memory_factor/_floor) are checked on the wire before protobuf parses anything, as
  // for a load (beyond any of them: kResourceExhausted).
  Limits limits;
  // OptimizeModelFile only: allows out_path to be the input file itself (same inode).
  bool in_place = false;
  // OptimizeModelFile only: called with the input's and the result's bytes before anything is
  // written; an error aborts the write and is returned (e.g. `idem optimize --check`).
  std::function<Status(std::span<const std::byte> original, std::span<const std::byte> result)>
      verify;
};

// Optimizes a serialized ModelProto. `*out` receives the result; when nothing is removed it is a
// byte-for-byte copy of `in`. External data references are copied as they are (they stay valid
// only next to the original's folder).
IDEM_API Result<OptimizeReport> OptimizeModelBytes(std::span<const std::byte> in, std::string* out,
                                                   const OptimizeOptions& options = {});

// Reads `in_path`, optimizes, writes `out_path` atomically (a temporary file in out_path's folder,
// fsync, rename; an existing file's permission bits are kept). Refuses to replace the input file
// unless options.in_place, comparing files by device and inode (not by spelling). A model with
// external data can only be written into the input's folder (its relative locations must stay
// valid); elsewhere it is refused. `out_path` must be a new path or a regular file (a symlink,
// directory, FIFO or device is refused, never replaced) and not one of the model's external-data
// files.
IDEM_API Result<OptimizeReport> OptimizeModelFile(const std::string& in_path,
                                                  const std::string& out_path,
                                                  const OptimizeOptions& options = {});

}  // namespace idem

#endif  // IDEM_OPTIMIZE_H_
