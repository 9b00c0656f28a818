// Heap copies that give their memory back to the system when released.
#ifndef IDEM_SRC_CORE_BUFFER_PAGES_H_
#define IDEM_SRC_CORE_BUFFER_PAGES_H_

#include <cstddef>
#include <span>

#include "idem/buffer.h"

namespace idem {

// Copies `bytes` into pages of their own (an anonymous mapping, read-only once filled) that are
// unmapped when the last Buffer over them goes. For long-lived copies made at load (misaligned
// raw_data): Buffer::CopyOf's blocks return to the freeing thread's block cache, so weights a
// session lets go of at Create (folded or packed into another form) would stay resident there.
// Writing through the data is a fault, not a silent change of a model's weights.
Result<Buffer> CopyToOwnPages(std::span<const std::byte> bytes);

}  // namespace idem

#endif  // IDEM_SRC_CORE_BUFFER_PAGES_H_
