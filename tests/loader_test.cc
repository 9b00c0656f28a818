// Loading models in place: the wire walker, raw_data references into the model's bytes, limits
// checked before protobuf materialises anything, and files over 2 GiB.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include "src/onnx/model_loader.h"
#include "src/onnx/proto_convert.h"
#include "src/onnx/wire_walker.h"
#include "tests/test_models.h"

namespace idem {
namespace {

using testing::AddNode;
using testing::AddValueInfo;
using testing::EmptyModel;
using testing::TensorTypeProto;

std::span<const std::byte> AsBytes(const std::string& s) { return std::as_bytes(std::span(s)); }

bool Inside(const std::byte* p, const std::string& s) {
  const auto* b = reinterpret_cast<const std::byte*>(s.data());
  return p >= b && p < b + s.size();
}

// y = Identity(w) where w is an initializer of `count` floats 0, 1, 2... in raw_data; the tensor
// name's length shifts where the payload lands in the serialized bytes.
onnx::ModelProto InitializerModel(int count, const std::string& name = "w",
                                  ElementType type = ElementType::kFloat) {
  onnx::ModelProto m = EmptyModel(13, 8);
  auto* g = m.mutable_graph();
  auto* w = g->add_initializer();
  w->set_name(name);
  w->set_data_type(static_cast<int32_t>(type));
  w->add_dims(count);
  std::string raw(static_cast<size_t>(count) * (ElementBits(type) / 8), '\0');
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<char>(i * 7 + 1);
  w->set_raw_data(raw);
  AddNode(g, "Identity", {name}, {"y"}, "id");
  AddValueInfo(g->mutable_output(), "y", TensorTypeProto(type, {count}));
  return m;
}

TEST(WireWalkerTest, CompactCopyIsTheInputWithNodesSetApart) {
  onnx::ModelProto m = testing::IdentityChain(TensorTypeProto(ElementType::kFloat, {2}), 13, 5);
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("x");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(3);
  a->add_ints(300);
  const std::string bytes = m.SerializeAsString();
  auto compact = CompactModelBytes(AsBytes(bytes), Limits{});
  ASSERT_TRUE(compact.ok()) << compact.status().message();
  EXPECT_TRUE(compact->refs.empty());
  // The main graph's nodes are set apart, each byte for byte as in the input; the rest is the
  // input without them.
  ASSERT_EQ(compact->nodes.size(), 5u);
  onnx::ModelProto without_nodes = m;
  without_nodes.mutable_graph()->clear_node();
  EXPECT_EQ(compact->bytes, without_nodes.SerializeAsString());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(compact->Node(static_cast<size_t>(i)), m.graph().node(i).SerializeAsString());
    // Nothing in these nodes changes, so they are read in place: no copy is kept.
    EXPECT_TRUE(compact->nodes[static_cast<size_t>(i)].in_input) << i;
  }
  EXPECT_TRUE(compact->node_bytes.empty());
  EXPECT_EQ(compact->counts.nodes, 5u);
  EXPECT_EQ(compact->counts.values, 2u);
}

TEST(WireWalkerTest, RawDataBecomesAReferenceIntoTheInput) {
  const std::string bytes = InitializerModel(1000).SerializeAsString();
  auto compact = CompactModelBytes(AsBytes(bytes), Limits{});
  ASSERT_TRUE(compact.ok()) << compact.status().message();
  ASSERT_EQ(compact->refs.size(), 1u);
  EXPECT_EQ(compact->refs[0].length, 4000u);
  EXPECT_LT(compact->bytes.size(), 100u);
  onnx::ModelProto original;
  ASSERT_TRUE(original.ParseFromString(bytes));
  EXPECT_EQ(bytes.substr(compact->refs[0].offset, 4000),
            original.graph().initializer(0).raw_data());
  onnx::ModelProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(compact->bytes));
  EXPECT_FALSE(parsed.graph().initializer(0).has_raw_data());
  EXPECT_EQ(parsed.graph().initializer(0).dims(0), 1000);
}

