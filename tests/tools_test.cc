// Tools layer: the .npy reader (a hand parser of numpy's header dict) and the all-or-nothing
// writer behind `idem run --output-dir`.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "src/core/atomic_file.h"
#include "src/core/float_convert.h"
#include "tests/status_matchers.h"
#include "tools/backend_test.h"
#include "tools/bench.h"
#include "tools/feeds.h"
#include "tools/generate.h"
#include "tools/npy.h"

namespace idem::tools {
namespace {

namespace fs = std::filesystem;

class ToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("idem_tools_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Writes a version-1 .npy file with `header` (padded as numpy pads it) and `payload`.
  std::string Npy(const std::string& name, std::string header, const std::string& payload,
                  std::optional<size_t> declared_length = std::nullopt) {
    header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
    const size_t n = declared_length.value_or(header.size());
    std::string bytes = "\x93NUMPY\x01";
    bytes += '\0';
    bytes += static_cast<char>(n & 0xff);
    bytes += static_cast<char>((n >> 8) & 0xff);
    bytes += header + payload;
    const std::string path = (root_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  static std::string Ints(std::vector<int32_t> v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  }

  fs::path root_;
};

TEST_F(ToolsTest, NpyHeaderInEitherQuotesAndFortranOrderIsTransposed) {
  // A 2x3 int32 array [[0,1,2],[3,4,5]] stored in Fortran order: 0,3,1,4,2,5.
  const std::string f = Ints({0, 3, 1, 4, 2, 5});
  for (const std::string& header :
       {std::string("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }"),
        std::string("{\"descr\": \"<i4\", \"fortran_order\": True, \"shape\": (2, 3)}"),
        std::string("{'shape': (2,3), 'fortran_order': True, \"descr\": '<i4'}")}) {
    Value v = ReadNpy(Npy("f.npy", header, f)).value();
    auto data = v.tensor().data_as<int32_t>();
    EXPECT_EQ(std::vector<int32_t>(data.begin(), data.end()),
              (std::vector<int32_t>{0, 1, 2, 3, 4, 5}))
        << header;
    EXPECT_EQ(v.tensor().shape()[0], 2);
  }
  Value c =
      ReadNpy(Npy("c.npy", "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2, 3)}",
                  Ints({0, 1, 2, 3, 4, 5})))
          .value();
  EXPECT_EQ(c.tensor().data_as<int32_t>()[1], 1);
  // Scalars and 1-D arrays read the same in either order.
  Value s =
      ReadNpy(Npy("s.npy", "{'descr': '<i4', 'fortran_order': True, 'shape': (), }", Ints({42})))
          .value();
  EXPECT_EQ(s.tensor().rank(), 0u);
  EXPECT_EQ(s.tensor().data_as<int32_t>()[0], 42);
}

TEST_F(ToolsTest, NpyHeadersThatWouldCrashOrMisleadAreRefused) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{'descr': '|S99999999999999999999999', 'fortran_order': False, 'shape': (1,), }", "width"},
      {"{'descr': '|S4294967296', 'fortran_order': False, 'shape': (4294967296,), }", "payload"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "non-negative"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1.0,), }", "integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1e3,), }", "integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "overflows"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, "
       "4611686018427387904, 0), }",
       "overflows"},
      {"{'descr': '<f4', 'fortran_order': 1, 'shape': (1,), }", "True or False"},
      {"{'descr': '<f4', 'shape': (1,), }", "keys"},
      {"{'descr': '<f4', 'fortran_order': False, 'fortran_order': False, 'shape': (1,)}", "twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unexpected key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "expected"},
      {"{'descr': '<U4', 'fortran_order': False, 'shape': (1,), }", "not supported"},
  };
  for (const auto& [header, fragment] : bad) {
    auto r = ReadNpy(Npy("bad.npy", header, std::string(4, '\0')));
    ASSERT_FALSE(r.ok()) << header;
    EXPECT_STATUS(r, StatusCode::kInvalidArgument, fragment) << header;
    EXPECT_STATUS(r, StatusCode::kInvalidArgument, "bad.npy");
  }
  // A header length past the end of the file.
  auto r = ReadNpy(
      Npy("short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "", 60000));
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kInvalidArgument, "past the end");
  // A header of ~100 KB (60,000 dims of size 1; version 1 cannot hold it, so build version 2).
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 30000; ++i) header += "1, ";
  header += "), }";
  header += std::string((64 - (12 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::string bytes = "\x93NUMPY\x02";
  bytes += '\0';
  for (int i = 0; i < 4; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header + std::string(4, '\0');
  std::ofstream(root_ / "long.npy", std::ios::binary) << bytes;
  Value v = ReadNpy((root_ / "long.npy").string()).value();
  EXPECT_EQ(v.tensor().rank(), 30000u);
}

TEST_F(ToolsTest, WriteFilesAtomicallyTouchesNothingWhenOneTargetFails) {
  const std::string a = (root_ / "a.pb").string();
  const std::string b = (root_ / "b.pb").string();
  std::ofstream(a) << "old";
  chmod(a.c_str(), 0640);
  fs::create_directory(b);  // cannot be replaced by a file
  std::vector<FileToWrite> files = {{a, "new a"}, {b, "new b"}};
  Status s = WriteFilesAtomically(files);
  ASSERT_FALSE(s.ok());
  // The shared writer (src/core/atomic_file.h) refuses a target that is not a regular file as
  // a wrong argument, naming what is there.
  EXPECT_STATUS(s, StatusCode::kInvalidArgument, "b.pb: is not a regular file (a directory)");
  std::string content;
  std::getline(std::ifstream(a), content);
  EXPECT_EQ(content, "old");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root_)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a.pb", "b.pb"}));  // no temporaries left

  fs::remove(b);
  const mode_t old_umask = umask(022);
  s = WriteFilesAtomically(files);
  umask(old_umask);
  ASSERT_TRUE(s.ok()) << s.message();
  std::getline(std::ifstream(a), content);
  EXPECT_EQ(content, "new a");
  struct stat st {};
  ASSERT_EQ(stat(a.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);  // kept
  ASSERT_EQ(stat(b.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);  // new: 0666 minus the umask
}

TEST_F(ToolsTest, WriteFilesAtomicallyRemovesTemporariesWhenTheFolderIsMissing) {
  std::vector<FileToWrite> files = {{(root_ / "x.pb").string(), "x"},
                                    {(root_ / "missing" / "y.pb").string(), "y"}};
  ASSERT_FALSE(WriteFilesAtomically(files).ok());
  EXPECT_TRUE(fs::is_empty(root_));
}

// ---- DescribeDifferenceWithin (idem test --rtol/--atol) --------------------------------------

Value Floats(std::vector<float> values) {
  auto buffer = Buffer::CopyOf(std::as_bytes(std::span(values))).value();
  return Value::MakeTensor(ElementType::kFloat, {static_cast<int64_t>(values.size())}, buffer)
      .value();
}

TEST(ToleranceTest, NoToleranceIsBitExact) {
  const Value a = Floats({0.0f});
  const Value b = Floats({-0.0f});
  EXPECT_EQ(DescribeDifferenceWithin(a, b, std::nullopt), DescribeDifference(a, b));
  EXPECT_TRUE(DescribeDifferenceWithin(a, b, std::nullopt));
  EXPECT_FALSE(DescribeDifferenceWithin(a, b, Tolerance{}));
}

TEST(ToleranceTest, TheBoundIsInclusiveAndRelativeToExpected) {
  const Tolerance tol{0.5, 0.0};
  // allowed = 0.5 * |expected| = 1: 3 and 1 pass (the bound is inclusive), 0.9 does not.
  EXPECT_FALSE(DescribeDifferenceWithin(Floats({2.0f}), Floats({3.0f}), tol));
  EXPECT_FALSE(DescribeDifferenceWithin(Floats({2.0f}), Floats({1.0f}), tol));
  auto why = DescribeDifferenceWithin(Floats({2.0f}), Floats({0.9f}), tol);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("element 0: expected 2, got 0.9, |error| 1.1 > allowed 1"), std::string::npos)
      << *why;
}

TEST(ToleranceTest, OptionalsAndSequencesRecurseWithTheSameRule) {
  const Tolerance tol{0.0, 0.1};
  const Value near = Value::MakeOptional(Floats({1.05f})).value();
  const Value far = Value::MakeOptional(Floats({1.5f})).value();
  const Value one = Value::MakeOptional(Floats({1.0f})).value();
  EXPECT_FALSE(DescribeDifferenceWithin(one, near, tol));
  auto why = DescribeDifferenceWithin(one, far, tol);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("optional value: 1 of 1 elements differ", 0), 0u) << *why;
  // Presence stays exact.
  const Value empty = Value::MakeEmptyOptional(Type::Tensor(ElementType::kFloat)).value();
  EXPECT_TRUE(DescribeDifferenceWithin(one, empty, tol));
  // A sequence's length stays exact.
  const Value s1 = Value::MakeSequence(ElementType::kFloat, {Floats({1.0f})}).value();
  const Value s2 =
      Value::MakeSequence(ElementType::kFloat, {Floats({1.0f}), Floats({1.0f})}).value();
  const Value s3 = Value::MakeSequence(ElementType::kFloat, {Floats({1.05f})}).value();
  EXPECT_TRUE(DescribeDifferenceWithin(s1, s2, tol));
  EXPECT_FALSE(DescribeDifferenceWithin(s1, s3, tol));
}

// `idem bench`: the statistics and the bounded sample behind it.
TEST(BenchToolTest, PercentilesInterpolateAsNumpyDoes) {
  // numpy.percentile([1, 2, 3, 4], [0, 50, 90, 99, 100]) = [1, 2.5, 3.7, 3.97, 4].
  const std::vector<int64_t> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile(v, 90), 3.7);
  EXPECT_DOUBLE_EQ(Percentile(v, 99), 3.97);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(Percentile({7}, 50), 7);
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3}, 50), 2);
}

