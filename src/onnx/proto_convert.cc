#include "src/onnx/proto_convert.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>

#include "src/core/buffer_pages.h"
#include "src/core/text.h"
#include "src/onnx/external_data.h"

namespace idem {
namespace {

Status Bad(std::string message) { return Status(StatusCode::kInvalidModel, std::move(message)); }

// Which repeated field a type's elements live in when raw_data is not used.
enum class Field { kFloat, kDouble, kInt32, kInt64, kUint64, kString };

Field FieldFor(ElementType t) {
  switch (t) {
    case ElementType::kFloat:
    case ElementType::kComplex64:
      return Field::kFloat;
    case ElementType::kDouble:
    case ElementType::kComplex128:
      return Field::kDouble;
    case ElementType::kInt64:
      return Field::kInt64;
    case ElementType::kUint32:
    case ElementType::kUint64:
      return Field::kUint64;
    case ElementType::kString:
      return Field::kString;
    default:
      return Field::kInt32;  // int8..int32, uint8/16, bool, 16-bit floats, float8, 4/2-bit
  }
}

std::string_view FieldName(Field f) {
  switch (f) {
    case Field::kFloat:
      return "float_data";
    case Field::kDouble:
      return "double_data";
    case Field::kInt32:
      return "int32_data";
    case Field::kInt64:
      return "int64_data";
    case Field::kUint64:
      return "uint64_data";
    case Field::kString:
      return "string_data";
  }
  return "?";
}

// The typed fields that are set, for spotting data in the wrong field.
std::vector<Field> FieldsPresent(const onnx::TensorProto& p) {
  std::vector<Field> present;
  if (p.float_data_size()) present.push_back(Field::kFloat);
  if (p.double_data_size()) present.push_back(Field::kDouble);
  if (p.int32_data_size()) present.push_back(Field::kInt32);
  if (p.int64_data_size()) present.push_back(Field::kInt64);
  if (p.uint64_data_size()) present.push_back(Field::kUint64);
  if (p.string_data_size()) present.push_back(Field::kString);
  return present;
}

template <typename Out, typename Repeated>
void Narrow(const Repeated& in, std::byte* out) {
  for (int i = 0; i < in.size(); ++i) {
    const Out v = static_cast<Out>(in.Get(i));
    std::memcpy(out + static_cast<size_t>(i) * sizeof(Out), &v, sizeof(Out));
  }
}

// The values an entry of int32_data / uint64_data may take for `type`: a value outside would be
// truncated by the narrowing copy, silently changing the data, so it is refused instead.
struct EntryRange {
  int64_t min;
  uint64_t max;
};

std::optional<EntryRange> RangeFor(ElementType t) {
  switch (t) {
    case ElementType::kInt8:
      return EntryRange{-128, 127};
    case ElementType::kInt16:
      return EntryRange{-32768, 32767};
    case ElementType::kUint16:
    case ElementType::kFloat16:   // bit patterns
    case ElementType::kBfloat16:  // bit patterns
      return EntryRange{0, 0xffff};
    case ElementType::kBool:
      return EntryRange{0, 1};
    case ElementType::kUint32:
      return EntryRange{0, 0xffffffffu};
    case ElementType::kInt32:
    case ElementType::kInt64:
    case ElementType::kUint64:
    case ElementType::kFloat:
    case ElementType::kDouble:
    case ElementType::kComplex64:
    case ElementType::kComplex128:
    case ElementType::kString:
    case ElementType::kUndefined:
      return std::nullopt;  // the field's own type is the element type
    default:
      // uint8, float8 variants (bit patterns) and the packed bytes of 4-/2-bit types.
      return EntryRange{0, 0xff};
  }
}

template <typename Repeated>
Status CheckEntries(const Repeated& in, ElementType type, std::string_view field,
                    const std::string& label) {
  const auto range = RangeFor(type);
  if (!range) return {};
  const bool packed = ElementBits(type) < 8;
  for (int i = 0; i < in.size(); ++i) {
    const auto v = in.Get(i);
    bool inside;
    if constexpr (std::is_signed_v<decltype(v)>) {
      inside = v >= range->min && (v < 0 || static_cast<uint64_t>(v) <= range->max);
    } else {
      inside = static_cast<uint64_t>(v) <= range->max;
    }
    if (!inside) {
      return Bad(fmt::format("{}: {}[{}] = {} is out of range for {} ({} to {}{})", label, field, i,
                             v, ElementTypeName(type), range->min, range->max,
                             packed ? ", one packed byte per entry" : ""));
    }
  }
  return {};
}

Result<Value> TensorFromTypedField(onnx::TensorProto& p, ElementType type,
                                   std::vector<int64_t> dims, uint64_t count, uint64_t bytes,
                                   const std::string& label) {
  const Field field = FieldFor(type);
  for (Field f : FieldsPresent(p)) {
    if (f != field) {
      return Bad(fmt::format("{}: tensor({}) keeps its elements in {}, not {}", label,
                             ElementTypeName(type), FieldName(field), FieldName(f)));
    }
  }
  if (type == ElementType::kString) {
    if (static_cast<uint64_t>(p.string_data_size()) != count) {
      return Bad(fmt::format("{}: dims promise {} strings, string_data holds {}", label, count,
                             p.string_data_size()));
    }
    std::vector<std::string> strings;
    strings.reserve(count);
    for (auto& s : *p.mutable_string_data()) strings.push_back(std::move(s));
    return Value::MakeStringTensor(std::move(dims), std::move(strings));
  }
  const int bits = ElementBits(type);
  const bool complex = type == ElementType::kComplex64 || type == ElementType::kComplex128;
  // Entries expected in the field: one per element, two for complex, one per packed byte for
  // sub-byte types.
  const uint64_t entries = bits < 8 ? bytes : (complex ? count * 2 : count);
  uint64_t have = 0;
  switch (field) {
    case Field::kFloat:
      have = static_cast<uint64_t>(p.float_data_size());
      break;
    case Field::kDouble:
      have = static_cast<uint64_t>(p.double_data_size());
      break;
    case Field::kInt32:
      have = static_cast<uint64_t>(p.int32_data_size());
      break;
    case Field::kInt64:
      have = static_cast<uint64_t>(p.int64_data_size());
      break;
    case Field::kUint64:
      have = static_cast<uint64_t>(p.uint64_data_size());
      break;
    case Field::kString:
      break;
  }
  if (have != entries) {
    if (have == 0 && entries != 0) {
      return Bad(fmt::format("{}: dims promise {} elements of {} but the tensor holds no data",
                             label, count, ElementTypeName(type)));
    }
    return Bad(fmt::format("{}: dims promise {} entries in {}, found {}", label, entries,
                           FieldName(field), have));
  }
  if (field == Field::kInt32) {
    IDEM_RETURN_IF_ERROR(CheckEntries(p.int32_data(), type, FieldName(field), label));
  } else if (field == Field::kUint64) {
    IDEM_RETURN_IF_ERROR(CheckEntries(p.uint64_data(), type, FieldName(field), label));
  }
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(bytes, &out));
  switch (field) {
    case Field::kFloat:
      Narrow<float>(p.float_data(), out);
      break;
    case Field::kDouble:
      Narrow<double>(p.double_data(), out);
      break;
    case Field::kInt64:
      Narrow<int64_t>(p.int64_data(), out);
      break;
    case Field::kUint64:
      if (type == ElementType::kUint32) {
        Narrow<uint32_t>(p.uint64_data(), out);
      } else {
        Narrow<uint64_t>(p.uint64_data(), out);
      }
      break;
    case Field::kInt32:
      if (bits == 32) {
        Narrow<int32_t>(p.int32_data(), out);
      } else if (bits == 16) {
        Narrow<uint16_t>(p.int32_data(), out);
      } else {  // 8-bit values, or packed bytes of 4-/2-bit values
        Narrow<uint8_t>(p.int32_data(), out);
      }
      break;
    case Field::kString:
      break;
  }
  return Value::MakeTensor(type, std::move(dims), std::move(buffer));
}

Result<Value> TensorFromExternal(const onnx::TensorProto& p, ElementType type,
                                 std::vector<int64_t> dims, uint64_t bytes,
                                 const LoadContext& context, const std::string& label) {
  if (type == ElementType::kString) {
    return Bad(fmt::format("{}: string tensors cannot use external data", label));
  }
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  auto parse_number = [&](const std::string& key, const std::string& text) -> Result<uint64_t> {
    if (text.empty() || text.size() > 20 ||
        text.find_first_not_of("0123456789") != std::string::npos) {
      return Bad(fmt::format("{}: external data {} {} is not a non-negative integer", label, key,
                             QuoteName(text)));
    }
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE) return Bad(fmt::format("{}: external data {} overflows", label, key));
    return static_cast<uint64_t>(v);
  };
  for (const auto& entry : p.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset") {
      IDEM_ASSIGN_OR_RETURN(offset, parse_number("offset", entry.value()));
    } else if (entry.key() == "length") {
      IDEM_ASSIGN_OR_RETURN(length, parse_number("length", entry.value()));
    }
  }
  if (location.empty()) return Bad(fmt::format("{}: external data without a location", label));
  if (length && *length != bytes) {
    return Bad(
        fmt::format("{}: external data {} length {} does not match the {} bytes the "
                    "dims need",
                    label, QuoteName(location), *length, bytes));
  }
  if (bytes > context.limits.max_tensor_bytes) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("{}: {} bytes exceed max_tensor_bytes {}", label, bytes,
                              context.limits.max_tensor_bytes));
  }
  auto mapped = MapExternalData(context.base_dir, location, offset, bytes, context.external);
  if (!mapped.ok()) return std::move(mapped).take_status().WithContext(label);
  return Value::MakeTensor(type, std::move(dims), std::move(mapped).value());
}

