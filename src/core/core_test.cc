#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/buffer.h"
#include "core/check.h"
#include "core/rng.h"
#include "core/timer.h"

namespace cpuft {
namespace {

TEST(Check, RequireThrowsErrorWithMessageOnly) {
  try {
    CPUFT_REQUIRE(1 + 1 == 3, "config.json: field 'x' is ", 7);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "config.json: field 'x' is 7");
  }
}

TEST(Check, CheckNamesFileAndLine) {
  try {
    CPUFT_CHECK(false, "n=", 3);
    FAIL() << "no throw";
  } catch (const Error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("core_test.cc:"), std::string::npos) << text;
    EXPECT_NE(text.find("n=3"), std::string::npos) << text;
  }
}

TEST(AlignedBuffer, IsAlignedAndZeroed) {
  AlignedBuffer<float> small(17), big(3 << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data()) % (2u << 20), 0u);
  for (size_t i = 0; i < big.size(); i += 4099) EXPECT_EQ(big[i], 0.0f);
  big[5] = 1;
  AlignedBuffer<float> moved = std::move(big);
  EXPECT_EQ(moved[5], 1.0f);
  EXPECT_EQ(big.data(), nullptr);
}

// FirstTouch::on_use: a big buffer reads as zero everywhere and holds no memory until written,
// then only the written pages (a 2 MiB huge page at most, here); the default holds every page from
// the start. Resident pages by mincore. Under AddressSanitizer buffers come from the heap and are
// touched at allocation either way.
TEST(AlignedBuffer, FirstTouchOnUseHoldsOnlyTheWrittenPages) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "heap buffers under AddressSanitizer";
#endif
  const size_t bytes = 64u << 20;
  auto resident = [&](const void* p) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> in(bytes / page);
    EXPECT_EQ(mincore(const_cast<void*>(p), bytes, in.data()), 0);
    size_t n = 0;
    for (unsigned char c : in) n += c & 1;
    return n * page;
  };
  AlignedBuffer<float> eager(bytes / sizeof(float));
  EXPECT_EQ(resident(eager.data()), bytes);
  AlignedBuffer<float> lazy(bytes / sizeof(float), FirstTouch::on_use);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(lazy.data()) % (2u << 20), 0u);
  EXPECT_EQ(resident(lazy.data()), 0u);
  lazy[1000] = 3.0f;
  const size_t after_one_write = resident(lazy.data());
  EXPECT_GT(after_one_write, 0u);
  EXPECT_LE(after_one_write, 2u << 20);
  double sum = 0;  // reads see zeros (the kernel's zero page)
  for (size_t i = 0; i < lazy.size(); i += 1000) sum += lazy[i];
  EXPECT_EQ(sum, 3.0);
  AlignedBuffer<float> moved = std::move(lazy);
  EXPECT_EQ(moved[1000], 3.0f);
}

// zero() clears every element, over several 2 MiB pieces and a partial last one (the pieces are
// zeroed on all OpenMP threads), and nothing past the end.
TEST(AlignedBuffer, ZeroClearsEveryPieceAndTheTail) {
  const size_t n = (5u << 20) / sizeof(float) + 13;  // 5 MiB and 13 floats
  AlignedBuffer<float> buffer(n + 1);
  for (size_t i = 0; i <= n; ++i) buffer[i] = 1.0f + static_cast<float>(i % 7);
  zero_bytes(buffer.data(), n * sizeof(float));
  size_t nonzero = 0;
  for (size_t i = 0; i < n; ++i) nonzero += buffer[i] != 0.0f;
  EXPECT_EQ(nonzero, 0u);
  EXPECT_EQ(buffer[n], 1.0f + static_cast<float>(n % 7));
  buffer.zero();
  EXPECT_EQ(buffer[n], 0.0f);
}

// release_zeroed on a range that starts and ends inside pages: every float of the range reads 0
// (whole pages handed back, the partial ones cleared), the neighbours keep their values.
TEST(AlignedBuffer, ReleaseZeroedClearsExactlyTheRange) {
  AlignedBuffer<float> b(3 << 20);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 1.0f + static_cast<float>(i % 5);
  const size_t begin = 1001, end = b.size() - 777;
  keep_small_pages(b.data() + begin, (end - begin) * sizeof(float));
  release_zeroed(b.data() + begin, (end - begin) * sizeof(float));
  for (size_t i = 0; i < b.size(); ++i) {
    const float want = i >= begin && i < end ? 0.0f : 1.0f + static_cast<float>(i % 5);
    ASSERT_EQ(b[i], want) << i;
  }
  release_zeroed(b.data() + 3, 8);  // no whole page inside: cleared by hand
  EXPECT_EQ(b[2], 3.0f);
  EXPECT_EQ(b[3], 0.0f);
  EXPECT_EQ(b[4], 0.0f);
  EXPECT_EQ(b[5], 1.0f);
}

// Known-answer test from the Random123 distribution (philox4x32_10, kat_vectors):
// counter = key = 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
TEST(Philox, KnownAnswer) {
  const auto out = philox4x32(RngKey{0, 0}, 0);
  EXPECT_EQ(out[0], 0x6627e8d5u);
  EXPECT_EQ(out[1], 0xe169c58du);
  EXPECT_EQ(out[2], 0xbc57ac4cu);
  EXPECT_EQ(out[3], 0x9b00dbd8u);
}

