#include "src/onnx/wire_walker.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

namespace idem {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

// The messages whose fields the walker tells apart (onnx.proto as compiled into libonnx, and
// onnx-data.proto). Every other message-typed field is treated as opaque bytes.
enum class Kind : uint8_t {
  kModel,
  kGraph,
  kNode,
  kAttribute,
  kTensor,
  kSparseTensor,
  kValueInfo,
  kType,
  kTypeTensor,   // TypeProto.Tensor and TypeProto.SparseTensor (shape = 2)
  kTypeElement,  // TypeProto.Sequence and TypeProto.Optional (elem_type = 1)
  kTypeMap,      // TypeProto.Map (value_type = 2)
  kShape,
  kTrainingInfo,
  kFunction,
  kTensorAnnotation,
  kSequence,
  kMap,
  kOptional,
  kLeaf,  // messages of scalars and strings only (opset ids, string pairs, dims, segments)
};

// What a field of a message is to the walker.
enum class Role : uint8_t {
  kOther,         // scalar, string or unknown: charged, copied verbatim
  kMessage,       // a message to descend into (child kind given)
  kRawData,       // TensorProto.raw_data
  kPackedVarint,  // repeated varint field (may be packed: 8 bytes per element once parsed)
};

struct FieldRole {
  Role role = Role::kOther;
  Kind child = Kind::kLeaf;
};

constexpr FieldRole Msg(Kind k) { return {Role::kMessage, k}; }

FieldRole RoleOf(Kind kind, int field) {
  switch (kind) {
    case Kind::kModel:
      switch (field) {
        case 7:
          return Msg(Kind::kGraph);
        case 8:   // opset_import
        case 14:  // metadata_props
          return Msg(Kind::kLeaf);
        case 20:
          return Msg(Kind::kTrainingInfo);
        case 25:
          return Msg(Kind::kFunction);
      }
      break;
    case Kind::kGraph:
      switch (field) {
        case 1:
          return Msg(Kind::kNode);
        case 5:
          return Msg(Kind::kTensor);
        case 15:
          return Msg(Kind::kSparseTensor);
        case 11:
        case 12:
        case 13:
          return Msg(Kind::kValueInfo);
        case 14:
          return Msg(Kind::kTensorAnnotation);
      }
      break;
    case Kind::kNode:
      if (field == 5) return Msg(Kind::kAttribute);
      break;
    case Kind::kAttribute:
      switch (field) {
        case 5:
        case 10:
          return Msg(Kind::kTensor);
        case 6:
        case 11:
          return Msg(Kind::kGraph);
        case 22:
        case 23:
          return Msg(Kind::kSparseTensor);
        case 14:
        case 15:
          return Msg(Kind::kType);
        case 8:
          return {Role::kPackedVarint, Kind::kLeaf};
      }
      break;
    case Kind::kTensor:
      switch (field) {
        case 1:
        case 5:
        case 7:
        case 11:
          return {Role::kPackedVarint, Kind::kLeaf};
        case 3:
        case 13:
          return Msg(Kind::kLeaf);  // segment, external_data
        case 9:
          return {Role::kRawData, Kind::kLeaf};
      }
      break;
    case Kind::kSparseTensor:
      switch (field) {
        case 1:
        case 2:
          return Msg(Kind::kTensor);
        case 3:
          return {Role::kPackedVarint, Kind::kLeaf};
      }
      break;
    case Kind::kValueInfo:
      if (field == 2) return Msg(Kind::kType);
      break;
    case Kind::kType:
      switch (field) {
        case 1:
        case 8:
          return Msg(Kind::kTypeTensor);
        case 4:
        case 9:
          return Msg(Kind::kTypeElement);
        case 5:
          return Msg(Kind::kTypeMap);
      }
      break;
    case Kind::kTypeTensor:
      if (field == 2) return Msg(Kind::kShape);
      break;
    case Kind::kTypeElement:
      if (field == 1) return Msg(Kind::kType);
      break;
    case Kind::kTypeMap:
      if (field == 2) return Msg(Kind::kType);
      break;
    case Kind::kShape:
      if (field == 1) return Msg(Kind::kLeaf);
      break;
    case Kind::kTrainingInfo:
      switch (field) {
        case 1:
        case 2:
          return Msg(Kind::kGraph);
        case 3:
        case 4:
          return Msg(Kind::kLeaf);
      }
      break;
    case Kind::kFunction:
      switch (field) {
        case 7:
          return Msg(Kind::kNode);
        case 9:
          return Msg(Kind::kLeaf);
      }
      break;
    case Kind::kTensorAnnotation:
      if (field == 2) return Msg(Kind::kLeaf);
      break;
    case Kind::kSequence:
      switch (field) {
        case 3:
          return Msg(Kind::kTensor);
        case 4:
          return Msg(Kind::kSparseTensor);
        case 5:
          return Msg(Kind::kSequence);
        case 6:
          return Msg(Kind::kMap);
        case 7:
          return Msg(Kind::kOptional);
      }
      break;
    case Kind::kMap:
      switch (field) {
        case 3:
          return {Role::kPackedVarint, Kind::kLeaf};
        case 5:
          return Msg(Kind::kSequence);
      }
      break;
    case Kind::kOptional:
      switch (field) {
        case 3:
          return Msg(Kind::kTensor);
        case 4:
          return Msg(Kind::kSparseTensor);
        case 5:
          return Msg(Kind::kSequence);
        case 6:
          return Msg(Kind::kMap);
        case 7:
          return Msg(Kind::kOptional);
      }
      break;
    case Kind::kLeaf:
      break;
  }
  return {};
}

// What loading costs, per item of the wire format: the heap protobuf's objects take (`proto`) and
// what idem's converted form keeps (`idem`: GraphDef nodes, attributes, value infos, values).
// Measured on this build with a counting allocator (malloc_usable_size + the 8-byte chunk header;
// tests/loader_test.cc's LoadEstimateTest checks them against the heap a load really takes):
// sizeof(NodeProto) 128, AttributeProto 256, TensorProto 232, ValueInfoProto / TypeProto /
// TensorShapeProto / Dimension 48, GraphProto 208, each behind a heap chunk (+16) and a repeated
// field's slot (+8); NodeDef 200, Attribute 264, ValueInfo 48, std::string 32 (a heap chunk of
// 48 when it is a vector's element), a Value's node block 128.
struct Cost {
  uint64_t proto;
  uint64_t idem;
};

Cost MessageCost(Kind kind) {
  switch (kind) {
    case Kind::kNode:
      // NodeDef is 200 bytes; its first input and first output are held inline (NameList), which
      // the string fields charge as vector elements (48 each), so the node is credited 96.
      return {152, 104};
    case Kind::kAttribute:
      // idem's Attribute in a vector grown by doubling (6 attributes take 8 slots).
      return {280, 360};
    case Kind::kTensor:
      // A Value's node, its Buffer, and a small payload copied when it is not aligned.
      return {256, 256};
    case Kind::kValueInfo:
      return {72, 96};
    case Kind::kType:
    case Kind::kTypeTensor:
    case Kind::kTypeElement:
    case Kind::kTypeMap:
    case Kind::kShape:
      return {64, 16};  // idem's Type shares small nodes
    case Kind::kLeaf:   // dims, opset ids, string pairs, segments
      return {64, 48};
    case Kind::kGraph:
      return {224, 512};
    default:
      return {320, 320};
  }
}

// A string, bytes or unknown length-delimited field: protobuf's heap std::string (or unknown
// field) and its slot, and idem's copy: a vector's element for repeated strings (node inputs and
// outputs, string attributes and tensors), in place in its struct for the others. Characters
// that do not fit in place count twice.
constexpr Cost kStringField = {56, 48};

bool RepeatedString(Kind kind, int field) {
  return (kind == Kind::kNode && (field == 1 || field == 2)) ||
         (kind == Kind::kAttribute && field == 9) || (kind == Kind::kTensor && field == 6);
}

// The walker's own record of a main-graph node (a RawRef, in a vector that grows by doubling).
constexpr uint64_t kStreamedNodeCost = 32;
constexpr uint64_t kShortString = 15;  // libstdc++'s in-place capacity
// A field that is not length-delimited: an element of a repeated scalar field (or an unknown
// field) in protobuf and in idem's copy; singular scalars live inside their message.
constexpr uint64_t kScalarFieldCost = 16;
// A packed repeated varint: 8 bytes per element in protobuf and 8 in idem, and each array's chunk.
constexpr uint64_t kPackedElementCost = 16;
constexpr uint64_t kPackedArrayCost = 48;
// Kept payload bytes: raw_data in a model may be copied once (when it is not aligned for its
// element type); in a value file protobuf copies it and so does the converted value.
constexpr uint64_t kModelRawByteCost = 1;
constexpr uint64_t kValueRawByteCost = 2;
// The compact copy of a model and its main graph's node bytes (together at most the input).
constexpr uint64_t kModelCopyFactor = 2;

constexpr uint64_t kWindow = uint64_t{1} << 30;

uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) {
    return std::numeric_limits<uint64_t>::max();
  }
  return a * b;
}

