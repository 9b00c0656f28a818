// Pad (1, 2, 11, 13, 18, 19, 21, 23, 24, 25), and the per-axis gather it shares with Resize
// (axis_gather.h).
//
// pads [x1_begin, ..., xn_begin, x1_end, ..., xn_end] (the `paddings` attribute in 1, `pads` in
// 2, an input from 11; from 18 over the `axes` input's axes). A negative pad removes elements
// (cropping first, then padding the remaining extent, as ONNX Runtime does). Modes: constant
// (constant_value, `value` before 11; 0, "" or false by default), edge, reflect (numpy's: the
// edge is not repeated) and, from 19, wrap (numpy's: the axis as a circle, however large the pad).
// As ONNX Runtime: a reflect pad must be at most the (cropped) extent minus one, edge, reflect and
// wrap cannot pad an empty extent nor crop the input to nothing, and a constant pad may crop past
// an axis as long as the output size is not negative. Output sizes are checked against the limits
// before anything is allocated; pads of zero return the input itself.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "src/core/float_convert.h"
#include "src/kernels/axis_gather.h"
#include "src/kernels/dispatch.h"
#include "src/kernels/op.h"

namespace idem {

// ---- axis_gather ------------------------------------------------------------------------------

namespace axis_gather {

Fill FillFromElement(const Tensor& t) {
  Fill f;
  if (t.element_type() == ElementType::kString) {
    f.text = t.strings()[0];
    return f;
  }
  const int bits = ElementBits(t.element_type());
  const std::byte* p = t.data().data();
  if (bits < 8) {
    f.bytes.push_back(p[0] & std::byte(static_cast<uint8_t>((1u << bits) - 1)));
  } else {
    f.bytes.assign(p, p + bits / 8);
  }
  return f;
}

Result<uint64_t> CheckOutput(RunContext& ctx, ElementType type, std::span<const int64_t> shape) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return InvalidArgument(fmt::format("an output dim is negative ({})", d));
    if (d != 0 && count > ctx.limits().max_elements / static_cast<uint64_t>(d)) {
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("an output of shape [{}] exceeds max_elements {}",
                                fmt::join(shape, ","), ctx.limits().max_elements));
    }
    count *= static_cast<uint64_t>(d);
  }
  IDEM_ASSIGN_OR_RETURN(uint64_t bytes, TensorBytes(type, count, ctx.limits()));
  IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
  if (count > 0) {
    // The per-axis maps and their copy scaled by the input strides (ForEachMapped): two int64
    // per output position of each axis, scratch checked like the output (a bool output of n
    // elements along one axis would otherwise take 16n bytes unchecked).
    uint64_t positions = 0;
    for (int64_t d : shape) positions += static_cast<uint64_t>(d);
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(positions * 2 * sizeof(int64_t)));
  }
  return count;
}

