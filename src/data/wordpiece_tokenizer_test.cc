#include "data/wordpiece_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "data/tokenizer_test_util.h"
#include "data/unicode_tables.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using cpuft::testing::message_of;
using cpuft::testing::minilm_dir;
using cpuft::testing::source_dir;
using cpuft::testing::TempDir;
using cpuft::testing::vocab_path;

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A small vocabulary for rules that do not need HF's.
WordPieceTokenizer tiny(TokenizerOptions opt = {}) {
  std::vector<std::string> vocab = {
      "[PAD]", "[UNK]",     "[CLS]", "[SEP]",    "[MASK]", "un",     "##aff",       "##able", "a",
      "b",     "##b",       ",",     "!",        "runn",   "##ing",  "run",         "\u00e9", "e",
      "cafe",  "caf\u00e9", "i",     "##\u0307", "\u4e2d", "\u6587", "\u4e2d\u6587"};
  return WordPieceTokenizer(std::move(vocab), std::move(opt));
}

TEST(WordPiece, GreedyLongestMatchFirst) {
  const WordPieceTokenizer t = tiny();
  using V = std::vector<std::string>;
  EXPECT_EQ(t.tokenize_to_strings("unaffable"), (V{"un", "##aff", "##able"}));
  EXPECT_EQ(t.tokenize_to_strings("running"), (V{"runn", "##ing"}));  // "runn" beats "run"
  EXPECT_EQ(t.tokenize_to_strings("abb"), (V{"a", "##b", "##b"}));
  // A rest that matches nothing makes the whole word [UNK], not just the rest.
  EXPECT_EQ(t.tokenize_to_strings("unaffablex"), (V{"[UNK]"}));
  EXPECT_EQ(t.tokenize_to_strings("a,b!"), (V{"a", ",", "b", "!"}));
  EXPECT_EQ(t.tokenize_to_strings(" \t\n"), V{});
  EXPECT_EQ(t.tokenize_to_strings(""), V{});
}

TEST(WordPiece, MaxInputCharsCountsCharactersNotBytes) {
  TokenizerOptions opt;
  opt.max_input_chars_per_word = 4;
  opt.do_lower_case = false;
  const WordPieceTokenizer t = tiny(opt);
  // "bbbb" is 4 characters: split; "bbbbb" is 5: [UNK].
  EXPECT_EQ(t.tokenize(std::string(4, 'b')).size(), 4u);
  EXPECT_EQ(t.tokenize_to_strings(std::string(5, 'b')), std::vector<std::string>{"[UNK]"});
  // "caf\u00e9" is 5 bytes but 4 characters: not over the limit.
  EXPECT_EQ(t.tokenize_to_strings("caf\u00e9"), std::vector<std::string>{"caf\u00e9"});
}

TEST(WordPiece, NormalizationSteps) {
  const WordPieceTokenizer lower = tiny();  // do_lower_case, strip accents follows it
  using V = std::vector<std::string>;
  EXPECT_EQ(lower.tokenize_to_strings("CAFÉ"), V{"cafe"});
  EXPECT_EQ(lower.tokenize_to_strings("Cafe\u0301"), V{"cafe"});
  EXPECT_EQ(lower.tokenize_to_strings("中文"), (V{"中", "文"}));      // each ideograph its own word
  EXPECT_EQ(lower.tokenize_to_strings("a\u200bb"), (V{"a", "##b"}));  // zero-width space dropped
  TokenizerOptions keep;
  keep.strip_accents = false;
  const WordPieceTokenizer keep_accents = tiny(keep);
  EXPECT_EQ(keep_accents.tokenize_to_strings("CAFÉ"), V{"café"});
  // U+0130 lowercases to two characters, "i" + U+0307.
  EXPECT_EQ(keep_accents.tokenize_to_strings("\u0130"), (V{"i", "##\u0307"}));
  TokenizerOptions no_cjk;
  no_cjk.tokenize_chinese_chars = false;
  EXPECT_EQ(tiny(no_cjk).tokenize_to_strings("中文"), V{"中文"});
}