class Walker {
 public:
  Walker(std::span<const std::byte> input, const Limits& limits, bool emit,
         int max_depth = kMaxWireDepth, WireUse use = WireUse::kLoad)
      : base_(reinterpret_cast<const uint8_t*>(input.data())),
        size_(input.size()),
        limits_(limits),
        budget_(LoadMemoryBudget(input.size(), limits)),
        emit_(emit),
        max_depth_(max_depth),
        use_(use) {}

  Status WalkRoot(Kind kind) {
    Seek(0);
    // A model is copied (compact bytes and node bytes) before protobuf parses it.
    if (emit_) IDEM_RETURN_IF_ERROR(Charge({SaturatingMul(size_, kModelCopyFactor), 0}));
    return WalkMessage(kind, size_, 0, 0, false);
  }

  std::string out;
  std::string node_bytes;
  std::vector<NodeRef> nodes;
  std::vector<RawRef> refs;
  WireCounts counts;

 private:
  uint64_t Pos() const { return window_begin_ + static_cast<uint64_t>(stream_->CurrentPosition()); }

  void Seek(uint64_t pos) {
    window_begin_ = pos;
    window_end_ = std::min<uint64_t>(size_, pos + kWindow);
    stream_.emplace(base_ + pos, static_cast<int>(window_end_ - pos));
  }

