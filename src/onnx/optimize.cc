// The Identity remover: analysis over every graph of the model (scopes), then one rewrite.
//
// Design (all iterative; the only depth is subgraph nesting, bounded by limits.max_graph_depth):
// - Scopes are the main graph, each graph attribute (any depth, any operator), each function body
//   and each training-info graph (children of the main graph: the algorithm graph reads the
//   inference graph's values). They are numbered in pre-order, so a scope's descendants are the
//   contiguous range (s, last_descendant].
// - Every definition (graph input, initializer, sparse initializer, node output; function input)
//   is a value. Every reference (node input, value_info, quantization annotation, graph output)
//   resolves statically to the innermost enclosing scope that defines its name, exactly as ONNX
//   scoping does, so a nested graph that shadows a name keeps its own value.
// - Removing an Identity merges two values (union-find). The merged class keeps one name: x's in
//   the "y is not an output" case, y's in the output case. At the end every recorded reference is
//   rewritten to its class's name, removed nodes and value_info entries are erased.
// - A rename to name n is refused when any scope nested below the graph defines n (it could
//   capture a reference); the set of names a nested scope defines only shrinks under the rewrite,
//   so checking against the input's names is safe.
#include "src/onnx/optimize.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "src/core/atomic_file.h"
#include "src/core/text.h"
#include "src/onnx/model_loader.h"
#include "src/onnx/wire_walker.h"

namespace idem {

std::string_view KeepRuleName(KeepRule rule) {
  switch (rule) {
    case KeepRule::kGraphInput:
      return "graph-input";
    case KeepRule::kInitializer:
      return "initializer";
    case KeepRule::kOuterScope:
      return "outer-scope";
    case KeepRule::kAlreadyOutput:
      return "already-output";
    case KeepRule::kNameCollision:
      return "name-collision";
    case KeepRule::kTypeMismatch:
      return "type-mismatch";
    case KeepRule::kNestedGraphOutput:
      return "nested-graph-output";
    case KeepRule::kAnnotations:
      return "annotations";
    case KeepRule::kShadowedByFunction:
      return "shadowed-by-function";
    case KeepRule::kGraphAttributeByReference:
      return "graph-attribute-by-reference";
    case KeepRule::kMalformed:
      return "malformed";
    case KeepRule::kMultiplyDefined:
      return "multiply-defined";
    case KeepRule::kUndefinedInput:
      return "undefined-input";
    case KeepRule::kUnsorted:
      return "unsorted";
    case KeepRule::kShardingSpec:
      return "sharding-spec";
    case KeepRule::kUnknownFields:
      return "unknown-fields";
  }
  return "?";
}

std::string_view KeepRuleDescription(KeepRule rule) {
  switch (rule) {
    case KeepRule::kGraphInput:
      return "y is a graph output and x an input of the same graph";
    case KeepRule::kInitializer:
      return "y is a graph output and x an initializer";
    case KeepRule::kOuterScope:
      return "y is a graph output and x a value of an enclosing graph (pass-through)";
    case KeepRule::kAlreadyOutput:
      return "y is a graph output and x already is one (or was taken by another output)";
    case KeepRule::kNameCollision:
      return "the rename would collide with a name defined in a nested graph";
    case KeepRule::kTypeMismatch:
      return "y is a graph output and the declared types of x and y differ";
    case KeepRule::kNestedGraphOutput:
      return "the name that would change is a nested graph's output";
    case KeepRule::kAnnotations:
      return "both x and y carry quantization annotations";
    case KeepRule::kShadowedByFunction:
      return "a model-local function named Identity replaces the operator";
    case KeepRule::kGraphAttributeByReference:
      return "the function body takes graph attributes by reference";
    case KeepRule::kMalformed:
      return "not one named input and one named output, has attributes, or y == x";
    case KeepRule::kMultiplyDefined:
      return "x or y is defined more than once";
    case KeepRule::kUndefinedInput:
      return "x is not defined in scope";
    case KeepRule::kUnsorted:
      return "x or y is used before its definition (graph not topologically sorted)";
    case KeepRule::kShardingSpec:
      return "a node's sharding spec (device_configurations) names the value that would be renamed";
    case KeepRule::kUnknownFields:
      return "the node has fields newer than idem's ONNX schema (e.g. overload, "
             "device_configurations)";
  }
  return "?";
}

namespace {

namespace pb = google::protobuf;
using NodeList = pb::RepeatedPtrField<onnx::NodeProto>;

enum class DefKind : uint8_t { kInput, kInitializer, kNode };

struct ValueRec {
  int32_t scope = 0;
  int32_t parent = 0;     // union-find parent (itself for a class representative)
  std::string_view name;  // the class's current name (valid for representatives)
  DefKind kind = DefKind::kNode;
  uint32_t defs = 1;
  int32_t def_node = -1;       // index of the defining node (node outputs)
  bool ill_ordered = false;    // used before its definition
  bool pinned = false;         // named by a sharding spec (a field this schema does not know)
  bool is_output = false;      // an output of its own scope
  bool nested_output = false;  // named directly as the output of a nested scope
  bool annotated = false;      // has a quantization annotation
  bool drop_value_info = false;
  bool decl_conflict = false;
  const onnx::TypeProto* decl = nullptr;  // a declared type (graph output or value_info)
};

struct ScopeRec {
  int32_t parent = -1;
  int32_t root = 0;
  int32_t depth = 0;
  int32_t host_node = -1;  // index of the node holding this graph in the parent scope
  int32_t last_descendant = 0;
  std::string label;  // this scope's own path component (see KeptIdentity::graph)
  onnx::GraphProto* graph = nullptr;
  onnx::FunctionProto* function = nullptr;
  bool by_reference = false;  // (root) a function body using ref_attr_name graph attributes
  std::unordered_map<std::string_view, int32_t> defs;
  NodeList* nodes() const { return graph ? graph->mutable_node() : function->mutable_node(); }
};

struct Occurrence {
  std::string* text;
  int32_t value;
  int32_t scope;
  int32_t node;  // -1 when not in a node
};

// A value_info entry: graph->value_info(index), or, for a function, the ValueInfoProto parsed
// from unknown field `index` (FunctionProto.value_info = 12, newer than this schema).
struct InfoOccurrence {
  int32_t scope;
  int32_t index;
  int32_t value;
  onnx::ValueInfoProto* parsed = nullptr;  // function entries only
};

// FunctionProto.value_info (ONNX >= 1.15) is field 12; this build's schema keeps it as an unknown
// field, so it is parsed here to keep the value_info rules for function bodies too.
constexpr int kFunctionValueInfoField = 12;

// NodeProto.device_configurations (IR >= 11) = 10: NodeDeviceConfigurationProto, whose
// sharding_spec (2) is a ShardingSpecProto whose tensor_name (1) names one of the node's values.
// Unknown to this schema; read (never rewritten) so such names are not renamed.
constexpr int kNodeDeviceConfigurationsField = 10;
constexpr int kShardingSpecField = 2;
constexpr int kShardingTensorNameField = 1;

template <typename F>
void ForEachLengthDelimited(const pb::UnknownFieldSet& set, int number, F&& f) {
  for (int i = 0; i < set.field_count(); ++i) {
    const pb::UnknownField& field = set.field(i);
    if (field.number() == number && field.type() == pb::UnknownField::TYPE_LENGTH_DELIMITED) {
      f(field.length_delimited());
    }
  }
}

// The tensor names of a node's sharding specs.
std::vector<std::string> ShardedTensorNames(const onnx::NodeProto& node) {
  std::vector<std::string> names;
  ForEachLengthDelimited(
      node.unknown_fields(), kNodeDeviceConfigurationsField, [&](const std::string& config_bytes) {
        pb::UnknownFieldSet config;
        if (!config.ParseFromString(config_bytes)) return;
        ForEachLengthDelimited(config, kShardingSpecField, [&](const std::string& spec_bytes) {
          pb::UnknownFieldSet spec;
          if (!spec.ParseFromString(spec_bytes)) return;
          ForEachLengthDelimited(spec, kShardingTensorNameField,
                                 [&](const std::string& name) { names.push_back(name); });
        });
      });
  return names;
}

struct Candidate {
  int32_t scope;
  int32_t node;
  int32_t x = -1;  // the value input 0 resolves to (-1: none)
  int32_t y = -1;  // the value output 0 defines (-1: none)
};

// The nested scopes (pre-order numbers, ascending) defining one name and how many definitions of
// it each still has; a Fenwick tree over the counts answers "defined in (s, last]" in O(log n)
// while renames remove definitions.
struct NameDefs {
  std::vector<int32_t> scopes;
  std::vector<int32_t> live;
  std::vector<int32_t> tree;  // Fenwick tree over `live` (1-based)