TEST(BenchToolTest, SummaryOfUnsortedRuns) {
  LatencySamples samples(100, 5);
  for (int64_t ns : {50, 10, 40, 20, 30}) samples.Add(ns);
  const LatencyStats s = SummarizeLatency(samples);
  EXPECT_EQ(s.runs, 5u);
  EXPECT_EQ(s.samples, 5u);
  EXPECT_DOUBLE_EQ(s.min, 10);
  EXPECT_DOUBLE_EQ(s.mean, 30);
  EXPECT_DOUBLE_EQ(s.median, 30);
  EXPECT_DOUBLE_EQ(s.p90, 46);
  EXPECT_DOUBLE_EQ(s.p99, 49.6);
  EXPECT_DOUBLE_EQ(s.max, 50);
}

TEST(BenchToolTest, SamplesPastTheCapAreThinnedEvenly) {
  // 1000 runs into 64 slots: the kept runs are every stride-th one from the first, so the
  // percentiles see the whole benchmark, not its first 64 runs; count, min, mean, max see all.
  LatencySamples samples(64);
  for (int64_t k = 0; k < 1000; ++k) samples.Add(k);
  EXPECT_EQ(samples.runs(), 1000u);
  EXPECT_LE(samples.samples().size(), 64u);
  EXPECT_GE(samples.samples().size(), 32u);
  const int64_t stride = samples.samples()[1] - samples.samples()[0];
  EXPECT_EQ(stride, 16);
  for (size_t k = 0; k < samples.samples().size(); ++k) {
    EXPECT_EQ(samples.samples()[k], static_cast<int64_t>(k) * stride);
  }
  EXPECT_EQ(samples.min(), 0);
  EXPECT_EQ(samples.max(), 999);
  EXPECT_DOUBLE_EQ(samples.mean(), 499.5);
  const LatencyStats s = SummarizeLatency(samples);
  EXPECT_NEAR(s.median, 500, 20);
  EXPECT_LE(s.p99, s.max);
}

