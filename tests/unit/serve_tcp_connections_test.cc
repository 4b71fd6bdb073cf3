// stop_reading_connections_on (serve/tcp_connections.h): the connections a listener accepted get
// end-of-file at once while their writing side stays open; other ports' connections are untouched.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve/tcp_connections.h"

namespace fusor::serve {
namespace {

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

int listener() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, 4) != 0) ADD_FAILURE() << "listen";
  return fd;
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) ADD_FAILURE() << "connect";
  return fd;
}

bool readable_now(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

TEST(TcpConnections, AcceptedConnectionsOnThePortReadEndOfFileAndCanStillWrite) {
  Fd ours(listener()), other(listener());
  const int port = bound_port(ours.fd), other_port = bound_port(other.fd);
  ASSERT_GT(port, 0);
  ASSERT_NE(port, other_port);
  Fd client(connect_to(port)), other_client(connect_to(other_port));
  Fd served(::accept(ours.fd, nullptr, nullptr)), other_served(::accept(other.fd, nullptr, nullptr));
  ASSERT_FALSE(readable_now(served.fd));

  stop_reading_connections_on(port);

  ASSERT_TRUE(readable_now(served.fd));  // what an idle keep-alive wait sees
  char byte = 0;
  EXPECT_EQ(::recv(served.fd, &byte, 1, 0), 0);
  EXPECT_EQ(::send(served.fd, "r", 1, MSG_NOSIGNAL), 1);  // a response being written goes out
  EXPECT_EQ(::recv(client.fd, &byte, 1, 0), 1);
  EXPECT_EQ(byte, 'r');
  EXPECT_FALSE(readable_now(other_served.fd));  // another port's connection: untouched
  EXPECT_FALSE(readable_now(ours.fd));          // the listener itself: untouched
  EXPECT_FALSE(readable_now(client.fd));        // and the client side of ours
}

}  // namespace
}  // namespace fusor::serve
