// safetensors reader and writer (https://huggingface.co/docs/safetensors).
//
// File = 8-byte little-endian header length N, N bytes of JSON header, then the data section.
// The header maps each tensor name to {dtype, shape, data_offsets:[begin,end]} relative to the data
// section, plus an optional "__metadata__" string->string map.
//
// The reader trusts nothing: every error throws cpuft::Error with one line naming the file and,
// where there is one, the tensor: header length past the end of file, non-JSON or non-object
// header, unknown dtype, negative or non-integer shape entries, offsets out of range, overlapping
// or non-contiguous tensors, byte size not equal to product(shape) * dtype size, duplicate names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace cpuft {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

const char* dtype_name(DType dtype);  // "F32", ...
std::size_t dtype_size(DType dtype);

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets within the data section

  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Reads and validates the whole file. `path` also names the file in error messages. Only regular
  // files no larger than the machine's memory are read (a FIFO, a device or a directory is
  // refused without blocking).
  static SafetensorsFile open(const std::string& path);
  // Validates an in-memory image of a file (used by the fuzzer and tests); `label` names it in
  // errors.
  static SafetensorsFile from_bytes(std::vector<std::byte> bytes, std::string label);

  const std::string& label() const { return label_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in header order
  const TensorInfo* find(const std::string& name) const;               // nullptr if absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Converts a float tensor (F32, F16, BF16, F64) to F32 into out[numel]. Throws naming the file
  // and tensor for a non-float dtype.
  void read_f32(const TensorInfo& tensor, float* out) const;
  std::vector<float> read_f32(const std::string& name) const;  // throws if absent
  // Reads an integer tensor (I64, I32, I16, I8, U8, BOOL) widened to int64.
  std::vector<int64_t> read_i64(const std::string& name) const;  // throws if absent
  std::span<const std::byte> raw(const TensorInfo& tensor) const;

 private:
  std::string label_;
  std::vector<std::byte> bytes_;  // whole file
  std::size_t data_start_ = 0;    // 8 + header length
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;  // product(shape) floats, written as F32
};

// Writes an F32 safetensors file atomically (core/atomic_file.h: "<path>.tmp-<pid>", fsync, rename,
// fsync of the folder), so a crash or a full disk never leaves a half-written file under `path`.
// Tensors are laid out in the given order.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace cpuft
