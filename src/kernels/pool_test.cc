// AveragePool, MaxPool, GlobalAveragePool through KernelRunner: values against a naive float64
// reference (every kernel tap checked against the padded input, no range arithmetic), shapes
// (hand-computed from the spec's formulas; known, unknown and constant inputs), 1-D/2-D/3-D,
// every attribute, every version's type set (libonnx's schemas, the spec for 19 and 22), and
// bad input.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "src/core/float_convert.h"
#include "src/kernels/fast/simd.h"
#include "tests/kernel_runner.h"
#include "tests/kernel_test_util.h"
#include "tests/status_matchers.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;

// Deterministic pseudo-random floats in [-4, 4) (a 32-bit LCG).
// Runs op-opset three ways (shapes known, unknown, input 0 a planner constant): KernelRunner
// checks each inferred type against the result; all three must agree bit for bit.
std::vector<Value> RunThree(const std::string& op, int opset, const std::vector<Value>& inputs,
                            const std::function<void(KernelRunner&)>& configure,
                            size_t outputs = 1) {
  std::vector<std::vector<Value>> results;
  for (int mode = 0; mode < 3; ++mode) {
    KernelRunner r(op, opset);
    configure(r);
    if (mode == 1) r.UnknownShapes();
    if (mode == 2) r.ConstantInput(0);
    auto out = r.Run(inputs, outputs);
    EXPECT_TRUE(out.ok()) << op << "-" << opset << " mode " << mode << ": "
                          << out.status().message();
    if (!out.ok()) return {};
    results.push_back(std::move(out).value());
  }
  for (size_t m = 1; m < results.size(); ++m) {
    for (size_t o = 0; o < outputs; ++o) {
      EXPECT_EQ(DescribeDifference(results[0][o], results[m][o]), std::nullopt) << "mode " << m;
    }
  }
  return results[0];
}

void ExpectClose(const std::vector<float>& actual, const std::vector<double>& expected,
                 double rtol = 1e-3, double atol = 1e-5) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << i;
      continue;
    }
    EXPECT_LE(std::abs(actual[i] - expected[i]), atol + rtol * std::abs(expected[i]))
        << i << ": " << actual[i] << " vs " << expected[i];
  }
}

// ---- The naive reference -----------------------------------------------------------------------

struct PoolCase {
  std::vector<int64_t> x_shape;
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  std::vector<int64_t> y_shape;                           // hand-computed
  bool count_include_pad = false;
  bool column_major = false;
};

// Every output element visits every kernel tap; a tap counts as input when it lies in
// [0, in) and as padded input when it lies in [-pad_begin, in + pad_end).
struct RefResult {
  std::vector<double> avg, max;
  std::vector<int64_t> argmax;
};

RefResult Reference(const PoolCase& c, const std::vector<float>& x) {
  const size_t k = c.kernel.size();
  RefResult r;
  const int64_t planes = c.x_shape[0] * c.x_shape[1];
  std::vector<int64_t> in(c.x_shape.begin() + 2, c.x_shape.end());
  std::vector<int64_t> out(c.y_shape.begin() + 2, c.y_shape.end());
  const int64_t in_plane = Count(in), out_plane = Count(out), taps = Count(c.kernel);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t o = 0; o < out_plane; ++o) {
      std::vector<int64_t> opos(k);
      for (int64_t i = static_cast<int64_t>(k) - 1, rest = o; i >= 0; --i) {
        opos[i] = rest % out[i];
        rest /= out[i];
      }
      double sum = 0, best = -std::numeric_limits<double>::infinity();
      int64_t valid = 0, padded = 0, best_index = -1;
      for (int64_t t = 0; t < taps; ++t) {
        std::vector<int64_t> j(k);
        for (int64_t i = static_cast<int64_t>(k) - 1, rest = t; i >= 0; --i) {
          j[i] = rest % c.kernel[i];
          rest /= c.kernel[i];
        }
        bool inside = true, inside_padded = true;
        int64_t offset = 0, index = 0, row = 1, col = 1;
        for (int64_t i = static_cast<int64_t>(k) - 1; i >= 0; --i) {
          const int64_t pos = opos[i] * c.strides[i] - c.pads[i] + j[i] * c.dilations[i];
          inside = inside && pos >= 0 && pos < in[i];
          inside_padded = inside_padded && pos < in[i] + c.pads[i + k];
          offset += pos * row;
          row *= in[i];
        }
        for (size_t i = 0; i < k; ++i) {
          const int64_t pos = opos[i] * c.strides[i] - c.pads[i] + j[i] * c.dilations[i];
          index += pos * col;
          col *= in[i];
        }
        if (inside_padded) ++padded;
        if (!inside) continue;
        ++valid;
        const double v = x[static_cast<size_t>(p * in_plane + offset)];
        sum += v;
        if (v > best) {
          best = v;
          best_index = p * in_plane + (c.column_major ? index : offset);
        }
      }
      r.avg.push_back(sum / static_cast<double>(c.count_include_pad ? padded : valid));
      r.max.push_back(best);
      r.argmax.push_back(best_index);
    }
  }
  return r;
}

void Configure(KernelRunner& r, const PoolCase& c) {
  r.IntsAttr("kernel_shape", c.kernel);
  r.IntsAttr("strides", c.strides);
  r.IntsAttr("pads", c.pads);
}

