// Reading and writing the files of a SentencePiece Unigram tokenizer (unigram_tokenizer.h):
// sentencepiece.bpe.model / spm.model (a ModelProto read by hand), tokenizer.json, the
// tokenizer classes' configs (XLM-R, DeBERTa-v2/v3), and save().
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/atomic_file.h"
#include "core/check.h"
#include "data/unigram_tokenizer.h"
#include "data/utf8.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Norm = UnigramTokenizer::Normalizer;
using Prepend = UnigramTokenizer::Prepend;

const char* const kSpmFile = "sentencepiece.bpe.model";  // XLM-R's
const char* const kDebertaSpmFile = "spm.model";         // DeBERTa-v2/v3's
const char* const kJsonFile = "tokenizer.json";
const char* const kWhitespaceRunsRegex = "\\s{2,}|[\\n\\r\\t]";  // DebertaV2Tokenizer's Replace
constexpr size_t kMaxPieces = size_t{1} << 24;

// ---------------------------------------------------------------------------------------------
// Files, JSON, base64.

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  CPUFT_REQUIRE(in, path.string(), ": cannot open");
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

json parse_json_text(std::string_view text, const std::string& where) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  CPUFT_REQUIRE(!j.is_discarded(), where, ": not valid JSON");
  CPUFT_REQUIRE(j.is_object(), where, ": expected a JSON object");
  return j;
}

std::string base64_decode(std::string_view in, const std::string& where, const char* field) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  CPUFT_REQUIRE(in.size() % 4 == 0, where, ": '", field, "' is not base64 (length ", in.size(),
                ")");
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = in[i + k];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
      } else {
        CPUFT_REQUIRE(pad == 0 && (v[k] = value(c)) >= 0, where, ": '", field,
                      "' is not base64 (byte ", i + k, ")");
      }
    }
    const uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out.push_back(static_cast<char>(n >> 16));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xFF));
  }
  return out;
}