TEST(BenchToolTest, DimArgumentsAndResolvedTypes) {
  auto dims = ParseDimArgs({"N=4", "batch=1"});
  ASSERT_TRUE(dims.ok()) << dims.status().message();
  EXPECT_EQ(dims->at("N"), 4);
  EXPECT_STATUS(ParseDimArgs({"N=0"}), StatusCode::kInvalidArgument, "[1, 2147483647]");
  EXPECT_STATUS(ParseDimArgs({"N=-2"}), StatusCode::kInvalidArgument, "[1, 2147483647]");
  EXPECT_STATUS(ParseDimArgs({"N=2x"}), StatusCode::kInvalidArgument, "[1, 2147483647]");
  EXPECT_STATUS(ParseDimArgs({"N=2147483648"}), StatusCode::kInvalidArgument, "[1, 2147483647]");
  EXPECT_STATUS(ParseDimArgs({"=3"}), StatusCode::kInvalidArgument, "NAME=VALUE");
  EXPECT_STATUS(ParseDimArgs({"N=1", "N=2"}), StatusCode::kInvalidArgument, "twice");

  const Type t =
      Type::Tensor(ElementType::kFloat, std::vector<Dim>{{std::nullopt, "N"}, {3, ""}, {}});
  EXPECT_EQ(ResolveDims(t, *dims).ToShortString(), "float[4,3,1]");
  EXPECT_EQ(ResolveDims(t, {}).ToShortString(), "float[1,3,1]");
  EXPECT_EQ(
      ResolveDims(Type::Sequence(t), *dims).ToShortString(),
      Type::Sequence(Type::Tensor(ElementType::kFloat, std::vector<Dim>{{4, ""}, {3, ""}, {1, ""}}))
          .ToShortString());
  const Type unranked = Type::Tensor(ElementType::kFloat);
  EXPECT_EQ(ResolveDims(unranked, *dims).ToShortString(), unranked.ToShortString());
}

