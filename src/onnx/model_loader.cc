#include "src/onnx/model_loader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <google/protobuf/arena.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <limits>

#include "src/core/block_cache.h"
#include "src/core/huge_pages.h"
#include "src/core/text.h"
#include "src/onnx/proto_convert.h"
#include "src/onnx/wire_walker.h"

namespace idem {
namespace {

// The model's descriptive fields (informational; validated by nothing).
ModelMetadata MetadataOf(const onnx::ModelProto& model) {
  ModelMetadata m;
  m.producer_name = model.producer_name();
  m.producer_version = model.producer_version();
  m.domain = model.domain();
  m.model_version = model.model_version();
  m.doc_string = model.doc_string();
  m.graph_name = model.graph().name();
  m.graph_doc_string = model.graph().doc_string();
  for (const auto& prop : model.metadata_props()) {
    m.metadata_props.emplace_back(prop.key(), prop.value());
  }
  return m;
}

Status Bad(std::string message) { return Status(StatusCode::kInvalidModel, std::move(message)); }

// Whether a value info says anything about its type: exporters (PyTorch's If branches) write an
// empty TypeProto (`type {}`) for outputs they leave to inference, which means the same as none.
bool HasTypeValue(const onnx::ValueInfoProto& p) {
  return p.has_type() && p.type().value_case() != onnx::TypeProto::VALUE_NOT_SET;
}

Result<ValueInfo> ConvertValueInfo(const onnx::ValueInfoProto& p, const Limits& limits,
                                   std::string_view role) {
  if (!p.has_type()) {
    return Bad(fmt::format("{} {} has no type", role, QuoteName(p.name())));
  }
  auto type = TypeFromProto(p.type(), limits);
  if (!type.ok()) {
    return std::move(type).take_status().WithContext(
        fmt::format("{} {}", role, QuoteName(p.name())));
  }
  return ValueInfo{p.name(), std::move(type).value()};
}

// Counts shared by a graph and all its subgraphs while one model loads: max_nodes and max_values
// bound the whole model, not each graph.
struct GraphLoadState {
  uint64_t nodes = 0;
  uint64_t values = 0;
};

Status ConvertGraph(onnx::GraphProto& g, const LoadContext& context, int depth,
                    GraphLoadState& state, GraphDef& graph, const CompactModel* streamed = nullptr);

// A GRAPH attribute's body. `depth` is the nesting of the graph holding the attribute (0 for the
// main graph); recursion is bounded by Limits::max_graph_depth.
Result<std::shared_ptr<const GraphDef>> ConvertSubgraph(onnx::GraphProto& g,
                                                        const LoadContext& context, int depth,
                                                        GraphLoadState& state) {
  if (depth + 1 > context.limits.max_graph_depth) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("subgraphs nest deeper than max_graph_depth {}",
                              context.limits.max_graph_depth));
  }
  auto sub = std::make_shared<GraphDef>();
  sub->name = g.name();
  Status status = ConvertGraph(g, context, depth + 1, state, *sub);
  if (!status.ok()) {
    return std::move(status).WithContext(fmt::format("subgraph {}", QuoteName(g.name())));
  }
  return std::shared_ptr<const GraphDef>(std::move(sub));
}

