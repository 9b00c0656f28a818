// Values: construction (MakeTensor, MakeSequence, MakeOptional and the checks they make), the
// storage of tensors (inline or heap dims, strings) and sequences (inline or heap handles), and
// the byte counts budgets read. The node allocator behind every Value is value_node_cache.cc;
// comparison is value_compare.cc, printing value_format.cc.
#include "idem/value.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <utility>
#include <variant>

#include "src/core/block_cache.h"

namespace idem {

static_assert(static_cast<size_t>(ValueKind::kTensor) == 0 &&
                  static_cast<size_t>(ValueKind::kSequence) == 1 &&
                  static_cast<size_t>(ValueKind::kOptional) == 2,
              "Value::kind() maps the payload's index to ValueKind");

namespace {

// Product of dims with overflow and sign checks. The rule does not depend on the order of the
// dims: the product of the non-zero dims must fit in int64 even when a zero dim makes the element
// count 0 ([0, 2^62, 2^62] and [2^62, 2^62, 0] are both refused).
Result<int64_t> CheckedElementCount(std::span<const int64_t> shape) {
  int64_t nonzero_product = 1;
  bool has_zero = false;
  for (int64_t d : shape) {
    if (d < 0) return Status(StatusCode::kInvalidArgument, fmt::format("negative dim {}", d));
    if (d == 0) {
      has_zero = true;
      continue;
    }
    if (nonzero_product > std::numeric_limits<int64_t>::max() / d) {
      return Status(StatusCode::kOutOfRange, "element count overflows int64");
    }
    nonzero_product *= d;
  }
  return has_zero ? 0 : nonzero_product;
}

// A tensor's bytes as run-time budgets count them (see Value::BudgetBytes). Includes a fixed
// per-Value overhead (node, shape) so that many empty tensors still cost, and the strings'
// contents, so a string tensor cannot hold gigabytes on a budget of 64 bytes per element.
// Heap bytes are counted as the block cache takes them (header and size class included; the
// dims of ranks over four are one more block), which over-counts borrowed or mapped bytes.
uint64_t BlockBytes(size_t size) {
  if (size == 0) return 0;
  const size_t c = block_cache::ClassBytes(size);
  return c != 0 ? c : size + block_cache::kHeaderBytes;
}

uint64_t TensorBytesForBudget(const Tensor& t) {
  const uint64_t overhead =
      Value::kBudgetOverhead + (t.rank() > 4 ? BlockBytes(8 * t.rank()) : 8 * t.rank());
  if (t.element_type() != ElementType::kString) return BlockBytes(t.data().size()) + overhead;
  return static_cast<uint64_t>(t.element_count()) * Value::kBudgetStringElement + t.string_bytes() +
         overhead;
}

// A string tensor's strings and the sum of their lengths, computed once when it is made, so
// budgets read it in O(1). Tensor::strings_ points at the vector base of one of these.
struct StringStore : std::vector<std::string> {
  explicit StringStore(std::vector<std::string> strings)
      : std::vector<std::string>(std::move(strings)) {
    for (const std::string& s : *this) content_bytes += s.size();
  }
  uint64_t content_bytes = 0;
};

}  // namespace

std::span<const std::string> Tensor::strings() const {
  if (!strings_) return {};
  return *strings_;
}

uint64_t Tensor::string_bytes() const {
  // Every strings_ is made by MakeStringTensor from a StringStore.
  return strings_ ? static_cast<const StringStore&>(*strings_).content_bytes : 0;
}

// ---- Tensor storage ---------------------------------------------------------------------------

Tensor::Tensor(const Tensor& other)
    : element_type_(other.element_type_),
      element_count_(other.element_count_),
      data_(other.data_),
      strings_(other.strings_) {
  SetShape(other.shape());
}

Tensor::Tensor(Tensor&& other) noexcept
    : element_type_(other.element_type_),
      element_count_(other.element_count_),
      data_(std::move(other.data_)),
      strings_(std::move(other.strings_)) {
  TakeDims(other);
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this == &other) return *this;
  DestroyDims();
  TakeDims(other);
  element_type_ = other.element_type_;
  element_count_ = other.element_count_;
  data_ = std::move(other.data_);
  strings_ = std::move(other.strings_);
  return *this;
}

Tensor::~Tensor() { DestroyDims(); }

void Tensor::TakeDims(Tensor& other) noexcept {
  if (other.rank_ > kInlineRank) {
    heap_dims_ = other.heap_dims_;  // the array changes hands
  } else {
    std::copy_n(other.inline_dims_, other.rank_, inline_dims_);
  }
  rank_ = other.rank_;
  other.rank_ = 0;
}