TEST(FeedsToolTest, SplitNameValueSplitsAtTheFirstEquals) {
  auto split = SplitNameValue("x=a=b.npy", "--input", "FILE");
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(split->first, "x");
  EXPECT_EQ(split->second, "a=b.npy");
  split = SplitNameValue("sr=", "--shape");
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(split->first, "sr");
  EXPECT_EQ(split->second, "");
  // One error text for every option: the option, the quoted argument, the form expected.
  EXPECT_STATUS(SplitNameValue("x", "--input", "FILE"), StatusCode::kInvalidArgument,
                "--input 'x': expected NAME=FILE");
  EXPECT_STATUS(SplitNameValue("=3", "--dim"), StatusCode::kInvalidArgument,
                "--dim '=3': expected NAME=VALUE");
  EXPECT_STATUS(SplitNameValue("", "--shape", "D0xD1x..."), StatusCode::kInvalidArgument,
                "--shape '': expected NAME=D0xD1x...");
}

TEST(BenchToolTest, ShapeArguments) {
  auto shape = ParseShape("1x512");
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  EXPECT_EQ(*shape, (std::vector<int64_t>{1, 512}));
  shape = ParseShape("2x0x2147483647");  // zero-size dims are valid ONNX
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  EXPECT_EQ(*shape, (std::vector<int64_t>{2, 0, 2147483647}));
  shape = ParseShape("scalar");
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  EXPECT_TRUE(shape->empty());
  shape = ParseShape("7");
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  EXPECT_EQ(*shape, (std::vector<int64_t>{7}));
  EXPECT_STATUS(ParseShape(""), StatusCode::kInvalidArgument, "write scalar for a 0-d tensor");
  for (const char* bad : {"1x", "x1", "1xx2", "1X2", "1,2", "-1x2", "+1", "1x2147483648", " 1",
                          "1x2 ", "a", "Scalar", "1e3"}) {
    EXPECT_STATUS(ParseShape(bad), StatusCode::kInvalidArgument, "[0, 2147483647]") << bad;
  }
  EXPECT_STATUS(ParseShape("4x-2"), StatusCode::kInvalidArgument, "dim 1 of '4x-2' is '-2'");

  auto shapes = ParseShapeArgs({"input=1x512", "state=2x1x128", "sr=scalar"});
  ASSERT_TRUE(shapes.ok()) << shapes.status().message();
  EXPECT_EQ(shapes->size(), 3u);
  EXPECT_EQ(shapes->at("state"), (std::vector<int64_t>{2, 1, 128}));
  EXPECT_TRUE(shapes->at("sr").empty());
  EXPECT_STATUS(ParseShapeArgs({"input"}), StatusCode::kInvalidArgument,
                "--shape 'input': expected NAME=D0xD1x...");
  EXPECT_STATUS(ParseShapeArgs({"sr="}), StatusCode::kInvalidArgument, "--shape 'sr=': ");
  EXPECT_STATUS(ParseShapeArgs({"x=1xa"}), StatusCode::kInvalidArgument, "--shape 'x=1xa': ");
  EXPECT_STATUS(ParseShapeArgs({"x=1", "y=2", "x=1"}), StatusCode::kInvalidArgument,
                "input 'x' is given twice");
}

