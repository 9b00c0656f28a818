// The fast float Conv / ConvTranspose (conv.cc, "Fast float Conv") against the reference kernels
// (SessionOptions::reference_kernels) over a shape sweep: 1-D and 2-D, 1x1 (pointwise and
// strided), odd sizes, strides, pads, dilations, auto_pad, groups, depthwise (with multipliers),
// batch > 1, every path (depthwise, few output pixels, im2col columns, pointwise).
// Tolerance: |fast - reference| <= 1e-5 * (sum over the terms of |w x| + |b|), the magnitude the
// two float sums' rounding errors scale with (both round about once per term: FMA against a
// multiply and an add). Also checked for every case (tests/fast_test_util.h): the same bits with
// W and B constant (packed at Create) or fed, on a second run, with 2 and 3 threads, and on every
// SIMD target of this machine. Cases the fast path does not take (3-D, float16) must give the
// reference kernel's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "src/kernels/fast/thread_pool.h"
#include "tests/fast_test_util.h"
#include "tests/kernel_runner.h"

namespace idem::testing {
namespace {

using Dims = std::vector<int64_t>;

struct ConvSpec {
  ConvSpec(std::string n, Dims xs, Dims ws)
      : name(std::move(n)), x(std::move(xs)), w(std::move(ws)) {}
  ConvSpec& Group(int64_t g) {
    group = g;
    return *this;
  }
  ConvSpec& Strides(Dims v) {
    strides = std::move(v);
    return *this;
  }
  ConvSpec& Pads(Dims v) {
    pads = std::move(v);
    return *this;
  }
  ConvSpec& Dilations(Dims v) {
    dilations = std::move(v);
    return *this;
  }
  ConvSpec& NoBias() {
    bias = false;
    return *this;
  }
  ConvSpec& AutoPad(std::string v) {
    auto_pad = std::move(v);
    return *this;
  }
  ConvSpec& Transpose() {
    transpose = true;
    return *this;
  }
  ConvSpec& OutputPadding(Dims v) {
    output_padding = std::move(v);
    return *this;
  }
  std::string name;
  Dims x, w;
  int64_t group = 1;
  Dims strides, pads, dilations;
  bool bias = true;
  std::string auto_pad;
  bool transpose = false;
  Dims output_padding;
};

FastCase MakeConvCase(const ConvSpec& s, uint32_t seed) {
  FastCase c;
  c.make = [s] {
    KernelRunner r(s.transpose ? "ConvTranspose" : "Conv", 11);
    if (s.group != 1) r.IntAttr("group", s.group);
    if (!s.strides.empty()) r.IntsAttr("strides", s.strides);
    if (!s.pads.empty()) r.IntsAttr("pads", s.pads);
    if (!s.dilations.empty()) r.IntsAttr("dilations", s.dilations);
    if (!s.auto_pad.empty()) r.StringAttr("auto_pad", s.auto_pad);
    if (!s.output_padding.empty()) r.IntsAttr("output_padding", s.output_padding);
    return r;
  };
  c.inputs = {RandomTensor(s.x, seed), RandomTensor(s.w, seed + 1)};
  c.weights = {1};
  if (s.bias) {
    const int64_t m = s.transpose ? s.w[1] * s.group : s.w[0];
    c.inputs.push_back(RandomTensor({m}, seed + 2));
    c.weights.push_back(2);
  }
  c.linear = true;
  c.mtol = 1e-5;
  return c;
}

std::vector<ConvSpec> ConvSpecs() {
  return {
      ConvSpec("pointwise", {2, 5, 7, 9}, {6, 5, 1, 1}),
      ConvSpec("pointwise_no_bias", {1, 33, 4, 5}, {17, 33, 1, 1}).NoBias(),
      ConvSpec("1x1_strided", {1, 5, 9, 8}, {7, 5, 1, 1}).Strides(Dims{2, 3}),
      ConvSpec("3x3_pad1", {1, 3, 11, 13}, {17, 3, 3, 3}).Pads(Dims{1, 1, 1, 1}),
      ConvSpec("3x3_stride2_asym_dilation2", {2, 4, 13, 12}, {9, 4, 3, 3})
          .Strides(Dims{2, 2})
          .Pads(Dims{1, 0, 2, 1})
          .Dilations(Dims{2, 2}),
      ConvSpec("5x3_rect", {1, 2, 15, 10}, {40, 2, 5, 3})
          .Strides(Dims{1, 2})
          .Pads(Dims{2, 1, 2, 1}),
      ConvSpec("same_upper", {1, 3, 7, 8}, {4, 3, 2, 3}).Strides(Dims{2, 2}).AutoPad("SAME_UPPER"),
      ConvSpec("same_lower", {1, 3, 7, 8}, {4, 3, 3, 2}).Strides(Dims{1, 2}).AutoPad("SAME_LOWER"),
      ConvSpec("valid", {1, 3, 7, 8}, {20, 3, 3, 3}).AutoPad("VALID"),
      ConvSpec("grouped", {1, 8, 9, 11}, {12, 2, 3, 3}).Group(4).Pads(Dims{1, 1, 1, 1}),
      ConvSpec("grouped_few_pixels", {2, 64, 3, 2}, {64, 16, 3, 3}).Group(4).Pads(Dims{1, 1, 1, 1}),
      ConvSpec("depthwise_3x3", {2, 8, 10, 12}, {8, 1, 3, 3}).Group(8).Pads(Dims{1, 1, 1, 1}),
      ConvSpec("depthwise_5x5_stride2", {1, 6, 17, 15}, {6, 1, 5, 5})
          .Group(6)
          .Strides(Dims{2, 2})
          .Pads(Dims{2, 2, 2, 2}),
      ConvSpec("depthwise_stride3_dilation2", {1, 3, 20, 23}, {3, 1, 3, 3})
          .Group(3)
          .Strides(Dims{3, 3})
          .Pads(Dims{1, 2, 0, 1})
          .Dilations(Dims{2, 2}),
      ConvSpec("depthwise_multiplier", {1, 4, 9, 9}, {8, 1, 3, 3}).Group(4).Pads(Dims{1, 1, 1, 1}),
      ConvSpec("depthwise_no_bias_wide", {1, 2, 3, 100}, {2, 1, 3, 3})
          .Group(2)
          .Strides(Dims{1, 1})
          .Pads(Dims{1, 1, 1, 1})
          .NoBias(),
      ConvSpec("depthwise_1x1_input", {1, 5, 1, 1}, {5, 1, 3, 3}).Group(5).Pads(Dims{1, 1, 1, 1}),
      ConvSpec("single_input_channel", {1, 1, 20, 21}, {24, 1, 3, 3})
          .Strides(Dims{2, 2})
          .Pads(Dims{1, 1, 1, 1}),
      ConvSpec("1d_few_pixels", {1, 20, 6}, {32, 20, 3}).Pads(Dims{1, 1}),
      ConvSpec("1d_silero_stft", {1, 1, 640}, {258, 1, 256})
          .Strides(Dims{128})
          .Pads(Dims{0, 0})
          .NoBias(),
      ConvSpec("1d_stride2", {1, 16, 9}, {16, 16, 3}).Strides(Dims{2}).Pads(Dims{1, 1}),
      ConvSpec("1d_one_pixel", {1, 64, 1}, {64, 64, 3}).Pads(Dims{1, 1}),
      ConvSpec("1d_batch3", {3, 18, 4}, {20, 18, 3}).Pads(Dims{1, 1}),
      ConvSpec("1d_columns_dilation3", {3, 4, 50}, {5, 4, 5}).Pads(Dims{2, 1}).Dilations(Dims{3}),
      ConvSpec("1d_pointwise", {2, 7, 40}, {9, 7, 1}),
      ConvSpec("1d_pointwise_few_pixels", {1, 40, 24}, {16, 40, 1}),
      ConvSpec("1d_few_pixels_dilated_strided", {1, 20, 17}, {32, 20, 3})
          .Strides({3})
          .Pads({2, 1})
          .Dilations({2}),
      ConvSpec("2d_few_pixels_padded", {1, 16, 3, 4}, {24, 16, 3, 3}).Pads({2, 1, 0, 2}),
      // Few pixels far apart: the patches are built element by element, not through the
      // channels-last copy of the input (which would be 10 times their size).
      ConvSpec("few_pixels_huge_stride", {1, 4, 100, 100}, {16, 4, 3, 3})
          .Strides({40, 40})
          .Pads({1, 1, 1, 1}),
      ConvSpec("1x1_kernel_whole_image", {1, 3, 5, 5}, {33, 3, 5, 5}),
      // Stride 1 with the width kept (ow == w): im2col copies each (channel, tap)'s rows as
      // one run of X and zeroes the padding columns (openWakeWord's 1x3 and 3x1 Convs); pads
      // at the top, bottom and either side, runs starting before X and ending after it.
      ConvSpec("rows_1x3_pad_lr", {1, 5, 20, 16}, {24, 5, 1, 3}).Pads(Dims{0, 1, 0, 1}),
      ConvSpec("rows_3x1_valid", {1, 6, 22, 16}, {20, 6, 3, 1}),
      // One column of taps, no padding, width kept: one product per tap reading X in place
      // (tap-major weights); grouped, batched, without bias, openWakeWord's own shape, and a
      // bottom pad that sends it back to im2col.
      ConvSpec("taps_3x1_oww", {1, 24, 74, 32}, {24, 24, 3, 1}),
      ConvSpec("taps_5x1_grouped_batch2", {2, 8, 15, 7}, {12, 4, 5, 1}).Group(2).NoBias(),
      ConvSpec("taps_2x1_one_row_out", {1, 3, 2, 40}, {5, 3, 2, 1}),
      ConvSpec("taps_3x1_bottom_pad", {1, 6, 12, 16}, {20, 6, 3, 1}).Pads(Dims{0, 0, 1, 0}),
      // One row of taps padded to keep the width: the inner columns read X in place, the ones
      // within the pads of a row's ends again from their own im2col (openWakeWord's 1x3,
      // uneven pads, grouped, 1-D; rows under 8 times the pads wide build the whole im2col).
      ConvSpec("taps_1x3_oww", {1, 24, 36, 16}, {48, 24, 1, 3}).Pads(Dims{0, 1, 0, 1}),
      ConvSpec("taps_1x5_pad_left3", {1, 5, 9, 36}, {7, 5, 1, 5}).Pads(Dims{0, 3, 0, 1}),
      ConvSpec("taps_1x3_grouped", {2, 6, 8, 20}, {9, 2, 1, 3}).Group(3).Pads(Dims{0, 2, 0, 0}),
      ConvSpec("taps_1x3_narrow_rows_im2col", {1, 4, 17, 15}, {6, 4, 1, 3}).Pads(Dims{0, 1, 0, 1}),
      ConvSpec("taps_1d_row", {2, 6, 40}, {5, 6, 3}).Pads(Dims{1, 1}).NoBias(),
      // Winograd F(4, 3) (3 taps in one row or column, >= 8 channels in and out per group):
      // every padding of the row (left 2, right 2, both), 1-D, a row of one tile, rows over
      // several vectors and blocks; columns padded above and below with a last partial tile,
      // grouped and batched, widths narrower and wider than a vector, no bias.
      ConvSpec("winograd_1x3_pad_left2", {1, 8, 5, 12}, {9, 8, 1, 3}).Pads(Dims{0, 2, 0, 0}),
      ConvSpec("winograd_1x3_pad_right2", {2, 10, 3, 8}, {8, 10, 1, 3})
          .Pads(Dims{0, 0, 0, 2})
          .NoBias(),
      ConvSpec("winograd_1x3_one_tile_rows", {1, 12, 7, 4}, {16, 12, 1, 3}).Pads(Dims{0, 1, 0, 1}),
      ConvSpec("winograd_1d", {2, 9, 36}, {11, 9, 3}).Pads(Dims{1, 1}),
      ConvSpec("winograd_1x3_blocks", {1, 32, 41, 64}, {40, 32, 1, 3}).Pads(Dims{0, 1, 0, 1}),
      ConvSpec("winograd_3x1_pads_partial_tile", {1, 9, 13, 7}, {10, 9, 3, 1})
          .Pads(Dims{2, 0, 1, 0}),
      ConvSpec("winograd_3x1_grouped_batch", {2, 16, 11, 5}, {16, 8, 3, 1}).Group(2),
      ConvSpec("winograd_3x1_wide_blocks", {1, 32, 66, 40}, {24, 32, 3, 1}).NoBias(),
      ConvSpec("winograd_3x1_narrow", {1, 24, 9, 2}, {24, 24, 3, 1}).Pads(Dims{1, 0, 1, 0}),
      ConvSpec("rows_3x3_pad_all", {2, 3, 14, 9}, {18, 3, 3, 3}).Pads(Dims{1, 1, 1, 1}),
      ConvSpec("rows_3x3_left_only", {1, 4, 12, 10}, {17, 4, 3, 3}).Pads(Dims{2, 2, 0, 0}),
      ConvSpec("rows_3x3_right_only", {1, 4, 12, 10}, {17, 4, 3, 3}).Pads(Dims{0, 0, 2, 2}),
      ConvSpec("rows_5x3_dilated_height", {1, 3, 16, 11}, {19, 3, 5, 3})
          .Pads(Dims{4, 1, 4, 1})
          .Dilations(Dims{2, 1}),
      ConvSpec("rows_1d_pad1", {2, 6, 40}, {8, 6, 3}).Pads(Dims{1, 1}),
      ConvSpec("odd_everything", {3, 7, 13, 11}, {13, 7, 3, 5})
          .Strides(Dims{2, 1})
          .Pads(Dims{0, 2, 1, 0})
          .Dilations(Dims{1, 2}),
  };
}

TEST(ConvFast, MatchesTheReferenceOverTheSweep) {
  uint32_t seed = 1;
  for (const ConvSpec& s : ConvSpecs()) CheckFast(MakeConvCase(s, seed += 7), s.name);
}

TEST(ConvFast, ConvTransposeMatchesTheReference) {
  const std::vector<ConvSpec> specs = {
      ConvSpec("2d_stride2", {1, 4, 5, 6}, {4, 3, 3, 3})
          .Strides(Dims{2, 2})
          .Pads(Dims{1, 1, 1, 1})
          .Transpose()
          .OutputPadding(Dims{1, 1}),
      ConvSpec("2d_grouped", {2, 4, 5, 5}, {4, 2, 2, 2}).Group(2).Strides(Dims{2, 2}).Transpose(),
      ConvSpec("1d_stride3", {1, 3, 7}, {3, 5, 4}).Strides(Dims{3}).NoBias().Transpose(),
      ConvSpec("2d_dilated", {1, 2, 4, 3}, {2, 3, 3, 2})
          .Strides(Dims{1, 2})
          .Pads(Dims{0, 1, 1, 0})
          .Dilations(Dims{2, 1})
          .Transpose(),
  };
  uint32_t seed = 100;
  for (const ConvSpec& s : specs) CheckFast(MakeConvCase(s, seed += 7), s.name);
}

// The few-pixel path's packed weights: packed at Create when the output size is known there,
// else on the first run that takes the path (a dynamic input): the same bits either way, on that
// run and on the runs after it, which reuse them.
TEST(ConvFast, FewPixelWeightsPackedOnFirstUseMatchPackedAtCreate) {
  const std::vector<ConvSpec> specs = {
      ConvSpec("grouped_few_pixels", {2, 64, 3, 2}, {64, 16, 3, 3}).Group(4).Pads(Dims{1, 1, 1, 1}),
      ConvSpec("1d_few_pixels", {1, 20, 6}, {32, 20, 3}).Pads(Dims{1, 1}),
      ConvSpec("2d_few_pixels_padded", {1, 16, 3, 4}, {24, 16, 3, 3}).Pads({2, 1, 0, 2}),
  };
  uint32_t seed = 300;
  for (const ConvSpec& s : specs) {
    SCOPED_TRACE(s.name);
    const FastCase c = MakeConvCase(s, seed += 7);
    auto at_create = c.make().ConstantInput(1).ConstantInput(2).RunsPerKernel(3).Run(c.inputs);
    ASSERT_TRUE(at_create.ok()) << at_create.status().message();
    auto on_first_use =
        c.make().ConstantInput(1).ConstantInput(2).UnknownShapes().RunsPerKernel(3).Run(c.inputs);
    ASSERT_TRUE(on_first_use.ok()) << on_first_use.status().message();
    ExpectSameBits(*at_create, *on_first_use, "packed on first use");
    auto reference = c.make().Reference().Run(c.inputs);
    ASSERT_TRUE(reference.ok()) << reference.status().message();
    const std::vector<float> f = Floats((*on_first_use)[0]);
    const std::vector<float> r = Floats((*reference)[0]);
    ASSERT_EQ(f.size(), r.size());
    for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(f[i], r[i], 1e-4 * (1 + std::abs(r[i])));
  }
}

// Large enough that the products split over the threads (the determinism check then compares a
// real split with the single-threaded result), on every path.
TEST(ConvFast, LargeConvsSplitOverThreadsWithTheSameBits) {
  const std::vector<ConvSpec> specs = {
      ConvSpec("columns", {1, 16, 64, 64}, {32, 16, 3, 3}).Pads(Dims{1, 1, 1, 1}),
      ConvSpec("pointwise", {1, 64, 48, 48}, {64, 64, 1, 1}),
      ConvSpec("depthwise", {2, 64, 64, 64}, {64, 1, 5, 5}).Group(64).Pads(Dims{2, 2, 2, 2}),
      ConvSpec("winograd_rows", {1, 32, 64, 64}, {32, 32, 1, 3}).Pads(Dims{0, 1, 0, 1}),
      ConvSpec("winograd_columns", {2, 32, 66, 40}, {32, 32, 3, 1}),
  };
  uint32_t seed = 200;
  for (const ConvSpec& s : specs) {
    FastCase c = MakeConvCase(s, seed += 7);
    CheckFast(c, s.name);
    fast::ThreadPool pool(2);
    auto split = RunFast(c, false, true, &pool);
    ASSERT_TRUE(split.ok()) << split.status().message();
    EXPECT_GT(pool.splits(), 0u) << s.name << ": the work was not split";
  }
}

// Winograd mixes a tile's 6 inputs, so one inf among them would make all 4 outputs NaN. Runs
// with inf, NaN or huge values (X, or a fed W) take the direct path: the fast result is NaN
// exactly where the reference is, inf (of the same sign) exactly where it is, and finite values
// match it, for the 1x3 and the 3x1 Conv.
TEST(ConvFast, WinogradLeavesNonFiniteAndHugeValuesToTheDirectPath) {
  struct Case {
    const char* name;
    Dims w;
    Dims pads;
  };
  const std::vector<Case> cases = {{"1x3", {8, 8, 1, 3}, {0, 1, 0, 1}}, {"3x1", {8, 8, 3, 1}, {}}};
  for (const Case& k : cases) {
    // 1e30 and 1e20 overflow nothing, but a tile mixes its 6 inputs: on Winograd's path the
    // outputs beside such a value would carry errors of about 1e-7 of it (1e23, 1e13).
    for (const float special : {std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN(), 3e38f, 1e30f, 1e20f}) {
      for (const bool constant_w : {true, false}) {
        std::vector<float> x = RandomUnit(size_t{1280}, 3);
        x[size_t{37}] = special;    // channel 0, row 2, column 5
        x[size_t{592}] = -special;  // channel 3, row 7, column 0
        const std::vector<float> w = RandomUnit(size_t{192}, 4);
        auto make = [&] {
          KernelRunner r("Conv", 11);
          if (!k.pads.empty()) r.IntsAttr("pads", k.pads);
          if (constant_w) r.ConstantInput(1);
          return r;
        };
        const std::vector<Value> inputs = {FloatTensor(ElementType::kFloat, {1, 8, 10, 16}, x),
                                           FloatTensor(ElementType::kFloat, k.w, w)};
        auto fast = make().Run(inputs);
        auto reference = make().Reference().Run(inputs);
        ASSERT_TRUE(fast.ok() && reference.ok()) << k.name;
        const auto f = (*fast)[0].tensor().data_as<float>();
        const auto r = (*reference)[0].tensor().data_as<float>();
        ASSERT_EQ(f.size(), r.size());
        size_t non_finite = 0;
        for (size_t i = 0; i < f.size(); ++i) {
          const std::string where = std::string(k.name) + " special " + std::to_string(special) +
                                    " output " + std::to_string(i);
          ASSERT_EQ(std::isnan(f[i]), std::isnan(r[i])) << where;
          if (std::isnan(r[i])) {
            ++non_finite;
            continue;
          }
          if (std::isinf(r[i])) ++non_finite;
          if (std::isinf(r[i]) || std::abs(r[i]) > 1e30f) {
            ASSERT_EQ(f[i], r[i]) << where;  // inf, or a huge sum of one huge term
          } else {
            ASSERT_NEAR(f[i], r[i], 1e-4 * (1 + std::abs(r[i]))) << where;
          }
        }
        if (!std::isfinite(special)) {
          EXPECT_GT(non_finite, 0u) << k.name;
        }
      }
    }
  }
}

TEST(ConvFast, OtherRanksAndTypesRunTheReferenceKernel) {
  const ConvSpec s3 = ConvSpec("3d", {1, 2, 3, 4, 5}, {3, 2, 2, 2, 2}).Pads(Dims{1, 0, 1, 0, 1, 0});
  FastCase c = MakeConvCase(s3, 5);
  c.same_as_reference = true;
  CheckFast(c, s3.name);
  // float16 takes the reference kernel: the same bits with reference_kernels on or off.
  // x is [2, 3, 5] (30 values), w [4, 3, 3] (36).
  const std::vector<float> x = RandomUnit(size_t{30}, 1), w = RandomUnit(size_t{36}, 2);
  auto make = [] { return KernelRunner("Conv", 11).IntsAttr("pads", {1, 1}); };
  const std::vector<Value> inputs = {FloatTensor(ElementType::kFloat16, {2, 3, 5}, x),
                                     FloatTensor(ElementType::kFloat16, {4, 3, 3}, w)};
  auto fast = make().ConstantInput(1).Run(inputs);
  auto reference = make().ConstantInput(1).Reference().Run(inputs);
  ASSERT_TRUE(fast.ok() && reference.ok());
  EXPECT_EQ(DescribeDifference((*reference)[0], (*fast)[0]), std::nullopt);
}

TEST(ConvFast, BadInputStillRefused) {
  // The fast kernel checks shapes with the same rule as the reference kernel.
  auto r =
      KernelRunner("Conv", 11).Run({RandomTensor({1, 3, 5, 5}, 1), RandomTensor({4, 2, 3, 3}, 2)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("W's dim 1"), std::string::npos) << r.status().message();
  auto big =
      KernelRunner("Conv", 11).Run({RandomTensor({1, 3, 2, 2}, 1), RandomTensor({4, 3, 3, 3}, 2)});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("larger than the padded input"), std::string::npos);
  // The im2col scratch is checked against the run budget before it is made.
  Limits small;
  small.max_run_bytes = 4096;
  auto over = KernelRunner("Conv", 11)
                  .IntsAttr("pads", {1, 1, 1, 1})
                  .WithLimits(small)
                  .Run({RandomTensor({1, 16, 8, 8}, 1), RandomTensor({4, 16, 3, 3}, 2)});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted) << over.status().message();
}

}  // namespace
}  // namespace idem::testing
