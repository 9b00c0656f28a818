// Running ONNX backend-test folders (model.onnx + test_data_set_N/{input,output}_K.pb) and
// comparing results, exactly or within a tolerance. Shared by `idem test`, the Python package and
// the fuzzers.
#ifndef IDEM_TOOLS_BACKEND_TEST_H_
#define IDEM_TOOLS_BACKEND_TEST_H_

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "idem/session.h"
#include "idem/status.h"
#include "idem/value.h"

namespace idem::tools {

struct CaseResult {
  enum class Outcome { kPass, kFail, kSkip };
  Outcome outcome = Outcome::kFail;
  std::string name;    // the folder's base name
  std::string reason;  // why it failed or was skipped
};

// How `idem test --rtol R --atol A` compares outputs: an element of a float tensor (float, double,
// float16, bfloat16) matches when |actual - expected| <= atol + rtol * |expected| (computed in
// double), a NaN matches any NaN and an infinity only itself. Everything else stays exact: kinds,
// element types, shapes, sequence lengths, optional presence, and the elements of every other
// type (integers, bools, strings, the float8 and 4-bit types).
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

// Exactly DescribeDifference when `tolerance` is nullopt (bit for bit); otherwise as Tolerance
// says. Returns nullopt when the values match, else one line: for a float tensor, how many
// elements differ, the worst one's flat index (row-major), both values, the error and what was
// allowed ("3 of 120 elements differ; worst: element 17: expected 0.5, got 0.5011, |error| 0.0011
// > allowed 0.000505 (atol 1e-05 + rtol 0.001 x |expected|)").
std::optional<std::string> DescribeDifferenceWithin(const Value& expected, const Value& actual,
                                                    const std::optional<Tolerance>& tolerance);

// Case folders under `path`: `path` itself if it holds model.onnx, otherwise every folder below it
// (recursively, sorted) that does. Errors when `path` does not exist.
Result<std::vector<std::string>> FindCaseFolders(const std::string& path);

// Runs every test_data_set_* of one case. A model using an operator idem lacks is kSkip when
// `skip_unsupported`, else kFail.
// `timeout_seconds` > 0 bounds each data set's Run (RunOptions::deadline; a Loop that would run
// longer fails the case with kDeadlineExceeded).
// Outputs are compared bit for bit unless `tolerance` is given (DescribeDifferenceWithin).
CaseResult RunBackendCase(const std::string& folder, bool skip_unsupported,
                          const SessionOptions& options = {}, double timeout_seconds = 0,
                          const std::optional<Tolerance>& tolerance = std::nullopt);

// RunOptions whose deadline is `timeout_seconds` from now (none when it is 0 or less).
RunOptions RunOptionsWithTimeout(double timeout_seconds);

// Reads input_K.pb / output_K.pb of one data set as the types the session declares.
Result<std::vector<Value>> ReadDataSetValues(const std::string& data_set_folder,
                                             const std::string& prefix,
                                             std::span<const ValueInfo> declared,
                                             const Limits& limits);

// Reads a value file: .npy (a tensor; wrapped in an optional when `declared` is
// optional(tensor)) or .pb (message chosen by `declared`).
Result<Value> ReadValueFile(const std::string& path, const Type& declared, const Limits& limits);

// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename. An
// error leaves any existing `path` untouched.
// Replaces a set of files all together as far as a file system allows: every target is checked
// (an existing one must be a regular file) and every file is written to a temporary name beside
// its target and fsync'ed before the first rename; on any failure the temporaries are removed and
// no target has been touched. An existing target keeps its mode; a new file gets 0666 minus the
// umask. Only a target changed by someone else between the check and the renames can leave a
// partial set (the error then says how many were replaced).
struct FileToWrite {
  std::string path;
  std::string bytes;
};
Status WriteFilesAtomically(std::span<const FileToWrite> files);

}  // namespace idem::tools

#endif  // IDEM_TOOLS_BACKEND_TEST_H_
