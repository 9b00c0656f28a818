// ONNX layer: TensorProto storage forms, message choice by declared type, external data
// confinement, model-level checks.
#include <gtest/gtest.h>
#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "src/onnx/external_data.h"
#include "src/onnx/model_loader.h"
#include "src/onnx/proto_convert.h"
#include "tests/test_models.h"

namespace idem {
namespace {

namespace fs = std::filesystem;

TEST(TensorProtoTest, Float16InInt32DataKeepsBitPatterns) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT16);
  p.add_dims(3);
  for (int bits : {0x7e01, 0x8000, 0x0001}) p.add_int32_data(bits);
  Value v = TensorFromProto(p, {}).value();
  auto data = v.tensor().data_as<uint16_t>();
  EXPECT_EQ(data[0], 0x7e01);
  EXPECT_EQ(data[1], 0x8000);
  EXPECT_EQ(data[2], 0x0001);
}

TEST(TensorProtoTest, RawDataIsTakenWithoutCopy) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(1024);
  p.mutable_raw_data()->assign(4096, '\x01');
  const void* before = p.raw_data().data();
  Value v = TensorFromProto(p, {}).value();
  EXPECT_EQ(static_cast<const void*>(v.tensor().data().data()), before);
}

TEST(TensorProtoTest, SizesAreCheckedBeforeAllocating) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(100000000000);
  auto r = TensorFromProto(p, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("holds no data"), std::string::npos);

  onnx::TensorProto overflow;
  overflow.set_data_type(onnx::TensorProto::FLOAT);
  overflow.add_dims(int64_t{1} << 62);
  overflow.add_dims(int64_t{1} << 62);
  overflow.set_raw_data("abcd");
  EXPECT_NE(TensorFromProto(overflow, {}).status().message().find("overflows"), std::string::npos);

  onnx::TensorProto negative;
  negative.set_data_type(onnx::TensorProto::FLOAT);
  negative.add_dims(-1);
  EXPECT_NE(TensorFromProto(negative, {}).status().message().find("negative"), std::string::npos);

  onnx::TensorProto short_raw;
  short_raw.set_data_type(onnx::TensorProto::DOUBLE);
  short_raw.add_dims(2);
  short_raw.set_raw_data(std::string(15, '\0'));
  EXPECT_NE(TensorFromProto(short_raw, {}).status().message().find("raw_data holds 15 bytes"),
            std::string::npos);
}

TEST(TensorProtoTest, WrongTypedFieldIsNamed) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::INT64);
  p.add_dims(1);
  p.add_int32_data(5);
  auto r = TensorFromProto(p, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("int64_data"), std::string::npos);
}

TEST(TensorProtoTest, UnknownElementCodesAreRefused) {
  onnx::TensorProto p;
  p.set_data_type(27);
  EXPECT_EQ(TensorFromProto(p, {}).status().code(), StatusCode::kUnsupported);
}

TEST(ValueBytesTest, MessageIsChosenByDeclaredType) {
  // An OptionalProto's bytes also parse as a TensorProto; the declared type decides.
  onnx::OptionalProto opt;
  opt.set_elem_type(onnx::OptionalProto::TENSOR);
  auto* t = opt.mutable_tensor_value();
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(1);
  t->add_float_data(3.0f);
  const std::string bytes = opt.SerializeAsString();
  const Type declared = Type::Optional(Type::Tensor(ElementType::kFloat));
  Value v = ValueFromProtoBytes(std::as_bytes(std::span(bytes)), declared, {}).value();
  ASSERT_TRUE(v.is_optional());
  ASSERT_TRUE(v.optional().has_value());
  EXPECT_EQ(v.optional().value().tensor().data_as<float>()[0], 3.0f);

  onnx::OptionalProto empty;
  empty.set_elem_type(onnx::OptionalProto::SEQUENCE);
  const std::string empty_bytes = empty.SerializeAsString();
  const Type seq_opt = Type::Optional(Type::Sequence(Type::Tensor(ElementType::kInt64)));
  Value e = ValueFromProtoBytes(std::as_bytes(std::span(empty_bytes)), seq_opt, {}).value();
  EXPECT_FALSE(e.optional().has_value());
  EXPECT_EQ(e.type().ToString(), "optional(seq(tensor(int64)))");
}

