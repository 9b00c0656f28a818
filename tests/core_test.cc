// Core layer: element types, types, buffers, values, comparison.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "idem/idem.h"
#include "src/core/buffer_pages.h"
#include "src/core/text.h"
#include "tests/status_matchers.h"

namespace idem {
namespace {

Value FloatTensor(std::vector<int64_t> shape, std::vector<float> values) {
  auto buffer = Buffer::CopyOf(std::as_bytes(std::span(values))).value();
  return Value::MakeTensor(ElementType::kFloat, std::move(shape), buffer).value();
}

TEST(ElementTypeTest, CodesNamesAndWidthsFollowTheSpec) {
  EXPECT_EQ(ElementTypeName(ElementType::kFloat8E4M3FN), "float8e4m3fn");
  EXPECT_EQ(ElementTypeName(ElementType::kInt2), "int2");
  EXPECT_EQ(ElementBits(ElementType::kComplex128), 128);
  EXPECT_EQ(ElementBits(ElementType::kUint4), 4);
  EXPECT_EQ(ElementBits(ElementType::kString), 0);
  EXPECT_FALSE(ElementTypeFromCode(0).has_value());
  EXPECT_FALSE(ElementTypeFromCode(27).has_value());
  EXPECT_EQ(ElementTypeFromCode(26), ElementType::kInt2);
}

TEST(ElementTypeTest, PackedSizesRoundSubByteTypesUp) {
  EXPECT_EQ(PackedByteSize(ElementType::kInt4, 3), 2u);
  EXPECT_EQ(PackedByteSize(ElementType::kUint2, 5), 2u);
  EXPECT_EQ(PackedByteSize(ElementType::kUint2, 8), 2u);
  EXPECT_EQ(PackedByteSize(ElementType::kDouble, 3), 24u);
  EXPECT_FALSE(PackedByteSize(ElementType::kDouble, std::numeric_limits<uint64_t>::max() / 4));
  EXPECT_FALSE(PackedByteSize(ElementType::kString, 1));
}

TEST(TypeTest, PrintsOnnxNotation) {
  Type t = Type::Optional(Type::Sequence(Type::Tensor(ElementType::kFloat)));
  EXPECT_EQ(t.ToString(), "optional(seq(tensor(float)))");
  EXPECT_EQ(t.depth(), 3);
  Type shaped = Type::Tensor(ElementType::kFloat, std::vector<Dim>{{1, {}}, {{}, "N"}, {}});
  EXPECT_EQ(shaped.ToShortString(), "float[1,N,?]");
}

TEST(TypeTest, CompatibilityIgnoresSymbolicDimsButNotFixedOnes) {
  Type a = Type::Tensor(ElementType::kFloat, std::vector<Dim>{{2, {}}, {{}, "N"}});
  Type b = Type::Tensor(ElementType::kFloat, std::vector<Dim>{{2, {}}, {7, {}}});
  Type c = Type::Tensor(ElementType::kFloat, std::vector<Dim>{{3, {}}, {7, {}}});
  Type d = Type::Tensor(ElementType::kInt32, std::vector<Dim>{{2, {}}, {7, {}}});
  EXPECT_TRUE(a.CompatibleWith(b));
  EXPECT_FALSE(b.CompatibleWith(c));
  EXPECT_FALSE(b.CompatibleWith(d));
  EXPECT_TRUE(b.SameStructure(c));
  EXPECT_FALSE(Type::Sequence(b).SameStructure(b));
}

// Whether every page of [data, data + size) is mapped in this process.
bool Mapped(const std::byte* data, size_t size) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(data) / page * page;
  std::vector<unsigned char> resident(
      (reinterpret_cast<uintptr_t>(data) + size - first + page - 1) / page);
  // mincore fails with ENOMEM when part of the range is not mapped.
  return mincore(reinterpret_cast<void*>(first), reinterpret_cast<uintptr_t>(data) + size - first,
                 resident.data()) == 0;
}

TEST(BufferTest, CopiesToOwnPagesAreReadOnlyAndUnmappedWhenReleased) {
  std::vector<std::byte> bytes(300000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 31 + 7);
  auto copy = CopyToOwnPages(bytes);
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  ASSERT_EQ(copy->size(), bytes.size());
  EXPECT_EQ(std::memcmp(copy->data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copy->data()) % Buffer::kAlignment, 0u);
  const std::byte* data = copy->data();
  EXPECT_TRUE(Mapped(data, bytes.size()));
  // Read-only: a write through the data faults instead of changing the weights.
  EXPECT_DEATH(const_cast<std::byte*>(data)[1000] = std::byte{0}, "");
  {
    Buffer slice = copy->Slice(4096, 100);  // shares the pages
    copy = Buffer();
    EXPECT_TRUE(Mapped(data, bytes.size()));
    EXPECT_EQ(slice.data()[0], bytes[4096]);
  }
  // The last reference gone, the pages go back to the system (not to a cache).
  EXPECT_FALSE(Mapped(data, bytes.size()));
  auto empty = CopyToOwnPages({});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(BufferTest, SlicesAndCopiesShareOrOwnAsDocumented) {
  std::vector<uint8_t> bytes = {1, 2, 3, 4, 5};
  Buffer borrowed = Buffer::Borrow(bytes.data(), bytes.size());
  EXPECT_EQ(static_cast<const void*>(borrowed.data()), bytes.data());
  Buffer slice = borrowed.Slice(1, 3);
  EXPECT_EQ(std::to_integer<int>(slice.data()[0]), 2);
  Buffer copy = Buffer::CopyOf(borrowed.bytes()).value();
  EXPECT_NE(static_cast<const void*>(copy.data()), bytes.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copy.data()) % Buffer::kAlignment, 0u);
  EXPECT_EQ(std::memcmp(copy.data(), bytes.data(), 5), 0);
}

TEST(ValueTest, TensorSizeMustMatchShape) {
  auto buffer = Buffer::CopyOf(std::vector<std::byte>(8)).value();
  EXPECT_TRUE(Value::MakeTensor(ElementType::kFloat, {2}, buffer).ok());
  EXPECT_FALSE(Value::MakeTensor(ElementType::kFloat, {3}, buffer).ok());
  EXPECT_FALSE(Value::MakeTensor(ElementType::kFloat, {-2}, buffer).ok());
  EXPECT_FALSE(Value::MakeTensor(ElementType::kString, {2}, buffer).ok());
  // Two int4 elements, three int4 elements (one padding nibble) both fit in one/two bytes.
  EXPECT_TRUE(Value::MakeTensor(ElementType::kInt4, {4, 4}, buffer).ok());
  EXPECT_FALSE(Value::MakeTensor(ElementType::kInt4, {int64_t{1} << 62, 8}, buffer).ok());
}

TEST(ValueTest, SequencesRejectMixedElementTypes) {
  Value f = FloatTensor({1}, {1.0f});
  auto i =
      Value::MakeTensor(ElementType::kInt32, {1}, Buffer::CopyOf(std::vector<std::byte>(4)).value())
          .value();
  EXPECT_TRUE(Value::MakeSequence(ElementType::kFloat, {f, f}).ok());
  auto mixed = Value::MakeSequence(ElementType::kFloat, {f, i});
  ASSERT_FALSE(mixed.ok());
  EXPECT_STATUS(mixed, StatusCode::kInvalidArgument, "int32");
}

// Tensors keep ranks <= 4 inline and larger ones on the heap; both must survive copies and moves
// of the Tensor object (a caller may copy `value.tensor()`), and MakeTensorFromDims must apply
// exactly MakeTensor's checks.
TEST(ValueTest, ShapesOfAnyRankSurviveCopiesAndMoves) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{}, std::vector<int64_t>{1, 2, 1, 1},
        std::vector<int64_t>{1, 1, 2, 1, 1}, std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 2}}) {
    SCOPED_TRACE(fmt::format("rank {}", shape.size()));
    const size_t count = shape.empty() ? 1 : 2;
    auto buffer = Buffer::CopyOf(std::vector<std::byte>(4 * count)).value();
    Value a = Value::MakeTensor(ElementType::kFloat, shape, buffer).value();
    Value b = Value::MakeTensorFromDims(ElementType::kFloat, shape, buffer).value();
    for (const Value* v : {&a, &b}) {
      EXPECT_TRUE(std::ranges::equal(v->tensor().shape(), shape));
      EXPECT_EQ(v->tensor().rank(), shape.size());
      EXPECT_EQ(v->tensor().element_count(), static_cast<int64_t>(count));
    }
    Tensor copy = a.tensor();
    Tensor assigned;
    assigned = b.tensor();
    EXPECT_TRUE(std::ranges::equal(copy.shape(), shape));
    EXPECT_TRUE(std::ranges::equal(assigned.shape(), shape));
    Tensor moved = std::move(copy);
    EXPECT_TRUE(std::ranges::equal(moved.shape(), shape));
    EXPECT_EQ(copy.rank(), 0u);  // NOLINT(bugprone-use-after-move): a moved-from Tensor is empty
    assigned = std::move(moved);
    EXPECT_TRUE(std::ranges::equal(assigned.shape(), shape));
    EXPECT_EQ(assigned.data().data(), buffer.data());  // the bytes were never copied
    assigned = Tensor();
    EXPECT_EQ(assigned.rank(), 0u);
    EXPECT_TRUE(std::ranges::equal(a.tensor().shape(), shape));  // the Value is untouched
  }
  auto buffer = Buffer::CopyOf(std::vector<std::byte>(8)).value();
  const std::vector<int64_t> three = {3};
  const std::vector<int64_t> negative = {-2};
  EXPECT_STATUS(Value::MakeTensorFromDims(ElementType::kFloat, three, buffer),
                StatusCode::kInvalidArgument, "needs 12 bytes");
  EXPECT_STATUS(Value::MakeTensorFromDims(ElementType::kFloat, negative, buffer),
                StatusCode::kInvalidArgument, "negative dim");
  EXPECT_STATUS(Value::MakeTensorFromDims(ElementType::kString, three, buffer),
                StatusCode::kInvalidArgument, "MakeStringTensor");
  const std::vector<int64_t> huge = {1, 1, 1, 1, int64_t{1} << 62, 8};
  EXPECT_STATUS(Value::MakeTensorFromDims(ElementType::kInt4, huge, buffer),
                StatusCode::kOutOfRange, "overflows");
}