TEST(ModelInPlaceTest, InitializerAndOutputPointIntoTheCallersBytes) {
  // Try name lengths until the payload is 4-aligned in memory (std::string data is 16-aligned).
  for (const std::string name : {"w", "ww", "www", "wwww"}) {
    const std::string bytes = InitializerModel(1000, name).SerializeAsString();
    auto session = Session::CreateFromBytes(AsBytes(bytes));
    ASSERT_TRUE(session.ok()) << session.status().message();
    auto out = session->Run(std::span<const Value>{});
    ASSERT_TRUE(out.ok()) << out.status().message();
    const Tensor& y = (*out)[0].tensor();
    ASSERT_EQ(y.data().size(), 4000u);
    onnx::ModelProto original;
    ASSERT_TRUE(original.ParseFromString(bytes));
    EXPECT_EQ(std::memcmp(y.data().data(), original.graph().initializer(0).raw_data().data(), 4000),
              0);
    const bool aligned = reinterpret_cast<uintptr_t>(y.data().data()) % 4 == 0;
    EXPECT_TRUE(aligned);
    if (Inside(y.data().data(), bytes)) {
      EXPECT_NE(session->Describe().find("raw_data: 4000 bytes in place, 0 bytes copied"),
                std::string::npos)
          << session->Describe();
    } else {
      // Misaligned in the input: copied, and reported.
      EXPECT_NE(session->Describe().find("raw_data: 0 bytes in place, 4000 bytes copied"),
                std::string::npos)
          << session->Describe();
    }
  }
}

TEST(ModelInPlaceTest, MisalignedPayloadsAreCopiedAndCounted) {
  int in_place = 0, copied = 0;
  for (const std::string name : {"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg"}) {
    const std::string bytes = InitializerModel(16, name, ElementType::kDouble).SerializeAsString();
    auto graph = LoadGraphFromBytes(AsBytes(bytes), "", Limits{});
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    const Tensor& w = graph->initializers[0].value.tensor();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data().data()) % 8, 0u);
    if (Inside(w.data().data(), bytes)) {
      ++in_place;
      EXPECT_EQ(graph->raw_bytes_in_place, 128u);
      EXPECT_EQ(graph->raw_bytes_copied, 0u);
    } else {
      ++copied;
      EXPECT_EQ(graph->raw_bytes_in_place, 0u);
      EXPECT_EQ(graph->raw_bytes_copied, 128u);
    }
  }
  EXPECT_GT(in_place, 0);
  EXPECT_GT(copied, 0);
}

TEST(ModelInPlaceTest, ConstantTensorAttributePointsIntoTheBytes) {
  onnx::ModelProto m = EmptyModel(13, 8);
  auto* g = m.mutable_graph();
  auto* n = AddNode(g, "Constant", {}, {"y"}, "c");
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(static_cast<int32_t>(ElementType::kUint8));
  a->mutable_t()->add_dims(64);
  a->mutable_t()->set_raw_data(std::string(64, 'q'));
  AddValueInfo(g->mutable_output(), "y", TensorTypeProto(ElementType::kUint8, {64}));
  const std::string bytes = m.SerializeAsString();
  // The node's raw_data became a reference, so its compact bytes differ from the input's: they
  // are a copy (the only bytes in node_bytes), not read in place.
  auto compact = CompactModelBytes(AsBytes(bytes), Limits{});
  ASSERT_TRUE(compact.ok()) << compact.status().message();
  ASSERT_EQ(compact->nodes.size(), 1u);
  EXPECT_FALSE(compact->nodes[0].in_input);
  EXPECT_EQ(compact->Node(0).size(), compact->node_bytes.size());
  EXPECT_LE(compact->node_bytes.size() + 60, m.graph().node(0).ByteSizeLong());  // payload gone
  ASSERT_EQ(compact->refs.size(), 1u);
  EXPECT_EQ(compact->refs[0].length, 64u);
  auto graph = LoadGraphFromBytes(AsBytes(bytes), "", Limits{});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const Attribute& attr = graph->nodes[0].attributes[0];
  ASSERT_EQ(attr.kind, Attribute::Kind::kTensor);
  const Tensor& t = attr.tensor.tensor();
  EXPECT_TRUE(Inside(t.data().data(), bytes));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.data().data()), 64), std::string(64, 'q'));
}

