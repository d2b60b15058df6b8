// Files that are either absent, their old content or the whole new one, never a part: every file
// cpuft writes into an output folder or a checkpoint goes through here (the reliability issue:
// a full disk left vocab.txt at 0 bytes). The bytes go to "<path>.tmp-<pid>" in the same folder,
// which is fsynced, renamed over `path`, and the folder fsynced so that the rename survives a
// power cut. Any failure (ENOSPC, EACCES, EIO, ...) is one Error naming the file and the OS reason,
// and the temporary file is removed, so the old file, if any, stays as it was.
//
// It sits in core because the tokenizers (data, which links only core) save files too.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cpuft {

// One file being written; commit() puts it in place. Destroyed without commit() (an exception on
// the way), it removes its temporary file and leaves `path` alone.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // fsync, close, rename over the target, fsync the folder.
  void commit();

  const std::string& temp_path() const { return temp_; }

 private:
  [[noreturn]] void fail(const char* what, int err);

  std::string path_, temp_;
  int fd_ = -1;
};

// The whole of `text` into `path`, atomically.
void write_file_atomically(const std::string& path, std::string_view text);

// fsync of a folder, so that entries created, renamed or removed in it are on disk. File systems
// that cannot sync a folder (EINVAL) are not an error; other failures are, naming the folder.
void fsync_folder(const std::string& dir);

// Whether a file name is one of AtomicFile's temporaries ("<name>.tmp-<digits>"): what a killed
// writer leaves behind, which the next run on the folder removes.
bool is_atomic_temp_name(std::string_view name);

// The OS reason of an errno value, as the one-line errors print it.
std::string os_reason(int err);

}  // namespace cpuft
