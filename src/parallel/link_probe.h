// LinkProbe: what one all-reduce between the ranks of this job costs, measured at the start of a
// run, so that the run can say what the gradient exchange will cost before it costs it.
//
// Measured, not modelled: a run's all-reduces go through the same communicator, launcher, transport
// and links as this probe, whatever the topology (ranks sharing a host, a ring over a NIC, oneCCL's
// own algorithms). Two points are measured: a small all-reduce (the fixed cost of one collective:
// latency, the algorithm's rounds, a worker thread waking up) and one of the largest bucket's size
// (what the exchange sends most of). An all-reduce of b bytes is then taken to cost the large one's
// time per byte, b x large_seconds / large_bytes (the algorithm bandwidth at that size, its fixed
// part included), and never less than the small one. Not affine through the two points: with
// oneCCL on a busy host the small all-reduce measured slower than one of 4 MB (4.0 ms against
// 2.1 ms), which gives an affine cost no slope. Each point is the median of `reps` timed
// all-reduces after one untimed one (Open MPI opens its TCP connections on the first).
#pragma once

#include <cstdint>

#include "parallel/communicator.h"

namespace cpuft {

struct LinkProbe {
  int world_size = 1;
  bool bf16 = false;  // probed through all_reduce_sum_bf16_async (2 bytes a value), else fp32
  int64_t small_bytes = 0, large_bytes = 0;
  double small_seconds = 0, large_seconds = 0;

  // The cost of one all-reduce of `bytes`: max(small_seconds, bytes / bytes_per_second()); 0 on
  // one rank.
  double seconds(double bytes) const;
  // The algorithm bandwidth of the large all-reduce: large_bytes / large_seconds (0 on one rank).
  double bytes_per_second() const;
};

// Collective: every rank must call it with the same arguments. `large_values` is the number of
// values of the large all-reduce (at least 2 x the small one's 1024; fp32 or, with bf16, bf16
// values). Allocates its buffers (call it outside the training step). On one rank: no
// communication, every cost 0.
LinkProbe probe_link(Communicator& comm, int64_t large_values, bool bf16, int reps = 3);

}  // namespace cpuft
