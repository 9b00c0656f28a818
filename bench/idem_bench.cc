// idem_bench: what one Session::Run costs, by case (issue 5).
//
// Every case builds its Session once (outside the timed loop) and measures Run. Names are stable so
// results can be compared over time; scripts/bench.sh runs this with repetitions and keeps the
// median. Cases and the targets they are judged by (as ratios within one run):
//
//   tiny                  float[5] -> Identity -> y                     <= 150 ns
//   f32_16MiB             float[4Mi] -> Identity                        (informative)
//   f32_256MiB            float[64Mi] -> Identity                       <= 2x tiny
//   seq_1000x1024         seq(tensor(float)) of 1000 x float[1024]      <= 2x tiny
//   string_10000          string[10000] -> Identity                     <= 2x tiny
//   chain100              100 Identity nodes in a row (eliminated)      <= 2x tiny
//   chain100_noelim       same, SessionOptions::eliminate_identity=false <= 30x tiny
//   seed_example          the test_cc_identity_opt graph                <= 10x tiny
//   external_256MiB_load  Session::Create + first Run, 256 MiB external initializer
//                                                                       <= 0.05x memcpy_256MiB
//   external_256MiB_run   Run of that session                           <= 2x tiny
//   inline_256MiB_load    Session::Create + first Run, 256 MiB initializer inline (raw_data)
//                                                                       <= 0.05x memcpy_256MiB
//   inline_2_5GiB_load    the same with a 2.5 GiB inline initializer (sparse file) (reported)
//   load_1M_node_chain    the loader on a 1,000,000-node Identity chain (file -> GraphDef: map,
//                         wire walk, protobuf parse of the rest, conversion)
//                                                 <= 1.5x protobuf_parse_1M_node_chain
//   protobuf_parse_1M_node_chain  ModelProto::ParseFromArray of the same bytes (reference)
//   create_1M_node_chain  Session::Create of that chain (loader + planner); counter x_load:
//                         over the loader's time in the same iterations    <= 2x load
//   memcpy_256MiB         plain memcpy of 256 MiB (physical reference)
//   copy_out_256MiB       Session::RunInto a caller buffer              >= 0.9x memcpy bandwidth
//   tiny_throughput/threads:1|2  runs/s of one shared Session           2 threads >= 1.6x
//   optimize_100k_chain   OptimizeModelBytes on a 100,000-node Identity chain's bytes (issue 9:
//                         parse, analyse, rewrite, serialize)           <= 500 ms
//   if_outer_identity     If whose branch returns an outer value via Identity  <= 5x tiny
//   loop_seq_insert_10k   Loop inserting float[5] into a sequence 10,000 times
//   loop_seq_insert_100k  same, 100,000 times                           <= 12x loop_seq_insert_10k
//   loop_carried_256MiB   256 MiB float carried through 10 Identity-body iterations <= 10x tiny
//
// Extra modes (not benchmarks):
//   idem_bench --make_external_model DIR   write DIR/model.onnx + DIR/weights.bin (256 MiB).
//   idem_bench --rss_check DIR/model.onnx  load that model and run it without reading the output;
//                                          measure with /usr/bin/time -v (peak RSS < 64 MiB).
//   idem_bench --make_inline_model FILE    write the inline 256 MiB model to FILE.
//   idem_bench --make_chain_model FILE     write the 1,000,000-node chain to FILE.
//   idem_bench --load_only FILE            Session::Create only (for peak RSS); with
//                                          IDEM_BENCH_GRAPH_ONLY=1 the loader alone.
//   idem_bench --write_models DIR          the cases' models as DIR/<case>.onnx (for ONNX Runtime).
//   idem_bench --loop=<case>:<n>   run <case> (tiny, chain100_noelim, seed_example,
//                                  loop_carried) n times and
//                                  exit; for callgrind/perf profiles of the Run hot path.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "idem/idem.h"
#include "idem/session_proto.h"
#include "src/onnx/model_loader.h"
#include "tests/test_models.h"

namespace {

using idem::Buffer;
using idem::ElementType;
using idem::Session;
using idem::SessionOptions;
using idem::Value;
namespace models = idem::testing;

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kBig = 256 * kMiB;  // bytes of the 256 MiB cases
constexpr int64_t kBigFloats = static_cast<int64_t>(kBig / sizeof(float));
constexpr int kOpset = 21;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "idem_bench: %s\n", what.c_str());
  std::exit(2);
}

// ---------------------------------------------------------------------------------------------
// Memory: page-aligned anonymous mappings (offset 0 within the page), touched once so the timed
// loops never page-fault.

