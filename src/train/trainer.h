// Trainer: `cpuft train` — the run_glue.py + HF Trainer workflow, natively, on one or many ranks.
//
// Three phases, so that a failure on one rank can stop all of them:
//   Trainer(config)  starts the distribution (launcher detection, communicator, threads);
//   prepare()        reads and checks everything (config, tokenizer, data, weights) and checks that
//                    all ranks agree, before the output folder is touched;
//   run()            trains, evaluates and predicts as the flags ask; rank 0 writes the files.
#pragma once

#include <memory>

#include "train/train_config.h"

namespace cpuft {

class Trainer {
 public:
  explicit Trainer(const TrainConfig& config);
  ~Trainer();
  void prepare();
  void run();
  // After an error on this rank: ends every rank of the job (MPI_Abort) so none waits for a
  // collective this rank will never join. A no-op on a single process.
  void abort_peers(int exit_code);
  // Whether this rank prints an AgreedError (core/check.h): rank 0 only. Every rank raised it, and
  // the copies of several ranks, written at the same moment, came out interleaved mid-line under
  // Open MPI 5's mpirun.
  bool prints_agreed_errors() const;

  struct State;  // opaque: everything a run holds

 private:
  std::unique_ptr<State> s_;
};

}  // namespace cpuft