TEST(ModelInPlaceTest, RawDataKeepsTheLastOccurrenceAsProtobufDoes) {
  // A TensorProto whose raw_data occurs twice (two serialized messages concatenated): protobuf
  // keeps the last, and so must the reference.
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(1);
  t.add_dims(2);
  t.set_raw_data(std::string(8, 'a'));
  std::string tensor = t.SerializeAsString();
  onnx::TensorProto second;
  second.set_raw_data(std::string(8, 'b'));
  tensor += second.SerializeAsString();  // raw_data twice: the last (bbbb...) wins
  onnx::TensorProto merged;
  ASSERT_TRUE(merged.ParseFromString(tensor));
  EXPECT_EQ(merged.raw_data(), std::string(8, 'b'));
  // Wrap the tensor as a Constant attribute.
  onnx::ModelProto c = EmptyModel(13, 8);
  auto* n = AddNode(c.mutable_graph(), "Constant", {}, {"y"}, "c");
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  ASSERT_TRUE(a->mutable_t()->ParseFromString(tensor));
  const std::string with_tensor = c.SerializeAsString();
  auto graph = LoadGraphFromBytes(AsBytes(with_tensor), "", Limits{});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const Tensor& value = graph->nodes[0].attributes[0].tensor.tensor();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(value.data().data()), 8),
            std::string(8, 'b'));
}

TEST(ModelInPlaceTest, TheReservedFieldIsRefused) {
  onnx::ModelProto m = InitializerModel(2);
  m.mutable_graph()->mutable_initializer(0)->mutable_unknown_fields()->AddVarint(kRawRefField, 0);
  const std::string bytes = m.SerializeAsString();
  auto from_bytes = Session::CreateFromBytes(AsBytes(bytes));
  ASSERT_FALSE(from_bytes.ok());
  EXPECT_STATUS(from_bytes, StatusCode::kInvalidModel, "reserves");
  auto from_proto = CreateSessionFromProto(m);
  ASSERT_FALSE(from_proto.ok());
  EXPECT_STATUS(from_proto, StatusCode::kInvalidModel, "reserves");
}

TEST(ModelInPlaceTest, ValuesOutliveTheSessionAndTheFile) {
  const std::string path = ::testing::TempDir() + "/idem_inplace_model.onnx";
  {
    std::string bytes = InitializerModel(4096).SerializeAsString();
    FILE* f = fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  }
  std::vector<Value> outputs;
  {
    auto session = Session::Create(path);
    ASSERT_TRUE(session.ok()) << session.status().message();
    auto out = session->Run(std::span<const Value>{});
    ASSERT_TRUE(out.ok());
    outputs = std::move(out).value();
  }
  unlink(path.c_str());
  // The session is gone and the file unlinked; the value still holds the bytes it points into.
  const Tensor& y = outputs[0].tensor();
  ASSERT_EQ(y.data().size(), 4u * 4096);
  EXPECT_EQ(static_cast<uint8_t>(y.data().data()[5]), static_cast<uint8_t>(5 * 7 + 1));
}

TEST(ModelInPlaceTest, CopyModeReadsTheFileOnce) {
  const std::string path = ::testing::TempDir() + "/idem_copy_model.onnx";
  {
    std::string bytes = InitializerModel(4096).SerializeAsString();
    FILE* f = fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  }
  SessionOptions options;
  options.external_data = ExternalDataMode::kCopy;
  auto session = Session::Create(path, options);
  ASSERT_TRUE(session.ok()) << session.status().message();
  // Truncating a mapped file would make reading the tensor a SIGBUS; a copied one is unaffected.
  ASSERT_EQ(truncate(path.c_str(), 0), 0);
  auto out = session->Run(std::span<const Value>{});
  ASSERT_TRUE(out.ok());
  const Tensor& y = (*out)[0].tensor();
  ASSERT_EQ(y.data().size(), 4u * 4096);
  EXPECT_EQ(static_cast<uint8_t>(y.data().data()[4 * 4096 - 1]),
            static_cast<uint8_t>((4 * 4096 - 1) * 7 + 1));
  unlink(path.c_str());
}

