// The Unigram (XLM-R) tokenizer against Hugging Face's ids: the hard cases of
// tests/fixtures/spm_hard_cases.jsonl (tools/make_spm_fixture.py) through every way of loading the
// fixture folder and through save(), plus the rules that need no HF, and bad input.
#include "data/unigram_tokenizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "data/tokenizer_test_util.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using cpuft::testing::fixture_path;

const std::string& folder() {
  static const std::string f = fixture_path("tokenizers/xlmr_unigram");
  return f;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_all(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A fresh directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("cpuft_unigram_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  // Copies the named fixture files here.
  void copy(std::initializer_list<const char*> names) const {
    for (const char* n : names) fs::copy_file(fs::path(folder()) / n, path / n);
  }
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no cpuft::Error thrown>";
}

std::vector<json> hard_cases() {
  std::vector<json> cases;
  std::ifstream in(fixture_path("spm_hard_cases.jsonl"));
  for (std::string line; std::getline(in, line);) cases.push_back(json::parse(line));
  return cases;
}

// Every hard case through `tok`: encode (with the case's truncation) and, for single texts,
// tokenize. Returns the number of cases whose ids all match.
size_t count_identical(const Tokenizer& tok, const std::vector<json>& cases,
                       const std::string& label) {
  size_t same = 0;
  for (const json& c : cases) {
    const std::string a = c.at("a");
    const bool pair = c.contains("b");
    const std::string b = pair ? c.at("b").get<std::string>() : std::string();
    const std::string_view bv = b;
    const int max_length = c.at("max_length").is_null() ? -1 : c.at("max_length").get<int>();
    const Encoding e = tok.encode(a, pair ? &bv : nullptr, max_length);
    bool ok = e.input_ids == c.at("input_ids").get<std::vector<int32_t>>() &&
              e.token_type_ids == c.at("token_type_ids").get<std::vector<int32_t>>();
    EXPECT_EQ(e.input_ids, c.at("input_ids").get<std::vector<int32_t>>())
        << label << ": " << c.dump();
    EXPECT_EQ(e.token_type_ids, c.at("token_type_ids").get<std::vector<int32_t>>()) << label;
    if (c.contains("tokens")) {
      const std::vector<int32_t> ids = tok.tokenize(a);
      ok = ok && ids == c.at("tokens").get<std::vector<int32_t>>();
      EXPECT_EQ(ids, c.at("tokens").get<std::vector<int32_t>>()) << label << ": " << c.dump();
    }
    same += ok;
  }
  std::printf("%s: %zu/%zu hard cases identical to HF\n", label.c_str(), same, cases.size());
  return same;
}

TEST(Unigram, HardCasesMatchHFFromTheFullFolder) {
  const auto cases = hard_cases();
  ASSERT_GE(cases.size(), 200u);
  const auto tok = load_tokenizer(folder());
  EXPECT_NE(tok->summary().find("Unigram"), std::string::npos) << tok->summary();
  EXPECT_NE(tok->summary().find("tokenizer.json"), std::string::npos) << tok->summary();
  EXPECT_EQ(tok->vocab_size(), 8002);
  EXPECT_EQ(count_identical(*tok, cases, "full folder"), cases.size());
}

TEST(Unigram, HardCasesMatchHFFromTheSentencePieceModel) {
  const auto cases = hard_cases();
  TempDir d;
  d.copy({"sentencepiece.bpe.model", "tokenizer_config.json", "special_tokens_map.json"});
  const auto tok = load_tokenizer(d.path.string());
  EXPECT_NE(tok->summary().find("sentencepiece.bpe.model"), std::string::npos);
  EXPECT_EQ(tok->vocab_size(), 8002);
  EXPECT_EQ(count_identical(*tok, cases, "sentencepiece.bpe.model"), cases.size());
  // The model alone: transformers' defaults for everything else give the same ids here.
  TempDir bare;
  bare.copy({"sentencepiece.bpe.model"});
  EXPECT_EQ(count_identical(*load_tokenizer(bare.path.string()), cases, "model alone"),
            cases.size());
}

TEST(Unigram, HardCasesMatchHFFromTokenizerJsonAlone) {
  const auto cases = hard_cases();
  TempDir d;
  d.copy({"tokenizer.json"});
  const auto tok = load_tokenizer(d.path.string());
  EXPECT_EQ(tok->vocab_size(), 8002);
  EXPECT_EQ(count_identical(*tok, cases, "tokenizer.json alone"), cases.size());
}

TEST(Unigram, SaveRoundTrip) {
  const auto cases = hard_cases();
  for (const char* source : {"tokenizer.json", "sentencepiece.bpe.model"}) {
    TempDir in, out;
    in.copy({source});
    const auto tok = load_tokenizer(in.path.string());
    tok->save(out.path.string());
    // CPUFT_TOKENIZER_SAVE_DIR keeps a copy, for the AutoTokenizer check of
    // tools/make_spm_fixture.py --check-saved.
    if (const char* keep = std::getenv("CPUFT_TOKENIZER_SAVE_DIR"))
      tok->save(keep + std::string("/unigram_from_") + (source[0] == 't' ? "json" : "spm"));
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
      EXPECT_TRUE(fs::exists(out.path / f)) << f;
    EXPECT_EQ(fs::exists(out.path / "sentencepiece.bpe.model"),
              std::string(source) == "sentencepiece.bpe.model");
    const auto again = load_tokenizer(out.path.string());
    EXPECT_EQ(again->vocab_size(), tok->vocab_size());
    EXPECT_EQ(count_identical(*again, cases, std::string("saved from ") + source), cases.size());
    // The saved tokenizer.json alone gives the same ids too.
    TempDir json_only;
    fs::copy_file(out.path / "tokenizer.json", json_only.path / "tokenizer.json");
    EXPECT_EQ(count_identical(*load_tokenizer(json_only.path.string()), cases,
                              std::string("saved tokenizer.json from ") + source),
              cases.size());
    const json config = json::parse(read_all(out.path / "tokenizer_config.json"));
    EXPECT_EQ(config.at("tokenizer_class"), "XLMRobertaTokenizer");
    EXPECT_EQ(config.at("mask_token").at("content"), "<mask>");
  }
}

// The fixture's tokenizer.json in the form transformers 4.x wrote for XLM-R (as the script's
// legacy_tokenizer_json): charsmap + Replace(" {2,}" -> " "), Metaspace alone (2020 fields).
std::string legacy_json() {
  json j = json::parse(read_all(fs::path(folder()) / "tokenizer.json"));
  j["normalizer"] = {
      {"type", "Sequence"},
      {"normalizers",
       {j["normalizer"],
        {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}}}}};
  j["pre_tokenizer"] = {
      {"type", "Metaspace"}, {"replacement", "\u2581"}, {"add_prefix_space", true}};
  return j.dump();
}

// Without WhitespaceSplit, spaces survive as U+2581 pieces and <mask>'s lstrip matters: this is
// what tokenizers gives for such a file with no XLMRobertaTokenizer class around it.
TEST(Unigram, LegacyTokenizerJsonPipelineMatchesTokenizers) {
  const auto cases = hard_cases();
  const UnigramTokenizer t = UnigramTokenizer::from_tokenizer_json(legacy_json(), "legacy");
  size_t n = 0, same = 0, differs_from_class = 0;
  for (const json& c : cases) {
    if (!c.contains("legacy_tokens")) continue;
    ++n;
    const std::vector<int32_t> ids = t.tokenize(c.at("a").get<std::string>());
    const auto want = c.at("legacy_tokens").get<std::vector<int32_t>>();
    same += ids == want;
    differs_from_class += want != c.at("tokens").get<std::vector<int32_t>>();
    EXPECT_EQ(ids, want) << c.dump();
  }
  std::printf(
      "legacy tokenizer.json: %zu/%zu hard texts identical to tokenizers (%zu of them "
      "differ from XLMRobertaTokenizer's)\n",
      same, n, differs_from_class);
  EXPECT_GE(differs_from_class, 5u);  // the two pipelines are really different
  // Saved, the folder names the generic class (which takes tokenizer.json as it is) and reloads
  // with the same pipeline.
  TempDir out;
  t.save(out.path.string());
  if (const char* keep = std::getenv("CPUFT_TOKENIZER_SAVE_DIR"))
    t.save(keep + std::string("/unigram_legacy"));  // --check-saved DIR --legacy
  EXPECT_EQ(json::parse(read_all(out.path / "tokenizer_config.json")).at("tokenizer_class"),
            "TokenizersBackend");
  const auto again = load_tokenizer(out.path.string());
  for (const json& c : cases) {
    if (!c.contains("legacy_tokens")) continue;
    EXPECT_EQ(again->tokenize(c.at("a").get<std::string>()),
              c.at("legacy_tokens").get<std::vector<int32_t>>());
  }
  // With tokenizer_class XLMRobertaTokenizer, transformers 5 ignores the file's pipeline.
  TempDir as_class;
  write_all(as_class.path / "tokenizer.json", legacy_json());
  write_all(as_class.path / "tokenizer_config.json",
            R"({"tokenizer_class": "XLMRobertaTokenizer"})");
  EXPECT_EQ(count_identical(*load_tokenizer(as_class.path.string()), cases,
                            "legacy tokenizer.json, XLMRobertaTokenizer class"),
            cases.size());
  // So does a model folder whose config.json says xlm-roberta and whose tokenizer_config.json
  // names no class (AutoTokenizer goes by the model type).
  TempDir model_dir;
  write_all(model_dir.path / "tokenizer.json", legacy_json());
  write_all(model_dir.path / "config.json", R"({"model_type": "xlm-roberta"})");
  EXPECT_EQ(count_identical(*load_tokenizer(model_dir.path.string()), cases,
                            "legacy tokenizer.json, config.json xlm-roberta"),
            cases.size());
}

// Both loading paths end in the same tokenizer: vocabulary, scores (float32 in the model, their
// float64 values in tokenizer.json), charsmap bytes, added tokens and template all equal, so the
// files save() writes are byte for byte the same. (This is what lets the slow code point test
// run one path only.)
TEST(Unigram, BothLoadingPathsGiveTheSameTokenizer) {
  TempDir spm, from_spm, from_json;
  spm.copy({"sentencepiece.bpe.model", "tokenizer_config.json", "special_tokens_map.json"});
  load_tokenizer(spm.path.string())->save(from_spm.path.string());
  load_tokenizer(folder())->save(from_json.path.string());
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
    EXPECT_EQ(read_all(from_spm.path / f), read_all(from_json.path / f)) << f;
}

TEST(Unigram, EncodeTemplateAndTruncation) {
  const auto tok = load_tokenizer(folder());
  const std::string_view b = "world";
  const Encoding single = tok->encode("Hello", nullptr, -1);
  ASSERT_GE(single.input_ids.size(), 3u);
  EXPECT_EQ(single.input_ids.front(), 0);  // <s>
  EXPECT_EQ(single.input_ids.back(), 2);   // </s>
  const Encoding pair = tok->encode("Hello", &b, -1);
  const std::vector<int32_t> ha = tok->tokenize("Hello"), hb = tok->tokenize("world");
  std::vector<int32_t> want = {0};
  want.insert(want.end(), ha.begin(), ha.end());
  want.insert(want.end(), {2, 2});
  want.insert(want.end(), hb.begin(), hb.end());
  want.push_back(2);
  EXPECT_EQ(pair.input_ids, want);
  EXPECT_EQ(pair.token_type_ids, std::vector<int32_t>(want.size(), 0));
  EXPECT_EQ(tok->encode("Hello", &b, 4).input_ids, (std::vector<int32_t>{0, 2, 2, 2}));
  EXPECT_NE(message_of([&] { tok->encode("Hello", &b, 3); }).find("max_length 3"),
            std::string::npos);
  EXPECT_EQ(tok->encode("Hello", nullptr, 2).input_ids, (std::vector<int32_t>{0, 2}));
  EXPECT_NE(message_of([&] { tok->encode("x", nullptr, 1); }).find("max_length 1"),
            std::string::npos);
}

TEST(Unigram, PiecesSpecialTokensAndWhitespace) {
  const UnigramTokenizer t = UnigramTokenizer::from_folder(folder());
  using V = std::vector<std::string>;
  EXPECT_EQ(t.tokenize_to_strings("Hello world"), (V{"\u2581He", "ll", "o", "\u2581world"}));
  // Whitespace of any kind separates words and disappears; every word gets U+2581 in front.
  EXPECT_EQ(t.tokenize_to_strings(" \t world \u3000\n"), t.tokenize_to_strings("world"));
  EXPECT_EQ(t.tokenize_to_strings(""), V{});
  // Special tokens are cut out of the raw text first; each side is its own text.
  EXPECT_EQ(t.tokenize_to_strings("a<mask>b"), (V{"\u2581a", "<mask>", "\u2581b"}));
  EXPECT_EQ(t.tokenize_to_strings("</s><s>"), (V{"</s>", "<s>"}));
  // NFKC through the charsmap: full-width letters and a ligature.
  EXPECT_EQ(t.tokenize("\uff21\uff22"), t.tokenize("AB"));
  EXPECT_EQ(t.tokenize("\ufb01"), t.tokenize("fi"));
  // Characters no piece covers become one <unk> per run.
  EXPECT_EQ(t.tokenize("\u4e2d\u6587\u5b57"), (std::vector<int32_t>{14, 3}));
  EXPECT_NE(message_of([&] { t.tokenize("ab\xff"); }).find("invalid UTF-8 at byte 2"),
            std::string::npos);
}

TEST(Unigram, MalformedModelsGiveOneLineNamingTheFile) {
  const std::string model = read_all(fs::path(folder()) / "sentencepiece.bpe.model");
  for (const std::string& bytes :
       {std::string(), std::string("not a model"), model.substr(0, model.size() / 2),
        model.substr(0, 17), std::string("\x0a\xff\xff\xff\xff\x0f", 6),
        std::string("\x08\x01", 2)}) {
    TempDir d;
    write_all(d.path / "sentencepiece.bpe.model", bytes);
    const std::string msg = message_of([&] { load_tokenizer(d.path.string()); });
    EXPECT_NE(msg.find("sentencepiece.bpe.model"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  // A BPE SentencePiece model (trainer_spec.model_type = 2) is refused by name.
  const std::string bpe = model + std::string("\x12\x02\x18\x02", 4);
  const std::string msg = message_of(
      [&] { UnigramTokenizer::from_sentencepiece_model(bpe, "x/sentencepiece.bpe.model"); });
  EXPECT_NE(msg.find("model_type is 2"), std::string::npos) << msg;
}

TEST(Unigram, MalformedTokenizerJsonGivesOneLineNamingTheFileAndField) {
  const json good = json::parse(read_all(fs::path(folder()) / "tokenizer.json"));
  auto check = [&](const std::function<void(json&)>& edit, const std::string& want) {
    json j = good;
    edit(j);
    const std::string msg =
        message_of([&] { UnigramTokenizer::from_tokenizer_json(j.dump(), "d/tokenizer.json"); });
    EXPECT_NE(msg.find("d/tokenizer.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
  };
  check([](json& j) { j["model"]["vocab"] = json::array(); }, "model.vocab");
  check([](json& j) { j["model"]["vocab"][5] = "x"; }, "model.vocab[5]");
  check([](json& j) { j["model"]["unk_id"] = 99999; }, "model.unk_id");
  check([](json& j) { j["model"]["byte_fallback"] = true; }, "byte_fallback");
  check([](json& j) { j["normalizer"]["precompiled_charsmap"] = "@@@@"; }, "base64");
  check([](json& j) { j["normalizer"]["precompiled_charsmap"] = "AAAA"; }, "precompiled_charsmap");
  check([](json& j) { j["normalizer"]["precompiled_charsmap"] = "/////w=="; }, "trie size");
  check([](json& j) { j["normalizer"] = {{"type", "NFKC"}}; }, "'NFKC'");
  check([](json& j) { j["pre_tokenizer"] = {{"type", "ByteLevel"}}; }, "'ByteLevel'");
  check([](json& j) { j["added_tokens"][0]["id"] = -1; }, "added_tokens[0]");
  check([](json& j) { j["post_processor"]["special_tokens"].erase("<s>"); }, "'<s>'");
  const std::string msg = message_of(
      [&] { UnigramTokenizer::from_tokenizer_json("{\"model\": [", "d/tokenizer.json"); });
  EXPECT_NE(msg.find("d/tokenizer.json: not valid JSON"), std::string::npos) << msg;
}

// A charsmap whose trie points outside its strings: tokenizers would panic on the first lookup;
// here that lookup is an Error naming the file.
TEST(Unigram, CharsmapWithABadEntryIsAnErrorNotACrash) {
  // One unit pair: root at 0 with offset 0 ... built by hand: key 'a' (0x61) -> node 0x61 whose
  // label is 'a' with a leaf; the leaf's value points far past the strings.
  std::vector<uint32_t> units(0x62 + 2, 0);
  units[0] = 0;                    // root: offset 0
  units[0x61] = 0x61 | (1u << 8);  // label 'a', has leaf, offset 0 -> leaf at 0x61 ^ 0 = 0x61
  std::string blob(4, '\0');
  const uint32_t bytes = static_cast<uint32_t>(units.size() * 4);
  for (int k = 0; k < 4; ++k) blob[k] = static_cast<char>((bytes >> (8 * k)) & 0xFF);
  for (uint32_t u : units)
    for (int k = 0; k < 4; ++k) blob.push_back(static_cast<char>((u >> (8 * k)) & 0xFF));
  blob += "x";
  json j = json::parse(read_all(fs::path(folder()) / "tokenizer.json"));
  std::string b64;
  {
    static const char* const A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < blob.size(); i += 3) {
      const size_t n = std::min<size_t>(3, blob.size() - i);
      uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(blob[i])) << 16;
      if (n > 1) v |= static_cast<uint32_t>(static_cast<unsigned char>(blob[i + 1])) << 8;
      if (n > 2) v |= static_cast<unsigned char>(blob[i + 2]);
      b64 += A[(v >> 18) & 63];
      b64 += A[(v >> 12) & 63];
      b64 += n > 1 ? A[(v >> 6) & 63] : '=';
      b64 += n > 2 ? A[v & 63] : '=';
    }
  }
  j["normalizer"]["precompiled_charsmap"] = b64;
  const UnigramTokenizer t = UnigramTokenizer::from_tokenizer_json(j.dump(), "d/tokenizer.json");
  EXPECT_FALSE(t.tokenize("bcd").empty());  // no lookup hits the bad entry
  const std::string msg = message_of([&] { t.tokenize("a"); });
  EXPECT_NE(msg.find("d/tokenizer.json: precompiled_charsmap"), std::string::npos) << msg;
}

}  // namespace
}  // namespace cpuft
