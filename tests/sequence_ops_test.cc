// Sequence operators: SequenceConstruct, SequenceEmpty, SequenceLength, SequenceAt, SequenceInsert,
// SequenceErase, ConcatFromSequence and SplitToSequence. Each runs through a Session built from a
// one-node model, so plan-time checks (types, attributes) and run-time errors are both covered.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
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
using testing::MakeTensorOf;
using testing::MustCreate;
using testing::OneNode;
using testing::PlanError;
using testing::SequenceTypeProto;
using testing::TensorTypeProto;
using testing::Unshaped;

using E = ElementType;

onnx::TypeProto SeqOf(ElementType type) { return SequenceTypeProto(Unshaped(type)); }

void SetInt(onnx::ModelProto& m, const std::string& name, int64_t value) {
  testing::AddIntAttribute(m.mutable_graph()->mutable_node(0), name, value);
}

Value Int64Scalar(int64_t v) { return MakeTensorOf<int64_t>(E::kInt64, {}, {v}); }
Value Int32Scalar(int32_t v) { return MakeTensorOf<int32_t>(E::kInt32, {}, {v}); }
Value Int64s(std::vector<int64_t> values) {
  const auto n = static_cast<int64_t>(values.size());
  return MakeTensorOf(E::kInt64, {n}, std::move(values));
}
Value Strings(std::vector<int64_t> shape, std::vector<std::string> values) {
  return Value::MakeStringTensor(std::move(shape), std::move(values)).value();
}
Value FloatSeq(std::vector<Value> tensors) {
  return Value::MakeSequence(E::kFloat, std::move(tensors)).value();
}

std::vector<float> FloatsOf(const Value& v) {
  auto span = v.tensor().data_as<float>();
  return {span.begin(), span.end()};
}
std::vector<int64_t> ShapeOf(const Value& v) {
  return {v.tensor().shape().begin(), v.tensor().shape().end()};
}

// Runs and returns the status (OK when the run succeeds); check it with EXPECT_STATUS.
Status RunError(const Session& s, std::vector<Value> feeds) { return s.Run(feeds).status(); }

// ---- Registry -----------------------------------------------------------------------------------

TEST(SequenceRegistryTest, SplitToSequence24AddsBfloat16) {
  const auto& registry = KernelRegistry::Default();
  std::vector<int> since;
  for (const KernelSchema* s : registry.Versions("", "SplitToSequence")) {
    since.push_back(s->since_version);
  }
  EXPECT_EQ(since, (std::vector<int>{11, 24}));
  const KernelSchema* v24 = registry.Resolve("", "SplitToSequence", 28);
  EXPECT_EQ(v24->FindConstraint("T")->allowed.size(), 16u);
  EXPECT_EQ(v24->FindConstraint("S")->allowed.size(), 16u);
  EXPECT_TRUE(v24->FindConstraint("T")->Allows(Type::Tensor(E::kBfloat16)));
  EXPECT_TRUE(v24->FindConstraint("S")->Allows(Type::Sequence(Type::Tensor(E::kBfloat16))));
  EXPECT_FALSE(v24->FindConstraint("T")->Allows(Type::Tensor(E::kFloat8E4M3FN)));
  const KernelSchema* v11 = registry.Resolve("", "SplitToSequence", 23);
  EXPECT_EQ(v11->since_version, 11);
  EXPECT_FALSE(v11->FindConstraint("T")->Allows(Type::Tensor(E::kBfloat16)));
  // The other sequence operators exist from opset 11 only.
  EXPECT_EQ(registry.Resolve("", "SequenceAt", 10), nullptr);
  EXPECT_EQ(registry.Resolve("", "SequenceAt", 28)->since_version, 11);
}

// ---- SequenceConstruct
// ---------------------------------------------------------------------------

TEST(SequenceConstructTest, HoldsTheInputTensorsThemselves) {
  auto m = OneNode("SequenceConstruct", 11,
                   {{"a", TensorTypeProto(E::kFloat, {2})}, {"b", TensorTypeProto(E::kFloat, {3})}},
                   {{"s", SeqOf(E::kFloat)}});
  Session s = MustCreate(m);
  Value a = Floats({2}, {1, 2});
  Value b = Floats({3}, {3, 4, 5});
  auto out = s.Run({a, b}).value();
  ASSERT_EQ(out[0].sequence().size(), 2u);
  EXPECT_EQ(out[0].sequence().element_type(), E::kFloat);
  EXPECT_TRUE(out[0].sequence().at(0).SharesStorageWith(a));
  EXPECT_TRUE(out[0].sequence().at(1).SharesStorageWith(b));
}

TEST(SequenceConstructTest, DifferentElementTypesAreRejectedAtPlanTime) {
  auto m = OneNode("SequenceConstruct", 11,
                   {{"a", TensorTypeProto(E::kFloat, {2})}, {"b", TensorTypeProto(E::kInt32, {2})}},
                   {{"s", SeqOf(E::kFloat)}});
  Status e = PlanError(m);
  EXPECT_STATUS(e, StatusCode::kInvalidModel, "node 'n0' (SequenceConstruct-11)");
  EXPECT_STATUS(e, StatusCode::kInvalidModel,
                "input 'b' is tensor(int32) but input 'a' is tensor(float); both are type T");
}

