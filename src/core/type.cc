#include "idem/type.h"

#include <fmt/format.h>

#include "src/core/text.h"

namespace idem {

struct Type::Node {
  ValueKind kind = ValueKind::kTensor;
  ElementType element_type = ElementType::kUndefined;
  std::optional<std::vector<Dim>> shape;
  Type element;  // for sequence / optional; placeholder otherwise
  int depth = 1;

  // Unlinks the chain of elements iteratively: destroying a deeply nested Type through the
  // default destructor would recurse once per level.
  ~Node() {
    std::shared_ptr<const Node> next = std::move(element.node_);
    while (next && next.use_count() == 1) {
      // Sole owner: nobody else can reach `next`, so taking its element is safe.
      std::shared_ptr<const Node> after = std::move(const_cast<Node&>(*next).element.node_);
      next = std::move(after);
    }
  }
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

// The walks below are loops, not recursion: a Type's depth is bounded by max_type_depth when it
// comes from a file, but the C++ API can build any depth and nothing here may overflow the stack.

bool Type::SameStructure(const Type& other) const {
  const Type* a = this;
  const Type* b = &other;
  while (true) {
    if (a->kind() != b->kind()) return false;
    if (a->is_tensor()) return a->element_type() == b->element_type();
    a = &a->element();
    b = &b->element();
  }
}

bool Type::CompatibleWith(const Type& other) const {
  const Type* a = this;
  const Type* b = &other;
  while (true) {
    if (a->kind() != b->kind()) return false;
    if (a->is_tensor()) break;
    a = &a->element();
    b = &b->element();
  }
  if (a->element_type() != b->element_type()) return false;
  if (!a->shape() || !b->shape()) return true;
  if (a->shape()->size() != b->shape()->size()) return false;
  for (size_t i = 0; i < a->shape()->size(); ++i) {
    const Dim& x = (*a->shape())[i];
    const Dim& y = (*b->shape())[i];
    if (x.value && y.value && *x.value != *y.value) return false;
  }
  return true;
}

namespace {

// "seq(optional(" ... "))" around the innermost tensor, built without recursion.
template <typename TensorText>
std::string Wrap(const Type& type, TensorText tensor_text) {
  std::string prefix;
  size_t closing = 0;
  const Type* t = &type;
  while (!t->is_tensor()) {
    prefix += t->is_sequence() ? "seq(" : "optional(";
    ++closing;
    t = &t->element();
  }
  return prefix + tensor_text(*t) + std::string(closing, ')');
}

}  // namespace

std::string Type::ToString() const {
  return Wrap(*this, [](const Type& t) {
    return fmt::format("tensor({})", ElementTypeName(t.element_type()));
  });
}

std::string Type::ToShortString() const {
  return Wrap(*this, [](const Type& t) {
    std::string out(ElementTypeName(t.element_type()));
    if (!t.shape()) return out + "[?]";
    out += '[';
    for (size_t i = 0; i < t.shape()->size(); ++i) {
      const Dim& d = (*t.shape())[i];
      if (i) out += ',';
      out += d.value ? std::to_string(*d.value) : (d.param.empty() ? "?" : EscapeText(d.param));
    }
    return out + ']';
  });
}

}  // namespace idem