// Runs AveragePool-19 and MaxPool-12 (with Indices) on the case and compares with the reference.
void CheckCase(const PoolCase& c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "kernel " << ::testing::PrintToString(c.kernel));
  const std::vector<float> x = RandomGrid(static_cast<size_t>(Count(c.x_shape)), seed);
  const RefResult ref = Reference(c, x);
  auto avg = RunThree("AveragePool", 19, {Floats(c.x_shape, x)}, [&](KernelRunner& r) {
    Configure(r, c);
    r.IntsAttr("dilations", c.dilations);
    r.IntAttr("count_include_pad", c.count_include_pad ? 1 : 0);
  });
  ASSERT_EQ(avg.size(), 1u);
  EXPECT_EQ(ShapeOf(avg[0]), c.y_shape);
  ExpectClose(Elements<float>(avg[0]), ref.avg);
  auto max = RunThree(
      "MaxPool", 12, {Floats(c.x_shape, x)},
      [&](KernelRunner& r) {
        Configure(r, c);
        r.IntsAttr("dilations", c.dilations);
        r.IntAttr("storage_order", c.column_major ? 1 : 0);
      },
      2);
  ASSERT_EQ(max.size(), 2u);
  EXPECT_EQ(ShapeOf(max[0]), c.y_shape);
  EXPECT_EQ(ShapeOf(max[1]), c.y_shape);
  const std::vector<float> got = Elements<float>(max[0]);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(static_cast<double>(got[i]), ref.max[i]) << i;
  EXPECT_EQ(Elements<int64_t>(max[1]), ref.argmax);
}

// ---- Values ------------------------------------------------------------------------------------

TEST(PoolTest, HandComputed1D) {
  // X = [1 2 3 4 5], kernel 2, stride 2, pads 1/1: windows [pad 1] [2 3] [4 5].
  const Value x = Floats({1, 1, 5}, {1, 2, 3, 4, 5});
  auto avg = RunThree("AveragePool", 11, {x}, [](KernelRunner& r) {
    r.IntsAttr("kernel_shape", {2}).IntsAttr("strides", {2}).IntsAttr("pads", {1, 1});
  });
  EXPECT_EQ(ShapeOf(avg[0]), (std::vector<int64_t>{1, 1, 3}));
  EXPECT_EQ(Elements<float>(avg[0]), (std::vector<float>{1.0f, 2.5f, 4.5f}));
  auto incl = RunThree("AveragePool", 11, {x}, [](KernelRunner& r) {
    r.IntsAttr("kernel_shape", {2}).IntsAttr("strides", {2}).IntsAttr("pads", {1, 1});
    r.IntAttr("count_include_pad", 1);
  });
  EXPECT_EQ(Elements<float>(incl[0]), (std::vector<float>{0.5f, 2.5f, 4.5f}));
  auto max = RunThree(
      "MaxPool", 8, {x},
      [](KernelRunner& r) {
        r.IntsAttr("kernel_shape", {2}).IntsAttr("strides", {2}).IntsAttr("pads", {1, 1});
      },
      2);
  EXPECT_EQ(Elements<float>(max[0]), (std::vector<float>{1, 3, 5}));
  EXPECT_EQ(Elements<int64_t>(max[1]), (std::vector<int64_t>{0, 2, 4}));
}

TEST(PoolTest, CeilModeDropsAWindowStartingInThePadding) {
  // in 5, kernel 2, stride 2, pad_end 1: floor gives 3; ceil gives ceil(4/2)+1 = 3 windows
  // starting at 0, 2, 4; in 6 with ceil: ceil(5/2)+1 = 4, but the 4th starts at 6 >= 6 + 0: 3.
  auto run = [](int64_t in, std::vector<int64_t> pads) {
    std::vector<float> v(static_cast<size_t>(in));
    for (int64_t i = 0; i < in; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i + 1);
    return RunThree("MaxPool", 10, {Floats({1, 1, in}, v)}, [&](KernelRunner& r) {
      r.IntsAttr("kernel_shape", {2}).IntsAttr("strides", {2}).IntsAttr("pads", pads);
      r.IntAttr("ceil_mode", 1);
    })[0];
  };
  EXPECT_EQ(Elements<float>(run(5, {0, 0})), (std::vector<float>{2, 4, 5}));
  EXPECT_EQ(Elements<float>(run(6, {0, 1})), (std::vector<float>{2, 4, 6}));
  // Floor mode (default) drops the incomplete last window.
  auto floor =
      RunThree("AveragePool", 10, {Floats({1, 1, 5}, {1, 2, 3, 4, 5})},
               [](KernelRunner& r) { r.IntsAttr("kernel_shape", {2}).IntsAttr("strides", {2}); });
  EXPECT_EQ(Elements<float>(floor[0]), (std::vector<float>{1.5f, 3.5f}));
  // Ceil mode with count_include_pad: the last window reaches past the input (no end padding),
  // and only taps within the padded input count: [5] / 1.
  auto ceil =
      RunThree("AveragePool", 10, {Floats({1, 1, 5}, {1, 2, 3, 4, 5})}, [](KernelRunner& r) {
        r.IntsAttr("kernel_shape", {2}).IntsAttr("strides", {2});
        r.IntAttr("ceil_mode", 1).IntAttr("count_include_pad", 1);
      });
  EXPECT_EQ(Elements<float>(ceil[0]), (std::vector<float>{1.5f, 3.5f, 5.0f}));
}

TEST(PoolTest, AgainstTheReference) {
  const std::vector<PoolCase> cases = {
      // 1-D, stride 1.
      {{2, 3, 9}, {3}, {1}, {1}, {0, 0}, {2, 3, 7}},
      // 1-D, dilation 2 and pads: extent 5, (10 + 3 - 5) / 2 + 1 = 5.
      {{1, 2, 10}, {3}, {2}, {2}, {2, 1}, {1, 2, 5}, true},
      // 2-D, stride 2, asymmetric pads.
      {{1, 2, 5, 6}, {3, 2}, {2, 2}, {1, 1}, {1, 0, 1, 1}, {1, 2, 3, 3}},
      // 2-D, dilations (2, 3), count_include_pad, column-major indices.
      {{2, 1, 7, 8}, {2, 2}, {1, 2}, {2, 3}, {1, 1, 0, 1}, {2, 1, 6, 4}, true, true},
      // 3-D.
      {{1, 2, 4, 5, 6}, {2, 3, 2}, {2, 1, 2}, {1, 1, 1}, {0, 1, 1, 1, 1, 0}, {1, 2, 2, 5, 3}},
      // 3-D, column-major indices.
      {{1, 1, 3, 4, 5},
       {2, 2, 2},
       {1, 2, 3},
       {1, 1, 2},
       {0, 0, 0, 0, 0, 0},
       {1, 1, 2, 2, 1},
       false,
       true},
  };
  uint32_t seed = 1;
  for (const PoolCase& c : cases) CheckCase(c, seed++);
}