  void Build() {
    tree.assign(live.size() + 1, 0);
    for (size_t i = 0; i < live.size(); ++i) Add(i, live[i]);
  }
  void Add(size_t i, int32_t delta) {
    for (size_t k = i + 1; k < tree.size(); k += k & (~k + 1)) tree[k] += delta;
  }
  int32_t Prefix(size_t n) const {  // sum of live[0..n)
    int32_t sum = 0;
    for (size_t k = n; k > 0; k -= k & (~k + 1)) sum += tree[k];
    return sum;
  }
};

struct Pending {
  onnx::GraphProto* graph;
  onnx::FunctionProto* function;
  int32_t parent;
  int32_t depth;
  std::string label;
  int32_t host_node = -1;
};

// Names in report paths are clipped so a path costs O(depth), not O(depth x name length).
// The cut backs off to a UTF-8 character boundary: a path cut inside a character is invalid UTF-8
// (Python's idem.optimize then failed with UnicodeDecodeError on a valid model).
std::string Clip(std::string_view text, size_t max = 64) {
  if (text.size() <= max) return std::string(text);
  size_t n = max;
  for (int back = 0; back < 3 && n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80;
       ++back) {
    --n;
  }
  return std::string(text.substr(0, n)) + "...";
}

bool IsDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

bool IsExternal(const onnx::TensorProto& t) {
  return t.data_location() == onnx::TensorProto::EXTERNAL;
}

std::string ExternalLocation(const onnx::TensorProto& t) {
  for (const auto& e : t.external_data()) {
    if (e.key() == "location") return e.value();
  }
  return "";
}

class Optimizer {
 public:
  Optimizer(onnx::ModelProto& model, const OptimizeOptions& options)
      : model_(model), options_(options) {}

