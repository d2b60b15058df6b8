// Folders with tokenizer.json (tests/fixtures/tokenizers, made by
// tools/make_tokenizer_json_fixture.py): ids against transformers' AutoTokenizer and the
// tokenizers library, which file wins when they disagree, save(), and malformed files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "data/tokenizer_test_util.h"
#include "data/wordpiece_tokenizer.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using cpuft::testing::fixture_path;
using cpuft::testing::message_of;
using cpuft::testing::TempDir;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

fs::path folder(const std::string& name) {
  return fixture_path("tokenizers/" + name);
}

const std::vector<json>& hard_cases() {
  static const std::vector<json> cases = [] {
    std::vector<json> out;
    std::istringstream in(read_text(folder("hard_cases.jsonl")));
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    CPUFT_CHECK(!out.empty(), "no hard cases");
    return out;
  }();
  return cases;
}

// Every hard case of fixture folder `name` through `t`; returns how many were checked.
size_t expect_hard_cases(const WordPieceTokenizer& t, const std::string& name) {
  size_t n = 0, bad = 0;
  for (const json& c : hard_cases()) {
    if (c["folder"] != name) continue;
    ++n;
    const std::string a = c["a"];
    const std::string b = c.value("b", "");
    const std::string_view bv = b;
    const int max_length = c["max_length"].is_null() ? -1 : c["max_length"].get<int>();
    const Encoding e = t.encode(a, c.contains("b") ? &bv : nullptr, max_length);
    const auto want_ids = c["input_ids"].get<std::vector<int32_t>>();
    const auto want_types = c["token_type_ids"].get<std::vector<int32_t>>();
    if (e.input_ids == want_ids && e.token_type_ids == want_types) continue;
    if (++bad > 10) continue;
    std::ostringstream got, want;
    for (int32_t id : e.input_ids) got << t.token(id) << ' ';
    for (int32_t id : want_ids) want << (id < t.vocab_size() ? t.token(id) : "?") << ' ';
    ADD_FAILURE() << name << ", max_length " << max_length << ", text " << c["a"].dump()
                  << (c.contains("b") ? " / " + c["b"].dump() : "") << "\n  cpuft: " << got.str()
                  << ::testing::PrintToString(e.token_type_ids) << "\n  HF:    " << want.str()
                  << ::testing::PrintToString(want_types);
  }
  EXPECT_EQ(bad, 0u) << name << ": of " << n << " cases";
  return n;
}

const char* const kFolders[] = {
    "bert_json_cased",      "bert_json_uncased", "bert_json_strip_accents",
    "json_nfd_lower_strip", "json_custom",       "json_merged_next"};

TEST(TokenizerJson, FixtureFoldersGiveHFIds) {
  size_t total = 0;
  for (const std::string name : kFolders) {
    const WordPieceTokenizer t = WordPieceTokenizer::from_folder(folder(name).string());
    const size_t n = expect_hard_cases(t, name);
    EXPECT_GT(n, 100u) << name;
    total += n;
    EXPECT_EQ(t.is_bert_pipeline(), name.starts_with("bert_")) << name;
  }
  std::printf("[tokenizer.json] %zu hard cases over %zu folders\n", total, std::size(kFolders));
}

TEST(TokenizerJson, OptionsOfTheBertFolders) {
  const WordPieceTokenizer cased = WordPieceTokenizer::from_folder(folder("bert_json_cased"));
  EXPECT_FALSE(cased.options().do_lower_case);
  EXPECT_EQ(cased.vocab_size(), 28996);
  EXPECT_EQ(cased.cls_id(), 101);
  EXPECT_EQ(cased.summary(), "WordPiece, tokenizer.json, 28996 tokens, cased");
  const WordPieceTokenizer uncased = WordPieceTokenizer::from_folder(folder("bert_json_uncased"));
  EXPECT_TRUE(uncased.options().do_lower_case);
  EXPECT_EQ(uncased.vocab_size(), 30522);
  const WordPieceTokenizer strip =
      WordPieceTokenizer::from_folder(folder("bert_json_strip_accents"));
  EXPECT_FALSE(strip.options().do_lower_case);
  EXPECT_EQ(strip.options().strip_accents, std::optional<bool>(true));
  EXPECT_EQ(strip.tokenize("Café"), strip.tokenize("Cafe"));
  EXPECT_NE(strip.tokenize("Cafe"), strip.tokenize("cafe"));
  const WordPieceTokenizer custom = WordPieceTokenizer::from_folder(folder("json_custom"));
  EXPECT_EQ(custom.pipeline().continuing_subword_prefix, "@@");
  EXPECT_EQ(custom.options().max_input_chars_per_word, 12);
  EXPECT_FALSE(custom.pipeline().type_ids);
}