TEST(WordPiece, SpecialTokensInTextStayWhole) {
  const WordPieceTokenizer t = tiny();
  using V = std::vector<std::string>;
  EXPECT_EQ(t.tokenize_to_strings("a[MASK]b"), (V{"a", "[MASK]", "b"}));
  EXPECT_EQ(t.tokenize_to_strings("[SEP][CLS]"), (V{"[SEP]", "[CLS]"}));
  // Matched before lowercasing, so "[mask]" is ordinary text.
  EXPECT_EQ(t.tokenize_to_strings("[mask]"), (V{"[UNK]", "[UNK]", "[UNK]"}));
}

TEST(WordPiece, EncodeAddsSpecialTokensAndTypeIds) {
  const WordPieceTokenizer t = tiny();
  const Encoding single = t.encode("a b", nullptr, -1);
  EXPECT_EQ(single.input_ids, (std::vector<int32_t>{2, 8, 9, 3}));
  EXPECT_EQ(single.token_type_ids, (std::vector<int32_t>{0, 0, 0, 0}));
  const std::string_view b = "b";
  const Encoding pair = t.encode("a", &b, -1);
  EXPECT_EQ(pair.input_ids, (std::vector<int32_t>{2, 8, 3, 9, 3}));
  EXPECT_EQ(pair.token_type_ids, (std::vector<int32_t>{0, 0, 0, 1, 1}));
  EXPECT_NE(message_of([&] { t.encode("a", &b, 2); }).find("max_length 2"), std::string::npos);
  EXPECT_EQ(t.encode("a", &b, 3).input_ids, (std::vector<int32_t>{2, 3, 3}));
}

// tokenizers' LongestFirst rule, on lengths (n_a, n_b) with budget max_length - 3.
TEST(WordPiece, LongestFirstTruncation) {
  const WordPieceTokenizer t = tiny();
  auto lengths = [&](int na, int nb, int max_length) {
    std::string a, b;
    for (int i = 0; i < na; ++i) a += "a ";
    for (int i = 0; i < nb; ++i) b += "b ";
    const std::string_view bv = b;
    const Encoding e = t.encode(a, &bv, max_length);
    int ca = 0, cb = 0;
    for (int32_t id : e.input_ids) {
      ca += id == 8;
      cb += id == 9;
    }
    EXPECT_EQ(e.input_ids.size(), static_cast<size_t>(ca + cb + 3));
    return std::pair<int, int>(ca, cb);
  };
  // Budget 7 (max_length 10), the cases of tokenizers' own unit test.
  EXPECT_EQ(lengths(0, 8, 10), std::make_pair(0, 7));
  EXPECT_EQ(lengths(2, 8, 10), std::make_pair(2, 5));
  EXPECT_EQ(lengths(4, 4, 10), std::make_pair(3, 4));  // tie: the odd token goes to b
  EXPECT_EQ(lengths(4, 8, 10), std::make_pair(3, 4));
  EXPECT_EQ(lengths(8, 2, 10), std::make_pair(5, 2));
  EXPECT_EQ(lengths(8, 4, 10), std::make_pair(4, 3));
  EXPECT_EQ(lengths(8, 8, 10), std::make_pair(3, 4));
  EXPECT_EQ(lengths(3, 3, 10), std::make_pair(3, 3));  // fits: untouched
  EXPECT_EQ(lengths(20, 20, 3), std::make_pair(0, 0));
}