TEST(SequenceConstructTest, InferredTypeIsASequenceOfTheElementType) {
  // Declaring the output as a sequence of another element type is a plan-time error.
  auto m = OneNode("SequenceConstruct", 11, {{"a", TensorTypeProto(E::kFloat, {2})}},
                   {{"s", SeqOf(E::kInt64)}});
  EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel,
                "declared seq(tensor(int64)) but the node produces "
                "seq(tensor(float))");
  // Opset 10 has no SequenceConstruct.
  auto old = OneNode("SequenceConstruct", 10, {{"a", TensorTypeProto(E::kFloat, {2})}},
                     {{"s", SeqOf(E::kFloat)}});
  EXPECT_STATUS(PlanError(old), StatusCode::kUnsupported,
                "SequenceConstruct-10 (idem implements it from opset 11)");
}

TEST(SequenceConstructTest, StringTensors) {
  auto m =
      OneNode("SequenceConstruct", 11, {{"a", Unshaped(E::kString)}}, {{"s", SeqOf(E::kString)}});
  Session s = MustCreate(m);
  Value a = Strings({2}, {std::string("x\0y", 3), "\xff"});
  auto out = s.Run({a}).value();
  EXPECT_TRUE(out[0].sequence().at(0).SharesStorageWith(a));
}

// ---- SequenceEmpty
// -------------------------------------------------------------------------------

TEST(SequenceEmptyTest, DefaultsToFloatAndHonoursDtype) {
  {
    Session s = MustCreate(OneNode("SequenceEmpty", 11, {}, {{"s", SeqOf(E::kFloat)}}));
    auto out = s.Run(std::vector<Value>{}).value();
    EXPECT_EQ(out[0].sequence().size(), 0u);
    EXPECT_EQ(out[0].sequence().element_type(), E::kFloat);
  }
  {
    auto m = OneNode("SequenceEmpty", 11, {}, {{"s", SeqOf(E::kString)}});
    SetInt(m, "dtype", static_cast<int64_t>(E::kString));
    Session s = MustCreate(m);
    auto out = s.Run(std::vector<Value>{}).value();
    EXPECT_EQ(out[0].sequence().element_type(), E::kString);
  }
}

TEST(SequenceEmptyTest, DtypeOutsideTheAllowedSetIsAPlanError) {
  for (int64_t code : {16, 17, 0, 99, -1}) {
    auto m = OneNode("SequenceEmpty", 11, {}, {{"s", SeqOf(E::kFloat)}});
    SetInt(m, "dtype", code);
    Status e = PlanError(m);
    EXPECT_STATUS(e, StatusCode::kInvalidModel,
                  "node 'n0' (SequenceEmpty-11): attribute 'dtype' is " + std::to_string(code));
  }
  auto m = OneNode("SequenceEmpty", 11, {}, {{"s", SeqOf(E::kFloat)}});
  SetInt(m, "shape", 1);
  EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel,
                "unknown attribute 'shape' (SequenceEmpty-11 defines dtype)");
}

// ---- SequenceLength
// ------------------------------------------------------------------------------

TEST(SequenceLengthTest, ReturnsAnInt64Scalar) {
  auto m = OneNode("SequenceLength", 11, {{"s", SeqOf(E::kFloat)}},
                   {{"n", TensorTypeProto(E::kInt64, {})}});
  Session s = MustCreate(m);
  for (size_t n : {0, 1, 3}) {
    std::vector<Value> tensors(n, Floats({1}, {1}));
    auto out = s.Run({FloatSeq(tensors)}).value();
    EXPECT_EQ(out[0].tensor().element_type(), E::kInt64);
    EXPECT_EQ(out[0].tensor().rank(), 0u);
    EXPECT_EQ(out[0].tensor().data_as<int64_t>()[0], static_cast<int64_t>(n));
  }
  // A declared non-scalar output contradicts the inferred shape [].
  auto bad = OneNode("SequenceLength", 11, {{"s", SeqOf(E::kFloat)}},
                     {{"n", TensorTypeProto(E::kInt64, {1})}});
  EXPECT_STATUS(PlanError(bad), StatusCode::kInvalidModel,
                "declared int64[1] but the node produces int64[]");
}

// ---- SequenceAt
// ----------------------------------------------------------------------------------

TEST(SequenceAtTest, ReturnsTheStoredTensorForPositiveAndNegativePositions) {
  auto m =
      OneNode("SequenceAt", 11, {{"s", SeqOf(E::kFloat)}, {"p", TensorTypeProto(E::kInt64, {})}},
              {{"t", Unshaped(E::kFloat)}});
  Session s = MustCreate(m);
  std::vector<Value> tensors = {Floats({1}, {0}), Floats({2}, {1, 1}), Floats({3}, {2, 2, 2})};
  Value seq = FloatSeq(tensors);
  const std::vector<std::pair<int64_t, size_t>> cases = {{0, 0}, {2, 2}, {-1, 2}, {-3, 0}};
  for (auto [position, index] : cases) {
    auto out = s.Run({seq, Int64Scalar(position)}).value();
    EXPECT_TRUE(out[0].SharesStorageWith(tensors[index])) << position;
  }
}

