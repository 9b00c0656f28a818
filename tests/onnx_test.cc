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
  EXPECT_STATUS(r, StatusCode::kInvalidModel, "holds no data");

  onnx::TensorProto overflow;
  overflow.set_data_type(onnx::TensorProto::FLOAT);
  overflow.add_dims(int64_t{1} << 62);
  overflow.add_dims(int64_t{1} << 62);
  overflow.set_raw_data("abcd");
  EXPECT_STATUS(TensorFromProto(overflow, {}), StatusCode::kInvalidModel, "overflows");

  onnx::TensorProto negative;
  negative.set_data_type(onnx::TensorProto::FLOAT);
  negative.add_dims(-1);
  EXPECT_STATUS(TensorFromProto(negative, {}), StatusCode::kInvalidModel, "negative");

  onnx::TensorProto short_raw;
  short_raw.set_data_type(onnx::TensorProto::DOUBLE);
  short_raw.add_dims(2);
  short_raw.set_raw_data(std::string(15, '\0'));
  EXPECT_STATUS(TensorFromProto(short_raw, {}), StatusCode::kInvalidModel,
                "raw_data holds 15 bytes");
}

TEST(TensorProtoTest, WrongTypedFieldIsNamed) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::INT64);
  p.add_dims(1);
  p.add_int32_data(5);
  auto r = TensorFromProto(p, {});
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kInvalidModel, "int64_data");
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
  auto r =
      ValueFromProtoBytes(std::as_bytes(std::span(bytes)), Type::Tensor(ElementType::kFloat), {});
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kInvalidModel, "not a valid TensorProto");
  EXPECT_STATUS(r, StatusCode::kInvalidModel, "look like a SequenceProto");
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
  struct Refused {
    std::string location;
    StatusCode code;
    std::string fragment;
  };
  const std::vector<Refused> refused = {
      {"/etc/passwd", StatusCode::kInvalidModel, "absolute paths are not allowed"},
      {"../secret.bin", StatusCode::kInvalidModel, "'..' would leave the model's folder"},
      {"sub/../../secret.bin", StatusCode::kInvalidModel, "'..' would leave the model's folder"},
      {"link.bin", StatusCode::kInvalidModel, "the file is a symlink"},
      {"up/secret.bin", StatusCode::kInvalidModel, "'up' is a symlink or not a folder"},
      {"sub", StatusCode::kInvalidModel, "not a regular file"},
      {"fifo", StatusCode::kInvalidModel, "not a regular file"},
      {"missing.bin", StatusCode::kNotFound, "file not found"},
      {"", StatusCode::kInvalidModel, "empty location"},
  };
  for (const auto& [location, code, fragment] : refused) {
    auto r = MapExternalData(dir(), location, 0, std::nullopt);
    EXPECT_STATUS(r, code, "external data '" + location + "'") << location;
    EXPECT_STATUS(r, code, fragment) << location;
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
  EXPECT_STATUS(r, StatusCode::kUnsupported, "1 to 28");
  auto old_ir = testing::IdentityChain(type, 16, 1, 2);
  EXPECT_STATUS(LoadGraphFromProto(old_ir, "", {}), StatusCode::kUnsupported, "IR version 2");
}

TEST(ModelLoaderTest, RejectsEmptyAndGarbageBytes) {
  EXPECT_STATUS(LoadGraphFromBytes({}, "", {}), StatusCode::kInvalidModel, "empty");
  std::vector<std::byte> garbage(64, std::byte{0xff});
  EXPECT_EQ(LoadGraphFromBytes(garbage, "", {}).status().code(), StatusCode::kInvalidModel);
}

TEST(ModelLoaderTest, TypeDepthIsLimited) {
  onnx::TypeProto t = testing::TensorTypeProto(ElementType::kFloat, {});
  for (int i = 0; i < 20; ++i) t = testing::SequenceTypeProto(t);
  Limits limits;
  EXPECT_EQ(TypeFromProto(t, limits).status().code(), StatusCode::kResourceExhausted);
}

// ---- issue 12: silent misreads and external-data integrity.

