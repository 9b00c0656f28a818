#include "idem/value.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <variant>

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
uint64_t TensorBytesForBudget(const Tensor& t) {
  const uint64_t overhead = Value::kBudgetOverhead + 8 * t.rank();
  if (t.element_type() != ElementType::kString) return t.data().size() + overhead;
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

namespace {

// ---- Node allocation ----------------------------------------------------------------------------
//
// Every Value owns one heap block: its Node plus shared_ptr's control block (120 bytes). A run
// creates and frees a few per step, so each thread keeps up to kCachedBlocksPerThread freed
// blocks on a list of its own and reuses them, instead of a malloc/free pair per value (glibc's
// per-size cache is only 7 deep and falls back to its slow path when a run's pattern of sizes
// does not balance). A block freed on another thread joins that thread's list (blocks are
// interchangeable); a thread's list is freed when the thread exits, and blocks freed after that
// go straight back to the heap. At most 64 x 128 bytes = 8 KiB stay cached per thread.
// Sanitizer builds use the heap directly, so use-after-free of a Value stays detectable.
// GCC defines __SANITIZE_*__; clang (14) only answers __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define IDEM_SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define IDEM_SANITIZED_BUILD 1
#endif
#endif
#ifdef IDEM_SANITIZED_BUILD
constexpr bool kCacheNodes = false;
#else
constexpr bool kCacheNodes = true;
#endif
// 120 bytes + glibc's 8-byte header = one 128-byte chunk.
constexpr size_t kNodeBlockBytes = 120;
constexpr uint32_t kCachedBlocksPerThread = 64;

struct FreeBlock {
  FreeBlock* next;
};

// Trivially destructible, so it stays usable while (and after) the thread's destructors run.
struct NodeCache {
  FreeBlock* head = nullptr;
  uint32_t count = 0;
  bool registered = false;  // the reaper below has been constructed for this thread
  bool dead = false;        // the reaper has run: cache nothing more
};
thread_local NodeCache node_cache;

// Frees the thread's cached blocks when the thread exits.
struct NodeCacheReaper {
  ~NodeCacheReaper() {
    NodeCache& c = node_cache;
    c.dead = true;
    while (c.head != nullptr) {
      FreeBlock* b = c.head;
      c.head = b->next;
      ::operator delete(b);  // unsized: clang does not enable sized deallocation by default
    }
    c.count = 0;
  }
};
thread_local NodeCacheReaper node_cache_reaper;

void* AllocateNodeBlock() {
  if constexpr (kCacheNodes) {
    NodeCache& c = node_cache;
    if (FreeBlock* b = c.head; b != nullptr) {
      c.head = b->next;
      --c.count;
      return b;
    }
  }
  return ::operator new(kNodeBlockBytes);
}

void FreeNodeBlock(void* p) {
  if constexpr (kCacheNodes) {
    NodeCache& c = node_cache;
    if (!c.dead && c.count < kCachedBlocksPerThread) {
      if (!c.registered) [[unlikely]] {
        c.registered = true;
        (void)&node_cache_reaper;  // odr-use: constructs it, so its destructor runs at exit
      }
      c.head = new (p) FreeBlock{c.head};
      ++c.count;
      return;
    }
  }
  ::operator delete(p);  // unsized: clang does not enable sized deallocation by default
}

// What allocate_shared uses for a Value's node and control block: fixed-size blocks from the
// thread's cache.
template <typename T>
struct NodeAllocator {
  using value_type = T;
  NodeAllocator() = default;
  template <typename U>
  NodeAllocator(const NodeAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) {
    if (n == 1 && sizeof(T) <= kNodeBlockBytes && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      return static_cast<T*>(AllocateNodeBlock());
    }
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n == 1 && sizeof(T) <= kNodeBlockBytes && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      FreeNodeBlock(p);
      return;
    }
    std::allocator<T>().deallocate(p, n);
  }
  template <typename U>
  bool operator==(const NodeAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace

std::shared_ptr<Value::Node> Value::NewNode() {
  // The block holds the node and shared_ptr's control block; see NodeAllocator.
#if defined(__GLIBCXX__)
  static_assert(
      sizeof(std::_Sp_counted_ptr_inplace<Node, NodeAllocator<Node>, __gnu_cxx::_S_atomic>) <=
          kNodeBlockBytes,
      "a Value's node and control block must fit one cached block");
#endif
  return std::allocate_shared<Node>(NodeAllocator<Node>());
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
    std::construct_at(&heap_dims_, std::move(other.heap_dims_));
  } else {
    std::copy_n(other.inline_dims_, other.rank_, inline_dims_);
  }
  rank_ = other.rank_;
  other.DestroyDims();
}

void Tensor::DestroyDims() {
  if (rank_ > kInlineRank) std::destroy_at(&heap_dims_);
  rank_ = 0;
}

// Preconditions (both overloads): no dims are stored (rank_ == 0) and shape.size() fits uint32
// (MakeTensor checks it).
void Tensor::SetShape(std::span<const int64_t> shape) {
  if (shape.size() > kInlineRank) {
    std::construct_at(&heap_dims_, shape.begin(), shape.end());
  } else {
    std::copy(shape.begin(), shape.end(), inline_dims_);
  }
  rank_ = static_cast<uint32_t>(shape.size());
}

void Tensor::SetShape(std::vector<int64_t>&& shape) {
  if (shape.size() > kInlineRank) {
    std::construct_at(&heap_dims_, std::move(shape));  // adopts the caller's allocation
    rank_ = static_cast<uint32_t>(heap_dims_.size());
  } else {
    SetShape(std::span<const int64_t>(shape));
  }
}

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

namespace {

std::string ShapeString(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

std::string DescribeTensorDifference(const Tensor& e, const Tensor& a) {
  if (e.element_type() != a.element_type()) {
    return fmt::format("element type: expected {}, got {}", ElementTypeName(e.element_type()),
                       ElementTypeName(a.element_type()));
  }
  if (!std::equal(e.shape().begin(), e.shape().end(), a.shape().begin(), a.shape().end())) {
    return fmt::format("shape: expected {}, got {}", ShapeString(e.shape()),
                       ShapeString(a.shape()));
  }
  if (e.element_type() == ElementType::kString) {
    for (size_t i = 0; i < e.strings().size(); ++i) {
      if (e.strings()[i] != a.strings()[i]) {
        return fmt::format("element {}: strings differ ({} vs {} bytes)", i, e.strings()[i].size(),
                           a.strings()[i].size());
      }
    }
    return {};
  }
  const int bits = ElementBits(e.element_type());
  const auto eb = e.data().bytes();
  const auto ab = a.data().bytes();
  if (bits < 8) {
    // Compare element by element so the padding bits of the last byte never matter.
    const int per_byte = 8 / bits;
    const unsigned mask = (1u << bits) - 1;
    for (int64_t i = 0; i < e.element_count(); ++i) {
      const int shift = static_cast<int>(i % per_byte) * bits;
      const unsigned ev = (std::to_integer<unsigned>(eb[i / per_byte]) >> shift) & mask;
      const unsigned av = (std::to_integer<unsigned>(ab[i / per_byte]) >> shift) & mask;
      if (ev != av) return fmt::format("element {}: expected 0x{:x}, got 0x{:x}", i, ev, av);
    }
    return {};
  }
  const size_t width = static_cast<size_t>(bits / 8);
  if (eb.size() == ab.size() && (eb.empty() || std::memcmp(eb.data(), ab.data(), eb.size()) == 0)) {
    return {};
  }
  for (size_t i = 0; i < eb.size() && i < ab.size(); i += width) {
    if (std::memcmp(eb.data() + i, ab.data() + i, width) != 0) {
      std::string ex, ax;
      for (size_t k = width; k-- > 0;) {
        ex += fmt::format("{:02x}", std::to_integer<unsigned>(eb[i + k]));
        ax += fmt::format("{:02x}", std::to_integer<unsigned>(ab[i + k]));
      }
      return fmt::format("element {}: expected bits 0x{}, got 0x{}", i / width, ex, ax);
    }
  }
  return "payload sizes differ";
}

}  // namespace

std::optional<std::string> DescribeDifference(const Value& expected, const Value& actual) {
  if (expected.is_null() || actual.is_null()) {
    if (expected.is_null() && actual.is_null()) return std::nullopt;
    return std::string("one value is missing");
  }
  if (expected.kind() != actual.kind()) {
    return fmt::format("kind: expected {}, got {}", expected.type().ToString(),
                       actual.type().ToString());
  }
  switch (expected.kind()) {
    case ValueKind::kTensor: {
      std::string why = DescribeTensorDifference(expected.tensor(), actual.tensor());
      if (why.empty()) return std::nullopt;
      return why;
    }
    case ValueKind::kSequence: {
      const Sequence& e = expected.sequence();
      const Sequence& a = actual.sequence();
      if (e.element_type() != a.element_type()) {
        return fmt::format("sequence element type: expected {}, got {}",
                           ElementTypeName(e.element_type()), ElementTypeName(a.element_type()));
      }
      if (e.size() != a.size()) {
        return fmt::format("sequence length: expected {}, got {}", e.size(), a.size());
      }
      for (size_t i = 0; i < e.size(); ++i) {
        if (auto why = DescribeDifference(e.at(i), a.at(i))) {
          return fmt::format("sequence item {}: {}", i, *why);
        }
      }
      return std::nullopt;
    }
    case ValueKind::kOptional: {
      const Optional& e = expected.optional();
      const Optional& a = actual.optional();
      if (e.has_value() != a.has_value()) {
        return fmt::format("optional: expected {}, got {}", e.has_value() ? "a value" : "empty",
                           a.has_value() ? "a value" : "empty");
      }
      if (!e.has_value()) {
        // An empty optional's declared element type may be undefined in test data; compare kinds
        // only when both sides know theirs.
        const Type& et = e.element_type();
        const Type& at = a.element_type();
        if (et.is_tensor() && et.element_type() == ElementType::kUndefined) return std::nullopt;
        if (at.is_tensor() && at.element_type() == ElementType::kUndefined) return std::nullopt;
        if (!et.SameStructure(at)) {
          return fmt::format("empty optional type: expected {}, got {}", et.ToString(),
                             at.ToString());
        }
        return std::nullopt;
      }
      if (auto why = DescribeDifference(e.value(), a.value())) {
        return fmt::format("optional value: {}", *why);
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

namespace {

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

template <typename T>
T Load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string FormatElement(const Tensor& t, int64_t i) {
  const std::byte* p = t.data().data();
  switch (t.element_type()) {
    case ElementType::kFloat:
      return fmt::format("{}", Load<float>(p + 4 * i));
    case ElementType::kDouble:
      return fmt::format("{}", Load<double>(p + 8 * i));
    case ElementType::kFloat16:
      return fmt::format("{}", HalfToFloat(Load<uint16_t>(p + 2 * i)));
    case ElementType::kBfloat16:
      return fmt::format("{}", std::bit_cast<float>(uint32_t{Load<uint16_t>(p + 2 * i)} << 16));
    case ElementType::kUint8:
      return fmt::format("{}", Load<uint8_t>(p + i));
    case ElementType::kInt8:
      return fmt::format("{}", Load<int8_t>(p + i));
    case ElementType::kUint16:
      return fmt::format("{}", Load<uint16_t>(p + 2 * i));
    case ElementType::kInt16:
      return fmt::format("{}", Load<int16_t>(p + 2 * i));
    case ElementType::kUint32:
      return fmt::format("{}", Load<uint32_t>(p + 4 * i));
    case ElementType::kInt32:
      return fmt::format("{}", Load<int32_t>(p + 4 * i));
    case ElementType::kUint64:
      return fmt::format("{}", Load<uint64_t>(p + 8 * i));
    case ElementType::kInt64:
      return fmt::format("{}", Load<int64_t>(p + 8 * i));
    case ElementType::kBool:
      return Load<uint8_t>(p + i) ? "true" : "false";
    case ElementType::kComplex64:
      return fmt::format("({}{:+}j)", Load<float>(p + 8 * i), Load<float>(p + 8 * i + 4));
    case ElementType::kComplex128:
      return fmt::format("({}{:+}j)", Load<double>(p + 16 * i), Load<double>(p + 16 * i + 8));
    case ElementType::kString: {
      std::string out = "\"";
      for (unsigned char c : t.strings()[static_cast<size_t>(i)]) {
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
          out += static_cast<char>(c);
        } else {
          out += fmt::format("\\x{:02x}", c);
        }
      }
      return out + "\"";
    }
    case ElementType::kUint4:
    case ElementType::kInt4:
    case ElementType::kUint2:
    case ElementType::kInt2: {
      const int bits = ElementBits(t.element_type());
      const int per_byte = 8 / bits;
      const unsigned raw =
          (std::to_integer<unsigned>(p[i / per_byte]) >> (static_cast<int>(i % per_byte) * bits)) &
          ((1u << bits) - 1);
      const bool is_signed =
          t.element_type() == ElementType::kInt4 || t.element_type() == ElementType::kInt2;
      const int value = is_signed && (raw >> (bits - 1)) ? static_cast<int>(raw) - (1 << bits)
                                                         : static_cast<int>(raw);
      return fmt::format("{}", value);
    }
    case ElementType::kFloat4E2M1: {
      const unsigned raw = (std::to_integer<unsigned>(p[i / 2]) >> ((i % 2) * 4)) & 0xfu;
      return fmt::format("0x{:x}", raw);
    }
    default:  // float8 variants: show the bit pattern
      return fmt::format("0x{:02x}", std::to_integer<unsigned>(p[i]));
  }
}

// Prints a tensor as nested brackets without recursion: the rank comes from the file (tens of
// thousands of dims of size 1 once crashed a recursive version). Elements are visited in C order
// with an odometer over the dims; between two elements, the dims that wrapped close and reopen.
// After the last printed element, each still-open level with items left gets "...".
void FormatTensor(const Tensor& t, size_t max_elements, std::string& out) {
  if (t.rank() == 0) {
    out += FormatElement(t, 0);
    return;
  }
  if (t.element_count() == 0) {
    // No elements: "[]" whatever the shape. Walking the dims instead would loop over every
    // outer index of e.g. [1610612735, 0] (fuzz_value regression).
    out += "[]";
    return;
  }
  const size_t rank = t.rank();
  const auto shape = t.shape();
  const int64_t shown = static_cast<int64_t>(
      std::min<uint64_t>(static_cast<uint64_t>(t.element_count()), max_elements));
  if (shown == 0) {
    out += "[...]";
    return;
  }
  std::vector<int64_t> coord(rank, 0);
  out.append(rank, '[');
  for (int64_t index = 0; index < shown; ++index) {
    if (index > 0) {
      // Advance the odometer; `wrapped` dims went back to 0.
      size_t wrapped = 0;
      for (size_t d = rank; d-- > 0;) {
        if (++coord[d] < shape[d]) break;
        coord[d] = 0;
        ++wrapped;
      }
      out.append(wrapped, ']');
      out += ", ";
      out.append(wrapped, '[');
    }
    out += FormatElement(t, index);
  }
  for (size_t d = rank; d-- > 0;) {
    if (coord[d] + 1 < shape[d]) out += "...";
    out += ']';
  }
}

}  // namespace

std::string FormatValue(const Value& value, size_t max_elements) {
  if (value.is_null()) return "<null>";
  switch (value.kind()) {
    case ValueKind::kTensor: {
      std::string out;
      FormatTensor(value.tensor(), max_elements, out);
      return out;
    }
    case ValueKind::kSequence: {
      std::string out = "seq{";
      const Sequence& s = value.sequence();
      for (size_t i = 0; i < s.size(); ++i) {
        if (i == 4) {
          out += fmt::format(", ... ({} more)", s.size() - 4);
          break;
        }
        if (i) out += ", ";
        out += FormatValue(s.at(i), max_elements);
      }
      return out + "}";
    }
    case ValueKind::kOptional:
      return value.optional().has_value()
                 ? fmt::format("optional{{{}}}",
                               FormatValue(value.optional().value(), max_elements))
                 : std::string("optional{empty}");
  }
  return "?";
}

}  // namespace idem
