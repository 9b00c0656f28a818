// A protobuf-free description of an ONNX graph: what src/onnx produces from a ModelProto and what
// src/runtime plans from. Plain data; no invariants are enforced here (the planner validates).
#ifndef IDEM_SRC_CORE_GRAPH_DEF_H_
#define IDEM_SRC_CORE_GRAPH_DEF_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "idem/model_metadata.h"
#include "idem/options.h"
#include "idem/type.h"
#include "idem/value.h"

namespace idem {

struct GraphDef;

struct Attribute {
  enum class Kind {
    kInt,
    kFloat,
    kString,
    kInts,
    kFloats,
    kStrings,
    kType,
    kTensor,
    kGraph,
    kGraphs,
    kOther
  };
  std::string name;
  Kind kind = Kind::kOther;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  Type type;     // kType (e.g. Optional's `type`)
  Value tensor;  // kTensor
  // kGraph / kGraphs: subgraphs (If branches, Loop/Scan bodies). Shared and immutable, so an
  // Attribute stays cheap to copy; the GraphDef recursion is bounded by Limits::max_graph_depth
  // when the loader builds it.
  std::shared_ptr<const GraphDef> graph;
  std::vector<std::shared_ptr<const GraphDef>> graphs;
  std::string other;  // kOther: the ONNX attribute type name ("GRAPH", "SPARSE_TENSOR", ...)
};

// A node's input or output names. Most nodes have one output and one or two inputs; one name is
// kept inline (40 bytes where a std::vector is 24 plus a 48-byte heap block), so a
// million-node graph of one-input nodes holds no per-node name arrays on the heap.
using NameList = absl::InlinedVector<std::string, 1>;

struct NodeDef {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for the default domain ("ai.onnx" is normalised to "")
  NameList inputs;     // "" marks an omitted optional input
  NameList outputs;    // "" marks an omitted optional output
  std::vector<Attribute> attributes;

  const Attribute* FindAttribute(const std::string& attribute_name) const {
    for (const Attribute& a : attributes) {
      if (a.name == attribute_name) return &a;
    }
    return nullptr;
  }
  // "node 'id0' (Identity)" or "node #3 (Identity)" when unnamed; for error messages.
  std::string Label(size_t index) const;
};

struct GraphDef {
  std::string source;  // file name or "<bytes>", prefixed to errors
  // For subgraphs: the graph's name (for messages); ir_version/opsets are the model's.
  std::string name;
  int64_t ir_version = 0;
  ModelMetadata metadata;  // the model's descriptive fields; handed to the Session untouched
  std::map<std::string, int64_t> opsets;  // domain -> version; default domain is ""
  std::vector<ValueInfo> inputs;          // all graph inputs, including initializer-backed ones
  std::vector<ValueInfo> outputs;
  // Subgraphs only: which inputs/outputs carry a declared type (real exporters leave branch
  // outputs untyped; the planner infers them). Empty means every one is typed.
  std::vector<bool> input_typed;
  std::vector<bool> output_typed;
  std::vector<ValueInfo> value_infos;
  std::vector<NamedValue> initializers;
  std::vector<NodeDef> nodes;
  // raw_data payloads left where the model's bytes are (file mapping, caller's buffer or a small
  // file read into the heap), of those the bytes moved back a few bytes into alignment (only in
  // memory the loader owns), and those copied because they were not aligned for their element
  // type.
  uint64_t raw_bytes_in_place = 0;
  uint64_t raw_bytes_shifted = 0;
  uint64_t raw_bytes_copied = 0;
};

// "IR version N\nopsets: ai.onnx=16 custom=1\n": the first lines of Session::Describe() and of
// `idem info` on a model idem cannot plan (domains escaped).
std::string DescribeVersions(const GraphDef& graph);

}  // namespace idem

#endif  // IDEM_SRC_CORE_GRAPH_DEF_H_