// Sequences keep up to 3 handles inline and move to the heap beyond; inserting at any position,
// copying and moving must keep the elements, their order and the byte total.
TEST(ValueTest, SequenceStorageKeepsOrderAcrossGrowthCopiesAndMoves) {
  std::vector<Value> tensors;
  for (int i = 0; i < 9; ++i) tensors.push_back(FloatTensor({1}, {static_cast<float>(i)}));
  const std::vector<const Value*> handles = {&tensors[0], &tensors[1]};
  Value seq = Value::MakeSequenceFrom(ElementType::kFloat, handles).value();
  EXPECT_EQ(seq.sequence().size(), 2u);
  EXPECT_TRUE(seq.sequence().at(1).SharesStorageWith(tensors[1]));
  // Expected order after inserting 2..8 at alternating positions (front, back, middle).
  std::vector<int> expected = {0, 1};
  for (int i = 2; i < 9; ++i) {
    const size_t index = i % 3 == 0 ? 0 : i % 3 == 1 ? expected.size() : expected.size() / 2;
    ASSERT_TRUE(seq.InsertIntoUnsharedSequence(index, tensors[static_cast<size_t>(i)]));
    expected.insert(expected.begin() + static_cast<std::ptrdiff_t>(index), i);
    ASSERT_EQ(seq.sequence().size(), expected.size());
    for (size_t k = 0; k < expected.size(); ++k) {
      EXPECT_TRUE(
          seq.sequence().at(k).SharesStorageWith(tensors[static_cast<size_t>(expected[k])]));
    }
  }
  const uint64_t total = seq.sequence().total_bytes();
  EXPECT_EQ(total, 9u * tensors[0].BudgetBytes());               // the sum of the elements' charges
  EXPECT_FALSE(seq.InsertIntoUnsharedSequence(10, tensors[0]));  // past the end
  for (size_t n : {size_t{0}, size_t{2}, size_t{3}, size_t{9}}) {
    SCOPED_TRACE(fmt::format("{} elements", n));
    Value s = Value::MakeSequence(ElementType::kFloat,
                                  std::vector<Value>(tensors.begin(), tensors.begin() + n))
                  .value();
    Sequence copy = s.sequence();
    Sequence moved = std::move(copy);
    Sequence assigned;
    assigned = moved;
    Sequence move_assigned;
    move_assigned = std::move(moved);
    EXPECT_EQ(copy.size(), 0u);   // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(moved.size(), 0u);  // NOLINT(bugprone-use-after-move)
    for (const Sequence* q :
         {&std::as_const(assigned), &std::as_const(move_assigned), &s.sequence()}) {
      ASSERT_EQ(q->size(), n);
      EXPECT_EQ(q->total_bytes(), n * tensors[0].BudgetBytes());
      for (size_t k = 0; k < n; ++k) EXPECT_TRUE(q->at(k).SharesStorageWith(tensors[k]));
    }
  }
  // MakeSequenceFrom applies MakeSequence's checks.
  Value i32 =
      Value::MakeTensor(ElementType::kInt32, {1}, Buffer::CopyOf(std::vector<std::byte>(4)).value())
          .value();
  const std::vector<const Value*> mixed = {&tensors[0], &i32};
  EXPECT_STATUS(Value::MakeSequenceFrom(ElementType::kFloat, mixed), StatusCode::kInvalidArgument,
                "element 1 of tensor(int32)");
  const std::vector<const Value*> with_null = {&tensors[0], nullptr};
  EXPECT_STATUS(Value::MakeSequenceFrom(ElementType::kFloat, with_null),
                StatusCode::kInvalidArgument, "element 1 is not a tensor");
  EXPECT_STATUS(Value::MakeSequenceFrom(ElementType::kUndefined, handles),
                StatusCode::kInvalidArgument, "undefined");
}