class PageMemory {
 public:
  explicit PageMemory(size_t size) : size_(size) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) Die("mmap of " + std::to_string(size) + " bytes failed");
    data_ = static_cast<std::byte*>(p);
  }
  PageMemory(const PageMemory&) = delete;
  PageMemory& operator=(const PageMemory&) = delete;
  ~PageMemory() { munmap(data_, size_); }
  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::byte* data_;
  size_t size_;
};

// Source and destination of the 256 MiB copies, both page-aligned at offset 0 (glibc's memcpy of
// large blocks is 3-4x slower when the two offsets within a page differ). The source also backs
// the f32_256MiB feed (borrowed, not copied).
struct BigBuffers {
  PageMemory src{kBig};
  PageMemory dst{kBig};
  BigBuffers() {
    auto* f = reinterpret_cast<float*>(src.data());
    for (int64_t i = 0; i < kBigFloats; ++i) f[i] = static_cast<float>(i & 0xffff);
    std::memset(dst.data(), 0xa5, kBig);
  }
};

BigBuffers& Big() {
  static BigBuffers* buffers = new BigBuffers();  // lives until exit
  return *buffers;
}

// ---------------------------------------------------------------------------------------------
// Models and feeds.

Value FloatTensor(std::vector<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::byte* w = nullptr;
  auto buffer = Buffer::Allocate(static_cast<size_t>(count) * sizeof(float), &w);
  if (!buffer.ok()) Die(buffer.status().ToString());
  auto* f = reinterpret_cast<float*>(w);
  for (int64_t i = 0; i < count; ++i) f[i] = static_cast<float>(i);
  auto v = Value::MakeTensor(ElementType::kFloat, std::move(shape), std::move(buffer).value());
  if (!v.ok()) Die(v.status().ToString());
  return std::move(v).value();
}

std::unique_ptr<Session> MakeSession(const onnx::ModelProto& model,
                                     const SessionOptions& options = {},
                                     std::string* error = nullptr) {
  auto s = CreateSessionFromProto(model, "", options);
  if (!s.ok()) {
    if (error != nullptr) {
      *error = s.status().ToString();
      return nullptr;
    }
    Die(s.status().ToString());
  }
  return std::make_unique<Session>(std::move(s).value());
}

// tensor(elem) without a shape (rank unknown).
onnx::TypeProto UnshapedTensorType(ElementType type) {
  onnx::TypeProto t;
  t.mutable_tensor_type()->set_elem_type(static_cast<int32_t>(type));
  return t;
}

onnx::ModelProto FloatIdentity(std::vector<int64_t> shape, int length = 1) {
  return models::IdentityChain(models::TensorTypeProto(ElementType::kFloat, std::move(shape)),
                               kOpset, length);
}

// The seed's test_cc_identity_opt graph (tests/data/seed/test_cc_identity_opt/model.onnx):
// x float[5] -> SequenceConstruct -> Optional -> Identity -> OptionalGetElement
//   -> ConcatFromSequence(axis=0, new_axis=1) -> res float[1,5].
onnx::ModelProto SeedExampleModel() {
  onnx::ModelProto m;
  m.set_ir_version(9);
  m.set_producer_name("idem-bench");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(16);
  auto* g = m.mutable_graph();
  g->set_name("test_cc_identity_opt");
  const auto x = models::TensorTypeProto(ElementType::kFloat, {5});
  const auto seq = models::SequenceTypeProto(x);
  const auto opt = models::OptionalTypeProto(seq);
  models::AddValueInfo(g->mutable_input(), "x", x);
  models::AddValueInfo(g->mutable_output(), "res",
                       models::TensorTypeProto(ElementType::kFloat, {1, 5}));
  models::AddValueInfo(g->mutable_value_info(), "seq", seq);
  models::AddValueInfo(g->mutable_value_info(), "opt", opt);
  models::AddValueInfo(g->mutable_value_info(), "opt_out", opt);
  models::AddValueInfo(g->mutable_value_info(), "seq_out", seq);
  models::AddNode(g, "SequenceConstruct", {"x"}, {"seq"}, "seq_construct");
  models::AddNode(g, "Optional", {"seq"}, {"opt"}, "make_optional");
  models::AddNode(g, "Identity", {"opt"}, {"opt_out"}, "identity");
  models::AddNode(g, "OptionalGetElement", {"opt_out"}, {"seq_out"}, "get_element");
  auto* concat = models::AddNode(g, "ConcatFromSequence", {"seq_out"}, {"res"}, "concat");
  models::AddIntAttribute(concat, "axis", 0);
  models::AddIntAttribute(concat, "new_axis", 1);
  return m;
}

