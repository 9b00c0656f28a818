#include "src/kernels/fast/vector_math.h"

#include <cstddef>
#include <cstring>

// clang-format off
#include "src/kernels/fast/hwy_config.h"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/kernels/fast/vector_math.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/kernels/fast/sleef_hwy-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace idem::fast::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// out = f(in) over whole vectors, then the tail through a zero-padded vector (its padding lanes
// are computed and dropped).
template <VF (*F)(DF, VF)>
void Map(const float* in, float* out, size_t n) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(F(d, hn::LoadU(d, in + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN float tail[hn::MaxLanes(DF())] = {};
    std::memcpy(tail, in + i, (n - i) * sizeof(float));
    hn::Store(F(d, hn::Load(d, tail)), d, tail);
    std::memcpy(out + i, tail, (n - i) * sizeof(float));
  }
}

VF ExpV(DF d, VF v) { return sleef_hwy::Exp(d, v); }
VF LogV(DF d, VF v) { return sleef_hwy::Log(d, v); }
VF TanhV(DF d, VF v) { return sleef_hwy::Tanh(d, v); }
VF SigmoidV(DF d, VF v) { return sleef_hwy::Sigmoid(d, v); }

}  // namespace

void ExpTarget(const float* in, float* out, size_t n) { Map<ExpV>(in, out, n); }
void LogTarget(const float* in, float* out, size_t n) { Map<LogV>(in, out, n); }
void TanhTarget(const float* in, float* out, size_t n) { Map<TanhV>(in, out, n); }
void SigmoidTarget(const float* in, float* out, size_t n) { Map<SigmoidV>(in, out, n); }

}  // namespace idem::fast::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace idem::fast {

HWY_EXPORT(ExpTarget);
HWY_EXPORT(LogTarget);
HWY_EXPORT(TanhTarget);
HWY_EXPORT(SigmoidTarget);

void Exp(std::span<const float> in, std::span<float> out) {
  HWY_DYNAMIC_DISPATCH(ExpTarget)(in.data(), out.data(), in.size());
}
void Log(std::span<const float> in, std::span<float> out) {
  HWY_DYNAMIC_DISPATCH(LogTarget)(in.data(), out.data(), in.size());
}
void Tanh(std::span<const float> in, std::span<float> out) {
  HWY_DYNAMIC_DISPATCH(TanhTarget)(in.data(), out.data(), in.size());
}
void Sigmoid(std::span<const float> in, std::span<float> out) {
  HWY_DYNAMIC_DISPATCH(SigmoidTarget)(in.data(), out.data(), in.size());
}

}  // namespace idem::fast
#endif  // HWY_ONCE
