// idem_kernel_bench: Google Benchmark rows for the fast kernels (src/kernels/fast), each against
// a naive loop, on the matrix shapes of the real models (issue 18). A row is
//   gemm/<shape>/<impl>[/threads:2]
// with <shape> = m x n x k (C[m x n] = A[m x k] * B[k x n]) and <impl>:
//   packed    GemmPacked: B packed once before the timed loop (a weight packed at Session::Create)
//   unpacked  GemmUnpacked: B read where it is (Conv's im2col columns, the weights being A)
//   naive     the plain triple loop (i, j, then p innermost; one multiply and one add per step)
// and the counter GFLOP/s = 2 m n k / time. Also vector math rows (exp/tanh/sigmoid/log over
// 4096 floats) against std:: loops, in Gelem/s.
//
//   build-dev/bench/idem_kernel_bench                      # all rows
//   build-dev/bench/idem_kernel_bench --benchmark_filter=silero
//   build-dev/bench/idem_kernel_bench --fast_target=AVX2   # force a SIMD target
#include <benchmark/benchmark.h>

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "src/kernels/fast/packed_gemm.h"
#include "src/kernels/fast/simd.h"
#include "src/kernels/fast/vector_math.h"

namespace {

using idem::fast::Epilogue;
using idem::fast::PackedB;

std::vector<float> Values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A persistent pool whose workers sleep on a condition variable between calls (no spinning).
class Pool final : public idem::fast::TaskRunner {
 public:
  explicit Pool(int threads) : threads_(threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }
  ~Pool() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  int concurrency() const override { return threads_; }
  void Run(int64_t count, void (*fn)(void*, int64_t), void* context) const override {
    std::unique_lock<std::mutex> lock(mu_);
    fn_ = fn;
    context_ = context;
    count_ = count;
    next_ = 0;
    done_ = 0;
    ++generation_;
    cv_.notify_all();
    while (next_ < count_) {
      const int64_t t = next_++;
      lock.unlock();
      fn(context, t);
      lock.lock();
      ++done_;
    }
    done_cv_.wait(lock, [&] { return done_ == count_; });
  }

 private:
  void Work() const {
    std::unique_lock<std::mutex> lock(mu_);
    uint64_t seen = 0;
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      while (next_ < count_) {
        const int64_t t = next_++;
        lock.unlock();
        fn_(context_, t);
        lock.lock();
        if (++done_ == count_) done_cv_.notify_all();
      }
    }
  }
  int threads_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::condition_variable done_cv_;
  mutable void (*fn_)(void*, int64_t) = nullptr;
  mutable void* context_ = nullptr;
  mutable int64_t count_ = 0;
  mutable int64_t next_ = 0;
  mutable int64_t done_ = 0;
  mutable uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

void NaiveGemm(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float s = 0.0f;
      for (int64_t p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
      c[i * n + j] = s;
    }
  }
}

enum class Impl { kPacked, kUnpacked, kNaive };

