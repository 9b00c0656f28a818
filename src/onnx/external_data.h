// External tensor data, confined to the model's folder.
//
// A location is resolved component by component with openat(O_NOFOLLOW) starting at the model's
// folder, so neither "..", absolute paths nor symlinks (anywhere on the path) can leave it; the
// final component must be a regular file, opened without blocking (a FIFO cannot hang the load).
// The byte range must lie inside the file; the bytes are mapped read-only, never read whole.
#ifndef IDEM_SRC_ONNX_EXTERNAL_DATA_H_
#define IDEM_SRC_ONNX_EXTERNAL_DATA_H_

#include <cstdint>
#include <optional>
#include <string>

#include "idem/buffer.h"
#include "idem/status.h"

namespace idem {

// Maps `length` bytes at `offset` of `location` (relative to `base_dir`). A missing length means
// "to the end of the file".
Result<Buffer> MapExternalData(const std::string& base_dir, const std::string& location,
                               uint64_t offset, std::optional<uint64_t> length);

}  // namespace idem

#endif  // IDEM_SRC_ONNX_EXTERNAL_DATA_H_
