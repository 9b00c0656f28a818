#include "tools/bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "idem/element_type.h"
#include "idem/session.h"
#include "src/core/text.h"
#include "tools/backend_test.h"
#include "tools/feeds.h"
#include "tools/generate.h"

namespace idem::tools {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The largest size --dim and --shape take: onnxruntime_perf_test's range, and far more than a
// generated input may hold anyway.
constexpr int64_t kMaxDimSize = 0x7fffffff;
// How --shape writes the 0-d shape.
constexpr std::string_view kScalarShape = "scalar";

// `text` as an integer in [min, kMaxDimSize] (digits only: no sign, space or suffix).
std::optional<int64_t> ParseSize(std::string_view text, int64_t min) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > kMaxDimSize) {
    return std::nullopt;
  }
  return value;
}

// A shape as --shape writes it: "1x512", "scalar".
std::string FormatShape(const std::vector<int64_t>& shape) {
  return shape.empty() ? std::string(kScalarShape) : fmt::format("{}", fmt::join(shape, "x"));
}

// Collects the symbolic dim names of `type` (and of its elements).
void SymbolicDims(const Type& type, std::set<std::string>* names) {
  if (type.kind() != ValueKind::kTensor) {
    SymbolicDims(type.element(), names);
    return;
  }
  if (!type.shape()) return;
  for (const Dim& d : *type.shape()) {
    if (!d.value && !d.param.empty()) names->insert(d.param);
  }
}

// What was fed: "float[1,5]", "seq(float[?]) with 2 tensors", "optional(float[2])".
std::string Describe(const Value& v) {
  if (v.kind() == ValueKind::kOptional && v.optional().has_value()) {
    return fmt::format("optional({})", Describe(v.optional().value()));
  }
  if (v.kind() == ValueKind::kSequence) {
    return fmt::format("{} with {} tensors", v.type().ToShortString(), v.sequence().size());
  }
  return v.type().ToShortString();
}

// "52.00 ns", "412.3 us", "1.234 ms", "2.500 s": 4 significant digits in the largest unit below.
std::string FormatNanos(double ns) {
  if (ns < 1e3) return fmt::format("{:#.4g} ns", ns);
  if (ns < 1e6) return fmt::format("{:#.4g} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:#.4g} ms", ns / 1e6);
  return fmt::format("{:#.4g} s", ns / 1e9);
}

// Nanoseconds as milliseconds, to the nanosecond (so that JSON shows 0.000331, not
// 0.00033110999999999997).
double Ms(double ns) { return std::round(ns) / 1e6; }

