// Shape (1, 13, 15, 19, 21, 23, 24, 25), Slice (1, 10, 11, 13), Unsqueeze (1, 11, 13, 21, 23, 24,
// 25).
// Unsqueeze shares its input's bytes (a new shape over the same Buffer); Slice copies the
// selected elements (checked against the run budget first).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "src/core/text.h"
#include "src/kernels/sequence_internal.h"
#include "src/kernels/tensor_util.h"

namespace idem {
namespace {

using sequence_internal::MakeKernel;

// ---- Shape ------------------------------------------------------------------------------------

class ShapeKernel final : public Kernel {
 public:
  ShapeKernel(int64_t start, std::optional<int64_t> end) : start_(start), end_(end) {}
  Status Run(std::span<const Value* const> inputs, std::span<Value> outputs) const override {
    const auto shape = inputs[0]->tensor().shape();
    const auto rank = static_cast<int64_t>(shape.size());
    auto clamp = [rank](int64_t axis) {
      if (axis < 0) axis += rank;
      return std::clamp<int64_t>(axis, 0, rank);
    };
    const int64_t start = clamp(start_);
    const int64_t end = end_ ? clamp(*end_) : rank;
    std::vector<int64_t> dims;
    for (int64_t i = start; i < end; ++i) dims.push_back(shape[static_cast<size_t>(i)]);
    IDEM_ASSIGN_OR_RETURN(outputs[0],
                          tensor_util::MakeInt64Tensor({static_cast<int64_t>(dims.size())}, dims));
    return {};
  }

 private:
  int64_t start_;
  std::optional<int64_t> end_;
};

KernelSchema ShapeSchema(int version) {
  KernelSchema s;
  s.op_type = "Shape";
  s.since_version = version;
  s.inputs = {{"data", "T"}};
  s.outputs = {{"shape", "T1"}};
  s.constraints = {{"T", TensorTypes(tensor_util::AllElementsAt(version, 13))},
                   {"T1", {Type::Tensor(ElementType::kInt64)}}};
  if (version >= 15) s.attributes = {"start", "end"};
  s.infer = [version](const NodeContext& ctx) -> Result<std::vector<Type>> {
    // The length is known when the input's rank is (ONNX's inference does the same; only a
    // zero-iteration Loop's scan output shapes depend on it).
    Dim length;
    const Type& in = *ctx.inputs[0];
    if (in.shape()) {
      const auto rank = static_cast<int64_t>(in.shape()->size());
      auto clamp = [rank](int64_t axis) {
        if (axis < 0) axis += rank;
        return std::clamp<int64_t>(axis, 0, rank);
      };
      int64_t start = 0, end = rank;
      if (version >= 15) {
        IDEM_ASSIGN_OR_RETURN(start, GetIntAttribute(ctx.node, "start", 0));
        IDEM_ASSIGN_OR_RETURN(end, GetIntAttribute(ctx.node, "end", rank));
      }
      length.value = std::max<int64_t>(clamp(end) - clamp(start), 0);
    }
    return std::vector<Type>{Type::Tensor(ElementType::kInt64, std::vector<Dim>{length})};
  };
  s.create = [](const NodeContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    IDEM_ASSIGN_OR_RETURN(int64_t start, GetIntAttribute(ctx.node, "start", 0));
    std::optional<int64_t> end;
    if (ctx.node.FindAttribute("end") != nullptr) {
      IDEM_ASSIGN_OR_RETURN(end, GetIntAttribute(ctx.node, "end", std::nullopt));
    }
    return MakeKernel<ShapeKernel>(start, end);
  };
  return s;
}

// ---- Unsqueeze --------------------------------------------------------------------------------

std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> out;
  if (t.element_type() == ElementType::kInt32) {
    for (int32_t v : t.data_as<int32_t>()) out.push_back(v);
  } else {
    for (int64_t v : t.data_as<int64_t>()) out.push_back(v);
  }
  return out;
}

Result<std::vector<int64_t>> UnsqueezedShape(std::span<const int64_t> shape,
                                             std::vector<int64_t> axes) {
  const auto rank = static_cast<int64_t>(shape.size() + axes.size());
  std::vector<uint8_t> inserted(static_cast<size_t>(rank), 0);
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("axis {} is outside [-{}, {}]", a, rank, rank - 1));
    }
    if (a < 0) a += rank;
    if (inserted[static_cast<size_t>(a)]) {
      return Status(StatusCode::kInvalidArgument, fmt::format("axis {} is repeated", a));
    }
    inserted[static_cast<size_t>(a)] = 1;
  }
  std::vector<int64_t> out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) {
    out.push_back(inserted[static_cast<size_t>(i)] ? 1 : shape[next++]);
  }
  return out;
}

