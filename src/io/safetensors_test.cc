#include "io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/check.h"
#include "test_paths.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLabel = "bad.safetensors";

// --- helpers ----------------------------------------------------------------------------------

// 8-byte little-endian length, header text, then data bytes.
std::vector<std::byte> make_file(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<std::byte> out;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((n >> (8 * i)) & 0xff));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  for (uint8_t b : data) out.push_back(static_cast<std::byte>(b));
  return out;
}

std::vector<uint8_t> zeros(std::size_t n) {
  return std::vector<uint8_t>(n, 0);
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// The error text from_bytes throws, or "" if it accepts the bytes.
std::string parse_error(const std::vector<std::byte>& bytes) {
  try {
    SafetensorsFile::from_bytes(bytes, kLabel);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

// Checks that the bytes are rejected with a one-line message naming the label, the tensor (if
// given) and containing `what`.
void expect_rejected(const std::vector<std::byte>& bytes, const std::string& tensor,
                     const std::string& what) {
  const std::string msg = parse_error(bytes);
  ASSERT_FALSE(msg.empty()) << "accepted bad input";
  EXPECT_EQ(msg.rfind(std::string(kLabel) + ": ", 0), 0u) << msg;
  if (!tensor.empty()) {
    EXPECT_TRUE(Contains(msg, "tensor '" + tensor + "'"));
  }
  EXPECT_TRUE(Contains(msg, what));
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "cpuft_io_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

uint64_t header_length(const std::vector<uint8_t>& file) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file[i];
  return n;
}

std::string tmp_name(const std::string& path) {
  return path + ".tmp-" + std::to_string(::getpid());
}

// --- writing and round trip ---------------------------------------------------------------------

TEST(SafetensorsWrite, RoundTrip) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  const std::vector<float> a = {1.0f, -2.5f, 3.25f, 1e-30f, 6.0f, 7.0f};
  const std::vector<float> b = {0.5f, std::numeric_limits<float>::infinity(), -0.0f};
  const std::vector<float> c = {42.0f};
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"step", "12"}};
  // Deliberately not in alphabetical order: the file keeps the given order.
  write_safetensors(
      path, {{"z.weight", {2, 3}, a.data()}, {"b", {3}, b.data()}, {"scalar", {}, c.data()}}, meta);

  const SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_EQ(file.label(), path);
  ASSERT_EQ(file.tensors().size(), 3u);
  EXPECT_EQ(file.tensors()[0].name, "z.weight");
  EXPECT_EQ(file.tensors()[1].name, "b");
  EXPECT_EQ(file.tensors()[2].name, "scalar");
  EXPECT_EQ(file.tensors()[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(file.tensors()[2].shape, std::vector<int64_t>{});
  EXPECT_EQ(file.tensors()[2].numel(), 1);
  for (const TensorInfo& t : file.tensors()) EXPECT_EQ(t.dtype, DType::F32);
  // Contiguous offsets in the given order.
  EXPECT_EQ(file.tensors()[0].begin, 0u);
  EXPECT_EQ(file.tensors()[0].end, 24u);
  EXPECT_EQ(file.tensors()[1].begin, 24u);
  EXPECT_EQ(file.tensors()[1].end, 36u);
  EXPECT_EQ(file.tensors()[2].begin, 36u);
  EXPECT_EQ(file.tensors()[2].end, 40u);

  EXPECT_EQ(file.read_f32("z.weight"), a);
  const std::vector<float> b_read = file.read_f32("b");
  ASSERT_EQ(b_read.size(), 3u);
  EXPECT_EQ(std::memcmp(b_read.data(), b.data(), 12), 0);  // bitwise, keeps -0.0 and inf
  EXPECT_EQ(file.read_f32("scalar"), c);
  const auto raw = file.raw(*file.find("z.weight"));
  ASSERT_EQ(raw.size(), 24u);
  EXPECT_EQ(std::memcmp(raw.data(), a.data(), 24), 0);
  EXPECT_EQ(file.metadata(), meta);

  const std::vector<uint8_t> bytes = read_all(path);
  const uint64_t n = header_length(bytes);
  EXPECT_EQ((8 + n) % 8, 0u) << "data section must start 8-byte aligned";
  EXPECT_EQ(bytes.size(), 8 + n + 40);
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
  EXPECT_TRUE(Contains(header, "\"__metadata__\""));
  EXPECT_FALSE(fs::exists(tmp_name(path)));
}

TEST(SafetensorsWrite, LargeTensorRoundTrip) {
  // Bigger than the reader's first buffer for a non-regular file and than typical read() chunks.
  TempDir dir;
  const std::string path = dir.file("big.safetensors");
  std::vector<float> big(300'000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.5f - 7.0f;
  write_safetensors(path, {{"big", {300, 1000}, big.data()}});
  EXPECT_EQ(SafetensorsFile::open(path).read_f32("big"), big);
}

TEST(SafetensorsWrite, AlignmentForEveryHeaderLength) {
  // Names of different lengths move the unpadded header length through every residue mod 8.
  TempDir dir;
  const float x = 1.0f;
  for (int len = 1; len <= 16; ++len) {
    std::string file_name = "a";
    file_name += std::to_string(len);
    const std::string path = dir.file(file_name);
    write_safetensors(path, {{std::string(static_cast<std::size_t>(len), 'n'), {1}, &x}});
    const std::vector<uint8_t> bytes = read_all(path);
    EXPECT_EQ(header_length(bytes) % 8, 0u) << len;
    EXPECT_EQ(SafetensorsFile::open(path).read_f32(std::string(static_cast<std::size_t>(len), 'n')),
              std::vector<float>{1.0f});
  }
}

TEST(SafetensorsWrite, NoMetadataKeyWhenEmpty) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  const float x = 1.0f;
  write_safetensors(path, {{"x", {1}, &x}});
  const std::vector<uint8_t> bytes = read_all(path);
  const std::string header(bytes.begin() + 8,
                           bytes.begin() + 8 + static_cast<long>(header_length(bytes)));
  EXPECT_FALSE(Contains(header, "__metadata__"));
  EXPECT_TRUE(SafetensorsFile::open(path).metadata().empty());
}

TEST(SafetensorsWrite, ZeroSizeTensorAndEmptyFile) {
  TempDir dir;
  const std::string path = dir.file("z.safetensors");
  write_safetensors(path, {{"empty", {0, 4}, nullptr}});
  const SafetensorsFile file = SafetensorsFile::open(path);
  ASSERT_EQ(file.tensors().size(), 1u);
  EXPECT_EQ(file.tensors()[0].numel(), 0);
  EXPECT_TRUE(file.read_f32("empty").empty());

  const std::string none = dir.file("none.safetensors");
  write_safetensors(none, {});
  EXPECT_TRUE(SafetensorsFile::open(none).tensors().empty());
}

TEST(SafetensorsWrite, ReplacesExistingFile) {
  TempDir dir;
  const std::string path = dir.file("r.safetensors");
  const float one = 1.0f, two = 2.0f;
  write_safetensors(path, {{"x", {1}, &one}});
  write_safetensors(path, {{"y", {1}, &two}});
  const SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_EQ(file.find("x"), nullptr);
  EXPECT_EQ(file.read_f32("y"), std::vector<float>{2.0f});
}

TEST(SafetensorsWrite, MissingDirectoryThrowsAndLeavesNoTemp) {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/model.safetensors");
  const float x = 1.0f;
  try {
    write_safetensors(path, {{"x", {1}, &x}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(Contains(e.what(), path));
  }
  EXPECT_FALSE(fs::exists(tmp_name(path)));
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(SafetensorsWrite, RenameFailureRemovesTemp) {
  // The target is a directory: the temp file is written, then rename fails.
  TempDir dir;
  const std::string path = dir.file("target");
  fs::create_directory(path);
  fs::create_directory(path + "/child");  // rename(file, non-empty dir) must fail
  const float x = 1.0f;
  try {
    write_safetensors(path, {{"x", {1}, &x}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(Contains(e.what(), path));
  }
  EXPECT_FALSE(fs::exists(tmp_name(path)));
  EXPECT_TRUE(fs::is_directory(path));
}

TEST(SafetensorsWrite, RejectsBadTensors) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  const float x[2] = {1.0f, 2.0f};
  auto error_of = [&](const std::vector<TensorToWrite>& tensors) -> std::string {
    try {
      write_safetensors(path, tensors);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  std::string msg = error_of({{"x", {1}, x}, {"x", {1}, x + 1}});
  EXPECT_TRUE(Contains(msg, path));
  EXPECT_TRUE(Contains(msg, "tensor 'x'"));
  EXPECT_TRUE(Contains(msg, "duplicate"));
  msg = error_of({{"", {1}, x}});
  EXPECT_TRUE(Contains(msg, "empty"));
  msg = error_of({{"n", {2}, nullptr}});
  EXPECT_TRUE(Contains(msg, "tensor 'n'"));
  EXPECT_TRUE(Contains(msg, "null"));
  msg = error_of({{"neg", {-1}, x}});
  EXPECT_TRUE(Contains(msg, "tensor 'neg'"));
  msg = error_of({{"__metadata__", {1}, x}});
  EXPECT_TRUE(Contains(msg, "reserved"));
  // Nothing was created for any of them.
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

// --- reading ------------------------------------------------------------------------------------

TEST(SafetensorsRead, OpenNonexistentPathNamesIt) {
  TempDir dir;
  const std::string path = dir.file("missing.safetensors");
  try {
    SafetensorsFile::open(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(Contains(e.what(), path));
    EXPECT_TRUE(Contains(e.what(), "cannot open"));
    EXPECT_TRUE(Contains(e.what(), "No such file"));
  }
}

TEST(SafetensorsRead, OpenDirectoryFails) {
  TempDir dir;
  EXPECT_THROW(SafetensorsFile::open(dir.path().string()), Error);
}

TEST(SafetensorsRead, KeepsHeaderOrderNotOffsetOrder) {
  const std::string header = R"({"second":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
                             R"("first":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  const SafetensorsFile file = SafetensorsFile::from_bytes(make_file(header, {1, 2, 3, 4}), "x");
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[0].name, "second");
  EXPECT_EQ(file.tensors()[1].name, "first");
  EXPECT_EQ(file.read_i64("second"), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(file.read_i64("first"), (std::vector<int64_t>{1, 2}));
}

TEST(SafetensorsRead, ZeroSizeTensorsAnywhere) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                             R"("b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                             R"("c":{"dtype":"I64","shape":[3,0],"data_offsets":[1,1]}})";
  const SafetensorsFile file = SafetensorsFile::from_bytes(make_file(header, {7}), "x");
  EXPECT_TRUE(file.read_f32("a").empty());
  EXPECT_TRUE(file.read_i64("c").empty());
  EXPECT_EQ(file.read_i64("b"), std::vector<int64_t>{7});
}

TEST(SafetensorsRead, EmptyHeaderObject) {
  const SafetensorsFile file = SafetensorsFile::from_bytes(make_file("{}", {}), "x");
  EXPECT_TRUE(file.tensors().empty());
  EXPECT_TRUE(file.metadata().empty());
}

TEST(SafetensorsRead, UnknownTensorName) {
  const SafetensorsFile file = SafetensorsFile::from_bytes(make_file("{}", {}), kLabel);
  try {
    file.read_f32("nope");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(Contains(e.what(), kLabel));
    EXPECT_TRUE(Contains(e.what(), "'nope'"));
  }
  EXPECT_THROW(file.read_i64("nope"), Error);
  EXPECT_EQ(file.find("nope"), nullptr);
}

TEST(SafetensorsRead, FuzzSeedCorpus) {
  // The committed fuzz seeds: valid_* parse and read, bad_* are rejected.
  const fs::path dir = cpuft::testing::fixture_path("fuzz_safetensors_corpus");
  int valid = 0, bad = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::string path = entry.path().string();
    if (name.rfind("valid_", 0) == 0) {
      const SafetensorsFile file = SafetensorsFile::open(path);
      for (const TensorInfo& t : file.tensors()) {
        const bool is_float = t.dtype == DType::F32 || t.dtype == DType::F16 ||
                              t.dtype == DType::BF16 || t.dtype == DType::F64;
        const std::size_t n =
            is_float ? file.read_f32(t.name).size() : file.read_i64(t.name).size();
        EXPECT_EQ(n, static_cast<std::size_t>(t.numel())) << path;
      }
      ++valid;
    } else if (name.rfind("bad_", 0) == 0) {
      EXPECT_THROW(SafetensorsFile::open(path), Error) << path;
      ++bad;
    }
  }
  EXPECT_GE(valid, 3);
  EXPECT_GE(bad, 3);
}

// --- conversions --------------------------------------------------------------------------------

SafetensorsFile one_tensor(const char* dtype, std::size_t count, const std::vector<uint8_t>& data) {
  const std::string header = std::string(R"({"t":{"dtype":")") + dtype + R"(","shape":[)" +
                             std::to_string(count) + R"(],"data_offsets":[0,)" +
                             std::to_string(data.size()) + "]}}";
  return SafetensorsFile::from_bytes(make_file(header, data), kLabel);
}

TEST(SafetensorsConvert, F16) {
  const std::vector<uint16_t> h = {0x3C00, 0xC100, 0x7BFF, 0x0001, 0x03FF, 0x0400,
                                   0x7C00, 0xFC00, 0x7E00, 0x8000, 0x3555};
  const std::vector<float> got = one_tensor("F16", h.size(), bytes_of(h)).read_f32("t");
  ASSERT_EQ(got.size(), h.size());
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], -2.5f);
  EXPECT_EQ(got[2], 65504.0f);
  EXPECT_EQ(got[3], std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(got[4], std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(got[5], std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(got[6], std::numeric_limits<float>::infinity());
  EXPECT_EQ(got[7], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(got[8]));
  EXPECT_EQ(std::bit_cast<uint32_t>(got[9]), 0x80000000u);  // -0.0
  EXPECT_EQ(got[10], 0.333251953125f);                      // 0x3555
}

TEST(SafetensorsConvert, F16AllValuesMatchReference) {
  // Every finite half value against an independent formula: (-1)^s * 2^(e-15) * (1 + m/1024).
  std::vector<uint16_t> h(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<uint16_t>(i);
  const std::vector<float> got = one_tensor("F16", h.size(), bytes_of(h)).read_f32("t");
  for (uint32_t i = 0; i < 65536; ++i) {
    const int e = static_cast<int>((i >> 10) & 31);
    const int m = static_cast<int>(i & 1023);
    const double sign = (i & 0x8000) ? -1.0 : 1.0;
    if (e == 31) {
      if (m == 0) {
        EXPECT_EQ(got[i], static_cast<float>(sign * INFINITY)) << i;
      } else {
        EXPECT_TRUE(std::isnan(got[i])) << i;
      }
      continue;
    }
    const double expected =
        e == 0 ? sign * std::ldexp(m, -24) : sign * std::ldexp(1.0 + m / 1024.0, e - 15);
    ASSERT_EQ(static_cast<double>(got[i]), expected) << "half bits " << i;
  }
}

TEST(SafetensorsConvert, BF16) {
  const std::vector<uint16_t> b = {0x3F80, 0xC020, 0x477F, 0x0001, 0x7F80, 0xFF80, 0x7FC0, 0x7F7F};
  const std::vector<float> got = one_tensor("BF16", b.size(), bytes_of(b)).read_f32("t");
  ASSERT_EQ(got.size(), b.size());
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], -2.5f);
  EXPECT_EQ(got[2], 65280.0f);                // nearest bf16 below 65504
  EXPECT_EQ(got[3], std::ldexp(1.0f, -133));  // smallest subnormal
  EXPECT_EQ(got[4], std::numeric_limits<float>::infinity());
  EXPECT_EQ(got[5], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(got[6]));
  EXPECT_EQ(got[7], std::bit_cast<float>(0x7F7F0000u));  // largest finite bf16
}

TEST(SafetensorsConvert, F64) {
  const std::vector<double> d = {1.0, -2.5, 65504.0, std::ldexp(1.0, -149), 1e300, INFINITY,
                                 NAN, 0.1,  -0.0};
  const std::vector<float> got = one_tensor("F64", d.size(), bytes_of(d)).read_f32("t");
  ASSERT_EQ(got.size(), d.size());
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], -2.5f);
  EXPECT_EQ(got[2], 65504.0f);
  EXPECT_EQ(got[3], std::ldexp(1.0f, -149));  // smallest float subnormal survives
  EXPECT_EQ(got[4], std::numeric_limits<float>::infinity());
  EXPECT_EQ(got[5], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(got[6]));
  EXPECT_EQ(got[7], 0.1f);
  EXPECT_EQ(std::bit_cast<uint32_t>(got[8]), 0x80000000u);
}

TEST(SafetensorsConvert, F32IsExact) {
  const std::vector<float> f = {1.0f, -2.5f, 65504.0f, std::ldexp(1.0f, -149), INFINITY};
  std::vector<float> out(f.size());
  const SafetensorsFile file = one_tensor("F32", f.size(), bytes_of(f));
  file.read_f32(file.tensors()[0], out.data());
  EXPECT_EQ(out, f);
}

TEST(SafetensorsConvert, Integers) {
  EXPECT_EQ(
      one_tensor("I64", 3, bytes_of(std::vector<int64_t>{INT64_MIN, -1, INT64_MAX})).read_i64("t"),
      (std::vector<int64_t>{INT64_MIN, -1, INT64_MAX}));
  EXPECT_EQ(
      one_tensor("I32", 3, bytes_of(std::vector<int32_t>{INT32_MIN, -7, INT32_MAX})).read_i64("t"),
      (std::vector<int64_t>{INT32_MIN, -7, INT32_MAX}));
  EXPECT_EQ(one_tensor("I16", 2, bytes_of(std::vector<int16_t>{-32768, 32767})).read_i64("t"),
            (std::vector<int64_t>{-32768, 32767}));
  EXPECT_EQ(one_tensor("I8", 2, {0x80, 0x7f}).read_i64("t"), (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(one_tensor("U8", 2, {0xff, 0x01}).read_i64("t"), (std::vector<int64_t>{255, 1}));
  EXPECT_EQ(one_tensor("BOOL", 3, {0, 1, 1}).read_i64("t"), (std::vector<int64_t>{0, 1, 1}));
}

TEST(SafetensorsConvert, WrongDtypeNamesTensorAndDtype) {
  const SafetensorsFile ints = one_tensor("I32", 1, {1, 0, 0, 0});
  try {
    ints.read_f32("t");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(Contains(e.what(), kLabel));
    EXPECT_TRUE(Contains(e.what(), "tensor 't'"));
    EXPECT_TRUE(Contains(e.what(), "I32"));
  }
  const SafetensorsFile floats = one_tensor("BF16", 1, {0, 0});
  try {
    floats.read_i64("t");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(Contains(e.what(), kLabel));
    EXPECT_TRUE(Contains(e.what(), "tensor 't'"));
    EXPECT_TRUE(Contains(e.what(), "BF16"));
  }
}

TEST(SafetensorsConvert, DtypeNamesAndSizes) {
  EXPECT_STREQ(dtype_name(DType::BF16), "BF16");
  EXPECT_STREQ(dtype_name(DType::BOOL), "BOOL");
  EXPECT_EQ(dtype_size(DType::F64), 8u);
  EXPECT_EQ(dtype_size(DType::I32), 4u);
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_EQ(dtype_size(DType::U8), 1u);
}

// --- malformed files ----------------------------------------------------------------------------

// A valid file: one F32 tensor 'w' of shape [2] (8 bytes).
const char* kGoodHeader = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

TEST(SafetensorsBad, ControlIsValid) {
  EXPECT_EQ(parse_error(make_file(kGoodHeader, zeros(8))), "");
}

TEST(SafetensorsBad, ShorterThan8Bytes) {
  expect_rejected(std::vector<std::byte>(5), "", "shorter than");
  expect_rejected({}, "", "shorter than");
}

TEST(SafetensorsBad, TruncatedDataSection) {
  std::vector<std::byte> bytes = make_file(kGoodHeader, zeros(8));
  bytes.erase(bytes.end() - 3, bytes.end());  // cut the data section
  expect_rejected(bytes, "w", "past the end of the data section");
}

TEST(SafetensorsBad, HeaderLengthPastEnd) {
  std::vector<std::byte> bytes = make_file(kGoodHeader, zeros(8));
  const std::size_t size = bytes.size();
  bytes[0] = std::byte{0xe8};  // 1000
  bytes[1] = std::byte{0x03};
  expect_rejected(bytes, "",
                  "header length 1000 runs past end of file (size " + std::to_string(size) + ")");
  // A length whose 8 + N overflows must not wrap around.
  for (int i = 0; i < 8; ++i) bytes[i] = std::byte{0xff};
  expect_rejected(bytes, "", "runs past end of file");
}

TEST(SafetensorsBad, HeaderOverFormatLimit) {
  const uint64_t n = 100'000'001;
  std::vector<std::byte> bytes(8 + n, std::byte{' '});
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
  expect_rejected(bytes, "", "limit");
}

TEST(SafetensorsBad, HeaderNotJson) {
  expect_rejected(make_file(R"({"w":{"dtype":"F32",)", {}), "", "not valid JSON");
  expect_rejected(make_file("", {}), "", "not valid JSON");
}

TEST(SafetensorsBad, HeaderNotUtf8) {
  expect_rejected(make_file("{\"w\xff\":{}}", {}), "", "not valid JSON");
}

TEST(SafetensorsBad, HeaderIsArray) {
  expect_rejected(make_file("[1,2]", {}), "", "header must be a JSON object");
}

TEST(SafetensorsBad, EntryNotObject) {
  expect_rejected(make_file(R"({"w":[1]})", {}), "w", "must be a JSON object");
}

TEST(SafetensorsBad, UnknownDtype) {
  expect_rejected(
      make_file(R"({"w":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", zeros(8)), "w",
      "unsupported dtype 'F8_E4M3'");
}

TEST(SafetensorsBad, DtypeNotString) {
  expect_rejected(make_file(R"({"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", zeros(8)), "w",
                  "\"dtype\" must be a string");
}

TEST(SafetensorsBad, MissingDtype) {
  expect_rejected(make_file(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", zeros(8)), "w",
                  "missing \"dtype\"");
}

TEST(SafetensorsBad, MissingShape) {
  expect_rejected(make_file(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", zeros(8)), "w",
                  "missing \"shape\"");
}

TEST(SafetensorsBad, NegativeShape) {
  expect_rejected(make_file(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", zeros(8)),
                  "w", "non-negative integers, got -2");
}

TEST(SafetensorsBad, ShapeWithFloat) {
  expect_rejected(
      make_file(R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", zeros(8)), "w",
      "non-negative integers");
}

TEST(SafetensorsBad, ShapeNotArray) {
  expect_rejected(make_file(R"({"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", zeros(8)),
                  "w", "\"shape\" must be an array");
}

TEST(SafetensorsBad, ShapeOverflows) {
  // 2^32 * 2^32 overflows uint64; must not wrap to 0 and match data_offsets [0,0].
  expect_rejected(
      make_file(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})",
                {}),
      "w", "too many elements");
  // numel fits but numel * 4 bytes overflows.
  expect_rejected(
      make_file(R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", {}),
      "w", "too many elements");
}

TEST(SafetensorsBad, MissingDataOffsets) {
  expect_rejected(make_file(R"({"w":{"dtype":"F32","shape":[2]}})", zeros(8)), "w",
                  "missing \"data_offsets\"");
}

TEST(SafetensorsBad, DataOffsetsWrongLength) {
  expect_rejected(
      make_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}})", zeros(8)), "w",
      "array of 2 integers");
}

TEST(SafetensorsBad, DataOffsetsNegative) {
  expect_rejected(make_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", zeros(8)),
                  "w", "non-negative integers");
}

TEST(SafetensorsBad, OffsetsOutOfRange) {
  expect_rejected(make_file(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", zeros(8)),
                  "w", "data_offsets [0, 16] run past the end of the data section (8 bytes");
}

TEST(SafetensorsBad, BeginAfterEnd) {
  expect_rejected(make_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", zeros(8)),
                  "w", "begin > end");
}

TEST(SafetensorsBad, OverlappingTensors) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  expect_rejected(make_file(header, zeros(12)), "v", "overlap tensor 'w'");
}

TEST(SafetensorsBad, SameRangeTwice) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  expect_rejected(make_file(header, zeros(8)), "", "overlap");
}

TEST(SafetensorsBad, GapBetweenTensors) {
  // huggingface/safetensors rejects holes in the data section; so do we.
  const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("v":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})";
  expect_rejected(make_file(header, zeros(16)), "v", "gap of 4 bytes");
}

TEST(SafetensorsBad, TrailingBytesAfterLastTensor) {
  expect_rejected(make_file(kGoodHeader, zeros(12)), "", "4 bytes after the last tensor");
}

TEST(SafetensorsBad, ByteSizeMismatch) {
  expect_rejected(make_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", zeros(8)),
                  "w", "hold 8 bytes but F32 shape [3] needs 12");
}

TEST(SafetensorsBad, MetadataNonString) {
  const std::string header = R"({"__metadata__":{"format":"pt","epoch":3},)"
                             R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  expect_rejected(make_file(header, zeros(8)), "",
                  "\"__metadata__\" entry 'epoch' must be a string");
}

TEST(SafetensorsBad, MetadataNotObject) {
  expect_rejected(make_file(R"({"__metadata__":["a"]})", {}), "",
                  "\"__metadata__\" must be an object");
}

TEST(SafetensorsBad, DuplicateTensorName) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})";
  expect_rejected(make_file(header, zeros(16)), "w", "duplicate name");
}

TEST(SafetensorsBad, DuplicateKeyInsideEntry) {
  expect_rejected(
      make_file(R"({"w":{"dtype":"F32","dtype":"I32","shape":[2],"data_offsets":[0,8]}})",
                zeros(8)),
      "", "duplicate key 'dtype'");
}

TEST(SafetensorsBad, ControlCharactersInNameStayOnOneLine) {
  expect_rejected(make_file(R"({"a\nb":{"dtype":"X","shape":[],"data_offsets":[0,0]}})", {}), "",
                  "tensor 'a\\x0ab'");
}

}  // namespace
}  // namespace cpuft