TEST(SequenceAtTest, PositionOutOfRangeNamesPositionAndLength) {
  auto m =
      OneNode("SequenceAt", 11, {{"s", SeqOf(E::kFloat)}, {"p", TensorTypeProto(E::kInt32, {})}},
              {{"t", Unshaped(E::kFloat)}});
  Session s = MustCreate(m);
  Value seq = FloatSeq({Floats({1}, {0}), Floats({1}, {1}), Floats({1}, {2})});
  Status e = RunError(s, {seq, Int32Scalar(3)});
  EXPECT_STATUS(e, StatusCode::kOutOfRange,
                "node 'n0' (SequenceAt-11): position 3 is out of range for a sequence of "
                "length 3 (accepted [-3, 2])");
  EXPECT_STATUS(RunError(s, {seq, Int32Scalar(-4)}), StatusCode::kOutOfRange,
                "position -4 is out of range");
  EXPECT_STATUS(RunError(s, {FloatSeq({}), Int32Scalar(0)}), StatusCode::kOutOfRange,
                "position 0 is out of range for a sequence of length 0");
}

TEST(SequenceAtTest, PositionMustBeIntegral) {
  auto m =
      OneNode("SequenceAt", 11, {{"s", SeqOf(E::kFloat)}, {"p", TensorTypeProto(E::kFloat, {})}},
              {{"t", Unshaped(E::kFloat)}});
  EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel,
                "input 'p' is tensor(float); SequenceAt-11 does not accept "
                "tensor(float)");
}

// ---- SequenceInsert
// ------------------------------------------------------------------------------

class SequenceInsertTest : public ::testing::Test {
 protected:
  Session WithPosition() {
    return MustCreate(OneNode("SequenceInsert", 11,
                              {{"s", SeqOf(E::kFloat)},
                               {"t", Unshaped(E::kFloat)},
                               {"p", TensorTypeProto(E::kInt64, {})}},
                              {{"out", SeqOf(E::kFloat)}}));
  }
  std::vector<Value> tensors_ = {Floats({1}, {0}), Floats({1}, {1})};
  Value seq_ = FloatSeq(tensors_);
  Value x_ = Floats({2}, {7, 7});
};

TEST_F(SequenceInsertTest, DefaultAppendsAndSharesEveryTensor) {
  Session s = MustCreate(OneNode("SequenceInsert", 11,
                                 {{"s", SeqOf(E::kFloat)}, {"t", Unshaped(E::kFloat)}},
                                 {{"out", SeqOf(E::kFloat)}}));
  auto out = s.Run({seq_, x_}).value();
  const Sequence& result = out[0].sequence();
  ASSERT_EQ(result.size(), 3u);
  EXPECT_TRUE(result.at(0).SharesStorageWith(tensors_[0]));
  EXPECT_TRUE(result.at(1).SharesStorageWith(tensors_[1]));
  EXPECT_TRUE(result.at(2).SharesStorageWith(x_));
  // The input sequence is unchanged.
  EXPECT_EQ(seq_.sequence().size(), 2u);
}

TEST_F(SequenceInsertTest, PositionsFromTheFrontAndTheBack) {
  Session s = WithPosition();
  // position -> index of x in the result
  const std::vector<std::pair<int64_t, size_t>> cases = {{0, 0}, {1, 1}, {2, 2}, {-1, 1}, {-2, 0}};
  for (auto [position, index] : cases) {
    auto out = s.Run({seq_, x_, Int64Scalar(position)}).value();
    ASSERT_EQ(out[0].sequence().size(), 3u);
    EXPECT_TRUE(out[0].sequence().at(index).SharesStorageWith(x_)) << position;
  }
}

TEST_F(SequenceInsertTest, PositionOutOfRange) {
  Session s = WithPosition();
  EXPECT_STATUS(RunError(s, {seq_, x_, Int64Scalar(3)}), StatusCode::kOutOfRange,
                "position 3 is out of range for a sequence of length 2 (accepted [-2, 2])");
  EXPECT_STATUS(RunError(s, {seq_, x_, Int64Scalar(-3)}), StatusCode::kOutOfRange,
                "position -3 is out of range");
  // Into an empty sequence only 0 fits.
  EXPECT_TRUE(RunError(s, {FloatSeq({}), x_, Int64Scalar(0)}).ok());
  EXPECT_STATUS(RunError(s, {FloatSeq({}), x_, Int64Scalar(1)}), StatusCode::kOutOfRange,
                "position 1 is out of range");
}

TEST_F(SequenceInsertTest, TensorOfAnotherElementTypeIsAPlanError) {
  auto m = OneNode("SequenceInsert", 11, {{"s", SeqOf(E::kFloat)}, {"t", Unshaped(E::kInt32)}},
                   {{"out", SeqOf(E::kFloat)}});
  Status e = PlanError(m);
  EXPECT_STATUS(e, StatusCode::kInvalidModel,
                "node 'n0' (SequenceInsert-11): input 'tensor' is tensor(int32) but "
                "'input_sequence' is seq(tensor(float))");
}