// Writes `bytes` to a fresh file under TempDir() and returns its path.
std::string WriteTempModel(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// A small model file is read into memory the loader owns, where a misaligned payload is moved back
// over its own tag and length into alignment instead of being copied: every payload keeps its
// bytes and its neighbours' (payloads of each element size, misaligned by every amount, back to
// back), only those whose framing is shorter than their misalignment are copied, and the counts
// say which. The same model from the caller's bytes (which idem never writes) copies instead.
TEST(ModelInPlaceTest, SmallFilesMoveMisalignedPayloadsIntoAlignment) {
  onnx::ModelProto m = EmptyModel(13, 8);
  auto* g = m.mutable_graph();
  struct Payload {
    std::string name;
    ElementType type;
    std::string raw;
  };
  std::vector<Payload> payloads;
  std::mt19937 rng(3);
  const ElementType types[] = {ElementType::kFloat, ElementType::kDouble, ElementType::kInt16,
                               ElementType::kInt64, ElementType::kUint8};
  // Name lengths 1 to 8 move each payload's offset through every residue; counts from 1 element
  // (a 1-byte length varint: 2 bytes of framing) to 300 (2 bytes of varint: 3 of framing).
  for (int i = 0; i < 40; ++i) {
    const ElementType type = types[i % 5];
    const int count = (i / 5) % 2 == 0 ? 1 + i % 3 : 300;
    Payload p{std::string(static_cast<size_t>(1 + i % 8), static_cast<char>('a' + i % 26)) +
                  std::to_string(i),
              type, std::string(static_cast<size_t>(count) * (ElementBits(type) / 8), '\0')};
    for (char& c : p.raw) c = static_cast<char>(rng());
    auto* t = g->add_initializer();
    t->set_name(p.name);
    t->set_data_type(static_cast<int32_t>(type));
    t->add_dims(count);
    t->set_raw_data(p.raw);
    payloads.push_back(std::move(p));
  }
  // One more whose raw_data field appears twice: the last one is the payload (as protobuf reads
  // it), and moving it must not disturb the first.
  {
    Payload p{"twice", ElementType::kFloat, std::string(400, '\0')};
    for (char& c : p.raw) c = static_cast<char>(rng());
    auto* t = g->add_initializer();
    t->set_name(p.name);
    t->set_data_type(static_cast<int32_t>(ElementType::kFloat));
    t->add_dims(100);
    t->set_raw_data(std::string(400, 'x'));
    t->mutable_unknown_fields()->AddLengthDelimited(9, p.raw);
    payloads.push_back(std::move(p));
  }
  AddNode(g, "Identity", {payloads[0].name}, {"y"}, "id");
  AddValueInfo(g->mutable_output(), "y", TensorTypeProto(payloads[0].type, {1}));
  const std::string bytes = m.SerializeAsString();
  ASSERT_LE(bytes.size(), kReadWholeFileBytes);
  const std::string path = WriteTempModel("idem_shifted_payloads.onnx", bytes);

  auto check = [&](const GraphDef& graph, const char* source) {
    ASSERT_EQ(graph.initializers.size(), payloads.size()) << source;
    uint64_t total = 0;
    for (size_t i = 0; i < payloads.size(); ++i) {
      const Tensor& t = graph.initializers[i].value.tensor();
      const std::string& raw = payloads[i].raw;
      total += raw.size();
      ASSERT_EQ(t.data().size(), raw.size()) << source << " " << payloads[i].name;
      EXPECT_EQ(std::memcmp(t.data().data(), raw.data(), raw.size()), 0)
          << source << " " << payloads[i].name;
      const auto alignment = static_cast<uintptr_t>(ElementBits(payloads[i].type) / 8);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data().data()) % alignment, 0u)
          << source << " " << payloads[i].name;
    }
    EXPECT_EQ(graph.raw_bytes_in_place + graph.raw_bytes_copied, total) << source;
  };
  auto from_file = LoadGraphFromFile(path, Limits{}, ExternalDataOptions{});
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  check(*from_file, "file");
  EXPECT_GT(from_file->raw_bytes_shifted, 0u);
  EXPECT_LE(from_file->raw_bytes_shifted, from_file->raw_bytes_in_place);
  auto from_bytes = LoadGraphFromBytes(AsBytes(bytes), "", Limits{});
  ASSERT_TRUE(from_bytes.ok()) << from_bytes.status().message();
  check(*from_bytes, "caller's bytes");
  EXPECT_EQ(from_bytes->raw_bytes_shifted, 0u);
  // Moving saves copies: what the caller's bytes copy, the file moves (all but the 8-byte
  // elements misaligned by more than their framing).
  EXPECT_LT(from_file->raw_bytes_copied, from_bytes->raw_bytes_copied);
  auto session = Session::Create(path);
  ASSERT_TRUE(session.ok()) << session.status().message();
  EXPECT_NE(session->Describe().find("moved into alignment"), std::string::npos)
      << session->Describe();
  unlink(path.c_str());
}

