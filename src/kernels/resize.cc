// Resize (10, 11, 13, 18, 19).
//
// Output sizes: floor(dim * scale) (in float, as ONNX Runtime), or `sizes` (from 18 adjusted by
// keep_aspect_ratio_policy: one scale, the min or max of sizes / dim, and round(scale * dim)),
// over the `axes` attribute's axes from 18. Sizes are checked against the limits before anything
// is allocated; an output shaped like the input is the input itself (as ONNX Runtime).
// Coordinates follow ONNX Runtime's float formulas for every coordinate_transformation_mode
// (asymmetric before 11), except that align_corners takes the resized length as scale * dim when
// scales are given (the ONNX reference, which the official tests follow; ONNX Runtime fails two
// of them). An axis whose scale is exactly 1 keeps its coordinates (as ONNX Runtime, which also
// ignores its roi there).
// nearest: nearest_mode (before 11: ceil when downsampling, truncation otherwise), a coordinate
// within 1e-6 of a half counting as a tie (as ONNX Runtime 1.30), clamped to the input; any
// element type. linear and cubic: numeric types only, separable passes (one per resized axis,
// shrinking axes first) of taps computed as ONNX Runtime computes them: linear on the coordinate
// clamped to the input, cubic (Keys, cubic_coeff_a) with edge taps clamped or, with
// exclude_outside, dropped and the rest renormalized, and with antialias the Pillow-style filters
// stretched by 1 / scale when downsampling (an axis whose size stays is kept). Sums are
// accumulated in float for float, float16 and bfloat16 inputs (rounded once at the end) and in
// double for double and integer inputs, in a fixed order; integer results are truncated toward
// zero (as ONNX Runtime) and saturated to the type's range. tf_crop_and_resize gives
// extrapolation_value where the coordinate falls outside the input.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>

