// Slow: the byte-level BPE tokenizer (RoBERTa settings "roberta" and "roberta_prefix") on every
// row of every GLUE TSV in data/glue, and on every Unicode code point, against Hugging Face's ids
// as summarized by tests/fixtures/bpe_glue_digest.json (tools/make_bpe_fixture.py): FNV-1a 64
// hashes per file and setting, and per 1000-row block so that a failure names the rows. Also the
// tokenizing speed on MRPC train, one thread.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/byte_level_bpe_tokenizer.h"
#include "data/glue_digest_test_util.h"
#include "data/tokenizer_test_util.h"
#include "data/utf8.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using cpuft::testing::fixture_path;
using cpuft::testing::glue_dir;

using cpuft::testing::digest_rows;
using cpuft::testing::fnv;
using cpuft::testing::hex;
using cpuft::testing::kFnvOffset;
using cpuft::testing::kFnvPrime;
using cpuft::testing::kSepIds;
using cpuft::testing::kSepText;
using cpuft::testing::kSepTypes;
using cpuft::testing::read_all;
using cpuft::testing::read_rows;
using cpuft::testing::RowsDigest;

// The folder of a setting of bpe_settings.json, built as the fixture script builds it.
struct SettingDir {
  fs::path path;
  explicit SettingDir(const std::string& name) {
    path = fs::temp_directory_path() / ("cpuft_bpe_glue_" + std::to_string(::getpid()) + name);
    fs::remove_all(path);
    fs::create_directories(path);
    const json settings = json::parse(read_all(fixture_path("tokenizers/bpe_settings.json")));
    const json& s = settings.at(name);
    const fs::path from = fixture_path("tokenizers/" + s.at("folder").get<std::string>());
    for (const json& f : s.at("files"))
      fs::copy_file(from / f.get<std::string>(), path / f.get<std::string>());
    if (s.contains("tokenizer_config")) {
      std::ofstream(path / "tokenizer_config.json") << s.at("tokenizer_config").dump(2);
    }
  }
  ~SettingDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

ByteLevelBpeTokenizer load_setting(const std::string& name) {
  const SettingDir dir(name);
  return ByteLevelBpeTokenizer::from_folder(dir.path.string());
}

// Every row of the digest's GLUE files through `tokenizer_of(setting)`; returns the rows compared.
size_t check_glue_digest(
    const json& digest,
    const std::function<ByteLevelBpeTokenizer(const std::string&)>& tokenizer_of) {
  const int max_length = digest.at("max_length");
  const size_t block_rows = digest.at("block_rows");
  size_t n_rows = 0;
  for (const json& file : digest.at("files")) {
    const std::string rel = file.at("path");
    const auto rows = read_rows(glue_dir() + "/" + rel, file.at("header"), file.at("columns"));
    EXPECT_EQ(rows.size(), file.at("rows").get<size_t>()) << rel;
    n_rows += rows.size();
    for (const auto& [name, want] : file.at("settings").items()) {
      const ByteLevelBpeTokenizer tok = tokenizer_of(name);
      const RowsDigest got = digest_rows(tok, rows, max_length, block_rows);
      const size_t n_tokens = got.tokens;
      const std::vector<std::string>& blocks = got.blocks;
      EXPECT_EQ(n_tokens, want.at("tokens").get<size_t>()) << rel << " " << name;
      EXPECT_EQ(got.hash, want.at("hash").get<std::string>()) << rel << " " << name;
      const auto want_blocks = want.at("block_hashes").get<std::vector<std::string>>();
      EXPECT_EQ(blocks.size(), want_blocks.size()) << rel << " " << name;
      for (size_t k = 0; k < blocks.size() && k < want_blocks.size(); ++k) {
        if (blocks[k] == want_blocks[k]) continue;
        ADD_FAILURE() << rel << " (" << name << "): ids differ from HF in data rows "
                      << k * block_rows << ".." << std::min(rows.size(), (k + 1) * block_rows) - 1
                      << " (0-based, after the header); first row of the block: "
                      << ::testing::PrintToString(rows[k * block_rows]);
      }
    }
  }
  EXPECT_EQ(n_rows, digest.at("total_rows").get<size_t>());
  EXPECT_EQ(digest.at("files").size(), 15u);
  return n_rows;
}

TEST(BpeGlue, EveryGlueRowMatchesHF) {
  const json digest = json::parse(read_all(fixture_path("bpe_glue_digest.json")));
  const size_t n_rows = check_glue_digest(digest, load_setting);
  std::printf("15 GLUE files, %zu rows compared with HF (settings roberta, roberta_prefix)\n",
              n_rows);
}

// GPT-2's real vocabulary and 50,000 merges (the merges of roberta-base) under RobertaTokenizer,
// when scripts/fetch_gpt2_bpe.sh has put them in CPUFT_GPT2_BPE_DIR (default
// ~/.cache/cpuft/models/gpt2-bpe): every GLUE row and every hard text against HF.
TEST(BpeGlue, RealGpt2VocabularyMatchesHF) {
  const char* env = std::getenv("CPUFT_GPT2_BPE_DIR");
  const char* home = std::getenv("HOME");
  const fs::path src = env && *env
                           ? fs::path(env)
                           : fs::path(home ? home : "/root") / ".cache/cpuft/models/gpt2-bpe";
  if (!fs::exists(src / "vocab.json") || !fs::exists(src / "merges.txt"))
    GTEST_SKIP() << "GPT-2's vocab.json + merges.txt not in " << src
                 << " (scripts/fetch_gpt2_bpe.sh fetches them)";
  const json digest = json::parse(read_all(fixture_path("bpe_gpt2_digest.json")));
  const fs::path dir = fs::temp_directory_path() / ("cpuft_bpe_gpt2_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"vocab.json", "merges.txt"}) fs::copy_file(src / f, dir / f);
  std::ofstream(dir / "tokenizer_config.json") << digest.at("tokenizer_config").dump();
  const ByteLevelBpeTokenizer tok = ByteLevelBpeTokenizer::from_folder(dir.string());
  fs::remove_all(dir);
  EXPECT_EQ(tok.vocab_size(), 50257);
  const size_t n_rows = check_glue_digest(digest, [&](const std::string&) { return tok; });
  const auto texts = digest.at("texts").get<std::vector<std::string>>();
  const auto want = digest.at("hard_text_hashes").get<std::vector<std::string>>();
  ASSERT_EQ(texts.size(), want.size());
  for (size_t k = 0; k < texts.size(); ++k) {
    const std::vector<int32_t> ids = tok.tokenize(texts[k]);
    uint64_t g = kFnvOffset;  // the ids alone, no separator
    for (const int32_t id : ids) {
      for (int b = 0; b < 4; ++b) {
        g ^= (static_cast<uint32_t>(id) >> (8 * b)) & 0xFF;
        g *= kFnvPrime;
      }
    }
    EXPECT_EQ(hex(g), want[k]) << "hard text " << k << ": " << ::testing::PrintToString(texts[k]);
  }
  // Speed at roberta-base's scale: MRPC train, one thread, without and with the word cache.
  const auto rows = read_rows(glue_dir() + "/MRPC/train.tsv", true, {3, 4});
  ByteLevelBpeTokenizer timed = tok;
  for (const size_t cache : {size_t{0}, size_t{10000}}) {
    timed.set_cache_words(cache);
    double best = 1e9;
    size_t tokens = 0;
    for (int rep = 0; rep < 3; ++rep) {
      tokens = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (const auto& r : rows)
        for (const std::string& t : r) tokens += timed.tokenize(t).size();
      best = std::min(best,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf(
        "MRPC train (GPT-2 vocabulary, 1 thread, best of 3, word cache %zu): %zu tokens "
        "in %.4f s: %.0f tokens/s\n",
        cache, tokens, best, static_cast<double>(tokens) / best);
  }
  std::printf(
      "GPT-2 vocabulary (50,257 tokens, 50,000 merges): %zu GLUE rows and %zu hard texts "
      "compared with HF\n",
      n_rows, texts.size());
}

// Every code point through the whole pipeline: checks the regex classes of byte_level_tables.cc
// and the byte map against HF.
TEST(BpeGlue, EveryCodePointMatchesHF) {
  const json cp = json::parse(read_all(fixture_path("bpe_glue_digest.json"))).at("codepoints");
  const ByteLevelBpeTokenizer tok = load_setting(cp.at("setting"));
  const char32_t block = cp.at("block").get<char32_t>();
  const auto want = cp.at("block_hashes").get<std::vector<std::string>>();
  ASSERT_EQ(want.size(), 0x110000 / block);
  size_t n_tokens = 0, bad = 0;
  std::string text;
  for (char32_t start = 0; start < 0x110000; start += block) {
    uint64_t h = kFnvOffset;
    for (char32_t c = start; c < start + block; ++c) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      text.clear();  // c " a" c "b 1" c " " c c "!"
      append_utf8(text, c);
      text += " a";
      append_utf8(text, c);
      text += "b 1";
      append_utf8(text, c);
      text += " ";
      append_utf8(text, c);
      append_utf8(text, c);
      text += "!";
      const std::vector<int32_t> ids = tok.tokenize(text);
      n_tokens += ids.size();
      fnv(h, ids, kSepText);
    }
    if (hex(h) != want[start / block] && ++bad <= 10) {
      ADD_FAILURE() << "code points U+" << std::hex << static_cast<uint32_t>(start) << "..U+"
                    << static_cast<uint32_t>(start + block - 1) << " tokenize differently from HF";
    }
  }
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(n_tokens, cp.at("tokens").get<size_t>());
}

// Tokenizing speed on MRPC train (both sentences of every row), one thread.
// Without the word cache, then with it (its first pass fills it, as a first epoch would).
TEST(BpeGlue, SpeedMrpcTrain) {
  const auto rows = read_rows(glue_dir() + "/MRPC/train.tsv", true, {3, 4});
  ByteLevelBpeTokenizer tok = load_setting("roberta");
  for (const size_t cache : {size_t{0}, size_t{10000}}) {
    tok.set_cache_words(cache);
    double best = 1e9;
    size_t tokens = 0, bytes = 0;
    for (int rep = 0; rep < 5; ++rep) {
      tokens = bytes = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (const auto& r : rows) {
        for (const std::string& t : r) {
          tokens += tok.tokenize(t).size();
          bytes += t.size();
        }
      }
      best = std::min(best,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf(
        "MRPC train (byte-level BPE, 1 thread, best of 5, word cache %zu): %zu texts, %zu bytes, "
        "%zu tokens in %.4f s: %.0f tokens/s, %.1f MB/s\n",
        cache, 2 * rows.size(), bytes, tokens, best, static_cast<double>(tokens) / best,
        static_cast<double>(bytes) / best / 1e6);
    EXPECT_GT(tokens, 0u);
  }
}

}  // namespace
}  // namespace cpuft
