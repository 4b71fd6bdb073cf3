// Where the protocol threads that stream one generative model's answers wait for news.
//
// A decode step gives every running stream a token at once. With a condition variable per stream,
// the scheduler's thread notified the streams one by one, and each notify tended to switch to the
// woken HTTP thread before the next token was even chosen: ~0.5 ms between two ~4.4 ms steps at
// 16 streams on a 2-vCPU VM. The streams of one hub share one mutex and one condition variable
// instead; while the scheduler holds a Step open their events only mark the hub, and the Step's
// end wakes every waiter with one notify_all once the step's tokens are all chosen. (What the
// woken threads then do, format and write each event, still runs between the steps.)
//
//   auto hub = std::make_shared<StreamHub>();
//   auto stream = GenerationStream::create(hub);   // its events and next() go through the hub
//   { StreamHub::Step step(*hub); ...on_token / on_done calls... }  // one wake-up here
//
// Outside a Step an event wakes the waiters at once, as a stream of its own would.
#pragma once
#include <condition_variable>
#include <mutex>

namespace fusor::serve {

class StreamHub {
 public:
  StreamHub() = default;
  StreamHub(const StreamHub&) = delete;
  StreamHub& operator=(const StreamHub&) = delete;

  class Step {
   public:
    explicit Step(StreamHub& hub);
    ~Step();  // wakes the waiters when an event came during the step
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

   private:
    StreamHub& hub_;
  };

  // The lock that guards every stream of this hub, and the waiters' condition.
  std::mutex& mutex() { return mutex_; }
  std::condition_variable& changed() { return changed_; }
  // After an event's change, with mutex() held: true when the caller should notify now (no Step
  // is open); otherwise the Step's end will.
  bool changed_locked();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool in_step_ = false;
  bool news_ = false;  // an event came during the open Step
};

}  // namespace fusor::serve