  Result<ProtoOptimizeResult> Run() {
    for (const auto& f : model_.functions()) {
      if (f.name() == "Identity" && IsDefaultDomain(f.domain())) shadowed_ = true;
    }
    IDEM_RETURN_IF_ERROR(Walk());
    for (int32_t s = static_cast<int32_t>(scopes_.size()) - 1; s >= 0; --s) {
      const int32_t p = scopes_[s].parent;
      if (p >= 0)
        scopes_[p].last_descendant =
            std::max(scopes_[p].last_descendant, scopes_[s].last_descendant);
    }
    for (auto& [name, defs] : nested_defs_) defs.Build();
    // Innermost scopes first (descending pre-order number: children follow their parent), nodes
    // in order within a scope: a graph's collision checks then see its nested graphs' final names.
    for (size_t end = candidates_.size(); end > 0;) {
      size_t begin = end;
      while (begin > 0 && candidates_[begin - 1].scope == candidates_[end - 1].scope) --begin;
      for (size_t i = begin; i < end; ++i) Decide(candidates_[i]);
      end = begin;
    }
    // Report in file order (scope pre-order, then node order).
    std::stable_sort(kept_.begin(), kept_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [key, kept] : kept_) result_.report.kept_nodes.push_back(std::move(kept));
    if (result_.report.removed > 0) Apply();
    result_.report.kept = result_.report.kept_nodes.size();
    return std::move(result_);
  }

 private:
  // ---- analysis ----

  Status Walk() {
    std::vector<Pending> stack;
    for (int i = model_.functions_size() - 1; i >= 0; --i) {
      onnx::FunctionProto* f = model_.mutable_functions(i);
      stack.push_back(
          {nullptr, f, -1, 0, fmt::format("function {}:{}", Clip(f->domain()), Clip(f->name()))});
    }
    if (model_.has_graph()) stack.push_back({model_.mutable_graph(), nullptr, -1, 0, "graph"});
    while (!stack.empty()) {
      Pending p = std::move(stack.back());
      stack.pop_back();
      if (p.depth > options_.limits.max_graph_depth) {
        return Status(StatusCode::kResourceExhausted,
                      fmt::format("{}/{}: subgraphs nested deeper than max_graph_depth {}",
                                  PathOf(p.parent), p.label, options_.limits.max_graph_depth));
      }
      const NodeList& nodes = p.graph ? p.graph->node() : p.function->node();
      total_nodes_ += static_cast<uint64_t>(nodes.size());
      if (total_nodes_ > options_.limits.max_nodes || scopes_.size() >= options_.limits.max_nodes) {
        return Status(StatusCode::kResourceExhausted,
                      fmt::format("{} nodes in {} graphs exceed max_nodes {}", total_nodes_,
                                  scopes_.size() + 1, options_.limits.max_nodes));
      }
      const int32_t s = static_cast<int32_t>(scopes_.size());
      ScopeRec& scope = scopes_.emplace_back();
      scope.parent = p.parent;
      scope.root = p.parent < 0 ? s : scopes_[p.parent].root;
      scope.depth = p.depth;
      scope.host_node = p.host_node;
      scope.last_descendant = s;
      scope.label = std::move(p.label);
      scope.graph = p.graph;
      scope.function = p.function;
      std::vector<Pending> children;
      Visit(s, &children);
      if (s == 0 && p.graph != nullptr && p.graph == model_.mutable_graph()) {
        for (int i = 0; i < model_.training_info_size(); ++i) {
          onnx::TrainingInfoProto* t = model_.mutable_training_info(i);
          if (t->has_initialization()) {
            children.push_back({t->mutable_initialization(), nullptr, s, 1,
                                fmt::format("training_info[{}].initialization", i), INT32_MAX});
          }
          if (t->has_algorithm()) {
            children.push_back({t->mutable_algorithm(), nullptr, s, 1,
                                fmt::format("training_info[{}].algorithm", i), INT32_MAX});
          }
        }
      }
      for (auto it = children.rbegin(); it != children.rend(); ++it) {
        stack.push_back(std::move(*it));
      }
    }
    return {};
  }

  void NoteTensor(const onnx::TensorProto& t) {
    if (!IsExternal(t)) return;
    if (!result_.external_data) result_.external_data.emplace(t.name(), ExternalLocation(t));
    std::string location = ExternalLocation(t);
    if (external_seen_.insert(location).second) {
      result_.external_locations.push_back(std::move(location));
    }
  }

  void AddDef(int32_t s, const std::string& name, DefKind kind, std::string* slot, int32_t node) {
    if (name.empty()) return;
    ScopeRec& scope = scopes_[s];
    const int32_t id = static_cast<int32_t>(values_.size());
    auto [it, inserted] = scope.defs.emplace(std::string_view(name), id);
    if (inserted) {
      ValueRec& v = values_.emplace_back();
      v.scope = s;
      v.parent = id;
      v.name = name;
      v.kind = kind;
      v.def_node = node;
      // Only nested scopes can capture an outer reference: the root's names are not indexed.
      if (scope.parent >= 0) {
        // A name is one value per scope: one live entry per (name, scope), in pre-order.
        NameDefs& list = nested_defs_[std::string_view(name)];
        list.scopes.push_back(s);
        list.live.push_back(1);
      }
    } else {
      ValueRec& v = values_[it->second];
      // A graph input with an initializer of the same name is one value (a default).
      const bool default_of_input = v.kind == DefKind::kInput && kind == DefKind::kInitializer;
      if (!default_of_input) ++v.defs;
    }
    if (slot != nullptr) occurrences_.push_back({slot, it->second, s, node});
  }

  int32_t Resolve(int32_t s, std::string_view name) const {
    for (int32_t t = s; t >= 0; t = scopes_[t].parent) {
      const auto& defs = scopes_[t].defs;
      if (auto it = defs.find(name); it != defs.end()) return it->second;
    }
    return -1;
  }