void Tensor::DestroyDims() {
  if (rank_ > kInlineRank) block_cache::FreeScratch(reinterpret_cast<std::byte*>(heap_dims_));
  rank_ = 0;
}

// Preconditions (both overloads): no dims are stored (rank_ == 0) and shape.size() fits uint32
// (MakeTensor checks it).
void Tensor::SetShape(std::span<const int64_t> shape) {
  int64_t* dims = inline_dims_;
  if (shape.size() > kInlineRank) {
    std::byte* array = block_cache::AllocateScratch(shape.size() * sizeof(int64_t));
    if (array == nullptr) throw std::bad_alloc();
    heap_dims_ = reinterpret_cast<int64_t*>(array);
    dims = heap_dims_;
  }
  std::copy(shape.begin(), shape.end(), dims);
  rank_ = static_cast<uint32_t>(shape.size());
}

void Tensor::SetShape(std::vector<int64_t>&& shape) { SetShape(std::span<const int64_t>(shape)); }

// ---- Sequence storage -------------------------------------------------------------------------

Sequence::Sequence(const Sequence& other)
    : element_type_(other.element_type_), total_bytes_(other.total_bytes_) {
  Reserve(other.size_);
  for (const Value& v : other.values()) PushBackUnchecked(v);
}

void Sequence::TakeValues(Sequence& other) noexcept {
  if (other.heap_ != nullptr) {
    heap_ = std::exchange(other.heap_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, kInlineValues);
  } else {
    // Inline handles fit: moving them allocates nothing.
    for (Value& v : std::span<Value>(other.inline_values(), other.size_)) {
      PushBackUnchecked(std::move(v));
    }
    other.Clear();
  }
}

Sequence::Sequence(Sequence&& other) noexcept
    : element_type_(other.element_type_), total_bytes_(std::exchange(other.total_bytes_, 0)) {
  TakeValues(other);
}

Sequence& Sequence::operator=(const Sequence& other) {
  if (this != &other) *this = Sequence(other);
  return *this;
}

Sequence& Sequence::operator=(Sequence&& other) noexcept {
  if (this == &other) return *this;
  Clear();
  if (heap_ != nullptr) {
    std::allocator<Value>().deallocate(heap_, capacity_);
    heap_ = nullptr;
    capacity_ = kInlineValues;
  }
  element_type_ = other.element_type_;
  total_bytes_ = std::exchange(other.total_bytes_, 0);
  TakeValues(other);
  return *this;
}

Sequence::~Sequence() {
  Clear();
  if (heap_ != nullptr) std::allocator<Value>().deallocate(heap_, capacity_);
}

void Sequence::Clear() {
  std::destroy_n(data(), size_);
  size_ = 0;
}

void Sequence::Reserve(size_t capacity) {
  if (capacity <= capacity_) return;
  Value* fresh = std::allocator<Value>().allocate(capacity);  // may throw; nothing changed yet
  Value* old = data();
  std::uninitialized_move_n(old, size_, fresh);  // moving a handle cannot throw
  std::destroy_n(old, size_);
  if (heap_ != nullptr) std::allocator<Value>().deallocate(heap_, capacity_);
  heap_ = fresh;
  capacity_ = capacity;
}

void Sequence::PushBackUnchecked(Value&& value) {
  std::construct_at(data() + size_, std::move(value));
  ++size_;
}

void Sequence::PushBackUnchecked(const Value& value) {
  std::construct_at(data() + size_, value);
  ++size_;
}

void Sequence::Insert(size_t index, Value&& value) {
  // Geometric growth keeps a run of appends linear, as std::vector::insert did.
  if (size_ == capacity_) Reserve(capacity_ * 2);
  Value* d = data();
  if (index == size_) {
    std::construct_at(d + size_, std::move(value));
  } else {
    std::construct_at(d + size_, std::move(d[size_ - 1]));
    std::move_backward(d + index, d + size_ - 1, d + size_);
    d[index] = std::move(value);
  }
  ++size_;
}

