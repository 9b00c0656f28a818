// Conv and ConvTranspose through KernelRunner: values against a direct float64 reference (rtol
// 1e-3, atol 1e-5) over 1-D, 2-D and 3-D inputs, every auto_pad, groups (depthwise), dilations,
// strides, pads, bias, output_padding and output_shape; shapes (full, unknown, constant inputs);
// the type sets; bad input.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <cmath>
#include <set>

#include "src/core/float_convert.h"
#include "src/kernels/op.h"
#include "tests/kernel_runner.h"
#include "tests/kernel_test_util.h"
#include "tests/status_matchers.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;
using Dims = std::vector<int64_t>;

void ExpectClose(const std::vector<double>& actual, const std::vector<double>& expected,
                 double rtol = 1e-3, double atol = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  size_t bad = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!(std::abs(actual[i] - expected[i]) <= atol + rtol * std::abs(expected[i])) && bad++ < 5) {
      ADD_FAILURE() << "element " << i << ": " << actual[i] << " vs " << expected[i];
    }
  }
}

// Row-major offset of coords in dims.
int64_t Offset(const Dims& coords, const Dims& dims) {
  int64_t off = 0;
  for (size_t i = 0; i < dims.size(); ++i) off = off * dims[i] + coords[i];
  return off;
}

// Calls f(coords) for every index of dims.
void ForEachIndex(const Dims& dims, const std::function<void(const Dims&)>& f) {
  if (Count(dims) == 0) return;
  Dims c(dims.size(), 0);
  while (true) {
    f(c);
    size_t d = dims.size();
    while (d > 0) {
      --d;
      if (++c[d] < dims[d]) break;
      c[d] = 0;
      if (d == 0) return;
    }
    if (dims.empty()) return;
  }
}

struct Geometry {
  Dims strides = {};
  Dims dilations = {};
  Dims pads_begin = {};
  int64_t group = 1;
};

// Direct float64 convolution: Y[n, m, o] = B[m] + sum W[m, c, k] X[n, g*Cg + c, o*s - pb + k*d].
std::vector<double> RefConv(const std::vector<double>& x, const Dims& xs,
                            const std::vector<double>& w, const Dims& ws,
                            const std::vector<double>& b, const Geometry& g, const Dims& out) {
  const size_t sp = xs.size() - 2;
  const int64_t n = xs[0], c = xs[1], m = ws[0], cg = c / g.group, mg = m / g.group;
  const Dims in(xs.begin() + 2, xs.end()), k(ws.begin() + 2, ws.end());
  std::vector<double> y(static_cast<size_t>(n * m * Count(out)), 0.0);
  for (int64_t bi = 0; bi < n; ++bi) {
    for (int64_t mi = 0; mi < m; ++mi) {
      const int64_t gi = mi / mg;
      ForEachIndex(out, [&](const Dims& o) {
        double s = b.empty() ? 0.0 : b[mi];
        for (int64_t ci = 0; ci < cg; ++ci) {
          ForEachIndex(k, [&](const Dims& kc) {
            Dims ip(sp);
            for (size_t d = 0; d < sp; ++d) {
              ip[d] = o[d] * g.strides[d] - g.pads_begin[d] + kc[d] * g.dilations[d];
              if (ip[d] < 0 || ip[d] >= in[d]) return;
            }
            s += w[(mi * cg + ci) * Count(k) + Offset(kc, k)] *
                 x[(bi * c + gi * cg + ci) * Count(in) + Offset(ip, in)];
          });
        }
        y[(bi * m + mi) * Count(out) + Offset(o, out)] = s;
      });
    }
  }
  return y;
}

// Direct float64 transposed convolution: every X[n, c, i] W[c, m, k] lands on
// Y[n, g*Mg + m, i*s - pb + k*d] when inside the output.
std::vector<double> RefConvTranspose(const std::vector<double>& x, const Dims& xs,
                                     const std::vector<double>& w, const Dims& ws,
                                     const std::vector<double>& b, const Geometry& g,
                                     const Dims& out) {
  const size_t sp = xs.size() - 2;
  const int64_t n = xs[0], c = xs[1], mg = ws[1], m = mg * g.group, cg = c / g.group;
  const Dims in(xs.begin() + 2, xs.end()), k(ws.begin() + 2, ws.end());
  std::vector<double> y(static_cast<size_t>(n * m * Count(out)), 0.0);
  for (int64_t bi = 0; bi < n; ++bi) {
    for (int64_t mi = 0; mi < m; ++mi) {
      ForEachIndex(out, [&](const Dims& o) {
        y[(bi * m + mi) * Count(out) + Offset(o, out)] = b.empty() ? 0.0 : b[mi];
      });
    }
    for (int64_t ci = 0; ci < c; ++ci) {
      const int64_t gi = ci / cg;
      ForEachIndex(in, [&](const Dims& i) {
        for (int64_t mj = 0; mj < mg; ++mj) {
          ForEachIndex(k, [&](const Dims& kc) {
            Dims op(sp);
            for (size_t d = 0; d < sp; ++d) {
              op[d] = i[d] * g.strides[d] - g.pads_begin[d] + kc[d] * g.dilations[d];
              if (op[d] < 0 || op[d] >= out[d]) return;
            }
            y[(bi * m + gi * mg + mj) * Count(out) + Offset(op, out)] +=
                x[(bi * c + ci) * Count(in) + Offset(i, in)] *
                w[(ci * mg + mj) * Count(k) + Offset(kc, k)];
          });
        }
      });
    }
  }
  return y;
}

