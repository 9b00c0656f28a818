// Reading NumPy .npy files (format versions 1 to 3, C order) as idem tensors.
#ifndef IDEM_TOOLS_NPY_H_
#define IDEM_TOOLS_NPY_H_

#include <string>

#include "idem/status.h"
#include "idem/value.h"

namespace idem::tools {

// Supports bool, int8..int64, uint8..uint64, float16/32/64, complex64/128 ('<' or '|' byte
// order) and byte strings ('|S<n>', trailing NULs removed as NumPy does). Errors name the file.
Result<Value> ReadNpy(const std::string& path);

}  // namespace idem::tools

#endif  // IDEM_TOOLS_NPY_H_
