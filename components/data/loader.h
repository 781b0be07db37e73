// Moved to components/data/loader/loader.h; this forwarding header stays for one release (CHANGELOG 0.x).
#pragma once

#include "components/data/loader/loader.h"
