// Planning for speed (src/runtime/fusion.h): BatchNormalization folded into a Conv with constant
// weights, Relu / LeakyRelu / Clip / HardSigmoid / Sigmoid and a following Max with a constant
// fused into the producing Conv, Gemm or MatMul. Each model runs twice: with the fast kernels
// (fused: Describe() says so) and with SessionOptions::reference_kernels (nothing fused: every
// node runs on its reference kernel). Tolerance: |fused - reference| <= 1e-5 + 1e-4 * |reference|
// (issue 18's rtol 1e-4 / atol 1e-5 of the reference kernels). Fused results are the same bits
// with 1 and 2 intra-op threads and on every run. Nodes whose value has another reader, bounds
// that are not constants and BatchNormalizations that cannot fold are left alone.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "idem/session_proto.h"
#include "src/kernels/kernel.h"
#include "src/onnx/model_loader.h"
#include "src/runtime/plan.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using Dims = std::vector<int64_t>;

std::vector<float> Pseudo(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<float> out(n);
  uint32_t s = seed * 2654435761u + 7;
  for (float& v : out) {
    s = s * 1664525u + 1013904223u;
    v = lo + (hi - lo) * static_cast<float>(s >> 8) / static_cast<float>(1 << 24);
  }
  return out;
}

void AddFloats(onnx::GraphProto* g, const std::string& name, const Dims& dims,
               const std::vector<float>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

void AddFloatAttr(onnx::NodeProto* node, const std::string& name, float v) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void AddIntsAttr(onnx::NodeProto* node, const std::string& name, const Dims& v) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

struct Built {
  onnx::ModelProto model;
  std::vector<Value> feeds;
};

// x [1, 8, 9, 10] -> Conv(W [12, 8, 3, 3], B, pads 1) -> conv, then `tail` builds the rest.
Built ConvModel(int opset, bool bias,
                const std::function<void(onnx::GraphProto*, std::string)>& tail) {
  Built b{EmptyModel(opset, 8), {}};
  auto* g = b.model.mutable_graph();
  g->set_name("fusion");
  AddValueInfo(g->mutable_input(), "x", TensorTypeProto(ElementType::kFloat, {1, 8, 9, 10}));
  AddValueInfo(g->mutable_output(), "y", Unshaped(ElementType::kFloat));
  AddFloats(g, "w", {12, 8, 3, 3}, Pseudo(12 * 8 * 9, 1, -0.3f, 0.3f));
  std::vector<std::string> inputs = {"x", "w"};
  if (bias) {
    AddFloats(g, "b", {12}, Pseudo(12, 2));
    inputs.push_back("b");
  }
  auto* conv = AddNode(g, "Conv", inputs, {"conv"}, "conv");
  AddIntsAttr(conv, "pads", {1, 1, 1, 1});
  tail(g, "conv");
  b.feeds = {Floats({1, 8, 9, 10}, Pseudo(720, 3, -2.0f, 2.0f))};
  return b;
}

void AddBatchNorm(onnx::GraphProto* g, const std::string& in, const std::string& out,
                  int64_t channels, float epsilon = 1e-5f) {
  AddFloats(g, "bn_scale", {channels}, Pseudo(static_cast<size_t>(channels), 4, 0.5f, 1.5f));
  AddFloats(g, "bn_bias", {channels}, Pseudo(static_cast<size_t>(channels), 5));
  AddFloats(g, "bn_mean", {channels}, Pseudo(static_cast<size_t>(channels), 6));
  AddFloats(g, "bn_var", {channels}, Pseudo(static_cast<size_t>(channels), 7, 0.1f, 2.0f));
  auto* bn = AddNode(g, "BatchNormalization", {in, "bn_scale", "bn_bias", "bn_mean", "bn_var"},
                     {out}, "bn");
  AddFloatAttr(bn, "epsilon", epsilon);
}

Result<std::vector<Value>> RunWith(const onnx::ModelProto& m, const std::vector<Value>& feeds,
                                   bool reference, int threads, std::string* describe = nullptr) {
  SessionOptions options;
  options.reference_kernels = reference;
  options.intra_op_threads = threads;
  IDEM_ASSIGN_OR_RETURN(Session s, CreateSessionFromProto(m, "", options));
  if (describe != nullptr) *describe = s.Describe();
  return s.Run(feeds);
}

// Runs fused and reference; checks the tolerance, the fusion count, and determinism.
void CheckFused(const Built& b, int fused_nodes, const std::string& name) {
  SCOPED_TRACE(name);
  std::string text;
  auto fast = RunWith(b.model, b.feeds, false, 1, &text);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  std::string reference_text;
  auto reference = RunWith(b.model, b.feeds, true, 1, &reference_text);
  ASSERT_TRUE(reference.ok()) << reference.status().message();
  int count = 0;
  for (size_t p = text.find("(fused into"); p != std::string::npos;
       p = text.find("(fused into", p + 1)) {
    ++count;
  }
  EXPECT_EQ(count, fused_nodes) << text;
  EXPECT_EQ(reference_text.find("(fused into"), std::string::npos) << reference_text;
  ASSERT_EQ(fast->size(), reference->size());
  for (size_t o = 0; o < fast->size(); ++o) {
    const auto f = (*fast)[o].tensor().data_as<float>();
    const auto r = (*reference)[o].tensor().data_as<float>();
    ASSERT_EQ(f.size(), r.size());
    EXPECT_EQ((*fast)[o].type().ToString(), (*reference)[o].type().ToString());
    size_t bad = 0;
    for (size_t i = 0; i < f.size(); ++i) {
      const double tol = 1e-5 + 1e-4 * std::abs(r[i]);
      if (!(std::abs(static_cast<double>(f[i]) - r[i]) <= tol) && bad++ < 5) {
        ADD_FAILURE() << "output " << o << " element " << i << ": fused " << f[i] << ", reference "
                      << r[i];
      }
    }
  }
  auto again = RunWith(b.model, b.feeds, false, 2);
  ASSERT_TRUE(again.ok()) << again.status().message();
  for (size_t o = 0; o < fast->size(); ++o) {
    EXPECT_EQ(DescribeDifference((*fast)[o], (*again)[o]), std::nullopt);
  }
}

TEST(FusionTest, BatchNormAndReluFoldIntoConv) {
  for (bool bias : {true, false}) {
    Built b = ConvModel(15, bias, [](onnx::GraphProto* g, const std::string& in) {
      AddBatchNorm(g, in, "bn", 12);
      AddNode(g, "Relu", {"bn"}, {"y"}, "relu");
    });
    CheckFused(b, 2, bias ? "with bias" : "without bias");
  }
  // Opset 9 (PaddleOCR's): BatchNormalization-9, Clip-6 with attributes.
  Built b9 = ConvModel(9, true, [](onnx::GraphProto* g, const std::string& in) {
    AddBatchNorm(g, in, "bn", 12);
    auto* clip = AddNode(g, "Clip", {"bn"}, {"y"}, "clip");
    AddFloatAttr(clip, "min", 0.0f);
    AddFloatAttr(clip, "max", 6.0f);
  });
  CheckFused(b9, 2, "opset 9, Clip-6");
}

TEST(FusionTest, EveryActivationFusesIntoConv) {
  const std::vector<std::string> ops = {"Relu", "LeakyRelu", "HardSigmoid", "Sigmoid", "Clip"};
  for (const std::string& op : ops) {
    Built b = ConvModel(13, true, [&](onnx::GraphProto* g, const std::string& in) {
      if (op == "Clip") {
        AddFloats(g, "lo", {}, {-0.25f});
        AddFloats(g, "hi", {}, {0.5f});
        AddNode(g, "Clip", {in, "lo", "hi"}, {"y"}, "act");
      } else {
        auto* act = AddNode(g, op, {in}, {"y"}, "act");
        if (op == "LeakyRelu") AddFloatAttr(act, "alpha", 0.2f);
        if (op == "HardSigmoid") AddFloatAttr(act, "alpha", 0.3f);
      }
    });
    CheckFused(b, 1, op);
  }
  // Clip with only a max (the min omitted).
  Built only_max = ConvModel(13, true, [](onnx::GraphProto* g, const std::string& in) {
    AddFloats(g, "hi", {}, {0.5f});
    AddNode(g, "Clip", {in, "", "hi"}, {"y"}, "act");
  });
  CheckFused(only_max, 1, "Clip max only");
}

TEST(FusionTest, LeakyReluThenMaxWithAConstantFuse) {
  // openWakeWord's embedding: Conv -> LeakyRelu(0.2) -> Max(x, -0.4), the constant either side.
  for (bool constant_first : {false, true}) {
    Built b = ConvModel(13, true, [&](onnx::GraphProto* g, const std::string& in) {
      auto* act = AddNode(g, "LeakyRelu", {in}, {"leaky"}, "leaky");
      AddFloatAttr(act, "alpha", 0.2f);
      AddFloats(g, "floor", {1, 1, 1, 1}, {-0.4f});
      AddNode(g, "Max",
              constant_first ? std::vector<std::string>{"floor", "leaky"}
                             : std::vector<std::string>{"leaky", "floor"},
              {"y"}, "max");
    });
    CheckFused(b, 2, constant_first ? "Max(c, x)" : "Max(x, c)");
  }
}

// HardSwish as exporters write it, on value `in`: Add(in, 3) -> Clip(0, 6) -> Mul(in, .) ->
// Div(., 6) -> `out` (Clip's bounds as inputs from opset 11, attributes before).
void AddHardSwish(onnx::GraphProto* g, int opset, const std::string& in, const std::string& out,
                  bool mul_reads_input = true) {
  AddFloats(g, in + "_three", {}, {3.0f});
  AddFloats(g, in + "_six", {}, {6.0f});
  AddNode(g, "Add", {in, in + "_three"}, {in + "_plus3"}, in + "_add3");
  if (opset >= 11) {
    AddFloats(g, in + "_zero", {}, {0.0f});
    AddNode(g, "Clip", {in + "_plus3", in + "_zero", in + "_six"}, {in + "_clipped"}, in + "_clip");
  } else {
    auto* clip = AddNode(g, "Clip", {in + "_plus3"}, {in + "_clipped"}, in + "_clip");
    AddFloatAttr(clip, "min", 0.0f);
    AddFloatAttr(clip, "max", 6.0f);
  }
  AddNode(g, "Mul", {mul_reads_input ? in : in + "_plus3", in + "_clipped"}, {in + "_times"},
          in + "_mul");
  AddNode(g, "Div", {in + "_times", in + "_six"}, {out}, in + "_div6");
}

// A Mul (or Add) of `in` by a scalar constant.
void AddScalarStep(onnx::GraphProto* g, const std::string& op, const std::string& in,
                   const std::string& out, float c, bool constant_first) {
  AddFloats(g, out + "_c", {1}, {c});
  AddNode(g, op,
          constant_first ? std::vector<std::string>{out + "_c", in}
                         : std::vector<std::string>{in, out + "_c"},
          {out}, out);
}

TEST(FusionTest, LcNetBlockFusesIntoConv) {
  // PP-LCNetV3 (PaddleOCR v4): Conv -> Mul(s) -> Add(b) -> HardSwish -> Mul(s2) -> Add(b2): the
  // scalar steps before HardSwish fold into W and B, the rest is the epilogue (8 nodes).
  for (int opset : {9, 11, 13}) {
    Built b = ConvModel(opset, true, [&](onnx::GraphProto* g, const std::string& in) {
      AddScalarStep(g, "Mul", in, "s1", 0.94f, true);
      AddScalarStep(g, "Add", "s1", "b1", 0.5f, false);
      AddHardSwish(g, opset, "b1", "hs");
      AddScalarStep(g, "Mul", "hs", "s2", 0.47f, true);
      AddScalarStep(g, "Add", "s2", "y", -0.0075f, false);
    });
    CheckFused(b, 8, "opset " + std::to_string(opset));
  }
}

TEST(FusionTest, ConstantNodesAfterTheConvStillFuse) {
  // paddle2onnx writes each HardSwish's 3, 0 and 6 as Constant nodes right before their reader,
  // after the Conv that absorbs them.
  Built b = ConvModel(11, true, [](onnx::GraphProto* g, const std::string& in) {
    for (const auto& [name, v] :
         {std::pair<std::string, float>{"k3", 3.0f}, {"k0", 0.0f}, {"k6", 6.0f}}) {
      auto* c = AddNode(g, "Constant", {}, {name}, name + "_node");
      auto* a = c->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
      a->mutable_t()->add_float_data(v);
    }
    AddNode(g, "Add", {in, "k3"}, {"p3"}, "add3");
    AddNode(g, "Clip", {"p3", "k0", "k6"}, {"c06"}, "clip");
    AddNode(g, "Mul", {in, "c06"}, {"m"}, "mul");
    AddNode(g, "Div", {"m", "k6"}, {"y"}, "div6");
  });
  CheckFused(b, 4, "Constant nodes");
}

TEST(FusionTest, HardSwishAfterBatchNormFusesIntoConv) {
  // PaddleOCR's mobile cls: Conv -> BatchNormalization -> HardSwish.
  Built b = ConvModel(9, false, [](onnx::GraphProto* g, const std::string& in) {
    AddBatchNorm(g, in, "bn", 12);
    AddHardSwish(g, 9, "bn", "y");
  });
  CheckFused(b, 5, "cls block");
  // A Mul that reads something else than the Conv's output is no HardSwish: only the Add of 3
  // (the Conv's only reader) folds into the bias.
  Built other = ConvModel(11, true, [](onnx::GraphProto* g, const std::string& in) {
    AddHardSwish(g, 11, in, "y", /*mul_reads_input=*/false);
  });
  CheckFused(other, 1, "not a HardSwish");
}

TEST(FusionTest, GemmAndMatMulTakeTheirActivation) {
  for (const std::string& op : {std::string("Gemm"), std::string("MatMul")}) {
    for (const std::string& act : {std::string("Relu"), std::string("Sigmoid")}) {
      Built b{EmptyModel(13, 8), {}};
      auto* g = b.model.mutable_graph();
      g->set_name("fusion");
      AddValueInfo(g->mutable_input(), "x", TensorTypeProto(ElementType::kFloat, {3, 40}));
      AddValueInfo(g->mutable_output(), "y", Unshaped(ElementType::kFloat));
      AddFloats(g, "w", {40, 24}, Pseudo(960, 8));
      std::vector<std::string> inputs = {"x", "w"};
      if (op == "Gemm") {
        AddFloats(g, "c", {24}, Pseudo(24, 9));
        inputs.push_back("c");
      }
      AddNode(g, op, inputs, {"p"}, "product");
      AddNode(g, act, {"p"}, {"y"}, "act");
      b.feeds = {Floats({3, 40}, Pseudo(120, 10))};
      CheckFused(b, 1, op + " + " + act);
    }
  }
}

// A constant B that Gemm or MatMul packs at Create is not held twice: the step reads nothing
// for it (Kernel::absorbed_inputs) and the plan lets go of it, unless another node reads it too.
TEST(FusionTest, PackedWeightsAreReleasedUnlessReadElsewhere) {
  for (const std::string& op : {std::string("Gemm"), std::string("MatMul")}) {
    for (bool shared : {false, true}) {
      SCOPED_TRACE(op + (shared ? " with w read by an Add too" : ""));
      Built b{EmptyModel(13, 8), {}};
      auto* g = b.model.mutable_graph();
      g->set_name("absorbed");
      AddValueInfo(g->mutable_input(), "x", TensorTypeProto(ElementType::kFloat, {3, 40}));
      AddValueInfo(g->mutable_output(), "y", Unshaped(ElementType::kFloat));
      AddFloats(g, "w", {40, 24}, Pseudo(960, 14));
      std::vector<std::string> inputs = {"x", "w"};
      if (op == "Gemm") {
        AddFloats(g, "c", {24}, Pseudo(24, 15));
        inputs.push_back("c");
      }
      AddNode(g, op, inputs, {"y"}, "product");
      b.feeds = {Floats({3, 40}, Pseudo(120, 16))};
      if (shared) {  // an Add of a fed input (not folded at planning) reads w too
        AddValueInfo(g->mutable_input(), "v", TensorTypeProto(ElementType::kFloat, {40, 24}));
        AddNode(g, "Add", {"w", "v"}, {"sum"}, "add");
        AddValueInfo(g->mutable_output(), "sum", Unshaped(ElementType::kFloat));
        b.feeds.push_back(Floats({40, 24}, Pseudo(960, 17)));
      }
      CheckFused(b, 0, "packed");
      for (bool reference : {false, true}) {
        SessionOptions options;
        options.reference_kernels = reference;
        const onnx::ModelProto& model = b.model;
        auto graph = LoadGraphFromProto(model, "", options.limits);
        ASSERT_TRUE(graph.ok()) << graph.status().message();
        auto program = BuildProgram(std::move(graph).value(), KernelRegistry::Default(), options);
        ASSERT_TRUE(program.ok()) << program.status().message();
        const Plan& plan = program->main;
        ASSERT_FALSE(plan.steps.empty());
        const bool absorbed = !reference;
        EXPECT_EQ(plan.steps[0].inputs[1].source,
                  absorbed ? ValueRef::Source::kNone : ValueRef::Source::kConstant);
        size_t held = 0;
        for (const Value& constant : plan.constants) held += constant.is_null() ? 0 : 1;
        // c (Gemm's bias) is read at run time; w only by the reference kernel or the Add.
        const size_t expected = (op == "Gemm" ? 1 : 0) + (absorbed && !shared ? 0 : 1);
        EXPECT_EQ(held, expected);
      }
    }
  }
}

TEST(FusionTest, ConvInsideAnIfBranchFuses) {
  // Silero's convolutions live in If branches, their weights outer initializers.
  Built b{EmptyModel(13, 8), {}};
  auto* g = b.model.mutable_graph();
  g->set_name("outer");
  AddValueInfo(g->mutable_input(), "c", TensorTypeProto(ElementType::kBool, {}));
  AddValueInfo(g->mutable_input(), "x", TensorTypeProto(ElementType::kFloat, {1, 4, 12}));
  AddValueInfo(g->mutable_output(), "y", Unshaped(ElementType::kFloat));
  AddFloats(g, "w", {16, 4, 3}, Pseudo(192, 11));
  AddFloats(g, "b", {16}, Pseudo(16, 12));
  auto* node = AddNode(g, "If", {"c"}, {"y"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    onnx::GraphProto body;
    body.set_name(branch);
    const std::string conv = std::string(branch) + "_conv";
    const std::string out = std::string(branch) + "_y";
    AddNode(&body, "Conv", {"x", "w", "b"}, {conv}, conv);
    AddNode(&body, "Relu", {conv}, {out}, std::string(branch) + "_relu");
    AddValueInfo(body.mutable_output(), out, Unshaped(ElementType::kFloat));
    SetGraphAttribute(node, branch, body);
  }
  b.feeds = {MakeTensorOf(ElementType::kBool, {}, std::vector<uint8_t>{1}),
             Floats({1, 4, 12}, Pseudo(48, 13))};
  CheckFused(b, 0, "If branches");  // Describe() lists the main graph only
  // Each branch plans one step (the Conv with its Relu) with the fast kernels, two without.
  for (bool reference : {false, true}) {
    SessionOptions options;
    options.reference_kernels = reference;
    const onnx::ModelProto& model = b.model;  // the const overload: b.model stays whole
    auto graph = LoadGraphFromProto(model, "", options.limits);
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    auto program = BuildProgram(std::move(graph).value(), KernelRegistry::Default(), options);
    ASSERT_TRUE(program.ok()) << program.status().message();
    ASSERT_EQ(program->subgraphs.size(), 2u);
    for (const auto& plan : program->subgraphs) {
      EXPECT_EQ(plan->steps.size(), reference ? 2u : 1u);
    }
  }
}

TEST(FusionTest, ValuesWithOtherReadersAreNotFused) {
  // The Conv's output is also a graph output: the Relu stays a node of its own.
  Built b = ConvModel(13, true, [](onnx::GraphProto* g, const std::string& in) {
    AddNode(g, "Relu", {in}, {"y"}, "relu");
    AddValueInfo(g->mutable_output(), in, Unshaped(ElementType::kFloat));
  });
  CheckFused(b, 0, "conv output is a graph output");
  // Two readers.
  Built two = ConvModel(13, true, [](onnx::GraphProto* g, const std::string& in) {
    AddNode(g, "Relu", {in}, {"r"}, "relu");
    AddNode(g, "Add", {"r", in}, {"y"}, "add");
  });
  CheckFused(two, 0, "two readers");
  // A Clip bound that is fed, not a constant.
  Built fed = ConvModel(13, true, [](onnx::GraphProto* g, const std::string& in) {
    AddValueInfo(g->mutable_input(), "lo", TensorTypeProto(ElementType::kFloat, {}));
    AddNode(g, "Clip", {in, "lo"}, {"y"}, "clip");
  });
  fed.feeds.push_back(Floats({}, {0.1f}));
  CheckFused(fed, 0, "fed Clip bound");
  // A BatchNormalization whose variance is a graph input: nothing folds, and nothing after it.
  Built bn = ConvModel(15, true, [](onnx::GraphProto* g, const std::string& in) {
    AddFloats(g, "s", {12}, Pseudo(12, 20));
    AddFloats(g, "sh", {12}, Pseudo(12, 21));
    AddFloats(g, "mu", {12}, Pseudo(12, 22));
    AddValueInfo(g->mutable_input(), "var", TensorTypeProto(ElementType::kFloat, {12}));
    AddNode(g, "BatchNormalization", {in, "s", "sh", "mu", "var"}, {"bn"}, "bn");
    AddNode(g, "Relu", {"bn"}, {"y"}, "relu");
  });
  bn.feeds.push_back(Floats({12}, Pseudo(12, 23, 0.5f, 1.0f)));
  CheckFused(bn, 0, "fed variance");
  // A Max whose other input is not a single element.
  Built max = ConvModel(13, true, [](onnx::GraphProto* g, const std::string& in) {
    AddFloats(g, "floor", {1, 12, 1, 1}, Pseudo(12, 24));
    AddNode(g, "Max", {in, "floor"}, {"y"}, "max");
  });
  CheckFused(max, 0, "Max with a per-channel tensor");
}

TEST(FusionTest, ZeroVarianceWithZeroEpsilonIsNotFolded) {
  Built b = ConvModel(15, true, [](onnx::GraphProto* g, const std::string& in) {
    AddFloats(g, "s", {12}, Pseudo(12, 30, 0.5f, 1.5f));
    AddFloats(g, "sh", {12}, Pseudo(12, 31));
    AddFloats(g, "mu", {12}, Pseudo(12, 32));
    AddFloats(g, "var", {12}, std::vector<float>(12, 0.0f));
    auto* bn = AddNode(g, "BatchNormalization", {in, "s", "sh", "mu", "var"}, {"y"}, "bn");
    AddFloatAttr(bn, "epsilon", 0.0f);
  });
  std::string text;
  auto fast = RunWith(b.model, b.feeds, false, 1, &text);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  EXPECT_EQ(text.find("(fused into"), std::string::npos) << text;
}

TEST(FusionTest, BadAbsorbedNodesAreStillRefused) {
  // A fused node keeps its checks: a declared output type that disagrees is refused.
  Built b = ConvModel(13, true, [](onnx::GraphProto* g, const std::string& in) {
    AddNode(g, "Relu", {in}, {"y"}, "relu");
  });
  b.model.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::DOUBLE);
  auto s = CreateSessionFromProto(b.model);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("relu"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace idem::testing