// A raw_data reference and its index in LoadContext::raw_refs.
struct FoundRawRef {
  RawRef ref;
  size_t index = 0;
};

// The raw_data reference the wire walker left in place of the payload, if any (the last one
// wins, as protobuf keeps the last raw_data). A reference nobody made is refused.
Result<std::optional<FoundRawRef>> FindRawRef(const onnx::TensorProto& p,
                                              const LoadContext& context,
                                              const std::string& label) {
  std::optional<FoundRawRef> found;
  const auto& unknown = p.unknown_fields();
  for (int i = 0; i < unknown.field_count(); ++i) {
    const auto& field = unknown.field(i);
    if (field.number() != kRawRefField) continue;
    if (field.type() != google::protobuf::UnknownField::TYPE_VARINT ||
        context.model_bytes == nullptr || field.varint() >= context.raw_refs.size()) {
      return Bad(fmt::format("{}: uses field number {}, which idem reserves", label, kRawRefField));
    }
    const auto index = static_cast<size_t>(field.varint());
    found = FoundRawRef{context.raw_refs[index], index};
  }
  return found;
}

// Copies of misaligned raw_data this large get pages of their own (CopyToOwnPages), which go
// back to the system when the session drops them. Smaller ones come from the block cache: a
// fresh mapping costs its page faults on every Create (a 768 KiB openWakeWord head's weights
// took its creation from 0.31 to 0.59 ms), while at most a few MiB of them can stay cached.
constexpr uint64_t kOwnPagesBytes = 1 << 20;

