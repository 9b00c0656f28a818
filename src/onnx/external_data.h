// External tensor data, confined to the model's folder.
//
// A location is resolved component by component with openat(O_NOFOLLOW) starting at the model's
// folder, so neither "..", absolute paths nor symlinks (anywhere on the path) can leave it; the
// final component must be a regular file, opened without blocking (a FIFO cannot hang the load).
// The byte range must lie inside the file. A file with more than one hard link is refused unless
// allowed: a hard link inside the model's folder may name a file anywhere on the same file system,
// which the path checks cannot see.
//
// Modes (SessionOptions::external_data):
// - kMap (default): the bytes are mapped read-only, never read whole. The file must stay
//   unchanged while any value refers to it: truncating it makes reads of the mapping fault
//   (SIGBUS), rewriting it in place changes values idem hands out as immutable.
// - kCopy: the bytes are read into memory idem owns at load; later changes to the file, including
//   truncation, cannot affect the session or its values.
#ifndef IDEM_SRC_ONNX_EXTERNAL_DATA_H_
#define IDEM_SRC_ONNX_EXTERNAL_DATA_H_

#include <cstdint>
#include <optional>
#include <string>

#include "idem/buffer.h"
#include "idem/options.h"
#include "idem/status.h"

namespace idem {

struct ExternalDataOptions {
  ExternalDataMode mode = ExternalDataMode::kMap;
  bool allow_hard_links = false;
  static ExternalDataOptions From(const SessionOptions& options) {
    return {options.external_data, options.allow_external_hard_links};
  }
};

// Maps (or, in kCopy mode, reads) `length` bytes at `offset` of `location` (relative to
// `base_dir`). A missing length means "to the end of the file".
Result<Buffer> MapExternalData(const std::string& base_dir, const std::string& location,
                               uint64_t offset, std::optional<uint64_t> length,
                               const ExternalDataOptions& options = {});

}  // namespace idem

#endif  // IDEM_SRC_ONNX_EXTERNAL_DATA_H_
