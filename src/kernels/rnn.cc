// LSTM (1, 7, 14, 22): every direction, sequence_lens, initial_h / initial_c, peepholes, the
// activation list with activation_alpha / activation_beta, clip, input_forget, layout (14+);
// the outputs Y, Y_h and Y_c are each optional (only the requested ones are computed).
//
// Reference kernel: plain loops, one batch row and one time step at a time. Gate pre-activations
// accumulate in double in a fixed order (bias, then X_t . W in input order, then H_{t-1} . R in
// hidden order, then the peephole term); the state H and C is kept in double across steps and
// each output element rounds once to the element type. W, R, B and P are converted once at
// Create when they are constants (initializers), otherwise on every run.
//
// Semantics the spec leaves open, as ONNX Runtime does: clip bounds the gate pre-activations
// (after bias and peephole, before f and g), not the cell state; input_forget couples the gates
// as f = 1 - i; a batch row whose sequence_lens is 0 gives zeros in Y, Y_h and Y_c; Y is zero past
// each row's length; the reverse direction runs from each row's last valid step back to 0.
// LSTM-1's output_sequence is accepted and ignored (Y is produced whenever it is requested), as
// in every later version. Activation names compare case-insensitively.
// Where ONNX Runtime 1.30 departs from the spec, the spec wins: missing activation_alpha/beta
// take the defaults of the corresponding operators (ThresholdedRelu alpha 1, Affine 1 / 0,
// ScaledTanh 1 / 1; ONNX Runtime uses 0 for these three), ThresholdedRelu keeps x >= alpha (the
// LSTM text; ONNX Runtime uses x > alpha), and layout 1 runs (ONNX Runtime's CPU LSTM refuses it).
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>

#include "src/kernels/dispatch.h"
#include "src/kernels/fast/packed_gemm.h"
#include "src/kernels/fast/thread_pool.h"
#include "src/kernels/fast/vector_math.h"
#include "src/kernels/op.h"

namespace idem {
namespace {

// ---- Activations ------------------------------------------------------------------------------

enum class ActKind {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus
};

struct Activation {
  ActKind kind = ActKind::kSigmoid;
  double alpha = 0;
  double beta = 0;