// Drops the pages wholly inside `bytes`, part of a read-only private file mapping, from the
// process's memory: nothing reads them again (their tensor is a copy now), and if something did,
// the kernel would fault them in again from the file. Pages shared with neighbouring bytes stay.
// Failure only leaves the pages resident.
void DropCopiedFilePages(std::span<const std::byte> bytes) {
  static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(bytes.data());
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + bytes.size()) / page * page;
  if (last > first) {
    madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);  // NOLINT
  }
}

// How many bytes of a raw_data field's own framing (its tag, 1 byte for field 9, and the varint
// of its length) at least precede a payload of `length` bytes.
uint64_t RawDataFramingBytes(uint64_t length) {
  return 1 + google::protobuf::io::CodedOutputStream::VarintSize64(length);
}

// A Buffer for raw_data left in the model's bytes: shares their owner (mapping or caller's
// buffer) unless the address is not aligned for the element type, in which case the bytes are
// moved into alignment (memory the loader owns, LoadContext::writable_model_bytes) or copied
// (aligned heap memory) and counted, so kernels and NumPy views may assume alignment.
Result<Buffer> InPlaceBuffer(const FoundRawRef& found, ElementType type,
                             const LoadContext& context) {
  const RawRef& ref = found.ref;
  const Buffer& model = *context.model_bytes;
  if (ref.offset > model.size() || ref.length > model.size() - ref.offset) {
    return Status(StatusCode::kInternal, "a raw_data reference lies outside the model");
  }
  Buffer slice = model.Slice(static_cast<size_t>(ref.offset), static_cast<size_t>(ref.length));
  const int bits = ElementBits(type);
  const bool complex = type == ElementType::kComplex64 || type == ElementType::kComplex128;
  const uintptr_t alignment = bits <= 8 ? 1 : static_cast<uintptr_t>(bits / 8 / (complex ? 2 : 1));
  if (context.writable_model_bytes != nullptr && context.raw_ref_shifts != nullptr &&
      found.index < context.raw_ref_shifts->size()) {
    int8_t& shift = (*context.raw_ref_shifts)[found.index];
    if (shift < 0) {
      const uint64_t misalignment = reinterpret_cast<uintptr_t>(slice.data()) % alignment;
      if (misalignment == 0) {
        shift = 0;
      } else if (misalignment <= RawDataFramingBytes(ref.length) && misalignment <= ref.offset) {
        // Moved back over its own tag and length: those bytes are dead after the wire walk (the
        // parsed model is the walker's compact copy, and no node read in place holds raw_data).
        std::memmove(context.writable_model_bytes + (ref.offset - misalignment),
                     context.writable_model_bytes + ref.offset, static_cast<size_t>(ref.length));
        shift = static_cast<int8_t>(misalignment);
        if (context.raw_stats != nullptr) context.raw_stats->shifted += ref.length;
      }
    }
    if (shift >= 0) {
      // Where the payload lies now; the original position may hold stale bytes.
      slice = model.Slice(static_cast<size_t>(ref.offset) - static_cast<size_t>(shift),
                          static_cast<size_t>(ref.length));
    }
  }
  if (ref.length == 0 || reinterpret_cast<uintptr_t>(slice.data()) % alignment == 0) {
    if (context.raw_stats != nullptr) context.raw_stats->in_place += ref.length;
    return slice;
  }
  // Large copies in pages of their own, which go back to the system if the session lets go of
  // them (weights folded or packed into another form at Create); small ones, or when the system
  // refuses another mapping, from the heap.
  Result<Buffer> copy =
      ref.length >= kOwnPagesBytes ? CopyToOwnPages(slice.bytes()) : Buffer::CopyOf(slice.bytes());
  if (!copy.ok()) copy = Buffer::CopyOf(slice.bytes());
  if (!copy.ok()) return std::move(copy).take_status();
  if (context.raw_stats != nullptr) context.raw_stats->copied += ref.length;
  if (context.model_is_file_mapping) DropCopiedFilePages(slice.bytes());
  return copy;
}

}  // namespace

