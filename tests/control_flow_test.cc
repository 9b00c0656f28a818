// Control flow (If, Loop, Scan, SequenceMap), outer-scope capture, liveness, the run budget, run
// options, and the kernels the official bodies use (via KernelRunner).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "src/kernels/tensor_util.h"
#include "tests/kernel_runner.h"
#include "tests/test_models.h"

namespace idem::testing {
namespace {

using E = ElementType;

onnx::TypeProto F32(std::vector<int64_t> dims) { return TensorTypeProto(E::kFloat, dims); }
onnx::TypeProto I64Scalar() { return TensorTypeProto(E::kInt64, {}); }
onnx::TypeProto BoolScalar() { return TensorTypeProto(E::kBool, {}); }

void SetGraph(onnx::NodeProto* node, const std::string& name, const onnx::GraphProto& g) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

void SetFloatsConstant(onnx::NodeProto* node, std::vector<int64_t> dims, std::vector<float> v) {
  auto* a = node->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  auto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float f : v) t->add_float_data(f);
}

// A subgraph with untyped outputs `outputs`.
onnx::GraphProto Branch(const std::string& name, std::vector<std::string> outputs) {
  onnx::GraphProto g;
  g.set_name(name);
  for (const auto& o : outputs) g.add_output()->set_name(o);
  return g;
}

Value Bool(bool b) { return MakeTensorOf<uint8_t>(E::kBool, {}, {static_cast<uint8_t>(b)}); }
Value I64(int64_t v) { return MakeTensorOf<int64_t>(E::kInt64, {}, {v}); }

std::vector<float> FloatsOf(const Value& v) {
  auto s = v.tensor().data_as<float>();
  return {s.begin(), s.end()};
}

std::vector<int64_t> ShapeOf(const Value& v) {
  auto s = v.tensor().shape();
  return {s.begin(), s.end()};
}

// x: float[3], c: bool -> If(c; then: Identity(x), else: Identity(y)) -> out
onnx::ModelProto IfOuterIdentity(int opset = 16) {
  onnx::ModelProto m = EmptyModel(opset, 8);
  auto* g = m.mutable_graph();
  g->set_name("if_outer");
  AddValueInfo(g->mutable_input(), "c", BoolScalar());
  AddValueInfo(g->mutable_input(), "x", F32({3}));
  AddValueInfo(g->mutable_input(), "y", F32({3}));
  AddValueInfo(g->mutable_output(), "out", F32({3}));
  auto* node = AddNode(g, "If", {"c"}, {"out"}, "if0");
  onnx::GraphProto then_g = Branch("then", {"t_out"});
  AddNode(&then_g, "Identity", {"x"}, {"t_out"});
  onnx::GraphProto else_g = Branch("else", {"e_out"});
  AddNode(&else_g, "Identity", {"y"}, {"e_out"});
  SetGraph(node, "then_branch", then_g);
  SetGraph(node, "else_branch", else_g);
  return m;
}

TEST(IfTest, ReturnsOuterValuesThroughIdentityWithoutCopying) {
  for (bool eliminate : {true, false}) {
    SessionOptions options;
    options.eliminate_identity = eliminate;
    Session s = CreateSessionFromProto(IfOuterIdentity(), "", options).value();
    Value x = Floats({3}, {1, 2, 3}), y = Floats({3}, {4, 5, 6});
    auto a = s.Run({Bool(true), x, y}).value();
    EXPECT_TRUE(a[0].SharesStorageWith(x));
    auto b = s.Run({Bool(false), x, y}).value();
    EXPECT_TRUE(b[0].SharesStorageWith(y));
  }
}

TEST(IfTest, UntypedBranchOutputsWithDifferentShapes) {
  onnx::ModelProto m = EmptyModel(11, 6);
  auto* g = m.mutable_graph();
  g->set_name("if_shapes");
  AddValueInfo(g->mutable_input(), "c", BoolScalar());
  AddValueInfo(g->mutable_output(), "out", Unshaped(E::kFloat));
  auto* node = AddNode(g, "If", {"c"}, {"out"});
  onnx::GraphProto then_g = Branch("then", {"a"});
  SetFloatsConstant(AddNode(&then_g, "Constant", {}, {"a"}), {2}, {1, 2});
  onnx::GraphProto else_g = Branch("else", {"b"});
  SetFloatsConstant(AddNode(&else_g, "Constant", {}, {"b"}), {3}, {7, 8, 9});
  SetGraph(node, "then_branch", then_g);
  SetGraph(node, "else_branch", else_g);
  Session s = MustCreate(m);
  EXPECT_EQ(FloatsOf(s.Run({Bool(true)}).value()[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(FloatsOf(s.Run({Bool(false)}).value()[0]), (std::vector<float>{7, 8, 9}));
}

// PyTorch's exporter writes `type {}` (a TypeProto with nothing set) for nested branch outputs it
// leaves to inference (Silero VAD v5): that is an untyped output, inferred at any depth.
TEST(IfTest, EmptyTypeProtoOnNestedBranchOutputsIsInferred) {
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("if_empty_types");
  AddValueInfo(g->mutable_input(), "c", BoolScalar());
  AddValueInfo(g->mutable_input(), "x", F32({2}));
  AddValueInfo(g->mutable_output(), "out", F32({2}));
  auto empty_typed = [](const std::string& name, const std::string& out) {
    onnx::GraphProto b = Branch(name, {out});
    b.mutable_output(0)->mutable_type();  // present, nothing set
    return b;
  };
  onnx::GraphProto inner_then = empty_typed("inner_then", "it");
  AddNode(&inner_then, "Identity", {"x"}, {"it"});
  onnx::GraphProto inner_else = empty_typed("inner_else", "ie");
  SetFloatsConstant(AddNode(&inner_else, "Constant", {}, {"ie"}), {2}, {5, 6});
  onnx::GraphProto outer_then = empty_typed("outer_then", "ot");
  auto* inner = AddNode(&outer_then, "If", {"c"}, {"ot"});
  SetGraph(inner, "then_branch", inner_then);
  SetGraph(inner, "else_branch", inner_else);
  onnx::GraphProto outer_else = empty_typed("outer_else", "oe");
  AddNode(&outer_else, "Identity", {"x"}, {"oe"});
  auto* node = AddNode(g, "If", {"c"}, {"out"});
  SetGraph(node, "then_branch", outer_then);
  SetGraph(node, "else_branch", outer_else);
  Session s = MustCreate(m);
  Value x = Floats({2}, {1, 2});
  EXPECT_TRUE(s.Run({Bool(true), x}).value()[0].SharesStorageWith(x));
  // Type errors in such an output are still caught: a main-graph output with an empty type is
  // not a subgraph's and stays an error.
  onnx::ModelProto bad = m;
  bad.mutable_graph()->mutable_output(0)->mutable_type()->Clear();
  EXPECT_FALSE(CreateSessionFromProto(bad, "", SessionOptions{}).ok());
}

TEST(IfTest, BranchesMustAgreeOnStructure) {
  onnx::ModelProto m = IfOuterIdentity();
  auto* else_g = m.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g();
  else_g->mutable_node(0)->set_op_type("SequenceConstruct");
  EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel,
                "in then_branch but seq(tensor(float)) in else_branch");
}

// Three nested Ifs; the innermost adds a value from every level: a (main) + b1 + b2 + b3.
onnx::ModelProto NestedIfs(int depth_extra = 0) {
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("nested");
  AddValueInfo(g->mutable_input(), "c", BoolScalar());
  AddValueInfo(g->mutable_input(), "a", F32({1}));
  AddValueInfo(g->mutable_output(), "out", F32({1}));
  onnx::GraphProto l3 = Branch("l3", {"r3"});
  SetFloatsConstant(AddNode(&l3, "Constant", {}, {"b3"}), {1}, {1000});
  AddNode(&l3, "Add", {"a", "b1"}, {"s1"});
  AddNode(&l3, "Add", {"s1", "b2"}, {"s2"});
  AddNode(&l3, "Add", {"s2", "b3"}, {"r3"});
  onnx::GraphProto l2 = Branch("l2", {"r2"});
  SetFloatsConstant(AddNode(&l2, "Constant", {}, {"b2"}), {1}, {100});
  auto* if3 = AddNode(&l2, "If", {"c"}, {"r2"});
  SetGraph(if3, "then_branch", l3);
  SetGraph(if3, "else_branch", l3);
  onnx::GraphProto l1 = Branch("l1", {"r1"});
  SetFloatsConstant(AddNode(&l1, "Constant", {}, {"b1"}), {1}, {10});
  auto* if2 = AddNode(&l1, "If", {"c"}, {"r1"});
  // The two branches of one If must not define the same names either (they are siblings, not
  // nested, so that is allowed): reuse l2 for both.
  SetGraph(if2, "then_branch", l2);
  SetGraph(if2, "else_branch", l2);
  auto* if1 = AddNode(g, "If", {"c"}, {"out"});
  SetGraph(if1, "then_branch", l1);
  SetGraph(if1, "else_branch", l1);
  (void)depth_extra;
  return m;
}

TEST(IfTest, NestedThreeDeepReadsValuesFromEveryLevel) {
  Session s = MustCreate(NestedIfs());
  EXPECT_EQ(FloatsOf(s.Run({Bool(true), Floats({1}, {1})}).value()[0]), (std::vector<float>{1111}));
}

TEST(IfTest, GraphDepthIsBoundedByTheLimit) {
  SessionOptions options;
  options.limits.max_graph_depth = 2;
  auto s = CreateSessionFromProto(NestedIfs(), "", options);
  ASSERT_FALSE(s.ok());
  EXPECT_STATUS(s, StatusCode::kResourceExhausted, "max_graph_depth 2");
}

TEST(IfTest, ShadowingAnOuterNameIsAnError) {
  onnx::ModelProto m = IfOuterIdentity();
  // The then-branch's Identity now writes 'y', a name of the main graph.
  auto* then_g = m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  then_g->mutable_node(0)->set_output(0, "y");
  then_g->mutable_output(0)->set_name("y");
  EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel,
                "'y' shadows a value of an enclosing graph");
}

TEST(IfTest, UndefinedOuterNameIsReported) {
  onnx::ModelProto m = IfOuterIdentity();
  auto* then_g = m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  then_g->mutable_node(0)->set_input(0, "nowhere");
  EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel, "input 'nowhere' is undefined");
}

// Loop with `m_name`/`cond_name` ('' to omit) carrying x: float[1] (+1 per iteration) and
// producing the iteration number as a scan output. The body's condition output is `cond_expr`:
// "keep" passes the incoming condition through, "stop" returns false.
onnx::ModelProto CountingLoop(const std::string& m_name, const std::string& cond_name,
                              const std::string& cond_expr = "keep") {
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("loop");
  if (!m_name.empty()) AddValueInfo(g->mutable_input(), m_name, I64Scalar());
  if (!cond_name.empty()) AddValueInfo(g->mutable_input(), cond_name, BoolScalar());
  AddValueInfo(g->mutable_input(), "x", F32({1}));
  AddValueInfo(g->mutable_output(), "x_final", Unshaped(E::kFloat));
  AddValueInfo(g->mutable_output(), "iters", Unshaped(E::kInt64));
  auto* loop = AddNode(g, "Loop", {m_name, cond_name, "x"}, {"x_final", "iters"}, "loop0");
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "i", I64Scalar());
  AddValueInfo(body.mutable_input(), "cond_in", BoolScalar());
  AddValueInfo(body.mutable_input(), "x_in", F32({1}));
  body.add_output()->set_name("cond_out");
  body.add_output()->set_name("x_out");
  body.add_output()->set_name("i_out");
  SetFloatsConstant(AddNode(&body, "Constant", {}, {"one"}), {1}, {1});
  AddNode(&body, "Add", {"x_in", "one"}, {"x_out"});
  AddNode(&body, "Identity", {"i"}, {"i_out"});
  if (cond_expr == "keep") {
    AddNode(&body, "Identity", {"cond_in"}, {"cond_out"});
  } else {
    AddNode(&body, "Not", {"cond_in"}, {"cond_out"});
  }
  SetGraph(loop, "body", body);
  return m;
}