namespace {

// The checks every non-string tensor passes: a valid element type, a rank that fits, dims whose
// product fits, and exactly the bytes they need. Returns the element count.
Result<int64_t> CheckTensor(ElementType type, std::span<const int64_t> shape, size_t data_size) {
  if (type == ElementType::kString || ElementBits(type) == 0) [[unlikely]] {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("MakeTensor: element type {} needs MakeStringTensor or is invalid",
                              ElementTypeName(type)));
  }
  if (shape.size() > std::numeric_limits<uint32_t>::max()) [[unlikely]] {
    return Status(StatusCode::kOutOfRange, fmt::format("rank {} is too large", shape.size()));
  }
  IDEM_ASSIGN_OR_RETURN(int64_t count, CheckedElementCount(shape));
  auto bytes = PackedByteSize(type, static_cast<uint64_t>(count));
  if (!bytes || *bytes != data_size) [[unlikely]] {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("tensor({}) with {} elements needs {} bytes, got {}",
                              ElementTypeName(type), count, bytes ? *bytes : 0, data_size));
  }
  return count;
}

}  // namespace

Result<Value> Value::MakeTensor(ElementType type, std::vector<int64_t> shape, Buffer data) {
  IDEM_ASSIGN_OR_RETURN(int64_t count, CheckTensor(type, shape, data.size()));
  auto node = NewNode();
  Tensor& t = node->payload.emplace<Tensor>();
  t.element_type_ = type;
  t.SetShape(std::move(shape));
  t.element_count_ = count;
  t.data_ = std::move(data);
  return Value(std::move(node));
}

Result<Value> Value::MakeTensorFromDims(ElementType type, std::span<const int64_t> shape,
                                        Buffer data) {
  IDEM_ASSIGN_OR_RETURN(int64_t count, CheckTensor(type, shape, data.size()));
  auto node = NewNode();
  Tensor& t = node->payload.emplace<Tensor>();
  t.element_type_ = type;
  t.SetShape(shape);
  t.element_count_ = count;
  t.data_ = std::move(data);
  return Value(std::move(node));
}

Result<Value> Value::MakeStringTensor(std::vector<int64_t> shape,
                                      std::vector<std::string> strings) {
  if (shape.size() > std::numeric_limits<uint32_t>::max()) {
    return Status(StatusCode::kOutOfRange, fmt::format("rank {} is too large", shape.size()));
  }
  IDEM_ASSIGN_OR_RETURN(int64_t count, CheckedElementCount(shape));
  if (static_cast<uint64_t>(count) != strings.size()) {
    return Status(
        StatusCode::kInvalidArgument,
        fmt::format("tensor(string) with {} elements got {} strings", count, strings.size()));
  }
  auto node = NewNode();
  Tensor& t = node->payload.emplace<Tensor>();
  t.element_type_ = ElementType::kString;
  t.SetShape(std::move(shape));
  t.element_count_ = count;
  t.strings_ = std::make_shared<const StringStore>(std::move(strings));
  return Value(std::move(node));
}

namespace {

// The checks of MakeSequence on element `i`.
Status CheckSequenceElement(ElementType element_type, size_t i, const Value* v) {
  if (v == nullptr || v->is_null() || !v->is_tensor()) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("sequence element {} is not a tensor", i));
  }
  if (v->tensor().element_type() != element_type) {
    return Status(
        StatusCode::kInvalidArgument,
        fmt::format("sequence of tensor({}) cannot hold element {} of tensor({})",
                    ElementTypeName(element_type), i, ElementTypeName(v->tensor().element_type())));
  }
  return {};
}

Status CheckSequenceElementType(ElementType element_type) {
  if (ElementTypeName(element_type) == "invalid" || element_type == ElementType::kUndefined) {
    return Status(StatusCode::kInvalidArgument, "sequence element type is undefined");
  }
  return {};
}

}  // namespace

Result<Value> Value::MakeSequence(ElementType element_type, std::vector<Value> tensors) {
  IDEM_RETURN_IF_ERROR(CheckSequenceElementType(element_type));
  for (size_t i = 0; i < tensors.size(); ++i) {
    IDEM_RETURN_IF_ERROR(CheckSequenceElement(element_type, i, &tensors[i]));
  }
  auto node = NewNode();
  Sequence& s = node->payload.emplace<Sequence>();
  s.element_type_ = element_type;
  s.Reserve(tensors.size());
  for (Value& v : tensors) {
    s.total_bytes_ += TensorBytesForBudget(v.tensor());
    s.PushBackUnchecked(std::move(v));
  }
  return Value(std::move(node));
}

Result<Value> Value::MakeSequenceFrom(ElementType element_type,
                                      std::span<const Value* const> tensors) {
  IDEM_RETURN_IF_ERROR(CheckSequenceElementType(element_type));
  for (size_t i = 0; i < tensors.size(); ++i) {
    IDEM_RETURN_IF_ERROR(CheckSequenceElement(element_type, i, tensors[i]));
  }
  auto node = NewNode();
  Sequence& s = node->payload.emplace<Sequence>();
  s.element_type_ = element_type;
  s.Reserve(tensors.size());
  for (const Value* v : tensors) {
    s.total_bytes_ += TensorBytesForBudget(v->tensor());
    s.PushBackUnchecked(*v);
  }
  return Value(std::move(node));
}