// save() writes what transformers reloads with the same ids; the saved folder records the options
// (the cased folder must not come back lower-cased).
TEST(TokenizerJson, SaveRecordsThePipeline) {
  for (const std::string name : kFolders) {
    const WordPieceTokenizer t = WordPieceTokenizer::from_folder(folder(name).string());
    TempDir tmp;
    // CPUFT_TOKENIZER_SAVE_DIR keeps a copy for tools/make_tokenizer_json_fixture.py --check-saved.
    if (const char* keep = std::getenv("CPUFT_TOKENIZER_SAVE_DIR")) t.save(keep + ("/" + name));
    t.save(tmp.path.string());
    const json config = json::parse(read_text(tmp.path / "tokenizer_config.json"));
    if (name.starts_with("bert_")) {
      EXPECT_EQ(config["tokenizer_class"], "BertTokenizer") << name;
      EXPECT_EQ(config["do_lower_case"], name == "bert_json_uncased") << name;
      EXPECT_EQ(config["strip_accents"],
                name == "bert_json_strip_accents" ? json(true) : json(nullptr))
          << name;
      EXPECT_TRUE(fs::exists(tmp.path / "vocab.txt")) << name;
      EXPECT_FALSE(fs::exists(tmp.path / "tokenizer.json")) << name;
    } else {
      EXPECT_EQ(config["tokenizer_class"], "TokenizersBackend") << name;
      EXPECT_TRUE(fs::exists(tmp.path / "tokenizer.json")) << name;
      const bool types =
          config["model_input_names"].dump().find("token_type_ids") != std::string::npos;
      EXPECT_EQ(types, t.pipeline().type_ids) << name;
    }
    const WordPieceTokenizer r = WordPieceTokenizer::from_folder(tmp.path.string());
    EXPECT_EQ(r.options().do_lower_case, t.options().do_lower_case) << name;
    EXPECT_EQ(r.vocab_size(), t.vocab_size()) << name;
    if (name.starts_with("bert_")) {
      EXPECT_TRUE(r.is_bert_pipeline()) << name;
    } else {
      EXPECT_TRUE(r.pipeline() == t.pipeline()) << name;
    }
    expect_hard_cases(r, name);
  }
}

// Applies tokenizers.json edits {"path": JSON pointer ("-" appends), "value"}.
void apply_edits(json& j, const json& edits) {
  for (const json& e : edits) {
    std::string path = e["path"];
    if (path.ends_with("/-")) {
      j[json::json_pointer(path.substr(0, path.size() - 2))].push_back(e["value"]);
    } else {
      j[json::json_pointer(path)] = e["value"];
    }
  }
}

// When tokenizer.json and tokenizer_config.json disagree: the cases transformers 5.24 was run on
// (precedence.json). cpuft gives transformers' ids except where the case says it follows the
// tokenizers library (a BertTokenizer option tokenizer_config.json does not set).
TEST(TokenizerJson, WhichFileWins) {
  const json fixture = json::parse(read_text(folder("precedence.json")));
  const json base = json::parse(read_text(folder("bert_json_cased") / "tokenizer.json"));
  size_t n = 0, n_tokenizers = 0;
  for (const json& c : fixture["cases"]) {
    TempDir tmp;
    json tj = base;
    apply_edits(tj, c["tokenizer_json_edits"]);
    write_text(tmp.path / "tokenizer.json", tj.dump());
    if (!c["tokenizer_config"].is_null())
      write_text(tmp.path / "tokenizer_config.json", c["tokenizer_config"].dump());
    if (!c["special_tokens_map"].is_null())
      write_text(tmp.path / "special_tokens_map.json", c["special_tokens_map"].dump());
    if (!c["config_json"].is_null()) write_text(tmp.path / "config.json", c["config_json"].dump());
    const WordPieceTokenizer t = WordPieceTokenizer::from_folder(tmp.path.string());
    const std::string a = c["a"], b = c["b"];
    const std::string_view bv = b;
    const Encoding e = t.encode(a, &bv, -1);
    const std::string follows = c["cpuft_follows"];
    const json& want = c[follows];
    std::ostringstream got;
    for (int32_t id : e.input_ids) got << t.token(id) << ' ';
    EXPECT_EQ(e.input_ids, want["input_ids"].get<std::vector<int32_t>>())
        << c["name"] << "\n  cpuft: " << got.str() << "\n  " << follows << ": " << want["tokens"];
    EXPECT_EQ(e.token_type_ids, want["token_type_ids"].get<std::vector<int32_t>>()) << c["name"];
    if (follows == "tokenizers") {
      // The one deliberate difference: documented, and real (transformers does differ here).
      EXPECT_NE(c["transformers"]["input_ids"], c["tokenizers"]["input_ids"]) << c["name"];
      EXPECT_FALSE(t.options().do_lower_case) << c["name"];
      // ... and the saved folder says so, so that transformers reloads it cased.
      TempDir saved;
      t.save(saved.path.string());
      EXPECT_EQ(json::parse(read_text(saved.path / "tokenizer_config.json"))["do_lower_case"],
                false)
          << c["name"];
      ++n_tokenizers;
    }
    ++n;
  }
  EXPECT_GE(n, 15u);
  EXPECT_EQ(n_tokenizers, 2u);
}