std::string base64_encode(std::string_view in) {
  static const char* const kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  for (size_t i = 0; i < in.size(); i += 3) {
    const size_t n = std::min<size_t>(3, in.size() - i);
    uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << 16;
    if (n > 1) v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
    if (n > 2) v |= static_cast<unsigned char>(in[i + 2]);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(n > 1 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back(n > 2 ? kAlphabet[v & 63] : '=');
  }
  return out;
}

bool valid_utf8(std::string_view s) {
  return find_invalid_utf8(s) == std::string_view::npos;
}

// A special token in tokenizer_config.json / special_tokens_map.json: a string or an AddedToken
// object {"content": "...", "lstrip": ..., ...}.
void read_token_field(const json& j, const std::string& where, const char* key, std::string& out,
                      bool* lstrip = nullptr, bool* rstrip = nullptr) {
  if (!j.contains(key) || j[key].is_null()) return;
  const json& v = j[key];
  if (v.is_string()) {
    out = v.get<std::string>();
  } else {
    CPUFT_REQUIRE(v.is_object() && v.contains("content") && v["content"].is_string(), where,
                  ": field '", key, "' must be a string or an object with a string 'content'");
    out = v["content"].get<std::string>();
    if (lstrip && v.contains("lstrip") && v["lstrip"].is_boolean()) *lstrip = v["lstrip"];
    if (rstrip && v.contains("rstrip") && v["rstrip"].is_boolean()) *rstrip = v["rstrip"];
  }
  CPUFT_REQUIRE(!out.empty() && valid_utf8(out), where, ": field '", key,
                "' is empty or not UTF-8");
}

// ---------------------------------------------------------------------------------------------
// A minimal protobuf reader: the SentencePiece ModelProto fields the tokenizer needs.

class ProtoReader {
 public:
  ProtoReader(std::string_view data, const std::string& where, const char* message)
      : data_(data), where_(where), message_(message) {}
  bool done() const { return pos_ >= data_.size(); }

  // Reads the next field's key; returns its wire type.
  int next(uint32_t& field) {
    const uint64_t key = varint();
    field = static_cast<uint32_t>(key >> 3);
    const int wire = static_cast<int>(key & 7);
    CPUFT_REQUIRE(field != 0 && (wire == 0 || wire == 1 || wire == 2 || wire == 5), where_,
                  ": not a SentencePiece model (", message_, ": bad field key at byte ", pos_, ")");
    return wire;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      CPUFT_REQUIRE(pos_ < data_.size(), where_, ": not a SentencePiece model (", message_,
                    ": truncated)");
      const auto b = static_cast<unsigned char>(data_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw Error(str(where_, ": not a SentencePiece model (", message_, ": varint too long)"));
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    CPUFT_REQUIRE(n <= data_.size() - pos_, where_, ": not a SentencePiece model (", message_,
                  ": a field runs past the end)");
    const std::string_view v = data_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  uint32_t fixed32() {
    CPUFT_REQUIRE(data_.size() - pos_ >= 4, where_, ": not a SentencePiece model (", message_,
                  ": truncated)");
    uint32_t v = 0;
    for (int k = 3; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(data_[pos_ + k]);
    pos_ += 4;
    return v;
  }
  void skip(int wire) {
    if (wire == 0) {
      varint();
    } else if (wire == 2) {
      bytes();
    } else {
      const size_t n = wire == 1 ? 8 : 4;
      CPUFT_REQUIRE(data_.size() - pos_ >= n, where_, ": not a SentencePiece model (", message_,
                    ": truncated)");
      pos_ += n;
    }
  }
  void expect(int wire, int want, const char* field) {
    CPUFT_REQUIRE(wire == want, where_, ": not a SentencePiece model (", message_, ".", field,
                  " has wire type ", wire, ")");
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  const std::string& where_;
  const char* message_;
};

struct SpmPiece {
  std::string piece;
  float score = 0;
  int type = 1;  // NORMAL=1, UNKNOWN=2, CONTROL=3, USER_DEFINED=4, UNUSED=5, BYTE=6
};

struct SpmModel {
  std::vector<SpmPiece> pieces;
  int model_type = 1;  // UNIGRAM=1, BPE=2, WORD=3, CHAR=4
  bool byte_fallback = false;
  int64_t unk_id = 0;  // trainer_spec.unk_id
  std::string charsmap;
};

SpmModel parse_spm_model(std::string_view data, const std::string& where) {
  SpmModel m;
  ProtoReader r(data, where, "ModelProto");
  while (!r.done()) {
    uint32_t field = 0;
    const int wire = r.next(field);
    if (field == 1) {  // pieces
      r.expect(wire, 2, "pieces");
      CPUFT_REQUIRE(m.pieces.size() < kMaxPieces, where, ": more than ", kMaxPieces, " pieces");
      ProtoReader p(r.bytes(), where, "SentencePiece");
      SpmPiece piece;
      while (!p.done()) {
        uint32_t f = 0;
        const int w = p.next(f);
        if (f == 1) {
          p.expect(w, 2, "piece");
          piece.piece = std::string(p.bytes());
        } else if (f == 2) {
          p.expect(w, 5, "score");
          const uint32_t bits = p.fixed32();
          std::memcpy(&piece.score, &bits, 4);
        } else if (f == 3) {
          p.expect(w, 0, "type");
          piece.type = static_cast<int>(p.varint());
        } else {
          p.skip(w);
        }
      }
      CPUFT_REQUIRE(valid_utf8(piece.piece), where, ": piece ", m.pieces.size(),
                    " is not valid UTF-8");
      CPUFT_REQUIRE(std::isfinite(piece.score), where, ": piece ", m.pieces.size(),
                    " has a score that is not finite");
      m.pieces.push_back(std::move(piece));
    } else if (field == 2) {  // trainer_spec
      r.expect(wire, 2, "trainer_spec");
      ProtoReader t(r.bytes(), where, "TrainerSpec");
      while (!t.done()) {
        uint32_t f = 0;
        const int w = t.next(f);
        if (f == 3) {
          t.expect(w, 0, "model_type");
          m.model_type = static_cast<int>(t.varint());
        } else if (f == 35) {
          t.expect(w, 0, "byte_fallback");
          m.byte_fallback = t.varint() != 0;
        } else if (f == 40) {
          t.expect(w, 0, "unk_id");
          m.unk_id = static_cast<int32_t>(static_cast<uint32_t>(t.varint()));  // an int32
        } else {
          t.skip(w);
        }
      }
    } else if (field == 3) {  // normalizer_spec
      r.expect(wire, 2, "normalizer_spec");
      ProtoReader n(r.bytes(), where, "NormalizerSpec");
      while (!n.done()) {
        uint32_t f = 0;
        const int w = n.next(f);
        if (f == 2) {
          n.expect(w, 2, "precompiled_charsmap");
          m.charsmap = std::string(n.bytes());
        } else {
          n.skip(w);
        }
      }
    } else {
      r.skip(wire);
    }
  }
  return m;
}

// ---------------------------------------------------------------------------------------------
// tokenizer.json sections.

const json& require_object(const json& j, const char* key, const std::string& where) {
  CPUFT_REQUIRE(j.contains(key) && j[key].is_object(), where, ": '", key, "' must be an object");
  return j[key];
}

bool json_bool(const json& j, const char* key, bool fallback, const std::string& where,
               const std::string& field) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  CPUFT_REQUIRE(j[key].is_boolean(), where, ": '", field, ".", key, "' must be true or false");
  return j[key].get<bool>();
}

void read_normalizer(const json& n, const std::string& where, const std::string& field,
                     UnigramTokenizer::Pipeline& p) {
  if (n.is_null()) return;
  CPUFT_REQUIRE(n.is_object() && n.contains("type") && n["type"].is_string(), where, ": '", field,
                "' must be an object with a 'type'");
  const std::string type = n["type"];
  if (type == "Sequence") {
    CPUFT_REQUIRE(n.contains("normalizers") && n["normalizers"].is_array(), where, ": '", field,
                  ".normalizers' must be an array");
    for (size_t k = 0; k < n["normalizers"].size(); ++k)
      read_normalizer(n["normalizers"][k], where, str(field, ".normalizers[", k, "]"), p);
  } else if (type == "Precompiled") {
    CPUFT_REQUIRE(std::find(p.normalizers.begin(), p.normalizers.end(), Norm::kPrecompiled) ==
                      p.normalizers.end(),
                  where, ": '", field, "': only one Precompiled normalizer is supported");
    CPUFT_REQUIRE(n.contains("precompiled_charsmap") && n["precompiled_charsmap"].is_string(),
                  where, ": '", field, ".precompiled_charsmap' must be a base64 string");
    p.charsmap =
        base64_decode(n["precompiled_charsmap"].get<std::string>(), where, "precompiled_charsmap");
    p.normalizers.push_back(Norm::kPrecompiled);
  } else if (type == "Replace") {
    // The converters' Replace(Regex(" {2,}"), " ") (XLM-R, DeBERTa of transformers 4.x) and
    // DebertaV2Tokenizer's Replace(Regex("\\s{2,}|[\\n\\r\\t]"), " "); nothing else.
    const json* pattern = n.contains("pattern") ? &n["pattern"] : nullptr;
    const json regex = pattern && pattern->is_object() ? pattern->value("Regex", json()) : json();
    const bool to_space = n.value("content", json()) == " ";
    CPUFT_REQUIRE(to_space && (regex == " {2,}" || regex == kWhitespaceRunsRegex), where, ": '",
                  field, "': only Replace of the regex \" {2,}\" or \"", kWhitespaceRunsRegex,
                  "\" by \" \" is supported");
    p.normalizers.push_back(regex == " {2,}" ? Norm::kCollapseSpaces : Norm::kWhitespaceRuns);
  } else if (type == "NFC") {
    p.normalizers.push_back(Norm::kNfc);
  } else if (type == "Lowercase") {
    p.normalizers.push_back(Norm::kLowercase);
  } else if (type == "Strip") {
    const bool left = json_bool(n, "strip_left", true, where, field);
    const bool right = json_bool(n, "strip_right", true, where, field);
    if (left || right)
      p.normalizers.push_back(left && right ? Norm::kStrip
                              : left        ? Norm::kStripLeft
                                            : Norm::kStripRight);
  } else {
    throw Error(str(where, ": '", field, "': normalizer type '", type,
                    "' is not supported (Precompiled, Replace, NFC, Lowercase, Strip, Sequence)"));
  }
}

void read_pre_tokenizer(const json& t, const std::string& where, const std::string& field,
                        UnigramTokenizer::Pipeline& p, bool top) {
  if (top) {
    p.whitespace_split = false;
    p.punctuation = false;
    p.metaspace = false;
  }
  if (t.is_null()) return;
  CPUFT_REQUIRE(t.is_object() && t.contains("type") && t["type"].is_string(), where, ": '", field,
                "' must be an object with a 'type'");
  const std::string type = t["type"];
  if (type == "Sequence" && top) {
    CPUFT_REQUIRE(t.contains("pretokenizers") && t["pretokenizers"].is_array(), where, ": '", field,
                  ".pretokenizers' must be an array");
    for (size_t k = 0; k < t["pretokenizers"].size(); ++k)
      read_pre_tokenizer(t["pretokenizers"][k], where, str(field, ".pretokenizers[", k, "]"), p,
                         false);
  } else if (type == "WhitespaceSplit") {
    CPUFT_REQUIRE(!p.whitespace_split && !p.punctuation && !p.metaspace, where, ": '", field,
                  "': WhitespaceSplit is supported once, before Punctuation and Metaspace");
    p.whitespace_split = true;
  } else if (type == "Punctuation") {
    // DebertaV2Tokenizer's split_by_punct.
    CPUFT_REQUIRE(!p.punctuation && !p.metaspace, where, ": '", field,
                  "': Punctuation is supported once, before Metaspace");
    CPUFT_REQUIRE(t.value("behavior", json()) == "Isolated", where, ": '", field,
                  ".behavior' must be \"Isolated\" (the only one cpuft supports)");
    p.punctuation = true;
  } else if (type == "Metaspace") {
    CPUFT_REQUIRE(!p.metaspace, where, ": '", field, "': Metaspace is supported once");
    p.metaspace = true;
    CPUFT_REQUIRE(t.contains("replacement") && t["replacement"].is_string(), where, ": '", field,
                  ".replacement' must be a string");
    p.replacement = t["replacement"].get<std::string>();
    char32_t cp = 0;
    CPUFT_REQUIRE(
        !p.replacement.empty() && decode_utf8_at(p.replacement, 0, &cp) == p.replacement.size(),
        where, ": '", field, ".replacement' must be one character");
    std::string scheme = "always";
    if (t.contains("prepend_scheme") && !t["prepend_scheme"].is_null()) {
      CPUFT_REQUIRE(t["prepend_scheme"].is_string(), where, ": '", field,
                    ".prepend_scheme' must be a string");
      scheme = t["prepend_scheme"];
    }
    if (!json_bool(t, "add_prefix_space", true, where, field)) {
      CPUFT_REQUIRE(scheme == "never" || !t.contains("prepend_scheme"), where, ": '", field,
                    "': add_prefix_space does not match prepend_scheme");
      scheme = "never";
    }
    CPUFT_REQUIRE(scheme == "always" || scheme == "first" || scheme == "never", where, ": '", field,
                  ".prepend_scheme' \"", scheme,
                  "\" is not supported (\"always\", \"first\", \"never\")");
    p.prepend = scheme == "always"  ? Prepend::kAlways
                : scheme == "first" ? Prepend::kFirst
                                    : Prepend::kNever;
    p.metaspace_split = json_bool(t, "split", true, where, field);
  } else {
    throw Error(str(where, ": '", field, "': pre-tokenizer type '", type,
                    "' is not supported (Metaspace, WhitespaceSplit, Punctuation, Sequence)"));
  }
}

// The post-processor's template. `special` resolves a special token's name to its ids.
void read_post_processor(const json& t, const std::string& where, UnigramTokenizer::Pipeline& p) {
  using Item = UnigramTokenizer::TemplateItem;
  p.single.clear();
  p.pair.clear();
  if (t.is_null()) {
    p.single = {Item{0, {}, 0}};
    p.pair = {Item{0, {}, 0}, Item{1, {}, 1}};
    return;
  }
  CPUFT_REQUIRE(t.is_object() && t.contains("type") && t["type"].is_string(), where,
                ": 'post_processor' must be an object with a 'type'");
  const std::string type = t["type"];
  if (type == "RobertaProcessing") {
    auto token = [&](const char* key) {
      CPUFT_REQUIRE(t.contains(key) && t[key].is_array() && t[key].size() == 2 &&
                        t[key][1].is_number_unsigned(),
                    where, ": 'post_processor.", key, "' must be [token, id]");
      return t[key][1].get<int32_t>();
    };
    const int32_t cls = token("cls"), sep = token("sep");
    p.single = {Item{-1, {cls}, 0}, Item{0, {}, 0}, Item{-1, {sep}, 0}};
    p.pair = {Item{-1, {cls}, 0}, Item{0, {}, 0}, Item{-1, {sep}, 0},
              Item{-1, {sep}, 0}, Item{1, {}, 0}, Item{-1, {sep}, 0}};
    return;
  }
  CPUFT_REQUIRE(type == "TemplateProcessing", where, ": 'post_processor' type '", type,
                "' is not supported (TemplateProcessing, RobertaProcessing)");
  const json& specials = require_object(t, "special_tokens", where);
  for (const char* which : {"single", "pair"}) {
    CPUFT_REQUIRE(t.contains(which) && t[which].is_array(), where, ": 'post_processor.", which,
                  "' must be an array");
    std::vector<Item>& out = std::string(which) == "single" ? p.single : p.pair;
    for (const json& piece : t[which]) {
      const std::string field = str("post_processor.", which);
      CPUFT_REQUIRE(piece.is_object() && piece.size() == 1, where, ": '", field,
                    "' items must be {\"Sequence\": ...} or {\"SpecialToken\": ...}");
      const auto first = piece.begin();  // (items() is a temporary: no references into it)
      const std::string kind = first.key();
      const json& body = first.value();
      CPUFT_REQUIRE(body.is_object() && body.contains("id") && body["id"].is_string(), where, ": '",
                    field, "' item without a string 'id'");
      Item item;
      item.type_id = body.value("type_id", 0);
      const std::string id = body["id"];
      if (kind == "Sequence") {
        CPUFT_REQUIRE(id == "A" || id == "B", where, ": '", field, "': sequence '", id, "'");
        item.sequence = id == "A" ? 0 : 1;
      } else {
        CPUFT_REQUIRE(kind == "SpecialToken", where, ": '", field, "': item '", kind, "'");
        CPUFT_REQUIRE(specials.contains(id) && specials[id].is_object() &&
                          specials[id].contains("ids") && specials[id]["ids"].is_array(),
                      where, ": 'post_processor.special_tokens' has no ids for '", id, "'");
        for (const json& x : specials[id]["ids"]) {
          CPUFT_REQUIRE(x.is_number_unsigned() && x.get<uint64_t>() <= INT32_MAX, where,
                        ": 'post_processor.special_tokens' id of '", id, "' is not an id");
          item.ids.push_back(x.get<int32_t>());
        }
      }
      out.push_back(std::move(item));
    }
  }
}

// XLMRobertaTokenizer's template: <s> A </s> and <s> A </s></s> B </s>, every type id 0.
void xlmr_templates(int32_t bos, int32_t eos, UnigramTokenizer::Pipeline& p) {
  using Item = UnigramTokenizer::TemplateItem;
  p.single = {Item{-1, {bos}, 0}, Item{0, {}, 0}, Item{-1, {eos}, 0}};
  p.pair = {Item{-1, {bos}, 0}, Item{0, {}, 0}, Item{-1, {eos}, 0},
            Item{-1, {eos}, 0}, Item{1, {}, 0}, Item{-1, {eos}, 0}};
}

// DebertaV2Tokenizer's template: [CLS]:0 A:0 [SEP]:0 and [CLS]:0 A:0 [SEP]:0 B:1 [SEP]:1.
void deberta_templates(int32_t cls, int32_t sep, UnigramTokenizer::Pipeline& p) {
  using Item = UnigramTokenizer::TemplateItem;
  p.single = {Item{-1, {cls}, 0}, Item{0, {}, 0}, Item{-1, {sep}, 0}};
  p.pair = {Item{-1, {cls}, 0}, Item{0, {}, 0}, Item{-1, {sep}, 0}, Item{1, {}, 1},
            Item{-1, {sep}, 1}};
}

// One added token of transformers' config files: a string (`special_string`: a special token,
// which is not normalized) or an AddedToken object {"content", "lstrip", "rstrip", "normalized",
// "special", "single_word"} (normalized defaults to not special, as tokenizers' AddedToken).
UnigramTokenizer::AddedToken read_added_token(const json& v, const std::string& where,
                                              const std::string& field, bool special_string) {
  UnigramTokenizer::AddedToken t;
  if (v.is_string()) {
    t.content = v.get<std::string>();
    t.special = special_string;
    t.normalized = !special_string;
  } else {
    CPUFT_REQUIRE(v.is_object() && v.contains("content") && v["content"].is_string(), where,
                  ": field '", field, "' must be a string or an object with a string 'content'");
    t.content = v["content"].get<std::string>();
    t.special = json_bool(v, "special", special_string, where, field);
    t.lstrip = json_bool(v, "lstrip", false, where, field);
    t.rstrip = json_bool(v, "rstrip", false, where, field);
    t.normalized = json_bool(v, "normalized", !t.special, where, field);
    CPUFT_REQUIRE(!json_bool(v, "single_word", false, where, field), where, ": field '", field,
                  "': single_word tokens are not supported");
  }
  CPUFT_REQUIRE(!t.content.empty() && valid_utf8(t.content), where, ": field '", field,
                "' is empty or not UTF-8");
  return t;
}

// extra_special_tokens / additional_special_tokens: a list of tokens (or, in transformers 5, a
// map of named ones).
void read_token_list(const json& j, const std::string& where, const char* key,
                     std::vector<UnigramTokenizer::AddedToken>& out) {
  if (!j.contains(key) || j[key].is_null()) return;
  const json& v = j[key];
  CPUFT_REQUIRE(v.is_array() || v.is_object(), where, ": field '", key,
                "' must be a list of tokens");
  size_t k = 0;
  for (const json& item : v)
    out.push_back(read_added_token(item, where, str(key, "[", k++, "]"), /*special_string=*/true));
}

// tokenizer_config.json's added_tokens_decoder {"id": AddedToken, ...}, in id order (the order
// transformers adds them in).
std::vector<UnigramTokenizer::AddedToken> read_added_tokens_decoder(const json& j,
                                                                    const std::string& where) {
  const json& v = j["added_tokens_decoder"];
  CPUFT_REQUIRE(v.is_object(), where, ": field 'added_tokens_decoder' must be an object");
  std::vector<std::pair<int64_t, UnigramTokenizer::AddedToken>> by_id;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string field = str("added_tokens_decoder.", it.key());
    char* end = nullptr;
    const long long id = std::strtoll(it.key().c_str(), &end, 10);
    CPUFT_REQUIRE(
        !it.key().empty() && *end == '\0' && id >= 0 && id < static_cast<long long>(kMaxPieces),
        where, ": '", field, "': the key must be an id");
    by_id.emplace_back(id, read_added_token(it.value(), where, field, /*special_string=*/true));
  }
  std::stable_sort(by_id.begin(), by_id.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<UnigramTokenizer::AddedToken> out;
  for (auto& [id, t] : by_id) out.push_back(std::move(t));
  return out;
}

// The tokenizer class AutoTokenizer would build for the folder: tokenizer_config.json's
// tokenizer_class, else the one of config.json's model_type (empty: neither says).
std::string folder_tokenizer_class(const fs::path& root) {
  const fs::path config_path = root / "tokenizer_config.json";
  if (fs::exists(config_path)) {
    const json j = parse_json_text(read_file(config_path), config_path.string());
    if (j.contains("tokenizer_class") && j["tokenizer_class"].is_string())
      return j["tokenizer_class"].get<std::string>();
  }
  const fs::path model_config = root / "config.json";
  if (!fs::exists(model_config)) return "";
  const json c = parse_json_text(read_file(model_config), model_config.string());
  const std::string type = c.value("model_type", std::string());
  if (type == "xlm-roberta") return "XLMRobertaTokenizer";
  if (type == "deberta-v2") return "DebertaV2Tokenizer";
  return "";
}

bool is_deberta_class(const std::string& name) {
  return name == "DebertaV2Tokenizer" || name == "DebertaV2TokenizerFast";
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// Loading.

UnigramTokenizer UnigramTokenizer::from_sentencepiece_model(std::string model,
                                                            const std::string& where) {
  return from_spm(std::move(model), where, XlmrConfig{});
}

UnigramTokenizer UnigramTokenizer::from_deberta_model(std::string model, const std::string& where,
                                                      const DebertaOptions& options) {
  DebertaConfig config;
  config.options = options;
  return from_deberta_spm(std::move(model), where, std::move(config));
}

UnigramTokenizer UnigramTokenizer::from_spm(std::string model, const std::string& where,
                                            const XlmrConfig& config) {
  SpmModel m = parse_spm_model(model, where);
  CPUFT_REQUIRE(m.model_type == 1, where, ": trainer_spec.model_type is ", m.model_type,
                ", not Unigram (1)");
  CPUFT_REQUIRE(!m.byte_fallback, where, ": trainer_spec.byte_fallback is not supported");
  CPUFT_REQUIRE(m.pieces.size() > 3, where, ": ", m.pieces.size(),
                " pieces; an XLM-R model has <unk>, <s>, </s> and more");
  UnigramTokenizer t;
  t.source_ = t.spm_file_ = kSpmFile;
  t.spm_model_ = std::move(model);
  t.pipeline_.charsmap = std::move(m.charsmap);
  // transformers' XLMRobertaConverter: the fairseq dictionary puts <s> <pad> </s> <unk> first,
  // then the pieces after SentencePiece's <unk> <s> </s>, then <mask>.
  t.vocab_ = {{config.bos, 0.0}, {config.pad, 0.0}, {config.eos, 0.0}, {config.unk, 0.0}};
  for (size_t i = 3; i < m.pieces.size(); ++i) {
    t.vocab_.emplace_back(std::move(m.pieces[i].piece), static_cast<double>(m.pieces[i].score));
    // Control and user-defined pieces become added tokens matched in the raw text.
    if (m.pieces[i].type == 3 || m.pieces[i].type == 4) {
      t.added_.push_back(AddedToken{t.vocab_.back().first, static_cast<int32_t>(i + 1), false,
                                    false, false, m.pieces[i].type == 3});
    }
  }
  t.vocab_.emplace_back(config.mask, 0.0);
  t.unk_id_ = 3;
  t.apply_xlmr_class(config, /*keep_json_strip=*/false, where);
  return t;
}

// transformers 5 (TokenizersBackend._convert_from_sentencepiece, then DebertaV2Tokenizer): every
// piece with its score and id, unk_id from trainer_spec unless the unknown token is a piece
// scored 0, the control and user-defined pieces added (not normalized) after the special tokens.
// The charsmap is not used.
UnigramTokenizer UnigramTokenizer::from_deberta_spm(std::string model, const std::string& where,
                                                    DebertaConfig config) {
  SpmModel m = parse_spm_model(model, where);
  CPUFT_REQUIRE(m.model_type == 1, where, ": trainer_spec.model_type is ", m.model_type,
                ", not Unigram (1)");
  CPUFT_REQUIRE(!m.byte_fallback, where, ": trainer_spec.byte_fallback is not supported");
  CPUFT_REQUIRE(!m.pieces.empty(), where, ": the model has no pieces");
  UnigramTokenizer t;
  t.source_ = t.spm_file_ = kDebertaSpmFile;
  t.spm_model_ = std::move(model);
  t.vocab_.reserve(m.pieces.size());
  for (SpmPiece& piece : m.pieces) {
    if (piece.type == 3 || piece.type == 4)
      config.extra.push_back(AddedToken{piece.piece, 0, false, false, false, piece.type == 3});
    t.vocab_.emplace_back(std::move(piece.piece), static_cast<double>(piece.score));
  }
  config.unk_id = m.unk_id;
  t.apply_deberta_class(config, where);
  return t;
}

int32_t UnigramTokenizer::added_id(const std::string& content) const {
  for (const AddedToken& a : added_)
    if (a.content == content) return a.id;
  return -1;
}

void UnigramTokenizer::apply_xlmr_class(const XlmrConfig& config, bool keep_json_strip,
                                        const std::string& where) {
  Pipeline& p = pipeline_;
  p.normalizers.clear();
  if (!p.charsmap.empty()) p.normalizers.push_back(Normalizer::kPrecompiled);
  p.whitespace_split = true;
  p.punctuation = false;
  p.metaspace = true;
  p.prepend = config.add_prefix_space ? Prepend::kAlways : Prepend::kNever;
  p.metaspace_split = true;
  p.replacement = "\u2581";
  bos_ = cls_ = config.bos;
  eos_ = sep_ = config.eos;
  unk_ = config.unk;
  pad_ = config.pad;
  mask_ = config.mask;
  for (const std::string* s : {&bos_, &pad_, &eos_, &unk_, &mask_}) {
    auto it = std::find_if(added_.begin(), added_.end(),
                           [&](const AddedToken& a) { return a.content == *s; });
    if (it == added_.end()) {
      int32_t id = -1;
      for (size_t i = 0; i < vocab_.size(); ++i)
        if (vocab_[i].first == *s) id = static_cast<int32_t>(i);  // last wins, as HF's map
      CPUFT_REQUIRE(id >= 0, where, ": special token '", *s, "' is not in the vocabulary");
      added_.push_back(AddedToken{*s, id, false, false, false, true});
      it = added_.end() - 1;
    }
    if (s == &mask_) {
      it->lstrip = config.mask_lstrip || (keep_json_strip && it->lstrip);
      it->rstrip = config.mask_rstrip || (keep_json_strip && it->rstrip);
    }
  }
  xlmr_templates(added_id(bos_), added_id(eos_), p);
  build(where);
}

void UnigramTokenizer::apply_deberta_class(const DebertaConfig& config, const std::string& where) {
  CPUFT_REQUIRE(!vocab_.empty(), where, ": empty vocabulary");
  // The added tokens as TokenizersBackend adds them one by one: a piece keeps its id (the last
  // of equal pieces, as tokenizers' map), anything else gets the next id after the vocabulary
  // and the added tokens so far (tokenizers' AddedVocabulary), so ids in the files do not count.
  std::unordered_map<std::string_view, int32_t> piece_ids;
  for (size_t i = 0; i < vocab_.size(); ++i) piece_ids[vocab_[i].first] = static_cast<int32_t>(i);
  std::vector<AddedToken> listed = config.has_listed ? config.listed : added_;
  std::stable_sort(listed.begin(), listed.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  added_.clear();
  const auto n_pieces = static_cast<int64_t>(vocab_.size());
  int64_t max_id = -1;
  auto add = [&](const AddedToken& token) {
    if (added_id(token.content) >= 0) return;
    AddedToken a = token;
    const auto it = piece_ids.find(a.content);
    const int64_t id = it != piece_ids.end() ? it->second
                       : max_id >= n_pieces  ? max_id + 1
                                             : n_pieces;
    CPUFT_REQUIRE(id < static_cast<int64_t>(kMaxPieces), where, ": too many added tokens");
    a.id = static_cast<int32_t>(id);
    max_id = std::max(max_id, id);
    added_.push_back(std::move(a));
  };
  for (const AddedToken& a : listed) add(a);
  for (const AddedToken* a :
       {&config.bos, &config.eos, &config.unk, &config.sep, &config.pad, &config.cls, &config.mask})
    add(*a);
  for (const AddedToken& a : config.extra) add(a);
  // DebertaV2Tokenizer: the unknown token's index if it is a piece scored 0, else unk_id.
  int64_t unk = config.unk_id;
  for (size_t i = 0; i < vocab_.size(); ++i) {
    if (vocab_[i].first == config.unk.content && vocab_[i].second == 0.0) {
      unk = static_cast<int64_t>(i);
      break;
    }
  }
  CPUFT_REQUIRE(unk >= 0 && unk < n_pieces, where, ": unk_id ", unk,
                " is not a piece (and the unknown token '", config.unk.content,
                "' is no piece scored 0)");
  unk_id_ = static_cast<int32_t>(unk);
  bos_ = config.bos.content;
  eos_ = config.eos.content;
  unk_ = config.unk.content;
  sep_ = config.sep.content;
  pad_ = config.pad.content;
  cls_ = config.cls.content;
  mask_ = config.mask.content;
  Pipeline& p = pipeline_;
  p.charsmap.clear();
  p.normalizers.clear();
  if (config.options.do_lower_case) p.normalizers.push_back(Normalizer::kLowercase);
  p.normalizers.insert(p.normalizers.end(),
                       {Normalizer::kWhitespaceRuns, Normalizer::kNfc, Normalizer::kStripRight});
  p.whitespace_split = false;
  p.punctuation = config.options.split_by_punct;
  p.metaspace = true;
  p.prepend = config.options.add_prefix_space ? Prepend::kAlways : Prepend::kFirst;
  p.metaspace_split = true;
  p.replacement = "\u2581";
  deberta_templates(added_id(cls_), added_id(sep_), p);
  deberta_class_ = true;
  deberta_ = config.options;
  build(where);
}

bool UnigramTokenizer::is_xlmr_class_pipeline() const {
  const Pipeline& p = pipeline_;
  const bool charsmap_only =
      p.normalizers.empty() ||
      (p.normalizers.size() == 1 && p.normalizers[0] == Normalizer::kPrecompiled);
  if (deberta_class_ || !charsmap_only || !p.whitespace_split || p.punctuation || !p.metaspace ||
      p.prepend == Prepend::kFirst || !p.metaspace_split || p.replacement != "\u2581" ||
      bos_.empty() || eos_.empty())
    return false;
  Pipeline want;
  xlmr_templates(added_id(bos_), added_id(eos_), want);
  return want.single == p.single && want.pair == p.pair;
}

UnigramTokenizer UnigramTokenizer::from_tokenizer_json(std::string_view text,
                                                       const std::string& where) {
  return from_tokenizer_json(text, where, /*with_pipeline=*/true);
}

UnigramTokenizer UnigramTokenizer::from_tokenizer_json(std::string_view text,
                                                       const std::string& where,
                                                       bool with_pipeline) {
  const json j = parse_json_text(text, where);
  const json& model = require_object(j, "model", where);
  CPUFT_REQUIRE(model.value("type", std::string()) == "Unigram", where,
                ": 'model.type' must be \"Unigram\"");
  CPUFT_REQUIRE(model.contains("vocab") && model["vocab"].is_array() && !model["vocab"].empty(),
                where, ": 'model.vocab' must be a non-empty array");
  CPUFT_REQUIRE(!json_bool(model, "byte_fallback", false, where, "model"), where,
                ": 'model.byte_fallback' true is not supported");
  UnigramTokenizer t;
  t.source_ = kJsonFile;
  const json& v = model["vocab"];
  CPUFT_REQUIRE(v.size() < kMaxPieces, where, ": 'model.vocab' has more than ", kMaxPieces,
                " entries");
  t.vocab_.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const json& e = v[i];
    CPUFT_REQUIRE(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_number(), where,
                  ": 'model.vocab[", i, "]' must be [piece, score]");
    const double score = e[1].get<double>();
    std::string piece = e[0].get<std::string>();
    CPUFT_REQUIRE(std::isfinite(score), where, ": 'model.vocab[", i, "]' score is not finite");
    CPUFT_REQUIRE(valid_utf8(piece), where, ": 'model.vocab[", i, "]' is not valid UTF-8");
    t.vocab_.emplace_back(std::move(piece), score);
  }
  CPUFT_REQUIRE(model.contains("unk_id") && model["unk_id"].is_number_unsigned() &&
                    model["unk_id"].get<uint64_t>() < v.size(),
                where, ": 'model.unk_id' must be an id in [0, ", v.size(), ")");
  t.unk_id_ = model["unk_id"].get<int32_t>();
  if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
    CPUFT_REQUIRE(j["added_tokens"].is_array(), where, ": 'added_tokens' must be an array");
    for (size_t i = 0; i < j["added_tokens"].size(); ++i) {
      const json& a = j["added_tokens"][i];
      const std::string field = str("added_tokens[", i, "]");
      CPUFT_REQUIRE(a.is_object() && a.contains("id") && a["id"].is_number_unsigned() &&
                        a["id"].get<uint64_t>() < kMaxPieces && a.contains("content") &&
                        a["content"].is_string(),
                    where, ": '", field, "' must have an 'id' and a string 'content'");
      AddedToken tok;
      tok.id = a["id"].get<int32_t>();
      tok.content = a["content"].get<std::string>();
      CPUFT_REQUIRE(!tok.content.empty() && valid_utf8(tok.content), where, ": '", field,
                    ".content' is empty or not UTF-8");
      CPUFT_REQUIRE(!json_bool(a, "single_word", false, where, field), where, ": '", field,
                    "': single_word tokens are not supported");
      tok.lstrip = json_bool(a, "lstrip", false, where, field);
      tok.rstrip = json_bool(a, "rstrip", false, where, field);
      tok.normalized = json_bool(a, "normalized", true, where, field);
      tok.special = json_bool(a, "special", false, where, field);
      t.added_.push_back(std::move(tok));
    }
  }
  if (!with_pipeline) return t;
  read_normalizer(j.value("normalizer", json()), where, "normalizer", t.pipeline_);
  read_pre_tokenizer(j.value("pre_tokenizer", json()), where, "pre_tokenizer", t.pipeline_, true);
  read_post_processor(j.value("post_processor", json()), where, t.pipeline_);
  // Names for the config files save() writes: the template's first and last special tokens,
  // the model's unknown token, and <pad>/<mask> ([PAD]/[MASK]) if the added tokens have them.
  auto name_of = [&](int32_t id) -> std::string {
    for (const AddedToken& a : t.added_)
      if (a.id == id) return a.content;
    return id >= 0 && static_cast<size_t>(id) < t.vocab_.size() ? t.vocab_[id].first : "";
  };
  for (const TemplateItem& item : t.pipeline_.single) {
    if (item.sequence >= 0 || item.ids.empty()) continue;
    if (t.bos_.empty()) t.bos_ = name_of(item.ids.front());
    t.eos_ = name_of(item.ids.back());
  }
  t.cls_ = t.bos_;
  t.sep_ = t.eos_;
  t.unk_ = t.vocab_[static_cast<size_t>(t.unk_id_)].first;
  for (const AddedToken& a : t.added_) {
    if (a.content == "<pad>" || a.content == "[PAD]") t.pad_ = a.content;
    if (a.content == "<mask>" || a.content == "[MASK]") t.mask_ = a.content;
  }
  t.build(where);
  return t;
}

namespace {

// A tokenizer_config.json's model_max_length, when sensible: HF writes a huge sentinel (1e30)
// when there is no limit.
int model_max_length_of(const json& j, int fallback) {
  if (!j.contains("model_max_length") || !j["model_max_length"].is_number_integer())
    return fallback;
  const int64_t m = j["model_max_length"].get<int64_t>();
  return m > 0 && m <= INT32_MAX ? static_cast<int>(m) : fallback;
}

}  // namespace

// What DebertaV2Tokenizer.from_pretrained reads: tokenizer_config.json (the options, the special
// tokens, unk_id, added_tokens_decoder), special_tokens_map.json (whose tokens win, unless
// tokenizer_config.json has added_tokens_decoder: then it is not read), then tokenizer.json's
// pieces and added tokens, else spm.model.
UnigramTokenizer UnigramTokenizer::from_deberta_folder(const std::string& dir) {
  const fs::path root(dir);
  const fs::path json_path = root / kJsonFile, spm_path = root / kDebertaSpmFile;
  const fs::path config_path = root / "tokenizer_config.json";
  const fs::path map_path = root / "special_tokens_map.json";
  DebertaConfig config;
  int model_max_length = 512;
  auto read_tokens = [&](const json& j, const std::string& where) {
    for (auto [key, token] :
         {std::pair{"bos_token", &config.bos}, std::pair{"eos_token", &config.eos},
          std::pair{"unk_token", &config.unk}, std::pair{"sep_token", &config.sep},
          std::pair{"pad_token", &config.pad}, std::pair{"cls_token", &config.cls},
          std::pair{"mask_token", &config.mask}}) {
      if (j.contains(key) && !j[key].is_null())
        *token = read_added_token(j[key], where, key, /*special_string=*/true);
    }
    read_token_list(j, where, "extra_special_tokens", config.extra);
    read_token_list(j, where, "additional_special_tokens", config.extra);
  };
  if (fs::exists(config_path)) {
    const std::string where = config_path.string();
    const json j = parse_json_text(read_file(config_path), where);
    read_tokens(j, where);
    DebertaOptions& o = config.options;
    o.do_lower_case = json_bool(j, "do_lower_case", false, where, "tokenizer_config");
    o.split_by_punct = json_bool(j, "split_by_punct", false, where, "tokenizer_config");
    o.add_prefix_space = json_bool(j, "add_prefix_space", true, where, "tokenizer_config");
    if (j.contains("unk_id") && !j["unk_id"].is_null()) {
      CPUFT_REQUIRE(j["unk_id"].is_number_integer(), where, ": field 'unk_id' must be an id");
      config.unk_id = j["unk_id"].get<int64_t>();
    }
    if (j.contains("added_tokens_decoder")) {
      config.has_listed = true;
      config.listed = read_added_tokens_decoder(j, where);
    }
    model_max_length = model_max_length_of(j, model_max_length);
  }
  if (!config.has_listed && fs::exists(map_path)) {
    const std::string where = map_path.string();
    read_tokens(parse_json_text(read_file(map_path), where), where);
  }
  UnigramTokenizer t;
  if (fs::exists(json_path)) {
    // transformers reads tokenizer.json first when a folder has both; the class rebuilds
    // everything but the pieces and added tokens.
    t = from_tokenizer_json(read_file(json_path), json_path.string(), /*with_pipeline=*/false);
    t.apply_deberta_class(config, json_path.string());
  } else {
    CPUFT_REQUIRE(fs::exists(spm_path), dir, ": neither ", kJsonFile, " nor ", kDebertaSpmFile,
                  " found (DebertaV2Tokenizer reads one of them)");
    t = from_deberta_spm(read_file(spm_path), spm_path.string(), std::move(config));
  }
  t.model_max_length_ = model_max_length;
  return t;
}

UnigramTokenizer UnigramTokenizer::from_folder(const std::string& dir) {
  const fs::path root(dir);
  CPUFT_REQUIRE(fs::is_directory(root), dir, ": not a directory");
  const fs::path json_path = root / kJsonFile, spm_path = root / kSpmFile;
  const fs::path config_path = root / "tokenizer_config.json";
  const fs::path map_path = root / "special_tokens_map.json";
  // The class AutoTokenizer builds decides the pipeline; a bare spm.model is DeBERTa's file.
  const std::string tokenizer_class = folder_tokenizer_class(root);
  const bool deberta = is_deberta_class(tokenizer_class) ||
                       (tokenizer_class.empty() && !fs::exists(json_path) &&
                        !fs::exists(spm_path) && fs::exists(root / kDebertaSpmFile));
  // The configuration: special tokens (special_tokens_map.json, then tokenizer_config.json,
  // which transformers lets win), add_prefix_space, model_max_length.
  XlmrConfig config;
  int model_max_length = 512;
  for (const fs::path& p : {map_path, config_path}) {
    if (deberta || !fs::exists(p)) continue;
    const std::string where = p.string();
    const json j = parse_json_text(read_file(p), where);
    read_token_field(j, where, "bos_token", config.bos);
    read_token_field(j, where, "eos_token", config.eos);
    read_token_field(j, where, "unk_token", config.unk);
    read_token_field(j, where, "pad_token", config.pad);
    read_token_field(j, where, "mask_token", config.mask, &config.mask_lstrip, &config.mask_rstrip);
    if (p != config_path) continue;
    config.add_prefix_space = json_bool(j, "add_prefix_space", true, where, "tokenizer_config");
    model_max_length = model_max_length_of(j, model_max_length);
  }
  const bool xlmr_class =
      tokenizer_class == "XLMRobertaTokenizer" || tokenizer_class == "XLMRobertaTokenizerFast";
  UnigramTokenizer t;
  try {
    if (deberta) {
      t = from_deberta_folder(dir);
    } else if (fs::exists(json_path)) {
      // transformers reads tokenizer.json first when a folder has both.
      t = from_tokenizer_json(read_file(json_path), json_path.string());
      if (xlmr_class) t.apply_xlmr_class(config, /*keep_json_strip=*/true, json_path.string());
    } else {
      CPUFT_REQUIRE(fs::exists(spm_path), dir, ": neither ", kJsonFile, " nor ", kSpmFile,
                    " found");
      t = from_spm(read_file(spm_path), spm_path.string(), config);
    }
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(dir, 0) == 0) throw;
    throw Error(str(dir, ": ", what));
  }
  if (!deberta) t.model_max_length_ = model_max_length;
  return t;
}

bool UnigramTokenizer::handles_folder(const std::string& dir) {
  const fs::path root(dir);
  const fs::path json_path = root / kJsonFile;
  if (!fs::exists(json_path)) {
    if (fs::exists(root / kSpmFile) || fs::exists(root / kDebertaSpmFile)) return true;
    // Our class with its model file missing: from_folder's error names the file to look for.
    try {
      const std::string name = folder_tokenizer_class(root);
      return is_deberta_class(name) || name == "XLMRobertaTokenizer" ||
             name == "XLMRobertaTokenizerFast";
    } catch (const Error&) {
      return false;  // unreadable configs are for the loader that reads them to report
    }
  }
  // Only model.type matters: keep nothing deeper than the model's own fields while parsing.
  const std::string text = read_file(json_path);
  const json j = json::parse(
      text, [](int depth, json::parse_event_t, json&) { return depth <= 2; },
      /*allow_exceptions=*/false);
  return j.is_object() && j.contains("model") && j["model"].is_object() &&
         j["model"].value("type", json()) == "Unigram";
}

// -----------------------------------------------------------------------------------------------
// Saving.

namespace {

json normalizer_json(const UnigramTokenizer::Pipeline& p) {
  auto strip = [](bool left, bool right) {
    return json{{"type", "Strip"}, {"strip_left", left}, {"strip_right", right}};
  };
  auto replace = [](const char* regex) {
    return json{{"type", "Replace"}, {"pattern", {{"Regex", regex}}}, {"content", " "}};
  };
  json normalizers = json::array();
  for (const Norm n : p.normalizers) {
    switch (n) {
      case Norm::kPrecompiled:
        normalizers.push_back(
            {{"type", "Precompiled"}, {"precompiled_charsmap", base64_encode(p.charsmap)}});
        break;
      case Norm::kCollapseSpaces:
        normalizers.push_back(replace(" {2,}"));
        break;
      case Norm::kWhitespaceRuns:
        normalizers.push_back(replace(kWhitespaceRunsRegex));
        break;
      case Norm::kNfc:
        normalizers.push_back({{"type", "NFC"}});
        break;
      case Norm::kLowercase:
        normalizers.push_back({{"type", "Lowercase"}});
        break;
      case Norm::kStripLeft:
        normalizers.push_back(strip(true, false));
        break;
      case Norm::kStripRight:
        normalizers.push_back(strip(false, true));
        break;
      case Norm::kStrip:
        normalizers.push_back(strip(true, true));
        break;
    }
  }
  if (normalizers.empty()) return nullptr;
  if (normalizers.size() == 1) return normalizers[0];
  return {{"type", "Sequence"}, {"normalizers", normalizers}};
}

json metaspace_json(const UnigramTokenizer::Pipeline& p) {
  const char* scheme = p.prepend == Prepend::kAlways  ? "always"
                       : p.prepend == Prepend::kFirst ? "first"
                                                      : "never";
  return {{"type", "Metaspace"},
          {"replacement", p.replacement},
          {"prepend_scheme", scheme},
          {"split", p.metaspace_split}};
}

json pre_tokenizer_json(const UnigramTokenizer::Pipeline& p) {
  json pre = json::array();
  if (p.whitespace_split) pre.push_back({{"type", "WhitespaceSplit"}});
  if (p.punctuation) pre.push_back({{"type", "Punctuation"}, {"behavior", "Isolated"}});
  if (p.metaspace) pre.push_back(metaspace_json(p));
  if (pre.empty()) return nullptr;
  if (pre.size() == 1) return pre[0];
  return {{"type", "Sequence"}, {"pretokenizers", pre}};
}

}  // namespace

void UnigramTokenizer::save(const std::string& dir) const {
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  CPUFT_REQUIRE(!ec, dir, ": cannot create directory: ", ec.message());
  const Pipeline& p = pipeline_;
  // The pipeline transformers' XLMRobertaTokenizer or DebertaV2Tokenizer class builds itself;
  // when ours is another, the config names the generic class, which takes tokenizer.json as it
  // is.
  const bool xlmr_class = is_xlmr_class_pipeline();

  json tj;
  tj["version"] = "1.0";
  tj["truncation"] = nullptr;
  tj["padding"] = nullptr;
  // In id order, as tokenizers writes them.
  std::vector<const AddedToken*> by_id;
  for (const AddedToken& a : added_) by_id.push_back(&a);
  std::stable_sort(by_id.begin(), by_id.end(),
                   [](const AddedToken* x, const AddedToken* y) { return x->id < y->id; });
  json added = json::array();
  for (const AddedToken* token : by_id) {
    const AddedToken& a = *token;
    added.push_back({{"id", a.id},
                     {"content", a.content},
                     {"single_word", false},
                     {"lstrip", a.lstrip},
                     {"rstrip", a.rstrip},
                     {"normalized", a.normalized},
                     {"special", a.special}});
  }
  tj["added_tokens"] = added;
  tj["normalizer"] = normalizer_json(p);
  tj["pre_tokenizer"] = pre_tokenizer_json(p);
  json special_tokens = json::object();
  auto items = [&](const std::vector<TemplateItem>& v) {
    json out = json::array();
    for (const TemplateItem& item : v) {
      if (item.sequence >= 0) {
        out.push_back(
            {{"Sequence", {{"id", item.sequence == 0 ? "A" : "B"}, {"type_id", item.type_id}}}});
        continue;
      }
      std::string name;
      std::vector<std::string> tokens;
      for (int32_t id : item.ids) {
        tokens.push_back(token(id));
        name += tokens.back();
      }
      special_tokens[name] = {{"id", name}, {"ids", item.ids}, {"tokens", tokens}};
      out.push_back({{"SpecialToken", {{"id", name}, {"type_id", item.type_id}}}});
    }
    return out;
  };
  tj["post_processor"] = {{"type", "TemplateProcessing"},
                          {"single", items(p.single)},
                          {"pair", items(p.pair)},
                          {"special_tokens", special_tokens}};
  tj["decoder"] = p.metaspace ? metaspace_json(p) : json(nullptr);
  json vocab = json::array();
  for (const auto& [piece, score] : vocab_) vocab.push_back({piece, score});
  tj["model"] = {
      {"type", "Unigram"}, {"unk_id", unk_id_}, {"vocab", vocab}, {"byte_fallback", false}};
  write_file(root / kJsonFile, tj.dump(2, ' ', false, json::error_handler_t::strict) + "\n");

  bool mask_lstrip = false, mask_rstrip = false, mask_normalized = false;
  for (const AddedToken& a : added_) {
    if (a.content == mask_) {
      mask_lstrip = a.lstrip;
      mask_rstrip = a.rstrip;
      mask_normalized = a.normalized;
    }
  }
  json special = json::object();
  if (!bos_.empty()) special["bos_token"] = bos_;
  if (!cls_.empty()) special["cls_token"] = cls_;
  if (!eos_.empty()) special["eos_token"] = eos_;
  if (!sep_.empty()) special["sep_token"] = sep_;
  if (!unk_.empty()) special["unk_token"] = unk_;
  if (!pad_.empty()) special["pad_token"] = pad_;
  if (!mask_.empty()) {
    special["mask_token"] = {{"content", mask_},
                             {"lstrip", mask_lstrip},
                             {"rstrip", mask_rstrip},
                             {"normalized", mask_normalized},
                             {"single_word", false}};
  }
  json config = special;
  config["tokenizer_class"] = deberta_class_ ? "DebertaV2Tokenizer"
                              : xlmr_class   ? "XLMRobertaTokenizer"
                                             : "TokenizersBackend";
  config["add_prefix_space"] = p.prepend != Prepend::kNever && p.prepend != Prepend::kFirst;
  if (deberta_class_) {
    // What DebertaV2Tokenizer rebuilds its pipeline from; unk_id for an unknown token that is
    // no piece scored 0.
    config["do_lower_case"] = deberta_.do_lower_case;
    config["split_by_punct"] = deberta_.split_by_punct;
    config["add_prefix_space"] = deberta_.add_prefix_space;
    config["unk_id"] = unk_id_;
    config["vocab_type"] = "spm";
  }
  config["model_max_length"] = model_max_length_;
  write_file(root / "tokenizer_config.json", config.dump(2) + "\n");
  write_file(root / "special_tokens_map.json", special.dump(2) + "\n");
  if (!spm_model_.empty()) write_file(root / spm_file_, spm_model_);
}

}  // namespace cpuft