// The fast 2-D float path (reference_kernels off) gives the reference loop's bits: the same taps
// in the same order, on every SIMD target of this machine. NaNs, ties, pads, strides, dilations,
// ceil_mode, count_include_pad.
TEST(PoolTest, Fast2DMatchesTheReferenceBitForBit) {
  struct Case {
    std::vector<int64_t> x, kernel, strides, dilations, pads;
    int64_t ceil_mode = 0, count_include_pad = 0;
  };
  const std::vector<Case> cases = {
      {{1, 24, 74, 32}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},  // openWakeWord's MaxPool
      {{2, 3, 9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0, 1},
      {{1, 2, 10, 7}, {3, 2}, {1, 2}, {2, 1}, {2, 0, 1, 1}, 1, 0},
      {{1, 1, 5, 5}, {5, 5}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {{1, 3, 8, 9}, {2, 3}, {3, 2}, {1, 2}, {1, 1, 0, 2}, 1, 1},
      // Windows wholly inside X (the vectorized MaxPool): strides 1, 2 (deinterleaved) and 3
      // (scalar), widths with and without a scalar tail, ceil_mode windows that do not fit.
      {{1, 48, 32, 16}, {1, 2}, {1, 2}, {1, 1}, {0, 0, 0, 0}},  // openWakeWord's 1x2
      {{2, 3, 7, 45}, {2, 2}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      {{1, 2, 9, 50}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {{1, 2, 9, 52}, {2, 4}, {3, 3}, {1, 1}, {0, 0, 0, 0}},
      {{1, 2, 9, 37}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}, 1, 0},
      {{1, 1, 4, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
      // Width-2 windows at width stride 2 tiling the rows (pair maxima, then the window rows):
      // openWakeWord's narrower pools, taller windows, a row stride over the window's height,
      // a plane over the stack tile and a width one past the windows (both row by row).
      {{1, 72, 28, 8}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {{1, 96, 10, 4}, {1, 2}, {1, 2}, {1, 1}, {0, 0, 0, 0}},
      {{1, 96, 6, 2}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {{2, 3, 7, 36}, {3, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {{1, 2, 9, 6}, {1, 2}, {3, 2}, {1, 1}, {0, 0, 0, 0}},
      {{1, 1, 300, 40}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {{1, 2, 6, 9}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      // 2x2 windows whose rows pair up exactly and whose output rows are narrower than half a
      // vector (the window rows folded in registers across planes): 8, 2 and 1 outputs wide,
      // a tail of outputs, and more planes than one stack tile of pair maxima holds.
      {{1, 48, 32, 16}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {{1, 96, 10, 4}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {{1, 3, 6, 4}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {{2, 300, 4, 8}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {{1, 5, 2, 2}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  uint32_t seed = 40;
  for (const Case& c : cases) {
    std::vector<float> x = RandomGrid(static_cast<size_t>(Count(c.x)), seed++);
    for (size_t i = 0; i < x.size(); i += 7) x[i] = nan;        // some windows hold NaNs
    for (size_t i = 3; i < x.size(); i += 11) x[i] = x[i - 1];  // and ties
    for (size_t i = 5; i + 1 < x.size(); i += 13) {             // ties of zeros of both signs
      x[i] = 0.0f;
      x[i + 1] = -0.0f;
    }
    for (size_t i = 9; i < x.size(); i += 17) x[i] = -nan;  // NaNs of the other sign
    for (const char* op : {"MaxPool", "AveragePool"}) {
      auto make = [&](bool reference) {
        KernelRunner r(op, 19);
        r.IntsAttr("kernel_shape", c.kernel)
            .IntsAttr("strides", c.strides)
            .IntsAttr("pads", c.pads)
            .IntAttr("ceil_mode", c.ceil_mode)
            .IntsAttr("dilations", c.dilations)
            .Reference(reference);
        if (std::string(op) == "AveragePool") r.IntAttr("count_include_pad", c.count_include_pad);
        return r;
      };
      auto reference = make(true).Run({Floats(c.x, x)});
      ASSERT_TRUE(reference.ok()) << op;
      for (int64_t target : fast::SimdTargets()) {
        fast::ScopedSimdTarget force(target);
        auto fast = make(false).Run({Floats(c.x, x)});
        ASSERT_TRUE(fast.ok()) << op;
        EXPECT_EQ(DescribeDifference((*reference)[0], (*fast)[0]), std::nullopt)
            << op << " on " << fast::SimdTargetName(target) << ", case " << (&c - cases.data());
      }
    }
  }
}

// Width-2, width-stride-2 MaxPool takes each window row's pair maximum first and folds the rows
// after: the same bits as the reference's tap-by-tap fold only because both keep the first of
// equal maxima in tap order. Every assignment of +0, -0, -1 and two NaNs (other payloads and
// signs) to the four taps of a 2x2 window, laid out along a row (whole vectors and a tail) and
// one window per plane.
TEST(PoolTest, PairMaximaKeepTheReferencesChoiceAmongEqualMaxima) {
  const float values[] = {0.0f, -0.0f, -1.0f, std::bit_cast<float>(0x7fc00001u),
                          std::bit_cast<float>(0xffc00002u)};
  constexpr size_t kValues = std::size(values);
  constexpr size_t kWindows = kValues * kValues * kValues * kValues;
  std::vector<float> row_major(4 * kWindows), per_plane(4 * kWindows);
  for (size_t k = 0; k < kWindows; ++k) {
    const float t[4] = {values[k % kValues], values[k / kValues % kValues],
                        values[k / (kValues * kValues) % kValues],
                        values[k / (kValues * kValues * kValues)]};
    for (size_t tap = 0; tap < 4; ++tap) {
      // [1, 1, 2, 2 * kWindows]: window k at columns 2k and 2k + 1 of both rows.
      row_major[(tap / 2) * 2 * kWindows + 2 * k + tap % 2] = t[tap];
      per_plane[4 * k + tap] = t[tap];  // [1, kWindows, 2, 2]
    }
  }
  const auto windows = static_cast<int64_t>(kWindows);
  const std::pair<std::vector<int64_t>, const std::vector<float>*> inputs[] = {
      {{1, 1, 2, 2 * windows}, &row_major}, {{1, windows, 2, 2}, &per_plane}};
  for (const auto& [shape, data] : inputs) {
    auto make = [&](bool reference) {
      KernelRunner r("MaxPool", 12);
      r.IntsAttr("kernel_shape", {2, 2}).IntsAttr("strides", {2, 2}).Reference(reference);
      return r;
    };
    auto reference = make(true).Run({Floats(shape, *data)});
    ASSERT_TRUE(reference.ok());
    for (int64_t target : fast::SimdTargets()) {
      fast::ScopedSimdTarget force(target);
      auto fast = make(false).Run({Floats(shape, *data)});
      ASSERT_TRUE(fast.ok());
      EXPECT_EQ(DescribeDifference((*reference)[0], (*fast)[0]), std::nullopt)
          << fast::SimdTargetName(target) << ", planes " << shape[1];
    }
  }
}

TEST(PoolTest, AutoPad) {
  // in 7, kernel 3, stride 2: SAME out = ceil(7/2) = 4, total pad = 3*2 + 3 - 7 = 2 (1 / 1).
  // in 6: out 3, total = 2*2 + 3 - 6 = 1: SAME_UPPER pads 0/1, SAME_LOWER 1/0.
  const std::vector<float> v6 = {1, 2, 3, 4, 5, 6};
  auto run = [&](const std::string& pad, int64_t in, const std::string& op) {
    std::vector<float> v(v6.begin(), v6.begin() + std::min<int64_t>(in, 6));
    if (in == 7) v.push_back(7);
    return RunThree(op, 11, {Floats({1, 1, in}, v)}, [&](KernelRunner& r) {
      r.IntsAttr("kernel_shape", {3}).IntsAttr("strides", {2}).StringAttr("auto_pad", pad);
    })[0];
  };
  EXPECT_EQ(Elements<float>(run("SAME_UPPER", 7, "MaxPool")), (std::vector<float>{2, 4, 6, 7}));
  EXPECT_EQ(Elements<float>(run("SAME_UPPER", 6, "AveragePool")), (std::vector<float>{2, 4, 5.5f}));
  EXPECT_EQ(Elements<float>(run("SAME_LOWER", 6, "AveragePool")), (std::vector<float>{1.5f, 3, 5}));
  EXPECT_EQ(Elements<float>(run("VALID", 7, "AveragePool")), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(ShapeOf(run("VALID", 6, "MaxPool")), (std::vector<int64_t>{1, 1, 2}));
  // Old versions take auto_pad too (AveragePool-1, MaxPool-1).
  auto old = RunThree("AveragePool", 1, {Floats({1, 1, 6}, v6)}, [](KernelRunner& r) {
    r.IntsAttr("kernel_shape", {3}).IntsAttr("strides", {2}).StringAttr("auto_pad", "SAME_LOWER");
  });
  EXPECT_EQ(Elements<float>(old[0]), (std::vector<float>{1.5f, 3, 5}));
}

TEST(PoolTest, MaxPoolTiesKeepTheFirstAndNaNIsSkipped) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto out = RunThree(
      "MaxPool", 12, {Floats({1, 1, 6}, {3, 3, nan, 1, nan, nan})},
      [](KernelRunner& r) { r.IntsAttr("kernel_shape", {2}).IntsAttr("strides", {2}); }, 2);
  const auto y = Elements<float>(out[0]);
  EXPECT_EQ(y[0], 3.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(Elements<int64_t>(out[1]), (std::vector<int64_t>{0, 3, 4}));
}

TEST(PoolTest, IndicesAreOptionalAndCountBatchAndChannels) {
  const std::vector<float> x = RandomGrid(size_t{2} * 3 * 4, 7);
  // Only Y requested.
  auto y = KernelRunner("MaxPool", 12).IntsAttr("kernel_shape", {2}).Run({Floats({2, 3, 4}, x)});
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(ShapeOf(y.value()[0]), (std::vector<int64_t>{2, 3, 3}));
  // Indices run over N x C x D: the last plane's indices are in [20, 24).
  auto both =
      KernelRunner("MaxPool", 12).IntsAttr("kernel_shape", {2}).Run({Floats({2, 3, 4}, x)}, 2);
  ASSERT_TRUE(both.ok());
  const auto idx = Elements<int64_t>(both.value()[1]);
  for (size_t i = 15; i < 18; ++i) {
    EXPECT_GE(idx[i], 20);
    EXPECT_LT(idx[i], 24);
  }
}

TEST(PoolTest, TypeSets) {
  // MaxPool: int8 and uint8 from 12; bfloat16 from 22.
  const Value i8 = MakeTensorOf<int8_t>(E::kInt8, {1, 1, 4}, {-5, -7, 3, -128});
  auto run_max = [](int version, const Value& x) {
    return KernelRunner("MaxPool", version).IntsAttr("kernel_shape", {2}).Run({x});
  };
  auto r8 = run_max(12, i8);
  ASSERT_TRUE(r8.ok()) << r8.status().message();
  EXPECT_EQ(Elements<int8_t>(r8.value()[0]), (std::vector<int8_t>{-5, 3, 3}));
  EXPECT_FALSE(run_max(11, i8).ok());
  const Value u8 = MakeTensorOf<uint8_t>(E::kUint8, {1, 1, 3}, {200, 255, 0});
  EXPECT_EQ(Elements<uint8_t>(run_max(12, u8).value()[0]), (std::vector<uint8_t>{255, 255}));
  // float16: averages round once.
  const Value h = MakeTensorOf<uint16_t>(E::kFloat16, {1, 1, 3},
                                         {FloatToHalf(1.0f), FloatToHalf(2.0f), FloatToHalf(4.0f)});
  auto avg = KernelRunner("AveragePool", 7).IntsAttr("kernel_shape", {2}).Run({h});
  ASSERT_TRUE(avg.ok());
  EXPECT_EQ(Elements<uint16_t>(avg.value()[0]),
            (std::vector<uint16_t>{FloatToHalf(1.5f), FloatToHalf(3.0f)}));
  const Value bf = MakeTensorOf<uint16_t>(
      E::kBfloat16, {1, 1, 3}, {FloatToBf16(1.0f), FloatToBf16(2.0f), FloatToBf16(4.0f)});
  EXPECT_FALSE(KernelRunner("AveragePool", 19).IntsAttr("kernel_shape", {2}).Run({bf}).ok());
  auto bavg = KernelRunner("AveragePool", 22).IntsAttr("kernel_shape", {2}).Run({bf});
  ASSERT_TRUE(bavg.ok());
  EXPECT_EQ(Elements<uint16_t>(bavg.value()[0]),
            (std::vector<uint16_t>{FloatToBf16(1.5f), FloatToBf16(3.0f)}));
  EXPECT_EQ(Elements<uint16_t>(run_max(22, bf).value()[0]),
            (std::vector<uint16_t>{FloatToBf16(2.0f), FloatToBf16(4.0f)}));
  EXPECT_FALSE(run_max(12, bf).ok());
  // double.
  auto d = KernelRunner("AveragePool", 11)
               .IntsAttr("kernel_shape", {3})
               .Run({MakeTensorOf<double>(E::kDouble, {1, 1, 3}, {0.1, 0.2, 0.4})});
  ASSERT_TRUE(d.ok());
  EXPECT_NEAR(Elements<double>(d.value()[0])[0], 0.7 / 3, 1e-15);
}

TEST(PoolTest, GlobalAveragePool) {
  const std::vector<float> x = RandomGrid(size_t{2} * 3 * 4 * 5, 3);
  auto out = RunThree("GlobalAveragePool", 1, {Floats({2, 3, 4, 5}, x)}, [](KernelRunner&) {});
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{2, 3, 1, 1}));
  std::vector<double> expected;
  for (int p = 0; p < 6; ++p) {
    double s = 0;
    for (int i = 0; i < 20; ++i) s += x[static_cast<size_t>(p) * 20 + static_cast<size_t>(i)];
    expected.push_back(s / 20);
  }
  ExpectClose(Elements<float>(out[0]), expected);
  // 1-D spatial, and rank 2 (no spatial dims: the mean of one value).
  auto one = RunThree("GlobalAveragePool", 1, {Floats({1, 2, 3}, {1, 2, 3, 4, 5, 9})},
                      [](KernelRunner&) {});
  EXPECT_EQ(Elements<float>(one[0]), (std::vector<float>{2, 6}));
  auto two = RunThree("GlobalAveragePool", 1, {Floats({1, 2}, {1, 2})}, [](KernelRunner&) {});
  EXPECT_EQ(ShapeOf(two[0]), (std::vector<int64_t>{1, 2}));
  // An empty spatial plane averages no values: NaN.
  auto empty = KernelRunner("GlobalAveragePool", 1).Run({Floats({1, 1, 0}, {})});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(std::isnan(Elements<float>(empty.value()[0])[0]));
  EXPECT_STATUS(KernelRunner("GlobalAveragePool", 1).Run({Floats({3}, {1, 2, 3})}),
                StatusCode::kInvalidArgument, "at least 2");
  // bfloat16 from 22.
  const Value bf =
      MakeTensorOf<uint16_t>(E::kBfloat16, {1, 1, 2}, {FloatToBf16(1.0f), FloatToBf16(2.0f)});
  EXPECT_FALSE(KernelRunner("GlobalAveragePool", 1).Run({bf}).ok());
  EXPECT_EQ(Elements<uint16_t>(KernelRunner("GlobalAveragePool", 22).Run({bf}).value()[0]),
            (std::vector<uint16_t>{FloatToBf16(1.5f)}));
}

TEST(PoolTest, EmptyInputs) {
  // N = 0: an empty output of the right shape.
  auto out = RunThree("MaxPool", 12, {Floats({0, 2, 5}, {})},
                      [](KernelRunner& r) { r.IntsAttr("kernel_shape", {2}); });
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{0, 2, 4}));
  // An empty spatial axis padded to the kernel: AveragePool averages no input (NaN without
  // count_include_pad, 0 with it); MaxPool has no element to choose.
  auto avg = KernelRunner("AveragePool", 11)
                 .IntsAttr("kernel_shape", {2})
                 .IntsAttr("pads", {1, 1})
                 .Run({Floats({1, 1, 0}, {})});
  ASSERT_TRUE(avg.ok()) << avg.status().message();
  EXPECT_TRUE(std::isnan(Elements<float>(avg.value()[0])[0]));
  EXPECT_STATUS(KernelRunner("MaxPool", 11)
                    .IntsAttr("kernel_shape", {2})
                    .IntsAttr("pads", {1, 1})
                    .Run({Floats({1, 1, 0}, {})}),
                StatusCode::kInvalidArgument, "covers only padding");
}

// ---- Bad input ---------------------------------------------------------------------------------

TEST(PoolTest, BadAttributesAreRefused) {
  const Value x = Floats({1, 1, 4, 4}, RandomGrid(16, 1));
  auto run = [&](const std::function<void(KernelRunner&)>& configure,
                 const std::string& op = "AveragePool", int version = 19) {
    KernelRunner r(op, version);
    configure(r);
    return r.Run({x});
  };
  EXPECT_STATUS(run([](KernelRunner&) {}), StatusCode::kInvalidModel, "kernel_shape");
  EXPECT_STATUS(run([](KernelRunner& r) { r.IntsAttr("kernel_shape", {}); }),
                StatusCode::kInvalidModel, "'kernel_shape' is empty");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.IntsAttr("kernel_shape", {0, 2});
                }),
                StatusCode::kInvalidModel, "must be >= 1");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.IntsAttr("kernel_shape", {2, 2}).IntsAttr("strides", {1, 0});
                }),
                StatusCode::kInvalidModel, "'strides' holds 0");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.IntsAttr("kernel_shape", {2, 2}).IntsAttr("strides", {-1, 1});
                }),
                StatusCode::kInvalidModel, "'strides' holds -1");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.IntsAttr("kernel_shape", {2, 2}).IntsAttr("strides", {1});
                }),
                StatusCode::kInvalidModel, "'strides' has 1 values; it must have 2");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.IntsAttr("kernel_shape", {2, 2}).IntsAttr("pads", {1, 1});
                }),
                StatusCode::kInvalidModel, "'pads' has 2 values; it must have 4");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.IntsAttr("kernel_shape", {2, 2}).IntsAttr("pads", {0, -1, 0, 0});
                }),
                StatusCode::kInvalidModel, "'pads' holds -1");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.IntsAttr("kernel_shape", {2, 2}).IntsAttr("dilations", {0, 1});
                }),
                StatusCode::kInvalidModel, "'dilations' holds 0");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.IntsAttr("kernel_shape", {2, 2}).StringAttr("auto_pad", "SAME");
                }),
                StatusCode::kInvalidModel, "auto_pad");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.IntsAttr("kernel_shape", {2, 2}).StringAttr("auto_pad", "VALID");
                  r.IntsAttr("pads", {1, 0, 0, 0});
                }),
                StatusCode::kInvalidModel, "cannot be used together");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.IntsAttr("kernel_shape", {2, 2}).IntAttr("ceil_mode", 2);
                }),
                StatusCode::kInvalidModel, "ceil_mode");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.IntsAttr("kernel_shape", {2, 2}).IntAttr("count_include_pad", -1);
                }),
                StatusCode::kInvalidModel, "count_include_pad");
  EXPECT_STATUS(run(
                    [](KernelRunner& r) {
                      r.IntsAttr("kernel_shape", {2, 2}).IntAttr("storage_order", 3);
                    },
                    "MaxPool", 12),
                StatusCode::kInvalidModel, "storage_order");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.IntsAttr("kernel_shape", {int64_t{1} << 62, 2});
                  r.IntsAttr("dilations", {4, 1});
                }),
                StatusCode::kInvalidModel, "overflows int64");
  // Attributes a version does not define are refused (dilations arrive in AveragePool-19).
  EXPECT_FALSE(run(
                   [](KernelRunner& r) {
                     r.IntsAttr("kernel_shape", {2, 2}).IntsAttr("dilations", {1, 1});
                   },
                   "AveragePool", 11)
                   .ok());
}

