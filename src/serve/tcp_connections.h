// The TCP connections a listener accepted, found among the process's open sockets.
//
// Why: cpp-httplib's connection threads wait out the keep-alive timeout (30 s here) on an idle
// connection before they look at the server's stop flag, so a stopping server whose clients keep
// their connections open (every Triton client, every Prometheus scraper) took 30 s to exit, past
// Kubernetes' default grace period. httplib does not hand out the sockets it accepted.
#pragma once

namespace fusor::serve {

// The local port of a bound socket; -1 when it has none.
int bound_port(int socket);

// Shuts the reading side of every connected TCP socket of this process whose local port is
// `port`: a thread waiting for the next request on one sees end-of-file and closes it, while a
// response being written is unaffected. Reads /proc/self/fd (Linux).
void stop_reading_connections_on(int port);

}  // namespace fusor::serve
