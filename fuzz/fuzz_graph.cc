// libFuzzer entry point; the body lives in harness.cc (shared with the regression replay).
#include <cstddef>
#include <cstdint>

#include "fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  idem::fuzz::FuzzGraph(data, size);
  return 0;
}
