// Runtime: validation errors, zero-copy Identity, feeds, RunInto, concurrency.
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "idem/idem.h"
#include "idem/session_proto.h"
#include "src/runtime/name_table.h"
#include "tests/test_models.h"

namespace idem {
namespace {

using testing::AddNode;
using testing::AddValueInfo;
using testing::EmptyModel;
using testing::Floats;
using testing::IdentityChain;
using testing::OptionalTypeProto;
using testing::PlanError;
using testing::SequenceTypeProto;
using testing::TensorTypeProto;

TEST(SessionTest, IdentityOutputSharesTheFedBuffer) {
  for (bool eliminate : {true, false}) {
    SessionOptions options;
    options.eliminate_identity = eliminate;
    auto m = IdentityChain(TensorTypeProto(ElementType::kFloat, {-1}), 16, 5);
    Session s = CreateSessionFromProto(m, "", options).value();
    std::vector<float> big(1 << 20, 1.5f);
    Value x = Value::MakeTensor(ElementType::kFloat, {1 << 20},
                                Buffer::Borrow(big.data(), big.size() * 4))
                  .value();
    auto out = s.Run({x}).value();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].SharesStorageWith(x)) << eliminate;
    EXPECT_EQ(static_cast<const void*>(out[0].tensor().data().data()), big.data());
  }
}

// A streaming LSTM (Silero's shape of state): x [1, 1, 4], h and c [1, 1, 3] in; y_h, y_c out,
// plus h_seen = Identity(h), which shows the bytes the run received as h.
onnx::ModelProto StreamingLstm() {
  auto m = EmptyModel(14, 8);
  auto* g = m.mutable_graph();
  AddValueInfo(g->mutable_input(), "x", TensorTypeProto(ElementType::kFloat, {1, 1, 4}));
  AddValueInfo(g->mutable_input(), "h", TensorTypeProto(ElementType::kFloat, {1, 1, 3}));
  AddValueInfo(g->mutable_input(), "c", TensorTypeProto(ElementType::kFloat, {1, 1, 3}));
  for (const char* out : {"y_h", "y_c", "h_seen"}) {
    AddValueInfo(g->mutable_output(), out, TensorTypeProto(ElementType::kFloat, {1, 1, 3}));
  }
  auto add_weights = [&](const std::string& name, int64_t cols) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {int64_t{1}, int64_t{12}, cols}) t->add_dims(d);
    for (int64_t i = 0; i < 12 * cols; ++i)
      t->add_float_data(0.05f * static_cast<float>(i % 7) - 0.1f);
  };
  add_weights("w", 4);
  add_weights("r", 3);
  auto* lstm = AddNode(g, "LSTM", {"x", "w", "r", "", "", "h", "c"}, {"", "y_h", "y_c"}, "lstm");
  testing::AddIntAttribute(lstm, "hidden_size", 3);
  AddNode(g, "Identity", {"h"}, {"h_seen"}, "seen");
  return m;
}

TEST(SessionTest, StreamingStateIsFedBackWithoutACopy) {
  // The state pattern of Silero VAD and openWakeWord: each run's state outputs are the next run's
  // state inputs. Values are immutable and shared, so feeding the output Value back costs no copy;
  // the results are those of feeding copies of the same bytes.
  Session s = testing::MustCreate(StreamingLstm());
  Value h = Floats({1, 1, 3}, {0, 0, 0});
  Value c = Floats({1, 1, 3}, {0, 0, 0});
  Value h_copy = h, c_copy = c;
  for (int chunk = 0; chunk < 5; ++chunk) {
    Value x = Floats({1, 1, 4}, {0.5f * static_cast<float>(chunk), -1.0f, 0.25f, 2.0f});
    auto out = s.Run({x, h, c}).value();
    // The h this run read is the previous run's y_h itself, not a copy of it.
    EXPECT_EQ(out[2].tensor().data().data(), h.tensor().data().data()) << chunk;
    auto copied = s.Run({x, h_copy, c_copy}).value();
    ASSERT_TRUE(out[0].tensor().data().size() == 12 && copied[0].tensor().data().size() == 12);
    EXPECT_EQ(std::memcmp(out[0].tensor().data().data(), copied[0].tensor().data().data(), 12), 0);
    EXPECT_EQ(std::memcmp(out[1].tensor().data().data(), copied[1].tensor().data().data(), 12), 0);
    h = out[0];
    c = out[1];
    h_copy = Value::MakeTensor(ElementType::kFloat, {1, 1, 3},
                               Buffer::CopyOf(copied[0].tensor().data().bytes()).value())
                 .value();
    c_copy = Value::MakeTensor(ElementType::kFloat, {1, 1, 3},
                               Buffer::CopyOf(copied[1].tensor().data().bytes()).value())
                 .value();
  }
  // The state moved: five steps of a non-zero input leave a non-zero h.
  float h0 = 0;
  std::memcpy(&h0, h.tensor().data().data(), sizeof(float));
  EXPECT_NE(h0, 0.0f);
}

