// Byte-level BPE (RoBERTa) tokenizer against Hugging Face: the hard cases of
// tests/fixtures/bpe_hard_cases.jsonl (tools/make_bpe_fixture.py) for every setting of
// tests/fixtures/tokenizers/bpe_settings.json, the two file formats, save() round trips, and the
// errors on bad files.
#include "data/byte_level_bpe_tokenizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "data/byte_level_tables.h"
#include "data/tokenizer_test_util.h"
#include "data/wordpiece_tokenizer.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using cpuft::testing::fixture_path;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_all(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A fresh directory under the system temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("cpuft_bpe_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no cpuft::Error thrown>";
}

fs::path tokenizers_dir() {
  return fixture_path("tokenizers");
}

// Fills `dir` with what setting `name` loads (bpe_settings.json, as the fixture script does).
void build_setting(const std::string& name, const fs::path& dir) {
  const json settings = json::parse(read_all(tokenizers_dir() / "bpe_settings.json"));
  const json& s = settings.at(name);
  const fs::path from = tokenizers_dir() / s.at("folder").get<std::string>();
  for (const json& f : s.at("files")) {
    fs::copy_file(from / f.get<std::string>(), dir / f.get<std::string>(),
                  fs::copy_options::overwrite_existing);
  }
  if (s.contains("tokenizer_config")) {
    write_all(dir / "tokenizer_config.json", s.at("tokenizer_config").dump(2));
  }
  if (s.contains("pre_tokenizer")) {
    json tj = json::parse(read_all(dir / "tokenizer.json"));
    tj["pre_tokenizer"] = s.at("pre_tokenizer");
    write_all(dir / "tokenizer.json", tj.dump());
  }
}

struct Case {
  std::string setting, a, b;
  bool pair = false;
  int max_length = -1;
  std::vector<int32_t> ids_a, ids_b, input_ids, token_type_ids;
  bool has_ids = false;
};

const std::vector<Case>& hard_cases() {
  static const std::vector<Case> cases = [] {
    std::vector<Case> out;
    std::ifstream in(fixture_path("bpe_hard_cases.jsonl"));
    for (std::string line; std::getline(in, line);) {
      const json j = json::parse(line);
      Case c;
      c.setting = j.at("setting");
      c.a = j.at("a");
      if (j.contains("b")) {
        c.b = j.at("b");
        c.pair = true;
      }
      if (!j.at("max_length").is_null()) c.max_length = j.at("max_length");
      if (j.contains("ids_a")) {
        c.has_ids = true;
        c.ids_a = j.at("ids_a").get<std::vector<int32_t>>();
        if (c.pair) c.ids_b = j.at("ids_b").get<std::vector<int32_t>>();
      }
      c.input_ids = j.at("input_ids").get<std::vector<int32_t>>();
      c.token_type_ids = j.contains("token_type_ids")
                             ? j.at("token_type_ids").get<std::vector<int32_t>>()
                             : std::vector<int32_t>(c.input_ids.size(), 0);  // all 0: left out
      out.push_back(std::move(c));
    }
    return out;
  }();
  return cases;
}

std::vector<std::string> setting_names() {
  const json settings = json::parse(read_all(tokenizers_dir() / "bpe_settings.json"));
  std::vector<std::string> out;
  for (const auto& [name, _] : settings.items()) out.push_back(name);
  return out;
}

// Compares every hard case of `setting`; returns the number compared.
size_t check_cases(const Tokenizer& tok, const std::string& setting, const std::string& label) {
  size_t n = 0, bad = 0;
  for (const Case& c : hard_cases()) {
    if (c.setting != setting) continue;
    ++n;
    const std::string_view b = c.b;
    const Encoding e = tok.encode(c.a, c.pair ? &b : nullptr, c.max_length);
    bool ok = e.input_ids == c.input_ids && e.token_type_ids == c.token_type_ids;
    if (c.has_ids) {
      ok = ok && tok.tokenize(c.a) == c.ids_a;
      if (c.pair) ok = ok && tok.tokenize(c.b) == c.ids_b;
    }
    if (!ok && ++bad <= 5) {
      ADD_FAILURE() << label << " (" << setting << "): " << ::testing::PrintToString(c.a)
                    << (c.pair ? " | " + ::testing::PrintToString(c.b) : std::string())
                    << " max_length " << c.max_length
                    << "\n  cpuft: " << ::testing::PrintToString(e.input_ids)
                    << "\n  HF:    " << ::testing::PrintToString(c.input_ids);
    }
  }
  EXPECT_EQ(bad, 0u) << label << " (" << setting << "): " << bad << " of " << n << " differ";
  return n;
}

