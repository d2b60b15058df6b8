// WordPieceTokenizer::from_folder / from_files / save: the files of a Hugging Face tokenizer
// folder (vocab.txt, tokenizer.json, tokenizer_config.json, special_tokens_map.json, config.json)
// and which of them wins where (wordpiece_tokenizer.h has the rules).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/atomic_file.h"
#include "core/check.h"
#include "data/utf8.h"
#include "data/wordpiece_tokenizer.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// No tokenizer file comes near this; a bigger one is refused before it is read.
constexpr uintmax_t kMaxFileBytes = uintmax_t{1} << 30;

// ---------------------------------------------------------------------------------------------
// Files.

std::optional<std::string> read_if_present(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return std::nullopt;
  // A FIFO or a device would block or never end: only regular files are read.
  CPUFT_REQUIRE(fs::is_regular_file(st), path.string(), ": not a regular file");
  const uintmax_t size = fs::file_size(path, ec);
  CPUFT_REQUIRE(!ec, path.string(), ": cannot read its size: ", ec.message());
  CPUFT_REQUIRE(size <= kMaxFileBytes, path.string(), ": ", size,
                " bytes, more than any tokenizer file (limit ", kMaxFileBytes, ")");
  std::ifstream in(path, std::ios::binary);
  CPUFT_REQUIRE(in, path.string(), ": cannot open: ", std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  CPUFT_REQUIRE(!in.bad(), path.string(), ": read error");
  return buf.str();
}

// Atomically (temporary file, fsync, rename): a full disk leaves the old file or none, never a
// truncated one.
void write_file(const fs::path& path, const std::string& text) {
  write_file_atomically(path.string(), text);
}

// A JSON file's top-level object; `where` names it in errors.
json parse_object(const std::string& text, const std::string& where) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  CPUFT_REQUIRE(!j.is_discarded(), where, ": not valid JSON");
  CPUFT_REQUIRE(j.is_object(), where, ": expected a JSON object");
  return j;
}

std::string type_of(const json& v) {
  return v.is_number_unsigned() ? "a non-negative integer" : str("a JSON ", v.type_name());
}

// Short text from a file for a message: control characters escaped, long text cut.
std::string shown(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < 80; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      out += str("\\x", "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > 80) out += "...";
  return out;
}

// vocab.txt as transformers reads it: text-mode lines ("\n", "\r\n" and a lone "\r" all end a
// line), the line break removed and nothing else, no line after a final line break.
std::vector<std::string> read_vocab_txt(const std::string& text, const std::string& where) {
  std::vector<std::string> vocab;
  std::string line;
  auto finish = [&] {
    const size_t bad = find_invalid_utf8(line);
    CPUFT_REQUIRE(bad == std::string_view::npos, where, ":", vocab.size() + 1,
                  ": invalid UTF-8 at byte ", bad);
    vocab.push_back(std::move(line));
    line.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      finish();
    } else {
      line.push_back(c);
    }
  }
  if (!line.empty()) finish();
  CPUFT_REQUIRE(!vocab.empty(), where, ": empty vocabulary");
  return vocab;
}

// ---------------------------------------------------------------------------------------------
// Typed access to one JSON file: every error is "<file>: '<field>' <what is wrong>".

struct Doc {
  std::string file;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(str(file, ": '", field, "' ", what));
  }
  const json& object(const json& parent, const std::string& field, const char* key) const {
    const auto it = parent.find(key);
    if (it == parent.end()) fail(field, "is missing");
    if (!it->is_object()) fail(field, "must be an object, not " + type_of(*it));
    return *it;
  }
  std::string string(const json& parent, const std::string& field, const char* key) const {
    const auto it = parent.find(key);
    if (it == parent.end()) fail(field, "is missing");
    if (!it->is_string()) fail(field, "must be a string, not " + type_of(*it));
    return it->get<std::string>();
  }
  bool boolean(const json& parent, const std::string& field, const char* key,
               std::optional<bool> fallback) const {
    const auto it = parent.find(key);
    if (it == parent.end()) {
      if (!fallback) fail(field, "is missing");
      return *fallback;
    }
    if (!it->is_boolean()) fail(field, "must be true or false, not " + type_of(*it));
    return it->get<bool>();
  }
  uint64_t count(const json& parent, const std::string& field, const char* key) const {
    const auto it = parent.find(key);
    if (it == parent.end()) fail(field, "is missing");
    if (!it->is_number_unsigned())
      fail(field, "must be a non-negative integer, not " + type_of(*it));
    return it->get<uint64_t>();
  }
};

// ---------------------------------------------------------------------------------------------
// tokenizer.json sections.

struct BertNormalizerJson {  // the options of a BertNormalizer, for BERT mode's defaults
  bool clean_text = true, handle_chinese_chars = true, lowercase = true;
  std::optional<bool> strip_accents;
};