TEST(TensorProtoTest, TypedFieldsOutOfRangeAreRefusedNotTruncated) {
  struct Case {
    int type;                   // element type code
    std::vector<int64_t> good;  // boundary values that must be accepted
    std::vector<int64_t> bad;   // values a narrowing copy would silently change
  };
  const std::vector<Case> int32_cases = {
      {onnx::TensorProto::UINT8, {0, 255}, {256, 300, -1}},
      {onnx::TensorProto::INT8, {-128, 127}, {128, -129}},
      {onnx::TensorProto::UINT16, {0, 65535}, {65536, -1}},
      {onnx::TensorProto::INT16, {-32768, 32767}, {32768, -32769}},
      {onnx::TensorProto::BOOL, {0, 1}, {2, -1}},
      {onnx::TensorProto::FLOAT16, {0, 0xffff}, {0x10000, -1}},
      {onnx::TensorProto::BFLOAT16, {0, 0xffff}, {0x1ffff}},
      {17, {0, 255}, {256}},         // float8e4m3fn (onnx 1.12 has no enum name for it)
      {21, {0, 0xff}, {0x1ff, -1}},  // uint4: one packed byte per entry
      {22, {0, 0xff}, {0x100}},      // int4
  };
  for (const Case& c : int32_cases) {
    const auto et = static_cast<ElementType>(c.type);
    const bool packed = ElementBits(et) < 8;
    for (int64_t v : c.good) {
      onnx::TensorProto p;
      p.set_data_type(c.type);
      p.add_dims(packed ? 2 : 1);
      p.add_int32_data(static_cast<int32_t>(v));
      EXPECT_TRUE(TensorFromProto(p, {}).ok()) << c.type << " " << v;
    }
    for (int64_t v : c.bad) {
      onnx::TensorProto p;
      p.set_data_type(c.type);
      p.add_dims(packed ? 2 : 1);
      p.add_int32_data(static_cast<int32_t>(v));
      auto r = TensorFromProto(p, {});
      ASSERT_FALSE(r.ok()) << c.type << " " << v;
      EXPECT_STATUS(r, StatusCode::kInvalidModel, "int32_data[0]");
      EXPECT_STATUS(r, StatusCode::kInvalidModel, "out of range");
    }
  }
  onnx::TensorProto u32;
  u32.set_data_type(onnx::TensorProto::UINT32);
  u32.add_dims(2);
  u32.add_uint64_data(0xffffffffu);
  u32.add_uint64_data(uint64_t{1} << 40);
  auto r = TensorFromProto(u32, {});
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kInvalidModel, "uint64_data[1]");
  u32.set_uint64_data(1, 7);
  Value ok = TensorFromProto(u32, {}).value();
  EXPECT_EQ(ok.tensor().data_as<uint32_t>()[0], 0xffffffffu);
}

TEST(TensorProtoTest, DimsOverflowRuleDoesNotDependOnOrder) {
  const int64_t big = int64_t{1} << 62;
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{0, big, big}, {big, big, 0}, {big, 0, big}}) {
    onnx::TensorProto p;
    p.set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) p.add_dims(d);
    p.set_raw_data("");
    auto r = TensorFromProto(p, {});
    ASSERT_FALSE(r.ok());
    EXPECT_STATUS(r, StatusCode::kInvalidModel, "overflows");
  }
}