Result<Value> TensorFromProto(onnx::TensorProto& p, const LoadContext& context,
                              std::string_view role) {
  const std::string label =
      p.name().empty() ? std::string(role) : fmt::format("{} {}", role, QuoteName(p.name()));
  auto type_or = ElementTypeFromCode(p.data_type());
  if (!type_or) {
    return Status(p.data_type() == 0 ? StatusCode::kInvalidModel : StatusCode::kUnsupported,
                  fmt::format("{}: element type code {} is {}", label, p.data_type(),
                              p.data_type() == 0 ? "undefined" : "unknown (idem knows 1 to 26)"));
  }
  const ElementType type = *type_or;
  if (p.has_segment()) return Bad(fmt::format("{}: segmented tensors are not supported", label));
  if (static_cast<uint64_t>(p.dims_size()) > context.limits.max_rank) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("{}: {} dims exceed max_rank {}", label, p.dims_size(),
                              context.limits.max_rank));
  }
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  // The product of the non-zero dims must fit in int64, whatever their order: a zero dim makes
  // the element count 0 but does not excuse [2^62, 2^62, 0] (same rule as Value::MakeTensor).
  uint64_t nonzero_product = 1;
  bool has_zero = false;
  for (int64_t d : dims) {
    if (d < 0) return Bad(fmt::format("{}: negative dim {}", label, d));
    if (d == 0) {
      has_zero = true;
      continue;
    }
    if (nonzero_product >
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(d)) {
      return Bad(
          fmt::format("{}: the product of dims [{}] overflows int64", label, fmt::join(dims, ",")));
    }
    nonzero_product *= static_cast<uint64_t>(d);
  }
  const uint64_t count = has_zero ? 0 : nonzero_product;
  if (count > context.limits.max_elements) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("{}: {} elements exceed max_elements {}", label, count,
                              context.limits.max_elements));
  }
  uint64_t bytes = 0;
  if (type != ElementType::kString) {
    auto packed = PackedByteSize(type, count);
    if (!packed) return Bad(fmt::format("{}: byte size overflows", label));
    bytes = *packed;
  }

  IDEM_ASSIGN_OR_RETURN(std::optional<FoundRawRef> ref, FindRawRef(p, context, label));
  const bool has_raw = ref.has_value() || p.has_raw_data();
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    if (has_raw || !FieldsPresent(p).empty()) {
      return Bad(fmt::format("{}: external data and inline data both present", label));
    }
    return TensorFromExternal(p, type, std::move(dims), bytes, context, label);
  }
  if (has_raw) {
    if (type == ElementType::kString) {
      return Bad(fmt::format("{}: string tensors cannot use raw_data", label));
    }
    if (!FieldsPresent(p).empty()) {
      return Bad(fmt::format("{}: both raw_data and {} are set", label,
                             FieldName(FieldsPresent(p).front())));
    }
    const uint64_t raw_size = ref ? ref->ref.length : p.raw_data().size();
    if (raw_size != bytes) {
      return Bad(fmt::format("{}: raw_data holds {} bytes but dims [{}] of {} need {}", label,
                             raw_size, fmt::join(dims, ","), ElementTypeName(type), bytes));
    }
    // A bool is one byte, 0 or 1 (the range int32_data is held to); another byte would be a bool
    // that prints as true but is written back as that byte: refused, not misread, whether the
    // bytes stay in the model (in place) or were parsed by protobuf.
    auto check_bools = [&](std::string_view raw) -> Status {
      if (type != ElementType::kBool) return {};
      if (const size_t at = raw.find_first_not_of(std::string_view("\0\1", 2));
          at != std::string_view::npos) {
        return Bad(fmt::format("{}: raw_data[{}] = {} is out of range for bool (0 to 1)", label, at,
                               static_cast<unsigned char>(raw[at])));
      }
      return {};
    };
    if (ref) {
      IDEM_ASSIGN_OR_RETURN(Buffer buffer, InPlaceBuffer(*ref, type, context));
      IDEM_RETURN_IF_ERROR(check_bools(
          std::string_view(reinterpret_cast<const char*>(buffer.data()), buffer.size())));
      return Value::MakeTensor(type, std::move(dims), std::move(buffer));
    }
    IDEM_RETURN_IF_ERROR(check_bools(p.raw_data()));
    // Steal the bytes: the string's heap block becomes the buffer's owner, no copy.
    auto owner = std::make_shared<std::string>(std::move(*p.mutable_raw_data()));
    p.clear_raw_data();
    const void* data = owner->data();
    const size_t size = owner->size();
    return Value::MakeTensor(type, std::move(dims), Buffer::Shared(std::move(owner), data, size));
  }
  return TensorFromTypedField(p, type, std::move(dims), count, bytes, label);
}