// A model folder in a fresh temp directory: model.onnx whose initializer `w` (float[64Mi],
// 256 MiB) is external data in weights.bin (real bytes, written in 1 MiB chunks), and
// y = Identity(w). Removed when the object dies.
class ExternalModel {
 public:
  explicit ExternalModel(std::string dir = "") {
    if (dir.empty()) {
      std::string templ = (std::filesystem::temp_directory_path() / "idem_bench_XXXXXX").string();
      if (mkdtemp(templ.data()) == nullptr) Die("mkdtemp failed");
      dir_ = templ;
      owned_ = true;
    } else {
      dir_ = dir;
      std::filesystem::create_directories(dir_);
    }
    {
      std::ofstream weights(dir_ + "/weights.bin", std::ios::binary);
      std::vector<float> chunk(kMiB / sizeof(float));
      for (size_t c = 0; c < kBig / kMiB; ++c) {
        for (size_t i = 0; i < chunk.size(); ++i) {
          chunk[i] = static_cast<float>(c * chunk.size() + i);
        }
        weights.write(reinterpret_cast<const char*>(chunk.data()),
                      static_cast<std::streamsize>(kMiB));
      }
      if (!weights) Die("cannot write " + dir_ + "/weights.bin");
    }
    onnx::ModelProto m = models::EmptyModel(kOpset, 10);
    auto* g = m.mutable_graph();
    g->set_name("external_256MiB");
    auto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(kBigFloats);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add_entry = [&](const std::string& key, const std::string& value) {
      auto* e = w->add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add_entry("location", "weights.bin");
    add_entry("offset", "0");
    add_entry("length", std::to_string(kBig));
    models::AddValueInfo(g->mutable_output(), "y",
                         models::TensorTypeProto(ElementType::kFloat, {kBigFloats}));
    models::AddNode(g, "Identity", {"w"}, {"y"}, "id0");
    std::ofstream out(path(), std::ios::binary);
    if (!m.SerializeToOstream(&out)) Die("cannot write " + path());
  }
  ExternalModel(const ExternalModel&) = delete;
  ExternalModel& operator=(const ExternalModel&) = delete;
  ~ExternalModel() {
    std::error_code ec;
    if (keep_) return;
    if (owned_) {
      std::filesystem::remove_all(dir_, ec);
    } else {
      std::filesystem::remove(path(), ec);
      std::filesystem::remove(dir_ + "/weights.bin", ec);
    }
  }
  std::string path() const { return dir_ + "/model.onnx"; }
  void Keep() { keep_ = true; }

 private:
  std::string dir_;
  bool owned_ = false;
  bool keep_ = false;
};

// Created on first use, removed at exit (a static object, destroyed after main returns).
ExternalModel& External() {
  static ExternalModel model;
  return model;
}

std::string Varint(uint64_t v) {
  std::string s;
  for (;; v >>= 7) {
    if (v < 0x80) {
      s += static_cast<char>(v);
      return s;
    }
    s += static_cast<char>((v & 0x7f) | 0x80);
  }
}

// Writes y = Identity(w) with w's `bytes` inline as raw_data, without building the payload in
// memory: the message's head, then the payload (float i at element i, written in 1 MiB chunks, or
// a hole of zeros when `sparse`, which costs no disk), then the rest of the graph.
void WriteInlineModel(const std::string& path, uint64_t bytes, bool sparse) {
  const ElementType type = sparse ? ElementType::kUint8 : ElementType::kFloat;
  const int64_t count = static_cast<int64_t>(sparse ? bytes : bytes / sizeof(float));
  onnx::TensorProto head;
  head.set_name("w");
  head.set_data_type(static_cast<int32_t>(type));
  head.add_dims(count);
  const std::string tensor_head = head.SerializeAsString() + "\x4a" + Varint(bytes);
  onnx::GraphProto rest;
  rest.set_name("inline");
  models::AddNode(&rest, "Identity", {"w"}, {"y"}, "id0");
  models::AddValueInfo(rest.mutable_output(), "y", models::TensorTypeProto(type, {count}));
  const std::string rest_bytes = rest.SerializeAsString();
  const std::string graph_head = "\x2a" + Varint(tensor_head.size() + bytes) + tensor_head;
  const std::string model_head = models::EmptyModel(kOpset, 10).SerializeAsString() + "\x3a" +
                                 Varint(graph_head.size() + bytes + rest_bytes.size()) + graph_head;
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) Die("cannot create " + path);
  auto write_at = [&](const void* data, size_t size, uint64_t offset) {
    if (pwrite(fd, data, size, static_cast<off_t>(offset)) != static_cast<ssize_t>(size)) {
      Die("cannot write " + path);
    }
  };
  write_at(model_head.data(), model_head.size(), 0);
  if (!sparse) {
    std::vector<float> chunk(kMiB / sizeof(float));
    for (uint64_t c = 0; c < bytes / kMiB; ++c) {
      for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<float>(c * chunk.size() + i);
      write_at(chunk.data(), kMiB, model_head.size() + c * kMiB);
    }
  }
  write_at(rest_bytes.data(), rest_bytes.size(), model_head.size() + bytes);
  close(fd);
}

