#include "src/core/graph_def.h"

#include <fmt/format.h>

namespace idem {

std::string NodeDef::Label(size_t index) const {
  const std::string& op = domain.empty() ? op_type : domain + "." + op_type;
  if (name.empty()) return fmt::format("node #{} ({})", index, op);
  return fmt::format("node '{}' ({})", name, op);
}

}  // namespace idem