  // Re-windows when the current window ends soon (a tag, varint or fixed field is at most 10
  // bytes; groups are skipped by protobuf inside one window).
  void EnsureWindow() {
    if (window_end_ < size_ && window_end_ - Pos() < 64) Seek(Pos());
  }

  void SkipTo(uint64_t pos) {
    const uint64_t here = Pos();
    if (pos <= window_end_ &&
        pos - here <= static_cast<uint64_t>(std::numeric_limits<int>::max())) {
      stream_->Skip(static_cast<int>(pos - here));
    } else {
      Seek(pos);
    }
  }

  Status Malformed(uint64_t at, std::string_view what) const {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("not a valid protobuf message: {} at byte {}", what, at));
  }

  // Adds an item's cost. Protobuf objects of a main-graph node live only while that node is
  // converted (the loader parses them one at a time): they count once, for the largest node.
  // The optimizer keeps every protobuf object and converts nothing (WireUse::kParseWhole).
  Status Charge(Cost cost) {
    if (use_ == WireUse::kParseWhole) {
      persistent_ = SaturatingAdd(persistent_, cost.proto);
    } else {
      persistent_ = SaturatingAdd(persistent_, cost.idem);
      if (in_main_node_) {
        node_proto_ = SaturatingAdd(node_proto_, cost.proto);
      } else {
        persistent_ = SaturatingAdd(persistent_, cost.proto);
      }
    }
    counts.estimated_bytes = SaturatingAdd(persistent_, std::max(node_proto_, max_node_proto_));
    if (counts.estimated_bytes > budget_) {
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("loading these {} bytes would take more than {} bytes of memory "
                                "(max_load_memory_factor {} x the size, at least "
                                "max_load_memory_floor {}): too many small messages, fields "
                                "or elements",
                                size_, budget_, limits_.max_load_memory_factor,
                                limits_.max_load_memory_floor));
    }
    return {};
  }

  // Dims of one TensorProto / SparseTensorProto / TensorShapeProto occurrence.
  Status CountRank(uint64_t* rank, uint64_t added) {
    *rank += added;
    if (*rank > limits_.max_rank) {
      return Status(
          StatusCode::kResourceExhausted,
          fmt::format("a tensor or shape has more than max_rank {} dims", limits_.max_rank));
    }
    return {};
  }

  // Elements of a packed varint payload: bytes without the continuation bit.
  uint64_t PackedCount(uint64_t from, uint64_t to) const {
    uint64_t n = 0;
    for (uint64_t i = from; i < to; ++i) n += (base_[i] & 0x80) == 0 ? 1 : 0;
    return n;
  }

  Status CountEntry(Kind kind, Kind parent, int field, int graph_depth) {
    if (kind == Kind::kNode && parent == Kind::kGraph) {
      if (++counts.nodes > limits_.max_nodes) {
        return Status(StatusCode::kResourceExhausted,
                      fmt::format("more than max_nodes {} nodes", limits_.max_nodes));
      }
    }
    if (parent == Kind::kGraph &&
        (field == 5 || field == 11 || field == 12 || field == 13 || field == 15)) {
      if (++counts.values > limits_.max_values) {
        return Status(StatusCode::kResourceExhausted,
                      fmt::format("more than max_values {} values", limits_.max_values));
      }
    }
    // The main graph is depth 1; max_graph_depth bounds the subgraphs below it, as the
    // converter counts them.
    if (kind == Kind::kGraph && graph_depth - 1 > limits_.max_graph_depth) {
      return Status(
          StatusCode::kResourceExhausted,
          fmt::format("subgraphs nest deeper than max_graph_depth {}", limits_.max_graph_depth));
    }
    if (kind == Kind::kTensor && parent == Kind::kSequence &&
        ++sequence_items_ > limits_.max_sequence_length) {
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("more than max_sequence_length {} tensors in sequences",
                                limits_.max_sequence_length));
    }
    return {};
  }

  // Walks the message that ends at `end`; the stream is positioned at its first field.
  // `main_graph`: this is ModelProto.graph, whose nodes go to node_bytes one by one.
  Status WalkMessage(Kind kind, uint64_t end, int depth, int graph_depth, bool main_graph) {
    ++counts.messages;
    IDEM_RETURN_IF_ERROR(Charge(MessageCost(kind)));
    if (kind == Kind::kGraph) counts.graph_depth = std::max(counts.graph_depth, graph_depth);
    uint64_t rank = 0;
    const int dims_field = kind == Kind::kTensor         ? 1
                           : kind == Kind::kSparseTensor ? 3
                           : kind == Kind::kShape        ? 1
                                                         : 0;
    // Fields copied verbatim are copied in one piece when something else must be emitted (or at
    // the end): [copy_from, here) is pending.
    uint64_t copy_from = Pos();
    while (true) {
      EnsureWindow();
      const uint64_t field_start = Pos();
      if (field_start >= end) {
        if (field_start > end) return Malformed(end, "a field runs past its message's end");
        if (emit_) Append(copy_from, end);
        return {};
      }
      const uint32_t tag = stream_->ReadTagNoLastTag();
      const uint64_t tag_end = Pos();
      if (tag == 0 || tag_end > end) return Malformed(field_start, "bad tag");
      // Protobuf's parser reads a tag in at most 5 bytes (bits beyond 32 are dropped, as here);
      // the walker drops some tags (main-graph nodes, raw_data), so it must refuse what protobuf
      // would.
      if (tag_end - field_start > 5) return Malformed(field_start, "overlong tag");
      const int number = WireFormatLite::GetTagFieldNumber(tag);
      const auto wire = WireFormatLite::GetTagWireType(tag);
      if (number == 0) return Malformed(field_start, "field number 0");
      if (wire == WireFormatLite::WIRETYPE_END_GROUP) {
        return Malformed(field_start, "unexpected end-group tag");
      }
      if (kind == Kind::kTensor && number == kRawRefField) {
        return Status(StatusCode::kInvalidModel,
                      fmt::format("a TensorProto uses field number {}, which idem reserves "
                                  "(byte {})",
                                  kRawRefField, field_start));
      }
      if (wire != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
        IDEM_RETURN_IF_ERROR(Charge({kScalarFieldCost / 2, kScalarFieldCost / 2}));
        if (number == dims_field && kind != Kind::kShape &&
            wire == WireFormatLite::WIRETYPE_VARINT) {
          IDEM_RETURN_IF_ERROR(CountRank(&rank, 1));
        }
        if (!WireFormatLite::SkipField(&*stream_, tag) || Pos() > end) {
          return Malformed(field_start, "truncated or malformed field");
        }
        continue;
      }
      uint64_t length = 0;
      if (!stream_->ReadVarint64(&length) || Pos() > end) {
        return Malformed(field_start, "bad length");
      }
      const uint64_t content = Pos();
      // Likewise a length (which the walker re-encodes): protobuf reads at most 5 bytes.
      if (content - tag_end > 5 && length <= static_cast<uint64_t>(INT32_MAX)) {
        return Malformed(field_start, "overlong length");
      }
      if (length > end - content) return Malformed(field_start, "length runs past the end");
      const uint64_t content_end = content + length;
      const FieldRole role = RoleOf(kind, number);
      if (number == dims_field) {
        IDEM_RETURN_IF_ERROR(
            CountRank(&rank, kind == Kind::kShape ? 1 : PackedCount(content, content_end)));
      }
      switch (role.role) {
        case Role::kMessage: {
          IDEM_RETURN_IF_ERROR(CountEntry(role.child, kind, number, graph_depth + 1));
          if (depth + 1 > max_depth_) {
            return Status(
                StatusCode::kInvalidModel,
                fmt::format("messages nested deeper than {} (byte {})", max_depth_, field_start));
          }
          const int child_graph_depth = role.child == Kind::kGraph ? graph_depth + 1 : graph_depth;
          const bool child_is_main = kind == Kind::kModel && number == 7;
          if (emit_ && main_graph && role.child == Kind::kNode) {
            // A node of the main graph: its compact bytes go to node_bytes, to be parsed and
            // converted one at a time (never all nodes as protobuf objects at once).
            if (emit_) Append(copy_from, field_start);
            copy_from = content_end;
            std::string* saved = sink_;
            sink_ = &node_bytes;
            const uint64_t at = node_bytes.size();
            IDEM_RETURN_IF_ERROR(Charge({0, kStreamedNodeCost}));
            in_main_node_ = true;
            node_proto_ = 0;
            IDEM_RETURN_IF_ERROR(
                WalkMessage(role.child, content_end, depth + 1, child_graph_depth, false));
            in_main_node_ = false;
            max_node_proto_ = std::max(max_node_proto_, node_proto_);
            node_proto_ = 0;
            const uint64_t emitted = node_bytes.size() - at;
            if (emitted > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
              return Status(StatusCode::kResourceExhausted,
                            fmt::format("node #{} takes {} bytes without its raw_data payloads, "
                                        "over protobuf's 2 GiB limit",
                                        nodes.size(), emitted));
            }
            // Unchanged by the compaction: read in place, not kept twice.
            if (emitted == length && std::memcmp(node_bytes.data() + at, base_ + content,
                                                 static_cast<size_t>(length)) == 0) {
              node_bytes.resize(static_cast<size_t>(at));
              nodes.push_back({content, static_cast<uint32_t>(length), /*in_input=*/true});
            } else {
              nodes.push_back({at, static_cast<uint32_t>(emitted), /*in_input=*/false});
            }
            sink_ = saved;
            break;
          }
          size_t length_at = 0;
          if (emit_) {
            Append(copy_from, tag_end);  // the tag as read; the length is re-encoded
            length_at = sink_->size();
          }
          IDEM_RETURN_IF_ERROR(
              WalkMessage(role.child, content_end, depth + 1, child_graph_depth, child_is_main));
          if (emit_) FinishLength(length_at);
          copy_from = content_end;
          break;
        }
        case Role::kRawData: {
          counts.raw_bytes = SaturatingAdd(counts.raw_bytes, length);
          IDEM_RETURN_IF_ERROR(
              Charge({0, SaturatingMul(length, emit_ ? kModelRawByteCost : kValueRawByteCost)}));
          if (emit_) {
            Append(copy_from, field_start);
            copy_from = content_end;
            uint8_t buffer[16];
            uint8_t* p = CodedOutputStream::WriteVarint32ToArray(
                WireFormatLite::MakeTag(kRawRefField, WireFormatLite::WIRETYPE_VARINT), buffer);
            p = CodedOutputStream::WriteVarint64ToArray(refs.size(), p);
            sink_->append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(p - buffer));
            refs.push_back({content, length});
          }
          SkipTo(content_end);
          break;
        }
        case Role::kPackedVarint:
          IDEM_RETURN_IF_ERROR(
              Charge({kPackedArrayCost / 2 +
                          SaturatingMul(PackedCount(content, content_end), kPackedElementCost / 2),
                      kPackedArrayCost / 2 + SaturatingMul(PackedCount(content, content_end),
                                                           kPackedElementCost / 2)}));
          SkipTo(content_end);
          break;
        case Role::kOther: {
          // Characters that do not fit in place: a chunk of the length plus its header, in
          // protobuf's string and in idem's copy.
          const uint64_t chars = length > kShortString ? SaturatingAdd(length, 24) : 0;
          const uint64_t idem = RepeatedString(kind, number) ? kStringField.idem : 0;
          IDEM_RETURN_IF_ERROR(
              Charge({SaturatingAdd(kStringField.proto, chars), SaturatingAdd(idem, chars)}));
        }
          SkipTo(content_end);
          break;
      }
    }
  }

  void Append(uint64_t from, uint64_t to) {
    if (to > from)
      sink_->append(reinterpret_cast<const char*>(base_ + from), static_cast<size_t>(to - from));
  }

  // The bytes after `at` are a message's content; insert its length varint at `at`.
  void FinishLength(size_t at) {
    const uint64_t n = sink_->size() - at;
    uint8_t buffer[10];
    uint8_t* p = CodedOutputStream::WriteVarint64ToArray(n, buffer);
    sink_->insert(at, reinterpret_cast<const char*>(buffer), static_cast<size_t>(p - buffer));
  }

  std::string* sink_ = &out;  // where emitted bytes go

  const uint8_t* base_;
  uint64_t size_;
  const Limits& limits_;
  uint64_t budget_;
  bool emit_;
  int max_depth_;
  WireUse use_;
  uint64_t persistent_ = 0;      // costs that stay for the whole load
  uint64_t node_proto_ = 0;      // protobuf objects of the main-graph node being walked
  uint64_t max_node_proto_ = 0;  // the largest main-graph node's protobuf objects
  bool in_main_node_ = false;
  uint64_t sequence_items_ = 0;
  std::optional<CodedInputStream> stream_;
  uint64_t window_begin_ = 0;
  uint64_t window_end_ = 0;
};