// tokenizer.json alone, the vocabulary wins over vocab.txt (transformers 5.24 reads only
// tokenizer.json's when both are there).
TEST(TokenizerJson, VocabularyOfTokenizerJsonWinsOverVocabTxt) {
  TempDir tmp;
  fs::copy_file(folder("bert_json_uncased") / "tokenizer.json", tmp.path / "tokenizer.json");
  fs::copy_file(fixture_path("vocab/bert-base-cased-vocab.txt"), tmp.path / "vocab.txt");
  const WordPieceTokenizer t = WordPieceTokenizer::from_folder(tmp.path.string());
  EXPECT_EQ(t.vocab_size(), 30522);
  EXPECT_EQ(t.tokenize_to_strings("Hello"), std::vector<std::string>{"hello"});
}

TEST(TokenizerJson, RefusesFilesThatAreNotRegular) {
  TempDir tmp;
  ASSERT_EQ(::mkfifo((tmp.path / "tokenizer.json").c_str(), 0600), 0);
  EXPECT_EQ(message_of([&] { WordPieceTokenizer::from_folder(tmp.path.string()); }),
            (tmp.path / "tokenizer.json").string() + ": not a regular file");
  fs::remove(tmp.path / "tokenizer.json");
  fs::create_directory(tmp.path / "tokenizer_config.json");
  fs::copy_file(folder("bert_json_cased") / "tokenizer.json", tmp.path / "tokenizer.json");
  EXPECT_EQ(message_of([&] { WordPieceTokenizer::from_folder(tmp.path.string()); }),
            (tmp.path / "tokenizer_config.json").string() + ": not a regular file");
}

