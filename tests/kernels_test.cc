// Kernel registry: Identity's versions and type sets, checked against libonnx's schemas.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <set>

#include "src/kernels/kernel.h"

namespace idem {
namespace {

std::set<std::string> OurTypes(const KernelSchema& s) {
  std::set<std::string> out;
  for (const Type& t : s.constraints.at(0).allowed) out.insert(t.ToString());
  return out;
}

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

// libonnx (onnx 1.12) knows Identity 1, 13, 14 and 16: their type sets must match exactly.
TEST(IdentityRegistryTest, MatchesLibonnxSchemas) {
  const auto& r = KernelRegistry::Default();
  for (int version : {1, 13, 14, 16}) {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema("Identity", version, "");
    ASSERT_NE(schema, nullptr) << version;
    ASSERT_EQ(schema->SinceVersion(), version);
    ASSERT_EQ(schema->typeConstraintParams().size(), 1u);
    const auto& param = schema->typeConstraintParams()[0];
    std::set<std::string> theirs(param.allowed_type_strs.begin(), param.allowed_type_strs.end());
    const KernelSchema* ours = r.Resolve("", "Identity", version);
    EXPECT_EQ(OurTypes(*ours), theirs) << "Identity-" << version;
    EXPECT_EQ(ours->constraints[0].param, param.type_param_str);
  }
}

TEST(IdentityKernelTest, ReturnsTheSameValueObject) {
  const KernelSchema* s = KernelRegistry::Default().Resolve("", "Identity", 16);
  NodeDef node;
  node.op_type = "Identity";
  Type t = Type::Tensor(ElementType::kFloat);
  const Type* types[] = {&t};
  auto kernel = s->create(NodeContext{node, 16, types}).value();
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

}  // namespace
}  // namespace idem
