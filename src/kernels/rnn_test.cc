// LSTM through KernelRunner: every direction, sequence_lens (including 0), initial_h/initial_c,
// peepholes, every activation with activation_alpha/beta, clip, input_forget, layout, the
// outputs Y/Y_h/Y_c, constant (pre-packed) against run-time weights, every version's type set
// (libonnx's schemas for 1/7/14, the spec for 22), against a float64 reference written from the
// spec's equations; and bad input.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "src/core/float_convert.h"
#include "tests/kernel_runner.h"
#include "tests/status_matchers.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;

template <class T>
std::vector<T> ValuesOf(const Value& v) {
  auto s = v.tensor().data_as<T>();
  return {s.begin(), s.end()};
}

std::vector<int64_t> ShapeOf(const Value& v) {
  auto s = v.tensor().shape();
  return {s.begin(), s.end()};
}

// Deterministic pseudo-random floats in [-scale, scale).
std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.0f) {
  std::vector<float> out(n);
  uint32_t s = seed;
  for (float& v : out) {
    s = s * 1664525u + 1013904223u;
    v = (static_cast<float>((s >> 8) % 8192) / 4096.0f - 1.0f) * scale;
  }
  return out;
}

void ExpectClose(const std::vector<float>& actual, const std::vector<double>& expected,
                 const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_LE(std::abs(actual[i] - expected[i]), 1e-5 + 1e-3 * std::abs(expected[i]))
        << what << "[" << i << "]: " << actual[i] << " vs " << expected[i];
  }
}

// ---- The float64 reference (the spec's equations, layout 0) -----------------------------------

using Fn = std::function<double(double)>;
double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double Tanh(double x) { return std::tanh(x); }

struct Problem {
  int64_t seq = 3, batch = 2, input = 4, hidden = 3, dirs = 1;
  std::string direction = "forward";
  std::vector<float> x, w, r, b, p, h0, c0;  // b, p, h0, c0 empty when absent
  std::vector<int32_t> lens;                 // empty when absent
  std::vector<Fn> acts;                      // f, g, h per direction
  double clip = 0;                           // 0: none
  bool input_forget = false;

  Problem(int64_t seq_, int64_t batch_, int64_t input_, int64_t hidden_, std::string dir,
          uint32_t seed)
      : seq(seq_), batch(batch_), input(input_), hidden(hidden_), direction(std::move(dir)) {
    dirs = direction == "bidirectional" ? 2 : 1;
    x = Random(static_cast<size_t>(seq * batch * input), seed, 1.5f);
    w = Random(static_cast<size_t>(dirs * 4 * hidden * input), seed + 1, 0.6f);
    r = Random(static_cast<size_t>(dirs * 4 * hidden * hidden), seed + 2, 0.6f);
    for (int64_t d = 0; d < dirs; ++d) acts.insert(acts.end(), {Sigmoid, Tanh, Tanh});
  }
  void AddAll(uint32_t seed) {
    b = Random(static_cast<size_t>(dirs * 8 * hidden), seed, 0.5f);
    p = Random(static_cast<size_t>(dirs * 3 * hidden), seed + 1, 0.5f);
    h0 = Random(static_cast<size_t>(dirs * batch * hidden), seed + 2, 0.8f);
    c0 = Random(static_cast<size_t>(dirs * batch * hidden), seed + 3, 0.8f);
  }
};

struct Outputs {
  std::vector<double> y, yh, yc;
};