  // Resolve for a read at node `position` of scope s (INT32_MAX: the graph's outputs). A read that
  // comes before the definition, in s or through the nodes holding the nested graphs, marks the
  // value: name-based and position-based readings of such a graph may differ.
  int32_t Use(int32_t s, std::string_view name, int32_t position) {
    for (int32_t t = s; t >= 0; t = scopes_[t].parent) {
      const auto& defs = scopes_[t].defs;
      if (auto it = defs.find(name); it != defs.end()) {
        ValueRec& v = values_[it->second];
        if (v.kind == DefKind::kNode && v.def_node >= position) v.ill_ordered = true;
        return it->second;
      }
      position = scopes_[t].host_node;
    }
    return -1;
  }

  void AddDecl(int32_t v, const onnx::TypeProto& type) {
    ValueRec& rec = values_[v];
    if (rec.decl == nullptr) {
      rec.decl = &type;
    } else if (!rec.decl_conflict && rec.decl->SerializeAsString() != type.SerializeAsString()) {
      rec.decl_conflict = true;
    }
  }

  static std::string NodeLabel(const onnx::NodeProto& n, int index) {
    return n.name().empty() ? fmt::format("#{}", index) : n.name();
  }

  void Visit(int32_t s, std::vector<Pending>* children) {
    ScopeRec& scope = scopes_[s];
    NodeList* nodes = scope.nodes();
    scope.defs.reserve(static_cast<size_t>(nodes->size()) +
                       (scope.graph ? scope.graph->input_size() + scope.graph->initializer_size()
                                    : scope.function->input_size()));
    // Definitions first: a scope's own names win over enclosing ones for all its references.
    if (scope.graph != nullptr) {
      onnx::GraphProto* g = scope.graph;
      for (const auto& in : g->input()) AddDef(s, in.name(), DefKind::kInput, nullptr, -1);
      for (const auto& init : g->initializer()) {
        AddDef(s, init.name(), DefKind::kInitializer, nullptr, -1);
        NoteTensor(init);
      }
      for (const auto& sparse : g->sparse_initializer()) {
        AddDef(s, sparse.values().name(), DefKind::kInitializer, nullptr, -1);
        NoteTensor(sparse.values());
        NoteTensor(sparse.indices());
      }
    } else {
      for (const auto& in : scope.function->input()) {
        AddDef(s, in, DefKind::kInput, nullptr, -1);
      }
    }
    for (int n = 0; n < nodes->size(); ++n) {
      onnx::NodeProto* node = nodes->Mutable(n);
      for (int k = 0; k < node->output_size(); ++k) {
        AddDef(s, node->output(k), DefKind::kNode, node->mutable_output(k), n);
      }
    }
    // References.
    for (int n = 0; n < nodes->size(); ++n) {
      onnx::NodeProto* node = nodes->Mutable(n);
      int32_t first_input = -1;
      for (int k = 0; k < node->input_size(); ++k) {
        if (node->input(k).empty()) continue;
        const int32_t v = Use(s, node->input(k), n);
        if (k == 0) first_input = v;
        if (v >= 0) occurrences_.push_back({node->mutable_input(k), v, s, n});
      }
      if (node->unknown_fields().field_count() > 0) {
        for (const std::string& name : ShardedTensorNames(*node)) {
          const int32_t v = Resolve(s, name);
          if (v >= 0) values_[v].pinned = true;
        }
      }
      if (node->op_type() == "Identity" && IsDefaultDomain(node->domain())) {
        const int32_t y = node->output_size() > 0 && !node->output(0).empty()
                              ? scopes_[s].defs.find(node->output(0))->second
                              : -1;
        candidates_.push_back({s, n, first_input, y});
      }
      for (int a = 0; a < node->attribute_size(); ++a) {
        onnx::AttributeProto* attr = node->mutable_attribute(a);
        if (!attr->ref_attr_name().empty() && (attr->type() == onnx::AttributeProto::GRAPH ||
                                               attr->type() == onnx::AttributeProto::GRAPHS)) {
          scopes_[scopes_[s].root].by_reference = true;
        }
        if (attr->has_t()) NoteTensor(attr->t());
        for (const auto& t : attr->tensors()) NoteTensor(t);
        if (attr->has_sparse_tensor()) {
          NoteTensor(attr->sparse_tensor().values());
          NoteTensor(attr->sparse_tensor().indices());
        }
        for (const auto& st : attr->sparse_tensors()) {
          NoteTensor(st.values());
          NoteTensor(st.indices());
        }
        const std::string prefix =
            attr->has_g() || attr->graphs_size() > 0
                ? fmt::format("{}.{}", Clip(NodeLabel(*node, n)), Clip(attr->name()))
                : std::string();
        if (attr->has_g()) {
          children->push_back({attr->mutable_g(), nullptr, s, scopes_[s].depth + 1, prefix, n});
        }
        for (int k = 0; k < attr->graphs_size(); ++k) {
          children->push_back({attr->mutable_graphs(k), nullptr, s, scopes_[s].depth + 1,
                               fmt::format("{}[{}]", prefix, k), n});
        }
      }
    }
    auto note_output = [&](const std::string& name, const onnx::ValueInfoProto* info) {
      const int32_t v = Use(s, name, INT32_MAX);
      if (v < 0) return;
      if (values_[v].scope == s) {
        values_[v].is_output = true;
        if (info != nullptr && info->has_type()) AddDecl(v, info->type());
      } else {
        values_[v].nested_output = true;
      }
    };
    if (scopes_[s].graph != nullptr) {
      onnx::GraphProto* g = scopes_[s].graph;
      for (const auto& out : g->output()) note_output(out.name(), &out);
      for (int i = 0; i < g->value_info_size(); ++i) {
        const onnx::ValueInfoProto& info = g->value_info(i);
        const int32_t v = Resolve(s, info.name());
        if (v < 0) continue;
        infos_.push_back({s, i, v});
        if (info.has_type()) AddDecl(v, info.type());
      }
      for (int i = 0; i < g->quantization_annotation_size(); ++i) {
        onnx::TensorAnnotation* a = g->mutable_quantization_annotation(i);
        const int32_t v = Resolve(s, a->tensor_name());
        if (v < 0) continue;
        values_[v].annotated = true;
        occurrences_.push_back({a->mutable_tensor_name(), v, s, -1});
      }
    } else {
      onnx::FunctionProto* f = scopes_[s].function;
      for (const auto& out : f->output()) note_output(out, nullptr);
      const pb::UnknownFieldSet& unknown = f->unknown_fields();
      for (int i = 0; i < unknown.field_count(); ++i) {
        const pb::UnknownField& field = unknown.field(i);
        if (field.number() != kFunctionValueInfoField ||
            field.type() != pb::UnknownField::TYPE_LENGTH_DELIMITED) {
          continue;
        }
        auto& info = parsed_infos_.emplace_back(std::make_unique<onnx::ValueInfoProto>());
        if (!info->ParseFromString(field.length_delimited())) continue;  // left as it is
        const int32_t v = Resolve(s, info->name());
        if (v < 0) continue;
        infos_.push_back({s, i, v, info.get()});
        if (info->has_type()) AddDecl(v, info->type());
      }
    }
  }

