#include "serve/stream_hub.h"

namespace fusor::serve {

StreamHub::Step::Step(StreamHub& hub) : hub_(hub) {
  std::lock_guard lock(hub_.mutex_);
  hub_.in_step_ = true;
}

StreamHub::Step::~Step() {
  bool news;
  {
    std::lock_guard lock(hub_.mutex_);
    hub_.in_step_ = false;
    news = hub_.news_;
    hub_.news_ = false;
  }
  if (news) hub_.changed_.notify_all();
}

bool StreamHub::changed_locked() {
  if (!in_step_) return true;
  news_ = true;
  return false;
}

}  // namespace fusor::serve