TEST(PoolTest, BadShapesAreRefused) {
  const Value x = Floats({1, 1, 4, 4}, RandomGrid(16, 1));
  // The kernel larger than the padded input.
  EXPECT_STATUS(KernelRunner("MaxPool", 12).IntsAttr("kernel_shape", {5, 2}).Run({x}),
                StatusCode::kInvalidArgument, "larger than the padded input size 4");
  EXPECT_STATUS(KernelRunner("AveragePool", 19)
                    .IntsAttr("kernel_shape", {3, 2})
                    .IntsAttr("dilations", {2, 1})
                    .Run({x}),
                StatusCode::kInvalidArgument, "kernel extent 5");
  EXPECT_STATUS(KernelRunner("AveragePool", 11)
                    .IntsAttr("kernel_shape", {5, 2})
                    .StringAttr("auto_pad", "VALID")
                    .Run({x}),
                StatusCode::kInvalidArgument, "auto_pad VALID");
  // With pads the same kernel fits.
  EXPECT_TRUE(KernelRunner("MaxPool", 12)
                  .IntsAttr("kernel_shape", {5, 2})
                  .IntsAttr("pads", {1, 0, 0, 0})
                  .Run({x})
                  .ok());
  // Rank against kernel_shape, at plan time and (shapes unknown) at run time.
  EXPECT_STATUS(KernelRunner("MaxPool", 12).IntsAttr("kernel_shape", {2}).Run({x}),
                StatusCode::kInvalidArgument, "must have rank 3");
  EXPECT_STATUS(KernelRunner("MaxPool", 12).IntsAttr("kernel_shape", {2}).UnknownShapes().Run({x}),
                StatusCode::kInvalidArgument, "must have rank 3");
  // Pads that overflow int64 when added to the input.
  EXPECT_STATUS(KernelRunner("AveragePool", 11)
                    .IntsAttr("kernel_shape", {2, 2})
                    .IntsAttr("pads", {std::numeric_limits<int64_t>::max(), 0, 0, 0})
                    .Run({x}),
                StatusCode::kInvalidArgument, "overflows int64");
}

