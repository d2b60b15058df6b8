// The Unigram tokenizer as DeBERTa-v2/v3's (transformers 5's DebertaV2Tokenizer) against Hugging
// Face's ids: the hard cases of tests/fixtures/deberta_spm_hard_cases.jsonl and the folders of
// deberta_spm_config_cases.json (tools/make_deberta_spm_fixture.py), through every way of loading
// the fixture folders and through save(), plus bad input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "core/check.h"
#include "data/tokenizer_test_util.h"
#include "data/unigram_tokenizer.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using cpuft::testing::fixture_path;
using cpuft::testing::message_of;
using cpuft::testing::TempDir;

// microsoft/deberta-v3-*'s layout (spm.model, tokenizer_config.json) and what transformers 5's
// save_pretrained writes for it (tokenizer.json, tokenizer_config.json).
const fs::path& hub_folder() {
  static const fs::path f = fixture_path("tokenizers/deberta_v3_unigram");
  return f;
}
const fs::path& saved_folder() {
  static const fs::path f = fixture_path("tokenizers/deberta_v3_unigram_json");
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

void copy_into(const fs::path& dir, const fs::path& from,
               std::initializer_list<const char*> names) {
  for (const char* n : names) fs::copy_file(from / n, dir / n);
}

std::vector<json> hard_cases() {
  std::vector<json> cases;
  std::ifstream in(fixture_path("deberta_spm_hard_cases.jsonl"));
  for (std::string line; std::getline(in, line);) cases.push_back(json::parse(line));
  return cases;
}

const std::vector<json>& cases() {
  static const std::vector<json> c = hard_cases();
  return c;
}

// Every hard case through `tok`: encode (with the case's truncation) and, for single texts,
// tokenize. Returns the number of cases whose ids and type ids all match.
size_t count_identical(const Tokenizer& tok, const std::string& label) {
  size_t same = 0;
  for (const json& c : cases()) {
    const std::string a = c.at("a");
    const bool pair = c.contains("b");
    const std::string b = pair ? c.at("b").get<std::string>() : std::string();
    const std::string_view bv = b;
    const int max_length = c.at("max_length").is_null() ? -1 : c.at("max_length").get<int>();
    const Encoding e = tok.encode(a, pair ? &bv : nullptr, max_length);
    const auto want_ids = c.at("input_ids").get<std::vector<int32_t>>();
    const auto want_types = c.at("token_type_ids").get<std::vector<int32_t>>();
    bool ok = e.input_ids == want_ids && e.token_type_ids == want_types;
    EXPECT_EQ(e.input_ids, want_ids) << label << ": " << c.dump();
    EXPECT_EQ(e.token_type_ids, want_types) << label << ": " << c.dump();
    if (c.contains("tokens")) {
      const std::vector<int32_t> ids = tok.tokenize(a);
      ok = ok && ids == c.at("tokens").get<std::vector<int32_t>>();
      EXPECT_EQ(ids, c.at("tokens").get<std::vector<int32_t>>()) << label << ": " << c.dump();
    }
    same += ok;
  }
  std::printf("%s: %zu/%zu hard cases identical to HF\n", label.c_str(), same, cases().size());
  return same;
}

// The single texts through `tok` against the ids recorded in `field` ("tokens_lower", ...).
size_t count_identical_tokens(const Tokenizer& tok, const std::string& field,
                              const std::string& label) {
  size_t n = 0, same = 0;
  for (const json& c : cases()) {
    if (!c.contains(field)) continue;
    ++n;
    const std::vector<int32_t> ids = tok.tokenize(c.at("a").get<std::string>());
    const auto want = c.at(field).get<std::vector<int32_t>>();
    same += ids == want;
    EXPECT_EQ(ids, want) << label << ": " << c.dump();
  }
  std::printf("%s: %zu/%zu hard texts identical to HF (%s)\n", label.c_str(), same, n,
              field.c_str());
  EXPECT_GE(n, 150u);
  return same;
}

size_t n_with(const std::string& field) {
  size_t n = 0;
  for (const json& c : cases()) n += c.contains(field);
  return n;
}

// The hub config with `changes` merged in.
std::string hub_config_with(const json& changes) {
  json j = json::parse(read_all(hub_folder() / "tokenizer_config.json"));
  j.update(changes);
  return j.dump();
}

TEST(UnigramDeberta, HardCasesMatchHFFromTheHubFolder) {
  ASSERT_GE(cases().size(), 300u);
  const auto tok = load_tokenizer(hub_folder().string());
  EXPECT_NE(tok->summary().find("spm.model"), std::string::npos) << tok->summary();
  EXPECT_NE(tok->summary().find("DebertaV2Tokenizer"), std::string::npos) << tok->summary();
  EXPECT_EQ(tok->vocab_size(), 8001);  // 8000 pieces, then [MASK]
  EXPECT_EQ(count_identical(*tok, "hub folder (spm.model)"), cases().size());
}

// The other forms of the same folder: hub configs that name no class (config.json's model_type
// decides), spm.model alone, the folder transformers 5 saves and its tokenizer.json alone (no
// class: the file's own pipeline, which is the class's).
TEST(UnigramDeberta, HardCasesMatchHFFromEveryFormOfTheFolder) {
  TempDir minimal, bare, fast_class, saved, json_only;
  copy_into(minimal.path, hub_folder(), {"spm.model"});
  write_all(minimal.path / "tokenizer_config.json",
            R"({"do_lower_case": false, "vocab_type": "spm"})");
  write_all(minimal.path / "config.json", R"({"model_type": "deberta-v2"})");
  copy_into(bare.path, hub_folder(), {"spm.model"});
  copy_into(fast_class.path, hub_folder(), {"spm.model"});
  write_all(fast_class.path / "tokenizer_config.json",
            hub_config_with({{"tokenizer_class", "DebertaV2TokenizerFast"}}));
  copy_into(saved.path, saved_folder(), {"tokenizer.json", "tokenizer_config.json"});
  copy_into(json_only.path, saved_folder(), {"tokenizer.json"});
  for (const auto& [dir, label] :
       {std::pair{&minimal, "minimal config + config.json"}, std::pair{&bare, "spm.model alone"},
        std::pair{&fast_class, "DebertaV2TokenizerFast"},
        std::pair{&saved, "saved by transformers 5"},
        std::pair{&json_only, "its tokenizer.json alone"}}) {
    const auto tok = load_tokenizer(dir->path.string());
    EXPECT_EQ(tok->vocab_size(), 8001) << label;
    EXPECT_EQ(count_identical(*tok, label), cases().size());
  }
}

// do_lower_case, split_by_punct and add_prefix_space false (Metaspace "first"), each on the hub
// folder and through from_deberta_model.
TEST(UnigramDeberta, OptionsMatchHF) {
  const std::string model = read_all(hub_folder() / "spm.model");
  for (const auto& [key, field] :
       {std::pair{"do_lower_case", "tokens_lower"}, std::pair{"split_by_punct", "tokens_punct"},
        std::pair{"add_prefix_space", "tokens_first"}}) {
    const bool value = std::string(key) != "add_prefix_space";
    TempDir d;
    copy_into(d.path, hub_folder(), {"spm.model"});
    write_all(d.path / "tokenizer_config.json", hub_config_with({{key, value}}));
    EXPECT_EQ(count_identical_tokens(*load_tokenizer(d.path.string()), field, key), n_with(field));
    UnigramTokenizer::DebertaOptions o;
    o.do_lower_case = std::string(key) == "do_lower_case";
    o.split_by_punct = std::string(key) == "split_by_punct";
    o.add_prefix_space = std::string(key) != "add_prefix_space";
    const UnigramTokenizer t = UnigramTokenizer::from_deberta_model(model, "spm.model", o);
    EXPECT_EQ(count_identical_tokens(t, field, std::string("from_deberta_model, ") + key),
              n_with(field));
  }
}

// tokenizer.json as transformers 4.x's DebertaV2Converter wrote it (Strip, the charsmap,
// Replace(" {2,}"), Metaspace), as the fixture script builds it from transformers 5's. The
// charsmap comes from spm.model through the XLM-R reader's save (the only public way to it).
std::string v4_json(const std::string& scheme) {
  TempDir xlmr;
  UnigramTokenizer::from_sentencepiece_model(read_all(hub_folder() / "spm.model"), "spm.model")
      .save(xlmr.path.string());
  const json precompiled = json::parse(read_all(xlmr.path / "tokenizer.json")).at("normalizer");
  EXPECT_EQ(precompiled.at("type"), "Precompiled");
  json j = json::parse(read_all(saved_folder() / "tokenizer.json"));
  j["normalizer"] = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}},
        precompiled,
        {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}}}}};
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Metaspace"},
                           {"replacement", "\u2581"},
                           {"prepend_scheme", scheme},
                           {"split", true}}}}};
  return j.dump();
}