  double operator()(double x) const {
    switch (kind) {
      case ActKind::kRelu:
        return x > 0 ? x : 0.0;
      case ActKind::kTanh:
        return std::tanh(x);
      case ActKind::kSigmoid:
        return 1.0 / (1.0 + std::exp(-x));
      case ActKind::kAffine:
        return alpha * x + beta;
      case ActKind::kLeakyRelu:
        return x >= 0 ? x : alpha * x;
      case ActKind::kThresholdedRelu:
        return x >= alpha ? x : 0.0;
      case ActKind::kScaledTanh:
        return alpha * std::tanh(beta * x);
      case ActKind::kHardSigmoid:
        return std::min(std::max(alpha * x + beta, 0.0), 1.0);
      case ActKind::kElu:
        return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
      case ActKind::kSoftsign:
        return x / (1.0 + std::fabs(x));
      case ActKind::kSoftplus:
        // log(1 + e^x) without overflow for large x.
        return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
    return x;
  }
};

struct ActivationInfo {
  std::string_view name;
  ActKind kind;
  int params;  // how many of (alpha, beta) it consumes
  double alpha, beta;
};

// The activations the spec lists, with the defaults of the corresponding ONNX operators.
constexpr ActivationInfo kActivations[] = {
    {"relu", ActKind::kRelu, 0, 0, 0},
    {"tanh", ActKind::kTanh, 0, 0, 0},
    {"sigmoid", ActKind::kSigmoid, 0, 0, 0},
    {"affine", ActKind::kAffine, 2, 1.0, 0.0},
    {"leakyrelu", ActKind::kLeakyRelu, 1, 0.01, 0},
    {"thresholdedrelu", ActKind::kThresholdedRelu, 1, 1.0, 0},
    {"scaledtanh", ActKind::kScaledTanh, 2, 1.0, 1.0},
    {"hardsigmoid", ActKind::kHardSigmoid, 2, 0.2, 0.5},
    {"elu", ActKind::kElu, 1, 1.0, 0},
    {"softsign", ActKind::kSoftsign, 0, 0, 0},
    {"softplus", ActKind::kSoftplus, 0, 0, 0},
};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// ---- Attributes -------------------------------------------------------------------------------

struct LstmAttrs {
  int64_t directions = 1;  // 2 when bidirectional
  bool reverse = false;    // direction "reverse"
  std::optional<int64_t> hidden_size;
  std::vector<Activation> activations;  // (f, g, h) per direction
  std::optional<double> clip;
  bool input_forget = false;
  bool batch_major = false;                       // layout 1
  std::array<bool, 3> want = {true, true, true};  // Y, Y_h, Y_c requested
};

Result<LstmAttrs> ParseLstm(const NodeContext& ctx) {
  LstmAttrs a;
  const AttrReader r(ctx.node);
  IDEM_ASSIGN_OR_RETURN(std::string direction, r.StringIn("direction", "forward",
                                                          {"forward", "reverse", "bidirectional"}));
  a.directions = direction == "bidirectional" ? 2 : 1;
  a.reverse = direction == "reverse";
  if (r.has("hidden_size")) {
    IDEM_ASSIGN_OR_RETURN(int64_t h, r.Int("hidden_size"));
    // 8 * hidden_size (B's width) must fit in int64.
    if (h < 1 || h > std::numeric_limits<int64_t>::max() / 8) {
      return InvalidModel(fmt::format("attribute 'hidden_size' is {}; it must be in [1, {}]", h,
                                      std::numeric_limits<int64_t>::max() / 8));
    }
    a.hidden_size = h;
  }
  IDEM_ASSIGN_OR_RETURN(int64_t input_forget, r.IntIn("input_forget", 0, {0, 1}));
  a.input_forget = input_forget == 1;
  IDEM_ASSIGN_OR_RETURN(int64_t layout, r.IntIn("layout", 0, {0, 1}));
  a.batch_major = layout == 1;
  IDEM_RETURN_IF_ERROR(r.IntIn("output_sequence", 0, {0, 1}).status());
  if (r.has("clip")) {
    IDEM_ASSIGN_OR_RETURN(float clip, r.Float("clip"));
    if (!(clip > 0)) {
      return InvalidModel(fmt::format("attribute 'clip' is {}; it must be > 0", clip));
    }
    a.clip = clip;
  }
  const auto count = static_cast<size_t>(3 * a.directions);
  std::vector<std::string> names;
  for (int64_t d = 0; d < a.directions; ++d) {
    for (const char* n : {"Sigmoid", "Tanh", "Tanh"}) names.push_back(n);
  }
  IDEM_ASSIGN_OR_RETURN(names, r.Strings("activations", names));
  if (names.size() != count) {
    return InvalidModel(fmt::format(
        "attribute 'activations' has {} names; direction {} needs {} (f, g, h per direction)",
        names.size(), direction, count));
  }
  IDEM_ASSIGN_OR_RETURN(std::vector<float> alphas,
                        r.Floats("activation_alpha", std::vector<float>{}));
  IDEM_ASSIGN_OR_RETURN(std::vector<float> betas,
                        r.Floats("activation_beta", std::vector<float>{}));
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : names) {
    const std::string lower = Lower(name);
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& candidate : kActivations) {
      if (candidate.name == lower) info = &candidate;
    }
    if (info == nullptr) {
      return InvalidModel(fmt::format(
          "attribute 'activations' names '{}'; it must be one of Relu, Tanh, Sigmoid, Affine, "
          "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus",
          name));
    }
    Activation act{info->kind, info->alpha, info->beta};
    // activation_alpha / activation_beta are consumed in the order of the activations that
    // take them; missing values take the defaults.
    if (info->params >= 1 && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (info->params >= 2 && next_beta < betas.size()) act.beta = betas[next_beta++];
    a.activations.push_back(act);
  }
  if (next_alpha < alphas.size() || next_beta < betas.size()) {
    return InvalidModel(fmt::format(
        "attributes 'activation_alpha' ({} values) and 'activation_beta' ({} values) hold more "
        "values than the activations consume ({} and {})",
        alphas.size(), betas.size(), next_alpha, next_beta));
  }
  for (size_t o = 0; o < 3; ++o) {
    a.want[o] = o < ctx.node.outputs.size() && !ctx.node.outputs[o].empty();
  }
  return a;
}

// ---- The shape rule ---------------------------------------------------------------------------

enum LstmInput : size_t { kX, kW, kR, kB, kSeqLens, kInitialH, kInitialC, kP, kInputCount };
constexpr const char* kInputNames[] = {"X",         "W",         "R", "B", "sequence_lens",
                                       "initial_h", "initial_c", "P"};

// Each input's dims, or nullopt when the input is absent (or its rank unknown at planning).
template <class D>
using LstmDims = std::array<std::optional<std::span<const D>>, kInputCount>;

template <class D>
Status ExpectDim(const LstmDims<D>& in, size_t input, size_t axis, std::optional<int64_t> expected,
                 std::string_view what) {
  if (!in[input] || !expected) return Status();
  const auto v = KnownDim((*in[input])[axis]);
  if (!v || *v == *expected) return Status();
  return InvalidArgument(fmt::format("LSTM: input '{}' has dim {} = {}; it must be {} = {}",
                                     kInputNames[input], axis, *v, what, *expected));
}
// As above with the description made only when the check fails (it is formatted; every Run
// checks).
template <class D, class Describe>
requires std::is_invocable_r_v<std::string, Describe> Status
ExpectDim(const LstmDims<D>& in, size_t input, size_t axis, std::optional<int64_t> expected,
          Describe&& describe) {
  if (!in[input] || !expected) return Status();
  const auto v = KnownDim((*in[input])[axis]);
  if (!v || *v == *expected) return Status();
  return ExpectDim(in, input, axis, expected, describe());
}

std::optional<int64_t> Times(std::optional<int64_t> v, int64_t k) {
  if (!v) return std::nullopt;
  int64_t out = 0;
  if (__builtin_mul_overflow(*v, k, &out)) return std::nullopt;
  return out;
}

// The one shape rule: checks every given input against the others and gives the shapes of Y,
// Y_h and Y_c.
template <class D>
Result<std::array<DimsOf<D>, 3>> LstmShape(const LstmAttrs& a, const LstmDims<D>& in) {
  constexpr size_t kRank[] = {3, 3, 3, 2, 1, 3, 3, 2};
  constexpr const char* kLayout[] = {"[seq_length, batch_size, input_size]",
                                     "[num_directions, 4*hidden_size, input_size]",
                                     "[num_directions, 4*hidden_size, hidden_size]",
                                     "[num_directions, 8*hidden_size]",
                                     "[batch_size]",
                                     "[num_directions, batch_size, hidden_size]",
                                     "[num_directions, batch_size, hidden_size]",
                                     "[num_directions, 3*hidden_size]"};
  for (size_t i = 0; i < kInputCount; ++i) {
    if (in[i] && in[i]->size() != kRank[i]) {
      const bool layout1 = a.batch_major && (i == kX || i == kInitialH || i == kInitialC);
      return InvalidArgument(fmt::format(
          "LSTM: input '{}' has rank {}; it must be {} {}", kInputNames[i], in[i]->size(), kRank[i],
          layout1 ? (i == kX ? "[batch_size, seq_length, input_size]"
                             : "[batch_size, num_directions, hidden_size]")
                  : kLayout[i]));
    }
  }
  auto dim = [&](size_t input, size_t axis) -> std::optional<int64_t> {
    if (!in[input]) return std::nullopt;
    return KnownDim((*in[input])[axis]);
  };
  const size_t seq_axis = a.batch_major ? 1 : 0, batch_axis = a.batch_major ? 0 : 1;
  const size_t state_dir_axis = a.batch_major ? 1 : 0, state_batch_axis = a.batch_major ? 0 : 1;
  const std::optional<int64_t> hidden = a.hidden_size ? a.hidden_size : dim(kR, 2);
  const std::optional<int64_t> dirs = a.directions;
  auto hs = [&a]() -> std::string {
    return a.hidden_size ? fmt::format("hidden_size {}", *a.hidden_size)
                         : std::string("hidden_size (R's dim 2)");
  };
  auto times_hs = [&hs](int k) { return [&hs, k] { return fmt::format("{} * {}", k, hs()); }; };
  // W must match hidden_size: the file's two statements of the same size.
  IDEM_RETURN_IF_ERROR(ExpectDim(in, kW, 0, dirs, "num_directions"));
  IDEM_RETURN_IF_ERROR(ExpectDim(in, kW, 1, Times(hidden, 4), times_hs(4)));
  IDEM_RETURN_IF_ERROR(ExpectDim(in, kW, 2, dim(kX, 2), "X's input_size"));
  IDEM_RETURN_IF_ERROR(ExpectDim(in, kR, 0, dirs, "num_directions"));
  IDEM_RETURN_IF_ERROR(ExpectDim(in, kR, 1, Times(hidden, 4), times_hs(4)));
  IDEM_RETURN_IF_ERROR(ExpectDim(in, kR, 2, hidden, hs));
  IDEM_RETURN_IF_ERROR(ExpectDim(in, kB, 0, dirs, "num_directions"));
  IDEM_RETURN_IF_ERROR(ExpectDim(in, kB, 1, Times(hidden, 8), times_hs(8)));
  IDEM_RETURN_IF_ERROR(ExpectDim(in, kP, 0, dirs, "num_directions"));
  IDEM_RETURN_IF_ERROR(ExpectDim(in, kP, 1, Times(hidden, 3), times_hs(3)));
  IDEM_RETURN_IF_ERROR(ExpectDim(in, kSeqLens, 0, dim(kX, batch_axis), "X's batch_size"));
  for (size_t s : {kInitialH, kInitialC}) {
    IDEM_RETURN_IF_ERROR(ExpectDim(in, s, state_dir_axis, dirs, "num_directions"));
    IDEM_RETURN_IF_ERROR(ExpectDim(in, s, state_batch_axis, dim(kX, batch_axis), "X's batch_size"));
    IDEM_RETURN_IF_ERROR(ExpectDim(in, s, 2, hidden, hs));
  }
  const D seq = in[kX] ? (*in[kX])[seq_axis] : MakeDim<D>(std::nullopt);
  const D batch = in[kX] ? (*in[kX])[batch_axis] : MakeDim<D>(std::nullopt);
  const D h = MakeDim<D>(hidden), nd = MakeDim<D>(dirs);
  std::array<DimsOf<D>, 3> out;
  out[0] = a.batch_major ? DimsOf<D>{batch, seq, nd, h} : DimsOf<D>{seq, nd, batch, h};
  out[1] = a.batch_major ? DimsOf<D>{batch, nd, h} : DimsOf<D>{nd, batch, h};
  out[2] = out[1];
  return out;
}

// The multiply-adds of an LSTM: per direction, time step and batch row, the 4 * hidden gates
// each sum input_size + hidden_size products (and each step updates hidden_size states). Checked
// when X's and R's dims are known: X may be empty (input_size 0) with a huge sequence, which would
// otherwise loop seq_length x batch_size times for nothing.
template <class D>
Status CheckLstmWork(const LstmAttrs& a, const LstmDims<D>& in, const Limits& limits) {
  if (!in[kX] || !in[kR] || in[kX]->size() != 3 || in[kR]->size() != 3) return {};
  const auto seq = KnownDim((*in[kX])[a.batch_major ? 1 : 0]);
  const auto batch = KnownDim((*in[kX])[a.batch_major ? 0 : 1]);
  const auto input = KnownDim((*in[kX])[2]);
  const auto hidden = KnownDim((*in[kR])[2]);
  if (!seq || !batch || !input || !hidden) return {};
  const auto h = static_cast<double>(*hidden);
  const double per_step = 4 * h * (static_cast<double>(*input) + h) + h;
  return CheckWork(limits,
                   static_cast<double>(a.directions) * static_cast<double>(*seq) *
                       static_cast<double>(*batch) * std::max(1.0, per_step),
                   "LSTM",
                   "multiply-adds (directions x seq_length x batch_size x 4 * hidden_size x "
                   "(input_size + hidden_size))");
}

Result<Inference> InferLstm(const LstmAttrs& a, const Facts& facts) {
  LstmDims<Dim> in;
  for (size_t i = 0; i < kInputCount; ++i) {
    if (facts.has(i) && facts.shape(i)) in[i] = std::span<const Dim>(*facts.shape(i));
  }
  IDEM_ASSIGN_OR_RETURN(auto shapes, LstmShape<Dim>(a, in));
  IDEM_RETURN_IF_ERROR(CheckLstmWork<Dim>(a, in, facts.context().limits));
  const ElementType e = facts.element_type(kX);
  Inference inf;
  for (auto& s : shapes) inf.types.push_back(TensorType(e, std::move(s)));
  return inf;
}

// ---- Weights ----------------------------------------------------------------------------------

// W, R, B and P of every direction in the compute type S (float, or double for double), as the
// loops read them: W [dirs][4H][input], R [dirs][4H][H], bias = Wb + Rb [dirs][4H] in double,
// P [dirs][3H] (empty when absent).
template <class S>
struct LstmWeights {
  int64_t hidden = 0, input = 0;
  std::vector<S> w, r, p;
  std::vector<double> bias;
};

template <class T>
std::vector<ComputeType<T>> Convert(const Tensor& t) {
  std::vector<ComputeType<T>> out(static_cast<size_t>(t.element_count()));
  const std::byte* p = t.data().data();
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = ToCompute(LoadElement<T>(p, static_cast<int64_t>(i)));
  }
  return out;
}

// Converts the weights (shapes already checked by LstmShape).
template <class T>
std::shared_ptr<const LstmWeights<ComputeType<T>>> PackWeights(int64_t dirs, const Tensor& w,
                                                               const Tensor& r, const Tensor* b,
                                                               const Tensor* p) {
  auto out = std::make_shared<LstmWeights<ComputeType<T>>>();
  out->hidden = r.shape()[2];
  out->input = w.shape()[2];
  out->w = Convert<T>(w);
  out->r = Convert<T>(r);
  if (p != nullptr) out->p = Convert<T>(*p);
  const int64_t h4 = 4 * out->hidden;
  out->bias.assign(static_cast<size_t>(dirs * h4), 0.0);
  if (b != nullptr) {
    const std::byte* pb = b->data().data();
    for (int64_t d = 0; d < dirs; ++d) {
      for (int64_t g = 0; g < h4; ++g) {
        const double wb = static_cast<double>(ToCompute(LoadElement<T>(pb, d * 2 * h4 + g)));
        const double rb = static_cast<double>(ToCompute(LoadElement<T>(pb, d * 2 * h4 + h4 + g)));
        out->bias[static_cast<size_t>(d * h4 + g)] = wb + rb;
      }
    }
  }
  return out;
}

// ---- The kernel -------------------------------------------------------------------------------

template <class T>
class LstmKernel final : public Kernel {
 public:
  using S = ComputeType<T>;
  LstmKernel(LstmAttrs attrs, std::shared_ptr<const LstmWeights<S>> packed)
      : a_(std::move(attrs)), packed_(std::move(packed)) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    auto tensor = [&](size_t i) -> const Tensor* {
      return i < inputs.size() && inputs[i] != nullptr ? &inputs[i]->tensor() : nullptr;
    };
    LstmDims<int64_t> in;
    for (size_t i = 0; i < kInputCount; ++i) {
      if (const Tensor* t = tensor(i)) in[i] = t->shape();
    }
    IDEM_ASSIGN_OR_RETURN(auto shapes, LstmShape<int64_t>(a_, in));
    IDEM_RETURN_IF_ERROR(CheckLstmWork<int64_t>(a_, in, ctx.limits()));
    const Tensor& x = *tensor(kX);
    const int64_t seq = x.shape()[a_.batch_major ? 1 : 0];
    const int64_t batch = x.shape()[a_.batch_major ? 0 : 1];
    const int64_t dirs = a_.directions;
    // sequence_lens: each row's length, in [0, seq_length]. An empty X (input_size 0) may have
    // a huge batch: its lengths are scratch, checked against the budget like the outputs.
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(batch) * sizeof(int64_t)));
    Ints lengths(static_cast<size_t>(batch), seq);
    if (const Tensor* sl = tensor(kSeqLens)) {
      const auto v = sl->data_as<int32_t>();
      for (int64_t b = 0; b < batch; ++b) {
        if (v[b] < 0 || v[b] > seq) {
          return InvalidArgument(fmt::format(
              "LSTM: sequence_lens[{}] is {}; it must be in [0, seq_length = {}]", b, v[b], seq));
        }
        lengths[static_cast<size_t>(b)] = v[b];
      }
    }
    // The weights: packed at Create, or now (checked against the run's budget first).
    std::shared_ptr<const LstmWeights<S>> packed = packed_;
    if (!packed) {
      const Tensor& w = *tensor(kW);
      const Tensor& r = *tensor(kR);
      uint64_t count = static_cast<uint64_t>(w.element_count() + r.element_count());
      if (const Tensor* p = tensor(kP)) count += static_cast<uint64_t>(p->element_count());
      IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(count * sizeof(S)));
      packed = PackWeights<T>(dirs, w, r, tensor(kB), tensor(kP));
    }
    const LstmWeights<S>& wt = *packed;
    const int64_t hidden = wt.hidden, input = wt.input, h4 = 4 * hidden;
    // Outputs (only the requested ones), then the per-row scratch.
    std::array<T*, 3> out = {nullptr, nullptr, nullptr};
    for (size_t o = 0; o < 3 && o < outputs.size(); ++o) {
      if (!a_.want[o]) continue;
      IDEM_ASSIGN_OR_RETURN(outputs[o],
                            AllocateTensorAs(ctx, x.element_type(), shapes[o], &out[o]));
      const int64_t n = outputs[o].tensor().element_count();
      for (int64_t i = 0; i < n; ++i) {
        StoreElement<T>(reinterpret_cast<std::byte*>(out[o]), i, FromCompute<T>(S{0}));
      }
    }
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(6 * hidden) * sizeof(double)));
    std::vector<double> h(static_cast<size_t>(hidden)), c(static_cast<size_t>(hidden)),
        gates(static_cast<size_t>(h4));
    const std::byte* px = x.data().data();
    const Tensor* h0 = tensor(kInitialH);
    const Tensor* c0 = tensor(kInitialC);
    // Index of state element j of (direction d, row b) in initial_h / Y_h: per the layout.
    auto state_index = [&](int64_t d, int64_t b, int64_t j) {
      return (a_.batch_major ? (b * dirs + d) : (d * batch + b)) * hidden + j;
    };
    auto y_index = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
      return (a_.batch_major ? ((b * seq + t) * dirs + d) : ((t * dirs + d) * batch + b)) * hidden +
             j;
    };
    auto x_index = [&](int64_t t, int64_t b) {
      return (a_.batch_major ? (b * seq + t) : (t * batch + b)) * input;
    };
    auto load = [](const Tensor* t, int64_t i) {
      return static_cast<double>(ToCompute(LoadElement<T>(t->data().data(), i)));
    };
    auto clip = [&](double v) { return a_.clip ? std::min(std::max(v, -*a_.clip), *a_.clip) : v; };
    for (int64_t d = 0; d < dirs; ++d) {
      const bool reverse = a_.reverse || d == 1;
      const Activation& f = a_.activations[static_cast<size_t>(3 * d)];
      const Activation& g = a_.activations[static_cast<size_t>(3 * d + 1)];
      const Activation& hact = a_.activations[static_cast<size_t>(3 * d + 2)];
      const S* w = wt.w.data() + d * h4 * input;
      const S* r = wt.r.data() + d * h4 * hidden;
      const double* bias = wt.bias.data() + d * h4;
      const S* p = wt.p.empty() ? nullptr : wt.p.data() + d * 3 * hidden;
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t len = lengths[static_cast<size_t>(b)];
        if (len == 0) continue;  // Y, Y_h and Y_c stay 0 for this row
        for (int64_t j = 0; j < hidden; ++j) {
          h[j] = h0 != nullptr ? load(h0, state_index(d, b, j)) : 0.0;
          c[j] = c0 != nullptr ? load(c0, state_index(d, b, j)) : 0.0;
        }
        for (int64_t step = 0; step < len; ++step) {
          const int64_t t = reverse ? len - 1 - step : step;
          const int64_t xt = x_index(t, b);
          // gates = bias + X_t . W^T + H_{t-1} . R^T, gate order i, o, f, c.
          for (int64_t q = 0; q < h4; ++q) {
            double acc = bias[q];
            const S* wq = w + q * input;
            for (int64_t k = 0; k < input; ++k) {
              acc += static_cast<double>(ToCompute(LoadElement<T>(px, xt + k))) *
                     static_cast<double>(wq[k]);
            }
            const S* rq = r + q * hidden;
            for (int64_t k = 0; k < hidden; ++k) acc += h[k] * static_cast<double>(rq[k]);
            gates[q] = acc;
          }
          for (int64_t j = 0; j < hidden; ++j) {
            double gi = gates[j], go = gates[hidden + j], gf = gates[2 * hidden + j],
                   gc = gates[3 * hidden + j];
            if (p != nullptr) {
              gi += static_cast<double>(p[j]) * c[j];
              gf += static_cast<double>(p[2 * hidden + j]) * c[j];
            }
            const double it = f(clip(gi));
            const double ft = a_.input_forget ? 1.0 - it : f(clip(gf));
            const double ct = g(clip(gc));
            c[j] = ft * c[j] + it * ct;
            if (p != nullptr) go += static_cast<double>(p[hidden + j]) * c[j];
            const double ot = f(clip(go));
            h[j] = ot * hact(c[j]);
          }
          if (out[0] != nullptr) {
            for (int64_t j = 0; j < hidden; ++j) {
              StoreElement<T>(reinterpret_cast<std::byte*>(out[0]), y_index(t, d, b, j),
                              FromCompute<T>(static_cast<S>(h[j])));
            }
          }
        }
        for (int64_t j = 0; j < hidden; ++j) {
          if (out[1] != nullptr) {
            StoreElement<T>(reinterpret_cast<std::byte*>(out[1]), state_index(d, b, j),
                            FromCompute<T>(static_cast<S>(h[j])));
          }
          if (out[2] != nullptr) {
            StoreElement<T>(reinterpret_cast<std::byte*>(out[2]), state_index(d, b, j),
                            FromCompute<T>(static_cast<S>(c[j])));
          }
        }
      }
    }
    return Status();
  }

 private:
  LstmAttrs a_;
  std::shared_ptr<const LstmWeights<S>> packed_;  // null unless W, R (B, P) are constants
};