Result<Type> TypeFromProto(const onnx::TypeProto& proto, const Limits& limits) {
  // Iterative descent bounded by the depth limit, then build inside out.
  std::vector<onnx::TypeProto::ValueCase> wrappers;
  const onnx::TypeProto* current = &proto;
  while (true) {
    if (static_cast<int>(wrappers.size()) + 1 > limits.max_type_depth) {
      return Status(
          StatusCode::kResourceExhausted,
          fmt::format("type nesting deeper than max_type_depth {}", limits.max_type_depth));
    }
    switch (current->value_case()) {
      case onnx::TypeProto::kTensorType: {
        const auto& tt = current->tensor_type();
        ElementType et = ElementType::kUndefined;
        if (tt.elem_type() != 0) {
          auto known = ElementTypeFromCode(tt.elem_type());
          if (!known) {
            return Status(StatusCode::kUnsupported,
                          fmt::format("element type code {} is unknown (idem knows 1 to 26)",
                                      tt.elem_type()));
          }
          et = *known;
        }
        std::optional<std::vector<Dim>> shape;
        if (tt.has_shape()) {
          if (static_cast<uint64_t>(tt.shape().dim_size()) > limits.max_rank) {
            return Status(StatusCode::kResourceExhausted,
                          fmt::format("declared shape of {} dims exceeds max_rank {}",
                                      tt.shape().dim_size(), limits.max_rank));
          }
          shape.emplace();
          for (const auto& d : tt.shape().dim()) {
            Dim dim;
            if (d.has_dim_value()) {
              if (d.dim_value() < 0) {
                return Bad(fmt::format("declared dim {} is negative", d.dim_value()));
              }
              dim.value = d.dim_value();
            } else if (d.has_dim_param()) {
              dim.param = d.dim_param();
            }
            shape->push_back(std::move(dim));
          }
        }
        Type t = Type::Tensor(et, std::move(shape));
        for (auto it = wrappers.rbegin(); it != wrappers.rend(); ++it) {
          t = *it == onnx::TypeProto::kSequenceType ? Type::Sequence(std::move(t))
                                                    : Type::Optional(std::move(t));
        }
        return t;
      }
      case onnx::TypeProto::kSequenceType:
        wrappers.push_back(onnx::TypeProto::kSequenceType);
        current = &current->sequence_type().elem_type();
        break;
      case onnx::TypeProto::kOptionalType:
        wrappers.push_back(onnx::TypeProto::kOptionalType);
        current = &current->optional_type().elem_type();
        break;
      case onnx::TypeProto::kMapType:
        return Status(StatusCode::kUnsupported, "map types are not supported");
      case onnx::TypeProto::kSparseTensorType:
        return Status(StatusCode::kUnsupported, "sparse tensor types are not supported");
      default:
        return Bad("type is not set");
    }
  }
}