// A model file in the temp folder, removed at exit.
class TempModel {
 public:
  template <typename Writer>
  TempModel(const std::string& name, Writer write)
      : path_((std::filesystem::temp_directory_path() /
               (name + "_" + std::to_string(getpid()) + ".onnx"))
                  .string()) {
    write(path_);
  }
  ~TempModel() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TempModel& Inline256() {
  static TempModel model("idem_bench_inline_256MiB",
                         [](const std::string& p) { WriteInlineModel(p, kBig, false); });
  return model;
}

TempModel& Inline2_5G() {
  static TempModel model("idem_bench_inline_2_5GiB", [](const std::string& p) {
    WriteInlineModel(p, uint64_t{5} << 29, true);
  });
  return model;
}

constexpr int kChainNodes = 1000000;

void WriteChainModel(const std::string& path) {
  onnx::ModelProto m =
      models::IdentityChain(models::TensorTypeProto(ElementType::kFloat, {5}), kOpset, kChainNodes);
  std::ofstream out(path, std::ios::binary);
  if (!m.SerializeToOstream(&out)) Die("cannot write " + path);
}

TempModel& Chain1M() {
  static TempModel model("idem_bench_chain_1M", WriteChainModel);
  return model;
}

// ---------------------------------------------------------------------------------------------
// Shared fixtures (built once; Sessions are immutable and shared by all threads).

struct Case {
  std::unique_ptr<Session> session;
  std::vector<Value> feeds;
  std::string error;  // Session creation failed: the benchmark skips with this message
};

Case MakeTiny() { return {MakeSession(FloatIdentity({5})), {FloatTensor({5})}, {}}; }

const Case& Tiny() {
  static Case c = MakeTiny();
  return c;
}

Value Borrowed256MiB() {
  auto v =
      Value::MakeTensor(ElementType::kFloat, {kBigFloats}, Buffer::Borrow(Big().src.data(), kBig));
  if (!v.ok()) Die(v.status().ToString());
  return std::move(v).value();
}

const Case& F32_256MiB() {
  static Case c{MakeSession(FloatIdentity({kBigFloats})), {Borrowed256MiB()}, {}};
  return c;
}

// Checks outside the timed loop that every output is the feed itself (zero-copy), so a fast but
// wrong Run cannot pass.
bool CheckAliases(benchmark::State& state, const Case& c, const Value& expected) {
  auto out = c.session->Run(c.feeds);
  if (!out.ok()) {
    state.SkipWithError(out.status().ToString().c_str());
    return false;
  }
  if (out->size() != 1 || !(*out)[0].SharesStorageWith(expected)) {
    state.SkipWithError("output does not share the input's storage");
    return false;
  }
  return true;
}

// The timed loop every Run case shares: one Run per iteration, outputs destroyed inside the loop
// (their release is part of what a Run costs).
void RunLoop(benchmark::State& state, const Case& c) {
  for (auto _ : state) {
    auto out = c.session->Run(c.feeds);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_tiny(benchmark::State& state) {
  const Case& c = Tiny();
  if (!CheckAliases(state, c, c.feeds[0])) return;
  RunLoop(state, c);
}

void BM_f32_16MiB(benchmark::State& state) {
  static Case c{MakeSession(FloatIdentity({4 << 20})), {FloatTensor({4 << 20})}, {}};
  if (!CheckAliases(state, c, c.feeds[0])) return;
  RunLoop(state, c);
}

void BM_f32_256MiB(benchmark::State& state) {
  const Case& c = F32_256MiB();
  if (!CheckAliases(state, c, c.feeds[0])) return;
  RunLoop(state, c);
}

Value Sequence1000x1024() {
  std::vector<Value> tensors;
  for (int i = 0; i < 1000; ++i) tensors.push_back(FloatTensor({1024}));
  auto v = Value::MakeSequence(ElementType::kFloat, std::move(tensors));
  if (!v.ok()) Die(v.status().ToString());
  return std::move(v).value();
}

// seq(tensor(float)) with the elements' shape undeclared (as most exporters write it): the feed
// check is O(1). seq_1000x1024_declared declares float[1024], so every element's shape is checked.
void BM_seq_1000x1024(benchmark::State& state) {
  static Case c{MakeSession(models::IdentityChain(
                    models::SequenceTypeProto(UnshapedTensorType(ElementType::kFloat)), kOpset)),
                {Sequence1000x1024()},
                {}};
  if (!CheckAliases(state, c, c.feeds[0])) return;
  RunLoop(state, c);
}

void BM_seq_1000x1024_declared(benchmark::State& state) {
  static Case c{
      MakeSession(models::IdentityChain(
          models::SequenceTypeProto(models::TensorTypeProto(ElementType::kFloat, {1024})), kOpset)),
      {Sequence1000x1024()},
      {}};
  if (!CheckAliases(state, c, c.feeds[0])) return;
  RunLoop(state, c);
}

void BM_string_10000(benchmark::State& state) {
  static Case c = [] {
    std::vector<std::string> strings;
    for (int i = 0; i < 10000; ++i) strings.push_back("string number " + std::to_string(i));
    auto v = Value::MakeStringTensor({10000}, std::move(strings));
    if (!v.ok()) Die(v.status().ToString());
    return Case{MakeSession(models::IdentityChain(
                    models::TensorTypeProto(ElementType::kString, {10000}), kOpset)),
                {std::move(v).value()},
                {}};
  }();
  if (!CheckAliases(state, c, c.feeds[0])) return;
  RunLoop(state, c);
}

void BM_chain100(benchmark::State& state) {
  static Case c{MakeSession(FloatIdentity({5}, 100)), {FloatTensor({5})}, {}};
  if (!CheckAliases(state, c, c.feeds[0])) return;
  RunLoop(state, c);
}

void BM_chain100_noelim(benchmark::State& state) {
  static Case c = [] {
    SessionOptions options;
    options.eliminate_identity = false;
    return Case{MakeSession(FloatIdentity({5}, 100), options), {FloatTensor({5})}, {}};
  }();
  if (!CheckAliases(state, c, c.feeds[0])) return;
  RunLoop(state, c);
}

const Case& SeedExample() {
  static Case c = [] {
    Case k;
    k.session = MakeSession(SeedExampleModel(), {}, &k.error);
    k.feeds = {FloatTensor({5})};
    return k;
  }();
  return c;
}

void BM_seed_example(benchmark::State& state) {
  const Case& c = SeedExample();
  if (!c.session) {
    state.SkipWithError(("Session creation failed: " + c.error).c_str());
    return;
  }
  auto out = c.session->Run(c.feeds);
  if (!out.ok()) {
    state.SkipWithError(out.status().ToString().c_str());
    return;
  }
  const idem::Tensor& t = (*out)[0].tensor();
  const auto in = c.feeds[0].tensor().data_as<float>();
  if (t.shape().size() != 2 || t.shape()[0] != 1 || t.shape()[1] != 5 ||
      std::memcmp(t.data().data(), in.data(), 5 * sizeof(float)) != 0) {
    state.SkipWithError("seed_example: wrong output");
    return;
  }
  RunLoop(state, c);
}

void BM_external_256MiB_load(benchmark::State& state) {
  const std::string path = External().path();
  for (auto _ : state) {
    auto session = Session::Create(path);
    if (!session.ok()) {
      state.SkipWithError(session.status().ToString().c_str());
      break;
    }
    auto out = session->Run({});
    if (!out.ok()) {
      state.SkipWithError(out.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_external_256MiB_run(benchmark::State& state) {
  static Case c = [] {
    auto s = Session::Create(External().path());
    if (!s.ok()) Die(s.status().ToString());
    return Case{std::make_unique<Session>(std::move(s).value()), {}, {}};
  }();
  auto first = c.session->Run({});
  if (!first.ok()) {
    state.SkipWithError(first.status().ToString().c_str());
    return;
  }
  const idem::Tensor& t = (*first)[0].tensor();
  if (t.data().size() != kBig || t.data_as<float>()[12345] != 12345.0f) {
    state.SkipWithError("external_256MiB_run: wrong output");
    return;
  }
  RunLoop(state, c);
}

void CreateAndRun(benchmark::State& state, const std::string& path, uint64_t expect_bytes) {
  for (auto _ : state) {
    auto session = Session::Create(path);
    if (!session.ok()) {
      state.SkipWithError(session.status().ToString().c_str());
      break;
    }
    auto out = session->Run({});
    if (!out.ok() || (*out)[0].tensor().data().size() != expect_bytes) {
      state.SkipWithError(out.ok() ? "wrong output size" : out.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(out);
  }
}

void BM_inline_256MiB_load(benchmark::State& state) {
  CreateAndRun(state, Inline256().path(), kBig);
}

void BM_inline_2_5GiB_load(benchmark::State& state) {
  CreateAndRun(state, Inline2_5G().path(), uint64_t{5} << 29);
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void BM_load_1M_node_chain(benchmark::State& state) {
  const std::string& path = Chain1M().path();
  for (auto _ : state) {
    auto graph = idem::LoadGraphFromFile(path, idem::Limits{});
    if (!graph.ok() || graph->nodes.size() != kChainNodes) {
      state.SkipWithError(graph.ok() ? "wrong node count" : graph.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(graph);
    // The time is the call's: freeing the graph is not loading it (nor is freeing a session
    // creating one, below).
    state.PauseTiming();
    graph = idem::Status(idem::StatusCode::kInternal, "freed");
    state.ResumeTiming();
  }
}

void BM_protobuf_parse_1M_node_chain(benchmark::State& state) {
  const std::string bytes = ReadWhole(Chain1M().path());
  for (auto _ : state) {
    onnx::ModelProto m;
    if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
        m.graph().node_size() != kChainNodes) {
      state.SkipWithError("protobuf parse failed");
      break;
    }
    benchmark::DoNotOptimize(m);
  }
}

void BM_create_1M_node_chain(benchmark::State& state) {
  const std::string& path = Chain1M().path();
  double create_seconds = 0, load_seconds = 0;
  for (auto _ : state) {
    const auto create_start = std::chrono::steady_clock::now();
    auto session = Session::Create(path);
    create_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - create_start).count();
    if (!session.ok()) {
      state.SkipWithError(session.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(session);
    state.PauseTiming();
    session = idem::Status(idem::StatusCode::kInternal, "freed");
    // The loader alone, right after (untimed here): the counter x_load is this row's time over
    // the loader's in the same iterations, so the machine's drift between rows (on this VM up to
    // 40%) does not enter the ratio.
    const auto load_start = std::chrono::steady_clock::now();
    {
      auto graph = idem::LoadGraphFromFile(path, idem::Limits{});
      benchmark::DoNotOptimize(graph);
      load_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
    }
    state.ResumeTiming();
  }
  if (load_seconds > 0) state.counters["x_load"] = create_seconds / load_seconds;
}

void BM_memcpy_256MiB(benchmark::State& state) {
  BigBuffers& b = Big();
  for (auto _ : state) {
    std::memcpy(b.dst.data(), b.src.data(), kBig);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kBig));
  state.SetLabel("src page-aligned+0, dst page-aligned+0");
}

void BM_copy_out_256MiB(benchmark::State& state) {
  const Case& c = F32_256MiB();
  BigBuffers& b = Big();
  const idem::OutputBuffer dst{b.dst.data(), kBig};
  auto check = c.session->RunInto(c.feeds, std::span(&dst, 1));
  if (!check.ok()) {
    state.SkipWithError(check.status().ToString().c_str());
    return;
  }
  if (std::memcmp(b.dst.data(), b.src.data(), kBig) != 0) {
    state.SkipWithError("copy_out_256MiB: destination differs from the source");
    return;
  }
  for (auto _ : state) {
    auto shapes = c.session->RunInto(c.feeds, std::span(&dst, 1));
    benchmark::DoNotOptimize(shapes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kBig));
  state.SetLabel("src page-aligned+0 (borrowed feed), dst page-aligned+0");
}

// Runs per second of one Session shared by all threads; each thread feeds its own Value (a
// caller would), so the only shared state is the immutable Session. Each measurement starts
// state.range(0) fresh threads doing kRunsPerThread runs each and times them on the wall clock
// (manual time): Google Benchmark's own threads put one worker on the main thread, whose heap
// neighbours made the two-thread figure swing between 0.5x and 2x from run to run.
void BM_tiny_throughput(benchmark::State& state) {
  constexpr int64_t kRunsPerThread = 200'000;
  const Session& session = *Tiny().session;
  const auto threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&session] {
        const std::vector<Value> feeds = {FloatTensor({5})};
        for (int64_t i = 0; i < kRunsPerThread; ++i) {
          auto out = session.Run(feeds);
          benchmark::DoNotOptimize(out);
        }
      });
    }
    for (std::thread& t : pool) t.join();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * threads * kRunsPerThread);
}

// ---- Control flow (issue 11) ------------------------------------------------------------------

Value Int64Scalar(int64_t v) {
  auto r = Value::MakeTensor(ElementType::kInt64, {},
                             Buffer::CopyOf(std::as_bytes(std::span(&v, 1))).value());
  if (!r.ok()) Die(r.status().ToString());
  return std::move(r).value();
}

Value BoolScalar(bool b) {
  const uint8_t v = b ? 1 : 0;
  auto r = Value::MakeTensor(ElementType::kBool, {},
                             Buffer::CopyOf(std::as_bytes(std::span(&v, 1))).value());
  if (!r.ok()) Die(r.status().ToString());
  return std::move(r).value();
}

void BM_if_outer_identity(benchmark::State& state) {
  static Case c{MakeSession(models::IfOuterIdentityModel(5)),
                {BoolScalar(true), FloatTensor({5}), FloatTensor({5})},
                {}};
  if (!CheckAliases(state, c, c.feeds[1])) return;
  RunLoop(state, c);
}

void LoopSeqInsert(benchmark::State& state, int64_t n) {
  Case c{MakeSession(models::LoopModel(true, 5)), {Int64Scalar(n), FloatTensor({5})}, {}};
  auto out = c.session->Run(c.feeds);
  if (!out.ok() || (*out)[0].sequence().size() != static_cast<size_t>(n)) {
    state.SkipWithError(out.ok() ? "wrong length" : out.status().ToString().c_str());
    return;
  }
  RunLoop(state, c);
}

void BM_loop_seq_insert_10k(benchmark::State& state) { LoopSeqInsert(state, 10000); }
void BM_loop_seq_insert_100k(benchmark::State& state) { LoopSeqInsert(state, 100000); }

void BM_loop_carried_256MiB(benchmark::State& state) {
  static Case c = [] {
    auto x = Value::MakeTensor(ElementType::kFloat, {kBigFloats},
                               Buffer::Borrow(Big().src.data(), kBig));
    if (!x.ok()) Die(x.status().ToString());
    return Case{MakeSession(models::LoopModel(false, kBigFloats)),
                {Int64Scalar(10), std::move(x).value()},
                {}};
  }();
  if (!CheckAliases(state, c, c.feeds[1])) return;
  RunLoop(state, c);
}

// Names are stable (compared over time). The summary (bench/summarize.py) reads real_time
// medians; bytes/s and items/s printed by the library are from CPU time except for the threaded
// case, which uses wall time (runs per second of the whole process).
void BM_optimize_100k_chain(benchmark::State& state) {
  static const std::string bytes =
      models::IdentityChain(models::TensorTypeProto(idem::ElementType::kFloat, {5}), 21, 100000)
          .SerializeAsString();
  const auto in = std::as_bytes(std::span(bytes.data(), bytes.size()));
  for (auto _ : state) {
    std::string out;
    auto report = idem::OptimizeModelBytes(in, &out);
    if (!report.ok() || report->removed != 99999) {
      state.SkipWithError("optimize_100k_chain: unexpected result");
      return;
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}

BENCHMARK(BM_tiny)->Name("tiny");
BENCHMARK(BM_f32_16MiB)->Name("f32_16MiB");
BENCHMARK(BM_f32_256MiB)->Name("f32_256MiB");
BENCHMARK(BM_seq_1000x1024)->Name("seq_1000x1024");
BENCHMARK(BM_seq_1000x1024_declared)->Name("seq_1000x1024_declared");
BENCHMARK(BM_string_10000)->Name("string_10000");
BENCHMARK(BM_chain100)->Name("chain100");
BENCHMARK(BM_chain100_noelim)->Name("chain100_noelim");
BENCHMARK(BM_seed_example)->Name("seed_example");
BENCHMARK(BM_external_256MiB_load)->Name("external_256MiB_load")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_external_256MiB_run)->Name("external_256MiB_run");
BENCHMARK(BM_inline_256MiB_load)->Name("inline_256MiB_load")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_inline_2_5GiB_load)->Name("inline_2_5GiB_load")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_load_1M_node_chain)
    ->Name("load_1M_node_chain")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_protobuf_parse_1M_node_chain)
    ->Name("protobuf_parse_1M_node_chain")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_create_1M_node_chain)
    ->Name("create_1M_node_chain")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_memcpy_256MiB)->Name("memcpy_256MiB")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_copy_out_256MiB)->Name("copy_out_256MiB")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_optimize_100k_chain)->Name("optimize_100k_chain")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_if_outer_identity)->Name("if_outer_identity");
