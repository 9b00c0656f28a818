// Transparent huge pages for the large tables a load or a plan fills at once.
#ifndef IDEM_SRC_CORE_HUGE_PAGES_H_
#define IDEM_SRC_CORE_HUGE_PAGES_H_

#include <cstddef>

namespace idem {

// Asks the kernel to back the 2 MiB-aligned part of [data, data + bytes) with transparent huge
// pages, before the range is first touched: a million-node graph's NodeDefs (200 MB) and the
// planner's name index are written once, in full, so this costs no memory they would not use,
// and takes one page fault per 2 MiB instead of 512 (a tenth of loading such a graph went to
// page faults) and fewer TLB misses on the index's random probes. Advice only: where THP is off
// or unavailable nothing changes. Ranges under 4 MiB are left alone.
void AdviseHugePages(void* data, size_t bytes);

}  // namespace idem

#endif  // IDEM_SRC_CORE_HUGE_PAGES_H_
