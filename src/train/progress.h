// Progress of a training run on stderr: a one-line bar redrawn in place on a terminal
// (step, loss, samples/s, tokens/s, MFU, ETA); nothing when stderr is not a terminal (log lines go
// to stdout).
#pragma once

#include <cstdint>
#include <string>

#include "core/timer.h"

namespace cpuft {

class Progress {
 public:
  Progress(int64_t total_steps, bool enabled) : total_(total_steps), enabled_(enabled) {}
  // mfu: this rank's model FLOP/s over its measured peak (a fraction); < 0: not shown.
  void update(int64_t step, double loss, double samples_per_second, double tokens_per_second,
              double mfu = -1);
  // Prints a line above the bar.
  void message(const std::string& text);
  void finish();

 private:
  int64_t total_;
  bool enabled_;
  bool drawn_ = false;
  Stopwatch watch_;
  std::string last_;
};

}  // namespace cpuft
