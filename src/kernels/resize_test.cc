// Resize through KernelRunner: every version's inputs and attributes, output sizes (scales,
// sizes, keep_aspect_ratio_policy, axes), nearest against the spec's index formulas, linear /
// cubic / antialias against a float64 reference written from the spec (within the ONNX backend
// tolerances rtol 1e-3, atol 1e-5), element types, and bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "src/core/float_convert.h"
#include "src/kernels/schema_oracle_test.h"
#include "tests/kernel_runner.h"
#include "tests/kernel_test_util.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;

struct Case {
  int opset = 19;
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  float cubic_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation = 0.0f;
  bool antialias = false;
  std::vector<int64_t> axes;
  std::string policy = "stretch";
  std::vector<float> scales;  // or
  std::vector<int64_t> sizes;
  std::vector<float> roi;
};

KernelRunner Runner(const Case& c) {
  KernelRunner r("Resize", c.opset);
  r.StringAttr("mode", c.mode);
  if (c.opset >= 11) {
    r.StringAttr("coordinate_transformation_mode", c.coord);
    r.StringAttr("nearest_mode", c.nearest);
    r.FloatAttr("cubic_coeff_a", c.cubic_a);
    r.IntAttr("exclude_outside", c.exclude_outside ? 1 : 0);
    r.FloatAttr("extrapolation_value", c.extrapolation);
  }
  if (c.opset >= 18) {
    r.IntAttr("antialias", c.antialias ? 1 : 0);
    if (!c.axes.empty()) r.IntsAttr("axes", c.axes);
    r.StringAttr("keep_aspect_ratio_policy", c.policy);
  }
  return r;
}

std::vector<Value> Inputs(const Case& c, const Value& x) {
  if (c.opset == 10) return {x, F32(c.scales)};
  Value roi = c.roi.empty() ? (c.opset == 11 ? F32({}) : Value()) : F32(c.roi);
  if (!c.sizes.empty()) return {x, roi, c.opset == 11 ? F32({}) : Value(), I64(c.sizes)};
  return {x, roi, F32(c.scales)};
}

// Runs three ways (scales/sizes/roi constant; nothing constant; shapes unknown); all must agree,
// and with constant inputs the output shape must be known at planning.
Result<Value> ResizeAll(const Case& c, const Value& x) {
  std::vector<Value> in = Inputs(c, x);
  KernelRunner constant = Runner(c);
  for (size_t i = 1; i < in.size(); ++i) constant.ConstantInput(i);
  IDEM_ASSIGN_OR_RETURN(auto a, constant.Run(in));
  const Type& inferred = constant.inferred()[0];
  EXPECT_TRUE(inferred.shape().has_value());
  if (inferred.shape()) {
    for (const Dim& d : *inferred.shape()) EXPECT_TRUE(d.value.has_value());
  }
  IDEM_ASSIGN_OR_RETURN(auto b, Runner(c).Run(in));
  IDEM_ASSIGN_OR_RETURN(auto d, Runner(c).UnknownShapes().Run(in));
  EXPECT_FALSE(DescribeDifference(a[0], b[0]));
  EXPECT_FALSE(DescribeDifference(a[0], d[0]));
  return a[0];
}

// ---- A float64 reference written from the spec ------------------------------------------------

// Per-axis taps: for each output coordinate, (input index, weight) pairs, or extrapolation.
struct RefAxis {
  std::vector<std::vector<std::pair<int64_t, double>>> taps;
  std::vector<bool> outside;
};

