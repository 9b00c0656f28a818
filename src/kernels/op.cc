#include "src/kernels/op.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "src/core/block_cache.h"
#include "src/core/float_convert.h"
#include "src/core/memory_plan.h"
#include "src/core/text.h"
#include "src/kernels/dispatch.h"

namespace idem {

Result<int64_t> NormalizeAxis(int64_t axis, int64_t rank, std::string_view what, bool allow_end) {
  const int64_t hi = allow_end ? rank : rank - 1;
  const int64_t lo = allow_end ? -rank - 1 : -rank;
  if (axis < lo || axis > hi) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("{} {} is outside [{}, {}] for rank {}", what, axis, lo, hi, rank));
  }
  return axis < 0 ? axis + (allow_end ? rank + 1 : rank) : axis;
}

Result<Ints> NormalizeAxes(std::span<const int64_t> axes, int64_t rank, std::string_view what) {
  Ints out;
  out.reserve(axes.size());
  // Repeats: a bit per axis (a word for ranks up to 64, else one from the block cache).
  ScratchVector<uint64_t> seen(static_cast<size_t>((std::max<int64_t>(rank, 0) + 63) / 64), 0);
  for (int64_t a : axes) {
    IDEM_ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, rank, what));
    uint64_t& word = seen[static_cast<size_t>(n) / 64];
    const uint64_t bit = uint64_t{1} << (static_cast<size_t>(n) % 64);
    if ((word & bit) != 0) {
      return Status(StatusCode::kInvalidArgument, fmt::format("{} {} is repeated", what, a));
    }
    word |= bit;
    out.push_back(n);
  }
  return out;
}

std::optional<std::vector<int64_t>> Facts::constant_ints(size_t i) const {
  const Value* v = constant(i);
  if (v == nullptr || !v->is_tensor()) return std::nullopt;
  const ElementType e = v->tensor().element_type();
  if (e != ElementType::kInt64 && e != ElementType::kInt32) return std::nullopt;
  const Ints ints = ReadInt64s(v->tensor());
  return std::vector<int64_t>(ints.begin(), ints.end());
}

std::optional<std::vector<int64_t>> Facts::static_shape(size_t i) const {
  if (!has(i) || !type(i).is_tensor() || !shape(i)) return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim& d : *shape(i)) {
    if (!d.value) return std::nullopt;
    out.push_back(*d.value);
  }
  return out;
}

// ---- AttrReader -----------------------------------------------------------------------------

const Attribute* AttrReader::Find(const std::string& name, Attribute::Kind kind,
                                  const char* kind_name, Status* error) const {
  const Attribute* a = node_.FindAttribute(name);
  if (a != nullptr && a->kind != kind) {
    *error = InvalidModel(fmt::format("attribute {} must be {}", QuoteName(name), kind_name));
    return nullptr;
  }
  return a;
}

namespace {
Status Missing(const std::string& name) {
  return InvalidModel(fmt::format("required attribute {} is missing", QuoteName(name)));
}
}  // namespace

Result<int64_t> AttrReader::Int(const std::string& name, std::optional<int64_t> def) const {
  Status error;
  const Attribute* a = Find(name, Attribute::Kind::kInt, "an int", &error);
  if (!error.ok()) return error;
  if (a == nullptr) {
    if (def) return *def;
    return Missing(name);
  }
  return a->i;
}

Result<float> AttrReader::Float(const std::string& name, std::optional<float> def) const {
  Status error;
  const Attribute* a = Find(name, Attribute::Kind::kFloat, "a float", &error);
  if (!error.ok()) return error;
  if (a == nullptr) {
    if (def) return *def;
    return Missing(name);
  }
  return a->f;
}

Result<std::string> AttrReader::String(const std::string& name,
                                       std::optional<std::string> def) const {
  Status error;
  const Attribute* a = Find(name, Attribute::Kind::kString, "a string", &error);
  if (!error.ok()) return error;
  if (a == nullptr) {
    if (def) return *def;
    return Missing(name);
  }
  return a->s;
}

Result<std::vector<int64_t>> AttrReader::Ints(const std::string& name,
                                              std::optional<std::vector<int64_t>> def) const {
  Status error;
  const Attribute* a = Find(name, Attribute::Kind::kInts, "a list of ints", &error);
  if (!error.ok()) return error;
  if (a == nullptr) {
    if (def) return *def;
    return Missing(name);
  }
  return a->ints;
}