TEST(Philox, UniformIsInRangeAndRoughlyUniform) {
  RngKey key{42, dropout_stream(3, 2, 0)};
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float u = uniform_at(key, static_cast<uint64_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
}

TEST(Philox, StreamsDiffer) {
  std::set<uint64_t> streams;
  for (uint64_t step = 0; step < 8; ++step)
    for (uint32_t layer = 0; layer < 24; ++layer)
      for (uint32_t site = 0; site < 4; ++site) streams.insert(dropout_stream(step, layer, site));
  EXPECT_EQ(streams.size(), 8u * 24u * 4u);
}

TEST(Normal, MomentsAreStandard) {
  double s = 0, s2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = normal_at(RngKey{1, 2}, static_cast<uint64_t>(i));
    s += x;
    s2 += x * x;
  }
  EXPECT_NEAR(s / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 1.0, 0.02);
}

// A fresh folder under the system's temporary folder, removed at the end.
struct TempFolder {
  std::filesystem::path path;
  TempFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cpuft_core_XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempFolder() { std::filesystem::remove_all(path); }
  std::vector<std::string> names() const {
    std::vector<std::string> all;
    for (const auto& entry : std::filesystem::directory_iterator(path))
      all.push_back(entry.path().filename().string());
    std::sort(all.begin(), all.end());
    return all;
  }
};

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(AtomicFile, WritesAndReplacesLeavingNoTemporary) {
  TempFolder dir;
  const std::string path = (dir.path / "vocab.txt").string();
  write_file_atomically(path, "old\n");
  write_file_atomically(path, "new\n");
  EXPECT_EQ(read_all(path), "new\n");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"vocab.txt"});
}

TEST(AtomicFile, NotCommittedLeavesTheOldFile) {
  TempFolder dir;
  const std::string path = (dir.path / "model.safetensors").string();
  write_file_atomically(path, "old");
  {
    AtomicFile file(path);
    file.write("half of the new one");
    EXPECT_TRUE(is_atomic_temp_name(std::filesystem::path(file.temp_path()).filename().string()));
  }  // an exception on the way: destroyed without commit()
  EXPECT_EQ(read_all(path), "old");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"model.safetensors"});
}

// A write that fails half-way (the file-size limit: EFBIG, for any user) is one line naming the
// file and the reason; the old file is intact and no temporary is left.
TEST(AtomicFile, FailedWriteKeepsTheOldFileAndRemovesTheTemporary) {
  TempFolder dir;
  const std::string path = (dir.path / "tokenizer_config.json").string();
  write_file_atomically(path, "old");
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 4096;
  void (*previous)(int) = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    write_file_atomically(path, std::string(100000, 'x'));
  } catch (const Error& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  EXPECT_EQ(message, path + ": cannot write: " + os_reason(EFBIG));
  EXPECT_EQ(read_all(path), "old");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"tokenizer_config.json"});
}

// A full disk (a 64 KiB tmpfs; needs root): ENOSPC, the old file intact, no temporary.
TEST(AtomicFile, FullDiskKeepsTheOldFile) {
  TempFolder dir;
  if (::mount("tmpfs", dir.path.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs (" << os_reason(errno) << "; needs root)";
  const std::string path = (dir.path / "vocab.txt").string();
  std::string message;
  try {
    write_file_atomically(path, "old");
    write_file_atomically(path, std::string(1 << 20, 'x'));
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_EQ(message, path + ": cannot write: " + os_reason(ENOSPC));
  EXPECT_EQ(read_all(path), "old");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"vocab.txt"});
  ::umount(dir.path.c_str());
}

TEST(AtomicFile, MissingFolderIsOneLine) {
  try {
    write_file_atomically("/nonexistent-cpuft/config.json", "{}");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent-cpuft/config.json: cannot create "
              "/nonexistent-cpuft/config.json.tmp-" +
                  std::to_string(::getpid()) + ": " + os_reason(ENOENT));
  }
}

TEST(AtomicFile, TempNames) {
  EXPECT_TRUE(is_atomic_temp_name("vocab.txt.tmp-123"));
  EXPECT_FALSE(is_atomic_temp_name("vocab.txt"));
  EXPECT_FALSE(is_atomic_temp_name(".tmp-123"));
  EXPECT_FALSE(is_atomic_temp_name("notes.tmp-draft"));
  EXPECT_FALSE(is_atomic_temp_name("x.tmp-"));
}

TEST(Timer, FormatsDurations) {
  EXPECT_EQ(format_duration(6.2), "6s");
  EXPECT_EQ(format_duration(245), "4m05s");
  EXPECT_EQ(format_duration(466), "7m46s");
  EXPECT_EQ(format_duration(3723), "1h02m03s");
  EXPECT_EQ(format_duration(11 * 3600 + 22 * 60), "11h22m00s");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(format_duration(std::nan("")), "?");
}

}  // namespace
}  // namespace cpuft
