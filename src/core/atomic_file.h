// Files replaced whole or not at all, for every layer that writes them (`idem optimize` in
// src/onnx, the CLI's output files in tools/).
//
// A file is written to a temporary name beside its target (same folder, so the rename stays on
// one file system), flushed with fsync, then renamed over the target; the folder is flushed after
// the rename (best effort: some file systems refuse fsync on a folder). On any error the target is
// left as it was and no temporary file is left behind.
// - Only a regular file (or nothing) at a target is replaced: a symlink would be swapped for a
//   file while its target stays unchanged, and a device such as /dev/null would be destroyed (as
//   root). Anything else is refused with kInvalidArgument, naming what is there.
// - An existing target keeps its permission bits; a new file gets 0666 minus the umask.
#ifndef IDEM_SRC_CORE_ATOMIC_FILE_H_
#define IDEM_SRC_CORE_ATOMIC_FILE_H_

#include <cstddef>
#include <functional>
#include <span>
#include <string>

#include "idem/status.h"

namespace idem {

// Receives output bytes in order, in pieces.
using ByteSink = std::function<Status(std::span<const std::byte>)>;

// Writes `path` atomically; `produce` hands the file's bytes, in order, to the sink it is given.
// An error of `produce` that is not the sink's own (e.g. malformed data) is returned as it is.
Status WriteFileAtomically(const std::string& path,
                           const std::function<Status(const ByteSink&)>& produce);

struct FileToWrite {
  std::string path;
  std::string bytes;
};

// Replaces a set of files all together as far as a file system allows: every target is checked
// first, and every file is written to its temporary name and flushed before the first rename; on
// any failure until then the temporaries are removed and no target has been touched. Only a
// target changed by someone else between the check and the renames can leave a partial set (the
// error then says how many were replaced).
Status WriteFilesAtomically(std::span<const FileToWrite> files);

}  // namespace idem

#endif  // IDEM_SRC_CORE_ATOMIC_FILE_H_
