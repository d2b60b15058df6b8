#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <utility>

#include "core/atomic_file.h"
#include "core/check.h"

namespace cpuft {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; the reader copies it as is");

namespace {

using json = nlohmann::json;

// The format's own limit on the header length (huggingface/safetensors MAX_HEADER_SIZE).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Makes text from an untrusted file safe for a one-line error message: control bytes are escaped
// as \xNN and very long text is cut.
std::string one_line(std::string_view text, std::size_t max_shown = 300) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max_shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max_shown) out += "...";
  return out;
}

// A tensor or key name from the file, quoted for a message: 'name'.
std::string quote_name(std::string_view name) {
  std::string out = "'";  // built with += : GCC 12 gives a false -Wrestrict for "'" + string
  out += one_line(name, 120);
  out += '\'';
  return out;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

bool parse_dtype(std::string_view s, DType* out) {
  static constexpr std::pair<std::string_view, DType> kNames[] = {
      {"F64", DType::F64}, {"F32", DType::F32},  {"F16", DType::F16}, {"BF16", DType::BF16},
      {"I64", DType::I64}, {"I32", DType::I32},  {"I16", DType::I16}, {"I8", DType::I8},
      {"U8", DType::U8},   {"BOOL", DType::BOOL}};
  for (const auto& [name, dtype] : kNames) {
    if (s == name) {
      *out = dtype;
      return true;
    }
  }
  return false;
}

// a * b, or false on uint64 overflow.
bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

std::string errno_text(int err) {
  return std::strerror(err);
}

// --- Reading ------------------------------------------------------------------------------------

// Parses the header JSON, rejecting duplicate keys in any object (nlohmann would silently keep
// one of them). Returns the top-level keys in header order, since nlohmann::json sorts them.
json parse_header(const std::string& label, const char* begin, const char* end,
                  std::vector<std::string>* top_level_keys) {
  std::vector<std::set<std::string>> open_objects;
  json::parser_callback_t callback = [&](int /*depth*/, json::parse_event_t event,
                                         json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key: {
        if (open_objects.empty()) break;  // cannot happen: keys only occur inside objects
        const auto& key = parsed.get_ref<const std::string&>();
        if (!open_objects.back().insert(key).second) {
          if (open_objects.size() == 1) {
            throw Error(str(label, ": tensor ", quote_name(key), ": duplicate name in header"));
          }
          throw Error(str(label, ": duplicate key ", quote_name(key), " in header"));
        }
        if (open_objects.size() == 1) top_level_keys->push_back(key);
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(begin, end, callback, /*allow_exceptions=*/true);
  } catch (const json::exception& e) {
    throw Error(str(label, ": header is not valid JSON: ", one_line(e.what())));
  }
}

// Reads a JSON value that must be a non-negative integer that fits in int64.
bool get_count(const json& value, uint64_t* out) {
  if (!value.is_number_unsigned()) return false;  // nlohmann parses every x >= 0 as unsigned
  *out = value.get<uint64_t>();
  return true;
}

std::string describe(const json& value) {
  if (value.is_number_integer() || value.is_number_float()) {
    // Numbers are short; show them. Anything else is named by its type only.
    return value.dump();
  }
  return str("a JSON ", value.type_name());
}

TensorInfo parse_tensor(const std::string& label, const std::string& name, const json& entry,
                        uint64_t data_size) {
  const std::string where = str(label, ": tensor ", quote_name(name), ": ");
  CPUFT_REQUIRE(entry.is_object(), where, "entry must be a JSON object, not ", describe(entry));
  TensorInfo info;
  info.name = name;

  const auto dtype_it = entry.find("dtype");
  CPUFT_REQUIRE(dtype_it != entry.end(), where, "missing \"dtype\"");
  CPUFT_REQUIRE(dtype_it->is_string(), where, "\"dtype\" must be a string, not ",
                describe(*dtype_it));
  const auto& dtype_text = dtype_it->get_ref<const std::string&>();
  CPUFT_REQUIRE(parse_dtype(dtype_text, &info.dtype), where, "unsupported dtype ",
                quote_name(dtype_text),
                " (supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");

  const auto shape_it = entry.find("shape");
  CPUFT_REQUIRE(shape_it != entry.end(), where, "missing \"shape\"");
  CPUFT_REQUIRE(shape_it->is_array(), where, "\"shape\" must be an array, not ",
                describe(*shape_it));
  uint64_t numel = 1;
  for (const json& dim : *shape_it) {
    uint64_t n = 0;
    CPUFT_REQUIRE(get_count(dim, &n), where,
                  "\"shape\" entries must be non-negative integers, got ", describe(dim));
    CPUFT_REQUIRE(n <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
                      !mul_overflows(numel, n, &numel) &&
                      numel <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
                  where, "\"shape\" has too many elements");
    info.shape.push_back(static_cast<int64_t>(n));
  }

  const auto offsets_it = entry.find("data_offsets");
  CPUFT_REQUIRE(offsets_it != entry.end(), where, "missing \"data_offsets\"");
  CPUFT_REQUIRE(offsets_it->is_array() && offsets_it->size() == 2, where,
                "\"data_offsets\" must be an array of 2 integers [begin, end]");
  for (int i = 0; i < 2; ++i) {
    CPUFT_REQUIRE(get_count((*offsets_it)[i], i == 0 ? &info.begin : &info.end), where,
                  "\"data_offsets\" must be non-negative integers, got ",
                  describe((*offsets_it)[i]));
  }
  CPUFT_REQUIRE(info.begin <= info.end, where, "data_offsets [", info.begin, ", ", info.end,
                "] have begin > end");
  CPUFT_REQUIRE(info.end <= data_size, where, "data_offsets [", info.begin, ", ", info.end,
                "] run past the end of the data section (", data_size,
                " bytes; is the file truncated?)");

  uint64_t nbytes = 0;
  CPUFT_REQUIRE(!mul_overflows(numel, dtype_size(info.dtype), &nbytes), where,
                "\"shape\" has too many elements");
  CPUFT_REQUIRE(info.end - info.begin == nbytes, where, "data_offsets [", info.begin, ", ",
                info.end, "] hold ", info.end - info.begin, " bytes but ", dtype_name(info.dtype),
                " shape ", shape_text(info.shape), " needs ", nbytes);
  return info;
}

}  // namespace

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F64:
      return "F64";
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::I64:
      return "I64";
    case DType::I32:
      return "I32";
    case DType::I16:
      return "I16";
    case DType::I8:
      return "I8";
    case DType::U8:
      return "U8";
    case DType::BOOL:
      return "BOOL";
  }
  return "?";
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F64:
    case DType::I64:
      return 8;
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F16:
    case DType::BF16:
    case DType::I16:
      return 2;
    case DType::I8:
    case DType::U8:
    case DType::BOOL:
      return 1;
  }
  throw_check_failure(__FILE__, __LINE__, "valid DType", str(static_cast<int>(dtype)));
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(str(path, ": cannot open: ", errno_text(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(str(path, ": cannot stat: ", errno_text(err)));
  }
  // Only regular files: a FIFO or a device (/dev/zero) may never end, a directory is no file.
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(str(path, ": not a regular file",
                    S_ISDIR(st.st_mode)                          ? " (a directory)"
                    : S_ISFIFO(st.st_mode)                       ? " (a FIFO)"
                    : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? " (a device)"
                                                                 : ""));
  }
  // The whole file is read into memory: one bigger than the machine's memory cannot be loaded.
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 &&
      static_cast<uint64_t>(st.st_size) / static_cast<uint64_t>(page) >
          static_cast<uint64_t>(pages)) {
    ::close(fd);
    throw Error(str(path, ": ", st.st_size, " bytes, more than this machine's memory (",
                    static_cast<uint64_t>(pages) * static_cast<uint64_t>(page), " bytes)"));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  // Size the buffer from fstat plus one byte, so the file is read without reallocation and its
  // end is seen by a read returning 0. Keep reading to end of file (not just st_size bytes),
  // doubling the buffer, so that a file that grows meanwhile is still read whole.
  std::vector<std::byte> bytes(static_cast<std::size_t>(st.st_size) + 1);
  std::size_t used = 0;
  for (;;) {
    if (used == bytes.size()) bytes.resize(2 * bytes.size());
    const ssize_t got = ::read(fd, bytes.data() + used, bytes.size() - used);
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw Error(str(path, ": cannot read: ", errno_text(err)));
    }
    if (got == 0) break;
    used += static_cast<std::size_t>(got);
  }
  ::close(fd);
  bytes.resize(used);
  return from_bytes(std::move(bytes), path);
}