#include "src/core/float_convert.h"
#include "src/kernels/axis_gather.h"
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {
namespace {

using E = ElementType;

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNN,
  kTfCropAndResize,
};
enum class Nearest { kSimple, kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class Policy { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttrs {
  int version = 13;
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  float cubic_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation = 0.0f;
  bool antialias = false;
  std::vector<int64_t> axes;  // the attribute (18+); empty: every axis
  Policy policy = Policy::kStretch;
};

// What the scales/sizes/roi inputs ask for, over the resized axes.
struct Request {
  Ints axes;                                   // normalized, one per scale or size
  std::optional<ScratchVector<float>> scales;  // one per axis in `axes`
  std::optional<Ints> sizes;
  ScratchVector<float> roi;  // 2 * rank: starts then ends (0 and 1 where not given)
};

bool IsNumeric(E t) {
  switch (t) {
    case E::kString:
    case E::kBool:
    case E::kComplex64:
    case E::kComplex128:
      return false;
    default:
      return true;
  }
}

const char* ModeName(Mode m) {
  return m == Mode::kNearest ? "nearest" : m == Mode::kLinear ? "linear" : "cubic";
}

// ---- Parsing ------------------------------------------------------------------------------------

Result<ResizeAttrs> ParseResize(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  ResizeAttrs a;
  a.version = ctx.version;
  std::string mode;
  if (ctx.version == 10) {
    IDEM_ASSIGN_OR_RETURN(mode, r.StringIn("mode", "nearest", {"nearest", "linear"}));
  } else {
    IDEM_ASSIGN_OR_RETURN(mode, r.StringIn("mode", "nearest", {"nearest", "linear", "cubic"}));
  }
  a.mode = mode == "nearest" ? Mode::kNearest : mode == "linear" ? Mode::kLinear : Mode::kCubic;
  if (ctx.version == 10) {
    a.coord = Coord::kAsymmetric;
    a.nearest = Nearest::kSimple;
    return a;
  }
  std::string coord;
  if (ctx.version >= 19) {
    IDEM_ASSIGN_OR_RETURN(coord, r.StringIn("coordinate_transformation_mode", "half_pixel",
                                            {"half_pixel", "half_pixel_symmetric",
                                             "pytorch_half_pixel", "align_corners", "asymmetric",
                                             "tf_half_pixel_for_nn", "tf_crop_and_resize"}));
  } else {
    // tf_half_pixel_for_nn left the list in 13; ONNX Runtime still accepts it, so does idem.
    IDEM_ASSIGN_OR_RETURN(
        coord, r.StringIn("coordinate_transformation_mode", "half_pixel",
                          {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                           "tf_half_pixel_for_nn", "tf_crop_and_resize"}));
  }
  a.coord = coord == "half_pixel"             ? Coord::kHalfPixel
            : coord == "half_pixel_symmetric" ? Coord::kHalfPixelSymmetric
            : coord == "pytorch_half_pixel"   ? Coord::kPytorchHalfPixel
            : coord == "align_corners"        ? Coord::kAlignCorners
            : coord == "asymmetric"           ? Coord::kAsymmetric
            : coord == "tf_half_pixel_for_nn" ? Coord::kTfHalfPixelForNN
                                              : Coord::kTfCropAndResize;
  IDEM_ASSIGN_OR_RETURN(std::string nearest,
                        r.StringIn("nearest_mode", "round_prefer_floor",
                                   {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}));
  a.nearest = nearest == "round_prefer_floor"  ? Nearest::kRoundPreferFloor
              : nearest == "round_prefer_ceil" ? Nearest::kRoundPreferCeil
              : nearest == "floor"             ? Nearest::kFloor
                                               : Nearest::kCeil;
  IDEM_ASSIGN_OR_RETURN(a.cubic_a, r.Float("cubic_coeff_a", -0.75f));
  IDEM_ASSIGN_OR_RETURN(int64_t exclude, r.IntIn("exclude_outside", 0, {0, 1}));
  a.exclude_outside = exclude == 1;
  IDEM_ASSIGN_OR_RETURN(a.extrapolation, r.Float("extrapolation_value", 0.0f));
  if (ctx.version >= 18) {
    IDEM_ASSIGN_OR_RETURN(int64_t antialias, r.IntIn("antialias", 0, {0, 1}));
    a.antialias = antialias == 1;
    IDEM_ASSIGN_OR_RETURN(a.axes, r.Ints("axes", std::vector<int64_t>{}));
    IDEM_ASSIGN_OR_RETURN(std::string policy, r.StringIn("keep_aspect_ratio_policy", "stretch",
                                                         {"stretch", "not_larger", "not_smaller"}));
    a.policy = policy == "stretch"      ? Policy::kStretch
               : policy == "not_larger" ? Policy::kNotLarger
                                        : Policy::kNotSmaller;
  }
  return a;
}

int ScalesInput(const ResizeAttrs& a) { return a.version == 10 ? 1 : 2; }

// Checks and expands what the inputs give (null: not given; an empty tensor counts as not given).
Result<Request> MakeRequest(const ResizeAttrs& a, int64_t rank, const ScratchVector<float>* scales,
                            const Ints* sizes, const ScratchVector<float>* roi) {
  if (rank == 0) return InvalidArgument("Resize: the input must have at least one dim");
  Request q;
  if (!a.axes.empty()) {
    IDEM_ASSIGN_OR_RETURN(q.axes, NormalizeAxes(a.axes, rank, "Resize: attribute 'axes' value"));
  } else {
    q.axes.resize(static_cast<size_t>(rank));
    std::iota(q.axes.begin(), q.axes.end(), int64_t{0});
  }
  const size_t n = q.axes.size();
  const bool has_scales = scales != nullptr && !scales->empty();
  const bool has_sizes = sizes != nullptr && !sizes->empty();
  if (has_scales == has_sizes) {
    return InvalidArgument(has_scales ? "Resize: scales and sizes are both given; give only one"
                                      : "Resize: neither scales nor sizes is given");
  }
  const char* per = a.axes.empty() ? "input dim" : "listed axis";
  if (has_scales) {
    if (scales->size() != n) {
      return InvalidArgument(fmt::format(
          "Resize: scales has {} values; it must have one per {} ({})", scales->size(), per, n));
    }
    for (float s : *scales) {
      if (!(s > 0) || !std::isfinite(s)) {
        return InvalidArgument(fmt::format("Resize: scale {} must be positive and finite", s));
      }
    }
    q.scales = *scales;
  } else {
    if (sizes->size() != n) {
      return InvalidArgument(fmt::format(
          "Resize: sizes has {} values; it must have one per {} ({})", sizes->size(), per, n));
    }
    for (int64_t s : *sizes) {
      if (s < 0) return InvalidArgument(fmt::format("Resize: size {} is negative", s));
    }
    q.sizes = *sizes;
  }
  q.roi.assign(static_cast<size_t>(2 * rank), 0.0f);
  std::fill(q.roi.begin() + rank, q.roi.end(), 1.0f);
  if (a.coord == Coord::kTfCropAndResize && roi != nullptr && !roi->empty()) {
    if (roi->size() != 2 * n) {
      return InvalidArgument(
          fmt::format("Resize: roi has {} values; tf_crop_and_resize needs 2 per {} ({})",
                      roi->size(), per, 2 * n));
    }
    for (size_t j = 0; j < n; ++j) {
      q.roi[static_cast<size_t>(q.axes[j])] = (*roi)[j];
      q.roi[static_cast<size_t>(rank + q.axes[j])] = (*roi)[n + j];
    }
  }
  return q;
}

// ---- The shape rule -----------------------------------------------------------------------------

Result<int64_t> SizeFromScale(float scale, int64_t dim, size_t axis) {
  const float size = scale * static_cast<float>(dim);
  if (!(size < 9.2233720368547758e18f)) {
    return Status(
        StatusCode::kResourceExhausted,
        fmt::format("Resize: axis {} of size {} scaled by {} is too large", axis, dim, scale));
  }
  return static_cast<int64_t>(size);
}

// The scale keep_aspect_ratio_policy gives (every resized dim known).
float PolicyScale(const ResizeAttrs& a, const Request& q, std::span<const int64_t> dims) {
  float scale = a.policy == Policy::kNotLarger ? std::numeric_limits<float>::max()
                                               : std::numeric_limits<float>::min();
  for (size_t j = 0; j < q.axes.size(); ++j) {
    const int64_t in = dims[j];
    const float s = in == 0 ? 1.0f : static_cast<float>((*q.sizes)[j]) / static_cast<float>(in);
    scale = a.policy == Policy::kNotLarger ? std::min(scale, s) : std::max(scale, s);
  }
  return scale;
}

template <class D>
Result<DimsOf<D>> ResizeShape(const ResizeAttrs& a, const Request& q, std::span<const D> x) {
  DimsOf<D> out(x.begin(), x.end());
  const size_t n = q.axes.size();
  if (q.scales) {
    for (size_t j = 0; j < n; ++j) {
      const auto d = static_cast<size_t>(q.axes[j]);
      const std::optional<int64_t> v = KnownDim(x[d]);
      if (!v) {
        out[d] = MakeDim<D>(std::nullopt);
        continue;
      }
      IDEM_ASSIGN_OR_RETURN(int64_t size, SizeFromScale((*q.scales)[j], *v, d));
      out[d] = MakeDim<D>(size);
    }
    return out;
  }
  Ints dims(n, -1);
  bool all_known = true;
  for (size_t j = 0; j < n; ++j) {
    const auto d = static_cast<size_t>(q.axes[j]);
    const std::optional<int64_t> v = KnownDim(x[d]);
    if (v) {
      dims[j] = *v;
      if (*v == 0 && (*q.sizes)[j] != 0) {
        return InvalidArgument(fmt::format(
            "Resize: axis {} has no elements; it cannot be resized to {}", d, (*q.sizes)[j]));
      }
    } else {
      all_known = false;
    }
  }
  if (a.policy == Policy::kStretch) {
    for (size_t j = 0; j < n; ++j) out[static_cast<size_t>(q.axes[j])] = MakeDim<D>((*q.sizes)[j]);
    return out;
  }
  if (!all_known) {
    for (size_t j = 0; j < n; ++j) out[static_cast<size_t>(q.axes[j])] = MakeDim<D>(std::nullopt);
    return out;
  }
  const float scale = PolicyScale(a, q, dims);
  for (size_t j = 0; j < n; ++j) {
    const auto d = static_cast<size_t>(q.axes[j]);
    const float size = std::round(scale * static_cast<float>(dims[j]));
    if (!(size < 9.2233720368547758e18f)) {
      return Status(
          StatusCode::kResourceExhausted,
          fmt::format("Resize: axis {} of size {} scaled by {} is too large", d, dims[j], scale));
    }
    out[d] = MakeDim<D>(static_cast<int64_t>(size));
  }
  return out;
}

// The scale of every axis once the output shape is known (1 where not resized).
ScratchVector<float> AxisScales(const ResizeAttrs& a, const Request& q, std::span<const int64_t> in,
                                std::span<const int64_t> out) {
  ScratchVector<float> scales(in.size(), 1.0f);
  if (q.scales) {
    for (size_t j = 0; j < q.axes.size(); ++j) {
      scales[static_cast<size_t>(q.axes[j])] = (*q.scales)[j];
    }
    return scales;
  }
  if (a.policy != Policy::kStretch) {
    Ints dims;
    for (int64_t d : q.axes) dims.push_back(in[static_cast<size_t>(d)]);
    const float scale = PolicyScale(a, q, dims);
    for (int64_t d : q.axes) scales[static_cast<size_t>(d)] = scale;
    return scales;
  }
  for (size_t d = 0; d < in.size(); ++d) {
    scales[d] = in[d] == 0 ? 1.0f : static_cast<float>(out[d]) / static_cast<float>(in[d]);
  }
  return scales;
}

// ---- Coordinates (ONNX Runtime's float formulas) -----------------------------------------------

float Original(Coord c, float x, float scale, float len_out, float len_in, float roi_start,
               float roi_end) {
  switch (c) {
    case Coord::kAsymmetric:
      return x / scale;
    case Coord::kPytorchHalfPixel:
      return len_out > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case Coord::kTfHalfPixelForNN:
      return (x + 0.5f) / scale;
    case Coord::kAlignCorners:
      return len_out == 1 ? 0.0f : x * (len_in - 1) / (len_out - 1);
    case Coord::kTfCropAndResize: {
      const double orig = len_out > 1
                              ? roi_start * (len_in - 1) +
                                    (x * (roi_end - roi_start) * (len_in - 1)) / (len_out - 1)
                              : 0.5 * (roi_start + roi_end) * (len_in - 1);
      return static_cast<float>(orig);
    }
    case Coord::kHalfPixelSymmetric: {
      const float output_width = scale * len_in;
      const float adjustment = len_out / output_width;
      const float center = len_in / 2;
      const float offset = center * (1 - adjustment);
      const double orig = offset + (x + 0.5) / scale - 0.5;
      return static_cast<float>(orig);
    }
    case Coord::kHalfPixel:
      break;
  }
  return ((x + 0.5f) / scale) - 0.5f;
}

int64_t NearestPixel(Nearest m, float x, bool downsample) {
  switch (m) {
    case Nearest::kSimple:
      return downsample ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
    case Nearest::kRoundPreferCeil:
    case Nearest::kRoundPreferFloor:
      break;
    case Nearest::kFloor:
      return static_cast<int64_t>(std::floor(x));
    case Nearest::kCeil:
      return static_cast<int64_t>(std::ceil(x));
  }
  // As ONNX Runtime 1.30: a coordinate within 1e-6 of a half is a tie, so float error in
  // (x + 0.5) / scale - 0.5 does not decide which pixel a tie takes.
  const float f = std::floor(x);
  if (std::fabs(x - f - 0.5f) <= 1e-6f) {
    return static_cast<int64_t>(f) + (m == Nearest::kRoundPreferCeil ? 1 : 0);
  }
  return static_cast<int64_t>(std::round(x));
}

// A float coordinate as an index candidate, kept far from int64's limits (huge coordinates only
// arise from extreme roi values and are clamped to the input anyway).
float Bounded(float x) {
  if (std::isnan(x)) return 0.0f;
  return std::clamp(x, -1e15f, 1e15f);
}

// ---- Per-axis taps ------------------------------------------------------------------------------

// For each output coordinate of one axis: its input taps (index, weight) and whether the
// coordinate falls outside the input (tf_crop_and_resize's extrapolation).
struct AxisTaps {
  ScratchVector<size_t> begin;  // out + 1 offsets into index/weight
  Ints index;
  ScratchVector<float> weight;
  ScratchVector<bool> outside;
};

struct AxisGeometry {
  int64_t in;
  int64_t out;
  float scale;
  float roi_start;
  float roi_end;
  // The resized length align_corners divides by: with a scales input, scale * in (it may be
  // fractional, as in the ONNX reference, which the official tests follow; ONNX Runtime and the
  // spec's words use `out`, and so does tf_crop_and_resize here); with sizes, `out`.
  float length;
};

float CoordOf(const ResizeAttrs& a, const AxisGeometry& g, int64_t o) {
  if (g.scale == 1.0f) return static_cast<float>(o);
  return Bounded(Original(a.coord, static_cast<float>(o), g.scale,
                          a.coord == Coord::kAlignCorners ? g.length : static_cast<float>(g.out),
                          static_cast<float>(g.in), g.roi_start, g.roi_end));
}

bool Outside(const ResizeAttrs& a, float x, int64_t in) {
  return a.coord == Coord::kTfCropAndResize && (x < 0 || x > static_cast<float>(in - 1));
}

Ints NearestMap(const ResizeAttrs& a, const AxisGeometry& g) {
  Ints map(static_cast<size_t>(g.out));
  for (int64_t o = 0; o < g.out; ++o) {
    if (g.scale == 1.0f) {
      map[static_cast<size_t>(o)] = std::min(o, g.in - 1);
      continue;
    }
    const float x = CoordOf(a, g, o);
    if (Outside(a, x, g.in)) {
      map[static_cast<size_t>(o)] = -1;
      continue;
    }
    map[static_cast<size_t>(o)] =
        std::clamp<int64_t>(NearestPixel(a.nearest, x, g.scale < 1), 0, g.in - 1);
  }
  return map;
}

std::array<float, 4> CubicCoeffs(float s, float a) {
  const float t = std::abs(s);
  return {((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
          ((a + 2) * t - (a + 3)) * t * t + 1,
          ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
          ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a};
}

float AntialiasFilter(Mode mode, float x, float a) {
  x = std::abs(x);
  if (mode == Mode::kLinear) return x < 1.0f ? 1.0f - x : 0.0f;
  if (x < 1.0f) return ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1;
  if (x < 2.0f) return (((x - 5.0f) * x + 8.f) * x - 4.f) * a;
  return 0.0f;
}

AxisTaps MakeTaps(const ResizeAttrs& a, const AxisGeometry& g) {
  AxisTaps t;
  t.begin.reserve(static_cast<size_t>(g.out) + 1);
  t.outside.resize(static_cast<size_t>(g.out));
  const int64_t last = g.in - 1;
  auto add = [&](int64_t index, float weight) {
    t.index.push_back(index);
    t.weight.push_back(weight);
  };
  for (int64_t o = 0; o < g.out; ++o) {
    t.begin.push_back(t.index.size());
    if (a.antialias) {
      const float rscale = g.scale;
      const float fscale = 1.0f / rscale;
      const float support_size = a.mode == Mode::kLinear ? 2.0f : 4.0f;
      const float support = fscale >= 1.0f ? (support_size * 0.5f) * fscale : support_size * 0.5f;
      const auto window = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
      const float inv_scale = fscale >= 1.0f ? 1.0f / fscale : 1.0f;
      const float center = 0.5f + (fscale == 1.0f ? static_cast<float>(o) : CoordOf(a, g, o));
      t.outside[static_cast<size_t>(o)] = Outside(a, center - 0.5f, g.in);
      const auto xmin_real = static_cast<int64_t>(std::floor(center - support + 0.5f));
      int64_t xmax_real = static_cast<int64_t>(std::floor(center + support + 0.5f));
      xmax_real = xmin_real + std::clamp<int64_t>(xmax_real - xmin_real, 0, window);
      const int64_t xmin_cut = std::clamp<int64_t>(xmin_real, 0, g.in);
      const int64_t xmax_cut = std::clamp<int64_t>(xmax_real, 0, g.in);
      const int64_t xmin = a.exclude_outside ? xmin_cut : xmin_real;
      const int64_t count = (a.exclude_outside ? xmax_cut : xmax_real) - xmin;
      ScratchVector<float> w(static_cast<size_t>(std::max<int64_t>(count, 1)), 0.0f);
      float total = 0.0f;
      for (int64_t x = 0; x < count; ++x) {
        w[static_cast<size_t>(x)] = AntialiasFilter(
            a.mode, (static_cast<float>(x + xmin) - center + 0.5f) * inv_scale, a.cubic_a);
        total += w[static_cast<size_t>(x)];
      }
      if (!a.exclude_outside && xmin_cut < xmax_cut) {
        // Taps outside the input count for the edge taps.
        const int64_t neg = std::clamp<int64_t>(-xmin, 0, count - 1);
        for (int64_t x = 0; x < neg; ++x) w[static_cast<size_t>(neg)] += w[static_cast<size_t>(x)];
        const int64_t beyond = std::clamp<int64_t>(count + xmin - g.in, 0, count - 1);
        for (int64_t x = count - beyond; x < count; ++x) {
          w[static_cast<size_t>(count - beyond - 1)] += w[static_cast<size_t>(x)];
        }
        if ((neg | beyond) > 0) {
          for (int64_t x = 0; x < xmax_cut - xmin_cut; ++x) {
            w[static_cast<size_t>(x)] = w[static_cast<size_t>(x + neg)];
          }
        }
      }
      const float inv_total = total == 0.0f ? 1.0f : 1.0f / total;
      for (int64_t x = 0; x < xmax_cut - xmin_cut; ++x) {
        add(xmin_cut + x, w[static_cast<size_t>(x)] * inv_total);
      }
      continue;
    }
    const float x = CoordOf(a, g, o);
    t.outside[static_cast<size_t>(o)] = Outside(a, x, g.in);
    if (a.mode == Mode::kLinear) {
      const float xc = std::max(0.0f, std::min(x, static_cast<float>(last)));
      const int64_t i1 = std::min(static_cast<int64_t>(xc), last);
      const int64_t i2 = std::min(i1 + 1, last);
      if (i1 == i2) {
        add(i1, 0.5f);
        add(i2, 0.5f);
      } else {
        add(i1, std::fabs(xc - static_cast<float>(i2)));
        add(i2, std::fabs(xc - static_cast<float>(i1)));
      }
      continue;
    }
    const auto xi = static_cast<int64_t>(std::floor(x));
    const std::array<float, 4> c = CubicCoeffs(x - static_cast<float>(xi), a.cubic_a);
    float sum = 1.0f;
    std::array<float, 4> w = c;
    if (a.exclude_outside) {
      sum = 0.0f;
      for (int j = 0; j < 4; ++j) {
        const int64_t idx = xi - 1 + j;
        w[static_cast<size_t>(j)] = (idx < 0 || idx >= g.in) ? 0.0f : c[static_cast<size_t>(j)];
        sum += w[static_cast<size_t>(j)];
      }
    }
    for (int j = 0; j < 4; ++j) {
      const int64_t idx = std::clamp<int64_t>(xi - 1 + j, 0, last);
      add(idx, w[static_cast<size_t>(j)] / sum);
    }
  }
  t.begin.push_back(t.index.size());
  return t;
}

// ---- Element conversion -------------------------------------------------------------------------

template <class T>
T SaturatingTrunc(double v) {
  if (std::isnan(v)) return T{0};
  v = std::trunc(v);
  if (v <= static_cast<double>(std::numeric_limits<T>::min())) {
    return std::numeric_limits<T>::min();
  }
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  return static_cast<T>(v);
}

// The compute type of a numeric element type's interpolation.
template <class T>
using Acc = std::conditional_t<std::is_same_v<T, double> || std::is_integral_v<T>, double, float>;

template <class T>
Acc<T> ToAcc(T v) {
  if constexpr (kIsHalfLike<T>) {
    return v.ToFloat();
  } else {
    return static_cast<Acc<T>>(v);
  }
}

template <class T>
T FromAcc(Acc<T> v) {
  if constexpr (kIsHalfLike<T>) {
    return T::FromFloat(v);
  } else if constexpr (std::is_integral_v<T>) {
    return SaturatingTrunc<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// The extrapolation value as an element of `type`.
axis_gather::Fill FillOf(E type, float v) {
  axis_gather::Fill f;
  auto put = [&](const auto& x) {
    f.bytes.resize(sizeof(x));
    std::memcpy(f.bytes.data(), &x, sizeof(x));
  };
  switch (type) {
    case E::kString:
      return f;
    case E::kBool:
      put(static_cast<uint8_t>(v != 0.0f ? 1 : 0));
      return f;
    case E::kComplex64:
      put(std::array<float, 2>{v, 0.0f});
      return f;
    case E::kComplex128:
      put(std::array<double, 2>{v, 0.0});
      return f;
    default:
      break;
  }
  (void)DispatchNumeric(type, "Resize", [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (kIsHalfLike<T>) {
      put(T::FromFloat(v).bits);
    } else if constexpr (std::is_integral_v<T>) {
      put(SaturatingTrunc<T>(v));
    } else {
      put(static_cast<T>(v));
    }
    return Status();
  });
  return f;
}

// ---- The kernel ---------------------------------------------------------------------------------

template <class T>
Status Interpolate(const ResizeAttrs& a, RunContext& ctx, const Tensor& x,
                   std::span<const int64_t> out_shape, std::span<const AxisGeometry> geometry,
                   std::byte* out) {
  using C = Acc<T>;
  const size_t rank = x.rank();
  Ints shape(x.shape().begin(), x.shape().end());
  // The axes that change, shrinking ones first (so no intermediate exceeds the input or output).
  // As ONNX Runtime, an axis keeps its values when its scale is 1 and, with antialias, whenever
  // its size does not change (its coordinates still decide tf_crop_and_resize's extrapolation).
  ScratchVector<size_t> order;
  ScratchVector<ScratchVector<bool>> outside(rank);
  for (size_t d = 0; d < rank; ++d) {
    const AxisGeometry& g = geometry[d];
    if (g.scale == 1.0f && g.in == g.out) continue;
    if (a.antialias && g.in == g.out) {
      if (a.coord == Coord::kTfCropAndResize) outside[d] = MakeTaps(a, g).outside;
      continue;
    }
    order.push_back(d);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t l, size_t r) {
    return static_cast<double>(geometry[l].out) / static_cast<double>(geometry[l].in) <
           static_cast<double>(geometry[r].out) / static_cast<double>(geometry[r].in);
  });
  auto count_of = [](std::span<const int64_t> s) {
    int64_t n = 1;
    for (int64_t v : s) n *= v;
    return n;
  };
  const int64_t in_count = x.element_count();
  IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(in_count) * sizeof(C)));
  // Working buffers are left uninitialized: every element is written before it is read.
  std::unique_ptr<C[]> cur(new C[static_cast<size_t>(in_count)]);
  int64_t cur_count = in_count;
  const std::byte* p = x.data().data();
  for (int64_t i = 0; i < in_count; ++i) cur[static_cast<size_t>(i)] = ToAcc(LoadElement<T>(p, i));
  for (size_t d : order) {
    // The taps of an antialiasing downscale grow with in / out: bound them by the budget too.
    const AxisGeometry& g = geometry[d];
    if (a.antialias) {
      const double stretch = std::max(1.0, 1.0 / static_cast<double>(g.scale));
      const double per_output =
          2.0 * std::ceil((a.mode == Mode::kLinear ? 1.0 : 2.0) * stretch) + 1;
      const double tap_bytes =
          per_output * static_cast<double>(g.out) * (sizeof(int64_t) + sizeof(float));
      if (!(tap_bytes < 1.8e19)) {
        return Status(StatusCode::kResourceExhausted,
                      fmt::format("Resize: the filter taps of axis {} are too many", d));
      }
      IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(tap_bytes)));
    }
    const AxisTaps taps = MakeTaps(a, g);
    outside[d] = taps.outside;
    const int64_t outer = count_of(std::span<const int64_t>(shape).first(d));
    const int64_t inner = count_of(std::span<const int64_t>(shape).subspan(d + 1));
    const int64_t n_in = shape[d];
    const int64_t n_out = geometry[d].out;
    const int64_t next_count = outer * n_out * inner;
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(next_count) * sizeof(C)));
    std::unique_ptr<C[]> next(new C[static_cast<size_t>(next_count)]);
    // Each output is the sum of its taps in tap order (the same order for every element).
    for (int64_t b = 0; b < outer; ++b) {
      const C* src = cur.get() + b * n_in * inner;
      C* dst = next.get() + b * n_out * inner;
      for (int64_t o = 0; o < n_out; ++o) {
        const size_t first = taps.begin[static_cast<size_t>(o)];
        const size_t end = taps.begin[static_cast<size_t>(o) + 1];
        C* row = dst + o * inner;
        if (inner == 1) {
          C sum{0};
          for (size_t k = first; k < end; ++k) {
            sum += static_cast<C>(taps.weight[k]) * src[taps.index[k]];
          }
          *row = sum;
          continue;
        }
        std::fill(row, row + inner, C{0});
        for (size_t k = first; k < end; ++k) {
          const C w = static_cast<C>(taps.weight[k]);
          const C* s = src + taps.index[k] * inner;
          for (int64_t i = 0; i < inner; ++i) row[i] += w * s[i];
        }
      }
    }
    cur = std::move(next);
    cur_count = next_count;
    shape[d] = n_out;
  }
  // tf_crop_and_resize: coordinates outside the input give extrapolation_value.
  if (a.coord == Coord::kTfCropAndResize) {
    const C fill = static_cast<C>(a.extrapolation);
    for (size_t d = 0; d < rank; ++d) {
      if (outside[d].empty()) continue;
      const int64_t outer = count_of(out_shape.first(d));
      const int64_t inner = count_of(out_shape.subspan(d + 1));
      for (int64_t b = 0; b < outer; ++b) {
        for (int64_t o = 0; o < out_shape[d]; ++o) {
          if (!outside[d][static_cast<size_t>(o)]) continue;
          C* row = cur.get() + (b * out_shape[d] + o) * inner;
          std::fill(row, row + inner, fill);
        }
      }
    }
  }
  for (int64_t i = 0; i < cur_count; ++i) {
    StoreElement<T>(out, i, FromAcc<T>(cur[static_cast<size_t>(i)]));
  }
  return {};
}

