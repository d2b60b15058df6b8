// Slow: every sentence of every GLUE TSV shipped in data/glue, tokenized with the bert-base uncased
// and cased settings, must give Hugging Face's ids. HF's ids are summarized by
// tests/fixtures/tokenizer_glue_digest.json (tools/make_tokenizer_fixture.py): one FNV-1a 64 hash
// per file and setting, and one per 1000-row block so that a failure names the rows.
#include <gtest/gtest.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/glue_digest_test_util.h"
#include "data/tokenizer_test_util.h"
#include "data/utf8.h"
#include "data/wordpiece_tokenizer.h"

namespace cpuft {
namespace {

using json = nlohmann::json;
using cpuft::testing::glue_dir;
using cpuft::testing::minilm_dir;
using cpuft::testing::source_dir;
using cpuft::testing::vocab_path;

using cpuft::testing::fnv;
using cpuft::testing::hex;
using cpuft::testing::kFnvOffset;
using cpuft::testing::kSepIds;
using cpuft::testing::kSepText;
using cpuft::testing::kSepTypes;
using cpuft::testing::read_all;
using cpuft::testing::read_rows;

struct RowsDigest {
  size_t tokens = 0;
  std::string hash;
  std::vector<std::string> blocks;
};

// The digest of tools/make_tokenizer_fixture.py over `rows`: per row, each text's ids, then the
// encoding's input_ids and token_type_ids.
RowsDigest digest_rows(const WordPieceTokenizer& tok,
                       const std::vector<std::vector<std::string>>& rows, int max_length,
                       size_t block_rows) {
  RowsDigest d;
  uint64_t h = kFnvOffset, block = kFnvOffset;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    for (const std::string& text : r) {
      const std::vector<int32_t> ids = tok.tokenize(text);
      d.tokens += ids.size();
      fnv(h, ids, kSepText);
      fnv(block, ids, kSepText);
    }
    const std::string_view b = r.size() > 1 ? std::string_view(r[1]) : std::string_view();
    const Encoding e = tok.encode(r[0], r.size() > 1 ? &b : nullptr, max_length);
    for (uint64_t* x : {&h, &block}) {
      fnv(*x, e.input_ids, kSepIds);
      fnv(*x, e.token_type_ids, kSepTypes);
    }
    if ((i + 1) % block_rows == 0 || i + 1 == rows.size()) {
      d.blocks.push_back(hex(block));
      block = kFnvOffset;
    }
  }
  d.hash = hex(h);
  return d;
}

// Reports the first block of rows whose digest differs.
void expect_blocks(const std::string& what, const std::vector<std::vector<std::string>>& rows,
                   const std::vector<std::string>& got, const std::vector<std::string>& want,
                   size_t block_rows) {
  EXPECT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
    if (got[k] == want[k]) continue;
    ADD_FAILURE() << what << ": ids differ from HF in data rows " << k * block_rows << ".."
                  << std::min(rows.size(), (k + 1) * block_rows) - 1
                  << " (0-based, after the header); first row of the block: "
                  << ::testing::PrintToString(rows[k * block_rows]);
    break;
  }
}

// Every code point c as "<c> a<c>b": the per-block digests and the token count.
void expect_codepoints(const std::string& what, const WordPieceTokenizer& tok, const json& want,
                       char32_t block) {
  const auto want_blocks = want.at("block_hashes").get<std::vector<std::string>>();
  ASSERT_EQ(want_blocks.size(), 0x110000 / block) << what;
  size_t n_tokens = 0, bad_blocks = 0;
  std::string text;
  for (char32_t start = 0; start < 0x110000; start += block) {
    uint64_t h = kFnvOffset;
    for (char32_t c = start; c < start + block; ++c) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      text.clear();
      append_utf8(text, c);
      text += " a";
      append_utf8(text, c);
      text += "b";
      const std::vector<int32_t> ids = tok.tokenize(text);
      n_tokens += ids.size();
      fnv(h, ids, kSepText);
    }
    if (hex(h) != want_blocks[start / block] && ++bad_blocks <= 10) {
      ADD_FAILURE() << what << ": code points U+" << std::hex << static_cast<uint32_t>(start)
                    << "..U+" << static_cast<uint32_t>(start + block - 1)
                    << " tokenize differently from HF";
    }
  }
  EXPECT_EQ(bad_blocks, 0u) << what;
  EXPECT_EQ(n_tokens, want.at("tokens").get<size_t>()) << what;
}

