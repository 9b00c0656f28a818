// The fast float LSTM (rnn.cc, "Fast float LSTM") against the reference kernel
// (SessionOptions::reference_kernels, double state) over hidden and input sizes (1, odd, past a
// 16-wide panel), sequence lengths, batches, every direction, with and without B, initial_h /
// initial_c and sequence_lens, both layouts. Tolerance: |fast - reference| <= 1e-5 + 1e-4 *
// |reference| on Y, Y_h and Y_c (the float gates, FMA chains and SLEEF's ~1 ulp sigmoid / tanh
// against double). Also checked for every case (tests/fast_test_util.h): the same bits with W, R, B
// constant (packed at Create) or fed, on a second run, with 2 and 3 threads, and on every SIMD
// target of this machine. Cells the fast path does not compute (peepholes, clip, other
// activations, input_forget) must give the reference kernel's bits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/fast_test_util.h"
#include "tests/kernel_runner.h"

namespace idem::testing {
namespace {

using Dims = std::vector<int64_t>;

struct LstmSpec {
  LstmSpec(int64_t s, int64_t b, int64_t i, int64_t h) : seq(s), batch(b), input(i), hidden(h) {}
  LstmSpec& Direction(std::string d) {
    direction = std::move(d);
    return *this;
  }
  LstmSpec& NoBias() {
    bias = false;
    return *this;
  }
  LstmSpec& NoInitialState() {
    initial = false;
    return *this;
  }
  LstmSpec& Lengths() {
    lengths = true;
    return *this;
  }
  LstmSpec& BatchMajor() {
    layout = 1;
    return *this;
  }
  int64_t seq, batch, input, hidden;
  std::string direction = "forward";
  bool bias = true, initial = true, lengths = false;
  int64_t layout = 0;
};

FastCase MakeLstmCase(const LstmSpec& s, uint32_t seed) {
  const int64_t dirs = s.direction == "bidirectional" ? 2 : 1;
  FastCase c;
  c.make = [s] {
    KernelRunner r("LSTM", 14);
    r.IntAttr("hidden_size", s.hidden).StringAttr("direction", s.direction);
    if (s.layout != 0) r.IntAttr("layout", s.layout);
    return r;
  };
  const Dims x = s.layout == 0 ? Dims{s.seq, s.batch, s.input} : Dims{s.batch, s.seq, s.input};
  const Dims state = s.layout == 0 ? Dims{dirs, s.batch, s.hidden} : Dims{s.batch, dirs, s.hidden};
  c.inputs = {RandomTensor(x, seed), RandomTensor({dirs, 4 * s.hidden, s.input}, seed + 1),
              RandomTensor({dirs, 4 * s.hidden, s.hidden}, seed + 2)};
  c.inputs.push_back(s.bias ? RandomTensor({dirs, 8 * s.hidden}, seed + 3) : Value());
  if (s.lengths) {
    std::vector<int32_t> lens;
    for (int64_t b = 0; b < s.batch; ++b)
      lens.push_back(static_cast<int32_t>((b * 7 + 1) % (s.seq + 1)));
    c.inputs.push_back(MakeTensorOf(ElementType::kInt32, {s.batch}, lens));
  } else {
    c.inputs.push_back(Value());
  }
  c.inputs.push_back(s.initial ? RandomTensor(state, seed + 4) : Value());
  c.inputs.push_back(s.initial ? RandomTensor(state, seed + 5) : Value());
  c.outputs = 3;
  c.weights = {1, 2, 3};
  c.atol = 1e-5;
  c.rtol = 1e-4;
  return c;
}

TEST(LstmFast, MatchesTheReferenceOverTheSweep) {
  const std::vector<LstmSpec> specs = {
      LstmSpec(1, 1, 1, 1),
      LstmSpec(1, 1, 128, 128),  // Silero VAD's cell
      LstmSpec(3, 2, 7, 5),
      LstmSpec(4, 1, 5, 33).Direction("reverse"),
      LstmSpec(3, 3, 9, 17).Direction("bidirectional"),
      LstmSpec(2, 2, 4, 6).NoBias().NoInitialState(),
      LstmSpec(5, 4, 3, 8).Direction("bidirectional").Lengths(),
      LstmSpec(3, 2, 6, 7).BatchMajor(),
      LstmSpec(2, 3, 5, 16).Direction("bidirectional").NoInitialState().Lengths().BatchMajor(),
  };
  uint32_t seed = 1;
  for (const LstmSpec& s : specs) {
    CheckFast(MakeLstmCase(s, seed += 11), "LSTM seq " + std::to_string(s.seq) + " batch " +
                                               std::to_string(s.batch) + " input " +
                                               std::to_string(s.input) + " hidden " +
                                               std::to_string(s.hidden) + " " + s.direction);
  }
}

TEST(LstmFast, OtherCellsRunTheReferenceKernel) {
  const LstmSpec s(3, 2, 4, 5);
  // clip, another activation, input_forget, peepholes.
  std::vector<std::function<KernelRunner()>> variants = {
      [] { return KernelRunner("LSTM", 14).IntAttr("hidden_size", 5).FloatAttr("clip", 0.5f); },
      [] {
        return KernelRunner("LSTM", 14)
            .IntAttr("hidden_size", 5)
            .StringsAttr("activations", {"HardSigmoid", "Tanh", "Tanh"});
      },
      [] { return KernelRunner("LSTM", 14).IntAttr("hidden_size", 5).IntAttr("input_forget", 1); },
  };
  for (size_t v = 0; v < variants.size(); ++v) {
    FastCase c = MakeLstmCase(s, 70 + static_cast<uint32_t>(v));
    c.make = variants[v];
    c.same_as_reference = true;
    CheckFast(c, "variant " + std::to_string(v));
  }
  FastCase p = MakeLstmCase(s, 90);
  p.make = [] { return KernelRunner("LSTM", 14).IntAttr("hidden_size", 5); };
  p.inputs.push_back(RandomTensor({1, 15}, 91));
  p.weights = {1, 2, 3, 7};
  p.same_as_reference = true;
  CheckFast(p, "peepholes");
}

TEST(LstmFast, BadInputStillRefused) {
  FastCase c = MakeLstmCase(LstmSpec(2, 2, 3, 4), 5);
  c.inputs[4] = MakeTensorOf(ElementType::kInt32, {2}, std::vector<int32_t>{1, 3});
  auto r = RunFast(c, false, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("sequence_lens[1] is 3"), std::string::npos)
      << r.status().message();
  c.inputs[2] = RandomTensor({1, 16, 5}, 9);  // R's hidden dim disagrees with hidden_size
  auto w = RunFast(c, false, false);
  ASSERT_FALSE(w.ok());
}

}  // namespace
}  // namespace idem::testing