// ---- Fast float LSTM (SessionOptions::reference_kernels off) ------------------------------------
//
// The default cell (f = Sigmoid, g = h = Tanh, no clip, no peepholes, input_forget 0) on float
// runs on the fast kernels: per step and batch row, the four gates as one product
//   gates (1 x 4H) = [X_t, H_{t-1}] (1 x (I + H)) * [W; R]^T, + (Wb + Rb)
// with [W; R]^T packed once at Create (fast::PackBParts; per run when the weights are fed), each
// gate one chain of fused multiply-adds (fast/packed_gemm.h), then Sigmoid over i, o, f and Tanh
// over c through SLEEF (fast/vector_math.h), C = f * C + i * c and H = o * Tanh(C) in float, one
// rounding per operation. The same bits on every run, SIMD target and thread count; within the
// tests' tolerance of the reference kernel (double state). Other cells run the reference kernel.

struct FastLstmWeights {
  int64_t hidden = 0, input = 0;
  std::vector<fast::PackedB> packed;  // [W_d; R_d]^T per direction: (I + H) x 4H
  std::vector<float> bias;            // Wb + Rb per direction (4H each), zeros without B
};

std::shared_ptr<const FastLstmWeights> PackFastLstm(int64_t dirs, const Tensor& w, const Tensor& r,
                                                    const Tensor* b) {
  auto out = std::make_shared<FastLstmWeights>();
  out->hidden = r.shape()[2];
  out->input = w.shape()[2];
  const int64_t h = out->hidden, in = out->input, h4 = 4 * h;
  const float* pw = w.data_as<float>().data();
  const float* pr = r.data_as<float>().data();
  for (int64_t d = 0; d < dirs; ++d) {
    const fast::BPart parts[] = {{pw + d * h4 * in, in, in}, {pr + d * h4 * h, h, h}};
    out->packed.push_back(fast::PackBParts(parts, h4, /*transposed=*/true));
  }
  out->bias.assign(static_cast<size_t>(dirs * h4), 0.0f);
  if (b != nullptr) {
    const float* pb = b->data_as<float>().data();
    for (int64_t d = 0; d < dirs; ++d) {
      for (int64_t q = 0; q < h4; ++q) {
        out->bias[static_cast<size_t>(d * h4 + q)] = pb[d * 2 * h4 + q] + pb[d * 2 * h4 + h4 + q];
      }
    }
  }
  return out;
}

