// Creating a Session from an in-memory onnx::ModelProto. The one public header that needs
// protobuf and libonnx's generated classes: include it only when you already use them.
#ifndef IDEM_SESSION_PROTO_H_
#define IDEM_SESSION_PROTO_H_

#include <string>

#include "idem/export.h"
#include "idem/session.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace idem {

// Copies `model` (initializer payloads included); pass an rvalue to move them instead.
IDEM_API Result<Session> CreateSessionFromProto(const onnx::ModelProto& model,
                                                const std::string& base_dir = "",
                                                const SessionOptions& options = {});
// Consumes `model`: initializer payloads are moved into the session, not copied.
IDEM_API Result<Session> CreateSessionFromProto(onnx::ModelProto&& model,
                                                const std::string& base_dir = "",
                                                const SessionOptions& options = {});

}  // namespace idem

#endif  // IDEM_SESSION_PROTO_H_