TEST(PoolTest, OutputSizeIsCheckedAgainstTheLimits) {
  // Huge pads with stride 1 ask for a huge output from a tiny input: refused before allocating.
  const Value x = Floats({1, 1, 2}, {1, 2});
  Limits limits;
  limits.max_tensor_bytes = 1 << 20;
  EXPECT_STATUS(KernelRunner("AveragePool", 11)
                    .IntsAttr("kernel_shape", {1})
                    .IntsAttr("pads", {0, int64_t{1} << 40})
                    .IntAttr("count_include_pad", 1)
                    .WithLimits(limits)
                    .Run({x}),
                StatusCode::kResourceExhausted, "");
  EXPECT_STATUS(KernelRunner("MaxPool", 12)
                    .IntsAttr("kernel_shape", {1})
                    .IntsAttr("pads", {0, 1 << 20})
                    .WithLimits(limits)
                    .Run({x}, 2),
                StatusCode::kResourceExhausted, "");
}

// ---- Registry ----------------------------------------------------------------------------------

std::set<std::string> TypeStrings(const TypeConstraint& c) {
  std::set<std::string> out;
  for (const Type& t : c.allowed) out.insert(t.ToString());
  return out;
}

void ExpectMatchesLibonnx(const char* op, int version) {
  SCOPED_TRACE(std::string(op) + "-" + std::to_string(version));
  const onnx::OpSchema* theirs = onnx::OpSchemaRegistry::Schema(op, version, "");
  ASSERT_NE(theirs, nullptr);
  ASSERT_EQ(theirs->SinceVersion(), version);
  const KernelSchema* ours = KernelRegistry::Default().Resolve("", op, version);
  ASSERT_NE(ours, nullptr);
  EXPECT_EQ(ours->since_version, version);
  // Never folded at planning: its cost is not bounded by the file's size.
  EXPECT_FALSE(ours->foldable);
  ASSERT_EQ(ours->inputs.size(), theirs->inputs().size());
  for (size_t i = 0; i < ours->inputs.size(); ++i) {
    EXPECT_EQ(ours->inputs[i].name, theirs->inputs()[i].GetName());
    EXPECT_EQ(ours->inputs[i].type_param, theirs->inputs()[i].GetTypeStr());
    EXPECT_EQ(static_cast<int>(ours->inputs[i].arity),
              static_cast<int>(theirs->inputs()[i].GetOption()));
  }
  ASSERT_EQ(ours->outputs.size(), theirs->outputs().size());
  for (size_t i = 0; i < ours->outputs.size(); ++i) {
    EXPECT_EQ(ours->outputs[i].name, theirs->outputs()[i].GetName());
    EXPECT_EQ(ours->outputs[i].type_param, theirs->outputs()[i].GetTypeStr());
    EXPECT_EQ(static_cast<int>(ours->outputs[i].arity),
              static_cast<int>(theirs->outputs()[i].GetOption()));
  }
  ASSERT_EQ(ours->constraints.size(), theirs->typeConstraintParams().size());
  for (const auto& param : theirs->typeConstraintParams()) {
    const TypeConstraint* c = ours->FindConstraint(param.type_param_str);
    ASSERT_NE(c, nullptr) << param.type_param_str;
    EXPECT_EQ(TypeStrings(*c),
              std::set<std::string>(param.allowed_type_strs.begin(), param.allowed_type_strs.end()))
        << param.type_param_str;
  }
  std::set<std::string> their_attributes;
  for (const auto& [name, attribute] : theirs->attributes()) their_attributes.insert(name);
  EXPECT_EQ(std::set<std::string>(ours->attributes.begin(), ours->attributes.end()),
            their_attributes);
}