TEST(ValueBytesTest, SequenceBytesDeclaredAsTensorAreNamedAsSuch) {
  onnx::SequenceProto seq;
  seq.set_elem_type(onnx::SequenceProto::TENSOR);
  auto* t = seq.add_tensor_values();
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(1);
  t->add_float_data(1.0f);
  const std::string bytes = seq.SerializeAsString();
  auto r = ValueFromProtoBytes(std::as_bytes(std::span(bytes)), Type::Tensor(ElementType::kFloat),
                               {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a valid TensorProto"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("look like a SequenceProto"), std::string::npos)
      << r.status().message();
}

TEST(ValueBytesTest, RoundTripsEveryKind) {
  auto t = Value::MakeStringTensor({2}, {std::string("\0x", 2), "\xc3\x28"}).value();
  auto s = Value::MakeSequence(ElementType::kString, {t, t}).value();
  auto o = Value::MakeOptional(s).value();
  std::string bytes = ValueToProtoBytes(o, "v").value();
  Value back = ValueFromProtoBytes(std::as_bytes(std::span(bytes)), o.type(), {}).value();
  EXPECT_FALSE(DescribeDifference(o, back));
}

class ExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("idem_ext_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "model" / "sub");
    std::ofstream(root_ / "model" / "w.bin") << "0123456789";
    std::ofstream(root_ / "secret.bin") << "top secret";
    fs::create_symlink(root_ / "secret.bin", root_ / "model" / "link.bin");
    fs::create_directory_symlink(root_, root_ / "model" / "up");
    mkfifo((root_ / "model" / "fifo").c_str(), 0600);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string dir() const { return (root_ / "model").string(); }
  fs::path root_;
};

TEST_F(ExternalDataTest, MapsRangesInsideTheFolder) {
  Buffer b = MapExternalData(dir(), "w.bin", 2, 3).value();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), b.size()), "234");
  EXPECT_EQ(MapExternalData(dir(), "./w.bin", 0, std::nullopt).value().size(), 10u);
}

TEST_F(ExternalDataTest, RefusesEveryEscapeAndBadFile) {
  const std::vector<std::string> refused = {"/etc/passwd", "../secret.bin", "sub/../../secret.bin",
                                            "link.bin",    "up/secret.bin", "sub",
                                            "fifo",        "missing.bin",   ""};
  for (const std::string& location : refused) {
    auto r = MapExternalData(dir(), location, 0, std::nullopt);
    EXPECT_FALSE(r.ok()) << location;
    EXPECT_NE(r.status().message().find("external data"), std::string::npos) << location;
  }
  EXPECT_EQ(MapExternalData(dir(), "w.bin", 8, 3).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(MapExternalData(dir(), "w.bin", 11, std::nullopt).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_FALSE(MapExternalData("", "w.bin", 0, 1).ok());
}

TEST(ModelLoaderTest, RejectsVersionsOutsideTheSupportedRange) {
  auto type = testing::TensorTypeProto(ElementType::kFloat, {1});
  auto model = testing::IdentityChain(type, 29);
  auto r = LoadGraphFromProto(model, "", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("1 to 28"), std::string::npos);
  auto old_ir = testing::IdentityChain(type, 16, 1, 2);
  EXPECT_NE(LoadGraphFromProto(old_ir, "", {}).status().message().find("IR version 2"),
            std::string::npos);
}

TEST(ModelLoaderTest, RejectsEmptyAndGarbageBytes) {
  EXPECT_NE(LoadGraphFromBytes({}, "", {}).status().message().find("empty"), std::string::npos);
  std::vector<std::byte> garbage(64, std::byte{0xff});
  EXPECT_EQ(LoadGraphFromBytes(garbage, "", {}).status().code(), StatusCode::kInvalidModel);
}

TEST(ModelLoaderTest, TypeDepthIsLimited) {
  onnx::TypeProto t = testing::TensorTypeProto(ElementType::kFloat, {});
  for (int i = 0; i < 20; ++i) t = testing::SequenceTypeProto(t);
  Limits limits;
  EXPECT_EQ(TypeFromProto(t, limits).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace idem
