// Hostile models against the operators of the real models (issue 17, item 6): for each thing a
// model file controls (kernel_shape, strides, dilations, pads, group, output_shape, Resize sizes,
// Pad pads, ConstantOfShape's shape, Slice steps, LSTM's dims, Gemm/MatMul dims, Softmax's axis,
// Cast's `to`), a few bytes of model must not buy a cost out of proportion: a clear Status error
// naming the node and the rule, at Session::Create when the shapes are static (planning, constant
// folding) and at Run otherwise, before the large allocation or the long loop. Work that is
// outputs x kernel is bounded by Limits::max_elements per node (docs/limits.md).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "idem/idem.h"
#include "idem/session_proto.h"
#include "tests/status_matchers.h"
#include "tests/test_models.h"

namespace idem {
namespace {

using testing::AddValueInfo;
using testing::EmptyModel;

constexpr int64_t kSymbolic = -1;  // a dim declared by name ("N"), known only at run time

// A one-graph model built node by node.
class Model {
 public:
  explicit Model(int opset) : m_(EmptyModel(opset, 8)), g_(m_.mutable_graph()) {
    g_->set_name("hostile");
  }
  Model& Input(const std::string& name, ElementType type, const std::vector<int64_t>& dims) {
    AddValueInfo(g_->mutable_input(), name, testing::TensorTypeProto(type, dims));
    return *this;
  }
  // A graph output of `type` without a shape (the planner's shape).
  Model& Output(const std::string& name, ElementType type = ElementType::kFloat) {
    AddValueInfo(g_->mutable_output(), name, testing::Unshaped(type));
    return *this;
  }
  // An initializer of `dims` holding `values` (int64 or float), or no values for an empty one.
  Model& Ints(const std::string& name, const std::vector<int64_t>& values,
              ElementType type = ElementType::kInt64) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(static_cast<int32_t>(type));
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) {
      if (type == ElementType::kInt32) {
        t->add_int32_data(static_cast<int32_t>(v));
      } else {
        t->add_int64_data(v);
      }
    }
    return *this;
  }
  Model& Floats(const std::string& name, const std::vector<int64_t>& dims,
                const std::vector<float>& values) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(static_cast<int32_t>(ElementType::kFloat));
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  Model& Node(const std::string& op, const std::vector<std::string>& inputs,
              const std::vector<std::string>& outputs, const std::string& name) {
    node_ = testing::AddNode(g_, op, inputs, outputs, name);
    return *this;
  }
  Model& Attr(const std::string& name, int64_t v) {
    testing::AddIntAttribute(node_, name, v);
    return *this;
  }
  Model& Attr(const std::string& name, const std::vector<int64_t>& v) {
    auto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
    return *this;
  }
  Model& Attr(const std::string& name, const std::string& v) {
    auto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
    return *this;
  }
  const onnx::ModelProto& proto() const { return m_; }

 private:
  onnx::ModelProto m_;
  onnx::GraphProto* g_;
  onnx::NodeProto* node_ = nullptr;
};

Result<Session> Create(const Model& m, const SessionOptions& options = {}) {
  return CreateSessionFromProto(m.proto(), "", options);
}

Value FloatTensor(std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n), 0.5f);
  return testing::MakeTensorOf(ElementType::kFloat, std::move(dims), std::move(v));
}

// Runs `f` and fails the test when it takes longer than a few seconds: a refused model must be
// refused before the work, not after it (the unbounded versions of these run for hours).
template <class F>
auto Quickly(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  auto result = f();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0) << "refusing took too long: the bound came after the work";
  return result;
}

constexpr int64_t k2p30 = int64_t{1} << 30;
constexpr int64_t k2p40 = int64_t{1} << 40;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// ---- Conv: outputs x kernel
// ----------------------------------------------------------------------