TEST(PoolRegistryTest, EveryVersionMatchesTheSchemas) {
  const std::vector<std::pair<const char*, std::vector<int>>> ops = {
      {"AveragePool", {1, 7, 10, 11}}, {"MaxPool", {1, 8, 10, 11, 12}}, {"GlobalAveragePool", {1}}};
  const auto& r = KernelRegistry::Default();
  for (const auto& [op, versions] : ops) {
    for (int v : versions) ExpectMatchesLibonnx(op, v);
    std::vector<int> ours;
    for (const KernelSchema* s : r.Versions("", op)) ours.push_back(s->since_version);
    std::vector<int> all = versions;
    if (std::string(op) == "AveragePool") all.push_back(19);
    all.push_back(22);
    EXPECT_EQ(ours, all) << op;
  }
  // Newer than libonnx: AveragePool-19 adds dilations; the 22s add bfloat16.
  const KernelSchema* a19 = r.Resolve("", "AveragePool", 19);
  EXPECT_EQ(std::set<std::string>(a19->attributes.begin(), a19->attributes.end()),
            (std::set<std::string>{"auto_pad", "ceil_mode", "count_include_pad", "dilations",
                                   "kernel_shape", "pads", "strides"}));
  EXPECT_EQ(TypeStrings(a19->constraints[0]),
            (std::set<std::string>{"tensor(float16)", "tensor(float)", "tensor(double)"}));
  const KernelSchema* a22 = r.Resolve("", "AveragePool", 22);
  EXPECT_EQ(a22->attributes, a19->attributes);
  EXPECT_EQ(TypeStrings(a22->constraints[0]),
            (std::set<std::string>{"tensor(bfloat16)", "tensor(float16)", "tensor(float)",
                                   "tensor(double)"}));
  const KernelSchema* m12 = r.Resolve("", "MaxPool", 12);
  const KernelSchema* m22 = r.Resolve("", "MaxPool", 22);
  EXPECT_EQ(m22->attributes, m12->attributes);
  EXPECT_EQ(TypeStrings(m22->constraints[0]),
            (std::set<std::string>{"tensor(bfloat16)", "tensor(float16)", "tensor(float)",
                                   "tensor(double)", "tensor(int8)", "tensor(uint8)"}));
  EXPECT_EQ(TypeStrings(*m22->FindConstraint("I")), (std::set<std::string>{"tensor(int64)"}));
  const KernelSchema* g22 = r.Resolve("", "GlobalAveragePool", 22);
  EXPECT_TRUE(g22->attributes.empty());
  EXPECT_EQ(TypeStrings(g22->constraints[0]), TypeStrings(a22->constraints[0]));
}