namespace {

Result<Value> SequenceFromProto(onnx::SequenceProto& p, const Type& declared,
                                const LoadContext& context) {
  if (p.sequence_values_size() || p.map_values_size() || p.optional_values_size() ||
      p.sparse_tensor_values_size()) {
    return Status(StatusCode::kUnsupported,
                  "only sequences of tensors are supported (found nested values)");
  }
  if (static_cast<uint64_t>(p.tensor_values_size()) > context.limits.max_sequence_length) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("sequence of {} tensors exceeds max_sequence_length {}",
                              p.tensor_values_size(), context.limits.max_sequence_length));
  }
  ElementType et =
      declared.is_sequence() ? declared.element().element_type() : ElementType::kUndefined;
  std::vector<Value> tensors;
  tensors.reserve(static_cast<size_t>(p.tensor_values_size()));
  for (int i = 0; i < p.tensor_values_size(); ++i) {
    auto t = TensorFromProto(*p.mutable_tensor_values(i), context);
    if (!t.ok()) return std::move(t).take_status().WithContext(fmt::format("sequence item {}", i));
    if (et == ElementType::kUndefined) et = t->tensor().element_type();
    tensors.push_back(std::move(t).value());
  }
  if (et == ElementType::kUndefined) {
    return Bad("empty sequence of unknown element type");
  }
  return Value::MakeSequence(et, std::move(tensors));
}

Result<Value> OptionalFromProto(onnx::OptionalProto& p, const Type& declared,
                                const LoadContext& context) {
  const Type element = declared.is_optional() ? declared.element() : Type();
  if (p.has_tensor_value()) {
    IDEM_ASSIGN_OR_RETURN(Value t, TensorFromProto(*p.mutable_tensor_value(), context));
    return Value::MakeOptional(std::move(t));
  }
  if (p.has_sequence_value()) {
    IDEM_ASSIGN_OR_RETURN(Value s,
                          SequenceFromProto(*p.mutable_sequence_value(), element, context));
    return Value::MakeOptional(std::move(s));
  }
  if (p.has_optional_value() || p.has_map_value() || p.has_sparse_tensor_value()) {
    return Status(StatusCode::kUnsupported,
                  "optionals holding maps, sparse tensors or optionals are not supported");
  }
  return Value::MakeEmptyOptional(element);
}