TEST(WordPiece, InvalidUtf8Throws) {
  const WordPieceTokenizer t = tiny();
  const std::vector<std::pair<std::string, int>> bad = {
      {"ab\x80", 2},            // lone continuation byte
      {"a\xC3", 1},             // truncated 2-byte sequence
      {"\xE2\x82", 0},          // truncated 3-byte sequence
      {"xy\xF0\x9F\x98", 2},    // truncated 4-byte sequence
      {"\xC0\xAF", 0},          // overlong '/'
      {"\xE0\x80\xAF", 0},      // overlong, 3 bytes
      {"\xF0\x80\x80\xAF", 0},  // overlong, 4 bytes
      {"a\xED\xA0\x80", 1},     // UTF-16 surrogate U+D800
      {"\xED\xBF\xBF", 0},      // surrogate U+DFFF
      {"\xF4\x90\x80\x80", 0},  // above U+10FFFF
      {"\xFF", 0},              // never valid
      {"\xC3\x28", 0},          // bad continuation
      {"ok \xE2\x28\xA1", 3},   // bad continuation in a 3-byte sequence
  };
  for (const auto& [text, at] : bad) {
    EXPECT_EQ(message_of([&] { t.tokenize(text); }), "invalid UTF-8 at byte " + std::to_string(at))
        << "input bytes: " << ::testing::PrintToString(text);
  }
  // Boundary code points are valid.
  for (const char* ok : {"\x7F", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xEF\xBF\xBF",
                         "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF", "\xEE\x80\x80"}) {
    EXPECT_NO_THROW(t.tokenize(ok)) << ::testing::PrintToString(std::string(ok));
  }
}

// The lookups binary-search the generated tables: they must be sorted and non-overlapping.
TEST(UnicodeTables, SortedAndWellFormed) {
  namespace u = cpuft::unicode;
  ASSERT_GT(u::kFlagRangeCount, 100u);
  for (size_t i = 0; i < u::kFlagRangeCount; ++i) {
    EXPECT_LE(u::kFlagRanges[i].first, u::kFlagRanges[i].last) << i;
    EXPECT_NE(u::kFlagRanges[i].flags, 0) << i;
    if (i) {
      EXPECT_LT(u::kFlagRanges[i - 1].last, u::kFlagRanges[i].first) << i;
    }
  }
  for (size_t i = 1; i < u::kCccRangeCount; ++i) {
    EXPECT_LT(u::kCccRanges[i - 1].last, u::kCccRanges[i].first) << i;
  }
  auto check_mapping = [](const u::Mapping* table, size_t n) {
    ASSERT_GT(n, 1000u);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_GT(table[i].length, 0);
      if (i) {
        EXPECT_LT(table[i - 1].cp, table[i].cp) << i;
      }
    }
  };
  check_mapping(u::kLowercase, u::kLowercaseCount);
  check_mapping(u::kDecomposition, u::kDecompositionCount);
}

TEST(WordPiece, ConstructorRejectsMissingSpecialTokens) {
  EXPECT_EQ(message_of([] {
              WordPieceTokenizer({"[UNK]", "a"}, {});
            }),
            "tokenizer: cls_token '[CLS]' is not in the vocabulary");
}

// ---------------------------------------------------------------------------------------------
// Against Hugging Face (fixture written by tools/make_tokenizer_fixture.py).

struct Fixture {
  std::map<std::string, WordPieceTokenizer> tokenizers;  // by setting name
  std::vector<json> cases;
};

TokenizerOptions options_of(const json& c) {
  TokenizerOptions opt;
  opt.do_lower_case = c.at("do_lower_case").get<bool>();
  if (c.contains("strip_accents")) opt.strip_accents = c["strip_accents"].get<bool>();
  if (c.contains("tokenize_chinese_chars"))
    opt.tokenize_chinese_chars = c["tokenize_chinese_chars"].get<bool>();
  return opt;
}

const Fixture& hf_fixture() {
  static const Fixture fixture = [] {
    Fixture f;
    const std::string path = source_dir() + "/tests/fixtures/tokenizer_hard_cases.jsonl";
    const std::vector<std::string> lines = read_lines(path);
    CPUFT_CHECK(!lines.empty(), "cannot read ", path);
    for (const std::string& line : lines) {
      json c = json::parse(line);
      const std::string name = c.at("config");
      if (!f.tokenizers.contains(name)) {
        const std::string vocab = vocab_path(c.at("vocab").get<std::string>());
        f.tokenizers.emplace(name, WordPieceTokenizer(read_lines(vocab), options_of(c)));
      }
      f.cases.push_back(std::move(c));
    }
    return f;
  }();
  return fixture;
}

