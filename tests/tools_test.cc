// Tools layer: the .npy reader (a hand parser of numpy's header dict) and the all-or-nothing
// writer behind `idem run --output-dir`.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/status_matchers.h"
#include "tools/backend_test.h"
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
  EXPECT_STATUS(s, StatusCode::kIoError, "b.pb");
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

}  // namespace
}  // namespace idem::tools