namespace {

// Calls row(first output index, base, fill, last) for every row of the output along its last
// axis, in output order: output element first + j is the fill value when `fill` or last[j] < 0,
// else input element base + last[j]. rank >= 1.
template <class Row>
void ForEachMappedRow(std::span<const int64_t> out_shape, std::span<const Ints> maps,
                      std::span<const int64_t> in_shape, Row&& row) {
  const size_t rank = out_shape.size();
  // Maps scaled by the input strides (-1 stays -1).
  ScratchVector<Ints> scaled(rank);
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    scaled[d].reserve(maps[d].size());
    for (int64_t v : maps[d]) scaled[d].push_back(v < 0 ? -1 : v * stride);
    stride *= in_shape[d];
  }
  Ints index(rank - 1, 0);
  const Ints& last = scaled[rank - 1];
  int64_t out = 0;
  while (true) {
    int64_t base = 0;
    bool fill = false;
    for (size_t d = 0; d + 1 < rank; ++d) {
      const int64_t v = scaled[d][static_cast<size_t>(index[d])];
      if (v < 0) fill = true;
      base += v;
    }
    row(out, base, fill, std::span<const int64_t>(last));
    out += static_cast<int64_t>(last.size());
    size_t d = rank - 1;
    while (d > 0) {
      --d;
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (rank == 1) return;
  }
}

// Calls visit(output index, input index or -1) in output order.
template <class Visit>
void ForEachMapped(std::span<const int64_t> out_shape, std::span<const Ints> maps,
                   std::span<const int64_t> in_shape, Visit&& visit) {
  if (out_shape.empty()) {
    visit(int64_t{0}, int64_t{0});
    return;
  }
  ForEachMappedRow(out_shape, maps, in_shape,
                   [&](int64_t first, int64_t base, bool fill, std::span<const int64_t> last) {
                     for (size_t j = 0; j < last.size(); ++j) {
                       visit(first + static_cast<int64_t>(j),
                             fill || last[j] < 0 ? int64_t{-1} : base + last[j]);
                     }
                   });
}

// One output row of fixed-width elements T (see ForEachMappedRow); `out` is a fresh tensor that
// does not overlap `in` (__restrict: see MapRun in dispatch.h).
template <class T>
void GatherRow(const std::byte* __restrict in, std::byte* __restrict out, int64_t base, bool fill,
               std::span<const int64_t> last, T fill_value) {
  const auto n = static_cast<int64_t>(last.size());
  if (fill) {
    for (int64_t j = 0; j < n; ++j) StoreElement<T>(out, j, fill_value);
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    const int64_t s = last[static_cast<size_t>(j)];
    StoreElement<T>(out, j, s < 0 ? fill_value : LoadElement<T>(in, base + s));
  }
}

}  // namespace

Result<Value> Gather(RunContext& ctx, const Tensor& in, std::span<const int64_t> out_shape,
                     std::span<const Ints> maps, const Fill& fill) {
  const ElementType type = in.element_type();
  IDEM_ASSIGN_OR_RETURN(uint64_t count, CheckOutput(ctx, type, out_shape));
  const Ints shape(out_shape.begin(), out_shape.end());
  if (type == ElementType::kString) {
    const auto src = in.strings();
    if (count > 0) {
      uint64_t total = 0;
      ForEachMapped(out_shape, maps, in.shape(), [&](int64_t, int64_t s) {
        total += s < 0 ? fill.text.size() : src[static_cast<size_t>(s)].size();
      });
      IDEM_ASSIGN_OR_RETURN(uint64_t bytes, TensorBytes(type, count, ctx.limits(), total));
      IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
    }
    std::vector<std::string> strings(static_cast<size_t>(count));
    if (count > 0) {
      ForEachMapped(out_shape, maps, in.shape(), [&](int64_t o, int64_t s) {
        strings[static_cast<size_t>(o)] = s < 0 ? fill.text : src[static_cast<size_t>(s)];
      });
    }
    return Value::MakeStringTensor(std::vector<int64_t>(shape.begin(), shape.end()),
                                   std::move(strings));
  }
  // Every element is written below (sub-byte types after a memset).
  std::byte* out = nullptr;
  IDEM_ASSIGN_OR_RETURN(Value result, AllocateTensorForOverwrite(ctx, type, shape, &out));
  if (count == 0) return result;
  const std::byte* p = in.data().data();
  const int bits = ElementBits(type);
  if (bits < 8) {
    std::memset(out, 0, result.tensor().data().size());
    const int per_byte = 8 / bits;
    const unsigned mask = (1u << bits) - 1;
    const unsigned fill_bits = fill.bytes.empty() ? 0u : std::to_integer<unsigned>(fill.bytes[0]);
    ForEachMapped(out_shape, maps, in.shape(), [&](int64_t o, int64_t s) {
      const unsigned v =
          s < 0 ? fill_bits
                : (std::to_integer<unsigned>(p[s / per_byte]) >> ((s % per_byte) * bits)) & mask;
      out[o / per_byte] |= std::byte(static_cast<uint8_t>((v & mask) << ((o % per_byte) * bits)));
    });
    return result;
  }
  IDEM_RETURN_IF_ERROR(DispatchBySize(type, "Pad", [&](auto tag) -> Status {
    using T = decltype(tag);
    T fill_value{};
    if (fill.bytes.size() == sizeof(T)) std::memcpy(&fill_value, fill.bytes.data(), sizeof(T));
    if (out_shape.empty()) {
      StoreElement<T>(out, 0, LoadElement<T>(p, 0));
      return Status();
    }
    ForEachMappedRow(out_shape, maps, in.shape(),
                     [&](int64_t first, int64_t base, bool fill, std::span<const int64_t> last) {
                       GatherRow<T>(p, out + first * static_cast<int64_t>(sizeof(T)), base, fill,
                                    last, fill_value);
                     });
    return Status();
  }));
  return result;
}

}  // namespace axis_gather