// Whether the fast cell computes what these attributes ask.
bool FastLstmCell(const LstmAttrs& a) {
  if (a.clip || a.input_forget) return false;
  for (size_t i = 0; i < a.activations.size(); ++i) {
    const ActKind want = i % 3 == 0 ? ActKind::kSigmoid : ActKind::kTanh;
    if (a.activations[i].kind != want) return false;
  }
  return true;
}

class FastLstmKernel final : public Kernel {
 public:
  FastLstmKernel(LstmAttrs attrs, std::shared_ptr<const FastLstmWeights> packed,
                 const fast::TaskRunner* threads)
      : a_(attrs),
        packed_(std::move(packed)),
        threads_(threads),
        reference_(std::move(attrs), nullptr) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    auto tensor = [&](size_t i) -> const Tensor* {
      return i < inputs.size() && inputs[i] != nullptr ? &inputs[i]->tensor() : nullptr;
    };
    // Peepholes (P) and other element types: the reference kernel.
    if (tensor(kP) != nullptr || tensor(kX)->element_type() != ElementType::kFloat) {
      return reference_.RunWith(ctx, inputs, outputs);
    }
    LstmDims<int64_t> in;
    for (size_t i = 0; i < kInputCount; ++i) {
      if (const Tensor* t = tensor(i)) in[i] = t->shape();
    }
    IDEM_ASSIGN_OR_RETURN(auto shapes, LstmShape<int64_t>(a_, in));
    // The same bounds as the reference kernel: the node's work, then the lengths' scratch.
    IDEM_RETURN_IF_ERROR(CheckLstmWork<int64_t>(a_, in, ctx.limits()));
    const Tensor& x = *tensor(kX);
    const int64_t seq = x.shape()[a_.batch_major ? 1 : 0];
    const int64_t batch = x.shape()[a_.batch_major ? 0 : 1];
    const int64_t dirs = a_.directions;
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(batch) * sizeof(int64_t)));
    Ints lengths(static_cast<size_t>(batch), seq);
    if (const Tensor* sl = tensor(kSeqLens)) {
      const auto v = sl->data_as<int32_t>();
      for (int64_t b = 0; b < batch; ++b) {
        if (v[b] < 0 || v[b] > seq) {
          return InvalidArgument(fmt::format(
              "LSTM: sequence_lens[{}] is {}; it must be in [0, seq_length = {}]", b, v[b], seq));
        }
        lengths[static_cast<size_t>(b)] = v[b];
      }
    }
    std::shared_ptr<const FastLstmWeights> packed = packed_;
    if (!packed) {
      const Tensor& w = *tensor(kW);
      const Tensor& r = *tensor(kR);
      const int64_t bytes = fast::PackedBBytes(w.shape()[2] + r.shape()[2], 4 * r.shape()[2]);
      if (bytes < 0) return InvalidArgument("LSTM: the packed weights overflow int64");
      IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(bytes) * dirs));
      packed = PackFastLstm(dirs, w, r, tensor(kB));
    }
    const FastLstmWeights& wt = *packed;
    const int64_t hidden = wt.hidden, input = wt.input, h4 = 4 * hidden;
    std::array<float*, 3> out = {nullptr, nullptr, nullptr};
    for (size_t o = 0; o < 3 && o < outputs.size(); ++o) {
      if (!a_.want[o]) continue;
      IDEM_ASSIGN_OR_RETURN(outputs[o],
                            AllocateTensorAs(ctx, ElementType::kFloat, shapes[o], &out[o]));
      std::fill(out[o], out[o] + outputs[o].tensor().element_count(), 0.0f);
    }
    // Scratch: [x, h] (I + H), the gates (4H), c and tanh(c) (2H).
    const int64_t floats = input + hidden + h4 + 2 * hidden;
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(static_cast<uint64_t>(floats) * sizeof(float)));
    float* xh = fast::ThreadScratch(1, static_cast<size_t>(floats));
    float* h = xh + input;
    float* gates = h + hidden;
    float* c = gates + h4;
    float* tc = c + hidden;
    const float* px = x.data_as<float>().data();
    const float* h0 =
        tensor(kInitialH) != nullptr ? tensor(kInitialH)->data_as<float>().data() : nullptr;
    const float* c0 =
        tensor(kInitialC) != nullptr ? tensor(kInitialC)->data_as<float>().data() : nullptr;
    auto state_index = [&](int64_t d, int64_t b) {
      return (a_.batch_major ? (b * dirs + d) : (d * batch + b)) * hidden;
    };
    auto y_index = [&](int64_t t, int64_t d, int64_t b) {
      return (a_.batch_major ? ((b * seq + t) * dirs + d) : ((t * dirs + d) * batch + b)) * hidden;
    };
    auto x_index = [&](int64_t t, int64_t b) {
      return (a_.batch_major ? (b * seq + t) : (t * batch + b)) * input;
    };
    for (int64_t d = 0; d < dirs; ++d) {
      const bool reverse = a_.reverse || d == 1;
      const fast::PackedB& pw = wt.packed[static_cast<size_t>(d)];
      fast::Epilogue ep;
      ep.bias = wt.bias.data() + d * h4;
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t len = lengths[static_cast<size_t>(b)];
        if (len == 0) continue;  // Y, Y_h and Y_c stay 0 for this row
        const int64_t s = state_index(d, b);
        for (int64_t j = 0; j < hidden; ++j) {
          h[j] = h0 != nullptr ? h0[s + j] : 0.0f;
          c[j] = c0 != nullptr ? c0[s + j] : 0.0f;
        }
        for (int64_t step = 0; step < len; ++step) {
          const int64_t t = reverse ? len - 1 - step : step;
          std::copy(px + x_index(t, b), px + x_index(t, b) + input, xh);
          fast::GemmPacked(xh, input + hidden, pw, gates, h4, 1, 0.0f, ep, threads_);
          // Gate order i, o, f, c: Sigmoid over the first three, Tanh over the last.
          fast::Sigmoid(std::span<const float>(gates, 3 * hidden),
                        std::span<float>(gates, 3 * hidden));
          fast::Tanh(std::span<const float>(gates + 3 * hidden, hidden),
                     std::span<float>(gates + 3 * hidden, hidden));
          for (int64_t j = 0; j < hidden; ++j) {
            const float fc = gates[2 * hidden + j] * c[j];
            const float ic = gates[j] * gates[3 * hidden + j];
            c[j] = fc + ic;
          }
          fast::Tanh(std::span<const float>(c, hidden), std::span<float>(tc, hidden));
          for (int64_t j = 0; j < hidden; ++j) h[j] = gates[hidden + j] * tc[j];
          if (out[0] != nullptr) std::copy(h, h + hidden, out[0] + y_index(t, d, b));
        }
        if (out[1] != nullptr) std::copy(h, h + hidden, out[1] + s);
        if (out[2] != nullptr) std::copy(c, c + hidden, out[2] + s);
      }
    }
    return Status();
  }

 private:
  LstmAttrs a_;
  std::shared_ptr<const FastLstmWeights> packed_;  // null unless W, R (and B) are constants
  const fast::TaskRunner* threads_;
  LstmKernel<float> reference_;  // peepholes
};

