#include <fmt/format.h>

#include "src/core/text.h"
#include "src/kernels/kernel.h"

namespace idem {

static_assert(kMaxElementTypeCode < 64, "TypeConstraint::tensor_elements is a 64-bit mask");

bool TypeConstraint::Allows(const Type& type) const {
  if (indexed && type.is_tensor()) {
    const auto code = static_cast<int32_t>(type.element_type());
    return code >= 0 && code < 64 && ((tensor_elements >> code) & 1) != 0;
  }
  for (const Type& t : allowed) {
    if (t.SameStructure(type)) return true;
  }
  return false;
}

void TypeConstraint::Index() {
  tensor_elements = 0;
  for (const Type& t : allowed) {
    if (t.is_tensor()) tensor_elements |= uint64_t{1} << static_cast<int32_t>(t.element_type());
  }
  indexed = true;
}

const TypeConstraint* KernelSchema::FindConstraint(const std::string& param) const {
  for (const TypeConstraint& c : constraints) {
    if (c.param == param) return &c;
  }
  return nullptr;
}

const KernelRegistry& KernelRegistry::Default() {
  static const KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    RegisterIdentityKernels(*r);
    RegisterSequenceKernels(*r);
    RegisterOptionalKernels(*r);
    RegisterControlFlowKernels(*r);
    RegisterConstantKernels(*r);
    RegisterElementwiseKernels(*r);
    RegisterShapeKernels(*r);
    RegisterUnaryKernels(*r);
    RegisterBinaryKernels(*r);
    RegisterCastKernels(*r);
    RegisterTensorKernels(*r);
    RegisterPadKernels(*r);
    RegisterConvKernels(*r);
    RegisterMatMulKernels(*r);
    RegisterNormalizationKernels(*r);
    RegisterPoolKernels(*r);
    RegisterReduceKernels(*r);
    RegisterSoftmaxKernels(*r);
    RegisterRnnKernels(*r);
    RegisterResizeKernels(*r);
    return r;
  }();
  return *registry;
}

void KernelRegistry::Register(KernelSchema schema) {
  if (!schema.prepare) {
    schema.prepare = [infer = schema.infer,
                      create = schema.create](const NodeContext& ctx) -> Result<PreparedNode> {
      PreparedNode prepared;
      IDEM_ASSIGN_OR_RETURN(prepared.inference.types, infer(ctx));
      IDEM_ASSIGN_OR_RETURN(prepared.kernel, create(ctx));
      return prepared;
    };
  }
  for (TypeConstraint& constraint : schema.constraints) constraint.Index();
  auto& versions = schemas_[{schema.domain, schema.op_type}];
  const int since = schema.since_version;
  versions[since] = std::make_unique<KernelSchema>(std::move(schema));
  // Each version ends where the next begins.
  KernelSchema* previous = nullptr;
  for (auto& [v, sch] : versions) {
    if (previous != nullptr) previous->end_version = v - 1;
    sch->end_version = KernelSchema::kMaxOpset;
    previous = sch.get();
  }
}

const KernelSchema* KernelRegistry::Resolve(const std::string& domain, const std::string& op_type,
                                            int64_t opset) const {
  auto it = schemas_.find({domain, op_type});
  if (it == schemas_.end()) return nullptr;
  for (const auto& [since, schema] : it->second) {
    if (since <= opset && opset <= schema->end_version) return schema.get();
  }
  return nullptr;
}

std::vector<const KernelSchema*> KernelRegistry::Versions(const std::string& domain,
                                                          const std::string& op_type) const {
  std::vector<const KernelSchema*> out;
  auto it = schemas_.find({domain, op_type});
  if (it == schemas_.end()) return out;
  for (const auto& [since, schema] : it->second) out.push_back(schema.get());
  return out;
}

std::vector<const KernelSchema*> KernelRegistry::All() const {
  std::vector<const KernelSchema*> out;
  for (const auto& [key, versions] : schemas_) {
    for (const auto& [since, schema] : versions) out.push_back(schema.get());
  }
  return out;
}

