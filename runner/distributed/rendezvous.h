// Joining the world: the ranks meet at the rendezvous store (store.h: TCPStore at the master or a
// FileStore), then build the process group over it, gloo bound to the interface that reaches the
// master.
#pragma once

#include "runner/distributed/world_info.h"

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <string>

namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace trainrun {

struct JoinedWorld {
  std::string rendezvous;  // where the ranks met, e.g. "TCPStore 127.0.0.1:29500 (libuv server)"
  c10::intrusive_ptr<c10d::ProcessGroup> group;
};

JoinedWorld join_world(const WorldInfo& world, const std::string& backend, std::chrono::milliseconds timeout);

}  // namespace trainrun
