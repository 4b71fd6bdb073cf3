// The listeners' sockets: why one could not listen, the port one is bound to, and the
// connections it accepted.
#pragma once
#include <string>

namespace fusor::serve {

// Why listening on `host`:`port` failed, from the errno that bind or listen left: a port in use
// ("(is the port in use?)"), or an address not of this machine, each said as such; errno 0 means
// the name did not resolve.
std::string listen_failure(const std::string& host, int port, int error);

// The same for a listener that only reports that it bound nothing (gRPC's): a bind of our own on
// `host`:`port` finds the reason.
std::string bind_failure(const std::string& host, int port);

// The local port of a bound socket; -1 when it has none.
int bound_port(int socket);

// Shuts the reading side of every connected TCP socket of this process whose local port is
// `port`: a thread waiting for the next request on one sees end-of-file and closes it, while a
// response being written is unaffected. Reads /proc/self/fd (Linux).
//
// Why: cpp-httplib's connection threads wait out the keep-alive timeout (30 s here) on an idle
// connection before they look at the server's stop flag, so a stopping server whose clients keep
// their connections open (every Triton client, every Prometheus scraper) took 30 s to exit, past
// Kubernetes' default grace period. httplib does not hand out the sockets it accepted.
void stop_reading_connections_on(int port);

}  // namespace fusor::serve