class UnsqueezeKernel final : public Kernel {
 public:
  explicit UnsqueezeKernel(std::optional<std::vector<int64_t>> axes) : axes_(std::move(axes)) {}
  Status Run(std::span<const Value* const> inputs, std::span<Value> outputs) const override {
    const Tensor& t = inputs[0]->tensor();
    std::vector<int64_t> axes;
    if (axes_) {
      axes = *axes_;
    } else {
      const Tensor& a = inputs[1]->tensor();
      if (a.rank() > 1) {
        return Status(StatusCode::kInvalidArgument, "'axes' must be a 1-D tensor");
      }
      axes = ReadInts(a);
    }
    IDEM_ASSIGN_OR_RETURN(std::vector<int64_t> shape, UnsqueezedShape(t.shape(), std::move(axes)));
    IDEM_ASSIGN_OR_RETURN(outputs[0], tensor_util::Reshaped(t, std::move(shape)));
    return {};
  }

 private:
  std::optional<std::vector<int64_t>> axes_;  // version 11: the attribute
};

KernelSchema UnsqueezeSchema(int version) {
  KernelSchema s;
  s.op_type = "Unsqueeze";
  s.since_version = version;
  s.inputs = {{"data", "T"}};
  if (version >= 13) s.inputs.push_back({"axes", "tensor(int64)"});
  s.outputs = {{"expanded", "T"}};
  s.constraints = {{"T", TensorTypes(tensor_util::AllElementsAt(version, 13))},
                   {"tensor(int64)", {Type::Tensor(ElementType::kInt64)}}};
  if (version < 13) s.attributes = {"axes"};
  s.infer = [version](const NodeContext& ctx) -> Result<std::vector<Type>> {
    // Unsqueeze-1/11 (axes attribute) on an input of known rank: the output's dims, as ONNX's
    // inference gives them (axes that are an input, 13+, are not known while planning).
    const Type& in = *ctx.inputs[0];
    const Attribute* a = ctx.node.FindAttribute("axes");
    if (version < 13 && in.shape() && a != nullptr && a->kind == Attribute::Kind::kInts) {
      const auto rank = static_cast<int64_t>(in.shape()->size() + a->ints.size());
      std::vector<uint8_t> inserted(static_cast<size_t>(rank), 0);
      bool valid = true;
      for (int64_t axis : a->ints) {
        if (axis < 0) axis += rank;
        if (axis < 0 || axis >= rank || inserted[static_cast<size_t>(axis)]) {
          valid = false;  // the kernel's creation reports it
          break;
        }
        inserted[static_cast<size_t>(axis)] = 1;
      }
      if (valid) {
        std::vector<Dim> dims;
        size_t next = 0;
        for (int64_t i = 0; i < rank; ++i) {
          dims.push_back(inserted[static_cast<size_t>(i)] ? Dim{1, {}} : (*in.shape())[next++]);
        }
        return std::vector<Type>{Type::Tensor(in.element_type(), std::move(dims))};
      }
    }
    return std::vector<Type>{Type::Tensor(in.element_type())};
  };
  s.create = [version](const NodeContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    if (version >= 13) return MakeKernel<UnsqueezeKernel>(std::nullopt);
    const Attribute* a = ctx.node.FindAttribute("axes");
    if (a == nullptr || a->kind != Attribute::Kind::kInts) {
      return Status(StatusCode::kInvalidModel, "attribute 'axes' (ints) is required");
    }
    if (version < 11) {
      // Unsqueeze-1: "a list of non-negative integers" (negative axes arrive with version 11).
      for (int64_t axis : a->ints) {
        if (axis < 0) {
          return Status(StatusCode::kInvalidModel,
                        fmt::format("axes holds {}; Unsqueeze-1 takes non-negative axes", axis));
        }
      }
    }
    return MakeKernel<UnsqueezeKernel>(a->ints);
  };
  return s;
}

// ---- Slice ------------------------------------------------------------------------------------

// Slice-1 takes starts, ends and axes as attributes (no steps); later versions as inputs.
struct SliceAttributes {
  std::vector<int64_t> starts, ends;
  std::optional<std::vector<int64_t>> axes;
};

class SliceKernel final : public Kernel {
 public:
  explicit SliceKernel(std::optional<SliceAttributes> attributes)
      : attributes_(std::move(attributes)) {}

