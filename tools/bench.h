// `idem bench MODEL`: the latency of repeated runs of one model on given or generated inputs
// (after warm-up runs), as onnxruntime_perf_test measures it.
#ifndef IDEM_TOOLS_BENCH_H_
#define IDEM_TOOLS_BENCH_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idem/options.h"
#include "idem/status.h"
#include "idem/type.h"
#include "idem/value.h"

namespace idem::tools {

// At most this many per-run timings are kept (8 MiB), whatever the number of runs. Beyond it the
// kept timings are thinned to every other one and from then on every other run is recorded (then
// every 4th, ...), so the percentiles come from samples spread evenly over the whole benchmark;
// the count, min, mean and max always cover every run.
inline constexpr size_t kMaxLatencySamples = size_t{1} << 20;

// Per-run timings in nanoseconds, thinned as kMaxLatencySamples says once `capacity` is reached.
class LatencySamples {
 public:
  // `expected_runs` (0: unknown) sizes the first reservation.
  explicit LatencySamples(size_t capacity = kMaxLatencySamples, uint64_t expected_runs = 0);

  void Add(int64_t nanoseconds);

  uint64_t runs() const { return runs_; }
  const std::vector<int64_t>& samples() const { return samples_; }
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  double mean() const { return runs_ == 0 ? 0 : sum_ / static_cast<double>(runs_); }
  std::vector<int64_t> TakeSamples() && { return std::move(samples_); }

 private:
  size_t capacity_;
  uint64_t stride_ = 1;  // every stride_-th run is recorded
  uint64_t runs_ = 0;
  std::vector<int64_t> samples_;
  int64_t min_ = 0;
  int64_t max_ = 0;
  double sum_ = 0;
};

// Latency figures in nanoseconds. Percentiles interpolate linearly between the two nearest
// samples (numpy.percentile's default), so the median of an even count is the middle pair's mean.
struct LatencyStats {
  uint64_t runs = 0;
  size_t samples = 0;  // timings the percentiles come from (== runs unless thinned)
  double min = 0, mean = 0, median = 0, p90 = 0, p99 = 0, max = 0;
};
LatencyStats SummarizeLatency(LatencySamples samples);

// `p` in [0, 100] of `sorted` (ascending, non-empty), interpolated as numpy does.
double Percentile(const std::vector<int64_t>& sorted, double p);

// `--dim NAME=VALUE` arguments: VALUE an integer in [1, 2^31).
Result<std::map<std::string, int64_t>> ParseDimArgs(const std::vector<std::string>& args);

// A `--shape` shape: dims joined by 'x' ("1x512", "7"), each an integer in [0, 2^31) (ONNX
// allows zero-size dims), or `scalar` for the 0-d shape.
Result<std::vector<int64_t>> ParseShape(std::string_view text);

// `--shape NAME=SHAPE` arguments, SHAPE as ParseShape reads it; a NAME given twice is an error.
Result<std::map<std::string, std::vector<int64_t>>> ParseShapeArgs(
    const std::vector<std::string>& args);

// The type `--shape` generates input `info` as: a tensor of `shape`, which must agree with the
// declared one (rank, and every fixed dim; symbolic and unknown dims take any size) and stay
// within what a generated input may hold (kMaxGeneratedElements, and `limits`' max_rank,
// max_elements and max_tensor_bytes). Errors name the input, and the dim that disagrees with
// its declared and given sizes. Sequences and optionals are refused (they need --input).
Result<Type> ShapedType(const ValueInfo& info, const std::vector<int64_t>& shape,
                        const Limits& limits);

// `type` with each symbolic dim replaced by its value in `dims` (1 when absent) and each unknown
// dim by 1. Tensors of unknown rank stay so (GenerateValue makes them [2]).
Type ResolveDims(const Type& type, const std::map<std::string, int64_t>& dims);

// The process's peak resident set (VmHWM in /proc/self/status), when the system reports it.
std::optional<uint64_t> PeakRssBytes();

struct BenchOptions {
  SessionOptions session;
  std::vector<std::string> inputs;         // NAME=FILE, as `idem run --input`
  std::vector<std::string> dims;           // NAME=VALUE, sizes of symbolic dims of generated inputs
  std::vector<std::string> shapes;         // NAME=D0xD1x..., full shapes of generated inputs
  std::optional<uint64_t> runs;            // stop after this many measured runs
  std::optional<double> duration_seconds;  // stop once this much time has passed
  uint64_t warmup = 5;
  double timeout_seconds = 0;  // each run's deadline (0: none)
  bool progress = false;       // a `\r` progress line on stderr (only on a terminal)
  // Set (e.g. by SIGINT): the benchmark stops after the current run and reports what it has.
  const std::atomic<bool>* stop = nullptr;
};

// The longest --duration accepted (one day): anything longer is a typo.
inline constexpr double kMaxBenchSeconds = 86400;
// The default measuring time when neither --runs nor --duration is given.
inline constexpr double kDefaultBenchSeconds = 10;

struct BenchInput {
  std::string name;
  std::string type;    // what was fed, e.g. "float[1,5]"
  std::string source;  // "file", "data set" or "generated"
};

struct BenchReport {
  std::string model;
  std::vector<BenchInput> inputs;
  int intra_op_threads = 1;
  bool reference_kernels = false;
  double create_seconds = 0;
  uint64_t warmup_runs = 0;
  double measured_seconds = 0;  // wall time of the measured runs
  double runs_per_second = 0;
  bool interrupted = false;  // stopped by BenchOptions::stop
  LatencyStats latency;
  std::optional<uint64_t> peak_rss_bytes;
};

// Creates the session (timed), reads or generates the feeds, warms up and measures. Any failed
// run ends the benchmark with its error (the model's path and idem's message).
Result<BenchReport> RunBench(const std::string& model_arg, const BenchOptions& options);

// The report as aligned lines, and as one JSON object (a line, with a newline).
std::string FormatBenchText(const BenchReport& report);
std::string FormatBenchJson(const BenchReport& report);

}  // namespace idem::tools

#endif  // IDEM_TOOLS_BENCH_H_
