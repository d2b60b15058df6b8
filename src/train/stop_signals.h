// SIGTERM, SIGINT and SIGUSR1 during training (a Slurm time limit, Ctrl-C, `srun --signal=USR1`):
// the handler only records the signal; the training loop finishes the step it is in, saves a
// checkpoint and stops (training_loop.cc). Outside the loop the signals keep their usual effect.
#pragma once

#include <csignal>

#include "core/check.h"

namespace cpuft {

// The signals that stop training, in the order ranks agree on one when several arrived.
inline constexpr int kStopSignals[3] = {SIGTERM, SIGINT, SIGUSR1};

// Installs the handlers for its lifetime, restoring the previous ones after.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The signal received since installation (the first one), or 0.
  static int pending();

 private:
  struct sigaction previous_[3];
};

// Thrown after a signal stopped training with a checkpoint saved: the app prints what() and exits
// 128 + signal, as a process killed by that signal reports.
class TrainingStopped : public Error {
 public:
  TrainingStopped(const std::string& message, int signal) : Error(message), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

}  // namespace cpuft
