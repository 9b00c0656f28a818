// The `idem` command line: run, test, check, info, optimize, bench and ops over the idem library.
//
// Exit codes: 0 success, 1 an error or a failed test (one `error:` line on stderr), 2 usage.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <set>

#include "idem/idem.h"
#include "src/core/atomic_file.h"
#include "src/core/text.h"
#include "src/onnx/model_loader.h"
#include "src/onnx/proto_convert.h"
#include "tools/backend_test.h"
#include "tools/bench.h"
#include "tools/feeds.h"
#include "tools/generate.h"
#include "tools/operator_table.h"

namespace {

namespace fs = std::filesystem;
using idem::tools::CaseResult;

// Prints the one `error:` line. Messages are escaped again here as a backstop: whatever a file
// named things, the line cannot be split in two or carry terminal escape codes.
int Fail(const std::string& message) {
  std::fflush(stdout);
  fmt::print(stderr, "error: {}\n", idem::EscapeText(message));
  return 1;
}

// File-controlled text printed to stdout (output names, case names, reasons): escaped likewise.
std::string Safe(std::string_view text) { return idem::EscapeText(text); }

// "float[1,5]", "seq(float)[2 items]", "optional(float[5])", "optional(seq(float))=empty".
std::string Summarize(const idem::Value& v) {
  switch (v.kind()) {
    case idem::ValueKind::kTensor:
      return v.type().ToShortString();
    case idem::ValueKind::kSequence:
      return fmt::format("seq({}) with {} tensors",
                         idem::ElementTypeName(v.sequence().element_type()), v.sequence().size());
    case idem::ValueKind::kOptional:
      return v.optional().has_value()
                 ? fmt::format("optional({})", Summarize(v.optional().value()))
                 : fmt::format("optional({}), empty", v.optional().element_type().ToString());
  }
  return "?";
}

int Run(const std::string& model_arg, const std::vector<std::string>& input_args,
        const std::string& output_dir, const idem::SessionOptions& options,
        double timeout_seconds) {
  const std::string model = idem::tools::ModelPath(model_arg);
  auto session = idem::Session::Create(model, options);
  if (!session.ok()) return Fail(session.status().message());

  auto read = idem::tools::ReadFeeds(*session, model_arg, model, input_args);
  if (!read.ok()) return Fail(read.status().message());
  const std::vector<idem::NamedValue>& feeds = *read;
  for (const idem::ValueInfo& v : session->inputs()) {
    bool fed = false;
    for (const auto& f : feeds) fed |= f.name == v.name;
    if (!fed) {
      return Fail(fmt::format("{}: input {} ({}) is not fed; use --input {}=FILE", model,
                              idem::QuoteName(v.name), v.type.ToShortString(), Safe(v.name)));
    }
  }
  auto outputs = session->RunNamed(feeds, idem::tools::RunOptionsWithTimeout(timeout_seconds));
  if (!outputs.ok()) return Fail(fmt::format("{}: {}", model, outputs.status().message()));

  if (!output_dir.empty()) {
    std::error_code ec;
    fs::create_directories(output_dir, ec);
    if (ec) return Fail(fmt::format("{}: cannot create folder: {}", output_dir, ec.message()));
    // Serialize everything first, then write every file to a temporary name before the first
    // rename (WriteFilesAtomically), so a failure cannot leave a partial set of files.
    std::vector<idem::FileToWrite> files;
    for (size_t k = 0; k < outputs->size(); ++k) {
      auto bytes = idem::ValueToProtoBytes((*outputs)[k], session->outputs()[k].name);
      if (!bytes.ok()) return Fail(bytes.status().message());
      files.push_back({(fs::path(output_dir) / fmt::format("output_{}.pb", k)).string(),
                       std::move(bytes).value()});
    }
    idem::Status s = idem::WriteFilesAtomically(files);
    if (!s.ok()) return Fail(s.message());
  }
  for (size_t k = 0; k < outputs->size(); ++k) {
    const idem::Value& v = (*outputs)[k];
    fmt::print("{} {} = {}\n", Safe(session->outputs()[k].name), Summarize(v),
               idem::FormatValue(v));
  }
  return 0;
}

int Test(const std::vector<std::string>& paths, bool skip_unsupported, bool quiet,
         const idem::SessionOptions& options, double timeout_seconds,
         const std::optional<idem::tools::Tolerance>& tolerance) {
  int passed = 0, failed = 0, skipped = 0;
  for (const std::string& path : paths) {
    auto cases = idem::tools::FindCaseFolders(path);
    if (!cases.ok()) return Fail(cases.status().message());
    if (cases->empty())
      return Fail(fmt::format("{}: no test cases (folders with model.onnx)", path));
    for (const std::string& folder : *cases) {
      CaseResult r = idem::tools::RunBackendCase(folder, skip_unsupported, options, timeout_seconds,
                                                 tolerance);
      switch (r.outcome) {
        case CaseResult::Outcome::kPass:
          ++passed;
          if (!quiet) fmt::print("PASS {}\n", Safe(r.name));
          break;
        case CaseResult::Outcome::kFail:
          ++failed;
          fmt::print("FAIL {}: {}\n", Safe(r.name), Safe(r.reason));
          break;
        case CaseResult::Outcome::kSkip:
          ++skipped;
          if (!quiet) fmt::print("SKIP {}: {}\n", Safe(r.name), Safe(r.reason));
          break;
      }
    }
  }
  if (skip_unsupported) {
    fmt::print("{} passed, {} failed, {} skipped\n", passed, failed, skipped);
  } else {
    fmt::print("{} passed, {} failed\n", passed, failed);
  }
  return failed == 0 ? 0 : 1;
}

int Check(const std::string& model_arg, const idem::SessionOptions& options) {
  const std::string model = idem::tools::ModelPath(model_arg);
  auto session = idem::Session::Create(model, options);
  if (!session.ok()) return Fail(session.status().message());
  fmt::print("{}: OK ({} inputs, {} outputs)\n", Safe(model), session->inputs().size(),
             session->outputs().size());
  return 0;
}

// What `info` prints for a model the loader reads but idem cannot run (operators it lacks): the
// file's structure as declared, without resolved versions or inferred types.
std::string DescribeUnplanned(const idem::GraphDef& graph) {
  std::string out = idem::DescribeVersions(graph);
  std::set<std::string> initialized;
  for (const idem::NamedValue& init : graph.initializers) initialized.insert(init.name);
  auto type_of = [](const idem::Type& type) {
    return type.kind() == idem::ValueKind::kTensor &&
                   type.element_type() == idem::ElementType::kUndefined
               ? std::string("(untyped)")
               : type.ToShortString();
  };
  for (const idem::ValueInfo& v : graph.inputs) {
    out += fmt::format("input  {} {}{}\n", Safe(v.name), type_of(v.type),
                       initialized.count(v.name) ? " (initializer default)" : "");
  }
  for (const idem::ValueInfo& v : graph.outputs) {
    out += fmt::format("output {} {}\n", Safe(v.name), type_of(v.type));
  }
  out += fmt::format("nodes ({}):\n", graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const idem::NodeDef& node = graph.nodes[n];
    out += fmt::format("  {}: {} -> {}\n", node.Label(n),
                       Safe(fmt::format("{}", fmt::join(node.inputs, ", "))),
                       Safe(fmt::format("{}", fmt::join(node.outputs, ", "))));
  }
  return out;
}

int Info(const std::string& model_arg, const idem::SessionOptions& options) {
  const std::string model = idem::tools::ModelPath(model_arg);
  auto session = idem::Session::Create(model, options);
  if (!session.ok() && session.status().code() == idem::StatusCode::kUnsupported) {
    // A valid model with operators idem lacks (most third-party models): still describe it.
    auto graph =
        idem::LoadGraphFromFile(model, options.limits, idem::ExternalDataOptions::From(options));
    if (graph.ok()) {
      fmt::print("{}\n{}runnable: no: {}\n", Safe(model), DescribeUnplanned(*graph),
                 Safe(session.status().message()));
      return 0;
    }
  }
  if (!session.ok()) return Fail(session.status().message());
  // Describe() lists names from the file, one per line: keep its newlines, escape the rest.
  fmt::print("{}\n{}", Safe(model), idem::EscapeText(session->Describe(), /*keep_newlines=*/true));
  return 0;
}

// `idem optimize --check`: the result must load wherever the input loads, and give bit-identical
// outputs on generated inputs. Prints what it could check; an error aborts the write.
idem::Status CheckOptimized(const std::string& in_path, const idem::SessionOptions& given_options,
                            double timeout_seconds, std::span<const std::byte> original,
                            std::span<const std::byte> optimized) {
  const std::string base_dir = idem::DirectoryOf(in_path);
  // The check runs models on made-up inputs: each run may hold at most 1 GiB of live values, so
  // a model that grows with its inputs fails the check's runs (outputs not compared) instead of
  // taking the default 16 GiB.
  idem::SessionOptions options = given_options;
  options.limits.max_run_bytes =
      std::min<uint64_t>(options.limits.max_run_bytes, uint64_t{1} << 30);
  auto a = idem::Session::CreateFromBytes(original, base_dir, options);
  if (!a.ok()) {
    fmt::print("check: outputs not compared: idem cannot run {}: {}\n", Safe(in_path),
               a.status().message());
    return {};
  }
  auto b = idem::Session::CreateFromBytes(optimized, base_dir, options);
  if (!b.ok()) {
    return idem::Status(
        idem::StatusCode::kInternal,
        fmt::format("check: the optimized model fails validation: {}", b.status().message()));
  }
  // Generated inputs are bounded in total, not only one by one: a small model declaring many
  // large inputs must not make --check allocate gigabytes.
  constexpr uint64_t kMaxGeneratedBytes = uint64_t{64} << 20;
  uint64_t generated_bytes = 0;
  std::vector<idem::Value> feeds;
  for (size_t i = 0; i < a->inputs().size(); ++i) {
    auto v = idem::tools::GenerateValue(a->inputs()[i].type, i + 1);
    if (!v.ok()) {
      fmt::print("check: validated; outputs not compared: input {}: {}\n",
                 idem::QuoteName(a->inputs()[i].name), v.status().message());
      return {};
    }
    generated_bytes += v->BudgetBytes();
    if (generated_bytes > kMaxGeneratedBytes) {
      fmt::print(
          "check: validated; outputs not compared: generated inputs would exceed {} MiB "
          "(at input {})\n",
          kMaxGeneratedBytes >> 20, idem::QuoteName(a->inputs()[i].name));
      return {};
    }
    feeds.push_back(std::move(v).value());
  }
  auto ra = a->Run(feeds, idem::tools::RunOptionsWithTimeout(timeout_seconds));
  auto rb = b->Run(feeds, idem::tools::RunOptionsWithTimeout(timeout_seconds));
  // A run stopped by --timeout says nothing about the optimization (the other run may simply
  // have been faster): nothing to compare.
  for (const auto* r : {&ra, &rb}) {
    if (!r->ok() && r->status().code() == idem::StatusCode::kDeadlineExceeded) {
      fmt::print("check: validated; outputs not compared: a run passed --timeout\n");
      return {};
    }
  }
  if (!ra.ok()) {
    if (rb.ok()) {
      return idem::Status(idem::StatusCode::kInternal,
                          fmt::format("check: the input model fails on generated inputs ({}) "
                                      "but the optimized one runs",
                                      ra.status().message()));
    }
    fmt::print("check: validated; both models fail on generated inputs: {}\n",
               ra.status().message());
    return {};
  }
  if (!rb.ok()) {
    return idem::Status(idem::StatusCode::kInternal,
                        fmt::format("check: the optimized model fails on generated inputs: {}",
                                    rb.status().message()));
  }
  for (size_t k = 0; k < ra->size(); ++k) {
    if (auto diff = idem::DescribeDifference((*ra)[k], (*rb)[k])) {
      return idem::Status(idem::StatusCode::kInternal,
                          fmt::format("check: output {} differs: {}",
                                      idem::QuoteName(a->outputs()[k].name), *diff));
    }
  }
  fmt::print("check: OK: {} outputs bit-identical on generated inputs\n", ra->size());
  return {};
}

int Optimize(const std::string& in, std::string out, bool check, bool explain, bool in_place,
             const idem::SessionOptions& session_options, double timeout_seconds) {
  if (out.empty()) {
    if (!in_place) return Fail("optimize: give -o OUT (or --in-place to replace IN)");
    out = in;
  }
  idem::OptimizeOptions options;
  options.in_place = in_place;
  if (check) {
    options.verify = [&](std::span<const std::byte> original, std::span<const std::byte> result) {
      return CheckOptimized(in, session_options, timeout_seconds, original, result);
    };
  }
  auto report = idem::OptimizeModelFile(in, out, options);
  if (!report.ok()) return Fail(report.status().message());
  fmt::print("removed {} Identity nodes, kept {}\n", report->removed, report->kept);
  if (explain) {
    for (const auto& k : report->kept_nodes) {
      // Graph paths and node names come from the file: escaped, so a name cannot forge lines.
      fmt::print("kept {}: node {} (#{}): {}: {}\n", Safe(k.graph), idem::QuoteName(k.node),
                 k.node_index, idem::KeepRuleName(k.rule), idem::KeepRuleDescription(k.rule));
    }
  }
  return 0;
}

// Set by the first Ctrl-C of `idem bench`: it stops and reports the runs so far, exit status 130
// (a second Ctrl-C kills the process as usual).
std::atomic<bool> bench_stop{false};
extern "C" void StopBench(int /*signal*/) {
  bench_stop.store(true);
  std::signal(SIGINT, SIG_DFL);
}

int Bench(const std::string& model_arg, idem::tools::BenchOptions options, bool json) {
  options.progress = isatty(STDERR_FILENO) != 0;
  options.stop = &bench_stop;
  std::signal(SIGINT, StopBench);
  auto report = idem::tools::RunBench(model_arg, options);
  std::signal(SIGINT, SIG_DFL);
  if (!report.ok()) return Fail(report.status().message());
  const std::string text =
      json ? idem::tools::FormatBenchJson(*report) : idem::tools::FormatBenchText(*report);
  std::fputs(text.c_str(), stdout);
  // Interrupted: the results so far are printed, and the exit status says they are partial (128
  // + SIGINT, as a shell reports a process that Ctrl-C ended).
  return report->interrupted ? 128 + SIGINT : 0;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "idem: an exact, zero-copy ONNX runtime (Silero VAD, openWakeWord, PaddleOCR; Identity, "
      "sequences, optionals and control flow)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "idem 0.1.0");

  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir;
  CLI::App* run = app.add_subcommand("run", "Run a model and print its outputs");
  run->add_option("MODEL", model, "model.onnx, or a backend-test folder (feeds test_data_set_0)")
      ->required();
  run->add_option("--input,-i", inputs,
                  "NAME=FILE: a .pb (message chosen by the declared type) "
                  "or a .npy tensor; repeatable");
  run->add_option("--output-dir,-o", output_dir,
                  "write output_K.pb files (backend test-data format) here");

  std::vector<std::string> test_paths;
  bool skip_unsupported = false;
  bool quiet = false;
  CLI::App* test = app.add_subcommand(
      "test", "Run backend-test folders and compare (exactly, or within --rtol/--atol)");
  test->add_option("PATH", test_paths, "case folder or folder of cases")->required();
  test->add_flag("--skip-unsupported", skip_unsupported,
                 "report cases with operators idem lacks as SKIP instead of FAIL");
  test->add_flag("--quiet,-q", quiet, "print only failures and the summary");
  // Either flag switches float outputs from bit-exact to |actual - expected| <= atol + rtol *
  // |expected| (the other defaults to 0); integers, bools, strings and shapes stay exact.
  double rtol = 0, atol = 0;
  auto not_nan = CLI::Validator(
      [](std::string& input) -> std::string {
        return std::isnan(std::strtod(input.c_str(), nullptr)) ? input + " is not a number"
                                                               : std::string();
      },
      "NOT NAN");
  CLI::Option* rtol_option =
      test->add_option("--rtol", rtol,
                       "float outputs (float, double, float16, bfloat16) match when |actual - "
                       "expected| <= atol + rtol * |expected|; default: bit-exact")
          ->check(CLI::NonNegativeNumber)
          ->check(not_nan);
  CLI::Option* atol_option =
      test->add_option("--atol", atol, "absolute tolerance of that rule (see --rtol)")
          ->check(CLI::NonNegativeNumber)
          ->check(not_nan);

  CLI::App* ops = app.add_subcommand(
      "ops", "List every operator and version idem runs (Markdown, as docs/operators.md)");
  bool ops_markdown = false;
  ops->add_flag("--markdown", ops_markdown,
                "Markdown output (the only format; accepted for clarity)");

  CLI::App* check = app.add_subcommand("check", "Validate a model and say what is wrong");
  check->add_option("MODEL", model, "model.onnx")->required();
  CLI::App* info = app.add_subcommand("info", "Show IR, opsets, inputs, outputs and nodes");
  info->add_option("MODEL", model, "model.onnx")->required();

  std::string optimize_out;
  bool optimize_check = false, optimize_explain = false, optimize_in_place = false;
  CLI::App* optimize =
      app.add_subcommand("optimize", "Remove every removable Identity node from a model file");
  optimize->add_option("IN", model, "model.onnx")->required();
  optimize->add_option("-o,--output", optimize_out, "where to write the result (atomically)");
  optimize->add_flag("--check", optimize_check,
                     "validate the result and, when idem runs both, compare outputs bit for bit");
  optimize->add_flag("--explain", optimize_explain, "list each kept Identity with its rule");
  optimize->add_flag("--in-place", optimize_in_place, "allow OUT to be IN (or omit -o)");

  idem::tools::BenchOptions bench_options;
  bool bench_json = false;
  int64_t bench_runs = 0;
  double bench_duration = 0;
  CLI::App* bench = app.add_subcommand(
      "bench",
      "Time repeated runs of a model on given or generated inputs: latency min/mean/median/"
      "p90/p99/max, runs per second, peak RSS");
  bench->add_option("MODEL", model, "model.onnx, or a backend-test folder (feeds test_data_set_0)")
      ->required();
  bench->add_option("--input,-i", bench_options.inputs,
                    "NAME=FILE, as for run (.pb or .npy); inputs not given are generated");
  bench->add_option("--dim", bench_options.dims,
                    "NAME=VALUE: the size of symbolic dim NAME in generated inputs (default 1); "
                    "repeatable");
  bench->add_option("--shape", bench_options.shapes,
                    "NAME=D0xD1x...: the whole shape of generated input NAME (e.g. input=1x512; "
                    "scalar for 0-d), checked against its declared shape; wins over --dim; "
                    "repeatable");
  CLI::Option* runs_option =
      bench
          ->add_option("--runs,-n", bench_runs,
                       "measured runs (with --duration too: whichever ends first)")
          ->check(CLI::Range(int64_t{1}, int64_t{1000000000000}));
  CLI::Option* duration_option =
      bench
          ->add_option(
              "--duration,-d", bench_duration,
              fmt::format("measure for SECONDS (default {:g} when --runs is not given; "
                          "at most {:g})",
                          idem::tools::kDefaultBenchSeconds, idem::tools::kMaxBenchSeconds))
          ->check(CLI::Validator(
              [](std::string& input) -> std::string {
                char* end = nullptr;
                const double d = std::strtod(input.c_str(), &end);
                if (end == input.c_str() || *end != '\0' || !(d > 0) ||
                    d > idem::tools::kMaxBenchSeconds) {
                  return fmt::format("{} is not a number of seconds in (0, {:g}]", input,
                                     idem::tools::kMaxBenchSeconds);
                }
                return {};
              },
              "SECONDS"));
  bench->add_option("--warmup,-w", bench_options.warmup, "unmeasured runs first (default 5)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1000000000}));
  bench
      ->add_option("--threads", bench_options.session.intra_op_threads,
                   "intra-op threads (SessionOptions::intra_op_threads; default 1)")
      ->check(CLI::Range(1, 1024));
  bench->add_flag("--reference", bench_options.session.reference_kernels,
                  "run the reference kernels (SessionOptions::reference_kernels)");
  bench->add_flag("--json", bench_json, "print the results as one JSON object");

  // Run time: a Loop's trip count is the model's, so only a deadline bounds it.
  double timeout_seconds = 0;
  for (CLI::App* sub : {run, test, optimize, bench}) {
    sub->add_option("--timeout", timeout_seconds,
                    "stop a run after SECONDS (each data set's run for test; each model's run for "
                    "optimize --check; each run for bench); default: no limit")
        ->check(CLI::PositiveNumber)
        // PositiveNumber lets NaN through (every comparison with it is false), which would
        // silently mean "no limit".
        ->check(CLI::Validator(
            [](std::string& input) -> std::string {
              return std::isnan(std::strtod(input.c_str(), nullptr))
                         ? input + " is not a number of seconds"
                         : std::string();
            },
            "NOT NAN"));
  }

  // External data: how it is loaded, and whether hard-linked files are accepted.
  std::string external_data = "map";
  bool allow_hard_links = false;
  for (CLI::App* sub : {run, test, check, info, optimize, bench}) {
    sub->add_option("--external-data", external_data,
                    "map (default: fast; the files must stay unchanged while idem runs) or copy "
                    "(read at load; later changes to the files cannot affect results)")
        ->check(CLI::IsMember({"map", "copy"}));
    sub->add_flag("--allow-hard-links", allow_hard_links,
                  "accept external-data files with more than one hard link");
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    fmt::print(stderr,
               "usage: idem run|test|check|info|optimize|bench|ops ... (see idem --help)\n");
    return 2;
  }
  idem::SessionOptions options;
  options.external_data =
      external_data == "copy" ? idem::ExternalDataMode::kCopy : idem::ExternalDataMode::kMap;
  options.allow_external_hard_links = allow_hard_links;
  // The library reports errors as Status values; what can still escape is the C++ runtime's own
  // allocation failure (e.g. under `ulimit -v`): one `error:` line, never an abort.
  try {
    if (*run) return Run(model, inputs, output_dir, options, timeout_seconds);
    if (*test) {
      std::optional<idem::tools::Tolerance> tolerance;
      if (rtol_option->count() > 0 || atol_option->count() > 0) {
        tolerance = idem::tools::Tolerance{rtol, atol};
      }
      return Test(test_paths, skip_unsupported, quiet, options, timeout_seconds, tolerance);
    }
    if (*ops) {
      std::fputs(idem::OperatorTableMarkdown().c_str(), stdout);
      return 0;
    }
    if (*check) return Check(model, options);
    if (*info) return Info(model, options);
    if (*bench) {
      if (runs_option->count() > 0) bench_options.runs = static_cast<uint64_t>(bench_runs);
      if (duration_option->count() > 0) bench_options.duration_seconds = bench_duration;
      bench_options.session.external_data = options.external_data;
      bench_options.session.allow_external_hard_links = options.allow_external_hard_links;
      bench_options.timeout_seconds = timeout_seconds;
      return Bench(model, bench_options, bench_json);
    }
    if (*optimize) {
      return Optimize(model, optimize_out, optimize_check, optimize_explain, optimize_in_place,
                      options, timeout_seconds);
    }
  } catch (const std::bad_alloc&) {
    return Fail(
        "out of memory: the model or its inputs need more memory than this process may "
        "allocate");
  } catch (const std::exception& e) {
    return Fail(fmt::format("internal error: {}", e.what()));
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Main() turns every error into an exit status; an exception from outside its handlers (CLI11
  // building the parser) still ends in one `error:` line, not std::terminate.
  try {
    return Main(argc, argv);
  } catch (...) {
    std::fputs("error: internal error: unexpected exception\n", stderr);
    return 1;
  }
}