BENCHMARK(BM_loop_seq_insert_10k)->Name("loop_seq_insert_10k")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_loop_seq_insert_100k)->Name("loop_seq_insert_100k")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_loop_carried_256MiB)->Name("loop_carried_256MiB");
BENCHMARK(BM_tiny_throughput)
    ->Name("tiny_throughput/threads")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// --make_external_model DIR: writes DIR/model.onnx + DIR/weights.bin (256 MiB) and keeps them.
int MakeExternalModel(const std::string& dir) {
  ExternalModel model(dir);
  model.Keep();
  std::printf("%s\n", model.path().c_str());
  return 0;
}

// --write_models DIR: the models of the Run cases as .onnx files (for bench/ort/ort_bench.js).
int WriteModels(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const onnx::ModelProto& model) {
    std::ofstream out(dir + "/" + name + ".onnx", std::ios::binary);
    if (!model.SerializeToOstream(&out)) Die("cannot write " + dir + "/" + name + ".onnx");
  };
  write("tiny", FloatIdentity({5}));
  write("f32_16MiB", FloatIdentity({4 << 20}));
  write("f32_256MiB", FloatIdentity({kBigFloats}));
  write("seq_1000x1024",
        models::IdentityChain(models::SequenceTypeProto(UnshapedTensorType(ElementType::kFloat)),
                              kOpset));
  write("string_10000",
        models::IdentityChain(models::TensorTypeProto(ElementType::kString, {10000}), kOpset));
  write("chain100", FloatIdentity({5}, 100));
  write("seed_example", SeedExampleModel());
  ExternalModel external(dir + "/external_256MiB");
  external.Keep();
  WriteInlineModel(dir + "/inline_256MiB.onnx", kBig, false);
  return 0;
}