TEST_F(SequenceInsertTest, StringTensors) {
  Session s = MustCreate(OneNode("SequenceInsert", 11,
                                 {{"s", SeqOf(E::kString)}, {"t", Unshaped(E::kString)}},
                                 {{"out", SeqOf(E::kString)}}));
  Value a = Strings({1}, {"a"});
  Value seq = Value::MakeSequence(E::kString, {a}).value();
  Value b = Strings({}, {std::string("\0", 1)});
  auto out = s.Run({seq, b}).value();
  ASSERT_EQ(out[0].sequence().size(), 2u);
  EXPECT_TRUE(out[0].sequence().at(1).SharesStorageWith(b));
}

// ---- SequenceErase
// -------------------------------------------------------------------------------

TEST(SequenceEraseTest, DefaultErasesTheLast) {
  Session s = MustCreate(
      OneNode("SequenceErase", 11, {{"s", SeqOf(E::kFloat)}}, {{"out", SeqOf(E::kFloat)}}));
  std::vector<Value> tensors = {Floats({1}, {0}), Floats({1}, {1}), Floats({1}, {2})};
  auto out = s.Run({FloatSeq(tensors)}).value();
  ASSERT_EQ(out[0].sequence().size(), 2u);
  EXPECT_TRUE(out[0].sequence().at(0).SharesStorageWith(tensors[0]));
  EXPECT_TRUE(out[0].sequence().at(1).SharesStorageWith(tensors[1]));
  EXPECT_STATUS(RunError(s, {FloatSeq({})}), StatusCode::kOutOfRange,
                "node 'n0' (SequenceErase-11): the sequence is empty: there is no last tensor "
                "to erase");
}

TEST(SequenceEraseTest, PositionsAndRange) {
  Session s = MustCreate(OneNode("SequenceErase", 11,
                                 {{"s", SeqOf(E::kFloat)}, {"p", TensorTypeProto(E::kInt32, {})}},
                                 {{"out", SeqOf(E::kFloat)}}));
  std::vector<Value> tensors = {Floats({1}, {0}), Floats({1}, {1}), Floats({1}, {2})};
  Value seq = FloatSeq(tensors);
  // position -> the tensor that is gone
  const std::vector<std::pair<int32_t, size_t>> cases = {{0, 0}, {1, 1}, {-1, 2}, {-3, 0}};
  for (auto [position, erased] : cases) {
    auto out = s.Run({seq, Int32Scalar(position)}).value();
    ASSERT_EQ(out[0].sequence().size(), 2u);
    for (const Value& v : out[0].sequence().values()) {
      EXPECT_FALSE(v.SharesStorageWith(tensors[erased])) << position;
    }
  }
  EXPECT_STATUS(RunError(s, {seq, Int32Scalar(3)}), StatusCode::kOutOfRange,
                "position 3 is out of range for a sequence of length 3 (accepted [-3, 2])");
  EXPECT_STATUS(RunError(s, {seq, Int32Scalar(-4)}), StatusCode::kOutOfRange,
                "position -4 is out of range");
}

// ---- ConcatFromSequence
// --------------------------------------------------------------------------

Session ConcatSession(std::optional<int64_t> axis, std::optional<int64_t> new_axis,
                      ElementType type = E::kFloat) {
  auto m = OneNode("ConcatFromSequence", 11, {{"s", SeqOf(type)}}, {{"y", Unshaped(type)}});
  if (axis) SetInt(m, "axis", *axis);
  if (new_axis) SetInt(m, "new_axis", *new_axis);
  return MustCreate(m);
}

TEST(ConcatFromSequenceTest, ConcatenatesOnAnExistingAxis) {
  Value a = Floats({2, 2}, {1, 2, 3, 4});
  Value b = Floats({1, 2}, {5, 6});
  auto out = ConcatSession(0, std::nullopt).Run({FloatSeq({a, b})}).value();
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(FloatsOf(out[0]), (std::vector<float>{1, 2, 3, 4, 5, 6}));

  Value c = Floats({2, 1}, {7, 8});
  for (int64_t axis : {1, -1}) {
    out = ConcatSession(axis, 0).Run({FloatSeq({a, c})}).value();
    EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(FloatsOf(out[0]), (std::vector<float>{1, 2, 7, 3, 4, 8}));
  }
}

TEST(ConcatFromSequenceTest, StacksOnANewAxis) {
  Value a = Floats({2}, {1, 2});
  Value b = Floats({2}, {3, 4});
  auto out = ConcatSession(0, 1).Run({FloatSeq({a, b})}).value();
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(FloatsOf(out[0]), (std::vector<float>{1, 2, 3, 4}));
  // The new axis may be last: [-r-1, r].
  for (int64_t axis : {1, -1}) {
    out = ConcatSession(axis, 1).Run({FloatSeq({a, b})}).value();
    EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(FloatsOf(out[0]), (std::vector<float>{1, 3, 2, 4}));
  }
  out = ConcatSession(-2, 1).Run({FloatSeq({a, b})}).value();
  EXPECT_EQ(FloatsOf(out[0]), (std::vector<float>{1, 2, 3, 4}));
  // Scalars stack into a vector.
  out = ConcatSession(0, 1).Run({FloatSeq({Floats({}, {9}), Floats({}, {8})})}).value();
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{2}));
  EXPECT_EQ(FloatsOf(out[0]), (std::vector<float>{9, 8}));
}

