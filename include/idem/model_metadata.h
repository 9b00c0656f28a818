// Descriptive fields of a model file (ModelProto/GraphProto), protobuf-free. Informational only:
// nothing in idem's behaviour depends on them.
#ifndef IDEM_MODEL_METADATA_H_
#define IDEM_MODEL_METADATA_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace idem {

struct ModelMetadata {
  std::string producer_name;     // ModelProto.producer_name
  std::string producer_version;  // ModelProto.producer_version
  std::string domain;            // ModelProto.domain
  int64_t model_version = 0;     // ModelProto.model_version
  std::string doc_string;        // ModelProto.doc_string
  std::string graph_name;        // GraphProto.name
  std::string graph_doc_string;  // GraphProto.doc_string
  // ModelProto.metadata_props in file order (keys may repeat in a hand-made file).
  std::vector<std::pair<std::string, std::string>> metadata_props;
};

// One operator version idem implements: (domain, op_type) from `since_version` on, until the next
// listed version of the same operator. `domain` is "" for the default ONNX domain.
struct OperatorInfo {
  std::string domain;
  std::string op_type;
  int since_version = 1;
};

}  // namespace idem

#endif  // IDEM_MODEL_METADATA_H_