TEST(SessionTest, ErrorNamesNodeInputAndRule) {
  auto seq = SequenceTypeProto(TensorTypeProto(ElementType::kFloat, {}));
  Status e = PlanError(IdentityChain(seq, 13));
  EXPECT_STATUS(e, StatusCode::kInvalidModel,
                "node 'id0' (Identity-13): input 'x' is seq(tensor(float)); Identity-13 "
                "accepts tensors only (sequences need opset >= 14)");
  auto opt = OptionalTypeProto(TensorTypeProto(ElementType::kFloat, {}));
  e = PlanError(IdentityChain(opt, 15));
  EXPECT_STATUS(e, StatusCode::kInvalidModel,
                "Identity-14 accepts tensors and sequences only (optionals need opset >= 16)");
  e = PlanError(IdentityChain(TensorTypeProto(ElementType::kBfloat16, {}), 12));
  EXPECT_STATUS(e, StatusCode::kInvalidModel,
                "Identity-1 does not accept tensor(bfloat16) (tensor(bfloat16) needs opset >= "
                "13)");
  e = PlanError(IdentityChain(TensorTypeProto(ElementType::kFloat8E4M3FN, {}), 18));
  EXPECT_STATUS(e, StatusCode::kInvalidModel, "needs opset >= 19");
  auto seq_bf16 = SequenceTypeProto(TensorTypeProto(ElementType::kBfloat16, {}));
  e = PlanError(IdentityChain(seq_bf16, 25));
  EXPECT_STATUS(e, StatusCode::kInvalidModel,
                "no version of Identity accepts seq(tensor(bfloat16))");
}

TEST(SessionTest, NamesHoldingQuotesArePrintedUnambiguously) {
  // A name is quoted with its own quotes and backslashes escaped, so "input 'a' is undefined"
  // cannot be forged by a value named "a' is undefined, 'b".
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("g");
  AddValueInfo(g->mutable_output(), "y", TensorTypeProto(ElementType::kFloat, {1}));
  AddNode(g, "Identity", {"a' is \\ undefined"}, {"y"}, "id0");
  EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel,
                "input 'a\\' is \\\\ undefined' is undefined");
  // A graph output that is never produced, named with a quote.
  onnx::ModelProto m2 = EmptyModel(16, 8);
  AddValueInfo(m2.mutable_graph()->mutable_output(), "it's",
               TensorTypeProto(ElementType::kFloat, {1}));
  EXPECT_STATUS(PlanError(m2), StatusCode::kInvalidModel,
                "graph output 'it\\'s' is never produced");
}