// Reads the float values of a scales or roi input (null when absent).
std::optional<ScratchVector<float>> FloatsOf(std::span<const Value* const> inputs, size_t i) {
  if (i >= inputs.size() || inputs[i] == nullptr) return std::nullopt;
  ScratchVector<float> out;
  for (double v : ReadDoubles(inputs[i]->tensor())) out.push_back(static_cast<float>(v));
  return out;
}

Status RunResize(const ResizeAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) {
  const Tensor& x = inputs[0]->tensor();
  const auto rank = static_cast<int64_t>(x.rank());
  const std::optional<ScratchVector<float>> scales =
      FloatsOf(inputs, static_cast<size_t>(ScalesInput(a)));
  std::optional<ScratchVector<float>> roi;
  std::optional<Ints> sizes;
  if (a.version >= 11) {
    roi = FloatsOf(inputs, 1);
    if (inputs.size() > 3 && inputs[3] != nullptr) {
      const Ints read = ReadInt64s(inputs[3]->tensor());
      sizes.emplace(read.begin(), read.end());
    }
  }
  IDEM_ASSIGN_OR_RETURN(Request q, MakeRequest(a, rank, scales ? &*scales : nullptr,
                                               sizes ? &*sizes : nullptr, roi ? &*roi : nullptr));
  IDEM_ASSIGN_OR_RETURN(Ints out_shape, ResizeShape<int64_t>(a, q, x.shape()));
  if (std::equal(out_shape.begin(), out_shape.end(), x.shape().begin(), x.shape().end())) {
    outputs[0] = *inputs[0];  // as ONNX Runtime: the same shape is the input itself
    return {};
  }
  const E type = x.element_type();
  if (a.mode != Mode::kNearest && !IsNumeric(type)) {
    return InvalidArgument(fmt::format("Resize: mode '{}' interpolates numbers, not tensor({})",
                                       ModeName(a.mode), ElementTypeName(type)));
  }
  IDEM_ASSIGN_OR_RETURN(uint64_t count, axis_gather::CheckOutput(ctx, type, out_shape));
  const ScratchVector<float> axis_scales = AxisScales(a, q, x.shape(), out_shape);
  ScratchVector<AxisGeometry> geometry;
  for (int64_t d = 0; d < rank; ++d) {
    const float scale = axis_scales[static_cast<size_t>(d)];
    const int64_t out = out_shape[static_cast<size_t>(d)];
    geometry.push_back(
        {x.shape()[d], out, scale, q.roi[static_cast<size_t>(d)],
         q.roi[static_cast<size_t>(rank + d)],
         q.scales ? scale * static_cast<float>(x.shape()[d]) : static_cast<float>(out)});
  }
  if (a.mode == Mode::kNearest || count == 0) {
    ScratchVector<Ints> maps;
    if (count > 0) {
      for (const AxisGeometry& g : geometry) maps.push_back(NearestMap(a, g));
    }
    IDEM_ASSIGN_OR_RETURN(
        outputs[0], axis_gather::Gather(ctx, x, out_shape, maps, FillOf(type, a.extrapolation)));
    return {};
  }
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Value result, AllocateTensor(ctx, type, out_shape, &out));
  IDEM_RETURN_IF_ERROR(DispatchNumeric(type, "Resize", [&](auto tag) -> Status {
    return Interpolate<decltype(tag)>(a, ctx, x, out_shape, geometry, out);
  }));
  outputs[0] = std::move(result);
  return {};
}