namespace {

using E = ElementType;

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

struct PadAttrs {
  int version = 11;
  PadMode mode = PadMode::kConstant;
  std::vector<int64_t> pads;  // the attribute (versions 1 and 2)
  float value = 0.0f;         // the attribute (versions 1 and 2)
};

const char* ModeName(PadMode m) {
  switch (m) {
    case PadMode::kConstant:
      return "constant";
    case PadMode::kReflect:
      return "reflect";
    case PadMode::kEdge:
      return "edge";
    case PadMode::kWrap:
      break;
  }
  return "wrap";
}

// Begin and end pads for every axis of a rank-`rank` input from `pads` over `axes` (all axes when
// null): [b_0, ..., b_{r-1}, e_0, ..., e_{r-1}].
Result<Ints> PadsPerAxis(std::span<const int64_t> pads,
                         std::optional<std::span<const int64_t>> axes, int64_t rank) {
  Ints normalized;
  if (axes) {
    IDEM_ASSIGN_OR_RETURN(normalized, NormalizeAxes(*axes, rank, "Pad: axis"));
  } else {
    for (int64_t d = 0; d < rank; ++d) normalized.push_back(d);
  }
  const auto n = static_cast<int64_t>(normalized.size());
  if (static_cast<int64_t>(pads.size()) != 2 * n) {
    return InvalidArgument(fmt::format("Pad: pads has {} values; it must have 2 * {} (two per {})",
                                       pads.size(), n, axes ? "listed axis" : "input axis"));
  }
  Ints out(static_cast<size_t>(2 * rank), 0);
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(normalized[i])] = pads[static_cast<size_t>(i)];
    out[static_cast<size_t>(rank + normalized[i])] = pads[static_cast<size_t>(n + i)];
  }
  return out;
}

// The one shape rule: output dim d = dim + begin + end, with the mode's rules on the extent that
// remains after negative pads crop.
template <class D>
Result<DimsOf<D>> PadShape(PadMode mode, std::span<const D> x, std::span<const int64_t> pads) {
  const size_t rank = x.size();
  DimsOf<D> out(rank);
  bool cropped = false, empty = false, all_known = true;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t b = pads[d], e = pads[rank + d];
    cropped = cropped || b < 0 || e < 0;
    const std::optional<int64_t> v = KnownDim(x[d]);
    if (!v) {
      all_known = false;
      out[d] = (b == 0 && e == 0) ? x[d] : MakeDim<D>(std::nullopt);
      continue;
    }
    int64_t size = 0;
    if (__builtin_add_overflow(*v, b, &size) || __builtin_add_overflow(size, e, &size)) {
      return Status(
          StatusCode::kResourceExhausted,
          fmt::format("Pad: axis {} of size {} padded by {} and {} overflows", d, *v, b, e));
    }
    if (size < 0) {
      return InvalidArgument(
          fmt::format("Pad: pads {} and {} of axis {} (size {}) give a negative output size {}", b,
                      e, d, *v, size));
    }
    // The extent left once negative pads have cropped.
    const int64_t extent = *v + std::min<int64_t>(b, 0) + std::min<int64_t>(e, 0);
    empty = empty || extent <= 0;
    if (mode != PadMode::kConstant && (b > 0 || e > 0)) {
      if (extent <= 0) {
        return InvalidArgument(fmt::format("Pad: mode '{}' cannot pad axis {}: it has no elements",
                                           ModeName(mode), d));
      }
      if (mode == PadMode::kReflect && std::max(b, e) > extent - 1) {
        return InvalidArgument(
            fmt::format("Pad: reflect pads {} and {} of axis {} exceed its size {} minus one", b, e,
                        d, extent));
      }
    }
    out[d] = MakeDim<D>(size);
  }
  // As ONNX Runtime: edge, reflect and wrap refuse negative pads that leave no elements.
  if (mode != PadMode::kConstant && cropped && empty && all_known) {
    return InvalidArgument(fmt::format(
        "Pad: mode '{}' with negative pads that leave the input without elements", ModeName(mode)));
  }
  return out;
}