void GemmRow(benchmark::State& state, int64_t m, int64_t n, int64_t k, Impl impl, int threads) {
  const std::vector<float> a = Values(static_cast<size_t>(m * k), 1);
  const std::vector<float> b = Values(static_cast<size_t>(k * n), 2);
  std::vector<float> c(static_cast<size_t>(m * n));
  const PackedB packed =
      impl == Impl::kPacked ? idem::fast::PackB(b.data(), k, n, false) : PackedB();
  const Pool pool(threads);
  const idem::fast::TaskRunner* runner = threads > 1 ? &pool : nullptr;
  for (auto _ : state) {
    switch (impl) {
      case Impl::kPacked:
        idem::fast::GemmPacked(a.data(), k, packed, c.data(), n, m, 0.0f, Epilogue{}, runner);
        break;
      case Impl::kUnpacked:
        idem::fast::GemmUnpacked(a.data(), k, b.data(), n, c.data(), n, m, n, k, 0.0f, Epilogue{},
                                 runner);
        break;
      case Impl::kNaive:
        NaiveGemm(a.data(), b.data(), c.data(), m, n, k);
        break;
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(idem::fast::SimdTargetName(idem::fast::ActiveSimdTarget()));
}

struct Shape {
  const char* name;
  int64_t m, n, k;
  bool unpacked;  // B is the activation operand in the model (Conv with the weights as A)
  bool threads;   // large enough for a 2-thread row
};

// Silero VAD (per 32 ms chunk): the LSTM gates as one product [x, h] (1 x 256) * [W; R]^T
// (256 x 512), a 128 x 128 GEMV, the STFT conv (4 frames x 258 filters x 256 taps) and an
// encoder conv (4 positions x 128 channels x 129*3 taps), weights packed as B. PaddleOCR det
// convolutions as im2col GEMMs with the weights as A (Cout x Cin*kh*kw) and the columns as an
// unpacked B (Cin*kh*kw x H*W): the stem 3x3 stride 2 at 640x640 (16 x 320*320 x 27) and a 3x3
// on 64 channels at 80x80 (64 x 80*80 x 576); the same two with the weights packed as B (the
// NHWC orientation: H*W x Cout x K).
const Shape kShapes[] = {
    {"silero_lstm_1x512x256", 1, 512, 256, false, false},
    {"silero_gemv_1x128x128", 1, 128, 128, false, false},
    {"silero_stft_4x258x256", 4, 258, 256, false, false},
    {"silero_enc_4x128x387", 4, 128, 387, false, false},
    {"ppocr_det_stem_16x102400x27", 16, 102400, 27, true, true},
    {"ppocr_det_conv_64x6400x576", 64, 6400, 576, true, true},
    {"ppocr_det_stem_nhwc_102400x16x27", 102400, 16, 27, false, true},
    {"ppocr_det_conv_nhwc_6400x64x576", 6400, 64, 576, false, true},
};

template <float (*F)(float)>
void StdMap(const std::vector<float>& x, std::vector<float>& y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = F(x[i]);
}
float StdExp(float x) { return std::exp(x); }
float StdLog(float x) { return std::log(x); }
float StdTanh(float x) { return std::tanh(x); }
float StdSigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

void MathRow(benchmark::State& state, void (*fast)(std::span<const float>, std::span<float>),
             void (*naive)(const std::vector<float>&, std::vector<float>&), bool positive) {
  std::vector<float> x = Values(4096, 3);
  if (positive) {
    for (float& v : x) v = std::abs(v) * 10.0f + 1e-3f;
  } else {
    for (float& v : x) v *= 10.0f;
  }
  std::vector<float> y(x.size());
  for (auto _ : state) {
    if (fast != nullptr) {
      fast(x, y);
    } else {
      naive(x, y);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["Gelem/s"] = benchmark::Counter(static_cast<double>(x.size()) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void RegisterRows() {
  for (const Shape& s : kShapes) {
    const std::string base = std::string("gemm/") + s.name + "/";
    const Impl fast = s.unpacked ? Impl::kUnpacked : Impl::kPacked;
    const char* fast_name = s.unpacked ? "unpacked" : "packed";
    benchmark::RegisterBenchmark((base + fast_name).c_str(), [=](benchmark::State& st) {
      GemmRow(st, s.m, s.n, s.k, fast, 1);
    })->Unit(benchmark::kMicrosecond);
    if (s.threads) {
      benchmark::RegisterBenchmark(
          (base + fast_name + "/threads:2").c_str(),
          [=](benchmark::State& st) { GemmRow(st, s.m, s.n, s.k, fast, 2); })
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
    benchmark::RegisterBenchmark((base + "naive").c_str(), [=](benchmark::State& st) {
      GemmRow(st, s.m, s.n, s.k, Impl::kNaive, 1);
    })->Unit(benchmark::kMicrosecond);
  }
  struct MathShape {
    const char* name;
    void (*fast)(std::span<const float>, std::span<float>);
    void (*naive)(const std::vector<float>&, std::vector<float>&);
    bool positive;
  };
  const MathShape math[] = {
      {"exp", idem::fast::Exp, StdMap<StdExp>, false},
      {"log", idem::fast::Log, StdMap<StdLog>, true},
      {"tanh", idem::fast::Tanh, StdMap<StdTanh>, false},
      {"sigmoid", idem::fast::Sigmoid, StdMap<StdSigmoid>, false},
  };
  for (const MathShape& f : math) {
    const std::string base = std::string("math/") + f.name + "_4096/";
    benchmark::RegisterBenchmark((base + "fast").c_str(), [=](benchmark::State& st) {
      MathRow(st, f.fast, nullptr, f.positive);
    });
    benchmark::RegisterBenchmark((base + "std").c_str(), [=](benchmark::State& st) {
      MathRow(st, nullptr, f.naive, f.positive);
    });
  }
}

}  // namespace

int main(int argc, char** argv) {
  // --fast_target=AVX2 (or SCALAR, ...): force that SIMD target (default: the best one).
  std::unique_ptr<idem::fast::ScopedSimdTarget> forced;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--fast_target=", 0) != 0) continue;
    const std::string want = arg.substr(14);
    for (int64_t t : idem::fast::SimdTargets()) {
      if (idem::fast::SimdTargetName(t) == want) {
        forced = std::make_unique<idem::fast::ScopedSimdTarget>(t);
      }
    }
    if (forced == nullptr) {
      std::fprintf(stderr, "unknown or unsupported --fast_target=%s\n", want.c_str());
      return 1;
    }
    for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
    --argc;
    break;
  }
  RegisterRows();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("fast_kernel_target",
                              idem::fast::SimdTargetName(idem::fast::ActiveSimdTarget()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
