// One job per output folder, and nothing half-written left from an interrupted one (the
// reliability issue: two runs on one folder both exited 0 with one's results silently overwritten,
// and killed runs left .checkpoint-N.tmp folders behind).
//
// Each rank that writes into --output_dir (Trainer::State::is_saver: rank 0, or every host's local
// rank 0 with --save_on_each_node) holds an exclusive flock on <output_dir>/.cpuft.lock for the
// whole run. The kernel drops the lock when the process ends, however it ends, so a killed run
// never blocks the next one; the file says who holds it ("pid@host start-time") for the refusal.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "parallel/communicator.h"

namespace cpuft {

inline constexpr const char* kOutputLockName = ".cpuft.lock";

class OutputLock {
 public:
  OutputLock() = default;  // holds nothing (a rank that does not write)
  // Locks <dir>/.cpuft.lock (dir must exist) or throws Error: "--output_dir DIR is in use by pid
  // P on host H (since T); wait for it or choose another folder".
  explicit OutputLock(const std::filesystem::path& dir);
  ~OutputLock();
  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&& other) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

  bool held() const { return fd_ >= 0; }

 private:
  void release();

  int fd_ = -1;
  std::string path_;
};

// Removes what an interrupted run leaves in `dir`: .checkpoint-*.tmp folders (a checkpoint being
// written or deleted) and AtomicFile temporaries ("<name>.tmp-<pid>"). Returns their names, sorted.
// Only for the holder of the folder's lock: another run's temporaries are its work in progress.
std::vector<std::string> remove_stale_temporaries(const std::filesystem::path& dir);

struct ClaimedOutputFolder {
  OutputLock lock;
  std::string removed;  // what remove_stale_temporaries removed on this rank, ", "-separated
};

// Called by every rank at the start of a run, once the folder exists on the savers: a saver takes
// the lock, then removes the stale temporaries. A refusal on any saver stops every rank cleanly:
// the outcome goes through check_ranks_agree (as the start-up's facts do), so the ranks that were
// not refused end with an error naming it instead of waiting; the refused rank's error is the
// lock's line.
ClaimedOutputFolder claim_output_folder(Communicator& comm, const std::filesystem::path& dir,
                                        bool saver);

}  // namespace cpuft
