// The feeds `idem run` and `idem bench` read: `--input NAME=FILE` arguments, and a backend-test
// folder's first data set.
#ifndef IDEM_TOOLS_FEEDS_H_
#define IDEM_TOOLS_FEEDS_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "idem/session.h"
#include "idem/status.h"
#include "idem/value.h"

namespace idem::tools {

// A model file, or a backend-test folder's model.onnx.
std::string ModelPath(const std::string& path);

// `arg` of command-line option `option` (e.g. "--input") split at its first '=' into NAME (not
// empty) and the rest: "x=a.npy" -> {"x", "a.npy"}. Otherwise an error naming the option, the
// argument and the form expected, `NAME=` + `value_name` ("--input 'x': expected NAME=FILE").
Result<std::pair<std::string, std::string>> SplitNameValue(std::string_view arg,
                                                           std::string_view option,
                                                           std::string_view value_name = "VALUE");

// The input or overridable input (initializer) of `session` named `name`; otherwise an error
// saying the model has no such input and listing its inputs.
Result<const ValueInfo*> FindInput(const Session& session, std::string_view name);

// Reads each `NAME=FILE` argument (.npy or .pb, see ReadValueFile) as the type the session
// declares for NAME (an input or an overridable input); when there is none and `model_arg` is a
// backend-test folder, its test_data_set_0 inputs. `model` (the file) names errors. Inputs left
// unfed are the caller's to handle.
Result<std::vector<NamedValue>> ReadFeeds(const Session& session, const std::string& model_arg,
                                          const std::string& model,
                                          const std::vector<std::string>& input_args);

}  // namespace idem::tools

#endif  // IDEM_TOOLS_FEEDS_H_