// Without a class around it (tokenizer.json alone) the 4.x file's pipeline is used as written,
// as tokenizers does; with DebertaV2Tokenizer's config transformers 5 rebuilds its own.
TEST(UnigramDeberta, TransformersFourTokenizerJsonMatchesTokenizers) {
  for (const auto& [scheme, field] :
       {std::pair{"always", "tokens_v4"}, std::pair{"first", "tokens_v4_first"}}) {
    const std::string text = v4_json(scheme);
    const UnigramTokenizer t = UnigramTokenizer::from_tokenizer_json(text, "4.x tokenizer.json");
    EXPECT_EQ(count_identical_tokens(t, field, str("4.x tokenizer.json, ", scheme)), n_with(field));
    // Saved, the folder names the generic class (tokenizer.json as it is) and reloads the same.
    TempDir out;
    t.save(out.path.string());
    if (const char* keep = std::getenv("CPUFT_TOKENIZER_SAVE_DIR"))
      t.save(str(keep, "/deberta_v4_", scheme));
    EXPECT_EQ(json::parse(read_all(out.path / "tokenizer_config.json")).at("tokenizer_class"),
              "TokenizersBackend");
    EXPECT_EQ(count_identical_tokens(*load_tokenizer(out.path.string()), field,
                                     str("saved 4.x tokenizer.json, ", scheme)),
              n_with(field));
    TempDir with_class;
    write_all(with_class.path / "tokenizer.json", text);
    copy_into(with_class.path, hub_folder(), {"tokenizer_config.json"});
    EXPECT_EQ(count_identical(*load_tokenizer(with_class.path.string()),
                              str("4.x tokenizer.json + DebertaV2Tokenizer, ", scheme)),
              cases().size());
  }
  size_t differs = 0;
  for (const json& c : cases())
    differs += c.contains("tokens_v4") && c.at("tokens_v4") != c.at("tokens");
  EXPECT_GE(differs, 20u);  // the two pipelines are really different
}

