#include "serve/connection_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

namespace fusor::serve {
namespace {

// A connection that holds its thread until `release` opens, as an idle keep-alive one does.
struct Held {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::function<void()> connection(std::atomic<int>& served) {
    return [this, &served] {
      released.wait();
      ++served;
    };
  }
};

TEST(ConnectionThreads, StartsAThreadForEachConnectionThatFindsNoneIdle) {
  std::atomic<int> served{0}, after{0};
  Held held;
  {
    ConnectionThreads pool(64, [&] { ++after; });
    for (int i = 0; i < 40; ++i) pool.enqueue(held.connection(served));
    EXPECT_EQ(pool.threads(), 40u);  // a fixed pool of fewer would leave the rest waiting
    held.release.set_value();
    pool.shutdown();
  }
  EXPECT_EQ(served, 40);
  EXPECT_EQ(after, 40);
}

TEST(ConnectionThreads, ReusesIdleThreads) {
  std::atomic<int> served{0};
  ConnectionThreads pool(64, nullptr);
  for (int i = 0; i < 20; ++i) {
    pool.enqueue([&] { ++served; });
    while (served != i + 1 || pool.idle_threads() != pool.threads()) std::this_thread::yield();
  }
  EXPECT_EQ(pool.threads(), 1u);
  pool.shutdown();
}

TEST(ConnectionThreads, PastTheCapConnectionsWaitForAThreadAndAreAllServed) {
  std::atomic<int> served{0};
  Held held;
  ConnectionThreads pool(4, nullptr);
  for (int i = 0; i < 4; ++i) pool.enqueue(held.connection(served));
  std::promise<void> queued_ran;
  pool.enqueue([&] { queued_ran.set_value(); });
  EXPECT_EQ(pool.threads(), 4u);
  auto ran = queued_ran.get_future();
  EXPECT_EQ(ran.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  held.release.set_value();
  ran.wait();
  pool.shutdown();
  EXPECT_EQ(served, 4);
}

TEST(ConnectionThreads, ShutdownServesWhatIsQueuedThenJoins) {
  std::atomic<int> served{0};
  Held held;
  ConnectionThreads pool(2, nullptr);
  for (int i = 0; i < 6; ++i) pool.enqueue(held.connection(served));
  auto stopped = std::async(std::launch::async, [&] { pool.shutdown(); });
  held.release.set_value();
  stopped.wait();
  EXPECT_EQ(served, 6);
  pool.shutdown();  // again, as httplib's shutdown and then the destructor do
}

}  // namespace
}  // namespace fusor::serve
