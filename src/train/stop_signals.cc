#include "train/stop_signals.h"

namespace cpuft {

namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void record_signal(int signal) {
  if (received == 0) received = signal;
}

}  // namespace

StopSignals::StopSignals() {
  received = 0;
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a blocking read or collective carries on
  for (int i = 0; i < 3; ++i) sigaction(kStopSignals[i], &action, &previous_[i]);
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 3; ++i) sigaction(kStopSignals[i], &previous_[i], nullptr);
}

int StopSignals::pending() {
  return received;
}

}  // namespace cpuft
