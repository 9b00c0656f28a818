#include "src/runtime/fusion.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace idem {
namespace {

// Every name a subgraph (at any depth) reads, counted as one use each.
void CountSubgraphNames(const GraphDef& graph, std::unordered_map<std::string_view, int>& names) {
  for (const NodeDef& node : graph.nodes) {
    for (const std::string& in : node.inputs) {
      if (!in.empty()) ++names[in];
    }
    for (const Attribute& a : node.attributes) {
      if (a.graph != nullptr) CountSubgraphNames(*a.graph, names);
      for (const auto& g : a.graphs) {
        if (g != nullptr) CountSubgraphNames(*g, names);
      }
    }
  }
  for (const ValueInfo& out : graph.outputs) ++names[out.name];
}

bool IsFloatTensor(const Value* v) {
  return v != nullptr && v->is_tensor() && v->tensor().element_type() == ElementType::kFloat;
}

// Attribute `name` as a float (kFloat), `def` when absent, nullopt when of another kind.
std::optional<float> FloatAttr(const NodeDef& node, const std::string& name, float def) {
  const Attribute* a = node.FindAttribute(name);
  if (a == nullptr) return def;
  if (a->kind != Attribute::Kind::kFloat) return std::nullopt;
  return a->f;
}

// Only these attributes (each at most once).
bool OnlyAttributes(const NodeDef& node, std::initializer_list<std::string_view> allowed) {
  for (size_t i = 0; i < node.attributes.size(); ++i) {
    const std::string& name = node.attributes[i].name;
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) return false;
    for (size_t j = 0; j < i; ++j) {
      if (node.attributes[j].name == name) return false;
    }
  }
  return true;
}

// One float output, inputs beyond `inputs` absent.
bool SimpleNode(const NodeDef& node, size_t max_inputs) {
  if (!node.domain.empty() || node.outputs.size() != 1 || node.outputs[0].empty()) return false;
  return !node.inputs.empty() && node.inputs.size() <= max_inputs && !node.inputs[0].empty();
}

}  // namespace

ValueUses::ValueUses(const GraphDef& graph) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const NodeDef& node = graph.nodes[n];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!node.inputs[i].empty()) uses_[node.inputs[i]].readers.emplace_back(n, i);
    }
  }
  std::unordered_map<std::string_view, int> outside;
  for (const NodeDef& node : graph.nodes) {
    for (const Attribute& a : node.attributes) {
      if (a.graph != nullptr) CountSubgraphNames(*a.graph, outside);
      for (const auto& g : a.graphs) {
        if (g != nullptr) CountSubgraphNames(*g, outside);
      }
    }
  }
  for (const ValueInfo& out : graph.outputs) ++outside[out.name];
  for (const auto& [name, count] : outside) uses_[name].outside = true;
}

std::optional<ValueUses::Reader> ValueUses::SoleReader(std::string_view name) const {
  auto it = uses_.find(name);
  if (it == uses_.end() || it->second.outside || it->second.readers.size() != 1) {
    return std::nullopt;
  }
  return it->second.readers[0];
}

std::vector<ValueUses::Reader> ValueUses::Readers(std::string_view name) const {
  auto it = uses_.find(name);
  if (it == uses_.end() || it->second.outside) return {};
  return it->second.readers;
}