TEST(SessionTest, StructuralErrors) {
  auto type = TensorTypeProto(ElementType::kFloat, {2});
  {
    auto m = IdentityChain(type, 16);
    AddNode(m.mutable_graph(), "Foo", {"x"}, {"a"});
    AddNode(m.mutable_graph(), "Bar", {"x"}, {"b"});
    Status e = PlanError(m);
    EXPECT_STATUS(e, StatusCode::kUnsupported, "Bar-16");
    EXPECT_STATUS(e, StatusCode::kUnsupported, "Foo-16");
  }
  {
    auto m = IdentityChain(type, 16);
    m.mutable_graph()->mutable_node(0)->add_input("x");
    EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel, "has 2 inputs; Identity-16 takes 1");
  }
  {
    auto m = IdentityChain(type, 16);
    m.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
    EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel, "input 'nowhere' is undefined");
  }
  {
    auto m = IdentityChain(type, 16, 2);
    AddNode(m.mutable_graph(), "Identity", {"x"}, {"t0"}, "dup");
    EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel, "produced by both");
  }
  {
    auto m = IdentityChain(type, 16, 3);  // x -> t0 -> t1 -> y; make id0 read t1: a cycle
    m.mutable_graph()->mutable_node(0)->set_input(0, "t1");
    EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel, "cycle");
  }
  {
    auto m = IdentityChain(type, 16);
    *m.mutable_graph()->mutable_output(0)->mutable_type() =
        TensorTypeProto(ElementType::kInt32, {2});
    Status e = PlanError(m);
    EXPECT_STATUS(e, StatusCode::kInvalidModel, "declared tensor(int32)");
  }
  {
    auto m = IdentityChain(type, 16);
    *m.mutable_graph()->mutable_output(0)->mutable_type() =
        TensorTypeProto(ElementType::kFloat, {3});
    EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel, "declared float[3]");
  }
}

// A long cycle is found without recursion: 200,000 nodes must not overflow the stack.
TEST(SessionTest, LongCycleIsReportedWithoutDeepRecursion) {
  auto m = IdentityChain(TensorTypeProto(ElementType::kFloat, {1}), 16, 200000);
  m.mutable_graph()->mutable_node(0)->set_input(0, "t199998");  // id0 reads the chain's end
  const Status e = PlanError(m);
  EXPECT_STATUS(e, StatusCode::kInvalidModel,
                "node 'id0' (Identity-16): input 't199998' is part of a cycle: node 'id0'");
}

TEST(SessionTest, FeedsAreCheckedWithNames) {
  auto m = IdentityChain(TensorTypeProto(ElementType::kFloat, {2, 3}), 16);
  Session s = CreateSessionFromProto(m).value();
  auto wrong_shape = s.Run({Floats({3, 2}, std::vector<float>(6))});
  ASSERT_FALSE(wrong_shape.ok());
  EXPECT_STATUS(wrong_shape, StatusCode::kInvalidArgument, "input 'x'");
  EXPECT_STATUS(wrong_shape, StatusCode::kInvalidArgument, "float[2,3]");
  auto i32 = Value::MakeTensor(ElementType::kInt32, {2, 3},
                               Buffer::CopyOf(std::vector<std::byte>(24)).value())
                 .value();
  EXPECT_STATUS(s.Run({i32}), StatusCode::kInvalidArgument, "got tensor(int32)");
  auto seq = Value::MakeSequence(ElementType::kFloat, {}).value();
  EXPECT_STATUS(s.Run({seq}), StatusCode::kInvalidArgument, "got seq(tensor(float))");
  EXPECT_STATUS(s.Run(std::span<const Value>()), StatusCode::kInvalidArgument,
                "expected 1 feeds (x)");
  EXPECT_STATUS(s.RunNamed({}), StatusCode::kInvalidArgument, "'x'");
}

TEST(SessionTest, InitializerThatIsAlsoAnInputCanBeOverridden) {
  auto m = IdentityChain(TensorTypeProto(ElementType::kFloat, {1}), 16);
  auto* init = m.mutable_graph()->add_initializer();
  init->set_name("x");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(1);
  init->add_float_data(7.0f);
  Session s = CreateSessionFromProto(m).value();
  EXPECT_TRUE(s.inputs().empty());
  ASSERT_EQ(s.overridable_inputs().size(), 1u);
  EXPECT_EQ(s.Run(std::span<const Value>()).value()[0].tensor().data_as<float>()[0], 7.0f);
  Value fed = Floats({1}, {9.0f});
  auto out = s.RunNamed(std::vector<NamedValue>{{"x", fed}}).value();
  EXPECT_TRUE(out[0].SharesStorageWith(fed));
}