// The first unknown field in `root` or any message inside it, as "field 9 (length-delimited) in
// tensor_values[0]"; nullopt when there is none. Protobuf keeps a field whose number it does not
// know, or whose wire type does not match the declared field, as an unknown field, so this finds
// both: bytes of one message kind read as another always leave some behind unless the two
// encodings happen to coincide. Walks with an explicit stack (no recursion on file depth).
std::optional<std::string> FindUnknownField(const google::protobuf::Message& root) {
  using google::protobuf::FieldDescriptor;
  using google::protobuf::Message;
  using google::protobuf::UnknownField;
  struct Item {
    const Message* message;
    std::string path;
  };
  std::vector<Item> stack{{&root, ""}};
  while (!stack.empty()) {
    Item item = std::move(stack.back());
    stack.pop_back();
    const auto* reflection = item.message->GetReflection();
    const auto& unknown = reflection->GetUnknownFields(*item.message);
    if (unknown.field_count() > 0) {
      const UnknownField& f = unknown.field(0);
      std::string_view wire = "?";
      switch (f.type()) {
        case UnknownField::TYPE_VARINT:
          wire = "varint";
          break;
        case UnknownField::TYPE_FIXED32:
          wire = "fixed32";
          break;
        case UnknownField::TYPE_FIXED64:
          wire = "fixed64";
          break;
        case UnknownField::TYPE_LENGTH_DELIMITED:
          wire = "length-delimited";
          break;
        case UnknownField::TYPE_GROUP:
          wire = "group";
          break;
      }
      return fmt::format("field {} ({}){}", f.number(), wire,
                         item.path.empty() ? "" : " in " + item.path);
    }
    std::vector<const FieldDescriptor*> fields;
    reflection->ListFields(*item.message, &fields);
    for (const FieldDescriptor* field : fields) {
      if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
      const std::string prefix =
          item.path.empty() ? field->name() : item.path + "." + field->name();
      if (field->is_repeated()) {
        const int n = reflection->FieldSize(*item.message, field);
        for (int i = 0; i < n; ++i) {
          stack.push_back({&reflection->GetRepeatedMessage(*item.message, field, i),
                           fmt::format("{}[{}]", prefix, i)});
        }
      } else {
        stack.push_back({&reflection->GetMessage(*item.message, field), prefix});
      }
    }
  }
  return std::nullopt;
}

bool ParseBytes(google::protobuf::Message& message, std::span<const std::byte> bytes) {
  return bytes.size() <= static_cast<size_t>(std::numeric_limits<int>::max()) &&
         message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

// What `bytes` parse as cleanly (no unknown fields, and the fields that make the kind
// recognisable), other than `declared_kind`: for the message that names what a file looks like.
std::string LookAlike(std::span<const std::byte> bytes, ValueKind declared_kind) {
  std::vector<std::string_view> kinds;
  if (declared_kind != ValueKind::kTensor) {
    onnx::TensorProto p;
    if (ParseBytes(p, bytes) && !FindUnknownField(p) && p.data_type() != 0 && !p.has_segment()) {
      kinds.push_back("a TensorProto");
    }
  }
  if (declared_kind != ValueKind::kSequence) {
    onnx::SequenceProto p;
    if (ParseBytes(p, bytes) && !FindUnknownField(p) &&
        (p.has_elem_type() || p.tensor_values_size() > 0)) {
      kinds.push_back("a SequenceProto");
    }
  }
  if (declared_kind != ValueKind::kOptional) {
    onnx::OptionalProto p;
    if (ParseBytes(p, bytes) && !FindUnknownField(p) &&
        (p.has_elem_type() || p.has_tensor_value() || p.has_sequence_value())) {
      kinds.push_back("an OptionalProto");
    }
  }
  if (kinds.empty()) return "";
  return fmt::format("; the bytes look like {}", fmt::join(kinds, " or "));
}

// Parses `bytes` as `what` and refuses anything protobuf would otherwise accept silently:
// unknown fields and wire-type mismatches anywhere inside.
Status Parse(google::protobuf::Message& message, std::span<const std::byte> bytes,
             std::string_view what, const Type& declared) {
  if (!ParseBytes(message, bytes)) {
    return Bad(fmt::format("not a valid {} ({} bytes; the declared type is {}){}", what,
                           bytes.size(), declared.ToString(), LookAlike(bytes, declared.kind())));
  }
  if (auto unknown = FindUnknownField(message)) {
    return Bad(fmt::format("not a valid {} ({} bytes; the declared type is {}): unknown {}{}", what,
                           bytes.size(), declared.ToString(), *unknown,
                           LookAlike(bytes, declared.kind())));
  }
  return {};
}

}  // namespace