Result<Attribute> ConvertAttribute(onnx::AttributeProto& p, const LoadContext& context, int depth,
                                   GraphLoadState& state) {
  Attribute a;
  a.name = p.name();
  switch (p.type()) {
    case onnx::AttributeProto::INT:
      a.kind = Attribute::Kind::kInt;
      a.i = p.i();
      break;
    case onnx::AttributeProto::FLOAT:
      a.kind = Attribute::Kind::kFloat;
      a.f = p.f();
      break;
    case onnx::AttributeProto::STRING:
      a.kind = Attribute::Kind::kString;
      a.s = p.s();
      break;
    case onnx::AttributeProto::INTS:
      a.kind = Attribute::Kind::kInts;
      a.ints.assign(p.ints().begin(), p.ints().end());
      break;
    case onnx::AttributeProto::FLOATS:
      a.kind = Attribute::Kind::kFloats;
      a.floats.assign(p.floats().begin(), p.floats().end());
      break;
    case onnx::AttributeProto::STRINGS:
      a.kind = Attribute::Kind::kStrings;
      a.strings.assign(p.strings().begin(), p.strings().end());
      break;
    case onnx::AttributeProto::TYPE_PROTO: {
      a.kind = Attribute::Kind::kType;
      IDEM_ASSIGN_OR_RETURN(a.type, TypeFromProto(p.tp(), context.limits));
      break;
    }
    case onnx::AttributeProto::TENSOR: {
      a.kind = Attribute::Kind::kTensor;
      IDEM_ASSIGN_OR_RETURN(a.tensor, TensorFromProto(*p.mutable_t(), context));
      break;
    }
    case onnx::AttributeProto::GRAPH: {
      a.kind = Attribute::Kind::kGraph;
      IDEM_ASSIGN_OR_RETURN(a.graph, ConvertSubgraph(*p.mutable_g(), context, depth, state));
      break;
    }
    case onnx::AttributeProto::GRAPHS: {
      a.kind = Attribute::Kind::kGraphs;
      for (auto& g : *p.mutable_graphs()) {
        IDEM_ASSIGN_OR_RETURN(auto sub, ConvertSubgraph(g, context, depth, state));
        a.graphs.push_back(std::move(sub));
      }
      break;
    }
    default:
      a.kind = Attribute::Kind::kOther;
      a.other = onnx::AttributeProto::AttributeType_Name(p.type());
      if (!p.ref_attr_name().empty()) a.other = "reference to " + p.ref_attr_name();
      break;
  }
  return a;
}

std::string NormaliseDomain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

}  // namespace

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Result<std::string> ReadFileBytes(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK so a FIFO given as a model cannot hang us; then insist on a regular file.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return Status(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                  fmt::format("{}: cannot open: {}", path, strerror(errno)));
  }
  struct stat st {};
  std::string bytes;
  Status status;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    status = Status(StatusCode::kIoError, fmt::format("{}: not a regular file", path));
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    status = Status(
        StatusCode::kResourceExhausted,
        fmt::format("{}: {} bytes exceed the limit of {} bytes", path, st.st_size, max_bytes));
  } else {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        status = Status(StatusCode::kIoError, fmt::format("{}: read failed", path));
        break;
      }
      done += static_cast<size_t>(n);
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return bytes;
}