void read_normalizer(const Doc& d, const json& n, const std::string& field,
                     std::vector<NormalizeStep>& steps, std::optional<BertNormalizerJson>* bert,
                     int depth) {
  if (!n.is_object()) d.fail(field, "must be an object, not " + type_of(n));
  const std::string type = d.string(n, field + ".type", "type");
  if (type == "BertNormalizer") {
    BertNormalizerJson b;
    b.clean_text = d.boolean(n, field + ".clean_text", "clean_text", true);
    b.handle_chinese_chars =
        d.boolean(n, field + ".handle_chinese_chars", "handle_chinese_chars", true);
    b.lowercase = d.boolean(n, field + ".lowercase", "lowercase", true);
    if (n.contains("strip_accents") && !n["strip_accents"].is_null()) {
      b.strip_accents = d.boolean(n, field + ".strip_accents", "strip_accents", std::nullopt);
    }
    const bool strip = b.strip_accents.value_or(b.lowercase);
    if (b.clean_text) steps.push_back(NormalizeStep::kCleanText);
    if (b.handle_chinese_chars) steps.push_back(NormalizeStep::kChineseChars);
    if (strip) {
      steps.push_back(NormalizeStep::kNfd);
      steps.push_back(NormalizeStep::kStripNonspacing);
    }
    if (b.lowercase) steps.push_back(NormalizeStep::kLowercase);
    if (bert && depth == 0) *bert = b;
  } else if (type == "NFD") {
    steps.push_back(NormalizeStep::kNfd);
  } else if (type == "Lowercase") {
    steps.push_back(NormalizeStep::kLowercase);
  } else if (type == "StripAccents") {
    steps.push_back(NormalizeStep::kStripCombining);
  } else if (type == "Sequence") {
    const auto it = n.find("normalizers");
    if (it == n.end() || !it->is_array()) d.fail(field + ".normalizers", "must be an array");
    if (depth >= 8) d.fail(field, "nests Sequences too deeply");
    for (size_t i = 0; i < it->size(); ++i) {
      read_normalizer(d, (*it)[i], str(field, ".normalizers[", i, "]"), steps, bert, depth + 1);
    }
  } else {
    d.fail(field + ".type",
           "is normalizer '" + shown(type) +
               "', which cpuft does not implement (it reads BertNormalizer, NFD, Lowercase, "
               "StripAccents and Sequences of them)");
  }
}

SplitBehavior read_behavior(const Doc& d, const json& p, const std::string& field) {
  if (!p.contains("behavior")) return SplitBehavior::kIsolated;  // tokenizers' default
  const std::string b = d.string(p, field + ".behavior", "behavior");
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  d.fail(field + ".behavior", "is '" + shown(b) + "', not a split behaviour of tokenizers");
}

void read_pre_tokenizer(const Doc& d, const json& p, const std::string& field,
                        std::vector<PreTokenizeStep>& steps, int depth) {
  if (!p.is_object()) d.fail(field, "must be an object, not " + type_of(p));
  const std::string type = d.string(p, field + ".type", "type");
  if (type == "BertPreTokenizer") {
    steps.push_back({PreTokenizeStep::kWhitespaceSplit, SplitBehavior::kRemoved});
    steps.push_back({PreTokenizeStep::kPunctuation, SplitBehavior::kIsolated});
  } else if (type == "WhitespaceSplit") {
    steps.push_back({PreTokenizeStep::kWhitespaceSplit, SplitBehavior::kRemoved});
  } else if (type == "Whitespace") {
    steps.push_back({PreTokenizeStep::kWhitespace, SplitBehavior::kRemoved});
  } else if (type == "Punctuation") {
    steps.push_back({PreTokenizeStep::kPunctuation, read_behavior(d, p, field)});
  } else if (type == "Sequence") {
    const auto it = p.find("pretokenizers");
    if (it == p.end() || !it->is_array()) d.fail(field + ".pretokenizers", "must be an array");
    if (depth >= 8) d.fail(field, "nests Sequences too deeply");
    for (size_t i = 0; i < it->size(); ++i) {
      read_pre_tokenizer(d, (*it)[i], str(field, ".pretokenizers[", i, "]"), steps, depth + 1);
    }
  } else {
    d.fail(field + ".type",
           "is pre-tokenizer '" + shown(type) +
               "', which cpuft does not implement (it reads BertPreTokenizer, WhitespaceSplit, "
               "Whitespace, Punctuation and Sequences of them)");
  }
}