// Value nodes come from a per-thread cache of freed blocks: values made on one thread and freed on
// another, values that outlive the thread that made them, and blocks reused after a thread exits
// must all stay intact (each value keeps its own shape and bytes until its last handle dies).
TEST(ValueTest, ValuesMoveFreelyBetweenThreadsAndOutliveTheirMaker) {
  constexpr int kPerThread = 300;  // more than a thread caches, so both paths are taken
  auto make = [](int tag) {
    const std::vector<int64_t> shape = {1, tag % 7 + 1};
    std::vector<float> values(static_cast<size_t>(tag % 7 + 1), static_cast<float>(tag));
    Value t = FloatTensor(shape, values);
    Value seq = Value::MakeSequence(ElementType::kFloat, {t, t}).value();
    return Value::MakeOptional(seq).value();
  };
  auto intact = [](const Value& v, int tag) {
    const Sequence& s = v.optional().value().sequence();
    if (s.size() != 2) return false;
    const Tensor& t = s.at(1).tensor();
    const std::vector<int64_t> shape = {1, tag % 7 + 1};
    return std::ranges::equal(t.shape(), shape) && t.data_as<float>()[0] == static_cast<float>(tag);
  };
  std::vector<std::vector<Value>> made(4);
  {
    std::vector<std::thread> makers;
    for (int k = 0; k < 4; ++k) {
      makers.emplace_back([&made, &make, k] {
        for (int i = 0; i < kPerThread; ++i) made[k].push_back(make(k * kPerThread + i));
      });
    }
    for (auto& t : makers) t.join();  // the makers are gone; their values live on
  }
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < kPerThread; ++i) {
      ASSERT_TRUE(intact(made[k][i], k * kPerThread + i)) << k << " " << i;
    }
  }
  // Free the values on other threads (crosswise), each making new ones from its cache meanwhile.
  {
    std::vector<std::thread> freers;
    for (int k = 0; k < 4; ++k) {
      freers.emplace_back([&made, &make, &intact, k] {
        std::vector<Value> mine = std::move(made[(k + 1) % 4]);
        std::vector<Value> fresh;
        for (int i = 0; i < kPerThread; ++i) {
          mine[static_cast<size_t>(i)] = Value();
          fresh.push_back(make(10000 + i));
        }
        for (int i = 0; i < kPerThread; ++i) {
          if (!intact(fresh[static_cast<size_t>(i)], 10000 + i)) std::abort();
        }
        made[(k + 1) % 4] = std::move(fresh);  // outlives this thread
      });
    }
    for (auto& t : freers) t.join();
  }
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < kPerThread; ++i) EXPECT_TRUE(intact(made[k][i], 10000 + i));
  }
  made.clear();  // freed on the main thread, after the threads that made them exited
  EXPECT_TRUE(intact(make(5), 5));
}

