#include "src/core/huge_pages.h"

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

namespace idem {

void AdviseHugePages(void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  if (data == nullptr || bytes < 2 * kHugePage) return;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t last = (begin + bytes) & ~(kHugePage - 1);
  if (last > first) {
    // Best effort: an error (no THP in this kernel) leaves the pages as they are. The aligned
    // start is reached from `data` itself (no integer-to-pointer cast).
    (void)madvise(static_cast<std::byte*>(data) + (first - begin), last - first, MADV_HUGEPAGE);
  }
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace idem