uint64_t Value::BudgetBytesSlow() const {
  if (!node_) return 0;
  const auto& payload = node_->payload;
  if (const Tensor* t = std::get_if<Tensor>(&payload)) return TensorBytesForBudget(*t);
  if (const Sequence* s = std::get_if<Sequence>(&payload)) return kBudgetOverhead + s->total_bytes_;
  const Optional& o = std::get<Optional>(payload);
  // Depth: an optional holds no optional. An empty one still holds its node and type.
  return kBudgetOverhead + (o.has_value() ? o.value().BudgetBytes() : 0);
}

bool Value::InsertIntoUnsharedSequence(size_t index, Value tensor) {
  // use_count() == 1: no other handle (in any thread) refers to the node, so mutating it is
  // invisible to everyone but this handle's owner.
  if (!node_ || node_.use_count() != 1 || kind() != ValueKind::kSequence) return false;
  if (tensor.is_null() || !tensor.is_tensor()) return false;
  auto& s = std::get<Sequence>(const_cast<Node&>(*node_).payload);
  if (tensor.tensor().element_type() != s.element_type_ || index > s.size_) return false;
  const uint64_t bytes = TensorBytesForBudget(tensor.tensor());
  if (index == s.size_ && s.size_ < s.capacity_) {
    s.PushBackUnchecked(std::move(tensor));  // appending with room: the common case
  } else {
    s.Insert(index, std::move(tensor));  // may throw std::bad_alloc; then nothing changed
  }
  s.total_bytes_ += bytes;
  return true;
}

Value Value::TakeOptionalElement() && {
  std::shared_ptr<const Node> node = std::move(node_);
  // use_count() == 1: no other handle (in any thread) refers to the optional, so taking its
  // element is invisible to everyone else (the node dies right after).
  if (node.use_count() == 1) {
    return std::move(std::get<Optional>(const_cast<Node&>(*node).payload).value_);
  }
  return std::get<Optional>(node->payload).value_;
}

namespace {

// Whether `value` has the kind and element types of `type` (shapes are not compared), without
// building the value's Type.
bool HasStructure(const Value& value, const Type& type) {
  if (value.kind() != type.kind()) return false;
  switch (value.kind()) {
    case ValueKind::kTensor:
      return value.tensor().element_type() == type.element_type();
    case ValueKind::kSequence:
      return type.element().is_tensor() &&
             value.sequence().element_type() == type.element().element_type();
    case ValueKind::kOptional:
      return value.optional().element_type().SameStructure(type.element());
  }
  return false;
}

}  // namespace

Result<Value> Value::MakeOptional(Value element) {
  if (element.is_null()) {
    return Status(StatusCode::kInvalidArgument, "an optional cannot hold a null value");
  }
  Type element_type = element.type();
  return MakeOptional(std::move(element), std::move(element_type));
}

Result<Value> Value::MakeOptional(Value element, Type element_type) {
  if (element.is_null() || element.is_optional()) {
    return Status(StatusCode::kInvalidArgument,
                  "an optional holds a tensor or a sequence, not an optional");
  }
  if (!HasStructure(element, element_type)) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("optional of {} cannot hold a {}", element_type.ToString(),
                              element.type().ToString()));
  }
  auto node = NewNode();
  Optional& o = node->payload.emplace<Optional>();
  o.element_type_ = std::move(element_type);
  o.value_ = std::move(element);
  return Value(std::move(node));
}

Result<Value> Value::MakeEmptyOptional(Type element_type) {
  if (element_type.is_optional()) {
    return Status(StatusCode::kInvalidArgument,
                  "an optional holds a tensor or a sequence, not an optional");
  }
  auto node = NewNode();
  Optional& o = node->payload.emplace<Optional>();
  o.element_type_ = std::move(element_type);
  return Value(std::move(node));
}

Type Value::type() const {
  switch (kind()) {
    case ValueKind::kTensor: {
      std::vector<Dim> dims;
      for (int64_t d : tensor().shape()) dims.push_back(Dim{d, {}});
      return Type::Tensor(tensor().element_type(), std::move(dims));
    }
    case ValueKind::kSequence:
      return Type::Sequence(Type::Tensor(sequence().element_type()));
    case ValueKind::kOptional:
      return Type::Optional(optional().element_type());
  }
  return {};
}

}  // namespace idem
