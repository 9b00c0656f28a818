// Optional operators: Optional-15, OptionalHasElement-15/-18, OptionalGetElement-15/-18, and the
// seed's example graph that threads an optional sequence through Identity.
#include <gtest/gtest.h>

#include <set>

#include "idem/idem.h"
#include "idem/session_proto.h"
#include "src/kernels/kernel.h"
#include "tests/test_models.h"

namespace idem {
namespace {

using testing::AddNode;
using testing::AddValueInfo;
using testing::Floats;
using testing::Io;
using testing::MustCreate;
using testing::OneNode;
using testing::OptionalTypeProto;
using testing::PlanError;
using testing::SequenceTypeProto;
using testing::TensorTypeProto;
using testing::Unshaped;

using E = ElementType;

void SetTypeAttribute(onnx::ModelProto& m, const onnx::TypeProto& type) {
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("type");
  a->set_type(onnx::AttributeProto::TYPE_PROTO);
  *a->mutable_tp() = type;
}

const onnx::TypeProto kFloatTensor = Unshaped(E::kFloat);
const onnx::TypeProto kFloatSeq = SequenceTypeProto(Unshaped(E::kFloat));
const onnx::TypeProto kOptTensor = OptionalTypeProto(Unshaped(E::kFloat));
const onnx::TypeProto kOptSeq = OptionalTypeProto(SequenceTypeProto(Unshaped(E::kFloat)));
const onnx::TypeProto kBoolScalar = TensorTypeProto(E::kBool, {});

bool BoolOf(const Value& v) {
  EXPECT_EQ(v.tensor().element_type(), E::kBool);
  EXPECT_EQ(v.tensor().rank(), 0u);
  return v.tensor().data_as<uint8_t>()[0] != 0;
}

// ---- Registry -----------------------------------------------------------------------------------

TEST(OptionalRegistryTest, Version18WidensTheInputs) {
  const auto& registry = KernelRegistry::Default();
  for (const char* op : {"OptionalHasElement", "OptionalGetElement"}) {
    std::vector<int> since;
    for (const KernelSchema* s : registry.Versions("", op)) since.push_back(s->since_version);
    EXPECT_EQ(since, (std::vector<int>{15, 18})) << op;
    const KernelSchema* v18 = registry.Resolve("", op, 28);
    // 30 optionals + 15 tensors + 15 sequences, base element types only.
    EXPECT_EQ(v18->FindConstraint("O")->allowed.size(), 60u) << op;
    EXPECT_FALSE(v18->FindConstraint("O")->Allows(Type::Tensor(E::kBfloat16))) << op;
  }
  EXPECT_EQ(registry.Resolve("", "OptionalHasElement", 28)->inputs[0].arity,
            FormalParameter::Arity::kOptional);
  EXPECT_EQ(registry.Resolve("", "OptionalHasElement", 17)->inputs[0].arity,
            FormalParameter::Arity::kSingle);
  EXPECT_EQ(registry.Resolve("", "Optional", 14), nullptr);
}

// ---- Optional
// ------------------------------------------------------------------------------------

TEST(OptionalTest, WrapsTheInputValueItself) {
  Session s = MustCreate(OneNode("Optional", 15, {{"x", kFloatTensor}}, {{"o", kOptTensor}}));
  Value x = Floats({2}, {1, 2});
  auto out = s.Run({x}).value();
  ASSERT_TRUE(out[0].optional().has_value());
  EXPECT_TRUE(out[0].optional().value().SharesStorageWith(x));

  Session seq = MustCreate(OneNode("Optional", 15, {{"x", kFloatSeq}}, {{"o", kOptSeq}}));
  Value sx = Value::MakeSequence(E::kFloat, {x}).value();
  out = seq.Run({sx}).value();
  EXPECT_TRUE(out[0].optional().value().SharesStorageWith(sx));
}

TEST(OptionalTest, EmptyFromTheTypeAttribute) {
  for (const onnx::TypeProto& element :
       {Unshaped(E::kString), SequenceTypeProto(Unshaped(E::kInt8))}) {
    auto m = OneNode("Optional", 15, {}, {{"o", OptionalTypeProto(element)}});
    SetTypeAttribute(m, element);
    Session s = MustCreate(m);
    auto out = s.Run(std::vector<Value>{}).value();
    EXPECT_FALSE(out[0].optional().has_value());
    EXPECT_EQ(out[0].type().ToString(),
              "optional(" + s.outputs()[0].type.element().ToString() + ")");
  }
  // An omitted ("") input reads the attribute too.
  auto m = OneNode("Optional", 15, {{"", {}}}, {{"o", kOptTensor}});
  SetTypeAttribute(m, kFloatTensor);
  EXPECT_FALSE(MustCreate(m).Run(std::vector<Value>{}).value()[0].optional().has_value());
}

TEST(OptionalTest, TypeMustBeKnownAndAllowed) {
  EXPECT_STATUS(PlanError(OneNode("Optional", 15, {}, {{"o", kOptTensor}})),
                StatusCode::kInvalidModel,
                "node 'n0' (Optional-15): Optional needs an input or the 'type' attribute");
  auto bf16 = OneNode("Optional", 15, {}, {{"o", kOptTensor}});
  SetTypeAttribute(bf16, Unshaped(E::kBfloat16));
  EXPECT_STATUS(PlanError(bf16), StatusCode::kInvalidModel,
                "Optional-15 does not accept optional(tensor(bfloat16))");
  auto nested = OneNode("Optional", 15, {}, {{"o", kOptTensor}});
  SetTypeAttribute(nested, kOptTensor);
  EXPECT_STATUS(PlanError(nested), StatusCode::kInvalidModel,
                "an optional holds a tensor or a sequence");
  auto mismatch = OneNode("Optional", 15, {{"x", kFloatTensor}}, {{"o", kOptTensor}});
  SetTypeAttribute(mismatch, Unshaped(E::kInt32));
  EXPECT_STATUS(PlanError(mismatch), StatusCode::kInvalidModel,
                "input is tensor(float) but attribute 'type' says tensor(int32)");
  // Optionals of optionals do not exist.
  EXPECT_STATUS(PlanError(OneNode("Optional", 15, {{"x", kOptTensor}}, {{"o", kOptTensor}})),
                StatusCode::kInvalidModel, "Optional-15 accepts tensors and sequences only");
}

// ---- OptionalHasElement
// --------------------------------------------------------------------------

TEST(OptionalHasElementTest, Version15TakesOptionalsOnly) {
  Session s =
      MustCreate(OneNode("OptionalHasElement", 15, {{"o", kOptTensor}}, {{"b", kBoolScalar}}));
  Value full = Value::MakeOptional(Floats({1}, {1})).value();
  Value empty = Value::MakeEmptyOptional(Type::Tensor(E::kFloat)).value();
  EXPECT_TRUE(BoolOf(s.Run({full}).value()[0]));
  EXPECT_FALSE(BoolOf(s.Run({empty}).value()[0]));

  EXPECT_STATUS(
      PlanError(OneNode("OptionalHasElement", 15, {{"x", kFloatTensor}}, {{"b", kBoolScalar}})),
      StatusCode::kInvalidModel,
      "OptionalHasElement-15 accepts optionals only (tensor(float) needs opset >= 18)");
  EXPECT_STATUS(PlanError(OneNode("OptionalHasElement", 15, {}, {{"b", kBoolScalar}})),
                StatusCode::kInvalidModel, "has 0 inputs; OptionalHasElement-15 takes 1");
}

TEST(OptionalHasElementTest, Version18AcceptsTensorsSequencesAndNoInput) {
  Session tensor =
      MustCreate(OneNode("OptionalHasElement", 18, {{"x", kFloatTensor}}, {{"b", kBoolScalar}}));
  EXPECT_TRUE(BoolOf(tensor.Run({Floats({0}, {})}).value()[0]));
  Session seq =
      MustCreate(OneNode("OptionalHasElement", 18, {{"x", kFloatSeq}}, {{"b", kBoolScalar}}));
  EXPECT_TRUE(BoolOf(seq.Run({Value::MakeSequence(E::kFloat, {}).value()}).value()[0]));
  Session optional =
      MustCreate(OneNode("OptionalHasElement", 18, {{"o", kOptSeq}}, {{"b", kBoolScalar}}));
  EXPECT_FALSE(BoolOf(
      optional.Run({Value::MakeEmptyOptional(Type::Sequence(Type::Tensor(E::kFloat))).value()})
          .value()[0]));
  for (bool named_empty : {false, true}) {
    std::vector<Io> inputs;
    if (named_empty) inputs.push_back({"", {}});
    Session none = MustCreate(OneNode("OptionalHasElement", 18, inputs, {{"b", kBoolScalar}}));
    EXPECT_FALSE(BoolOf(none.Run(std::vector<Value>{}).value()[0])) << named_empty;
  }
}

// ---- OptionalGetElement
// --------------------------------------------------------------------------

TEST(OptionalGetElementTest, ReturnsTheContainedValueItself) {
  Session s =
      MustCreate(OneNode("OptionalGetElement", 15, {{"o", kOptTensor}}, {{"x", kFloatTensor}}));
  Value x = Floats({3}, {1, 2, 3});
  auto out = s.Run({Value::MakeOptional(x).value()}).value();
  EXPECT_TRUE(out[0].SharesStorageWith(x));

  Session seq = MustCreate(OneNode("OptionalGetElement", 15, {{"o", kOptSeq}}, {{"s", kFloatSeq}}));
  Value sx = Value::MakeSequence(E::kFloat, {x}).value();
  EXPECT_TRUE(seq.Run({Value::MakeOptional(sx).value()}).value()[0].SharesStorageWith(sx));
}

TEST(OptionalGetElementTest, EmptyOptionalIsARunError) {
  Session s =
      MustCreate(OneNode("OptionalGetElement", 15, {{"o", kOptTensor}}, {{"x", kFloatTensor}}));
  auto out = s.Run({Value::MakeEmptyOptional(Type::Tensor(E::kFloat)).value()});
  ASSERT_FALSE(out.ok());
  EXPECT_STATUS(out, StatusCode::kRuntimeError,
                "node 'n0' (OptionalGetElement-15): the optional is "
                "empty: there is no tensor(float) to get");
}

TEST(OptionalGetElementTest, Version18PassesPlainValuesThrough) {
  Value x = Floats({3}, {1, 2, 3});
  Session tensor =
      MustCreate(OneNode("OptionalGetElement", 18, {{"x", kFloatTensor}}, {{"y", kFloatTensor}}));
  EXPECT_TRUE(tensor.Run({x}).value()[0].SharesStorageWith(x));
  Session seq =
      MustCreate(OneNode("OptionalGetElement", 18, {{"x", kFloatSeq}}, {{"y", kFloatSeq}}));
  Value sx = Value::MakeSequence(E::kFloat, {x}).value();
  EXPECT_TRUE(seq.Run({sx}).value()[0].SharesStorageWith(sx));

  EXPECT_STATUS(
      PlanError(OneNode("OptionalGetElement", 15, {{"x", kFloatTensor}}, {{"y", kFloatTensor}})),
      StatusCode::kInvalidModel,
      "OptionalGetElement-15 accepts optionals only (tensor(float) needs opset >= 18)");
  // The inferred type is the element type: declaring the optional itself is a mismatch.
  EXPECT_STATUS(
      PlanError(OneNode("OptionalGetElement", 18, {{"o", kOptTensor}}, {{"y", kOptTensor}})),
      StatusCode::kInvalidModel,
      "output 'y' is declared optional(tensor(float)) but the node produces tensor(float)");
}

// Optional and OptionalGetElement take over an input the run hands them (no later reader) and
// copy the handle otherwise; either way every output holds what it should, including an optional
// that is itself an output while its element is taken out of it.
TEST(OptionalPipelineTest, HandedOverAndSharedInputsGiveTheSameValues) {
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE(variant);
    const bool seq_is_output = variant & 1;
    const bool opt_is_output = variant & 2;
    onnx::ModelProto m = testing::EmptyModel(18, 9);
    auto* g = m.mutable_graph();
    AddValueInfo(g->mutable_input(), "x", Unshaped(E::kFloat));
    AddValueInfo(g->mutable_output(), "seq_out", kFloatSeq);
    AddValueInfo(g->mutable_output(), "plain", kFloatSeq);
    if (seq_is_output) AddValueInfo(g->mutable_output(), "seq", kFloatSeq);
    if (opt_is_output) AddValueInfo(g->mutable_output(), "opt", kOptSeq);
    AddNode(g, "SequenceConstruct", {"x", "x"}, {"seq"});
    AddNode(g, "Optional", {"seq"}, {"opt"});
    AddNode(g, "OptionalGetElement", {"opt"}, {"seq_out"});
    // Version 18 on a plain sequence the run hands over: returned as is.
    AddNode(g, "SequenceConstruct", {"x"}, {"seq1"});
    AddNode(g, "OptionalGetElement", {"seq1"}, {"plain"});
    Session s = MustCreate(m);
    Value x = Floats({2}, {1, 2});
    for (int run = 0; run < 2; ++run) {
      auto out = s.Run({x}).value();
      const Value& seq_out = out[0];
      ASSERT_EQ(seq_out.sequence().size(), 2u);
      EXPECT_TRUE(seq_out.sequence().at(1).SharesStorageWith(x));
      ASSERT_EQ(out[1].sequence().size(), 1u);
      EXPECT_TRUE(out[1].sequence().at(0).SharesStorageWith(x));
      size_t next = 2;
      if (seq_is_output) {
        EXPECT_TRUE(out[next++].SharesStorageWith(seq_out));
      }
      if (opt_is_output) {
        const Value& opt = out[next++];
        ASSERT_TRUE(opt.optional().has_value());
        EXPECT_TRUE(opt.optional().value().SharesStorageWith(seq_out));
      }
    }
  }
}

// ---- The seed's example
// --------------------------------------------------------------------------

void SetInt(onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

// x: float[5] -> SequenceConstruct -> Optional -> Identity -> OptionalGetElement
//   -> ConcatFromSequence(axis=0, new_axis=1) -> res: float[1,5], IR 9, opset 16.
TEST(OptionalPipelineTest, SeedExampleRoundTripsWithoutCopying) {
  onnx::ModelProto m = testing::EmptyModel(16, 9);
  auto* g = m.mutable_graph();
  AddValueInfo(g->mutable_input(), "x", TensorTypeProto(E::kFloat, {5}));
  AddValueInfo(g->mutable_output(), "res", TensorTypeProto(E::kFloat, {1, 5}));
  AddNode(g, "SequenceConstruct", {"x"}, {"seq"});
  AddNode(g, "Optional", {"seq"}, {"opt"});
  AddNode(g, "Identity", {"opt"}, {"opt_out"});
  AddNode(g, "OptionalGetElement", {"opt_out"}, {"seq_out"});
  auto* concat = AddNode(g, "ConcatFromSequence", {"seq_out"}, {"res"});
  SetInt(concat, "axis", 0);
  SetInt(concat, "new_axis", 1);
  for (bool eliminate : {true, false}) {
    SessionOptions options;
    options.eliminate_identity = eliminate;
    Session s = CreateSessionFromProto(m, "", options).value();
    Value x = Floats({5}, {1, 2, 3, 4, 5});
    auto out = s.Run({x}).value();
    EXPECT_EQ(FormatValue(out[0]), "[[1, 2, 3, 4, 5]]");
    // One tensor in the sequence: the result reuses x's bytes.
    EXPECT_EQ(out[0].tensor().data().data(), x.tensor().data().data());
  }
}

}  // namespace
}  // namespace idem