// A small valid tokenizer.json read as the tokenizers library reads it.
json tiny_json() {
  json vocab = json::object();
  const char* tokens[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "##b", "!"};
  for (size_t i = 0; i < std::size(tokens); ++i) vocab[tokens[i]] = i;
  json added = json::array();
  for (int id : {0, 1, 2, 3, 4}) {
    added.push_back({{"id", id},
                     {"content", tokens[id]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer",
           {{"type", "BertNormalizer"},
            {"clean_text", true},
            {"handle_chinese_chars", true},
            {"strip_accents", nullptr},
            {"lowercase", true}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"post_processor",
           {{"type", "BertProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}}},
          {"decoder", nullptr},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", "[UNK]"},
            {"continuing_subword_prefix", "##"},
            {"max_input_chars_per_word", 100},
            {"vocab", vocab}}}};
}

TEST(TokenizerJson, TinyPipelineReadsAsTokenizers) {
  TempDir tmp;
  write_text(tmp.path / "tokenizer_config.json", R"({"tokenizer_class": "TokenizersBackend"})");
  json tj = tiny_json();
  write_text(tmp.path / "tokenizer.json", tj.dump());
  const WordPieceTokenizer t = WordPieceTokenizer::from_folder(tmp.path.string());
  EXPECT_EQ(t.tokenize_to_strings("A bb! [MASK]"),
            (std::vector<std::string>{"a", "b", "##b", "!", "[MASK]"}));
  const std::string_view b = "b";
  const Encoding e = t.encode("a", &b, -1);
  EXPECT_EQ(e.input_ids, (std::vector<int32_t>{2, 5, 3, 6, 3}));
  EXPECT_EQ(e.token_type_ids, (std::vector<int32_t>{0, 0, 0, 0, 0}));  // not model input names
  EXPECT_EQ(t.mask_id(), -1);  // tokenizer_config.json names no mask token
  // Another prefix, no post-processor, the Whitespace pre-tokenizer.
  tj["model"]["continuing_subword_prefix"] = "@@";
  tj["model"]["vocab"].erase("##b");
  tj["model"]["vocab"]["@@b"] = 7;
  tj["post_processor"] = nullptr;
  tj["pre_tokenizer"] = {{"type", "Whitespace"}};
  write_text(tmp.path / "tokenizer.json", tj.dump());
  const WordPieceTokenizer u = WordPieceTokenizer::from_folder(tmp.path.string());
  EXPECT_EQ(u.tokenize_to_strings("abb!!"), (std::vector<std::string>{"a", "@@b", "@@b", "[UNK]"}));
  EXPECT_EQ(u.encode("a", &b, -1).input_ids, (std::vector<int32_t>{5, 6}));
}

// One line naming the file and the field for each kind of malformed tokenizer.json.
TEST(TokenizerJson, MalformedFilesGiveOneLine) {
  TempDir tmp;
  const std::string path = (tmp.path / "tokenizer.json").string();
  write_text(tmp.path / "tokenizer_config.json", R"({"tokenizer_class": "TokenizersBackend"})");
  struct Case {
    std::function<void(json&)> edit;
    std::string message;  // after "<path>: "
  };
  const std::vector<Case> cases = {
      {[](json& j) { j = json::array(); }, "expected a JSON object"},
      {[](json& j) { j.erase("model"); }, "'model' is missing"},
      {[](json& j) { j["model"] = "WordPiece"; }, "'model' must be an object, not a JSON string"},
      {[](json& j) { j["model"]["type"] = "BPE"; }, "'model.type' must be \"WordPiece\""},
      {[](json& j) { j["version"] = "2.0"; }, "'version' must be \"1.0\""},
      {[](json& j) { j["model"]["vocab"] = json::array(); },
       "'model.vocab' must be an object, not a JSON array"},
      {[](json& j) { j["model"]["vocab"] = json::object(); }, "'model.vocab' is empty"},
      {[](json& j) { j["model"]["vocab"]["a"] = "5"; },
       "'model.vocab' id of 'a' must be an integer in [0, 9), not a JSON string"},
      {[](json& j) { j["model"]["vocab"]["a"] = 9; },
       "'model.vocab' id of 'a' must be an integer in [0, 9), not 9"},
      {[](json& j) { j["model"]["vocab"]["a"] = -1; },
       "'model.vocab' id of 'a' must be an integer in [0, 9), not -1"},
      {[](json& j) { j["model"]["vocab"]["b"] = 5; },
       "'model.vocab' id 5 is used twice ('a' and 'b')"},
      {[](json& j) { j["model"].erase("unk_token"); }, "'model.unk_token' is missing"},
      {[](json& j) { j["model"]["unk_token"] = 1; },
       "'model.unk_token' must be a string, not a non-negative integer"},
      {[](json& j) { j["model"]["unk_token"] = "<unk>"; },
       "tokenizer: unk_token '<unk>' is not in the vocabulary"},
      {[](json& j) { j["model"]["max_input_chars_per_word"] = -3; },
       "'model.max_input_chars_per_word' must be a non-negative integer, not a JSON number"},
      {[](json& j) { j["model"].erase("continuing_subword_prefix"); },
       "'model.continuing_subword_prefix' is missing"},
      {[](json& j) {
         j["normalizer"] = {{"type", "NFKC"}};
       },
       "'normalizer.type' is normalizer 'NFKC', which cpuft does not implement (it reads "
       "BertNormalizer, NFD, Lowercase, StripAccents and Sequences of them)"},
      {[](json& j) {
         j["normalizer"] = {{"type", "Sequence"},
                            {"normalizers", {{{"type", "NFD"}}, {{"type", "Replace"}}}}};
       },
       "'normalizer.normalizers[1].type' is normalizer 'Replace', which cpuft does not implement "
       "(it reads BertNormalizer, NFD, Lowercase, StripAccents and Sequences of them)"},
      {[](json& j) { j["normalizer"]["lowercase"] = "yes"; },
       "'normalizer.lowercase' must be true or false, not a JSON string"},
      {[](json& j) { j["normalizer"] = 3; },
       "'normalizer' must be an object, not a non-negative integer"},
      {[](json& j) {
         j["pre_tokenizer"] = {{"type", "Metaspace"}};
       },
       "'pre_tokenizer.type' is pre-tokenizer 'Metaspace', which cpuft does not implement (it "
       "reads "
       "BertPreTokenizer, WhitespaceSplit, Whitespace, Punctuation and Sequences of them)"},
      {[](json& j) {
         j["pre_tokenizer"] = {{"type", "Punctuation"}, {"behavior", "Sideways"}};
       },
       "'pre_tokenizer.behavior' is 'Sideways', not a split behaviour of tokenizers"},
      {[](json& j) {
         j["post_processor"] = {{"type", "RobertaProcessing"}};
       },
       "'post_processor.type' is post-processor 'RobertaProcessing', which cpuft does not "
       "implement (it reads BertProcessing and TemplateProcessing)"},
      {[](json& j) {
         j["post_processor"]["cls"] = {"[CLS]", 99};
       },
       "'post_processor' template 'single': special token id 99 is not in [0, 9)"},
      {[](json& j) { j["post_processor"]["cls"] = "[CLS]"; },
       "'post_processor.cls' must be [token, id]"},
      {[](json& j) {
         j["post_processor"] = {{"type", "TemplateProcessing"},
                                {"single",
                                 {{{"SpecialToken", {{"id", "[X]"}, {"type_id", 0}}}},
                                  {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                                {"pair", json::array()},
                                {"special_tokens", json::object()}};
       },
       "'post_processor.special_tokens.[X]' is missing (the template uses it)"},
      {[](json& j) {
         j["post_processor"] = {{"type", "TemplateProcessing"},
                                {"single", {{{"Sequence", {{"id", "A"}, {"type_id", 2}}}}}},
                                {"pair", json::array()},
                                {"special_tokens", json::object()}};
       },
       "'post_processor.single[0].Sequence.type_id' is 2; BERT models have the token types 0 and "
       "1"},
      {[](json& j) {
         j["post_processor"] = {{"type", "TemplateProcessing"},
                                {"single", {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                                {"pair", {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                                {"special_tokens", json::object()}};
       },
       "'post_processor' template 'pair' must hold sequence A once and sequence B once"},
      {[](json& j) { j["added_tokens"] = json::object(); },
       "'added_tokens' must be an array, not a JSON object"},
      {[](json& j) { j["added_tokens"][1].erase("content"); },
       "'added_tokens[1].content' is missing"},
      {[](json& j) { j["added_tokens"][1]["lstrip"] = 1; },
       "'added_tokens[1].lstrip' must be true or false, not a non-negative integer"},
      {[](json& j) {
         j["added_tokens"].push_back({{"id", 12}, {"content", "<new>"}});
       },
       "'added_tokens': '<new>' has id 12 but the tokenizers library gives it 9 (tokens "
       "outside the vocabulary follow it, in order)"},
      {[](json& j) { j["added_tokens"][2]["id"] = 5; },
       "'added_tokens': '[CLS]' has id 5 but the tokenizers library gives it 2 (its "
       "vocabulary id)"},
  };
  for (const Case& c : cases) {
    json j = tiny_json();
    c.edit(j);
    write_text(tmp.path / "tokenizer.json", j.dump());
    EXPECT_EQ(message_of([&] { WordPieceTokenizer::from_folder(tmp.path.string()); }),
              path + ": " + c.message);
  }
  write_text(tmp.path / "tokenizer.json", "{\"model\": ");
  EXPECT_EQ(message_of([&] { WordPieceTokenizer::from_folder(tmp.path.string()); }),
            path + ": not valid JSON");
  // BERT mode checks the sections it ignores too, and its own options.
  write_text(tmp.path / "tokenizer_config.json", R"({"tokenizer_class": "BertTokenizer"})");
  json j = tiny_json();
  j["normalizer"] = {{"type", "Precompiled"}};
  write_text(tmp.path / "tokenizer.json", j.dump());
  EXPECT_NE(message_of([&] {
              WordPieceTokenizer::from_folder(tmp.path.string());
            }).find(path + ": 'normalizer.type' is normalizer 'Precompiled'"),
            std::string::npos);
  write_text(tmp.path / "tokenizer.json", tiny_json().dump());
  write_text(tmp.path / "tokenizer_config.json",
             R"({"tokenizer_class": "BertTokenizer", "cls_token": "<s>"})");
  EXPECT_EQ(message_of([&] { WordPieceTokenizer::from_folder(tmp.path.string()); }),
            (tmp.path / "tokenizer_config.json").string() +
                ": cls_token '<s>' is in neither the vocabulary nor the added tokens (transformers "
                "would add it as a new token the model has no embedding for)");
}

}  // namespace
}  // namespace cpuft