// "post_processor": BertProcessing or TemplateProcessing; null: the texts alone (a:0, b:1).
void read_post_processor(const Doc& d, const json& root, WordPiecePipeline& p) {
  const auto it = root.find("post_processor");
  if (it == root.end() || it->is_null()) {
    p.single = {{0, {}, {}, 0}};
    p.pair = {{0, {}, {}, 0}, {1, {}, {}, 1}};
    return;
  }
  const std::string field = "post_processor";
  if (!it->is_object()) d.fail(field, "must be an object or null, not " + type_of(*it));
  const json& pp = *it;
  const std::string type = d.string(pp, field + ".type", "type");
  auto id_of = [&](const json& v, const std::string& f, int32_t& id) {
    if (!v.is_number_unsigned() || v.get<uint64_t>() > static_cast<uint64_t>(INT32_MAX)) {
      d.fail(f, "must be a token id, not " + (v.is_number() ? v.dump() : type_of(v)));
    }
    id = static_cast<int32_t>(v.get<uint64_t>());
  };
  if (type == "BertProcessing") {
    TemplatePiece cls, sep;
    for (auto [key, piece] : {std::pair<const char*, TemplatePiece*>{"cls", &cls}, {"sep", &sep}}) {
      const auto t = pp.find(key);
      const std::string f = field + "." + key;
      if (t == pp.end() || !t->is_array() || t->size() != 2 || !(*t)[0].is_string()) {
        d.fail(f, "must be [token, id]");
      }
      int32_t id = 0;
      id_of((*t)[1], f + "[1]", id);
      piece->ids = {id};
      piece->tokens = {(*t)[0].get<std::string>()};
    }
    p.single = {cls, {0, {}, {}, 0}, sep};
    p.pair = p.single;
    p.pair.push_back({1, {}, {}, 1});
    TemplatePiece sep1 = sep;
    sep1.type_id = 1;
    p.pair.push_back(sep1);
    return;
  }
  if (type != "TemplateProcessing") {
    d.fail(field + ".type", "is post-processor '" + shown(type) +
                                "', which cpuft does not implement (it reads BertProcessing and "
                                "TemplateProcessing)");
  }
  const json& specials = d.object(pp, field + ".special_tokens", "special_tokens");
  auto read_template = [&](const char* name, std::vector<TemplatePiece>& out) {
    const std::string f = field + "." + name;
    const auto t = pp.find(name);
    if (t == pp.end() || !t->is_array()) d.fail(f, "must be an array of template pieces");
    for (size_t i = 0; i < t->size(); ++i) {
      const json& piece = (*t)[i];
      const std::string pf = str(f, "[", i, "]");
      if (!piece.is_object() || piece.size() != 1) {
        d.fail(pf, "must be {\"Sequence\": ...} or {\"SpecialToken\": ...}");
      }
      const std::string kind = piece.begin().key();
      const json& body = piece.begin().value();
      if (!body.is_object()) d.fail(pf + "." + kind, "must be an object");
      TemplatePiece tp;
      const uint64_t type_id = d.count(body, pf + "." + kind + ".type_id", "type_id");
      if (type_id > 1) {
        d.fail(pf + "." + kind + ".type_id",
               str("is ", type_id, "; BERT models have the token types 0 and 1"));
      }
      tp.type_id = static_cast<int32_t>(type_id);
      const std::string id = d.string(body, pf + "." + kind + ".id", "id");
      if (kind == "Sequence") {
        if (id != "A" && id != "B") d.fail(pf + ".Sequence.id", "must be \"A\" or \"B\"");
        tp.sequence = id == "A" ? 0 : 1;
      } else if (kind == "SpecialToken") {
        const auto sp = specials.find(id);
        const std::string sf = field + ".special_tokens." + shown(id);
        if (sp == specials.end()) d.fail(sf, "is missing (the template uses it)");
        if (!sp->is_object()) d.fail(sf, "must be an object");
        const auto ids = sp->find("ids");
        const auto tokens = sp->find("tokens");
        if (ids == sp->end() || !ids->is_array()) d.fail(sf + ".ids", "must be an array");
        if (tokens == sp->end() || !tokens->is_array() || tokens->size() != ids->size()) {
          d.fail(sf + ".tokens", "must be an array as long as 'ids'");
        }
        for (size_t k = 0; k < ids->size(); ++k) {
          int32_t v = 0;
          id_of((*ids)[k], str(sf, ".ids[", k, "]"), v);
          if (!(*tokens)[k].is_string()) d.fail(str(sf, ".tokens[", k, "]"), "must be a string");
          tp.ids.push_back(v);
          tp.tokens.push_back((*tokens)[k].get<std::string>());
        }
      } else {
        d.fail(pf,
               "must be {\"Sequence\": ...} or {\"SpecialToken\": ...}, not '" + shown(kind) + "'");
      }
      out.push_back(std::move(tp));
    }
  };
  read_template("single", p.single);
  read_template("pair", p.pair);
}

AddedToken read_added_token(const Doc& d, const json& t, const std::string& field) {
  if (!t.is_object()) d.fail(field, "must be an object, not " + type_of(t));
  AddedToken a;
  a.content = d.string(t, field + ".content", "content");
  if (a.content.empty()) d.fail(field + ".content", "is empty");
  if (find_invalid_utf8(a.content) != std::string_view::npos) {
    d.fail(field + ".content", "is not valid UTF-8");
  }
  // tokenizers' AddedToken defaults: not special, normalized, no stripping.
  a.single_word = d.boolean(t, field + ".single_word", "single_word", false);
  a.lstrip = d.boolean(t, field + ".lstrip", "lstrip", false);
  a.rstrip = d.boolean(t, field + ".rstrip", "rstrip", false);
  a.normalized = d.boolean(t, field + ".normalized", "normalized", true);
  a.special = d.boolean(t, field + ".special", "special", false);
  return a;
}

