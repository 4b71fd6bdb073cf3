#include "fusor/tune.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace fusor::tune {

Progress::Progress() : live_(isatty(STDERR_FILENO)), start_(std::chrono::steady_clock::now()) {}

void Progress::update(double fraction, const std::string& status) {
  fraction_ = std::clamp(fraction, 0.0, 1.0);
  status_ = status;
  if (live_) draw();
}

void Progress::note(const std::string& line) {
  if (live_ && shown_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s\n", line.c_str());
  if (live_ && shown_) draw();
}

void Progress::draw() {
  constexpr int kWidth = 28;
  int filled = static_cast<int>(fraction_ * kWidth + 0.5);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::string status = status_.size() > 70 ? status_.substr(0, 67) + "..." : status_;
  std::fprintf(stderr, "\r\033[K[%s] %3.0f%% %5.0fs  %s", bar.c_str(), fraction_ * 100, elapsed, status.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void Progress::finish() {
  if (live_ && shown_) std::fprintf(stderr, "\r\033[K");
  shown_ = false;
}

}  // namespace fusor::tune
