// Helpers of the fast-kernel tests (src/kernels/*_fast_test.cc): each runs a node on its fast
// kernel and on its reference kernel (SessionOptions::reference_kernels) through KernelRunner and
// checks, for one case,
//   1. the fast result is within the stated tolerance of the reference kernel's;
//   2. the fast result has the same bits with the weights known as constants (packed at Create)
//      and fed at run time (packed per run, or read in place);
//   3. the same bits on a second run, with 2 and 3 intra-op threads, and on every SIMD target
//      this machine has (fast::ScopedSimdTarget).
#ifndef IDEM_TESTS_FAST_TEST_UTIL_H_
#define IDEM_TESTS_FAST_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "src/kernels/fast/simd.h"
#include "src/kernels/fast/thread_pool.h"
#include "tests/kernel_runner.h"
#include "tests/kernel_test_util.h"

namespace idem::testing {

inline Value RandomTensor(std::vector<int64_t> shape, uint32_t seed) {
  const size_t n = static_cast<size_t>(Count(shape));
  return MakeTensorOf(ElementType::kFloat, std::move(shape), RandomUnit(n, seed));
}

// The same tensor with every element replaced by its magnitude (a null Value stays null).
inline Value Abs(const Value& v) {
  if (v.is_null() || !v.is_tensor() || v.tensor().element_type() != ElementType::kFloat) return v;
  std::vector<float> values(v.tensor().data_as<float>().begin(), v.tensor().data_as<float>().end());
  for (float& x : values) x = std::abs(x);
  return MakeTensorOf(ElementType::kFloat, ShapeOf(v), values);
}

inline std::vector<float> Floats(const Value& v) {
  return {v.tensor().data_as<float>().begin(), v.tensor().data_as<float>().end()};
}

struct FastCase {
  std::function<KernelRunner()> make;  // the node
  std::vector<Value> inputs;
  size_t outputs = 1;
  std::vector<size_t> weights;  // inputs that are initializers in a model (W, B, ...)
  // |fast - reference| <= atol + rtol * |reference| + mtol * magnitude, where magnitude is the
  // reference kernel's result on the inputs' magnitudes (the sum of |terms| of a linear op's
  // sums; set `linear`), else 0.
  double atol = 0.0;
  double rtol = 0.0;
  double mtol = 0.0;
  bool linear = false;
  // Expect the fast result to be bit-identical to the reference (cases the fast kernels hand to
  // the reference kernel).
  bool same_as_reference = false;
};

inline Result<std::vector<Value>> RunFast(const FastCase& c, bool reference, bool constants,
                                          const fast::TaskRunner* threads = nullptr,
                                          const std::vector<Value>* inputs = nullptr) {
  KernelRunner runner = c.make();
  runner.Reference(reference).Threads(threads);
  if (constants) {
    for (size_t i : c.weights) runner.ConstantInput(i);
  }
  return runner.Run(inputs != nullptr ? *inputs : c.inputs, c.outputs);
}

inline void ExpectSameBits(const std::vector<Value>& a, const std::vector<Value>& b,
                           const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t o = 0; o < a.size(); ++o) {
    if (a[o].is_null() || b[o].is_null()) {
      EXPECT_EQ(a[o].is_null(), b[o].is_null()) << what << ": output " << o;
      continue;
    }
    EXPECT_EQ(DescribeDifference(a[o], b[o]), std::nullopt) << what << ": output " << o;
  }
}

inline void CheckFast(const FastCase& c, const std::string& name) {
  SCOPED_TRACE(name);
  auto fast = RunFast(c, false, true);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  auto reference = RunFast(c, true, true);
  ASSERT_TRUE(reference.ok()) << reference.status().message();
  std::vector<Value> magnitude;
  if (c.linear) {
    std::vector<Value> abs_inputs;
    for (const Value& v : c.inputs) abs_inputs.push_back(Abs(v));
    auto m = RunFast(c, true, true, nullptr, &abs_inputs);
    ASSERT_TRUE(m.ok()) << m.status().message();
    magnitude = std::move(m).value();
  }
  // 1. Against the reference.
  for (size_t o = 0; o < c.outputs; ++o) {
    if ((*fast)[o].is_null()) continue;
    if (c.same_as_reference) {
      EXPECT_EQ(DescribeDifference((*reference)[o], (*fast)[o]), std::nullopt);
      continue;
    }
    const std::vector<float> f = Floats((*fast)[o]);
    const std::vector<float> r = Floats((*reference)[o]);
    ASSERT_EQ(f.size(), r.size());
    const std::vector<float> m = c.linear ? Floats(magnitude[o]) : std::vector<float>(f.size(), 0);
    size_t bad = 0;
    for (size_t i = 0; i < f.size(); ++i) {
      const double tol = c.atol + c.rtol * std::abs(r[i]) + c.mtol * m[i];
      if (!(std::abs(static_cast<double>(f[i]) - r[i]) <= tol) && bad++ < 5) {
        ADD_FAILURE() << "output " << o << " element " << i << ": fast " << f[i] << ", reference "
                      << r[i] << " (tolerance " << tol << ")";
      }
    }
  }
  // 2. Weights packed at Create or fed.
  auto fed = RunFast(c, false, false);
  ASSERT_TRUE(fed.ok()) << fed.status().message();
  ExpectSameBits(*fast, *fed, "weights fed");
  // 3. Runs, threads and SIMD targets.
  auto again = RunFast(c, false, true);
  ASSERT_TRUE(again.ok()) << again.status().message();
  ExpectSameBits(*fast, *again, "second run");
  for (int threads : {2, 3}) {
    fast::ThreadPool pool(threads);
    auto split = RunFast(c, false, true, &pool);
    ASSERT_TRUE(split.ok()) << split.status().message();
    ExpectSameBits(*fast, *split, std::to_string(threads) + " threads");
  }
  for (int64_t target : fast::SimdTargets()) {
    fast::ScopedSimdTarget force(target);
    auto forced = RunFast(c, false, true);
    ASSERT_TRUE(forced.ok()) << forced.status().message();
    ExpectSameBits(*fast, *forced, "target " + fast::SimdTargetName(target));
  }
}

}  // namespace idem::testing

#endif  // IDEM_TESTS_FAST_TEST_UTIL_H_