Result<std::vector<float>> AttrReader::Floats(const std::string& name,
                                              std::optional<std::vector<float>> def) const {
  Status error;
  const Attribute* a = Find(name, Attribute::Kind::kFloats, "a list of floats", &error);
  if (!error.ok()) return error;
  if (a == nullptr) {
    if (def) return *def;
    return Missing(name);
  }
  return a->floats;
}

Result<std::vector<std::string>> AttrReader::Strings(
    const std::string& name, std::optional<std::vector<std::string>> def) const {
  Status error;
  const Attribute* a = Find(name, Attribute::Kind::kStrings, "a list of strings", &error);
  if (!error.ok()) return error;
  if (a == nullptr) {
    if (def) return *def;
    return Missing(name);
  }
  return a->strings;
}

Result<Value> AttrReader::TensorAttr(const std::string& name, bool required) const {
  Status error;
  const Attribute* a = Find(name, Attribute::Kind::kTensor, "a tensor", &error);
  if (!error.ok()) return error;
  if (a == nullptr) {
    if (required) return Missing(name);
    return Value();
  }
  return a->tensor;
}

Result<int64_t> AttrReader::IntIn(const std::string& name, int64_t def,
                                  std::initializer_list<int64_t> allowed) const {
  IDEM_ASSIGN_OR_RETURN(int64_t v, Int(name, def));
  for (int64_t a : allowed) {
    if (a == v) return v;
  }
  return InvalidModel(fmt::format("attribute {} is {}; it must be one of {}", QuoteName(name), v,
                                  fmt::join(allowed, ", ")));
}

Result<std::string> AttrReader::StringIn(const std::string& name, std::string def,
                                         std::initializer_list<std::string_view> allowed) const {
  IDEM_ASSIGN_OR_RETURN(std::string v, String(name, std::move(def)));
  for (std::string_view a : allowed) {
    if (a == v) return v;
  }
  return InvalidModel(fmt::format("attribute {} is {}; it must be one of {}", QuoteName(name),
                                  QuoteName(v), fmt::join(allowed, ", ")));
}

// ---- Run-time helpers -----------------------------------------------------------------------

namespace {

Result<Value> AllocateOutput(RunContext& ctx, ElementType type, std::span<const int64_t> shape,
                             std::byte** data, bool zeroed) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return Status(StatusCode::kInvalidArgument, fmt::format("an output dim is negative ({})", d));
    }
    if (d != 0 && count > ctx.limits().max_elements / static_cast<uint64_t>(d)) {
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("an output of shape [{}] exceeds max_elements {}",
                                fmt::join(shape, ","), ctx.limits().max_elements));
    }
    count *= static_cast<uint64_t>(d);
  }
  IDEM_ASSIGN_OR_RETURN(uint64_t bytes, TensorBytes(type, count, ctx.limits()));
  IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
  if (bytes == 0) {
    IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(bytes, data));
    return Value::MakeTensorFromDims(type, shape, std::move(buffer));
  }
  memory_plan::TensorSource* source = ctx.tensor_source();
  IDEM_ASSIGN_OR_RETURN(Buffer buffer, source != nullptr
                                           ? source->Allocate(bytes, data, zeroed)
                                           : block_cache::Allocate(bytes, data, zeroed));
  return Value::MakeTensorFromDims(type, shape, std::move(buffer));
}

}  // namespace

Result<Value> AllocateTensor(RunContext& ctx, ElementType type, std::span<const int64_t> shape,
                             std::byte** data) {
  return AllocateOutput(ctx, type, shape, data, /*zeroed=*/true);
}

Result<Value> AllocateTensorForOverwrite(RunContext& ctx, ElementType type,
                                         std::span<const int64_t> shape, std::byte** data) {
  return AllocateOutput(ctx, type, shape, data, /*zeroed=*/false);
}

Ints ReadInt64s(const Tensor& t) {
  Ints out;
  out.reserve(static_cast<size_t>(t.element_count()));
  if (t.element_type() == ElementType::kInt32) {
    for (int32_t v : t.data_as<int32_t>()) out.push_back(v);
  } else if (t.element_type() == ElementType::kInt64) {
    for (int64_t v : t.data_as<int64_t>()) out.push_back(v);
  }
  return out;
}

