// Umbrella header: the whole public API of idem.
#ifndef IDEM_IDEM_H_
#define IDEM_IDEM_H_

#include "idem/buffer.h"
#include "idem/element_type.h"
#include "idem/session.h"
#include "idem/status.h"
#include "idem/type.h"
#include "idem/value.h"

#endif  // IDEM_IDEM_H_