// ---------------------------------------------------------------------------------------------
// tokenizer_config.json and special_tokens_map.json.

// A special token: a string or an AddedToken object {"content": "...", ...}; nullopt if unset.
std::optional<std::string> token_field(const json& j, const std::string& where, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  std::string out;
  if (it->is_string()) {
    out = it->get<std::string>();
  } else {
    CPUFT_REQUIRE(it->is_object() && it->contains("content") && (*it)["content"].is_string(), where,
                  ": field '", key, "' must be a string or an object with a string 'content'");
    out = (*it)["content"].get<std::string>();
  }
  CPUFT_REQUIRE(!out.empty(), where, ": field '", key, "' is empty");
  return out;
}

std::optional<bool> bool_field(const json& j, const std::string& where, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  CPUFT_REQUIRE(it->is_boolean(), where, ": field '", key, "' must be true or false");
  return it->get<bool>();
}

constexpr const char* kSpecialKeys[] = {"unk_token", "sep_token", "pad_token", "cls_token",
                                        "mask_token"};

std::string* special_slot(TokenizerOptions& o, std::string_view key) {
  if (key == "unk_token") return &o.unk_token;
  if (key == "sep_token") return &o.sep_token;
  if (key == "pad_token") return &o.pad_token;
  if (key == "cls_token") return &o.cls_token;
  return &o.mask_token;
}
const std::string& special_name(const TokenizerOptions& o, std::string_view key) {
  return *special_slot(const_cast<TokenizerOptions&>(o), key);
}

// Tokenizer classes whose transformers 5.24 code is BertTokenizer's pipeline; the value says
// whether token_type_ids are among its model_input_names.
const std::map<std::string, bool, std::less<>>& bert_classes() {
  static const std::map<std::string, bool, std::less<>> m = {
      {"BertTokenizer", true}, {"MobileBertTokenizer", true}, {"DistilBertTokenizer", false}};
  return m;
}

// Model types whose AutoTokenizer class in transformers 5.24 is BertTokenizer.
bool bert_model_type(std::string_view t) {
  static const std::set<std::string, std::less<>> types = {
      "align",          "bark",         "bert",          "blip",
      "bros",           "chinese_clip", "convbert",      "distilbert",
      "electra",        "ernie",        "flava",         "git",
      "grounding-dino", "layoutlm",     "megatron-bert", "mm-grounding-dino",
      "nezha",          "nomic_bert",   "qdqbert",       "realm",
      "retribert",      "squeezebert",  "tvp",           "vilt",
      "visual_bert"};
  return types.contains(t);
}

}  // namespace

// -----------------------------------------------------------------------------------------------

WordPieceTokenizer WordPieceTokenizer::from_folder(const std::string& dir) {
  const fs::path root(dir);
  CPUFT_REQUIRE(fs::is_directory(root), dir, ": not a directory");
  TokenizerFolderFiles f;
  f.dir = dir;
  f.tokenizer_json = read_if_present(root / "tokenizer.json");
  f.tokenizer_config_json = read_if_present(root / "tokenizer_config.json");
  f.special_tokens_map_json = read_if_present(root / "special_tokens_map.json");
  f.config_json = read_if_present(root / "config.json");
  if (!f.tokenizer_json) f.vocab_txt = read_if_present(root / "vocab.txt");
  return from_files(f);
}