// Input coordinate along one axis for each output coordinate (-1: the constant).
Ints AxisMap(PadMode mode, int64_t dim, int64_t b, int64_t e, int64_t size) {
  const int64_t lo = std::max<int64_t>(-b, 0);
  const int64_t n = dim - std::max<int64_t>(-b, 0) - std::max<int64_t>(-e, 0);
  const int64_t pre = std::max<int64_t>(b, 0);
  Ints map(static_cast<size_t>(size));
  for (int64_t o = 0; o < size; ++o) {
    int64_t p = o - pre;
    switch (mode) {
      case PadMode::kConstant:
        if (p < 0 || p >= n) {
          map[static_cast<size_t>(o)] = -1;
          continue;
        }
        break;
      case PadMode::kEdge:
        p = std::clamp<int64_t>(p, 0, n - 1);
        break;
      // Positions inside the input map to themselves; only the padding divides (a 64-bit
      // division per element was most of a reflect Pad of Silero's 1536 samples).
      case PadMode::kReflect:
        if (n > 1) {
          if (p < 0 || p >= n) {
            const int64_t period = 2 * (n - 1);
            p %= period;
            if (p < 0) p += period;
            if (p >= n) p = period - p;
          }
        } else {
          p = 0;
        }
        break;
      case PadMode::kWrap:
        if (p < 0 || p >= n) {
          p %= n;
          if (p < 0) p += n;
        }
        break;
    }
    map[static_cast<size_t>(o)] = lo + p;
  }
  return map;
}

// The fill of a constant pad of `type` from the float `value` attribute (versions 1 and 2:
// float16, float or double).
axis_gather::Fill FillFromFloat(E type, float value) {
  axis_gather::Fill f;
  auto put = [&](const auto& v) {
    f.bytes.resize(sizeof(v));
    std::memcpy(f.bytes.data(), &v, sizeof(v));
  };
  if (type == E::kFloat16) {
    put(FloatToHalf(value));
  } else if (type == E::kDouble) {
    put(static_cast<double>(value));
  } else {
    put(value);
  }
  return f;
}

Result<PadAttrs> ParsePad(const NodeContext& ctx) {
  AttrReader r(ctx.node);
  PadAttrs a;
  a.version = ctx.version;
  std::string mode;
  if (ctx.version >= 19) {
    IDEM_ASSIGN_OR_RETURN(mode,
                          r.StringIn("mode", "constant", {"constant", "reflect", "edge", "wrap"}));
  } else {
    IDEM_ASSIGN_OR_RETURN(mode, r.StringIn("mode", "constant", {"constant", "reflect", "edge"}));
  }
  a.mode = mode == "constant"  ? PadMode::kConstant
           : mode == "reflect" ? PadMode::kReflect
           : mode == "edge"    ? PadMode::kEdge
                               : PadMode::kWrap;
  if (ctx.version < 11) {
    IDEM_ASSIGN_OR_RETURN(a.pads, r.Ints(ctx.version == 1 ? "paddings" : "pads"));
    IDEM_ASSIGN_OR_RETURN(a.value, r.Float("value", 0.0f));
  }
  return a;
}