TEST(ValueTest, EmptyOptionalKeepsItsType) {
  auto empty = Value::MakeEmptyOptional(Type::Sequence(Type::Tensor(ElementType::kInt64))).value();
  EXPECT_FALSE(empty.optional().has_value());
  EXPECT_EQ(empty.type().ToString(), "optional(seq(tensor(int64)))");
  EXPECT_FALSE(Value::MakeEmptyOptional(Type::Optional(Type::Tensor(ElementType::kFloat))).ok());
}

TEST(CompareTest, NanPayloadsAndSignedZerosAreDistinguished) {
  const float quiet = std::bit_cast<float>(0x7fc00000u);
  const float payload = std::bit_cast<float>(0x7fc00001u);
  EXPECT_FALSE(DescribeDifference(FloatTensor({1}, {quiet}), FloatTensor({1}, {quiet})));
  auto why = DescribeDifference(FloatTensor({1}, {quiet}), FloatTensor({1}, {payload}));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("7fc00001"), std::string::npos);
  EXPECT_TRUE(DescribeDifference(FloatTensor({1}, {0.0f}), FloatTensor({1}, {-0.0f})));
  EXPECT_TRUE(DescribeDifference(FloatTensor({2}, {1, 2}), FloatTensor({1, 2}, {1, 2})));
}