// A 1024 x 1024 kernel padded around a 1 x 1 input: 1026^2 outputs x 2^20 taps = 1.1e12
// multiply-adds for a model of a few hundred bytes (W is a graph input with a static shape).
Model HugeKernelConv(int64_t in, int64_t k) {
  Model m(11);
  m.Input("x", ElementType::kFloat, {1, 1, in, in})
      .Input("w", ElementType::kFloat, {1, 1, k, k})
      .Node("Conv", {"x", "w"}, {"y"}, "conv")
      .Attr("pads", std::vector<int64_t>{k, k, k, k})
      .Output("y");
  return m;
}

TEST(HostileModelTest, ConvHugeKernelOnPaddingRefusedAtCreate) {
  EXPECT_STATUS(Quickly([] { return Create(HugeKernelConv(1, 1024)); }),
                StatusCode::kResourceExhausted, "node 'conv' (Conv-11): Conv: the node's work");
  EXPECT_STATUS(Create(HugeKernelConv(1, 1024)), StatusCode::kResourceExhausted,
                "multiply-adds (outputs x C/group x kernel), exceeds the per-node work bound "
                "max_elements = 1099511627776");
}

TEST(HostileModelTest, ConvHugeKernelOnPaddingRefusedAtRun) {
  // Symbolic dims: the planner cannot know the work; the kernel checks it before allocating.
  Model m(11);
  m.Input("x", ElementType::kFloat, {1, 1, kSymbolic, kSymbolic})
      .Input("w", ElementType::kFloat, {1, 1, kSymbolic, kSymbolic})
      .Node("Conv", {"x", "w"}, {"y"}, "conv")
      .Attr("pads", std::vector<int64_t>{63, 63, 63, 63})
      .Output("y");
  SessionOptions options;
  options.limits.max_elements = uint64_t{1} << 20;
  auto session = Create(m, options);
  ASSERT_TRUE(session.ok()) << session.status().message();
  // 64^2 outputs x 4096 taps = 1.7e7 > 2^20.
  EXPECT_STATUS(Quickly([&] {
                  return session->Run({FloatTensor({1, 1, 1, 1}), FloatTensor({1, 1, 64, 64})});
                }),
                StatusCode::kResourceExhausted,
                "node 'conv' (Conv-11): Conv: the node's work, 1.678e+07");
  // A legitimate Conv under the same limits runs.
  auto fine = session->Run({FloatTensor({1, 1, 1, 1}), FloatTensor({1, 1, 3, 3})});
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  EXPECT_EQ(fine->at(0).tensor().shape()[2], 125);
}

TEST(HostileModelTest, ConvTransposeOutputShapeRefusedAtCreate) {
  // output_shape 2^40 on a one-element input: each output is written once.
  Model m(11);
  m.Input("x", ElementType::kFloat, {1, 1, 1})
      .Input("w", ElementType::kFloat, {1, 1, 1})
      .Node("ConvTranspose", {"x", "w"}, {"y"}, "deconv")
      .Attr("output_shape", std::vector<int64_t>{k2p40})
      .Output("y");
  EXPECT_STATUS(Create(m), StatusCode::kResourceExhausted,
                "node 'deconv' (ConvTranspose-11): ConvTranspose: the node's work, 1.1e+12");
}

TEST(HostileModelTest, ConvTransposePadsAsLargeAsInt64) {
  // full - pad_begin - pad_end overflowed int64 (undefined behaviour) before.
  Model m(11);
  m.Input("x", ElementType::kFloat, {1, 1, 3})
      .Input("w", ElementType::kFloat, {1, 1, 2})
      .Node("ConvTranspose", {"x", "w"}, {"y"}, "deconv")
      .Attr("pads", std::vector<int64_t>{kMax, kMax})
      .Output("y");
  EXPECT_STATUS(Create(m), StatusCode::kInvalidArgument,
                "node 'deconv' (ConvTranspose-11): ConvTranspose: pads 9223372036854775807 + "
                "9223372036854775807 along spatial axis 0 leave no output");
}