std::optional<FusedActivation> FusibleActivation(const NodeDef& node, int version,
                                                 const ConstantOf& constant) {
  FusedActivation act;
  if (node.op_type == "Relu" && SimpleNode(node, 1) && OnlyAttributes(node, {})) {
    act.kind = FusedActivation::Kind::kRelu;
    return act;
  }
  if (node.op_type == "Sigmoid" && SimpleNode(node, 1) && OnlyAttributes(node, {})) {
    act.kind = FusedActivation::Kind::kSigmoid;
    return act;
  }
  if (node.op_type == "LeakyRelu" && SimpleNode(node, 1) && OnlyAttributes(node, {"alpha"})) {
    auto alpha = FloatAttr(node, "alpha", 0.01f);
    if (!alpha) return std::nullopt;
    act.kind = FusedActivation::Kind::kLeakyRelu;
    act.alpha = *alpha;
    return act;
  }
  if (node.op_type == "HardSigmoid" && SimpleNode(node, 1) &&
      OnlyAttributes(node, {"alpha", "beta"})) {
    auto alpha = FloatAttr(node, "alpha", 0.2f);
    auto beta = FloatAttr(node, "beta", 0.5f);
    if (!alpha || !beta) return std::nullopt;
    act.kind = FusedActivation::Kind::kHardSigmoid;
    act.alpha = *alpha;
    act.beta = *beta;
    return act;
  }
  if (node.op_type == "Clip") {
    float lo = -std::numeric_limits<float>::infinity();
    float hi = std::numeric_limits<float>::infinity();
    if (version < 11) {
      if (!SimpleNode(node, 1) || !OnlyAttributes(node, {"min", "max"})) return std::nullopt;
      // Clip-1/6's defaults: the float range.
      auto mn = FloatAttr(node, "min", std::numeric_limits<float>::lowest());
      auto mx = FloatAttr(node, "max", std::numeric_limits<float>::max());
      if (!mn || !mx) return std::nullopt;
      lo = *mn;
      hi = *mx;
    } else {
      if (!SimpleNode(node, 3) || !OnlyAttributes(node, {})) return std::nullopt;
      for (size_t i = 1; i < node.inputs.size(); ++i) {
        if (node.inputs[i].empty()) continue;
        const Value* v = constant(i);
        if (!IsFloatTensor(v) || !v->tensor().shape().empty()) return std::nullopt;
        (i == 1 ? lo : hi) = v->tensor().data_as<float>()[0];
      }
    }
    // The fused form is min(max(x, lo), hi) as the reference's; NaN bounds or lo > hi are left
    // to the Clip kernel.
    if (std::isnan(lo) || std::isnan(hi) || lo > hi) return std::nullopt;
    act.kind = FusedActivation::Kind::kClip;
    act.alpha = lo;
    act.beta = hi;
    return act;
  }
  return std::nullopt;
}

std::optional<float> FusibleMaxBound(const NodeDef& node, int version, size_t x_input, size_t rank,
                                     const ConstantOf& constant) {
  if (node.op_type != "Max" || version < 8 || !node.domain.empty() || node.inputs.size() != 2 ||
      node.outputs.size() != 1 || node.outputs[0].empty() || !node.attributes.empty() ||
      x_input > 1) {
    return std::nullopt;
  }
  const Value* c = constant(1 - x_input);
  if (!IsFloatTensor(c) || c->tensor().element_count() != 1 || c->tensor().shape().size() > rank) {
    return std::nullopt;
  }
  const float v = c->tensor().data_as<float>()[0];
  if (std::isnan(v)) return std::nullopt;
  return v;
}

namespace {

// The value of a float constant of one element and at most `rank` dims.
std::optional<float> Scalar(const Value* v, size_t rank) {
  if (!IsFloatTensor(v) || v->tensor().element_count() != 1 || v->tensor().shape().size() > rank) {
    return std::nullopt;
  }
  const float x = v->tensor().data_as<float>()[0];
  if (std::isnan(x)) return std::nullopt;
  return x;
}

// A new float tensor of `shape` from `values`.
std::optional<Value> FloatValue(std::vector<int64_t> shape, const std::vector<float>& values) {
  std::byte* bytes = nullptr;
  auto buffer = Buffer::Allocate(values.size() * sizeof(float), &bytes);
  if (!buffer.ok()) return std::nullopt;
  if (!values.empty()) std::memcpy(bytes, values.data(), values.size() * sizeof(float));
  auto v = Value::MakeTensor(ElementType::kFloat, std::move(shape), std::move(buffer).value());
  if (!v.ok()) return std::nullopt;
  return std::move(v).value();
}

}  // namespace

std::optional<ScalarStep> FusibleScalarStep(const NodeDef& node, int version, size_t x_input,
                                            size_t rank, const ConstantOf& constant) {
  if ((node.op_type != "Mul" && node.op_type != "Add") || version < 7 || !node.domain.empty() ||
      node.inputs.size() != 2 || node.outputs.size() != 1 || node.outputs[0].empty() ||
      !node.attributes.empty() || x_input > 1) {
    return std::nullopt;
  }
  auto c = Scalar(constant(1 - x_input), rank);
  if (!c) return std::nullopt;
  return ScalarStep{node.op_type == "Mul", *c};
}