struct ConvCase {
  std::string name = {};
  Dims x = {};
  Dims w = {};
  bool bias = false;
  Geometry g = {};       // for the reference (pads_begin as the kernel should derive them)
  Dims expect_out = {};  // spatial dims
  // Attributes given to the node.
  std::vector<std::pair<std::string, Dims>> ints = {};
  std::string auto_pad = {};
  int version = 11;
};

void RunConvCase(const ConvCase& t, bool transpose, E type = E::kFloat) {
  SCOPED_TRACE(t.name + " " + std::string(ElementTypeName(type)));
  const size_t sp = t.x.size() - 2;
  const auto xv = RandomUnit(Count(t.x), 1), wv = RandomUnit(Count(t.w), 2);
  const int64_t m = transpose ? t.w[1] * t.g.group : t.w[0];
  const auto bv = RandomUnit(m, 3);
  std::vector<Value> inputs = {FloatTensor(type, t.x, xv), FloatTensor(type, t.w, wv)};
  if (t.bias) inputs.push_back(FloatTensor(type, {m}, bv));
  auto make = [&] {
    KernelRunner r(transpose ? "ConvTranspose" : "Conv", t.version);
    for (const auto& [name, v] : t.ints) r.IntsAttr(name, v);
    if (t.g.group != 1) r.IntAttr("group", t.g.group);
    if (!t.auto_pad.empty()) r.StringAttr("auto_pad", t.auto_pad);
    return r;
  };
  auto out = RunAllWays(make, inputs);
  ASSERT_EQ(out.size(), 1u);
  Dims want = {t.x[0], m};
  want.insert(want.end(), t.expect_out.begin(), t.expect_out.end());
  ASSERT_EQ(ShapeOf(out[0]), want);
  Geometry g = t.g;
  if (g.strides.empty()) g.strides.assign(sp, 1);
  if (g.dilations.empty()) g.dilations.assign(sp, 1);
  if (g.pads_begin.empty()) g.pads_begin.assign(sp, 0);
  // The reference sees the inputs as rounded to the type.
  const auto x = Doubles(inputs[0]), w = Doubles(inputs[1]);
  const auto b = t.bias ? Doubles(inputs[2]) : std::vector<double>{};
  auto expect = transpose ? RefConvTranspose(x, t.x, w, t.w, b, g, t.expect_out)
                          : RefConv(x, t.x, w, t.w, b, g, t.expect_out);
  if (type == E::kFloat16 || type == E::kBfloat16) {
    // One rounding of the float result.
    expect = Doubles(FloatTensor(type, want, std::vector<float>(expect.begin(), expect.end())));
    ExpectClose(Doubles(out[0]), expect, type == E::kFloat16 ? 2e-3 : 1e-2, 1e-3);
  } else {
    ExpectClose(Doubles(out[0]), expect);
  }
}

TEST(ConvTest, OneTwoAndThreeSpatialDims) {
  RunConvCase({.name = "1d", .x = {2, 3, 11}, .w = {4, 3, 3}, .bias = true, .expect_out = {9}},
              false);
  RunConvCase({.name = "2d strides dilations asymmetric pads",
               .x = {1, 3, 9, 8},
               .w = {5, 3, 3, 2},
               .bias = true,
               .g = {.strides = {2, 3}, .dilations = {2, 1}, .pads_begin = {1, 0}},
               // H: (9 + 1 + 2 - 5) / 2 + 1 = 4; W: (8 + 0 + 1 - 2) / 3 + 1 = 3
               .expect_out = {4, 3},
               .ints = {{"strides", {2, 3}},
                        {"dilations", {2, 1}},
                        {"pads", {1, 0, 2, 1}},
                        {"kernel_shape", {3, 2}}}},
              false);
  RunConvCase({.name = "3d",
               .x = {1, 2, 5, 6, 4},
               .w = {3, 2, 2, 3, 2},
               .g = {.strides = {1, 2, 1}, .pads_begin = {1, 1, 0}},
               .expect_out = {6, 3, 4},
               .ints = {{"strides", {1, 2, 1}}, {"pads", {1, 1, 0, 1, 0, 1}}}},
              false);
}