// `text` as a JSON string: escaped as idem escapes names (printable, valid UTF-8), then quoted.
std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : EscapeText(text)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The `\r` line on stderr: at most 4 updates a second, erased by Clear().
class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled) {}
  ~Progress() { Clear(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `make_text` is called only when the line is due.
  template <typename F>
  void Update(Clock::time_point now, F make_text) {
    if (!enabled_ || now < next_) return;
    next_ = now + std::chrono::milliseconds(250);
    std::fputs(("\r\x1b[K" + make_text()).c_str(), stderr);
    std::fflush(stderr);
    shown_ = true;
  }
  void Clear() {
    if (!shown_) return;
    std::fputs("\r\x1b[K", stderr);
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
  Clock::time_point next_{};
};

}  // namespace

LatencySamples::LatencySamples(size_t capacity, uint64_t expected_runs)
    : capacity_(std::max<size_t>(capacity, 2)) {
  // Reserved pages are not resident until written, so reserving the cap costs no RSS.
  samples_.reserve(expected_runs == 0 ? capacity_ : std::min<uint64_t>(expected_runs, capacity_));
}

void LatencySamples::Add(int64_t nanoseconds) {
  min_ = runs_ == 0 ? nanoseconds : std::min(min_, nanoseconds);
  max_ = runs_ == 0 ? nanoseconds : std::max(max_, nanoseconds);
  sum_ += static_cast<double>(nanoseconds);
  if (runs_++ % stride_ != 0) return;
  if (samples_.size() == capacity_) {
    // Keep samples 0, 2, 4, ... (runs 0, 2 * stride, ...) and record every 2 * stride-th run.
    for (size_t k = 0; 2 * k < samples_.size(); ++k) samples_[k] = samples_[2 * k];
    samples_.resize((samples_.size() + 1) / 2);
    stride_ *= 2;
    if ((runs_ - 1) % stride_ != 0) return;
  }
  samples_.push_back(nanoseconds);
}

double Percentile(const std::vector<int64_t>& sorted, double p) {
  const double rank = p / 100 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return static_cast<double>(sorted[lo]) + frac * static_cast<double>(sorted[hi] - sorted[lo]);
}

LatencyStats SummarizeLatency(LatencySamples samples) {
  LatencyStats s;
  s.runs = samples.runs();
  s.samples = samples.samples().size();
  if (s.runs == 0) return s;
  s.min = static_cast<double>(samples.min());
  s.max = static_cast<double>(samples.max());
  s.mean = std::clamp(samples.mean(), s.min, s.max);
  std::vector<int64_t> sorted = std::move(samples).TakeSamples();
  std::sort(sorted.begin(), sorted.end());
  // Thinned samples may miss the extremes; the percentiles stay within them.
  s.median = std::clamp(Percentile(sorted, 50), s.min, s.max);
  s.p90 = std::clamp(Percentile(sorted, 90), s.median, s.max);
  s.p99 = std::clamp(Percentile(sorted, 99), s.p90, s.max);
  return s;
}

Result<std::map<std::string, int64_t>> ParseDimArgs(const std::vector<std::string>& args) {
  std::map<std::string, int64_t> dims;
  for (const std::string& arg : args) {
    IDEM_ASSIGN_OR_RETURN(const auto name_value, SplitNameValue(arg, "--dim"));
    const auto& [name, text] = name_value;
    const std::optional<int64_t> value = ParseSize(text, 1);
    if (!value) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("--dim {}: the size must be an integer in [1, {}]", QuoteName(arg),
                                kMaxDimSize));
    }
    if (!dims.emplace(name, *value).second) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("--dim {}: {} is given twice", QuoteName(arg), QuoteName(name)));
    }
  }
  return dims;
}

Result<std::vector<int64_t>> ParseShape(std::string_view text) {
  std::vector<int64_t> dims;
  if (text == kScalarShape) return dims;
  if (text.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("the shape is empty (write {} for a 0-d tensor)", kScalarShape));
  }
  for (size_t start = 0;;) {
    const size_t x = text.find('x', start);
    const std::string_view piece = text.substr(start, x == std::string_view::npos ? x : x - start);
    const std::optional<int64_t> d = ParseSize(piece, 0);
    if (!d) {
      return Status(
          StatusCode::kInvalidArgument,
          fmt::format("dim {} of {} is {}, not an integer in [0, {}] (a shape is "
                      "D0xD1x..., e.g. 1x512, or {} for a 0-d tensor)",
                      dims.size(), QuoteName(text), QuoteName(piece), kMaxDimSize, kScalarShape));
    }
    dims.push_back(*d);
    if (x == std::string_view::npos) return dims;
    start = x + 1;
  }
}

Result<std::map<std::string, std::vector<int64_t>>> ParseShapeArgs(
    const std::vector<std::string>& args) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string& arg : args) {
    IDEM_ASSIGN_OR_RETURN(const auto name_value, SplitNameValue(arg, "--shape", "D0xD1x..."));
    const auto& [name, text] = name_value;
    auto shape = ParseShape(text);
    if (!shape.ok()) {
      return Status(shape.status().code(),
                    fmt::format("--shape {}: {}", QuoteName(arg), shape.status().message()));
    }
    if (!shapes.emplace(name, std::move(shape).value()).second) {
      return Status(StatusCode::kInvalidArgument, fmt::format("--shape {}: input {} is given twice",
                                                              QuoteName(arg), QuoteName(name)));
    }
  }
  return shapes;
}