Outputs Reference(const Problem& q) {
  const int64_t H = q.hidden;
  Outputs out;
  out.y.assign(static_cast<size_t>(q.seq * q.dirs * q.batch * H), 0.0);
  out.yh.assign(static_cast<size_t>(q.dirs * q.batch * H), 0.0);
  out.yc = out.yh;
  for (int64_t d = 0; d < q.dirs; ++d) {
    const bool reverse = q.direction == "reverse" || d == 1;
    const Fn &f = q.acts[static_cast<size_t>(3 * d)], &g = q.acts[static_cast<size_t>(3 * d + 1)],
             &h = q.acts[static_cast<size_t>(3 * d + 2)];
    auto W = [&](int64_t gate, int64_t j, int64_t k) {
      return double(q.w[static_cast<size_t>(((d * 4 + gate) * H + j) * q.input + k)]);
    };
    auto R = [&](int64_t gate, int64_t j, int64_t k) {
      return double(q.r[static_cast<size_t>(((d * 4 + gate) * H + j) * H + k)]);
    };
    auto Bias = [&](int64_t gate, int64_t j) {
      if (q.b.empty()) return 0.0;
      return double(q.b[static_cast<size_t>(d * 8 * H + gate * H + j)]) +
             double(q.b[static_cast<size_t>(d * 8 * H + 4 * H + gate * H + j)]);
    };
    auto P = [&](int64_t which, int64_t j) {  // 0: i, 1: o, 2: f
      return q.p.empty() ? 0.0 : double(q.p[static_cast<size_t>(d * 3 * H + which * H + j)]);
    };
    auto Clip = [&](double v) { return q.clip > 0 ? std::clamp(v, -q.clip, q.clip) : v; };
    for (int64_t b = 0; b < q.batch; ++b) {
      const int64_t len = q.lens.empty() ? q.seq : q.lens[static_cast<size_t>(b)];
      if (len == 0) continue;
      std::vector<double> Ht(static_cast<size_t>(H)), Ct(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) {
        const size_t s = static_cast<size_t>((d * q.batch + b) * H + j);
        Ht[static_cast<size_t>(j)] = q.h0.empty() ? 0.0 : q.h0[s];
        Ct[static_cast<size_t>(j)] = q.c0.empty() ? 0.0 : q.c0[s];
      }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = reverse ? len - 1 - step : step;
        std::vector<double> pre[4];
        for (int64_t gate = 0; gate < 4; ++gate) {
          for (int64_t j = 0; j < H; ++j) {
            double v = Bias(gate, j);
            for (int64_t k = 0; k < q.input; ++k) {
              v +=
                  double(q.x[static_cast<size_t>((t * q.batch + b) * q.input + k)]) * W(gate, j, k);
            }
            for (int64_t k = 0; k < H; ++k) v += Ht[static_cast<size_t>(k)] * R(gate, j, k);
            pre[gate].push_back(v);
          }
        }
        for (int64_t j = 0; j < H; ++j) {
          const double cprev = Ct[static_cast<size_t>(j)];
          const double it = f(Clip(pre[0][j] + P(0, j) * cprev));
          const double ft = q.input_forget ? 1 - it : f(Clip(pre[2][j] + P(2, j) * cprev));
          const double ct = g(Clip(pre[3][j]));
          const double C = ft * cprev + it * ct;
          const double ot = f(Clip(pre[1][j] + P(1, j) * C));
          Ct[static_cast<size_t>(j)] = C;
          Ht[static_cast<size_t>(j)] = ot * h(C);
        }
        for (int64_t j = 0; j < H; ++j) {
          out.y[static_cast<size_t>(((t * q.dirs + d) * q.batch + b) * H + j)] =
              Ht[static_cast<size_t>(j)];
        }
      }
      for (int64_t j = 0; j < H; ++j) {
        out.yh[static_cast<size_t>((d * q.batch + b) * H + j)] = Ht[static_cast<size_t>(j)];
        out.yc[static_cast<size_t>((d * q.batch + b) * H + j)] = Ct[static_cast<size_t>(j)];
      }
    }
  }
  return out;
}

// The node's inputs (omitted optional inputs as null Values, trailing ones dropped).
std::vector<Value> Inputs(const Problem& q) {
  std::vector<Value> in = {Floats({q.seq, q.batch, q.input}, q.x),
                           Floats({q.dirs, 4 * q.hidden, q.input}, q.w),
                           Floats({q.dirs, 4 * q.hidden, q.hidden}, q.r)};
  in.push_back(q.b.empty() ? Value() : Floats({q.dirs, 8 * q.hidden}, q.b));
  in.push_back(q.lens.empty() ? Value() : MakeTensorOf<int32_t>(E::kInt32, {q.batch}, q.lens));
  in.push_back(q.h0.empty() ? Value() : Floats({q.dirs, q.batch, q.hidden}, q.h0));
  in.push_back(q.c0.empty() ? Value() : Floats({q.dirs, q.batch, q.hidden}, q.c0));
  in.push_back(q.p.empty() ? Value() : Floats({q.dirs, 3 * q.hidden}, q.p));
  while (in.back().is_null()) in.pop_back();
  return in;
}

// Runs the problem with inputs known, shapes unknown, and W/R/B/P constants (pre-packed): all
// must give the same bits; returns Y, Y_h, Y_c.
std::vector<Value> RunLstm(const Problem& q, int version,
                           const std::function<void(KernelRunner&)>& configure = {}) {
  std::vector<std::vector<Value>> results;
  for (int mode = 0; mode < 3; ++mode) {
    KernelRunner r("LSTM", version);
    r.IntAttr("hidden_size", q.hidden);
    if (q.direction != "forward") r.StringAttr("direction", q.direction);
    if (q.clip > 0) r.FloatAttr("clip", static_cast<float>(q.clip));
    if (q.input_forget) r.IntAttr("input_forget", 1);
    if (configure) configure(r);
    if (mode == 1) r.UnknownShapes();
    if (mode == 2) {
      for (size_t i : {1, 2, 3, 7}) r.ConstantInput(i);
    }
    auto out = r.Run(Inputs(q), 3);
    EXPECT_TRUE(out.ok()) << "LSTM-" << version << " mode " << mode << ": "
                          << out.status().message();
    if (!out.ok()) return {};
    results.push_back(std::move(out).value());
  }
  for (size_t m = 1; m < 3; ++m) {
    for (size_t o = 0; o < 3; ++o) {
      EXPECT_EQ(DescribeDifference(results[0][o], results[m][o]), std::nullopt)
          << "mode " << m << " output " << o;
    }
  }
  return results[0];
}