TEST(ConvTest, GroupsDepthwiseAndPointwise) {
  RunConvCase({.name = "group 2",
               .x = {2, 4, 6, 5},
               .w = {6, 2, 3, 3},
               .bias = true,
               .g = {.group = 2},
               .expect_out = {4, 3}},
              false);
  // Depthwise with a channel multiplier of 2.
  RunConvCase({.name = "depthwise",
               .x = {1, 3, 7, 7},
               .w = {6, 1, 3, 3},
               .bias = true,
               .g = {.strides = {2, 2}, .pads_begin = {1, 1}, .group = 3},
               .expect_out = {4, 4},
               .ints = {{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}}},
              false);
  // 1x1, stride 1, no pads: X is used as the GEMM operand directly.
  RunConvCase({.name = "pointwise",
               .x = {2, 5, 4, 3},
               .w = {7, 5, 1, 1},
               .bias = true,
               .expect_out = {4, 3}},
              false);
  RunConvCase({.name = "pointwise strided",
               .x = {1, 5, 4, 3},
               .w = {7, 5, 1, 1},
               .g = {.strides = {2, 2}},
               .expect_out = {2, 2},
               .ints = {{"strides", {2, 2}}}},
              false);
}

TEST(ConvTest, EveryAutoPad) {
  // SAME: out = ceil(in / stride); total pad = (out - 1) * s + k - in.
  // H: in 7, s 2, k 4 -> out 4, total 3 -> UPPER begins with 1, LOWER with 2.
  // W: in 6, s 1, k 3 (dilation 2 -> 5) -> out 6, total 4 -> 2 either way.
  const Dims x = {1, 2, 7, 6}, w = {3, 2, 4, 3};
  const std::vector<std::pair<std::string, Dims>> attrs = {{"strides", {2, 1}},
                                                           {"dilations", {1, 2}}};
  RunConvCase({.name = "same upper",
               .x = x,
               .w = w,
               .bias = true,
               .g = {.strides = {2, 1}, .dilations = {1, 2}, .pads_begin = {1, 2}},
               .expect_out = {4, 6},
               .ints = attrs,
               .auto_pad = "SAME_UPPER"},
              false);
  RunConvCase({.name = "same lower",
               .x = x,
               .w = w,
               .g = {.strides = {2, 1}, .dilations = {1, 2}, .pads_begin = {2, 2}},
               .expect_out = {4, 6},
               .ints = attrs,
               .auto_pad = "SAME_LOWER"},
              false);
  RunConvCase({.name = "valid",
               .x = x,
               .w = w,
               .g = {.strides = {2, 1}, .dilations = {1, 2}},
               .expect_out = {2, 2},
               .ints = attrs,
               .auto_pad = "VALID"},
              false);
  // Explicit zero pads are allowed with auto_pad (nothing conflicts).
  RunConvCase({.name = "valid zero pads",
               .x = x,
               .w = w,
               .g = {.strides = {2, 1}, .dilations = {1, 2}},
               .expect_out = {2, 2},
               .ints = {{"strides", {2, 1}}, {"dilations", {1, 2}}, {"pads", {0, 0, 0, 0}}},
               .auto_pad = "VALID"},
              false);
  RunConvCase({.name = "same upper v1",
               .x = x,
               .w = w,
               .g = {.strides = {2, 1}, .dilations = {1, 2}, .pads_begin = {1, 2}},
               .expect_out = {4, 6},
               .ints = attrs,
               .auto_pad = "SAME_UPPER",
               .version = 1},
              false);
}

TEST(ConvTest, LargeInputCrossesTheColumnBlocks) {
  // Kd = 32 * 9 = 288 rows of 64 columns: several im2col blocks, several GEMM panels.
  RunConvCase({.name = "large",
               .x = {1, 32, 66, 66},
               .w = {5, 32, 3, 3},
               .bias = true,
               .expect_out = {64, 64}},
              false);
}

