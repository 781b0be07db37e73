#include "runner/distributed/rendezvous.h"

#include "runner/distributed/process_group.h"
#include "runner/distributed/store.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

namespace trainrun {

namespace {

// The local address this host uses to reach `host` (what gloo should bind to): connecting a UDP
// socket sends nothing but makes the kernel pick the route. Falls back to the hostname.
std::string local_address_towards(const std::string& host) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  std::string found;
  if (::getaddrinfo(host.c_str(), "9", &hints, &res) == 0 && res) {
    int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in local{};
    socklen_t len = sizeof local;
    char text[INET_ADDRSTRLEN] = {0};
    if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text))
      found = text;
    if (fd >= 0) ::close(fd);
    ::freeaddrinfo(res);
  }
  if (!found.empty()) return found;
  char name[256] = {0};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// Where gloo binds: GLOO_SOCKET_IFNAME's interface, else loopback for a local master, else the
// address that routes to the master.
GlooDevice gloo_device(const std::string& master_addr) {
  GlooDevice gloo;
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname && *ifname)
    gloo.interface = ifname;
  else if (master_addr == "127.0.0.1" || master_addr == "localhost")
    gloo.hostname = "127.0.0.1";
  else
    gloo.hostname = local_address_towards(master_addr);
  return gloo;
}

}  // namespace

JoinedWorld join_world(const WorldInfo& world, const std::string& backend, std::chrono::milliseconds timeout) {
  auto store = make_rendezvous_store(world, timeout);
  GlooDevice gloo = backend != "nccl" ? gloo_device(world.master_addr) : GlooDevice{};
  return {store.description,
          make_process_group(store.store, int(world.rank), int(world.world_size), backend, timeout, gloo)};
}

}  // namespace trainrun