  Status RunWith(RunContext& ctx, std::span<const Value* const> inputs,
                 std::span<Value> outputs) const override {
    const Tensor& t = inputs[0]->tensor();
    const auto shape = t.shape();
    const auto rank = static_cast<int64_t>(shape.size());
    std::vector<int64_t> starts, ends, axes, steps;
    if (attributes_) {
      starts = attributes_->starts;
      ends = attributes_->ends;
      if (attributes_->axes) axes = *attributes_->axes;
    } else {
      starts = ReadInts(inputs[1]->tensor());
      ends = ReadInts(inputs[2]->tensor());
      if (inputs.size() > 3 && inputs[3] != nullptr) axes = ReadInts(inputs[3]->tensor());
      if (inputs.size() > 4 && inputs[4] != nullptr) steps = ReadInts(inputs[4]->tensor());
    }
    const bool axes_given =
        attributes_ ? attributes_->axes.has_value() : inputs.size() > 3 && inputs[3] != nullptr;
    if (!axes_given) {
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (attributes_ || !(inputs.size() > 4 && inputs[4] != nullptr)) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size()) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("starts, ends, axes and steps must have one length (got {}, {}, "
                                "{}, {})",
                                starts.size(), ends.size(), axes.size(), steps.size()));
    }
    std::vector<int64_t> begin(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
    std::vector<int64_t> out_shape(shape.begin(), shape.end());
    std::vector<uint8_t> seen(static_cast<size_t>(rank), 0);
    for (size_t k = 0; k < starts.size(); ++k) {
      int64_t axis = axes[k];
      if (axis < -rank || axis >= rank) {
        return Status(StatusCode::kInvalidArgument,
                      fmt::format("axis {} is outside [-{}, {}]", axis, rank, rank - 1));
      }
      if (axis < 0) axis += rank;
      const auto a = static_cast<size_t>(axis);
      if (seen[a])
        return Status(StatusCode::kInvalidArgument, fmt::format("axis {} is repeated", axis));
      seen[a] = 1;
      const int64_t dim = shape[a];
      const int64_t st = steps[k];
      if (st == 0) return Status(StatusCode::kInvalidArgument, "a step of 0 is not allowed");
      int64_t s = starts[k], e = ends[k];
      // Clamping as the spec states (after adding dim to negative values).
      if (s < 0) s += dim;
      if (e < 0) e += dim;
      if (st > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
      }
      // ceil(distance / |step|) without overflow: a step of INT64_MAX or INT64_MIN is valid (one
      // element), and neither `distance + step - 1` nor `-step` may be computed in int64.
      int64_t count = 0;
      if (st > 0 && e > s) {
        count =
            static_cast<int64_t>(static_cast<uint64_t>(e - s - 1) / static_cast<uint64_t>(st)) + 1;
      }
      if (st < 0 && s > e) {
        const uint64_t magnitude = uint64_t{0} - static_cast<uint64_t>(st);
        count = static_cast<int64_t>(static_cast<uint64_t>(s - e - 1) / magnitude) + 1;
      }
      begin[a] = s;
      step[a] = st;
      out_shape[a] = count;
    }
    uint64_t total = 1;
    for (int64_t d : out_shape) total *= static_cast<uint64_t>(d);
    const ElementType type = t.element_type();
    IDEM_ASSIGN_OR_RETURN(uint64_t bytes, TensorBytes(type, total, ctx.limits()));
    IDEM_RETURN_IF_ERROR(ctx.CheckAllocation(bytes));
    if (total == 0) {
      // Nothing to gather (the input may be empty with huge dims, [0, 2^60, 4]).
      if (type == ElementType::kString) {
        IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeStringTensor(std::move(out_shape), {}));
      } else {
        IDEM_ASSIGN_OR_RETURN(outputs[0], Value::MakeTensor(type, std::move(out_shape), Buffer()));
      }
      return {};
    }
    // Source strides (products of dims, which fit in int64 for any valid tensor).
    std::vector<int64_t> stride(static_cast<size_t>(rank), 1);
    for (int64_t d = rank - 1; d > 0; --d) stride[d - 1] = stride[d] * shape[d];
    std::vector<int64_t> index(static_cast<size_t>(rank), 0);
    auto source_of = [&]() {
      int64_t off = 0;
      for (size_t d = 0; d < index.size(); ++d) off += (begin[d] + index[d] * step[d]) * stride[d];
      return off;
    };
    auto advance = [&]() {
      for (size_t d = index.size(); d-- > 0;) {
        if (++index[d] < out_shape[d]) return;
        index[d] = 0;
      }
    };
    if (type == ElementType::kString) {
      std::vector<std::string> strings;
      strings.reserve(total);
      auto src = t.strings();
      for (uint64_t i = 0; i < total; ++i, advance()) {
        strings.push_back(src[static_cast<size_t>(source_of())]);
      }
      IDEM_ASSIGN_OR_RETURN(outputs[0],
                            Value::MakeStringTensor(std::move(out_shape), std::move(strings)));
      return {};
    }
    const int bits = ElementBits(type);
    if (bits % 8 != 0) {
      return Status(StatusCode::kUnsupported, "Slice of sub-byte element types");
    }
    const size_t size = static_cast<size_t>(bits / 8);
    std::byte* out = nullptr;
    IDEM_ASSIGN_OR_RETURN(Buffer buffer, Buffer::Allocate(bytes, &out));
    const std::byte* src = t.data().data();
    for (uint64_t i = 0; i < total; ++i, advance()) {
      std::memcpy(out + i * size, src + static_cast<size_t>(source_of()) * size, size);
    }
    IDEM_ASSIGN_OR_RETURN(outputs[0],
                          Value::MakeTensor(type, std::move(out_shape), std::move(buffer)));
    return {};
  }

 private:
  std::optional<SliceAttributes> attributes_;  // Slice-1
};