// A ModelProto handed over as an rvalue gives its initializer bytes to the session: the output of
// Identity(initializer) is those very bytes.
TEST(SessionTest, ConsumedProtoKeepsInitializerBytesWithoutCopy) {
  auto m = testing::EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(1024);
  w->mutable_raw_data()->assign(4096, '\x07');
  const void* bytes = w->raw_data().data();
  AddValueInfo(g->mutable_output(), "y", TensorTypeProto(ElementType::kFloat, {1024}));
  AddNode(g, "Identity", {"w"}, {"y"}, "id0");
  Session s = CreateSessionFromProto(std::move(m)).value();
  auto out = s.Run(std::span<const Value>()).value();
  EXPECT_EQ(static_cast<const void*>(out[0].tensor().data().data()), bytes);
}

TEST(SessionTest, RunIntoCopiesIntoCallerMemoryAndRefusesWhatItCannotCopy) {
  auto m = IdentityChain(TensorTypeProto(ElementType::kFloat, {4}), 16);
  Session s = CreateSessionFromProto(m).value();
  std::vector<float> dst(4, 0.0f);
  OutputBuffer out{dst.data(), dst.size() * sizeof(float)};
  auto shapes = s.RunInto(std::vector<Value>{Floats({4}, {1, 2, 3, 4})}, {&out, 1}).value();
  EXPECT_EQ(shapes[0], (std::vector<int64_t>{4}));
  EXPECT_EQ(dst, (std::vector<float>{1, 2, 3, 4}));
  OutputBuffer small{dst.data(), 8};
  EXPECT_EQ(s.RunInto(std::vector<Value>{Floats({4}, {5, 6, 7, 8})}, {&small, 1}).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(dst[0], 1.0f);  // untouched on error

  auto seq_model = IdentityChain(SequenceTypeProto(TensorTypeProto(ElementType::kFloat, {})), 16);
  Session seq_session = CreateSessionFromProto(seq_model).value();
  auto seq = Value::MakeSequence(ElementType::kFloat, {Floats({}, {1})}).value();
  auto r = seq_session.RunInto(std::vector<Value>{seq}, {&out, 1});
  EXPECT_STATUS(r, StatusCode::kInvalidArgument, "seq(tensor(float))");
}

TEST(SessionTest, EmptyOptionalPassesThroughWithItsType) {
  auto opt = OptionalTypeProto(SequenceTypeProto(TensorTypeProto(ElementType::kInt64, {})));
  Session s = CreateSessionFromProto(IdentityChain(opt, 16, 3)).value();
  Value empty = Value::MakeEmptyOptional(Type::Sequence(Type::Tensor(ElementType::kInt64))).value();
  auto out = s.Run({empty}).value();
  EXPECT_FALSE(out[0].optional().has_value());
  EXPECT_EQ(out[0].type().ToString(), "optional(seq(tensor(int64)))");
}

TEST(SessionTest, GraphInputThatIsAlsoAnOutputReturnsTheFedValue) {
  auto type = TensorTypeProto(ElementType::kFloat, {1});
  auto m = IdentityChain(type, 16);
  AddValueInfo(m.mutable_graph()->mutable_output(), "x", type);
  Session s = CreateSessionFromProto(m).value();
  Value x = Floats({1}, {4.0f});
  auto out = s.Run({x}).value();
  EXPECT_TRUE(out[1].SharesStorageWith(x));
  EXPECT_TRUE(out[0].SharesStorageWith(x));
}

// One session, 8 threads, 10,000 runs each, mixed values (tensors, strings, sequences, optionals,
// empty optionals, and a graph input that is also a graph output): every result must be exactly
// what was fed. Run under ThreadSanitizer by scripts/sanitize.sh thread.
onnx::ModelProto MixedModel() {
  onnx::ModelProto m = testing::EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  const std::vector<std::pair<std::string, onnx::TypeProto>> io = {
      {"f", TensorTypeProto(ElementType::kFloat, {-1})},
      {"s", TensorTypeProto(ElementType::kString, {-1})},
      {"q", SequenceTypeProto(TensorTypeProto(ElementType::kFloat, {-1}))},
      {"o", OptionalTypeProto(TensorTypeProto(ElementType::kInt64, {-1}))},
      {"e", OptionalTypeProto(SequenceTypeProto(TensorTypeProto(ElementType::kString, {-1})))}};
  for (const auto& [name, type] : io) {
    AddValueInfo(g->mutable_input(), name, type);
    AddValueInfo(g->mutable_output(), name + "_out", type);
    AddNode(g, "Identity", {name}, {name + "_mid"}, "a_" + name);
    AddNode(g, "Identity", {name + "_mid"}, {name + "_out"}, "b_" + name);
  }
  AddValueInfo(g->mutable_output(), "f", io[0].second);  // a graph input that is also an output
  return m;
}

std::vector<Value> MixedFeeds(int thread, int run) {
  const float base = static_cast<float>(thread * 100000 + run);
  Value f = Floats({3}, {base, -0.0f, std::bit_cast<float>(0x7fc00000u + run % 7)});
  Value s = Value::MakeStringTensor({2}, {std::to_string(run), std::string("\0\xff", 2)}).value();
  std::vector<Value> items;
  for (int i = 0; i < run % 4; ++i) items.push_back(Floats({1}, {base + i}));
  Value q = Value::MakeSequence(ElementType::kFloat, std::move(items)).value();
  Value o = run % 3 == 0
                ? Value::MakeEmptyOptional(Type::Tensor(ElementType::kInt64)).value()
                : Value::MakeOptional(testing::MakeTensorOf<int64_t>(ElementType::kInt64, {1},
                                                                     {thread * 1000000 + run}))
                      .value();
  Value e =
      run % 2 == 0
          ? Value::MakeEmptyOptional(Type::Sequence(Type::Tensor(ElementType::kString))).value()
          : Value::MakeOptional(Value::MakeSequence(ElementType::kString, {s}).value()).value();
  return {f, s, q, o, e};
}

TEST(ConcurrencyTest, EightThreadsTenThousandRunsEachOnOneSession) {
  for (bool eliminate : {true, false}) {
    SessionOptions options;
    options.eliminate_identity = eliminate;
    const Session session = CreateSessionFromProto(MixedModel(), "", options).value();
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        for (int run = 0; run < 10000; ++run) {
          const std::vector<Value> feeds = MixedFeeds(t, run);
          auto out = session.Run(feeds);
          if (!out.ok() || out->size() != 6) {
            ++failures;
            continue;
          }
          for (size_t k = 0; k < feeds.size(); ++k) {
            if (DescribeDifference(feeds[k], (*out)[k])) ++failures;
          }
          if (!(*out)[5].SharesStorageWith(feeds[0])) ++failures;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0) << "eliminate_identity=" << eliminate;
  }
}

// x [64, 256] -> MatMul(w [256, 256], a constant) -> y: 4.2 million multiply-adds, above the
// size at which a product is split over the intra-op threads.
onnx::ModelProto LargeMatMul() {
  auto m = EmptyModel(13, 8);
  auto* g = m.mutable_graph();
  AddValueInfo(g->mutable_input(), "x", TensorTypeProto(ElementType::kFloat, {64, 256}));
  AddValueInfo(g->mutable_output(), "y", TensorTypeProto(ElementType::kFloat, {64, 256}));
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(256);
  w->add_dims(256);
  for (int i = 0; i < 256 * 256; ++i) w->add_float_data(static_cast<float>(i % 13) * 0.01f - 0.06f);
  AddNode(g, "MatMul", {"x", "w"}, {"y"}, "mm");
  return m;
}

TEST(ConcurrencyTest, IntraOpThreadsSharedByConcurrentRuns) {
  // One session whose products split over 2 threads, run from 3 threads at once: a Run that finds
  // the workers busy computes its product alone. Every result has the same bits as one thread's.
  SessionOptions one;
  const Session reference = CreateSessionFromProto(LargeMatMul(), "", one).value();
  SessionOptions two;
  two.intra_op_threads = 2;
  const Session session = CreateSessionFromProto(LargeMatMul(), "", two).value();
  std::vector<float> xs(64 * 256);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 29) * 0.1f - 1.4f;
  const Value x = Floats({64, 256}, xs);
  const Value expected = reference.Run({x}).value()[0];
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int run = 0; run < 20; ++run) {
        auto out = session.Run({x});
        if (!out.ok() || DescribeDifference(expected, (*out)[0])) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(SessionTest, MetadataCopiesTheModelsDescriptiveFields) {
  auto m = IdentityChain(TensorTypeProto(ElementType::kFloat, {2}), 16);
  m.set_producer_name("maker");
  m.set_producer_version("1.2");
  m.set_domain("org.example");
  m.set_model_version(7);
  m.set_doc_string("model doc");
  m.mutable_graph()->set_name("g");
  m.mutable_graph()->set_doc_string("graph doc");
  auto* prop = m.add_metadata_props();
  prop->set_key("k");
  prop->set_value("v");
  Session s = CreateSessionFromProto(m).value();
  const ModelMetadata& md = s.metadata();
  EXPECT_EQ(md.producer_name, "maker");
  EXPECT_EQ(md.producer_version, "1.2");
  EXPECT_EQ(md.domain, "org.example");
  EXPECT_EQ(md.model_version, 7);
  EXPECT_EQ(md.doc_string, "model doc");
  EXPECT_EQ(md.graph_name, "g");
  EXPECT_EQ(md.graph_doc_string, "graph doc");
  ASSERT_EQ(md.metadata_props.size(), 1u);
  EXPECT_EQ(md.metadata_props[0].first, "k");
  EXPECT_EQ(md.metadata_props[0].second, "v");
}

TEST(SessionTest, SupportedOperatorsListsTheRegistrySorted) {
  std::vector<OperatorInfo> ops = SupportedOperators();
  bool identity_1 = false, identity_13 = false;
  for (size_t i = 0; i < ops.size(); ++i) {
    identity_1 |=
        ops[i].domain.empty() && ops[i].op_type == "Identity" && ops[i].since_version == 1;
    identity_13 |=
        ops[i].domain.empty() && ops[i].op_type == "Identity" && ops[i].since_version == 13;
    if (i > 0) {
      EXPECT_TRUE(std::tie(ops[i - 1].domain, ops[i - 1].op_type, ops[i - 1].since_version) <
                  std::tie(ops[i].domain, ops[i].op_type, ops[i].since_version));
    }
  }
  EXPECT_TRUE(identity_1);
  EXPECT_TRUE(identity_13);
}

TEST(SessionTest, PathWithNulIsRefusedNotTruncated) {
  auto s = Session::Create(std::string("/dev/null\0.onnx", 15));
  ASSERT_FALSE(s.ok());
  EXPECT_STATUS(s, StatusCode::kInvalidArgument, "NUL");
}

}  // namespace
}  // namespace idem

