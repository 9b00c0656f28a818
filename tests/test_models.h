// Small ONNX model builders for tests (protobuf is fine here: tests sit above every layer).
#ifndef IDEM_TESTS_TEST_MODELS_H_
#define IDEM_TESTS_TEST_MODELS_H_

#include <fcntl.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "idem/idem.h"
#include "idem/session_proto.h"
#include "tests/status_matchers.h"

namespace idem::testing {

inline onnx::TypeProto TensorTypeProto(ElementType type, std::vector<int64_t> dims) {
  onnx::TypeProto t;
  t.mutable_tensor_type()->set_elem_type(static_cast<int32_t>(type));
  auto* shape = t.mutable_tensor_type()->mutable_shape();
  for (int64_t d : dims) {
    if (d < 0) {
      shape->add_dim()->set_dim_param("N");
    } else {
      shape->add_dim()->set_dim_value(d);
    }
  }
  return t;
}

inline onnx::TypeProto SequenceTypeProto(const onnx::TypeProto& element) {
  onnx::TypeProto t;
  *t.mutable_sequence_type()->mutable_elem_type() = element;
  return t;
}

inline onnx::TypeProto OptionalTypeProto(const onnx::TypeProto& element) {
  onnx::TypeProto t;
  *t.mutable_optional_type()->mutable_elem_type() = element;
  return t;
}

// An empty model at IR version `ir` importing the default domain at `opset`.
inline onnx::ModelProto EmptyModel(int64_t opset, int64_t ir) {
  onnx::ModelProto m;
  m.set_ir_version(ir);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  return m;
}

inline void AddValueInfo(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                         const std::string& name, const onnx::TypeProto& type) {
  auto* v = list->Add();
  v->set_name(name);
  *v->mutable_type() = type;
}

inline onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op,
                                std::vector<std::string> inputs, std::vector<std::string> outputs,
                                const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return n;
}

