// Launcher detection: which program started this process, and what rank it gave it.
//
// One place reads the launchers' environment variables, so the classic multi-process traps are
// loud instead of silent:
//   - N processes that each think they are rank 0 of 1 ("N separate models"): the communicator
//     compares this LaunchInfo with what MPI itself sees (make_communicator) and refuses a
//     mismatch;
//   - a local rank derived from the global rank: never done; a launcher that gives no local rank
//     with world_size > 1 is refused;
//   - partial or contradictory variables (RANK without WORLD_SIZE, stale torchrun-style variables
//     that disagree with mpirun's): refused with the variable names.
//
// Launchers and their variables (innermost first: when several are present the first one listed
// wins, because an mpirun started inside a Slurm allocation leaves the allocation's SLURM_* values
// in every rank's environment):
//   openmpi   OMPI_COMM_WORLD_RANK/SIZE, OMPI_COMM_WORLD_LOCAL_RANK/LOCAL_SIZE   (mpirun, Open MPI)
//   hydra     PMI_RANK/PMI_SIZE, MPI_LOCALRANKID/MPI_LOCALNRANKS  (MPICH / Intel MPI mpiexec.hydra)
//   slurm     SLURM_PROCID/SLURM_NTASKS, SLURM_LOCALID, and SLURM_STEP_TASKS_PER_NODE,
//             SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE (+ SLURM_NODEID)            (srun)
//   torchrun  RANK/WORLD_SIZE, LOCAL_RANK/LOCAL_WORLD_SIZE, MASTER_ADDR/MASTER_PORT
// openmpi and hydra must agree with each other and with torchrun-style variables when those are
// also set; slurm values are only used when no MPI launcher variables are present.
#pragma once

#include <map>
#include <string>

namespace cpuft {

struct LaunchInfo {
  std::string launcher = "none";  // "openmpi", "hydra", "slurm", "torchrun", "none"
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;       // rank among the processes on this host
  int local_size = 1;       // processes on this host
  std::string master_addr;  // torchrun-style only ("" otherwise)
  int master_port = 0;      // torchrun-style only (0 otherwise)

  bool launched() const { return launcher != "none"; }
  // One line, e.g. "openmpi: rank 1 of 2, local rank 1 of 2".
  std::string describe() const;
};

// Pure: reads only `env`. Throws cpuft::Error (one line naming the variables) on partial or
// contradictory variables, a missing local rank when world_size > 1, or rank >= world_size.
LaunchInfo detect_launch(const std::map<std::string, std::string>& env);

// detect_launch over this process's environment (only the variables it reads are copied).
LaunchInfo detect_launch_from_process_env();

}  // namespace cpuft
