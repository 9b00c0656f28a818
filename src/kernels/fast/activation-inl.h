// The fused activation (packed_gemm.h's Activation) on Highway vectors, per target (Highway's
// -inl.h convention: include it after hwy/highway.h and sleef_hwy-inl.h inside a file compiled
// for every target, outside any namespace). Shared by the kernels that apply it in their own
// epilogue (the packed GEMM, Winograd's output transform), so each gives the bits of the others.

// Per-target part: compiled once for every target (the toggle below re-enables it each time).
#if defined(IDEM_SRC_KERNELS_FAST_ACTIVATION_INL_H_TARGET) == defined(HWY_TARGET_TOGGLE)
#ifdef IDEM_SRC_KERNELS_FAST_ACTIVATION_INL_H_TARGET
#undef IDEM_SRC_KERNELS_FAST_ACTIVATION_INL_H_TARGET
#else
#define IDEM_SRC_KERNELS_FAST_ACTIVATION_INL_H_TARGET
#endif

#include <limits>

#include "src/kernels/fast/packed_gemm.h"

HWY_BEFORE_NAMESPACE();
namespace idem::fast::HWY_NAMESPACE {
namespace activation_inl {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Comparisons and selects only (no Min/Max, whose NaN rules differ between targets): NaN
// propagates through every activation, and the bits are the same everywhere. Each is the plain
// formula with one IEEE rounding per operation (HardSigmoid: alpha * x, then + beta, unfused),
// so fusing an activation into the product gives the bits of applying it afterwards.
HWY_INLINE VF ActivateKind(DF d, VF x, const Activation& act);
HWY_INLINE VF Activate(DF d, VF x, const Activation& act) {
  x = ActivateKind(d, x, act);
  if (act.lower != -std::numeric_limits<float>::infinity()) {
    const VF lo = hn::Set(d, act.lower);
    x = hn::IfThenElse(hn::Lt(x, lo), lo, x);
  }
  if (act.scaled) x = hn::Mul(x, hn::Set(d, act.scale));
  if (act.shifted) x = hn::Add(x, hn::Set(d, act.shift));
  return x;
}
HWY_INLINE VF ActivateKind(DF d, VF x, const Activation& act) {
  switch (act.kind) {
    case Activation::Kind::kNone:
      return x;
    case Activation::Kind::kRelu:
      return hn::IfThenZeroElse(hn::Lt(x, hn::Zero(d)), x);
    case Activation::Kind::kLeakyRelu:
      return hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(x, hn::Set(d, act.alpha)), x);
    case Activation::Kind::kClip: {
      const VF lo = hn::Set(d, act.alpha);
      const VF hi = hn::Set(d, act.beta);
      return hn::IfThenElse(hn::Lt(x, lo), lo, hn::IfThenElse(hn::Gt(x, hi), hi, x));
    }
    case Activation::Kind::kHardSigmoid: {
      const VF y = hn::Add(hn::Mul(hn::Set(d, act.alpha), x), hn::Set(d, act.beta));
      const VF one = hn::Set(d, 1.0f);
      return hn::IfThenZeroElse(hn::Lt(y, hn::Zero(d)), hn::IfThenElse(hn::Gt(y, one), one, y));
    }
    case Activation::Kind::kSigmoid:
      return sleef_hwy::Sigmoid(d, x);
    case Activation::Kind::kHardSwish: {
      const VF lo = hn::Set(d, act.beta);
      const VF hi = hn::Set(d, act.gamma);
      VF t = hn::Add(x, hn::Set(d, act.alpha));
      t = hn::IfThenElse(hn::Lt(t, lo), lo, hn::IfThenElse(hn::Gt(t, hi), hi, t));
      return hn::Div(hn::Mul(x, t), hn::Set(d, act.delta));
    }
  }
  return x;
}

}  // namespace activation_inl
using activation_inl::Activate;
}  // namespace idem::fast::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