void CheckAgainstReference(const Problem& q, int version,
                           const std::function<void(KernelRunner&)>& configure = {}) {
  const std::vector<Value> out = RunLstm(q, version, configure);
  ASSERT_EQ(out.size(), 3u);
  const Outputs ref = Reference(q);
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{q.seq, q.dirs, q.batch, q.hidden}));
  EXPECT_EQ(ShapeOf(out[1]), (std::vector<int64_t>{q.dirs, q.batch, q.hidden}));
  ExpectClose(ValuesOf<float>(out[0]), ref.y, "Y");
  ExpectClose(ValuesOf<float>(out[1]), ref.yh, "Y_h");
  ExpectClose(ValuesOf<float>(out[2]), ref.yc, "Y_c");
}

// ---- Values ------------------------------------------------------------------------------------

TEST(LstmTest, EveryDirection) {
  for (const char* dir : {"forward", "reverse", "bidirectional"}) {
    SCOPED_TRACE(dir);
    Problem q(4, 3, 5, 3, dir, 10);
    CheckAgainstReference(q, 7);
    q.AddAll(20);
    CheckAgainstReference(q, 14);
  }
}

TEST(LstmTest, SequenceLensInitialStatePeepholes) {
  for (const char* dir : {"forward", "reverse", "bidirectional"}) {
    SCOPED_TRACE(dir);
    Problem q(5, 4, 2, 3, dir, 30);
    q.AddAll(40);
    q.lens = {5, 2, 0, 4};  // a row of length 0: zeros everywhere
    CheckAgainstReference(q, 14);
    const std::vector<Value> out = RunLstm(q, 14);
    // Y is zero past each row's length.
    const auto y = ValuesOf<float>(out[0]);
    for (int64_t t = 2; t < 5; ++t) {
      for (int64_t j = 0; j < 3; ++j) {
        EXPECT_EQ(y[static_cast<size_t>(((t * q.dirs) * 4 + 1) * 3 + j)], 0.0f);
      }
    }
  }
}

TEST(LstmTest, ActivationsWithAlphaAndBeta) {
  // Every activation the spec lists, with explicit and default alpha/beta, consumed in order.
  struct Case {
    std::vector<std::string> names;
    std::vector<float> alpha, beta;
    std::vector<Fn> fns;
  };
  auto affine = [](double a, double b) { return [=](double x) { return a * x + b; }; };
  auto leaky = [](double a) { return [=](double x) { return x >= 0 ? x : a * x; }; };
  auto thresholded = [](double a) { return [=](double x) { return x >= a ? x : 0.0; }; };
  auto scaled = [](double a, double b) { return [=](double x) { return a * std::tanh(b * x); }; };
  auto hard = [](double a, double b) {
    return [=](double x) { return std::min(1.0, std::max(0.0, a * x + b)); };
  };
  auto elu = [](double a) { return [=](double x) { return x >= 0 ? x : a * (std::exp(x) - 1); }; };
  const Fn relu = [](double x) { return std::max(0.0, x); };
  const Fn softsign = [](double x) { return x / (1 + std::abs(x)); };
  const Fn softplus = [](double x) { return std::log(1 + std::exp(x)); };
  const std::vector<Case> cases = {
      {{"HardSigmoid", "Affine", "ScaledTanh"},
       {0.3f, 0.5f, 0.9f},
       {0.4f, 0.1f, 1.2f},
       {hard(0.3, 0.4), affine(0.5, 0.1), scaled(0.9, 1.2)}},
      {{"HardSigmoid", "LeakyRelu", "Elu"}, {}, {}, {hard(0.2, 0.5), leaky(0.01), elu(1.0)}},
      {{"Sigmoid", "LeakyRelu", "ThresholdedRelu"},
       {0.2f, 0.1f},
       {},
       {Sigmoid, leaky(0.2), thresholded(0.1)}},
      {{"sigmoid", "softsign", "SOFTPLUS"}, {}, {}, {Sigmoid, softsign, softplus}},
      {{"HardSigmoid", "Relu", "Tanh"}, {0.25f}, {}, {hard(0.25, 0.5), relu, Tanh}},
      // alpha for the first two consumers, the third takes its default.
      {{"Elu", "Affine", "ScaledTanh"},
       {0.7f, 2.0f},
       {0.25f},
       {elu(0.7), affine(2.0, 0.25), scaled(1.0, 1.0)}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.names[0] + " " + c.names[1] + " " + c.names[2]);
    Problem q(3, 2, 3, 4, "forward", 50);
    q.AddAll(60);
    q.acts = c.fns;
    CheckAgainstReference(q, 7, [&](KernelRunner& r) {
      r.StringsAttr("activations", c.names);
      if (!c.alpha.empty()) r.FloatsAttr("activation_alpha", c.alpha);
      if (!c.beta.empty()) r.FloatsAttr("activation_beta", c.beta);
    });
  }
  // Bidirectional: six activations, the second direction's own.
  Problem q(3, 2, 3, 2, "bidirectional", 70);
  q.acts = {Sigmoid, Tanh, Tanh, hard(0.2, 0.5), leaky(0.3), relu};
  CheckAgainstReference(q, 14, [](KernelRunner& r) {
    r.StringsAttr("activations", {"Sigmoid", "Tanh", "Tanh", "HardSigmoid", "LeakyRelu", "Relu"});
    r.FloatsAttr("activation_alpha", {0.2f, 0.3f});
    r.FloatsAttr("activation_beta", {0.5f});
  });
}