// Whether a message of this kind can hold a TensorProto (and so a raw_data reference) at any
// depth: the expander copies every other message verbatim.
bool MayHoldTensors(Kind kind) {
  switch (kind) {
    case Kind::kModel:
    case Kind::kGraph:
    case Kind::kNode:
    case Kind::kAttribute:
    case Kind::kTensor:
    case Kind::kSparseTensor:
    case Kind::kTrainingInfo:
    case Kind::kFunction:
    case Kind::kSequence:
    case Kind::kMap:
    case Kind::kOptional:
      return true;
    default:
      return false;
  }
}

// ExpandRawRefs in two passes over the same messages in the same order: Measure records every
// descended message's expanded size (pre-order), Emit writes, taking each length from that list.
// Recursion depth is bounded by the nesting protobuf accepted when it parsed the model.
class Expander {
 public:
  Expander(std::span<const std::byte> compact, std::span<const RawRef> refs,
           std::span<const std::byte> input, const ByteSink* sink)
      : compact_(reinterpret_cast<const uint8_t*>(compact.data())),
        compact_size_(compact.size()),
        refs_(refs),
        input_(input),
        sink_(sink) {}

  Status Run() {
    if (compact_size_ > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
      return Status(StatusCode::kInternal, "compact model over 2 GiB");
    }
    measuring_ = true;
    IDEM_ASSIGN_OR_RETURN(uint64_t total, Walk(Kind::kModel, 0, compact_size_, 0));
    (void)total;
    measuring_ = false;
    next_size_ = 0;
    IDEM_RETURN_IF_ERROR(Walk(Kind::kModel, 0, compact_size_, 0).status());
    return Flush();
  }

