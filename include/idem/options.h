// Session options and the limits that bound what a model may cost. Plain data, no dependencies.
#ifndef IDEM_OPTIONS_H_
#define IDEM_OPTIONS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace idem {

// Bounds that keep hostile models from costing more than their size justifies. Every count and
// byte size is checked with overflow-safe arithmetic before anything is allocated.
struct Limits {
  uint64_t max_model_bytes = uint64_t{1} << 40;    // model file / buffer size (mapped)
  uint64_t max_tensor_bytes = uint64_t{64} << 30;  // one tensor's payload (incl. external)
  uint64_t max_elements = uint64_t{1} << 40;       // elements of one tensor
  int max_type_depth = 8;                          // nesting of seq/optional in a type
  uint64_t max_nodes = 1'000'000;                  // nodes in the graph
  uint64_t max_values = 4'000'000;                 // named values in the graph
  // Memory a load may take, estimated on the wire before protobuf materialises anything:
  // max(max_load_memory_floor, max_load_memory_factor x the file's size). Small messages, fields
  // and packed elements cost far more once parsed than in the file; this bounds that expansion.
  uint64_t max_load_memory_factor = 24;
  uint64_t max_load_memory_floor = uint64_t{256} << 20;
  uint64_t max_rank = 65536;                         // dims of one tensor or declared shape
  uint64_t max_sequence_length = uint64_t{1} << 24;  // tensors in one sequence
  int max_graph_depth = 64;                          // nesting of subgraphs (If/Loop/Scan bodies)
  // Bytes of values a single Run may hold alive at once (computed values only; feeds and
  // initializers are not counted). Crossing it fails the Run naming the node that crossed it.
  uint64_t max_run_bytes = uint64_t{16} << 30;
};

// How external data is brought into a session.
enum class ExternalDataMode : uint8_t {
  // Mapped read-only (default, fast). The file must stay unchanged while any value refers to it.
  kMap,
  // Copied at load: values stay stable whatever later happens to the file.
  kCopy,
};

struct SessionOptions {
  Limits limits;
  // Removes Identity nodes from the plan so their outputs alias their inputs (validation still
  // checks every Identity's types). Off only to measure or debug.
  bool eliminate_identity = true;
  // Computes, once at Session::Create, every value the constants determine (Shape of a statically
  // shaped value, arithmetic on initializers, ...), so no step runs for it. Results larger than
  // 16 MiB, kernels that fail on their constant inputs, and kernels whose work is not
  // proportional to their inputs and outputs (Conv, ConvTranspose, Gemm, MatMul, LSTM, pools) are
  // left to run time, so a small file cannot make Create compute for hours. Off only to
  // measure or debug (the general path then runs every node).
  bool fold_constants = true;
  ExternalDataMode external_data = ExternalDataMode::kMap;
  // External-data files with more than one hard link are refused unless this is set (a link in
  // the model's folder may point at a file outside it).
  bool allow_external_hard_links = false;
  // Runs every operator on its reference kernel (plain loops in a fixed order: the oracle the
  // fast kernels are tested against) instead of the fast kernels (packed GEMM/GEMV through
  // SIMD, docs/performance.md). Both are deterministic; their results differ in the last bits
  // (the fast kernels fuse each multiply-add). For tests and for checking a result.
  bool reference_kernels = false;
  // Threads one product may be split over, the calling thread included (>= 1; 1: every kernel
  // runs on the thread that called Run). The session starts intra_op_threads - 1 workers that
  // sleep between products, never spin. Only large products split (about 2 million
  // multiply-adds or more); results are the same bits for every thread count.
  int intra_op_threads = 1;
  // Plans the memory of runs whose feeds have the shapes of an earlier run (at most 4 sets of
  // shapes per session): the first run of a set records when each tensor is made and freed, and
  // later runs place every tensor that dies within the run at an offset in one arena, laid out so
  // tensors alive at the same time never share bytes. A fixed-shape model then holds about its
  // largest set of tensors alive at once, not a cached block per tensor size. Results are the
  // same bits either way. Off only to measure or debug.
  bool memory_plan = true;
};

// Per-call options of Session::Run*. Control flow checks them on every Loop iteration.
struct RunOptions {
  // Another thread may set *cancel to true; the run then stops with StatusCode::kCancelled.
  const std::atomic<bool>* cancel = nullptr;
  // The run stops with StatusCode::kDeadlineExceeded once this time has passed.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

}  // namespace idem

#endif  // IDEM_OPTIONS_H_