std::vector<int64_t> Ints(const Value& v) {
  auto s = v.tensor().data_as<int64_t>();
  return {s.begin(), s.end()};
}

TEST(LoopTest, TripCountOnly) {
  Session s = MustCreate(CountingLoop("M", ""));
  auto out = s.Run({I64(4), Floats({1}, {0})}).value();
  EXPECT_EQ(FloatsOf(out[0]), (std::vector<float>{4}));
  EXPECT_EQ(Ints(out[1]), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(out[1].tensor().shape()[0], 4);
}

TEST(LoopTest, ConditionOnly) {
  Session s = MustCreate(CountingLoop("", "c", "not"));
  // true -> body returns false -> one iteration.
  auto out = s.Run({Bool(true), Floats({1}, {0})}).value();
  EXPECT_EQ(FloatsOf(out[0]), (std::vector<float>{1}));
  // false at entry: zero iterations, scan output of shape [0, 1] (the body declares none: [0]).
  auto none = s.Run({Bool(false), Floats({1}, {5})}).value();
  EXPECT_EQ(FloatsOf(none[0]), (std::vector<float>{5}));
  EXPECT_EQ(none[1].tensor().element_count(), 0);
  EXPECT_EQ(none[1].tensor().shape()[0], 0);
}

TEST(LoopTest, TripCountAndCondition) {
  Session s = MustCreate(CountingLoop("M", "c"));
  auto out = s.Run({I64(3), Bool(true), Floats({1}, {0})}).value();
  EXPECT_EQ(FloatsOf(out[0]), (std::vector<float>{3}));
  auto zero = s.Run({I64(0), Bool(true), Floats({1}, {7})}).value();
  EXPECT_EQ(FloatsOf(zero[0]), (std::vector<float>{7}));
  EXPECT_EQ(zero[1].tensor().shape()[0], 0);
}

TEST(LoopTest, NeitherTripCountNorConditionRunsUntilCancelled) {
  Session s = MustCreate(CountingLoop("", ""));
  std::atomic<bool> cancel{false};
  RunOptions options;
  options.cancel = &cancel;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cancel = true;
  });
  std::vector<Value> feeds = {Floats({1}, {0})};
  auto out = s.Run(feeds, options);
  stopper.join();
  ASSERT_FALSE(out.ok());
  EXPECT_STATUS(out, StatusCode::kCancelled, "loop0");
}

TEST(LoopTest, DeadlineStopsAnEndlessLoop) {
  Session s = MustCreate(CountingLoop("", ""));
  RunOptions options;
  options.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  std::vector<NamedValue> feeds = {{"x", Floats({1}, {0})}};
  auto out = s.RunNamed(feeds, options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kDeadlineExceeded);
}

TEST(LoopTest, OmittedCarriedValuesAndScanOutputs) {
  // The node may list fewer outputs than carried + scan values.
  onnx::ModelProto m = CountingLoop("M", "");
  m.mutable_graph()->mutable_node(0)->mutable_output()->RemoveLast();
  m.mutable_graph()->mutable_output()->RemoveLast();
  Session s = MustCreate(m);
  EXPECT_EQ(FloatsOf(s.Run({I64(2), Floats({1}, {0})}).value()[0]), (std::vector<float>{2}));
}

// Loop-16 carrying a sequence (SequenceInsert of the iteration's x) and an optional.
onnx::ModelProto SequenceLoop(bool empty_optional) {
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("seq_loop");
  AddValueInfo(g->mutable_input(), "M", I64Scalar());
  AddValueInfo(g->mutable_input(), "x", F32({1}));
  AddValueInfo(g->mutable_output(), "seq", SequenceTypeProto(Unshaped(E::kFloat)));
  AddValueInfo(g->mutable_output(), "opt", OptionalTypeProto(Unshaped(E::kFloat)));
  AddNode(g, "SequenceEmpty", {}, {"empty"});
  if (empty_optional) {
    auto* o = AddNode(g, "Optional", {}, {"opt0"});
    auto* a = o->add_attribute();
    a->set_name("type");
    a->set_type(onnx::AttributeProto::TYPE_PROTO);
    *a->mutable_tp() = Unshaped(E::kFloat);
  } else {
    AddNode(g, "Optional", {"x"}, {"opt0"});
  }
  auto* loop = AddNode(g, "Loop", {"M", "", "empty", "opt0"}, {"seq", "opt"});
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "i", I64Scalar());
  AddValueInfo(body.mutable_input(), "c", BoolScalar());
  AddValueInfo(body.mutable_input(), "s_in", SequenceTypeProto(Unshaped(E::kFloat)));
  AddValueInfo(body.mutable_input(), "o_in", OptionalTypeProto(Unshaped(E::kFloat)));
  body.add_output()->set_name("c_out");
  body.add_output()->set_name("s_out");
  body.add_output()->set_name("o_out");
  AddNode(&body, "Identity", {"c"}, {"c_out"});
  AddNode(&body, "SequenceInsert", {"s_in", "x"}, {"s_out"});
  AddNode(&body, "Identity", {"o_in"}, {"o_out"});
  SetGraph(loop, "body", body);
  return m;
}

TEST(LoopTest, CarriesSequencesAndOptionals) {
  Value x = Floats({1}, {3});
  Session s = MustCreate(SequenceLoop(false));
  auto out = s.Run({I64(1000), x}).value();
  ASSERT_EQ(out[0].sequence().size(), 1000u);
  for (const Value& item : out[0].sequence().values()) EXPECT_TRUE(item.SharesStorageWith(x));
  ASSERT_TRUE(out[1].optional().has_value());
  EXPECT_TRUE(out[1].optional().value().SharesStorageWith(x));
  Session e = MustCreate(SequenceLoop(true));
  auto empty = e.Run({I64(3), x}).value();
  EXPECT_EQ(empty[0].sequence().size(), 3u);
  EXPECT_FALSE(empty[1].optional().has_value());
}

// Loop(M?, cond?; a, b: float[1]) whose body only hands values back through Identity: the
// condition, and a and b either in place or swapped. With Identity elimination the body computes
// nothing, so the stationary form runs as a counter and the swapped form as a permutation.
onnx::ModelProto PassThroughLoop(bool with_trip_count, bool with_cond, bool swap) {
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("passthrough_loop");
  if (with_trip_count) AddValueInfo(g->mutable_input(), "M", I64Scalar());
  if (with_cond) AddValueInfo(g->mutable_input(), "c", BoolScalar());
  AddValueInfo(g->mutable_input(), "a", F32({1}));
  AddValueInfo(g->mutable_input(), "b", F32({1}));
  AddValueInfo(g->mutable_output(), "a_final", F32({1}));
  AddValueInfo(g->mutable_output(), "b_final", F32({1}));
  auto* loop = AddNode(g, "Loop", {with_trip_count ? "M" : "", with_cond ? "c" : "", "a", "b"},
                       {"a_final", "b_final"}, "loop0");
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "i", I64Scalar());
  AddValueInfo(body.mutable_input(), "c_in", BoolScalar());
  AddValueInfo(body.mutable_input(), "a_in", F32({1}));
  AddValueInfo(body.mutable_input(), "b_in", F32({1}));
  body.add_output()->set_name("c_out");
  body.add_output()->set_name("a_out");
  body.add_output()->set_name("b_out");
  AddNode(&body, "Identity", {"c_in"}, {"c_out"});
  AddNode(&body, "Identity", {swap ? "b_in" : "a_in"}, {"a_out"});
  AddNode(&body, "Identity", {swap ? "a_in" : "b_in"}, {"b_out"});
  SetGraph(loop, "body", body);
  return m;
}