 private:
  Status Bad(uint64_t at) const {
    return Status(
        StatusCode::kInternal,
        fmt::format("expanding raw_data references: malformed compact model at byte {}", at));
  }

  // Walks the message at [begin, end) of compact_; returns its expanded size.
  Result<uint64_t> Walk(Kind kind, uint64_t begin, uint64_t end, int depth) {
    if (depth > kExpandMaxDepth) return Bad(begin);
    const size_t my_size = next_size_++;
    if (measuring_) sizes_.push_back(0);
    CodedInputStream stream(compact_ + begin, static_cast<int>(end - begin));
    uint64_t total = 0;
    uint64_t copy_from = begin;  // verbatim bytes pending: [copy_from, here)
    while (true) {
      const uint64_t field_start = begin + static_cast<uint64_t>(stream.CurrentPosition());
      if (field_start >= end) break;
      const uint32_t tag = stream.ReadTagNoLastTag();
      if (tag == 0) return Bad(field_start);
      const uint64_t tag_end = begin + static_cast<uint64_t>(stream.CurrentPosition());
      const int number = WireFormatLite::GetTagFieldNumber(tag);
      const auto wire = WireFormatLite::GetTagWireType(tag);
      if (kind == Kind::kTensor && number == kRawRefField &&
          wire == WireFormatLite::WIRETYPE_VARINT) {
        uint64_t index = 0;
        if (!stream.ReadVarint64(&index) || index >= refs_.size()) return Bad(field_start);
        const RawRef& ref = refs_[index];
        if (ref.offset > input_.size() || ref.length > input_.size() - ref.offset) {
          return Bad(field_start);
        }
        IDEM_RETURN_IF_ERROR(Verbatim(copy_from, field_start, total));
        copy_from = begin + static_cast<uint64_t>(stream.CurrentPosition());
        uint8_t header[16];
        uint8_t* p = CodedOutputStream::WriteVarint32ToArray(
            WireFormatLite::MakeTag(9, WireFormatLite::WIRETYPE_LENGTH_DELIMITED), header);
        p = CodedOutputStream::WriteVarint64ToArray(ref.length, p);
        IDEM_RETURN_IF_ERROR(Put(header, static_cast<size_t>(p - header), total));
        IDEM_RETURN_IF_ERROR(
            Put(reinterpret_cast<const uint8_t*>(input_.data()) + ref.offset, ref.length, total));
        continue;
      }
      if (wire != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
        if (!WireFormatLite::SkipField(&stream, tag)) return Bad(field_start);
        continue;
      }
      uint32_t length = 0;
      if (!stream.ReadVarint32(&length)) return Bad(field_start);
      const uint64_t content = begin + static_cast<uint64_t>(stream.CurrentPosition());
      if (length > end - content) return Bad(field_start);
      const uint64_t content_end = content + length;
      const FieldRole role = RoleOf(kind, number);
      if (role.role == Role::kMessage && MayHoldTensors(role.child)) {
        IDEM_RETURN_IF_ERROR(Verbatim(copy_from, tag_end, total));
        const size_t child = next_size_;
        if (!measuring_) {
          uint8_t header[10];
          uint8_t* p = CodedOutputStream::WriteVarint64ToArray(sizes_[child], header);
          IDEM_RETURN_IF_ERROR(Put(header, static_cast<size_t>(p - header), total));
        }
        IDEM_ASSIGN_OR_RETURN(uint64_t child_size,
                              Walk(role.child, content, content_end, depth + 1));
        // The child's bytes (and, when emitting, its length, counted by Put) are the parent's.
        total += child_size;
        if (measuring_) total += CodedOutputStream::VarintSize64(child_size);
        copy_from = content_end;
      }
      if (!stream.Skip(static_cast<int>(length))) return Bad(field_start);
    }
    IDEM_RETURN_IF_ERROR(Verbatim(copy_from, end, total));
    if (measuring_) sizes_[my_size] = total;
    return total;
  }