// --rss_check MODEL: loads the model (e.g. one written by --make_external_model) and runs it,
// never touching the output's bytes. Run it under /usr/bin/time -v for the peak RSS.
int RssCheck(const std::string& path) {
  auto session = Session::Create(path);
  if (!session.ok()) Die(session.status().ToString());
  auto out = session->Run({});
  if (!out.ok()) Die(out.status().ToString());
  const idem::Tensor& t = (*out)[0].tensor();
  std::printf("rss_check: y is float[%lld], %zu bytes at %p (not read)\n",
              static_cast<long long>(t.shape()[0]), t.data().size(),
              static_cast<const void*>(t.data().data()));
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) std::printf("rss_check: %s\n", line.c_str());
  }
  return 0;
}

// --load_only MODEL: Session::Create only (models without feeds need not run), for peak RSS.
int LoadOnly(const std::string& path) {
  if (std::getenv("IDEM_BENCH_GRAPH_ONLY") != nullptr) {  // the loader alone (file -> GraphDef)
    auto graph = idem::LoadGraphFromFile(path, idem::Limits{});
    if (!graph.ok()) Die(graph.status().ToString());
  } else {
    auto session = Session::Create(path);
    if (!session.ok()) Die(session.status().ToString());
  }
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) std::printf("load_only: %s\n", line.c_str());
  }
  return 0;
}

