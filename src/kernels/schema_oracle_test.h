// Test helpers for kernel family tests: a registered version checked against libonnx's schema
// (onnx 1.12 knows versions up to opset 17) and type-set access for the newer versions.
#ifndef IDEM_SRC_KERNELS_SCHEMA_ORACLE_TEST_H_
#define IDEM_SRC_KERNELS_SCHEMA_ORACLE_TEST_H_

#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <set>
#include <string>

#include "src/kernels/kernel.h"

namespace idem::testing {

inline std::set<std::string> TypeSet(const KernelSchema& s, const std::string& param) {
  std::set<std::string> out;
  const TypeConstraint* c = s.FindConstraint(param);
  if (c == nullptr) return out;
  for (const Type& t : c->allowed) out.insert(t.ToString());
  return out;
}

// Formal parameters (names, type strings, optional/single), the type set of every type
// parameter, fixed input types ("tensor(int64)") and attribute names must match libonnx.
inline void ExpectMatchesLibonnx(const std::string& op, int version) {
  SCOPED_TRACE(op + "-" + std::to_string(version));
  const onnx::OpSchema* theirs = onnx::OpSchemaRegistry::Schema(op, version, "");
  ASSERT_NE(theirs, nullptr);
  ASSERT_EQ(theirs->SinceVersion(), version);
  const KernelSchema* ours = KernelRegistry::Default().Resolve("", op, version);
  ASSERT_NE(ours, nullptr);
  EXPECT_EQ(ours->since_version, version);
  auto check_formals = [&](const std::vector<FormalParameter>& mine,
                           const std::vector<onnx::OpSchema::FormalParameter>& libs) {
    ASSERT_EQ(mine.size(), libs.size());
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(mine[i].name, libs[i].GetName());
      EXPECT_EQ(mine[i].type_param, libs[i].GetTypeStr());
      EXPECT_EQ(static_cast<int>(mine[i].arity), static_cast<int>(libs[i].GetOption()))
          << mine[i].name;
      const std::set<std::string> types = TypeSet(*ours, mine[i].type_param);
      EXPECT_FALSE(types.empty()) << mine[i].name << " has no type constraint";
      if (libs[i].GetTypeStr().rfind("tensor(", 0) == 0) {  // a fixed type
        EXPECT_EQ(types, std::set<std::string>{libs[i].GetTypeStr()}) << mine[i].name;
      }
    }
  };
  check_formals(ours->inputs, theirs->inputs());
  check_formals(ours->outputs, theirs->outputs());
  for (const auto& param : theirs->typeConstraintParams()) {
    EXPECT_EQ(TypeSet(*ours, param.type_param_str),
              std::set<std::string>(param.allowed_type_strs.begin(), param.allowed_type_strs.end()))
        << param.type_param_str;
  }
  std::set<std::string> their_attributes;
  for (const auto& [name, attribute] : theirs->attributes()) their_attributes.insert(name);
  EXPECT_EQ(std::set<std::string>(ours->attributes.begin(), ours->attributes.end()),
            their_attributes);
}

}  // namespace idem::testing

#endif  // IDEM_SRC_KERNELS_SCHEMA_ORACLE_TEST_H_
