#include "serve/listen_sockets.h"

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fusor::serve {
namespace {

int port_of(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return -1;
}

std::vector<int> open_fds() {
  std::vector<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return fds;
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0') fds.push_back(static_cast<int>(fd));
  }
  ::closedir(dir);
  return fds;
}

bool is_connected_stream(int fd) {
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  int type = 0, listening = 0;
  socklen_t len = sizeof(type);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return false;
  len = sizeof(listening);
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening) return false;
  sockaddr_storage peer{};
  len = sizeof(peer);
  return ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0;
}

std::string place(const std::string& host, int port) {
  return "cannot listen on " + host + ":" + std::to_string(port);
}

// getaddrinfo for a listening socket on `host` (and `service`, a port, unless null); the caller
// frees `found`.
int passive_lookup(const std::string& host, const char* service, addrinfo** found) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  return ::getaddrinfo(host.c_str(), service, &hints, found);
}

}  // namespace

std::string listen_failure(const std::string& host, int port, int error) {
  const std::string where = place(host, port);
  if (error == EADDRINUSE) return where + " (is the port in use?)";
  if (error != 0) return where + ": " + std::strerror(error);
  addrinfo* found = nullptr;
  const int rc = passive_lookup(host, nullptr, &found);
  if (found) ::freeaddrinfo(found);
  return rc != 0 ? where + ": " + ::gai_strerror(rc) : where;
}

std::string bind_failure(const std::string& host, int port) {
  addrinfo* found = nullptr;
  if (const int rc = passive_lookup(host, std::to_string(port).c_str(), &found); rc != 0)
    return place(host, port) + ": " + ::gai_strerror(rc);
  int error = 0;
  for (const addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    error = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    ::close(fd);
    if (error == 0) break;
  }
  ::freeaddrinfo(found);
  // It binds now: whatever failed is not the address or the port.
  return error != 0 ? listen_failure(host, port, error) : place(host, port);
}

int bound_port(int socket) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (::getsockname(socket, reinterpret_cast<sockaddr*>(&a), &len) != 0) return -1;
  return port_of(a);
}

void stop_reading_connections_on(int port) {
  if (port <= 0) return;
  for (int fd : open_fds())
    if (is_connected_stream(fd) && bound_port(fd) == port) ::shutdown(fd, SHUT_RD);
}

}  // namespace fusor::serve