// Checks every case of `fixture` whose setting is `config` (all if empty) with `t`.
void expect_hf_ids(const WordPieceTokenizer* t, const std::string& config, size_t* n_checked) {
  const Fixture& f = hf_fixture();
  size_t n = 0, bad = 0;
  for (const json& c : f.cases) {
    if (!config.empty() && c["config"] != config) continue;
    const WordPieceTokenizer& tok = t ? *t : f.tokenizers.at(c["config"]);
    const std::string a = c.at("a");
    std::string b;
    const bool pair = c.contains("b");
    if (pair) b = c["b"].get<std::string>();
    const std::string_view bv = b;
    const int max_length = c["max_length"].is_null() ? -1 : c["max_length"].get<int>();
    const Encoding e = tok.encode(a, pair ? &bv : nullptr, max_length);
    const auto want_ids = c.at("input_ids").get<std::vector<int32_t>>();
    const auto want_types = c.at("token_type_ids").get<std::vector<int32_t>>();
    ++n;
    if (e.input_ids == want_ids && e.token_type_ids == want_types) continue;
    if (++bad > 20) continue;
    std::ostringstream got, want;
    for (int32_t id : e.input_ids) got << tok.token(id) << ' ';
    for (int32_t id : want_ids) want << tok.token(id) << ' ';
    ADD_FAILURE() << "setting " << c["config"] << ", max_length " << max_length << ", text "
                  << c["a"].dump() << (pair ? " / " + c["b"].dump() : "")
                  << "\n  cpuft: " << got.str() << "\n  HF:    " << want.str();
  }
  EXPECT_EQ(bad, 0u) << "of " << n << " cases";
  if (n_checked) *n_checked = n;
}

TEST(WordPieceVsHF, HardCases) {
  size_t n = 0;
  expect_hf_ids(nullptr, "", &n);
  EXPECT_GT(n, 500u);
}

TEST(WordPieceVsHF, FromFolderMiniLM) {
  const std::string dir = minilm_dir();
  const WordPieceTokenizer t = WordPieceTokenizer::from_folder(dir);
  EXPECT_EQ(t.vocab_size(), 30522);
  EXPECT_TRUE(t.options().do_lower_case);
  EXPECT_FALSE(t.options().strip_accents.has_value());
  EXPECT_EQ(t.cls_id(), 101);
  EXPECT_EQ(t.sep_id(), 102);
  EXPECT_EQ(t.pad_id(), 0);
  EXPECT_EQ(t.unk_id(), 100);
  EXPECT_EQ(t.mask_id(), 103);
  expect_hf_ids(&t, "uncased", nullptr);  // MiniLM's vocabulary is bert-base-uncased's

  // Vocabulary from tokenizer.json when there is no vocab.txt.
  TempDir tmp;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(fs::path(dir) / f, tmp.path / f);
  const WordPieceTokenizer j = WordPieceTokenizer::from_folder(tmp.path.string());
  ASSERT_EQ(j.vocab_size(), t.vocab_size());
  for (int32_t id = 0; id < j.vocab_size(); ++id) ASSERT_EQ(j.token(id), t.token(id)) << id;
  expect_hf_ids(&j, "uncased", nullptr);
}

