// Moved to components/data/transforms/timm_eval.h; this forwarding header stays for one release (CHANGELOG 0.x).
#pragma once

#include "components/data/transforms/timm_eval.h"
