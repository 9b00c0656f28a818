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

#include "idem/buffer.h"
#include "idem/options.h"
#include "idem/status.h"
#include "idem/value.h"
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

// Model files up to this size are read into heap memory rather than mapped: one read into a
// block from the block cache costs less than a fresh mapping's page faults and its set-up and
// removal (an openWakeWord head's Create: about half), and at most this much is held twice.
inline constexpr uint64_t kReadWholeFileBytes = uint64_t{4} << 20;

// Maps a model file read-only (bounded by max_bytes), or reads it into heap memory when `copy`
// is set or it is at most kReadWholeFileBytes long; then, if `writable` is given, *writable is
// that memory (the caller's alone: nothing else has seen it), else null. Errors name the file.
Result<Buffer> MapModelFile(const std::string& path, uint64_t max_bytes, bool copy = false,
                            std::byte** writable = nullptr);

// Models are loaded from their bytes in place: the wire walker (wire_walker.h) checks limits and
// strips raw_data, protobuf parses the small rest, and every raw_data tensor (initializers and
// Constant nodes' tensors) becomes a Buffer into `bytes` that shares its owner. Files of any size
// are accepted (the part without raw_data must stay under protobuf's 2 GiB). A mapped file must
// stay unchanged while values refer to it; in ExternalDataMode::kCopy the model file itself is
// read into memory once too. `external` says how external data is brought in (map or copy,
// hard links).
Result<GraphDef> LoadGraphFromFile(const std::string& path, const Limits& limits,
                                   const ExternalDataOptions& external = {});
Result<GraphDef> LoadGraphFromBuffer(const Buffer& bytes, const std::string& base_dir,
                                     const Limits& limits,
                                     const ExternalDataOptions& external = {});
// Borrows `bytes`: they must outlive every value of the result, unchanged.
Result<GraphDef> LoadGraphFromBytes(std::span<const std::byte> bytes, const std::string& base_dir,
                                    const Limits& limits, const ExternalDataOptions& external = {});
// Consumes `model` (initializer payloads are moved out, not copied).
Result<GraphDef> LoadGraphFromProto(onnx::ModelProto& model, const std::string& base_dir,
                                    const Limits& limits, const ExternalDataOptions& external = {});
// Leaves `model` as it is (converts a copy), so callers need no protobuf header.
Result<GraphDef> LoadGraphFromProto(const onnx::ModelProto& model, const std::string& base_dir,
                                    const Limits& limits, const ExternalDataOptions& external = {});

// Directory part of a path ("." when it has none).
std::string DirectoryOf(const std::string& path);

}  // namespace idem

#endif  // IDEM_SRC_ONNX_MODEL_LOADER_H_