WordPieceTokenizer WordPieceTokenizer::from_files(const TokenizerFolderFiles& f) {
  const std::string tj_path = (fs::path(f.dir) / "tokenizer.json").string();
  const std::string config_path = (fs::path(f.dir) / "tokenizer_config.json").string();
  const std::string map_path = (fs::path(f.dir) / "special_tokens_map.json").string();
  CPUFT_REQUIRE(f.tokenizer_json || f.vocab_txt, f.dir,
                ": neither vocab.txt nor tokenizer.json found");

  const json config = f.tokenizer_config_json ? parse_object(*f.tokenizer_config_json, config_path)
                                              : json::object();
  // The class decides which file describes the pipeline.
  std::string cls;
  if (const auto it = config.find("tokenizer_class"); it != config.end() && !it->is_null()) {
    CPUFT_REQUIRE(it->is_string(), config_path, ": field 'tokenizer_class' must be a string");
    cls = it->get<std::string>();
  }
  std::string model_type;
  if (cls.empty() && f.config_json) {
    // config.json is the model's (BertConfig reads it); only its two fields matter here.
    const json model_config = json::parse(*f.config_json, nullptr, false);
    if (model_config.is_object()) {
      if (const auto it = model_config.find("tokenizer_class");
          it != model_config.end() && it->is_string()) {
        cls = it->get<std::string>();
      }
      if (const auto it = model_config.find("model_type");
          it != model_config.end() && it->is_string()) {
        model_type = it->get<std::string>();
      }
    }
  }
  if (cls.size() > 4 && cls.ends_with("Fast") && cls != "PreTrainedTokenizerFast") {
    cls.resize(cls.size() - 4);
  }
  const auto bert_class = bert_classes().find(cls);
  const bool bert_mode = !f.tokenizer_json || bert_class != bert_classes().end() ||
                         (cls.empty() && bert_model_type(model_type));

  // model_input_names decides whether the model gets token_type_ids.
  std::optional<bool> type_ids_from_config;
  if (const auto it = config.find("model_input_names"); it != config.end() && !it->is_null()) {
    CPUFT_REQUIRE(it->is_array(), config_path,
                  ": field 'model_input_names' must be an array of strings");
    bool has = false;
    for (const json& v : *it) {
      CPUFT_REQUIRE(v.is_string(), config_path,
                    ": field 'model_input_names' must be an array of strings");
      has = has || v == "token_type_ids";
    }
    type_ids_from_config = has;
  }

  // Special token names: tokenizer_config.json, overridden by special_tokens_map.json unless
  // tokenizer_config.json has added_tokens_decoder (transformers 5.24's order).
  TokenizerOptions opt;
  std::set<std::string> names_set;  // which special token keys some file sets
  for (const char* key : kSpecialKeys) {
    if (auto v = token_field(config, config_path, key)) {
      *special_slot(opt, key) = *v;
      names_set.insert(key);
    }
  }
  const bool has_decoder =
      config.contains("added_tokens_decoder") && !config["added_tokens_decoder"].is_null();
  if (f.special_tokens_map_json && !has_decoder) {
    const json map = parse_object(*f.special_tokens_map_json, map_path);
    for (const char* key : kSpecialKeys) {
      if (auto v = token_field(map, map_path, key)) {
        *special_slot(opt, key) = *v;
        names_set.insert(key);
      }
    }
  }
  if (const auto it = config.find("model_max_length");
      it != config.end() && it->is_number_integer()) {
    // HF writes a huge sentinel (1e30) when there is no limit; keep only sensible values.
    const int64_t m = it->get<int64_t>();
    if (m > 0 && m <= INT32_MAX) opt.model_max_length = static_cast<int>(m);
  }
  // added_tokens_decoder: {"<id>": {"content": ..., flags}}, by id.
  std::vector<AddedToken> decoder_tokens;
  if (has_decoder) {
    const Doc d{config_path};
    const json& dec = config["added_tokens_decoder"];
    if (!dec.is_object()) d.fail("added_tokens_decoder", "must be an object");
    std::vector<std::pair<int64_t, AddedToken>> by_id;
    for (const auto& [key, value] : dec.items()) {
      const std::string field = "added_tokens_decoder." + shown(key);
      int64_t id = -1;
      if (!key.empty() && key.size() <= 10 &&
          std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        id = std::stoll(key);
      }
      if (id < 0 || id > INT32_MAX) d.fail(field, "has a key that is not a token id");
      AddedToken t = read_added_token(d, value, field);
      t.id = static_cast<int32_t>(id);
      by_id.emplace_back(id, std::move(t));
    }
    std::sort(by_id.begin(), by_id.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [id, t] : by_id) decoder_tokens.push_back(std::move(t));
  }

  // vocab.txt alone: BertTokenizer from its options, as before tokenizer.json existed.
  if (!f.tokenizer_json) {
    const std::string vocab_path = (fs::path(f.dir) / "vocab.txt").string();
    std::vector<std::string> vocab = read_vocab_txt(*f.vocab_txt, vocab_path);
    if (auto v = bool_field(config, config_path, "do_lower_case")) opt.do_lower_case = *v;
    if (auto v = bool_field(config, config_path, "tokenize_chinese_chars")) {
      opt.tokenize_chinese_chars = *v;
    }
    opt.strip_accents = bool_field(config, config_path, "strip_accents");
    try {
      WordPieceTokenizer t(std::move(vocab), opt);
      if (!decoder_tokens.empty() || type_ids_from_config.value_or(true) == false ||
          (bert_class != bert_classes().end() && !bert_class->second)) {
        WordPiecePipeline p = t.pipeline_;
        for (const AddedToken& a : decoder_tokens) {
          if (std::none_of(p.added_tokens.begin(), p.added_tokens.end(),
                           [&](const AddedToken& x) { return x.content == a.content; })) {
            p.added_tokens.push_back(a);
          }
        }
        p.type_ids =
            type_ids_from_config.value_or(bert_class == bert_classes().end() || bert_class->second);
        return WordPieceTokenizer(t.vocab_, t.options_, std::move(p), "vocab.txt");
      }
      t.source_ = "vocab.txt";
      return t;
    } catch (const Error& e) {
      throw Error(str(f.dir, ": ", e.what()));
    }
  }

  // tokenizer.json.
  const Doc d{tj_path};
  const json root = parse_object(*f.tokenizer_json, tj_path);
  if (const auto it = root.find("version"); it != root.end() && !it->is_null()) {
    if (!it->is_string() || *it != "1.0") d.fail("version", "must be \"1.0\"");
  }
  const json& model = d.object(root, "model", "model");
  if (model.contains("type")) {
    const std::string type = d.string(model, "model.type", "type");
    if (type != "WordPiece") d.fail("model.type", "must be \"WordPiece\"");
  }
  const std::string json_unk = d.string(model, "model.unk_token", "unk_token");
  const std::string prefix =
      d.string(model, "model.continuing_subword_prefix", "continuing_subword_prefix");
  if (find_invalid_utf8(prefix) != std::string_view::npos) {
    d.fail("model.continuing_subword_prefix", "is not valid UTF-8");
  }
  const uint64_t max_chars =
      d.count(model, "model.max_input_chars_per_word", "max_input_chars_per_word");
  const json& v = d.object(model, "model.vocab", "vocab");
  if (v.empty()) d.fail("model.vocab", "is empty");
  std::vector<std::string> vocab(v.size());
  std::vector<bool> seen(v.size(), false);
  for (const auto& [token, id] : v.items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= v.size()) {
      d.fail("model.vocab", str("id of '", shown(token), "' must be an integer in [0, ", v.size(),
                                "), not ", id.is_number() ? id.dump() : type_of(id)));
    }
    const size_t k = id.get<size_t>();
    if (seen[k]) {
      d.fail("model.vocab",
             str("id ", k, " is used twice ('", shown(vocab[k]), "' and '", shown(token), "')"));
    }
    if (find_invalid_utf8(token) != std::string_view::npos) {
      d.fail("model.vocab", str("token of id ", k, " is not valid UTF-8"));
    }
    seen[k] = true;
    vocab[k] = token;
  }
  // Its added tokens (also checked in BERT mode, where they may be unused).
  std::vector<AddedToken> json_added;
  if (const auto it = root.find("added_tokens"); it != root.end() && !it->is_null()) {
    if (!it->is_array()) d.fail("added_tokens", "must be an array, not " + type_of(*it));
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string field = str("added_tokens[", i, "]");
      AddedToken t = read_added_token(d, (*it)[i], field);
      const uint64_t id = d.count((*it)[i], field + ".id", "id");
      if (id > static_cast<uint64_t>(INT32_MAX)) d.fail(field + ".id", "is too large");
      t.id = static_cast<int32_t>(id);
      json_added.push_back(std::move(t));
    }
  }
  // Normalizer and pre-tokenizer (also checked in BERT mode).
  WordPiecePipeline p;
  std::optional<BertNormalizerJson> json_bert;
  if (const auto it = root.find("normalizer"); it != root.end() && !it->is_null()) {
    read_normalizer(d, *it, "normalizer", p.normalizer, &json_bert, 0);
  }
  if (const auto it = root.find("pre_tokenizer"); it != root.end() && !it->is_null()) {
    read_pre_tokenizer(d, *it, "pre_tokenizer", p.pre_tokenizer, 0);
  }
  read_post_processor(d, root, p);

  std::string source = "tokenizer.json";
  if (bert_mode) {
    // transformers' BertTokenizer: the vocabulary (and added tokens) of tokenizer.json, the rest
    // from tokenizer_config.json; what that file leaves unset comes from tokenizer.json.
    const BertNormalizerJson b = json_bert.value_or(BertNormalizerJson{});
    opt.do_lower_case = bool_field(config, config_path, "do_lower_case").value_or(b.lowercase);
    opt.tokenize_chinese_chars =
        bool_field(config, config_path, "tokenize_chinese_chars").value_or(b.handle_chinese_chars);
    opt.strip_accents = config.contains("strip_accents")
                            ? bool_field(config, config_path, "strip_accents")
                            : b.strip_accents;
    if (!names_set.contains("unk_token")) opt.unk_token = json_unk;
    WordPiecePipeline bp;
    bp.normalizer = {NormalizeStep::kCleanText};
    if (opt.tokenize_chinese_chars) bp.normalizer.push_back(NormalizeStep::kChineseChars);
    if (opt.strip_accents.value_or(opt.do_lower_case)) {
      bp.normalizer.push_back(NormalizeStep::kNfd);
      bp.normalizer.push_back(NormalizeStep::kStripNonspacing);
    }
    if (opt.do_lower_case) bp.normalizer.push_back(NormalizeStep::kLowercase);
    bp.pre_tokenizer = {{PreTokenizeStep::kWhitespaceSplit, SplitBehavior::kRemoved},
                        {PreTokenizeStep::kPunctuation, SplitBehavior::kIsolated}};
    bp.added_tokens = has_decoder ? decoder_tokens : json_added;
    bp.type_ids =
        type_ids_from_config.value_or(bert_class == bert_classes().end() || bert_class->second);
    p = std::move(bp);
  } else {
    // The tokenizers library's pipeline; tokenizer_config.json adds only tokens.
    opt.unk_token = json_unk;
    opt.max_input_chars_per_word =
        static_cast<int>(std::min<uint64_t>(max_chars, static_cast<uint64_t>(INT32_MAX)));
    p.continuing_subword_prefix = prefix;
    p.added_tokens = json_added;
    for (const AddedToken& a : decoder_tokens) {
      if (std::none_of(p.added_tokens.begin(), p.added_tokens.end(),
                       [&](const AddedToken& x) { return x.content == a.content; })) {
        p.added_tokens.push_back(a);
      }
    }
    p.type_ids = type_ids_from_config.value_or(false);
    opt.do_lower_case = std::find(p.normalizer.begin(), p.normalizer.end(),
                                  NormalizeStep::kLowercase) != p.normalizer.end();
    for (const char* key : kSpecialKeys) {
      if (!names_set.contains(key) && std::string_view(key) != "unk_token") {
        special_slot(opt, key)->clear();
      }
    }
    source = cls.empty() ? "tokenizer.json" : "tokenizer.json (" + shown(cls) + ")";
  }
  // Named special tokens that are not added tokens yet become special added tokens
  // (TokenizersBackend.__init__), with their vocabulary ids.
  std::unordered_map<std::string, int32_t> vocab_ids;
  vocab_ids.reserve(vocab.size());
  for (size_t i = 0; i < vocab.size(); ++i) vocab_ids[vocab[i]] = static_cast<int32_t>(i);
  for (const char* key : kSpecialKeys) {
    const std::string& name = *special_slot(opt, key);
    if (name.empty() || (!bert_mode && !names_set.contains(key))) continue;
    if (std::any_of(p.added_tokens.begin(), p.added_tokens.end(),
                    [&](const AddedToken& x) { return x.content == name; })) {
      continue;
    }
    const auto it = vocab_ids.find(name);
    CPUFT_REQUIRE(it != vocab_ids.end(), names_set.contains(key) ? config_path : tj_path, ": ", key,
                  " '", shown(name),
                  "' is in neither the vocabulary nor the added tokens (transformers would add it "
                  "as a new token the model has no embedding for)");
    p.added_tokens.push_back({name, it->second, true, false, false, false, false});
  }
  if (bert_mode) {
    const auto cls_it =
        std::find_if(p.added_tokens.begin(), p.added_tokens.end(),
                     [&](const AddedToken& x) { return x.content == opt.cls_token; });
    const auto sep_it =
        std::find_if(p.added_tokens.begin(), p.added_tokens.end(),
                     [&](const AddedToken& x) { return x.content == opt.sep_token; });
    const TemplatePiece cls_piece{-1, {cls_it->id}, {opt.cls_token}, 0};
    const TemplatePiece sep_piece{-1, {sep_it->id}, {opt.sep_token}, 0};
    TemplatePiece sep1 = sep_piece;
    sep1.type_id = 1;
    p.single = {cls_piece, {0, {}, {}, 0}, sep_piece};
    p.pair = {cls_piece, {0, {}, {}, 0}, sep_piece, {1, {}, {}, 1}, sep1};
  }
  try {
    return WordPieceTokenizer(std::move(vocab), std::move(opt), std::move(p), source);
  } catch (const Error& e) {
    throw Error(str(tj_path, ": ", e.what()));
  }
}

