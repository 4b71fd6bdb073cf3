#include "serve/tcp_connections.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
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

}  // namespace

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