std::vector<ElementType> BaseElementTypes() {
  using E = ElementType;
  return {E::kUint8,  E::kUint16, E::kUint32, E::kUint64,    E::kInt8,
          E::kInt16,  E::kInt32,  E::kInt64,  E::kFloat16,   E::kFloat,
          E::kDouble, E::kString, E::kBool,   E::kComplex64, E::kComplex128};
}

std::vector<Type> TensorTypes(std::span<const ElementType> elements) {
  std::vector<Type> out;
  for (ElementType e : elements) out.push_back(Type::Tensor(e));
  return out;
}

std::vector<Type> SequenceTypes(std::span<const ElementType> elements) {
  std::vector<Type> out;
  for (ElementType e : elements) out.push_back(Type::Sequence(Type::Tensor(e)));
  return out;
}

std::vector<Type> OptionalTypes(std::span<const ElementType> elements) {
  std::vector<Type> out;
  for (ElementType e : elements) out.push_back(Type::Optional(Type::Sequence(Type::Tensor(e))));
  for (ElementType e : elements) out.push_back(Type::Optional(Type::Tensor(e)));
  return out;
}

std::vector<Type> Concat(std::initializer_list<std::vector<Type>> parts) {
  std::vector<Type> out;
  for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

Result<int64_t> GetIntAttribute(const NodeDef& node, const std::string& name,
                                std::optional<int64_t> default_value) {
  const Attribute* a = node.FindAttribute(name);
  if (a == nullptr) {
    if (default_value) return *default_value;
    return Status(StatusCode::kInvalidModel,
                  fmt::format("required attribute {} is missing", QuoteName(name)));
  }
  if (a->kind != Attribute::Kind::kInt) {
    return Status(StatusCode::kInvalidModel,
                  fmt::format("attribute {} must be an int", QuoteName(name)));
  }
  return a->i;
}

Result<int64_t> ReadScalarIndex(const Value& value, std::string_view input_name) {
  const Tensor& t = value.tensor();
  if (t.element_count() != 1 || t.rank() > 1) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("input {} must be a scalar (shape []), got {} elements of rank {}",
                              QuoteName(input_name), t.element_count(), t.rank()));
  }
  if (t.element_type() == ElementType::kInt32) return int64_t{t.data_as<int32_t>()[0]};
  if (t.element_type() == ElementType::kInt64) return t.data_as<int64_t>()[0];
  return Status(StatusCode::kInvalidArgument,
                fmt::format("input {} must be int32 or int64", QuoteName(input_name)));
}

}  // namespace idem

namespace idem {

Status RunContext::CheckAllocation(uint64_t bytes) const {
  if (bytes > limits_.max_tensor_bytes) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("a tensor of {} bytes exceeds max_tensor_bytes {}", bytes,
                              limits_.max_tensor_bytes));
  }
  if (bytes > limits_.max_run_bytes || live_bytes_ > limits_.max_run_bytes - bytes) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("allocating {} bytes with {} bytes live exceeds max_run_bytes {}",
                              bytes, live_bytes_, limits_.max_run_bytes));
  }
  return {};
}

Status RunContext::OverBudget() const {
  return Status(StatusCode::kResourceExhausted,
                fmt::format("the run holds {} bytes of live values, over max_run_bytes {}",
                            live_bytes_, limits_.max_run_bytes));
}

Result<uint64_t> TensorBytes(ElementType type, uint64_t count, const Limits& limits,
                             uint64_t string_bytes) {
  if (count > limits.max_elements) {
    return Status(
        StatusCode::kResourceExhausted,
        fmt::format("a tensor of {} elements exceeds max_elements {}", count, limits.max_elements));
  }
  const uint64_t bits = static_cast<uint64_t>(ElementBits(type));
  // count <= max_elements (2^40 by default) keeps the products small; the sum saturates.
  uint64_t bytes = (count * bits + 7) / 8;
  if (type == ElementType::kString &&
      __builtin_add_overflow(count * Value::kBudgetStringElement, string_bytes, &bytes)) {
    bytes = ~uint64_t{0};
  }
  if (bytes > limits.max_tensor_bytes) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("a tensor of {} bytes exceeds max_tensor_bytes {}", bytes,
                              limits.max_tensor_bytes));
  }
  return bytes;
}

}  // namespace idem