Result<Type> ShapedType(const ValueInfo& info, const std::vector<int64_t>& shape,
                        const Limits& limits) {
  auto error = [&](StatusCode code, const std::string& why) {
    return Status(
        code, fmt::format("input {} {}: {}", QuoteName(info.name), info.type.ToShortString(), why));
  };
  if (info.type.kind() != ValueKind::kTensor) {
    return error(StatusCode::kInvalidArgument,
                 fmt::format("not a tensor: --shape sizes tensors only; use --input {}=FILE",
                             EscapeText(info.name)));
  }
  if (shape.size() > limits.max_rank) {
    return error(StatusCode::kResourceExhausted,
                 fmt::format("rank {} is over the session's limit of {} (Limits::max_rank)",
                             shape.size(), limits.max_rank));
  }
  if (info.type.shape()) {
    const std::vector<Dim>& declared = *info.type.shape();
    if (declared.size() != shape.size()) {
      return error(StatusCode::kInvalidArgument,
                   fmt::format("invalid rank: got {} ({}), expected {}", shape.size(),
                               FormatShape(shape), declared.size()));
    }
    std::vector<std::string> wrong;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (declared[i].value && *declared[i].value != shape[i]) {
        wrong.push_back(
            fmt::format("dim {}: got {}, expected {}", i, shape[i], *declared[i].value));
      }
    }
    if (!wrong.empty()) {
      return error(
          StatusCode::kInvalidArgument,
          fmt::format("invalid dims ({}): {}", FormatShape(shape), fmt::join(wrong, "; ")));
    }
  }
  // The element count, checked before anything is allocated: 0 with a zero dim, else the
  // product (nullopt: over 2^63 - 1). The non-zero dims' product must fit int64 either way, as for
  // any tensor idem makes (CheckedElementCount).
  std::optional<uint64_t> count = 1;
  for (int64_t d : shape) {
    uint64_t product = 0;
    if (d == 0) continue;
    if (__builtin_mul_overflow(*count, static_cast<uint64_t>(d), &product) ||
        product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      count.reset();
      break;
    }
    count = product;
  }
  if (count && std::find(shape.begin(), shape.end(), 0) != shape.end()) count = 0;
  const uint64_t max_elements = std::min(kMaxGeneratedElements, limits.max_elements);
  if (!count || *count > max_elements) {
    return error(StatusCode::kResourceExhausted,
                 fmt::format("{} is {} elements, over the {} a generated input may have; use "
                             "--input {}=FILE",
                             FormatShape(shape),
                             count ? fmt::format("{}", *count) : std::string("over 2^63 - 1"),
                             max_elements, EscapeText(info.name)));
  }
  // Strings have no packed size: each generated one is counted as a std::string (its few
  // characters fit in place).
  const std::optional<uint64_t> bytes = info.type.element_type() == ElementType::kString
                                            ? std::optional<uint64_t>(*count * sizeof(std::string))
                                            : PackedByteSize(info.type.element_type(), *count);
  if (bytes && *bytes > limits.max_tensor_bytes) {
    return error(
        StatusCode::kResourceExhausted,
        fmt::format("{} is {} bytes, over the session's limit of {} "
                    "(Limits::max_tensor_bytes); use --input {}=FILE",
                    FormatShape(shape), *bytes, limits.max_tensor_bytes, EscapeText(info.name)));
  }
  std::vector<Dim> dims;
  dims.reserve(shape.size());
  for (int64_t d : shape) dims.push_back({d, ""});
  return Type::Tensor(info.type.element_type(), std::move(dims));
}

Type ResolveDims(const Type& type, const std::map<std::string, int64_t>& dims) {
  switch (type.kind()) {
    case ValueKind::kSequence:
      return Type::Sequence(ResolveDims(type.element(), dims));
    case ValueKind::kOptional:
      return Type::Optional(ResolveDims(type.element(), dims));
    case ValueKind::kTensor:
      break;
  }
  if (!type.shape()) return type;
  std::vector<Dim> shape = *type.shape();
  for (Dim& d : shape) {
    if (d.value) continue;
    auto it = dims.find(d.param);
    d.value = !d.param.empty() && it != dims.end() ? it->second : 1;
  }
  return Type::Tensor(type.element_type(), std::move(shape));
}

std::optional<uint64_t> PeakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    uint64_t kib = 0;
    const char* p = line.c_str() + 6;
    while (*p == ' ' || *p == '\t') ++p;
    const auto [end, ec] = std::from_chars(p, line.c_str() + line.size(), kib);
    if (ec != std::errc()) return std::nullopt;
    return kib * 1024;
  }
  return std::nullopt;
}

