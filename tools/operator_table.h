// The operator tables of docs/operators.md, generated from the kernel registry (never typed by
// hand): every operator, every registered version with its opset range, and each version's type
// constraints.
#ifndef IDEM_TOOLS_OPERATOR_TABLE_H_
#define IDEM_TOOLS_OPERATOR_TABLE_H_

#include <string>

namespace idem {

// Markdown: a summary table (operator, versions) and one section per operator.
std::string OperatorTableMarkdown();

}  // namespace idem

#endif  // IDEM_TOOLS_OPERATOR_TABLE_H_