Session CreateWith(const onnx::ModelProto& m, bool eliminate_identity) {
  SessionOptions options;
  options.eliminate_identity = eliminate_identity;
  return CreateSessionFromProto(m, "", options).value();
}

TEST(LoopTest, IdentityBodiesHandBackTheSameValuesWhateverTheIterationCount) {
  const Value a = Floats({1}, {1}), b = Floats({1}, {2});
  // Eliminated (the body computes nothing) and kept (the body runs its Identity kernels) must
  // agree for every trip count, in place and swapped.
  for (bool swap : {false, true}) {
    for (bool eliminate : {true, false}) {
      Session s = CreateWith(PassThroughLoop(true, false, swap), eliminate);
      for (int64_t trips : {0, 1, 2, 3, 1001}) {
        SCOPED_TRACE(fmt::format("swap {} eliminate {} trips {}", swap, eliminate, trips));
        auto out = s.Run({I64(trips), a, b}).value();
        const bool swapped = swap && trips % 2 == 1;
        EXPECT_TRUE(out[0].SharesStorageWith(swapped ? b : a));
        EXPECT_TRUE(out[1].SharesStorageWith(swapped ? a : b));
      }
    }
  }
}

TEST(LoopTest, StationaryBodyConditionFalseAtEntryRunsNoIteration) {
  Session s = CreateWith(PassThroughLoop(false, true, false), true);
  const Value a = Floats({1}, {1}), b = Floats({1}, {2});
  auto out = s.Run({Bool(false), a, b}).value();
  EXPECT_TRUE(out[0].SharesStorageWith(a));
  EXPECT_TRUE(out[1].SharesStorageWith(b));
}

TEST(LoopTest, StationaryBodyThatNeverEndsIsRefusedOrStopped) {
  // No trip count and a condition handed back unchanged: the loop provably never ends. Without a
  // way to stop it the run is refused instead of hanging; with a deadline or a cancel flag it
  // runs until stopped, like any other endless loop.
  Session s = CreateWith(PassThroughLoop(false, true, false), true);
  std::vector<Value> feeds = {Bool(true), Floats({1}, {1}), Floats({1}, {2})};
  EXPECT_STATUS(s.Run(feeds), StatusCode::kRuntimeError, "never ends");
  Session neither = CreateWith(PassThroughLoop(false, false, false), true);
  std::vector<Value> two = {Floats({1}, {1}), Floats({1}, {2})};
  EXPECT_STATUS(neither.Run(two), StatusCode::kRuntimeError, "never ends");
  RunOptions options;
  options.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  EXPECT_STATUS(s.Run(feeds, options), StatusCode::kDeadlineExceeded, "loop0");
  std::atomic<bool> cancel{true};
  RunOptions cancelled;
  cancelled.cancel = &cancel;
  EXPECT_STATUS(neither.Run(two, cancelled), StatusCode::kCancelled, "loop0");
  // A bounded stationary loop checks the flag at every iteration too.
  Session bounded = CreateWith(PassThroughLoop(true, false, false), true);
  std::vector<Value> bounded_feeds = {I64(5), Floats({1}, {1}), Floats({1}, {2})};
  EXPECT_STATUS(bounded.Run(bounded_feeds, cancelled), StatusCode::kCancelled, "loop0");
}

TEST(LoopTest, BodyInputCountMustMatch) {
  onnx::ModelProto m = CountingLoop("M", "");
  m.mutable_graph()
      ->mutable_node(0)
      ->mutable_attribute(0)
      ->mutable_g()
      ->mutable_input()
      ->RemoveLast();
  EXPECT_STATUS(PlanError(m), StatusCode::kInvalidModel,
                "the body has 2 inputs; a Loop with 1 carried values needs 3");
}

// Scan-9+: sum over axis `axis` of x (direction `dir`), scan output = running sums stacked along
// `out_axis` (direction `out_dir`).
onnx::ModelProto ScanSum(int64_t axis, int64_t dir, int64_t out_axis, int64_t out_dir) {
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("scan");
  AddValueInfo(g->mutable_input(), "init", F32({2}));
  AddValueInfo(g->mutable_input(), "x", F32({-1, -1}));
  AddValueInfo(g->mutable_output(), "sum", Unshaped(E::kFloat));
  AddValueInfo(g->mutable_output(), "partial", Unshaped(E::kFloat));
  auto* scan = AddNode(g, "Scan", {"init", "x"}, {"sum", "partial"});
  AddIntAttribute(scan, "num_scan_inputs", 1);
  auto ints = [&](const char* name, int64_t v) {
    auto* a = scan->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(v);
  };
  ints("scan_input_axes", axis);
  ints("scan_input_directions", dir);
  ints("scan_output_axes", out_axis);
  ints("scan_output_directions", out_dir);
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "s_in", F32({2}));
  AddValueInfo(body.mutable_input(), "e", F32({2}));
  body.add_output()->set_name("s_out");
  body.add_output()->set_name("p");
  AddNode(&body, "Add", {"s_in", "e"}, {"s_out"});
  AddNode(&body, "Identity", {"s_out"}, {"p"});
  SetGraph(scan, "body", body);
  return m;
}

TEST(ScanTest, AxesAndDirections) {
  // x = [[1, 2, 3], [4, 5, 6]]: scanning axis 1 gives slices [1,4], [2,5], [3,6].
  Value x = Floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Value init = Floats({2}, {0, 0});
  auto fwd = MustCreate(ScanSum(1, 0, 0, 0)).Run({init, x}).value();
  EXPECT_EQ(FloatsOf(fwd[0]), (std::vector<float>{6, 15}));
  EXPECT_EQ(FloatsOf(fwd[1]), (std::vector<float>{1, 4, 3, 9, 6, 15}));  // [3, 2]
  // Reverse input direction: slices [3,6], [2,5], [1,4]; output stacked along axis 1 ([2, 3]).
  auto rev = MustCreate(ScanSum(-1, 1, 1, 0)).Run({init, x}).value();
  EXPECT_EQ(rev[1].tensor().shape()[0], 2);
  EXPECT_EQ(FloatsOf(rev[1]), (std::vector<float>{3, 5, 6, 6, 11, 15}));
  // Prepending output: last iteration first.
  auto pre = MustCreate(ScanSum(1, 0, 0, 1)).Run({init, x}).value();
  EXPECT_EQ(FloatsOf(pre[1]), (std::vector<float>{6, 15, 3, 9, 1, 4}));
}

// A direction other than 0 or 1 was read as forward; it is an invalid model (as the spec says).
TEST(ScanTest, DirectionsAreZeroOrOne) {
  for (int64_t dir : {2, -1}) {
    EXPECT_STATUS(PlanError(ScanSum(1, dir, 0, 0)), StatusCode::kInvalidModel,
                  fmt::format("attribute 'scan_input_directions'[0] is {}; a direction is 0", dir));
    EXPECT_STATUS(PlanError(ScanSum(1, 0, 0, dir)), StatusCode::kInvalidModel,
                  fmt::format("attribute 'scan_output_directions'[0] is {}", dir));
  }
}

// Scan over axis 1 of x: [2^62, 1, 0] (an empty tensor), each slice [2^62, 0] stacked back along
// axis 1. Slicing and stacking once looped over the 2^62 rows before axis 1 copying nothing, so
// the run never ended; an empty result must cost what it holds.
TEST(ScanTest, EmptySlicesWithHugeLeadingDimsAreNotLoopedOver) {
  for (E type : {E::kFloat, E::kString}) {
    onnx::ModelProto m = EmptyModel(16, 8);
    auto* g = m.mutable_graph();
    g->set_name("scan_empty");
    AddValueInfo(g->mutable_input(), "x", TensorTypeProto(type, {-1, -1, -1}));
    AddValueInfo(g->mutable_output(), "ys", Unshaped(type));
    auto* scan = AddNode(g, "Scan", {"x"}, {"ys"}, "scan");
    AddIntAttribute(scan, "num_scan_inputs", 1);
    for (const char* name : {"scan_input_axes", "scan_output_axes"}) {
      auto* a = scan->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INTS);
      a->add_ints(1);
    }
    onnx::GraphProto body;
    body.set_name("body");
    AddValueInfo(body.mutable_input(), "x_t", Unshaped(type));
    body.add_output()->set_name("y");
    AddNode(&body, "Identity", {"x_t"}, {"y"});
    SetGraph(scan, "body", body);
    const int64_t huge = int64_t{1} << 62;
    Value x = type == E::kString ? Value::MakeStringTensor({huge, 1, 0}, {}).value()
                                 : Value::MakeTensor(type, {huge, 1, 0}, Buffer()).value();
    auto out = MustCreate(m).Run({x});
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ((*out)[0].tensor().element_type(), type);
    EXPECT_EQ(
        std::vector<int64_t>((*out)[0].tensor().shape().begin(), (*out)[0].tensor().shape().end()),
        (std::vector<int64_t>{huge, 1, 0}));
  }
}