Result<BenchReport> RunBench(const std::string& model_arg, const BenchOptions& options) {
  if (options.runs && *options.runs == 0) {
    return Status(StatusCode::kInvalidArgument, "--runs must be at least 1");
  }
  std::optional<double> duration = options.duration_seconds;
  if (duration && !(*duration > 0 && *duration <= kMaxBenchSeconds)) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("--duration {}: must be a number of seconds in (0, {}]", *duration,
                              kMaxBenchSeconds));
  }
  if (!options.runs && !duration) duration = kDefaultBenchSeconds;
  IDEM_ASSIGN_OR_RETURN(const auto dims, ParseDimArgs(options.dims));
  IDEM_ASSIGN_OR_RETURN(const auto shapes, ParseShapeArgs(options.shapes));

  BenchReport report;
  report.model = ModelPath(model_arg);
  report.intra_op_threads = options.session.intra_op_threads;
  report.reference_kernels = options.session.reference_kernels;
  const Clock::time_point create_start = Clock::now();
  auto session = Session::Create(report.model, options.session);
  report.create_seconds = Seconds(Clock::now() - create_start);
  if (!session.ok()) return session.status();

  // Feeds: files, else a backend-test folder's data set, else generated.
  IDEM_ASSIGN_OR_RETURN(std::vector<NamedValue> feeds,
                        ReadFeeds(*session, model_arg, report.model, options.inputs));
  const char* given = options.inputs.empty() ? "data set" : "file";
  std::set<std::string> symbolic;
  for (const ValueInfo& v : session->inputs()) SymbolicDims(v.type, &symbolic);
  for (const ValueInfo& v : session->overridable_inputs()) SymbolicDims(v.type, &symbolic);
  for (const auto& [name, value] : dims) {
    if (symbolic.count(name) == 0) {
      std::vector<std::string> names;
      names.reserve(symbolic.size());
      for (const std::string& s : symbolic) names.push_back(QuoteName(s));
      return Status(
          StatusCode::kInvalidArgument,
          fmt::format("{}: --dim {}={}: no input has a symbolic dim {} ({})", report.model,
                      EscapeText(name), value, QuoteName(name),
                      names.empty() ? std::string("the inputs have none")
                                    : fmt::format("they have {}", fmt::join(names, ", "))));
    }
  }
  // --shape: the type each input it names is generated as (whatever --dim says), checked
  // against its declaration before anything is generated.
  std::map<std::string, Type> shaped;
  for (const auto& name_shape : shapes) {
    // Named, not structured bindings: lambdas capture them (which clang 14 cannot).
    const std::string& name = name_shape.first;
    const std::vector<int64_t>& shape = name_shape.second;
    auto shape_error = [&](const Status& s) {
      return Status(s.code(), fmt::format("{}: --shape {}={}: {}", report.model, EscapeText(name),
                                          FormatShape(shape), s.message()));
    };
    auto info = FindInput(*session, name);
    if (!info.ok()) return shape_error(info.status());
    if (std::any_of(feeds.begin(), feeds.end(),
                    [&](const NamedValue& f) { return f.name == name; })) {
      return shape_error(Status(
          StatusCode::kInvalidArgument,
          options.inputs.empty()
              ? fmt::format("input {} is fed from the folder's test_data_set_0; --shape sizes "
                            "generated inputs: give the folder's model.onnx instead",
                            QuoteName(name))
              : fmt::format("input {} is also given by --input; give one of them",
                            QuoteName(name))));
    }
    auto type = ShapedType(**info, shape, options.session.limits);
    if (!type.ok()) return shape_error(type.status());
    shaped.emplace(name, std::move(type).value());
  }
  // Generates input `info` as `type` and adds it to the feeds and the report.
  auto generate = [&](const ValueInfo& info, const Type& type, uint64_t seed) -> Status {
    auto value = GenerateValue(type, seed, FloatFill::kUnitRange);
    if (!value.ok()) {
      return Status(value.status().code(),
                    fmt::format("{}: input {} ({}): cannot generate it: {}; use --input {}=FILE",
                                report.model, QuoteName(info.name), info.type.ToShortString(),
                                value.status().message(), EscapeText(info.name)));
    }
    report.inputs.push_back({info.name, Describe(*value), "generated"});
    feeds.push_back({info.name, std::move(value).value()});
    return {};
  };
  // Positional feeds in inputs() order unless an overridable input is fed (then by name).
  std::vector<Value> positional;
  bool by_name = false;
  for (size_t i = 0; i < session->inputs().size(); ++i) {
    const ValueInfo& info = session->inputs()[i];
    auto fed = std::find_if(feeds.begin(), feeds.end(),
                            [&](const NamedValue& f) { return f.name == info.name; });
    if (fed != feeds.end()) {
      report.inputs.push_back({info.name, Describe(fed->value), given});
      positional.push_back(fed->value);
      continue;
    }
    const auto it = shaped.find(info.name);
    IDEM_RETURN_IF_ERROR(
        generate(info, it != shaped.end() ? it->second : ResolveDims(info.type, dims), i + 1));
    positional.push_back(feeds.back().value);
  }
  for (const NamedValue& f : feeds) {
    for (const ValueInfo& v : session->overridable_inputs()) {
      if (v.name != f.name) continue;
      by_name = true;
      report.inputs.push_back({f.name, Describe(f.value), given});
    }
  }
  // Overridable initializers named by --shape are generated too (and fed by name).
  for (size_t j = 0; j < session->overridable_inputs().size(); ++j) {
    const ValueInfo& info = session->overridable_inputs()[j];
    const auto it = shaped.find(info.name);
    if (it == shaped.end()) continue;
    IDEM_RETURN_IF_ERROR(generate(info, it->second, session->inputs().size() + j + 1));
    by_name = true;
  }

  RunOptions run_options;
  run_options.cancel = options.stop;
  std::vector<Value> outputs(session->outputs().size());
  // Each run's deadline is set before its clock starts.
  auto arm_deadline = [&] {
    if (options.timeout_seconds > 0) {
      run_options.deadline = RunOptionsWithTimeout(options.timeout_seconds).deadline;
    }
  };
  auto run_once = [&]() -> Status {
    if (by_name) return session->RunNamed(feeds, run_options).status();
    return session->Run(positional, outputs, run_options);
  };
  auto stopped = [&] { return options.stop != nullptr && options.stop->load(); };
  auto run_error = [&](const Status& s, const char* phase, uint64_t k) {
    return Status(s.code(),
                  fmt::format("{}: {} run {}: {}", report.model, phase, k + 1, s.message()));
  };

  Progress progress(options.progress);
  for (uint64_t k = 0; k < options.warmup && !stopped(); ++k) {
    arm_deadline();
    Status s = run_once();
    if (!s.ok() && stopped() && s.code() == StatusCode::kCancelled) break;
    if (!s.ok()) return run_error(s, "warm-up", k);
    ++report.warmup_runs;
    progress.Update(Clock::now(),
                    [&] { return fmt::format("warm-up {}/{}", k + 1, options.warmup); });
  }

  LatencySamples samples(kMaxLatencySamples, options.runs.value_or(0));
  const Clock::time_point start = Clock::now();
  // Without --duration, no end (time_point::max() is never reached).
  const Clock::time_point end = duration ? start + std::chrono::duration_cast<Clock::duration>(
                                                       std::chrono::duration<double>(*duration))
                                         : Clock::time_point::max();
  Clock::time_point now = start;
  while (!options.runs || samples.runs() < *options.runs) {
    if (stopped()) break;
    arm_deadline();
    const Clock::time_point t0 = Clock::now();
    Status s = run_once();
    now = Clock::now();
    if (!s.ok() && stopped() && s.code() == StatusCode::kCancelled) break;
    if (!s.ok()) return run_error(s, "measured", samples.runs());
    samples.Add(std::chrono::duration_cast<std::chrono::nanoseconds>(now - t0).count());
    if (now >= end) break;
    progress.Update(now, [&] {
      std::string text = fmt::format("{} ", samples.runs());
      if (options.runs) text += fmt::format("of {} ", *options.runs);
      text += fmt::format("runs, {:.1f} s", Seconds(now - start));
      if (duration) text += fmt::format(" of {:g} s", *duration);
      return text;
    });
  }
  progress.Clear();
  report.interrupted = stopped();
  if (samples.runs() == 0) {
    return Status(StatusCode::kCancelled,
                  fmt::format("{}: stopped before any measured run", report.model));
  }
  // Read before the summary's sort, which needs memory of its own.
  report.peak_rss_bytes = PeakRssBytes();
  report.measured_seconds = Seconds(now - start);
  report.runs_per_second =
      static_cast<double>(samples.runs()) / std::max(report.measured_seconds, 1e-9);
  report.latency = SummarizeLatency(std::move(samples));
  return report;
}