TEST(CompareTest, SubBytePaddingIsIgnored) {
  std::vector<std::byte> a = {std::byte{0x21}, std::byte{0x03}};
  std::vector<std::byte> b = {std::byte{0x21}, std::byte{0xf3}};
  auto va = Value::MakeTensor(ElementType::kUint4, {3}, Buffer::CopyOf(a).value()).value();
  auto vb = Value::MakeTensor(ElementType::kUint4, {3}, Buffer::CopyOf(b).value()).value();
  EXPECT_FALSE(DescribeDifference(va, vb));
  std::vector<std::byte> c = {std::byte{0x21}, std::byte{0x04}};
  auto vc = Value::MakeTensor(ElementType::kUint4, {3}, Buffer::CopyOf(c).value()).value();
  EXPECT_TRUE(DescribeDifference(va, vc));
}

TEST(CompareTest, StringsCompareAsBytes) {
  auto a = Value::MakeStringTensor({2}, {std::string("a\0b", 3), "\xff"}).value();
  auto b = Value::MakeStringTensor({2}, {std::string("a\0c", 3), "\xff"}).value();
  EXPECT_FALSE(DescribeDifference(a, a));
  EXPECT_TRUE(DescribeDifference(a, b));
}

TEST(FormatTest, PreviewsNestedShapes) {
  EXPECT_EQ(FormatValue(FloatTensor({1, 5}, {1, 2, 3, 4, 5})), "[[1, 2, 3, 4, 5]]");
  EXPECT_EQ(FormatValue(FloatTensor({}, {2.5f})), "2.5");
  EXPECT_EQ(FormatValue(FloatTensor({0}, {})), "[]");
  // fuzz_value regression: a zero dim after a huge one must not walk the huge one.
  EXPECT_EQ(FormatValue(FloatTensor({1610612735, 0}, {})), "[]");
  EXPECT_EQ(FormatValue(FloatTensor({2, 0, 3}, {})), "[]");
}

