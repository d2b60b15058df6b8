// TensorBoard event files, as torch.utils.tensorboard.SummaryWriter writes them (the writer behind
// transformers' TensorBoardCallback, `--report_to tensorboard`).
//
// One file per writer, in log_dir (created with its parents):
//   events.out.tfevents.<Unix seconds, 10 digits>.<hostname>.<pid>.<n>   (n counts this process's
//   writers from 0)
// It is a TFRecord file of serialized tensorboard.Event protos (tensorboard/compat/proto), each
// record framed as
//   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes | data | uint32 masked
//   CRC32C of data
// with masked(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8. The first record is the file_version
// event "brain.Event:2" (with source_metadata.writer "cpuft", where SummaryWriter puts its own
// module's name). A scalar is Summary.Value{tag, simple_value}; a text is the text plugin's
// DT_STRING tensor of shape [1] under the tag "<tag>/text_summary", exactly SummaryWriter's.
// (Checked against torch.utils.tensorboard 2.x with tensorboard 2.21: the same bytes but for wall
// times and that writer name.)
//
// Each record reaches the file with one write(2) as it is added, so a crash of the process leaves
// only complete records; flush() also asks the kernel to put them on the disk. Every failure (the
// folder cannot be created, the disk is full) throws cpuft::Error with one line naming the path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cpuft {

// Seconds since the Unix epoch, with sub-second digits (Python's time.time()).
double unix_time_now();

// socket.gethostname(): this machine's host name ("localhost" if it has none).
std::string host_name();

class TensorBoardWriter {
 public:
  // Creates log_dir (and its parents) and a new event file in it; writes the file_version record.
  explicit TensorBoardWriter(const std::string& log_dir);
  ~TensorBoardWriter();  // closes the file (errors are not thrown from here: call close() first)
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // SummaryWriter.add_scalar(tag, value, step, walltime): wall_time defaults to now.
  void add_scalar(const std::string& tag, float value, int64_t step,
                  std::optional<double> wall_time = std::nullopt);
  // SummaryWriter.add_text(tag, text, step, walltime): the tag is stored as "<tag>/text_summary".
  // transformers' callback writes "args" and "model_config" (JSON text) without a step, i.e. 0.
  void add_text(const std::string& tag, const std::string& text, int64_t step = 0,
                std::optional<double> wall_time = std::nullopt);
  // Every record is already in the file; this makes it durable (fdatasync).
  void flush();
  // Flushes and closes; later calls do nothing. Adding after close() throws.
  void close();

  const std::string& path() const { return path_; }  // the event file

 private:
  void write_record(const std::string& data);

  std::string path_;
  int fd_ = -1;
};

// The TFRecord checksum: CRC32C (Castagnoli) of data, then masked as above.
uint32_t crc32c(const void* data, std::size_t size);
uint32_t masked_crc32c(const void* data, std::size_t size);

}  // namespace cpuft
