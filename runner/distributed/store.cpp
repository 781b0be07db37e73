#include "runner/distributed/store.h"

#include "runner/distributed/world_info.h"
#include "runner/distributed/tcp_probe.h"
#include "runner/distributed/torch_compat.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <atomic>
#include <cstdlib>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>

namespace trainrun {

namespace {

// USE_LIBUV as torch.distributed reads it (rendezvous.py, elastic/utils/distributed.py:
// os.environ.get("USE_LIBUV", "1") == "1"): "1" asks for libuv, any other value for the classic
// server. Unset, torch asks for libuv and fails where its build has none (Debian 13's, and
// torchrun's own store with it: pytorch#148283); trainrun then takes the classic server instead.
enum class Libuv { unset, on, off };

Libuv libuv_asked() {
  const char* v = std::getenv("USE_LIBUV");
  if (!v) return Libuv::unset;
  return std::string(v) == "1" ? Libuv::on : Libuv::off;
}

// USE_LIBUV=1 where LibTorch has no libuv: said as it is, not as an unreachable rendezvous.
struct LibuvMissing : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Set once this process has found its LibTorch without libuv: every later store is classic.
std::atomic<bool> libuv_missing{false};

bool is_missing_libuv(const std::exception& e) {
  return std::string(e.what()).find("without libuv support") != std::string::npos;
}

// A TCPStore server or client with the server backend chosen as above. `Options` is
// c10d::TCPStoreOptions, a template parameter so that a LibTorch without useLibUV never compiles
// the branch that sets it. `server` gets which server it is, for the banner.
template <class Options>
c10::intrusive_ptr<c10d::Store> tcp_store(const std::string& host, Options o, std::string& server) {
  if constexpr (!compat::has_libuv_option<Options>::value) {
    server = "classic server, the only one this LibTorch has";
    return c10::make_intrusive<c10d::TCPStore>(host, o);
  } else {
    const Libuv asked = libuv_asked();
    o.useLibUV = asked == Libuv::on || (asked == Libuv::unset && !libuv_missing);
    if (o.useLibUV) {
      try {
        server = "libuv server";
        return c10::make_intrusive<c10d::TCPStore>(host, o);
      } catch (const std::exception& e) {
        if (!is_missing_libuv(e)) throw;
        if (asked == Libuv::on)
          throw LibuvMissing("USE_LIBUV=1 asks for the libuv TCPStore, and this LibTorch was built without "
                             "libuv (unset USE_LIBUV, or set USE_LIBUV=0, for the classic one)");
        libuv_missing = true;
      }
      o.useLibUV = false;
    }
    server = asked == Libuv::off ? "classic server: USE_LIBUV=" + std::string(std::getenv("USE_LIBUV"))
                                 : "classic server: this LibTorch was built without libuv";
    return c10::make_intrusive<c10d::TCPStore>(host, o);
  }
}

// A client's store. The handshake reads without a time limit: a program at that port that accepts
// but never answers as a store would hold this rank until it hangs up. So wait for the port (no
// back-off; tcp_probe.h), then connect on a thread of its own and give up at the deadline; the
// thread is left blocked in its read (the process is about to exit with this error).
c10::intrusive_ptr<c10d::Store> tcp_client(const std::string& host, const c10d::TCPStoreOptions& o,
                                           std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!wait_until_listening(host, o.port, timeout)) throw std::runtime_error("no connection accepted");
  auto connecting = std::make_shared<std::promise<c10::intrusive_ptr<c10d::Store>>>();
  auto connected = connecting->get_future();
  std::thread([connecting, host, o] {
    try {
      std::string server;  // the server's backend is its own choice, not the client's
      connecting->set_value(tcp_store(host, o, server));
    } catch (...) {
      connecting->set_exception(std::current_exception());
    }
  }).detach();
  if (connected.wait_until(deadline) != std::future_status::ready)
    throw std::runtime_error("something accepts connections there but does not answer as a c10d store");
  return connected.get();
}

}  // namespace

RendezvousStore make_rendezvous_store(const WorldInfo& world, std::chrono::milliseconds timeout) {
  if (world.init_method.rfind("file://", 0) == 0) {
    std::string path = world.init_method.substr(7);
    return {c10::make_intrusive<c10d::FileStore>(path, int(world.world_size)), "FileStore " + path};
  }
  const std::string where = world.master_addr + ":" + std::to_string(world.master_port);
  // torchrun's static rendezvous (its default): the agent already serves the store on
  // MASTER_PORT and every worker is a client, under a prefix per restart, as
  // torch.distributed.rendezvous._create_c10d_store does. Otherwise rank 0 serves it.
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  const bool agent_store = agent && std::string(agent) == "True";
  c10d::TCPStoreOptions o;
  o.port = uint16_t(world.master_port);
  o.isServer = world.rank == 0 && !agent_store;
  o.numWorkers = size_t(world.world_size);
  o.timeout = timeout;
  RendezvousStore made;
  std::string server;
  try {
    made.store = o.isServer ? tcp_store(world.master_addr, o, server)
                            : tcp_client(world.master_addr, o, timeout);
  } catch (const LibuvMissing&) {
    throw;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (msg.find("ddress already in use") != std::string::npos)
      throw std::runtime_error("world.master_port: " + where + " is already in use (pick another port)");
    throw std::runtime_error("cannot reach the rendezvous at " + where + " within " +
                             std::to_string(timeout.count() / 1000) + " s: " + msg.substr(0, msg.find('\n')));
  }
  if (agent_store) {
    const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
    made.store = c10::make_intrusive<c10d::PrefixStore>(
        "/worker/attempt_" + std::string(restart && *restart ? restart : "0"), made.store);
    server = "served by torchrun's agent";
  } else if (!o.isServer) {
    server = "served by rank 0";
  }
  made.description = "TCPStore " + where + " (" + server + ")";
  return made;
}

}  // namespace trainrun