Result<std::unique_ptr<Kernel>> CreateLstm(const LstmAttrs& a, const Facts& facts) {
  if (!facts.context().reference_kernels && facts.element_type(kX) == ElementType::kFloat &&
      FastLstmCell(a) && !facts.has(kP)) {
    std::shared_ptr<const FastLstmWeights> packed;
    auto known = [&](size_t i) {
      return !facts.has(i) || (facts.constant(i) != nullptr && facts.constant(i)->is_tensor() &&
                               facts.constant(i)->tensor().element_type() == ElementType::kFloat);
    };
    if (known(kW) && known(kR) && known(kB)) {
      LstmDims<int64_t> in;
      for (size_t i : {kW, kR, kB}) {
        if (facts.has(i)) in[i] = facts.constant(i)->tensor().shape();
      }
      IDEM_RETURN_IF_ERROR(LstmShape<int64_t>(a, in).status());
      packed =
          PackFastLstm(a.directions, facts.constant(kW)->tensor(), facts.constant(kR)->tensor(),
                       facts.has(kB) ? &facts.constant(kB)->tensor() : nullptr);
    }
    return std::unique_ptr<Kernel>(
        std::make_unique<FastLstmKernel>(a, std::move(packed), facts.context().threads));
  }
  std::unique_ptr<Kernel> kernel;
  IDEM_RETURN_IF_ERROR(DispatchFloat(facts.element_type(kX), "LSTM", [&](auto tag) -> Status {
    using T = decltype(tag);
    std::shared_ptr<const LstmWeights<ComputeType<T>>> packed;
    // Pre-pack when every weight input is a constant (absent B / P count as known).
    auto known = [&](size_t i) { return !facts.has(i) || facts.constant(i) != nullptr; };
    if (known(kW) && known(kR) && known(kB) && known(kP)) {
      LstmDims<int64_t> in;
      for (size_t i : {kW, kR, kB, kP}) {
        if (facts.has(i)) in[i] = facts.constant(i)->tensor().shape();
      }
      IDEM_RETURN_IF_ERROR(LstmShape<int64_t>(a, in).status());
      auto tensor = [&](size_t i) -> const Tensor* {
        return facts.has(i) ? &facts.constant(i)->tensor() : nullptr;
      };
      packed = PackWeights<T>(a.directions, *tensor(kW), *tensor(kR), tensor(kB), tensor(kP));
    }
    kernel = std::make_unique<LstmKernel<T>>(a, std::move(packed));
    return Status();
  }));
  return kernel;
}

