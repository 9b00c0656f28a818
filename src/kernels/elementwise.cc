// Add (7, 13, 14) with numpy broadcasting, and Not-1.
//
// Bit-exactness: integers wrap around (two's complement, computed unsigned); float16 and bfloat16
// are widened to float, added in float and rounded back to nearest-even, which is what numpy (the
// ONNX reference) does for float16 and ONNX Runtime does for bfloat16. NaN inputs give the
// default quiet NaN of the hardware add, as both do.
#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "src/kernels/sequence_internal.h"
#include "src/kernels/tensor_util.h"

namespace idem {
namespace {

using sequence_internal::MakeKernel;

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3FFu) << 13;
    }
  } else if (exp == 0x1F) {
    bits = sign | 0x7F800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  return std::bit_cast<float>(bits);
}

// Round to nearest, ties to even (IEEE conversion, as numpy's npy_float_to_half).
uint16_t FloatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xFFu;
  uint32_t mant = x & 0x7FFFFFu;
  if (exp == 0xFF) {  // Inf or NaN (keep a quiet NaN's top payload bits)
    if (mant == 0) return static_cast<uint16_t>(sign | 0x7C00u);
    uint16_t m = static_cast<uint16_t>(mant >> 13);
    return static_cast<uint16_t>(sign | 0x7C00u | (m == 0 ? 0x200u : m));
  }
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1F) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow to Inf
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);  // underflow to zero
    mant |= 0x800000u;
    const int shift = 14 - e;
    uint32_t half_mant = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t h = sign | static_cast<uint32_t>(e) << 10 | (mant >> 13);
  const uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: ok
  return static_cast<uint16_t>(h);
}

float Bf16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t FloatToBf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu) != 0) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN stays a quiet NaN
  }
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

template <typename T>
struct AddOp {
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return a + b;
    }
  }
};
struct AddHalf {
  uint16_t operator()(uint16_t a, uint16_t b) const {
    return FloatToHalf(HalfToFloat(a) + HalfToFloat(b));
  }
};
struct AddBf16 {
  uint16_t operator()(uint16_t a, uint16_t b) const {
    return FloatToBf16(Bf16ToFloat(a) + Bf16ToFloat(b));
  }
};

// numpy broadcasting of two shapes.
Result<std::vector<int64_t>> BroadcastShapes(std::span<const int64_t> a,
                                             std::span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("shapes [{}] and [{}] cannot be broadcast (dim {}: {} vs {})",
                                fmt::join(a, ","), fmt::join(b, ","), i, da, db));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Strides of `shape` aligned to `out` (rank-padded on the left), 0 along broadcast dims.
std::vector<uint64_t> BroadcastStrides(std::span<const int64_t> shape, size_t rank) {
  std::vector<uint64_t> strides(rank, 0);
  uint64_t stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    const size_t i = k + (rank - shape.size());
    strides[i] = shape[k] == 1 ? 0 : stride;
    stride *= static_cast<uint64_t>(shape[k]);
  }
  return strides;
}

template <typename T, typename Op>
void Apply(const std::byte* pa, const std::byte* pb, std::byte* po, std::span<const int64_t> sa,
           std::span<const int64_t> sb, std::span<const int64_t> so, uint64_t count, Op op) {
  auto load = [](const std::byte* p, uint64_t i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    return v;
  };
  auto store = [&](uint64_t i, T v) { std::memcpy(po + i * sizeof(T), &v, sizeof(T)); };
  const uint64_t ca = static_cast<uint64_t>(std::max<int64_t>(1, [&] {
    int64_t n = 1;
    for (int64_t d : sa) n *= d;
    return n;
  }()));
  const uint64_t cb = static_cast<uint64_t>(std::max<int64_t>(1, [&] {
    int64_t n = 1;
    for (int64_t d : sb) n *= d;
    return n;
  }()));
  if (ca == count && cb == count) {
    for (uint64_t i = 0; i < count; ++i) store(i, op(load(pa, i), load(pb, i)));
    return;
  }
  if (cb == 1 && ca == count) {
    const T b = load(pb, 0);
    for (uint64_t i = 0; i < count; ++i) store(i, op(load(pa, i), b));
    return;
  }
  if (ca == 1 && cb == count) {
    const T a = load(pa, 0);
    for (uint64_t i = 0; i < count; ++i) store(i, op(a, load(pb, i)));
    return;
  }
  // General case: an odometer over the output index.
  const size_t rank = so.size();
  const std::vector<uint64_t> ta = BroadcastStrides(sa, rank), tb = BroadcastStrides(sb, rank);
  std::vector<int64_t> index(rank, 0);
  uint64_t ia = 0, ib = 0;
  for (uint64_t i = 0; i < count; ++i) {
    store(i, op(load(pa, ia), load(pb, ib)));
    for (size_t d = rank; d-- > 0;) {
      ia += ta[d];
      ib += tb[d];
      if (++index[d] < so[d]) break;
      ia -= ta[d] * static_cast<uint64_t>(so[d]);
      ib -= tb[d] * static_cast<uint64_t>(so[d]);
      index[d] = 0;
    }
  }
}