TEST(HostileModelTest, ConvGroupAndKernelRules) {
  Model m(11);
  m.Input("x", ElementType::kFloat, {1, 3, 5, 5})
      .Input("w", ElementType::kFloat, {2, 1, 3, 3})
      .Node("Conv", {"x", "w"}, {"y"}, "conv")
      .Attr("group", int64_t{2})
      .Output("y");
  EXPECT_STATUS(Create(m), StatusCode::kInvalidArgument,
                "node 'conv' (Conv-11): Conv: X has 3 channels, not divisible by group 2");
  Model k(11);
  k.Input("x", ElementType::kFloat, {1, 1, 5, 5})
      .Input("w", ElementType::kFloat, {1, 1, 3, 3})
      .Node("Conv", {"x", "w"}, {"y"}, "conv")
      .Attr("dilations", std::vector<int64_t>{k2p30, 1})
      .Output("y");
  EXPECT_STATUS(Create(k), StatusCode::kInvalidArgument,
                "node 'conv' (Conv-11): Conv: the kernel along spatial axis 0 (3 with dilation "
                "1073741824: 2147483649 positions) is larger than the padded input");
}

// ---- Pools: kernel_shape, pads, strides
// -----------------------------------------------------------

// kernel_shape 2^30 with pads to match on a 4096-wide input: ~2^30 outputs (4 GiB, within the
// default run budget) x 4096 taps each.
Model HugeWindowPool(const char* op, int64_t width) {
  Model m(19);
  m.Input("x", ElementType::kFloat, {1, 1, width})
      .Node(op, {"x"}, {"y"}, "pool")
      .Attr("kernel_shape", std::vector<int64_t>{k2p30})
      .Attr("pads", std::vector<int64_t>{k2p30 - 1, k2p30 - 1})
      .Output("y");
  return m;
}

TEST(HostileModelTest, PoolHugeKernelRefusedAtCreate) {
  for (const char* op : {"MaxPool", "AveragePool"}) {
    EXPECT_STATUS(Quickly([&] { return Create(HugeWindowPool(op, 4096)); }),
                  StatusCode::kResourceExhausted,
                  std::string("node 'pool' (") + op + "-" + (op[0] == 'M' ? "12" : "19") +
                      "): " + op + ": the node's work, 4.398e+12 window taps");
  }
}

TEST(HostileModelTest, PoolHugeKernelRefusedAtRunBeforeAllocating) {
  auto session = Create(HugeWindowPool("MaxPool", kSymbolic));
  ASSERT_TRUE(session.ok()) << session.status().message();
  EXPECT_STATUS(Quickly([&] {
                  return session->Run({FloatTensor({1, 1, 4096})});
                }),
                StatusCode::kResourceExhausted,
                "node 'pool' (MaxPool-12): MaxPool: the node's work");
}

TEST(HostileModelTest, PoolDilationOverflowAndWindowOnlyPadding) {
  Model m(19);
  m.Input("x", ElementType::kFloat, {1, 1, 8})
      .Node("MaxPool", {"x"}, {"y"}, "pool")
      .Attr("kernel_shape", std::vector<int64_t>{3})
      .Attr("dilations", std::vector<int64_t>{kMax})
      .Output("y");
  EXPECT_STATUS(Create(m), StatusCode::kInvalidModel,
                "node 'pool' (MaxPool-12): kernel_shape 3 with dilation 9223372036854775807 "
                "overflows int64");
  Model p(19);
  p.Input("x", ElementType::kFloat, {1, 1, kSymbolic})
      .Node("MaxPool", {"x"}, {"y"}, "pool")
      .Attr("kernel_shape", std::vector<int64_t>{2})
      .Attr("pads", std::vector<int64_t>{4, 0})
      .Output("y");
  auto session = Create(p);
  ASSERT_TRUE(session.ok()) << session.status().message();
  EXPECT_STATUS(session->Run({FloatTensor({1, 1, 2})}), StatusCode::kInvalidArgument,
                "the window at output position 0 covers only padding");
}