// save() writes DebertaV2Tokenizer's files (and spm.model when read from it); they load back
// with the same ids, and so does the saved tokenizer.json alone. CPUFT_TOKENIZER_SAVE_DIR keeps
// copies for tools/make_deberta_spm_fixture.py --check-saved (AutoTokenizer on them).
TEST(UnigramDeberta, SaveRoundTrip) {
  const char* keep = std::getenv("CPUFT_TOKENIZER_SAVE_DIR");
  for (const auto& [from, name] : {std::pair{&hub_folder(), "deberta_from_spm"},
                                   std::pair{&saved_folder(), "deberta_from_json"}}) {
    TempDir out, json_only;
    const auto tok = load_tokenizer(from->string());
    tok->save(out.path.string());
    if (keep) tok->save(str(keep, "/", name));
    for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
      EXPECT_TRUE(fs::exists(out.path / f)) << f;
    EXPECT_EQ(fs::exists(out.path / "spm.model"), from == &hub_folder());
    const json config = json::parse(read_all(out.path / "tokenizer_config.json"));
    EXPECT_EQ(config.at("tokenizer_class"), "DebertaV2Tokenizer");
    EXPECT_EQ(config.at("cls_token"), "[CLS]");
    EXPECT_EQ(config.at("sep_token"), "[SEP]");
    EXPECT_EQ(config.at("mask_token").at("content"), "[MASK]");
    const auto again = load_tokenizer(out.path.string());
    EXPECT_EQ(again->vocab_size(), 8001);
    EXPECT_EQ(count_identical(*again, str("saved from ", name)), cases().size());
    fs::copy_file(out.path / "tokenizer.json", json_only.path / "tokenizer.json");
    EXPECT_EQ(count_identical(*load_tokenizer(json_only.path.string()),
                              str("saved tokenizer.json alone, from ", name)),
              cases().size());
  }
  // With an option on, the saved config carries it.
  for (const auto& [key, field, name] :
       {std::tuple{"do_lower_case", "tokens_lower", "deberta_lower"},
        std::tuple{"split_by_punct", "tokens_punct", "deberta_punct"},
        std::tuple{"add_prefix_space", "tokens_first", "deberta_first"}}) {
    const bool value = std::string(key) != "add_prefix_space";
    TempDir in, out;
    copy_into(in.path, hub_folder(), {"spm.model"});
    write_all(in.path / "tokenizer_config.json", hub_config_with({{key, value}}));
    const auto tok = load_tokenizer(in.path.string());
    tok->save(out.path.string());
    if (keep) tok->save(str(keep, "/", name));
    EXPECT_EQ(json::parse(read_all(out.path / "tokenizer_config.json")).at(key), value);
    EXPECT_EQ(
        count_identical_tokens(*load_tokenizer(out.path.string()), field, str("saved with ", key)),
        n_with(field));
  }
}

