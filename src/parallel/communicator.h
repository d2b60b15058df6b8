// Communicator: the collectives data-parallel training needs, over MPI or within one process.
//
// Every operation is bounded in time: a peer that died or stalls turns into a cpuft::Error naming
// this rank, the operation and (for gradient buckets) the bucket and step, after
// timeout_seconds() (default 300 s; CPUFT_DIST_TIMEOUT_S overrides it) instead of a hang.
//
// Threading: all calls come from one thread (the trainer's main thread; MPI_THREAD_FUNNELED).
// Non-blocking all-reduces progress only inside test()/wait() calls (see grad_reducer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "parallel/launcher.h"

namespace cpuft {

// What an operation is for, printed if it stalls: "all-reduce of bucket 3 at step 120".
struct OpContext {
  int64_t bucket = -1;  // -1: not a gradient bucket
  int64_t step = -1;    // -1: unknown
};

class Communicator {
 public:
  // An outstanding non-blocking operation. Released by the test() that returns true or by wait();
  // using it afterwards is a bug (CPUFT_CHECK).
  struct Handle {
    int32_t slot = -1;
    uint32_t generation = 0;
  };

  virtual ~Communicator() = default;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  double timeout_seconds() const { return timeout_seconds_; }
  void set_timeout_seconds(double seconds);

  // In-place sum of data[0, n) over all ranks. Every rank must start the same all-reduces in the
  // same order (MPI's rule for non-blocking collectives; BucketPlan order guarantees it).
  virtual Handle all_reduce_sum_async(float* data, int64_t n, const OpContext& context = {}) = 0;
  // The same over bf16 values: each pairwise sum is computed in fp32 and rounded to bf16 (round to
  // nearest even), as NCCL and gloo sum bf16 tensors for PyTorch DDP's bf16 compression hook.
  virtual Handle all_reduce_sum_bf16_async(bf16* data, int64_t n,
                                           const OpContext& context = {}) = 0;
  // True when the operation has completed (then the handle is released). Drives progress.
  virtual bool test(Handle handle) = 0;
  // Blocks until completion or timeout_seconds() (then cpuft::Error).
  virtual void wait(Handle handle) = 0;
  // Blocking, with the same timeout: root's bytes to every rank.
  virtual void broadcast(void* bytes, int64_t size, int root) = 0;
  virtual void barrier() = 0;
  // Every rank's string, indexed by rank.
  virtual std::vector<std::string> all_gather_string(const std::string& value) = 0;
  virtual std::string name() const = 0;
  // Ends every process of the job now (after the caller printed its error): MPI_Abort for MPI.
  // Use it when one rank fails on its own, so that the others do not wait for the timeout.
  [[noreturn]] virtual void abort(int exit_code) = 0;

 protected:
  Communicator(int rank, int world_size);
  int rank_ = 0;
  int world_size_ = 1;
  double timeout_seconds_ = 300.0;
};

// world_size 1: all-reduce and broadcast are no-ops, all_gather_string returns {value}.
class SingleProcessCommunicator final : public Communicator {
 public:
  SingleProcessCommunicator();
  Handle all_reduce_sum_async(float* data, int64_t n, const OpContext& context = {}) override;
  Handle all_reduce_sum_bf16_async(bf16* data, int64_t n, const OpContext& context = {}) override;
  bool test(Handle handle) override;
  void wait(Handle handle) override;
  void broadcast(void* bytes, int64_t size, int root) override;
  void barrier() override {}
  std::vector<std::string> all_gather_string(const std::string& value) override;
  std::string name() const override { return "single"; }
  [[noreturn]] void abort(int exit_code) override;

 private:
  uint32_t generation_ = 0;
  bool outstanding_ = false;
};

// Default timeout: CPUFT_DIST_TIMEOUT_S if set (a positive number of seconds), else 300.
double default_dist_timeout_seconds();

// backend: "mpi", "single", "ccl" or "auto": mpi when an MPI launcher (Open MPI, Hydra, Slurm) was
// detected, ccl under torchrun-style variables (MASTER_ADDR/MASTER_PORT rendezvous, no MPI), single
// otherwise.
// Refuses (cpuft::Error, one line):
//   - "single" when the launcher started more than one process (each would train its own model);
//   - "mpi" when MPI's world differs from the launcher's (rank or size), e.g. srun without the
//     right --mpi plugin, or torchrun-style variables with no MPI launcher;
//   - "ccl" in a build without oneCCL (CPUFT_WITH_CCL=OFF or not fetched, docs/distributed.md),
//     or under torchrun-style variables without MASTER_ADDR/MASTER_PORT.
std::unique_ptr<Communicator> make_communicator(const std::string& backend,
                                                const LaunchInfo& launch);

// The MPI communicator alone (make_communicator("mpi", launch) without the backend choice).
// Initialises MPI once per process (MPI_THREAD_FUNNELED) and finalises it in the destructor
// unless an operation failed or an exception is unwinding (MPI_Finalize would wait for the
// lost peer). Only one may exist at a time.
std::unique_ptr<Communicator> make_mpi_communicator(const LaunchInfo& launch);

// True when this build has the oneCCL communicator.
bool ccl_available();

#ifdef CPUFT_HAVE_CCL
// The oneCCL communicator alone (ccl_communicator.cc; only in builds with oneCCL). Under an MPI
// launcher it uses MPI for the rendezvous and for abort(); under torchrun-style variables,
// MASTER_ADDR:MASTER_PORT.
std::unique_ptr<Communicator> make_ccl_communicator(const LaunchInfo& launch);
#endif

}  // namespace cpuft