// ---- LSTM: seq_length x batch x hidden on an empty X
// ----------------------------------------------

// X [2^40, 1, 0] holds no element (input_size 0), yet every step of the 2^40 runs the gates.
Model EmptyInputLstm(bool symbolic) {
  Model m(14);
  if (symbolic) {
    m.Input("x", ElementType::kFloat, {kSymbolic, 1, 0});
  } else {
    m.Floats("x", {k2p40, 1, 0}, {});
  }
  m.Floats("w", {1, 4, 0}, {})
      .Floats("r", {1, 4, 1}, {0.5f, 0.5f, 0.5f, 0.5f})
      .Node("LSTM", {"x", "w", "r"}, {"", "y_h"}, "lstm")
      .Attr("hidden_size", int64_t{1})
      .Output("y_h");
  return m;
}

TEST(HostileModelTest, LstmLongEmptySequenceRefusedAtCreate) {
  EXPECT_STATUS(Quickly([] { return Create(EmptyInputLstm(false)); }),
                StatusCode::kResourceExhausted,
                "node 'lstm' (LSTM-14): LSTM: the node's work, 5.498e+12 multiply-adds");
}

TEST(HostileModelTest, LstmLongEmptySequenceRefusedAtRun) {
  auto session = Create(EmptyInputLstm(true));
  ASSERT_TRUE(session.ok()) << session.status().message();
  auto x = Value::MakeTensor(ElementType::kFloat, {k2p40, 1, 0}, Buffer());
  ASSERT_TRUE(x.ok()) << x.status().message();
  EXPECT_STATUS(Quickly([&] { return session->Run({*x}); }), StatusCode::kResourceExhausted,
                "node 'lstm' (LSTM-14): LSTM: the node's work");
  // A short empty sequence is fine: Y_h is the state after 3 steps of zero input.
  auto short_x = Value::MakeTensor(ElementType::kFloat, {3, 1, 0}, Buffer());
  auto y = session->Run({*short_x});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(y->at(0).tensor().element_count(), 1);
}

TEST(HostileModelTest, LstmDimsAndSequenceLens) {
  Model m(14);
  m.Input("x", ElementType::kFloat, {2, 1, 3})
      .Input("w", ElementType::kFloat, {1, 8, 3})
      .Input("r", ElementType::kFloat, {1, 8, 2})
      .Node("LSTM", {"x", "w", "r"}, {"y"}, "lstm")
      .Attr("hidden_size", int64_t{3})
      .Output("y");
  EXPECT_STATUS(Create(m), StatusCode::kInvalidArgument,
                "node 'lstm' (LSTM-14): LSTM: input 'W' has dim 1 = 8; it must be 4 * "
                "hidden_size 3 = 12");
  Model d(14);
  d.Input("x", ElementType::kFloat, {2, 1, 3})
      .Input("w", ElementType::kFloat, {1, 8, 3})
      .Input("r", ElementType::kFloat, {1, 8, 2})
      .Node("LSTM", {"x", "w", "r"}, {"y"}, "lstm")
      .Attr("direction", std::string("sideways"))
      .Output("y");
  EXPECT_STATUS(Create(d), StatusCode::kInvalidModel,
                "node 'lstm' (LSTM-14): attribute 'direction' is 'sideways'; it must be one of "
                "forward, reverse, bidirectional");
  Model s(14);
  s.Input("x", ElementType::kFloat, {2, 1, 1})
      .Input("w", ElementType::kFloat, {1, 4, 1})
      .Input("r", ElementType::kFloat, {1, 4, 1})
      .Ints("lens", {3}, ElementType::kInt32)
      .Node("LSTM", {"x", "w", "r", "", "lens"}, {"y"}, "lstm")
      .Output("y");
  auto session = Create(s);
  ASSERT_TRUE(session.ok()) << session.status().message();
  EXPECT_STATUS(
      session->Run({FloatTensor({2, 1, 1}), FloatTensor({1, 4, 1}), FloatTensor({1, 4, 1})}),
      StatusCode::kInvalidArgument,
      "node 'lstm' (LSTM-14): LSTM: sequence_lens[0] is 3; it must be in [0, seq_length = 2]");
}