// KiB of `path`'s mappings resident in this process (/proc/self/smaps), or -1 if none is mapped.
long ResidentKiBOfMapping(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_path = false;
  long total = -1;
  while (std::getline(smaps, line)) {
    const bool header = !line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
                        line.find('-') != std::string::npos && line.find(':') > line.find(' ');
    if (header) {
      in_path = line.size() >= path.size() &&
                line.compare(line.size() - path.size(), path.size(), path) == 0;
      if (in_path && total < 0) total = 0;
    } else if (in_path && line.rfind("Rss:", 0) == 0) {
      total += std::atol(line.c_str() + 4);
    }
  }
  return total;
}

// A model file of at most kReadWholeFileBytes is read, not mapped: truncating it after Create
// (a SIGBUS for a mapped one's next read) leaves the session and its values as they were, and
// the process maps nothing of it. The 16 MiB model below is still mapped.
TEST(ModelInPlaceTest, SmallFilesAreReadNotMapped) {
  const std::string path = ::testing::TempDir() + "/idem_small_read_model.onnx";
  {
    std::string bytes = InitializerModel(4096).SerializeAsString();
    ASSERT_LE(bytes.size(), kReadWholeFileBytes);
    FILE* f = fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  }
  auto session = Session::Create(path);
  ASSERT_TRUE(session.ok()) << session.status().message();
  char* canonical = realpath(path.c_str(), nullptr);
  ASSERT_NE(canonical, nullptr);
  const std::string real_path = canonical;
  free(canonical);  // NOLINT(cppcoreguidelines-no-malloc): realpath's contract
  EXPECT_EQ(ResidentKiBOfMapping(real_path), -1) << real_path << " is mapped";
  ASSERT_EQ(truncate(path.c_str(), 0), 0);
  auto out = session->Run(std::span<const Value>{});
  ASSERT_TRUE(out.ok()) << out.status().message();
  const Tensor& y = (*out)[0].tensor();
  ASSERT_EQ(y.data().size(), 4u * 4096);
  EXPECT_EQ(static_cast<uint8_t>(y.data().data()[4 * 4096 - 1]),
            static_cast<uint8_t>((4 * 4096 - 1) * 7 + 1));
  unlink(path.c_str());
}

// Misaligned raw_data is copied out of the mapped file; the file's pages it was read from are then
// dropped, so the weights are not resident twice (once copied, once as file pages).
TEST(ModelInPlaceTest, CopiedPayloadsLeaveNoResidentFilePages) {
  constexpr int kCount = 1 << 22;  // 16 MiB of floats, misaligned in the file
  // A second, small initializer left in place keeps the mapping alive (as a model's aligned
  // weights do). Name lengths shift both payloads until the big one is misaligned and the small
  // one aligned (mmap places the file at a page boundary, so file offsets decide).
  std::string bytes;
  for (int big = 1; big <= 4 && bytes.empty(); ++big) {
    for (int small = 1; small <= 4 && bytes.empty(); ++small) {
      onnx::ModelProto m = InitializerModel(kCount, std::string(big, 'w'));
      auto* s = m.mutable_graph()->add_initializer();
      s->set_name(std::string(small, 's'));
      s->set_data_type(static_cast<int32_t>(ElementType::kFloat));
      s->add_dims(4);
      s->set_raw_data(std::string(16, 'S'));
      std::string candidate = m.SerializeAsString();
      const size_t big_at = candidate.find(m.graph().initializer(0).raw_data());
      const size_t small_at = candidate.find(std::string(16, 'S'));
      ASSERT_NE(big_at, std::string::npos);
      ASSERT_NE(small_at, std::string::npos);
      if (big_at % 4 != 0 && small_at % 4 == 0) bytes = std::move(candidate);
    }
  }
  ASSERT_FALSE(bytes.empty());
  const std::string path = ::testing::TempDir() + "/idem_copied_pages_model.onnx";
  {
    FILE* f = fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  }
  // smaps names the file by its canonical path (TempDir() may end in '/').
  char* canonical = realpath(path.c_str(), nullptr);
  ASSERT_NE(canonical, nullptr);
  const std::string mapped_path = canonical;
  free(canonical);  // NOLINT(cppcoreguidelines-no-malloc): realpath's contract
  auto graph = LoadGraphFromFile(path, Limits{}, ExternalDataOptions{});
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  EXPECT_EQ(graph->raw_bytes_copied, 4u * kCount);
  onnx::ModelProto original;
  ASSERT_TRUE(original.ParseFromString(bytes));
  const Tensor& w = graph->initializers[0].value.tensor();
  ASSERT_EQ(w.data().size(), 4u * kCount);
  EXPECT_EQ(
      std::memcmp(w.data().data(), original.graph().initializer(0).raw_data().data(), 4u * kCount),
      0);
  // The mapping stays alive while the graph holds it (other tensors may lie in it in place), but
  // of the 16 MiB read to make the copy, only what later reads of the file around it fault in
  // again stays: on kernels that cache files in 2 MiB folios and map a touched folio whole
  // (Linux 6.x on ext4), up to a folio at each end. Without dropping them, all 16 MiB would stay.
  const long resident = ResidentKiBOfMapping(mapped_path);
  EXPECT_GE(resident, 0) << "the graph no longer maps " << mapped_path;
  EXPECT_LT(resident, 8 * 1024) << "KiB of " << mapped_path << " resident after the copy";
  unlink(path.c_str());
}

