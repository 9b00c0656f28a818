#include "fuzz/harness.h"

#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fuzz/graph_recipe.h"
#include "idem/idem.h"
#include "src/onnx/model_loader.h"
#include "src/onnx/optimize.h"
#include "src/onnx/proto_convert.h"
#include "tools/backend_test.h"

namespace idem::fuzz {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "idem fuzz invariant broken: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

std::span<const std::byte> AsBytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

// ---- feeds built from declared types ---------------------------------------------------------

constexpr uint64_t kMaxFeedElements = uint64_t{1} << 12;

// variant 0: symbolic dims 1, empty sequences and optionals, zero bytes.
// variant 1: symbolic dims 2, two-item sequences, filled optionals, 0xA5.. bytes.
// variant 2: symbolic dims 0, one-item sequences, filled optionals.
std::optional<Value> MakeFeed(const Type& type, int variant, int depth) {
  if (depth > 10) return std::nullopt;
  switch (type.kind()) {
    case ValueKind::kTensor: {
      ElementType et = type.element_type();
      if (et == ElementType::kUndefined) et = ElementType::kFloat;
      std::vector<int64_t> dims;
      const int64_t free_dim = variant == 0 ? 1 : (variant == 1 ? 2 : 0);
      if (const auto& shape = type.shape()) {
        if (shape->size() > 64) return std::nullopt;
        for (const Dim& d : *shape) dims.push_back(d.value ? *d.value : free_dim);
      } else {
        for (int i = 0; i < variant; ++i) dims.push_back(free_dim + 1);
      }
      uint64_t count = 1;
      for (int64_t d : dims) {
        if (d < 0 || (d != 0 && count > kMaxFeedElements / static_cast<uint64_t>(d))) {
          return std::nullopt;  // a fixed dim too large to feed cheaply
        }
        count *= static_cast<uint64_t>(d);
      }
      if (et == ElementType::kString) {
        std::vector<std::string> strings(count, variant == 1 ? std::string("a\0\xff", 3) : "");
        auto v = Value::MakeStringTensor(std::move(dims), std::move(strings));
        if (!v.ok()) Die("MakeStringTensor refused a valid feed: " + v.status().ToString());
        return std::move(v).value();
      }
      auto bytes = PackedByteSize(et, count);
      if (!bytes) Die("PackedByteSize failed for a small feed");
      std::byte* out = nullptr;
      auto buffer = Buffer::Allocate(*bytes, &out);
      if (!buffer.ok()) Die("Buffer::Allocate failed for a small feed");
      for (size_t i = 0; i < *bytes; ++i) {
        out[i] = static_cast<std::byte>(variant == 1 ? 0xA5 ^ i : i * 37);
        // A bool is one byte holding 0 or 1 (files holding anything else are refused), so a feed
        // must too, or its outputs could not round-trip through a TensorProto.
        if (et == ElementType::kBool) out[i] &= std::byte{1};
      }
      auto v = Value::MakeTensor(et, std::move(dims), std::move(buffer).value());
      if (!v.ok()) Die("MakeTensor refused a valid feed: " + v.status().ToString());
      return std::move(v).value();
    }
    case ValueKind::kSequence: {
      const Type& element = type.element();
      if (!element.is_tensor()) return std::nullopt;
      ElementType et = element.element_type();
      if (et == ElementType::kUndefined) et = ElementType::kFloat;
      std::vector<Value> items;
      for (int i = 0; i < (variant == 0 ? 0 : (variant == 1 ? 2 : 1)); ++i) {
        auto item = MakeFeed(Type::Tensor(et, element.shape()), variant, depth + 1);
        if (!item) return std::nullopt;
        items.push_back(std::move(*item));
      }
      auto v = Value::MakeSequence(et, std::move(items));
      if (!v.ok()) Die("MakeSequence refused a valid feed: " + v.status().ToString());
      return std::move(v).value();
    }
    case ValueKind::kOptional: {
      const Type& element = type.element();
      if (element.is_optional()) return std::nullopt;
      if (variant == 0) {
        auto v = Value::MakeEmptyOptional(element);
        if (!v.ok()) Die("MakeEmptyOptional refused a valid type: " + v.status().ToString());
        return std::move(v).value();
      }
      auto inner = MakeFeed(element, variant, depth + 1);
      if (!inner) return std::nullopt;
      auto v = Value::MakeOptional(std::move(*inner));
      if (!v.ok()) Die("MakeOptional refused a valid value: " + v.status().ToString());
      return std::move(v).value();
    }
  }
  return std::nullopt;
}

// A value must serialize and parse back to itself (as its own type).
void CheckRoundTrip(const Value& v, const std::string& where) {
  (void)FormatValue(v);
  (void)v.type().ToShortString();
  if (auto why = DescribeDifference(v, v)) Die(where + ": a value differs from itself: " + *why);
  auto bytes = ValueToProtoBytes(v, "x");
  if (!bytes.ok()) Die(where + ": ValueToProtoBytes failed: " + bytes.status().ToString());
  auto back = ValueFromProtoBytes(std::as_bytes(std::span(bytes.value())), v.type(),
                                  LoadContext{"", Limits{}, {}});
  if (!back.ok())
    Die(where + ": serialized value does not parse back: " + back.status().ToString());
  if (auto why = DescribeDifference(v, back.value())) {
    Die(where + ": round trip changed the value: " + *why);
  }
}

bool SameKindAsDeclared(const Value& v, const Type& declared) {
  if (v.kind() != declared.kind()) return false;
  if (v.is_tensor()) {
    return declared.element_type() == ElementType::kUndefined ||
           declared.element_type() == v.tensor().element_type();
  }
  if (v.is_sequence()) {
    return !declared.element().is_tensor() ||
           declared.element().element_type() == ElementType::kUndefined ||
           declared.element().element_type() == v.sequence().element_type();
  }
  return true;
}

void CheckOutputs(const Session& session, const std::vector<Value>& outputs,
                  const std::string& where) {
  if (outputs.size() != session.outputs().size()) Die(where + ": wrong number of outputs");
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Value& v = outputs[k];
    if (v.is_null()) Die(where + ": null output " + session.outputs()[k].name);
    if (!SameKindAsDeclared(v, session.outputs()[k].type)) {
      Die(where + ": output '" + session.outputs()[k].name + "' is " + v.type().ToString() +
          " but declared " + session.outputs()[k].type.ToString());
    }
    CheckRoundTrip(v, where + " output " + std::to_string(k));
  }
}