namespace idem {
namespace {

// An Identity the planner erases (its output becomes the input's value, without inference or a
// kernel) is checked exactly as one it keeps: the same errors, word for word, for a declared
// output of another type, an input its version does not accept and an unknown attribute.
TEST(SessionTest, ErasedIdentityIsCheckedAsAKeptOne) {
  using testing::OneNode;
  using testing::Unshaped;
  const onnx::TypeProto floats = TensorTypeProto(ElementType::kFloat, {2});
  const onnx::TypeProto float_seq = SequenceTypeProto(Unshaped(ElementType::kFloat));
  onnx::ModelProto declared_int =
      OneNode("Identity", 16, {{"x", floats}}, {{"y", TensorTypeProto(ElementType::kInt32, {2})}});
  onnx::ModelProto old_version_seq =
      OneNode("Identity", 13, {{"x", float_seq}}, {{"y", float_seq}});
  onnx::ModelProto with_attribute = OneNode("Identity", 16, {{"x", floats}}, {{"y", floats}});
  testing::AddIntAttribute(with_attribute.mutable_graph()->mutable_node(0), "axis", 1);
  const struct {
    const onnx::ModelProto* model;
    const char* message;
  } cases[] = {
      {&declared_int,
       "node 'n0' (Identity-16): output 'y' is declared tensor(int32) but the node produces "
       "tensor(float)"},
      {&old_version_seq, "node 'n0' (Identity-13): input 'x' is seq(tensor(float))"},
      {&with_attribute, "node 'n0' (Identity-16): unknown attribute 'axis'"},
  };
  for (const auto& c : cases) {
    std::string messages[2];
    for (bool erase : {true, false}) {
      SessionOptions options;
      options.eliminate_identity = erase;
      Status status = PlanError(*c.model, options);
      EXPECT_STATUS(status, StatusCode::kInvalidModel, c.message) << "erase=" << erase;
      messages[erase ? 1 : 0] = status.message();
    }
    EXPECT_EQ(messages[0], messages[1]);
  }
  // Valid: erased, the output is the fed value itself; kept, a step returns it (also shared).
  onnx::ModelProto valid = OneNode("Identity", 16, {{"x", floats}}, {{"y", floats}});
  const Value x = Floats({2}, {1.0f, 2.0f});
  for (bool erase : {true, false}) {
    SessionOptions options;
    options.eliminate_identity = erase;
    Session s = CreateSessionFromProto(valid, "", options).value();
    EXPECT_EQ(s.Describe().find("(erased: aliases its input)") != std::string::npos, erase)
        << s.Describe();
    EXPECT_TRUE(s.Run({x}).value()[0].SharesStorageWith(x));
  }
}

// Constant -> Identity -> output: the Constant is folded at planning, so a run executes no step
// and returns the attribute's value itself; with folding off the general path gives the same.
TEST(ConstantFoldingTest, ConstantsAreFoldedAtPlanning) {
  onnx::ModelProto m = testing::EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("fold");
  testing::AddValueInfo(g->mutable_output(), "out",
                        testing::TensorTypeProto(ElementType::kFloat, {2}));
  auto* c = testing::AddNode(g, "Constant", {}, {"k"}, "c0");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(2);
  a->mutable_t()->add_float_data(1.5f);
  a->mutable_t()->add_float_data(-2.0f);
  testing::AddNode(g, "Identity", {"k"}, {"out"}, "id0");
  for (bool fold : {true, false}) {
    SessionOptions options;
    options.fold_constants = fold;
    Session s = CreateSessionFromProto(m, "", options).value();
    EXPECT_EQ(s.Describe().find("folded at planning") != std::string::npos, fold) << s.Describe();
    auto out = s.Run({}).value();
    ASSERT_EQ(out.size(), 1u);
    auto v = out[0].tensor().data_as<float>();
    EXPECT_EQ(std::vector<float>(v.begin(), v.end()), (std::vector<float>{1.5f, -2.0f}));
    // Every run hands back the same folded value (no step allocates one).
    if (fold) {
      EXPECT_TRUE(s.Run({}).value()[0].SharesStorageWith(out[0]));
    }
  }
}

}  // namespace
}  // namespace idem

