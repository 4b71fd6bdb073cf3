// Progress of long work on stderr: on a terminal, one live line with a bar, the step and the
// elapsed time; elsewhere (logs, CI), only the milestone lines, so logs stay readable.
#pragma once
#include <chrono>
#include <string>

namespace fusor::tune {

class Progress {
 public:
  Progress();  // live when stderr is a terminal
  // Fraction done (0..1) and what is happening now; redraws the live line.
  void update(double fraction, const std::string& status);
  // A line worth keeping (a result): printed above the live line, or alone in a log.
  void note(const std::string& line);
  void finish();  // ends the live line

 private:
  void draw();
  bool live_;
  double fraction_ = 0;
  std::string status_;
  std::chrono::steady_clock::time_point start_, drawn_;
  bool shown_ = false;
};

}  // namespace fusor::tune