// Both sources (spm.model; transformers 5's tokenizer.json) end in the same tokenizer: save()
// writes the same tokenizer.json and tokenizer_config.json byte for byte.
TEST(UnigramDeberta, BothLoadingPathsGiveTheSameTokenizer) {
  TempDir from_spm, from_json;
  load_tokenizer(hub_folder().string())->save(from_spm.path.string());
  load_tokenizer(saved_folder().string())->save(from_json.path.string());
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
    EXPECT_TRUE(read_all(from_spm.path / f) == read_all(from_json.path / f)) << f;
}

TEST(UnigramDeberta, TemplateTypeIdsAndTruncation) {
  const auto tok = load_tokenizer(hub_folder().string());
  const std::string_view b = "world";
  const std::vector<int32_t> ha = tok->tokenize("Hello"), hb = tok->tokenize("world");
  std::vector<int32_t> want = {1};  // [CLS]
  want.insert(want.end(), ha.begin(), ha.end());
  want.push_back(2);  // [SEP]
  const size_t n_a = want.size();
  want.insert(want.end(), hb.begin(), hb.end());
  want.push_back(2);
  const Encoding pair = tok->encode("Hello", &b, -1);
  EXPECT_EQ(pair.input_ids, want);
  std::vector<int32_t> types(want.size(), 1);
  std::fill(types.begin(), types.begin() + static_cast<std::ptrdiff_t>(n_a), 0);
  EXPECT_EQ(pair.token_type_ids, types);
  EXPECT_EQ(tok->encode("Hello", &b, 3).input_ids, (std::vector<int32_t>{1, 2, 2}));
  EXPECT_EQ(tok->encode("Hello", &b, 3).token_type_ids, (std::vector<int32_t>{0, 0, 1}));
  EXPECT_NE(message_of([&] { tok->encode("Hello", &b, 2); }).find("max_length 2"),
            std::string::npos);
  EXPECT_EQ(tok->encode("[MASK]", nullptr, -1).input_ids, (std::vector<int32_t>{1, 8000, 2}));
  EXPECT_EQ(tok->encode("", nullptr, -1).input_ids, (std::vector<int32_t>{1, 2}));
}

