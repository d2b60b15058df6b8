#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/check.h"

namespace cpuft {

namespace {

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::string os_reason(int err) {
  return std::strerror(err);
}

AtomicFile::AtomicFile(std::string path)
    : path_(std::move(path)), temp_(str(path_, ".tmp-", ::getpid())) {
  // 0666 less the umask, as any other file the user creates.
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) throw Error(str(path_, ": cannot create ", temp_, ": ", os_reason(errno)));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void AtomicFile::fail(const char* what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  throw Error(str(path_, ": cannot ", what, ": ", os_reason(err)));
}

void AtomicFile::write(const void* data, size_t bytes) {
  CPUFT_CHECK(fd_ >= 0, path_, " written after commit");
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t done = ::write(fd_, p, bytes);
    if (done < 0) {
      if (errno == EINTR) continue;
      fail("write", errno);
    }
    p += done;
    bytes -= static_cast<size_t>(done);
  }
}

void AtomicFile::commit() {
  CPUFT_CHECK(fd_ >= 0, path_, " committed twice");
  // Data before name: a crash after the rename must not find the new name on unwritten blocks.
  if (::fsync(fd_) != 0) fail("fsync", errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp_.c_str());
    throw Error(str(path_, ": cannot close: ", os_reason(err)));
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_.c_str());
    throw Error(str(path_, ": cannot rename ", temp_, " into place: ", os_reason(err)));
  }
  fsync_folder(folder_of(path_));
}

void write_file_atomically(const std::string& path, std::string_view text) {
  AtomicFile file(path);
  file.write(text);
  file.commit();
}

void fsync_folder(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw Error(str(dir, ": cannot open the folder to sync it: ", os_reason(errno)));
  const int result = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (result != 0 && err != EINVAL)
    throw Error(str(dir, ": cannot sync the folder: ", os_reason(err)));
}

bool is_atomic_temp_name(std::string_view name) {
  const size_t at = name.rfind(".tmp-");
  if (at == std::string_view::npos || at == 0) return false;
  const std::string_view pid = name.substr(at + 5);
  return !pid.empty() && pid.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace cpuft
