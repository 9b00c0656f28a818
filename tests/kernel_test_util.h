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

inline std::vector<double> Doubles(const Value& v) {
  const auto d = ReadDoubles(v.tensor());
  return {d.begin(), d.end()};
}
inline std::vector<int64_t> Shape(const Value& v) {
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