// Pieces, the whitespace rule and [MASK]: no HF needed to see these.
TEST(UnigramDeberta, WhitespaceAndSpecialTokens) {
  const UnigramTokenizer t = UnigramTokenizer::from_folder(hub_folder().string());
  using V = std::vector<std::string>;
  EXPECT_EQ(t.tokenize_to_strings("Hello world"), (V{"\u2581He", "ll", "o", "\u2581world"}));
  // Runs of White_Space and lone tabs/newlines become one space; trailing ones go; a lone
  // U+3000 stays (and is no piece).
  EXPECT_EQ(t.tokenize("a\t\tb \n"), t.tokenize("a b"));
  EXPECT_EQ(t.tokenize("a\tb"), t.tokenize("a b"));
  EXPECT_NE(t.tokenize("a\u3000b"), t.tokenize("a b"));
  EXPECT_EQ(t.tokenize("a \u3000 b"), t.tokenize("a b"));
  // NFC, not NFKC: the ligature stays a ligature (no piece: [UNK]).
  EXPECT_EQ(t.tokenize("e\u0301"), t.tokenize("\u00e9"));
  EXPECT_NE(t.tokenize("\ufb01"), t.tokenize("fi"));
  // [MASK] (no piece: added after the 8000 pieces) is cut out of the raw text.
  EXPECT_EQ(t.tokenize_to_strings("a [MASK] b"), (V{"\u2581a", "[MASK]", "\u2581b"}));
  EXPECT_EQ(t.tokenize("[PAD][CLS][SEP][UNK]"), (std::vector<int32_t>{0, 1, 2, 3}));
}

// The folders of deberta_spm_config_cases.json: how DebertaV2Tokenizer reads
// special_tokens_map.json, added_tokens_decoder, special tokens that are no pieces, ids in
// tokenizer.json, options nobody reads.
TEST(UnigramDeberta, ConfigFilesAreReadAsTransformersReadsThem) {
  const json folders = json::parse(read_all(fixture_path("deberta_spm_config_cases.json")));
  ASSERT_GE(folders.size(), 8u);
  const json hf_json = json::parse(read_all(saved_folder() / "tokenizer.json"));
  size_t n = 0, same = 0;
  for (const json& f : folders) {
    TempDir d;
    if (f.at("base") == "spm") {
      copy_into(d.path, hub_folder(), {"spm.model"});
    } else {
      json j = hf_json;
      const json& edits = f.at("json_edits");
      if (edits.is_object() && edits.contains("added_tokens"))
        for (const json& a : edits.at("added_tokens")) j["added_tokens"].push_back(a);
      if (edits.is_object() && edits.contains("unk_id")) j["model"]["unk_id"] = edits["unk_id"];
      write_all(d.path / "tokenizer.json", j.dump());
    }
    const json& files = f.at("files");
    for (auto it = files.begin(); it != files.end(); ++it)
      write_all(d.path / it.key(), it.value().dump());
    const std::string label = f.at("name");
    const auto tok = load_tokenizer(d.path.string());
    EXPECT_EQ(tok->vocab_size(), f.at("vocab_size").get<int64_t>()) << label;
    for (const json& c : f.at("cases")) {
      const std::string a = c.at("a");
      const std::string b = c.value("b", "");
      const std::string_view bv = b;
      const Encoding e = tok->encode(a, c.contains("b") ? &bv : nullptr, -1);
      const bool ok = e.input_ids == c.at("input_ids").get<std::vector<int32_t>>() &&
                      e.token_type_ids == c.at("token_type_ids").get<std::vector<int32_t>>();
      EXPECT_TRUE(ok) << label << ": " << c.dump() << "\n got "
                      << ::testing::PrintToString(e.input_ids);
      ++n;
      same += ok;
    }
  }
  std::printf("config folders: %zu/%zu encodings identical to HF\n", same, n);
}