TEST(ConvTest, TypeSetsByVersion) {
  const ConvCase c = {.name = "types",
                      .x = {1, 4, 6, 5},
                      .w = {4, 2, 3, 2},
                      .bias = true,
                      .g = {.pads_begin = {1, 0}, .group = 2},
                      .expect_out = {6, 4},
                      .ints = {{"pads", {1, 0, 1, 0}}}};
  for (int v : {1, 11, 22}) {
    ConvCase vc = c;
    vc.version = v;
    for (E type : {E::kFloat, E::kDouble, E::kFloat16}) RunConvCase(vc, false, type);
  }
  ConvCase bf = c;
  bf.version = 22;
  RunConvCase(bf, false, E::kBfloat16);
  for (int v : {1, 11}) {
    EXPECT_STATUS(KernelRunner("Conv", v).Run({FloatTensor(E::kBfloat16, {1, 1, 2}, {1, 2}),
                                               FloatTensor(E::kBfloat16, {1, 1, 1}, {1})}),
                  StatusCode::kInvalidModel, "not allowed");
  }
  EXPECT_STATUS(KernelRunner("Conv", 22)
                    .Run({MakeTensorOf<int32_t>(E::kInt32, {1, 1, 2}, {1, 2}),
                          MakeTensorOf<int32_t>(E::kInt32, {1, 1, 1}, {1})}),
                StatusCode::kInvalidModel, "not allowed");
}

// A constant float16 W is widened once at creation; the result is the same as with W fed.
TEST(ConvTest, PrepackedConstantWeightsGiveTheSameBits) {
  const Value x = FloatTensor(E::kFloat16, {1, 2, 5, 5}, RandomUnit(50, 4));
  const Value w = FloatTensor(E::kFloat16, {3, 2, 3, 3}, RandomUnit(54, 5));
  auto fed = KernelRunner("Conv", 11).Run({x, w}).value();
  auto packed = KernelRunner("Conv", 11).ConstantInput(1).Run({x, w}).value();
  EXPECT_EQ(DescribeDifference(fed[0], packed[0]), std::nullopt);
}

// ---- ConvTranspose ------------------------------------------------------------------------------

TEST(ConvTransposeTest, OneTwoAndThreeSpatialDims) {
  RunConvCase({.name = "1d", .x = {2, 3, 5}, .w = {3, 2, 3}, .bias = true, .expect_out = {7}},
              true);
  // H: 2 * (4 - 1) + 1 + ((3 - 1) * 2 + 1) - 1 - 2 = 9; W: 3 * (3 - 1) + 0 + 2 - 0 - 1 = 7
  RunConvCase({.name = "2d",
               .x = {1, 2, 4, 3},
               .w = {2, 3, 3, 2},
               .bias = true,
               .g = {.strides = {2, 3}, .dilations = {2, 1}, .pads_begin = {1, 0}},
               .expect_out = {9, 7},
               .ints = {{"strides", {2, 3}},
                        {"dilations", {2, 1}},
                        {"pads", {1, 0, 2, 1}},
                        {"output_padding", {1, 0}}}},
              true);
  RunConvCase({.name = "3d", .x = {1, 1, 3, 4, 5}, .w = {1, 2, 3, 3, 3}, .expect_out = {5, 6, 7}},
              true);
}

TEST(ConvTransposeTest, GroupsOutputShapeAndAutoPad) {
  RunConvCase({.name = "group 2",
               .x = {2, 4, 3, 3},
               .w = {4, 3, 2, 2},
               .bias = true,
               .g = {.strides = {2, 2}, .group = 2},
               .expect_out = {6, 6},
               .ints = {{"strides", {2, 2}}}},
              true);
  // output_shape: full H = 3 * 2 + 3 = 9, W = 2 * 2 + 3 = 7; asking 8 x 6 crops total 1 each,
  // pad_begin = total - total / 2 = 1 (NOTSET); the (N, C) prefix may be given too.
  for (Dims shape : {Dims{8, 6}, Dims{1, 2, 8, 6}}) {
    RunConvCase({.name = "output_shape",
                 .x = {1, 1, 3, 3},
                 .w = {1, 2, 3, 3},
                 .g = {.strides = {3, 2}, .pads_begin = {1, 1}},
                 .expect_out = {8, 6},
                 .ints = {{"strides", {3, 2}}, {"output_shape", shape}}},
                true);
  }
  // Larger than the full output: nothing cropped, the extra positions hold the bias.
  RunConvCase({.name = "output_shape past full",
               .x = {1, 1, 3, 3},
               .w = {1, 2, 3, 3},
               .bias = true,
               .g = {.strides = {3, 2}},
               .expect_out = {10, 8},
               .ints = {{"strides", {3, 2}}, {"output_shape", {10, 8}}}},
              true);
  // SAME_UPPER: out = in * stride = 6, full = 2 * 2 + 3 = 7, total 1 -> pad_begin 0 (the odd
  // pixel at the end); SAME_LOWER -> pad_begin 1.
  RunConvCase({.name = "same upper",
               .x = {1, 1, 3, 3},
               .w = {1, 2, 3, 3},
               .g = {.strides = {2, 2}},
               .expect_out = {6, 6},
               .ints = {{"strides", {2, 2}}},
               .auto_pad = "SAME_UPPER"},
              true);
  RunConvCase({.name = "same lower",
               .x = {1, 1, 3, 3},
               .w = {1, 2, 3, 3},
               .g = {.strides = {2, 2}, .pads_begin = {1, 1}},
               .expect_out = {6, 6},
               .ints = {{"strides", {2, 2}}},
               .auto_pad = "SAME_LOWER"},
              true);
  RunConvCase({.name = "valid",
               .x = {1, 1, 3, 3},
               .w = {1, 2, 3, 3},
               .g = {.strides = {2, 2}},
               .expect_out = {7, 7},
               .ints = {{"strides", {2, 2}}},
               .auto_pad = "VALID"},
              true);
}