ScratchVector<double> ReadDoubles(const Tensor& t) {
  ScratchVector<double> out;
  out.reserve(static_cast<size_t>(t.element_count()));
  const std::byte* p = t.data().data();
  for (int64_t i = 0; i < t.element_count(); ++i) {
    switch (t.element_type()) {
      case ElementType::kFloat:
        out.push_back(LoadElement<float>(p, i));
        break;
      case ElementType::kDouble:
        out.push_back(LoadElement<double>(p, i));
        break;
      case ElementType::kFloat16:
        out.push_back(HalfToFloat(LoadElement<uint16_t>(p, i)));
        break;
      case ElementType::kBfloat16:
        out.push_back(Bf16ToFloat(LoadElement<uint16_t>(p, i)));
        break;
      default:
        return out;
    }
  }
  return out;
}

std::vector<ElementType> FloatTypes(bool bfloat16) {
  std::vector<ElementType> out = {ElementType::kFloat16, ElementType::kFloat, ElementType::kDouble};
  if (bfloat16) out.push_back(ElementType::kBfloat16);
  return out;
}

std::vector<ElementType> IntegerTypes() {
  using E = ElementType;
  return {E::kUint8, E::kUint16, E::kUint32, E::kUint64, E::kInt8, E::kInt16, E::kInt32, E::kInt64};
}

std::vector<ElementType> NumericTypes(bool bfloat16) {
  std::vector<ElementType> out = IntegerTypes();
  for (ElementType e : FloatTypes(bfloat16)) out.push_back(e);
  return out;
}

Ints BroadcastStrides(std::span<const int64_t> shape, size_t rank) {
  Ints strides(rank, 0);
  int64_t stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    const size_t i = k + (rank - shape.size());
    strides[i] = shape[k] == 1 ? 0 : stride;
    stride *= shape[k];
  }
  return strides;
}

namespace dispatch_internal {
Status Unsupported(ElementType type, std::string_view op) {
  return Status(StatusCode::kInvalidArgument,
                fmt::format("{} does not accept tensor({})", op, ElementTypeName(type)));
}
}  // namespace dispatch_internal

// ---- Data movement ----------------------------------------------------------------------------

Result<Value> WithShape(RunContext& ctx, const Tensor& t, std::span<const int64_t> shape) {
  if (t.element_type() == ElementType::kString) {
    IDEM_ASSIGN_OR_RETURN(
        uint64_t bytes, TensorBytes(ElementType::kString, static_cast<uint64_t>(t.element_count()),
                                    ctx.limits(), t.string_bytes()));
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
    auto s = t.strings();
    return Value::MakeStringTensor(std::vector<int64_t>(shape.begin(), shape.end()),
                                   std::vector<std::string>(s.begin(), s.end()));
  }
  return Value::MakeTensorFromDims(t.element_type(), shape, t.data());
}

Ints RowMajorStrides(std::span<const int64_t> shape) {
  // Unsigned products: the strides of an empty tensor with huge dims ([0, 2^40, 2^40]) may wrap,
  // but nothing is read through them, and wrapping is defined.
  Ints strides(shape.size(), 1);
  uint64_t stride = 1;
  for (size_t d = shape.size(); d-- > 1;) {
    stride *= static_cast<uint64_t>(shape[d]);
    strides[d - 1] = static_cast<int64_t>(stride);
  }
  return strides;
}

namespace {

// Calls row(out_start, src_start, length, step) for each innermost run of the strided copy of
// `dims` (all > 0) with source `strides` from `offset`, in output order.
template <class Row>
void ForEachStridedRow(std::span<const int64_t> dims, std::span<const int64_t> strides,
                       int64_t offset, Row&& row) {
  const size_t r = dims.size();
  const int64_t length = dims[r - 1], step = strides[r - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < r; ++d) rows *= dims[d];
  Ints index(r - 1, 0);
  int64_t src = offset;
  for (int64_t i = 0; i < rows; ++i) {
    row(i * length, src, length, step);
    for (size_t d = r - 1; d-- > 0;) {
      src += strides[d];
      if (++index[d] < dims[d]) break;
      src -= strides[d] * dims[d];
      index[d] = 0;
    }
  }
}

}  // namespace