// ---- Registration -----------------------------------------------------------------------------

KernelSchema LstmSchema(int version) {
  using Arity = FormalParameter::Arity;
  KernelSchema s;
  s.op_type = "LSTM";
  s.since_version = version;
  s.inputs = {{"X", "T"},
              {"W", "T"},
              {"R", "T"},
              {"B", "T", Arity::kOptional},
              {"sequence_lens", "T1", Arity::kOptional},
              {"initial_h", "T", Arity::kOptional},
              {"initial_c", "T", Arity::kOptional},
              {"P", "T", Arity::kOptional}};
  s.outputs = {
      {"Y", "T", Arity::kOptional}, {"Y_h", "T", Arity::kOptional}, {"Y_c", "T", Arity::kOptional}};
  std::vector<ElementType> types = FloatTypes(false);
  if (version >= 22) types.insert(types.begin(), ElementType::kBfloat16);
  s.constraints = {{"T", TensorTypes(types)}, {"T1", {Type::Tensor(ElementType::kInt32)}}};
  s.attributes = {"activation_alpha", "activation_beta", "activations", "clip",
                  "direction",        "hidden_size",     "input_forget"};
  if (version == 1) s.attributes.push_back("output_sequence");
  if (version >= 14) s.attributes.push_back("layout");
  // Not folded at planning: its work is outputs x kernel (or K), not proportional to the file, so
  // a small model could make Session::Create compute for hours with no deadline to stop it.
  s.foldable = false;
  DefineOp<LstmAttrs>(s, ParseLstm, InferLstm, CreateLstm);
  return s;
}

}  // namespace

void RegisterRnnKernels(KernelRegistry& registry) {
  for (int v : {1, 7, 14, 22}) registry.Register(LstmSchema(v));
}

}  // namespace idem