TEST(LstmTest, ClipAndInputForget) {
  Problem q(4, 2, 3, 3, "bidirectional", 80);
  q.AddAll(90);
  q.x = Random(q.x.size(), 81, 6.0f);  // large inputs, so the clip bites
  q.clip = 0.5;
  CheckAgainstReference(q, 14);
  q.clip = 0;
  q.input_forget = true;
  CheckAgainstReference(q, 14);
  // Clip changes the result (the test would not notice a kernel that ignores it otherwise).
  Problem unclipped = q;
  unclipped.input_forget = false;
  Problem clipped = unclipped;
  clipped.clip = 0.5;
  EXPECT_NE(Reference(clipped).yh, Reference(unclipped).yh);
}

TEST(LstmTest, Layout1IsTheTransposedLayout0) {
  Problem q(3, 2, 4, 3, "bidirectional", 100);
  q.AddAll(110);
  q.lens = {3, 1};
  const Outputs ref = Reference(q);
  // X [batch, seq, input]; initial_h/c [batch, dirs, hidden].
  std::vector<float> x(q.x.size()), h0(q.h0.size()), c0(q.c0.size());
  for (int64_t t = 0; t < q.seq; ++t) {
    for (int64_t b = 0; b < q.batch; ++b) {
      for (int64_t k = 0; k < q.input; ++k) {
        x[static_cast<size_t>((b * q.seq + t) * q.input + k)] =
            q.x[static_cast<size_t>((t * q.batch + b) * q.input + k)];
      }
    }
  }
  for (int64_t d = 0; d < 2; ++d) {
    for (int64_t b = 0; b < q.batch; ++b) {
      for (int64_t j = 0; j < q.hidden; ++j) {
        h0[static_cast<size_t>((b * 2 + d) * q.hidden + j)] =
            q.h0[static_cast<size_t>((d * q.batch + b) * q.hidden + j)];
        c0[static_cast<size_t>((b * 2 + d) * q.hidden + j)] =
            q.c0[static_cast<size_t>((d * q.batch + b) * q.hidden + j)];
      }
    }
  }
  std::vector<Value> in = Inputs(q);
  in[0] = Floats({q.batch, q.seq, q.input}, x);
  in[5] = Floats({q.batch, 2, q.hidden}, h0);
  in[6] = Floats({q.batch, 2, q.hidden}, c0);
  KernelRunner r("LSTM", 14);
  r.IntAttr("hidden_size", q.hidden).StringAttr("direction", "bidirectional").IntAttr("layout", 1);
  auto out = r.Run(in, 3);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ShapeOf(out.value()[0]), (std::vector<int64_t>{2, 3, 2, 3}));
  EXPECT_EQ(ShapeOf(out.value()[1]), (std::vector<int64_t>{2, 2, 3}));
  const auto y = ValuesOf<float>(out.value()[0]);
  const auto yh = ValuesOf<float>(out.value()[1]);
  const auto yc = ValuesOf<float>(out.value()[2]);
  std::vector<double> ey, eyh, eyc;
  for (int64_t b = 0; b < q.batch; ++b) {
    for (int64_t t = 0; t < q.seq; ++t) {
      for (int64_t d = 0; d < 2; ++d) {
        for (int64_t j = 0; j < q.hidden; ++j) {
          ey.push_back(ref.y[static_cast<size_t>(((t * 2 + d) * q.batch + b) * q.hidden + j)]);
        }
      }
    }
    for (int64_t d = 0; d < 2; ++d) {
      for (int64_t j = 0; j < q.hidden; ++j) {
        eyh.push_back(ref.yh[static_cast<size_t>((d * q.batch + b) * q.hidden + j)]);
        eyc.push_back(ref.yc[static_cast<size_t>((d * q.batch + b) * q.hidden + j)]);
      }
    }
  }
  ExpectClose(y, ey, "Y");
  ExpectClose(yh, eyh, "Y_h");
  ExpectClose(yc, eyc, "Y_c");
}