TEST(ConvTransposeTest, TypeSetsAndLargeInput) {
  const ConvCase c = {.name = "types",
                      .x = {1, 4, 5, 3},
                      .w = {4, 1, 3, 2},
                      .bias = true,
                      .g = {.strides = {2, 1}, .group = 2},
                      .expect_out = {11, 4},
                      .ints = {{"strides", {2, 1}}}};
  for (int v : {1, 11, 22}) {
    ConvCase vc = c;
    vc.version = v;
    for (E type : {E::kFloat, E::kDouble, E::kFloat16}) RunConvCase(vc, true, type);
  }
  ConvCase bf = c;
  bf.version = 22;
  RunConvCase(bf, true, E::kBfloat16);
  EXPECT_STATUS(KernelRunner("ConvTranspose", 11)
                    .Run({FloatTensor(E::kBfloat16, {1, 1, 2}, {1, 2}),
                          FloatTensor(E::kBfloat16, {1, 1, 1}, {1})}),
                StatusCode::kInvalidModel, "not allowed");
  // rows = 4 * 9 = 36 per 1024-wide line: blocks of lines.
  RunConvCase({.name = "large",
               .x = {1, 8, 40, 1024},
               .w = {8, 4, 3, 3},
               .bias = true,
               .expect_out = {42, 1026}},
              true);
}

// ---- Bad input
// ------------------------------------------------------------------------------------

struct BadCase {
  const char* op;
  Dims x, w;
  std::optional<Dims> b;
  std::vector<std::pair<std::string, Dims>> ints;
  std::optional<int64_t> group;
  std::string auto_pad;
  StatusCode code;
  const char* fragment;
};

Result<std::vector<Value>> RunBad(const BadCase& t, bool unknown, const Limits& limits = {}) {
  KernelRunner r(t.op, 11);
  for (const auto& [name, v] : t.ints) r.IntsAttr(name, v);
  if (t.group) r.IntAttr("group", *t.group);
  if (!t.auto_pad.empty()) r.StringAttr("auto_pad", t.auto_pad);
  if (unknown) r.UnknownShapes();
  r.WithLimits(limits);
  std::vector<Value> in = {Floats(t.x, RandomUnit(Count(t.x), 1)),
                           Floats(t.w, RandomUnit(Count(t.w), 2))};
  if (t.b) in.push_back(Floats(*t.b, RandomUnit(Count(*t.b), 3)));
  return r.Run(in);
}

