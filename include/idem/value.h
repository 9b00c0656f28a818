// Runtime values: tensors, sequences of tensors, and optionals (holding a tensor or a sequence, or
// empty while keeping their type).
//
// A Value is an immutable handle: copying it is one atomic increment, it never copies elements, and
// it is safe to read from many threads at once. Two Values may share storage (Identity returns its
// input's Value; SequenceAt returns the stored tensor; a slice shares its parent's Buffer).
#ifndef IDEM_VALUE_H_
#define IDEM_VALUE_H_

#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "idem/buffer.h"
#include "idem/element_type.h"
#include "idem/export.h"
#include "idem/status.h"
#include "idem/type.h"

namespace idem {

class Tensor;
class Sequence;
class Optional;

class IDEM_API Value {
 public:
  // A null handle; only useful as a placeholder. Every accessor below requires a non-null Value.
  Value() = default;

  // `data` must hold exactly PackedByteSize(type, product(shape)) bytes; dims must be >= 0.
  static Result<Value> MakeTensor(ElementType type, std::vector<int64_t> shape, Buffer data);
  // As above with the dims copied from `shape`, so a kernel building a shape on the stack
  // allocates nothing for it (ranks up to 4 are stored inline).
  static Result<Value> MakeTensorFromDims(ElementType type, std::span<const int64_t> shape,
                                          Buffer data);
  static Result<Value> MakeStringTensor(std::vector<int64_t> shape,
                                        std::vector<std::string> strings);
  // Every element must be a tensor of `element_type`.
  static Result<Value> MakeSequence(ElementType element_type, std::vector<Value> tensors);
  // As above, copying the handles `tensors` point to (no element bytes are copied); none may be
  // null. What SequenceConstruct uses, so it builds no temporary vector.
  static Result<Value> MakeSequenceFrom(ElementType element_type,
                                        std::span<const Value* const> tensors);
  // `element` must be a tensor or a sequence.
  static Result<Value> MakeOptional(Value element);
  // As above with the element's type given (e.g. known at plan time), so no Type is built per
  // call; `element_type` must have the element's structure (kind and element types).
  static Result<Value> MakeOptional(Value element, Type element_type);
  // `element_type` must be a tensor or sequence type.
  static Result<Value> MakeEmptyOptional(Type element_type);

  bool is_null() const { return !node_; }
  // The accessors below are inline (Node is defined at the end of this header): the run loop and
  // kernels call them per value, and an out-of-line call costs more than the access.
  ValueKind kind() const;
  bool is_tensor() const { return kind() == ValueKind::kTensor; }
  bool is_sequence() const { return kind() == ValueKind::kSequence; }
  bool is_optional() const { return kind() == ValueKind::kOptional; }

  // Preconditions: the matching kind.
  const Tensor& tensor() const;
  const Sequence& sequence() const;
  const Optional& optional() const;

  // The value's type; tensor shapes are the concrete shapes.
  Type type() const;

  // True when both handles refer to the same stored value (used to prove zero-copy).
  bool SharesStorageWith(const Value& other) const { return node_ == other.node_; }
  // For kernels: inserts `tensor` at `index` (<= size) of this sequence without copying it, but
  // only when this handle is the sole reference to the sequence, so nothing else can observe the
  // change (Values stay immutable to every holder). Returns false (and changes nothing) when the
  // sequence is shared, not a sequence, or the element type differs.
  bool InsertIntoUnsharedSequence(size_t index, Value tensor);
  // For kernels: consumes this handle (it becomes null) and returns the element of this optional.
  // When this handle was the sole reference to the optional, the element's handle is moved out
  // of it (no reference count changes); otherwise it is copied. Precondition: a non-empty
  // optional.
  Value TakeOptionalElement() &&;
  // Bytes this value holds for run-time budgets, never less than the heap memory it takes: a
  // tensor's buffer as the heap block that holds it (header and size class included, see
  // src/core/block_cache.h; string tensors: 64 bytes per element plus the strings' lengths)
  // plus kBudgetOverhead + 8 per dim (a block for ranks over 4), a sequence kBudgetOverhead
  // plus the sum over its tensors, an optional kBudgetOverhead plus its element. O(1).
  uint64_t BudgetBytes() const;
  // What every Value is charged beyond its elements: its node, shape and buffer ownership take
  // 160-300 bytes of heap (measured by BudgetTest.ChargesCoverTheHeapValuesTake).
  static constexpr uint64_t kBudgetOverhead = 320;
  // What each element of a string tensor is charged beyond its length (the std::string and its
  // heap block's overhead).
  static constexpr uint64_t kBudgetStringElement = 64;

