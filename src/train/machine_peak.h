// The compute peak a training run's MFU is measured against (kernels/peak_probe.h): probed once per
// machine, rank count and precision, and cached, so that a run pays for the probe (about 0.1-0.2 s)
// only the first time.
//
// The cache is one JSON file, $CPUFT_PEAK_CACHE, else $XDG_CACHE_HOME/cpuft/peaks.json, else
// ~/.cache/cpuft/peaks.json: {"<CPU model string>|<threads> threads|<unit kind>": {"gflops": G,
// "unit": "...", "measured": "2026-12-06T04:10:00Z"}}. A cache that cannot be read or written is
// ignored (the peak is measured again); it never fails a run.
#pragma once

#include <string>

#include "kernels/peak_probe.h"

namespace cpuft {

struct MachinePeak {
  ComputePeak peak;
  bool cached = false;  // read from the cache file, not measured by this process
  std::string cache_path;
};

// `bf16`: the run's products are bf16. `threads`: this rank's OpenMP threads.
MachinePeak machine_peak(bool bf16, int threads);

}  // namespace cpuft
