// The StreamHub that a served decoder's streams wait on: inside a scheduler step events only mark
// it, and the step's end wakes every stream that got news; outside a step an event wakes at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "serve/generation_stream.h"
#include "serve/stream_hub.h"

namespace fusor::serve {
namespace {

using std::chrono::milliseconds;

// A protocol thread: waits up to 10 s for the stream's next news and hands it over.
std::future<std::optional<GenerationStream::Update>> wait_for_news(std::shared_ptr<GenerationStream> stream) {
  return std::async(std::launch::async, [stream] { return stream->next(milliseconds(10000)); });
}

TEST(StreamHub, AStepsEventsWakeTheirStreamsWhenTheStepEnds) {
  auto hub = std::make_shared<StreamHub>();
  auto a = GenerationStream::create(hub), b = GenerationStream::create(hub);
  GenerationEvents ea = a->events(), eb = b->events();
  auto news_a = wait_for_news(a), news_b = wait_for_news(b);
  std::this_thread::sleep_for(milliseconds(100));  // both are waiting on the hub now
  {
    StreamHub::Step step(*hub);
    ea.on_token(5, "Hel", false);
    eb.on_token(6, "Wor", false);
    GenerationOutcome done;
    done.finish_reason = "length";
    eb.on_done(done);
    // Nothing is woken yet: a notify here would have ended the waits well within this time.
    EXPECT_EQ(news_a.wait_for(milliseconds(200)), std::future_status::timeout);
    EXPECT_EQ(news_b.wait_for(milliseconds(0)), std::future_status::timeout);
  }
  std::optional<GenerationStream::Update> ua = news_a.get(), ub = news_b.get();
  ASSERT_TRUE(ua && ub);
  EXPECT_EQ(ua->pieces, std::vector<std::string>{"Hel"});
  EXPECT_FALSE(ua->done);
  EXPECT_EQ(ub->pieces, std::vector<std::string>{"Wor"});
  ASSERT_TRUE(ub->done);
  EXPECT_EQ(ub->done->finish_reason, "length");
  EXPECT_TRUE(b->finished());
  EXPECT_FALSE(a->finished());
}

TEST(StreamHub, EventsOutsideAStepWakeAtOnce) {
  auto hub = std::make_shared<StreamHub>();
  auto a = GenerationStream::create(hub), idle = GenerationStream::create(hub);
  GenerationEvents ea = a->events();
  auto news = wait_for_news(a), none = wait_for_news(idle);
  std::this_thread::sleep_for(milliseconds(50));  // both are waiting on the hub now
  ea.on_token(7, "lo", false);  // e.g. a request refused inside submit(), no step open
  ASSERT_EQ(news.wait_for(milliseconds(5000)), std::future_status::ready);
  EXPECT_EQ(news.get()->pieces, std::vector<std::string>{"lo"});
  // The other stream of the hub was woken too, found nothing and waits on.
  EXPECT_EQ(none.wait_for(milliseconds(100)), std::future_status::timeout);
  idle->events().on_done(GenerationOutcome{});
  ASSERT_EQ(none.wait_for(milliseconds(5000)), std::future_status::ready);
  EXPECT_TRUE(none.get()->done.has_value());
}

TEST(StreamHub, AStepWithoutEventsWakesNobody) {
  auto hub = std::make_shared<StreamHub>();
  auto a = GenerationStream::create(hub);
  { StreamHub::Step step(*hub); }
  EXPECT_FALSE(a->next(milliseconds(50)).has_value());
}

}  // namespace
}  // namespace fusor::serve