  // "graph/if0.then_branch/...": labels from the root down (at most max_graph_depth + 1).
  std::string PathOf(int32_t s) const {
    std::vector<const std::string*> labels;
    for (int32_t t = s; t >= 0; t = scopes_[t].parent) {
      labels.push_back(&scopes_[t].label);
      if (scopes_[t].host_node == INT32_MAX) break;  // training_info[i].*: named from the model
    }
    std::string path;
    for (auto it = labels.rbegin(); it != labels.rend(); ++it) {
      if (!path.empty()) path += '/';
      path += **it;
    }
    return path;
  }

  // ---- decisions ----

  int32_t Find(int32_t v) {
    int32_t root = v;
    while (values_[root].parent != root) root = values_[root].parent;
    while (values_[v].parent != root) {
      const int32_t next = values_[v].parent;
      values_[v].parent = root;
      v = next;
    }
    return root;
  }

  // Whether a scope strictly below `s` (currently) defines `name`: it could capture a renamed
  // reference. Scopes are decided innermost first, so below `s` every rename is already done.
  bool DefinedBelow(int32_t s, std::string_view name) const {
    const int32_t last = scopes_[s].last_descendant;
    if (last == s) return false;
    auto it = nested_defs_.find(name);
    if (it == nested_defs_.end()) return false;
    const auto& scopes = it->second.scopes;
    const size_t lo = std::upper_bound(scopes.begin(), scopes.end(), s) - scopes.begin();
    const size_t hi = std::upper_bound(scopes.begin(), scopes.end(), last) - scopes.begin();
    return it->second.Prefix(hi) - it->second.Prefix(lo) > 0;
  }

  // `name` is no longer defined in scope s (its value was merged away or renamed).
  void Undefine(int32_t s, std::string_view name) {
    if (scopes_[s].parent < 0) return;  // roots are not indexed
    auto it = nested_defs_.find(name);
    if (it == nested_defs_.end()) return;
    const auto& scopes = it->second.scopes;
    const size_t i = std::lower_bound(scopes.begin(), scopes.end(), s) - scopes.begin();
    if (i == scopes.size() || scopes[i] != s || it->second.live[i] == 0) return;
    --it->second.live[i];
    it->second.Add(i, -1);
  }

  void Keep(const Candidate& c, KeepRule rule) {
    const onnx::NodeProto& node = scopes_[c.scope].nodes()->Get(c.node);
    kept_.push_back(
        {{c.scope, c.node}, {PathOf(c.scope), node.name(), static_cast<size_t>(c.node), rule}});
  }

  void Remove(const Candidate& c) {
    ++result_.report.removed;
    deleted_nodes_.push_back(c);
  }