// Bad files: one line naming the file (and field), never a crash.
TEST(UnigramDeberta, BadFoldersGiveOneLineNamingTheFileAndField) {
  auto error_of = [](const fs::path& dir) {
    const std::string msg = message_of([&] { load_tokenizer(dir.string()); });
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  };
  {  // The class named, but neither spm.model nor tokenizer.json.
    TempDir d;
    copy_into(d.path, hub_folder(), {"tokenizer_config.json"});
    const std::string msg = error_of(d.path);
    EXPECT_NE(msg.find("neither tokenizer.json nor spm.model found"), std::string::npos) << msg;
    TempDir model_dir;  // a model folder without its tokenizer files
    write_all(model_dir.path / "config.json", R"({"model_type": "deberta-v2"})");
    EXPECT_NE(error_of(model_dir.path).find("spm.model"), std::string::npos);
  }
  const std::string model = read_all(hub_folder() / "spm.model");
  for (const std::string& bytes :
       {std::string(), std::string("not a model"), model.substr(0, model.size() / 2),
        model.substr(0, 17), std::string("\x0a\xff\xff\xff\xff\x0f", 6), std::string("\x08\x01", 2),
        model + std::string("\x12\x02\x18\x02", 4)}) {
    TempDir d;
    write_all(d.path / "spm.model", bytes);
    copy_into(d.path, hub_folder(), {"tokenizer_config.json"});
    const std::string msg = error_of(d.path);
    EXPECT_NE(msg.find("spm.model"), std::string::npos) << msg;
  }
  for (const auto& [changes, field] :
       {std::pair{json{{"do_lower_case", "yes"}}, "do_lower_case"},
        std::pair{json{{"split_by_punct", 1}}, "split_by_punct"},
        std::pair{json{{"add_prefix_space", nullptr}, {"unk_id", "3"}}, "unk_id"},
        std::pair{json{{"mask_token", {{"content", "[MASK]"}, {"single_word", true}}}},
                  "mask_token"},
        std::pair{json{{"pad_token", 5}}, "pad_token"},
        std::pair{json{{"added_tokens_decoder", {{"x", {{"content", "[MASK]"}}}}}},
                  "added_tokens_decoder.x"}}) {
    TempDir d;
    copy_into(d.path, hub_folder(), {"spm.model"});
    write_all(d.path / "tokenizer_config.json", hub_config_with(changes));
    const std::string msg = error_of(d.path);
    EXPECT_NE(msg.find("tokenizer_config.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << msg;
  }
  {  // An unknown token that is no piece: unk_id must be one (from spm.model it is the model's).
    TempDir d;
    copy_into(d.path, saved_folder(), {"tokenizer.json"});
    write_all(d.path / "tokenizer_config.json",
              hub_config_with({{"unk_token", "<unk>"}, {"unk_id", 99999}}));
    const std::string msg = error_of(d.path);
    EXPECT_NE(msg.find("unk_id 99999"), std::string::npos) << msg;
  }
  // tokenizer.json pipelines cpuft does not follow are refused by field (no class around them).
  const json good = json::parse(read_all(saved_folder() / "tokenizer.json"));
  auto json_error = [&](const std::function<void(json&)>& edit, const std::string& want) {
    json j = good;
    edit(j);
    const std::string msg =
        message_of([&] { UnigramTokenizer::from_tokenizer_json(j.dump(), "d/tokenizer.json"); });
    EXPECT_NE(msg.find("d/tokenizer.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
  };
  json_error(
      [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["prepend_scheme"] = "sometimes"; },
      "prepend_scheme");
  json_error(
      [](json& j) {
        j["pre_tokenizer"]["pretokenizers"] =
            json::array({{{"type", "Punctuation"}, {"behavior", "Removed"}}});
      },
      "behavior");
  json_error([](json& j) { j["normalizer"]["normalizers"][0]["pattern"]["Regex"] = "\\s+"; },
             "normalizers[0]");
  json_error([](json& j) { j["normalizer"]["normalizers"][1] = {{"type", "NFKD"}}; }, "'NFKD'");
}

}  // namespace
}  // namespace cpuft