TEST(LstmTest, OnlyTheRequestedOutputs) {
  Problem q(3, 2, 3, 2, "forward", 120);
  const Outputs ref = Reference(q);
  // One output (Y) and two (Y, Y_h): the others are not computed.
  for (size_t n : {1u, 2u}) {
    KernelRunner r("LSTM", 14);
    r.IntAttr("hidden_size", 2);
    auto out = r.Run(Inputs(q), n);
    ASSERT_TRUE(out.ok()) << out.status().message();
    ASSERT_EQ(out.value().size(), n);
    ExpectClose(ValuesOf<float>(out.value()[0]), ref.y, "Y");
    if (n == 2) ExpectClose(ValuesOf<float>(out.value()[1]), ref.yh, "Y_h");
  }
}

TEST(LstmTest, HiddenSizeFromR) {
  // hidden_size is optional in the spec: without it, R's last dim gives it.
  Problem q(2, 1, 3, 4, "forward", 130);
  KernelRunner r("LSTM", 7);
  auto out = r.Run(Inputs(q), 3);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectClose(ValuesOf<float>(out.value()[1]), Reference(q).yh, "Y_h");
}

TEST(LstmTest, VersionsAndTypes) {
  Problem q(2, 2, 3, 2, "forward", 140);
  q.AddAll(150);
  // LSTM-1 takes output_sequence (and gives Y whenever it is requested).
  CheckAgainstReference(q, 1, [](KernelRunner& r) { r.IntAttr("output_sequence", 0); });
  EXPECT_FALSE(KernelRunner("LSTM", 7).IntAttr("output_sequence", 1).Run(Inputs(q)).ok());
  EXPECT_FALSE(KernelRunner("LSTM", 7).IntAttr("layout", 0).Run(Inputs(q)).ok());
  CheckAgainstReference(q, 22);
  // float16, bfloat16 (22) and double: each element rounds once from the double computation.
  auto convert = [](const Value& v, E type) {
    const auto f = ValuesOf<float>(v);
    if (type == E::kDouble) {
      return MakeTensorOf<double>(type, ShapeOf(v), std::vector<double>(f.begin(), f.end()));
    }
    std::vector<uint16_t> bits;
    bits.reserve(f.size());
    for (float x : f) bits.push_back(type == E::kFloat16 ? FloatToHalf(x) : FloatToBf16(x));
    return MakeTensorOf<uint16_t>(type, ShapeOf(v), bits);
  };
  for (E type : {E::kFloat16, E::kBfloat16, E::kDouble}) {
    SCOPED_TRACE(ElementTypeName(type));
    std::vector<Value> in;
    Problem rounded = q;  // the reference on the rounded inputs
    std::vector<std::vector<float>*> fields = {&rounded.x, &rounded.w,  &rounded.r,  &rounded.b,
                                               nullptr,    &rounded.h0, &rounded.c0, &rounded.p};
    const std::vector<Value> fin = Inputs(q);
    for (size_t i = 0; i < fin.size(); ++i) {
      in.push_back(fin[i].is_null() ? Value() : convert(fin[i], type));
      if (fields[i] == nullptr) continue;
      for (float& v : *fields[i]) {
        v = type == E::kFloat16    ? HalfToFloat(FloatToHalf(v))
            : type == E::kBfloat16 ? Bf16ToFloat(FloatToBf16(v))
                                   : v;
      }
    }
    const int version = type == E::kBfloat16 ? 22 : 14;
    auto out = KernelRunner("LSTM", version).IntAttr("hidden_size", 2).Run(in, 3);
    ASSERT_TRUE(out.ok()) << out.status().message();
    const Outputs ref = Reference(rounded);
    std::vector<float> yh;
    for (size_t i = 0; i < ref.yh.size(); ++i) {
      if (type == E::kDouble) {
        EXPECT_NEAR(ValuesOf<double>(out.value()[1])[i], ref.yh[i], 1e-12);
        continue;
      }
      const uint16_t bits = ValuesOf<uint16_t>(out.value()[1])[i];
      const uint16_t want = type == E::kFloat16 ? FloatToHalf(static_cast<float>(ref.yh[i]))
                                                : FloatToBf16(static_cast<float>(ref.yh[i]));
      // Within one unit in the last place of the narrow type (rounding of a nearby value).
      EXPECT_LE(std::abs(int{bits} - int{want}), 1) << i;
    }
    if (type == E::kBfloat16) {
      EXPECT_FALSE(KernelRunner("LSTM", 14).IntAttr("hidden_size", 2).Run(in, 3).ok());
    }
  }
}

