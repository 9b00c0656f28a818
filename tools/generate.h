// Deterministic feeds generated from declared types (used by `idem optimize --check` and tests to
// run an original and an optimized model on the same inputs).
#ifndef IDEM_TOOLS_GENERATE_H_
#define IDEM_TOOLS_GENERATE_H_

#include <cstdint>

#include "idem/status.h"
#include "idem/type.h"
#include "idem/value.h"

namespace idem::tools {

// The most elements a generated tensor may have (2^24): a larger declared or requested shape is
// an error, not gigabytes of made-up input.
inline constexpr uint64_t kMaxGeneratedElements = uint64_t{1} << 24;

// How generated floating-point elements are made.
enum class FloatFill {
  // Any bit pattern (NaN, infinity, subnormals, values near the range's ends): inputs for
  // comparing two runs bit for bit (`optimize --check`), which such values exercise best.
  kBitPatterns,
  // Values spread evenly over [-1, 1), finite, no subnormals: inputs for timing (`idem bench`),
  // so a model takes the paths real data take (a fast kernel may leave NaN or huge values to a
  // slower path, and a NaN can end a computation early).
  kUnitRange,
};

// A value of `type`: symbolic or unknown dims are 2, a tensor of unknown rank is [2]; sequences
// hold 2 tensors and optionals hold a value. Elements follow a fixed pattern derived from `seed`:
// floats as `fill` says; integers are 0..3 and bools 0 or 1, so a generated trip count or
// position stays small and valid.
Result<Value> GenerateValue(const Type& type, uint64_t seed,
                            FloatFill fill = FloatFill::kBitPatterns);

}  // namespace idem::tools

#endif  // IDEM_TOOLS_GENERATE_H_