Result<std::vector<int64_t>> RequiredInts(const NodeDef& node, const std::string& name) {
  const Attribute* a = node.FindAttribute(name);
  if (a == nullptr || a->kind != Attribute::Kind::kInts) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("attribute {} (ints) is required", QuoteName(name)));
  }
  return a->ints;
}

KernelSchema SliceSchema(int version) {
  KernelSchema s;
  s.op_type = "Slice";
  s.since_version = version;
  if (version == 1) {
    s.inputs = {{"data", "T"}};
    s.attributes = {"starts", "ends", "axes"};
  } else {
    s.inputs = {{"data", "T"},
                {"starts", "Tind"},
                {"ends", "Tind"},
                {"axes", "Tind", FormalParameter::Arity::kOptional},
                {"steps", "Tind", FormalParameter::Arity::kOptional}};
  }
  s.outputs = {{"output", "T"}};
  std::vector<ElementType> elements = BaseElementTypes();
  if (version >= 13) elements.push_back(ElementType::kBfloat16);
  s.constraints = {{"T", TensorTypes(elements)}};
  if (version > 1) {
    s.constraints.push_back(
        {"Tind", TensorTypes(std::vector<ElementType>{ElementType::kInt32, ElementType::kInt64})});
  }
  s.infer = [](const NodeContext& ctx) -> Result<std::vector<Type>> {
    const Type& in = *ctx.inputs[0];
    if (in.shape()) {
      return std::vector<Type>{
          Type::Tensor(in.element_type(), std::vector<Dim>(in.shape()->size()))};
    }
    return std::vector<Type>{Type::Tensor(in.element_type())};
  };
  s.create = [version](const NodeContext& ctx) -> Result<std::unique_ptr<Kernel>> {
    if (version > 1) return MakeKernel<SliceKernel>(std::nullopt);
    SliceAttributes attributes;
    IDEM_ASSIGN_OR_RETURN(attributes.starts, RequiredInts(ctx.node, "starts"));
    IDEM_ASSIGN_OR_RETURN(attributes.ends, RequiredInts(ctx.node, "ends"));
    if (ctx.node.FindAttribute("axes") != nullptr) {
      IDEM_ASSIGN_OR_RETURN(attributes.axes, RequiredInts(ctx.node, "axes"));
    }
    if (attributes.ends.size() != attributes.starts.size() ||
        (attributes.axes && attributes.axes->size() != attributes.starts.size())) {
      return Status(StatusCode::kInvalidModel,
                    "attributes 'starts', 'ends' and 'axes' must have one length");
    }
    return MakeKernel<SliceKernel>(std::move(attributes));
  };
  return s;
}

}  // namespace

void RegisterShapeKernels(KernelRegistry& registry) {
  for (int version : {1, 13, 15, 19, 21, 23, 24, 25}) registry.Register(ShapeSchema(version));
  for (int version : {1, 11, 13, 21, 23, 24, 25}) registry.Register(UnsqueezeSchema(version));
  for (int version : {1, 10, 11, 13}) registry.Register(SliceSchema(version));
}

}  // namespace idem