inline void AddIntAttribute(onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

// x -> Identity (n times) -> y, both of `type`.
inline onnx::ModelProto IdentityChain(const onnx::TypeProto& type, int opset, int length = 1,
                                      int ir = 10) {
  onnx::ModelProto m = EmptyModel(opset, ir);
  auto* g = m.mutable_graph();
  g->set_name("chain");
  AddValueInfo(g->mutable_input(), "x", type);
  AddValueInfo(g->mutable_output(), "y", type);
  std::string prev = "x";
  for (int i = 0; i < length; ++i) {
    const std::string out = i + 1 == length ? "y" : "t" + std::to_string(i);
    AddNode(g, "Identity", {prev}, {out}, "id" + std::to_string(i));
    prev = out;
  }
  return m;
}

// tensor(elem) without a shape field (rank unknown).
inline onnx::TypeProto Unshaped(ElementType type) {
  onnx::TypeProto t;
  t.mutable_tensor_type()->set_elem_type(static_cast<int32_t>(type));
  return t;
}

struct Io {
  std::string name;
  onnx::TypeProto type;
};

// One node `op` (named "n0") at `opset` whose inputs are graph inputs (an empty name is an
// omitted input) and whose outputs are graph outputs.
inline onnx::ModelProto OneNode(const std::string& op, int opset, const std::vector<Io>& inputs,
                                const std::vector<Io>& outputs) {
  onnx::ModelProto m = EmptyModel(opset, 10);
  auto* g = m.mutable_graph();
  g->set_name("one_node");
  std::vector<std::string> in_names, out_names;
  for (const Io& io : inputs) {
    in_names.push_back(io.name);
    if (!io.name.empty()) AddValueInfo(g->mutable_input(), io.name, io.type);
  }
  for (const Io& io : outputs) {
    out_names.push_back(io.name);
    AddValueInfo(g->mutable_output(), io.name, io.type);
  }
  AddNode(g, op, in_names, out_names, "n0");
  return m;
}

// The status of a Session creation (OK when it succeeds); check it with EXPECT_STATUS.
inline Status PlanError(const onnx::ModelProto& m, const SessionOptions& options = {}) {
  return CreateSessionFromProto(m, "", options).status();
}

inline Session MustCreate(const onnx::ModelProto& m) {
  auto s = CreateSessionFromProto(m);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

template <typename T>
Value MakeTensorOf(ElementType type, std::vector<int64_t> shape, std::vector<T> values) {
  return Value::MakeTensor(type, std::move(shape),
                           Buffer::CopyOf(std::as_bytes(std::span(values))).value())
      .value();
}

inline Value Floats(std::vector<int64_t> shape, std::vector<float> values) {
  return MakeTensorOf(ElementType::kFloat, std::move(shape), std::move(values));
}

inline void SetGraphAttribute(onnx::NodeProto* node, const std::string& name,
                              const onnx::GraphProto& g) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

// c: bool, x, y: float[n] -> If(c; then: Identity(x), else: Identity(y)) -> out (opset 16).
inline onnx::ModelProto IfOuterIdentityModel(int64_t n) {
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("if_outer_identity");
  AddValueInfo(g->mutable_input(), "c", TensorTypeProto(ElementType::kBool, {}));
  AddValueInfo(g->mutable_input(), "x", TensorTypeProto(ElementType::kFloat, {n}));
  AddValueInfo(g->mutable_input(), "y", TensorTypeProto(ElementType::kFloat, {n}));
  AddValueInfo(g->mutable_output(), "out", TensorTypeProto(ElementType::kFloat, {n}));
  auto* node = AddNode(g, "If", {"c"}, {"out"}, "if0");
  for (const char* branch : {"then_branch", "else_branch"}) {
    onnx::GraphProto b;
    b.set_name(branch);
    const bool then = branch[0] == 't';
    b.add_output()->set_name(then ? "t_out" : "e_out");
    AddNode(&b, "Identity", {then ? "x" : "y"}, {then ? "t_out" : "e_out"});
    SetGraphAttribute(node, branch, b);
  }
  return m;
}

// M: int64, x: float[n] -> Loop(M; carried: `carried`) -> out, where the body either inserts x
// into a carried sequence (`insert`: the initial value is SequenceEmpty) or passes x through
// Identity (a carried tensor).
inline onnx::ModelProto LoopModel(bool insert, int64_t n) {
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name(insert ? "loop_seq_insert" : "loop_carried");
  const onnx::TypeProto x_type = TensorTypeProto(ElementType::kFloat, {n});
  onnx::TypeProto unshaped;
  unshaped.mutable_tensor_type()->set_elem_type(static_cast<int32_t>(ElementType::kFloat));
  const onnx::TypeProto carried_type = insert ? SequenceTypeProto(unshaped) : x_type;
  AddValueInfo(g->mutable_input(), "M", TensorTypeProto(ElementType::kInt64, {}));
  AddValueInfo(g->mutable_input(), "x", x_type);
  AddValueInfo(g->mutable_output(), "out", carried_type);
  std::string initial = "x";
  if (insert) {
    AddNode(g, "SequenceEmpty", {}, {"empty"});
    initial = "empty";
  }
  auto* loop = AddNode(g, "Loop", {"M", "", initial}, {"out"}, "loop0");
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "i", TensorTypeProto(ElementType::kInt64, {}));
  AddValueInfo(body.mutable_input(), "c", TensorTypeProto(ElementType::kBool, {}));
  AddValueInfo(body.mutable_input(), "v_in", carried_type);
  body.add_output()->set_name("c_out");
  body.add_output()->set_name("v_out");
  AddNode(&body, "Identity", {"c"}, {"c_out"});
  if (insert) {
    AddNode(&body, "SequenceInsert", {"v_in", "x"}, {"v_out"});
  } else {
    AddNode(&body, "Identity", {"v_in"}, {"v_out"});
  }
  SetGraphAttribute(loop, "body", body);
  return m;
}

// Protobuf's varint encoding of `v`.
inline std::string Varint(uint64_t v) {
  std::string out;
  for (;; v >>= 7) {
    if (v < 0x80) {
      out += static_cast<char>(v);
      return out;
    }
    out += static_cast<char>(v | 0x80);
  }
}

// A ModelProto over 2 GiB written sparsely (the hole costs no disk): the main graph (`rest`
// without initializers) gets one uint8 initializer "w" of `n` zero bytes in raw_data, written as
// a hole. Returns the file's size (0 when a write failed).
inline uint64_t WriteSparseModel(const std::string& path, const onnx::ModelProto& model_head,
                                 const onnx::GraphProto& rest, uint64_t n) {
  onnx::TensorProto head;
  head.set_name("w");
  head.set_data_type(onnx::TensorProto::UINT8);
  head.add_dims(static_cast<int64_t>(n));
  const std::string tensor = head.SerializeAsString() + "\x4a" + Varint(n);  // raw_data: 9
  const std::string rest_bytes = rest.SerializeAsString();
  const std::string graph_head = "\x2a" + Varint(tensor.size() + n) + tensor;  // initializer: 5
  const std::string file_head = model_head.SerializeAsString() + "\x3a" +      // graph: 7
                                Varint(graph_head.size() + n + rest_bytes.size()) + graph_head;
  const int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  if (fd < 0) return 0;
  const bool ok =
      pwrite(fd, file_head.data(), file_head.size(), 0) == static_cast<ssize_t>(file_head.size()) &&
      pwrite(fd, rest_bytes.data(), rest_bytes.size(), static_cast<off_t>(file_head.size() + n)) ==
          static_cast<ssize_t>(rest_bytes.size());
  close(fd);
  return ok ? file_head.size() + n + rest_bytes.size() : 0;
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

inline std::vector<std::byte> Serialize(const onnx::ModelProto& m) {
  std::string s = m.SerializeAsString();
  auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

}  // namespace idem::testing

#endif  // IDEM_TESTS_TEST_MODELS_H_