// ---- Inference ----------------------------------------------------------------------------------

Result<Inference> InferResize(const ResizeAttrs& a, const Facts& facts) {
  const E type = facts.element_type(0);
  if (a.mode != Mode::kNearest && !IsNumeric(type)) {
    return InvalidModel(fmt::format("Resize: mode '{}' interpolates numbers, not tensor({})",
                                    ModeName(a.mode), ElementTypeName(type)));
  }
  const auto& x = facts.shape(0);
  if (!x) {
    // Constant sizes over every axis (no axes attribute, stretch) give the shape anyway.
    const std::optional<std::vector<int64_t>> sizes =
        a.version >= 11 && facts.has(3) ? facts.constant_ints(3) : std::nullopt;
    const Value* scales = facts.constant(static_cast<size_t>(ScalesInput(a)));
    const bool no_scales = !facts.has(static_cast<size_t>(ScalesInput(a))) ||
                           (scales != nullptr && scales->tensor().element_count() == 0);
    if (sizes && !sizes->empty() && no_scales && a.axes.empty() && a.policy == Policy::kStretch &&
        std::all_of(sizes->begin(), sizes->end(), [](int64_t v) { return v >= 0; })) {
      std::vector<Dim> dims;
      for (int64_t v : *sizes) dims.push_back(Dim{v, {}});
      return OneOutput(TensorType(type, std::move(dims)));
    }
    return OneOutput(TensorType(type, std::nullopt));
  }
  const auto rank = static_cast<int64_t>(x->size());
  std::vector<Dim> unknown(x->size());
  auto floats = [&](size_t i) -> std::optional<ScratchVector<float>> {
    const Value* v = facts.constant(i);
    if (v == nullptr || !v->is_tensor()) return std::nullopt;
    ScratchVector<float> out;
    for (double d : ReadDoubles(v->tensor())) out.push_back(static_cast<float>(d));
    return out;
  };
  const auto scales_input = static_cast<size_t>(ScalesInput(a));
  std::optional<ScratchVector<float>> scales, roi;
  std::optional<Ints> sizes;
  if (facts.has(scales_input)) {
    scales = floats(scales_input);
    if (!scales) return OneOutput(TensorType(type, unknown));
  }
  if (a.version >= 11 && facts.has(3)) {
    const std::optional<std::vector<int64_t>> known = facts.constant_ints(3);
    if (!known) return OneOutput(TensorType(type, unknown));
    sizes.emplace(known->begin(), known->end());
  }
  if (a.version >= 11 && a.coord == Coord::kTfCropAndResize && facts.has(1)) {
    roi = floats(1);
    if (!roi) return OneOutput(TensorType(type, unknown));
  }
  IDEM_ASSIGN_OR_RETURN(Request q, MakeRequest(a, rank, scales ? &*scales : nullptr,
                                               sizes ? &*sizes : nullptr, roi ? &*roi : nullptr));
  IDEM_ASSIGN_OR_RETURN(std::vector<Dim> dims, ResizeShape<Dim>(a, q, std::span<const Dim>(*x)));
  return OneOutput(TensorType(type, std::move(dims)));
}