TEST(LstmTest, EmptyBatchAndSequence) {
  Problem q(0, 2, 3, 2, "bidirectional", 160);
  auto out = KernelRunner("LSTM", 14)
                 .IntAttr("hidden_size", 2)
                 .StringAttr("direction", "bidirectional")
                 .Run(Inputs(q), 3);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ShapeOf(out.value()[0]), (std::vector<int64_t>{0, 2, 2, 2}));
  EXPECT_EQ(ValuesOf<float>(out.value()[1]), std::vector<float>(8, 0.0f));
  Problem e(3, 0, 3, 2, "forward", 170);
  auto out2 = KernelRunner("LSTM", 14).IntAttr("hidden_size", 2).Run(Inputs(e), 3);
  ASSERT_TRUE(out2.ok()) << out2.status().message();
  EXPECT_EQ(ShapeOf(out2.value()[1]), (std::vector<int64_t>{1, 0, 2}));
}

// In a session: W, R, B are initializers (pre-packed at Create), Y_h is omitted (""), and only Y
// and Y_c are computed; the results equal KernelRunner's with run-time weights.
TEST(LstmTest, SessionWithInitializersAndAnOmittedOutput) {
  Problem q(4, 2, 3, 2, "bidirectional", 230);
  q.AddAll(240);
  onnx::ModelProto m = EmptyModel(14, 8);
  auto* g = m.mutable_graph();
  g->set_name("lstm");
  AddValueInfo(g->mutable_input(), "X", TensorTypeProto(E::kFloat, {4, 2, 3}));
  auto initializer = [&](const std::string& name, const std::vector<int64_t>& dims,
                         const std::vector<float>& v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float f : v) t->add_float_data(f);
  };
  initializer("W", {2, 8, 3}, q.w);
  initializer("R", {2, 8, 2}, q.r);
  initializer("B", {2, 16}, q.b);
  AddValueInfo(g->mutable_output(), "Y", TensorTypeProto(E::kFloat, {4, 2, 2, 2}));
  AddValueInfo(g->mutable_output(), "Y_c", TensorTypeProto(E::kFloat, {2, 2, 2}));
  auto* n = AddNode(g, "LSTM", {"X", "W", "R", "B"}, {"Y", "", "Y_c"}, "lstm");
  AddIntAttribute(n, "hidden_size", 2);
  auto* dir = n->add_attribute();
  dir->set_name("direction");
  dir->set_type(onnx::AttributeProto::STRING);
  dir->set_s("bidirectional");
  Session session = MustCreate(m);
  auto out = session.Run({Floats({4, 2, 3}, q.x)});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out.value().size(), 2u);
  Problem plain = q;
  plain.p.clear();
  plain.h0.clear();
  plain.c0.clear();
  const Outputs ref = Reference(plain);
  ExpectClose(ValuesOf<float>(out.value()[0]), ref.y, "Y");
  ExpectClose(ValuesOf<float>(out.value()[1]), ref.yc, "Y_c");
  auto direct = KernelRunner("LSTM", 14)
                    .IntAttr("hidden_size", 2)
                    .StringAttr("direction", "bidirectional")
                    .Run(Inputs(plain), 3);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(DescribeDifference(direct.value()[0], out.value()[0]), std::nullopt);
  EXPECT_EQ(DescribeDifference(direct.value()[2], out.value()[1]), std::nullopt);
}

// ---- Bad input ---------------------------------------------------------------------------------

TEST(LstmTest, WeightsMustMatchHiddenSize) {
  Problem q(2, 2, 3, 2, "forward", 180);
  q.AddAll(190);
  auto run = [&](std::vector<Value> in, const std::function<void(KernelRunner&)>& c = {}) {
    KernelRunner r("LSTM", 14);
    r.IntAttr("hidden_size", 2);
    if (c) c(r);
    return r.Run(std::move(in), 3);
  };
  // W for hidden_size 3.
  std::vector<Value> in = Inputs(q);
  in[1] = Floats({1, 12, 3}, Random(36, 1));
  EXPECT_STATUS(run(in), StatusCode::kInvalidArgument,
                "input 'W' has dim 1 = 12; it must be 4 * hidden_size 2 = 8");
  // Also when W is a constant (pre-packing checks it) and when shapes are unknown at planning.
  EXPECT_STATUS(run(in, [](KernelRunner& r) { r.ConstantInput(1).ConstantInput(2); }),
                StatusCode::kInvalidArgument, "input 'W'");
  EXPECT_STATUS(run(in, [](KernelRunner& r) { r.UnknownShapes(); }), StatusCode::kInvalidArgument,
                "input 'W'");
  // W's input_size against X.
  in = Inputs(q);
  in[1] = Floats({1, 8, 4}, Random(32, 1));
  EXPECT_STATUS(run(in), StatusCode::kInvalidArgument, "X's input_size = 3");
  // R, B, P, initial_h, initial_c, num_directions.
  in = Inputs(q);
  in[2] = Floats({1, 8, 3}, Random(24, 1));
  EXPECT_STATUS(run(in), StatusCode::kInvalidArgument, "input 'R' has dim 2 = 3");
  in = Inputs(q);
  in[3] = Floats({1, 12}, Random(12, 1));
  EXPECT_STATUS(run(in), StatusCode::kInvalidArgument, "input 'B' has dim 1 = 12");
  in = Inputs(q);
  in[7] = Floats({1, 8}, Random(8, 1));
  EXPECT_STATUS(run(in), StatusCode::kInvalidArgument, "input 'P' has dim 1 = 8");
  in = Inputs(q);
  in[5] = Floats({1, 3, 2}, Random(6, 1));
  EXPECT_STATUS(run(in), StatusCode::kInvalidArgument, "input 'initial_h' has dim 1 = 3");
  in = Inputs(q);
  in[6] = Floats({1, 2}, Random(2, 1));
  EXPECT_STATUS(run(in), StatusCode::kInvalidArgument, "input 'initial_c' has rank 2");
  EXPECT_STATUS(run(Inputs(q), [](KernelRunner& r) { r.StringAttr("direction", "bidirectional"); }),
                StatusCode::kInvalidArgument, "it must be num_directions = 2");
  in = Inputs(q);
  in[0] = Floats({2, 6}, q.x);
  EXPECT_STATUS(run(in), StatusCode::kInvalidArgument, "input 'X' has rank 2; it must be 3");
  in = Inputs(q);
  in[0] = Floats({2, 2, 3, 1}, q.x);
  EXPECT_STATUS(run(in, [](KernelRunner& r) { r.UnknownShapes(); }), StatusCode::kInvalidArgument,
                "input 'X' has rank 4");
}