 private:
  // The out-of-line part of BudgetBytes (string tensors, sequences, optionals).
  uint64_t BudgetBytesSlow() const;
  struct Node;
  // A fresh node from the thread's block cache (see value.cc).
  static std::shared_ptr<Node> NewNode();
  explicit Value(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  std::shared_ptr<const Node> node_;
};

class IDEM_API Tensor {
 public:
  // Not `= default`: the union of dims below would make a defaulted constructor deleted.
  Tensor() noexcept {}  // NOLINT(modernize-use-equals-default)
  Tensor(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  ElementType element_type() const { return element_type_; }
  std::span<const int64_t> shape() const {
    return {rank_ <= kInlineRank ? inline_dims_ : heap_dims_, rank_};
  }
  size_t rank() const { return rank_; }
  int64_t element_count() const { return element_count_; }
  // Packed little-endian elements (4- and 2-bit types packed low bits first). Empty for strings.
  const Buffer& data() const { return data_; }
  // Byte strings (any bytes, including NUL and invalid UTF-8). Empty unless a string tensor.
  std::span<const std::string> strings() const;
  // The sum of the strings' lengths (0 unless a string tensor), for budgets. O(1).
  uint64_t string_bytes() const;

  template <typename T>
  std::span<const T> data_as() const {
    return {reinterpret_cast<const T*>(data_.data()), data_.size() / sizeof(T)};
  }

 private:
  friend class Value;
  // Dims of rank <= kInlineRank (nearly every tensor) live inside the Tensor, so making one
  // allocates nothing for its shape; larger ranks keep an array from the thread's block cache
  // (src/core/block_cache.h), so they cost no heap call in a steady state either. rank_ says
  // which member of the union is alive. Four dims keep a Value's node within one 128-byte heap
  // chunk.
  static constexpr uint32_t kInlineRank = 4;
  void SetShape(std::span<const int64_t> shape);
  void SetShape(std::vector<int64_t>&& shape);
  void DestroyDims();
  // Moves `other`'s dims into this tensor, which holds none (rank_ == 0); `other` keeps none.
  void TakeDims(Tensor& other) noexcept;

  ElementType element_type_ = ElementType::kUndefined;
  uint32_t rank_ = 0;
  union {
    int64_t inline_dims_[kInlineRank] = {};
    int64_t* heap_dims_;  // owned when rank_ > kInlineRank
  };
  int64_t element_count_ = 0;
  Buffer data_;
  // Always a StringStore (value.cc) made by MakeStringTensor, which also holds the total length
  // that string_bytes() reads: every assignment of strings_ must make one.
  std::shared_ptr<const std::vector<std::string>> strings_;
};

class IDEM_API Sequence {
 public:
  Sequence() = default;
  Sequence(const Sequence& other);
  Sequence(Sequence&& other) noexcept;
  Sequence& operator=(const Sequence& other);
  Sequence& operator=(Sequence&& other) noexcept;
  ~Sequence();

  ElementType element_type() const { return element_type_; }
  size_t size() const { return size_; }
  const Value& at(size_t index) const { return data()[index]; }
  std::span<const Value> values() const { return {data(), size_}; }
  // Sum of the elements' byte sizes (for run-time budgets), kept up to date in O(1) per insert.
  uint64_t total_bytes() const { return total_bytes_; }

 private:
  friend class Value;
  // Up to kInlineValues handles live inside the Sequence (SequenceConstruct of a few tensors
  // allocates only the Value's node); more go to a heap array that grows geometrically.
  static constexpr size_t kInlineValues = 3;
  const Value* data() const { return heap_ != nullptr ? heap_ : inline_values(); }
  Value* data() { return heap_ != nullptr ? heap_ : inline_values(); }
  const Value* inline_values() const {
    return std::launder(reinterpret_cast<const Value*>(inline_));
  }
  Value* inline_values() { return std::launder(reinterpret_cast<Value*>(inline_)); }
  // Room for `capacity` handles (never shrinks); may throw std::bad_alloc.
  void Reserve(size_t capacity);
  // Appends; precondition: size() < capacity.
  void PushBackUnchecked(Value&& value);
  void PushBackUnchecked(const Value& value);
  void Insert(size_t index, Value&& value);
  void Clear();
  // Takes `other`'s values into this empty sequence: its heap block, or its inline handles
  // moved one by one; `other` is left empty.
  void TakeValues(Sequence& other) noexcept;

  ElementType element_type_ = ElementType::kUndefined;
  Value* heap_ = nullptr;  // null while the handles are inline
  size_t size_ = 0;
  size_t capacity_ = kInlineValues;
  uint64_t total_bytes_ = 0;
  alignas(Value) std::byte inline_[kInlineValues * sizeof(Value)];
};

class IDEM_API Optional {
 public:
  // The contained type: tensor(t) or seq(tensor(t)), also for an empty optional.
  const Type& element_type() const { return element_type_; }
  bool has_value() const { return !value_.is_null(); }
  // Precondition: has_value().
  const Value& value() const { return value_; }

 private:
  friend class Value;
  Type element_type_;
  Value value_;  // null when empty
};

// A Value's storage. Defined here only so the accessors can be inline; not part of the API.
struct Value::Node {
  std::variant<Tensor, Sequence, Optional> payload;
};

inline ValueKind Value::kind() const {
  // The variant's alternatives are in ValueKind order.
  return static_cast<ValueKind>(node_->payload.index());
}
inline const Tensor& Value::tensor() const { return std::get<Tensor>(node_->payload); }
inline const Sequence& Value::sequence() const { return std::get<Sequence>(node_->payload); }
inline const Optional& Value::optional() const { return std::get<Optional>(node_->payload); }
inline uint64_t Value::BudgetBytes() const { return BudgetBytesSlow(); }

// Compares exactly: kind, element type, shape, sequence length, optional presence and bits (a NaN
// equals only a NaN with the same bits; -0.0 differs from 0.0; padding bits of 4- and 2-bit types
// are ignored). Returns nullopt when equal, otherwise a one-line reason naming the first
// difference ("element 3: expected 0x7fc00001, got 0x7fc00000").
IDEM_API std::optional<std::string> DescribeDifference(const Value& expected, const Value& actual);

// Human-readable preview: "[[1, 2, 3, 4, 5]]", truncated after `max_elements` elements.
IDEM_API std::string FormatValue(const Value& value, size_t max_elements = 16);

// A named, typed slot of a graph (an input, output or value_info).
struct ValueInfo {
  std::string name;
  Type type;
};

struct NamedValue {
  std::string name;
  Value value;
};

}  // namespace idem

#endif  // IDEM_VALUE_H_