// --loop=<case>:<n>: n Runs of one case, for profilers.
int Loop(const std::string& spec) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const long n = colon == std::string::npos ? 1000000 : std::atol(spec.c_str() + colon + 1);
  const Case* c = nullptr;
  static Case noelim;
  if (name == "tiny") {
    c = &Tiny();
  } else if (name == "seed_example") {
    c = &SeedExample();
    if (!c->session) Die(c->error);
  } else if (name == "chain100_noelim") {
    SessionOptions options;
    options.eliminate_identity = false;
    noelim = Case{MakeSession(FloatIdentity({5}, 100), options), {FloatTensor({5})}, {}};
    c = &noelim;
  } else if (name == "loop_carried") {
    // loop_carried_256MiB's model with a 5-float tensor: the per-iteration bookkeeping does not
    // depend on the size (nothing is copied), and profilers need not fill 256 MiB.
    noelim =
        Case{MakeSession(models::LoopModel(false, 5)), {Int64Scalar(10), FloatTensor({5})}, {}};
    c = &noelim;
  } else {
    Die("--loop: unknown case '" + name + "' (tiny, chain100_noelim, seed_example, loop_carried)");
  }
  size_t ok = 0;
  for (long i = 0; i < n; ++i) ok += c->session->Run(c->feeds).ok();
  std::printf("loop %s: %zu/%ld runs ok\n", name.c_str(), ok, n);
  return ok == static_cast<size_t>(n) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool single_threaded = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--make_external_model" && i + 1 < argc) return MakeExternalModel(argv[i + 1]);
    if (arg == "--rss_check" && i + 1 < argc) return RssCheck(argv[i + 1]);
    if (arg == "--write_models" && i + 1 < argc) return WriteModels(argv[i + 1]);
    if (arg == "--make_inline_model" && i + 1 < argc) {
      WriteInlineModel(argv[i + 1], kBig, false);
      return 0;
    }
    if (arg == "--make_chain_model" && i + 1 < argc) {
      WriteChainModel(argv[i + 1]);
      return 0;
    }
    if (arg == "--load_only" && i + 1 < argc) return LoadOnly(argv[i + 1]);
    if (arg.rfind("--loop=", 0) == 0) return Loop(arg.substr(7));
    if (arg == "--single_threaded_refcounts") {
      single_threaded = true;
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      --i;
    }
  }
  // libstdc++ makes shared_ptr reference counts plain (non-atomic) increments while a process has
  // never started a thread (glibc's __libc_single_threaded). Real hosts of a runtime are
  // multi-threaded, so start and join one thread first: every case then pays atomic counts, as
  // it would in a server. --single_threaded_refcounts skips this (and is what --loop runs).
  if (!single_threaded) std::thread([] {}).join();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