// Bytes the caller hands in (heap memory) are never dropped: only a file mapping refaults its
// pages from the file.
TEST(ModelInPlaceTest, CopiedPayloadsLeaveTheCallersBytesIntact) {
  constexpr int kCount = 1 << 18;
  for (const std::string name : {"w", "ww", "www", "wwww"}) {
    const std::string bytes = InitializerModel(kCount, name).SerializeAsString();
    const std::string before = bytes;
    auto graph = LoadGraphFromBytes(AsBytes(bytes), "", Limits{});
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    EXPECT_EQ(bytes, before) << name;
  }
}

TEST(WireLimitsTest, CountsAreRefusedOnTheWire) {
  Limits limits;
  limits.max_nodes = 3;
  const std::string chain =
      testing::IdentityChain(TensorTypeProto(ElementType::kFloat, {1}), 13, 4).SerializeAsString();
  auto r = LoadGraphFromBytes(AsBytes(chain), "", limits);
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kResourceExhausted, "max_nodes 3");

  Limits values;
  values.max_values = 1;
  r = LoadGraphFromBytes(AsBytes(chain), "", values);
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kResourceExhausted, "max_values 1");

  Limits rank;
  rank.max_rank = 3;
  onnx::ModelProto m = InitializerModel(1);
  for (int i = 0; i < 3; ++i) m.mutable_graph()->mutable_initializer(0)->add_dims(1);
  const std::string four_dims = m.SerializeAsString();
  r = LoadGraphFromBytes(AsBytes(four_dims), "", rank);
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kResourceExhausted, "max_rank 3");
  // The same limit holds for a message that never went through the walker.
  auto from_proto = CreateSessionFromProto(m, "", SessionOptions{rank});
  ASSERT_FALSE(from_proto.ok());
  EXPECT_STATUS(from_proto, StatusCode::kResourceExhausted, "max_rank 3");
}

TEST(WireLimitsTest, SubgraphDepthIsRefusedOnTheWire) {
  // A node attribute holding a graph holding a node holding a graph... 20 deep (each level is
  // three messages deep on the wire, so protobuf's own limit of 100 is not reached).
  onnx::GraphProto inner;
  for (int i = 0; i < 20; ++i) {
    onnx::GraphProto outer;
    auto* n = outer.add_node();
    n->set_op_type("If");
    auto* a = n->add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = inner;
    inner = std::move(outer);
  }
  onnx::ModelProto m = EmptyModel(13, 8);
  *m.mutable_graph() = inner;
  const std::string bytes = m.SerializeAsString();
  Limits limits;
  limits.max_graph_depth = 10;
  auto r = LoadGraphFromBytes(AsBytes(bytes), "", limits);
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kResourceExhausted, "max_graph_depth 10");
  // Deeper than protobuf's recursion limit: refused as protobuf refuses it.
  for (int i = 0; i < 20; ++i) {
    onnx::GraphProto outer;
    auto* a = outer.add_node()->add_attribute();
    a->set_name("body");
    *a->mutable_g() = inner;
    inner = std::move(outer);
  }
  *m.mutable_graph() = inner;
  const std::string deep = m.SerializeAsString();
  onnx::ModelProto reference;
  EXPECT_FALSE(reference.ParseFromString(deep));
  r = LoadGraphFromBytes(AsBytes(deep), "", Limits{});
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kInvalidModel, "nested deeper than 100");
}

