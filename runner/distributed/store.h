// The rendezvous store the ranks meet at, made as torch.distributed.rendezvous makes it for
// init_method env:// and file://: c10d's TCPStore at MASTER_ADDR:MASTER_PORT (served by rank 0, or
// by torchrun's agent), or a FileStore.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace c10d {
class Store;
}  // namespace c10d

namespace trainrun {

struct WorldInfo;

struct RendezvousStore {
  c10::intrusive_ptr<c10d::Store> store;
  // For the banner: "TCPStore 127.0.0.1:29500 (libuv server)", "... (classic server: this
  // LibTorch was built without libuv)", "FileStore /shared/path".
  std::string description;
};

// The store of `world`: a FileStore for init_method file://PATH; otherwise a TCPStore that rank 0
// serves, or torchrun's agent when TORCHELASTIC_USE_AGENT_STORE=True (then every rank is a client,
// under the prefix of this restart, as rendezvous._create_c10d_store does). A client waits for the
// server until `timeout`. The TCPStore server is libuv's where LibTorch has it (torch's default
// since 2.4), the classic one where it does not; USE_LIBUV=0 asks for the classic one and
// USE_LIBUV=1 for libuv, as torch.distributed reads the variable. Throws std::runtime_error with
// one line: "world.master_port: ... is already in use", "cannot reach the rendezvous at ..." or
// "USE_LIBUV=1 asks for the libuv TCPStore, and this LibTorch was built without libuv ...".
RendezvousStore make_rendezvous_store(const WorldInfo& world, std::chrono::milliseconds timeout);

}  // namespace trainrun
