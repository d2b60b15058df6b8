#include "data/unigram_tokenizer.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/atomic_file.h"
#include "core/check.h"
#include "data/grapheme_tables.h"
#include "data/utf8.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
namespace gr = cpuft::grapheme;
using json = nlohmann::json;

const char* const kSpmFile = "sentencepiece.bpe.model";
const char* const kJsonFile = "tokenizer.json";
constexpr double kUnkPenalty = 10.0;  // tokenizers' and SentencePiece's K_UNK_PENALTY
constexpr size_t kMaxPieces = size_t{1} << 24;

// ---------------------------------------------------------------------------------------------
// Character properties.

uint8_t properties_slow(char32_t c) {
  const gr::PropertyRange* end = gr::kPropertyRanges + gr::kPropertyRangeCount;
  const gr::PropertyRange* it =
      std::upper_bound(gr::kPropertyRanges, end, c,
                       [](char32_t v, const gr::PropertyRange& r) { return v < r.first; });
  if (it == gr::kPropertyRanges) return 0;
  --it;
  return c <= it->last ? it->value : 0;
}

inline uint8_t properties(char32_t c) {
  if (c >= 0x20 && c < 0x7F) return c == ' ' ? gr::kWhiteSpace : 0;  // printable ASCII
  return properties_slow(c);
}

inline bool is_white_space(char32_t c) {
  return (properties(c) & gr::kWhiteSpace) != 0;
}

// Decodes strict UTF-8 (the caller validated it) into code points and their byte offsets;
// offsets has one more entry, the end.
void decode(std::string_view s, std::u32string& cps, std::vector<uint32_t>& offsets) {
  cps.clear();
  offsets.clear();
  char32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t len = decode_utf8_at(s, i, &cp);
    CPUFT_CHECK(len > 0);
    cps.push_back(cp);
    offsets.push_back(static_cast<uint32_t>(i));
    i += len;
  }
  offsets.push_back(static_cast<uint32_t>(s.size()));
}

// Extended grapheme clusters (UAX #29, rules GB3-GB13 with GB9c). Returns the index one past the
// cluster that starts at cps[i]; `state` carries what the rules need to look back at.
struct GraphemeState {
  int incb = 0;   // 0: none; 1: InCB Consonant [Extend|Linker]*; 2: ... with a Linker among them
  int emoji = 0;  // 0: none; 1: ExtPict Extend*; 2: ExtPict Extend* ZWJ
  int ri = 0;     // regional indicators in a row ending at the previous character
};

void advance_state(GraphemeState& s, uint8_t p) {
  const uint8_t gcb = p & gr::kGcbMask;
  const int incb = (p >> gr::kIncbShift) & 3;
  if (incb == gr::kIncbConsonant) {
    s.incb = 1;
  } else if (s.incb != 0 && incb == gr::kIncbLinker) {
    s.incb = 2;
  } else if (s.incb != 0 && incb == gr::kIncbExtend) {
    // stays
  } else {
    s.incb = 0;
  }
  if (p & gr::kExtendedPictographic) {
    s.emoji = 1;
  } else if (s.emoji == 1 && gcb == gr::kExtend) {
    s.emoji = 1;
  } else if (s.emoji == 1 && gcb == gr::kZWJ) {
    s.emoji = 2;
  } else {
    s.emoji = 0;
  }
  s.ri = gcb == gr::kRegionalIndicator ? s.ri + 1 : 0;
}