// ---- Gemm / MatMul: M x N x K
// ---------------------------------------------------------------------

TEST(HostileModelTest, MatMulBroadcastWorkRefusedAtCreate) {
  // Broadcast batch dims: 2^20 outputs x K = 2^21 from inputs of 2^31 elements each.
  Model m(13);
  m.Input("a", ElementType::kFloat, {1024, 1, 1, int64_t{1} << 21})
      .Input("b", ElementType::kFloat, {1, 1024, int64_t{1} << 21, 1})
      .Node("MatMul", {"a", "b"}, {"y"}, "mm")
      .Output("y");
  EXPECT_STATUS(Create(m), StatusCode::kResourceExhausted,
                "node 'mm' (MatMul-13): MatMul: the node's work, 2.199e+12 multiply-adds (outputs "
                "x K)");
}

TEST(HostileModelTest, MatMulAndGemmWorkRefusedAtRun) {
  SessionOptions options;
  options.limits.max_elements = uint64_t{1} << 16;
  Model m(13);
  m.Input("a", ElementType::kFloat, {kSymbolic, 1, 1, 128})
      .Input("b", ElementType::kFloat, {1, kSymbolic, 128, 1})
      .Node("MatMul", {"a", "b"}, {"y"}, "mm")
      .Output("y");
  auto session = Create(m, options);
  ASSERT_TRUE(session.ok()) << session.status().message();
  // [32, 32, 1, 1] outputs x K = 128: 131072 > 65536, from two inputs of 4096 elements.
  EXPECT_STATUS(session->Run({FloatTensor({32, 1, 1, 128}), FloatTensor({1, 32, 128, 1})}),
                StatusCode::kResourceExhausted, "node 'mm' (MatMul-13): MatMul: the node's work");
  EXPECT_TRUE(session->Run({FloatTensor({8, 1, 1, 128}), FloatTensor({1, 8, 128, 1})}).ok());

  Model g(13);
  g.Input("a", ElementType::kFloat, {kSymbolic, kSymbolic})
      .Input("b", ElementType::kFloat, {kSymbolic, kSymbolic})
      .Node("Gemm", {"a", "b"}, {"y"}, "gemm")
      .Attr("transB", int64_t{1})
      .Output("y");
  auto gemm = Create(g, options);
  ASSERT_TRUE(gemm.ok()) << gemm.status().message();
  EXPECT_STATUS(gemm->Run({FloatTensor({64, 64}), FloatTensor({64, 64})}),
                StatusCode::kResourceExhausted,
                "node 'gemm' (Gemm-13): Gemm: the node's work, 2.621e+05 multiply-adds");
}

// ---- Output sizes: Resize sizes, ConstantOfShape, Pad ------------------------------------------

// A constant X with a constant target: folding at Create must give up before allocating (the
// fold's budget is 16 MiB), and Run must refuse the output against max_elements.
TEST(HostileModelTest, ResizeHugeSizesLeftToRunAndRefused) {
  Model m(19);
  m.Floats("x", {1, 1, 2, 2}, {1, 2, 3, 4})
      .Ints("sizes", {1, 1, int64_t{1} << 31, int64_t{1} << 31})
      .Node("Resize", {"x", "", "", "sizes"}, {"y"}, "resize")
      .Attr("mode", std::string("linear"))
      .Output("y");
  auto session = Quickly([&] { return Create(m); });
  ASSERT_TRUE(session.ok()) << session.status().message();
  EXPECT_STATUS(Quickly([&] { return session->Run(std::span<const Value>()); }),
                StatusCode::kResourceExhausted,
                "node 'resize' (Resize-19): an output of shape [1,1,2147483648,2147483648] exceeds "
                "max_elements 1099511627776");
}