// ---- issue 12: nothing a file controls may drive recursion; names are escaped.

TEST(FormatTest, VeryHighRankPrintsWithoutRecursion) {
  // Tens of thousands of dims of size 1 once overflowed the stack (one frame per dim).
  const size_t rank = 200000;
  Value v = FloatTensor(std::vector<int64_t>(rank, 1), {3});
  const std::string out = FormatValue(v);
  EXPECT_EQ(out, std::string(rank, '[') + "3" + std::string(rank, ']'));
  EXPECT_FALSE(DescribeDifference(v, v));
  Value w = FloatTensor(std::vector<int64_t>(rank, 1), {4});
  ASSERT_TRUE(DescribeDifference(v, w));
  EXPECT_NE(v.type().ToShortString().find("[1,1,1"), std::string::npos);
}

TEST(FormatTest, TruncationMarksEveryLevelWithItemsLeft) {
  std::vector<float> sixty(60);
  for (size_t i = 0; i < sixty.size(); ++i) sixty[i] = static_cast<float>(i);
  EXPECT_EQ(
      FormatValue(FloatTensor({30}, std::vector<float>(sixty.begin(), sixty.begin() + 30)), 2),
      "[0, 1...]");
  EXPECT_EQ(FormatValue(FloatTensor({2, 30}, sixty), 2), "[[0, 1...]...]");
  EXPECT_EQ(FormatValue(FloatTensor({2, 2}, {1, 2, 3, 4}), 2), "[[1, 2]...]");
  EXPECT_EQ(FormatValue(FloatTensor({2, 2}, {1, 2, 3, 4})), "[[1, 2], [3, 4]]");
  EXPECT_EQ(FormatValue(FloatTensor({2, 1, 2}, {1, 2, 3, 4})), "[[[1, 2]], [[3, 4]]]");
  EXPECT_EQ(FormatValue(FloatTensor({2, 2}, {1, 2, 3, 4}), 0), "[...]");
  EXPECT_EQ(FormatValue(FloatTensor({2, 2}, {1, 2, 3, 4}), SIZE_MAX), "[[1, 2], [3, 4]]");
}

TEST(TypeTest, DeepTypesAreWalkedAndDestroyedWithoutRecursion) {
  // The C++ API can nest without limit (files are bounded by max_type_depth); no walk may
  // recurse once per level.
  const int depth = 300'000;
  Type a = Type::Tensor(ElementType::kFloat);
  Type b = Type::Tensor(ElementType::kFloat);
  for (int i = 0; i < depth; ++i) {
    a = i % 2 ? Type::Sequence(std::move(a)) : Type::Optional(std::move(a));
    b = i % 2 ? Type::Sequence(std::move(b)) : Type::Optional(std::move(b));
  }
  EXPECT_TRUE(a.SameStructure(b));
  EXPECT_TRUE(a.CompatibleWith(b));
  EXPECT_EQ(a.depth(), depth + 1);
  const std::string text = a.ToString();
  EXPECT_EQ(text.size(), std::string("tensor(float)").size() + (depth / 2) * 13 + depth);
  EXPECT_EQ(text.substr(0, 13), "seq(optional(");
  EXPECT_EQ(a.ToShortString().size(), std::string("float[?]").size() + (depth / 2) * 13 + depth);
}

