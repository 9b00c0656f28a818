#include "idem/type.h"

#include <fmt/format.h>

namespace idem {

struct Type::Node {
  ValueKind kind = ValueKind::kTensor;
  ElementType element_type = ElementType::kUndefined;
  std::optional<std::vector<Dim>> shape;
  Type element;  // for sequence / optional; placeholder otherwise
  int depth = 1;
};

Type::Type() : node_(nullptr) {}

Type Type::Tensor(ElementType element_type, std::optional<std::vector<Dim>> shape) {
  auto node = std::make_shared<Node>();
  node->kind = ValueKind::kTensor;
  node->element_type = element_type;
  node->shape = std::move(shape);
  return Type(std::move(node));
}

Type Type::Sequence(Type element) {
  auto node = std::make_shared<Node>();
  node->kind = ValueKind::kSequence;
  node->depth = element.depth() + 1;
  node->element = std::move(element);
  return Type(std::move(node));
}

Type Type::Optional(Type element) {
  auto node = std::make_shared<Node>();
  node->kind = ValueKind::kOptional;
  node->depth = element.depth() + 1;
  node->element = std::move(element);
  return Type(std::move(node));
}

// A null node_ behaves as tensor(undefined) with unknown shape.
ValueKind Type::kind() const { return node_ ? node_->kind : ValueKind::kTensor; }
ElementType Type::element_type() const {
  return node_ ? node_->element_type : ElementType::kUndefined;
}
const std::optional<std::vector<Dim>>& Type::shape() const {
  static const std::optional<std::vector<Dim>> kUnknown;
  return node_ ? node_->shape : kUnknown;
}
const Type& Type::element() const {
  static const Type kPlaceholder;
  return node_ ? node_->element : kPlaceholder;
}
int Type::depth() const { return node_ ? node_->depth : 1; }

bool Type::SameStructure(const Type& other) const {
  if (kind() != other.kind()) return false;
  if (is_tensor()) return element_type() == other.element_type();
  return element().SameStructure(other.element());
}

bool Type::CompatibleWith(const Type& other) const {
  if (kind() != other.kind()) return false;
  if (!is_tensor()) return element().CompatibleWith(other.element());
  if (element_type() != other.element_type()) return false;
  if (!shape() || !other.shape()) return true;
  if (shape()->size() != other.shape()->size()) return false;
  for (size_t i = 0; i < shape()->size(); ++i) {
    const Dim& a = (*shape())[i];
    const Dim& b = (*other.shape())[i];
    if (a.value && b.value && *a.value != *b.value) return false;
  }
  return true;
}

std::string Type::ToString() const {
  switch (kind()) {
    case ValueKind::kTensor:
      return fmt::format("tensor({})", ElementTypeName(element_type()));
    case ValueKind::kSequence:
      return fmt::format("seq({})", element().ToString());
    case ValueKind::kOptional:
      return fmt::format("optional({})", element().ToString());
  }
  return "?";
}

std::string Type::ToShortString() const {
  switch (kind()) {
    case ValueKind::kTensor: {
      std::string out(ElementTypeName(element_type()));
      if (!shape()) return out + "[?]";
      out += '[';
      for (size_t i = 0; i < shape()->size(); ++i) {
        const Dim& d = (*shape())[i];
        if (i) out += ',';
        out += d.value ? std::to_string(*d.value) : (d.param.empty() ? "?" : d.param);
      }
      return out + ']';
    }
    case ValueKind::kSequence:
      return fmt::format("seq({})", element().ToShortString());
    case ValueKind::kOptional:
      return fmt::format("optional({})", element().ToShortString());
  }
  return "?";
}

}  // namespace idem
