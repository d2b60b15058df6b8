// Slow: every sentence of every GLUE TSV shipped in data/glue and every Unicode code point, through
// the Unigram (XLM-R) tokenizer loaded both ways (tokenizer.json, sentencepiece.bpe.model), must
// give Hugging Face's ids. HF's ids are summarized by tests/fixtures/spm_glue_digest.json
// (tools/make_spm_fixture.py): FNV-1a 64 hashes per file and per 1000-row block, and per block of
// 4096 code points.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/glue_digest_test_util.h"
#include "data/tokenizer_test_util.h"
#include "data/unigram_tokenizer.h"
#include "data/utf8.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using cpuft::testing::fixture_path;
using cpuft::testing::glue_dir;

using cpuft::testing::check_file_digest;
using cpuft::testing::digest_rows;
using cpuft::testing::fnv;
using cpuft::testing::hex;
using cpuft::testing::kFnvOffset;
using cpuft::testing::kSepIds;
using cpuft::testing::kSepText;
using cpuft::testing::kSepTypes;
using cpuft::testing::read_all;
using cpuft::testing::read_rows;
using cpuft::testing::RowsDigest;

const json& digest() {
  static const json d = json::parse(read_all(fixture_path("spm_glue_digest.json")));
  return d;
}

// The fixture folder loaded from tokenizer.json (as it is) and from sentencepiece.bpe.model
// (with its two config files, without tokenizer.json).
struct Tokenizers {
  fs::path spm_dir;
  std::map<std::string, UnigramTokenizer> by_source;
  Tokenizers() {
    const fs::path src = fixture_path("tokenizers/xlmr_unigram");
    spm_dir = fs::temp_directory_path() / ("cpuft_unigram_glue_" + std::to_string(::getpid()));
    fs::remove_all(spm_dir);
    fs::create_directories(spm_dir);
    for (const char* f :
         {"sentencepiece.bpe.model", "tokenizer_config.json", "special_tokens_map.json"})
      fs::copy_file(src / f, spm_dir / f);
    by_source.emplace("tokenizer.json", UnigramTokenizer::from_folder(src.string()));
    by_source.emplace("sentencepiece.bpe.model", UnigramTokenizer::from_folder(spm_dir.string()));
  }
  ~Tokenizers() {
    std::error_code ec;
    fs::remove_all(spm_dir, ec);
  }
};

TEST(UnigramGlue, EveryGlueSentenceMatchesHF) {
  const Tokenizers toks;
  const json& d = digest();
  const int max_length = d.at("max_length");
  const size_t block_rows = d.at("block_rows");
  size_t n_files = 0, n_rows = 0;
  for (const auto& [source, tok] : toks.by_source) {
    size_t identical_rows = 0, rows_seen = 0;
    for (const json& file : d.at("files")) {
      identical_rows +=
          check_file_digest(tok, file, glue_dir(), source, max_length, block_rows, &rows_seen);
      ++n_files;
    }
    n_rows += rows_seen;
    std::printf("%s: %zu/%zu GLUE rows in blocks identical to HF\n", source.c_str(), identical_rows,
                rows_seen);
  }
  EXPECT_EQ(n_files, 2 * 15u);
  EXPECT_GT(n_rows, 2 * 100000u);
}

// Every code point in two contexts (alone next to letters; inside grapheme clusters with
// combining marks), which is what checks the grapheme tables and the charsmap walk. One loading
// path: unigram_tokenizer_test's BothLoadingPathsGiveTheSameTokenizer shows they build the same.
TEST(UnigramGlue, EveryCodePointMatchesHF) {
  Tokenizers toks;
  toks.by_source.erase("sentencepiece.bpe.model");
  const json& cp = digest().at("codepoints");
  const char32_t block = cp.at("block").get<char32_t>();
  const auto want_blocks = cp.at("block_hashes").get<std::vector<std::string>>();
  ASSERT_EQ(want_blocks.size(), 0x110000 / block);
  for (const auto& [source, tok] : toks.by_source) {
    size_t n_tokens = 0, bad_blocks = 0;
    std::string t1, t2;
    for (char32_t start = 0; start < 0x110000; start += block) {
      uint64_t h = kFnvOffset;
      for (char32_t c = start; c < start + block; ++c) {
        if (c >= 0xD800 && c <= 0xDFFF) continue;
        t1.clear();
        append_utf8(t1, c);
        t1 += " a";
        append_utf8(t1, c);
        t1 += "b";
        t2.clear();
        t2.push_back('e');
        append_utf8(t2, c);
        append_utf8(t2, 0x301);
        t2 += " ";
        append_utf8(t2, c);
        append_utf8(t2, 0x308);
        t2 += "x";
        for (const std::string* t : {&t1, &t2}) {
          const std::vector<int32_t> ids = tok.tokenize(*t);
          n_tokens += ids.size();
          fnv(h, ids, kSepText);
        }
      }
      if (hex(h) != want_blocks[start / block] && ++bad_blocks <= 10) {
        ADD_FAILURE() << source << ": code points U+" << std::hex << static_cast<uint32_t>(start)
                      << "..U+" << static_cast<uint32_t>(start + block - 1)
                      << " tokenize differently from HF";
      }
    }
    EXPECT_EQ(bad_blocks, 0u) << source;
    EXPECT_EQ(n_tokens, cp.at("tokens").get<size_t>()) << source;
    std::printf("%s: %zu/%zu code point blocks identical to HF\n", source.c_str(),
                want_blocks.size() - bad_blocks, want_blocks.size());
  }
}

// Tokenizing speed on MRPC train, one thread: words (whitespace-separated) and tokens per second.
TEST(UnigramGlue, SpeedMrpcTrain) {
  const auto rows = read_rows(glue_dir() + "/MRPC/train.tsv", true, {3, 4});
  const UnigramTokenizer tok =
      UnigramTokenizer::from_folder(fixture_path("tokenizers/xlmr_unigram"));
  size_t words = 0;
  for (const auto& r : rows) {
    for (const std::string& t : r) {
      std::istringstream in(t);
      for (std::string w; in >> w;) ++words;
    }
  }
  double best = 1e9;
  size_t tokens = 0;
  for (int rep = 0; rep < 5; ++rep) {
    tokens = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& r : rows)
      for (const std::string& t : r) tokens += tok.tokenize(t).size();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf(
      "MRPC train (Unigram, 1 thread, best of 5): %zu words, %zu tokens in %.4f s: "
      "%.0f words/s, %.0f tokens/s\n",
      words, tokens, best, static_cast<double>(words) / best, static_cast<double>(tokens) / best);
  EXPECT_GT(tokens, 0u);
}

}  // namespace
}  // namespace cpuft