TEST(WordPieceVsHF, SaveThenFromFolderRoundTrips) {
  for (const std::string name : {"uncased", "cased", "uncased_keep_accents", "uncased_no_cjk"}) {
    const WordPieceTokenizer& t = hf_fixture().tokenizers.at(name);
    TempDir tmp;
    // CPUFT_TOKENIZER_SAVE_DIR keeps a copy, for the AutoTokenizer check of
    // tools/make_tokenizer_fixture.py --check-saved.
    if (const char* keep = std::getenv("CPUFT_TOKENIZER_SAVE_DIR")) t.save(keep + ("/" + name));
    t.save(tmp.path.string());
    const WordPieceTokenizer r = WordPieceTokenizer::from_folder(tmp.path.string());
    EXPECT_EQ(r.vocab_size(), t.vocab_size());
    EXPECT_EQ(r.options().do_lower_case, t.options().do_lower_case);
    EXPECT_EQ(r.options().strip_accents, t.options().strip_accents);
    EXPECT_EQ(r.options().tokenize_chinese_chars, t.options().tokenize_chinese_chars);
    expect_hf_ids(&r, name, nullptr);
  }
}

TEST(WordPieceFolder, ErrorsNameTheFile) {
  TempDir tmp;
  const std::string dir = tmp.path.string();
  EXPECT_NE(message_of([&] {
              WordPieceTokenizer::from_folder(dir);
            }).find("neither vocab.txt nor tokenizer.json"),
            std::string::npos);
  std::ofstream(tmp.path / "vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n";
  EXPECT_EQ(WordPieceTokenizer::from_folder(dir).tokenize_to_strings("Hello"),
            std::vector<std::string>{"hello"});
  std::ofstream(tmp.path / "tokenizer_config.json") << "{\"do_lower_case\": \"yes\"}";
  EXPECT_EQ(message_of([&] { WordPieceTokenizer::from_folder(dir); }),
            (tmp.path / "tokenizer_config.json").string() +
                ": field 'do_lower_case' must be true or false");
  std::ofstream(tmp.path / "tokenizer_config.json") << "{not json";
  EXPECT_EQ(message_of([&] { WordPieceTokenizer::from_folder(dir); }),
            (tmp.path / "tokenizer_config.json").string() + ": not valid JSON");
  std::ofstream(tmp.path / "tokenizer_config.json") << "{\"unk_token\": \"<unk>\"}";
  EXPECT_EQ(message_of([&] { WordPieceTokenizer::from_folder(dir); }),
            dir + ": tokenizer: unk_token '<unk>' is not in the vocabulary");
  std::ofstream(tmp.path / "tokenizer_config.json")
      << R"({"do_lower_case": false, "strip_accents": null, "mask_token": {"content": "[MASK]"}})";
  EXPECT_EQ(WordPieceTokenizer::from_folder(dir).tokenize_to_strings("Hello"),
            std::vector<std::string>{"[UNK]"});
  std::ofstream(tmp.path / "vocab.txt") << "[PAD]\n[UNK]\n\xC3\n";
  EXPECT_EQ(message_of([&] { WordPieceTokenizer::from_folder(dir); }),
            (tmp.path / "vocab.txt").string() + ":3: invalid UTF-8 at byte 0");
  fs::remove(tmp.path / "vocab.txt");
  std::ofstream(tmp.path / "tokenizer.json") << R"({"model": {"type": "BPE", "vocab": {}}})";
  EXPECT_EQ(message_of([&] { WordPieceTokenizer::from_folder(dir); }),
            (tmp.path / "tokenizer.json").string() + ": 'model.type' must be \"WordPiece\"");
}

TEST(WordPieceFolder, VocabTxtLineEndings) {
  TempDir tmp;
  // CRLF and a lone CR end lines too (Python text mode); no final newline is fine.
  std::ofstream(tmp.path / "vocab.txt", std::ios::binary)
      << "[PAD]\r\n[UNK]\r[CLS]\n[SEP]\n[MASK]\nx";
  const WordPieceTokenizer t = WordPieceTokenizer::from_folder(tmp.path.string());
  EXPECT_EQ(t.vocab_size(), 6);
  EXPECT_EQ(t.unk_id(), 1);
  EXPECT_EQ(t.tokenize(" X "), std::vector<int32_t>{5});
}

}  // namespace
}  // namespace cpuft