// The pads per axis when the facts give them (always before 11).
Result<std::optional<std::vector<int64_t>>> KnownPads(const PadAttrs& a, const Facts& facts,
                                                      int64_t rank) {
  if (a.version < 11) {
    IDEM_ASSIGN_OR_RETURN(Ints p, PadsPerAxis(a.pads, std::nullopt, rank));
    return std::optional<std::vector<int64_t>>(std::in_place, p.begin(), p.end());
  }
  std::optional<std::vector<int64_t>> pads = facts.constant_ints(1);
  if (!pads) return std::optional<std::vector<int64_t>>();
  std::optional<std::vector<int64_t>> axes;
  if (facts.has(3)) {
    axes = facts.constant_ints(3);
    if (!axes) return std::optional<std::vector<int64_t>>();
  }
  std::optional<std::span<const int64_t>> axes_span;
  if (axes) axes_span = *axes;
  IDEM_ASSIGN_OR_RETURN(Ints p, PadsPerAxis(*pads, axes_span, rank));
  return std::optional<std::vector<int64_t>>(std::in_place, p.begin(), p.end());
}

Result<Inference> InferPad(const PadAttrs& a, const Facts& facts) {
  const E type = facts.element_type(0);
  if (facts.has(2) && facts.type(2).is_tensor() && facts.element_type(2) != type) {
    return InvalidModel(fmt::format("Pad: constant_value is tensor({}) but data is tensor({})",
                                    ElementTypeName(facts.element_type(2)), ElementTypeName(type)));
  }
  const auto& x = facts.shape(0);
  if (!x) return OneOutput(TensorType(type, std::nullopt));
  const auto rank = static_cast<int64_t>(x->size());
  IDEM_ASSIGN_OR_RETURN(auto pads, KnownPads(a, facts, rank));
  if (!pads) {
    return OneOutput(TensorType(type, std::vector<Dim>(static_cast<size_t>(rank))));
  }
  IDEM_ASSIGN_OR_RETURN(std::vector<Dim> dims,
                        PadShape<Dim>(a.mode, std::span<const Dim>(*x), *pads));
  return OneOutput(TensorType(type, std::move(dims)));
}

Status RunPad(const PadAttrs& a, RunContext& ctx, std::span<const Value* const> inputs,
              std::span<Value> outputs) {
  const Tensor& x = inputs[0]->tensor();
  const auto rank = static_cast<int64_t>(x.rank());
  Ints pads;
  axis_gather::Fill fill;
  if (a.version < 11) {
    IDEM_ASSIGN_OR_RETURN(pads, PadsPerAxis(a.pads, std::nullopt, rank));
    fill = FillFromFloat(x.element_type(), a.value);
  } else {
    const Tensor& p = inputs[1]->tensor();
    if (p.rank() > 2 || (p.rank() == 2 && p.shape()[0] != 1)) {
      return InvalidArgument(fmt::format("Pad: pads must be a 1-D tensor, got rank {}", p.rank()));
    }
    const Ints values = ReadInt64s(p);
    Ints axes_values;
    std::optional<std::span<const int64_t>> axes;
    if (inputs.size() > 3 && inputs[3] != nullptr) {
      const Tensor& t = inputs[3]->tensor();
      if (t.rank() != 1) {
        return InvalidArgument(
            fmt::format("Pad: axes must be a 1-D tensor, got rank {}", t.rank()));
      }
      axes_values = ReadInt64s(t);
      axes = axes_values;
    }
    IDEM_ASSIGN_OR_RETURN(pads, PadsPerAxis(values, axes, rank));
    if (inputs.size() > 2 && inputs[2] != nullptr) {
      const Tensor& c = inputs[2]->tensor();
      if (c.element_type() != x.element_type()) {
        return InvalidArgument(
            fmt::format("Pad: constant_value is tensor({}) but data is tensor({})",
                        ElementTypeName(c.element_type()), ElementTypeName(x.element_type())));
      }
      if (c.element_count() != 1) {
        return InvalidArgument(fmt::format(
            "Pad: constant_value must hold one value, got {} elements", c.element_count()));
      }
      fill = axis_gather::FillFromElement(c);
    }
  }
  IDEM_ASSIGN_OR_RETURN(Ints shape, PadShape<int64_t>(a.mode, x.shape(), pads));
  if (std::all_of(pads.begin(), pads.end(), [](int64_t v) { return v == 0; })) {
    outputs[0] = *inputs[0];  // nothing to pad: the input itself
    return {};
  }
  IDEM_ASSIGN_OR_RETURN(uint64_t count, axis_gather::CheckOutput(ctx, x.element_type(), shape));
  ScratchVector<Ints> maps;
  if (count > 0) {
    for (int64_t d = 0; d < rank; ++d) {
      maps.push_back(AxisMap(a.mode, x.shape()[d], pads[d], pads[rank + d], shape[d]));
    }
  }
  IDEM_ASSIGN_OR_RETURN(outputs[0], axis_gather::Gather(ctx, x, shape, maps, fill));
  return {};
}

