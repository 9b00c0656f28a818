// Steady-state Runs allocate nothing (issue 18): after warm-up, `Session::Run(feeds, outputs)`
// into the same output slots makes no operator new call, on a fixed-shape graph built here and on
// the real models of the model cache (IDEM_MODEL_CACHE, fetched by the real_models fixture), with
// the streaming state carried from one Run to the next. Also the block cache behind it
// (src/core/block_cache.h): blocks are reused, handed back zeroed, bounded per thread, and freed
// on the thread that drops them.
//
// Its own executable: it replaces the global operator new to count calls. Not under sanitizers
// (they own the allocator, and the block cache is off there).
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "idem/idem.h"
#include "src/core/block_cache.h"
#include "tests/test_models.h"

namespace {
std::atomic<uint64_t> g_news{0};

void* CountedAllocate(size_t n, size_t align) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  return align <= alignof(std::max_align_t)
             ? std::malloc(n == 0 ? 1 : n)
             : std::aligned_alloc(align, (n + align - 1) / align * align);
}
}  // namespace

// GCC inlines the replacements into one another and then sees free() of a new'd pointer; they
// are this program's only allocator, so the pair always matches.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(size_t n) {
  if (void* p = CountedAllocate(n, 0)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, std::align_val_t a) {
  if (void* p = CountedAllocate(n, static_cast<size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return CountedAllocate(n, 0); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return CountedAllocate(n, 0); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return CountedAllocate(n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return CountedAllocate(n, static_cast<size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace idem::testing {
namespace {

namespace bc = block_cache;

TEST(BlockCacheTest, FreedBlocksAreReusedAndHandedBackZeroed) {
  if (!bc::Enabled()) GTEST_SKIP() << "the block cache is off in this build";
  std::byte* first = nullptr;
  {
    Buffer b = Buffer::Allocate(1000, &first).value();
    ASSERT_EQ(reinterpret_cast<uintptr_t>(first) % Buffer::kAlignment, 0u);
    std::memset(first, 0xAB, 1000);
  }
  const uint64_t before = g_news.load();
  std::byte* second = nullptr;
  Buffer b = Buffer::Allocate(990, &second).value();  // same size class as 1000
  EXPECT_EQ(g_news.load(), before) << "a freed block of the class should have been reused";
  EXPECT_EQ(second, first);
  for (size_t i = 0; i < 990; ++i) ASSERT_EQ(second[i], std::byte{0}) << "byte " << i;
  EXPECT_EQ(b.size(), 990u);
}

TEST(BlockCacheTest, ClassesAreAtMostAQuarterLargerAndHugeBlocksAreNotKept) {
  size_t previous = 0;
  for (size_t size : {1, 63, 64, 65, 200, 1000, 4096, 65536, 1000000, 50000000}) {
    const size_t c = bc::ClassBytes(size);
    ASSERT_GE(c, size + bc::kHeaderBytes) << size;
    EXPECT_LE(c, (size + bc::kHeaderBytes) * 5 / 4 + 64) << size;
    EXPECT_GE(c, previous);
    previous = c;
  }
  EXPECT_EQ(bc::ClassBytes(bc::kMaxBytes + 1), 0u);
  EXPECT_EQ(bc::ClassBytes(~size_t{0}), 0u);
  std::byte* p = nullptr;
  EXPECT_EQ(Buffer::Allocate(~size_t{0} - 8, &p).status().code(), StatusCode::kResourceExhausted);
}

TEST(BlockCacheTest, ACacheIsBoundedPerClassAndInBytes) {
  if (!bc::Enabled()) GTEST_SKIP() << "the block cache is off in this build";
  std::thread([] {
    {
      std::vector<Buffer> many;
      for (uint32_t i = 0; i < bc::kMaxPerClass + 100; ++i) {
        std::byte* p = nullptr;
        many.push_back(Buffer::Allocate(100, &p).value());
      }
    }
    EXPECT_EQ(bc::ThreadStats().blocks, bc::kMaxPerClass);
    {
      std::vector<Buffer> big;
      for (int i = 0; i < 12; ++i) {
        std::byte* p = nullptr;
        big.push_back(Buffer::Allocate(size_t{16} << 20, &p).value());
      }
    }
    EXPECT_LE(bc::ThreadStats().bytes, bc::kMaxBytes);
    EXPECT_GT(bc::ThreadStats().bytes, size_t{64} << 20);
  }).join();
}

TEST(BlockCacheTest, ABlockFreedOnAnotherThreadJoinsThatThreadsCache) {
  if (!bc::Enabled()) GTEST_SKIP() << "the block cache is off in this build";
  std::byte* p = nullptr;
  Buffer b = Buffer::Allocate(5000, &p).value();
  size_t cached_there = 0;
  std::thread([&] {
    const size_t before = bc::ThreadStats().blocks;
    b = Buffer();
    cached_there = bc::ThreadStats().blocks - before;
  }).join();
  EXPECT_EQ(cached_there, 1u);
}

// x[1,3,8,8] -> Conv(3x3, pads 1) -> Relu -> Reshape([1,-1]) -> MatMul([256,10]) -> Add ->
// Softmax -> y; plus Unsqueeze/Squeeze, Concat of two slices, and a Gather, as the real models
// use them.
onnx::ModelProto FixedShapeModel() {
  onnx::ModelProto m = EmptyModel(17, 8);
  auto* g = m.mutable_graph();
  g->set_name("fixed");
  AddValueInfo(g->mutable_input(), "x", TensorTypeProto(ElementType::kFloat, {1, 3, 8, 8}));
  auto add_floats = [&](const std::string& name, std::vector<int64_t> dims, size_t n) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (size_t i = 0; i < n; ++i) t->add_float_data(0.01f * static_cast<float>(i % 17) - 0.05f);
  };
  auto add_ints = [&](const std::string& name, std::vector<int64_t> values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  };
  add_floats("w", {4, 3, 3, 3}, 108);
  add_floats("b", {4}, 4);
  add_floats("m", {256, 10}, 2560);
  add_floats("bias", {10}, 10);
  add_ints("shape", {1, -1});
  add_ints("axes0", {0});
  add_ints("starts", {0});
  add_ints("mid", {5});
  add_ints("ends", {10});
  add_ints("axes1", {1});
  add_ints("index", {3, 1});
  auto* conv = AddNode(g, "Conv", {"x", "w", "b"}, {"c"});
  auto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  AddNode(g, "Relu", {"c"}, {"r"});
  AddNode(g, "Reshape", {"r", "shape"}, {"flat"});
  AddNode(g, "MatMul", {"flat", "m"}, {"mm"});
  AddNode(g, "Add", {"mm", "bias"}, {"logits"});
  AddNode(g, "Unsqueeze", {"logits", "axes0"}, {"u"});
  AddNode(g, "Squeeze", {"u", "axes0"}, {"s"});
  AddNode(g, "Slice", {"s", "starts", "mid", "axes1"}, {"left"});
  AddNode(g, "Slice", {"s", "mid", "ends", "axes1"}, {"right"});
  AddIntAttribute(AddNode(g, "Concat", {"right", "left"}, {"swapped"}), "axis", 1);
  AddIntAttribute(AddNode(g, "Gather", {"swapped", "index"}, {"picked"}), "axis", 1);
  AddNode(g, "Softmax", {"swapped"}, {"y"});
  AddValueInfo(g->mutable_output(), "y", TensorTypeProto(ElementType::kFloat, {1, 10}));
  AddValueInfo(g->mutable_output(), "picked", TensorTypeProto(ElementType::kFloat, {1, 2}));
  return m;
}

// Operator new calls of `runs` Runs after three warm-up Runs; `carried` (output, feed) pairs move
// an output into the next Run's feeds.
uint64_t SteadyStateNews(const Session& session, std::vector<Value> feeds,
                         const std::vector<std::pair<size_t, size_t>>& carried, int runs = 10) {
  std::vector<Value> outputs(session.outputs().size());
  auto run = [&] {
    const Status s = session.Run(feeds, outputs);
    EXPECT_TRUE(s.ok()) << s.message();
    for (auto [o, i] : carried) feeds[i] = std::move(outputs[o]);
  };
  for (int i = 0; i < 3; ++i) run();
  const uint64_t before = g_news.load();
  for (int i = 0; i < runs; ++i) run();
  return g_news.load() - before;
}

TEST(RunAllocationsTest, RunIntoSlotsGivesRunsOutputs) {
  Session session = MustCreate(FixedShapeModel());
  std::vector<float> data(192);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 13) * 0.1f;
  const Value x = Floats({1, 3, 8, 8}, data);
  const std::vector<Value> expected = session.Run({x}).value();
  std::vector<Value> slots(2);
  ASSERT_TRUE(session.Run(std::span<const Value>(&x, 1), slots).ok());
  ASSERT_EQ(slots.size(), expected.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    EXPECT_EQ(DescribeDifference(expected[i], slots[i]), std::nullopt) << i;
  }
  std::vector<Value> wrong(1);
  EXPECT_EQ(session.Run(std::span<const Value>(&x, 1), wrong).code(), StatusCode::kInvalidArgument);
  // A failing run leaves the slots as they were.
  const Value bad = Floats({1, 3, 8, 7}, std::vector<float>(168, 0.0f));
  EXPECT_FALSE(session.Run(std::span<const Value>(&bad, 1), slots).ok());
  EXPECT_EQ(DescribeDifference(expected[0], slots[0]), std::nullopt);
}

TEST(RunAllocationsTest, AFixedShapeGraphRunsWithoutAllocating) {
  if (!bc::Enabled()) GTEST_SKIP() << "the block cache is off in this build";
  Session session = MustCreate(FixedShapeModel());
  const Value x = Floats({1, 3, 8, 8}, std::vector<float>(192, 0.5f));
  EXPECT_EQ(SteadyStateNews(session, {x}, {}), 0u);
}

// ---- The real models ---------------------------------------------------------------------------

Value Zeros(std::vector<int64_t> shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.3f * static_cast<float>((i * 7919) % 101) / 101.0f;
  return Floats(std::move(shape), std::move(v));
}

struct RealModel {
  const char* name;
  std::vector<int64_t> data_shape;  // the one non-state float input
};

class RealModelAllocationsTest : public ::testing::TestWithParam<RealModel> {};

TEST_P(RealModelAllocationsTest, SteadyStateRunsDoNotAllocate) {
  if (!bc::Enabled()) GTEST_SKIP() << "the block cache is off in this build";
  const char* cache = std::getenv("IDEM_MODEL_CACHE");
  const std::string path =
      std::string(cache != nullptr ? cache : "") + "/" + GetParam().name + ".onnx";
  if (cache == nullptr || !std::filesystem::exists(path)) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL() << path << " is missing";
    GTEST_SKIP() << path << " is missing (scripts/fetch_models.sh fetches it)";
  }
  Session session = Session::Create(path).value();
  std::vector<Value> feeds;
  for (const ValueInfo& in : session.inputs()) {
    if (in.name == "sr") {
      feeds.push_back(MakeTensorOf<int64_t>(ElementType::kInt64, {}, {16000}));
    } else if (in.name == "state") {
      feeds.push_back(Zeros({2, 1, 128}));
    } else if (in.name == "h" || in.name == "c") {
      feeds.push_back(Zeros({2, 1, 64}));
    } else {
      feeds.push_back(Zeros(GetParam().data_shape));
    }
  }
  std::vector<std::pair<size_t, size_t>> carried;
  for (size_t o = 0; o < session.outputs().size(); ++o) {
    for (size_t i = 0; i < session.inputs().size(); ++i) {
      const std::string& out = session.outputs()[o].name;
      const std::string& in = session.inputs()[i].name;
      if ((out == "stateN" && in == "state") || (out == "hn" && in == "h") ||
          (out == "cn" && in == "c")) {
        carried.emplace_back(o, i);
      }
    }
  }
  EXPECT_EQ(SteadyStateNews(session, feeds, carried, 5), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Models, RealModelAllocationsTest,
    ::testing::Values(
        RealModel{"silero_vad_v5", {1, 512}}, RealModel{"silero_vad", {1, 576}},
        RealModel{"silero_vad_op18_ifless", {1, 576}}, RealModel{"silero_vad_half", {1, 576}},
        RealModel{"silero_vad_16k_op15", {1, 576}}, RealModel{"silero_vad_legacy", {1, 1536}},
        RealModel{"melspectrogram", {1, 1280}}, RealModel{"embedding_model", {1, 76, 32, 1}},
        RealModel{"alexa_v0.1", {1, 16, 96}},
        RealModel{"ch_ppocr_mobile_v2.0_cls_infer", {1, 3, 48, 192}},
        RealModel{"ch_PP-OCRv4_rec_infer", {1, 3, 48, 320}},
        RealModel{"ch_PP-OCRv4_det_infer", {1, 3, 96, 96}}),
    [](const ::testing::TestParamInfo<RealModel>& info) {
      std::string n = info.param.name;
      for (char& c : n) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return n;
    });

}  // namespace
}  // namespace idem::testing
