// Slow: every sentence of every GLUE TSV shipped in data/glue and every Unicode code point,
// through the Unigram tokenizer as DeBERTa-v3's (loaded from spm.model and from the tokenizer.json
// transformers 5 saves), must give Hugging Face's ids. HF's ids are summarized by
// tests/fixtures/deberta_spm_glue_digest.json (tools/make_deberta_spm_fixture.py): FNV-1a 64
// hashes per file and per 1000-row block, and per block of 4096 code points, for the hub's
// options and for do_lower_case + split_by_punct + add_prefix_space false.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "data/glue_digest_test_util.h"
#include "data/tokenizer_test_util.h"
#include "data/unigram_tokenizer.h"
#include "data/utf8.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using cpuft::testing::check_file_digest;
using cpuft::testing::digest_rows;
using cpuft::testing::fixture_path;
using cpuft::testing::fnv;
using cpuft::testing::glue_dir;
using cpuft::testing::hex;
using cpuft::testing::kFnvOffset;
using cpuft::testing::kSepText;
using cpuft::testing::read_all;
using cpuft::testing::read_rows;
using cpuft::testing::RowsDigest;

const json& digest() {
  static const json d = json::parse(read_all(fixture_path("deberta_spm_glue_digest.json")));
  return d;
}

TEST(UnigramDebertaGlue, EveryGlueSentenceMatchesHF) {
  std::map<std::string, UnigramTokenizer> by_source;
  by_source.emplace("spm.model",
                    UnigramTokenizer::from_folder(fixture_path("tokenizers/deberta_v3_unigram")));
  by_source.emplace("tokenizer.json", UnigramTokenizer::from_folder(
                                          fixture_path("tokenizers/deberta_v3_unigram_json")));
  const json& d = digest();
  const int max_length = d.at("max_length");
  const size_t block_rows = d.at("block_rows");
  for (const auto& [source, tok] : by_source) {
    size_t identical_rows = 0, rows_seen = 0, n_files = 0;
    for (const json& file : d.at("files")) {
      identical_rows +=
          check_file_digest(tok, file, glue_dir(), source, max_length, block_rows, &rows_seen);
      ++n_files;
    }
    EXPECT_EQ(n_files, 15u);
    EXPECT_GT(rows_seen, 100000u);
    std::printf("DeBERTa %s: %zu/%zu GLUE rows in blocks identical to HF\n", source.c_str(),
                identical_rows, rows_seen);
  }
}

// The digest's two texts of code point c: the whitespace rule and Strip at the end, NFC with
// combining marks.
void codepoint_texts(char32_t c, std::string& t1, std::string& t2) {
  t1.clear();
  append_utf8(t1, c);
  t1 += " a";
  append_utf8(t1, c);
  t1 += "b";
  append_utf8(t1, c);
  t2.clear();
  t2.push_back('e');
  append_utf8(t2, c);
  append_utf8(t2, 0x301);
  t2 += " ";
  append_utf8(t2, c);
  append_utf8(t2, 0x308);
  t2 += "x";
  append_utf8(t2, c);
  append_utf8(t2, c);
}

// Returns the number of blocks that differ from `want` (the digest's "codepoints" entry).
size_t codepoint_blocks_differing(const UnigramTokenizer& tok, const json& want,
                                  const std::string& label) {
  const char32_t block = want.at("block").get<char32_t>();
  const auto want_blocks = want.at("block_hashes").get<std::vector<std::string>>();
  EXPECT_EQ(want_blocks.size(), 0x110000 / block);
  size_t n_tokens = 0, bad_blocks = 0;
  std::string t1, t2;
  for (char32_t start = 0; start < 0x110000; start += block) {
    uint64_t h = kFnvOffset;
    for (char32_t c = start; c < start + block; ++c) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      codepoint_texts(c, t1, t2);
      for (const std::string* t : {&t1, &t2}) {
        const std::vector<int32_t> ids = tok.tokenize(*t);
        n_tokens += ids.size();
        fnv(h, ids, kSepText);
      }
    }
    if (hex(h) != want_blocks[start / block] && ++bad_blocks <= 10) {
      ADD_FAILURE() << label << ": code points U+" << std::hex << static_cast<uint32_t>(start)
                    << "..U+" << static_cast<uint32_t>(start + block - 1)
                    << " tokenize differently from HF";
    }
  }
  EXPECT_EQ(n_tokens, want.at("tokens").get<size_t>()) << label;
  std::printf("DeBERTa %s: %zu/%zu code point blocks identical to HF\n", label.c_str(),
              want_blocks.size() - bad_blocks, want_blocks.size());
  return bad_blocks;
}

// Every code point in two contexts, with the hub's options and with all three options on (which
// checks the Lowercase and punctuation tables against tokenizers too).
TEST(UnigramDebertaGlue, EveryCodePointMatchesHF) {
  const fs::path folder = fixture_path("tokenizers/deberta_v3_unigram");
  const UnigramTokenizer hub = UnigramTokenizer::from_folder(folder.string());
  EXPECT_EQ(codepoint_blocks_differing(hub, digest().at("codepoints"), "hub options"), 0u);
  const json& options = digest().at("codepoints_options");
  UnigramTokenizer::DebertaOptions o;
  o.do_lower_case = options.at("options").at("do_lower_case");
  o.split_by_punct = options.at("options").at("split_by_punct");
  o.add_prefix_space = options.at("options").at("add_prefix_space");
  const UnigramTokenizer all = UnigramTokenizer::from_deberta_model(
      read_all((folder / "spm.model").string()), "spm.model", o);
  EXPECT_EQ(codepoint_blocks_differing(all, options, "all options"), 0u);
}

}  // namespace
}  // namespace cpuft