TEST(ScanTest, ZeroLengthScanStacksNothingAlongAnyOutputAxis) {
  // x [2, 0] scanned along axis 1: no iteration. The scan output is the body output's shape
  // ([2]) with 0 inserted at its axis (ONNX Runtime 1.30 fails such a Scan; idem used to accept
  // only output axis 0). The state comes back unchanged.
  Value x = Floats({2, 0}, {});
  Value init = Floats({2}, {7, 8});
  for (int64_t out_axis : {0, 1, -1, -2}) {
    auto out = MustCreate(ScanSum(1, 0, out_axis, 0)).Run({init, x}).value();
    EXPECT_EQ(FloatsOf(out[0]), (std::vector<float>{7, 8}));
    const bool first = out_axis == 0 || out_axis == -2;
    EXPECT_EQ(ShapeOf(out[1]), first ? (std::vector<int64_t>{0, 2}) : (std::vector<int64_t>{2, 0}))
        << out_axis;
  }
  auto bad = MustCreate(ScanSum(1, 0, 2, 0)).Run({init, x});
  EXPECT_STATUS(bad, StatusCode::kInvalidArgument, "outside the output's rank 2");
}

// Scan-8 over x: float[batch, 3, 2] with state init: float[batch, 2]; the body adds each item
// to the state and also emits the running sum as a scan output. `reverse` scans backwards.
onnx::ModelProto Scan8RunningSum(bool reverse) {
  onnx::ModelProto m = EmptyModel(8, 3);
  auto* g = m.mutable_graph();
  g->set_name("scan8_running_sum");
  AddValueInfo(g->mutable_input(), "lens", TensorTypeProto(E::kInt64, {-1}));
  AddValueInfo(g->mutable_input(), "init", F32({2, 2}));
  AddValueInfo(g->mutable_input(), "x", F32({2, 3, 2}));
  AddValueInfo(g->mutable_output(), "sum", Unshaped(E::kFloat));
  AddValueInfo(g->mutable_output(), "partial", Unshaped(E::kFloat));
  auto* scan = AddNode(g, "Scan", {"lens", "init", "x"}, {"sum", "partial"}, "scan8");
  AddIntAttribute(scan, "num_scan_inputs", 1);
  if (reverse) {
    auto* a = scan->add_attribute();
    a->set_name("directions");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(1);
  }
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "s_in", F32({2}));
  AddValueInfo(body.mutable_input(), "e", F32({2}));
  body.add_output()->set_name("s_out");
  body.add_output()->set_name("p");
  AddNode(&body, "Add", {"s_in", "e"}, {"s_out"});
  AddNode(&body, "Identity", {"s_out"}, {"p"});
  SetGraph(scan, "body", body);
  return m;
}

// Scan-8 over x: [batch, 0, 2] (no bytes at all): every batch entry scans nothing. The entries'
// results used to be held uncharged (~300 bytes each: a [2^30, 0, 2] input grew by gigabytes a
// minute) and no run option was checked between entries (an empty entry runs no iteration).
TEST(ScanTest, Scan8BatchesAreChargedAndInterruptible) {
  onnx::ModelProto m = EmptyModel(8, 3);
  auto* g = m.mutable_graph();
  g->set_name("scan8_empty");
  AddValueInfo(g->mutable_input(), "x", F32({-1, -1, 2}));
  AddValueInfo(g->mutable_output(), "ys", Unshaped(E::kFloat));
  auto* scan = AddNode(g, "Scan", {"", "x"}, {"ys"}, "scan8");
  AddIntAttribute(scan, "num_scan_inputs", 1);
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "e", F32({2}));
  body.add_output()->set_name("p");
  AddNode(&body, "Identity", {"e"}, {"p"});
  SetGraph(scan, "body", body);
  const int64_t batch = int64_t{1} << 22;
  Value x = Value::MakeTensor(E::kFloat, {batch, 0, 2}, Buffer()).value();
  SessionOptions small;
  small.limits.max_run_bytes = 64u << 20;
  auto over = CreateSessionFromProto(m, "", small).value().Run({x});
  ASSERT_FALSE(over.ok());
  EXPECT_STATUS(over, StatusCode::kResourceExhausted, "node 'scan8'");
  Session s = MustCreate(m);
  RunOptions late;
  late.deadline = std::chrono::steady_clock::now();
  std::vector<Value> feeds = {x};
  EXPECT_STATUS(s.Run(feeds, late), StatusCode::kDeadlineExceeded, "node 'scan8'");
  // A small batch runs: [4, 0, 2] out.
  auto fine = s.Run({Value::MakeTensor(E::kFloat, {4, 0, 2}, Buffer()).value()});
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  EXPECT_EQ(
      std::vector<int64_t>((*fine)[0].tensor().shape().begin(), (*fine)[0].tensor().shape().end()),
      (std::vector<int64_t>{4, 0, 2}));
}