  Status Verbatim(uint64_t from, uint64_t to, uint64_t& total) {
    return to > from ? Put(compact_ + from, to - from, total) : Status();
  }

  // Counts `n` bytes; when emitting, hands them to the sink (small pieces are batched).
  Status Put(const uint8_t* data, uint64_t n, uint64_t& total) {
    total += n;
    if (measuring_) return {};
    if (n >= kDirect) {
      IDEM_RETURN_IF_ERROR(Flush());
      return (*sink_)(std::span(reinterpret_cast<const std::byte*>(data), static_cast<size_t>(n)));
    }
    if (pending_.size() + n > kBatch) IDEM_RETURN_IF_ERROR(Flush());
    pending_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    return {};
  }

  Status Flush() {
    if (pending_.empty()) return {};
    Status status = (*sink_)(std::as_bytes(std::span(pending_.data(), pending_.size())));
    pending_.clear();
    return status;
  }

  // Beyond any nesting protobuf parses with the limits idem sets (a backstop, not a limit).
  static constexpr int kExpandMaxDepth = 4096;
  static constexpr uint64_t kDirect = 64 << 10;
  static constexpr uint64_t kBatch = 1 << 20;

  const uint8_t* compact_;
  uint64_t compact_size_;
  std::span<const RawRef> refs_;
  std::span<const std::byte> input_;
  const ByteSink* sink_;
  bool measuring_ = true;
  std::vector<uint64_t> sizes_;
  size_t next_size_ = 0;
  std::string pending_;
};

}  // namespace