std::optional<HardSwishMatch> MatchHardSwish(
    const GraphDef& graph, const std::vector<ValueUses::Reader>& readers, const ValueUses& uses,
    size_t rank, const std::function<int(size_t)>& version_of,
    const std::function<ConstantOf(const NodeDef&)>& constant_of) {
  if (readers.size() != 2) return std::nullopt;
  // The Add reads t first (graph order), the Mul second.
  const auto [add_n, add_in] = readers[0];
  const auto [mul_n, mul_in] = readers[1];
  const NodeDef& add = graph.nodes[add_n];
  const NodeDef& mul = graph.nodes[mul_n];
  if (add.op_type != "Add" || mul.op_type != "Mul") return std::nullopt;
  auto shift = FusibleScalarStep(add, version_of(add_n), add_in, rank, constant_of(add));
  if (!shift || shift->multiply) return std::nullopt;
  auto clip_reader = uses.SoleReader(add.outputs[0]);
  if (!clip_reader || clip_reader->second != 0) return std::nullopt;
  const NodeDef& clip = graph.nodes[clip_reader->first];
  auto bounds = FusibleActivation(clip, version_of(clip_reader->first), constant_of(clip));
  if (!bounds || bounds->kind != FusedActivation::Kind::kClip) return std::nullopt;
  auto mul_reader = uses.SoleReader(clip.outputs[0]);
  if (!mul_reader || mul_reader->first != mul_n || mul_reader->second != 1 - mul_in ||
      version_of(mul_n) < 7 || !mul.domain.empty() || mul.inputs.size() != 2 ||
      mul.outputs.size() != 1 || mul.outputs[0].empty() || !mul.attributes.empty()) {
    return std::nullopt;
  }
  auto div_reader = uses.SoleReader(mul.outputs[0]);
  if (!div_reader || div_reader->second != 0) return std::nullopt;
  const NodeDef& div = graph.nodes[div_reader->first];
  if (div.op_type != "Div" || version_of(div_reader->first) < 7 || !div.domain.empty() ||
      div.inputs.size() != 2 || div.outputs.size() != 1 || div.outputs[0].empty() ||
      !div.attributes.empty()) {
    return std::nullopt;
  }
  auto divisor = Scalar(constant_of(div)(1), rank);
  if (!divisor) return std::nullopt;
  HardSwishMatch m;
  m.activation.kind = FusedActivation::Kind::kHardSwish;
  m.activation.alpha = shift->value;
  m.activation.beta = bounds->alpha;
  m.activation.gamma = bounds->beta;
  m.activation.delta = *divisor;
  m.nodes = {{add_n, add_in}, {clip_reader->first, 0}, {mul_n, mul_in}, {div_reader->first, 0}};
  m.output = div.outputs[0];
  return m;
}

std::optional<std::pair<Value, Value>> FoldScalarStep(const Value& w, const Value* b,
                                                      const ScalarStep& step) {
  if (!IsFloatTensor(&w) || w.tensor().shape().size() < 3 || w.tensor().shape()[0] < 1 ||
      !std::isfinite(step.value)) {
    return std::nullopt;
  }
  const int64_t m = w.tensor().shape()[0];
  if (b != nullptr &&
      (!IsFloatTensor(b) || b->tensor().shape().size() != 1 || b->tensor().shape()[0] != m)) {
    return std::nullopt;
  }
  const auto win = w.tensor().data_as<float>();
  std::vector<float> wv(win.begin(), win.end());
  std::vector<float> bv(static_cast<size_t>(m), 0.0f);
  if (b != nullptr) {
    const auto bin = b->tensor().data_as<float>();
    bv.assign(bin.begin(), bin.end());
  }
  if (step.multiply) {
    for (float& x : wv) x = static_cast<float>(static_cast<double>(x) * step.value);
    for (float& x : bv) x = static_cast<float>(static_cast<double>(x) * step.value);
  } else {
    for (float& x : bv) x = static_cast<float>(static_cast<double>(x) + step.value);
  }
  const auto ws = w.tensor().shape();
  auto wout = FloatValue(std::vector<int64_t>(ws.begin(), ws.end()), wv);
  auto bout = FloatValue({m}, bv);
  if (!wout || !bout) return std::nullopt;
  return std::make_pair(std::move(*wout), std::move(*bout));
}

