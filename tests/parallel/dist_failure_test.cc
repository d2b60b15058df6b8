// Failure paths, each driven by expect_failure.sh (exit status, time limit, message):
//   sigkill   2 ranks all-reduce step after step; at step 3 rank 1 kills itself with SIGKILL.
//             Rank 0 must not hang: mpirun ends the job and names the lost rank (and if it did
//             not, rank 0's own timeout, 10 s here, would).
//   stall     rank 1 stops before the all-reduce of bucket 0 at step 7 (sleeps); rank 0 must
//             report "rank 0: all-reduce of bucket 0 at step 7 did not complete within 3 s; a peer
//             may have died" and end the job (Communicator::abort).
// A second argument chooses the backend (auto, mpi or ccl; default auto).
//   mismatch  run WITHOUT mpirun but with Slurm variables saying 2 tasks: MPI sees a singleton,
//             which must be refused (the "N separate models" trap).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "core/check.h"
#include "parallel/bucket_plan.h"
#include "parallel/communicator.h"
#include "parallel/grad_reducer.h"
#include "parallel/launcher.h"

namespace {

void run_steps(cpuft::Communicator& comm, const char* mode) {
  // 4 layers of 256k floats (1 MB), one per bucket: plan order 3, 2, 1, 0.
  constexpr int64_t kLayer = 256 * 1024;
  std::vector<cpuft::LayerRange> ranges;
  for (int l = 3; l >= 0; --l) ranges.push_back({l, l * kLayer, (l + 1) * kLayer});
  const cpuft::BucketPlan plan(ranges, 1, 1);
  std::vector<float> grads(4 * kLayer, 1.0f);
  cpuft::GradReducer reducer(comm, plan, grads.data(), static_cast<int64_t>(grads.size()));
  const bool sigkill = std::strcmp(mode, "sigkill") == 0;
  for (int64_t step = 0; step < 1000; ++step) {
    reducer.begin_step(step);
    for (int l = 3; l >= 0; --l) {
      if (comm.rank() == 1 && sigkill && step == 3 && l == 1) {
        std::fprintf(stderr, "rank 1: killing myself with SIGKILL at step 3\n");
        raise(SIGKILL);
      }
      if (comm.rank() == 1 && !sigkill && step == 7 && l == 3) {
        std::fprintf(stderr, "rank 1: stalling before bucket 0 of step 7\n");
        std::this_thread::sleep_for(std::chrono::seconds(60));
      }
      reducer.layer_ready(l);
    }
    reducer.finish();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const char* backend = argc > 2 ? argv[2] : "auto";
  std::unique_ptr<cpuft::Communicator> comm;
  try {
    const cpuft::LaunchInfo launch = cpuft::detect_launch_from_process_env();
    comm = cpuft::make_communicator(backend, launch);
    if (std::strcmp(mode, "stall") == 0) {
      comm->set_timeout_seconds(3);
    } else if (std::strcmp(mode, "sigkill") == 0) {
      comm->set_timeout_seconds(10);
    } else if (std::strcmp(mode, "mismatch") == 0) {
      std::fprintf(stderr, "mismatch: the communicator was accepted (%s)\n",
                   launch.describe().c_str());
      return 0;
    } else {
      std::fprintf(stderr, "usage: dist_failure_test sigkill|stall|mismatch [BACKEND]\n");
      return 2;
    }
    run_steps(*comm, mode);
    std::fprintf(stderr, "rank %d: finished without noticing the failure\n", comm->rank());
    return 0;
  } catch (const cpuft::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    std::fflush(stderr);
    if (comm) comm->abort(1);  // the peers may be waiting in a collective: end the job now
    return 1;
  }
}