SafetensorsFile SafetensorsFile::from_bytes(std::vector<std::byte> bytes, std::string label) {
  SafetensorsFile file;
  file.label_ = std::move(label);
  file.bytes_ = std::move(bytes);
  const std::string& l = file.label_;
  const uint64_t size = file.bytes_.size();

  CPUFT_REQUIRE(size >= 8, l, ": file is ", size,
                " bytes, shorter than the 8-byte header length (not a safetensors file)");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) {
    header_len = (header_len << 8) | static_cast<uint64_t>(file.bytes_[i]);
  }
  CPUFT_REQUIRE(header_len <= size - 8, l, ": header length ", header_len,
                " runs past end of file (size ", size, ")");
  CPUFT_REQUIRE(header_len <= kMaxHeaderBytes, l, ": header length ", header_len,
                " exceeds the format's limit of ", kMaxHeaderBytes, " bytes");
  file.data_start_ = static_cast<std::size_t>(8 + header_len);
  const uint64_t data_size = size - file.data_start_;

  const char* header = reinterpret_cast<const char*>(file.bytes_.data()) + 8;
  std::vector<std::string> keys;
  const json root = parse_header(l, header, header + header_len, &keys);
  CPUFT_REQUIRE(root.is_object(), l, ": header must be a JSON object, not ", describe(root));

  for (const std::string& key : keys) {
    const json& value = root.at(key);
    if (key == "__metadata__") {
      CPUFT_REQUIRE(value.is_object(), l, ": \"__metadata__\" must be an object, not ",
                    describe(value));
      for (const auto& [k, v] : value.items()) {
        CPUFT_REQUIRE(v.is_string(), l, ": \"__metadata__\" entry ", quote_name(k),
                      " must be a string, not ", describe(v));
        file.metadata_.emplace(k, v.get<std::string>());
      }
      continue;
    }
    file.tensors_.push_back(parse_tensor(l, key, value, data_size));
  }

  // Like huggingface/safetensors (Metadata::validate and MetadataIncompleteBuffer), the tensors,
  // sorted by offset, must cover the data section exactly: no overlaps, no holes, no trailing
  // bytes. Zero-size tensors may sit anywhere a tensor boundary is.
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(file.tensors_.size());
  for (const TensorInfo& t : file.tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return std::pair(a->begin, a->end) < std::pair(b->begin, b->end);
  });
  uint64_t covered = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo* t : by_offset) {
    CPUFT_REQUIRE(t->begin >= covered, l, ": tensor ", quote_name(t->name), ": data_offsets [",
                  t->begin, ", ", t->end, "] overlap tensor ", quote_name(previous->name),
                  " (ends at ", covered, ")");
    CPUFT_REQUIRE(t->begin == covered, l, ": tensor ", quote_name(t->name), ": data_offsets [",
                  t->begin, ", ", t->end, "] leave a gap of ", t->begin - covered,
                  " bytes after offset ", covered, " (tensors must cover the data section)");
    covered = t->end;
    previous = t;
  }
  CPUFT_REQUIRE(covered == data_size, l, ": data section has ", data_size - covered,
                " bytes after the last tensor (ends at ", covered, ") that no tensor covers");
  return file;
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  for (const TensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::span<const std::byte> SafetensorsFile::raw(const TensorInfo& tensor) const {
  // `tensor` normally comes from tensors(); check anyway so a foreign one cannot read out of range.
  const uint64_t data_size = bytes_.size() - data_start_;
  CPUFT_REQUIRE(tensor.begin <= tensor.end && tensor.end <= data_size, label_, ": tensor ",
                quote_name(tensor.name), ": data_offsets [", tensor.begin, ", ", tensor.end,
                "] out of range");
  CPUFT_REQUIRE(
      static_cast<uint64_t>(tensor.numel()) * dtype_size(tensor.dtype) == tensor.end - tensor.begin,
      label_, ": tensor ", quote_name(tensor.name), ": shape does not match data_offsets");
  return std::span<const std::byte>(bytes_).subspan(data_start_ + tensor.begin,
                                                    tensor.end - tensor.begin);
}

namespace {

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf, or NaN keeping its payload
  } else if (exponent != 0) {
    bits = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
  } else {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    bits = sign | std::bit_cast<uint32_t>(magnitude);
  }
  return std::bit_cast<float>(bits);
}