TEST(ConvBadInputTest, EachRuleGivesAClearStatus) {
  using C = StatusCode;
  const std::vector<BadCase> cases = {
      {"Conv",
       {1, 1, 3, 3},
       {1, 1, 4, 2},
       {},
       {},
       {},
       "",
       C::kInvalidArgument,
       "kernel along spatial axis 0 (4 with dilation 1: 4 positions) is larger than the padded "
       "input (3 + pads 0 + 0 = 3)"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"dilations", {3, 1}}},
       {},
       "VALID",
       C::kInvalidArgument,
       "larger than the padded input"},
      {"Conv",
       {1, 3, 5, 5},
       {2, 1, 3, 3},
       {},
       {},
       2,
       "",
       C::kInvalidArgument,
       "X has 3 channels, not divisible by group 2"},
      {"Conv",
       {1, 4, 5, 5},
       {2, 1, 3, 3},
       {},
       {},
       2,
       "",
       C::kInvalidArgument,
       "W's dim 1 (1) times group (2) must equal X's channels (4)"},
      {"Conv",
       {1, 4, 5, 5},
       {3, 2, 3, 3},
       {},
       {},
       2,
       "",
       C::kInvalidArgument,
       "W's dim 0 (the 3 feature maps) is not divisible by group 2"},
      {"Conv",
       {1, 2, 5, 5},
       {3, 2, 3, 3},
       Dims{2},
       {},
       {},
       "",
       C::kInvalidArgument,
       "B has shape [2]; it must be [M] with M = 3"},
      {"Conv",
       {1, 2, 5, 5},
       {3, 2, 3, 3},
       Dims{1, 3},
       {},
       {},
       "",
       C::kInvalidArgument,
       "B has shape [1,3]"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"strides", {1, 0}}},
       {},
       "",
       C::kInvalidModel,
       "attribute 'strides' has 0 at index 1; strides must be >= 1"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"strides", {-1, 1}}},
       {},
       "",
       C::kInvalidModel,
       "strides must be >= 1"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"dilations", {0, 1}}},
       {},
       "",
       C::kInvalidModel,
       "dilations must be >= 1"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"pads", {0, -1, 0, 0}}},
       {},
       "",
       C::kInvalidModel,
       "pads must be >= 0"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"pads", {0, 1, 0}}},
       {},
       "",
       C::kInvalidModel,
       "'pads' has 3 values"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"pads", {1, 1}}},
       {},
       "",
       C::kInvalidModel,
       "attribute 'pads' has 2 values; X has 2 spatial axes, so it needs 4"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"strides", {1, 1, 1}}},
       {},
       "",
       C::kInvalidModel,
       "'strides' has 3 values"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"kernel_shape", {3, 2}}},
       {},
       "",
       C::kInvalidArgument,
       "'kernel_shape' [3,2] does not match W's spatial dims [3,3]"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"kernel_shape", {0, 3}}},
       {},
       "",
       C::kInvalidModel,
       "kernel dims must be >= 1"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"pads", {1, 1, 1, 1}}},
       {},
       "SAME_UPPER",
       C::kInvalidModel,
       "'pads' and 'auto_pad' ('SAME_UPPER') cannot be used together"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {},
       {},
       "SAME",
       C::kInvalidModel,
       "attribute 'auto_pad' is 'SAME'; it must be one of"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {},
       0,
       "",
       C::kInvalidModel,
       "attribute 'group' is 0; it must be >= 1"},
      {"Conv", {1, 5}, {1, 5}, {}, {}, {}, "", C::kInvalidArgument, "X has rank 2"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3},
       {},
       {},
       {},
       "",
       C::kInvalidArgument,
       "W has rank 3 but X has rank 4"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 0, 3},
       {},
       {},
       {},
       "",
       C::kInvalidArgument,
       "W's kernel dim 2 is 0"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"pads", {INT64_MAX, 0, 1, 0}}},
       {},
       "",
       C::kInvalidArgument,
       "overflow int64"},
      {"Conv",
       {1, 1, 5, 5},
       {1, 1, 3, 3},
       {},
       {{"dilations", {INT64_MAX / 2 + 1, 1}}},
       {},
       "",
       C::kInvalidArgument,
       "overflow int64"},
      {"ConvTranspose",
       {1, 3, 3, 3},
       {2, 2, 3, 3},
       {},
       {},
       {},
       "",
       C::kInvalidArgument,
       "W's dim 0 (2) must equal X's channels (3)"},
      {"ConvTranspose",
       {1, 3, 3, 3},
       {3, 2, 3, 3},
       {},
       {},
       2,
       "",
       C::kInvalidArgument,
       "X has 3 channels, not divisible by group 2"},
      {"ConvTranspose",
       {1, 2, 3, 3},
       {2, 2, 3, 3},
       Dims{2},
       {},
       2,
       "",
       C::kInvalidArgument,
       "B has shape [2]; it must be [M] with M = 4"},
      {"ConvTranspose",
       {1, 1, 3, 3},
       {1, 1, 3, 3},
       {},
       {{"output_padding", {2, 0}}},
       {},
       "",
       C::kInvalidModel,
       "output_padding 2 along spatial axis 0 must be less than the stride (1)"},
      {"ConvTranspose",
       {1, 1, 3, 3},
       {1, 1, 3, 3},
       {},
       {{"output_padding", {-1, 0}}},
       {},
       "",
       C::kInvalidModel,
       "output padding must be >= 0"},
      {"ConvTranspose",
       {1, 1, 3, 3},
       {1, 1, 3, 3},
       {},
       {{"output_shape", {5}}},
       {},
       "",
       C::kInvalidModel,
       "'output_shape' has 1 values"},
      {"ConvTranspose",
       {1, 1, 3, 3},
       {1, 1, 3, 3},
       {},
       {{"output_shape", {0, 5}}},
       {},
       "",
       C::kInvalidModel,
       "output dims must be >= 1"},
      {"ConvTranspose",
       {1, 1, 3, 3},
       {1, 1, 3, 3},
       {},
       {{"pads", {3, 0, 2, 0}}},
       {},
       "",
       C::kInvalidArgument,
       "pads 3 + 2 along spatial axis 0 leave no output (the full output "
       "is 5)"},
      {"ConvTranspose",
       {1, 1, 0, 3},
       {1, 1, 3, 3},
       {},
       {},
       {},
       "",
       C::kInvalidArgument,
       "spatial axis 0 of X is 0; it must be >= 1"},
      {"ConvTranspose",
       {1, 0, 3, 3},
       {0, INT64_MAX / 2, 1, 1},
       {},
       {},
       4,
       "",
       C::kInvalidArgument,
       "times group (4) overflows int64"},
  };
  for (const BadCase& t : cases) {
    for (bool unknown : {false, true}) {  // at plan time and at run time
      SCOPED_TRACE(std::string(t.op) + ": " + t.fragment + (unknown ? " (run time)" : ""));
      EXPECT_STATUS(RunBad(t, unknown), t.code, t.fragment);
    }
  }
}