TEST(HostileModelTest, ResizeScalesAndAntialias) {
  // Scales of 10^30: the output size itself does not fit int64, refused while planning.
  Model m(19);
  m.Input("x", ElementType::kFloat, {1, 1, 2, 2})
      .Floats("scales", {4}, {1, 1, 1e30f, 1e30f})
      .Node("Resize", {"x", "", "scales"}, {"y"}, "resize")
      .Output("y");
  EXPECT_STATUS(Create(m), StatusCode::kResourceExhausted,
                "node 'resize' (Resize-19): Resize: axis 2 of size 2 scaled by 1e+30 is too large");
  // An antialiasing downscale of 200000 values to one: each output's filter spans the input,
  // so the cost is the input's (the taps of all outputs together stay about 4 x the input).
  Model a(19);
  a.Input("x", ElementType::kFloat, {1, 1, 1, kSymbolic})
      .Ints("sizes", {1, 1, 1, 1})
      .Node("Resize", {"x", "", "", "sizes"}, {"y"}, "resize")
      .Attr("mode", std::string("cubic"))
      .Attr("antialias", int64_t{1})
      .Output("y");
  auto session = Create(a);
  ASSERT_TRUE(session.ok()) << session.status().message();
  auto y = Quickly([&] { return session->Run({FloatTensor({1, 1, 1, 200000})}); });
  ASSERT_TRUE(y.ok()) << y.status().message();
  // The filter's weights are normalized: a constant input stays that constant (within the float
  // rounding of 200000 weighted terms).
  EXPECT_NEAR(y->at(0).tensor().data_as<float>()[0], 0.5f, 1e-4f);
}

TEST(HostileModelTest, ConstantOfShapeHugeShapeLeftToRunAndRefused) {
  Model m(20);
  m.Ints("shape", {k2p30, k2p30}).Node("ConstantOfShape", {"shape"}, {"y"}, "fill").Output("y");
  auto session = Quickly([&] { return Create(m); });
  ASSERT_TRUE(session.ok()) << session.status().message();
  EXPECT_STATUS(Quickly([&] { return session->Run(std::span<const Value>()); }),
                StatusCode::kResourceExhausted,
                "node 'fill' (ConstantOfShape-20): an output of shape [1073741824,1073741824] "
                "exceeds max_elements");
  // Within max_elements but over the run budget: refused by the budget, naming the node.
  SessionOptions options;
  options.limits.max_run_bytes = uint64_t{1} << 20;
  Model small(20);
  small.Ints("shape", {1 << 20}).Node("ConstantOfShape", {"shape"}, {"y"}, "fill").Output("y");
  auto budget = Create(small, options);
  ASSERT_TRUE(budget.ok()) << budget.status().message();
  EXPECT_STATUS(budget->Run(std::span<const Value>()), StatusCode::kResourceExhausted,
                "node 'fill' (ConstantOfShape-20)");
}

TEST(HostileModelTest, PadHugeAndReflectPads) {
  Model m(19);
  m.Floats("x", {1, 2}, {1, 2})
      .Ints("pads", {0, 0, 0, k2p40})
      .Node("Pad", {"x", "pads"}, {"y"}, "pad")
      .Output("y");
  auto session = Quickly([&] { return Create(m); });
  ASSERT_TRUE(session.ok()) << session.status().message();
  EXPECT_STATUS(Quickly([&] { return session->Run(std::span<const Value>()); }),
                StatusCode::kResourceExhausted,
                "node 'pad' (Pad-19): an output of shape [1,1099511627778] exceeds max_elements");
  Model r(19);
  r.Input("x", ElementType::kFloat, {1, 2})
      .Ints("pads", {0, 0, 0, 2})
      .Node("Pad", {"x", "pads"}, {"y"}, "pad")
      .Attr("mode", std::string("reflect"))
      .Output("y");
  EXPECT_STATUS(Create(r), StatusCode::kInvalidArgument,
                "node 'pad' (Pad-19): Pad: reflect pads 0 and 2 of axis 1 exceed its size 2 minus "
                "one");
  Model o(19);
  o.Input("x", ElementType::kFloat, {1, 2})
      .Ints("pads", {0, 0, kMax, kMax})
      .Node("Pad", {"x", "pads"}, {"y"}, "pad")
      .Output("y");
  EXPECT_STATUS(Create(o), StatusCode::kResourceExhausted,
                "node 'pad' (Pad-19): Pad: axis 0 of size 1 padded by 0 and 9223372036854775807 "
                "overflows");
}