template <typename T>
T load(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

}  // namespace

void SafetensorsFile::read_f32(const TensorInfo& tensor, float* out) const {
  const std::span<const std::byte> bytes = raw(tensor);
  const std::size_t n = static_cast<std::size_t>(tensor.numel());
  const std::byte* p = bytes.data();
  switch (tensor.dtype) {
    case DType::F32:
      if (n) std::memcpy(out, p, n * sizeof(float));
      return;
    case DType::F16:
      for (std::size_t i = 0; i < n; ++i) out[i] = f16_to_f32(load<uint16_t>(p + 2 * i));
      return;
    case DType::BF16:
      for (std::size_t i = 0; i < n; ++i) {
        out[i] = std::bit_cast<float>(static_cast<uint32_t>(load<uint16_t>(p + 2 * i)) << 16);
      }
      return;
    case DType::F64:
      // IEEE narrowing: rounds to nearest, out-of-range values become +-inf.
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<double>(p + 8 * i));
      return;
    default:
      throw Error(str(label_, ": tensor ", quote_name(tensor.name), ": dtype ",
                      dtype_name(tensor.dtype),
                      " is not a float type (expected F32, F16, BF16 or F64)"));
  }
}

std::vector<float> SafetensorsFile::read_f32(const std::string& name) const {
  const TensorInfo* tensor = find(name);
  CPUFT_REQUIRE(tensor != nullptr, label_, ": no tensor named ", quote_name(name));
  std::vector<float> out(static_cast<std::size_t>(tensor->numel()));
  read_f32(*tensor, out.data());
  return out;
}