TEST(WireLimitsTest, LoadMemoryIsBudgetedBeforeParsing) {
  // 200,000 empty nodes: 400 KB of file that protobuf would turn into ~60 MB of objects.
  onnx::ModelProto m = EmptyModel(13, 8);
  std::string bytes = m.SerializeAsString();
  std::string graph;
  for (int i = 0; i < 200000; ++i) graph += std::string("\x0a\x00", 2);
  onnx::GraphProto g;
  ASSERT_TRUE(g.ParseFromString(graph));
  *m.mutable_graph() = g;
  bytes = m.SerializeAsString();
  Limits limits;
  limits.max_load_memory_floor = 16 << 20;
  limits.max_load_memory_factor = 24;
  auto r = LoadGraphFromBytes(AsBytes(bytes), "", limits);
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kResourceExhausted, "max_load_memory_factor 24");
  // With the default floor the same file is small enough to be read (and then refused by the
  // graph rules, not by the budget).
  auto fine = LoadGraphFromBytes(AsBytes(bytes), "", Limits{});
  EXPECT_TRUE(fine.ok() || fine.status().message().find("max_load_memory") == std::string::npos);
}

TEST(WireLimitsTest, ValueFilesAreBudgetedBeforeParsing) {
  // A SequenceProto of 3,000,000 empty tensors: 6 MB that protobuf would make ~1 GB of.
  std::string bytes;
  for (int i = 0; i < 3000000; ++i) bytes += std::string("\x1a\x00", 2);
  const Type declared = Type::Sequence(Type::Tensor(ElementType::kFloat, std::nullopt));
  auto r = ValueFromProtoBytes(AsBytes(bytes), declared, LoadContext{});
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kResourceExhausted, "max_load_memory");
  Limits limits;
  limits.max_sequence_length = 10;
  std::string eleven;
  for (int i = 0; i < 11; ++i) eleven += std::string("\x1a\x00", 2);
  r = ValueFromProtoBytes(AsBytes(eleven), declared, LoadContext{"", limits, {}});
  ASSERT_FALSE(r.ok());
  EXPECT_STATUS(r, StatusCode::kResourceExhausted, "max_sequence_length 10");
}

// The walker must agree with protobuf: on every mutation of a valid model that protobuf parses,
// the load may fail only for a model rule or a limit, never as a parse failure; on every mutation
// protobuf refuses, the load fails.
TEST(WireWalkerTest, AgreesWithProtobufOnMutatedModels) {
  onnx::ModelProto m = InitializerModel(8);
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type("Constant");
  n->add_output("c");
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(2);
  a->mutable_t()->add_dims(3);
  a->mutable_t()->set_raw_data("abc");
  const std::string base = m.SerializeAsString();
  std::mt19937 rng(12345);
  int accepted = 0, refused = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    std::string bytes = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0:
          bytes[at] = static_cast<char>(rng());
          break;
        case 1:
          bytes.erase(at, 1 + rng() % 4);
          break;
        default:
          bytes.insert(at, 1, static_cast<char>(rng()));
          break;
      }
      if (bytes.empty()) bytes = "x";
    }
    onnx::ModelProto reference;
    const bool parses = reference.ParseFromString(bytes);
    auto r = LoadGraphFromBytes(AsBytes(bytes), "", Limits{});
    if (!parses) {
      ++refused;
      EXPECT_FALSE(r.ok()) << "protobuf refuses, idem accepts, iteration " << iteration;
      continue;
    }
    ++accepted;
    if (!r.ok()) {
      EXPECT_EQ(r.status().message().find("protobuf parsing failed"), std::string::npos)
          << "protobuf accepts, the walker refuses: " << r.status().message();
      continue;
    }
    // Same initializer bytes as protobuf's own parse.
    ASSERT_EQ(r->initializers.size(), static_cast<size_t>(reference.graph().initializer_size()));
    for (size_t i = 0; i < r->initializers.size(); ++i) {
      const auto& p = reference.graph().initializer(static_cast<int>(i));
      if (!p.has_raw_data()) continue;
      const Tensor& t = r->initializers[i].value.tensor();
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.data().data()), t.data().size()),
                p.raw_data());
    }
    EXPECT_EQ(r->nodes.size(), static_cast<size_t>(reference.graph().node_size()));
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(refused, 1000);
}