Status ExpandRawRefs(std::span<const std::byte> compact, std::span<const RawRef> refs,
                     std::span<const std::byte> input, const ByteSink& sink) {
  return Expander(compact, refs, input, &sink).Run();
}

uint64_t LoadMemoryBudget(uint64_t input_bytes, const Limits& limits) {
  return std::max(limits.max_load_memory_floor,
                  SaturatingMul(input_bytes, limits.max_load_memory_factor));
}

Result<CompactModel> CompactModelBytes(std::span<const std::byte> input, const Limits& limits,
                                       int max_depth, WireUse use) {
  Walker walker(input, limits, /*emit=*/true, max_depth, use);
  IDEM_RETURN_IF_ERROR(walker.WalkRoot(Kind::kModel));
  if (walker.out.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("the model without its raw_data payloads still takes {} bytes, "
                              "over protobuf's 2 GiB limit (move typed-field data to raw_data "
                              "or external data)",
                              walker.out.size()));
  }
  CompactModel model;
  model.bytes = std::move(walker.out);
  model.refs = std::move(walker.refs);
  model.node_bytes = std::move(walker.node_bytes);
  model.nodes = std::move(walker.nodes);
  model.counts = walker.counts;
  model.input = input;
  return model;
}

Result<WireCounts> CheckValueBytes(std::span<const std::byte> input, ValueMessage root,
                                   const Limits& limits) {
  Walker walker(input, limits, /*emit=*/false);
  const Kind kind = root == ValueMessage::kTensor     ? Kind::kTensor
                    : root == ValueMessage::kSequence ? Kind::kSequence
                                                      : Kind::kOptional;
  IDEM_RETURN_IF_ERROR(walker.WalkRoot(kind));
  return walker.counts;
}

}  // namespace idem
