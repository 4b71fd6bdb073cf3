// HttpServer's start and stop: a listener stopped right after it started must stop (httplib's
// stop() acts only on a running accept loop; one stopped before its thread got there accepted
// forever, and the join in stop() hung: a server whose metrics port was taken never exited).
#include <gtest/gtest.h>

#include "serve/http_server.h"

namespace fusor::serve {
namespace {

TEST(HttpServer, StopRightAfterStartReturns) {
  Models models({});
  for (int i = 0; i < 50; ++i) {
    HttpServer server(HttpServer::Kind::Metrics, models, 1 << 20);
    server.start("127.0.0.1", 0);  // an ephemeral port
    server.stop();                 // hung, most times, before start() waited for the loop
  }
}

}  // namespace
}  // namespace fusor::serve
