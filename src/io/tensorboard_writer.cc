#include "io/tensorboard_writer.h"

#include <fcntl.h>
#include <isa-l/crc.h>
#include <tensorboard_event.pb.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/check.h"

namespace cpuft {
namespace {

namespace tb = ::cpuft::tensorboard;

// SummaryWriter numbers its event files within a process from 0.
std::atomic<int64_t> next_file_number{0};

void append_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == 0) return "localhost";
  return name;
}

double unix_time_now() {
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(since_epoch).count();
}

uint32_t crc32c(const void* data, std::size_t size) {
  // ISA-L's crc32_iscsi is the bare CRC32C update (no pre- or post-inversion) over at most INT_MAX
  // bytes a call; the standard CRC32C starts from ~0 and inverts the result.
  auto* bytes = static_cast<unsigned char*>(const_cast<void*>(data));
  unsigned int crc = 0xffffffffu;
  while (size > 0) {
    const int chunk = static_cast<int>(std::min<std::size_t>(size, INT_MAX));
    crc = crc32_iscsi(bytes, chunk, crc);
    bytes += chunk;
    size -= static_cast<std::size_t>(chunk);
  }
  return ~crc;
}

uint32_t masked_crc32c(const void* data, std::size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

TensorBoardWriter::TensorBoardWriter(const std::string& log_dir) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec || !std::filesystem::is_directory(log_dir)) {
    throw Error(str("tensorboard: cannot create the log folder ", log_dir, ": ",
                    ec ? ec.message() : std::string("not a folder")));
  }
  const double now = unix_time_now();
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%010lld", static_cast<long long>(now));
  path_ = (std::filesystem::path(log_dir) / str("events.out.tfevents.", seconds, ".", host_name(),
                                                ".", getpid(), ".", next_file_number.fetch_add(1)))
              .string();
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(str("tensorboard: cannot create ", path_, ": ", std::strerror(errno)));

  tb::Event event;
  event.set_wall_time(now);
  event.set_file_version("brain.Event:2");
  // SummaryWriter names itself here (TensorBoard shows the name, nothing more); cpuft names itself.
  event.mutable_source_metadata()->set_writer("cpuft");
  write_record(event.SerializeAsString());
}

TensorBoardWriter::~TensorBoardWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardWriter::add_scalar(const std::string& tag, float value, int64_t step,
                                   std::optional<double> wall_time) {
  tb::Event event;
  event.set_wall_time(wall_time ? *wall_time : unix_time_now());
  event.set_step(step);
  tb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  write_record(event.SerializeAsString());
}

void TensorBoardWriter::add_text(const std::string& tag, const std::string& text, int64_t step,
                                 std::optional<double> wall_time) {
  tb::Event event;
  event.set_wall_time(wall_time ? *wall_time : unix_time_now());
  event.set_step(step);
  tb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag + "/text_summary");
  // The text plugin's metadata: its name and TextPluginData{version: 0}, which serializes to no
  // bytes.
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  tb::TensorProto* tensor = v->mutable_tensor();
  tensor->set_dtype(tb::DT_STRING);
  tensor->mutable_tensor_shape()->add_dim()->set_size(1);
  tensor->add_string_val(text);
  write_record(event.SerializeAsString());
}

void TensorBoardWriter::write_record(const std::string& data) {
  CPUFT_REQUIRE(fd_ >= 0, "tensorboard: ", path_, " is closed");
  std::string record;
  record.reserve(data.size() + 16);
  append_le(record, data.size(), 8);
  append_le(record, masked_crc32c(record.data(), 8), 4);
  record += data;
  append_le(record, masked_crc32c(data.data(), data.size()), 4);
  // One record, one write: a crash between records leaves the file readable to its last record.
  const char* p = record.data();
  std::size_t left = record.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(str("tensorboard: cannot write ", path_, ": ", std::strerror(errno)));
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void TensorBoardWriter::flush() {
  if (fd_ < 0) return;
  if (::fdatasync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
    throw Error(str("tensorboard: cannot flush ", path_, ": ", std::strerror(errno)));
  }
}

void TensorBoardWriter::close() {
  if (fd_ < 0) return;
  flush();
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    throw Error(str("tensorboard: cannot close ", path_, ": ", std::strerror(errno)));
  }
}

}  // namespace cpuft