TEST(ValueTest, DimsOverflowRuleDoesNotDependOnOrder) {
  // The product of the non-zero dims must fit in int64 even when a zero dim empties the tensor.
  const int64_t big = int64_t{1} << 62;
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{0, big, big}, {big, big, 0}, {big, 0, big}}) {
    auto r = Value::MakeTensor(ElementType::kFloat, dims, Buffer());
    ASSERT_FALSE(r.ok()) << fmt::format("{}", fmt::join(dims, ","));
    EXPECT_STATUS(r, StatusCode::kOutOfRange, "overflows");
    EXPECT_FALSE(Value::MakeStringTensor(dims, {}).ok());
  }
  EXPECT_TRUE(Value::MakeTensor(ElementType::kFloat, {0, big, 1}, Buffer()).ok());
  EXPECT_TRUE(Value::MakeTensor(ElementType::kFloat, {big, 1, 0}, Buffer()).ok());
}

TEST(TextTest, NamesAreQuotedAndEscaped) {
  EXPECT_EQ(QuoteName("id0"), "'id0'");
  EXPECT_EQ(QuoteName(""), "''");
  EXPECT_EQ(QuoteName("a\nerror: b"), "'a\\nerror: b'");
  EXPECT_EQ(QuoteName("it's"), "'it\\'s'");
  EXPECT_EQ(QuoteName("x\x1b[31m\x7f\t"), "'x\\x1b[31m\\x7f\\t'");
  EXPECT_EQ(QuoteName("caf\xc3\xa9"), "'caf\xc3\xa9'");  // valid UTF-8 stays
  EXPECT_EQ(QuoteName("\xff\xc3"), "'\\xff\\xc3'");      // invalid bytes are escaped
  EXPECT_EQ(QuoteName("\xc2\x9b"), "'\\u009b'");         // C1 CSI
  EXPECT_EQ(QuoteName("a\xe2\x80\xae"
                      "b"),
            "'a\\u202eb'");                                // right-to-left override
  EXPECT_EQ(QuoteName("\xe2\x82\xac"), "'\xe2\x82\xac'");  // the euro sign stays
  EXPECT_EQ(EscapeText("a\nb", /*keep_newlines=*/true), "a\nb");
}

TEST(TextTest, StatusMessagesNeverHoldControlCharacters) {
  Status s(StatusCode::kInvalidModel, "node 'a\nerror: forged' \x1b[2J");
  EXPECT_EQ(s.message(), "node 'a\\nerror: forged' \\x1b[2J");
  Status t = Status(StatusCode::kInvalidModel, "x").WithContext("file\r.onnx");
  EXPECT_EQ(t.message(), "file\\r.onnx: x");
  EXPECT_EQ(Status(StatusCode::kInvalidModel, "plain 'ok' text").message(), "plain 'ok' text");
}

// The shared test matcher must fail on each way an error can differ from what a test expects.
TEST(StatusMatcherTest, FailsOnOkWrongCodeOrMissingFragment) {
  const Status error(StatusCode::kInvalidModel, "node 'n0': bad attribute");
  EXPECT_TRUE(testing::StatusIs(error, StatusCode::kInvalidModel, "bad attribute"));
  EXPECT_FALSE(testing::StatusIs(Status(), StatusCode::kInvalidModel, ""));
  EXPECT_FALSE(testing::StatusIs(error, StatusCode::kUnsupported, "bad attribute"));
  auto missing = testing::StatusIs(error, StatusCode::kInvalidModel, "bad input");
  EXPECT_FALSE(missing);
  // The failure names the actual code and the whole message.
  EXPECT_NE(std::string(missing.message()).find("INVALID_MODEL: node 'n0': bad attribute"),
            std::string::npos);
  Result<int> result = Status(StatusCode::kOutOfRange, "index 7");
  EXPECT_STATUS(result, StatusCode::kOutOfRange, "index 7");
}

}  // namespace
}  // namespace idem