namespace {

// `streamed`: the main graph's nodes as compact bytes (the graph in `model` has none then).
Result<GraphDef> ConvertModel(onnx::ModelProto& model, const LoadContext& context,
                              const CompactModel* streamed = nullptr) {
  GraphDef graph;
  graph.ir_version = model.ir_version();
  graph.metadata = MetadataOf(model);
  if (graph.ir_version < kMinIrVersion || graph.ir_version > kMaxIrVersion) {
    return Status(StatusCode::kUnsupported,
                  fmt::format("IR version {} is not supported (idem reads IR {} to {})",
                              graph.ir_version, kMinIrVersion, kMaxIrVersion));
  }
  for (const auto& opset : model.opset_import()) {
    const std::string domain = NormaliseDomain(opset.domain());
    auto [it, inserted] = graph.opsets.emplace(domain, opset.version());
    if (!inserted && it->second != opset.version()) {
      return Bad(fmt::format("opset_import lists domain {} twice ({} and {})",
                             QuoteName(opset.domain()), it->second, opset.version()));
    }
  }
  if (auto it = graph.opsets.find(""); it != graph.opsets.end()) {
    if (it->second < 1 || it->second > kMaxDefaultOpset) {
      return Status(StatusCode::kUnsupported,
                    fmt::format("default-domain opset {} is not supported (idem supports 1 to {}, "
                                "the newest ONNX defines)",
                                it->second, kMaxDefaultOpset));
    }
  }
  if (!model.has_graph()) return Bad("model has no graph");
  GraphLoadState state;
  IDEM_RETURN_IF_ERROR(ConvertGraph(*model.mutable_graph(), context, 0, state, graph, streamed));
  return graph;
}

Result<NodeDef> ConvertNode(onnx::NodeProto& p, size_t n, const LoadContext& context, int depth,
                            GraphLoadState& state) {
  NodeDef node;
  // Moved, not copied: the message is consumed.
  node.name = std::move(*p.mutable_name());
  node.op_type = std::move(*p.mutable_op_type());
  node.domain = NormaliseDomain(p.domain());
  node.inputs.assign(std::make_move_iterator(p.mutable_input()->begin()),
                     std::make_move_iterator(p.mutable_input()->end()));
  node.outputs.assign(std::make_move_iterator(p.mutable_output()->begin()),
                      std::make_move_iterator(p.mutable_output()->end()));
  for (auto& attribute : *p.mutable_attribute()) {
    auto converted = ConvertAttribute(attribute, context, depth, state);
    if (!converted.ok()) {
      return std::move(converted).take_status().WithContext(
          fmt::format("{}: attribute {}", node.Label(n), QuoteName(attribute.name())));
    }
    node.attributes.push_back(std::move(converted).value());
  }
  return node;
}

Status ConvertGraph(onnx::GraphProto& g, const LoadContext& context, int depth,
                    GraphLoadState& state, GraphDef& graph, const CompactModel* streamed) {
  const Limits& limits = context.limits;
  const bool subgraph = depth > 0;
  state.nodes += static_cast<uint64_t>(g.node_size()) + (streamed ? streamed->nodes.size() : 0);
  if (state.nodes > limits.max_nodes) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("{} nodes exceed max_nodes {}", state.nodes, limits.max_nodes));
  }
  state.values += static_cast<uint64_t>(g.input_size()) + g.output_size() + g.value_info_size() +
                  g.initializer_size();
  if (state.values > limits.max_values) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("{} values exceed max_values {}", state.values, limits.max_values));
  }
  if (g.sparse_initializer_size() > 0) {
    return Status(StatusCode::kUnsupported, "sparse initializers are not supported");
  }
  // Subgraph inputs and outputs may be untyped (exporters leave If branch outputs untyped; the
  // planner infers them from the owning node).
  for (const auto& p : g.input()) {
    if (subgraph && !HasTypeValue(p)) {
      graph.inputs.push_back({p.name(), Type()});
      graph.input_typed.resize(graph.inputs.size(), true);
      graph.input_typed.back() = false;
      continue;
    }
    IDEM_ASSIGN_OR_RETURN(ValueInfo info, ConvertValueInfo(p, limits, "graph input"));
    graph.inputs.push_back(std::move(info));
  }
  if (subgraph) graph.input_typed.resize(graph.inputs.size(), true);
  for (const auto& p : g.output()) {
    if (subgraph && !HasTypeValue(p)) {
      graph.outputs.push_back({p.name(), Type()});
      graph.output_typed.resize(graph.outputs.size(), true);
      graph.output_typed.back() = false;
      continue;
    }
    IDEM_ASSIGN_OR_RETURN(ValueInfo info, ConvertValueInfo(p, limits, "graph output"));
    graph.outputs.push_back(std::move(info));
  }
  if (subgraph) graph.output_typed.resize(graph.outputs.size(), true);
  for (const auto& p : g.value_info()) {
    // value_info is advisory; an untyped entry says nothing.
    if (!HasTypeValue(p)) continue;
    IDEM_ASSIGN_OR_RETURN(ValueInfo info, ConvertValueInfo(p, limits, "value_info"));
    graph.value_infos.push_back(std::move(info));
  }
  for (auto& p : *g.mutable_initializer()) {
    if (p.name().empty()) return Bad("an initializer has no name");
    IDEM_ASSIGN_OR_RETURN(Value value, TensorFromProto(p, context, "initializer"));
    graph.initializers.push_back({p.name(), std::move(value)});
  }
  if (streamed == nullptr) {
    graph.nodes.reserve(static_cast<size_t>(g.node_size()));
    AdviseHugePages(graph.nodes.data(), graph.nodes.capacity() * sizeof(NodeDef));
    for (int n = 0; n < g.node_size(); ++n) {
      IDEM_ASSIGN_OR_RETURN(NodeDef node, ConvertNode(*g.mutable_node(n), static_cast<size_t>(n),
                                                      context, depth, state));
      graph.nodes.push_back(std::move(node));
    }
  } else {
    // One NodeProto, reused: parsed from each node's compact bytes, converted, cleared.
    graph.nodes.reserve(streamed->nodes.size());
    AdviseHugePages(graph.nodes.data(), graph.nodes.capacity() * sizeof(NodeDef));
    onnx::NodeProto p;
    for (size_t n = 0; n < streamed->nodes.size(); ++n) {
      const std::string_view bytes = streamed->Node(n);
      p.Clear();
      if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return Bad(
            fmt::format("not a valid ONNX model: protobuf parsing failed (node #{} does "
                        "not parse)",
                        n));
      }
      IDEM_ASSIGN_OR_RETURN(NodeDef node, ConvertNode(p, n, context, depth, state));
      graph.nodes.push_back(std::move(node));
    }
  }
  return {};
}

}  // namespace