  void Decide(const Candidate& c) {
    const ScopeRec& scope = scopes_[c.scope];
    const onnx::NodeProto& node = scope.nodes()->Get(c.node);
    if (shadowed_) return Keep(c, KeepRule::kShadowedByFunction);
    if (scopes_[scope.root].by_reference) return Keep(c, KeepRule::kGraphAttributeByReference);
    if (node.input_size() != 1 || node.output_size() != 1 || node.input(0).empty() ||
        node.output(0).empty() || node.attribute_size() != 0 || node.input(0) == node.output(0)) {
      return Keep(c, KeepRule::kMalformed);
    }
    // A field idem's schema does not know may change what this node means (an overload picks a
    // local function; a device configuration may move the value to another pipeline stage):
    // deleting the node would drop it, so a node idem cannot fully read stays.
    if (!node.unknown_fields().empty()) return Keep(c, KeepRule::kUnknownFields);
    const int32_t yv = c.y;
    const int32_t xv = c.x;
    if (xv < 0) return Keep(c, KeepRule::kUndefinedInput);
    if (values_[xv].defs > 1 || values_[yv].defs > 1) return Keep(c, KeepRule::kMultiplyDefined);
    const int32_t rx = Find(xv);
    const int32_t ry = Find(yv);
    if (rx == ry) return Keep(c, KeepRule::kMalformed);
    ValueRec& X = values_[rx];
    ValueRec& Y = values_[ry];
    if (values_[xv].ill_ordered || values_[yv].ill_ordered || X.ill_ordered || Y.ill_ordered) {
      return Keep(c, KeepRule::kUnsorted);
    }
    if (X.annotated && Y.annotated) return Keep(c, KeepRule::kAnnotations);
    if (!Y.is_output) {
      if (Y.pinned) return Keep(c, KeepRule::kShardingSpec);
      // Every reference to y becomes x's (current) name.
      if (Y.nested_output) return Keep(c, KeepRule::kNestedGraphOutput);
      // A nested graph defining either name could read differently afterwards (capture of the
      // new name; or, read positionally, an earlier use of the vanished name).
      if (DefinedBelow(c.scope, X.name) || DefinedBelow(c.scope, Y.name)) {
        return Keep(c, KeepRule::kNameCollision);
      }
      Undefine(c.scope, Y.name);
      Y.parent = rx;
      Y.drop_value_info = true;
      X.annotated |= Y.annotated;
      X.pinned |= Y.pinned;
      return Remove(c);
    }
    // y is an output: x's definition takes y's name.
    if (X.scope != c.scope) return Keep(c, KeepRule::kOuterScope);
    if (X.kind == DefKind::kInput) return Keep(c, KeepRule::kGraphInput);
    if (X.kind == DefKind::kInitializer) return Keep(c, KeepRule::kInitializer);
    if (X.is_output) return Keep(c, KeepRule::kAlreadyOutput);
    if (X.nested_output) return Keep(c, KeepRule::kNestedGraphOutput);
    if (X.pinned) return Keep(c, KeepRule::kShardingSpec);
    if (DefinedBelow(c.scope, Y.name) || DefinedBelow(c.scope, X.name)) {
      return Keep(c, KeepRule::kNameCollision);
    }
    if (X.decl != nullptr && Y.decl != nullptr &&
        (X.decl_conflict || Y.decl_conflict ||
         X.decl->SerializeAsString() != Y.decl->SerializeAsString())) {
      return Keep(c, KeepRule::kTypeMismatch);
    }
    // x's value_info would now describe y: redundant when y is declared, kept (renamed) if not.
    X.drop_value_info = Y.decl != nullptr;
    if (Y.decl != nullptr) {
      X.decl = Y.decl;
      X.decl_conflict = Y.decl_conflict;
    }
    Undefine(c.scope, X.name);
    X.name = owned_names_.emplace_back(Y.name);
    X.is_output = true;
    X.annotated |= Y.annotated;
    X.pinned |= Y.pinned;
    Y.parent = rx;
    return Remove(c);
  }

  // ---- rewrite ----

  template <typename T>
  static void EraseMarked(pb::RepeatedPtrField<T>* field, const std::vector<bool>& erase) {
    int kept = 0;
    for (int i = 0; i < field->size(); ++i) {
      if (erase[i]) continue;
      if (kept != i) field->SwapElements(kept, i);
      ++kept;
    }
    field->DeleteSubrange(kept, field->size() - kept);
  }

  void Apply() {
    // Names of renamed classes live in owned_names_, and no other class name views a string
    // that gets reassigned below (a class's own definition text equals its name unless the
    // class was renamed), so rewriting in place is safe.
    std::vector<std::vector<bool>> erase_nodes(scopes_.size());
    for (const Candidate& c : deleted_nodes_) {
      auto& marks = erase_nodes[c.scope];
      if (marks.empty()) marks.assign(scopes_[c.scope].nodes()->size(), false);
      marks[c.node] = true;
    }
    for (const Occurrence& o : occurrences_) {
      if (o.node >= 0 && !erase_nodes[o.scope].empty() && erase_nodes[o.scope][o.node]) continue;
      const std::string_view name = values_[Find(o.value)].name;
      if (*o.text != name) o.text->assign(name.data(), name.size());
    }
    std::vector<std::vector<bool>> erase_infos(scopes_.size());
    std::vector<std::vector<int>> erase_function_infos(scopes_.size());
    for (const InfoOccurrence& o : infos_) {
      if (o.parsed != nullptr) {
        pb::UnknownFieldSet* unknown = scopes_[o.scope].function->mutable_unknown_fields();
        if (values_[o.value].drop_value_info) {
          erase_function_infos[o.scope].push_back(o.index);
          continue;
        }
        const std::string_view name = values_[Find(o.value)].name;
        if (o.parsed->name() != name) {
          o.parsed->set_name(std::string(name));
          o.parsed->SerializeToString(unknown->mutable_field(o.index)->mutable_length_delimited());
        }
        continue;
      }
      onnx::GraphProto* g = scopes_[o.scope].graph;
      if (values_[o.value].drop_value_info) {
        auto& marks = erase_infos[o.scope];
        if (marks.empty()) marks.assign(g->value_info_size(), false);
        marks[o.index] = true;
        continue;
      }
      const std::string_view name = values_[Find(o.value)].name;
      if (g->value_info(o.index).name() != name) {
        g->mutable_value_info(o.index)->set_name(std::string(name));
      }
    }
    for (size_t s = 0; s < scopes_.size(); ++s) {
      if (!erase_nodes[s].empty()) EraseMarked(scopes_[s].nodes(), erase_nodes[s]);
      if (!erase_infos[s].empty())
        EraseMarked(scopes_[s].graph->mutable_value_info(), erase_infos[s]);
      // Recorded in increasing order: delete from the back so indices stay valid.
      for (auto it = erase_function_infos[s].rbegin(); it != erase_function_infos[s].rend(); ++it) {
        scopes_[s].function->mutable_unknown_fields()->DeleteSubrange(*it, 1);
      }
    }
  }