// ---- Hardening (issue 17)
// ------------------------------------------------------------------------

TEST(PoolBadInputTest, WindowTapsAreBoundedByMaxElements) {
  Limits limits;
  limits.max_elements = 1 << 16;
  // kernel_shape 256 with pads 255 on 512 values: 767 outputs x 256 taps inside X = 196352.
  for (const char* op : {"MaxPool", "AveragePool"}) {
    for (bool unknown : {false, true}) {
      KernelRunner r(op, 19);
      r.IntsAttr("kernel_shape", {256}).IntsAttr("pads", {255, 255}).WithLimits(limits);
      if (unknown) r.UnknownShapes();
      EXPECT_STATUS(r.Run({MakeTensorOf(E::kFloat, {1, 1, 512}, RandomGrid(512, 3))}),
                    StatusCode::kResourceExhausted,
                    std::string(op) + ": the node's work, 1.964e+05 window taps");
    }
  }
}

TEST(PoolBadInputTest, CountIncludePadDivisorOfHugeKernels) {
  // Three axes of kernel 2^31 (strides 2^31, pads 2^31 - 1): one output whose window holds 2^93
  // positions of padded input. The divisor was an int64 product (signed overflow, then 0).
  const int64_t k = int64_t{1} << 31;
  auto out = KernelRunner("AveragePool", 19)
                 .IntsAttr("kernel_shape", {k, k, k})
                 .IntsAttr("strides", {k, k, k})
                 .IntsAttr("pads", {k - 1, k - 1, k - 1, k - 1, k - 1, k - 1})
                 .IntAttr("count_include_pad", 1)
                 .Run({MakeTensorOf(E::kFloat, {1, 1, 1, 1, 1}, std::vector<float>{1.0f})});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ShapeOf((*out)[0]), (std::vector<int64_t>{1, 1, 1, 1, 1}));
  EXPECT_EQ(Elements<float>((*out)[0])[0], std::ldexp(1.0f, -93));
}