// Non-minimal varints for a main-graph node's tag and length (the walker drops or re-encodes
// them): accepted or refused exactly as protobuf does.
TEST(WireWalkerTest, OverlongTagsAndLengthsAgreeWithProtobuf) {
  onnx::ModelProto m = testing::IdentityChain(TensorTypeProto(ElementType::kFloat, {2}), 13, 1);
  const std::string node = m.graph().node(0).SerializeAsString();
  m.mutable_graph()->clear_node();
  const std::string rest = m.graph().SerializeAsString();
  auto padded = [](uint64_t v, int bytes) {
    std::string s;
    for (int i = 0; i < bytes; ++i) {
      const uint8_t b = static_cast<uint8_t>(v & 0x7f);
      v >>= 7;
      s += static_cast<char>(i + 1 < bytes ? (b | 0x80) : b);
    }
    return s;
  };
  onnx::ModelProto head = EmptyModel(13, 8);
  for (int tag_bytes : {1, 2, 5, 6}) {
    for (int length_bytes : {1, 3, 5, 6, 10}) {
      const std::string graph =
          padded(1 << 3 | 2, tag_bytes) + padded(node.size(), length_bytes) + node + rest;
      const std::string bytes = head.SerializeAsString() + "\x3a" + padded(graph.size(), 2) + graph;
      onnx::ModelProto reference;
      const bool parses = reference.ParseFromString(bytes);
      auto r = LoadGraphFromBytes(AsBytes(bytes), "", Limits{});
      const bool parse_failed =
          !r.ok() && r.status().message().find("protobuf parsing failed") != std::string::npos;
      EXPECT_EQ(parses, !parse_failed) << "tag " << tag_bytes << " bytes, length " << length_bytes
                                       << " bytes: " << (r.ok() ? "ok" : r.status().message());
    }
  }
}

// A model over 2 GiB, created sparsely (a hole of zeros costs no disk): one uint8 initializer of
// 2.5 GiB in raw_data, returned by Identity. Only the header pages are ever touched.
TEST(LargeModelTest, OverTwoGibLoadsAndRunsFromTheMapping) {
  const uint64_t n = (uint64_t{5} << 29);  // 2.5 GiB
  onnx::GraphProto rest;
  AddNode(&rest, "Identity", {"w"}, {"y"}, "id");
  AddValueInfo(rest.mutable_output(), "y",
               TensorTypeProto(ElementType::kUint8, {static_cast<int64_t>(n)}));
  const std::string path = ::testing::TempDir() + "/idem_large_model.onnx";
  ASSERT_GT(testing::WriteSparseModel(path, EmptyModel(13, 8), rest, n), uint64_t{2} << 30);

  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  {
    auto session = Session::Create(path);
    ASSERT_TRUE(session.ok()) << session.status().message();
    auto out = session->Run(std::span<const Value>{});
    ASSERT_TRUE(out.ok()) << out.status().message();
    const Tensor& y = (*out)[0].tensor();
    ASSERT_EQ(y.data().size(), n);
    EXPECT_EQ(y.shape()[0], static_cast<int64_t>(n));
    EXPECT_EQ(static_cast<uint8_t>(y.data().data()[0]), 0);
    EXPECT_EQ(static_cast<uint8_t>(y.data().data()[n - 1]), 0);
    EXPECT_EQ(static_cast<uint8_t>(y.data().data()[n / 2]), 0);
    EXPECT_NE(session->Describe().find(fmt::format("raw_data: {} bytes in place", n)),
              std::string::npos)
        << session->Describe();
  }
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  unlink(path.c_str());
  // ru_maxrss is in KiB: the peak grew by less than 64 MiB although the tensor is 2.5 GiB.
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024);
}

}  // namespace
}  // namespace idem