TEST(ScanTest, Scan8SequenceLensMustCoverTheBatch) {
  Session s = MustCreate(Scan8RunningSum(false));
  Value init = Floats({2, 2}, {0, 0, 0, 0});
  Value x = Floats({2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  auto ok = s.Run({MakeTensorOf<int64_t>(E::kInt64, {2}, {3, 3}), init, x}).value();
  EXPECT_EQ(FloatsOf(ok[0]), (std::vector<float>{9, 12, 27, 30}));
  auto short_lens = s.Run({MakeTensorOf<int64_t>(E::kInt64, {1}, {3}), init, x});
  ASSERT_FALSE(short_lens.ok());
  EXPECT_STATUS(short_lens, StatusCode::kInvalidArgument,
                "sequence_lens has 1 entries for a batch of 2");
}

TEST(ScanTest, Scan8ShortSequenceLensScanAPrefixAndPadWithZeros) {
  // As ONNX Runtime: entry b scans its first lens[b] items (backwards from item lens[b]-1 when
  // reversed); the scan output's remaining items are zeros.
  Value init = Floats({2, 2}, {0, 0, 0, 0});
  Value x = Floats({2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Value lens = MakeTensorOf<int64_t>(E::kInt64, {2}, {2, 3});
  Session forward = MustCreate(Scan8RunningSum(false));
  auto f = forward.Run({lens, init, x}).value();
  EXPECT_EQ(FloatsOf(f[0]), (std::vector<float>{4, 6, 27, 30}));
  EXPECT_EQ(FloatsOf(f[1]), (std::vector<float>{1, 2, 4, 6, 0, 0, 7, 8, 16, 18, 27, 30}));
  EXPECT_EQ(std::vector<int64_t>(f[1].tensor().shape().begin(), f[1].tensor().shape().end()),
            (std::vector<int64_t>{2, 3, 2}));
  Session backward = MustCreate(Scan8RunningSum(true));
  auto r = backward.Run({lens, init, x}).value();
  EXPECT_EQ(FloatsOf(r[0]), (std::vector<float>{4, 6, 27, 30}));
  EXPECT_EQ(FloatsOf(r[1]), (std::vector<float>{3, 4, 4, 6, 0, 0, 11, 12, 20, 22, 27, 30}));
  // Lengths outside [1, the scan axis] are refused (ONNX Runtime does too).
  for (int64_t bad : {0, -1, 4}) {
    EXPECT_STATUS(forward.Run({MakeTensorOf<int64_t>(E::kInt64, {2}, {3, bad}), init, x}),
                  StatusCode::kInvalidArgument, "sequence_lens[1] is");
  }
}

TEST(SequenceMapTest, ExtraInputsAndSeveralOutputs) {
  onnx::ModelProto m = EmptyModel(17, 8);
  auto* g = m.mutable_graph();
  g->set_name("map");
  AddValueInfo(g->mutable_input(), "s", SequenceTypeProto(Unshaped(E::kFloat)));
  AddValueInfo(g->mutable_input(), "t", F32({1}));
  AddValueInfo(g->mutable_output(), "sums", SequenceTypeProto(Unshaped(E::kFloat)));
  AddValueInfo(g->mutable_output(), "shapes", SequenceTypeProto(Unshaped(E::kInt64)));
  auto* node = AddNode(g, "SequenceMap", {"s", "t"}, {"sums", "shapes"});
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "e", Unshaped(E::kFloat));
  AddValueInfo(body.mutable_input(), "k", F32({1}));
  body.add_output()->set_name("sum");
  body.add_output()->set_name("shape");
  AddNode(&body, "Add", {"e", "k"}, {"sum"});
  AddNode(&body, "Shape", {"e"}, {"shape"});
  SetGraph(node, "body", body);
  Session session = MustCreate(m);
  Value seq = Value::MakeSequence(E::kFloat, {Floats({2}, {1, 2}), Floats({3}, {3, 4, 5})}).value();
  auto out = session.Run({seq, Floats({1}, {10})}).value();
  ASSERT_EQ(out[0].sequence().size(), 2u);
  EXPECT_EQ(FloatsOf(out[0].sequence().at(1)), (std::vector<float>{13, 14, 15}));
  EXPECT_EQ(Ints(out[1].sequence().at(0)), (std::vector<int64_t>{2}));
  EXPECT_EQ(Ints(out[1].sequence().at(1)), (std::vector<int64_t>{3}));
}

// x -> Add(x, x) -> a1 -> Add(a1, x) -> a2 -> ... -> a_n: each intermediate is read once.
onnx::ModelProto AddChain(int n, int64_t size) {
  onnx::ModelProto m = EmptyModel(14, 8);
  auto* g = m.mutable_graph();
  g->set_name("chain");
  AddValueInfo(g->mutable_input(), "x", F32({size}));
  AddValueInfo(g->mutable_output(), "y", F32({size}));
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    const std::string out = i + 1 == n ? "y" : "a" + std::to_string(i);
    AddNode(g, "Add", {prev, "x"}, {out}, "add" + std::to_string(i));
    prev = out;
  }
  return m;
}

TEST(BudgetTest, LivenessFreesIntermediatesSoLongChainsFitTheBudget) {
  // 1 MiB tensors, 50 steps: 50 MiB if nothing were freed; about 2 MiB live at any time.
  const int64_t size = 1 << 18;
  SessionOptions options;
  options.limits.max_run_bytes = 4u << 20;
  Session s = CreateSessionFromProto(AddChain(50, size), "", options).value();
  std::vector<float> data(static_cast<size_t>(size), 1.0f);
  Value x = Floats({size}, data);
  auto out = s.Run({x});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(FloatsOf(out.value()[0])[0], 51.0f);
}

// The budget's promise is that it never under-counts: what a Value is charged covers the heap it
// takes. Measured with glibc's allocator statistics over many values of each kind (skipped when
// the allocator keeps none, as under ASan).
TEST(BudgetTest, ChargesCoverTheHeapValuesTake) {
  constexpr int kCount = 20000;
  auto heap_per_value = [&](const std::function<Value()>& make, uint64_t& charged) {
    std::vector<Value> keep;
    keep.reserve(kCount);
    const size_t before = mallinfo2().uordblks;
    for (int i = 0; i < kCount; ++i) keep.push_back(make());
    const size_t after = mallinfo2().uordblks;
    charged = keep[0].BudgetBytes();
    return after > before ? static_cast<double>(after - before) / kCount : 0.0;
  };
  const std::string long_string(100, 'x');
  std::vector<std::pair<std::string, std::function<Value()>>> kinds = {
      {"int64 scalar", [] { return tensor_util::MakeInt64Scalar(7).value(); }},
      {"float[1,1,1,1,1,1]",
       [] {
         return Floats({1, 1, 1, 1, 1, 1}, {1});
       }},
      {"float[0]", [] { return Value::MakeTensor(E::kFloat, {0}, Buffer()).value(); }},
      {"string[4] of 100 bytes",
       [&] {
         return Value::MakeStringTensor({4}, std::vector<std::string>(4, long_string)).value();
       }},
      {"string[2] of 1 byte",
       [] {
         return Value::MakeStringTensor({2}, {std::string("a"), std::string("b")}).value();
       }},
      {"seq of 3 float[2]",
       [] {
         return Value::MakeSequence(E::kFloat,
                                    {Floats({2}, {1, 2}), Floats({2}, {3, 4}), Floats({2}, {5, 6})})
             .value();
       }},
      {"empty optional",
       [] {
         return Value::MakeEmptyOptional(Type::Tensor(E::kFloat, std::vector<Dim>{})).value();
       }},
      {"optional(int64 scalar)",
       [] { return Value::MakeOptional(tensor_util::MakeInt64Scalar(1).value()).value(); }},
  };
  for (const auto& [name, make] : kinds) {
    uint64_t charged = 0;
    const double heap = heap_per_value(make, charged);
    if (heap == 0.0) GTEST_SKIP() << "the allocator keeps no statistics";
    EXPECT_GE(static_cast<double>(charged), heap) << name;
  }
}

// A string tensor is charged its strings' lengths, so stacking or concatenating many references
// to one long string is refused before it is copied (it used to count 48 bytes per element:
// a 1 MB model could make a Loop copy its one string thousands of times).
TEST(BudgetTest, StringContentsCountWhenStackedOrConcatenated) {
  const std::string mib(1 << 20, 's');
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("strings");
  auto* s = g->add_initializer();
  s->set_name("s");
  s->set_data_type(onnx::TensorProto::STRING);
  s->add_string_data(mib);
  auto* count = g->add_initializer();
  count->set_name("M");
  count->set_data_type(onnx::TensorProto::INT64);
  count->add_int64_data(200);
  AddValueInfo(g->mutable_output(), "stacked", Unshaped(E::kString));
  AddValueInfo(g->mutable_output(), "concat", Unshaped(E::kString));
  auto* loop = AddNode(g, "Loop", {"M", ""}, {"stacked"}, "loop");
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "i", I64Scalar());
  AddValueInfo(body.mutable_input(), "c", BoolScalar());
  body.add_output()->set_name("c_out");
  body.add_output()->set_name("y");
  AddNode(&body, "Identity", {"c"}, {"c_out"});
  AddNode(&body, "Identity", {"s"}, {"y"});
  SetGraph(loop, "body", body);
  // ConcatFromSequence over 100 references to the same 1 MiB string.
  std::vector<std::string> refs(100, "s");
  AddNode(g, "SequenceConstruct", refs, {"seq"}, "construct");
  auto* concat = AddNode(g, "ConcatFromSequence", {"seq"}, {"concat"}, "concat");
  AddIntAttribute(concat, "axis", 0);
  AddIntAttribute(concat, "new_axis", 1);

  SessionOptions options;
  options.limits.max_run_bytes = 64u << 20;
  auto out = CreateSessionFromProto(m, "", options).value().Run({});
  ASSERT_FALSE(out.ok());
  EXPECT_STATUS(out, StatusCode::kResourceExhausted, "node 'loop'");
  // Without the Loop the sequence (100 MiB as counted) is over budget on its own.
  g->mutable_node()->DeleteSubrange(0, 1);
  g->mutable_output()->DeleteSubrange(0, 1);
  auto concat_only = CreateSessionFromProto(m, "", options).value().Run({});
  ASSERT_FALSE(concat_only.ok());
  EXPECT_EQ(concat_only.status().code(), StatusCode::kResourceExhausted);
  // With room for it, the same model runs and copies the string 100 times.
  options.limits.max_run_bytes = 1u << 30;
  auto fits = CreateSessionFromProto(m, "", options).value().Run({});
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_EQ((*fits)[0].tensor().element_count(), 100);
  EXPECT_EQ((*fits)[0].tensor().string_bytes(), 100u << 20);
}

TEST(BudgetTest, CrossingTheRunBudgetNamesTheNode) {
  SessionOptions options;
  options.limits.max_run_bytes = 1u << 20;  // one 1 MiB tensor does not fit with its overhead
  Session s = CreateSessionFromProto(AddChain(3, 1 << 18), "", options).value();
  std::vector<float> data(1 << 18, 1.0f);
  auto out = s.Run({Floats({1 << 18}, data)});
  ASSERT_FALSE(out.ok());
  EXPECT_STATUS(out, StatusCode::kResourceExhausted, "node 'add0'");
  EXPECT_STATUS(out, StatusCode::kResourceExhausted, "max_run_bytes");
}

TEST(BudgetTest, DoublingThroughSequencesIsStoppedByTheBudget) {
  // x -> SequenceConstruct(x, x) -> ConcatFromSequence -> doubles, 40 times.
  onnx::ModelProto m = EmptyModel(14, 8);
  auto* g = m.mutable_graph();
  g->set_name("doubling");
  AddValueInfo(g->mutable_input(), "x", F32({-1}));
  AddValueInfo(g->mutable_output(), "y", Unshaped(E::kFloat));
  std::string prev = "x";
  for (int i = 0; i < 40; ++i) {
    AddNode(g, "SequenceConstruct", {prev, prev}, {"s" + std::to_string(i)});
    const std::string out = i + 1 == 40 ? "y" : "c" + std::to_string(i);
    auto* c = AddNode(g, "ConcatFromSequence", {"s" + std::to_string(i)}, {out},
                      "concat" + std::to_string(i));
    AddIntAttribute(c, "axis", 0);
    prev = out;
  }
  SessionOptions options;
  options.limits.max_run_bytes = 64u << 20;
  Session s = CreateSessionFromProto(m, "", options).value();
  auto out = s.Run({Floats({1024}, std::vector<float>(1024, 1))});
  ASSERT_FALSE(out.ok());
  EXPECT_STATUS(out, StatusCode::kResourceExhausted, "node 'concat");
}

// 40 SplitToSequence nodes splitting one empty tensor, all results kept as outputs: the chunks'
// Value overhead counts against the run budget (no per-node allowance adds up unchecked).
TEST(BudgetTest, ManySplitsOfAnEmptyTensorAreCharged) {
  auto model = [](int64_t axis_len) {
    onnx::ModelProto m = EmptyModel(14, 8);
    auto* g = m.mutable_graph();
    g->set_name("splits");
    AddValueInfo(g->mutable_input(), "x", F32({0, axis_len}));
    for (int i = 0; i < 40; ++i) {
      const std::string out = "s" + std::to_string(i);
      AddValueInfo(g->mutable_output(), out, SequenceTypeProto(Unshaped(E::kFloat)));
      auto* n = AddNode(g, "SplitToSequence", {"x"}, {out}, "split" + std::to_string(i));
      AddIntAttribute(n, "axis", 1);
    }
    return m;
  };
  SessionOptions options;
  options.limits.max_run_bytes = 8u << 20;
  // 5,000 chunks per node (~0.4 MB of Values each) fit one node's allowance, but 40 of them
  // exceed an 8 MiB run budget.
  Session s = CreateSessionFromProto(model(5000), "", options).value();
  auto out = s.Run({Floats({0, 5000}, {})});
  ASSERT_FALSE(out.ok());
  EXPECT_STATUS(out, StatusCode::kResourceExhausted, "node 'split");
  // With the default budget the same run succeeds.
  auto fine = MustCreate(model(5000)).Run({Floats({0, 5000}, {})});
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  EXPECT_EQ((*fine)[39].sequence().size(), 5000u);
  // 100,000 chunks of an empty tensor exceed what one node may make from nothing.
  auto big = MustCreate(model(100000)).Run({Floats({0, 100000}, {})});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
}

TEST(ScaleTest, ManyInputsByNameAndManyOutputs) {
  // 40,000 inputs fed by name, each also a graph output, plus 160,000 outputs of one Identity.
  onnx::ModelProto m = EmptyModel(14, 8);
  auto* g = m.mutable_graph();
  g->set_name("wide");
  std::vector<NamedValue> feeds;
  Value v = Floats({1}, {1});
  for (int i = 0; i < 40000; ++i) {
    const std::string name = "x" + std::to_string(i);
    AddValueInfo(g->mutable_input(), name, F32({1}));
    AddValueInfo(g->mutable_output(), name, F32({1}));
    feeds.push_back({name, v});
  }
  Session s = MustCreate(m);
  auto out = s.RunNamed(feeds);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->size(), 40000u);

  onnx::ModelProto wide = EmptyModel(14, 8);
  auto* w = wide.mutable_graph();
  w->set_name("outputs");
  AddValueInfo(w->mutable_input(), "x", F32({1}));
  AddNode(w, "Add", {"x", "x"}, {"y"});
  for (int i = 0; i < 160000; ++i) AddValueInfo(w->mutable_output(), "y", F32({1}));
  // Listing one output many times is refused, but only after a linear scan.
  EXPECT_STATUS(PlanError(wide), StatusCode::kInvalidModel, "graph output 'y' is listed twice");
}