TEST(PoolBadInputTest, CeilModeWithAStrideNearInt64Max) {
  // ceil((padded - extent) / stride) formed span + stride - 1, which overflowed int64.
  const int64_t max = std::numeric_limits<int64_t>::max();
  auto out = KernelRunner("AveragePool", 19)
                 .IntsAttr("kernel_shape", {1})
                 .IntsAttr("strides", {max})
                 .IntsAttr("pads", {0, max - 1})
                 .IntAttr("ceil_mode", 1)
                 .Run({MakeTensorOf(E::kFloat, {1, 1, 1}, std::vector<float>{2.5f})});
  ASSERT_TRUE(out.ok()) << out.status().message();
  // The second window would start in the end padding: dropped.
  EXPECT_EQ(ShapeOf((*out)[0]), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(Elements<float>((*out)[0])[0], 2.5f);
}

TEST(PoolBadInputTest, SamePadsNearInt64MaxDoNotOverflowTheWindows) {
  // Found by fuzz_graph (tests/regressions/fuzz_model-pool-window-end-overflow): kernel 2^62 with
  // dilation 2 is an extent of INT64_MAX; SAME_UPPER's pads were computed as
  // (out - 1) * stride + (extent - in), which fits, while the padded extent in + pads did not,
  // and the windows measured in it overflowed int64. Such pads are refused now.
  auto refused = KernelRunner("MaxPool", 12)
                     .IntsAttr("kernel_shape", {int64_t{1} << 62})
                     .IntsAttr("dilations", {2})
                     .StringAttr("auto_pad", "SAME_UPPER")
                     .Run({MakeTensorOf(E::kFloat, {1, 1, 4}, std::vector<float>{1, 5, 2, 7})});
  EXPECT_STATUS(refused, StatusCode::kInvalidArgument,
                "MaxPool: spatial axis 0: the padding auto_pad needs overflows int64");
  // Kernel 2^61 + 1 with dilation 2 (extent 2^62 + 1) still fits: pads of 2^61 on each side;
  // window o starts 2^61 before X and takes every other position, so it holds the p with p - o
  // even.
  auto out = KernelRunner("MaxPool", 12)
                 .IntsAttr("kernel_shape", {(int64_t{1} << 61) + 1})
                 .IntsAttr("dilations", {2})
                 .StringAttr("auto_pad", "SAME_UPPER")
                 .Run({MakeTensorOf(E::kFloat, {1, 1, 4}, std::vector<float>{1, 5, 2, 7})});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(Elements<float>((*out)[0]), (std::vector<float>{2, 7, 2, 7}));
}

TEST(PoolBadInputTest, SamePadsWhosePaddedExtentOverflowsAreRefused) {
  // Found by fuzz_model (a recipe; tests/regressions/fuzz_model-pool-same-extent-overflow):
  // kernel INT64_MAX - 1 with SAME_UPPER on 3 values: (out - 1) * stride + extent overflows.
  for (const char* op : {"AveragePool", "MaxPool"}) {
    for (bool unknown : {false, true}) {
      KernelRunner r(op, 12);
      r.IntsAttr("kernel_shape", {std::numeric_limits<int64_t>::max() - 1})
          .StringAttr("auto_pad", "SAME_UPPER");
      if (unknown) r.UnknownShapes();
      EXPECT_STATUS(
          r.Run({MakeTensorOf(E::kFloat, {1, 1, 3}, std::vector<float>{1, 2, 3})}),
          StatusCode::kInvalidArgument,
          std::string(op) + ": spatial axis 0: the padding auto_pad needs overflows int64");
    }
  }
}

// The fast float GlobalAveragePool (eight partial sums in double) against the reference's
// running sum: every plane size around the partial-sum count, values whose sums are inexact,
// within 2 ulp; NaN and infinities as the reference.
TEST(PoolTest, FastGlobalAverageMatchesTheReference) {
  for (int64_t plane : {1, 2, 7, 8, 9, 15, 16, 17, 192, 1001}) {
    SCOPED_TRACE(plane);
    std::vector<float> x = RandomUnit(static_cast<size_t>(3 * plane), static_cast<uint32_t>(plane));
    for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] * 1000.0f + (i % 3 == 0 ? 1e7f : 0.0f);
    const Value in = Floats({1, 3, 1, plane}, x);
    auto fast = KernelRunner("GlobalAveragePool", 1).Run({in});
    auto reference = KernelRunner("GlobalAveragePool", 1).Reference().Run({in});
    ASSERT_TRUE(fast.ok() && reference.ok());
    const std::vector<float> got = Elements<float>((*fast)[0]);
    const std::vector<float> want = Elements<float>((*reference)[0]);
    ASSERT_EQ(got.size(), 3u);
    for (size_t c = 0; c < 3; ++c) {
      EXPECT_LE(std::abs(got[c] - want[c]),
                2 * std::abs(std::nextafter(want[c], INFINITY) - want[c]))
          << got[c] << " vs " << want[c];
    }
  }
  const Value special = Floats({1, 3, 1, 9}, {1, 2, NAN, 4,        5, 6, 7, 8,         9,  //
                                              1, 2, 3,   INFINITY, 5, 6, 7, 8,         9,  //
                                              1, 2, 3,   INFINITY, 5, 6, 7, -INFINITY, 9});
  auto fast = KernelRunner("GlobalAveragePool", 1).Run({special});
  ASSERT_TRUE(fast.ok());
  const std::vector<float> got = Elements<float>((*fast)[0]);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], INFINITY);
  EXPECT_TRUE(std::isnan(got[2]));
}

}  // namespace
}  // namespace idem::testing
