// Moved to components/data/sources/image_files.h; this forwarding header stays for one release (CHANGELOG 0.x).
#pragma once

#include "components/data/sources/image_files.h"
