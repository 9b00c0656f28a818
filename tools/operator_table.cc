#include "tools/operator_table.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <vector>

#include "src/kernels/kernel.h"

namespace idem {
namespace {

std::string Range(const KernelSchema& s) {
  if (s.end_version == KernelSchema::kMaxOpset) return fmt::format("{}+", s.since_version);
  if (s.end_version == s.since_version) return fmt::format("{}", s.since_version);
  return fmt::format("{}-{}", s.since_version, s.end_version);
}

// "tensor(float), tensor(int64)" as "float, int64" when every type is a plain tensor.
std::string Types(const TypeConstraint& c) {
  std::vector<std::string> names;
  bool plain = true;
  for (const Type& t : c.allowed) plain = plain && t.is_tensor();
  std::set<std::string> seen;
  for (const Type& t : c.allowed) {
    std::string n = plain ? std::string(ElementTypeName(t.element_type())) : t.ToString();
    if (seen.insert(n).second) names.push_back(std::move(n));
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::string OperatorTableMarkdown() {
  std::map<std::pair<std::string, std::string>, std::vector<const KernelSchema*>> ops;
  for (const KernelSchema* s : KernelRegistry::Default().All()) {
    ops[{s->domain, s->op_type}].push_back(s);
  }
  std::string out =
      "# Operators\n\n"
      "Generated from idem's kernel registry by `idem ops --markdown` (the test "
      "`operator_table_current` fails when this file is stale). Each version covers the opsets "
      "in its range; type sets are exactly the ONNX specification's.\n\n"
      "| Operator | Versions (opset ranges) |\n|---|---|\n";
  for (const auto& [key, versions] : ops) {
    std::vector<std::string> ranges;
    for (const KernelSchema* s : versions) ranges.push_back(Range(*s));
    const std::string name = key.first.empty() ? key.second : key.first + "." + key.second;
    out += fmt::format("| {} | {} |\n", name, fmt::join(ranges, ", "));
  }
  out += fmt::format("\n{} operators, {} versions.\n", ops.size(),
                     KernelRegistry::Default().All().size());
  for (const auto& [key, versions] : ops) {
    const std::string name = key.first.empty() ? key.second : key.first + "." + key.second;
    out += fmt::format("\n## {}\n\n| Version | Opsets | Type constraints |\n|---|---|---|\n", name);
    for (const KernelSchema* s : versions) {
      std::vector<std::string> constraints;
      for (const TypeConstraint& c : s->constraints) {
        if (c.param.find('(') != std::string::npos) continue;  // an inline type
        constraints.push_back(fmt::format("{}: {}", c.param, Types(c)));
      }
      out +=
          fmt::format("| {} | {} | {} |\n", s->Name(), Range(*s), fmt::join(constraints, "<br>"));
    }
  }
  return out;
}

}  // namespace idem