void CompareOutputs(const std::vector<Value>& a, const std::vector<Value>& b,
                    const std::string& where) {
  if (a.size() != b.size()) Die(where + ": output counts differ");
  for (size_t k = 0; k < a.size(); ++k) {
    if (auto why = DescribeDifference(a[k], b[k])) {
      Die(where + ": output " + std::to_string(k) + " differs: " + *why);
    }
  }
}

// The fuzzer's process is limited to 2 GiB of RSS and 60 s per input, while a model may ask for
// a Loop of 2^62 iterations or stack gigabytes: every session here runs under a 64 MiB run
// budget and every run under a 0.25 s deadline. A run stopped by either says nothing about
// correctness, so the comparisons skip it.
SessionOptions HarnessSessionOptions(bool eliminate_identity = true) {
  SessionOptions options;
  options.eliminate_identity = eliminate_identity;
  options.limits.max_run_bytes = uint64_t{64} << 20;
  // The per-node work bound (multiply-adds, window taps) is max_elements: 2^22 keeps one node's
  // run in the milliseconds under ASan, so a slow input is a bug, not a big legitimate product.
  options.limits.max_elements = uint64_t{1} << 22;
  return options;
}

RunOptions HarnessRunOptions() {
  RunOptions options;
  options.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
  return options;
}

bool StoppedByLimits(const Status& status) {
  return status.code() == StatusCode::kDeadlineExceeded ||
         status.code() == StatusCode::kResourceExhausted;
}