// ---- Kernels through KernelRunner -------------------------------------------------------------

uint16_t HalfBits(const Value& v, size_t i) { return v.tensor().data_as<uint16_t>()[i]; }

TEST(KernelRunnerTest, AddBroadcastsAndWrapsIntegers) {
  auto a = MakeTensorOf<int32_t>(E::kInt32, {2, 1}, {INT32_MAX, 1});
  auto b = MakeTensorOf<int32_t>(E::kInt32, {3}, {1, 2, 3});
  auto out = KernelRunner("Add", 14).Run({a, b}).value();
  ASSERT_EQ(out[0].tensor().shape().size(), 2u);
  auto r = out[0].tensor().data_as<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(r.begin(), r.end()),
            (std::vector<int32_t>{INT32_MIN, INT32_MIN + 1, INT32_MIN + 2, 2, 3, 4}));
  auto a22 = MakeTensorOf<int32_t>(E::kInt32, {2, 2}, {1, 2, 3, 4});
  auto bad = KernelRunner("Add", 14).Run({a22, b});
  EXPECT_STATUS(bad, StatusCode::kInvalidArgument, "cannot be broadcast");
  // uint8 needs Add-14.
  auto u8 = MakeTensorOf<uint8_t>(E::kUint8, {1}, {250});
  EXPECT_FALSE(KernelRunner("Add", 13).Run({u8, u8}).ok());
  EXPECT_EQ(KernelRunner("Add", 14).Run({u8, u8}).value()[0].tensor().data_as<uint8_t>()[0], 244);
}

TEST(KernelRunnerTest, AddRoundsFloat16AndBfloat16ToNearestEven) {
  // float16: 1 + 2^-11 is exactly halfway between 1 and 1 + 2^-10: ties to even gives 1.
  // 1 + 3*2^-11 is halfway between 1+2^-10 and 1+2^-9... ties to even gives 1 + 2^-9 (0x3C02).
  auto a = MakeTensorOf<uint16_t>(E::kFloat16, {3}, {0x3C00, 0x3C01, 0x7BFF});
  auto b = MakeTensorOf<uint16_t>(E::kFloat16, {3}, {0x1000, 0x1000, 0x7BFF});
  auto out = KernelRunner("Add", 14).Run({a, b}).value();
  EXPECT_EQ(HalfBits(out[0], 0), 0x3C00);  // 1 + 2^-11 -> 1
  EXPECT_EQ(HalfBits(out[0], 1), 0x3C02);  // (1 + 2^-10) + 2^-11 -> 1 + 2^-9
  EXPECT_EQ(HalfBits(out[0], 2), 0x7C00);  // 65504 + 65504 -> inf
  // bfloat16: 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even gives 1 (0x3F80).
  auto x = MakeTensorOf<uint16_t>(E::kBfloat16, {2}, {0x3F80, 0x3F81});
  auto y = MakeTensorOf<uint16_t>(E::kBfloat16, {2}, {0x3B80, 0x3B80});
  auto r = KernelRunner("Add", 13).Run({x, y}).value();
  EXPECT_EQ(HalfBits(r[0], 0), 0x3F80);
  EXPECT_EQ(HalfBits(r[0], 1), 0x3F82);
  EXPECT_FALSE(KernelRunner("Add", 7).Run({x, y}).ok());  // bfloat16 needs Add-13
}

TEST(KernelRunnerTest, Float16AddChainsRoundEveryAdd) {
  // Found by differential testing: ONNX Runtime computes a chain of float16 Adds in float and
  // rounds once (0x5299 here). float16 arithmetic rounds each Add: x + y = 32.99 -> 33.0
  // (0x5020), then y + 33.0 = 52.796875, a tie between 0x5299 and 0x529A -> even: 0x529A.
  auto x = MakeTensorOf<uint16_t>(E::kFloat16, {1}, {0x4A99});
  auto y = MakeTensorOf<uint16_t>(E::kFloat16, {1}, {0x4CF3});
  auto a = KernelRunner("Add", 14).Run({x, y}).value();
  EXPECT_EQ(HalfBits(a[0], 0), 0x5020);
  auto b = KernelRunner("Add", 14).Run({y, a[0]}).value();
  EXPECT_EQ(HalfBits(b[0], 0), 0x529A);
}

TEST(KernelRunnerTest, SliceWithNegativeStepsAndClamping) {
  auto x = MakeTensorOf<int64_t>(E::kInt64, {5}, {0, 1, 2, 3, 4});
  auto starts = MakeTensorOf<int64_t>(E::kInt64, {1}, {-1});
  auto ends = MakeTensorOf<int64_t>(E::kInt64, {1}, {INT64_MIN});
  auto axes = MakeTensorOf<int64_t>(E::kInt64, {1}, {0});
  auto steps = MakeTensorOf<int64_t>(E::kInt64, {1}, {-2});
  auto out = KernelRunner("Slice", 13).Run({x, starts, ends, axes, steps}).value();
  EXPECT_EQ(Ints(out[0]), (std::vector<int64_t>{4, 2, 0}));
  auto zero = MakeTensorOf<int64_t>(E::kInt64, {1}, {0});
  auto bad = KernelRunner("Slice", 13).Run({x, starts, ends, axes, zero});
  EXPECT_STATUS(bad, StatusCode::kInvalidArgument, "a step of 0");
}

// Steps of INT64_MAX and INT64_MIN take one element (as in ONNX Runtime); the element count used
// to be computed as `distance + step - 1` and `-step`, which overflow int64 (UB; the result was
// an error or garbage). An empty input with huge dims gives an empty result at once.
TEST(KernelRunnerTest, SliceWithExtremeStepsAndEmptyHugeInputs) {
  auto x = MakeTensorOf<int64_t>(E::kInt64, {5}, {0, 1, 2, 3, 4});
  auto one = [](int64_t v) { return MakeTensorOf<int64_t>(E::kInt64, {1}, {v}); };
  auto fwd = KernelRunner("Slice", 13).Run({x, one(1), one(INT64_MAX), one(0), one(INT64_MAX)});
  ASSERT_TRUE(fwd.ok()) << fwd.status().message();
  EXPECT_EQ(Ints((*fwd)[0]), (std::vector<int64_t>{1}));
  auto back = KernelRunner("Slice", 13).Run({x, one(-1), one(INT64_MIN), one(0), one(INT64_MIN)});
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(Ints((*back)[0]), (std::vector<int64_t>{4}));
  const int64_t huge = int64_t{1} << 60;
  auto empty = Value::MakeTensor(E::kFloat, {0, huge, 4}, Buffer()).value();
  auto sliced = KernelRunner("Slice", 13).Run({empty, one(1), one(3), one(2), one(1)});
  ASSERT_TRUE(sliced.ok()) << sliced.status().message();
  EXPECT_EQ(std::vector<int64_t>((*sliced)[0].tensor().shape().begin(),
                                 (*sliced)[0].tensor().shape().end()),
            (std::vector<int64_t>{0, huge, 2}));
}