TEST(ConcatFromSequenceTest, OneTensorSharesItsBuffer) {
  Value a = Floats({5}, {1, 2, 3, 4, 5});
  for (auto [new_axis, shape] :
       std::vector<std::pair<int64_t, std::vector<int64_t>>>{{1, {1, 5}}, {0, {5}}}) {
    auto out = ConcatSession(0, new_axis).Run({FloatSeq({a})}).value();
    EXPECT_EQ(ShapeOf(out[0]), shape);
    EXPECT_EQ(out[0].tensor().data().data(), a.tensor().data().data());
  }
}

TEST(ConcatFromSequenceTest, ShapeMismatchNamesBothShapesAndTheAxis) {
  Value a = Floats({2, 2}, {1, 2, 3, 4});
  Value b = Floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Status e = RunError(ConcatSession(0, 0), {FloatSeq({a, b})});
  EXPECT_STATUS(e, StatusCode::kRuntimeError, "node 'n0' (ConcatFromSequence-11)");
  EXPECT_STATUS(e, StatusCode::kRuntimeError,
                "cannot concatenate tensor 0 of shape [2,2] and tensor 1 of shape [2,3] "
                "on axis 0");
  e = RunError(ConcatSession(1, 1), {FloatSeq({a, Floats({1, 2}, {1, 2})})});
  EXPECT_STATUS(e, StatusCode::kRuntimeError,
                "cannot stack tensor 0 of shape [2,2] and tensor 1 of shape [1,2] on axis 1");
  e = RunError(ConcatSession(0, 0), {FloatSeq({a, Floats({4}, {1, 2, 3, 4})})});
  EXPECT_STATUS(e, StatusCode::kRuntimeError, "tensor 1 of shape [4]");
}

TEST(ConcatFromSequenceTest, EmptySequenceAndBadAxesAreErrors) {
  EXPECT_STATUS(RunError(ConcatSession(0, 0), {FloatSeq({})}), StatusCode::kRuntimeError,
                "the sequence is empty");
  Value a = Floats({2}, {1, 2});
  EXPECT_STATUS(RunError(ConcatSession(1, 0), {FloatSeq({a, a})}), StatusCode::kOutOfRange,
                "axis 1 is out of range for rank 1 (accepted [-1, 0])");
  EXPECT_STATUS(RunError(ConcatSession(2, 1), {FloatSeq({a, a})}), StatusCode::kOutOfRange,
                "axis 2 is out of range for rank 2 (accepted [-2, 1])");
  EXPECT_STATUS(RunError(ConcatSession(0, 0), {FloatSeq({Floats({}, {1})})}),
                StatusCode::kOutOfRange, "a rank-0 tensor has no axis");
}

TEST(ConcatFromSequenceTest, AttributesAreCheckedAtPlanTime) {
  auto m =
      OneNode("ConcatFromSequence", 11, {{"s", SeqOf(E::kFloat)}}, {{"y", Unshaped(E::kFloat)}});
  EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel, "required attribute 'axis' is missing");
  SetInt(m, "axis", 0);
  SetInt(m, "new_axis", 2);
  EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel,
                "attribute 'new_axis' is 2; it must be 0 or 1");
  // With a declared element rank the axis is checked before running.
  auto ranked = OneNode("ConcatFromSequence", 11,
                        {{"s", SequenceTypeProto(TensorTypeProto(E::kFloat, {2, 3}))}},
                        {{"y", Unshaped(E::kFloat)}});
  SetInt(ranked, "axis", 2);
  EXPECT_STATUS(PlanError(ranked), StatusCode::kOutOfRange, "axis 2 is out of range for rank 2");
}

TEST(ConcatFromSequenceTest, StringsAndOtherWidths) {
  Value a = Strings({1, 2}, {"a", "b"});
  Value b = Strings({1, 2}, {"", std::string("\0z", 2)});
  Value seq = Value::MakeSequence(E::kString, {a, b}).value();
  auto out = ConcatSession(1, 0, E::kString).Run({seq}).value();
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{1, 4}));
  const auto strings = out[0].tensor().strings();
  EXPECT_EQ(std::vector<std::string>(strings.begin(), strings.end()),
            (std::vector<std::string>{"a", "b", "", std::string("\0z", 2)}));

  Value x = MakeTensorOf<double>(E::kComplex128, {1}, {1.0, -0.0});
  Value y = MakeTensorOf<double>(E::kComplex128, {2}, {2.0, 3.0, 4.0, 5.0});
  Value cseq = Value::MakeSequence(E::kComplex128, {x, y}).value();
  out = ConcatSession(0, 0, E::kComplex128).Run({cseq}).value();
  auto values = out[0].tensor().data_as<double>();
  ASSERT_EQ(values.size(), 6u);
  EXPECT_TRUE(std::signbit(values[1]));
  EXPECT_EQ(values[5], 5.0);

  // Zero-sized tensors concatenate too.
  out = ConcatSession(0, 0).Run({FloatSeq({Floats({0, 2}, {}), Floats({1, 2}, {1, 2})})}).value();
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(FloatsOf(out[0]), (std::vector<float>{1, 2}));
}

