// Types of ONNX values: tensor(elem) with an optional shape, seq(T) and optional(T).
//
// Type is an immutable handle (shared, O(1) to copy, thread-safe to share). Shapes are
// declarations: each dim is a fixed size, a symbolic name (dim_param), or unknown.
#ifndef IDEM_TYPE_H_
#define IDEM_TYPE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "idem/element_type.h"
#include "idem/export.h"

namespace idem {

struct Dim {
  std::optional<int64_t> value;  // fixed size (>= 0) when set
  std::string param;             // symbolic name when non-empty; unknown when neither is set
  bool operator==(const Dim&) const = default;
};

enum class ValueKind { kTensor, kSequence, kOptional };

class IDEM_API Type {
 public:
  // tensor(undefined) without shape; a placeholder only.
  Type();

  static Type Tensor(ElementType element_type,
                     std::optional<std::vector<Dim>> shape = std::nullopt);
  static Type Sequence(Type element);
  static Type Optional(Type element);

  ValueKind kind() const;
  bool is_tensor() const { return kind() == ValueKind::kTensor; }
  bool is_sequence() const { return kind() == ValueKind::kSequence; }
  bool is_optional() const { return kind() == ValueKind::kOptional; }

  // Tensor only: element type and declared shape (nullopt = rank unknown).
  ElementType element_type() const;
  const std::optional<std::vector<Dim>>& shape() const;

  // Sequence and optional only: the contained type.
  const Type& element() const;

  // Nesting depth: tensor 1, seq(tensor) 2, optional(seq(tensor)) 3.
  int depth() const;

  // Same kinds and element types all the way down; shapes are ignored.
  bool SameStructure(const Type& other) const;
  // SameStructure and, where both sides declare a shape, the same rank and no two different fixed
  // dims. Symbolic and unknown dims match anything.
  bool CompatibleWith(const Type& other) const;

  // ONNX notation without shapes: "tensor(float)", "seq(tensor(int64))",
  // "optional(seq(tensor(string)))".
  std::string ToString() const;
  // Short notation with shapes for humans: "float[1,5]", "float[N,3]", "float[?]", "seq(float[?])".
  std::string ToShortString() const;

 private:
  struct Node;
  explicit Type(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  std::shared_ptr<const Node> node_;
};

}  // namespace idem

#endif  // IDEM_TYPE_H_