TEST(KernelRunnerTest, Slice1TakesAttributes) {
  // The spec's examples: data [[1,2,3,4],[5,6,7,8]].
  auto data = MakeTensorOf<int64_t>(E::kInt64, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto one = KernelRunner("Slice", 9)
                 .IntsAttr("axes", {0, 1})
                 .IntsAttr("starts", {1, 0})
                 .IntsAttr("ends", {2, 3})
                 .Run({data})
                 .value();
  EXPECT_EQ(Ints(one[0]), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(std::vector<int64_t>(one[0].tensor().shape().begin(), one[0].tensor().shape().end()),
            (std::vector<int64_t>{1, 3}));
  // Omitted axes are [0, 1, ...]; a negative start counts from the end; 1000 means "to the end".
  auto two = KernelRunner("Slice", 1)
                 .IntsAttr("starts", {0, 1})
                 .IntsAttr("ends", {-1, 1000})
                 .Run({data})
                 .value();
  EXPECT_EQ(Ints(two[0]), (std::vector<int64_t>{2, 3, 4}));
  // starts and ends are required and must agree in length; Slice-1 has no inputs beyond data.
  EXPECT_STATUS(KernelRunner("Slice", 1).IntsAttr("starts", {0}).Run({data}),
                StatusCode::kInvalidModel, "'ends'");
  EXPECT_STATUS(
      KernelRunner("Slice", 1).IntsAttr("starts", {0}).IntsAttr("ends", {1, 2}).Run({data}),
      StatusCode::kInvalidModel, "one length");
  // Slice-10 and later take them as inputs, not attributes.
  EXPECT_STATUS(KernelRunner("Slice", 10).IntsAttr("starts", {0}).Run({data}),
                StatusCode::kInvalidModel, "unknown attribute 'starts'");
}

TEST(KernelRunnerTest, Unsqueeze1TakesNonNegativeAxes) {
  auto x = MakeTensorOf<float>(E::kFloat, {3}, {1, 2, 3});
  auto out = KernelRunner("Unsqueeze", 1).IntsAttr("axes", {0, 2}).Run({x}).value();
  EXPECT_EQ(std::vector<int64_t>(out[0].tensor().shape().begin(), out[0].tensor().shape().end()),
            (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(out[0].tensor().data().data(), x.tensor().data().data());  // no copy
  EXPECT_STATUS(KernelRunner("Unsqueeze", 9).IntsAttr("axes", {-1}).Run({x}),
                StatusCode::kInvalidModel, "non-negative");
  // Version 11 accepts negative axes.
  auto neg = KernelRunner("Unsqueeze", 11).IntsAttr("axes", {-1}).Run({x}).value();
  EXPECT_EQ(neg[0].tensor().shape().back(), 1);
}

TEST(KernelRunnerTest, ShapeStartEndAndUnsqueezeSharesBytes) {
  Value x = Floats({2, 3, 4}, std::vector<float>(24, 0));
  EXPECT_EQ(Ints(KernelRunner("Shape", 15).IntAttr("start", -1).Run({x}).value()[0]),
            (std::vector<int64_t>{4}));
  EXPECT_EQ(Ints(KernelRunner("Shape", 15).IntAttr("end", -1).Run({x}).value()[0]),
            (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(
      Ints(KernelRunner("Shape", 15).IntAttr("start", -10).IntAttr("end", 10).Run({x}).value()[0]),
      (std::vector<int64_t>{2, 3, 4}));
  // Shape-1 does not take start.
  auto axes = MakeTensorOf<int64_t>(E::kInt64, {2}, {0, -1});
  auto u = KernelRunner("Unsqueeze", 13).Run({x, axes}).value();
  EXPECT_EQ(std::vector<int64_t>(u[0].tensor().shape().begin(), u[0].tensor().shape().end()),
            (std::vector<int64_t>{1, 2, 3, 4, 1}));
  EXPECT_EQ(u[0].tensor().data().data(), x.tensor().data().data());
  auto u11 = KernelRunner("Unsqueeze", 11).IntsAttr("axes", {1}).Run({x}).value();
  EXPECT_EQ(u11[0].tensor().shape()[1], 1);
  auto dup = KernelRunner("Unsqueeze", 13).Run({x, MakeTensorOf<int64_t>(E::kInt64, {2}, {1, 1})});
  EXPECT_STATUS(dup, StatusCode::kInvalidArgument, "repeated");
}

TEST(KernelRunnerTest, ConstantForms) {
  Attribute ints;
  ints.name = "value_ints";
  ints.kind = Attribute::Kind::kInts;
  ints.ints = {5, 6};
  EXPECT_EQ(Ints(KernelRunner("Constant", 13).Attr(ints).Run({}).value()[0]),
            (std::vector<int64_t>{5, 6}));
  // value_ints arrived in Constant-12.
  EXPECT_FALSE(KernelRunner("Constant", 11).Attr(ints).Run({}).ok());
  Attribute s;
  s.name = "value_string";
  s.kind = Attribute::Kind::kString;
  s.s = std::string("a\0b", 3);
  auto str = KernelRunner("Constant", 12).Attr(s).Run({}).value();
  EXPECT_EQ(str[0].tensor().strings()[0], std::string("a\0b", 3));
  Attribute sparse;
  sparse.name = "sparse_value";
  sparse.kind = Attribute::Kind::kOther;
  auto r = KernelRunner("Constant", 13).Attr(sparse).Run({});
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  auto none = KernelRunner("Constant", 13).Run({});
  EXPECT_STATUS(none, StatusCode::kInvalidModel, "exactly one");
}

TEST(KernelRunnerTest, NotAndRegistryRanges) {
  auto b = MakeTensorOf<uint8_t>(E::kBool, {2}, {0, 1});
  auto out = KernelRunner("Not", 1).Run({b}).value();
  EXPECT_EQ(out[0].tensor().data_as<uint8_t>()[0], 1);
  EXPECT_EQ(out[0].tensor().data_as<uint8_t>()[1], 0);
  // [since, end] ranges: Slice-10 covers 10, Slice-1 covers 1 to 9; Add-6 (legacy broadcast
  // attribute) covers 6.
  const auto& r = KernelRegistry::Default();
  EXPECT_EQ(r.Resolve("", "Slice", 10)->since_version, 10);
  EXPECT_EQ(r.Resolve("", "Slice", 10)->end_version, 10);
  EXPECT_EQ(r.Resolve("", "Slice", 12)->since_version, 11);
  EXPECT_EQ(r.Resolve("", "Slice", 9)->since_version, 1);
  EXPECT_EQ(r.Resolve("", "Slice", 9)->end_version, 9);
  EXPECT_EQ(r.Resolve("", "Add", 6)->end_version, 6);
  EXPECT_EQ(r.Resolve("", "If", 15)->since_version, 13);
  EXPECT_EQ(r.Resolve("", "Scan", 10)->since_version, 9);
}

// Found by differential testing against ONNX Runtime (tests/gen/gen_ort_differential.py).
// M: int64 -> Loop(M; body: x_in [1] + 1 -> x_out; s_out = Identity(x_out) declared `declared`
// (a scan output); i_out = i straight from the body's input (a scan output too)).
onnx::ModelProto ScanOutputLoop(const onnx::TypeProto& declared) {
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("loop");
  AddValueInfo(g->mutable_input(), "M", I64Scalar());
  AddValueInfo(g->mutable_input(), "x", F32({1}));
  AddValueInfo(g->mutable_output(), "x_final", Unshaped(E::kFloat));
  AddValueInfo(g->mutable_output(), "stacked", Unshaped(E::kFloat));
  AddValueInfo(g->mutable_output(), "iters", Unshaped(E::kInt64));
  auto* loop = AddNode(g, "Loop", {"M", "", "x"}, {"x_final", "stacked", "iters"}, "loop0");
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "i", I64Scalar());
  AddValueInfo(body.mutable_input(), "cond_in", BoolScalar());
  AddValueInfo(body.mutable_input(), "x_in", F32({1}));
  AddValueInfo(body.mutable_output(), "cond_out", BoolScalar());
  AddValueInfo(body.mutable_output(), "x_out", F32({1}));
  AddValueInfo(body.mutable_output(), "s_out", declared);
  AddValueInfo(body.mutable_output(), "i", I64Scalar());
  SetFloatsConstant(AddNode(&body, "Constant", {}, {"one"}), {1}, {1});
  AddNode(&body, "Add", {"x_in", "one"}, {"x_out"});
  AddNode(&body, "Identity", {"x_out"}, {"s_out"});
  AddNode(&body, "Identity", {"cond_in"}, {"cond_out"});
  SetGraph(loop, "body", body);
  return m;
}

TEST(LoopTest, ZeroIterationScanOutputsTakeTheInferredElementShape) {
  // The spec is silent on a scan output's shape after zero iterations; ONNX Runtime makes it
  // [0] + the body output's shape as declared and refined by shape inference. A declaration
  // without a shape, or with an unknown dim, is completed by what inference knows ([1] here).
  onnx::TypeProto unknown_dim = F32({1});
  unknown_dim.mutable_tensor_type()->mutable_shape()->mutable_dim(0)->clear_dim_value();
  for (const onnx::TypeProto& declared : {Unshaped(E::kFloat), unknown_dim}) {
    Session s = MustCreate(ScanOutputLoop(declared));
    auto none = s.Run({I64(0), Floats({1}, {7})}).value();
    EXPECT_EQ(FloatsOf(none[0]), (std::vector<float>{7}));
    EXPECT_EQ(ShapeOf(none[1]), (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(ShapeOf(none[2]), (std::vector<int64_t>{0}));
  }
}

TEST(LoopTest, ZeroIterationScanOutputsCountUnknownDimsAsZero) {
  // The body stacks an outer value declared [N, 3] (symbolic), [?, 3] or of unknown rank: after
  // zero iterations ONNX Runtime returns [0, 0, 3] for a known rank and [0] otherwise.
  for (int variant = 0; variant < 3; ++variant) {
    onnx::ModelProto m = EmptyModel(16, 8);
    auto* g = m.mutable_graph();
    g->set_name("loop");
    onnx::TypeProto xt = F32({2, 3});
    auto* d0 = xt.mutable_tensor_type()->mutable_shape()->mutable_dim(0);
    if (variant == 0) d0->set_dim_param("N");
    if (variant == 1) d0->clear_dim_value();
    if (variant == 2) xt = Unshaped(E::kFloat);
    AddValueInfo(g->mutable_input(), "M", I64Scalar());
    AddValueInfo(g->mutable_input(), "x", xt);
    AddValueInfo(g->mutable_output(), "stacked", Unshaped(E::kFloat));
    auto* loop = AddNode(g, "Loop", {"M", ""}, {"stacked"}, "loop0");
    onnx::GraphProto body;
    body.set_name("body");
    AddValueInfo(body.mutable_input(), "i", I64Scalar());
    AddValueInfo(body.mutable_input(), "cond_in", BoolScalar());
    AddValueInfo(body.mutable_output(), "cond_out", BoolScalar());
    AddValueInfo(body.mutable_output(), "s_out", Unshaped(E::kFloat));
    AddNode(&body, "Identity", {"cond_in"}, {"cond_out"});
    AddNode(&body, "Identity", {"x"}, {"s_out"});
    SetGraph(loop, "body", body);
    Session s = MustCreate(m);
    auto none = s.Run({I64(0), Floats({2, 3}, {1, 2, 3, 4, 5, 6})}).value();
    EXPECT_EQ(ShapeOf(none[0]),
              variant == 2 ? (std::vector<int64_t>{0}) : (std::vector<int64_t>{0, 0, 3}))
        << "variant " << variant;
    auto two = s.Run({I64(2), Floats({2, 3}, {1, 2, 3, 4, 5, 6})}).value();
    EXPECT_EQ(ShapeOf(two[0]), (std::vector<int64_t>{2, 2, 3}));
  }
}

TEST(LoopTest, ZeroIterationScanOutputsUseDeclaredShapesOfIntermediates) {
  // t = x + 1 with x of unknown rank: inference knows nothing, but the body's value_info (or
  // its graph output) declares t [2, 3], and s_out = Identity(t) inherits that, as in ONNX's
  // shape inference: [0, 2, 3] after zero iterations (ONNX Runtime's answer), not [0].
  for (bool as_output : {false, true}) {
    onnx::ModelProto m = EmptyModel(16, 8);
    auto* g = m.mutable_graph();
    g->set_name("loop");
    AddValueInfo(g->mutable_input(), "M", I64Scalar());
    AddValueInfo(g->mutable_input(), "x", Unshaped(E::kFloat));
    AddValueInfo(g->mutable_output(), "stacked", Unshaped(E::kFloat));
    std::vector<std::string> outs = {"stacked"};
    if (as_output) {
      AddValueInfo(g->mutable_output(), "t_stacked", Unshaped(E::kFloat));
      outs.push_back("t_stacked");
    }
    auto* loop = AddNode(g, "Loop", {"M", ""}, outs, "loop0");
    onnx::GraphProto body;
    body.set_name("body");
    AddValueInfo(body.mutable_input(), "i", I64Scalar());
    AddValueInfo(body.mutable_input(), "cond_in", BoolScalar());
    AddValueInfo(body.mutable_output(), "cond_out", BoolScalar());
    AddValueInfo(body.mutable_output(), "s_out", Unshaped(E::kFloat));
    if (as_output) {
      AddValueInfo(body.mutable_output(), "t", F32({2, 3}));
    } else {
      AddValueInfo(body.mutable_value_info(), "t", F32({2, 3}));
    }
    SetFloatsConstant(AddNode(&body, "Constant", {}, {"one"}), {1}, {1});
    AddNode(&body, "Identity", {"cond_in"}, {"cond_out"});
    AddNode(&body, "Add", {"x", "one"}, {"t"});
    AddNode(&body, "Identity", {"t"}, {"s_out"});
    SetGraph(loop, "body", body);
    Session s = MustCreate(m);
    auto none = s.Run({I64(0), Floats({2, 3}, {1, 2, 3, 4, 5, 6})}).value();
    EXPECT_EQ(ShapeOf(none[0]), (std::vector<int64_t>{0, 2, 3})) << as_output;
    auto one = s.Run({I64(1), Floats({2, 3}, {1, 2, 3, 4, 5, 6})}).value();
    EXPECT_EQ(FloatsOf(one[0]), (std::vector<float>{2, 3, 4, 5, 6, 7}));
  }
}

TEST(LoopTest, ZeroIterationScanOutputsKnowTheShapesOfScanResults) {
  // The Loop body stacks a Scan's final state ([1]) and its scan output (x [3, 2] scanned
  // along axis 1, elements [3], stacked at output axis 1: [3, 2]); nothing declares them, so
  // their shapes come from Scan's type inference: [0, 1] and [0, 3, 2] after zero iterations.
  onnx::ModelProto m = EmptyModel(16, 8);
  auto* g = m.mutable_graph();
  g->set_name("loop");
  AddValueInfo(g->mutable_input(), "M", I64Scalar());
  AddValueInfo(g->mutable_input(), "x", F32({3, 2}));
  AddValueInfo(g->mutable_input(), "init", F32({1}));
  AddValueInfo(g->mutable_output(), "states", Unshaped(E::kFloat));
  AddValueInfo(g->mutable_output(), "scans", Unshaped(E::kFloat));
  auto* loop = AddNode(g, "Loop", {"M", ""}, {"states", "scans"}, "loop0");
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "i", I64Scalar());
  AddValueInfo(body.mutable_input(), "cond_in", BoolScalar());
  AddValueInfo(body.mutable_output(), "cond_out", BoolScalar());
  body.add_output()->set_name("st_out");
  body.add_output()->set_name("sc_out");
  AddNode(&body, "Identity", {"cond_in"}, {"cond_out"});
  auto* scan = AddNode(&body, "Scan", {"init", "x"}, {"st", "sc"}, "scan0");
  auto* a = scan->add_attribute();
  a->set_name("num_scan_inputs");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  for (const char* name : {"scan_input_axes", "scan_output_axes"}) {
    a = scan->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(1);
  }
  onnx::GraphProto sb;
  sb.set_name("scan_body");
  AddValueInfo(sb.mutable_input(), "acc", F32({1}));
  AddValueInfo(sb.mutable_input(), "e", Unshaped(E::kFloat));
  AddValueInfo(sb.mutable_output(), "acc_out", Unshaped(E::kFloat));
  AddValueInfo(sb.mutable_output(), "e_out", Unshaped(E::kFloat));
  AddNode(&sb, "Identity", {"acc"}, {"acc_out"});
  AddNode(&sb, "Identity", {"e"}, {"e_out"});
  SetGraph(scan, "body", sb);
  AddNode(&body, "Identity", {"st"}, {"st_out"});
  AddNode(&body, "Identity", {"sc"}, {"sc_out"});
  SetGraph(loop, "body", body);
  Session s = MustCreate(m);
  auto none = s.Run({I64(0), Floats({3, 2}, {1, 2, 3, 4, 5, 6}), Floats({1}, {0})}).value();
  EXPECT_EQ(ShapeOf(none[0]), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ShapeOf(none[1]), (std::vector<int64_t>{0, 3, 2}));
  auto one = s.Run({I64(1), Floats({3, 2}, {1, 2, 3, 4, 5, 6}), Floats({1}, {0})}).value();
  EXPECT_EQ(ShapeOf(one[1]), (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(FloatsOf(one[1]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(LoopTest, ZeroIterationScanOutputsKnowShapeAndUnsqueezeResults) {
  // Opset 11: the body stacks Unsqueeze(x, axes=[0, -1]) ([1, 2, 3, 1]) and Shape(x) ([2]) of
  // an outer x [2, 3]: [0, 1, 2, 3, 1] and [0, 2] after zero iterations, as ONNX Runtime.
  onnx::ModelProto m = EmptyModel(11, 8);
  auto* g = m.mutable_graph();
  g->set_name("loop");
  AddValueInfo(g->mutable_input(), "M", I64Scalar());
  AddValueInfo(g->mutable_input(), "x", F32({2, 3}));
  AddValueInfo(g->mutable_output(), "u", Unshaped(E::kFloat));
  AddValueInfo(g->mutable_output(), "sh", Unshaped(E::kInt64));
  auto* loop = AddNode(g, "Loop", {"M", ""}, {"u", "sh"}, "loop0");
  onnx::GraphProto body;
  body.set_name("body");
  AddValueInfo(body.mutable_input(), "i", I64Scalar());
  AddValueInfo(body.mutable_input(), "cond_in", BoolScalar());
  AddValueInfo(body.mutable_output(), "cond_out", BoolScalar());
  body.add_output()->set_name("u_out");
  body.add_output()->set_name("sh_out");
  AddNode(&body, "Identity", {"cond_in"}, {"cond_out"});
  auto* unsq = AddNode(&body, "Unsqueeze", {"x"}, {"u_out"});
  auto* a = unsq->add_attribute();
  a->set_name("axes");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(0);
  a->add_ints(-1);
  AddNode(&body, "Shape", {"x"}, {"sh_out"});
  SetGraph(loop, "body", body);
  Session s = MustCreate(m);
  auto none = s.Run({I64(0), Floats({2, 3}, {1, 2, 3, 4, 5, 6})}).value();
  EXPECT_EQ(ShapeOf(none[0]), (std::vector<int64_t>{0, 1, 2, 3, 1}));
  EXPECT_EQ(ShapeOf(none[1]), (std::vector<int64_t>{0, 2}));
  auto two = s.Run({I64(2), Floats({2, 3}, {1, 2, 3, 4, 5, 6})}).value();
  EXPECT_EQ(ShapeOf(two[0]), (std::vector<int64_t>{2, 1, 2, 3, 1}));
  EXPECT_EQ(Ints(two[1]), (std::vector<int64_t>{2, 3, 2, 3}));
}

TEST(LoopTest, IterationNumberReturnedStraightAsAScanOutputIsEachIterations) {
  // The body returns its input `i` itself as a scan output. The spec: the stacked iteration
  // numbers. (ONNX Runtime 1.30 returns the final counter for every entry: [3, 3, 3].)
  Session s = MustCreate(ScanOutputLoop(F32({1})));
  auto out = s.Run({I64(3), Floats({1}, {0})}).value();
  EXPECT_EQ(Ints(out[2]), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(FloatsOf(out[1]), (std::vector<float>{1, 2, 3}));
}

TEST(KernelRunnerTest, SliceEndInt64MaxWithANegativeStepIsClamped) {
  // The spec clamps an end to [-1, dim-1] for negative steps, so INT64_MAX means dim-1 and a
  // start at dim-1 takes nothing. (ONNX Runtime reads INT32_MAX/INT64_MAX as "through the first
  // element" and returns [4, 3, 2, 1, 0]; idem follows the spec.)
  auto x = MakeTensorOf<int64_t>(E::kInt64, {5}, {0, 1, 2, 3, 4});
  auto starts = MakeTensorOf<int64_t>(E::kInt64, {1}, {4});
  auto ends = MakeTensorOf<int64_t>(E::kInt64, {1}, {INT64_MAX});
  auto axes = MakeTensorOf<int64_t>(E::kInt64, {1}, {0});
  auto steps = MakeTensorOf<int64_t>(E::kInt64, {1}, {-1});
  auto out = KernelRunner("Slice", 13).Run({x, starts, ends, axes, steps}).value();
  EXPECT_EQ(ShapeOf(out[0]), (std::vector<int64_t>{0}));
}

}  // namespace
}  // namespace idem::testing
