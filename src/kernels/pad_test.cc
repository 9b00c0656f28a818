// Pad through KernelRunner: every version's inputs, attributes and type sets, the four modes
// (expected values from numpy.pad), negative pads, axes, every element width, and bad input.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "src/kernels/schema_oracle_test.h"
#include "tests/kernel_runner.h"
#include "tests/kernel_test_util.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;

// Pad-`opset` on `inputs` three ways: shapes known with pads (and axes) constant, shapes known
// with nothing constant, shapes unknown; all must agree.
Result<Value> PadAll(const std::vector<Value>& inputs, const std::string& mode = "constant",
                     int opset = 19) {
  auto make = [&] {
    KernelRunner r("Pad", opset);
    if (!mode.empty()) r.StringAttr("mode", mode);
    return r;
  };
  KernelRunner constant = make();
  for (size_t i = 1; i < inputs.size(); ++i) constant.ConstantInput(i);
  IDEM_ASSIGN_OR_RETURN(auto a, constant.Run(inputs));
  // With constant pads the output shape is known at planning.
  const Type& inferred = constant.inferred()[0];
  EXPECT_TRUE(inferred.shape().has_value());
  if (inferred.shape()) {
    for (const Dim& d : *inferred.shape()) EXPECT_TRUE(d.value.has_value());
  }
  IDEM_ASSIGN_OR_RETURN(auto b, make().Run(inputs));
  IDEM_ASSIGN_OR_RETURN(auto c, make().UnknownShapes().Run(inputs));
  EXPECT_FALSE(DescribeDifference(a[0], b[0]));
  EXPECT_FALSE(DescribeDifference(a[0], c[0]));
  return a[0];
}

Value SpecData() { return Floats({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}); }

TEST(PadRegistryTest, VersionsMatchLibonnxAndTheSpec) {
  for (int v : {1, 2, 11, 13}) ExpectMatchesLibonnx("Pad", v);
  const auto& r = KernelRegistry::Default();
  std::vector<int> since;
  for (const KernelSchema* s : r.Versions("", "Pad")) since.push_back(s->since_version);
  EXPECT_EQ(since, (std::vector<int>{1, 2, 11, 13, 18, 19, 21, 23, 24, 25}));
  // The spec's T sizes: 13/18/19: 16; 21: + 4 float8, uint4, int4; 23: float4e2m1; 24:
  // float8e8m0; 25: uint2, int2.
  const std::vector<std::pair<int, size_t>> sizes = {{18, 16}, {19, 16}, {21, 22},
                                                     {23, 23}, {24, 24}, {25, 26}};
  for (const auto& [v, n] : sizes) {
    const KernelSchema* s = r.Resolve("", "Pad", v);
    EXPECT_EQ(TypeSet(*s, "T").size(), n) << v;
    EXPECT_EQ(TypeSet(*s, "Tind"), (std::set<std::string>{"tensor(int32)", "tensor(int64)"}));
    ASSERT_EQ(s->inputs.size(), 4u);
    EXPECT_EQ(s->inputs[3].name, "axes");
  }
  EXPECT_TRUE(TypeSet(*r.Resolve("", "Pad", 21), "T").count("tensor(int4)"));
  EXPECT_FALSE(TypeSet(*r.Resolve("", "Pad", 21), "T").count("tensor(float4e2m1)"));
  EXPECT_TRUE(r.Resolve("", "Pad", 19)->foldable);
}

// ---- Modes (expected values: numpy.pad and the spec's examples) -----------------------------