TEST(LstmTest, SequenceLensMustBeWithinTheSequence) {
  Problem q(3, 2, 3, 2, "forward", 200);
  for (const std::vector<int32_t>& lens :
       {std::vector<int32_t>{3, 4}, std::vector<int32_t>{-1, 2}}) {
    q.lens = lens;
    auto out = KernelRunner("LSTM", 14).IntAttr("hidden_size", 2).Run(Inputs(q), 3);
    EXPECT_STATUS(out, StatusCode::kInvalidArgument, "it must be in [0, seq_length = 3]");
  }
  q.lens.clear();
  std::vector<Value> in = Inputs(q);
  in.resize(5);
  in[4] = MakeTensorOf<int32_t>(E::kInt32, {1}, {1});
  EXPECT_STATUS(KernelRunner("LSTM", 14).IntAttr("hidden_size", 2).Run(in, 3),
                StatusCode::kInvalidArgument, "input 'sequence_lens' has dim 0 = 1");
}

TEST(LstmTest, BadAttributesAreRefused) {
  Problem q(2, 2, 3, 2, "forward", 210);
  auto run = [&](const std::function<void(KernelRunner&)>& c) {
    KernelRunner r("LSTM", 14);
    c(r);
    return r.Run(Inputs(q), 3);
  };
  EXPECT_STATUS(run([](KernelRunner& r) { r.IntAttr("hidden_size", 0); }),
                StatusCode::kInvalidModel, "'hidden_size' is 0");
  EXPECT_STATUS(
      run([](KernelRunner& r) { r.IntAttr("hidden_size", std::numeric_limits<int64_t>::max()); }),
      StatusCode::kInvalidModel, "'hidden_size'");
  EXPECT_STATUS(run([](KernelRunner& r) { r.StringAttr("direction", "both"); }),
                StatusCode::kInvalidModel, "direction");
  EXPECT_STATUS(run([](KernelRunner& r) { r.IntAttr("layout", 2); }), StatusCode::kInvalidModel,
                "layout");
  EXPECT_STATUS(run([](KernelRunner& r) { r.IntAttr("input_forget", 3); }),
                StatusCode::kInvalidModel, "input_forget");
  EXPECT_STATUS(run([](KernelRunner& r) { r.FloatAttr("clip", 0); }), StatusCode::kInvalidModel,
                "'clip' is 0");
  EXPECT_STATUS(run([](KernelRunner& r) { r.FloatAttr("clip", -1); }), StatusCode::kInvalidModel,
                "'clip'");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.StringsAttr("activations", {"Sigmoid", "Tanh"});
                }),
                StatusCode::kInvalidModel, "has 2 names");
  EXPECT_STATUS(
      run([](KernelRunner& r) {
        r.StringsAttr("activations", {"Sigmoid", "Tanh", "Tanh", "Sigmoid", "Tanh", "Tanh"});
      }),
      StatusCode::kInvalidModel, "has 6 names");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.StringsAttr("activations", {"Sigmoid", "Gelu", "Tanh"});
                }),
                StatusCode::kInvalidModel, "'Gelu'");
  EXPECT_STATUS(run([](KernelRunner& r) {
                  r.StringsAttr("activations", {"Sigmoid", "Tanh", "LeakyRelu"});
                  r.FloatsAttr("activation_alpha", {0.1f, 0.2f});
                }),
                StatusCode::kInvalidModel, "more values than the activations consume");
  EXPECT_STATUS(run([](KernelRunner& r) { r.FloatsAttr("activation_beta", {1}); }),
                StatusCode::kInvalidModel, "activation_beta");
}

