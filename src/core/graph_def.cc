#include "src/core/graph_def.h"

#include <fmt/format.h>

#include "src/core/text.h"

namespace idem {

std::string NodeDef::Label(size_t index) const {
  // Names and op types come from the file: escaped so they cannot forge lines or reach a terminal.
  const std::string op = EscapeText(domain.empty() ? op_type : domain + "." + op_type);
  if (name.empty()) return fmt::format("node #{} ({})", index, op);
  return fmt::format("node {} ({})", QuoteName(name), op);
}

std::string DescribeVersions(const GraphDef& graph) {
  std::string out = fmt::format("IR version {}\nopsets:", graph.ir_version);
  for (const auto& [domain, version] : graph.opsets) {
    out += fmt::format(" {}={}", domain.empty() ? "ai.onnx" : EscapeText(domain), version);
  }
  return out + "\n";
}

}  // namespace idem