TEST(BenchToolTest, ShapedTypesAgreeWithTheDeclaration) {
  const Limits limits;
  const Type unnamed = Type::Tensor(ElementType::kFloat, std::vector<Dim>{{}, {}});
  auto type = ShapedType({"input", unnamed}, {1, 512}, limits);
  ASSERT_TRUE(type.ok()) << type.status().message();
  EXPECT_EQ(type->ToShortString(), "float[1,512]");
  const Type state = Type::Tensor(ElementType::kFloat,
                                  std::vector<Dim>{{2, ""}, {std::nullopt, "batch"}, {128, ""}});
  type = ShapedType({"state", state}, {2, 3, 128}, limits);
  ASSERT_TRUE(type.ok()) << type.status().message();
  EXPECT_EQ(type->ToShortString(), "float[2,3,128]");
  type = ShapedType({"sr", Type::Tensor(ElementType::kInt64, std::vector<Dim>{})}, {}, limits);
  ASSERT_TRUE(type.ok()) << type.status().message();
  EXPECT_EQ(type->ToShortString(), "int64[]");
  // Unknown rank: any shape, zero-size dims included.
  type = ShapedType({"any", Type::Tensor(ElementType::kUint8)}, {3, 0, 2147483647}, limits);
  ASSERT_TRUE(type.ok()) << type.status().message();
  EXPECT_EQ(type->ToShortString(), "uint8[3,0,2147483647]");

  EXPECT_STATUS(ShapedType({"input", unnamed}, {512}, limits), StatusCode::kInvalidArgument,
                "input 'input' float[?,?]: invalid rank: got 1 (512), expected 2");
  EXPECT_STATUS(
      ShapedType({"sr", Type::Tensor(ElementType::kInt64, std::vector<Dim>{})}, {1}, limits),
      StatusCode::kInvalidArgument, "invalid rank: got 1 (1), expected 0");
  EXPECT_STATUS(ShapedType({"state", state}, {3, 1, 128}, limits), StatusCode::kInvalidArgument,
                "input 'state' float[2,batch,128]: invalid dims (3x1x128): dim 0: got 3, "
                "expected 2");
  EXPECT_STATUS(ShapedType({"state", state}, {1, 1, 64}, limits), StatusCode::kInvalidArgument,
                "dim 0: got 1, expected 2; dim 2: got 64, expected 128");
  // Too large to generate: refused before any allocation, even when the count overflows.
  EXPECT_STATUS(ShapedType({"input", unnamed}, {4096, 4097}, limits),
                StatusCode::kResourceExhausted,
                "4096x4097 is 16781312 elements, over the 16777216 a generated input may have; "
                "use --input input=FILE");
  EXPECT_STATUS(ShapedType({"any", Type::Tensor(ElementType::kFloat)},
                           std::vector<int64_t>(4, 2147483647), limits),
                StatusCode::kResourceExhausted, "is over 2^63 - 1 elements");
  // A zero dim empties the tensor whatever the others are, in any order, and it is generated;
  // the other dims' product must still fit int64, as for every tensor idem makes.
  for (const std::vector<int64_t>& empty :
       {std::vector<int64_t>{0, 2147483647}, std::vector<int64_t>{2147483647, 0}}) {
    type = ShapedType({"any", Type::Tensor(ElementType::kFloat)}, empty, limits);
    ASSERT_TRUE(type.ok()) << type.status().message();
    auto value = GenerateValue(*type, 1);
    ASSERT_TRUE(value.ok()) << value.status().message();
    EXPECT_EQ(value->tensor().element_count(), 0);
  }
  EXPECT_STATUS(ShapedType({"any", Type::Tensor(ElementType::kFloat)},
                           {0, 2147483647, 2147483647, 2147483647}, limits),
                StatusCode::kResourceExhausted, "is over 2^63 - 1 elements");
  type = ShapedType({"input", unnamed}, {4096, 4096}, limits);  // exactly the cap
  ASSERT_TRUE(type.ok()) << type.status().message();
  static_assert(kMaxGeneratedElements == uint64_t{4096} * 4096);
  // The session's own limits apply too.
  Limits small;
  small.max_tensor_bytes = 1024;
  EXPECT_STATUS(ShapedType({"input", unnamed}, {1, 512}, small), StatusCode::kResourceExhausted,
                "1x512 is 2048 bytes, over the session's limit of 1024 (Limits::max_tensor_bytes)");
  // Strings count as one std::string each.
  EXPECT_STATUS(
      ShapedType({"text", Type::Tensor(ElementType::kString)}, {64}, small),
      StatusCode::kResourceExhausted,
      fmt::format("64 is {} bytes, over the session's limit of 1024", 64 * sizeof(std::string)));
  small.max_elements = 100;
  EXPECT_STATUS(ShapedType({"input", unnamed}, {1, 512}, small), StatusCode::kResourceExhausted,
                "over the 100 a generated input may have");
  small.max_rank = 2;
  EXPECT_STATUS(ShapedType({"any", Type::Tensor(ElementType::kFloat)}, {1, 1, 1}, small),
                StatusCode::kResourceExhausted, "rank 3 is over the session's limit of 2");
  // Sequences and optionals cannot be given a shape.
  EXPECT_STATUS(ShapedType({"s", Type::Sequence(unnamed)}, {1, 2}, limits),
                StatusCode::kInvalidArgument, "input 's' seq(float[?,?]): not a tensor");
  EXPECT_STATUS(ShapedType({"o", Type::Optional(unnamed)}, {1, 2}, limits),
                StatusCode::kInvalidArgument, "use --input o=FILE");
}