// Zero-element tensors may declare enormous dims; nothing may overflow or allocate for them.
TEST(ConcatFromSequenceTest, HugeDimsOfEmptyTensors) {
  // The non-zero dims of an empty tensor must still multiply within int64 (Value::MakeTensor's
  // rule, independent of dim order), so "huge" here is 2^30 x 2^30.
  const int64_t big = int64_t{1} << 30;
  Value empty = Floats({0, big, big}, {});
  auto out = ConcatSession(2, 0).Run({FloatSeq({empty, empty})}).value();
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{0, big, 2 * big}));
  Value wide = Floats({0, int64_t{1} << 62}, {});
  EXPECT_STATUS(RunError(ConcatSession(1, 0), {FloatSeq({wide, wide})}), StatusCode::kOutOfRange,
                "the concatenated extent on axis 1 overflows int64");
}

// One [2^20, 1] tensor among 2^22 references to an empty [2^20, 0] tensor, concatenated on axis 1:
// the gather used to visit every (row, tensor) pair, 2^42 steps copying nothing (hours); its work
// is now the 2^20 elements it copies.
TEST(ConcatFromSequenceTest, EmptyTensorsCostNothingPerRow) {
  const int64_t rows = int64_t{1} << 20;
  std::vector<Value> items(size_t{1} << 22, Floats({rows, 0}, {}));
  std::vector<float> column(static_cast<size_t>(rows));
  for (size_t i = 0; i < column.size(); ++i) column[i] = static_cast<float>(i);
  items[items.size() / 2] = Floats({rows, 1}, column);
  Value seq = Value::MakeSequence(E::kFloat, std::move(items)).value();
  auto out = ConcatSession(1, 0).Run({seq});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ShapeOf((*out)[0]), (std::vector<int64_t>{rows, 1}));
  EXPECT_EQ(FloatsOf((*out)[0]), column);
}

// ---- SplitToSequence
// -----------------------------------------------------------------------------

// Builder for SplitModel: SplitOptions().Axis(1).Keepdims(0).
struct SplitOptions {
  int opset = 11;
  std::optional<int64_t> axis;
  std::optional<int64_t> keepdims;
  std::optional<onnx::TypeProto> split;  // declared type of the split input, when present
  ElementType type = E::kFloat;

  SplitOptions& Opset(int v) {
    opset = v;
    return *this;
  }
  SplitOptions& Axis(int64_t v) {
    axis = v;
    return *this;
  }
  SplitOptions& Keepdims(int64_t v) {
    keepdims = v;
    return *this;
  }
  SplitOptions& Split(onnx::TypeProto v) {
    split = std::move(v);
    return *this;
  }
  SplitOptions& Of(ElementType v) {
    type = v;
    return *this;
  }
};

onnx::ModelProto SplitModel(const SplitOptions& o) {
  std::vector<Io> inputs = {{"x", Unshaped(o.type)}};
  if (o.split) inputs.push_back({"split", *o.split});
  auto m = OneNode("SplitToSequence", o.opset, inputs, {{"s", SeqOf(o.type)}});
  if (o.axis) SetInt(m, "axis", *o.axis);
  if (o.keepdims) SetInt(m, "keepdims", *o.keepdims);
  return m;
}

std::vector<std::vector<int64_t>> Shapes(const Value& seq) {
  std::vector<std::vector<int64_t>> out;
  for (const Value& v : seq.sequence().values()) out.push_back(ShapeOf(v));
  return out;
}

// 3x2: [[0, 1], [2, 3], [4, 5]]
Value Input3x2() { return Floats({3, 2}, {0, 1, 2, 3, 4, 5}); }

TEST(SplitToSequenceTest, DefaultSplitsIntoOnesAndKeepdimsDropsTheAxis) {
  Value x = Input3x2();
  auto out = MustCreate(SplitModel(SplitOptions())).Run({x}).value();
  EXPECT_EQ(Shapes(out[0]), (std::vector<std::vector<int64_t>>{{1, 2}, {1, 2}, {1, 2}}));
  EXPECT_EQ(FloatsOf(out[0].sequence().at(2)), (std::vector<float>{4, 5}));

  out = MustCreate(SplitModel(SplitOptions().Axis(1).Keepdims(0))).Run({x}).value();
  EXPECT_EQ(Shapes(out[0]), (std::vector<std::vector<int64_t>>{{3}, {3}}));
  EXPECT_EQ(FloatsOf(out[0].sequence().at(1)), (std::vector<float>{1, 3, 5}));
}

TEST(SplitToSequenceTest, ScalarSplitLeavesAnUnevenLastChunk) {
  Value x = Floats({5}, {0, 1, 2, 3, 4});
  Session s = MustCreate(SplitModel(SplitOptions().Split(TensorTypeProto(E::kInt64, {}))));
  auto out = s.Run({x, Int64Scalar(2)}).value();
  EXPECT_EQ(Shapes(out[0]), (std::vector<std::vector<int64_t>>{{2}, {2}, {1}}));
  EXPECT_EQ(FloatsOf(out[0].sequence().at(2)), (std::vector<float>{4}));
  out = s.Run({x, Int64Scalar(7)}).value();
  EXPECT_EQ(Shapes(out[0]), (std::vector<std::vector<int64_t>>{{5}}));
  EXPECT_STATUS(RunError(s, {x, Int64Scalar(0)}), StatusCode::kRuntimeError,
                "a scalar 'split' must be positive, got 0");
  // Nothing to split: no chunks.
  out = s.Run({Floats({0}, {}), Int64Scalar(3)}).value();
  EXPECT_EQ(out[0].sequence().size(), 0u);
}