namespace idem {
namespace {

// Many folding nodes cannot make Create allocate without bound: folds stop at 64 MiB in all, and
// the nodes past it run at run time (same results).
TEST(ConstantFoldingTest, FoldedBytesAreBoundedPerSession) {
  onnx::ModelProto m = testing::EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("fold_total");
  auto* shape = g->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(1);
  // 14,680,000 bytes of float: charged 14,680,064 + the Value overhead (the heap block that holds
  // them), under the per-node bound of 16 MiB.
  shape->add_int64_data(3670000);
  constexpr int kNodes = 8;
  for (int i = 0; i < kNodes; ++i) {
    const std::string out = "o" + std::to_string(i);
    testing::AddNode(g, "ConstantOfShape", {"shape"}, {out}, "c" + std::to_string(i));
    testing::AddValueInfo(g->mutable_output(), out,
                          testing::TensorTypeProto(ElementType::kFloat, {3670000}));
  }
  Session s = CreateSessionFromProto(m, "", SessionOptions{}).value();
  const std::string d = s.Describe();
  size_t folded = 0;
  for (size_t at = d.find("folded at planning"); at != std::string::npos;
       at = d.find("folded at planning", at + 1)) {
    ++folded;
  }
  EXPECT_EQ(folded, 4u) << d;  // 4 x 14.7 MB fit in 64 MiB; the 5th does not
  auto out = s.Run({}).value();
  ASSERT_EQ(out.size(), static_cast<size_t>(kNodes));
  for (const Value& v : out) {
    ASSERT_EQ(v.tensor().element_count(), 3670000);
    EXPECT_EQ(v.tensor().data_as<float>()[3669999], 0.0f);
  }
}

}  // namespace
}  // namespace idem

