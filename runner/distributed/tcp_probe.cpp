#include "runner/distributed/tcp_probe.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <fcntl.h>
#include <thread>

namespace trainrun {

namespace {

using Clock = std::chrono::steady_clock;

// One non-blocking connect to `a`, waiting at most `budget`; true when it was accepted.
bool try_connect(const addrinfo& a, std::chrono::milliseconds budget) {
  int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a.ai_protocol);
  if (fd < 0) return false;
  bool ok = ::connect(fd, a.ai_addr, a.ai_addrlen) == 0;
  if (!ok && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    ok = ::poll(&p, 1, int(budget.count())) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
         err == 0;
  }
  ::close(fd);
  return ok;
}

}  // namespace

bool wait_until_listening(const std::string& host, int port, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res)
    return true;  // the caller's own connection names the resolution error
  bool accepted = false;
  while (!accepted) {
    for (addrinfo* a = res; a && !accepted; a = a->ai_next) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      accepted = try_connect(*a, std::max(left, std::chrono::milliseconds(1)));
    }
    if (accepted || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::freeaddrinfo(res);
  return accepted;
}

}  // namespace trainrun
