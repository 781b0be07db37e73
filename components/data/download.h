// Moved to components/data/sources/torchvision_download.h; this forwarding header stays for one release (CHANGELOG 0.x).
#pragma once

#include "components/data/sources/torchvision_download.h"
