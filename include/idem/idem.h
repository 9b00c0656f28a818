// Umbrella header: the whole protobuf-free public API of idem (idem/session_proto.h adds
// creation from an onnx::ModelProto for programs that already use protobuf).
#ifndef IDEM_IDEM_H_
#define IDEM_IDEM_H_

#include "idem/buffer.h"
#include "idem/element_type.h"
#include "idem/model_metadata.h"
#include "idem/optimize.h"
#include "idem/options.h"
#include "idem/session.h"
#include "idem/status.h"
#include "idem/type.h"
#include "idem/value.h"

#endif  // IDEM_IDEM_H_
