// Sessions: a model validated and planned once, then run any number of times.
//
// Thread-safety: a Session is immutable after Create(). Run() and RunInto() are const and may be
// called from any number of threads at once on the same Session; each call keeps its state on its
// own stack/heap. Values returned by Run() stay valid after the Session is destroyed (they hold
// their own references, including to file mappings of external data).
//
// Example:
//   auto session = idem::Session::Create("model.onnx");
//   if (!session.ok()) { std::cerr << session.status().message(); return 1; }
//   auto x = idem::Value::MakeTensor(idem::ElementType::kFloat, {5}, buffer).value();
//   auto outputs = session->Run({x});          // positional, in inputs() order
//   const idem::Tensor& y = (*outputs)[0].tensor();
#ifndef IDEM_SESSION_H_
#define IDEM_SESSION_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "idem/export.h"
#include "idem/model_metadata.h"
#include "idem/options.h"
#include "idem/status.h"
#include "idem/type.h"
#include "idem/value.h"

namespace idem {

// A caller-owned destination for RunInto(): `data` must have room for the output's packed bytes.
struct OutputBuffer {
  void* data = nullptr;
  size_t capacity = 0;
};

// Over-aligned to a cache line so that the handle, read by every Run on every thread, never shares
// a line with memory some thread writes (which would make two threads slower than one).
class IDEM_API alignas(64) Session {
 public:
  // `path` names a .onnx file; external data is resolved inside its folder. The file is mapped
  // read-only and raw_data tensors point into the mapping (which they keep alive), so the file
  // must stay unchanged while the session or any of its values exists (a file of at most 4 MiB
  // is read into memory instead, which is cheaper than mapping it). Files over 2 GiB work.
  static Result<Session> Create(const std::string& path, const SessionOptions& options = {});
  // `bytes` is a serialized ModelProto. External data resolves against `base_dir` (empty: external
  // data is refused). The bytes are borrowed, not copied: raw_data tensors point into them, so
  // they must outlive the session and every value it returns, unchanged (use CreateFromBuffer to
  // hand over an owner instead).
  static Result<Session> CreateFromBytes(std::span<const std::byte> bytes,
                                         const std::string& base_dir = "",
                                         const SessionOptions& options = {});
  // As CreateFromBytes; raw_data tensors share `bytes`'s owner, which keeps them alive.
  static Result<Session> CreateFromBuffer(const Buffer& bytes, const std::string& base_dir = "",
                                          const SessionOptions& options = {});
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // Graph inputs that must be fed (those that are not initializers), in graph order.
  std::span<const ValueInfo> inputs() const;
  // Graph inputs that have an initializer: may be fed by name to override the default.
  std::span<const ValueInfo> overridable_inputs() const;
  std::span<const ValueInfo> outputs() const;
  // The model's descriptive fields (producer, doc strings, metadata_props).
  const ModelMetadata& metadata() const;

  // Runs with `feeds` in inputs() order. Returns outputs in outputs() order.
  Result<std::vector<Value>> Run(std::span<const Value> feeds) const;
  Result<std::vector<Value>> Run(std::initializer_list<Value> feeds) const {
    return Run(std::span<const Value>(feeds.begin(), feeds.size()));
  }
  // As Run, with per-call options: a cancellation flag and a deadline, checked by every Loop and
  // Scan iteration (the run then fails with kCancelled or kDeadlineExceeded).
  Result<std::vector<Value>> Run(std::span<const Value> feeds, const RunOptions& options) const;
  // As Run, but the outputs go into `outputs` (exactly outputs().size() slots, else
  // kInvalidArgument; what a slot held is released when the run succeeds, and left as it was
  // when it fails). No vector is allocated, so a steady-state Run of a fixed-shape model into
  // the same slots makes no heap allocation at all (tensor bytes and Value nodes come from
  // per-thread caches of freed blocks). Streaming state: move the state output into the feeds.
  Status Run(std::span<const Value> feeds, std::span<Value> outputs) const;
  Status Run(std::span<const Value> feeds, std::span<Value> outputs,
             const RunOptions& options) const;
  // Runs with feeds by name (inputs() names, plus overridable_inputs() names).
  Result<std::vector<Value>> RunNamed(std::span<const NamedValue> feeds) const;
  Result<std::vector<Value>> RunNamed(std::span<const NamedValue> feeds,
                                      const RunOptions& options) const;

  // Runs and copies each output's bytes into caller memory (the one place idem copies Identity's
  // data). Every output must be a non-string tensor and fit its OutputBuffer; shapes are returned.
  Result<std::vector<std::vector<int64_t>>> RunInto(std::span<const Value> feeds,
                                                    std::span<const OutputBuffer> outputs) const;

  // Human-readable description: IR version, opsets, typed inputs/outputs, nodes with resolved
  // versions (what `idem info` prints).
  std::string Describe() const;

  struct Impl;

 private:
  friend struct SessionFactory;
  explicit Session(std::unique_ptr<const Impl> impl);
  std::unique_ptr<const Impl> impl_;
};

// Every operator version the session's kernel registry implements, sorted by (domain, op_type,
// since_version). What a model may use; anything else is refused with StatusCode::kUnsupported.
IDEM_API std::vector<OperatorInfo> SupportedOperators();

}  // namespace idem

#endif  // IDEM_SESSION_H_