void ExerciseSession(const Session& session, const Session* reference) {
  (void)session.Describe();
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<Value> feeds;
    std::vector<NamedValue> named;
    bool complete = true;
    for (const ValueInfo& info : session.inputs()) {
      auto feed = MakeFeed(info.type, variant, 0);
      if (!feed) {
        complete = false;
        break;
      }
      named.push_back({info.name, *feed});
      feeds.push_back(std::move(*feed));
    }
    if (!complete) continue;
    const std::string where = "variant " + std::to_string(variant);
    auto outputs = session.Run(feeds, HarnessRunOptions());
    if (!outputs.ok() && StoppedByLimits(outputs.status())) continue;
    if (reference != nullptr) {
      auto ref = reference->Run(feeds, HarnessRunOptions());
      if (!ref.ok() && StoppedByLimits(ref.status())) continue;
      if (ref.ok() != outputs.ok()) {
        Die(where + ": Identity elimination changes whether Run succeeds: " +
            outputs.status().ToString() + " vs " + ref.status().ToString());
      }
      if (ref.ok()) CompareOutputs(ref.value(), outputs.value(), where + " (elimination)");
    }
    if (!outputs.ok()) continue;
    CheckOutputs(session, outputs.value(), where);
    // Each output that is also a graph input must return the fed value.
    for (size_t k = 0; k < session.outputs().size(); ++k) {
      for (size_t i = 0; i < session.inputs().size(); ++i) {
        if (session.inputs()[i].name != session.outputs()[k].name) continue;
        if (auto why = DescribeDifference(feeds[i], outputs.value()[k])) {
          Die(where + ": output that is a graph input differs from the feed: " + *why);
        }
      }
    }
    auto by_name = session.RunNamed(named, HarnessRunOptions());
    if (by_name.ok()) CompareOutputs(outputs.value(), by_name.value(), where + " (RunNamed)");

    // RunInto when every output is a non-string tensor.
    std::vector<std::vector<std::byte>> storage;
    std::vector<OutputBuffer> buffers;
    bool plain = true;
    for (const Value& v : outputs.value()) {
      if (!v.is_tensor() || v.tensor().element_type() == ElementType::kString) plain = false;
    }
    if (!plain) continue;
    for (const Value& v : outputs.value()) storage.emplace_back(v.tensor().data().size() + 1);
    for (auto& s : storage) buffers.push_back({s.data(), s.size()});
    auto shapes = session.RunInto(feeds, buffers);
    if (!shapes.ok())
      Die(where + ": RunInto failed after Run succeeded: " + shapes.status().ToString());
    for (size_t k = 0; k < storage.size(); ++k) {
      const Buffer& data = outputs.value()[k].tensor().data();
      if (!data.empty() && std::memcmp(storage[k].data(), data.data(), data.size()) != 0) {
        Die(where + ": RunInto wrote different bytes from Run");
      }
    }
  }
}

// ---- declared types for FuzzValue -------------------------------------------------------------

Type DeclaredType(uint8_t selector) {
  const int code = selector >> 3;
  const ElementType et =
      code <= kMaxElementTypeCode ? static_cast<ElementType>(code) : ElementType::kUndefined;
  const Type tensor = Type::Tensor(et);
  switch (selector & 7) {
    case 1:
      return Type::Sequence(tensor);
    case 2:
      return Type::Optional(tensor);
    case 3:
      return Type::Optional(Type::Sequence(tensor));
    case 4:
      return Type::Sequence(Type::Sequence(tensor));
    case 5:
      return Type::Optional(Type::Optional(tensor));
    case 6:
      return Type::Sequence(Type::Optional(tensor));
    default:
      return tensor;
  }
}

// ---- backend-test folders ---------------------------------------------------------------------

void WriteOrRemove(const std::string& path, std::span<const uint8_t> bytes) {
  unlink(path.c_str());
  if (bytes.empty()) return;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("cannot create " + path);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) Die("cannot write " + path);
    done += static_cast<size_t>(n);
  }
  close(fd);
}

std::string& CaseFolder() {
  static std::string folder;
  return folder;
}

void RemoveCaseFolder() {
  const std::string& dir = CaseFolder();
  if (dir.empty()) return;
  for (const char* name : {"test_data_set_0/input_0.pb", "test_data_set_0/output_0.pb",
                           "model.onnx", "outside", "fifo", "rootlink"}) {
    unlink((dir + "/" + name).c_str());
  }
  rmdir((dir + "/test_data_set_0").c_str());
  rmdir(dir.c_str());
}

const std::string& MakeCaseFolder() {
  std::string& dir = CaseFolder();
  if (!dir.empty()) return dir;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/idem-fuzz-case-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) Die("mkdtemp failed");
  dir = pattern;
  if (mkdir((dir + "/test_data_set_0").c_str(), 0755) != 0) Die("mkdir failed");
  // Traps for external data: a symlink out of the folder, a FIFO, a link to the root.
  (void)symlink("/etc/hostname", (dir + "/outside").c_str());
  (void)mkfifo((dir + "/fifo").c_str(), 0644);
  (void)symlink("/", (dir + "/rootlink").c_str());
  std::atexit(RemoveCaseFolder);
  return dir;
}

