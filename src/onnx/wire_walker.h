// A walk over ONNX protobuf bytes that runs before protobuf materialises anything.
//
// Why: protobuf's parser copies every byte it keeps (a 256 MiB raw_data becomes a 256 MiB
// std::string), refuses inputs over 2 GiB, and turns a 2-byte empty message into a heap object of
// a few hundred bytes, so a hostile file of empty nodes, dims or strings costs 50-100x its size
// before any limit can be checked. The walker reads the wire format with protobuf's own
// CodedInputStream/WireFormatLite, knows which fields of which messages hold tensors and graphs,
// and
// - counts nodes, values and nesting, and estimates what protobuf and the converter will allocate
//   for every message, field and packed element, refusing the input (kResourceExhausted) before
//   anything is allocated when a Limit is crossed;
// - for models, emits a compact copy in which every TensorProto.raw_data is replaced by a
//   reference (an unknown varint field kRawRefField holding an index into `refs`), so protobuf
//   only ever parses the small rest and the tensor bytes stay where they are (in the caller's
//   buffer or the file mapping); the main graph's nodes are set apart so they can be parsed one
//   at a time.
//
// Contracts:
// - Offsets are 64-bit; the input may be larger than 2 GiB. CodedInputStream only ever sees
//   windows of at most 1 GiB.
// - Recursion follows message nesting and stops at kMaxWireDepth (protobuf's own default
//   recursion limit, so nothing protobuf accepts is refused for depth).
// - Fields are interpreted exactly as protobuf does: a known field with an unexpected wire type is
//   an unknown field (copied verbatim), repeated occurrences of a singular message are merged by
//   protobuf when it parses the compact copy, and a raw_data that occurs twice keeps the last.
// - kRawRefField in an input TensorProto is refused (it is reserved for the references).
#ifndef IDEM_SRC_ONNX_WIRE_WALKER_H_
#define IDEM_SRC_ONNX_WIRE_WALKER_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idem/options.h"
#include "idem/status.h"
#include "src/core/atomic_file.h"

namespace idem {

// Field number of the reference that replaces raw_data in the compact copy (the largest field
// number protobuf allows; ONNX will never use it).
inline constexpr int kRawRefField = 536870911;
// Protobuf's default recursion limit for nested messages.
inline constexpr int kMaxWireDepth = 100;

// Where one raw_data payload lies in the input.
struct RawRef {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Where one main-graph node's compact bytes lie: in CompactModel::node_bytes, or (in_input) in
// the walked input itself. At most INT_MAX bytes (protobuf's parse limit).
struct NodeRef {
  uint64_t offset = 0;
  uint32_t length = 0;
  bool in_input = false;
};

struct WireCounts {
  uint64_t messages = 0;
  uint64_t nodes = 0;            // in every graph, subgraphs included
  uint64_t values = 0;           // graph inputs, outputs, value_info, initializers (all graphs)
  uint64_t raw_bytes = 0;        // raw_data payload bytes (left in place for models)
  uint64_t estimated_bytes = 0;  // what materialising the input is estimated to cost
  int graph_depth = 0;           // deepest graph nesting (the main graph is 1)
};

// The root message of a value file (.pb).
enum class ValueMessage { kTensor, kSequence, kOptional };

struct CompactModel {
  // The model with every raw_data replaced by a reference, and without the main graph's nodes.
  std::string bytes;
  std::vector<RawRef> refs;  // indexed by the reference fields' values
  // The main graph's (ModelProto.graph's) nodes, each a compact NodeProto, in order (across
  // repeated graph fields, as protobuf would merge them), so they can be parsed and converted one
  // at a time: Node(i). A node the compaction leaves unchanged (no raw_data, no re-encoded
  // length: every node of a typical graph) is not copied; it is read where it lies in `input`.
  std::string node_bytes;
  std::vector<NodeRef> nodes;
  WireCounts counts;
  // The walked bytes; the caller keeps them alive as long as this model.
  std::span<const std::byte> input;

  std::string_view Node(size_t i) const {
    const NodeRef& r = nodes[i];
    const char* base = r.in_input ? reinterpret_cast<const char*>(input.data()) : node_bytes.data();
    return {base + r.offset, r.length};
  }
};

// The memory a load of `input_bytes` may take: max(max_load_memory_floor,
// max_load_memory_factor * input_bytes), saturating.
uint64_t LoadMemoryBudget(uint64_t input_bytes, const Limits& limits);

// Walks a ModelProto. Errors: kInvalidModel for malformed wire data (as protobuf would refuse
// it), kResourceExhausted for limits (nodes, values, graph depth, load memory, or a compact copy
// over protobuf's 2 GiB).
// `max_depth` bounds message nesting (the optimizer, which parses with a recursion limit derived
// from max_graph_depth, passes its own).
// `use` says what the caller does with the result, for the memory estimate: the loader parses
// the main graph's nodes one at a time and keeps only its own GraphDef (kLoad); the optimizer
// keeps the whole ModelProto (kParseWhole).
enum class WireUse { kLoad, kParseWhole };
Result<CompactModel> CompactModelBytes(std::span<const std::byte> input, const Limits& limits,
                                       int max_depth = kMaxWireDepth, WireUse use = WireUse::kLoad);

// ExpandRawRefs's sink: a ByteSink (src/core/atomic_file.h; a piece may point into the model's
// own bytes).

// The inverse of CompactModelBytes for a (possibly rewritten) model: `compact` is a serialized
// ModelProto whose TensorProtos carry kRawRefField references into `refs` (as CompactModelBytes
// emits them, parsed and re-serialized by protobuf, which keeps them as unknown fields); `sink`
// receives the same ModelProto with every reference replaced by the raw_data it stands for, read
// from `input`. Nothing is copied but into `sink`, so the output may exceed 2 GiB. Message
// lengths are computed in a first pass over `compact` (which is < 2 GiB); a reference out of
// range, or malformed wire data, is kInternal (`compact` is idem's own output).
Status ExpandRawRefs(std::span<const std::byte> compact, std::span<const RawRef> refs,
                     std::span<const std::byte> input, const ByteSink& sink);

// Walks a value file's bytes without copying anything and checks the same limits (load memory,
// sequence length), so a hostile .pb is refused before protobuf parses it.
Result<WireCounts> CheckValueBytes(std::span<const std::byte> input, ValueMessage root,
                                   const Limits& limits);

}  // namespace idem

#endif  // IDEM_SRC_ONNX_WIRE_WALKER_H_
