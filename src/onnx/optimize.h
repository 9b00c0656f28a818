// The Identity remover on the ModelProto (see idem/optimize.h for the rules and contracts).
#ifndef IDEM_SRC_ONNX_OPTIMIZE_H_
#define IDEM_SRC_ONNX_OPTIMIZE_H_

#include <optional>
#include <string>
#include <vector>

#include "idem/optimize.h"
#include "idem/status.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace idem {

struct ProtoOptimizeResult {
  OptimizeReport report;
  // A tensor kept in external data (name and location), if the model has any.
  std::optional<std::pair<std::string, std::string>> external_data;
  // Every distinct external-data location in the model (relative to its folder): OUT must not
  // be one of them, or the write would replace the weights with the model.
  std::vector<std::string> external_locations;
};

// Edits `model` in place: deletes removable Identity nodes and renames references. When
// report.removed == 0 the model is untouched. Errors only for nesting deeper than
// options.limits.max_graph_depth (kResourceExhausted).
Result<ProtoOptimizeResult> OptimizeModelProto(onnx::ModelProto& model,
                                               const OptimizeOptions& options = {});

}  // namespace idem

#endif  // IDEM_SRC_ONNX_OPTIMIZE_H_