// Generated floats: any bit pattern by default (bit-for-bit comparisons), finite values spread
// over [-1, 1) for timing (`idem bench`), in every floating-point type idem times.
TEST(GenerateTest, UnitRangeFillsFiniteValuesSpreadOverMinusOneToOne) {
  const std::vector<Dim> shape = {Dim{64, ""}, Dim{64, ""}};
  auto floats_of = [&](ElementType type, uint64_t seed, FloatFill fill) {
    auto value = GenerateValue(Type::Tensor(type, shape), seed, fill);
    EXPECT_TRUE(value.ok()) << value.status().message();
    std::vector<double> out;
    const Tensor& t = value->tensor();
    const auto* bytes = t.data().data();
    for (int64_t i = 0; i < t.element_count(); ++i) {
      if (type == ElementType::kFloat16 || type == ElementType::kBfloat16) {
        uint16_t bits = 0;
        std::memcpy(&bits, bytes + 2 * i, 2);
        out.push_back(type == ElementType::kFloat16 ? HalfToFloat(bits) : Bf16ToFloat(bits));
      } else if (type == ElementType::kFloat) {
        float f = 0;
        std::memcpy(&f, bytes + 4 * i, 4);
        out.push_back(f);
      } else {
        double d = 0;
        std::memcpy(&d, bytes + 8 * i, 8);
        out.push_back(d);
      }
    }
    return out;
  };
  for (ElementType type :
       {ElementType::kFloat, ElementType::kDouble, ElementType::kFloat16, ElementType::kBfloat16}) {
    const std::string name(ElementTypeName(type));
    const std::vector<double> v = floats_of(type, 7, FloatFill::kUnitRange);
    ASSERT_EQ(v.size(), size_t{4096}) << name;
    double lo = 1, hi = -1, sum = 0;
    for (double x : v) {
      ASSERT_TRUE(std::isfinite(x)) << name;
      ASSERT_GE(x, -1.0) << name;
      ASSERT_LE(x, 1.0) << name;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      sum += x;
    }
    EXPECT_LT(lo, -0.99) << name;
    EXPECT_GT(hi, 0.99) << name;
    EXPECT_LT(std::abs(sum / 4096), 0.05) << name;  // spread evenly, not one sign
    EXPECT_EQ(floats_of(type, 7, FloatFill::kUnitRange), v) << name << ": same seed, same values";
    EXPECT_NE(floats_of(type, 8, FloatFill::kUnitRange), v) << name << ": another seed";
    // The default keeps any bit pattern: 4096 random floats hold some NaN or infinity.
    const std::vector<double> bits = floats_of(type, 7, FloatFill::kBitPatterns);
    EXPECT_TRUE(std::any_of(bits.begin(), bits.end(), [](double x) { return !std::isfinite(x); }))
        << name;
  }
  // Integers and bools stay 0..3 and 0/1 (trip counts, positions) whatever the fill.
  auto ints = GenerateValue(Type::Tensor(ElementType::kInt64, shape), 3, FloatFill::kUnitRange);
  ASSERT_TRUE(ints.ok());
  for (const int64_t x : ints->tensor().data_as<int64_t>()) {
    ASSERT_GE(x, 0);
    ASSERT_LE(x, 3);
  }
  // Sequences and optionals pass the fill on to their tensors.
  auto seq = GenerateValue(Type::Sequence(Type::Tensor(ElementType::kFloat, shape)), 5,
                           FloatFill::kUnitRange);
  ASSERT_TRUE(seq.ok());
  for (const Value& item : seq->sequence().values()) {
    for (float x : item.tensor().data_as<float>())
      ASSERT_TRUE(std::isfinite(x) && std::abs(x) <= 1);
  }
}