std::optional<std::pair<Value, Value>> FoldBatchNorm(const Value& w, const Value* b,
                                                     const NodeDef& bn, int version,
                                                     const ConstantOf& constant) {
  if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || version < 7 ||
      bn.inputs.size() != 5 || bn.outputs.empty() || bn.outputs[0].empty()) {
    return std::nullopt;
  }
  for (size_t o = 1; o < bn.outputs.size(); ++o) {
    if (!bn.outputs[o].empty()) return std::nullopt;  // training outputs
  }
  if (!OnlyAttributes(bn, {"epsilon", "momentum", "spatial", "training_mode"})) return std::nullopt;
  auto epsilon = FloatAttr(bn, "epsilon", 1e-5f);
  if (!epsilon || !std::isfinite(*epsilon) || *epsilon < 0) return std::nullopt;
  for (const char* flag : {"spatial", "training_mode"}) {
    const Attribute* a = bn.FindAttribute(flag);
    const int64_t want = std::string_view(flag) == "spatial" ? 1 : 0;
    if (a != nullptr && (a->kind != Attribute::Kind::kInt || a->i != want)) return std::nullopt;
    if (a != nullptr && std::string_view(flag) == "spatial" && version >= 9) return std::nullopt;
    if (a != nullptr && std::string_view(flag) == "training_mode" && version < 14) {
      return std::nullopt;
    }
  }
  if (!IsFloatTensor(&w) || w.tensor().shape().size() < 3) return std::nullopt;
  const auto ws = w.tensor().shape();
  const int64_t m = ws[0];
  if (m < 1) return std::nullopt;
  const float* params[4];
  for (size_t i = 0; i < 4; ++i) {
    const Value* v = constant(i + 1);
    if (!IsFloatTensor(v) || v->tensor().shape().size() != 1 || v->tensor().shape()[0] != m) {
      return std::nullopt;
    }
    params[i] = v->tensor().data_as<float>().data();
  }
  if (b != nullptr &&
      (!IsFloatTensor(b) || b->tensor().shape().size() != 1 || b->tensor().shape()[0] != m)) {
    return std::nullopt;
  }
  const int64_t per = w.tensor().element_count() / m;
  std::byte* wbytes = nullptr;
  std::byte* bbytes = nullptr;
  auto wbuf = Buffer::Allocate(static_cast<size_t>(m * per) * sizeof(float), &wbytes);
  auto bbuf = Buffer::Allocate(static_cast<size_t>(m) * sizeof(float), &bbytes);
  if (!wbuf.ok() || !bbuf.ok()) return std::nullopt;
  auto* wout = reinterpret_cast<float*>(wbytes);
  auto* bout = reinterpret_cast<float*>(bbytes);
  const float* win = w.tensor().data_as<float>().data();
  const float* bin = b != nullptr ? b->tensor().data_as<float>().data() : nullptr;
  const float *scale = params[0], *shift = params[1], *mean = params[2], *var = params[3];
  for (int64_t o = 0; o < m; ++o) {
    const double s = static_cast<double>(scale[o]) /
                     std::sqrt(static_cast<double>(var[o]) + static_cast<double>(*epsilon));
    if (!std::isfinite(s) || !std::isfinite(mean[o]) || !std::isfinite(shift[o])) {
      return std::nullopt;  // left to the BatchNormalization kernel
    }
    for (int64_t i = 0; i < per; ++i) {
      wout[o * per + i] = static_cast<float>(static_cast<double>(win[o * per + i]) * s);
    }
    const double bias = bin != nullptr ? bin[o] : 0.0;
    bout[o] = static_cast<float>((bias - mean[o]) * s + shift[o]);
  }
  std::vector<int64_t> wshape(ws.begin(), ws.end());
  auto wv = Value::MakeTensor(ElementType::kFloat, std::move(wshape), std::move(wbuf).value());
  auto bv = Value::MakeTensor(ElementType::kFloat, {m}, std::move(bbuf).value());
  if (!wv.ok() || !bv.ok()) return std::nullopt;
  return std::make_pair(std::move(wv).value(), std::move(bv).value());
}

}  // namespace idem