Result<std::unique_ptr<Kernel>> CreatePad(const PadAttrs& a, const Facts&) {
  return MakeFunctionKernel(a, RunPad);
}

std::vector<E> PadTypes(int version) {
  if (version < 11) return FloatTypes(false);
  std::vector<E> t = {E::kUint8, E::kUint16, E::kUint32,  E::kUint64, E::kInt8,  E::kInt16,
                      E::kInt32, E::kInt64,  E::kFloat16, E::kFloat,  E::kDouble};
  if (version >= 13) {
    for (E e : {E::kBfloat16, E::kString, E::kBool, E::kComplex64, E::kComplex128}) t.push_back(e);
  }
  if (version >= 21) {
    for (E e : {E::kFloat8E4M3FN, E::kFloat8E4M3FNUZ, E::kFloat8E5M2, E::kFloat8E5M2FNUZ, E::kUint4,
                E::kInt4}) {
      t.push_back(e);
    }
  }
  if (version >= 23) t.push_back(E::kFloat4E2M1);
  if (version >= 24) t.push_back(E::kFloat8E8M0);
  if (version >= 25) {
    t.push_back(E::kUint2);
    t.push_back(E::kInt2);
  }
  return t;
}

KernelSchema PadSchema(int version) {
  KernelSchema s;
  s.op_type = "Pad";
  s.since_version = version;
  s.inputs = {{"data", "T"}};
  if (version >= 11) {
    s.inputs.push_back({"pads", "tensor(int64)"});
    s.inputs.push_back({"constant_value", "T", FormalParameter::Arity::kOptional});
  }
  if (version >= 18) s.inputs.push_back({"axes", "Tind", FormalParameter::Arity::kOptional});
  s.outputs = {{"output", "T"}};
  s.constraints = {{"T", TensorTypes(PadTypes(version))}};
  if (version >= 11) {
    s.constraints.push_back({"tensor(int64)", {Type::Tensor(E::kInt64)}});
  }
  if (version >= 18) {
    s.constraints.push_back({"Tind", {Type::Tensor(E::kInt32), Type::Tensor(E::kInt64)}});
  }
  s.attributes = {"mode"};
  if (version == 1) s.attributes = {"mode", "paddings", "value"};
  if (version == 2) s.attributes = {"mode", "pads", "value"};
  s.foldable = true;
  DefineOp<PadAttrs>(s, ParsePad, InferPad, CreatePad);
  return s;
}

}  // namespace

void RegisterPadKernels(KernelRegistry& registry) {
  for (int v : {1, 2, 11, 13, 18, 19, 21, 23, 24, 25}) registry.Register(PadSchema(v));
}

}  // namespace idem
