// Waiting for a TCP server to listen, without the TCPStore client's back-off: c10d's client
// sleeps a whole second after a refused connection, so a rank that starts a few milliseconds
// before rank 0's store listens would lose a second at every start.
#pragma once

#include <chrono>
#include <string>

namespace trainrun {

// Connects to host:port every 10 ms until a connection is accepted (then closes it: the server
// sees a client come and go) or `timeout` passes. False only on timeout; true once accepted, and
// at once when the address does not resolve (the caller's own connection then names the error).
bool wait_until_listening(const std::string& host, int port, std::chrono::milliseconds timeout);

}  // namespace trainrun
