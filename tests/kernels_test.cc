// Kernel registry: Identity's versions and type sets, checked against libonnx's schemas.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <cstring>
#include <set>
#include <vector>

#include "src/core/block_cache.h"
#include "src/kernels/kernel.h"
#include "src/kernels/op.h"
#include "tests/kernel_runner.h"

namespace idem {
namespace {

std::set<std::string> TypeStrings(const TypeConstraint& c) {
  std::set<std::string> out;
  for (const Type& t : c.allowed) out.insert(t.ToString());
  return out;
}

std::set<std::string> OurTypes(const KernelSchema& s) { return TypeStrings(s.constraints.at(0)); }

TEST(IdentityRegistryTest, NineVersionsResolveByOpset) {
  const auto& r = KernelRegistry::Default();
  std::vector<int> since;
  for (const KernelSchema* s : r.Versions("", "Identity")) since.push_back(s->since_version);
  EXPECT_EQ(since, (std::vector<int>{1, 13, 14, 16, 19, 21, 23, 24, 25}));
  EXPECT_EQ(r.Resolve("", "Identity", 12)->since_version, 1);
  EXPECT_EQ(r.Resolve("", "Identity", 15)->since_version, 14);
  EXPECT_EQ(r.Resolve("", "Identity", 18)->since_version, 16);
  EXPECT_EQ(r.Resolve("", "Identity", 22)->since_version, 21);
  EXPECT_EQ(r.Resolve("", "Identity", 28)->since_version, 25);
  EXPECT_EQ(r.Resolve("", "Identity", 0), nullptr);
  EXPECT_EQ(r.Resolve("com.example", "Identity", 16), nullptr);
}

TEST(IdentityRegistryTest, TypeSetSizesMatchTheSpec) {
  const auto& r = KernelRegistry::Default();
  // tensors + 15 sequences + 30 optionals.
  const std::vector<std::pair<int, size_t>> expected = {
      {1, 15}, {13, 16}, {14, 31}, {16, 61}, {19, 65}, {21, 67}, {23, 68}, {24, 69}, {25, 71}};
  for (auto [version, size] : expected) {
    EXPECT_EQ(OurTypes(*r.Resolve("", "Identity", version)).size(), size) << version;
  }
  // New element types widen plain tensors only.
  auto v25 = OurTypes(*r.Resolve("", "Identity", 25));
  EXPECT_TRUE(v25.count("tensor(int2)"));
  EXPECT_FALSE(v25.count("seq(tensor(bfloat16))"));
  EXPECT_FALSE(v25.count("optional(tensor(float8e4m3fn))"));
}

// libonnx (onnx 1.12) knows these operator versions: formal parameters (names, type parameters,
// optional/variadic), type sets and attribute names must match its schemas exactly.
TEST(RegistryOracleTest, MatchesLibonnxSchemas) {
  const std::vector<std::pair<const char*, int>> versions = {
      {"Identity", 1},        {"Identity", 13},           {"Identity", 14},
      {"Identity", 16},       {"SequenceConstruct", 11},  {"SequenceEmpty", 11},
      {"SequenceLength", 11}, {"SequenceAt", 11},         {"SequenceInsert", 11},
      {"SequenceErase", 11},  {"ConcatFromSequence", 11}, {"SplitToSequence", 11},
      {"Optional", 15},       {"OptionalHasElement", 15}, {"OptionalGetElement", 15}};
  const auto& registry = KernelRegistry::Default();
  for (const auto& [op, version] : versions) {
    SCOPED_TRACE(std::string(op) + "-" + std::to_string(version));
    const onnx::OpSchema* theirs = onnx::OpSchemaRegistry::Schema(op, version, "");
    ASSERT_NE(theirs, nullptr);
    ASSERT_EQ(theirs->SinceVersion(), version);
    const KernelSchema* ours = registry.Resolve("", op, version);
    ASSERT_NE(ours, nullptr);
    EXPECT_EQ(ours->since_version, version);
    ASSERT_EQ(ours->inputs.size(), theirs->inputs().size());
    for (size_t i = 0; i < ours->inputs.size(); ++i) {
      EXPECT_EQ(ours->inputs[i].name, theirs->inputs()[i].GetName());
      EXPECT_EQ(ours->inputs[i].type_param, theirs->inputs()[i].GetTypeStr());
      EXPECT_EQ(static_cast<int>(ours->inputs[i].arity),
                static_cast<int>(theirs->inputs()[i].GetOption()));
    }
    ASSERT_EQ(ours->outputs.size(), theirs->outputs().size());
    for (size_t i = 0; i < ours->outputs.size(); ++i) {
      EXPECT_EQ(ours->outputs[i].name, theirs->outputs()[i].GetName());
      EXPECT_EQ(ours->outputs[i].type_param, theirs->outputs()[i].GetTypeStr());
    }
    ASSERT_EQ(ours->constraints.size(), theirs->typeConstraintParams().size());
    for (const auto& param : theirs->typeConstraintParams()) {
      const TypeConstraint* c = ours->FindConstraint(param.type_param_str);
      ASSERT_NE(c, nullptr) << param.type_param_str;
      EXPECT_EQ(TypeStrings(*c), std::set<std::string>(param.allowed_type_strs.begin(),
                                                       param.allowed_type_strs.end()))
          << param.type_param_str;
    }
    std::set<std::string> their_attributes;
    for (const auto& [name, attribute] : theirs->attributes()) their_attributes.insert(name);
    EXPECT_EQ(std::set<std::string>(ours->attributes.begin(), ours->attributes.end()),
              their_attributes);
  }
}

// Every operator version idem registers, up to opset 17 (what libonnx 1.12 knows), against
// libonnx's schema of that version: formal parameters, type sets, attributes; and no version of
// a registered operator is missing (the newer ones are checked against ../shared/spec by review).
TEST(RegistryOracleTest, EveryRegisteredVersionMatchesLibonnx) {
  const auto& registry = KernelRegistry::Default();
  std::set<std::string> ops;
  for (const KernelSchema* ours : registry.All()) {
    if (!ours->domain.empty()) continue;
    ops.insert(ours->op_type);
    if (ours->since_version > 17) continue;
    SCOPED_TRACE(ours->Name());
    const onnx::OpSchema* theirs =
        onnx::OpSchemaRegistry::Schema(ours->op_type, ours->since_version, "");
    ASSERT_NE(theirs, nullptr);
    EXPECT_EQ(theirs->SinceVersion(), ours->since_version) << "not a version libonnx defines";
    ASSERT_EQ(ours->inputs.size(), theirs->inputs().size());
    for (size_t i = 0; i < ours->inputs.size(); ++i) {
      EXPECT_EQ(ours->inputs[i].name, theirs->inputs()[i].GetName()) << "input " << i;
      EXPECT_EQ(ours->inputs[i].type_param, theirs->inputs()[i].GetTypeStr()) << "input " << i;
      EXPECT_EQ(static_cast<int>(ours->inputs[i].arity),
                static_cast<int>(theirs->inputs()[i].GetOption()))
          << "input " << i;
    }
    ASSERT_EQ(ours->outputs.size(), theirs->outputs().size());
    for (size_t i = 0; i < ours->outputs.size(); ++i) {
      EXPECT_EQ(ours->outputs[i].name, theirs->outputs()[i].GetName()) << "output " << i;
      EXPECT_EQ(ours->outputs[i].type_param, theirs->outputs()[i].GetTypeStr()) << "output " << i;
      EXPECT_EQ(static_cast<int>(ours->outputs[i].arity),
                static_cast<int>(theirs->outputs()[i].GetOption()))
          << "output " << i;
    }
    for (const auto& param : theirs->typeConstraintParams()) {
      const TypeConstraint* c = ours->FindConstraint(param.type_param_str);
      ASSERT_NE(c, nullptr) << param.type_param_str;
      EXPECT_EQ(TypeStrings(*c), std::set<std::string>(param.allowed_type_strs.begin(),
                                                       param.allowed_type_strs.end()))
          << param.type_param_str;
    }
    // A formal parameter with an inline type ("tensor(int64)") allows exactly that type.
    for (const auto& formal : ours->inputs) {
      if (formal.type_param.find('(') == std::string::npos) continue;
      const TypeConstraint* c = ours->FindConstraint(formal.type_param);
      ASSERT_NE(c, nullptr) << formal.type_param;
      EXPECT_EQ(TypeStrings(*c), std::set<std::string>{formal.type_param});
    }
    std::set<std::string> their_attributes;
    for (const auto& [name, attribute] : theirs->attributes()) their_attributes.insert(name);
    EXPECT_EQ(std::set<std::string>(ours->attributes.begin(), ours->attributes.end()),
              their_attributes);
  }
  // Versions not yet registered (each to be removed as it lands).
  const std::set<std::string> not_yet = {};
  for (const std::string& op : ops) {
    for (int opset = 1; opset <= 17; ++opset) {
      const onnx::OpSchema* theirs = onnx::OpSchemaRegistry::Schema(op, opset, "");
      if (theirs == nullptr || theirs->Deprecated()) continue;
      if (not_yet.count(op + "-" + std::to_string(theirs->SinceVersion())) != 0) continue;
      const KernelSchema* ours = registry.Resolve("", op, opset);
      ASSERT_NE(ours, nullptr) << op << " at opset " << opset << " (libonnx: " << op << "-"
                               << theirs->SinceVersion() << ") is not registered";
      EXPECT_EQ(ours->since_version, theirs->SinceVersion()) << op << " at opset " << opset;
    }
  }
}

TEST(IdentityKernelTest, ReturnsTheSameValueObject) {
  const KernelSchema* s = KernelRegistry::Default().Resolve("", "Identity", 16);
  NodeDef node;
  node.op_type = "Identity";
  Type t = Type::Tensor(ElementType::kFloat);
  const Type* types[] = {&t};
  auto kernel = s->create(NodeContext{node, 16, types, Limits{}}).value();
  std::vector<std::byte> bytes(1 << 20);
  Value x =
      Value::MakeTensor(ElementType::kFloat, {1 << 18}, Buffer::Borrow(bytes.data(), bytes.size()))
          .value();
  const Value* inputs[] = {&x};
  Value out[1];
  ASSERT_TRUE(kernel->Run(inputs, out).ok());
  EXPECT_TRUE(out[0].SharesStorageWith(x));
  EXPECT_EQ(static_cast<const void*>(out[0].tensor().data().data()), bytes.data());
}

TEST(AllocateTensorTest, LargeOutputsReuseFreedBlocksZeroed) {
  // Outputs come from the thread's cache of freed blocks (src/core/block_cache.h): a block freed
  // dirty comes back zeroed, and the cache hands the same memory back instead of mapping more
  // (sanitizer builds never reuse a block, so only the zeros are checked there).
  Limits limits;
  testing::NoSubgraphs ctx(limits, nullptr);
  const int64_t n = int64_t{1} << 20;  // 4 MiB of float
  const void* first = nullptr;
  for (int round = 0; round < 3; ++round) {
    std::byte* data = nullptr;
    auto v = AllocateTensor(ctx, ElementType::kFloat, std::vector<int64_t>{n}, &data);
    ASSERT_TRUE(v.ok()) << v.status().message();
    ASSERT_EQ(v->tensor().data().size(), static_cast<size_t>(n) * 4);
    for (int64_t i = 0; i < n * 4; i += 4093) EXPECT_EQ(data[i], std::byte{0}) << round << " " << i;
    if (round == 0) first = data;
    if (round > 0 && block_cache::Enabled()) {
      EXPECT_EQ(static_cast<const void*>(data), first) << round;
    }
    std::memset(data, 0xA5, static_cast<size_t>(n) * 4);  // freed dirty
  }
  // A smaller request of another size class sees zeros in its own bytes too.
  std::byte* data = nullptr;
  auto v = AllocateTensor(ctx, ElementType::kFloat, std::vector<int64_t>{n / 2 + 1}, &data);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->tensor().data().size(), static_cast<size_t>(n / 2 + 1) * 4);
  for (int64_t i = 0; i < (n / 2 + 1) * 4; i += 511) ASSERT_EQ(data[i], std::byte{0}) << i;
}

}  // namespace
}  // namespace idem

namespace idem {
namespace {

// The indexed type check (a bit per tensor element type) answers exactly as the scan of the
// allowed types, for every constraint of every registered version, on tensors of every element
// type and on a sequence and an optional of each.
TEST(RegistryTest, IndexedTypeConstraintsAnswerAsTheScan) {
  size_t checked = 0;
  for (const KernelSchema* schema : KernelRegistry::Default().All()) {
    for (const TypeConstraint& indexed : schema->constraints) {
      ASSERT_TRUE(indexed.indexed) << schema->Name() << " " << indexed.param;
      TypeConstraint scan = indexed;
      scan.indexed = false;
      for (int32_t code = 1; code <= kMaxElementTypeCode; ++code) {
        const auto element = static_cast<ElementType>(code);
        for (const Type& type : {Type::Tensor(element), Type::Sequence(Type::Tensor(element)),
                                 Type::Optional(Type::Tensor(element))}) {
          ASSERT_EQ(indexed.Allows(type), scan.Allows(type))
              << schema->Name() << " " << indexed.param << " " << type.ToString();
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000u);
}

}  // namespace
}  // namespace idem