Result<GraphDef> LoadGraphFromProto(onnx::ModelProto& model, const std::string& base_dir,
                                    const Limits& limits, const ExternalDataOptions& external) {
  // No wire walk here: the caller already holds the parsed message.
  return ConvertModel(model, LoadContext{base_dir, limits, external});
}

Result<GraphDef> LoadGraphFromProto(const onnx::ModelProto& model, const std::string& base_dir,
                                    const Limits& limits, const ExternalDataOptions& external) {
  onnx::ModelProto copy = model;
  return LoadGraphFromProto(copy, base_dir, limits, external);
}

namespace {

// `file_mapping`: `bytes` is a read-only private mapping of the model file (MapModelFile), whose
// pages the loader may drop from memory once it has copied what they hold. `writable`: bytes.data()
// is memory the loader alone owns (a file read into the heap), where misaligned raw_data may be
// moved into alignment (LoadContext::writable_model_bytes).
Result<GraphDef> LoadGraph(const Buffer& bytes, const std::string& base_dir, const Limits& limits,
                           const ExternalDataOptions& external, bool file_mapping,
                           std::byte* writable = nullptr) {
  if (bytes.size() > limits.max_model_bytes) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("model of {} bytes exceeds max_model_bytes {}", bytes.size(),
                              limits.max_model_bytes));
  }
  if (bytes.empty()) return Bad("the model is empty (0 bytes)");
  // Walk the wire first: limits are checked before anything is materialised, and protobuf only
  // parses the model without its raw_data payloads (which stay in `bytes`).
  auto compact = CompactModelBytes(bytes.bytes(), limits);
  if (!compact.ok()) {
    Status status = std::move(compact).take_status();
    if (status.code() != StatusCode::kInvalidModel) return status;
    return Bad(
        fmt::format("not a valid ONNX model: protobuf parsing failed ({} bytes; truncated "
                    "or not a ModelProto): {}",
                    bytes.size(), status.message()));
  }
  // On an arena: one model holds many small messages, which an arena allocates in blocks and
  // frees at once (a third of the time of parsing a many-node model goes to malloc and free).
  google::protobuf::ArenaOptions arena_options;
  arena_options.start_block_size = 64 << 10;
  arena_options.max_block_size = 1 << 20;
  google::protobuf::Arena arena(arena_options);
  onnx::ModelProto& model = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  {
    const std::string wire = std::move(compact->bytes);
    if (!model.ParseFromArray(wire.data(), static_cast<int>(wire.size()))) {
      return Bad(
          fmt::format("not a valid ONNX model: protobuf parsing failed ({} bytes; truncated "
                      "or not a ModelProto)",
                      bytes.size()));
    }
  }
  RawDataStats stats;
  LoadContext context{base_dir, limits, external};
  context.model_bytes = &bytes;
  context.raw_refs = compact->refs;
  context.raw_stats = &stats;
  context.model_is_file_mapping = file_mapping;
  std::vector<int8_t> shifts;
  if (writable != nullptr && writable == bytes.data()) {
    shifts.assign(compact->refs.size(), -1);
    context.writable_model_bytes = writable;
    context.raw_ref_shifts = &shifts;
  }
  auto graph = ConvertModel(model, context, &compact.value());
  if (!graph.ok()) return graph;
  graph->raw_bytes_in_place = stats.in_place;
  graph->raw_bytes_shifted = stats.shifted;
  graph->raw_bytes_copied = stats.copied;
  return graph;
}

}  // namespace

