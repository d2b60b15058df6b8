// The compute peak a training run's MFU is measured against (kernels/peak_probe.h): probed once per
// machine, rank count and precision, and cached, so that a run pays for the probe (about 0.1-0.2 s)
// only the first time.
//
// The cache is one JSON file, $CPUFT_PEAK_CACHE, else $XDG_CACHE_HOME/cpuft/peaks.json, else
// ~/.cache/cpuft/peaks.json, keyed by the threads that can run at once (the rank's threads, or the
// cores its affinity mask allows if fewer):
// {"<CPU model string>|<threads> threads|<unit kind>": {"gflops": G,
// "unit": "...", "measured": "2026-12-06T04:10:00Z"}}. A cache that cannot be read or written is
// ignored (the peak is measured again); it never fails a run.
//
// A peak probed while other processes had the cores (a build, another run) reads low, and every
// later run's MFU would read high from the cache. So a measurement is cached only when the probe's
// threads got at least $CPUFT_PEAK_MIN_SHARE (default 0.8) of the CPU time they could have had:
// the process's CPU seconds over wall seconds x its threads (or the cores its affinity allows, if
// fewer). Below that the run uses it, says so, and the next run measures again.
#pragma once

#include <string>

#include "kernels/peak_probe.h"

namespace cpuft {

struct MachinePeak {
  ComputePeak peak;
  bool cached = false;  // read from the cache file, not measured by this process
  std::string cache_path;
  // Measured now: probe_core_share of the probe (1: it had its cores), and whether that was under
  // the share a measurement needs to be cached.
  double core_share = 1;
  bool busy = false;
  bool saved = false;  // this call wrote the measurement into the cache
};

// How far above the cached peak a new probe must read to replace it (raise_machine_peak), and above
// a run's peak to be reported: a small margin, so that the cache does not follow every probe.
constexpr double kPeakRaiseMargin = 0.02;

// `bf16`: the run's products are bf16. `threads`: this rank's OpenMP threads.
MachinePeak machine_peak(bool bf16, int threads);

// Probes again and returns the higher of `current` and the new measurement; a probe whose threads
// did not get their cores counts for nothing. A measurement more than kPeakRaiseMargin above what
// the cache's entry holds now replaces it (`saved`): the cache keeps the highest peak probed here.
// On a shared host (a VM whose speed moves with its neighbours') a first probe taken in a slow
// moment reads low, and every later run's MFU would read high from it; training re-probes at the
// end of runs long enough for the probe to cost under 1% (training_loop.cc).
MachinePeak raise_machine_peak(bool bf16, int threads, const MachinePeak& current);

// The threads that can run at once: `threads`, or `cores` (the affinity mask's; <= 0: unknown) if
// fewer. The cache's key and the probe's yardstick.
int runnable_threads(int threads, int cores);

// The share of the CPU time a probe's `runnable` threads could have had that they got:
// cpu_seconds over wall_seconds x runnable, capped at 1 (other threads of the process count too).
// 1 when either time is not positive.
double probe_core_share(double cpu_seconds, double wall_seconds, int runnable);

// $CPUFT_PEAK_MIN_SHARE, or 0.8; an error names a value that is not a number from 0 to 1 (the
// trainer reads it before anything is written).
double peak_min_core_share();

}  // namespace cpuft