TEST(ConvBadInputTest, OutputSizesCheckedAgainstLimitsBeforeAllocating) {
  Limits limits;
  limits.max_tensor_bytes = 1 << 20;
  // ConvTranspose: a stride of 10^6 asks for a 2 x 10^6 output from 3 values.
  BadCase huge_stride = {
      "ConvTranspose",          {1, 1, 3}, {1, 2, 1}, {},
      {{"strides", {1000000}}}, {},        "",        StatusCode::kResourceExhausted,
      "max_tensor_bytes"};
  EXPECT_STATUS(RunBad(huge_stride, false, limits), huge_stride.code, huge_stride.fragment);
  BadCase huge_shape = {"ConvTranspose",
                        {1, 1, 3, 3},
                        {1, 1, 3, 3},
                        {},
                        {{"output_shape", {100000, 100000}}},
                        {},
                        "",
                        StatusCode::kResourceExhausted,
                        "max_elements"};
  Limits elements;
  elements.max_elements = 1 << 20;
  EXPECT_STATUS(RunBad(huge_shape, false, elements), huge_shape.code, huge_shape.fragment);
  // Conv: pads of 10^5 around a 1x1 input.
  BadCase huge_pads = {"Conv",
                       {1, 1, 1, 1},
                       {1, 1, 1, 1},
                       {},
                       {{"pads", {100000, 100000, 100000, 100000}}},
                       {},
                       "",
                       StatusCode::kResourceExhausted,
                       "max_tensor_bytes"};
  EXPECT_STATUS(RunBad(huge_pads, false, limits), huge_pads.code, huge_pads.fragment);
  // The im2col scratch counts against the run's budget too.
  Limits budget;
  budget.max_run_bytes = 200000;
  BadCase scratch = {"Conv",
                     {1, 64, 16, 16},
                     {1, 64, 5, 5},
                     {},
                     {{"pads", {2, 2, 2, 2}}},
                     {},
                     "",
                     StatusCode::kResourceExhausted,
                     "max_run_bytes"};
  EXPECT_STATUS(RunBad(scratch, false, budget), scratch.code, scratch.fragment);
}

// ---- Registry ---------------------------------------------------------------------------------

