// The static memory plan (src/core/memory_plan.h, SessionOptions::memory_plan): the greedy
// layout, the live-flag checks that keep a run that behaves unlike its recording safe, and
// sessions whose results and memory it changes.
#include "src/core/memory_plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "idem/idem.h"
#include "src/core/block_cache.h"
#include "tests/test_models.h"

namespace idem::memory_plan {
namespace {

using idem::testing::AddNode;
using idem::testing::AddValueInfo;
using idem::testing::EmptyModel;
using idem::testing::TensorTypeProto;

struct Tensor {
  Buffer buffer;
  std::byte* data = nullptr;
};

Tensor Take(TensorSource& source, size_t size, bool zeroed = true) {
  Tensor t;
  auto b = source.Allocate(size, &t.data, zeroed);
  EXPECT_TRUE(b.ok()) << b.status().message();
  t.buffer = std::move(b).value();
  return t;
}

bool Overlap(const Tensor& a, const Tensor& b) {
  return a.data < b.data + b.buffer.size() && b.data < a.data + a.buffer.size();
}

uint64_t Slot(uint64_t size) { return (64 + size + 63) / 64 * 64; }

// a(1000) and b(2000) alive together; a dies; c(1000) while b lives; everything but `out`(500)
// dies before the run ends.
Plan RecordPattern() {
  Recorder recorder;
  std::optional<Tensor> out;
  {
    Tensor a = Take(recorder, 1000);
    Tensor b = Take(recorder, 2000);
    a = {};
    Tensor c = Take(recorder, 1000);
    b = {};
    out = Take(recorder, 500);
  }
  std::optional<Plan> plan = recorder.Finish(kMaxArenaBytes);
  EXPECT_TRUE(plan.has_value());
  return plan.value_or(Plan{});
}

TEST(MemoryPlanTest, TensorsAliveTogetherGetDisjointBytesAndDeadOnesReuseThem) {
  const Plan plan = RecordPattern();
  ASSERT_EQ(plan.sizes.size(), 4u);
  EXPECT_EQ(plan.sizes, (std::vector<uint64_t>{1000, 2000, 1000, 500}));
  // Largest first: b at 0; a and c (never alive together) share the bytes after b.
  EXPECT_EQ(plan.offsets[1], 0u);
  EXPECT_EQ(plan.offsets[0], Slot(2000));
  EXPECT_EQ(plan.offsets[2], plan.offsets[0]);
  EXPECT_EQ(plan.offsets[3], kUnplanned);  // alive when the run ended: an output
  EXPECT_EQ(plan.arena_bytes, Slot(2000) + Slot(1000));
  // c reuses a's bytes, so a must be dead first.
  EXPECT_EQ(std::vector<uint32_t>(plan.conflicts.begin() + plan.conflict_begin[2],
                                  plan.conflicts.begin() + plan.conflict_begin[3]),
            std::vector<uint32_t>{0});

  Arena arena(plan);
  Tensor a = Take(arena, 1000);
  Tensor b = Take(arena, 2000);
  EXPECT_FALSE(Overlap(a, b));
  std::byte* const a_bytes = a.data;
  a = {};
  Tensor c = Take(arena, 1000);
  EXPECT_EQ(c.data, a_bytes);
  Tensor out = Take(arena, 500);
  EXPECT_EQ(arena.placed(), 3u);
  EXPECT_FALSE(Overlap(out, b));
  EXPECT_FALSE(Overlap(out, c));
}

TEST(MemoryPlanTest, ATensorAliveLongerThanRecordedKeepsItsBytes) {
  const Plan plan = RecordPattern();
  Arena arena(plan);
  Tensor a = Take(arena, 1000);
  std::memset(a.data, 0x5a, 1000);
  Tensor b = Take(arena, 2000);
  // a is still alive here (the recording had freed it): c must not take its bytes.
  Tensor c = Take(arena, 1000);
  EXPECT_FALSE(Overlap(a, c));
  EXPECT_FALSE(Overlap(b, c));
  std::memset(c.data, 0x11, 1000);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.data[i], std::byte{0x5a});
  EXPECT_EQ(arena.placed(), 2u);
}

TEST(MemoryPlanTest, AnotherSizeSendsTheRestOfTheRunToTheBlockCache) {
  const Plan plan = RecordPattern();
  Arena arena(plan);
  Tensor a = Take(arena, 1000);
  Tensor b = Take(arena, 3000);  // the recording made 2000 here
  a = {};
  Tensor c = Take(arena, 1000);  // would fit a's place, but the sequence is lost
  EXPECT_EQ(arena.placed(), 1u);
  EXPECT_FALSE(Overlap(b, c));
}

TEST(MemoryPlanTest, ATensorOutlivingItsRunKeepsItsArenaFromTheNextRun) {
  const Plan plan = RecordPattern();
  std::optional<Tensor> kept;
  {
    Arena first(plan);
    kept = Take(first, 1000);
    std::memset(kept->data, 0x77, 1000);
  }
  Arena second(plan);
  Tensor a = Take(second, 1000);
  Tensor b = Take(second, 2000);
  EXPECT_EQ(second.placed(), 2u);
  EXPECT_FALSE(Overlap(*kept, a));
  EXPECT_FALSE(Overlap(*kept, b));
  std::memset(a.data, 0, 1000);
  std::memset(b.data, 0, 2000);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(kept->data[i], std::byte{0x77});
}

TEST(MemoryPlanTest, PlacedTensorsAreZeroedUnlessTheCallerOverwritesThem) {
  const Plan plan = RecordPattern();
  Arena arena(plan);
  Tensor a = Take(arena, 1000);
  std::memset(a.data, 0xff, 1000);
  Tensor b = Take(arena, 2000);
  a = {};
  Tensor c = Take(arena, 1000, /*zeroed=*/true);
  ASSERT_EQ(arena.placed(), 3u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(c.data[i], std::byte{0});
}

TEST(MemoryPlanTest, ATensorFreedOnAnotherThreadFreesItsBytes) {
  const Plan plan = RecordPattern();
  Arena arena(plan);
  Tensor a = Take(arena, 1000);
  Tensor b = Take(arena, 2000);
  std::byte* const a_bytes = a.data;
  std::thread([moved = std::move(a)]() mutable { moved = {}; }).join();
  Tensor c = Take(arena, 1000);
  EXPECT_EQ(c.data, a_bytes);
  EXPECT_EQ(arena.placed(), 3u);
}

TEST(MemoryPlanTest, RecordingsTooLongOrTooLargeMakeNoPlan) {
  {
    Recorder recorder;
    for (size_t i = 0; i <= kMaxAllocations; ++i) Take(recorder, 64);
    EXPECT_FALSE(recorder.Finish(kMaxArenaBytes).has_value());
  }
  {
    Recorder recorder;
    Take(recorder, 4096);
    EXPECT_FALSE(recorder.Finish(/*max_arena_bytes=*/4096).has_value());
  }
  {
    // A failed run never finishes: its tensors still go back when dropped.
    std::optional<Tensor> late;
    {
      Recorder recorder;
      late = Take(recorder, 100);
    }
    late.reset();
  }
}

// ---- Sessions ---------------------------------------------------------------------------------

// x: float[n] -> Concat(x, x) -> Concat(., .) -> ... (k times, each twice as long) -> ReduceMean
// over everything -> y: float[1], plus z = x + x, so intermediates of many size classes die
// within the run.
onnx::ModelProto GrowingModel(int64_t n, int k) {
  onnx::ModelProto m = EmptyModel(13, 8);
  auto* g = m.mutable_graph();
  g->set_name("growing");
  AddValueInfo(g->mutable_input(), "x", TensorTypeProto(ElementType::kFloat, {n}));
  std::string prev = "x";
  for (int i = 0; i < k; ++i) {
    std::string out = "c";  // not "c" + to_string: GCC 12's -Wrestrict false positive
    out += std::to_string(i);
    idem::testing::AddIntAttribute(AddNode(g, "Concat", {prev, prev}, {out}), "axis", 0);
    prev = out;
  }
  idem::testing::AddIntAttribute(AddNode(g, "ReduceMean", {prev}, {"y"}), "keepdims", 1);
  AddNode(g, "Add", {"x", "x"}, {"z"});
  AddValueInfo(g->mutable_output(), "y", TensorTypeProto(ElementType::kFloat, {1}));
  AddValueInfo(g->mutable_output(), "z", TensorTypeProto(ElementType::kFloat, {n}));
  return m;
}

Session CreateWith(const onnx::ModelProto& m, bool plan) {
  SessionOptions options;
  options.memory_plan = plan;
  auto s = CreateSessionFromProto(m, "", options);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

std::vector<float> Values(const Value& v) {
  const auto d = v.tensor().data_as<float>();
  return {d.begin(), d.end()};
}

TEST(MemoryPlanSessionTest, PlannedRunsGiveTheSameBitsAndKeepOnlyAnArena) {
  if (!block_cache::Enabled()) GTEST_SKIP() << "the block cache is off under sanitizers";
  const onnx::ModelProto model = GrowingModel(1000, 7);
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i % 17) - 1.5f;
  const std::vector<Value> feeds = {idem::testing::Floats({1000}, x)};
  // Each thread has its own block cache: a new thread starts from an empty one.
  auto cached_after_runs = [&](bool plan, std::vector<std::vector<float>>* results) {
    size_t bytes = 0;
    std::thread([&] {
      Session session = CreateWith(model, plan);
      std::vector<Value> outputs(2);
      for (int run = 0; run < 5; ++run) {
        ASSERT_TRUE(session.Run(feeds, outputs).ok());
        results->push_back(Values(outputs[0]));
        results->push_back(Values(outputs[1]));
      }
      outputs.clear();
      bytes = block_cache::ThreadStats().bytes;
    }).join();
    return bytes;
  };
  std::vector<std::vector<float>> planned, unplanned;
  const size_t with_plan = cached_after_runs(true, &planned);
  const size_t without = cached_after_runs(false, &unplanned);
  EXPECT_EQ(planned, unplanned);
  // Unplanned, the cache keeps a block of every size the run made (4000 .. 512000 bytes, about
  // 1 MB); planned, one arena of the two largest concats alive together (768000 bytes) and small
  // blocks.
  EXPECT_GT(without, size_t{1000000});
  EXPECT_LT(with_plan, without * 9 / 10);
}

// x: float[4], c: bool -> If(c; then: (x + x) * x, else: -x) -> y. The branch taken decides
// which tensors a run makes, with the same feed shapes: runs that differ from the recorded one
// must still give the right values, and an output placed in the arena must keep its bytes while
// the caller holds it.
onnx::ModelProto BranchModel() {
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("branch");
  AddValueInfo(g->mutable_input(), "x", TensorTypeProto(ElementType::kFloat, {4}));
  AddValueInfo(g->mutable_input(), "c", TensorTypeProto(ElementType::kBool, {}));
  onnx::GraphProto then_branch;
  then_branch.set_name("then");
  AddNode(&then_branch, "Add", {"x", "x"}, {"s"});
  AddNode(&then_branch, "Mul", {"s", "x"}, {"t"});
  AddValueInfo(then_branch.mutable_output(), "t", TensorTypeProto(ElementType::kFloat, {4}));
  onnx::GraphProto else_branch;
  else_branch.set_name("else");
  AddNode(&else_branch, "Neg", {"x"}, {"e"});
  AddValueInfo(else_branch.mutable_output(), "e", TensorTypeProto(ElementType::kFloat, {4}));
  auto* node = AddNode(g, "If", {"c"}, {"y"});
  idem::testing::SetGraphAttribute(node, "then_branch", then_branch);
  idem::testing::SetGraphAttribute(node, "else_branch", else_branch);
  AddValueInfo(g->mutable_output(), "y", TensorTypeProto(ElementType::kFloat, {4}));
  return m;
}

TEST(MemoryPlanSessionTest, RunsUnlikeTheRecordingStayCorrect) {
  Session session = CreateWith(BranchModel(), true);
  const Value x = idem::testing::Floats({4}, {1.0f, -2.0f, 3.0f, 0.5f});
  std::vector<Value> held;
  std::vector<std::vector<float>> expected;
  for (int run = 0; run < 12; ++run) {
    const bool c = run % 3 == 0;
    const Value cond = idem::testing::MakeTensorOf<uint8_t>(ElementType::kBool, {},
                                                            {static_cast<uint8_t>(c ? 1 : 0)});
    auto out = session.Run({x, cond});
    ASSERT_TRUE(out.ok()) << out.status().message();
    held.push_back(out.value()[0]);
    expected.push_back(c ? std::vector<float>{2.0f, 8.0f, 18.0f, 0.5f}
                         : std::vector<float>{-1.0f, 2.0f, -3.0f, -0.5f});
  }
  for (size_t i = 0; i < held.size(); ++i) EXPECT_EQ(Values(held[i]), expected[i]) << "run " << i;
}

// M: int64, x: float[4], big: float[n] -> Loop(M; v = x; v + v) -> out: float[4], and
// z = ReduceMean(Concat(big, big)): the arena holds the concat (8n bytes). The trip count is a
// feed's value, not its shape: a run of fewer trips than the recorded one returns a tensor the
// recording freed (an earlier trip's sum), so it was placed in the arena.
onnx::ModelProto TripCountModel(int64_t n) {
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("trip_count");
  const onnx::TypeProto v_type = TensorTypeProto(ElementType::kFloat, {4});
  AddValueInfo(g->mutable_input(), "M", TensorTypeProto(ElementType::kInt64, {}));
  AddValueInfo(g->mutable_input(), "x", v_type);
  AddValueInfo(g->mutable_input(), "big", TensorTypeProto(ElementType::kFloat, {n}));
  idem::testing::AddIntAttribute(AddNode(g, "Concat", {"big", "big"}, {"cat"}), "axis", 0);
  idem::testing::AddIntAttribute(AddNode(g, "ReduceMean", {"cat"}, {"z"}), "keepdims", 1);
  auto* loop = AddNode(g, "Loop", {"M", "", "x"}, {"out"}, "loop0");
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "i", TensorTypeProto(ElementType::kInt64, {}));
  AddValueInfo(body.mutable_input(), "c", TensorTypeProto(ElementType::kBool, {}));
  AddValueInfo(body.mutable_input(), "v_in", v_type);
  body.add_output()->set_name("c_out");
  body.add_output()->set_name("v_out");
  AddNode(&body, "Identity", {"c"}, {"c_out"});
  AddNode(&body, "Add", {"v_in", "v_in"}, {"v_out"});
  idem::testing::SetGraphAttribute(loop, "body", body);
  AddValueInfo(g->mutable_output(), "out", v_type);
  AddValueInfo(g->mutable_output(), "z", TensorTypeProto(ElementType::kFloat, {1}));
  return m;
}

// An output a run placed in its arena (a run unlike the recording) must not keep the whole arena
// block alive while the caller holds it: a caller keeping k outputs of 16 bytes would hold k
// arenas (up to 128 MiB each), and every later run would take a fresh one from the heap.
TEST(MemoryPlanSessionTest, AnOutputPlacedInTheArenaDoesNotKeepTheArena) {
  if (!block_cache::Enabled()) GTEST_SKIP() << "the block cache is off under sanitizers";
  constexpr int64_t kN = 65536;  // the concat: 512 KiB
  constexpr size_t kConcatBytes = 2 * kN * sizeof(float);
  const Session session = CreateWith(TripCountModel(kN), true);
  const Value x = idem::testing::Floats({4}, {1.0f, -2.0f, 3.0f, 0.5f});
  const Value big = idem::testing::Floats({kN}, std::vector<float>(kN, 0.5f));
  auto trips = [](int64_t m) {
    return idem::testing::MakeTensorOf<int64_t>(ElementType::kInt64, {}, {m});
  };
  size_t grown = 0;
  std::vector<std::vector<float>> got;
  std::thread([&] {
    // Record with 3 trips, then a planned run of 3 (nothing escapes: its arena returns to this
    // thread's cache).
    for (int run = 0; run < 2; ++run) ASSERT_TRUE(session.Run({trips(3), x, big}).ok());
    const size_t before = block_cache::ThreadStats().bytes;
    std::vector<Value> held;
    for (int run = 0; run < 8; ++run) {
      auto out = session.Run({trips(2), x, big});
      ASSERT_TRUE(out.ok()) << out.status().message();
      held.push_back(out.value()[0]);
    }
    for (const Value& v : held) got.push_back(Values(v));
    held.clear();
    // Whatever the held outputs kept alive has come back to this thread's cache now.
    const size_t after = block_cache::ThreadStats().bytes;
    grown = after > before ? after - before : 0;
  }).join();
  ASSERT_EQ(got.size(), 8u);
  for (const auto& v : got) EXPECT_EQ(v, (std::vector<float>{4.0f, -8.0f, 12.0f, 2.0f}));
  // One arena (or none) more, not one per held output.
  EXPECT_LT(grown, 2 * kConcatBytes);
}

TEST(MemoryPlanSessionTest, OtherShapesRunUnplannedWithTheSameResults) {
  const onnx::ModelProto model = GrowingModel(1000, 3);
  // The declared shape is fixed: feed another through a model without the declared dim.
  onnx::ModelProto dynamic = model;
  dynamic.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("n");
  dynamic.mutable_graph()
      ->mutable_output(1)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("n");
  Session planned = CreateWith(dynamic, true);
  Session unplanned = CreateWith(dynamic, false);
  for (int run = 0; run < 20; ++run) {
    const int64_t n = 1 + (run * 7) % 9;  // 9 shapes: more than a session keeps plans for
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i * run) - 3;
    const std::vector<Value> feeds = {idem::testing::Floats({n}, x)};
    auto a = planned.Run(feeds);
    auto b = unplanned.Run(feeds);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(Values(a.value()[0]), Values(b.value()[0]));
    EXPECT_EQ(Values(a.value()[1]), Values(b.value()[1]));
  }
}

TEST(MemoryPlanSessionTest, ConcurrentRunsEachHaveTheirOwnArena) {
  Session session = CreateWith(GrowingModel(256, 5), true);
  std::vector<std::thread> threads;
  threads.reserve(4);
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> x(256, static_cast<float>(t + 1));
      const std::vector<Value> feeds = {idem::testing::Floats({256}, x)};
      for (int run = 0; run < 50; ++run) {
        auto out = session.Run(feeds);
        if (!out.ok() || Values(out.value()[0])[0] != static_cast<float>(t + 1)) {
          ++failures[static_cast<size_t>(t)];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace idem::memory_plan
