// Helpers shared by the kernel families' KernelRunner tests (src/kernels/*_test.cc): float
// tensors of any floating element type, reading results back, and running a node the three ways
// the planner can see it.
#ifndef IDEM_TESTS_KERNEL_TEST_UTIL_H_
#define IDEM_TESTS_KERNEL_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <vector>

#include "src/core/float_convert.h"
#include "src/kernels/op.h"
#include "tests/kernel_runner.h"
#include "tests/test_models.h"

namespace idem::testing {

inline int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t v : dims) n *= v;
  return n;
}

// A tensor of element type `type` (float16/bfloat16/float/double) holding `values` (rounded).
inline Value FloatTensor(ElementType type, std::vector<int64_t> shape,
                         const std::vector<float>& values) {
  switch (type) {
    case ElementType::kFloat16: {
      std::vector<uint16_t> bits;
      for (float v : values) bits.push_back(FloatToHalf(v));
      return MakeTensorOf(type, std::move(shape), bits);
    }
    case ElementType::kBfloat16: {
      std::vector<uint16_t> bits;
      for (float v : values) bits.push_back(FloatToBf16(v));
      return MakeTensorOf(type, std::move(shape), bits);
    }
    case ElementType::kDouble:
      return MakeTensorOf(type, std::move(shape),
                          std::vector<double>(values.begin(), values.end()));
    default:
      return MakeTensorOf(type, std::move(shape), values);
  }
}

// A tensor's elements as T (the tensor must hold T).
template <class T>
std::vector<T> Elements(const Value& v) {
  auto s = v.tensor().data_as<T>();
  return {s.begin(), s.end()};
}

// 1-D tensors of int64 and float.
inline Value I64(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return MakeTensorOf<int64_t>(ElementType::kInt64, {n}, std::move(v));
}
inline Value F32(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Floats({n}, std::move(v));
}

// Deterministic pseudo-random floats (a 32-bit LCG): RandomGrid gives multiples of 1/1024 in
// [-4, 4) (sums of a few stay exact in float), RandomUnit values in [-1, 1).
inline std::vector<float> RandomGrid(size_t n, uint32_t seed) {
  std::vector<float> out(n);
  uint32_t s = seed;
  for (float& v : out) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>((s >> 8) % 8192) / 1024.0f - 4.0f;
  }
  return out;
}
inline std::vector<float> RandomUnit(size_t n, uint32_t seed) {
  std::vector<float> out(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float& v : out) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return out;
}

inline std::vector<double> Doubles(const Value& v) {
  const auto d = ReadDoubles(v.tensor());
  return {d.begin(), d.end()};
}
inline std::vector<int64_t> ShapeOf(const Value& v) {
  return {v.tensor().shape().begin(), v.tensor().shape().end()};
}

// Runs the node three ways (shapes known, shapes unknown, every input a constant) and checks
// the results agree bit for bit; returns the first.
inline std::vector<Value> RunAllWays(const std::function<KernelRunner()>& make,
                                     const std::vector<Value>& inputs, size_t outputs = 1) {
  auto full = make().Run(inputs, outputs);
  EXPECT_TRUE(full.ok()) << full.status().message();
  if (!full.ok()) return {};
  auto unknown = make().UnknownShapes().Run(inputs, outputs);
  EXPECT_TRUE(unknown.ok()) << unknown.status().message();
  KernelRunner constant = make();
  for (size_t i = 0; i < inputs.size(); ++i) constant.ConstantInput(i);
  auto folded = constant.Run(inputs, outputs);
  EXPECT_TRUE(folded.ok()) << folded.status().message();
  for (size_t o = 0; o < outputs && unknown.ok() && folded.ok(); ++o) {
    EXPECT_EQ(DescribeDifference((*full)[o], (*unknown)[o]), std::nullopt);
    EXPECT_EQ(DescribeDifference((*full)[o], (*folded)[o]), std::nullopt);
  }
  return std::move(full).value();
}

}  // namespace idem::testing

#endif  // IDEM_TESTS_KERNEL_TEST_UTIL_H_