namespace idem {
namespace {

// The planner's name table: every key found after any number of later insertions (the index is
// rebuilt and chunks are added), entries never move, duplicates are refused, and Entry(i, key)
// answers only for the entry whose key equals `key` (a wrong guess is nullptr, never another
// name's value).
TEST(NameTableTest, FindsEveryKeyAndEntriesNeverMove) {
  constexpr int kNames = 20000;  // past the growing chunks (8176 entries) and many rebuilds
  std::vector<std::string> names;
  names.reserve(kNames);
  for (int i = 0; i < kNames; ++i) names.push_back("value_" + std::to_string(i));
  NameTable<int> table;
  std::vector<int*> addresses;
  for (int i = 0; i < kNames; ++i) {
    auto [value, inserted] = table.Emplace(names[i], i);
    ASSERT_TRUE(inserted) << names[i];
    addresses.push_back(value);
  }
  EXPECT_EQ(table.size(), static_cast<size_t>(kNames));
  for (int i = 0; i < kNames; ++i) {
    ASSERT_EQ(table.Find(names[i]), addresses[i]) << names[i];
    EXPECT_EQ(*addresses[i], i);
    // A key equal in content but at another address is the same key.
    const std::string copy = names[i];
    EXPECT_EQ(table.Entry(static_cast<size_t>(i), copy), addresses[i]);
  }
  EXPECT_EQ(table.Find("value_20000"), nullptr);
  EXPECT_EQ(table.Find(""), nullptr);
  EXPECT_FALSE(table.Contains("value_"));
  auto [again, inserted] = table.Emplace(names[7], -1);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(again, addresses[7]);
  EXPECT_EQ(*again, 7);
  // Wrong guesses and guesses past the end.
  EXPECT_EQ(table.Entry(8, names[7]), nullptr);
  EXPECT_EQ(table.Entry(kNames, names[7]), nullptr);
  EXPECT_EQ(table.Entry(0, "value_00"), nullptr);
  table[names[3]] = 42;
  EXPECT_EQ(*addresses[3], 42);
  const std::string fresh = "fresh";
  EXPECT_EQ(table[fresh], 0);
  EXPECT_EQ(table.size(), static_cast<size_t>(kNames) + 1);
}

TEST(NameTableTest, ReserveRebuildsTheIndexAndKeepsEveryKey) {
  NameTable<std::string> table;
  EXPECT_EQ(table.Find("a"), nullptr);  // an empty table has no index yet
  std::vector<std::string> keys = {"a", "b", "", "a\0b"};
  keys[3].assign("a\0b", 3);
  for (const std::string& key : keys) EXPECT_TRUE(table.Emplace(key, "v" + key).second);
  table.Reserve(100000);
  for (const std::string& key : keys) {
    ASSERT_NE(table.Find(key), nullptr);
    EXPECT_EQ(*table.Find(key), "v" + key);
  }
  // Keys differing after an embedded NUL are different keys.
  EXPECT_EQ(table.Find(std::string_view("a\0c", 3)), nullptr);
}

}  // namespace
}  // namespace idem