TEST(SplitToSequenceTest, ListSplitMustAddUpAndMayHoldZeros) {
  Value x = Input3x2();
  // keepdims is ignored when split is given.
  Session s =
      MustCreate(SplitModel(SplitOptions().Keepdims(0).Split(TensorTypeProto(E::kInt64, {-1}))));
  auto out = s.Run({x, Int64s({1, 0, 2})}).value();
  EXPECT_EQ(Shapes(out[0]), (std::vector<std::vector<int64_t>>{{1, 2}, {0, 2}, {2, 2}}));
  EXPECT_EQ(FloatsOf(out[0].sequence().at(2)), (std::vector<float>{2, 3, 4, 5}));
  // A one-element list is a list, not a scalar.
  out = s.Run({x, Int64s({3})}).value();
  EXPECT_EQ(Shapes(out[0]), (std::vector<std::vector<int64_t>>{{3, 2}}));

  EXPECT_STATUS(RunError(s, {x, Int64s({1, 1})}), StatusCode::kRuntimeError,
                "'split' sizes [1,1] add up to 2, but the axis has 3 elements");
  EXPECT_STATUS(RunError(s, {x, Int64s({4, -1})}), StatusCode::kRuntimeError,
                "'split' value -1 at index 1 is negative");
  EXPECT_STATUS(RunError(s, {x, Int64s({})}), StatusCode::kRuntimeError,
                "add up to 0, but the axis has 3");
  Value matrix = MakeTensorOf<int64_t>(E::kInt64, {1, 1}, {3});
  Session any = MustCreate(SplitModel(SplitOptions().Split(Unshaped(E::kInt64))));
  EXPECT_STATUS(RunError(any, {x, matrix}), StatusCode::kRuntimeError,
                "'split' must be a scalar or 1-D, got shape [1,1]");
  EXPECT_STATUS(PlanError(SplitModel(SplitOptions().Split(TensorTypeProto(E::kInt64, {1, 1})))),
                StatusCode::kInvalidModel, "it must be a scalar or 1-D");
}

TEST(SplitToSequenceTest, Int32SplitOnAnInnerAxisCopies) {
  Value x = Floats({2, 3}, {0, 1, 2, 3, 4, 5});
  Session s =
      MustCreate(SplitModel(SplitOptions().Axis(-1).Split(TensorTypeProto(E::kInt32, {2}))));
  Value split = MakeTensorOf<int32_t>(E::kInt32, {2}, {1, 2});
  auto out = s.Run({x, split}).value();
  EXPECT_EQ(Shapes(out[0]), (std::vector<std::vector<int64_t>>{{2, 1}, {2, 2}}));
  EXPECT_EQ(FloatsOf(out[0].sequence().at(0)), (std::vector<float>{0, 3}));
  EXPECT_EQ(FloatsOf(out[0].sequence().at(1)), (std::vector<float>{1, 2, 4, 5}));
}

