// Structure-aware model building for fuzzing (see graph_recipe.h): a recipe of bytes becomes a
// valid-looking ONNX model over the operators of the real models, with attributes, shapes and
// constant inputs chosen by the bytes. Most choices stay in the valid range (so the fuzzer gets
// past parsing and inference into the shape rules and kernels); about one byte value in eight
// picks a hostile one (huge, negative, zero, INT64_MIN/MAX, NaN, infinities) instead.
#include "fuzz/graph_recipe.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace idem::fuzz {
namespace {

using onnx::AttributeProto;
using onnx::TensorProto;

// ---- Reading the recipe -------------------------------------------------------------------------

class Recipe {
 public:
  Recipe(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool empty() const { return n_ == 0; }
  // The next byte, 0 once the recipe is used up (so a short recipe means "defaults").
  uint8_t Byte() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  bool Flag() { return (Byte() & 1) != 0; }
  // One of `k` choices.
  int Pick(int k) { return k <= 1 ? 0 : Byte() % k; }
  // A value in [lo, hi] most of the time; about one in eight an extreme int.
  int64_t Int(int64_t lo, int64_t hi) {
    const uint8_t b = Byte();
    if (b >= 0xE0) return Extreme(b - 0xE0);
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(b % span);
  }
  // A value in [lo, hi] always (array lengths, ranks: things the builder itself must size).
  int64_t Bounded(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(Byte() % span);
  }
  float Float() {
    static constexpr float kTable[] = {0.0f,  1.0f,  -1.0f, 0.5f,  2.0f,   0.25f, 3.0f, -2.5f,
                                       1e-3f, 10.0f, 0.1f,  -0.0f, 1e-40f, 1.5f,  4.0f, 0.75f};
    const uint8_t b = Byte();
    if (b < 0xD0) return kTable[b % 16];
    switch (b & 7) {
      case 0:
        return std::numeric_limits<float>::infinity();
      case 1:
        return -std::numeric_limits<float>::infinity();
      case 2:
        return std::numeric_limits<float>::quiet_NaN();
      case 3:
        return 1e30f;
      case 4:
        return -1e30f;
      case 5:
        return std::numeric_limits<float>::max();
      case 6:
        return 1e-30f;
      default: {
        uint32_t bits = 0;
        for (int i = 0; i < 4; ++i) bits = bits << 8 | Byte();
        float f;
        std::memcpy(&f, &bits, sizeof(f));
        return f;
      }
    }
  }

 private:
  static int64_t Extreme(int i) {
    static constexpr int64_t kTable[] = {0,
                                         -1,
                                         -2,
                                         int64_t{1} << 20,
                                         (int64_t{1} << 31) - 1,
                                         int64_t{1} << 31,
                                         int64_t{1} << 32,
                                         int64_t{1} << 40,
                                         int64_t{1} << 62,
                                         std::numeric_limits<int64_t>::max(),
                                         std::numeric_limits<int64_t>::min(),
                                         std::numeric_limits<int64_t>::min() + 1,
                                         -(int64_t{1} << 31),
                                         65536,
                                         1000000007,
                                         -(int64_t{1} << 62),
                                         4096,
                                         100,
                                         std::numeric_limits<int64_t>::max() - 1,
                                         -1000};
    return kTable[static_cast<size_t>(i) % (sizeof(kTable) / sizeof(kTable[0]))];
  }
  const uint8_t* p_;
  size_t n_;
};

// ---- The model being built ---------------------------------------------------------------------

// A value of the graph: its element type (TensorProto code) and, when the builder knows them,
// its dims (-1: a symbolic dim).
struct Val {
  std::string name;
  int elem = TensorProto::FLOAT;
  std::optional<std::vector<int64_t>> dims;
};

constexpr int kMaxNodes = 6;
constexpr int64_t kMaxConstElements = 1024;

class Builder {
 public:
  Builder(const uint8_t* data, size_t size) : r_(data, size) {}

  std::string Build() {
    static constexpr int kOpsets[] = {13, 17, 11, 18, 19, 21, 7, 9, 10, 12, 14, 15, 16, 20, 22, 6};
    opset_ = kOpsets[r_.Pick(16)];
    model_.set_ir_version(opset_ >= 21 ? 10 : 8);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset_);
    g_ = model_.mutable_graph();
    g_->set_name("fuzz");
    const int nodes = 1 + r_.Pick(kMaxNodes);
    for (int i = 0; i < nodes && !r_.empty(); ++i) AddNode();
    if (g_->node_size() == 0) AddNode();
    std::string out;
    model_.SerializeToString(&out);
    return out;
  }

 private:
  // ---- values ----

  std::string Fresh(const char* prefix) { return prefix + std::to_string(next_++); }

  int64_t Dim() {
    static constexpr int64_t kDims[] = {1, 2, 3, 4, 5, 2, 3, 1, 0, 6, 7, 8, 1, 2, 16, 3};
    const uint8_t b = r_.Byte();
    if (b >= 0xF8) return b == 0xFF ? 1000000 : 33;
    return kDims[b % 16];
  }

  std::vector<int64_t> Dims(int rank) {
    std::vector<int64_t> d;
    for (int i = 0; i < rank; ++i) d.push_back(Dim());
    return d;
  }

  static int64_t Count(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) {
      if (d < 0) return -1;
      if (d != 0 && n > kMaxConstElements * 64 / d) return std::numeric_limits<int64_t>::max();
      n *= d;
    }
    return n;
  }