TEST(ConvRegistryTest, MatchesLibonnxSchemasAndVersion22) {
  const auto& registry = KernelRegistry::Default();
  for (const char* op : {"Conv", "ConvTranspose"}) {
    std::vector<int> since;
    for (const KernelSchema* s : registry.Versions("", op)) since.push_back(s->since_version);
    EXPECT_EQ(since, (std::vector<int>{1, 11, 22})) << op;
    for (int version : {1, 11}) {
      SCOPED_TRACE(std::string(op) + "-" + std::to_string(version));
      const onnx::OpSchema* theirs = onnx::OpSchemaRegistry::Schema(op, version, "");
      ASSERT_NE(theirs, nullptr);
      const KernelSchema* ours = registry.Resolve("", op, version);
      ASSERT_EQ(ours->inputs.size(), theirs->inputs().size());
      for (size_t i = 0; i < ours->inputs.size(); ++i) {
        EXPECT_EQ(ours->inputs[i].name, theirs->inputs()[i].GetName());
        EXPECT_EQ(static_cast<int>(ours->inputs[i].arity),
                  static_cast<int>(theirs->inputs()[i].GetOption()));
      }
      std::set<std::string> mine, attrs;
      for (const Type& t : ours->constraints.at(0).allowed) mine.insert(t.ToString());
      const auto& allowed = theirs->typeConstraintParams().at(0).allowed_type_strs;
      EXPECT_EQ(mine, std::set<std::string>(allowed.begin(), allowed.end()));
      for (const auto& [name, attribute] : theirs->attributes()) attrs.insert(name);
      EXPECT_EQ(std::set<std::string>(ours->attributes.begin(), ours->attributes.end()), attrs);
    }
    // Version 22 (newer than onnx 1.12): the spec adds bfloat16, nothing else.
    const KernelSchema* v22 = registry.Resolve("", op, 22);
    const KernelSchema* v11 = registry.Resolve("", op, 11);
    std::set<std::string> t22, t11;
    for (const Type& t : v22->constraints.at(0).allowed) t22.insert(t.ToString());
    for (const Type& t : v11->constraints.at(0).allowed) t11.insert(t.ToString());
    t11.insert("tensor(bfloat16)");
    EXPECT_EQ(t22, t11);
    EXPECT_EQ(v22->attributes, v11->attributes);
  }
}

// ---- Hardening (issue 17): the per-node work bound, int64 edges
// ----------------------------------

TEST(ConvBadInputTest, WorkIsBoundedByMaxElements) {
  Limits limits;
  limits.max_elements = 1 << 16;
  const Value x = FloatTensor(E::kFloat, {1, 1, 1, 1}, {1});
  const Value w = FloatTensor(E::kFloat, {1, 1, 16, 16}, std::vector<float>(256, 1.0f));
  // A 16 x 16 kernel padded by 16 around one pixel: 18 x 18 outputs x 256 taps = 82944 > 2^16
  // multiply-adds, refused when planning (shapes known) and when running (shapes unknown).
  for (bool unknown : {false, true}) {
    KernelRunner r("Conv", 11);
    r.IntsAttr("pads", {16, 16, 16, 16}).WithLimits(limits);
    if (unknown) r.UnknownShapes();
    EXPECT_STATUS(r.Run({x, w}), StatusCode::kResourceExhausted,
                  "Conv: the node's work, 8.294e+04 multiply-adds (outputs x C/group x kernel), "
                  "exceeds the per-node work bound max_elements = 65536");
  }
  // Pads of 15: 16 x 16 outputs x 256 = 2^16 exactly, allowed; each output sees the one pixel.
  auto fine =
      KernelRunner("Conv", 11).IntsAttr("pads", {15, 15, 15, 15}).WithLimits(limits).Run({x, w});
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  EXPECT_EQ(ShapeOf((*fine)[0]), (Dims{1, 1, 16, 16}));
  for (double v : Doubles((*fine)[0])) EXPECT_EQ(v, 1.0);
}

TEST(ConvBadInputTest, ConvTransposeWorkAndPadsAtInt64Limits) {
  Limits limits;
  limits.max_elements = 1 << 16;
  // 256 inputs x a 256-tap kernel + 511 outputs = 66047 > 2^16.
  for (bool unknown : {false, true}) {
    KernelRunner r("ConvTranspose", 11);
    r.WithLimits(limits);
    if (unknown) r.UnknownShapes();
    EXPECT_STATUS(r.Run({FloatTensor(E::kFloat, {1, 1, 256}, std::vector<float>(256, 1.0f)),
                         FloatTensor(E::kFloat, {1, 1, 256}, std::vector<float>(256, 1.0f))}),
                  StatusCode::kResourceExhausted, "ConvTranspose: the node's work, 6.605e+04");
  }
  // full - pad_begin - pad_end overflowed int64 (undefined behaviour) with pads of INT64_MAX.
  const int64_t max = std::numeric_limits<int64_t>::max();
  for (bool unknown : {false, true}) {
    KernelRunner r("ConvTranspose", 11);
    r.IntsAttr("pads", {max, max});
    if (unknown) r.UnknownShapes();
    EXPECT_STATUS(r.Run({FloatTensor(E::kFloat, {1, 1, 3}, {1, 2, 3}),
                         FloatTensor(E::kFloat, {1, 1, 2}, {1, 1})}),
                  StatusCode::kInvalidArgument,
                  "ConvTranspose: pads 9223372036854775807 + 9223372036854775807 along spatial "
                  "axis 0 leave no output (the full output is 4)");
  }
}

}  // namespace
}  // namespace idem::testing