// -----------------------------------------------------------------------------------------------
// save

namespace {

json normalizer_json(const std::vector<NormalizeStep>& steps) {
  auto bert = [](bool clean, bool cjk, bool strip, bool lower) {
    return json{{"type", "BertNormalizer"},
                {"clean_text", clean},
                {"handle_chinese_chars", cjk},
                {"strip_accents", strip},
                {"lowercase", lower}};
  };
  json list = json::array();
  for (size_t i = 0; i < steps.size(); ++i) {
    switch (steps[i]) {
      case NormalizeStep::kCleanText:
        list.push_back(bert(true, false, false, false));
        break;
      case NormalizeStep::kChineseChars:
        list.push_back(bert(false, true, false, false));
        break;
      case NormalizeStep::kNfd:
        if (i + 1 < steps.size() && steps[i + 1] == NormalizeStep::kStripNonspacing) {
          list.push_back(bert(false, false, true, false));  // NFD + drop Mn, as one
          ++i;
        } else {
          list.push_back({{"type", "NFD"}});
        }
        break;
      case NormalizeStep::kStripNonspacing:  // only ever after kNfd, whose repetition is harmless
        list.push_back(bert(false, false, true, false));
        break;
      case NormalizeStep::kStripCombining:
        list.push_back({{"type", "StripAccents"}});
        break;
      case NormalizeStep::kLowercase:
        list.push_back({{"type", "Lowercase"}});
        break;
    }
  }
  if (list.empty()) return nullptr;
  if (list.size() == 1) return list[0];
  return {{"type", "Sequence"}, {"normalizers", list}};
}

json pre_tokenizer_json(const std::vector<PreTokenizeStep>& steps) {
  static const char* const kBehavior[] = {"Removed", "Isolated", "MergedWithPrevious",
                                          "MergedWithNext", "Contiguous"};
  json list = json::array();
  for (const PreTokenizeStep& s : steps) {
    switch (s.kind) {
      case PreTokenizeStep::kWhitespaceSplit:
        list.push_back({{"type", "WhitespaceSplit"}});
        break;
      case PreTokenizeStep::kWhitespace:
        list.push_back({{"type", "Whitespace"}});
        break;
      case PreTokenizeStep::kPunctuation:
        list.push_back(
            {{"type", "Punctuation"}, {"behavior", kBehavior[static_cast<int>(s.behavior)]}});
        break;
    }
  }
  if (list.empty()) return nullptr;
  if (list.size() == 1) return list[0];
  return {{"type", "Sequence"}, {"pretokenizers", list}};
}

json added_token_json(const AddedToken& t) {
  return {{"id", t.id},          {"content", t.content}, {"single_word", t.single_word},
          {"lstrip", t.lstrip},  {"rstrip", t.rstrip},   {"normalized", t.normalized},
          {"special", t.special}};
}

}  // namespace