  void SetDims(onnx::TypeProto_Tensor* tt, const std::vector<int64_t>& dims, bool symbolic) {
    auto* shape = tt->mutable_shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = shape->add_dim();
      if (symbolic && dims[i] >= 1 && dims[i] <= 2 && (i % 2 == 1)) {
        d->set_dim_param("s" + std::to_string(i % 3));
      } else {
        d->set_dim_value(dims[i]);
      }
    }
  }

  // A graph input of `elem` and `dims` (some dims declared symbolic when `symbolic`).
  Val Input(int elem, const std::vector<int64_t>& dims) {
    Val v{Fresh("x"), elem, dims};
    auto* vi = g_->add_input();
    vi->set_name(v.name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    const bool symbolic = r_.Pick(4) == 0;
    SetDims(tt, dims, symbolic);
    if (symbolic) {
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] >= 1 && dims[i] <= 2 && i % 2 == 1) (*v.dims)[i] = -1;
      }
    }
    return v;
  }

  void FillTensor(TensorProto* t, int elem, int64_t count, bool small_ints) {
    switch (elem) {
      case TensorProto::FLOAT:
        for (int64_t i = 0; i < count; ++i) t->add_float_data(r_.Float());
        break;
      case TensorProto::DOUBLE:
        for (int64_t i = 0; i < count; ++i) t->add_double_data(r_.Float());
        break;
      case TensorProto::FLOAT16:
      case TensorProto::BFLOAT16:
        for (int64_t i = 0; i < count; ++i) t->add_int32_data(r_.Byte() | (r_.Byte() << 8));
        break;
      case TensorProto::INT64:
        for (int64_t i = 0; i < count; ++i)
          t->add_int64_data(small_ints ? r_.Int(-3, 6) : r_.Int(-8, 8));
        break;
      case TensorProto::INT32:
        for (int64_t i = 0; i < count; ++i) {
          t->add_int32_data(static_cast<int32_t>(r_.Int(-3, 6)));
        }
        break;
      case TensorProto::UINT8:
      case TensorProto::INT8:
      case TensorProto::BOOL: {
        for (int64_t i = 0; i < count; ++i) {
          int32_t v = r_.Byte();
          if (elem == TensorProto::INT8) v = static_cast<int8_t>(v);
          if (elem == TensorProto::BOOL) v &= 1;
          t->add_int32_data(v);
        }
        break;
      }
      case TensorProto::STRING:
        for (int64_t i = 0; i < count; ++i) {
          static const char* kStrings[] = {"", "1.5", "abc", "-7", "nan", "1e400", "0x10", " 3"};
          t->add_string_data(kStrings[r_.Pick(8)]);
        }
        break;
      default:
        break;
    }
  }

  // An initializer of `elem` and `dims` (values from the recipe), or a graph input when the
  // tensor would be too large to write.
  Val Const(int elem, const std::vector<int64_t>& dims, bool small_ints = true) {
    const int64_t count = Count(dims);
    if (count < 0 || count > kMaxConstElements) {
      // Too large to spell out: an empty-valued twin would be refused; use a feed.
      return Input(elem, dims);
    }
    Val v{Fresh("c"), elem, dims};
    TensorProto* t = g_->add_initializer();
    t->set_name(v.name);
    t->set_data_type(elem);
    for (int64_t d : dims) t->add_dims(d);
    FillTensor(t, elem, count, small_ints);
    return v;
  }

  // A 1-D int64 constant holding exactly `values`.
  Val IntsConst(const std::vector<int64_t>& values, int elem = TensorProto::INT64) {
    Val v{Fresh("c"), elem, std::vector<int64_t>{static_cast<int64_t>(values.size())}};
    TensorProto* t = g_->add_initializer();
    t->set_name(v.name);
    t->set_data_type(elem);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t x : values) {
      if (elem == TensorProto::INT32) {
        t->add_int32_data(static_cast<int32_t>(x));
      } else {
        t->add_int64_data(x);
      }
    }
    return v;
  }

  Val FloatsConst(const std::vector<float>& values, std::vector<int64_t> dims) {
    Val v{Fresh("c"), TensorProto::FLOAT, dims};
    TensorProto* t = g_->add_initializer();
    t->set_name(v.name);
    t->set_data_type(TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : values) t->add_float_data(x);
    return v;
  }

  // A value of `elem` with `dims`: an existing one with those dims (when the recipe says so and
  // one exists), else a graph input or an initializer.
  Val Tensor(int elem, const std::vector<int64_t>& dims) {
    const int how = r_.Pick(4);
    if (how == 0) {
      for (auto it = pool_.rbegin(); it != pool_.rend(); ++it) {
        if (it->elem == elem && it->dims && *it->dims == dims) return *it;
      }
    }
    if (how == 1 || how == 0) return Const(elem, dims);
    return Input(elem, dims);
  }

  // Any value of `elem` (existing or new, any rank): the operand of shape-agnostic operators.
  Val Any(int elem, int max_rank = 4) {
    if (!pool_.empty() && r_.Pick(3) != 0) {
      const size_t start = r_.Byte() % pool_.size();
      for (size_t k = 0; k < pool_.size(); ++k) {
        const Val& v = pool_[(start + k) % pool_.size()];
        if (v.elem == elem) return v;
      }
    }
    return Tensor(elem, Dims(static_cast<int>(r_.Bounded(0, max_rank))));
  }

  // An existing value of rank `rank` and `elem` with known dims, or a new one.
  Val Ranked(int elem, int rank) {
    if (!pool_.empty() && r_.Pick(2) == 0) {
      for (auto it = pool_.rbegin(); it != pool_.rend(); ++it) {
        if (it->elem == elem && it->dims && static_cast<int>(it->dims->size()) == rank &&
            std::all_of(it->dims->begin(), it->dims->end(), [](int64_t d) { return d >= 0; })) {
          return *it;
        }
      }
    }
    return Tensor(elem, Dims(rank));
  }

  int FloatType() {
    static constexpr int kTypes[] = {
        TensorProto::FLOAT, TensorProto::FLOAT,  TensorProto::FLOAT,   TensorProto::FLOAT,
        TensorProto::FLOAT, TensorProto::DOUBLE, TensorProto::FLOAT16, TensorProto::BFLOAT16};
    return kTypes[r_.Pick(8)];
  }

  int AnyType() {
    static constexpr int kTypes[] = {
        TensorProto::FLOAT,   TensorProto::FLOAT,    TensorProto::INT64,  TensorProto::INT32,
        TensorProto::UINT8,   TensorProto::INT8,     TensorProto::BOOL,   TensorProto::DOUBLE,
        TensorProto::FLOAT16, TensorProto::BFLOAT16, TensorProto::STRING, TensorProto::FLOAT};
    return kTypes[r_.Pick(12)];
  }

  // ---- attributes ----

  onnx::NodeProto* Node(const std::string& op) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name("n" + std::to_string(g_->node_size() - 1));
    return n;
  }
  void In(onnx::NodeProto* n, const Val& v) { n->add_input(v.name); }
  void NoInput(onnx::NodeProto* n) { n->add_input(""); }
  // Adds an output of `elem` (dims when known) to the node and to the graph's outputs.
  Val Out(onnx::NodeProto* n, int elem, std::optional<std::vector<int64_t>> dims = std::nullopt) {
    Val v{Fresh("v"), elem, std::move(dims)};
    n->add_output(v.name);
    auto* o = g_->add_output();
    o->set_name(v.name);
    // The element type the builder expects (the planner refuses a wrong one); no shape.
    o->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    pool_.push_back(v);
    return v;
  }
  void NoOutput(onnx::NodeProto* n) { n->add_output(""); }

  void AttrInt(onnx::NodeProto* n, const char* name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INT);
    a->set_i(v);
  }
  void AttrFloat(onnx::NodeProto* n, const char* name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::FLOAT);
    a->set_f(v);
  }
  void AttrString(onnx::NodeProto* n, const char* name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::STRING);
    a->set_s(v);
  }
  void AttrInts(onnx::NodeProto* n, const char* name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  void AttrFloats(onnx::NodeProto* n, const char* name, const std::vector<float>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::FLOATS);
    for (float x : v) a->add_floats(x);
  }
  void AttrStrings(onnx::NodeProto* n, const char* name, const std::vector<std::string>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::STRINGS);
    for (const std::string& x : v) a->add_strings(x);
  }
  void AttrTensor(onnx::NodeProto* n, const char* name, int elem, std::vector<int64_t> dims) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::TENSOR);
    TensorProto* t = a->mutable_t();
    t->set_data_type(elem);
    for (int64_t d : dims) t->add_dims(d);
    const int64_t count = Count(dims);
    FillTensor(t, elem, count >= 0 && count <= kMaxConstElements ? count : 0, true);
  }

  // `count` ints, each in [lo, hi] or extreme.
  std::vector<int64_t> Ints(size_t count, int64_t lo, int64_t hi) {
    std::vector<int64_t> v;
    for (size_t i = 0; i < count; ++i) v.push_back(r_.Int(lo, hi));
    return v;
  }
  // Sometimes one value more or less than `count` (a length mismatch).
  size_t Length(size_t count) {
    const uint8_t b = r_.Byte();
    if (b == 0xFF) return count + 1;
    if (b == 0xFE && count > 0) return count - 1;
    return count;
  }
  // An axis of a rank-`rank` tensor, negative half the time; sometimes out of range.
  int64_t Axis(int64_t rank) {
    const uint8_t b = r_.Byte();
    if (b >= 0xF0) return (b & 1) ? rank : -rank - 1;
    if (rank == 0) return 0;
    const int64_t a = b % rank;
    return (b & 0x80) ? a - rank : a;
  }
  std::vector<int64_t> Axes(int64_t rank, size_t max) {
    std::vector<int64_t> v;
    const size_t n = static_cast<size_t>(r_.Bounded(0, static_cast<int64_t>(max)));
    for (size_t i = 0; i < n; ++i) v.push_back(Axis(rank));
    return v;
  }

  // ---- operators ----

  void AddNode() {
    switch (r_.Pick(44)) {
      case 0:
      case 1:
        return Unary();
      case 2:
      case 3:
        return Binary();
      case 4:
        return Cast();
      case 5:
        return Concat();
      case 6:
        return ConstantOfShape();
      case 7:
      case 8:
      case 9:
        return Conv(false);
      case 10:
      case 11:
        return Conv(true);
      case 12:
        return Gemm();
      case 13:
        return MatMul();
      case 14:
      case 15:
        return Lstm();
      case 16:
      case 17:
        return Pool(0);
      case 18:
      case 19:
        return Pool(1);
      case 20:
        return Pool(2);
      case 21:
        return BatchNorm();
      case 22:
      case 23:
        return Pad();
      case 24:
        return Reshape();
      case 25:
      case 26:
      case 27:
        return Resize();
      case 28:
      case 29:
        return Slice();
      case 30:
        return Split();
      case 31:
        return Squeeze(true);
      case 32:
        return Squeeze(false);
      case 33:
        return Transpose();
      case 34:
        return Flatten();
      case 35:
        return Gather();
      case 36:
        return ShapeOrSize();
      case 37:
      case 38:
        return Reduce();
      case 39:
        return Softmax();
      case 40:
        return Clip();
      case 41:
        return Constant();
      case 42:
        return ShapeChain();
      default:
        return Binary();
    }
  }

  void Unary() {
    static const char* kOps[] = {"Neg",  "Sqrt",      "Log",         "Tanh", "Sigmoid",
                                 "Relu", "LeakyRelu", "HardSigmoid", "Neg",  "Relu"};
    const char* op = kOps[r_.Pick(10)];
    const int elem = r_.Pick(6) == 0 && (std::string(op) == "Neg" || std::string(op) == "Relu")
                         ? TensorProto::INT32
                         : FloatType();
    Val x = Any(elem);
    auto* n = Node(op);
    In(n, x);
    if (std::string(op) == "LeakyRelu" && r_.Flag()) AttrFloat(n, "alpha", r_.Float());
    if (std::string(op) == "HardSigmoid") {
      if (r_.Flag()) AttrFloat(n, "alpha", r_.Float());
      if (r_.Flag()) AttrFloat(n, "beta", r_.Float());
    }
    Out(n, elem, x.dims);
  }

  // A shape broadcastable with `dims`: some dims 1, some leading dims dropped.
  std::vector<int64_t> Broadcastable(const std::vector<int64_t>& dims) {
    std::vector<int64_t> out;
    const size_t drop = static_cast<size_t>(r_.Bounded(0, static_cast<int64_t>(dims.size())));
    for (size_t i = drop; i < dims.size(); ++i) {
      const int c = r_.Pick(4);
      out.push_back(c == 0 ? 1 : (c == 1 && dims[i] >= 0 ? Dim() : std::max<int64_t>(dims[i], 1)));
    }
    return out;
  }

  void Binary() {
    static const char* kOps[] = {"Add", "Sub", "Mul",   "Div",
                                 "Pow", "Max", "Equal", "GreaterOrEqual"};
    const std::string op = kOps[r_.Pick(8)];
    int elem = FloatType();
    if (op != "Pow" && r_.Pick(4) == 0) elem = r_.Flag() ? TensorProto::INT64 : TensorProto::INT32;
    Val a = Ranked(elem, static_cast<int>(r_.Bounded(0, 4)));
    std::vector<int64_t> bd = Broadcastable(*a.dims);
    int belem = elem;
    if (op == "Pow" && r_.Pick(3) == 0) belem = TensorProto::INT64;
    Val b = Tensor(belem, bd);
    auto* n = Node(op);
    if (r_.Flag()) {
      In(n, a);
      In(n, b);
    } else {
      In(n, b);
      In(n, a);
    }
    if (op == "Max" && r_.Flag()) In(n, Tensor(elem, Broadcastable(*a.dims)));
    if (opset_ < 7 && r_.Flag()) {
      AttrInt(n, "broadcast", 1);
      if (r_.Flag()) AttrInt(n, "axis", Axis(static_cast<int64_t>(a.dims->size())));
    }
    const bool boolean = op == "Equal" || op == "GreaterOrEqual";
    Out(n, boolean ? TensorProto::BOOL : elem);
  }

  void Cast() {
    const int from = AnyType();
    Val x = Any(from);
    auto* n = Node("Cast");
    In(n, x);
    static constexpr int kTo[] = {1,  7,  6,  9,  10, 11, 16, 8, 2,  3,  4,  5,  12, 13, 17, 18,
                                  19, 20, 21, 22, 23, 1,  7,  0, 14, 26, 24, 25, 1,  9,  8,  99};
    const int to = kTo[r_.Pick(32)];
    int out = to >= 1 && to <= 26 ? to : TensorProto::FLOAT;
    if (opset_ < 6) {
      static const char* kNames[] = {"FLOAT", "INT64", "STRING", "BOOL", "DOUBLE", "nope"};
      static constexpr int kCodes[] = {1, 7, 8, 9, 11, 1};
      const int k = r_.Pick(6);
      AttrString(n, "to", kNames[k]);
      out = kCodes[k];
    } else {
      AttrInt(n, "to", to);
    }
    if (opset_ >= 19 && r_.Flag()) AttrInt(n, "saturate", r_.Int(0, 1));
    if (opset_ >= 24 && r_.Flag()) AttrString(n, "round_mode", r_.Flag() ? "up" : "nearest");
    Out(n, out, x.dims);
  }

  void Concat() {
    const int elem = r_.Pick(4) == 0 ? AnyType() : TensorProto::FLOAT;
    const int rank = static_cast<int>(r_.Bounded(1, 4));
    Val first = Ranked(elem, rank);
    const int64_t axis = Axis(rank);
    const int64_t a = axis < 0 ? axis + rank : axis;
    auto* n = Node("Concat");
    In(n, first);
    const int more = static_cast<int>(r_.Bounded(0, 2));
    for (int i = 0; i < more; ++i) {
      std::vector<int64_t> d = *first.dims;
      if (a >= 0 && a < rank) d[static_cast<size_t>(a)] = Dim();
      if (r_.Pick(8) == 0) d = Dims(rank);  // a mismatch
      In(n, Tensor(elem, d));
    }
    if (opset_ >= 4 || r_.Flag()) AttrInt(n, "axis", axis);
    Out(n, elem);
  }

  void ConstantOfShape() {
    if (opset_ < 9) return Unary();
    const int rank = static_cast<int>(r_.Bounded(0, 4));
    std::vector<int64_t> shape = Ints(static_cast<size_t>(rank), 0, 6);
    Val target;
    if (r_.Pick(3) == 0) {
      Val src = Any(TensorProto::FLOAT);
      auto* s = Node("Shape");  // before the node that reads it
      In(s, src);
      target = Out(s, TensorProto::INT64);
    } else {
      target = IntsConst(shape);
    }
    auto* n = Node("ConstantOfShape");
    In(n, target);
    int elem = TensorProto::FLOAT;
    if (r_.Flag()) {
      elem = r_.Pick(3) == 0 ? AnyType() : TensorProto::FLOAT;
      AttrTensor(n, "value", elem, r_.Pick(6) == 0 ? Dims(1) : std::vector<int64_t>{1});
    }
    Out(n, elem);
  }

  static constexpr const char* kAutoPads[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};

  void Conv(bool transpose) {
    const int spatial = static_cast<int>(r_.Bounded(1, 3));
    const int elem = FloatType();
    const int64_t group = r_.Pick(3) == 0 ? r_.Int(1, 4) : 1;
    const int64_t g = group >= 1 && group <= 8 ? group : 1;
    std::vector<int64_t> xd = {Dim(), Dim() * g};
    for (int i = 0; i < spatial; ++i) xd.push_back(Dim() + 1);
    Val x = r_.Pick(3) == 0 ? Ranked(elem, spatial + 2) : Tensor(elem, xd);
    xd = *x.dims;
    const int64_t c = xd[1] >= 0 ? xd[1] : 1;
    const int64_t m = std::max<int64_t>(1, Dim()) * g;
    std::vector<int64_t> wd;
    if (transpose) {
      wd = {c, std::max<int64_t>(1, m / g)};
    } else {
      wd = {m, std::max<int64_t>(1, c / g)};
    }
    std::vector<int64_t> kernel;
    for (int i = 0; i < spatial; ++i) {
      const int64_t k = 1 + r_.Bounded(0, 3);
      kernel.push_back(k);
      wd.push_back(k);
    }
    if (r_.Pick(10) == 0) wd = Dims(spatial + 2);  // mismatched W
    Val w = r_.Pick(4) == 0 ? Input(elem, wd) : Const(elem, wd);
    auto* n = Node(transpose ? "ConvTranspose" : "Conv");
    In(n, x);
    In(n, w);
    if (r_.Flag()) {
      const int64_t out_channels = transpose ? wd[1] * g : wd[0];
      In(n, Const(elem, {r_.Pick(8) == 0 ? Dim() : out_channels}));
    }
    const size_t s = static_cast<size_t>(spatial);
    if (r_.Flag()) {
      std::vector<int64_t> ks = kernel;
      if (r_.Pick(6) == 0) ks = Ints(Length(s), 1, 1000);
      AttrInts(n, "kernel_shape", ks);
    }
    std::vector<int64_t> strides(s, 1);
    if (r_.Flag()) {
      strides = Ints(Length(s), 1, 3);
      AttrInts(n, "strides", strides);
    }
    if (r_.Flag()) AttrInts(n, "dilations", Ints(Length(s), 1, 3));
    const int pad_mode = r_.Pick(6);
    if (pad_mode >= 4) {
      AttrInts(n, "pads", Ints(Length(2 * s), 0, 3));
    } else if (pad_mode > 0) {
      AttrString(n, "auto_pad", kAutoPads[pad_mode]);
    }
    if (group != 1 || r_.Pick(8) == 0) AttrInt(n, "group", group);
    if (transpose) {
      if (r_.Flag()) {
        // Below the stride mostly (the rule), sometimes not.
        std::vector<int64_t> padding;
        for (size_t i = 0; i < Length(s); ++i) {
          const int64_t stride =
              i < strides.size() && strides[i] >= 1 && strides[i] <= 8 ? strides[i] : 1;
          padding.push_back(r_.Pick(8) == 0 ? r_.Int(0, 3) : r_.Bounded(0, stride - 1));
        }
        AttrInts(n, "output_padding", padding);
      }
      if (r_.Pick(3) == 0) {
        std::vector<int64_t> os = Ints(Length(s), 1, 12);
        if (r_.Pick(4) == 0) os.insert(os.begin(), {1, 1});
        AttrInts(n, "output_shape", os);
      }
    }
    Out(n, elem);
  }

  void Gemm() {
    const int elem = r_.Pick(5) == 0 ? TensorProto::INT64 : FloatType();
    const bool ta = r_.Flag(), tb = r_.Flag();
    const int64_t m = Dim(), k = Dim(), nn = Dim();
    Val a = Tensor(elem, ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k});
    Val b = Tensor(elem, tb ? std::vector<int64_t>{nn, k} : std::vector<int64_t>{k, nn});
    auto* n = Node("Gemm");
    In(n, a);
    In(n, b);
    if (opset_ < 11 || r_.Flag()) {
      static const std::vector<int64_t> kC[] = {{}, {1}, {1, 1}};
      std::vector<int64_t> cd;
      switch (r_.Pick(5)) {
        case 0:
          cd = {m, nn};
          break;
        case 1:
          cd = {nn};
          break;
        case 2:
          cd = {m, 1};
          break;
        case 3:
          cd = {1, nn};
          break;
        default:
          cd = kC[r_.Pick(3)];
      }
      In(n, Tensor(elem, cd));
    }
    if (ta) AttrInt(n, "transA", 1);
    if (tb) AttrInt(n, "transB", r_.Int(1, 2));
    if (r_.Flag()) AttrFloat(n, "alpha", r_.Float());
    if (r_.Flag()) AttrFloat(n, "beta", r_.Float());
    if (opset_ < 7 && r_.Flag()) AttrInt(n, "broadcast", 1);
    Out(n, elem, std::vector<int64_t>{m, nn});
  }

  void MatMul() {
    const int elem = r_.Pick(5) == 0 ? TensorProto::INT32 : FloatType();
    const int ra = static_cast<int>(r_.Bounded(1, 4)), rb = static_cast<int>(r_.Bounded(1, 4));
    const int64_t k = Dim();
    std::vector<int64_t> ad = Dims(ra), bd = Dims(rb);
    ad.back() = k;
    if (rb == 1) {
      bd[0] = k;
    } else {
      bd[static_cast<size_t>(rb - 2)] = k;
    }
    // Batch dims broadcastable.
    for (int i = 0; i + 2 < std::min(ra, rb); ++i) {
      if (r_.Flag())
        bd[static_cast<size_t>(rb - 3 - i)] = 1;
      else if (r_.Pick(4) != 0)
        bd[static_cast<size_t>(rb - 3 - i)] = ad[static_cast<size_t>(ra - 3 - i)];
    }
    Val a = Tensor(elem, ad), b = Tensor(elem, bd);
    auto* n = Node("MatMul");
    In(n, a);
    In(n, b);
    Out(n, elem);
  }

  void Lstm() {
    const int elem = r_.Pick(4) == 0 ? FloatType() : TensorProto::FLOAT;
    static const char* kDirections[] = {"forward", "reverse", "bidirectional", "sideways"};
    const int dir = r_.Pick(8) == 0 ? 3 : r_.Pick(3);
    const int64_t dirs = dir == 2 ? 2 : 1;
    const bool layout = opset_ >= 14 && r_.Pick(4) == 0;
    const int64_t seq = Dim(), batch = Dim(), input = Dim();
    const int64_t hidden = 1 + r_.Bounded(0, 4);
    Val x = Tensor(elem, layout ? std::vector<int64_t>{batch, seq, input}
                                : std::vector<int64_t>{seq, batch, input});
    Val w = Tensor(elem, {dirs, 4 * hidden, r_.Pick(10) == 0 ? Dim() : input});
    Val rr = Tensor(elem, {dirs, 4 * hidden, hidden});
    auto* n = Node("LSTM");
    In(n, x);
    In(n, w);
    In(n, rr);
    const int optional = static_cast<int>(r_.Bounded(0, 5));
    if (optional >= 1) {
      if (r_.Flag())
        In(n, Tensor(elem, {dirs, 8 * hidden}));
      else
        NoInput(n);
    }
    if (optional >= 2) {
      if (r_.Flag()) {
        std::vector<int64_t> lens;
        for (int64_t b = 0; b < batch; ++b) lens.push_back(r_.Int(0, seq));
        if (r_.Pick(6) == 0) lens.push_back(1);
        In(n, IntsConst(lens, TensorProto::INT32));
      } else {
        NoInput(n);
      }
    }
    const std::vector<int64_t> state = layout ? std::vector<int64_t>{batch, dirs, hidden}
                                              : std::vector<int64_t>{dirs, batch, hidden};
    if (optional >= 3) {
      if (r_.Flag())
        In(n, Tensor(elem, state));
      else
        NoInput(n);
    }
    if (optional >= 4) {
      if (r_.Flag())
        In(n, Tensor(elem, state));
      else
        NoInput(n);
    }
    if (optional >= 5) In(n, Tensor(elem, {dirs, 3 * hidden}));
    if (dir != 0 || r_.Flag()) AttrString(n, "direction", kDirections[dir]);
    if (r_.Pick(3) != 0) AttrInt(n, "hidden_size", r_.Pick(8) == 0 ? r_.Int(1, 8) : hidden);
    if (r_.Pick(3) == 0) {
      static const char* kActs[] = {
          "Sigmoid",         "Tanh",       "Relu",        "Affine", "LeakyRelu",
          "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu",    "Softsign",
          "Softplus",        "tanh",       "Gelu"};
      std::vector<std::string> acts;
      for (size_t i = 0; i < Length(static_cast<size_t>(3 * dirs)); ++i) {
        acts.push_back(kActs[r_.Pick(13)]);
      }
      AttrStrings(n, "activations", acts);
      if (r_.Flag()) AttrFloats(n, "activation_alpha", {r_.Float(), r_.Float()});
      if (r_.Flag()) AttrFloats(n, "activation_beta", {r_.Float()});
    }
    if (r_.Pick(4) == 0) AttrFloat(n, "clip", r_.Float());
    if (r_.Pick(4) == 0) AttrInt(n, "input_forget", r_.Int(0, 1));
    if (layout) AttrInt(n, "layout", 1);
    // Which of Y, Y_h, Y_c are requested (none at all sometimes: the node still runs).
    const int mask = r_.Pick(8);
    for (int o = 0; o < 3; ++o) {
      if (mask & (1 << o)) {
        Out(n, elem);
      } else if ((mask >> (o + 1)) != 0 || (mask == 0 && o == 0)) {
        NoOutput(n);
      }
    }
  }

  // kind 0 AveragePool, 1 MaxPool, 2 GlobalAveragePool.
  void Pool(int kind) {
    const int spatial = static_cast<int>(r_.Bounded(1, 3));
    int elem = FloatType();
    if (kind == 1 && opset_ >= 12 && r_.Pick(5) == 0) {
      elem = r_.Flag() ? TensorProto::INT8 : TensorProto::UINT8;
    }
    Val x = Ranked(elem, spatial + 2);
    static const char* kOps[] = {"AveragePool", "MaxPool", "GlobalAveragePool"};
    auto* n = Node(kOps[kind]);
    In(n, x);
    if (kind == 2) {
      Out(n, elem);
      return;
    }
    const size_t s = static_cast<size_t>(spatial);
    std::vector<int64_t> ks = Ints(Length(s), 1, 3);
    AttrInts(n, "kernel_shape", ks);
    if (r_.Flag()) AttrInts(n, "strides", Ints(Length(s), 1, 3));
    if (r_.Flag() && (kind == 1 ? opset_ >= 10 : opset_ >= 19)) {
      AttrInts(n, "dilations", Ints(Length(s), 1, 3));
    }
    const int pad_mode = r_.Pick(6);
    if (pad_mode >= 4) {
      AttrInts(n, "pads", Ints(Length(2 * s), 0, 2));
    } else if (pad_mode > 0) {
      AttrString(n, "auto_pad", kAutoPads[pad_mode]);
    }
    if (opset_ >= 10 && r_.Flag()) AttrInt(n, "ceil_mode", r_.Int(0, 1));
    if (kind == 0 && opset_ >= 7 && r_.Flag()) AttrInt(n, "count_include_pad", r_.Int(0, 1));
    if (kind == 1 && opset_ >= 8 && r_.Flag()) AttrInt(n, "storage_order", r_.Int(0, 1));
    Out(n, elem);
    if (kind == 1 && opset_ >= 8 && r_.Flag()) Out(n, TensorProto::INT64);
  }

  void BatchNorm() {
    const int elem = FloatType();
    const int rank = static_cast<int>(r_.Bounded(2, 5));
    Val x = Ranked(elem, rank);
    const int64_t c = (*x.dims)[1] >= 0 ? (*x.dims)[1] : 1;
    auto* n = Node("BatchNormalization");
    In(n, x);
    for (int i = 0; i < 4; ++i) {
      const int pelem = opset_ >= 15 && r_.Pick(6) == 0 ? FloatType() : elem;
      In(n, Tensor(pelem, {r_.Pick(10) == 0 ? Dim() : c}));
    }
    if (r_.Flag()) AttrFloat(n, "epsilon", r_.Float());
    if (r_.Flag()) AttrFloat(n, "momentum", r_.Float());
    if (opset_ < 9 && r_.Flag()) AttrInt(n, "spatial", r_.Int(0, 1));
    if (opset_ < 7 && r_.Flag()) AttrInt(n, "is_test", 1);
    if (opset_ >= 14 && r_.Pick(4) == 0) AttrInt(n, "training_mode", r_.Int(0, 1));
    Out(n, elem, x.dims);
  }

  void Pad() {
    const int elem = r_.Pick(4) == 0 ? AnyType() : FloatType();
    const int rank = static_cast<int>(r_.Bounded(1, 4));
    Val x = Ranked(elem, rank);
    auto* n = Node("Pad");
    In(n, x);
    static const char* kModes[] = {"constant", "reflect", "edge", "wrap", "mirror"};
    const int mode = r_.Pick(8) == 0 ? 4 : r_.Pick(opset_ >= 19 ? 4 : 3);
    if (mode != 0 || r_.Flag()) AttrString(n, "mode", kModes[mode]);
    const bool use_axes = opset_ >= 18 && r_.Pick(3) == 0;
    std::vector<int64_t> axes =
        use_axes ? Axes(rank, static_cast<size_t>(rank)) : std::vector<int64_t>{};
    const size_t count = Length(2 * (use_axes ? axes.size() : static_cast<size_t>(rank)));
    std::vector<int64_t> pads = Ints(count, -2, 3);
    if (opset_ < 11) {
      AttrInts(n, opset_ < 2 ? "paddings" : "pads", pads);
      if (r_.Flag()) AttrFloat(n, "value", r_.Float());
    } else {
      In(n, r_.Pick(6) == 0 ? Input(TensorProto::INT64, {static_cast<int64_t>(count)})
                            : IntsConst(pads));
      if (use_axes || r_.Flag()) {
        if (r_.Flag())
          In(n, Tensor(x.elem, r_.Pick(6) == 0 ? Dims(1) : std::vector<int64_t>{}));
        else
          NoInput(n);
      }
      if (use_axes) In(n, IntsConst(axes, r_.Flag() ? TensorProto::INT32 : TensorProto::INT64));
    }
    Out(n, elem);
  }

  void Reshape() {
    const int elem = r_.Pick(4) == 0 ? AnyType() : TensorProto::FLOAT;
    Val x = Any(elem);
    auto* n = Node("Reshape");
    In(n, x);
    const int rank = static_cast<int>(r_.Bounded(0, 4));
    std::vector<int64_t> shape;
    int64_t total = 1;
    bool known = x.dims.has_value();
    if (known) {
      for (int64_t d : *x.dims) {
        if (d < 0)
          known = false;
        else
          total *= d;
      }
    }
    for (int i = 0; i < rank; ++i) shape.push_back(r_.Int(-1, 6));
    if (known && rank > 0 && r_.Flag()) {
      // A valid target: the total in the first dim, 1 elsewhere, or -1 somewhere.
      std::fill(shape.begin(), shape.end(), 1);
      shape[static_cast<size_t>(r_.Bounded(0, rank - 1))] = r_.Flag() ? -1 : total;
    }
    if (opset_ < 5) {
      AttrInts(n, "shape", shape);
    } else {
      In(n, IntsConst(shape));
      if (opset_ >= 14 && r_.Flag()) AttrInt(n, "allowzero", r_.Int(0, 1));
    }
    Out(n, elem);
  }

  void Resize() {
    if (opset_ < 10) return Pad();
    const int elem = r_.Pick(4) == 0 ? AnyType() : FloatType();
    const int rank = static_cast<int>(r_.Bounded(1, 4));
    Val x = Ranked(elem, rank);
    auto* n = Node("Resize");
    In(n, x);
    static const char* kModes[] = {"nearest", "linear", "cubic", "area"};
    const int mode = r_.Pick(8) == 0 ? 3 : r_.Pick(3);
    if (mode != 0 || r_.Flag()) AttrString(n, "mode", kModes[mode]);
    const bool use_axes = opset_ >= 18 && r_.Pick(3) == 0;
    std::vector<int64_t> axes =
        use_axes ? Axes(rank, static_cast<size_t>(rank)) : std::vector<int64_t>{};
    const size_t count = Length(use_axes ? axes.size() : static_cast<size_t>(rank));
    const bool sizes = opset_ >= 11 && r_.Flag();
    std::vector<float> scales;
    for (size_t i = 0; i < count; ++i) {
      static constexpr float kScales[] = {1.0f, 2.0f, 0.5f, 1.5f, 3.0f, 0.25f, 0.75f, 1.0f};
      scales.push_back(r_.Pick(8) == 0 ? r_.Float() : kScales[r_.Pick(8)]);
    }
    if (opset_ == 10) {
      In(n, FloatsConst(scales, {static_cast<int64_t>(scales.size())}));
    } else {
      static const char* kCoords[] = {
          "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
          "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize", "bogus"};
      const int coord = r_.Pick(8);
      if (coord != 0 || r_.Flag()) AttrString(n, "coordinate_transformation_mode", kCoords[coord]);
      if (coord == 6 || r_.Pick(6) == 0) {
        std::vector<float> roi;
        for (size_t i = 0; i < 2 * count; ++i) {
          roi.push_back(r_.Pick(4) == 0 ? r_.Float()
                                        : (i < count ? 0.0f : 1.0f) + 0.25f * (r_.Byte() % 3));
        }
        In(n, FloatsConst(roi, {static_cast<int64_t>(roi.size())}));
      } else {
        if (opset_ < 13) {
          In(n, FloatsConst({}, {0}));
        } else {
          NoInput(n);
        }
      }
      if (sizes) {
        if (opset_ < 13) {
          In(n, FloatsConst({}, {0}));
        } else {
          NoInput(n);
        }
        std::vector<int64_t> sz;
        for (size_t i = 0; i < count; ++i) sz.push_back(r_.Int(0, 9));
        In(n, IntsConst(sz));
      } else {
        In(n, FloatsConst(scales, {static_cast<int64_t>(scales.size())}));
      }
      static const char* kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
      if (r_.Flag()) AttrString(n, "nearest_mode", kNearest[r_.Pick(4)]);
      if (r_.Pick(4) == 0) AttrFloat(n, "cubic_coeff_a", r_.Float());
      if (r_.Pick(3) == 0) AttrInt(n, "exclude_outside", r_.Int(0, 1));
      if (r_.Pick(4) == 0) AttrFloat(n, "extrapolation_value", r_.Float());
      if (opset_ >= 18) {
        if (r_.Pick(3) == 0) AttrInt(n, "antialias", r_.Int(0, 1));
        if (use_axes) AttrInts(n, "axes", axes);
        static const char* kPolicy[] = {"stretch", "not_larger", "not_smaller"};
        if (sizes && r_.Flag()) AttrString(n, "keep_aspect_ratio_policy", kPolicy[r_.Pick(3)]);
      }
    }
    Out(n, elem);
  }

  void Slice() {
    const int elem = r_.Pick(4) == 0 ? AnyType() : TensorProto::FLOAT;
    const int rank = static_cast<int>(r_.Bounded(1, 4));
    Val x = Ranked(elem, rank);
    auto* n = Node("Slice");
    In(n, x);
    const size_t count = static_cast<size_t>(r_.Bounded(1, rank));
    std::vector<int64_t> starts = Ints(Length(count), -3, 4), ends = Ints(count, -3, 6);
    std::vector<int64_t> axes;
    for (size_t i = 0; i < count; ++i)
      axes.push_back(r_.Pick(4) == 0 ? Axis(rank) : static_cast<int64_t>(i));
    if (opset_ < 10) {
      AttrInts(n, "starts", starts);
      AttrInts(n, "ends", ends);
      if (r_.Flag()) AttrInts(n, "axes", axes);
    } else {
      const int index = r_.Flag() ? TensorProto::INT64 : TensorProto::INT32;
      In(n, IntsConst(starts, index));
      In(n, IntsConst(ends, index));
      const int optional = r_.Pick(3);
      if (optional >= 1) In(n, IntsConst(axes, index));
      if (optional >= 2) In(n, IntsConst(Ints(count, -2, 3), index));
    }
    Out(n, elem);
  }

  void Split() {
    const int elem = r_.Pick(4) == 0 ? AnyType() : TensorProto::FLOAT;
    const int rank = static_cast<int>(r_.Bounded(1, 4));
    Val x = Ranked(elem, rank);
    auto* n = Node("Split");
    In(n, x);
    const int64_t axis = Axis(rank);
    if (r_.Flag()) AttrInt(n, "axis", axis);
    const int outputs = static_cast<int>(r_.Bounded(1, 3));
    const int how = r_.Pick(3);
    if (how == 1) {
      std::vector<int64_t> split = Ints(Length(static_cast<size_t>(outputs)), 0, 4);
      if (opset_ < 13) {
        AttrInts(n, "split", split);
      } else {
        In(n, IntsConst(split));
      }
    } else if (how == 2 && opset_ >= 18) {
      AttrInt(n, "num_outputs", r_.Int(1, 4));
    }
    for (int o = 0; o < outputs; ++o) Out(n, elem);
  }

  void Squeeze(bool squeeze) {
    const int elem = r_.Pick(4) == 0 ? AnyType() : TensorProto::FLOAT;
    const int rank = static_cast<int>(r_.Bounded(0, 4));
    Val x = Ranked(elem, rank);
    auto* n = Node(squeeze ? "Squeeze" : "Unsqueeze");
    In(n, x);
    std::vector<int64_t> axes = Axes(squeeze ? rank : rank + 2, 3);
    if (!squeeze && axes.empty()) axes.push_back(0);
    if (opset_ < 13) {
      if (!squeeze || !axes.empty()) AttrInts(n, "axes", axes);
    } else if (!squeeze || !axes.empty() || r_.Flag()) {
      In(n, IntsConst(axes));
    }
    Out(n, elem);
  }

  void Transpose() {
    const int elem = r_.Pick(4) == 0 ? AnyType() : TensorProto::FLOAT;
    const int rank = static_cast<int>(r_.Bounded(0, 5));
    Val x = Ranked(elem, rank);
    auto* n = Node("Transpose");
    In(n, x);
    if (r_.Pick(4) != 0) {
      std::vector<int64_t> perm(static_cast<size_t>(rank));
      for (int i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = i;
      for (int i = rank - 1; i > 0; --i)
        std::swap(perm[static_cast<size_t>(i)], perm[r_.Byte() % (i + 1)]);
      if (r_.Pick(8) == 0 && rank > 0) perm[0] = r_.Int(-2, rank + 1);
      AttrInts(n, "perm", perm);
    }
    Out(n, elem);
  }

  void Flatten() {
    const int elem = r_.Pick(4) == 0 ? AnyType() : TensorProto::FLOAT;
    const int rank = static_cast<int>(r_.Bounded(0, 4));
    Val x = Ranked(elem, rank);
    auto* n = Node("Flatten");
    In(n, x);
    if (r_.Flag()) AttrInt(n, "axis", r_.Int(-rank - 1, rank + 1));
    Out(n, elem);
  }

  void Gather() {
    const int elem = r_.Pick(4) == 0 ? AnyType() : TensorProto::FLOAT;
    const int rank = static_cast<int>(r_.Bounded(1, 4));
    Val x = Ranked(elem, rank);
    auto* n = Node("Gather");
    In(n, x);
    const int irank = static_cast<int>(r_.Bounded(0, 2));
    In(n, Const(r_.Flag() ? TensorProto::INT64 : TensorProto::INT32, Dims(irank)));
    const int64_t axis = Axis(rank);
    if (axis != 0 || r_.Flag()) AttrInt(n, "axis", axis);
    Out(n, elem);
  }

  void ShapeOrSize() {
    const bool size = r_.Flag();
    Val x = Any(AnyType(), 5);
    auto* n = Node(size ? "Size" : "Shape");
    In(n, x);
    if (!size && opset_ >= 15) {
      if (r_.Flag()) AttrInt(n, "start", r_.Int(-4, 4));
      if (r_.Flag()) AttrInt(n, "end", r_.Int(-4, 5));
    }
    Out(n, TensorProto::INT64);
  }

  void Reduce() {
    const bool mean = r_.Flag();
    int elem = FloatType();
    if (!mean && r_.Pick(4) == 0) elem = TensorProto::INT32;
    const int rank = static_cast<int>(r_.Bounded(0, 4));
    Val x = Ranked(elem, rank);
    auto* n = Node(mean ? "ReduceMean" : "ReduceMax");
    In(n, x);
    std::vector<int64_t> axes = Axes(rank, 3);
    const bool input_axes = opset_ >= 18;
    if (input_axes) {
      if (!axes.empty() || r_.Flag()) In(n, IntsConst(axes));
      if (r_.Flag()) AttrInt(n, "noop_with_empty_axes", r_.Int(0, 1));
    } else if (!axes.empty()) {
      AttrInts(n, "axes", axes);
    }
    if (r_.Flag()) AttrInt(n, "keepdims", r_.Int(0, 1));
    Out(n, elem);
  }

  void Softmax() {
    const int elem = FloatType();
    const int rank = static_cast<int>(r_.Bounded(0, 4));
    Val x = Ranked(elem, rank);
    auto* n = Node("Softmax");
    In(n, x);
    if (r_.Flag()) AttrInt(n, "axis", Axis(rank));
    Out(n, elem, x.dims);
  }

  void Clip() {
    const int elem = r_.Pick(5) == 0 ? TensorProto::INT32 : FloatType();
    Val x = Any(elem);
    auto* n = Node("Clip");
    In(n, x);
    if (opset_ < 11) {
      if (r_.Flag()) AttrFloat(n, "min", r_.Float());
      if (r_.Flag()) AttrFloat(n, "max", r_.Float());
    } else {
      const int inputs = r_.Pick(3);
      if (inputs >= 1) {
        if (r_.Flag())
          In(n, Tensor(elem, r_.Pick(6) == 0 ? Dims(1) : std::vector<int64_t>{}));
        else
          NoInput(n);
      }
      if (inputs >= 2) In(n, Tensor(elem, {}));
    }
    Out(n, elem, x.dims);
  }

  void Constant() {
    auto* n = Node("Constant");
    const int how = opset_ >= 12 ? r_.Pick(4) : 0;
    if (how == 0) {
      const int elem = AnyType();
      AttrTensor(n, "value", elem, Dims(static_cast<int>(r_.Bounded(0, 3))));
      Out(n, elem);
    } else if (how == 1) {
      AttrFloat(n, "value_float", r_.Float());
      Out(n, TensorProto::FLOAT, std::vector<int64_t>{});
    } else if (how == 2) {
      const std::vector<int64_t> v = Ints(static_cast<size_t>(r_.Bounded(0, 4)), -2, 6);
      AttrInts(n, "value_ints", v);
      Out(n, TensorProto::INT64, std::vector<int64_t>{static_cast<int64_t>(v.size())});
    } else {
      AttrInt(n, "value_int", r_.Int(-2, 6));
      Out(n, TensorProto::INT64, std::vector<int64_t>{});
    }
  }

  // The exporters' shape subgraph: Shape -> Gather -> Unsqueeze -> Concat -> Reshape (folded at
  // planning when the input's shape is static).
  void ShapeChain() {
    if (opset_ < 13) return Reshape();
    const int rank = static_cast<int>(r_.Bounded(1, 4));
    Val x = Ranked(TensorProto::FLOAT, rank);
    auto* s = Node("Shape");
    In(s, x);
    Val shape = Out(s, TensorProto::INT64);
    auto* g = Node("Gather");
    In(g, shape);
    In(g, IntsConst({r_.Int(-rank, rank - 1)}));
    AttrInt(g, "axis", 0);
    Val dim = Out(g, TensorProto::INT64);
    auto* c = Node("Concat");
    In(c, IntsConst({r_.Int(-1, 2)}));
    In(c, dim);
    AttrInt(c, "axis", 0);
    Val target = Out(c, TensorProto::INT64);
    auto* reshape = Node("Reshape");
    In(reshape, x);
    In(reshape, target);
    Out(reshape, TensorProto::FLOAT);
  }

  Recipe r_;
  int opset_ = 13;
  onnx::ModelProto model_;
  onnx::GraphProto* g_ = nullptr;
  std::vector<Val> pool_;
  int next_ = 0;
};

}  // namespace

std::string BuildRecipeModel(const uint8_t* data, size_t size) {
  return Builder(data, size).Build();
}

}  // namespace idem::fuzz