TEST(TokenizerGlue, EveryGlueSentenceMatchesHF) {
  const json digest =
      json::parse(read_all(source_dir() + "/tests/fixtures/tokenizer_glue_digest.json"));
  const int max_length = digest.at("max_length");
  const size_t block_rows = digest.at("block_rows");
  auto load = [&](const char* file, bool lower) {
    std::vector<std::string> vocab;
    std::ifstream in(vocab_path(file));
    for (std::string line; std::getline(in, line);) vocab.push_back(line);
    TokenizerOptions opt;
    opt.do_lower_case = lower;
    return WordPieceTokenizer(std::move(vocab), opt);
  };
  const std::map<std::string, WordPieceTokenizer> tokenizers = {
      {"uncased", load("bert-base-uncased-vocab.txt", true)},
      {"cased", load("bert-base-cased-vocab.txt", false)}};

  size_t n_files = 0;
  for (const json& file : digest.at("files")) {
    const std::string rel = file.at("path");
    const std::string path = source_dir() + "/data/" + rel;
    const auto rows = read_rows(path, file.at("header"), file.at("columns"));
    ASSERT_EQ(rows.size(), file.at("rows").get<size_t>()) << path;
    ++n_files;
    for (const auto& [name, tok] : tokenizers) {
      const json& want = file.at("configs").at(name);
      const auto t0 = std::chrono::steady_clock::now();
      uint64_t h = kFnvOffset, block = kFnvOffset;
      size_t n_tokens = 0, n_bytes = 0;
      std::vector<std::string> blocks;
      for (size_t i = 0; i < rows.size(); ++i) {
        const auto& r = rows[i];
        for (const std::string& text : r) {
          const std::vector<int32_t> ids = tok.tokenize(text);
          n_tokens += ids.size();
          n_bytes += text.size();
          fnv(h, ids, kSepText);
          fnv(block, ids, kSepText);
        }
        const std::string_view b = r.size() > 1 ? std::string_view(r[1]) : std::string_view();
        const Encoding e = tok.encode(r[0], r.size() > 1 ? &b : nullptr, max_length);
        for (uint64_t* x : {&h, &block}) {
          fnv(*x, e.input_ids, kSepIds);
          fnv(*x, e.token_type_ids, kSepTypes);
        }
        if ((i + 1) % block_rows == 0 || i + 1 == rows.size()) {
          blocks.push_back(hex(block));
          block = kFnvOffset;
        }
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_EQ(n_tokens, want.at("tokens").get<size_t>()) << rel << " " << name;
      EXPECT_EQ(hex(h), want.at("hash").get<std::string>()) << rel << " " << name;
      const auto want_blocks = want.at("block_hashes").get<std::vector<std::string>>();
      for (size_t k = 0; k < blocks.size() && k < want_blocks.size(); ++k) {
        if (blocks[k] == want_blocks[k]) continue;
        ADD_FAILURE() << rel << " (" << name << "): ids differ from HF in data rows "
                      << k * block_rows << ".." << std::min(rows.size(), (k + 1) * block_rows) - 1
                      << " (0-based, after the header); first row of the block: "
                      << ::testing::PrintToString(rows[k * block_rows]);
        break;
      }
      if (rel == "glue/MRPC/train.tsv") {
        // One thread; tokenize + encode, i.e. every sentence tokenized twice.
        std::printf("%s %s: %zu rows, %zu tokens, %.3f s, %.0f tokens/s (tokenize + encode)\n",
                    rel.c_str(), name.c_str(), rows.size(), n_tokens, s,
                    2.0 * static_cast<double>(n_tokens) / s);
      }
    }
  }
  EXPECT_GE(n_files, 15u);
}

// Every Unicode code point through the whole pipeline (normalizer, pre-tokenizer, WordPiece),
// against HF's per-block digests: this is what checks the generated character tables.
TEST(TokenizerGlue, EveryCodePointMatchesHF) {
  const json digest =
      json::parse(read_all(source_dir() + "/tests/fixtures/tokenizer_glue_digest.json"));
  const json& cp = digest.at("codepoints");
  const char32_t block = cp.at("block").get<char32_t>();
  for (const auto& [name, want] : cp.at("configs").items()) {
    TokenizerOptions opt;
    std::string vocab_file = "bert-base-uncased-vocab.txt";
    if (name == "cased") {
      opt.do_lower_case = false;
      vocab_file = "bert-base-cased-vocab.txt";
    } else if (name == "uncased_keep_accents") {
      opt.strip_accents = false;
    } else {
      ASSERT_EQ(name, "uncased");
    }
    std::vector<std::string> vocab;
    std::ifstream in(vocab_path(vocab_file));
    for (std::string line; std::getline(in, line);) vocab.push_back(line);
    const WordPieceTokenizer tok(std::move(vocab), opt);
    expect_codepoints(name, tok, want, block);
  }
}

// The folders with tokenizer.json (tests/fixtures/tokenizers, tools/make_tokenizer_json_fixture.py)
// read by from_folder: every GLUE sentence and every code point against AutoTokenizer's ids.
TEST(TokenizerGlue, TokenizerJsonFoldersMatchHF) {
  const std::string dir = source_dir() + "/tests/fixtures/tokenizers";
  const json digest = json::parse(read_all(dir + "/digest.json"));
  const int max_length = digest.at("max_length");
  const size_t block_rows = digest.at("block_rows");
  std::map<std::string, std::vector<std::vector<std::string>>> rows;
  for (const json& file : digest.at("files")) {
    const std::string rel = file.at("path");
    rows[rel] = read_rows(source_dir() + "/data/" + rel, file.at("header"), file.at("columns"));
    ASSERT_EQ(rows[rel].size(), file.at("rows").get<size_t>()) << rel;
  }
  EXPECT_GE(rows.size(), 15u);
  for (const auto& [name, want] : digest.at("folders").items()) {
    const WordPieceTokenizer tok = WordPieceTokenizer::from_folder(dir + "/" + name);
    for (const auto& [rel, file_rows] : rows) {
      const json& w = want.at("files").at(rel);
      const RowsDigest d = digest_rows(tok, file_rows, max_length, block_rows);
      EXPECT_EQ(d.tokens, w.at("tokens").get<size_t>()) << name << " " << rel;
      EXPECT_EQ(d.hash, w.at("hash").get<std::string>()) << name << " " << rel;
      expect_blocks(name + " " + rel, file_rows, d.blocks,
                    w.at("block_hashes").get<std::vector<std::string>>(), block_rows);
    }
    expect_codepoints(name, tok, want.at("codepoints"),
                      digest.at("codepoint_block").get<char32_t>());
  }
  EXPECT_GE(digest.at("folders").size(), 6u);
}

// Tokenizing speed on MRPC train, one thread: words (whitespace-separated) and tokens per second.
TEST(TokenizerGlue, SpeedMrpcTrain) {
  const auto rows = read_rows(glue_dir() + "/MRPC/train.tsv", true, {3, 4});
  const WordPieceTokenizer tok = WordPieceTokenizer::from_folder(minilm_dir());
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
      "MRPC train (uncased, 1 thread, best of 5): %zu words, %zu tokens in %.4f s: "
      "%.0f words/s, %.0f tokens/s\n",
      words, tokens, best, static_cast<double>(words) / best, static_cast<double>(tokens) / best);
  EXPECT_GT(tokens, 0u);
}

}  // namespace
}  // namespace cpuft