TEST(ByteLevelTables, SortedAndWellFormed) {
  ASSERT_GT(byte_level::kClassRangeCount, 100u);
  for (size_t k = 0; k < byte_level::kClassRangeCount; ++k) {
    const auto& r = byte_level::kClassRanges[k];
    EXPECT_LE(r.first, r.last);
    EXPECT_LE(r.last, 0x10FFFFu);
    EXPECT_TRUE(r.cls >= 1 && r.cls <= 3);
    if (k > 0) {
      EXPECT_LT(byte_level::kClassRanges[k - 1].last, r.first);
    }
  }
}

TEST(ByteLevelBpeVsHF, HardCasesEverySetting) {
  ASSERT_FALSE(hard_cases().empty());
  size_t total = 0;
  for (const std::string& name : setting_names()) {
    TempDir dir;
    build_setting(name, dir.path);
    const std::unique_ptr<Tokenizer> tok = load_tokenizer(dir.path.string());
    ASSERT_NE(dynamic_cast<const ByteLevelBpeTokenizer*>(tok.get()), nullptr) << name;
    const size_t n = check_cases(*tok, name, "load_tokenizer");
    EXPECT_GT(n, 150u) << name;
    total += n;
    std::printf("setting %s: %zu hard cases compared (%s)\n", name.c_str(), n,
                tok->summary().c_str());
  }
  std::printf("%zu hard cases compared in all\n", total);
  EXPECT_EQ(total, hard_cases().size());
}

// The same RoBERTa tokenizer read from tokenizer.json (merges as [a, b] pairs, then as "a b"
// strings) and from vocab.json + merges.txt gives the same ids.
TEST(ByteLevelBpeVsHF, TokenizerJsonAndVocabMergesAgree) {
  const fs::path main = tokenizers_dir() / "roberta_bpe";
  TempDir from_json, from_strings, from_files;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
    fs::copy_file(main / f, from_json.path / f);
    fs::copy_file(main / f, from_strings.path / f);
  }
  for (const char* f :
       {"vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"})
    fs::copy_file(main / f, from_files.path / f);
  json tj = json::parse(read_all(main / "tokenizer.json"));
  ASSERT_TRUE(tj["model"]["merges"][0].is_array());  // tokenizers 0.20+ writes pairs
  for (json& m : tj["model"]["merges"]) m = m[0].get<std::string>() + " " + m[1].get<std::string>();
  write_all(from_strings.path / "tokenizer.json", tj.dump());

  const auto a = ByteLevelBpeTokenizer::from_folder(from_json.path.string());
  const auto b = ByteLevelBpeTokenizer::from_folder(from_strings.path.string());
  const auto c = ByteLevelBpeTokenizer::from_folder(from_files.path.string());
  EXPECT_NE(a.summary().find("tokenizer.json"), std::string::npos);
  EXPECT_NE(c.summary().find("vocab.json + merges.txt"), std::string::npos);
  EXPECT_EQ(a.vocab_size(), 5001);
  EXPECT_EQ(c.vocab_size(), 5001);
  EXPECT_EQ(check_cases(a, "roberta", "tokenizer.json pairs"), check_cases(c, "roberta", "files"));
  check_cases(b, "roberta", "tokenizer.json strings");
  size_t n = 0;
  for (const Case& k : hard_cases()) {
    if (k.setting != "roberta") continue;
    ++n;
    const auto ids = a.tokenize(k.a);
    EXPECT_EQ(b.tokenize(k.a), ids);
    EXPECT_EQ(c.tokenize(k.a), ids);
  }
  EXPECT_GT(n, 150u);
}