std::string FormatBenchText(const BenchReport& r) {
  std::string out = fmt::format("{:<18}{}\n", "model", EscapeText(r.model));
  for (const BenchInput& in : r.inputs) {
    out += fmt::format("{:<18}{} {} ({})\n", "input", QuoteName(in.name), in.type, in.source);
  }
  out += fmt::format("{:<18}{}\n", "session creation", FormatNanos(r.create_seconds * 1e9));
  out += fmt::format("{:<18}{} runs\n", "warm-up", r.warmup_runs);
  out += fmt::format("{:<18}{} in {}: {:.{}f} runs/s ({} intra-op thread{}, {} kernels){}\n",
                     "runs", r.latency.runs, FormatNanos(r.measured_seconds * 1e9),
                     r.runs_per_second, r.runs_per_second < 100 ? 2 : 0, r.intra_op_threads,
                     r.intra_op_threads == 1 ? "" : "s", r.reference_kernels ? "reference" : "fast",
                     r.interrupted ? ", interrupted" : "");
  const LatencyStats& l = r.latency;
  out += fmt::format("{:<18}min {}, mean {}, median {}, p90 {}, p99 {}, max {}\n", "latency",
                     FormatNanos(l.min), FormatNanos(l.mean), FormatNanos(l.median),
                     FormatNanos(l.p90), FormatNanos(l.p99), FormatNanos(l.max));
  if (l.samples < l.runs) {
    out += fmt::format("{:<18}percentiles from {} timings spread evenly over the {} runs\n", "",
                       l.samples, l.runs);
  }
  out += fmt::format(
      "{:<18}{}\n", "peak RSS",
      r.peak_rss_bytes ? fmt::format("{:.1f} MiB", static_cast<double>(*r.peak_rss_bytes) / 1048576)
                       : std::string("unknown"));
  return out;
}

