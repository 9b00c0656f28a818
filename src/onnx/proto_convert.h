// Conversions between ONNX protobuf messages and idem values/types. The only layer that sees
// protobuf; everything it returns is protobuf-free.
//
// Contracts:
// - Every size a message claims is checked against what the message (or the external file)
//   actually holds before anything is allocated, with overflow-safe arithmetic.
// - Messages for values are chosen by the declared type, never by trial parsing.
#ifndef IDEM_SRC_ONNX_PROTO_CONVERT_H_
#define IDEM_SRC_ONNX_PROTO_CONVERT_H_

#include <span>
#include <string>

#include "idem/buffer.h"
#include "idem/options.h"
#include "idem/status.h"
#include "idem/type.h"
#include "idem/value.h"
#include "src/onnx/external_data.h"
#include "src/onnx/wire_walker.h"

namespace onnx {
class TensorProto;
class TypeProto;
class SequenceProto;
class OptionalProto;
}  // namespace onnx

namespace idem {

// What resolving raw_data references did (see wire_walker.h).
struct RawDataStats {
  uint64_t in_place = 0;  // bytes left in the model's buffer (shifted ones included)
  uint64_t shifted = 0;   // of those, bytes moved back into their own field's framing to align them
  uint64_t copied = 0;    // bytes copied because they were misaligned for their element type
};

struct LoadContext {
  // Folder external data must stay inside; empty refuses external data.
  std::string base_dir;
  Limits limits;
  // How external data is brought in (map or copy) and whether hard-linked files are accepted.
  ExternalDataOptions external;
  // The model's bytes and the raw_data references the wire walker left in the compact copy
  // (a TensorProto's kRawRefField indexes `raw_refs`). Without them a reference is refused.
  const Buffer* model_bytes = nullptr;
  std::span<const RawRef> raw_refs = {};
  RawDataStats* raw_stats = nullptr;
  // `model_bytes` is a read-only private mapping of the model file: once misaligned raw_data is
  // copied out, the pages wholly inside it are dropped from memory (madvise MADV_DONTNEED; a
  // later read faults them in again from the file), so the model's weights are not resident
  // twice. Never set for heap or caller bytes, whose contents MADV_DONTNEED would destroy.
  bool model_is_file_mapping = false;
  // Set when `model_bytes` is memory the loader alone owns and nothing but raw_data references
  // reads after the wire walk (a model file read into the heap): a misaligned payload is then
  // moved back by up to its misalignment, into its own field's tag and length bytes (which
  // nothing reads again), instead of being copied. `writable_model_bytes` is model_bytes->data();
  // `raw_ref_shifts` has one entry per reference, -1 until its payload is resolved, then the
  // bytes it was moved back by (0 when it stayed), so a payload converted again is found where
  // the first conversion left it (and copied from there if it is misaligned for the new type).
  std::byte* writable_model_bytes = nullptr;
  std::vector<int8_t>* raw_ref_shifts = nullptr;
};

// Converts a TensorProto. May move raw_data out of `proto` to avoid a copy (the proto is left
// valid but its raw_data is unspecified afterwards). Errors start with "`role` 'name'".
Result<Value> TensorFromProto(onnx::TensorProto& proto, const LoadContext& context,
                              std::string_view role = "tensor");

Result<Type> TypeFromProto(const onnx::TypeProto& proto, const Limits& limits);

// Parses `bytes` as the message the declared type calls for (TensorProto, SequenceProto or
// OptionalProto) and converts it. The declared type supplies the element type of empty sequences
// and optionals.
Result<Value> ValueFromProtoBytes(std::span<const std::byte> bytes, const Type& declared,
                                  const LoadContext& context);

// Serializes a value as the message of its kind, with `name` set.
Result<std::string> ValueToProtoBytes(const Value& value, const std::string& name);

void TensorToProto(const Tensor& tensor, onnx::TensorProto* proto);

}  // namespace idem

#endif  // IDEM_SRC_ONNX_PROTO_CONVERT_H_
