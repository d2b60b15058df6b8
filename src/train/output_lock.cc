#include "train/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <thread>
#include <utility>

#include "core/atomic_file.h"
#include "core/check.h"
#include "core/timer.h"
#include "train/distributed.h"

namespace fs = std::filesystem;

namespace cpuft {

namespace {

std::string read_holder(int fd) {
  char text[512];
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string holder = n > 0 ? std::string(text, static_cast<size_t>(n)) : std::string();
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
  return holder;
}

// "--output_dir D is in use by pid P on host H (since T); ..." from the file's "P@H T".
std::string refusal(const fs::path& dir, const std::string& holder) {
  const size_t at = holder.find('@'), space = holder.find(' ');
  std::string who = "another process";
  if (at != std::string::npos && space != std::string::npos && at < space)
    who = str("pid ", holder.substr(0, at), " on host ", holder.substr(at + 1, space - at - 1),
              " (since ", holder.substr(space + 1), ")");
  else if (!holder.empty())
    who += str(" (", holder, ")");
  return str("--output_dir ", dir.string(), " is in use by ", who,
             "; wait for it or choose another folder");
}

std::string now_utc() {
  return utc_now("%Y-%m-%d %H:%M:%S UTC");
}

bool same_file(int fd, const std::string& path) {
  struct stat open_one {
  }, named{};
  return ::fstat(fd, &open_one) == 0 && ::stat(path.c_str(), &named) == 0 &&
         open_one.st_dev == named.st_dev && open_one.st_ino == named.st_ino;
}

}  // namespace

OutputLock::OutputLock(const fs::path& dir) : path_((dir / kOutputLockName).string()) {
  // The holder unlinks the file when it ends cleanly; a process that opened it just before then
  // locks a file no longer in the folder, sees it and starts again on the new one.
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) throw Error(str(path_, ": cannot create the lock: ", os_reason(errno)));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err != EWOULDBLOCK) {
        ::close(fd);
        throw Error(str(path_, ": cannot lock: ", os_reason(err)));
      }
      // The holder writes its name just after locking: give it a moment.
      std::string holder = read_holder(fd);
      for (int i = 0; i < 20 && holder.empty(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        holder = read_holder(fd);
      }
      ::close(fd);
      throw Error(refusal(dir, holder));
    }
    if (same_file(fd, path_)) {
      fd_ = fd;
      break;
    }
    ::close(fd);
    CPUFT_REQUIRE(attempt < 100, path_, ": cannot lock: the file is replaced again and again");
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string holder = str(::getpid(), "@", host, " ", now_utc(), "\n");
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
    const int err = errno;
    release();
    throw Error(str(path_, ": cannot write the lock: ", os_reason(err)));
  }
}

OutputLock::~OutputLock() {
  release();
}

OutputLock::OutputLock(OutputLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

void OutputLock::release() {
  if (fd_ < 0) return;
  // Unlinked while still locked, so that nobody locks it in between; the folder ends as HF's.
  if (same_file(fd_, path_)) ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

std::vector<std::string> remove_stale_temporaries(const fs::path& dir) {
  std::vector<fs::path> stale;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    std::error_code ignored;  // an entry that vanished meanwhile is no debris
    if ((name.starts_with(".checkpoint-") && name.ends_with(".tmp") &&
         entry.is_directory(ignored)) ||
        (is_atomic_temp_name(name) && entry.is_regular_file(ignored)))
      stale.push_back(entry.path());
  }
  CPUFT_REQUIRE(!error, dir.string(), ": cannot list: ", error.message());
  std::sort(stale.begin(), stale.end());
  std::vector<std::string> removed;
  for (const fs::path& path : stale) {
    fs::remove_all(path, error);
    CPUFT_REQUIRE(!error, path.string(),
                  ": cannot remove what an interrupted run left: ", error.message());
    removed.push_back(path.filename().string());
  }
  return removed;
}

ClaimedOutputFolder claim_output_folder(Communicator& comm, const fs::path& dir, bool saver) {
  ClaimedOutputFolder claimed;
  std::string refused;
  if (saver) {
    try {
      claimed.lock = OutputLock(dir);
      for (const std::string& name : remove_stale_temporaries(dir))
        claimed.removed += (claimed.removed.empty() ? "" : ", ") + name;
    } catch (const Error& e) {
      refused = e.what();
    }
  }
  try {
    check_ranks_agree(comm, {{"--output_dir claim", refused.empty() ? "ok" : refused}});
  } catch (const AgreedError&) {
    if (refused.empty()) throw;  // "ranks disagree: rank 0 has --output_dir claim=<its line> ..."
  }
  // Every rank gets here with the same gathered claims and stops: rank 0 with its refusal (the
  // line it prints), the others above with the line naming it.
  if (!refused.empty()) throw AgreedError(refused);
  return claimed;
}

}  // namespace cpuft