TEST(BenchToolTest, RunsTheSeedExample) {
  BenchOptions options;
  options.runs = 20;
  options.warmup = 2;
  auto report = RunBench(IDEM_SOURCE_DIR "/tests/data/seed/test_cc_identity_opt", options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->latency.runs, 20u);
  EXPECT_EQ(report->warmup_runs, 2u);
  EXPECT_LE(report->latency.min, report->latency.median);
  EXPECT_LE(report->latency.median, report->latency.p90);
  EXPECT_LE(report->latency.p99, report->latency.max);
  ASSERT_TRUE(report->peak_rss_bytes.has_value());  // Linux has /proc/self/status
  EXPECT_GT(*report->peak_rss_bytes, 0u);
  const std::string text = FormatBenchText(*report);
  EXPECT_NE(text.find("runs              20 in"), std::string::npos) << text;
  const std::string json = FormatBenchJson(*report);
  EXPECT_NE(json.find("\"runs\": 20,"), std::string::npos) << json;
  EXPECT_EQ(json.back(), '\n');

  // Stopped (Ctrl-C) before any measured run: an error, not an empty report.
  std::atomic<bool> stop{true};
  options.stop = &stop;
  EXPECT_STATUS(RunBench(IDEM_SOURCE_DIR "/tests/data/seed/test_cc_identity_opt", options),
                StatusCode::kCancelled, "before any measured run");
  // Arguments the CLI also refuses.
  options.stop = nullptr;
  options.runs = 0;
  EXPECT_STATUS(RunBench("m.onnx", options), StatusCode::kInvalidArgument, "--runs");
  options.runs.reset();
  for (double d : {0.0, -1.0, std::nan(""), 1e9}) {
    options.duration_seconds = d;
    EXPECT_STATUS(RunBench("m.onnx", options), StatusCode::kInvalidArgument, "--duration");
  }
}

}  // namespace
}  // namespace idem::tools