Result<std::unique_ptr<Kernel>> CreateResize(const ResizeAttrs& a, const Facts&) {
  return MakeFunctionKernel(a, RunResize);
}

KernelSchema ResizeSchema(int version) {
  KernelSchema s;
  s.op_type = "Resize";
  s.since_version = version;
  std::vector<E> t = {E::kUint8,  E::kUint16, E::kUint32, E::kUint64,    E::kInt8,
                      E::kInt16,  E::kInt32,  E::kInt64,  E::kFloat16,   E::kFloat,
                      E::kDouble, E::kString, E::kBool,   E::kComplex64, E::kComplex128};
  if (version >= 13) t.insert(t.begin() + 8, E::kBfloat16);
  using A = FormalParameter::Arity;
  if (version == 10) {
    s.inputs = {{"X", "T"}, {"scales", "tensor(float)"}};
    s.outputs = {{"Y", "T"}};
    s.constraints = {{"T", TensorTypes(t)}, {"tensor(float)", {Type::Tensor(E::kFloat)}}};
    s.attributes = {"mode"};
  } else {
    const A optional = version >= 13 ? A::kOptional : A::kSingle;
    s.inputs = {{"X", "T1"},
                {"roi", "T2", optional},
                {"scales", "tensor(float)", optional},
                {"sizes", "tensor(int64)", A::kOptional}};
    s.outputs = {{"Y", "T1"}};
    s.constraints = {{"T1", TensorTypes(t)},
                     {"T2", TensorTypes(FloatTypes(false))},
                     {"tensor(float)", {Type::Tensor(E::kFloat)}},
                     {"tensor(int64)", {Type::Tensor(E::kInt64)}}};
    s.attributes = {"coordinate_transformation_mode",
                    "cubic_coeff_a",
                    "exclude_outside",
                    "extrapolation_value",
                    "mode",
                    "nearest_mode"};
    if (version >= 18) {
      for (const char* n : {"antialias", "axes", "keep_aspect_ratio_policy"}) {
        s.attributes.push_back(n);
      }
    }
  }
  s.foldable = true;
  DefineOp<ResizeAttrs>(s, ParseResize, InferResize, CreateResize);
  return s;
}

}  // namespace

void RegisterResizeKernels(KernelRegistry& registry) {
  for (int v : {10, 11, 13, 18, 19}) registry.Register(ResizeSchema(v));
}

}  // namespace idem