TEST(PadTest, SpecExamples) {
  Value pads = I64({0, 2, 0, 0});
  EXPECT_EQ(Elements<float>(PadAll({SpecData(), pads}).value()),
            (std::vector<float>{0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f}));
  // The spec's reflect example pads 2 on an axis of 2 (numpy reflects again); ONNX Runtime
  // refuses a reflect pad above the size minus one, and so does idem.
  EXPECT_STATUS(KernelRunner("Pad", 19).StringAttr("mode", "reflect").Run({SpecData(), pads}),
                StatusCode::kInvalidArgument, "reflect pads 2 and 0 of axis 1 exceed its size 2");
  EXPECT_EQ(Elements<float>(PadAll({SpecData(), I64({0, 1, 0, 0})}, "reflect").value()),
            (std::vector<float>{1.2f, 1.0f, 1.2f, 3.4f, 2.3f, 3.4f, 5.7f, 4.5f, 5.7f}));
  EXPECT_EQ(
      Elements<float>(PadAll({SpecData(), pads}, "edge").value()),
      (std::vector<float>{1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f}));
  Value wrap = PadAll({SpecData(), I64({2, 1, 1, 1})}, "wrap").value();
  EXPECT_EQ(ShapeOf(wrap), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(
      Elements<float>(wrap),
      (std::vector<float>{3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f,
                          3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f}));
}

TEST(PadTest, ModesOnOneAxis) {
  Value x = MakeTensorOf<int32_t>(E::kInt32, {4}, {1, 2, 3, 4});
  // np.pad([1,2,3,4], (3,3), 'reflect'), 'edge', 'wrap'; constant with 9.
  EXPECT_EQ(Elements<int32_t>(PadAll({x, I64({3, 3})}, "reflect").value()),
            (std::vector<int32_t>{4, 3, 2, 1, 2, 3, 4, 3, 2, 1}));
  EXPECT_EQ(Elements<int32_t>(PadAll({x, I64({2, 1})}, "edge").value()),
            (std::vector<int32_t>{1, 1, 1, 2, 3, 4, 4}));
  // wrap goes around as often as the pads ask (np.pad([1,2], (5,3), 'wrap')).
  Value two = MakeTensorOf<int32_t>(E::kInt32, {2}, {1, 2});
  EXPECT_EQ(Elements<int32_t>(PadAll({two, I64({5, 3})}, "wrap").value()),
            (std::vector<int32_t>{2, 1, 2, 1, 2, 1, 2, 1, 2, 1}));
  Value nine = MakeTensorOf<int32_t>(E::kInt32, {}, {9});
  EXPECT_EQ(Elements<int32_t>(PadAll({x, I64({1, 2}), nine}).value()),
            (std::vector<int32_t>{9, 1, 2, 3, 4, 9, 9}));
  // A one-element constant_value of shape [1] is accepted too.
  Value nine1 = MakeTensorOf<int32_t>(E::kInt32, {1}, {9});
  EXPECT_EQ(Elements<int32_t>(PadAll({x, I64({0, 1}), nine1}).value()),
            (std::vector<int32_t>{1, 2, 3, 4, 9}));
  // wrap needs Pad-19.
  EXPECT_STATUS(KernelRunner("Pad", 18).StringAttr("mode", "wrap").Run({x, I64({1, 1})}),
                StatusCode::kInvalidModel, "attribute 'mode' is 'wrap'");
}

TEST(PadTest, NegativePadsCropFirst) {
  Value x = MakeTensorOf<int32_t>(E::kInt32, {5}, {1, 2, 3, 4, 5});
  EXPECT_EQ(Elements<int32_t>(PadAll({x, I64({-1, -2})}).value()), (std::vector<int32_t>{2, 3}));
  // Crop then pad the remaining extent [2, 3, 4, 5]: reflect 3 after, wrap, edge.
  EXPECT_EQ(Elements<int32_t>(PadAll({x, I64({-1, 3})}, "reflect").value()),
            (std::vector<int32_t>{2, 3, 4, 5, 4, 3, 2}));
  EXPECT_EQ(Elements<int32_t>(PadAll({x, I64({-3, 4})}, "wrap").value()),
            (std::vector<int32_t>{4, 5, 4, 5, 4, 5}));
  EXPECT_EQ(Elements<int32_t>(PadAll({x, I64({2, -4})}, "edge").value()),
            (std::vector<int32_t>{1, 1, 1}));
  // A constant pad may crop past the axis while the output size stays >= 0 (ONNX Runtime).
  Value one = MakeTensorOf<int32_t>(E::kInt32, {1}, {7});
  EXPECT_EQ(Elements<int32_t>(PadAll({one, I64({3, -2})}).value()), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(PadAll({x, I64({-5, 0})}).value().tensor().element_count(), 0);
}

TEST(PadTest, TwoDimensionsAndAxes) {
  Value x = MakeTensorOf<int32_t>(E::kInt32, {2, 3}, {1, 2, 3, 4, 5, 6});
  // np.pad(x, ((1,1),(1,1)), 'reflect')
  EXPECT_EQ(Elements<int32_t>(PadAll({x, I64({1, 1, 1, 1})}, "reflect").value()),
            (std::vector<int32_t>{5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 2, 1, 2, 3, 2}));
  // Pad-18 axes: only axis 1 (or -1), pads [begin, end].
  const std::vector<int32_t> expected = {0, 1, 2, 3, 0, 0, 4, 5, 6, 0};
  EXPECT_EQ(Elements<int32_t>(PadAll({x, I64({1, 1}), Value(), I64({1})}, "constant", 18).value()),
            expected);
  Value axes32 = MakeTensorOf<int32_t>(E::kInt32, {1}, {-1});
  EXPECT_EQ(Elements<int32_t>(PadAll({x, I64({1, 1}), Value(), axes32}, "constant", 18).value()),
            expected);
  // Axes in any order: pads follow them.
  Value swapped = PadAll({x, I64({0, 1, 2, 0}), Value(), I64({1, 0})}, "constant", 18).value();
  EXPECT_EQ(ShapeOf(swapped), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(Elements<int32_t>(swapped),
            (std::vector<int32_t>{0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 0, 0}));
  EXPECT_STATUS(KernelRunner("Pad", 18).Run({x, I64({1, 1, 1, 1}), Value(), I64({1, 1})}),
                StatusCode::kInvalidArgument, "repeated");
  EXPECT_STATUS(KernelRunner("Pad", 18).Run({x, I64({1, 1}), Value(), I64({2})}),
                StatusCode::kInvalidArgument, "outside");
  EXPECT_STATUS(KernelRunner("Pad", 18).Run({x, I64({1, 1, 1, 1}), Value(), I64({1})}),
                StatusCode::kInvalidArgument, "pads has 4 values; it must have 2 * 1");
}

TEST(PadTest, EveryElementWidth) {
  // Strings, with a string constant.
  Value s = Value::MakeStringTensor({2}, {"a", "bc"}).value();
  Value pad = Value::MakeStringTensor({}, {"-"}).value();
  Value out = PadAll({s, I64({1, 1}), pad}).value();
  auto strings = out.tensor().strings();
  EXPECT_EQ(std::vector<std::string>(strings.begin(), strings.end()),
            (std::vector<std::string>{"-", "a", "bc", "-"}));
  Value e = PadAll({s, I64({1, 0})}, "edge").value();
  EXPECT_EQ(e.tensor().strings()[0], "a");
  EXPECT_EQ(PadAll({s, I64({1, 0})}).value().tensor().strings()[0], "");  // default ""
  // bool, complex64 (8 bytes), complex128 (16 bytes), float16.
  Value b = MakeTensorOf<uint8_t>(E::kBool, {2}, {1, 0});
  EXPECT_EQ(Elements<uint8_t>(PadAll({b, I64({1, 1})}, "reflect").value()),
            (std::vector<uint8_t>{0, 1, 0, 1}));
  Value c = MakeTensorOf<float>(E::kComplex64, {2}, {1, 2, 3, 4});
  EXPECT_EQ(Elements<float>(PadAll({c, I64({0, 2})}, "edge").value()),
            (std::vector<float>{1, 2, 3, 4, 3, 4, 3, 4}));
  Value z = MakeTensorOf<double>(E::kComplex128, {1}, {5, -6});
  EXPECT_EQ(Elements<double>(PadAll({z, I64({1, 0})}).value()), (std::vector<double>{0, 0, 5, -6}));
  // 4-bit (Pad-21): packed low nibble first; odd counts leave the last high nibble zero.
  Value i4 = MakeTensorOf<uint8_t>(E::kInt4, {3}, {0x21, 0x03});  // 1, 2, 3
  Value i4pad = MakeTensorOf<uint8_t>(E::kInt4, {}, {0x0F});      // -1
  Value p4 = PadAll({i4, I64({1, 1}), i4pad}, "constant", 21).value();
  EXPECT_EQ(Elements<uint8_t>(p4), (std::vector<uint8_t>{0x1F, 0x32, 0x0F}));  // -1 1 2 3 -1
  Value w4 = PadAll({i4, I64({0, 2})}, "wrap", 21).value();
  EXPECT_EQ(Elements<uint8_t>(w4), (std::vector<uint8_t>{0x21, 0x13, 0x02}));  // 1 2 3 1 2
  // 2-bit (Pad-25): four to a byte.
  Value u2 = MakeTensorOf<uint8_t>(E::kUint2, {3}, {0x39});  // 1, 2, 3
  EXPECT_EQ(Elements<uint8_t>(PadAll({u2, I64({1, 1})}, "edge", 25).value()),
            (std::vector<uint8_t>{0xE5, 0x03}));  // 1 1 2 3 | 3
  Value f8 = MakeTensorOf<uint8_t>(E::kFloat8E4M3FN, {1}, {0x38});
  EXPECT_EQ(Elements<uint8_t>(PadAll({f8, I64({1, 0})}, "constant", 21).value()),
            (std::vector<uint8_t>{0x00, 0x38}));
  EXPECT_FALSE(KernelRunner("Pad", 19).Run({i4, I64({1, 1})}).ok());  // int4 needs Pad-21
}

TEST(PadTest, VersionsBeforeElevenUseAttributes) {
  Value h = MakeTensorOf<uint16_t>(E::kFloat16, {2}, {0x3C00, 0x4000});  // 1, 2
  auto out = KernelRunner("Pad", 2).IntsAttr("pads", {1, 0}).FloatAttr("value", 0.5f).Run({h});
  EXPECT_EQ(Elements<uint16_t>(out.value()[0]), (std::vector<uint16_t>{0x3800, 0x3C00, 0x4000}));
  Value d = MakeTensorOf<double>(E::kDouble, {1}, {3.0});
  auto p1 = KernelRunner("Pad", 1)
                .IntsAttr("paddings", {0, 2})
                .FloatAttr("value", -1.0f)
                .StringAttr("mode", "constant")
                .Run({d});
  EXPECT_EQ(Elements<double>(p1.value()[0]), (std::vector<double>{3.0, -1.0, -1.0}));
  auto refl = KernelRunner("Pad", 2).IntsAttr("pads", {1, 1}).StringAttr("mode", "reflect");
  EXPECT_EQ(Elements<uint16_t>(refl.Run({h}).value()[0]),
            (std::vector<uint16_t>{0x4000, 0x3C00, 0x4000, 0x3C00}));
  // Shapes are known at planning: the pads are attributes.
  KernelRunner r = KernelRunner("Pad", 2).IntsAttr("pads", {1, 2});
  ASSERT_TRUE(r.Run({h}).ok());
  ASSERT_TRUE(r.inferred()[0].shape().has_value());
  EXPECT_EQ((*r.inferred()[0].shape())[0].value, 5);
  EXPECT_STATUS(KernelRunner("Pad", 2).Run({h}), StatusCode::kInvalidModel,
                "required attribute 'pads' is missing");
  EXPECT_STATUS(KernelRunner("Pad", 2).IntsAttr("pads", {1}).Run({h}), StatusCode::kInvalidArgument,
                "pads has 1 values; it must have 2 * 1");
  // Pad-2 takes float types only; integers need Pad-11.
  Value i = MakeTensorOf<int32_t>(E::kInt32, {1}, {1});
  EXPECT_FALSE(KernelRunner("Pad", 2).IntsAttr("pads", {1, 1}).Run({i}).ok());
}

TEST(PadTest, ZeroPadsReturnTheInput) {
  Value x = MakeTensorOf<int32_t>(E::kInt32, {2, 2}, {1, 2, 3, 4});
  auto out = KernelRunner("Pad", 19).StringAttr("mode", "reflect").Run({x, I64({0, 0, 0, 0})});
  EXPECT_TRUE(out.value()[0].SharesStorageWith(x));
}

TEST(PadTest, UnknownPadsKeepTheRank) {
  Value x = MakeTensorOf<int32_t>(E::kInt32, {2, 3}, {1, 2, 3, 4, 5, 6});
  KernelRunner r("Pad", 13);
  ASSERT_TRUE(r.Run({x, I64({0, 1, 0, 1})}).ok());
  ASSERT_TRUE(r.inferred()[0].shape().has_value());
  ASSERT_EQ(r.inferred()[0].shape()->size(), 2u);
  EXPECT_FALSE((*r.inferred()[0].shape())[0].value.has_value());
}

// ---- Bad input -------------------------------------------------------------------------------

TEST(PadTest, ModeRulesAsOnnxRuntime) {
  Value x = MakeTensorOf<int32_t>(E::kInt32, {3}, {1, 2, 3});
  EXPECT_STATUS(KernelRunner("Pad", 13).StringAttr("mode", "reflect").Run({x, I64({3, 0})}),
                StatusCode::kInvalidArgument, "reflect pads 3 and 0 of axis 0 exceed its size 3");
  EXPECT_STATUS(KernelRunner("Pad", 13).StringAttr("mode", "reflect").Run({x, I64({-2, 1})}),
                StatusCode::kInvalidArgument, "exceed its size 1 minus one");
  EXPECT_TRUE(KernelRunner("Pad", 13).StringAttr("mode", "reflect").Run({x, I64({2, 2})}).ok());
  Value empty = MakeTensorOf<int32_t>(E::kInt32, {0}, {});
  EXPECT_STATUS(KernelRunner("Pad", 13).StringAttr("mode", "edge").Run({empty, I64({1, 1})}),
                StatusCode::kInvalidArgument, "it has no elements");
  EXPECT_STATUS(KernelRunner("Pad", 19).StringAttr("mode", "wrap").Run({empty, I64({1, 0})}),
                StatusCode::kInvalidArgument, "it has no elements");
  EXPECT_TRUE(KernelRunner("Pad", 13).Run({empty, I64({1, 1})}).ok());  // constant: fine
  // Cropping the input to nothing is refused by edge/reflect/wrap even without positive pads.
  Value m = MakeTensorOf<int32_t>(E::kInt32, {1, 2}, {1, 2});
  EXPECT_STATUS(KernelRunner("Pad", 13).StringAttr("mode", "edge").Run({m, I64({0, 0, -1, 0})}),
                StatusCode::kInvalidArgument, "leave the input without elements");
  // An empty axis that is not cropped is fine (the output is empty).
  Value e2 = MakeTensorOf<int32_t>(E::kInt32, {3, 0}, {});
  EXPECT_EQ(ShapeOf(KernelRunner("Pad", 13)
                        .StringAttr("mode", "edge")
                        .Run({e2, I64({1, 0, 1, 0})})
                        .value()[0]),
            (std::vector<int64_t>{5, 0}));
  EXPECT_STATUS(KernelRunner("Pad", 13).StringAttr("mode", "mirror").Run({x, I64({1, 1})}),
                StatusCode::kInvalidModel, "attribute 'mode' is 'mirror'");
}

TEST(PadTest, BadPadsAndValues) {
  Value x = MakeTensorOf<int32_t>(E::kInt32, {3}, {1, 2, 3});
  EXPECT_STATUS(KernelRunner("Pad", 13).Run({x, I64({-4, 0})}), StatusCode::kInvalidArgument,
                "give a negative output size -1");
  EXPECT_STATUS(KernelRunner("Pad", 13).Run({x, I64({1, 1, 1, 1})}), StatusCode::kInvalidArgument,
                "pads has 4 values; it must have 2 * 1");
  Value two = MakeTensorOf<int32_t>(E::kInt32, {2}, {1, 2});
  EXPECT_STATUS(KernelRunner("Pad", 13).Run({x, I64({1, 1}), two}), StatusCode::kInvalidArgument,
                "constant_value must hold one value, got 2");
  Value pads2d = MakeTensorOf<int64_t>(E::kInt64, {2, 2}, {1, 1, 1, 1});
  EXPECT_STATUS(KernelRunner("Pad", 13).Run({x, pads2d}), StatusCode::kInvalidArgument,
                "pads must be a 1-D tensor");
  Value pads1x2 = MakeTensorOf<int64_t>(E::kInt64, {1, 2}, {1, 0});
  EXPECT_EQ(Elements<int32_t>(KernelRunner("Pad", 13).Run({x, pads1x2}).value()[0]),
            (std::vector<int32_t>{0, 1, 2, 3}));
  // pads must be int64; constant_value must have the data's type.
  Value pads32 = MakeTensorOf<int32_t>(E::kInt32, {2}, {1, 1});
  EXPECT_FALSE(KernelRunner("Pad", 13).Run({x, pads32}).ok());
  EXPECT_STATUS(KernelRunner("Pad", 13).Run({x, I64({1, 1}), Floats({}, {1})}),
                StatusCode::kInvalidModel,
                "constant_value is tensor(float) but data is tensor(int32)");
}

TEST(PadTest, HugeOutputsAreRefusedBeforeAllocating) {
  Value x = MakeTensorOf<int32_t>(E::kInt32, {2}, {1, 2});
  // 2^40 elements of int32 exceed the default limits: refused before any allocation.
  EXPECT_STATUS(KernelRunner("Pad", 13).Run({x, I64({int64_t{1} << 40, 0})}),
                StatusCode::kResourceExhausted, "exceeds");
  // Overflowing int64 is refused as too large, at planning when the pads are constant.
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_STATUS(KernelRunner("Pad", 13).ConstantInput(1).Run({x, I64({big, 1})}),
                StatusCode::kResourceExhausted, "overflows");
  EXPECT_STATUS(KernelRunner("Pad", 13).Run({x, I64({big, 1})}), StatusCode::kResourceExhausted,
                "overflows");
  // A small budget: 300 int32 is 1200 bytes; 62 is 248 (and its position maps 62 * 16 = 992).
  Limits limits;
  limits.max_tensor_bytes = 1024;
  EXPECT_STATUS(KernelRunner("Pad", 13).WithLimits(limits).Run({x, I64({298, 0})}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
  EXPECT_TRUE(KernelRunner("Pad", 13).WithLimits(limits).Run({x, I64({60, 0})}).ok());
  // Strings count their bytes: a long pad string repeated past the limit.
  Value s = Value::MakeStringTensor({1}, {"a"}).value();
  Value long_pad = Value::MakeStringTensor({}, {std::string(2000, 'x')}).value();
  EXPECT_STATUS(KernelRunner("Pad", 13).WithLimits(limits).Run({s, I64({1, 0}), long_pad}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
  // A huge dim of an empty output builds nothing.
  Value e = MakeTensorOf<int32_t>(E::kInt32, {0, 1}, {});
  EXPECT_EQ(ShapeOf(KernelRunner("Pad", 13).Run({e, I64({0, int64_t{1} << 50, 0, 0})}).value()[0]),
            (std::vector<int64_t>{0, (int64_t{1} << 50) + 1}));
}

}  // namespace
}  // namespace idem::testing