std::vector<int64_t> SafetensorsFile::read_i64(const std::string& name) const {
  const TensorInfo* tensor = find(name);
  CPUFT_REQUIRE(tensor != nullptr, label_, ": no tensor named ", quote_name(name));
  const std::span<const std::byte> bytes = raw(*tensor);
  const std::size_t n = static_cast<std::size_t>(tensor->numel());
  const std::byte* p = bytes.data();
  std::vector<int64_t> out(n);
  switch (tensor->dtype) {
    case DType::I64:
      if (n) std::memcpy(out.data(), p, n * sizeof(int64_t));
      break;
    case DType::I32:
      for (std::size_t i = 0; i < n; ++i) out[i] = load<int32_t>(p + 4 * i);
      break;
    case DType::I16:
      for (std::size_t i = 0; i < n; ++i) out[i] = load<int16_t>(p + 2 * i);
      break;
    case DType::I8:
      for (std::size_t i = 0; i < n; ++i) out[i] = load<int8_t>(p + i);
      break;
    case DType::U8:
      for (std::size_t i = 0; i < n; ++i) out[i] = load<uint8_t>(p + i);
      break;
    case DType::BOOL:
      for (std::size_t i = 0; i < n; ++i) out[i] = load<uint8_t>(p + i) != 0 ? 1 : 0;
      break;
    default:
      throw Error(str(label_, ": tensor ", quote_name(tensor->name), ": dtype ",
                      dtype_name(tensor->dtype),
                      " is not an integer type (expected I64, I32, I16, I8, U8 or BOOL)"));
  }
  return out;
}

// --- Writing ------------------------------------------------------------------------------------

namespace {

std::string json_string(const std::string& path, const std::string& text) {
  try {
    return json(text).dump();
  } catch (const json::exception&) {
    throw Error(str(path, ": name ", quote_name(text), " is not valid UTF-8"));
  }
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Validate everything and build the header before touching the file system.
  std::set<std::string_view> names;
  std::vector<uint64_t> sizes;
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) header += ",";
      first = false;
      header += json_string(path, k) + ":" + json_string(path, v);
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    CPUFT_REQUIRE(!t.name.empty(), path, ": tensor names must not be empty");
    CPUFT_REQUIRE(t.name != "__metadata__", path, ": tensor name '__metadata__' is reserved");
    CPUFT_REQUIRE(names.insert(t.name).second, path, ": tensor ", quote_name(t.name),
                  ": duplicate name");
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      CPUFT_REQUIRE(d >= 0, path, ": tensor ", quote_name(t.name), ": negative dimension in shape ",
                    shape_text(t.shape));
      CPUFT_REQUIRE(!mul_overflows(numel, static_cast<uint64_t>(d), &numel), path, ": tensor ",
                    quote_name(t.name), ": shape ", shape_text(t.shape), " is too large");
    }
    uint64_t nbytes = 0;
    CPUFT_REQUIRE(!mul_overflows(numel, sizeof(float), &nbytes), path, ": tensor ",
                  quote_name(t.name), ": shape ", shape_text(t.shape), " is too large");
    CPUFT_REQUIRE(numel == 0 || t.data != nullptr, path, ": tensor ", quote_name(t.name),
                  ": data is null but shape ", shape_text(t.shape), " has ", numel, " elements");
    if (header.size() > 1) header += ",";
    header += json_string(path, t.name) + ":{\"dtype\":\"F32\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if (i) header += ",";
      header += std::to_string(t.shape[i]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + nbytes) + "]}";
    offset += nbytes;
    sizes.push_back(nbytes);
  }
  header += "}";
  // Pad with spaces so that the data section starts at an 8-byte-aligned offset, as HF does.
  header.append((8 - header.size() % 8) % 8, ' ');
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header.size() >> (8 * i));

  // Through a temporary file, fsynced and renamed (core/atomic_file.h).
  AtomicFile file(path);
  file.write(length, sizeof length);
  file.write(header.data(), header.size());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (sizes[i]) file.write(tensors[i].data, static_cast<std::size_t>(sizes[i]));
  file.commit();
}

}  // namespace cpuft