bool is_break(const GraphemeState& s, uint8_t prev_p, uint8_t cur_p) {
  const uint8_t a = prev_p & gr::kGcbMask, b = cur_p & gr::kGcbMask;
  if (a == gr::kCR && b == gr::kLF) return false;                                    // GB3
  if (a == gr::kControl || a == gr::kCR || a == gr::kLF) return true;                // GB4
  if (b == gr::kControl || b == gr::kCR || b == gr::kLF) return true;                // GB5
  if (a == gr::kL && (b == gr::kL || b == gr::kV || b == gr::kLV || b == gr::kLVT))  // GB6
    return false;
  if ((a == gr::kLV || a == gr::kV) && (b == gr::kV || b == gr::kT)) return false;         // GB7
  if ((a == gr::kLVT || a == gr::kT) && b == gr::kT) return false;                         // GB8
  if (b == gr::kExtend || b == gr::kZWJ) return false;                                     // GB9
  if (b == gr::kSpacingMark) return false;                                                 // GB9a
  if (a == gr::kPrepend) return false;                                                     // GB9b
  if (s.incb == 2 && ((cur_p >> gr::kIncbShift) & 3) == gr::kIncbConsonant) return false;  // GB9c
  if (a == gr::kZWJ && s.emoji == 2 && (cur_p & gr::kExtendedPictographic)) return false;  // GB11
  if (a == gr::kRegionalIndicator && b == gr::kRegionalIndicator && s.ri % 2 == 1)  // GB12, GB13
    return false;
  return true;  // GB999
}

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
    CPUFT_REQUIRE(p.charsmap.empty() && !p.collapse_spaces, where, ": '", field,
                  "': only one Precompiled normalizer, first, is supported");
    CPUFT_REQUIRE(n.contains("precompiled_charsmap") && n["precompiled_charsmap"].is_string(),
                  where, ": '", field, ".precompiled_charsmap' must be a base64 string");
    p.charsmap =
        base64_decode(n["precompiled_charsmap"].get<std::string>(), where, "precompiled_charsmap");
  } else if (type == "Replace") {
    // The legacy XLM-R converter's Replace(Regex(" {2,}"), " "); nothing else.
    const json* pattern = n.contains("pattern") ? &n["pattern"] : nullptr;
    const bool ok = pattern && pattern->is_object() && pattern->contains("Regex") &&
                    (*pattern)["Regex"] == " {2,}" && n.value("content", json()) == " ";
    CPUFT_REQUIRE(ok, where, ": '", field,
                  "': only Replace of the regex \" {2,}\" by \" \" is supported");
    p.collapse_spaces = true;
  } else {
    throw Error(str(where, ": '", field, "': normalizer type '", type,
                    "' is not supported (Precompiled, Replace \" {2,}\", Sequence)"));
  }
}

