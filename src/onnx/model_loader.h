// Reads ONNX models (files, bytes or ModelProto) into protobuf-free GraphDefs.
//
// Checks here are those of the file format: size limits, parse errors, IR version (3 to 13),
// default-domain opset (1 to 28), types, initializer payloads (including external data, confined
// to the model's folder). Graph rules (single assignment, order, arity, operator types) are the
// planner's job.
#ifndef IDEM_SRC_ONNX_MODEL_LOADER_H_
#define IDEM_SRC_ONNX_MODEL_LOADER_H_

#include <span>
#include <string>

#include "idem/options.h"
#include "idem/value.h"
#include "idem/status.h"
#include "src/core/graph_def.h"
#include "src/onnx/external_data.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace idem {

inline constexpr int64_t kMinIrVersion = 3;
inline constexpr int64_t kMaxIrVersion = 13;
inline constexpr int64_t kMaxDefaultOpset = 28;

// Reads a whole file (bounded by limits.max_model_bytes). Errors name the file.
Result<std::string> ReadFileBytes(const std::string& path, uint64_t max_bytes);

// `external` says how external data is brought in (map or copy, hard links).
Result<GraphDef> LoadGraphFromFile(const std::string& path, const Limits& limits,
                                   const ExternalDataOptions& external = {});
Result<GraphDef> LoadGraphFromBytes(std::span<const std::byte> bytes, const std::string& base_dir,
                                    const Limits& limits, const ExternalDataOptions& external = {});
// Consumes `model` (initializer payloads are moved out, not copied).
Result<GraphDef> LoadGraphFromProto(onnx::ModelProto& model, const std::string& base_dir,
                                    const Limits& limits, const ExternalDataOptions& external = {});

// Directory part of a path ("." when it has none).
std::string DirectoryOf(const std::string& path);

}  // namespace idem

#endif  // IDEM_SRC_ONNX_MODEL_LOADER_H_
