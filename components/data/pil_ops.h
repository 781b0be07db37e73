// Moved to components/data/pil/pil_ops.h; this forwarding header stays for one release (CHANGELOG 0.x).
#pragma once

#include "components/data/pil/pil_ops.h"