void read_pre_tokenizer(const json& t, const std::string& where, const std::string& field,
                        UnigramTokenizer::Pipeline& p, bool top) {
  if (top) {
    p.whitespace_split = false;
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
    CPUFT_REQUIRE(!p.whitespace_split && !p.metaspace, where, ": '", field,
                  "': WhitespaceSplit is supported once, before Metaspace");
    p.whitespace_split = true;
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
    CPUFT_REQUIRE(scheme == "always" || scheme == "never", where, ": '", field,
                  ".prepend_scheme' \"", scheme, "\" is not supported (\"always\", \"never\")");
    p.prepend = scheme == "always";
    p.metaspace_split = json_bool(t, "split", true, where, field);
  } else {
    throw Error(str(where, ": '", field, "': pre-tokenizer type '", type,
                    "' is not supported (Metaspace, WhitespaceSplit, Sequence)"));
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

}  // namespace

// -----------------------------------------------------------------------------------------------
// Loading.

UnigramTokenizer UnigramTokenizer::from_sentencepiece_model(std::string model,
                                                            const std::string& where) {
  return from_spm(std::move(model), where, XlmrConfig{});
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
  t.source_ = kSpmFile;
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

int32_t UnigramTokenizer::added_id(const std::string& content) const {
  for (const AddedToken& a : added_)
    if (a.content == content) return a.id;
  return -1;
}

void UnigramTokenizer::apply_xlmr_class(const XlmrConfig& config, bool keep_json_strip,
                                        const std::string& where) {
  Pipeline& p = pipeline_;
  p.collapse_spaces = false;
  p.whitespace_split = true;
  p.metaspace = true;
  p.prepend = config.add_prefix_space;
  p.metaspace_split = true;
  p.replacement = "\u2581";
  bos_ = config.bos;
  eos_ = config.eos;
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

bool UnigramTokenizer::is_xlmr_class_pipeline() const {
  const Pipeline& p = pipeline_;
  if (p.collapse_spaces || !p.whitespace_split || !p.metaspace || !p.metaspace_split ||
      p.replacement != "\u2581" || bos_.empty() || eos_.empty())
    return false;
  Pipeline want;
  xlmr_templates(added_id(bos_), added_id(eos_), want);
  return want.single == p.single && want.pair == p.pair;
}

UnigramTokenizer UnigramTokenizer::from_tokenizer_json(std::string_view text,
                                                       const std::string& where) {
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
  read_normalizer(j.value("normalizer", json()), where, "normalizer", t.pipeline_);
  read_pre_tokenizer(j.value("pre_tokenizer", json()), where, "pre_tokenizer", t.pipeline_, true);
  read_post_processor(j.value("post_processor", json()), where, t.pipeline_);
  // Names for the config files save() writes: the template's first and last special tokens,
  // the model's unknown token, and <pad>/<mask> if the vocabulary has them.
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
  t.unk_ = t.vocab_[static_cast<size_t>(t.unk_id_)].first;
  for (const AddedToken& a : t.added_) {
    if (a.content == "<pad>") t.pad_ = a.content;
    if (a.content == "<mask>") t.mask_ = a.content;
  }
  t.build(where);
  return t;
}

UnigramTokenizer UnigramTokenizer::from_folder(const std::string& dir) {
  const fs::path root(dir);
  CPUFT_REQUIRE(fs::is_directory(root), dir, ": not a directory");
  const fs::path json_path = root / kJsonFile, spm_path = root / kSpmFile;
  const fs::path config_path = root / "tokenizer_config.json";
  const fs::path map_path = root / "special_tokens_map.json";
  // The configuration: special tokens (special_tokens_map.json, then tokenizer_config.json,
  // which transformers lets win), the tokenizer class, add_prefix_space, model_max_length.
  XlmrConfig config;
  std::string tokenizer_class;
  int model_max_length = 512;
  for (const fs::path& p : {map_path, config_path}) {
    if (!fs::exists(p)) continue;
    const std::string where = p.string();
    const json j = parse_json_text(read_file(p), where);
    read_token_field(j, where, "bos_token", config.bos);
    read_token_field(j, where, "eos_token", config.eos);
    read_token_field(j, where, "unk_token", config.unk);
    read_token_field(j, where, "pad_token", config.pad);
    read_token_field(j, where, "mask_token", config.mask, &config.mask_lstrip, &config.mask_rstrip);
    if (p != config_path) continue;
    if (j.contains("tokenizer_class") && j["tokenizer_class"].is_string())
      tokenizer_class = j["tokenizer_class"];
    config.add_prefix_space = json_bool(j, "add_prefix_space", true, where, "tokenizer_config");
    if (j.contains("model_max_length") && j["model_max_length"].is_number_integer()) {
      // HF writes a huge sentinel (1e30) when there is no limit; keep only sensible values.
      const int64_t m = j["model_max_length"].get<int64_t>();
      if (m > 0 && m <= INT32_MAX) model_max_length = static_cast<int>(m);
    }
  }
  if (tokenizer_class.empty() && fs::exists(root / "config.json")) {
    // AutoTokenizer picks the class from the model type when tokenizer_config.json names none.
    const fs::path p = root / "config.json";
    const json c = parse_json_text(read_file(p), p.string());
    if (c.value("model_type", std::string()) == "xlm-roberta")
      tokenizer_class = "XLMRobertaTokenizer";
  }
  const bool xlmr_class =
      tokenizer_class == "XLMRobertaTokenizer" || tokenizer_class == "XLMRobertaTokenizerFast";
  UnigramTokenizer t;
  try {
    if (fs::exists(json_path)) {
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
  t.model_max_length_ = model_max_length;
  return t;
}

bool UnigramTokenizer::handles_folder(const std::string& dir) {
  const fs::path root(dir);
  const fs::path json_path = root / kJsonFile;
  if (!fs::exists(json_path)) return fs::exists(root / kSpmFile);
  // Only model.type matters: keep nothing deeper than the model's own fields while parsing.
  const std::string text = read_file(json_path);
  const json j = json::parse(
      text, [](int depth, json::parse_event_t, json&) { return depth <= 2; },
      /*allow_exceptions=*/false);
  return j.is_object() && j.contains("model") && j["model"].is_object() &&
         j["model"].value("type", json()) == "Unigram";
}

void UnigramTokenizer::build(const std::string& where) {
  where_ = where;
  CPUFT_REQUIRE(!vocab_.empty(), where, ": empty vocabulary");
  CPUFT_REQUIRE(unk_id_ >= 0 && static_cast<size_t>(unk_id_) < vocab_.size(), where,
                ": unk_id out of range");
  // Vocabulary map (a piece that appears twice keeps its last id, as tokenizers' HashMap) and
  // the lowest score, which makes <unk>'s.
  ids_.clear();
  ids_.reserve(vocab_.size());
  double min_score = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < vocab_.size(); ++i) {
    ids_.insert_or_assign(vocab_[i].first, static_cast<int32_t>(i));
    min_score = std::min(min_score, vocab_[i].second);
  }
  unk_score_ = min_score - kUnkPenalty;
  // Byte trie, built from the sorted distinct pieces: each node's children are contiguous.
  std::vector<std::string_view> pieces;
  pieces.reserve(ids_.size());
  for (const auto& [piece, id] : ids_)
    if (!piece.empty()) pieces.push_back(piece);
  std::sort(pieces.begin(), pieces.end());
  trie_.assign(1, TrieNode{});
  edges_.clear();
  // Breadth-first over (node, range of pieces sharing its prefix, depth).
  struct Pending {
    uint32_t node;
    size_t begin, end, depth;
  };
  std::vector<Pending> queue{{0, 0, pieces.size(), 0}};
  for (size_t q = 0; q < queue.size(); ++q) {
    const Pending cur = queue[q];
    size_t i = cur.begin;
    if (i < cur.end && pieces[i].size() == cur.depth) {
      trie_[cur.node].id = ids_.find(pieces[i])->second;
      ++i;
    }
    trie_[cur.node].first_edge = static_cast<uint32_t>(edges_.size());
    while (i < cur.end) {
      const unsigned char b = static_cast<unsigned char>(pieces[i][cur.depth]);
      size_t j = i;
      while (j < cur.end && static_cast<unsigned char>(pieces[j][cur.depth]) == b) ++j;
      const auto child = static_cast<uint32_t>(trie_.size());
      trie_.push_back(TrieNode{});
      edges_.push_back(TrieEdge{b, child});
      queue.push_back(Pending{child, i, j, cur.depth + 1});
      i = j;
    }
    trie_[cur.node].n_edges = static_cast<uint32_t>(edges_.size()) - trie_[cur.node].first_edge;
  }
  // The charsmap: a little-endian u32 trie size in bytes, the double-array units, then the
  // NUL-separated replacement strings (tokenizers refuses a blob whose strings are not UTF-8).
  charsmap_units_.clear();
  charsmap_text_begin_ = 0;
  if (!pipeline_.charsmap.empty()) {
    const std::string& c = pipeline_.charsmap;
    CPUFT_REQUIRE(c.size() >= 4, where, ": precompiled_charsmap is shorter than its header");
    uint32_t trie_bytes = 0;
    for (int k = 3; k >= 0; --k) trie_bytes = (trie_bytes << 8) | static_cast<unsigned char>(c[k]);
    CPUFT_REQUIRE(trie_bytes <= c.size() - 4, where, ": precompiled_charsmap: trie size ",
                  trie_bytes, " exceeds the ", c.size() - 4, " bytes after the header");
    charsmap_units_.resize(trie_bytes / 4);
    for (size_t u = 0; u < charsmap_units_.size(); ++u) {
      uint32_t v = 0;
      for (int k = 3; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(c[4 + 4 * u + k]);
      charsmap_units_[u] = v;
    }
    charsmap_text_begin_ = 4 + trie_bytes / 4 * 4;
    CPUFT_REQUIRE(valid_utf8(charsmap_text()), where,
                  ": precompiled_charsmap: its strings are not valid UTF-8");
  }
  // Added tokens: ids in range, and the post-processor's special tokens counted.
  int64_t max_id = static_cast<int64_t>(vocab_.size()) - 1;
  for (const AddedToken& a : added_) max_id = std::max<int64_t>(max_id, a.id);
  vocab_size_ = max_id + 1;
  auto count = [&](const std::vector<TemplateItem>& items, int n_sequences) {
    int n = 0, seen = 0;
    for (const TemplateItem& item : items) {
      if (item.sequence >= 0) {
        CPUFT_REQUIRE(item.sequence < n_sequences, where,
                      ": the single-sequence template uses sequence B");
        seen |= 1 << item.sequence;
        continue;
      }
      for (int32_t id : item.ids) {
        CPUFT_REQUIRE(id >= 0 && id < vocab_size_, where, ": template special token id ", id,
                      " is not in the vocabulary");
      }
      n += static_cast<int>(item.ids.size());
    }
    CPUFT_REQUIRE(seen == (1 << n_sequences) - 1, where, ": the template misses a sequence");
    return n;
  };
  n_special_single_ = count(pipeline_.single, 1);
  n_special_pair_ = count(pipeline_.pair, 2);
  // Normalized added tokens are looked for in normalized text, by their normalized form.
  added_match_.clear();
  for (const AddedToken& a : added_) {
    added_match_.push_back(a.content);
    if (a.normalized) normalize(a.content, added_match_.back());
  }
}

const std::string& UnigramTokenizer::token(int32_t id) const {
  for (const AddedToken& a : added_)
    if (a.id == id) return a.content;
  CPUFT_REQUIRE(id >= 0 && static_cast<size_t>(id) < vocab_.size(), "token id ", id,
                " out of range");
  return vocab_[static_cast<size_t>(id)].first;
}

// -----------------------------------------------------------------------------------------------
// Tokenizing.

// tokenizers' Precompiled::transform: walks the double array over `key` (stopping at a NUL
// byte) and returns the replacement of the FIRST, i.e. shortest, prefix with a value; nullptr when
// none. Out-of-range units end the walk (tokenizers would panic on such a blob).
const char* UnigramTokenizer::charsmap_lookup(const unsigned char* key, size_t n) const {
  const std::vector<uint32_t>& a = charsmap_units_;
  if (a.empty()) return nullptr;
  auto offset = [](uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); };
  size_t node = offset(a[0]);
  for (size_t i = 0; i < n && key[i] != 0; ++i) {
    node ^= key[i];
    if (node >= a.size()) return nullptr;
    const uint32_t unit = a[node];
    if ((unit & ((1u << 31) | 0xFF)) != key[i]) return nullptr;
    node ^= offset(unit);
    if ((unit >> 8) & 1) {  // has a leaf: its value is the offset of the replacement
      if (node >= a.size()) return nullptr;
      const std::string_view text = charsmap_text();
      const size_t value = a[node] & ((1u << 31) - 1);
      CPUFT_REQUIRE(
          value <= text.size() &&
              (value == text.size() || (static_cast<unsigned char>(text[value]) & 0xC0) != 0x80),
          where_, ": precompiled_charsmap: a replacement offset (", value,
          ") is outside its strings");
      return text.data() + value;
    }
  }
  return nullptr;
}

void UnigramTokenizer::normalize(std::string_view piece, std::string& out) const {
  out.clear();
  if (charsmap_units_.empty()) {
    out.assign(piece);
  } else {
    std::u32string cps;
    std::vector<uint32_t> offsets;
    decode(piece, cps, offsets);
    const auto* bytes = reinterpret_cast<const unsigned char*>(piece.data());
    const std::string_view text = charsmap_text();
    const char* text_end = text.data() + text.size();
    auto append_replacement = [&](const char* r) {
      const char* e = r;
      while (e != text_end && *e != 0) ++e;
      out.append(r, e);
    };
    GraphemeState state;
    size_t i = 0;
    while (i < cps.size()) {
      // The grapheme cluster [i, j).
      uint8_t prev = properties(cps[i]);
      advance_state(state, prev);
      size_t j = i + 1;
      while (j < cps.size()) {
        const uint8_t cur = properties(cps[j]);
        if (is_break(state, prev, cur)) break;
        advance_state(state, cur);
        prev = cur;
        ++j;
      }
      const size_t begin = offsets[i], end = offsets[j];
      const char* r = end - begin < 6 ? charsmap_lookup(bytes + begin, end - begin) : nullptr;
      if (r) {
        append_replacement(r);
      } else {
        for (size_t k = i; k < j; ++k) {
          const char* rc = charsmap_lookup(bytes + offsets[k], offsets[k + 1] - offsets[k]);
          if (rc) {
            append_replacement(rc);
          } else {
            out.append(piece.substr(offsets[k], offsets[k + 1] - offsets[k]));
          }
        }
      }
      i = j;
    }
  }
  if (pipeline_.collapse_spaces) {
    size_t w = 0;
    for (size_t r = 0; r < out.size(); ++r) {
      if (out[r] == ' ' && w > 0 && out[w - 1] == ' ' && r > 0 && out[r - 1] == ' ') continue;
      out[w++] = out[r];
    }
    out.resize(w);
  }
}

// Viterbi over the pieces, as tokenizers' Unigram::encode_optimized: for every character start,
// every vocabulary prefix extends the best path ending there; a strictly better score replaces
// the one found first; a character that no one-character piece covers gets <unk>'s score.
void UnigramTokenizer::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return;
  struct Best {
    double score = 0;
    int64_t start = -1;
    int32_t id = 0;
  };
  std::vector<Best> best(word.size() + 1);
  const auto* bytes = reinterpret_cast<const unsigned char*>(word.data());
  char32_t cp = 0;
  for (size_t start = 0; start < word.size();) {
    const size_t mblen = decode_utf8_at(word, start, &cp);
    CPUFT_CHECK(mblen > 0);
    const double base = best[start].score;
    bool has_single = false;
    uint32_t node = 0;
    for (size_t k = start; k < word.size(); ++k) {
      const TrieNode& n = trie_[node];
      const TrieEdge* first = edges_.data() + n.first_edge;
      const TrieEdge* last = first + n.n_edges;
      const TrieEdge* e = std::lower_bound(
          first, last, bytes[k], [](const TrieEdge& x, unsigned char b) { return x.byte < b; });
      if (e == last || e->byte != bytes[k]) break;
      node = e->node;
      const int32_t id = trie_[node].id;
      if (id < 0) continue;
      const size_t end = k + 1;
      const double candidate = base + vocab_[static_cast<size_t>(id)].second;
      Best& target = best[end];
      if (target.start < 0 || candidate > target.score) {
        target.score = candidate;
        target.start = static_cast<int64_t>(start);
        target.id = id;
      }
      if (end - start == mblen) has_single = true;
    }
    if (!has_single) {
      Best& target = best[start + mblen];
      const double candidate = base + unk_score_;
      if (target.start < 0 || candidate > target.score) {
        target.score = candidate;
        target.start = static_cast<int64_t>(start);
        target.id = unk_id_;
      }
    }
    start += mblen;
  }
  // Back from the end; runs of unknown pieces fuse into one token, looked up as a whole.
  const size_t first = ids.size();
  size_t end = word.size();
  size_t unk_end = 0;
  bool in_unk = false;
  auto flush_unk = [&](size_t unk_begin) {
    const auto it = ids_.find(word.substr(unk_begin, unk_end - unk_begin));
    ids.push_back(it != ids_.end() ? it->second : unk_id_);
    in_unk = false;
  };
  while (end > 0) {
    const Best& b = best[end];
    const auto start = static_cast<size_t>(b.start);
    if (b.id == unk_id_) {
      if (!in_unk) {
        in_unk = true;
        unk_end = end;
      }
    } else {
      if (in_unk) flush_unk(end);
      ids.push_back(b.id);
    }
    end = start;
  }
  if (in_unk) flush_unk(0);
  std::reverse(ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end());
}

// tokenizers' AddedVocabulary::find_matches over the tokens of one pass (normalized or not):
// leftmost-longest matches; lstrip/rstrip take the White_Space beside them (not what an earlier
// match took). Calls on_text for each stretch between matches and appends the matches' ids.
void UnigramTokenizer::split_added(std::string_view text, bool normalized_pass,
                                   const std::function<void(std::string_view)>& on_text,
                                   std::vector<int32_t>& ids) const {
  size_t piece = 0, i = 0;
  while (i < text.size()) {
    const AddedToken* match = nullptr;
    size_t match_len = 0;
    for (size_t k = 0; k < added_.size(); ++k) {
      const AddedToken& a = added_[k];
      const std::string& m = added_match_[k];
      if (a.normalized != normalized_pass || m.empty()) continue;
      if (m.size() > match_len && text.compare(i, m.size(), m) == 0) {
        match = &a;
        match_len = m.size();
      }
    }
    if (!match) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + match_len;
    if (match->lstrip) {
      // Back over White_Space characters, not before the end of the previous match.
      size_t s = start;
      while (s > piece) {
        size_t c = s - 1;
        while (c > piece && (static_cast<unsigned char>(text[c]) & 0xC0) == 0x80) --c;
        char32_t cp = 0;
        if (decode_utf8_at(text, c, &cp) == 0 || !is_white_space(cp)) break;
        s = c;
      }
      start = s;
    }
    if (match->rstrip) {
      char32_t cp = 0;
      while (stop < text.size()) {
        const size_t len = decode_utf8_at(text, stop, &cp);
        if (len == 0 || !is_white_space(cp)) break;
        stop += len;
      }
    }
    if (piece < start) on_text(text.substr(piece, start - piece));
    ids.push_back(match->id);
    piece = stop;
    i = std::max(stop, i + match_len);
  }
  if (piece < text.size()) on_text(text.substr(piece));
}

std::vector<int32_t> UnigramTokenizer::tokenize(std::string_view text) const {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string_view::npos) throw Error(str("invalid UTF-8 at byte ", bad));
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::string normalized, word;
  const std::string& rep = pipeline_.replacement;
  auto pre_tokenize = [&](std::string_view part) {
    // Metaspace on one piece: ' ' -> replacement, prepend, split before each replacement.
    auto metaspace = [&](std::string_view w) {
      if (!pipeline_.metaspace) {
        encode_word(w, ids);
        return;
      }
      word.clear();
      // Spaces become the replacement first, so a leading space counts as a leading replacement.
      const bool starts = (!w.empty() && w[0] == ' ') || w.substr(0, rep.size()) == rep;
      if (pipeline_.prepend && !starts) word = rep;
      for (char c : w) {
        if (c == ' ') {
          word += rep;
        } else {
          word.push_back(c);
        }
      }
      if (!pipeline_.metaspace_split) {
        encode_word(word, ids);
        return;
      }
      size_t from = 0;
      for (size_t at = word.find(rep, rep.size()); at != std::string::npos;
           at = word.find(rep, at + rep.size())) {
        encode_word(std::string_view(word).substr(from, at - from), ids);
        from = at;
      }
      encode_word(std::string_view(word).substr(from), ids);
    };
    if (!pipeline_.whitespace_split) {
      if (!part.empty()) metaspace(part);
      return;
    }
    char32_t cp = 0;
    size_t w = 0;
    for (size_t i = 0; i < part.size();) {
      const size_t len = decode_utf8_at(part, i, &cp);
      if (is_white_space(cp)) {
        if (w < i) metaspace(part.substr(w, i - w));
        w = i + len;
      }
      i += len;
    }
    if (w < part.size()) metaspace(part.substr(w));
  };
  split_added(
      text, /*normalized_pass=*/false,
      [&](std::string_view raw) {
        normalize(raw, normalized);
        split_added(normalized, /*normalized_pass=*/true, pre_tokenize, ids);
      },
      ids);
  return ids;
}

std::vector<std::string> UnigramTokenizer::tokenize_to_strings(std::string_view text) const {
  std::vector<std::string> out;
  for (const int32_t id : tokenize(text)) out.push_back(token(id));
  return out;
}

Encoding UnigramTokenizer::encode(std::string_view a, const std::string_view* b,
                                  int max_length) const {
  std::vector<int32_t> ids_a = tokenize(a);
  std::vector<int32_t> ids_b;
  if (b) ids_b = tokenize(*b);
  const int n_special = b ? n_special_pair_ : n_special_single_;
  if (max_length >= 0) {
    CPUFT_REQUIRE(max_length >= n_special, "max_length ", max_length, " cannot hold the ",
                  n_special, " special tokens");
    truncate_longest_first(ids_a, b ? &ids_b : nullptr,
                           static_cast<size_t>(max_length - n_special));
  }
  Encoding e;
  e.input_ids.reserve(ids_a.size() + ids_b.size() + static_cast<size_t>(n_special));
  for (const TemplateItem& item : b ? pipeline_.pair : pipeline_.single) {
    const std::vector<int32_t>& src =
        item.sequence < 0 ? item.ids : (item.sequence == 0 ? ids_a : ids_b);
    e.input_ids.insert(e.input_ids.end(), src.begin(), src.end());
    e.token_type_ids.resize(e.input_ids.size(), item.type_id);
  }
  return e;
}

std::string UnigramTokenizer::summary() const {
  return str("Unigram (SentencePiece), ", source_, ", ", vocab_size_, " tokens",
             pipeline_.charsmap.empty() ? ", no normalizer" : ", precompiled charsmap");
}

// -----------------------------------------------------------------------------------------------
// Saving.

void UnigramTokenizer::save(const std::string& dir) const {
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  CPUFT_REQUIRE(!ec, dir, ": cannot create directory: ", ec.message());
  const Pipeline& p = pipeline_;
  // The pipeline transformers' XLMRobertaTokenizer class builds itself; when ours is another,
  // the config names the generic class, which takes tokenizer.json as it is.
  const bool xlmr_class = is_xlmr_class_pipeline();

  json tj;
  tj["version"] = "1.0";
  tj["truncation"] = nullptr;
  tj["padding"] = nullptr;
  json added = json::array();
  for (const AddedToken& a : added_) {
    added.push_back({{"id", a.id},
                     {"content", a.content},
                     {"single_word", false},
                     {"lstrip", a.lstrip},
                     {"rstrip", a.rstrip},
                     {"normalized", a.normalized},
                     {"special", a.special}});
  }
  tj["added_tokens"] = added;
  json normalizers = json::array();
  if (!p.charsmap.empty())
    normalizers.push_back(
        {{"type", "Precompiled"}, {"precompiled_charsmap", base64_encode(p.charsmap)}});
  if (p.collapse_spaces)
    normalizers.push_back(
        {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}});
  tj["normalizer"] = normalizers.empty() ? json(nullptr)
                     : normalizers.size() == 1
                         ? normalizers[0]
                         : json{{"type", "Sequence"}, {"normalizers", normalizers}};
  json metaspace = {{"type", "Metaspace"},
                    {"replacement", p.replacement},
                    {"prepend_scheme", p.prepend ? "always" : "never"},
                    {"split", p.metaspace_split}};
  json pre = json::array();
  if (p.whitespace_split) pre.push_back({{"type", "WhitespaceSplit"}});
  if (p.metaspace) pre.push_back(metaspace);
  tj["pre_tokenizer"] = pre.empty()       ? json(nullptr)
                        : pre.size() == 1 ? pre[0]
                                          : json{{"type", "Sequence"}, {"pretokenizers", pre}};
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
  tj["decoder"] = p.metaspace ? metaspace : json(nullptr);
  json vocab = json::array();
  for (const auto& [piece, score] : vocab_) vocab.push_back({piece, score});
  tj["model"] = {
      {"type", "Unigram"}, {"unk_id", unk_id_}, {"vocab", vocab}, {"byte_fallback", false}};
  write_file(root / kJsonFile, tj.dump(2, ' ', false, json::error_handler_t::strict) + "\n");

  bool mask_lstrip = false, mask_rstrip = false;
  for (const AddedToken& a : added_) {
    if (a.content == mask_) {
      mask_lstrip = a.lstrip;
      mask_rstrip = a.rstrip;
    }
  }
  json special = json::object();
  if (!bos_.empty()) special["bos_token"] = special["cls_token"] = bos_;
  if (!eos_.empty()) special["eos_token"] = special["sep_token"] = eos_;
  if (!unk_.empty()) special["unk_token"] = unk_;
  if (!pad_.empty()) special["pad_token"] = pad_;
  if (!mask_.empty()) {
    special["mask_token"] = {{"content", mask_},
                             {"lstrip", mask_lstrip},
                             {"rstrip", mask_rstrip},
                             {"normalized", false},
                             {"single_word", false}};
  }
  json config = special;
  config["tokenizer_class"] = xlmr_class ? "XLMRobertaTokenizer" : "TokenizersBackend";
  config["add_prefix_space"] = p.prepend;
  config["model_max_length"] = model_max_length_;
  write_file(root / "tokenizer_config.json", config.dump(2) + "\n");
  write_file(root / "special_tokens_map.json", special.dump(2) + "\n");
  if (!spm_model_.empty()) write_file(root / kSpmFile, spm_model_);
}

}  // namespace cpuft
