// serve/listen_sockets.h: why a bind failed, said by a bind of our own (gRPC reports only that it
// bound nothing); and stop_reading_connections_on: the connections a listener accepted get
// end-of-file at once while their writing side stays open; other ports' connections are untouched.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "serve/listen_sockets.h"

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

TEST(ListenSockets, AcceptedConnectionsOnThePortReadEndOfFileAndCanStillWrite) {
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

TEST(ListenSockets, ABindFailureSaysWhy) {
  Fd taken(listener());
  const int port = bound_port(taken.fd);
  EXPECT_EQ(bind_failure("127.0.0.1", port), "cannot listen on 127.0.0.1:" + std::to_string(port) + " (is the port in use?)");
  // TEST-NET-1 (RFC 5737): an address no machine has.
  EXPECT_EQ(bind_failure("192.0.2.1", port), "cannot listen on 192.0.2.1:" + std::to_string(port) +
                                                 ": Cannot assign requested address");
  const std::string unresolved = bind_failure("no-such-host.invalid", port);
  EXPECT_EQ(unresolved.rfind("cannot listen on no-such-host.invalid:" + std::to_string(port) + ": ", 0), 0u) << unresolved;
  EXPECT_EQ(unresolved.find("in use"), std::string::npos) << unresolved;
}

}  // namespace
}  // namespace fusor::serve