double RefOriginal(const Case& c, double x, double scale, double out, double in, double length,
                   double roi_start, double roi_end) {
  if (c.coord == "asymmetric" || c.opset == 10) return x / scale;
  if (c.coord == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (c.coord == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (c.coord == "align_corners") return length == 1 ? 0.0 : x * (in - 1) / (length - 1);
  if (c.coord == "tf_crop_and_resize") {
    return out > 1 ? roi_start * (in - 1) + x * (roi_end - roi_start) * (in - 1) / (out - 1)
                   : 0.5 * (roi_start + roi_end) * (in - 1);
  }
  if (c.coord == "half_pixel_symmetric") {
    const double adjustment = out / (scale * in);
    const double offset = in / 2 * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

double Keys(double t, double a) {
  t = std::abs(t);
  if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

// `scale` is the axis's scale (1 means the coordinates are kept, as ONNX Runtime does);
// `length` the resized length align_corners divides by.
RefAxis RefTaps(const Case& c, int64_t in, int64_t out, double scale, double length,
                double roi_start, double roi_end) {
  RefAxis r;
  for (int64_t o = 0; o < out; ++o) {
    const double x = scale == 1.0
                         ? static_cast<double>(o)
                         : RefOriginal(c, static_cast<double>(o), scale, static_cast<double>(out),
                                       static_cast<double>(in), length, roi_start, roi_end);
    r.outside.push_back(c.coord == "tf_crop_and_resize" &&
                        (x < 0 || x > static_cast<double>(in - 1)));
    std::vector<std::pair<int64_t, double>> taps;
    auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    if (c.antialias && in == out) {
      taps.emplace_back(o, 1.0);  // as ONNX Runtime: an axis whose size stays is kept
    } else if (c.antialias) {
      const double stretch = std::max(1.0, 1.0 / scale);
      const double support = (c.mode == "linear" ? 1.0 : 2.0) * stretch;
      double total = 0;
      for (int64_t j = static_cast<int64_t>(std::floor(x - support)) - 1;
           j <= static_cast<int64_t>(std::ceil(x + support)) + 1; ++j) {
        const double d = (static_cast<double>(j) - x) / stretch;
        double w = c.mode == "linear" ? std::max(0.0, 1 - std::abs(d)) : Keys(d, c.cubic_a);
        if (std::abs(d) >= (c.mode == "linear" ? 1.0 : 2.0)) w = 0;
        if (w == 0) continue;
        if (j < 0 || j >= in) {
          if (c.exclude_outside) continue;
        }
        taps.emplace_back(clamp(j), w);
        total += w;
      }
      for (auto& t : taps) t.second /= total == 0 ? 1 : total;
    } else if (c.mode == "linear") {
      const double xc = std::clamp(x, 0.0, static_cast<double>(in - 1));
      const auto i0 = static_cast<int64_t>(std::floor(xc));
      const double f = xc - static_cast<double>(i0);
      taps.emplace_back(i0, 1 - f);
      taps.emplace_back(clamp(i0 + 1), f);
    } else {  // cubic
      const auto i0 = static_cast<int64_t>(std::floor(x));
      const double t = x - static_cast<double>(i0);
      double total = 0;
      for (int k = -1; k <= 2; ++k) {
        const int64_t j = i0 + k;
        const double w = Keys(t - k, c.cubic_a);
        if (c.exclude_outside && (j < 0 || j >= in)) continue;
        taps.emplace_back(clamp(j), w);
        total += w;
      }
      for (auto& p : taps) p.second /= total;
    }
    r.taps.push_back(std::move(taps));
  }
  return r;
}

// The reference output for float input `x` of `in_shape` resized to `out_shape` with per-axis
// `scales` and `lengths`.
std::vector<double> RefResize(const Case& c, const std::vector<float>& x,
                              const std::vector<int64_t>& in_shape,
                              const std::vector<int64_t>& out_shape,
                              const std::vector<double>& scales,
                              const std::vector<double>& lengths) {
  const size_t rank = in_shape.size();
  std::vector<RefAxis> axes;
  for (size_t d = 0; d < rank; ++d) {
    const double rs = c.roi.empty() ? 0.0 : c.roi[d];
    const double re = c.roi.empty() ? 1.0 : c.roi[rank + d];
    axes.push_back(RefTaps(c, in_shape[d], out_shape[d], scales[d], lengths[d], rs, re));
  }
  int64_t count = 1;
  for (int64_t v : out_shape) count *= v;
  std::vector<double> out(static_cast<size_t>(count));
  std::vector<int64_t> index(rank, 0);
  for (int64_t o = 0; o < count; ++o) {
    bool outside = false;
    for (size_t d = 0; d < rank; ++d) outside = outside || axes[d].outside[index[d]];
    double sum = 0;
    // Tensor product of the per-axis taps.
    std::function<void(size_t, int64_t, double)> walk = [&](size_t d, int64_t offset, double w) {
      if (d == rank) {
        sum += w * x[static_cast<size_t>(offset)];
        return;
      }
      int64_t stride = 1;
      for (size_t k = d + 1; k < rank; ++k) stride *= in_shape[k];
      for (const auto& [i, tw] : axes[d].taps[static_cast<size_t>(index[d])]) {
        walk(d + 1, offset + i * stride, w * tw);
      }
    };
    walk(0, 0, 1.0);
    out[static_cast<size_t>(o)] = outside ? c.extrapolation : sum;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

::testing::AssertionResult Close(const std::vector<float>& actual,
                                 const std::vector<double>& expected) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << actual.size() << " vs " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::abs(actual[i] - expected[i]) > 1e-5 + 1e-3 * std::abs(expected[i])) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << " vs " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// ---- Registry -------------------------------------------------------------------------------

TEST(ResizeRegistryTest, VersionsMatchLibonnxAndTheSpec) {
  for (int v : {10, 11, 13}) ExpectMatchesLibonnx("Resize", v);
  const auto& r = KernelRegistry::Default();
  std::vector<int> since;
  for (const KernelSchema* s : r.Versions("", "Resize")) since.push_back(s->since_version);
  EXPECT_EQ(since, (std::vector<int>{10, 11, 13, 18, 19}));
  for (int v : {18, 19}) {
    const KernelSchema* s = r.Resolve("", "Resize", v);
    EXPECT_EQ(TypeSet(*s, "T1").size(), 16u);
    EXPECT_EQ(TypeSet(*s, "T2"), TypeSet(*r.Resolve("", "Resize", 13), "T2"));
    EXPECT_EQ(std::set<std::string>(s->attributes.begin(), s->attributes.end()),
              (std::set<std::string>{"antialias", "axes", "coordinate_transformation_mode",
                                     "cubic_coeff_a", "exclude_outside", "extrapolation_value",
                                     "keep_aspect_ratio_policy", "mode", "nearest_mode"}));
  }
  EXPECT_TRUE(r.Resolve("", "Resize", 19)->foldable);
}

// ---- Output sizes ----------------------------------------------------------------------------

TEST(ResizeTest, OutputSizes) {
  Value x = Floats({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Case c;
  c.scales = {1, 1, 0.6f, 0.6f};  // floor(2 * 0.6) = 1, floor(4 * 0.6) = 2
  EXPECT_EQ(ShapeOf(ResizeAll(c, x).value()), (std::vector<int64_t>{1, 1, 1, 2}));
  c.scales = {1, 1, 1.5f, 2.25f};
  EXPECT_EQ(ShapeOf(ResizeAll(c, x).value()), (std::vector<int64_t>{1, 1, 3, 9}));
  c.scales = {};
  c.sizes = {1, 1, 3, 5};
  EXPECT_EQ(ShapeOf(ResizeAll(c, x).value()), (std::vector<int64_t>{1, 1, 3, 5}));
  // keep_aspect_ratio_policy over axes 2 and 3: sizes/in = 1.5 and 0.75.
  c.axes = {2, 3};
  c.sizes = {3, 3};
  c.policy = "not_larger";  // 0.75: round(1.5) = 2, 3
  EXPECT_EQ(ShapeOf(ResizeAll(c, x).value()), (std::vector<int64_t>{1, 1, 2, 3}));
  c.policy = "not_smaller";  // 1.5: 3, 6
  EXPECT_EQ(ShapeOf(ResizeAll(c, x).value()), (std::vector<int64_t>{1, 1, 3, 6}));
  // Negative axes; only the listed axes change.
  c.axes = {-1};
  c.sizes = {6};
  c.policy = "stretch";
  EXPECT_EQ(ShapeOf(ResizeAll(c, x).value()), (std::vector<int64_t>{1, 1, 2, 6}));
  c.sizes = {};
  c.scales = {0.5f};
  EXPECT_EQ(ShapeOf(ResizeAll(c, x).value()), (std::vector<int64_t>{1, 1, 2, 2}));
}

TEST(ResizeTest, SizesGiveShapesWithoutInputDims) {
  // With constant sizes the output shape is known even when the input's dims are not.
  Case c;
  c.sizes = {2, 5};
  KernelRunner r = Runner(c);
  ASSERT_TRUE(r.ConstantInput(3).UnknownShapes().Run(Inputs(c, Floats({1, 2}, {1, 2}))).ok());
  ASSERT_TRUE(r.inferred()[0].shape().has_value());
  EXPECT_EQ((*r.inferred()[0].shape())[0].value, 2);
  EXPECT_EQ((*r.inferred()[0].shape())[1].value, 5);
  // Rank unknown gives nothing; with the rank known (shapes given, sizes not constant) the dims
  // stay unknown.
  KernelRunner k = Runner(c);
  ASSERT_TRUE(k.Run(Inputs(c, Floats({1, 2}, {1, 2}))).ok());
  ASSERT_TRUE(k.inferred()[0].shape().has_value());
  EXPECT_FALSE((*k.inferred()[0].shape())[1].value.has_value());
  Case cs = c;
  cs.sizes = {};
  cs.scales = {2, 2};
  KernelRunner s = Runner(cs);
  ASSERT_TRUE(s.ConstantInput(2).Run(Inputs(cs, Floats({1, 2}, {1, 2}))).ok());
  EXPECT_EQ((*s.inferred()[0].shape())[1].value, 4);
}

TEST(ResizeTest, SameShapeIsTheInputItself) {
  Value x = Floats({1, 3}, {1, 2, 3});
  Case c;
  c.mode = "linear";
  c.scales = {1, 1.2f};  // floor(3 * 1.2) = 3: the shape does not change
  auto out = Runner(c).Run(Inputs(c, x)).value();
  EXPECT_TRUE(out[0].SharesStorageWith(x));
}

// ---- nearest ---------------------------------------------------------------------------------

// The input index of each output coordinate, from the spec's formulas in double (ties within
// 1e-6, as ONNX Runtime 1.30).
int64_t RefNearest(const Case& c, double x, int64_t in, double scale) {
  const double f = std::floor(x);
  int64_t i;
  if (c.opset == 10) {
    i = scale < 1 ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
  } else if (c.nearest == "floor") {
    i = static_cast<int64_t>(f);
  } else if (c.nearest == "ceil") {
    i = static_cast<int64_t>(std::ceil(x));
  } else if (std::abs(x - f - 0.5) <= 1e-6) {
    i = static_cast<int64_t>(f) + (c.nearest == "round_prefer_ceil" ? 1 : 0);
  } else {
    i = static_cast<int64_t>(std::round(x));
  }
  return std::clamp<int64_t>(i, 0, in - 1);
}

TEST(ResizeTest, NearestEveryModeAndCoordinate) {
  // Scales exact in float (7/4, 6/4, 10/4, 6/8, 2/8, 5/2), so no float error decides a tie.
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{4, 7}, {4, 6}, {4, 10},
                                                          {8, 6}, {8, 2}, {2, 5}};
  for (const char* coord : {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                            "align_corners", "asymmetric", "tf_half_pixel_for_nn"}) {
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
      for (const auto& [in, out] : sizes) {
        SCOPED_TRACE(std::string(coord) + " " + nearest + " " + std::to_string(in) + "->" +
                     std::to_string(out));
        Case c;
        c.coord = coord;
        c.nearest = nearest;
        c.sizes = {1, out};
        std::vector<float> data;
        for (int64_t i = 0; i < in; ++i) data.push_back(static_cast<float>(10 * i));
        const std::vector<float> got = Elements<float>(ResizeAll(c, Floats({1, in}, data)).value());
        ASSERT_EQ(got.size(), static_cast<size_t>(out));
        const double scale = static_cast<double>(out) / static_cast<double>(in);
        for (int64_t o = 0; o < out; ++o) {
          const double x = RefOriginal(c, static_cast<double>(o), scale, static_cast<double>(out),
                                       static_cast<double>(in), static_cast<double>(out), 0, 1);
          EXPECT_EQ(got[static_cast<size_t>(o)],
                    data[static_cast<size_t>(RefNearest(c, x, in, scale))])
              << "o = " << o << ", x = " << x;
        }
      }
    }
  }
}

TEST(ResizeTest, NearestVersionTenAndStrings) {
  // Resize-10: asymmetric; ceil when downsampling, truncation when upsampling.
  Case c;
  c.opset = 10;
  c.scales = {1, 2.5f};
  Value x = Floats({1, 4}, {0, 10, 20, 30});
  EXPECT_EQ(Elements<float>(ResizeAll(c, x).value()),
            (std::vector<float>{0, 0, 0, 10, 10, 20, 20, 20, 30, 30}));  // trunc(o / 2.5)
  c.scales = {1, 0.5f};
  EXPECT_EQ(Elements<float>(ResizeAll(c, x).value()), (std::vector<float>{0, 20}));  // ceil(2o)
  EXPECT_STATUS(KernelRunner("Resize", 10).StringAttr("mode", "cubic").Run({x, F32({1, 2})}),
                StatusCode::kInvalidModel, "attribute 'mode' is 'cubic'");
  // Any element type moves by nearest: strings, bool, int4 need no arithmetic.
  Case s;
  s.scales = {2};
  Value str = Value::MakeStringTensor({2}, {"a", "b"}).value();
  Value resized = ResizeAll(s, str).value();
  auto strings = resized.tensor().strings();
  EXPECT_EQ(std::vector<std::string>(strings.begin(), strings.end()),
            (std::vector<std::string>{"a", "a", "b", "b"}));
  Value b = MakeTensorOf<uint8_t>(E::kBool, {2}, {1, 0});
  EXPECT_EQ(Elements<uint8_t>(ResizeAll(s, b).value()), (std::vector<uint8_t>{1, 1, 0, 0}));
  Case lin = s;
  lin.mode = "linear";
  EXPECT_STATUS(Runner(lin).Run(Inputs(lin, str)), StatusCode::kInvalidModel,
                "mode 'linear' interpolates numbers, not tensor(string)");
}

TEST(ResizeTest, TfCropAndResizeExtrapolates) {
  // The official test's roi: 0.4..0.6 of a 4x4 image resized to 3x3, and an roi reaching past
  // the image, where extrapolation_value is used.
  std::vector<float> data;
  for (int i = 1; i <= 16; ++i) data.push_back(static_cast<float>(i));
  Value x = Floats({1, 1, 4, 4}, data);
  Case c;
  c.mode = "linear";
  c.coord = "tf_crop_and_resize";
  c.extrapolation = 10.0f;
  c.sizes = {1, 1, 3, 3};
  for (const std::vector<float>& roi : {std::vector<float>{0, 0, 0.4f, 0.6f, 1, 1, 0.6f, 0.8f},
                                        std::vector<float>{0, 0, -0.5f, 0.2f, 1, 1, 0.6f, 1.4f}}) {
    c.roi = roi;
    const std::vector<float> got = Elements<float>(ResizeAll(c, x).value());
    const std::vector<double> want =
        RefResize(c, data, {1, 1, 4, 4}, {1, 1, 3, 3}, {1, 1, 0.75, 0.75}, {1, 1, 3, 3});
    EXPECT_TRUE(Close(got, want));
  }
  c.roi = {0, 0, -0.5f, 0.2f, 1, 1, 0.6f, 1.4f};
  EXPECT_EQ(Elements<float>(ResizeAll(c, x).value())[0], 10.0f);
  c.roi = {0.1f, 0.2f};  // two values for four axes
  EXPECT_STATUS(Runner(c).Run(Inputs(c, x)), StatusCode::kInvalidArgument,
                "roi has 2 values; tf_crop_and_resize needs 2 per input dim (8)");
}

// ---- linear, cubic, antialias against the float64 reference ---------------------------------

TEST(ResizeTest, InterpolationMatchesTheFloat64Reference) {
  std::mt19937 rng(17);
  auto pick = [&](auto const& v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  const std::vector<std::string> coords = {"half_pixel", "half_pixel_symmetric",
                                           "pytorch_half_pixel", "align_corners", "asymmetric"};
  const std::vector<float> scale_choices = {0.5f, 0.75f, 1.5f, 2.0f, 2.5f, 3.0f, 0.25f};
  int checked = 0;
  for (int k = 0; k < 300; ++k) {
    Case c;
    c.mode = pick(std::vector<std::string>{"linear", "cubic"});
    c.coord = pick(coords);
    c.antialias = k % 3 == 0;
    c.exclude_outside = k % 4 == 1;
    c.cubic_a = pick(std::vector<float>{-0.75f, -0.5f});
    const auto rank = static_cast<size_t>(1 + k % 3);
    std::vector<int64_t> in_shape;
    for (size_t d = 0; d < rank; ++d) {
      in_shape.push_back(std::uniform_int_distribution<int64_t>(1, 6)(rng));
    }
    std::vector<int64_t> out_shape(rank);
    std::vector<double> scales(rank), lengths(rank);
    const bool use_sizes = k % 2 == 0;
    for (size_t d = 0; d < rank; ++d) {
      if (use_sizes) {
        out_shape[d] = std::uniform_int_distribution<int64_t>(1, 12)(rng);
        c.sizes.push_back(out_shape[d]);
        const float s = static_cast<float>(out_shape[d]) / static_cast<float>(in_shape[d]);
        scales[d] = s;
        lengths[d] = static_cast<double>(out_shape[d]);
      } else {
        const float s = pick(scale_choices);
        c.scales.push_back(s);
        out_shape[d] = static_cast<int64_t>(s * static_cast<float>(in_shape[d]));
        scales[d] = s;
        lengths[d] = static_cast<double>(s) * static_cast<double>(in_shape[d]);
      }
    }
    int64_t in_count = 1, out_count = 1;
    for (size_t d = 0; d < rank; ++d) {
      in_count *= in_shape[d];
      out_count *= out_shape[d];
    }
    if (out_count == 0 || out_shape == in_shape) continue;
    std::vector<float> data;
    for (int64_t i = 0; i < in_count; ++i) {
      data.push_back(std::uniform_real_distribution<float>(-5, 5)(rng));
    }
    SCOPED_TRACE(c.mode + " " + c.coord + (c.antialias ? " antialias" : "") +
                 (c.exclude_outside ? " exclude_outside" : "") + " case " + std::to_string(k));
    const std::vector<float> got = Elements<float>(ResizeAll(c, Floats(in_shape, data)).value());
    EXPECT_TRUE(Close(got, RefResize(c, data, in_shape, out_shape, scales, lengths)));
    ++checked;
  }
  EXPECT_GT(checked, 200);
}

TEST(ResizeTest, AlignCornersWithScalesUsesTheFractionalLength) {
  // The official test_resize_downsample_scales_linear_align_corners: 2x4 scaled by 0.6 gives
  // 1x2; align_corners divides by 4 * 0.6 - 1 = 1.4, so x = 3 / 1.4 and the value is 3.142857.
  Case c;
  c.mode = "linear";
  c.coord = "align_corners";
  c.scales = {1, 1, 0.6f, 0.6f};
  Value x = Floats({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_TRUE(Close(Elements<float>(ResizeAll(c, x).value()), {1.0, 1.0 + 15.0 / 7.0}));
}

// ---- Element types ---------------------------------------------------------------------------

TEST(ResizeTest, IntegerAndNarrowFloatTypes) {
  Case c;
  c.mode = "linear";
  c.scales = {1.5f};
  // uint8: the float result truncated (as ONNX Runtime): 0, 127.5 -> 127, 255.
  Value u8 = MakeTensorOf<uint8_t>(E::kUint8, {2}, {0, 255});
  EXPECT_EQ(Elements<uint8_t>(ResizeAll(c, u8).value()), (std::vector<uint8_t>{0, 127, 255}));
  Value i8 = MakeTensorOf<int8_t>(E::kInt8, {2}, {-128, 127});
  EXPECT_EQ(Elements<int8_t>(ResizeAll(c, i8).value()), (std::vector<int8_t>{-128, 0, 127}));
  // cubic overshoots: integer results saturate to the type's range.
  Case cu = c;
  cu.mode = "cubic";
  cu.scales = {3.0f};
  Value steps = MakeTensorOf<uint8_t>(E::kUint8, {4}, {0, 0, 255, 255});
  const std::vector<uint8_t> cubic = Elements<uint8_t>(ResizeAll(cu, steps).value());
  const std::vector<double> ref = RefResize(cu, {0, 0, 255, 255}, {4}, {12}, {3.0}, {12.0});
  ASSERT_EQ(cubic.size(), ref.size());
  int saturated = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (ref[i] < 0 || ref[i] > 255) ++saturated;
    EXPECT_NEAR(cubic[i], std::clamp(std::trunc(ref[i]), 0.0, 255.0), 1.0) << i;
  }
  EXPECT_GT(saturated, 0);  // the overshoot was there to saturate
  // float16, bfloat16 and double follow the float reference.
  Case h = c;
  h.scales = {2.5f};
  const std::vector<float> values = {1.0f, -2.0f, 3.5f};
  const std::vector<double> want = RefResize(h, values, {3}, {7}, {2.5}, {7.5});
  std::vector<uint16_t> half, bf;
  for (float v : values) {
    half.push_back(FloatToHalf(v));
    bf.push_back(FloatToBf16(v));
  }
  std::vector<float> got_h, got_b;
  for (uint16_t v :
       Elements<uint16_t>(ResizeAll(h, MakeTensorOf(E::kFloat16, {3}, half)).value())) {
    got_h.push_back(HalfToFloat(v));
  }
  for (uint16_t v : Elements<uint16_t>(ResizeAll(h, MakeTensorOf(E::kBfloat16, {3}, bf)).value())) {
    got_b.push_back(Bf16ToFloat(v));
  }
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got_h[i], want[i], 2e-3 * std::abs(want[i]) + 1e-3) << i;
    EXPECT_NEAR(got_b[i], want[i], 1e-2 * std::abs(want[i]) + 1e-2) << i;
  }
  Value d = MakeTensorOf<double>(E::kDouble, {3}, {1.0, -2.0, 3.5});
  const std::vector<double> got_d = Elements<double>(ResizeAll(h, d).value());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got_d[i], want[i], 1e-6) << i;
}

// ---- Bad input -------------------------------------------------------------------------------

TEST(ResizeTest, BadScalesSizesAndAttributes) {
  Value x = Floats({1, 4}, {1, 2, 3, 4});
  Case c;
  c.scales = {1, 2};
  auto run = [&](std::vector<Value> in) { return Runner(c).Run(std::move(in)); };
  EXPECT_STATUS(run({x, Value(), F32({1, 2}), I64({1, 8})}), StatusCode::kInvalidArgument,
                "scales and sizes are both given");
  EXPECT_STATUS(run({x, Value(), Value(), Value()}), StatusCode::kInvalidArgument,
                "neither scales nor sizes is given");
  EXPECT_STATUS(run({x, Value(), F32({2})}), StatusCode::kInvalidArgument,
                "scales has 1 values; it must have one per input dim (2)");
  EXPECT_STATUS(run({x, Value(), F32({1, 0})}), StatusCode::kInvalidArgument,
                "scale 0 must be positive");
  EXPECT_STATUS(run({x, Value(), F32({1, NAN})}), StatusCode::kInvalidArgument,
                "must be positive and finite");
  EXPECT_STATUS(run({x, Value(), Value(), I64({1, -3})}), StatusCode::kInvalidArgument,
                "size -3 is negative");
  Value empty = Floats({1, 0}, {});
  EXPECT_STATUS(run({empty, Value(), Value(), I64({1, 3})}), StatusCode::kInvalidArgument,
                "axis 1 has no elements; it cannot be resized to 3");
  EXPECT_STATUS(run({Floats({}, {1}), Value(), F32({})}), StatusCode::kInvalidArgument,
                "at least one dim");
  Case a = c;
  a.axes = {1, 1};
  EXPECT_STATUS(Runner(a).Run({x, Value(), F32({2, 2})}), StatusCode::kInvalidArgument, "repeated");
  a.axes = {2};
  EXPECT_STATUS(Runner(a).Run({x, Value(), F32({2})}), StatusCode::kInvalidArgument, "outside");
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"mode", "bilinear"},
                                                        {"coordinate_transformation_mode", "x"},
                                                        {"nearest_mode", "up"},
                                                        {"keep_aspect_ratio_policy", "fit"}}) {
    EXPECT_STATUS(KernelRunner("Resize", 19).StringAttr(name, value).Run({x, Value(), F32({1, 2})}),
                  StatusCode::kInvalidModel, fmt::format("attribute '{}' is '{}'", name, value));
  }
  EXPECT_STATUS(KernelRunner("Resize", 18)
                    .StringAttr("coordinate_transformation_mode", "half_pixel_symmetric")
                    .Run({x, Value(), F32({1, 2})}),
                StatusCode::kInvalidModel, "half_pixel_symmetric");
  EXPECT_STATUS(KernelRunner("Resize", 19).IntAttr("antialias", 2).Run({x, Value(), F32({1, 2})}),
                StatusCode::kInvalidModel, "attribute 'antialias' is 2");
  EXPECT_STATUS(KernelRunner("Resize", 13).IntAttr("antialias", 1).Run({x, Value(), F32({1, 2})}),
                StatusCode::kInvalidModel, "unknown attribute 'antialias'");
  // sizes must be int64, scales float.
  Value sizes32 = MakeTensorOf<int32_t>(E::kInt32, {2}, {1, 8});
  EXPECT_FALSE(run({x, Value(), Value(), sizes32}).ok());
  Value scales64 = MakeTensorOf<double>(E::kDouble, {2}, {1, 2});
  EXPECT_FALSE(run({x, Value(), scales64}).ok());
}

TEST(ResizeTest, HugeOutputsAreRefusedBeforeAllocating) {
  Value x = Floats({1, 4}, {1, 2, 3, 4});
  Case c;
  EXPECT_STATUS(Runner(c).Run({x, Value(), Value(), I64({1, int64_t{1} << 41})}),
                StatusCode::kResourceExhausted, "exceeds");
  EXPECT_STATUS(Runner(c).Run({x, Value(), F32({1, 1e30f})}), StatusCode::kResourceExhausted,
                "too large");
  // Found at planning when the scales are constant.
  EXPECT_STATUS(Runner(c).ConstantInput(2).Run({x, Value(), F32({1, 1e30f})}),
                StatusCode::kResourceExhausted, "too large");
  Limits limits;
  // A 32x32 float output is 4096 bytes (its per-axis position maps 64 * 16 bytes); 32x36 is over.
  limits.max_tensor_bytes = 4096;
  c.mode = "linear";
  Value square = Floats({4, 4}, std::vector<float>(16, 1.0f));
  EXPECT_STATUS(Runner(c).WithLimits(limits).Run({square, Value(), F32({8, 9})}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
  auto fits = Runner(c).WithLimits(limits).Run({square, Value(), F32({8, 8})});
  EXPECT_TRUE(fits.ok()) << fits.status().ToString();
  // An antialiasing downscale of a long axis needs many taps: they are checked too.
  limits.max_tensor_bytes = 100000;
  Value wide = Floats({1, 20000}, std::vector<float>(20000, 1.0f));
  Case aa = c;
  aa.antialias = true;
  EXPECT_STATUS(Runner(aa).WithLimits(limits).Run({wide, Value(), Value(), I64({1, 1})}),
                StatusCode::kResourceExhausted, "max_tensor_bytes");
  EXPECT_TRUE(Runner(c).WithLimits(limits).Run({wide, Value(), Value(), I64({1, 1})}).ok());
  // A huge dim of an empty output builds nothing.
  Value e = Floats({0, 4}, {});
  EXPECT_EQ(ShapeOf(Runner(c).Run({e, Value(), Value(), I64({0, int64_t{1} << 50})}).value()[0]),
            (std::vector<int64_t>{0, int64_t{1} << 50}));
}

}  // namespace
}  // namespace idem::testing
