// libFuzzer target for the safetensors reader: any input must either parse or throw cpuft::Error.
// Any other exception, crash, leak or sanitizer report is a bug.
//
// Each input is tried twice: as is, and with its header length field rewritten to end the header
// at the first NUL byte after the length field (the data of the seed files starts with one). The
// second form lets mutations of the JSON text reach the validation past the parser, which they
// rarely do when the length field no longer matches.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "io/safetensors.h"

namespace {

bool is_float(cpuft::DType d) {
  using cpuft::DType;
  return d == DType::F32 || d == DType::F16 || d == DType::BF16 || d == DType::F64;
}

void check(std::vector<std::byte> bytes) {
  try {
    const cpuft::SafetensorsFile file =
        cpuft::SafetensorsFile::from_bytes(std::move(bytes), "fuzz");
    for (const cpuft::TensorInfo& t : file.tensors()) {
      if (file.find(t.name) != &t) std::abort();  // names are unique and findable
      const std::size_t n = static_cast<std::size_t>(t.numel());
      if (file.raw(t).size() != n * cpuft::dtype_size(t.dtype)) std::abort();
      if (is_float(t.dtype)) {
        std::vector<float> out(n);
        file.read_f32(t, out.data());
        if (file.read_f32(t.name).size() != n) std::abort();
        try {
          (void)file.read_i64(t.name);
          std::abort();  // a float tensor must not read as integers
        } catch (const cpuft::Error&) {
        }
      } else {
        if (file.read_i64(t.name).size() != n) std::abort();
      }
    }
  } catch (const cpuft::Error&) {
    // Rejected input: expected.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto* begin = reinterpret_cast<const std::byte*>(data);
  std::vector<std::byte> bytes(begin, begin + size);
  check(bytes);

  if (size > 8) {
    const auto nul = std::find(bytes.begin() + 8, bytes.end(), std::byte{0});
    if (nul != bytes.end()) {
      const auto header_len = static_cast<uint64_t>(nul - (bytes.begin() + 8));
      uint64_t old_len = 0;
      std::memcpy(&old_len, data, 8);  // little-endian host
      if (header_len != old_len) {
        std::memcpy(bytes.data(), &header_len, 8);
        check(std::move(bytes));
      }
    }
  }
  return 0;
}