  onnx::ModelProto& model_;
  const OptimizeOptions& options_;
  bool shadowed_ = false;
  uint64_t total_nodes_ = 0;
  std::vector<ScopeRec> scopes_;
  std::vector<ValueRec> values_;
  std::vector<Occurrence> occurrences_;
  std::vector<InfoOccurrence> infos_;
  std::vector<Candidate> candidates_;
  std::vector<Candidate> deleted_nodes_;
  std::unordered_map<std::string_view, NameDefs> nested_defs_;
  std::vector<std::pair<std::pair<int32_t, int32_t>, KeptIdentity>> kept_;
  std::deque<std::string> owned_names_;
  std::unordered_set<std::string> external_seen_;
  std::vector<std::unique_ptr<onnx::ValueInfoProto>> parsed_infos_;
  ProtoOptimizeResult result_;
};

Status Bad(std::string message) { return Status(StatusCode::kInvalidModel, std::move(message)); }

// Parses `bytes` into `message` with protobuf's recursion limit set to `recursion_limit`.
bool ParseWithLimit(google::protobuf::MessageLite& message, std::span<const char> bytes,
                    int recursion_limit) {
  pb::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  pb::io::CodedInputStream coded(&stream);
  coded.SetRecursionLimit(recursion_limit);
  return message.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

// The optimized model before it is written: unchanged (the input's own bytes are the result) or a
// compact serialization whose raw_data references point into the input (see ExpandRawRefs).
struct Optimized {
  ProtoOptimizeResult result;
  bool unchanged = true;
  std::string compact;
  std::vector<RawRef> refs;
};

// The input goes through the wire walker first, as a model load does: protobuf parses only the
// model without its raw_data payloads, which stay where they are (the caller's buffer or the file
// mapping) and are streamed into the output. Memory is that of the small rest, whatever the
// weights weigh, and a file over protobuf's 2 GiB limit is optimized like any other.
Result<Optimized> ParseAndOptimize(std::span<const std::byte> in, const OptimizeOptions& options) {
  if (in.size() > options.limits.max_model_bytes) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("model of {} bytes exceeds max_model_bytes {}", in.size(),
                              options.limits.max_model_bytes));
  }
  if (in.empty()) return Bad("the model is empty (0 bytes)");
  // Each subgraph level costs 3 message levels (graph, node, attribute); types nest too.
  const int recursion_limit = 3 * std::max(options.limits.max_graph_depth, 0) +
                              2 * std::max(options.limits.max_type_depth, 0) + 32;
  auto compact = CompactModelBytes(in, options.limits, recursion_limit, WireUse::kParseWhole);
  if (!compact.ok()) {
    Status status = std::move(compact).take_status();
    if (status.code() != StatusCode::kInvalidModel) return status;
    return Bad(
        fmt::format("not a valid ONNX model: protobuf parsing failed ({} bytes; truncated, "
                    "not a ModelProto, or nested deeper than the limits allow): {}",
                    in.size(), status.message()));
  }
  onnx::ModelProto model;
  const auto parse_failed = [&] {
    return Bad(
        fmt::format("not a valid ONNX model: protobuf parsing failed ({} bytes; truncated, "
                    "not a ModelProto, or nested deeper than the limits allow)",
                    in.size()));
  };
  if (!ParseWithLimit(model, compact->bytes, recursion_limit)) return parse_failed();
  // The main graph's nodes were set apart by the walker, in order; nodes sit two levels down.
  for (size_t n = 0; n < compact->nodes.size(); ++n) {
    const std::string_view bytes = compact->Node(n);
    const std::span<const char> node(bytes.data(), bytes.size());
    if (!ParseWithLimit(*model.mutable_graph()->add_node(), node, recursion_limit - 2)) {
      return parse_failed();
    }
  }
  std::string().swap(compact->bytes);
  std::string().swap(compact->node_bytes);
  if (!model.has_graph()) return Bad("model has no graph");
  Optimized optimized;
  IDEM_ASSIGN_OR_RETURN(optimized.result, OptimizeModelProto(model, options));
  if (optimized.result.report.removed > 0) {
    optimized.unchanged = false;
    if (!model.SerializeToString(&optimized.compact)) {
      return Status(StatusCode::kResourceExhausted,
                    "the optimized model without its raw_data payloads is over protobuf's 2 GiB");
    }
    optimized.refs = std::move(compact->refs);
  }
  return optimized;
}

// Writes `piece` through `sink`; where it lies in `mapping` (the input file's read-only private
// mapping), in chunks whose pages are then dropped from this process (MADV_DONTNEED: they are
// the file's, re-read on a later access), so streaming gigabytes of weights through the output
// does not make them resident here.
Status WriteReleasingMappedPages(std::span<const std::byte> piece,
                                 std::span<const std::byte> mapping, const ByteSink& sink) {
  constexpr size_t kChunk = size_t{16} << 20;
  const auto* begin = piece.data();
  const bool mapped = !piece.empty() && begin >= mapping.data() &&
                      begin + piece.size() <= mapping.data() + mapping.size();
  if (!mapped || piece.size() < kChunk) return sink(piece);
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (size_t done = 0; done < piece.size(); done += kChunk) {
    const auto chunk = piece.subspan(done, std::min(kChunk, piece.size() - done));
    IDEM_RETURN_IF_ERROR(sink(chunk));
    // Whole pages inside the chunk only (its edges may share a page with bytes still to come).
    const auto first = (reinterpret_cast<uintptr_t>(chunk.data()) + page - 1) / page * page;
    const auto last = (reinterpret_cast<uintptr_t>(chunk.data()) + chunk.size()) / page * page;
    if (last > first) {
      // Page arithmetic needs the address as an integer and back.
      madvise(reinterpret_cast<void*>(first),  // NOLINT(performance-no-int-to-ptr)
              last - first, MADV_DONTNEED);
    }
  }
  return {};
}

// Hands the optimized model's bytes to `sink`: the input itself when nothing was removed (byte
// identity), else the compact serialization with every raw_data reference expanded.
Status WriteOptimized(const Optimized& optimized, std::span<const std::byte> in,
                      const ByteSink& sink) {
  if (optimized.unchanged) return sink(in);
  return ExpandRawRefs(std::as_bytes(std::span(optimized.compact)), optimized.refs, in, sink);
}

// realpath of `path`'s folder ("." when it has none).
std::string RealFolder(const std::string& path) {
  std::string dir = DirectoryOf(path);
  char buf[PATH_MAX];
  if (realpath(dir.c_str(), buf) == nullptr) return dir;
  return buf;
}

}  // namespace

