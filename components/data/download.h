// Moved to components/data/sources/torchvision_download.h; this forwarding header stays through 0.2
// and goes in 0.3.0 (CHANGELOG.md, Deprecated).
#pragma once

#include "components/data/sources/torchvision_download.h"
