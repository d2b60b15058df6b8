// Start-up of a data-parallel run: who am I (launcher detection), which cores are mine (threads and
// pinning), do all ranks agree (parameter table, config, data, version), and the small collectives
// the trainer needs beyond gradient buckets (broadcast of the initial weights, gathering results).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "parallel/communicator.h"
#include "parallel/launcher.h"

namespace cpuft {

// The cores this process may run on (its affinity mask), ascending; empty when it cannot be read.
std::vector<int> affinity_cores();

// oneCCL's worker thread spins while a collective is in flight, on a core the rank also computes on
// when `threads` compute threads fill its `cores` cores, and the whole OpenMP team then waits for
// that core: sets CCL_WORKER_OFFLOAD=0 (no worker; the trainer's polls drive the collectives, as
// with MPI) in that case, unless the user set it. docs/scaling.md has the measurement.
void default_ccl_worker_offload(int threads, size_t cores);

struct DistContext {
  LaunchInfo launch;
  std::unique_ptr<Communicator> comm;
  int threads = 1;
  std::string binding;  // "cores 0-1 (2 threads)"
  int rank() const { return comm->rank(); }
  int world_size() const { return comm->world_size(); }
};

// Detects the launcher, creates the communicator ("auto", "mpi", "ccl" or "single"), and sets this
// rank's OpenMP thread count and core binding from the cores it owns: the process's affinity mask
// when the launcher bound it, else this host's cores split evenly by local rank. An explicit
// OMP_NUM_THREADS that would oversubscribe the host is refused unless
// CPUFT_ALLOW_OVERSUBSCRIPTION=1.
DistContext start_distributed(const std::string& backend, double timeout_seconds);

// One line per rank (gathered on every rank): "rank 1: openmpi: rank 1 of 2, local rank 0 of 1;
// cores 0-1 (2 threads); backend mpi; host h2 pid 4242". The pid maps a launcher's "process 4242
// was killed" (MPICH's Hydra names processes by pid) to a rank.
std::vector<std::string> describe_ranks(DistContext& dist);

// Every rank passes the same list of (name, value) facts; a difference is an AgreedError (every
// rank throws it) naming the fact and the ranks that disagree with rank 0.
void check_ranks_agree(Communicator& comm,
                       const std::vector<std::pair<std::string, std::string>>& facts);

// After a part of the set-up that holds no collective (reading and checking the inputs): every
// rank passes its error ("" when it had none). If any rank failed, every rank throws the same
// AgreedError: the error itself when every rank failed alike (a missing file on a shared disk),
// else the lowest failing rank's error, naming that rank and how many others failed. The job then
// ends with one line (rank 0 prints AgreedErrors) and no MPI_Abort banner. On one process: throws
// AgreedError(failure) when failure is not empty. Collective.
void agree_on_failure(Communicator& comm, const std::string& failure);

// FNV-1a 64 of a byte range, as a hex string: a cheap fingerprint for check_ranks_agree.
std::string fingerprint(const void* data, size_t bytes);

// The same kind of fingerprint of a large float buffer (the model's weights), read 8 bytes at a
// time in parallel chunks: a few milliseconds per 100M floats instead of a second. Bit-exact: any
// flipped bit changes it (with FNV's odds).
std::string fingerprint_floats(const float* data, size_t count);

// Rank r holds rows [r::world] of a (rows_total, K) table (as evaluation assigns them, without
// padding repeats); returns the whole table on every rank, in the original order.
std::vector<float> gather_strided_rows(Communicator& comm, const std::vector<float>& local,
                                       int64_t rows_total, int64_t K);

}  // namespace cpuft