void WordPieceTokenizer::save(const std::string& dir) const {
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  CPUFT_REQUIRE(!ec, dir, ": cannot create directory: ", ec.message());
  json special = json::object();
  for (const char* key : kSpecialKeys) {
    const std::string& name = special_name(options_, key);
    if (!name.empty() && find_id(name) >= 0) special[key] = name;
  }
  json config = special;
  config["model_max_length"] = options_.model_max_length;
  if (is_bert_pipeline()) {
    std::string vocab_text;
    for (const std::string& t : vocab_) {
      vocab_text += t;
      vocab_text += '\n';
    }
    write_file(root / "vocab.txt", vocab_text);
    config["tokenizer_class"] = "BertTokenizer";
    config["do_lower_case"] = options_.do_lower_case;
    config["strip_accents"] =
        options_.strip_accents ? json(*options_.strip_accents) : json(nullptr);
    config["tokenize_chinese_chars"] = options_.tokenize_chinese_chars;
    write_file(root / "tokenizer_config.json", config.dump(2) + "\n");
    write_file(root / "special_tokens_map.json", special.dump(2) + "\n");
    std::error_code ignored;
    fs::remove(root / "tokenizer.json", ignored);  // a stale one would win over vocab.txt
    return;
  }
  // Another pipeline: tokenizer.json, read as is by TokenizersBackend (and by from_folder).
  json tj;
  tj["version"] = "1.0";
  tj["truncation"] = nullptr;
  tj["padding"] = nullptr;
  json added = json::array();
  for (const AddedToken& t : pipeline_.added_tokens) added.push_back(added_token_json(t));
  tj["added_tokens"] = added;
  tj["normalizer"] = normalizer_json(pipeline_.normalizer);
  tj["pre_tokenizer"] = pre_tokenizer_json(pipeline_.pre_tokenizer);
  json special_tokens = json::object();
  auto template_json = [&](const std::vector<TemplatePiece>& t) {
    json out = json::array();
    for (const TemplatePiece& p : t) {
      if (p.sequence >= 0) {
        out.push_back(
            {{"Sequence", {{"id", p.sequence == 0 ? "A" : "B"}, {"type_id", p.type_id}}}});
        continue;
      }
      std::string id;
      for (const std::string& s : p.tokens) id += id.empty() ? s : " " + s;
      while (special_tokens.contains(id) && special_tokens[id]["ids"] != json(p.ids)) id += "'";
      special_tokens[id] = {{"id", id}, {"ids", p.ids}, {"tokens", p.tokens}};
      out.push_back({{"SpecialToken", {{"id", id}, {"type_id", p.type_id}}}});
    }
    return out;
  };
  json post = {{"type", "TemplateProcessing"},
               {"single", template_json(pipeline_.single)},
               {"pair", template_json(pipeline_.pair)}};
  post["special_tokens"] = special_tokens;
  tj["post_processor"] = post;
  tj["decoder"] = {
      {"type", "WordPiece"}, {"prefix", pipeline_.continuing_subword_prefix}, {"cleanup", true}};
  json vocab = json::object();
  for (size_t i = 0; i < vocab_.size(); ++i) {
    if (ids_.find(vocab_[i])->second == static_cast<int32_t>(i)) vocab[vocab_[i]] = i;
  }
  tj["model"] = {{"type", "WordPiece"},
                 {"unk_token", options_.unk_token},
                 {"continuing_subword_prefix", pipeline_.continuing_subword_prefix},
                 {"max_input_chars_per_word", options_.max_input_chars_per_word},
                 {"vocab", vocab}};
  config["tokenizer_class"] = "TokenizersBackend";
  config["model_input_names"] = pipeline_.type_ids
                                    ? json{"input_ids", "token_type_ids", "attention_mask"}
                                    : json{"input_ids", "attention_mask"};
  write_file(root / "tokenizer.json", tj.dump(1) + "\n");
  write_file(root / "tokenizer_config.json", config.dump(2) + "\n");
  std::error_code ignored;
  fs::remove(root / "vocab.txt", ignored);
  fs::remove(root / "special_tokens_map.json", ignored);
}

}  // namespace cpuft