Result<Value> StridedCopy(RunContext& ctx, const Tensor& t, std::span<const int64_t> out_shape,
                          std::span<const int64_t> strides, int64_t offset) {
  const ElementType type = t.element_type();
  // Size-1 dims dropped and neighbours that step through the source as one dim merged, so a
  // slab copy becomes a few long runs.
  Ints dims, steps;
  bool empty = false;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 0) empty = true;
    if (out_shape[d] == 1) continue;
    if (!dims.empty() && steps.back() == strides[d] * out_shape[d]) {
      dims.back() *= out_shape[d];
      steps.back() = strides[d];
    } else {
      dims.push_back(out_shape[d]);
      steps.push_back(strides[d]);
    }
  }
  const Ints shape(out_shape.begin(), out_shape.end());
  if (empty) {
    // Nothing to copy, whatever the other dims are ([0, 2^60] is a valid empty tensor).
    if (type == ElementType::kString) {
      return Value::MakeStringTensor(std::vector<int64_t>(shape.begin(), shape.end()), {});
    }
    return Value::MakeTensorFromDims(type, shape, Buffer());
  }
  if (dims.empty()) {
    dims.push_back(1);
    steps.push_back(1);
  }
  if (type == ElementType::kString) {
    auto src = t.strings();
    uint64_t count = 1, string_bytes = 0;
    for (int64_t d : dims) count *= static_cast<uint64_t>(d);
    // The per-element part of the size first, so the strings are only walked when it fits.
    IDEM_ASSIGN_OR_RETURN(uint64_t element_bytes,
                          TensorBytes(ElementType::kString, count, ctx.limits()));
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(element_bytes));
    ForEachStridedRow(dims, steps, offset, [&](int64_t, int64_t s, int64_t n, int64_t step) {
      for (int64_t k = 0; k < n; ++k) string_bytes += src[static_cast<size_t>(s + k * step)].size();
    });
    IDEM_ASSIGN_OR_RETURN(uint64_t bytes,
                          TensorBytes(ElementType::kString, count, ctx.limits(), string_bytes));
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
    std::vector<std::string> strings;
    strings.reserve(count);
    ForEachStridedRow(dims, steps, offset, [&](int64_t, int64_t s, int64_t n, int64_t step) {
      for (int64_t k = 0; k < n; ++k) strings.push_back(src[static_cast<size_t>(s + k * step)]);
    });
    return Value::MakeStringTensor(std::vector<int64_t>(shape.begin(), shape.end()),
                                   std::move(strings));
  }
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Value v, AllocateTensor(ctx, type, shape, &out));
  const std::byte* src = t.data().data();
  const int bits = ElementBits(type);
  if (bits % 8 != 0) {
    // 4- and 2-bit types: element k sits in byte k*bits/8 at bit (k*bits)%8, low bits first.
    const auto mask = static_cast<unsigned>((1u << bits) - 1);
    const auto b = static_cast<uint64_t>(bits);
    ForEachStridedRow(dims, steps, offset, [&](int64_t o, int64_t s, int64_t n, int64_t step) {
      for (int64_t k = 0; k < n; ++k) {
        const uint64_t from = static_cast<uint64_t>(s + k * step) * b;
        const uint64_t to = static_cast<uint64_t>(o + k) * b;
        const unsigned value = (static_cast<unsigned>(src[from / 8]) >> (from % 8)) & mask;
        auto& byte = reinterpret_cast<uint8_t&>(out[to / 8]);
        byte = static_cast<uint8_t>((byte & ~(mask << (to % 8))) | (value << (to % 8)));
      }
    });
    return v;
  }
  const int64_t size = bits / 8;
  IDEM_RETURN_IF_ERROR(DispatchBySize(type, "StridedCopy", [&](auto tag) {
    using T = decltype(tag);
    ForEachStridedRow(dims, steps, offset, [&](int64_t o, int64_t s, int64_t n, int64_t step) {
      if (step == 1) {
        std::memcpy(out + o * size, src + s * size, static_cast<size_t>(n * size));
        return;
      }
      for (int64_t k = 0; k < n; ++k)
        StoreElement<T>(out, o + k, LoadElement<T>(src, s + k * step));
    });
    return Status();
  }));
  return v;
}

Status CheckWork(const Limits& limits, double work, std::string_view op, std::string_view unit) {
  if (!(work <= static_cast<double>(limits.max_elements))) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("{}: the node's work, {:.4g} {}, exceeds the per-node work bound "
                              "max_elements = {} (Limits::max_elements, docs/limits.md)",
                              op, work, unit, limits.max_elements));
  }
  return {};
}

}  // namespace idem