class AddKernel final : public Kernel {
 public:
  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    const Tensor& a = inputs[0]->tensor();
    const Tensor& b = inputs[1]->tensor();
    const ElementType type = a.element_type();
    if (b.element_type() != type) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("inputs are tensor({}) and tensor({}); Add needs one type",
                                ElementTypeName(type), ElementTypeName(b.element_type())));
    }
    IDEM_ASSIGN_OR_RETURN(std::vector<int64_t> shape, BroadcastShapes(a.shape(), b.shape()));
    uint64_t count = 1;
    for (int64_t d : shape) {
      if (d != 0 && count > ctx.limits().max_elements / static_cast<uint64_t>(d)) {
        return Status(StatusCode::kResourceExhausted, "the broadcast result exceeds max_elements");
      }
      count *= static_cast<uint64_t>(d);
    }
    IDEM_ASSIGN_OR_RETURN(uint64_t bytes, TensorBytes(type, count, ctx.limits()));
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
    std::byte* out = nullptr;
    IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(bytes, &out));
    const std::byte* pa = a.data().data();
    const std::byte* pb = b.data().data();
    using E = ElementType;
    if (count > 0) {
      switch (type) {
#define IDEM_ADD_CASE(e, T)                                                \
  case e:                                                                  \
    Apply<T>(pa, pb, out, a.shape(), b.shape(), shape, count, AddOp<T>()); \
    break;
        IDEM_ADD_CASE(E::kUint8, uint8_t)
        IDEM_ADD_CASE(E::kUint16, uint16_t)
        IDEM_ADD_CASE(E::kUint32, uint32_t)
        IDEM_ADD_CASE(E::kUint64, uint64_t)
        IDEM_ADD_CASE(E::kInt8, int8_t)
        IDEM_ADD_CASE(E::kInt16, int16_t)
        IDEM_ADD_CASE(E::kInt32, int32_t)
        IDEM_ADD_CASE(E::kInt64, int64_t)
        IDEM_ADD_CASE(E::kFloat, float)
        IDEM_ADD_CASE(E::kDouble, double)
#undef IDEM_ADD_CASE
        case E::kFloat16:
          Apply<uint16_t>(pa, pb, out, a.shape(), b.shape(), shape, count, AddHalf());
          break;
        case E::kBfloat16:
          Apply<uint16_t>(pa, pb, out, a.shape(), b.shape(), shape, count, AddBf16());
          break;
        default:
          return Status(StatusCode::kInvalidArgument,
                        fmt::format("Add does not accept tensor({})", ElementTypeName(type)));
      }
    }
    IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeTensor(type, std::move(shape), std::move(buffer)));
    return {};
  }
};

// Output type of a broadcasting binary op: the shape when both are fully known, else rank or none.
Type BroadcastType(const Type& a, const Type& b) {
  if (!a.shape() || !b.shape()) return Type::Tensor(a.element_type());
  const auto& da = *a.shape();
  const auto& db = *b.shape();
  const size_t rank = std::max(da.size(), db.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim x = i < rank - da.size() ? Dim{1, ""} : da[i - (rank - da.size())];
    const Dim y = i < rank - db.size() ? Dim{1, ""} : db[i - (rank - db.size())];
    if (x.value && y.value) {
      out[i] = Dim{*x.value == 1 ? *y.value : *x.value, ""};
    } else if (x.value && *x.value == 1) {
      out[i] = y;
    } else if (y.value && *y.value == 1) {
      out[i] = x;
    } else {
      out[i] = Dim{};
    }
  }
  return Type::Tensor(a.element_type(), std::move(out));
}

KernelSchema AddSchema(int version) {
  using E = ElementType;
  std::vector<ElementType> elements = {E::kUint32,  E::kUint64, E::kInt32, E::kInt64,
                                       E::kFloat16, E::kFloat,  E::kDouble};
  if (version >= 13) elements.push_back(E::kBfloat16);
  if (version >= 14) {
    for (E e : {E::kUint8, E::kUint16, E::kInt8, E::kInt16}) elements.push_back(e);
  }
  KernelSchema s;
  s.op_type = "Add";
  s.since_version = version;
  s.inputs = {{"A", "T"}, {"B", "T"}};
  s.outputs = {{"C", "T"}};
  s.constraints = {{"T", TensorTypes(elements)}};
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    return std::vector<Type>{BroadcastType(*ctx.inputs[0], *ctx.inputs[1])};
  };
  s.create = [](const NodeContext&) { return MakeKernel<AddKernel>(); };
  return s;
}

class NotKernel final : public Kernel {
 public:
  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    const Tensor& t = inputs[0]->tensor();
    const uint64_t n = static_cast<uint64_t>(t.element_count());
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(n));
    std::byte* out = nullptr;
    IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(n, &out));
    const std::byte* in = t.data().data();
    for (uint64_t i = 0; i < n; ++i) {
      out[i] = in[i] == std::byte{0} ? std::byte{1} : std::byte{0};
    }
    const auto shape = t.shape();
    IDEM_ASSIGN_OR_RETURN(
        outputs[0],
        Value::MakeTensor(ElementType::kBool, {shape.begin(), shape.end()}, std::move(buffer)));
    return {};
  }
};

KernelSchema NotSchema() {
  KernelSchema s;
  s.op_type = "Not";
  s.since_version = 1;
  s.inputs = {{"X", "T"}};
  s.outputs = {{"Y", "T"}};
  s.constraints = {{"T", {Type::Tensor(ElementType::kBool)}}};
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    return std::vector<Type>{*ctx.inputs[0]};
  };
  s.create = [](const NodeContext&) { return MakeKernel<NotKernel>(); };
  return s;
}

}  // namespace

void RegisterElementwiseKernels(KernelRegistry& registry) {
  for (int version : {7, 13, 14}) registry.Register(AddSchema(version));
  registry.Register(NotSchema());
}

}  // namespace idem
