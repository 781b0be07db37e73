// Moved to components/data/shards/shard_writer.h; this forwarding header stays for one release (CHANGELOG 0.x).
#pragma once

#include "components/data/shards/shard_writer.h"