TEST(HostileModelTest, PadIndexMapsCountAgainstTheBudget) {
  // A bool padded to 10^6 elements: 1 MB of output, but Pad's per-axis index maps take 16 bytes
  // per output position (16 MB), which were allocated unchecked.
  SessionOptions options;
  options.limits.max_run_bytes = uint64_t{8} << 20;
  for (int64_t size : {1000000, 100000}) {
    Model m(19);
    m.Input("x", ElementType::kBool, {1})
        .Ints("pads", {0, size - 1})
        .Node("Pad", {"x", "pads"}, {"y"}, "pad")
        .Output("y", ElementType::kBool);
    auto session = Create(m, options);
    ASSERT_TRUE(session.ok()) << session.status().message();
    auto y =
        session->Run({testing::MakeTensorOf(ElementType::kBool, {1}, std::vector<uint8_t>{1})});
    if (size == 1000000) {
      EXPECT_STATUS(y, StatusCode::kResourceExhausted, "node 'pad' (Pad-19)");
    } else {
      ASSERT_TRUE(y.ok()) << y.status().message();
      EXPECT_EQ(y->at(0).tensor().element_count(), size);
    }
  }
}

// ---- Slice steps, Softmax axis, Cast to
// -----------------------------------------------------------

TEST(HostileModelTest, SliceExtremeStepsAndBounds) {
  Model m(13);
  m.Input("x", ElementType::kFloat, {5})
      .Ints("starts", {kMax})
      .Ints("ends", {std::numeric_limits<int64_t>::min()})
      .Ints("axes", {0})
      .Ints("steps", {std::numeric_limits<int64_t>::min()})
      .Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}, "slice")
      .Output("y");
  auto session = Create(m);
  ASSERT_TRUE(session.ok()) << session.status().message();
  auto y = session->Run({testing::Floats({5}, {0, 1, 2, 3, 4})});
  ASSERT_TRUE(y.ok()) << y.status().message();
  // The spec clamps start to dim - 1 for a negative step: one element, the last.
  ASSERT_EQ(y->at(0).tensor().element_count(), 1);
  EXPECT_EQ(y->at(0).tensor().data_as<float>()[0], 4.0f);
  Model z(13);
  z.Input("x", ElementType::kFloat, {5})
      .Ints("starts", {0})
      .Ints("ends", {5})
      .Ints("axes", {0})
      .Ints("steps", {0})
      .Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}, "slice")
      .Output("y");
  EXPECT_STATUS(Create(z), StatusCode::kInvalidArgument, "node 'slice' (Slice-13)");
}

TEST(HostileModelTest, SoftmaxAxisAndCastTo) {
  Model m(13);
  m.Input("x", ElementType::kFloat, {2, 3})
      .Node("Softmax", {"x"}, {"y"}, "softmax")
      .Attr("axis", kMax)
      .Output("y");
  EXPECT_STATUS(Create(m), StatusCode::kInvalidArgument, "node 'softmax' (Softmax-13)");
  Model c(13);
  c.Input("x", ElementType::kFloat, {2})
      .Node("Cast", {"x"}, {"y"}, "cast")
      .Attr("to", int64_t{99})
      .Output("y");
  EXPECT_STATUS(Create(c), StatusCode::kInvalidModel, "node 'cast' (Cast-13)");
}

}  // namespace
}  // namespace idem