Result<GraphDef> LoadGraphFromBuffer(const Buffer& bytes, const std::string& base_dir,
                                     const Limits& limits, const ExternalDataOptions& external) {
  return LoadGraph(bytes, base_dir, limits, external, /*file_mapping=*/false);
}

Result<GraphDef> LoadGraphFromBytes(std::span<const std::byte> bytes, const std::string& base_dir,
                                    const Limits& limits, const ExternalDataOptions& external) {
  return LoadGraphFromBuffer(Buffer::Borrow(bytes.data(), bytes.size()), base_dir, limits,
                             external);
}

Result<Buffer> MapModelFile(const std::string& path, uint64_t max_bytes, bool copy,
                            std::byte** writable) {
  if (writable != nullptr) *writable = nullptr;
  // O_NONBLOCK so a FIFO given as a model cannot hang us; then insist on a regular file.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return Status(errno == ENOENT ? StatusCode::kNotFound : StatusCode::kIoError,
                  fmt::format("{}: cannot open: {}", path, strerror(errno)));
  }
  struct stat st {};
  Result<Buffer> result = Buffer();
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    result = Status(StatusCode::kIoError, fmt::format("{}: not a regular file", path));
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    result = Status(
        StatusCode::kResourceExhausted,
        fmt::format("{}: {} bytes exceed the limit of {} bytes", path, st.st_size, max_bytes));
  } else if (st.st_size == 0) {
    result = Buffer();  // LoadGraph says the model is empty
  } else if (!copy && static_cast<uint64_t>(st.st_size) > kReadWholeFileBytes) {
    result = Buffer::MapFile(fd, 0, static_cast<uint64_t>(st.st_size), path);
  } else {
    // Read once into aligned heap memory: values stay valid whatever happens to the file. For a
    // small model this is also the cheaper way in: a block from the cache and one read, where a
    // fresh mapping costs a page fault per few pages (plus the mapping's own set-up and removal),
    // each of which is dear under a hypervisor.
    std::byte* out = nullptr;
    result = block_cache::Allocate(static_cast<size_t>(st.st_size), &out, /*zeroed=*/false);
    size_t done = 0;
    while (result.ok() && done < static_cast<size_t>(st.st_size)) {
      const ssize_t n = read(fd, out + done, static_cast<size_t>(st.st_size) - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        result = Status(StatusCode::kIoError, fmt::format("{}: read failed", path));
        break;
      }
      done += static_cast<size_t>(n);
    }
    if (result.ok() && writable != nullptr) *writable = out;
  }
  close(fd);
  return result;
}

Result<GraphDef> LoadGraphFromFile(const std::string& path, const Limits& limits,
                                   const ExternalDataOptions& external) {
  // kCopy also copies the model file itself: its raw_data would otherwise point into a mapping
  // that a truncation of the file turns into SIGBUS.
  const bool copy = external.mode == ExternalDataMode::kCopy;
  std::byte* writable = nullptr;
  auto bytes = MapModelFile(path, limits.max_model_bytes, copy, &writable);
  if (!bytes.ok()) return std::move(bytes).take_status();
  auto graph = LoadGraph(bytes.value(), DirectoryOf(path), limits, external,
                         /*file_mapping=*/writable == nullptr && !bytes->empty(), writable);
  if (!graph.ok()) return std::move(graph).take_status().WithContext(path);
  graph->source = path;
  return graph;
}

}  // namespace idem