std::string FormatBenchJson(const BenchReport& r) {
  std::vector<std::string> inputs;
  for (const BenchInput& in : r.inputs) {
    inputs.push_back(fmt::format(R"({{"name": {}, "type": {}, "source": {}}})", JsonString(in.name),
                                 JsonString(in.type), JsonString(in.source)));
  }
  const LatencyStats& l = r.latency;
  return fmt::format(
      R"({{"model": {}, "inputs": [{}], "intra_op_threads": {}, "reference_kernels": {}, )"
      R"("session_creation_ms": {}, "warmup_runs": {}, "runs": {}, "samples": {}, )"
      R"("measured_seconds": {}, "runs_per_second": {}, "interrupted": {}, )"
      R"("latency_ms": {{"min": {}, "mean": {}, "median": {}, "p90": {}, "p99": {}, "max": {}}}, )"
      R"("peak_rss_bytes": {}}})"
      "\n",
      JsonString(r.model), fmt::join(inputs, ", "), r.intra_op_threads, r.reference_kernels,
      Ms(r.create_seconds * 1e9), r.warmup_runs, l.runs, l.samples,
      std::round(r.measured_seconds * 1e9) / 1e9, std::round(r.runs_per_second * 10) / 10,
      r.interrupted, Ms(l.min), Ms(l.mean), Ms(l.median), Ms(l.p90), Ms(l.p99), Ms(l.max),
      r.peak_rss_bytes ? fmt::format("{}", *r.peak_rss_bytes) : std::string("null"));
}

}  // namespace idem::tools