TEST(SplitToSequenceTest, OuterAxisChunksShareTheInputBuffer) {
  Value x = Floats({1, 4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  const std::byte* base = x.tensor().data().data();
  for (int64_t axis : {0, 1}) {
    auto out = MustCreate(SplitModel(SplitOptions().Axis(axis))).Run({x}).value();
    for (const Value& chunk : out[0].sequence().values()) {
      const std::byte* p = chunk.tensor().data().data();
      EXPECT_TRUE(p >= base && p < base + x.tensor().data().size()) << axis;
    }
  }
  auto out = MustCreate(SplitModel(SplitOptions().Axis(1))).Run({x}).value();
  EXPECT_EQ(out[0].sequence().at(3).tensor().data().data(), base + 6 * sizeof(float));
  EXPECT_EQ(FloatsOf(out[0].sequence().at(3)), (std::vector<float>{6, 7}));
}

TEST(SplitToSequenceTest, StringsAreSplitOnAnyAxis) {
  Value x = Strings({2, 2}, {"a", "b", std::string("\0", 1), "\xfe"});
  auto out =
      MustCreate(SplitModel(SplitOptions().Axis(1).Keepdims(0).Of(E::kString))).Run({x}).value();
  ASSERT_EQ(out[0].sequence().size(), 2u);
  const auto strings = out[0].sequence().at(1).tensor().strings();
  EXPECT_EQ(std::vector<std::string>(strings.begin(), strings.end()),
            (std::vector<std::string>{"b", "\xfe"}));
}

TEST(SplitToSequenceTest, AxisRange) {
  Value x = Input3x2();
  EXPECT_STATUS(RunError(MustCreate(SplitModel(SplitOptions().Axis(2))), {x}),
                StatusCode::kOutOfRange, "axis 2 is out of range for rank 2 (accepted [-2, 1])");
  EXPECT_STATUS(RunError(MustCreate(SplitModel(SplitOptions().Axis(-3))), {x}),
                StatusCode::kOutOfRange, "axis -3 is out of range");
  EXPECT_STATUS(RunError(MustCreate(SplitModel(SplitOptions())), {Floats({}, {1})}),
                StatusCode::kOutOfRange, "a rank-0 tensor has no axis");
  auto ranked = OneNode("SplitToSequence", 11, {{"x", TensorTypeProto(E::kFloat, {3, 2})}},
                        {{"s", SeqOf(E::kFloat)}});
  SetInt(ranked, "axis", 5);
  EXPECT_STATUS(PlanError(ranked), StatusCode::kOutOfRange,
                "node 'n0' (SplitToSequence-11): axis 5 is out of range");
}

TEST(SplitToSequenceTest, HugeAxisOfAnEmptyTensorIsBounded) {
  Value x = Floats({0, int64_t{1} << 40}, {});
  auto out = MustCreate(SplitModel(SplitOptions().Axis(1))).Run({x});
  ASSERT_FALSE(out.ok());
  EXPECT_STATUS(out, StatusCode::kResourceExhausted, "the split would make 1099511627776 tensors");
  // Splitting along the zero dim instead makes no chunks.
  EXPECT_EQ(MustCreate(SplitModel(SplitOptions())).Run({x}).value()[0].sequence().size(), 0u);
}

TEST(SplitToSequenceTest, ChunkCountFollowsTheSessionLimit) {
  SessionOptions options;
  options.limits.max_sequence_length = 4;
  Session s = CreateSessionFromProto(SplitModel(SplitOptions()), "", options).value();
  EXPECT_TRUE(s.Run({Floats({4}, {0, 1, 2, 3})}).ok());
  auto out = s.Run({Floats({5}, {0, 1, 2, 3, 4})});
  ASSERT_FALSE(out.ok());
  EXPECT_STATUS(out, StatusCode::kResourceExhausted,
                "the split would make 5 tensors; at most 4 are allowed");
}

// Found by fuzz_backend_case: an empty input of high rank with a long axis must not make a
// million tensors (780 MB) out of a few bytes.
TEST(SplitToSequenceTest, EmptyInputOfHighRankIsBoundedByItsSize) {
  std::vector<int64_t> shape(74, 1);
  shape[1] = 1065053;
  shape[5] = 0;
  Value x = Floats(shape, {});
  auto out = MustCreate(SplitModel(SplitOptions().Axis(1))).Run({x});
  ASSERT_FALSE(out.ok());
  EXPECT_STATUS(out, StatusCode::kResourceExhausted, "the split would make 1065053 tensors");
  // A modest split of an empty tensor still works.
  shape[1] = 1000;
  auto small = MustCreate(SplitModel(SplitOptions().Axis(1))).Run({Floats(shape, {})});
  ASSERT_TRUE(small.ok()) << small.status().message();
  EXPECT_EQ(small.value()[0].sequence().size(), 1000u);
}

TEST(SplitToSequenceTest, Bfloat16NeedsOpset24) {
  EXPECT_STATUS(PlanError(SplitModel(SplitOptions().Opset(23).Of(E::kBfloat16))),
                StatusCode::kInvalidModel,
                "SplitToSequence-11 does not accept tensor(bfloat16) (tensor(bfloat16) needs "
                "opset >= 24)");
  Session s = MustCreate(SplitModel(SplitOptions().Opset(24).Of(E::kBfloat16)));
  Value x = MakeTensorOf<uint16_t>(E::kBfloat16, {2}, {0x3f80, 0x7fc1});
  auto out = s.Run({x}).value();
  ASSERT_EQ(out[0].sequence().size(), 2u);
  EXPECT_EQ(out[0].sequence().element_type(), E::kBfloat16);
  EXPECT_EQ(out[0].sequence().at(1).tensor().data_as<uint16_t>()[0], 0x7fc1);
}

// The seed's sibling example, built in memory: SequenceConstruct(a, b) -> Identity ->
// ConcatFromSequence(axis=0, new_axis=1), with and without Identity elimination.
TEST(SequencePipelineTest, SeedSiblingStacksTwoTensors) {
  onnx::ModelProto m = testing::EmptyModel(14, 7);
  auto* g = m.mutable_graph();
  AddValueInfo(g->mutable_input(), "a", TensorTypeProto(E::kFloat, {1, 2, 2}));
  AddValueInfo(g->mutable_input(), "b", TensorTypeProto(E::kFloat, {1, 2, 2}));
  AddValueInfo(g->mutable_output(), "res", TensorTypeProto(E::kFloat, {2, 1, 2, 2}));
  AddNode(g, "SequenceConstruct", {"a", "b"}, {"seq"});
  AddNode(g, "Identity", {"seq"}, {"seq_out"});
  auto* concat = AddNode(g, "ConcatFromSequence", {"seq_out"}, {"res"});
  testing::AddIntAttribute(concat, "axis", 0);
  testing::AddIntAttribute(concat, "new_axis", 1);
  for (bool eliminate : {true, false}) {
    SessionOptions options;
    options.eliminate_identity = eliminate;
    Session s = CreateSessionFromProto(m, "", options).value();
    auto out = s.Run({Floats({1, 2, 2}, {1, 2, 3, 4}), Floats({1, 2, 2}, {5, 6, 7, 8})}).value();
    EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{2, 1, 2, 2}));
    EXPECT_EQ(FloatsOf(out[0]), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  }
}

}  // namespace
}  // namespace idem