TEST(ValueBytesTest, WrongMessageKindsAreRefusedAndNamed) {
  onnx::TensorProto t;
  t.set_name("t");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.set_raw_data(std::string(8, '\0'));
  const std::string tensor_bytes = t.SerializeAsString();
  const auto bytes = std::as_bytes(std::span(tensor_bytes));
  for (const Type& declared : {Type::Sequence(Type::Tensor(ElementType::kFloat)),
                               Type::Optional(Type::Tensor(ElementType::kFloat)),
                               Type::Optional(Type::Sequence(Type::Tensor(ElementType::kFloat)))}) {
    auto r = ValueFromProtoBytes(bytes, declared, {});
    ASSERT_FALSE(r.ok()) << declared.ToString();
    EXPECT_STATUS(r, StatusCode::kInvalidModel, "look like a TensorProto");
    EXPECT_STATUS(r, StatusCode::kInvalidModel, declared.ToString());
  }
  // An unknown field deep inside (a sequence item) is found too.
  onnx::SequenceProto seq;
  seq.set_elem_type(onnx::SequenceProto::TENSOR);
  *seq.add_tensor_values() = t;
  seq.mutable_tensor_values(0)
      ->GetReflection()
      ->MutableUnknownFields(seq.mutable_tensor_values(0))
      ->AddVarint(99, 1);
  const std::string seq_bytes = seq.SerializeAsString();
  auto r = ValueFromProtoBytes(std::as_bytes(std::span(seq_bytes)),
                               Type::Sequence(Type::Tensor(ElementType::kFloat)), {});
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kInvalidModel, "field 99");
  EXPECT_STATUS(r, StatusCode::kInvalidModel, "tensor_values[0]");
  // A wire-type mismatch on a known field (elem_type sent as a string) is refused as well.
  std::string mismatched;
  mismatched.push_back(static_cast<char>((2 << 3) | 2));  // field 2, length-delimited
  mismatched.push_back(1);
  mismatched.push_back('x');
  r = ValueFromProtoBytes(std::as_bytes(std::span(mismatched)),
                          Type::Sequence(Type::Tensor(ElementType::kFloat)), {});
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kInvalidModel, "field 2 (length-delimited)");
  // Sparse tensors inside a sequence are not silently dropped.
  onnx::SequenceProto sparse;
  sparse.add_sparse_tensor_values()->mutable_values()->set_data_type(onnx::TensorProto::FLOAT);
  const std::string sparse_bytes = sparse.SerializeAsString();
  EXPECT_FALSE(ValueFromProtoBytes(std::as_bytes(std::span(sparse_bytes)),
                                   Type::Sequence(Type::Tensor(ElementType::kFloat)), {})
                   .ok());
}

TEST_F(ExternalDataTest, HardLinksAreRefusedUnlessAllowed) {
  ASSERT_EQ(link((root_ / "secret.bin").c_str(), (root_ / "model" / "hard.bin").c_str()), 0);
  auto r = MapExternalData(dir(), "hard.bin", 0, std::nullopt);
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kInvalidModel, "hard links");
  ExternalDataOptions allow;
  allow.allow_hard_links = true;
  Buffer b = MapExternalData(dir(), "hard.bin", 0, std::nullopt, allow).value();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), b.size()), "top secret");
}

TEST_F(ExternalDataTest, CopyModeSurvivesTruncationAndRewrites) {
  using namespace testing;
  // A model whose initializer lives in w.bin, loaded in copy mode: truncating or rewriting the
  // file afterwards must not change (or fault on) the values the session hands out.
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  {
    std::ofstream f(root_ / "model" / "big.bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(values.data()), 24);
  }
  onnx::ModelProto m = EmptyModel(13, 8);
  onnx::GraphProto* g = m.mutable_graph();
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(6);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = w->add_external_data();
  entry->set_key("location");
  entry->set_value("big.bin");
  AddNode(g, "Identity", {"w"}, {"y"});
  AddValueInfo(g->mutable_output(), "y", TensorTypeProto(ElementType::kFloat, {6}));
  const std::string path = (root_ / "model" / "m.onnx").string();
  {
    std::ofstream f(path, std::ios::binary);
    f << m.SerializeAsString();
  }
  SessionOptions copy;
  copy.external_data = ExternalDataMode::kCopy;
  auto session = Session::Create(path, copy);
  ASSERT_TRUE(session.ok()) << session.status().message();
  SessionOptions map;  // the default
  auto mapped = Session::Create(path, map);
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  auto mapped_out = mapped->Run({}).value();
  // Overwrite in place: a mapped value changes (documented), a copied one does not.
  {
    std::vector<float> other = {9, 9, 9, 9, 9, 9};
    std::fstream f(root_ / "model" / "big.bin", std::ios::binary | std::ios::in | std::ios::out);
    f.write(reinterpret_cast<const char*>(other.data()), 24);
  }
  EXPECT_EQ(mapped_out[0].tensor().data_as<float>()[0], 9.0f);
  mapped_out.clear();
  mapped = Status(StatusCode::kInternal, "released");  // unmap before truncating
  ASSERT_EQ(truncate((root_ / "model" / "big.bin").c_str(), 0), 0);
  auto out = session->Run({}).value();
  auto data = out[0].tensor().data_as<float>();
  ASSERT_EQ(data.size(), 6u);
  EXPECT_EQ(std::vector<float>(data.begin(), data.end()), values);
}

}  // namespace
}  // namespace idem
