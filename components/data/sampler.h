// Moved to components/data/loader/sampler.h; this forwarding header stays for one release (CHANGELOG 0.x).
#pragma once

#include "components/data/loader/sampler.h"