uint32_t ReadU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// `idem optimize` on the same bytes (issue 9): nothing removed means the input's own bytes; a
// second pass removes nothing and changes no byte; where idem runs the input, the result loads
// and gives the same outputs on generated feeds.
void CheckOptimize(const uint8_t* data, size_t size, const Session* original) {
  std::string out;
  auto report = OptimizeModelBytes(AsBytes(data, size), &out);
  if (!report.ok()) {
    if (report.status().message().empty()) Die("optimize: an error without a message");
    return;
  }
  if (report->kept != report->kept_nodes.size()) Die("optimize: kept count mismatch");
  const auto result = std::as_bytes(std::span(out.data(), out.size()));
  if (report->removed == 0 &&
      (out.size() != size || (size > 0 && std::memcmp(out.data(), data, size) != 0))) {
    Die("optimize: nothing removed but the bytes changed");
  }
  // The streaming path (wire walker + raw_data expansion) must give the message the plain protobuf
  // path gives, compared in protobuf's canonical serialization.
  if (report->removed > 0) {
    onnx::ModelProto full, got;
    if (size <= static_cast<size_t>(std::numeric_limits<int>::max()) &&
        full.ParseFromArray(data, static_cast<int>(size))) {
      auto reference = OptimizeModelProto(full, {});
      if (!reference.ok()) Die("optimize: the plain path fails: " + reference.status().ToString());
      if (reference->report.removed != report->removed) Die("optimize: paths remove differently");
      if (!got.ParseFromString(out)) Die("optimize: the result does not parse");
      if (full.SerializeAsString() != got.SerializeAsString()) {
        Die("optimize: the streamed result differs from the plain protobuf path's");
      }
    }
  }
  std::string again;
  auto second = OptimizeModelBytes(result, &again);
  if (!second.ok()) Die("optimize: the result fails a second pass: " + second.status().ToString());
  if (second->removed != 0 || again != out) Die("optimize: a second pass changed the result");
  if (original == nullptr) return;
  auto optimized = Session::CreateFromBytes(result, "", HarnessSessionOptions());
  if (!optimized.ok()) Die("optimize: the result does not load: " + optimized.status().ToString());
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<Value> feeds;
    bool complete = true;
    for (const ValueInfo& info : original->inputs()) {
      auto feed = MakeFeed(info.type, variant, 0);
      if (!feed) {
        complete = false;
        break;
      }
      feeds.push_back(std::move(*feed));
    }
    if (!complete) continue;
    auto a = original->Run(feeds, HarnessRunOptions());
    auto b = optimized->Run(feeds, HarnessRunOptions());
    if ((!a.ok() && StoppedByLimits(a.status())) || (!b.ok() && StoppedByLimits(b.status()))) {
      continue;
    }
    if (a.ok() != b.ok()) {
      Die("optimize: changes whether Run succeeds: " + a.status().ToString() + " vs " +
          b.status().ToString());
    }
    if (a.ok()) CompareOutputs(a.value(), b.value(), "optimize variant " + std::to_string(variant));
  }
}

bool SameTensor(const Value& a, const Value& b) {
  if (!a.is_tensor() || !b.is_tensor()) return a.kind() == b.kind();
  return !DescribeDifference(a, b).has_value();
}

// The wire walker (in-place loading) must agree with a plain protobuf parse of the same bytes:
// it refuses everything protobuf refuses, never reports a parse failure for bytes protobuf
// accepts, and when both load, the graphs are the same (initializer bytes included).
void CheckLoaderAgreesWithProtobuf(const uint8_t* data, size_t size) {
  onnx::ModelProto reference;
  const bool parses = size <= static_cast<size_t>(std::numeric_limits<int>::max()) &&
                      reference.ParseFromArray(data, static_cast<int>(size));
  auto graph = LoadGraphFromBytes(AsBytes(data, size), "", Limits{});
  if (!parses) {
    if (graph.ok()) Die("the in-place loader accepts bytes protobuf refuses");
    return;
  }
  if (!graph.ok()) {
    if (graph.status().message().find("protobuf parsing failed") != std::string::npos) {
      Die("the wire walker refuses bytes protobuf accepts: " + graph.status().message());
    }
    return;
  }
  auto expected = LoadGraphFromProto(reference, "", Limits{});
  if (!expected.ok()) {
    Die("the in-place loader accepts a model its protobuf parse refuses: " +
        expected.status().message());
  }
  const GraphDef& g = graph.value();
  const GraphDef& e = expected.value();
  if (g.nodes.size() != e.nodes.size() || g.initializers.size() != e.initializers.size() ||
      g.inputs.size() != e.inputs.size() || g.outputs.size() != e.outputs.size() ||
      g.opsets != e.opsets || g.ir_version != e.ir_version) {
    Die("the in-place loader and protobuf's parse give different graphs");
  }
  for (size_t i = 0; i < g.initializers.size(); ++i) {
    if (g.initializers[i].name != e.initializers[i].name ||
        !SameTensor(g.initializers[i].value, e.initializers[i].value)) {
      Die("initializer " + std::to_string(i) + " differs from protobuf's parse");
    }
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const NodeDef& a = g.nodes[n];
    const NodeDef& b = e.nodes[n];
    if (a.op_type != b.op_type || a.inputs != b.inputs || a.outputs != b.outputs ||
        a.attributes.size() != b.attributes.size()) {
      Die("node " + std::to_string(n) + " differs from protobuf's parse");
    }
    for (size_t k = 0; k < a.attributes.size(); ++k) {
      if (a.attributes[k].kind == Attribute::Kind::kTensor &&
          !SameTensor(a.attributes[k].tensor, b.attributes[k].tensor)) {
        Die("a tensor attribute of node " + std::to_string(n) + " differs from protobuf's parse");
      }
    }
  }
}