Result<Value> ValueFromProtoBytes(std::span<const std::byte> bytes, const Type& declared,
                                  const LoadContext& context) {
  // Counts and memory are checked on the wire first: protobuf would spend hundreds of bytes on
  // every 2-byte empty tensor or string before any limit could be checked.
  {
    const ValueMessage root = declared.kind() == ValueKind::kTensor     ? ValueMessage::kTensor
                              : declared.kind() == ValueKind::kSequence ? ValueMessage::kSequence
                                                                        : ValueMessage::kOptional;
    auto counted = CheckValueBytes(bytes, root, context.limits);
    if (!counted.ok() && counted.status().code() == StatusCode::kResourceExhausted) {
      return std::move(counted).take_status();
    }
  }
  switch (declared.kind()) {
    case ValueKind::kTensor: {
      onnx::TensorProto p;
      IDEM_RETURN_IF_ERROR(Parse(p, bytes, "TensorProto", declared));
      // SequenceProto and OptionalProto bytes can also parse as a TensorProto (their field
      // numbers overlap); say so rather than report the odd fields that result.
      if (p.has_segment() || p.data_type() == 0) {
        return Bad(
            fmt::format("the {} bytes do not hold a TensorProto (the declared type is "
                        "{}){}",
                        bytes.size(), declared.ToString(), LookAlike(bytes, ValueKind::kTensor)));
      }
      return TensorFromProto(p, context);
    }
    case ValueKind::kSequence: {
      onnx::SequenceProto p;
      IDEM_RETURN_IF_ERROR(Parse(p, bytes, "SequenceProto", declared));
      if (p.elem_type() != onnx::SequenceProto::TENSOR &&
          p.elem_type() != onnx::SequenceProto::UNDEFINED) {
        return Status(StatusCode::kUnsupported, "only sequences of tensors are supported");
      }
      return SequenceFromProto(p, declared, context);
    }
    case ValueKind::kOptional: {
      onnx::OptionalProto p;
      IDEM_RETURN_IF_ERROR(Parse(p, bytes, "OptionalProto", declared));
      return OptionalFromProto(p, declared, context);
    }
  }
  return Status(StatusCode::kInternal, "unknown kind");
}

void TensorToProto(const Tensor& tensor, onnx::TensorProto* proto) {
  proto->set_data_type(static_cast<int32_t>(tensor.element_type()));
  for (int64_t d : tensor.shape()) proto->add_dims(d);
  if (tensor.element_type() == ElementType::kString) {
    for (const std::string& s : tensor.strings()) proto->add_string_data(s);
  } else {
    proto->set_raw_data(tensor.data().data(), tensor.data().size());
  }
}

namespace {

void SequenceToProto(const Sequence& s, onnx::SequenceProto* proto) {
  proto->set_elem_type(onnx::SequenceProto::TENSOR);
  for (const Value& v : s.values()) TensorToProto(v.tensor(), proto->add_tensor_values());
}

}  // namespace

Result<std::string> ValueToProtoBytes(const Value& value, const std::string& name) {
  std::string out;
  bool ok = false;
  switch (value.kind()) {
    case ValueKind::kTensor: {
      onnx::TensorProto p;
      p.set_name(name);
      TensorToProto(value.tensor(), &p);
      ok = p.SerializeToString(&out);
      break;
    }
    case ValueKind::kSequence: {
      onnx::SequenceProto p;
      p.set_name(name);
      SequenceToProto(value.sequence(), &p);
      ok = p.SerializeToString(&out);
      break;
    }
    case ValueKind::kOptional: {
      onnx::OptionalProto p;
      p.set_name(name);
      const Optional& o = value.optional();
      p.set_elem_type(o.element_type().is_sequence() ? onnx::OptionalProto::SEQUENCE
                                                     : onnx::OptionalProto::TENSOR);
      if (o.has_value()) {
        if (o.value().is_tensor()) {
          TensorToProto(o.value().tensor(), p.mutable_tensor_value());
        } else {
          SequenceToProto(o.value().sequence(), p.mutable_sequence_value());
        }
      }
      ok = p.SerializeToString(&out);
      break;
    }
  }
  if (!ok) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("output {} is too large to serialize as protobuf (2 GiB limit)",
                              QuoteName(name)));
  }
  return out;
}

}  // namespace idem
