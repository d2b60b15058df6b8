// NFC (data/unicode_normalize.h) against Hugging Face tokenizers' NFC normalizer, and the
// byte-level BPE tokenizer with an NFC normalizer (ModernBERT's kind) against transformers' ids:
//   tests/fixtures/nfc_cases.jsonl       tools/make_composition_table.py: text, tokenizers' NFC
//   tests/fixtures/tokenizers/nfc_bpe/   tools/make_nfc_bpe_fixture.py: a ModernBERT-style
//   tests/fixtures/nfc_bpe_cases.jsonl   tokenizer.json and AutoTokenizer's input_ids with it
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/byte_level_bpe_tokenizer.h"
#include "data/tokenizer.h"
#include "data/unicode_normalize.h"
#include "test_paths.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::fixture_path;

std::vector<json> read_jsonl(const std::string& name) {
  std::ifstream in(fixture_path(name));
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

TEST(Nfc, EveryCaseAsTokenizersNormalizes) {
  const std::vector<json> cases = read_jsonl("nfc_cases.jsonl");
  ASSERT_GT(cases.size(), 500u);
  size_t bad = 0, changed = 0;
  std::string out;
  for (const json& c : cases) {
    const std::string text = c.at("text"), want = c.at("nfc");
    unicode::nfc_utf8(text, out);
    changed += want != text;
    if (out != want && ++bad <= 5)
      ADD_FAILURE() << ::testing::PrintToString(text)
                    << "\n  cpuft: " << ::testing::PrintToString(out)
                    << "\n  HF:    " << ::testing::PrintToString(want);
  }
  EXPECT_EQ(bad, 0u);
  EXPECT_GT(changed, cases.size() / 2) << "most cases should change under NFC";
}

TEST(Nfc, ComposesBlocksAndReorders) {
  std::string out;
  unicode::nfc_utf8("e\xCC\x81", out);  // e + COMBINING ACUTE -> é
  EXPECT_EQ(out, "\xC3\xA9");
  // a + dot below (ccc 220) + circumflex (230), given in the other order: ordering puts the dot
  // first, then both compose: ậ (U+1EAD).
  unicode::nfc_utf8("a\xCC\x82\xCC\xA3", out);
  EXPECT_EQ(out, "\xE1\xBA\xAD");
  // Hangul: L + V + T -> one syllable (한, U+D55C).
  unicode::nfc_utf8("\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB", out);
  EXPECT_EQ(out, "\xED\x95\x9C");
  // A composition exclusion stays decomposed (U+0958 -> U+0915 U+093C).
  unicode::nfc_utf8("\xE0\xA5\x98", out);
  EXPECT_EQ(out, "\xE0\xA4\x95\xE0\xA4\xBC");
  unicode::nfc_utf8("plain", out);
  EXPECT_EQ(out, "plain");
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("cpuft_nfc_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

// Compares every case; returns how many differ.
size_t differing(const Tokenizer& tok, const std::vector<json>& cases, bool report) {
  size_t bad = 0;
  for (const json& c : cases) {
    const std::string a = c.at("a");
    const std::string b = c.value("b", "");
    const std::string_view bv = b;
    const Encoding e = tok.encode(a, c.contains("b") ? &bv : nullptr, -1);
    const std::vector<int32_t> want = c.at("input_ids").get<std::vector<int32_t>>();
    if (e.input_ids != want && ++bad <= 5 && report)
      ADD_FAILURE() << ::testing::PrintToString(a)
                    << "\n  cpuft: " << ::testing::PrintToString(e.input_ids)
                    << "\n  HF:    " << ::testing::PrintToString(want);
  }
  return bad;
}

TEST(NfcBpe, IdsAreTransformers) {
  const std::vector<json> cases = read_jsonl("nfc_bpe_cases.jsonl");
  ASSERT_GT(cases.size(), 1000u);
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(fixture_path("tokenizers/nfc_bpe"));
  EXPECT_EQ(differing(*tok, cases, true), 0u);

  // The normalizer matters: without it, some cases give other ids.
  TempDir plain;
  const fs::path from = fixture_path("tokenizers/nfc_bpe");
  for (const char* f : {"tokenizer_config.json", "special_tokens_map.json"})
    fs::copy_file(from / f, plain.path / f);
  std::ifstream in(from / "tokenizer.json");
  json tj = json::parse(in);
  tj["normalizer"] = nullptr;
  std::ofstream(plain.path / "tokenizer.json") << tj.dump();
  EXPECT_GT(differing(*load_tokenizer(plain.path.string()), cases, false), 50u);
}

// save() writes the normalizer back: the saved folder gives the same ids.
TEST(NfcBpe, SaveKeepsTheNormalizer) {
  const auto tok = ByteLevelBpeTokenizer::from_folder(fixture_path("tokenizers/nfc_bpe"));
  EXPECT_TRUE(tok.options().nfc);
  TempDir saved;
  tok.save(saved.path.string());
  std::ifstream in(saved.path / "tokenizer.json");
  EXPECT_EQ(json::parse(in).at("normalizer"), json({{"type", "NFC"}}));
  EXPECT_EQ(
      differing(*load_tokenizer(saved.path.string()), read_jsonl("nfc_bpe_cases.jsonl"), true), 0u);
}

}  // namespace
}  // namespace cpuft
