// The tensor family (Concat, ConstantOfShape, Flatten, Gather, Reshape, Size, Split, Squeeze,
// Transpose) and the shape family (Shape, Slice, Unsqueeze) through KernelRunner: values and
// shapes, inference with unknown and symbolic shapes and with constant inputs, every version's
// behaviour and type set, bad inputs, and constant folding in a session.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <sstream>

#include "src/kernels/tensor_util.h"
#include "tests/kernel_runner.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;

std::vector<int64_t> ShapeOf(const Value& v) {
  auto s = v.tensor().shape();
  return {s.begin(), s.end()};
}

template <class T>
std::vector<T> DataOf(const Value& v) {
  auto s = v.tensor().data_as<T>();
  return {s.begin(), s.end()};
}

std::vector<int64_t> Ints(const Value& v) { return DataOf<int64_t>(v); }

Value I64s(std::vector<int64_t> shape, std::vector<int64_t> values) {
  return MakeTensorOf<int64_t>(E::kInt64, std::move(shape), std::move(values));
}
Value I64Vec(std::vector<int64_t> values) {
  const auto n = static_cast<int64_t>(values.size());
  return I64s({n}, std::move(values));
}

// 0, 1, 2, ... as int64 of `shape`.
Value Iota(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return I64s(std::move(shape), std::move(v));
}

Value Strings(std::vector<int64_t> shape, std::vector<std::string> s) {
  return Value::MakeStringTensor(std::move(shape), std::move(s)).value();
}
std::vector<std::string> StringsOf(const Value& v) {
  auto s = v.tensor().strings();
  return {s.begin(), s.end()};
}

// Dims from text: "N,3,?" is a symbol, a value and an unknown dim.
std::vector<Dim> Dims(const std::string& text) {
  std::vector<Dim> out;
  std::stringstream in(text);
  std::string tok;
  while (std::getline(in, tok, ',')) {
    if (tok == "?") {
      out.push_back(Dim{});
    } else if (std::isdigit(static_cast<unsigned char>(tok[0]))) {
      out.push_back(Dim{std::stoll(tok), {}});
    } else {
      out.push_back(Dim{std::nullopt, tok});
    }
  }
  return out;
}
Type T(E e, const std::string& dims) { return Type::Tensor(e, Dims(dims)); }

Attribute IntA(const std::string& name, int64_t v) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}
Attribute IntsA(const std::string& name, std::vector<int64_t> v) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

// Plan-time inference alone, with input types that may carry symbolic dims and with constants
// (null: not constant), as the planner would run it.
Result<Inference> Infer(const std::string& op, int opset, const std::vector<Type>& types,
                        std::vector<const Value*> constants = {}, std::vector<Attribute> attrs = {},
                        size_t outputs = 1) {
  const KernelSchema* schema = KernelRegistry::Default().Resolve("", op, opset);
  if (schema == nullptr) return Status(StatusCode::kUnsupported, "no such kernel");
  NodeDef node;
  node.op_type = op;
  node.inputs.reserve(types.size());
  for (size_t i = 0; i < types.size(); ++i) node.inputs.push_back("in" + std::to_string(i));
  node.outputs.assign(outputs, "out");
  node.attributes = std::move(attrs);
  std::vector<const Type*> ptrs;
  ptrs.reserve(types.size());
  for (const Type& t : types) ptrs.push_back(&t);
  constants.resize(types.size(), nullptr);
  NodeContext ctx{node, schema->since_version, ptrs, Limits{}, nullptr, constants};
  IDEM_ASSIGN_OR_RETURN(PreparedNode p, schema->prepare(ctx));
  return std::move(p.inference);
}

std::string Shape0(const Result<Inference>& r) {
  if (!r.ok()) return "error: " + r.status().message();
  // ToShortString writes an unknown rank as [?], like one unknown dim; tell them apart.
  if (!r->types[0].shape()) return std::string(ElementTypeName(r->types[0].element_type())) + "[*]";
  return r->types[0].ToShortString();
}

// Runs with full shapes, with unknown shapes, and with every input but the first constant; all
// three must agree (KernelRunner checks each inferred type and folded value).
Result<std::vector<Value>> RunAllWays(const KernelRunner& r, const std::vector<Value>& inputs,
                                      size_t outputs = 1) {
  IDEM_ASSIGN_OR_RETURN(auto a, KernelRunner(r).Run(inputs, outputs));
  IDEM_ASSIGN_OR_RETURN(auto b, KernelRunner(r).UnknownShapes().Run(inputs, outputs));
  KernelRunner c(r);
  for (size_t i = 0; i < inputs.size(); ++i) c.ConstantInput(i);
  IDEM_ASSIGN_OR_RETURN(auto d, c.Run(inputs, outputs));
  for (size_t o = 0; o < outputs; ++o) {
    if (auto why = DescribeDifference(a[o], b[o])) {
      return Status(StatusCode::kInternal, "unknown shapes differ: " + *why);
    }
    if (auto why = DescribeDifference(a[o], d[o])) {
      return Status(StatusCode::kInternal, "constant inputs differ: " + *why);
    }
  }
  return a;
}

Limits SmallLimits(uint64_t bytes) {
  Limits l;
  l.max_tensor_bytes = bytes;
  return l;
}

// ---- Concat -----------------------------------------------------------------------------------

TEST(ConcatTest, JoinsAlongEachAxis) {
  Value a = Iota({2, 2});
  Value b = I64s({2, 1}, {10, 11});
  auto r1 = RunAllWays(KernelRunner("Concat", 13).IntAttr("axis", 1), {a, b}).value();
  EXPECT_EQ(ShapeOf(r1[0]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Ints(r1[0]), (std::vector<int64_t>{0, 1, 10, 2, 3, 11}));
  auto r2 = RunAllWays(KernelRunner("Concat", 11).IntAttr("axis", -2), {a, Iota({1, 2}), a});
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  EXPECT_EQ(ShapeOf((*r2)[0]), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(Ints((*r2)[0]), (std::vector<int64_t>{0, 1, 2, 3, 0, 1, 0, 1, 2, 3}));
  // An empty part adds nothing.
  auto r3 = RunAllWays(KernelRunner("Concat", 4).IntAttr("axis", 0), {a, I64s({0, 2}, {})});
  EXPECT_EQ(Ints((*r3)[0]), Ints(a));
  // Strings, bools and float16 bits are moved as they are.
  auto s = RunAllWays(KernelRunner("Concat", 13).IntAttr("axis", 0),
                      {Strings({1}, {"a"}), Strings({2}, {"", std::string("b\0c", 3)})})
               .value();
  EXPECT_EQ(StringsOf(s[0]), (std::vector<std::string>{"a", "", std::string("b\0c", 3)}));
  auto h = RunAllWays(KernelRunner("Concat", 13).IntAttr("axis", 0),
                      {MakeTensorOf<uint16_t>(E::kFloat16, {1}, {0x7E01}),
                       MakeTensorOf<uint16_t>(E::kFloat16, {1}, {0x8000})})
               .value();
  EXPECT_EQ(DataOf<uint16_t>(h[0]), (std::vector<uint16_t>{0x7E01, 0x8000}));
}

TEST(ConcatTest, OneInputSharesItsBytes) {
  Value a = Iota({2, 3});
  auto r = KernelRunner("Concat", 13).IntAttr("axis", 0).Run({a}).value();
  EXPECT_EQ(r[0].tensor().data().data(), a.tensor().data().data());
}

TEST(ConcatTest, VersionsAndTypeSets) {
  Value f = Floats({1, 2}, {1, 2});
  // Concat-1: floats only, axis defaults to 1.
  auto v1 = KernelRunner("Concat", 1).Run({f, f}).value();
  EXPECT_EQ(ShapeOf(v1[0]), (std::vector<int64_t>{1, 4}));
  EXPECT_FALSE(KernelRunner("Concat", 1).Run({Iota({2}), Iota({2})}).ok());
  // From 4 the axis is required and every type is accepted; negative axes from 11.
  EXPECT_STATUS(KernelRunner("Concat", 4).Run({f, f}), StatusCode::kInvalidModel, "'axis'");
  EXPECT_STATUS(KernelRunner("Concat", 4).IntAttr("axis", -1).Run({f, f}),
                StatusCode::kInvalidModel, "non-negative");
  EXPECT_TRUE(KernelRunner("Concat", 11).IntAttr("axis", -1).Run({f, f}).ok());
  // bfloat16 from 13.
  Value bf = MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0x3F80});
  EXPECT_FALSE(KernelRunner("Concat", 11).IntAttr("axis", 0).Run({bf, bf}).ok());
  EXPECT_EQ(
      DataOf<uint16_t>(KernelRunner("Concat", 13).IntAttr("axis", 0).Run({bf, bf}).value()[0]),
      (std::vector<uint16_t>{0x3F80, 0x3F80}));
}