void FuzzModelBytes(const uint8_t* data, size_t size) {
  CheckLoaderAgreesWithProtobuf(data, size);
  auto session = Session::CreateFromBytes(AsBytes(data, size), "", HarnessSessionOptions());
  auto reference = Session::CreateFromBytes(AsBytes(data, size), "", HarnessSessionOptions(false));
  if (session.ok() != reference.ok()) {
    Die("Identity elimination changes whether the model loads: " + session.status().ToString() +
        " vs " + reference.status().ToString());
  }
  CheckOptimize(data, size, session.ok() ? &session.value() : nullptr);
  if (!session.ok()) {
    if (session.status().message().empty()) Die("an error without a message");
    return;
  }
  ExerciseSession(session.value(), &reference.value());
}

}  // namespace

void FuzzModel(const uint8_t* data, size_t size) {
  if (size >= sizeof(kRecipeMagic) && std::memcmp(data, kRecipeMagic, sizeof(kRecipeMagic)) == 0) {
    FuzzGraph(data + sizeof(kRecipeMagic), size - sizeof(kRecipeMagic));
    return;
  }
  FuzzModelBytes(data, size);
}

void FuzzGraph(const uint8_t* data, size_t size) {
  const std::string model = BuildRecipeModel(data, size);
  // IDEM_FUZZ_GRAPH_DUMP=FILE writes the model a recipe builds (to replay it with `idem run`).
  if (const char* dump = std::getenv("IDEM_FUZZ_GRAPH_DUMP"); dump != nullptr && *dump != 0) {
    WriteOrRemove(dump, std::span(reinterpret_cast<const uint8_t*>(model.data()), model.size()));
  }
  FuzzModelBytes(reinterpret_cast<const uint8_t*>(model.data()), model.size());
}

void FuzzValue(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const Type declared = DeclaredType(data[0]);
  auto value =
      ValueFromProtoBytes(AsBytes(data + 1, size - 1), declared, LoadContext{"", Limits{}, {}});
  if (!value.ok()) {
    if (value.status().message().empty()) Die("an error without a message");
    return;
  }
  CheckRoundTrip(value.value(), "value");
  // Parsing again as the declared type must give the same value.
  auto bytes = ValueToProtoBytes(value.value(), "y");
  if (!bytes.ok()) Die("ValueToProtoBytes failed: " + bytes.status().ToString());
  auto again = ValueFromProtoBytes(std::as_bytes(std::span(bytes.value())), declared,
                                   LoadContext{"", Limits{}, {}});
  if (!again.ok()) {
    Die("a converted value does not parse back as its declared type " + declared.ToString() + ": " +
        again.status().ToString());
  }
  if (auto why = DescribeDifference(value.value(), again.value())) {
    Die("round trip as the declared type changed the value: " + *why);
  }
}

void FuzzBackendCase(const uint8_t* data, size_t size) {
  if (size < 8) return;
  const std::string& dir = MakeCaseFolder();
  size_t model_len = ReadU32(data);
  size_t input_len = ReadU32(data + 4);
  std::span<const uint8_t> rest(data + 8, size - 8);
  model_len = std::min(model_len, rest.size());
  const auto model = rest.subspan(0, model_len);
  rest = rest.subspan(model_len);
  input_len = std::min(input_len, rest.size());
  const auto input = rest.subspan(0, input_len);
  const auto output = rest.subspan(input_len);
  WriteOrRemove(dir + "/model.onnx", model);
  WriteOrRemove(dir + "/test_data_set_0/input_0.pb", input);
  WriteOrRemove(dir + "/test_data_set_0/output_0.pb", output);
  const bool skip_unsupported = (data[0] ^ data[4]) & 1;
  // Bounded like every run here (see HarnessSessionOptions): a failed case is fine, a crash not.
  tools::CaseResult result =
      tools::RunBackendCase(dir, skip_unsupported, HarnessSessionOptions(), 0.25);
  if (result.outcome != tools::CaseResult::Outcome::kPass && result.reason.empty()) {
    Die("a failed case without a reason");
  }
}

}  // namespace idem::fuzz