// save() writes a folder that cpuft reads back with the same ids, for every setting (RoBERTa and
// a tokenizer.json pipeline alike). CPUFT_BPE_SAVE_DIR keeps the saved folders for
// tools/make_bpe_fixture.py --check-saved.
TEST(ByteLevelBpeVsHF, SaveThenLoadRoundTrips) {
  const char* keep = std::getenv("CPUFT_BPE_SAVE_DIR");
  for (const std::string& name : setting_names()) {
    TempDir src, saved;
    build_setting(name, src.path);
    const auto tok = ByteLevelBpeTokenizer::from_folder(src.path.string());
    const fs::path out = keep && *keep ? fs::path(keep) / name : saved.path / "out";
    tok.save(out.string());
    for (const char* f : {"vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json",
                          "special_tokens_map.json"})
      EXPECT_TRUE(fs::exists(out / f)) << name << " " << f;
    const std::unique_ptr<Tokenizer> back = load_tokenizer(out.string());
    EXPECT_EQ(back->vocab_size(), tok.vocab_size()) << name;
    check_cases(*back, name, "saved");
    // Without tokenizer.json, vocab.json + merges.txt + tokenizer_config.json give the same ids.
    if (tok.options().roberta_processing) {
      TempDir files;
      for (const char* f : {"vocab.json", "merges.txt", "tokenizer_config.json"})
        fs::copy_file(out / f, files.path / f);
      check_cases(ByteLevelBpeTokenizer::from_folder(files.path.string()), name, "saved files");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Behaviour that does not need HF's ids.

ByteLevelBpeTokenizer roberta() {
  return ByteLevelBpeTokenizer::from_folder((tokenizers_dir() / "roberta_bpe").string());
}

TEST(ByteLevelBpe, SpecialTokensAndEncode) {
  const auto tok = roberta();
  EXPECT_EQ(tok.num_special_tokens(false), 2u);
  EXPECT_EQ(tok.num_special_tokens(true), 4u);
  const int32_t s = tok.token_id("<s>"), e = tok.token_id("</s>"), m = tok.token_id("<mask>");
  EXPECT_EQ(s, 0);
  EXPECT_EQ(e, 2);
  EXPECT_EQ(m, 5000);
  // <mask> takes the spaces before it (lstrip), not those after.
  const auto ids = tok.tokenize("a <mask> b");
  EXPECT_EQ(ids, (std::vector<int32_t>{tok.token_id("a"), m,
                                       tok.token_id("\xC4\xA0"
                                                    "b")}));
  const std::string_view b = "b";
  const Encoding pair = tok.encode("a", &b, -1);
  EXPECT_EQ(pair.input_ids,
            (std::vector<int32_t>{s, tok.token_id("a"), e, e, tok.token_id("b"), e}));
  EXPECT_EQ(pair.token_type_ids, std::vector<int32_t>(6, 0));
  EXPECT_NE(message_of([&] { tok.encode("a", &b, 3); }).find("max_length 3"), std::string::npos);
  EXPECT_EQ(tok.encode("a", &b, 4).input_ids, (std::vector<int32_t>{s, e, e, e}));
  EXPECT_EQ(tok.encode("a b c", nullptr, 3).input_ids.size(), 3u);
}

TEST(ByteLevelBpe, InvalidUtf8Throws) {
  const auto tok = roberta();
  EXPECT_EQ(message_of([&] { tok.tokenize("ab\xC3"); }), "invalid UTF-8 at byte 2");
  EXPECT_EQ(message_of([&] { tok.tokenize("\xED\xA0\x80"); }), "invalid UTF-8 at byte 0");
  EXPECT_EQ(message_of([&] { tok.tokenize("<mask>\xFF"); }), "invalid UTF-8 at byte 6");
}

// Merge order: lowest rank first, leftmost among equal ranks; a pair listed twice keeps its last
// rank (tokenizers' merge map).
TEST(ByteLevelBpe, MergesByRank) {
  ByteLevelBpeTokenizer::Vocab vocab = {{"<s>", 0},    {"</s>", 1}, {"<unk>", 2}, {"<pad>", 3},
                                        {"<mask>", 4}, {"a", 5},    {"b", 6},     {"ab", 7},
                                        {"ba", 8},     {"aa", 9},   {"aaa", 10}};
  BpeOptions opt;
  {
    const ByteLevelBpeTokenizer t(vocab, {{"b", "a"}, {"a", "b"}}, {}, opt);
    EXPECT_EQ(t.tokenize("aba"), (std::vector<int32_t>{5, 8}));  // "ba" has the lower rank
  }
  {
    const ByteLevelBpeTokenizer t(vocab, {{"a", "b"}, {"b", "a"}}, {}, opt);
    EXPECT_EQ(t.tokenize("aba"), (std::vector<int32_t>{7, 5}));
    EXPECT_EQ(t.tokenize("abab"), (std::vector<int32_t>{7, 7}));
  }
  {
    const ByteLevelBpeTokenizer t(vocab, {{"a", "a"}, {"aa", "a"}}, {}, opt);
    EXPECT_EQ(t.tokenize("aaaa"), (std::vector<int32_t>{9, 9}));  // leftmost first
    EXPECT_EQ(t.tokenize("aaa"), (std::vector<int32_t>{10}));
  }
  {
    // ("a", "b") listed again after ("b", "a"): its last rank is the higher one.
    const ByteLevelBpeTokenizer t(vocab, {{"a", "b"}, {"b", "a"}, {"a", "b"}}, {}, opt);
    EXPECT_EQ(t.tokenize("aba"), (std::vector<int32_t>{5, 8}));
  }
  // "c" has no symbol: dropped without a model unk, <unk> with one (fused with fuse_unk).
  const ByteLevelBpeTokenizer drop(vocab, {}, {}, opt);
  EXPECT_EQ(drop.tokenize("acb"), (std::vector<int32_t>{5, 6}));
  BpeOptions unk = opt;
  unk.model_unk_token = "<unk>";
  EXPECT_EQ(ByteLevelBpeTokenizer(vocab, {}, {}, unk).tokenize("accb"),
            (std::vector<int32_t>{5, 2, 2, 6}));
  unk.fuse_unk = true;
  EXPECT_EQ(ByteLevelBpeTokenizer(vocab, {}, {}, unk).tokenize("accb"),
            (std::vector<int32_t>{5, 2, 6}));
  EXPECT_EQ(drop.vocab_size(), 11);
  // ignore_merges: a word found whole in the vocabulary is one token, merges or not.
  BpeOptions whole = opt;
  whole.ignore_merges = true;
  EXPECT_EQ(ByteLevelBpeTokenizer(vocab, {{"a", "a"}}, {}, opt).tokenize("aaa"),
            (std::vector<int32_t>{9, 5}));
  EXPECT_EQ(ByteLevelBpeTokenizer(vocab, {{"a", "a"}}, {}, whole).tokenize("aaa"),
            (std::vector<int32_t>{10}));
}

// ---------------------------------------------------------------------------------------------
// Bad files: one Error line naming the file and the field.

struct BadCase {
  const char* file;
  std::string content;
  const char* expect;  // a part of the message
};

TEST(ByteLevelBpeFolder, BadFilesNameFileAndField) {
  const fs::path main = tokenizers_dir() / "roberta_bpe";
  const std::string vocab = read_all(main / "vocab.json"), merges = read_all(main / "merges.txt");
  const std::vector<BadCase> cases = {
      {"vocab.json", "not json", "vocab.json: not valid JSON"},
      {"vocab.json", "[1, 2]", "vocab.json: expected a JSON object"},
      {"vocab.json", "{}", "vocab.json: empty vocabulary"},
      {"vocab.json", R"({"a": "1"})", "vocab.json: id of 'a' must be an integer id"},
      {"vocab.json", R"({"a": -1})", "vocab.json: id of 'a' must be an integer id"},
      {"vocab.json", R"({"a": 1.5})", "vocab.json: id of 'a' must be an integer id"},
      {"vocab.json", R"({"a": 1e20})", "vocab.json: id of 'a' must be an integer id"},
      {"vocab.json", R"({"a": 18446744073709551615})", "vocab.json: id of 'a' must be an integer"},
      {"vocab.json", R"({"a": 4294967296})", "vocab.json: id of 'a' must be an integer id"},
      {"vocab.json", R"({"a": 0, "b": 0})", "id 0 is used by both"},
      {"vocab.json", R"({"<s>": 0, "a": 2000000000})", "ids go up to 2000000000 for only"},
      {"merges.txt", "#version: 0.2\na b c\n", "merges.txt:2: a merge must be two tokens"},
      {"merges.txt", "#version: 0.2\n\n", "merges.txt:2: a merge must be two tokens"},
      {"merges.txt", "#version: 0.2\nzzq r\n", "'zzq' is not in the vocabulary"},
      {"merges.txt", "#version: 0.2\na a\n", "merge 1 'a a': 'aa' is not in the vocabulary"},
      {"tokenizer_config.json", "[]", "tokenizer_config.json: expected a JSON object"},
      {"tokenizer_config.json", R"({"tokenizer_class": "BertTokenizer"})",
       "tokenizer_config.json: tokenizer_class 'BertTokenizer' is not handled"},
      {"tokenizer_config.json", R"({"add_prefix_space": "yes"})",
       "tokenizer_config.json: 'add_prefix_space' must be true or false"},
      {"tokenizer_config.json", R"({"mask_token": "<nope>"})",
       "tokenizer_config.json: mask_token '<nope>' is in neither"},
      {"tokenizer_config.json", R"({"mask_token": 5})", "tokenizer_config.json: 'mask_token'"},
      {"tokenizer_config.json", R"({"added_tokens_decoder": {"x": {"content": "<s>"}}})",
       "'added_tokens_decoder.x': the key must be an id"},
      {"tokenizer_config.json",
       R"({"added_tokens_decoder": {"7": {"content": "<s>", "special": true}}})",
       "added token '<s>' has id 7 but the vocabulary gives it 0"},
      {"special_tokens_map.json", R"({"cls_token": {"content": 3}})",
       "special_tokens_map.json: 'cls_token.content' must be a string"},
  };
  for (const BadCase& c : cases) {
    TempDir dir;
    write_all(dir.path / "vocab.json", vocab);
    write_all(dir.path / "merges.txt", merges);
    write_all(dir.path / c.file, c.content);
    const std::string msg = message_of([&] { load_tokenizer(dir.path.string()); });
    EXPECT_NE(msg.find(c.expect), std::string::npos)
        << c.file << " = " << c.content << "\n  got: " << msg;
    EXPECT_NE(msg.find(c.file), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(ByteLevelBpeFolder, BadTokenizerJson) {
  const json good = json::parse(read_all(tokenizers_dir() / "roberta_bpe" / "tokenizer.json"));
  using Edit = std::function<void(json&)>;
  const std::vector<std::pair<Edit, const char*>> cases = {
      {[](json& j) { j["model"]["type"] = "WordLevel"; },
       "tokenizer.json: 'model.type' \"WordLevel\" is not supported"},
      {[](json& j) { j["model"]["type"] = 3; }, "'model.type' must be a string"},
      {[](json& j) { j.erase("model"); }, "no 'model' object"},
      {[](json& j) { j["model"]["vocab"] = json::array(); }, "'model.vocab' must be an object"},
      {[](json& j) { j["model"]["merges"] = "a b"; }, "'model.merges' must be an array"},
      {[](json& j) { j["model"]["merges"][3] = json::array({"a"}); },
       "'model.merges[3]' must be \"a b\" or [a, b]"},
      {[](json& j) { j["model"]["merges"][3] = "a b c"; }, "'model.merges[3]' must be \"a b\""},
      {[](json& j) {
         j["model"]["merges"][0] = json::array({"zzq", "a"});
       },
       "merge 1 'zzq a': 'zzq' is not in the vocabulary"},
      {[](json& j) { j["model"]["vocab"]["a"] = -3; }, "'model.vocab' id of 'a' must be"},
      {[](json& j) { j["model"]["vocab"]["a"] = 0; }, "id 0 is used by both"},
      {[](json& j) { j["model"]["dropout"] = 0.1; }, "'model.dropout' is not supported"},
      {[](json& j) { j["model"]["byte_fallback"] = true; }, "'model.byte_fallback'"},
      {[](json& j) { j["added_tokens"] = json::object(); }, "'added_tokens' must be an array"},
      {[](json& j) { j["added_tokens"][0]["lstrip"] = "no"; },
       "'added_tokens[0].lstrip' must be true or false"},
      {[](json& j) { j["added_tokens"][0]["id"] = 1e30; }, "'added_tokens[0].id' must be"},
      {[](json& j) { j["added_tokens"][4]["single_word"] = true; },
       "added token '<mask>': single_word is not supported"},
      {[](json& j) { j["added_tokens"][4]["id"] = 77; },
       "added token '<mask>' has id 77 but the vocabulary gives it 5000"},
      {[](json& j) {
         j["model"]["vocab"].erase("</s>");
         j["added_tokens"].erase(2);
       },
       "eos_token '</s>' is in neither"},
  };
  for (const auto& [edit, expect] : cases) {
    TempDir dir;
    json j = good;
    edit(j);
    write_all(dir.path / "tokenizer.json", j.dump());
    write_all(dir.path / "tokenizer_config.json", R"({"tokenizer_class": "RobertaTokenizer"})");
    const std::string msg = message_of([&] { load_tokenizer(dir.path.string()); });
    EXPECT_NE(msg.find(expect), std::string::npos) << expect << "\n  got: " << msg;
    EXPECT_NE(msg.find("tokenizer.json"), std::string::npos) << msg;
  }
  // Not JSON at all, and a folder with nothing to read.
  TempDir dir;
  write_all(dir.path / "tokenizer.json", "{\"model\": ");
  EXPECT_NE(
      message_of([&] { load_tokenizer(dir.path.string()); }).find("tokenizer.json: not valid JSON"),
      std::string::npos);
  TempDir empty;
  EXPECT_NE(message_of([&] { load_tokenizer(empty.path.string()); }).find("no tokenizer found"),
            std::string::npos);
}

// load_tokenizer() still gives WordPiece for vocab.txt folders, with or without a tokenizer.json
// (a WordPiece one, or one it cannot read), and BPE only for model.type "BPE" / vocab.json.
TEST(ByteLevelBpeFolder, LoaderKeepsWordPieceFolders) {
  auto is_wordpiece = [](const fs::path& dir) {
    const std::unique_ptr<Tokenizer> t = load_tokenizer(dir.string());
    return dynamic_cast<const WordPieceTokenizer*>(t.get()) != nullptr;
  };
  TempDir dir;
  fs::copy_file(cpuft::testing::vocab_path("bert-base-uncased-vocab.txt"), dir.path / "vocab.txt");
  EXPECT_TRUE(is_wordpiece(dir.path));
  // A tokenizer.json beside vocab.txt is the WordPiece family's to read (transformers 5 reads it
  // first): a broken one is an error there, not a reason to try byte-level BPE.
  write_all(dir.path / "tokenizer.json", "not json");
  EXPECT_THROW(is_wordpiece(dir.path), Error);
  const std::string minilm = cpuft::testing::minilm_dir();
  if (fs::exists(fs::path(minilm) / "tokenizer.json")) {
    EXPECT_TRUE(is_wordpiece(minilm));
  }
  // vocab.json + merges.txt beside vocab.txt: vocab.txt wins, as before.
  fs::remove(dir.path / "tokenizer.json");
  for (const char* f : {"vocab.json", "merges.txt"})
    fs::copy_file(tokenizers_dir() / "roberta_bpe" / f, dir.path / f);
  EXPECT_TRUE(is_wordpiece(dir.path));
  fs::remove(dir.path / "vocab.txt");
  EXPECT_FALSE(is_wordpiece(dir.path));
}

}  // namespace
}  // namespace cpuft