Result<ProtoOptimizeResult> OptimizeModelProto(onnx::ModelProto& model,
                                               const OptimizeOptions& options) {
  return Optimizer(model, options).Run();
}

Result<OptimizeReport> OptimizeModelBytes(std::span<const std::byte> in, std::string* out,
                                          const OptimizeOptions& options) {
  IDEM_ASSIGN_OR_RETURN(Optimized optimized, ParseAndOptimize(in, options));
  out->clear();
  IDEM_RETURN_IF_ERROR(WriteOptimized(optimized, in, [out](std::span<const std::byte> piece) {
    out->append(reinterpret_cast<const char*>(piece.data()), piece.size());
    return Status();
  }));
  return std::move(optimized.result.report);
}

Result<OptimizeReport> OptimizeModelFile(const std::string& in_path, const std::string& out_path,
                                         const OptimizeOptions& options) {
  struct stat in_st {
  }, out_st{};
  if (stat(in_path.c_str(), &in_st) == 0 && stat(out_path.c_str(), &out_st) == 0 &&
      in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino && !options.in_place) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{}: is the input model itself; refusing to overwrite it without "
                              "in-place (--in-place)",
                              out_path));
  }
  // Mapped, not read: raw_data payloads go from the mapping straight into the output file.
  auto mapped = MapModelFile(in_path, options.limits.max_model_bytes);
  if (!mapped.ok()) return std::move(mapped).take_status();
  const std::span<const std::byte> in = mapped->bytes();
  auto optimized = ParseAndOptimize(in, options);
  if (!optimized.ok()) return std::move(optimized).take_status().WithContext(in_path);
  ProtoOptimizeResult* result = &optimized->result;
  if (result->external_data && RealFolder(in_path) != RealFolder(out_path)) {
    const auto& [tensor, location] = *result->external_data;
    return Status(
        StatusCode::kInvalidArgument,
        fmt::format("{}: tensor {} is external data ({}, relative to the model's "
                    "folder); write the result into {} so the locations stay valid",
                    in_path, QuoteName(tensor), QuoteName(location), DirectoryOf(in_path)));
  }
  // OUT replacing one of the model's own external-data files would destroy its weights (the
  // model would then read its own bytes as tensor data).
  if (struct stat out_now{}; stat(out_path.c_str(), &out_now) == 0) {
    const std::string base_dir = DirectoryOf(in_path);
    for (const std::string& location : result->external_locations) {
      struct stat data_st {};
      const std::string data_path = !location.empty() && location[0] == '/'
                                        ? location
                                        : fmt::format("{}/{}", base_dir, location);
      if (stat(data_path.c_str(), &data_st) == 0 && data_st.st_dev == out_now.st_dev &&
          data_st.st_ino == out_now.st_ino) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("{}: is the model's external data file {}; refusing to "
                                  "overwrite it",
                                  out_path, QuoteName(location)));
      }
    }
  }
  if (options.verify) {
    // The check needs the result in memory (only then: the plain write streams it).
    std::string out;
    if (!optimized->unchanged) {
      IDEM_RETURN_IF_ERROR(WriteOptimized(*optimized, in, [&out](std::span<const std::byte> p) {
        out.append(reinterpret_cast<const char*>(p.data()), p.size());
        return Status();
      }));
    }
    IDEM_RETURN_IF_ERROR(
        options.verify(in, optimized->unchanged ? in : std::as_bytes(std::span(out))));
  }
  IDEM_RETURN_IF_ERROR(WriteFileAtomically(out_path, [&](const ByteSink& sink) {
    return WriteOptimized(*optimized, in, [&](std::span<const std::byte> piece) {
      return WriteReleasingMappedPages(piece, in, sink);
    });
  }));
  return std::move(result->report);
}

}  // namespace idem