TEST(LstmTest, OutputSizeIsCheckedAgainstTheLimits) {
  Problem q(256, 256, 1, 4, "forward", 220);
  Limits limits;
  limits.max_tensor_bytes = 512 << 10;  // Y: 256 * 256 * 4 floats = 1 MiB; X is 256 KiB
  auto out = KernelRunner("LSTM", 14).IntAttr("hidden_size", 4).WithLimits(limits).Run(Inputs(q));
  EXPECT_STATUS(out, StatusCode::kResourceExhausted, "");
}

// ---- Registry ----------------------------------------------------------------------------------

std::set<std::string> TypeStrings(const TypeConstraint& c) {
  std::set<std::string> out;
  for (const Type& t : c.allowed) out.insert(t.ToString());
  return out;
}

TEST(LstmRegistryTest, EveryVersionMatchesTheSchemas) {
  const auto& r = KernelRegistry::Default();
  std::vector<int> versions;
  for (const KernelSchema* s : r.Versions("", "LSTM")) versions.push_back(s->since_version);
  EXPECT_EQ(versions, (std::vector<int>{1, 7, 14, 22}));
  for (int v : {1, 7, 14}) {
    SCOPED_TRACE(v);
    const onnx::OpSchema* theirs = onnx::OpSchemaRegistry::Schema("LSTM", v, "");
    ASSERT_NE(theirs, nullptr);
    EXPECT_EQ(theirs->SinceVersion(), v);
    const KernelSchema* ours = r.Resolve("", "LSTM", v);
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
      EXPECT_EQ(static_cast<int>(ours->outputs[i].arity),
                static_cast<int>(theirs->outputs()[i].GetOption()));
    }
    for (const auto& param : theirs->typeConstraintParams()) {
      const TypeConstraint* c = ours->FindConstraint(param.type_param_str);
      ASSERT_NE(c, nullptr);
      EXPECT_EQ(TypeStrings(*c), std::set<std::string>(param.allowed_type_strs.begin(),
                                                       param.allowed_type_strs.end()));
    }
    std::set<std::string> attrs;
    for (const auto& [name, a] : theirs->attributes()) attrs.insert(name);
    EXPECT_EQ(std::set<std::string>(ours->attributes.begin(), ours->attributes.end()), attrs);
  }
  const KernelSchema* s22 = r.Resolve("", "LSTM", 22);
  const KernelSchema* s14 = r.Resolve("", "LSTM", 14);
  EXPECT_EQ(s22->attributes, s14->attributes);
  EXPECT_EQ(TypeStrings(*s22->FindConstraint("T")),
            (std::set<std::string>{"tensor(bfloat16)", "tensor(float16)", "tensor(float)",
                                   "tensor(double)"}));
  EXPECT_EQ(TypeStrings(*s22->FindConstraint("T1")), (std::set<std::string>{"tensor(int32)"}));
}

// ---- Hardening (issue 17)
// ------------------------------------------------------------------------

TEST(LstmTest, EmptyInputWithAHugeSequenceIsRefusedNotLooped) {
  // X [2^40, 1, 0] holds nothing (input_size 0), yet each of its 2^40 steps runs the gates.
  const Value x = Value::MakeTensor(E::kFloat, {int64_t{1} << 40, 1, 0}, Buffer()).value();
  const Value w = Value::MakeTensor(E::kFloat, {1, 4, 0}, Buffer()).value();
  const Value r = Floats({1, 4, 1}, {0.5f, 0.5f, 0.5f, 0.5f});
  for (bool unknown : {false, true}) {
    KernelRunner k("LSTM", 14);
    k.IntAttr("hidden_size", 1);
    if (unknown) k.UnknownShapes();
    EXPECT_STATUS(k.Run({x, w, r}, 2), StatusCode::kResourceExhausted,
                  "LSTM: the node's work, 5.498e+12 multiply-adds");
  }
}

TEST(LstmTest, HugeBatchOfAnEmptyInputIsCheckedBeforeItsLengths) {
  // X [1, 2^36, 0]: 2^36 rows of work fit the bound, but their lengths (512 GiB) were allocated
  // before any check (std::bad_alloc, an exception idem never throws).
  const Value x = Value::MakeTensor(E::kFloat, {1, int64_t{1} << 36, 0}, Buffer()).value();
  const Value w = Value::MakeTensor(E::kFloat, {1, 4, 0}, Buffer()).value();
  EXPECT_STATUS(KernelRunner("LSTM", 14)
                    .IntAttr("hidden_size", 1)
                    .Run({x, w, Floats({1, 4, 1}, {0.5f, 0.5f, 0.5f, 0.5f})}, 2),
                StatusCode::kResourceExhausted, "");
}

}  // namespace
}  // namespace idem::testing