TEST(ConcatTest, BadInputs) {
  Value a = Iota({2, 2});
  EXPECT_STATUS(KernelRunner("Concat", 13).IntAttr("axis", 0).Run({a, Iota({2})}),
                StatusCode::kInvalidArgument, "rank");
  EXPECT_STATUS(KernelRunner("Concat", 13).IntAttr("axis", 0).Run({a, Iota({2, 3})}),
                StatusCode::kInvalidArgument, "agree on every dim");
  EXPECT_STATUS(KernelRunner("Concat", 13).IntAttr("axis", 2).Run({a, a}),
                StatusCode::kInvalidArgument, "outside");
  EXPECT_STATUS(KernelRunner("Concat", 13).IntAttr("axis", 0).Run({Iota({}), Iota({})}),
                StatusCode::kInvalidArgument, "rank >= 1");
  // The output's size is checked before allocating.
  EXPECT_STATUS(KernelRunner("Concat", 13)
                    .IntAttr("axis", 0)
                    .WithLimits(SmallLimits(40))
                    .Run({Iota({3}), Iota({3})}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
  // Mismatched shapes are found while planning when known.
  EXPECT_STATUS(
      Infer("Concat", 13, {T(E::kFloat, "N,3"), T(E::kFloat, "N,4")}, {}, {IntA("axis", 0)}),
      StatusCode::kInvalidArgument, "agree");
}

TEST(ConcatTest, InfersSymbolicDims) {
  EXPECT_EQ(Shape0(Infer("Concat", 13, {T(E::kFloat, "N,3"), T(E::kFloat, "N,5")}, {},
                         {IntA("axis", 1)})),
            "float[N,8]");
  // A dim known in one input is the output's; the axis is unknown when one part is.
  EXPECT_EQ(Shape0(Infer("Concat", 13, {T(E::kFloat, "?,3"), T(E::kFloat, "4,M")}, {},
                         {IntA("axis", 1)})),
            "float[4,?]");
  EXPECT_EQ(Shape0(Infer("Concat", 13, {T(E::kFloat, "N,3"), Type::Tensor(E::kFloat)}, {},
                         {IntA("axis", 0)})),
            "float[?,3]");
}

// ---- ConstantOfShape --------------------------------------------------------------------------

Value ValueAttr(E type, std::vector<uint8_t> bytes, std::vector<int64_t> shape = {1}) {
  return MakeTensorOf<uint8_t>(type, std::move(shape), std::move(bytes));
}

TEST(ConstantOfShapeTest, FillsTheValue) {
  auto zeros = RunAllWays(KernelRunner("ConstantOfShape", 9), {I64Vec({2, 3})}).value();
  EXPECT_EQ(zeros[0].tensor().element_type(), E::kFloat);
  EXPECT_EQ(DataOf<float>(zeros[0]), std::vector<float>(6, 0.0f));
  Value seven = I64s({1}, {7});
  auto ints =
      RunAllWays(KernelRunner("ConstantOfShape", 9).TensorAttr("value", seven), {I64Vec({3})})
          .value();
  EXPECT_EQ(Ints(ints[0]), (std::vector<int64_t>{7, 7, 7}));
  auto ones = RunAllWays(KernelRunner("ConstantOfShape", 9).TensorAttr("value", Floats({1}, {1})),
                         {I64Vec({5, 1})})
                  .value();
  EXPECT_EQ(DataOf<float>(ones[0]), std::vector<float>(5, 1.0f));
  // An empty shape gives a scalar; a 0 dim an empty tensor.
  auto scalar = KernelRunner("ConstantOfShape", 9).Run({I64s({0}, {})}).value();
  EXPECT_TRUE(ShapeOf(scalar[0]).empty());
  EXPECT_EQ(scalar[0].tensor().element_count(), 1);
  auto empty = RunAllWays(KernelRunner("ConstantOfShape", 9), {I64Vec({0, 1 << 30})}).value();
  EXPECT_EQ(ShapeOf(empty[0]), (std::vector<int64_t>{0, 1 << 30}));
}

TEST(ConstantOfShapeTest, VersionTypeSets) {
  Value bool_one = ValueAttr(E::kBool, {1});
  EXPECT_EQ(DataOf<uint8_t>(KernelRunner("ConstantOfShape", 9)
                                .TensorAttr("value", bool_one)
                                .Run({I64Vec({2})})
                                .value()[0]),
            (std::vector<uint8_t>{1, 1}));
  // bfloat16 and the float8 types from 20, 4-bit from 21, float4e2m1 from 23, 2-bit from 25.
  Value bf = MakeTensorOf<uint16_t>(E::kBfloat16, {1}, {0x3FC0});
  EXPECT_STATUS(KernelRunner("ConstantOfShape", 19).TensorAttr("value", bf).Run({I64Vec({1})}),
                StatusCode::kInvalidModel, "tensor(bfloat16)");
  EXPECT_EQ(DataOf<uint16_t>(KernelRunner("ConstantOfShape", 20)
                                 .TensorAttr("value", bf)
                                 .Run({I64Vec({3})})
                                 .value()[0]),
            (std::vector<uint16_t>{0x3FC0, 0x3FC0, 0x3FC0}));
  Value e5 = ValueAttr(E::kFloat8E5M2, {0x3C});
  EXPECT_EQ(DataOf<uint8_t>(KernelRunner("ConstantOfShape", 20)
                                .TensorAttr("value", e5)
                                .Run({I64Vec({2})})
                                .value()[0]),
            (std::vector<uint8_t>{0x3C, 0x3C}));
  Value i4 = ValueAttr(E::kInt4, {0x0D});  // -3
  EXPECT_FALSE(KernelRunner("ConstantOfShape", 20).TensorAttr("value", i4).Run({I64Vec({3})}).ok());
  auto packed =
      KernelRunner("ConstantOfShape", 21).TensorAttr("value", i4).Run({I64Vec({3})}).value();
  // Three 4-bit elements: 0xDD then 0x0D (the unused high half of the last byte is 0).
  EXPECT_EQ(DataOf<uint8_t>(packed[0]), (std::vector<uint8_t>{0xDD, 0x0D}));
  Value u2 = ValueAttr(E::kUint2, {0x02});
  EXPECT_FALSE(KernelRunner("ConstantOfShape", 24).TensorAttr("value", u2).Run({I64Vec({5})}).ok());
  auto two_bit =
      KernelRunner("ConstantOfShape", 25).TensorAttr("value", u2).Run({I64Vec({5})}).value();
  EXPECT_EQ(DataOf<uint8_t>(two_bit[0]), (std::vector<uint8_t>{0xAA, 0x02}));
  Value f4 = ValueAttr(E::kFloat4E2M1, {0x03});
  EXPECT_FALSE(KernelRunner("ConstantOfShape", 21).TensorAttr("value", f4).Run({I64Vec({1})}).ok());
  EXPECT_TRUE(KernelRunner("ConstantOfShape", 23).TensorAttr("value", f4).Run({I64Vec({1})}).ok());
}

TEST(ConstantOfShapeTest, InfersFromConstantShape) {
  Value shape = I64Vec({2, 0, 4});
  EXPECT_EQ(Shape0(Infer("ConstantOfShape", 9, {T(E::kInt64, "3")}, {&shape})), "float[2,0,4]");
  // Not constant: the rank is the shape's length.
  EXPECT_EQ(Shape0(Infer("ConstantOfShape", 9, {T(E::kInt64, "3")})), "float[?,?,?]");
  EXPECT_EQ(Shape0(Infer("ConstantOfShape", 9, {T(E::kInt64, "N")})), "float[*]");
  Value bad = I64Vec({2, -1});
  EXPECT_STATUS(Infer("ConstantOfShape", 9, {T(E::kInt64, "2")}, {&bad}),
                StatusCode::kInvalidArgument, ">= 0");
}

TEST(ConstantOfShapeTest, BadInputs) {
  EXPECT_STATUS(KernelRunner("ConstantOfShape", 9).Run({I64Vec({2, -1})}),
                StatusCode::kInvalidArgument, "holds -1 at index 1");
  EXPECT_STATUS(KernelRunner("ConstantOfShape", 9).Run({I64s({1, 2}, {2, 2})}),
                StatusCode::kInvalidArgument, "1-D");
  EXPECT_STATUS(KernelRunner("ConstantOfShape", 9)
                    .TensorAttr("value", Floats({2}, {1, 2}))
                    .Run({I64Vec({2})}),
                StatusCode::kInvalidModel, "one element");
  EXPECT_STATUS(KernelRunner("ConstantOfShape", 9)
                    .TensorAttr("value", Strings({1}, {"x"}))
                    .Run({I64Vec({2})}),
                StatusCode::kInvalidModel, "tensor(string)");
  // Sizes are checked before allocating: a small byte limit, and dims whose product is huge.
  EXPECT_STATUS(
      KernelRunner("ConstantOfShape", 9).WithLimits(SmallLimits(1000)).Run({I64Vec({100, 100})}),
      StatusCode::kResourceExhausted, "max_tensor_bytes");
  EXPECT_STATUS(KernelRunner("ConstantOfShape", 9).Run({I64Vec({int64_t{1} << 40, 1 << 30})}),
                StatusCode::kResourceExhausted, "max_elements");
  Limits rank;
  rank.max_rank = 4;
  EXPECT_STATUS(KernelRunner("ConstantOfShape", 9).WithLimits(rank).Run({I64Vec({1, 1, 1, 1, 1})}),
                StatusCode::kResourceExhausted, "max_rank");
  EXPECT_STATUS(
      KernelRunner("Reshape", 13).WithLimits(rank).Run({Iota({1}), I64Vec({1, 1, 1, 1, 1})}),
      StatusCode::kResourceExhausted, "max_rank");
  EXPECT_STATUS(
      KernelRunner("Unsqueeze", 13).WithLimits(rank).Run({Iota({1}), I64Vec({0, 1, 2, 3})}),
      StatusCode::kResourceExhausted, "max_rank");
}

// ---- Flatten ----------------------------------------------------------------------------------

TEST(FlattenTest, EveryAxisAndSharedBytes) {
  Value x = Iota({2, 3, 4});
  const std::vector<std::pair<int64_t, std::vector<int64_t>>> cases = {
      {0, {1, 24}}, {1, {2, 12}}, {2, {6, 4}}, {3, {24, 1}}, {-1, {6, 4}}, {-3, {1, 24}}};
  for (const auto& [axis, shape] : cases) {
    auto r = RunAllWays(KernelRunner("Flatten", 13).IntAttr("axis", axis), {x});
    ASSERT_TRUE(r.ok()) << axis << ": " << r.status().message();
    EXPECT_EQ(ShapeOf((*r)[0]), shape) << axis;
    EXPECT_EQ(Ints((*r)[0]), Ints(x));
    EXPECT_EQ((*r)[0].tensor().data().data(), x.tensor().data().data());
  }
  auto d = KernelRunner("Flatten", 9).Run({x}).value();
  EXPECT_EQ(ShapeOf(d[0]), (std::vector<int64_t>{2, 12}));
  auto s = KernelRunner("Flatten", 13).Run({Strings({1, 2}, {"a", "b"})}).value();
  EXPECT_EQ(StringsOf(s[0]), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ShapeOf(s[0]), (std::vector<int64_t>{1, 2}));
}

TEST(FlattenTest, VersionsAndBadAxes) {
  Value x = Iota({2, 3});
  EXPECT_FALSE(KernelRunner("Flatten", 1).Run({x}).ok());  // Flatten-1: floats only
  EXPECT_TRUE(KernelRunner("Flatten", 1).Run({Floats({2, 1}, {1, 2})}).ok());
  EXPECT_STATUS(KernelRunner("Flatten", 9).IntAttr("axis", -1).Run({x}), StatusCode::kInvalidModel,
                "non-negative");
  EXPECT_STATUS(KernelRunner("Flatten", 13).IntAttr("axis", 3).Run({x}),
                StatusCode::kInvalidArgument, "outside [-2, 2]");
  // 4-bit types from 21 (zero-copy, so any element type works).
  Value u4 = MakeTensorOf<uint8_t>(E::kUint4, {2, 2}, {0x21, 0x43});
  EXPECT_FALSE(KernelRunner("Flatten", 13).Run({u4}).ok());
  auto f = KernelRunner("Flatten", 21).IntAttr("axis", 0).Run({u4}).value();
  EXPECT_EQ(ShapeOf(f[0]), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(DataOf<uint8_t>(f[0]), (std::vector<uint8_t>{0x21, 0x43}));
}

TEST(FlattenTest, InfersSymbolicDims) {
  EXPECT_EQ(Shape0(Infer("Flatten", 13, {T(E::kFloat, "N,3,4")})), "float[N,12]");
  EXPECT_EQ(Shape0(Infer("Flatten", 13, {T(E::kFloat, "N,3,4")}, {}, {IntA("axis", 2)})),
            "float[?,4]");
  EXPECT_EQ(Shape0(Infer("Flatten", 13, {T(E::kFloat, "1,N,1")}, {}, {IntA("axis", 2)})),
            "float[N,1]");
  EXPECT_EQ(Shape0(Infer("Flatten", 13, {Type::Tensor(E::kFloat)})), "float[?,?]");
  EXPECT_EQ(Shape0(Infer("Flatten", 13, {T(E::kFloat, "N,0,4")}, {}, {IntA("axis", 0)})),
            "float[1,0]");
}

// ---- Gather -----------------------------------------------------------------------------------

TEST(GatherTest, AxesAndNegativeIndices) {
  Value data = Iota({3, 2});
  auto r0 = RunAllWays(KernelRunner("Gather", 13), {data, I64s({2, 2}, {0, 1, 1, 2})}).value();
  EXPECT_EQ(ShapeOf(r0[0]), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(Ints(r0[0]), (std::vector<int64_t>{0, 1, 2, 3, 2, 3, 4, 5}));
  auto r1 = RunAllWays(KernelRunner("Gather", 11).IntAttr("axis", 1),
                       {data, MakeTensorOf<int32_t>(E::kInt32, {1, 2}, {-1, 0})})
                .value();
  EXPECT_EQ(ShapeOf(r1[0]), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(Ints(r1[0]), (std::vector<int64_t>{1, 0, 3, 2, 5, 4}));
  // A scalar index drops the axis; on axis 0 the row is shared, not copied.
  auto row = RunAllWays(KernelRunner("Gather", 1), {data, I64s({}, {-2})}).value();
  EXPECT_EQ(ShapeOf(row[0]), (std::vector<int64_t>{2}));
  EXPECT_EQ(Ints(row[0]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(row[0].tensor().data().data(), data.tensor().data().data() + 16);
  // Strings, and no indices at all.
  auto s =
      RunAllWays(KernelRunner("Gather", 13), {Strings({3}, {"a", "bb", "c"}), I64Vec({2, 0, 2})})
          .value();
  EXPECT_EQ(StringsOf(s[0]), (std::vector<std::string>{"c", "a", "c"}));
  auto none =
      RunAllWays(KernelRunner("Gather", 13).IntAttr("axis", 1), {data, I64s({0}, {})}).value();
  EXPECT_EQ(ShapeOf(none[0]), (std::vector<int64_t>{3, 0}));
}

TEST(GatherTest, IndexOutOfRangeNamesTheIndex) {
  Value data = Iota({3, 2});
  EXPECT_STATUS(KernelRunner("Gather", 13).Run({data, I64Vec({0, 3})}),
                StatusCode::kInvalidArgument, "indices[1] is 3, outside [-3, 2] for axis 0");
  EXPECT_STATUS(KernelRunner("Gather", 13).IntAttr("axis", -1).Run({data, I64Vec({-3})}),
                StatusCode::kInvalidArgument, "indices[0] is -3, outside [-2, 1] for axis 1");
  // Constant indices are checked while planning.
  Value idx = I64Vec({5});
  EXPECT_STATUS(Infer("Gather", 13, {T(E::kFloat, "N,2"), T(E::kInt64, "1")}, {nullptr, &idx},
                      {IntA("axis", 1)}),
                StatusCode::kInvalidArgument, "indices[0] is 5");
  // An empty axis has no valid index.
  EXPECT_STATUS(KernelRunner("Gather", 13).Run({I64s({0, 2}, {}), I64Vec({0})}),
                StatusCode::kInvalidArgument, "indices[0] is 0");
  EXPECT_STATUS(KernelRunner("Gather", 13).Run({I64s({}, {1}), I64Vec({0})}),
                StatusCode::kInvalidArgument, "rank >= 1");
  EXPECT_STATUS(KernelRunner("Gather", 13).IntAttr("axis", 2).Run({data, I64Vec({0})}),
                StatusCode::kInvalidArgument, "outside");
  // The output's size (many indices of one row) is checked before allocating.
  EXPECT_STATUS(KernelRunner("Gather", 13)
                    .WithLimits(SmallLimits(64))
                    .Run({data, I64Vec(std::vector<int64_t>(5, 0))}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
}

TEST(GatherTest, InfersShapesAndTypes) {
  EXPECT_EQ(Shape0(Infer("Gather", 13, {T(E::kFloat, "N,T,8"), T(E::kInt64, "B,K")}, {},
                         {IntA("axis", 1)})),
            "float[N,B,K,8]");
  EXPECT_EQ(Shape0(Infer("Gather", 13, {T(E::kInt64, "3"), T(E::kInt64, "")})), "int64[]");
  // bfloat16 from 13.
  Value bf = MakeTensorOf<uint16_t>(E::kBfloat16, {2}, {1, 2});
  EXPECT_FALSE(KernelRunner("Gather", 11).Run({bf, I64Vec({1})}).ok());
  EXPECT_EQ(DataOf<uint16_t>(KernelRunner("Gather", 13).Run({bf, I64Vec({1})}).value()[0]),
            (std::vector<uint16_t>{2}));
}

// ---- Reshape ----------------------------------------------------------------------------------

TEST(ReshapeTest, ZeroMinusOneAndSharedBytes) {
  Value x = Iota({2, 3, 4});
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{4, 6}, {4, 6}},         {{0, -1}, {2, 12}}, {{-1}, {24}}, {{2, 0, 2, 2}, {2, 3, 2, 2}},
      {{1, 1, 24}, {1, 1, 24}}, {{-1, 4}, {6, 4}}};
  for (const auto& [shape, want] : cases) {
    auto r = RunAllWays(KernelRunner("Reshape", 13), {x, I64Vec(shape)});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(ShapeOf((*r)[0]), want);
    EXPECT_EQ((*r)[0].tensor().data().data(), x.tensor().data().data());
  }
  // To a scalar and back.
  auto scalar = RunAllWays(KernelRunner("Reshape", 5), {I64s({1, 1}, {9}), I64s({0}, {})}).value();
  EXPECT_TRUE(ShapeOf(scalar[0]).empty());
  // Reshape-1 takes the shape as an attribute (floats only).
  auto f = Floats({6}, {1, 2, 3, 4, 5, 6});
  auto v1 = KernelRunner("Reshape", 1).IntsAttr("shape", {3, -1}).Run({f}).value();
  EXPECT_EQ(ShapeOf(v1[0]), (std::vector<int64_t>{3, 2}));
  EXPECT_FALSE(KernelRunner("Reshape", 1).IntsAttr("shape", {6}).Run({Iota({6})}).ok());
  EXPECT_STATUS(KernelRunner("Reshape", 1).Run({f}), StatusCode::kInvalidModel, "'shape'");
}

TEST(ReshapeTest, AllowZero) {
  Value empty = I64s({0, 3}, {});
  // allowzero = 1: a 0 is a 0.
  auto z = RunAllWays(KernelRunner("Reshape", 14).IntAttr("allowzero", 1), {empty, I64Vec({3, 0})})
               .value();
  EXPECT_EQ(ShapeOf(z[0]), (std::vector<int64_t>{3, 0}));
  // Default: a 0 copies the input's dim.
  auto c = RunAllWays(KernelRunner("Reshape", 14), {Iota({2, 3}), I64Vec({0, 3})}).value();
  EXPECT_EQ(ShapeOf(c[0]), (std::vector<int64_t>{2, 3}));
  EXPECT_STATUS(KernelRunner("Reshape", 14).IntAttr("allowzero", 1).Run({empty, I64Vec({0, -1})}),
                StatusCode::kInvalidArgument, "both 0 and -1");
  EXPECT_STATUS(KernelRunner("Reshape", 14).IntAttr("allowzero", 2).Run({empty, I64Vec({0})}),
                StatusCode::kInvalidModel, "'allowzero'");
  EXPECT_STATUS(KernelRunner("Reshape", 13).IntAttr("allowzero", 1).Run({empty, I64Vec({0})}),
                StatusCode::kInvalidModel, "unknown attribute");
}

TEST(ReshapeTest, BadShapes) {
  Value x = Iota({2, 3});
  EXPECT_STATUS(KernelRunner("Reshape", 13).Run({x, I64Vec({-1, -1})}),
                StatusCode::kInvalidArgument, "at most one dim may be -1");
  EXPECT_STATUS(KernelRunner("Reshape", 13).Run({x, I64Vec({4, 2})}), StatusCode::kInvalidArgument,
                "element counts differ");
  EXPECT_STATUS(KernelRunner("Reshape", 13).Run({x, I64Vec({4, -1})}), StatusCode::kInvalidArgument,
                "no whole size");
  EXPECT_STATUS(KernelRunner("Reshape", 13).Run({x, I64Vec({-2, -3})}),
                StatusCode::kInvalidArgument, "dims must be >= -1");
  EXPECT_STATUS(KernelRunner("Reshape", 13).Run({x, I64Vec({0, 0, 0})}),
                StatusCode::kInvalidArgument, "rank 2");
  EXPECT_STATUS(KernelRunner("Reshape", 13).Run({x, I64s({1, 2}, {3, 2})}),
                StatusCode::kInvalidArgument, "1-D");
  EXPECT_STATUS(KernelRunner("Reshape", 13).Run({I64s({0, 3}, {}), I64Vec({0, -1})}),
                StatusCode::kInvalidArgument, "no whole size");
  // Huge dims whose product overflows are refused, not wrapped.
  EXPECT_STATUS(KernelRunner("Reshape", 13).Run({x, I64Vec({int64_t{1} << 62, 8, -1})}),
                StatusCode::kInvalidArgument, "int64");
  // Two -1 in a constant shape fail while planning.
  Value two = I64Vec({-1, -1});
  EXPECT_STATUS(Infer("Reshape", 13, {T(E::kFloat, "N,3"), T(E::kInt64, "2")}, {nullptr, &two}),
                StatusCode::kInvalidArgument, "-1");
}

TEST(ReshapeTest, InfersSymbolicDimsFromConstantShapes) {
  auto infer = [](const std::string& in, std::vector<int64_t> shape) {
    Value s = I64Vec(std::move(shape));
    return Shape0(Infer("Reshape", 14, {T(E::kFloat, in), T(E::kInt64, "?")}, {nullptr, &s}));
  };
  EXPECT_EQ(infer("N,3,4", {0, -1}), "float[N,12]");
  EXPECT_EQ(infer("B,T,64", {0, 0, 4, 16}), "float[B,T,4,16]");
  // The symbols on both sides cancel: the -1 is 64.
  EXPECT_EQ(infer("B,T,4,16", {0, 0, -1}), "float[B,T,64]");
  EXPECT_EQ(infer("N,3,4", {-1, 12}), "float[?,12]");
  EXPECT_EQ(infer("?,3,4", {0, -1}), "float[?,?]");
  EXPECT_EQ(infer("2,3,4", {-1, 2}), "float[12,2]");
  // Shape not constant: its length gives the rank.
  EXPECT_EQ(Shape0(Infer("Reshape", 14, {T(E::kFloat, "N,3"), T(E::kInt64, "3")})), "float[?,?,?]");
  EXPECT_EQ(Shape0(Infer("Reshape", 14, {T(E::kFloat, "N,3"), T(E::kInt64, "K")})), "float[*]");
}

// ---- Size -------------------------------------------------------------------------------------

TEST(SizeTest, CountsAndFolds) {
  auto r = RunAllWays(KernelRunner("Size", 13), {Iota({2, 3, 4})}).value();
  EXPECT_TRUE(ShapeOf(r[0]).empty());
  EXPECT_EQ(Ints(r[0]), (std::vector<int64_t>{24}));
  EXPECT_EQ(Ints(KernelRunner("Size", 1).Run({Strings({2}, {"a", "b"})}).value()[0]),
            (std::vector<int64_t>{2}));
  // Known while planning when every dim is (or one dim is 0), so the planner folds it.
  auto folded = Infer("Size", 13, {T(E::kFloat, "2,3")}).value();
  ASSERT_EQ(folded.values.size(), 1u);
  EXPECT_EQ(Ints(folded.values[0]), (std::vector<int64_t>{6}));
  auto zero = Infer("Size", 13, {T(E::kFloat, "N,0")}).value();
  ASSERT_EQ(zero.values.size(), 1u);
  EXPECT_EQ(Ints(zero.values[0]), (std::vector<int64_t>{0}));
  EXPECT_TRUE(Infer("Size", 13, {T(E::kFloat, "N,2")}).value().values.empty());
  // float8 from 19.
  Value f8 = MakeTensorOf<uint8_t>(E::kFloat8E4M3FN, {3}, {1, 2, 3});
  EXPECT_FALSE(KernelRunner("Size", 13).Run({f8}).ok());
  EXPECT_TRUE(KernelRunner("Size", 19).Run({f8}).ok());
}

// ---- Split ------------------------------------------------------------------------------------

TEST(SplitTest, EqualAndGivenParts) {
  Value x = Iota({2, 6});
  auto eq = RunAllWays(KernelRunner("Split", 13).IntAttr("axis", 1), {x}, 3).value();
  for (int o = 0; o < 3; ++o) EXPECT_EQ(ShapeOf(eq[o]), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Ints(eq[1]), (std::vector<int64_t>{2, 3, 8, 9}));
  auto given =
      RunAllWays(KernelRunner("Split", 13).IntAttr("axis", -1), {x, I64Vec({1, 0, 5})}, 3).value();
  EXPECT_EQ(Ints(given[0]), (std::vector<int64_t>{0, 6}));
  EXPECT_EQ(ShapeOf(given[1]), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(Ints(given[2]), (std::vector<int64_t>{1, 2, 3, 4, 5, 7, 8, 9, 10, 11}));
  // Along axis 0 each part is a run of the input: shared, not copied.
  auto rows = RunAllWays(KernelRunner("Split", 11).IntsAttr("split", {1, 1}), {x}, 2).value();
  EXPECT_EQ(rows[1].tensor().data().data(), x.tensor().data().data() + 48);
  EXPECT_EQ(Ints(rows[1]), (std::vector<int64_t>{6, 7, 8, 9, 10, 11}));
  auto s = RunAllWays(KernelRunner("Split", 2), {Strings({2}, {"a", "b"})}, 2).value();
  EXPECT_EQ(StringsOf(s[1]), (std::vector<std::string>{"b"}));
}

TEST(SplitTest, Split18NumOutputsWithAnUnevenLastChunk) {
  Value x = Iota({7});
  auto r = RunAllWays(KernelRunner("Split", 18).IntAttr("num_outputs", 3), {x}, 3).value();
  EXPECT_EQ(Ints(r[0]), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(Ints(r[1]), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(Ints(r[2]), (std::vector<int64_t>{6}));
  // 4 into 3: 2, 2, 0.
  auto four =
      RunAllWays(KernelRunner("Split", 18).IntAttr("num_outputs", 3), {Iota({4})}, 3).value();
  EXPECT_EQ(ShapeOf(four[2]), (std::vector<int64_t>{0}));
  EXPECT_STATUS(KernelRunner("Split", 18).IntAttr("num_outputs", 4).Run({Iota({5})}, 4),
                StatusCode::kInvalidArgument, "does not split into 4 parts");
  EXPECT_STATUS(KernelRunner("Split", 18).IntAttr("num_outputs", 2).Run({x}, 3),
                StatusCode::kInvalidModel, "must be equal");
  EXPECT_STATUS(KernelRunner("Split", 18).IntAttr("num_outputs", 2).Run({x, I64Vec({3, 4})}, 2),
                StatusCode::kInvalidModel, "not both");
  EXPECT_STATUS(KernelRunner("Split", 18).Run({x}, 2), StatusCode::kInvalidModel, "num_outputs");
  auto given = KernelRunner("Split", 18).Run({x, I64Vec({3, 4})}, 2).value();
  EXPECT_EQ(ShapeOf(given[1]), (std::vector<int64_t>{4}));
}

TEST(SplitTest, Split1TakesFloatSizesAndAttributes) {
  Value f = Floats({4}, {1, 2, 3, 4});
  auto in = KernelRunner("Split", 1).Run({f, Floats({2}, {1, 3})}, 2).value();
  EXPECT_EQ(DataOf<float>(in[1]), (std::vector<float>{2, 3, 4}));
  auto attr = KernelRunner("Split", 1).IntsAttr("split", {3, 1}).Run({f}, 2).value();
  EXPECT_EQ(DataOf<float>(attr[0]), (std::vector<float>{1, 2, 3}));
  EXPECT_STATUS(KernelRunner("Split", 1).Run({f, Floats({2}, {1.5f, 2.5f})}, 2),
                StatusCode::kInvalidArgument, "whole numbers");
  EXPECT_FALSE(KernelRunner("Split", 1).Run({Iota({4})}, 2).ok());  // floats only
  EXPECT_STATUS(KernelRunner("Split", 2).IntAttr("axis", -1).Run({f}, 2), StatusCode::kInvalidModel,
                "non-negative");
}

TEST(SplitTest, BadSizes) {
  Value x = Iota({2, 6});
  EXPECT_STATUS(KernelRunner("Split", 13).IntAttr("axis", 1).Run({x, I64Vec({1, 2})}, 2),
                StatusCode::kInvalidArgument, "add up to 3 but the axis has size 6");
  EXPECT_STATUS(KernelRunner("Split", 13).IntAttr("axis", 1).Run({x, I64Vec({6})}, 2),
                StatusCode::kInvalidArgument, "1 sizes for 2 outputs");
  EXPECT_STATUS(KernelRunner("Split", 13).IntAttr("axis", 1).Run({x, I64Vec({7, -1})}, 2),
                StatusCode::kInvalidArgument, ">= 0");
  EXPECT_STATUS(KernelRunner("Split", 13).IntAttr("axis", 1).Run({x}, 4),
                StatusCode::kInvalidArgument, "4 equal parts");
  EXPECT_STATUS(KernelRunner("Split", 11).IntsAttr("split", {1, 1, 0}).Run({x}, 2),
                StatusCode::kInvalidModel, "3 sizes for 2 outputs");
  EXPECT_STATUS(KernelRunner("Split", 11).IntsAttr("split", {-1, 3}).Run({x}, 2),
                StatusCode::kInvalidModel, ">= 0");
  EXPECT_STATUS(KernelRunner("Split", 13).IntAttr("axis", 2).Run({x}, 2),
                StatusCode::kInvalidArgument, "outside");
  EXPECT_STATUS(KernelRunner("Split", 13).Run({I64s({}, {1})}, 1), StatusCode::kInvalidArgument,
                "rank >= 1");
}

TEST(SplitTest, InfersShapes) {
  auto eq =
      Infer("Split", 18, {T(E::kFloat, "N,6")}, {}, {IntA("axis", 1), IntA("num_outputs", 4)}, 4)
          .value();
  EXPECT_EQ(eq.types[0].ToShortString(), "float[N,2]");
  EXPECT_EQ(eq.types[3].ToShortString(), "float[N,0]");
  // Sizes not constant: the axis is unknown, the other dims pass.
  auto open = Infer("Split", 13, {T(E::kFloat, "N,6"), T(E::kInt64, "2")}, {}, {IntA("axis", 1)}, 2)
                  .value();
  EXPECT_EQ(open.types[1].ToShortString(), "float[N,?]");
  Value sizes = I64Vec({2, 4});
  auto known = Infer("Split", 13, {T(E::kFloat, "N,6"), T(E::kInt64, "2")}, {nullptr, &sizes},
                     {IntA("axis", 1)}, 2)
                   .value();
  EXPECT_EQ(known.types[1].ToShortString(), "float[N,4]");
  Value bad = I64Vec({2, 5});
  EXPECT_STATUS(Infer("Split", 13, {T(E::kFloat, "N,6"), T(E::kInt64, "2")}, {nullptr, &bad},
                      {IntA("axis", 1)}, 2),
                StatusCode::kInvalidArgument, "add up to 7");
  // Unknown split dim: unknown parts.
  auto sym = Infer("Split", 13, {T(E::kFloat, "N,C")}, {}, {IntA("axis", 1)}, 2).value();
  EXPECT_EQ(sym.types[0].ToShortString(), "float[N,?]");
}

// ---- Squeeze ----------------------------------------------------------------------------------

TEST(SqueezeTest, AxesAsAttributeOrInput) {
  Value x = Iota({1, 3, 1, 2});
  auto all = RunAllWays(KernelRunner("Squeeze", 13), {x}).value();
  EXPECT_EQ(ShapeOf(all[0]), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(all[0].tensor().data().data(), x.tensor().data().data());
  auto some = RunAllWays(KernelRunner("Squeeze", 13), {x, I64Vec({-2})}).value();
  EXPECT_EQ(ShapeOf(some[0]), (std::vector<int64_t>{1, 3, 2}));
  auto attr = RunAllWays(KernelRunner("Squeeze", 11).IntsAttr("axes", {0, -2}), {x}).value();
  EXPECT_EQ(ShapeOf(attr[0]), (std::vector<int64_t>{3, 2}));
  auto v1 = RunAllWays(KernelRunner("Squeeze", 1).IntsAttr("axes", {2}), {x}).value();
  EXPECT_EQ(ShapeOf(v1[0]), (std::vector<int64_t>{1, 3, 2}));
  // An empty axes list removes every 1, as ONNX Runtime does.
  auto empty = RunAllWays(KernelRunner("Squeeze", 13), {x, I64s({0}, {})}).value();
  EXPECT_EQ(ShapeOf(empty[0]), (std::vector<int64_t>{3, 2}));
  auto scalar = RunAllWays(KernelRunner("Squeeze", 13), {I64s({1, 1}, {5})}).value();
  EXPECT_TRUE(ShapeOf(scalar[0]).empty());
}

TEST(SqueezeTest, BadAxes) {
  Value x = Iota({1, 3});
  EXPECT_STATUS(KernelRunner("Squeeze", 13).Run({x, I64Vec({1})}), StatusCode::kInvalidArgument,
                "axis 1 has dim 3");
  EXPECT_STATUS(KernelRunner("Squeeze", 13).Run({x, I64Vec({2})}), StatusCode::kInvalidArgument,
                "outside");
  EXPECT_STATUS(KernelRunner("Squeeze", 13).Run({x, I64Vec({0, -2})}), StatusCode::kInvalidArgument,
                "repeated");
  EXPECT_STATUS(KernelRunner("Squeeze", 1).IntsAttr("axes", {-2}).Run({x}),
                StatusCode::kInvalidModel, "non-negative");
  EXPECT_STATUS(KernelRunner("Squeeze", 13).IntsAttr("axes", {0}).Run({x}),
                StatusCode::kInvalidModel, "unknown attribute");
}

TEST(SqueezeTest, InfersSymbolicDims) {
  Value axes = I64Vec({1});
  EXPECT_EQ(
      Shape0(Infer("Squeeze", 13, {T(E::kFloat, "N,?,4"), T(E::kInt64, "1")}, {nullptr, &axes})),
      "float[N,4]");
  // Without axes an unknown dim might be 1: the rank is unknown.
  EXPECT_EQ(Shape0(Infer("Squeeze", 13, {T(E::kFloat, "N,1,4")})), "float[*]");
  EXPECT_EQ(Shape0(Infer("Squeeze", 13, {T(E::kFloat, "2,1,4")})), "float[2,4]");
  // Axes not constant: the rank is known from their count.
  EXPECT_EQ(Shape0(Infer("Squeeze", 13, {T(E::kFloat, "N,1,4"), T(E::kInt64, "1")})), "float[?,?]");
  EXPECT_STATUS(Infer("Squeeze", 11, {T(E::kFloat, "N,2")}, {}, {IntsA("axes", {1})}),
                StatusCode::kInvalidArgument, "has dim 2");
}

// ---- Transpose --------------------------------------------------------------------------------

// out[i] = in[perm[i]] the slow, obvious way.
std::vector<int64_t> Transposed(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm,
                                const std::vector<int64_t>& data) {
  const size_t r = shape.size();
  std::vector<int64_t> out_shape(r), in_strides(r, 1);
  for (size_t i = 0; i < r; ++i) out_shape[i] = shape[static_cast<size_t>(perm[i])];
  for (size_t d = r; d-- > 1;) in_strides[d - 1] = in_strides[d] * shape[d];
  std::vector<int64_t> out;
  std::vector<int64_t> index(r, 0);
  for (size_t n = 0; n < data.size(); ++n) {
    int64_t src = 0;
    for (size_t i = 0; i < r; ++i) src += index[i] * in_strides[static_cast<size_t>(perm[i])];
    out.push_back(data[static_cast<size_t>(src)]);
    for (size_t d = r; d-- > 0;) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

TEST(TransposeTest, EveryPermutationOfRank4) {
  const std::vector<int64_t> shape = {2, 3, 1, 4};
  Value x = Iota(shape);
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    auto r = RunAllWays(KernelRunner("Transpose", 13).IntsAttr("perm", perm), {x});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(Ints((*r)[0]), Transposed(shape, perm, Ints(x)));
    std::vector<int64_t> want;
    want.reserve(perm.size());
    for (int64_t p : perm) want.push_back(shape[static_cast<size_t>(p)]);
    EXPECT_EQ(ShapeOf((*r)[0]), want);
  } while (std::next_permutation(perm.begin(), perm.end()));
  // Default: reversed.
  auto d = RunAllWays(KernelRunner("Transpose", 1), {x}).value();
  EXPECT_EQ(ShapeOf(d[0]), (std::vector<int64_t>{4, 1, 3, 2}));
  EXPECT_EQ(Ints(d[0]), Transposed(shape, {3, 2, 1, 0}, Ints(x)));
}

TEST(TransposeTest, OrderKeepingPermutationsShareBytes) {
  Value x = Iota({2, 1, 3});
  auto id = KernelRunner("Transpose", 13).IntsAttr("perm", {0, 1, 2}).Run({x}).value();
  EXPECT_EQ(id[0].tensor().data().data(), x.tensor().data().data());
  // Moving the size-1 dim keeps the elements in order.
  auto moved = KernelRunner("Transpose", 13).IntsAttr("perm", {1, 0, 2}).Run({x}).value();
  EXPECT_EQ(moved[0].tensor().data().data(), x.tensor().data().data());
  EXPECT_EQ(ShapeOf(moved[0]), (std::vector<int64_t>{1, 2, 3}));
  auto copied = KernelRunner("Transpose", 13).IntsAttr("perm", {2, 1, 0}).Run({x}).value();
  EXPECT_NE(copied[0].tensor().data().data(), x.tensor().data().data());
  auto scalar = KernelRunner("Transpose", 13).Run({I64s({}, {3})}).value();
  EXPECT_EQ(Ints(scalar[0]), (std::vector<int64_t>{3}));
}

TEST(TransposeTest, TypesIncludingStringsAndFourBit) {
  auto s =
      RunAllWays(KernelRunner("Transpose", 13), {Strings({2, 2}, {"a", "b", "c", "d"})}).value();
  EXPECT_EQ(StringsOf(s[0]), (std::vector<std::string>{"a", "c", "b", "d"}));
  Value h = MakeTensorOf<uint16_t>(E::kFloat16, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(DataOf<uint16_t>(KernelRunner("Transpose", 13).Run({h}).value()[0]),
            (std::vector<uint16_t>{1, 4, 2, 5, 3, 6}));
  Value c = MakeTensorOf<double>(E::kComplex128, {2, 1}, {1, 2, 3, 4});
  EXPECT_EQ(
      DataOf<double>(KernelRunner("Transpose", 13).IntsAttr("perm", {1, 0}).Run({c}).value()[0]),
      (std::vector<double>{1, 2, 3, 4}));
  // uint4 [2, 3] = [[1,2,3],[4,5,6]] packed low nibble first -> [[1,4],[2,5],[3,6]].
  Value u4 = MakeTensorOf<uint8_t>(E::kUint4, {2, 3}, {0x21, 0x43, 0x65});
  EXPECT_FALSE(KernelRunner("Transpose", 13).Run({u4}).ok());
  auto t4 = KernelRunner("Transpose", 21).Run({u4}).value();
  EXPECT_EQ(DataOf<uint8_t>(t4[0]), (std::vector<uint8_t>{0x41, 0x52, 0x63}));
  Value i2 = MakeTensorOf<uint8_t>(E::kInt2, {2, 2}, {0b11100100});  // [[0,1],[2,3]]
  EXPECT_FALSE(KernelRunner("Transpose", 24).Run({i2}).ok());
  EXPECT_EQ(DataOf<uint8_t>(KernelRunner("Transpose", 25).Run({i2}).value()[0]),
            (std::vector<uint8_t>{0b11011000}));  // [[0,2],[1,3]]
}

TEST(TransposeTest, BadPermsAndInference) {
  Value x = Iota({2, 3});
  EXPECT_STATUS(KernelRunner("Transpose", 13).IntsAttr("perm", {0, 0}).Run({x}),
                StatusCode::kInvalidModel, "not a permutation");
  EXPECT_STATUS(KernelRunner("Transpose", 13).IntsAttr("perm", {0, 2}).Run({x}),
                StatusCode::kInvalidModel, "not a permutation");
  EXPECT_STATUS(KernelRunner("Transpose", 13).IntsAttr("perm", {-1, 0}).Run({x}),
                StatusCode::kInvalidModel, "not a permutation");
  EXPECT_STATUS(KernelRunner("Transpose", 13).IntsAttr("perm", {2, 1, 0}).Run({x}),
                StatusCode::kInvalidArgument, "rank 2");
  EXPECT_EQ(Shape0(Infer("Transpose", 13, {T(E::kFloat, "N,3,4")}, {}, {IntsA("perm", {2, 0, 1})})),
            "float[4,N,3]");
  EXPECT_EQ(Shape0(Infer("Transpose", 13, {Type::Tensor(E::kFloat)}, {}, {IntsA("perm", {1, 0})})),
            "float[?,?]");
  EXPECT_STATUS(KernelRunner("Transpose", 13).WithLimits(SmallLimits(40)).Run({x}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
}

// ---- Shape, Unsqueeze, Slice ------------------------------------------------------------------

TEST(ShapeTest, GivesItsValueWhenTheDimsAreKnown) {
  auto full = Infer("Shape", 13, {T(E::kFloat, "2,3,4")}).value();
  ASSERT_EQ(full.values.size(), 1u);
  EXPECT_EQ(Ints(full.values[0]), (std::vector<int64_t>{2, 3, 4}));
  // Only the dims it reports need to be known.
  auto tail = Infer("Shape", 15, {T(E::kFloat, "N,3,4")}, {}, {IntA("start", 1)}).value();
  ASSERT_EQ(tail.values.size(), 1u);
  EXPECT_EQ(Ints(tail.values[0]), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(tail.types[0].ToShortString(), "int64[2]");
  auto sym = Infer("Shape", 15, {T(E::kFloat, "N,3,4")}).value();
  EXPECT_TRUE(sym.values.empty());
  EXPECT_EQ(sym.types[0].ToShortString(), "int64[3]");
  EXPECT_EQ(Shape0(Infer("Shape", 15, {Type::Tensor(E::kFloat)})), "int64[?]");
  auto r =
      RunAllWays(KernelRunner("Shape", 15).IntAttr("start", 2).IntAttr("end", 1), {Iota({2, 3, 4})})
          .value();
  EXPECT_EQ(ShapeOf(r[0]), (std::vector<int64_t>{0}));
  EXPECT_STATUS(KernelRunner("Shape", 13).IntAttr("start", 1).Run({Iota({2})}),
                StatusCode::kInvalidModel, "unknown attribute");
}

TEST(UnsqueezeTest, ConstantAxesGiveExactShapes) {
  Value axes = I64Vec({0, -1});
  EXPECT_EQ(
      Shape0(Infer("Unsqueeze", 13, {T(E::kFloat, "N,3"), T(E::kInt64, "2")}, {nullptr, &axes})),
      "float[1,N,3,1]");
  EXPECT_EQ(Shape0(Infer("Unsqueeze", 13, {T(E::kFloat, "N,3"), T(E::kInt64, "2")})),
            "float[?,?,?,?]");
  EXPECT_EQ(Shape0(Infer("Unsqueeze", 11, {T(E::kFloat, "N")}, {}, {IntsA("axes", {1})})),
            "float[N,1]");
  // A scalar axes input (as ONNX Runtime takes it).
  auto r = RunAllWays(KernelRunner("Unsqueeze", 13), {Iota({3}), I64s({}, {1})}).value();
  EXPECT_EQ(ShapeOf(r[0]), (std::vector<int64_t>{3, 1}));
  EXPECT_STATUS(KernelRunner("Unsqueeze", 13).Run({Iota({3}), I64Vec({2})}),
                StatusCode::kInvalidArgument, "outside");
  EXPECT_STATUS(KernelRunner("Unsqueeze", 11).Run({Iota({3})}), StatusCode::kInvalidModel,
                "'axes'");
  auto s = RunAllWays(KernelRunner("Unsqueeze", 13), {Strings({1}, {"z"}), I64Vec({0})}).value();
  EXPECT_EQ(StringsOf(s[0]), (std::vector<std::string>{"z"}));
}

TEST(SliceTest, ContiguousSlicesShareBytesOthersCopy) {
  Value x = Iota({4, 3});
  // Rows 1..3: one run of the input.
  auto rows = RunAllWays(KernelRunner("Slice", 13), {x, I64Vec({1}), I64Vec({3})}).value();
  EXPECT_EQ(Ints(rows[0]), (std::vector<int64_t>{3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(rows[0].tensor().data().data(), x.tensor().data().data() + 24);
  // Columns: copied.
  auto cols = RunAllWays(KernelRunner("Slice", 13),
                         {x, I64Vec({-1}), I64Vec({INT64_MIN}), I64Vec({1}), I64Vec({-2})})
                  .value();
  EXPECT_EQ(ShapeOf(cols[0]), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(Ints(cols[0]), (std::vector<int64_t>{2, 0, 5, 3, 8, 6, 11, 9}));
  auto s = RunAllWays(KernelRunner("Slice", 10),
                      {Strings({3}, {"a", "b", "c"}), MakeTensorOf<int32_t>(E::kInt32, {1}, {1}),
                       MakeTensorOf<int32_t>(E::kInt32, {1}, {3})})
               .value();
  EXPECT_EQ(StringsOf(s[0]), (std::vector<std::string>{"b", "c"}));
  EXPECT_STATUS(KernelRunner("Slice", 13).Run({x, I64s({1, 1}, {0}), I64Vec({1})}),
                StatusCode::kInvalidArgument, "1-D");
  EXPECT_STATUS(KernelRunner("Slice", 13).Run({x, I64Vec({0, 0, 0}), I64Vec({1, 1, 1})}),
                StatusCode::kInvalidArgument, "rank 2");
  EXPECT_STATUS(KernelRunner("Slice", 13)
                    .WithLimits(SmallLimits(40))
                    .Run({x, I64Vec({0}), I64Vec({INT64_MAX}), I64Vec({1}), I64Vec({2})}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
}

TEST(SliceTest, InfersShapes) {
  Value starts = I64Vec({1}), ends = I64Vec({INT64_MAX}), axes = I64Vec({1});
  EXPECT_EQ(
      Shape0(Infer("Slice", 13,
                   {T(E::kFloat, "N,5"), T(E::kInt64, "1"), T(E::kInt64, "1"), T(E::kInt64, "1")},
                   {nullptr, &starts, &ends, &axes})),
      "float[N,4]");
  // The whole of a symbolic dim keeps it; part of it is unknown.
  Value zero = I64Vec({0}), axis0 = I64Vec({0});
  EXPECT_EQ(
      Shape0(Infer("Slice", 13,
                   {T(E::kFloat, "N,5"), T(E::kInt64, "1"), T(E::kInt64, "1"), T(E::kInt64, "1")},
                   {nullptr, &zero, &ends, &axis0})),
      "float[N,5]");
  EXPECT_EQ(
      Shape0(Infer("Slice", 13,
                   {T(E::kFloat, "N,5"), T(E::kInt64, "1"), T(E::kInt64, "1"), T(E::kInt64, "1")},
                   {nullptr, &starts, &ends, &axis0})),
      "float[?,5]");
  // Starts and ends not constant but the axes are: the other dims pass.
  EXPECT_EQ(
      Shape0(Infer("Slice", 13,
                   {T(E::kFloat, "N,5"), T(E::kInt64, "1"), T(E::kInt64, "1"), T(E::kInt64, "1")},
                   {nullptr, nullptr, nullptr, &axes})),
      "float[N,?]");
  EXPECT_EQ(Shape0(Infer("Slice", 1, {T(E::kFloat, "N,5")}, {},
                         {IntsA("starts", {0}), IntsA("ends", {2}), IntsA("axes", {-1})})),
            "float[N,2]");
}

// ---- Constant folding in a session ------------------------------------------------------------

// y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0), [0]), [-1])): the exporters' flatten.
onnx::ModelProto ShapeChain(const std::vector<int64_t>& x_dims, const std::string& batch = "") {
  onnx::ModelProto m = EmptyModel(13, 8);
  auto* g = m.mutable_graph();
  g->set_name("shape_chain");
  onnx::TypeProto x = TensorTypeProto(E::kFloat, x_dims);
  if (!batch.empty()) {
    x.mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param(batch);
  }
  AddValueInfo(g->mutable_input(), "x", x);
  AddValueInfo(g->mutable_output(), "y", Unshaped(E::kFloat));
  auto add_i64 = [&](const std::string& name, const std::vector<int64_t>& dims,
                     const std::vector<int64_t>& values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
  };
  add_i64("zero", {}, {0});
  add_i64("axes0", {1}, {0});
  add_i64("minus1", {1}, {-1});
  AddNode(g, "Shape", {"x"}, {"s"});
  AddNode(g, "Gather", {"s", "zero"}, {"n"});
  AddNode(g, "Unsqueeze", {"n", "axes0"}, {"n1"});
  auto* concat = AddNode(g, "Concat", {"n1", "minus1"}, {"shape"});
  AddIntAttribute(concat, "axis", 0);
  AddNode(g, "Reshape", {"x", "shape"}, {"y"});
  return m;
}

TEST(TensorFoldingTest, ShapeSubgraphsFoldAtPlanning) {
  Session s = MustCreate(ShapeChain({2, 3, 4}));
  const std::string plan = s.Describe();
  size_t folded = 0;
  for (size_t at = plan.find("folded at planning"); at != std::string::npos;
       at = plan.find("folded at planning", at + 1)) {
    ++folded;
  }
  EXPECT_EQ(folded, 4u) << plan;
  auto out = s.Run({Floats({2, 3, 4}, std::vector<float>(24, 1.0f))}).value();
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{2, 12}));
  // A symbolic batch keeps the general path, with the same result.
  Session sym = MustCreate(ShapeChain({1, 3, 4}, "N"));
  EXPECT_EQ(sym.Describe().find("folded at planning"), std::string::npos) << sym.Describe();
  auto five = sym.Run({Floats({5, 3, 4}, std::vector<float>(60, 2.0f))}).value();
  EXPECT_EQ(ShapeOf(five[0]), (std::vector<int64_t>{5, 12}));
}

}  // namespace
}  // namespace idem::testing

namespace idem::testing {
namespace {

// Empty tensors may have huge dims ([0, 2^31, 2^31]): nothing is copied and nothing is looped
// over.
TEST(TensorEmptyTest, HugeDimsOfEmptyTensors) {
  const int64_t big = int64_t{1} << 31;
  Value empty = Value::MakeTensor(E::kFloat, {0, big, big}, Buffer()).value();
  auto t = KernelRunner("Transpose", 13).Run({empty}).value();
  EXPECT_EQ(ShapeOf(t[0]), (std::vector<int64_t>{big, big, 0}));
  auto s = KernelRunner("Slice", 13).Run({empty, I64Vec({1}), I64Vec({3}), I64Vec({2})}).value();
  EXPECT_EQ(ShapeOf(s[0]), (std::vector<int64_t>{0, big, 2}));
  auto parts = KernelRunner("Split", 13).IntAttr("axis", 1).Run({empty}, 2).value();
  EXPECT_EQ(ShapeOf(parts[1]), (std::vector<int64_t>{0, big / 2, big}));
  auto c = KernelRunner("Concat", 13).IntAttr("axis", 0).Run({empty, empty}).value();
  EXPECT_EQ(ShapeOf(c[0]), (std::vector<int64_t>{0, big, big}));
  auto g = KernelRunner("Gather", 13).IntAttr("axis", 2).Run({empty, I64Vec({5, 6})}).value();
  EXPECT_EQ(ShapeOf(g[0]), (std::vector<int64_t>{0, big, 2}));
  auto sq = KernelRunner("Unsqueeze", 13).Run({empty, I64Vec({0})}).value();
  EXPECT_EQ(ShapeOf(sq[0]), (std::vector<int64_t>{1, 0, big, big}));
  auto f = KernelRunner("Flatten", 13).Run({empty}).value();
  EXPECT_EQ(ShapeOf(f[0]), (std::vector<int64_t>{0, big * big}));
  EXPECT_EQ(Ints(KernelRunner("Size", 13).Run({empty}).value()[0]), (std::vector<int64_t>{0}));
}

// String outputs are checked against the limits before their strings are copied.
TEST(TensorEmptyTest, StringOutputsAreCheckedFirst) {
  Value s = Strings({2}, {"abc", "de"});
  EXPECT_STATUS(KernelRunner("Gather", 13)
                    .WithLimits(SmallLimits(300))
                    .Run({s, I64Vec(std::vector<int64_t>(8, 0))}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
  EXPECT_STATUS(
      KernelRunner("Concat", 13).IntAttr("axis", 0).WithLimits(SmallLimits(300)).Run({s, s, s}),
      StatusCode::kResourceExhausted, "max_tensor_bytes");
  Value m = Strings({2, 3}, {"a", "b", "c", "d", "e", "f"});
  EXPECT_STATUS(KernelRunner("Transpose", 13).WithLimits(SmallLimits(300)).Run({m}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
  EXPECT_STATUS(KernelRunner("Reshape", 13).WithLimits(SmallLimits(300)).Run({m, I64Vec({6})}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
  auto ok = KernelRunner("Transpose", 13).Run({m}).value();
  EXPECT_EQ(StringsOf(ok[0]), (std::vector<std::string>{"a", "d", "b", "e", "c", "f"}));
}

}  // namespace
}  // namespace idem::testing
