#include "data/wordpiece_tokenizer.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "data/unicode_tables.h"
#include "data/utf8.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
namespace uni = cpuft::unicode;
using json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Character data lookups.

uint8_t flags_slow(char32_t c) {
  const uni::FlagRange* end = uni::kFlagRanges + uni::kFlagRangeCount;
  const uni::FlagRange* it = std::upper_bound(
      uni::kFlagRanges, end, c, [](char32_t v, const uni::FlagRange& r) { return v < r.first; });
  if (it == uni::kFlagRanges) return 0;
  --it;
  return c <= it->last ? it->flags : 0;
}

// ASCII is most of the text, so its flags sit in a direct table.
const std::array<uint8_t, 128>& ascii_flags() {
  static const std::array<uint8_t, 128> table = [] {
    std::array<uint8_t, 128> t{};
    for (char32_t c = 0; c < 128; ++c) t[c] = flags_slow(c);
    return t;
  }();
  return table;
}

inline uint8_t flags_of(char32_t c) {
  return c < 128 ? ascii_flags()[c] : flags_slow(c);
}

uint8_t combining_class(char32_t c) {
  if (c < 0x300) return 0;  // no combining mark below U+0300
  const uni::CccRange* end = uni::kCccRanges + uni::kCccRangeCount;
  const uni::CccRange* it = std::upper_bound(
      uni::kCccRanges, end, c, [](char32_t v, const uni::CccRange& r) { return v < r.first; });
  if (it == uni::kCccRanges) return 0;
  --it;
  return c <= it->last ? it->ccc : 0;
}

const uni::Mapping* find_mapping(const uni::Mapping* table, size_t count, char32_t c) {
  const uni::Mapping* end = table + count;
  const uni::Mapping* it =
      std::lower_bound(table, end, c, [](const uni::Mapping& m, char32_t v) { return m.cp < v; });
  return it != end && it->cp == c ? it : nullptr;
}

// The "Chinese character" blocks of HF's BertNormalizer (CJK Unified Ideographs and extensions,
// compatibility ideographs). This is HF's own definition, not a Unicode property, so it lives here.
bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Appends the full canonical decomposition of c; returns true if a non-starter was appended (then
// the text needs canonical ordering).
bool append_nfd(char32_t c, std::u32string& out) {
  if (c < 0xC0) {  // nothing below U+00C0 decomposes
    out.push_back(c);
    return false;
  }
  if (c >= uni::kHangulFirst && c <= uni::kHangulLast) {
    constexpr char32_t kL = 0x1100, kV = 0x1161, kT = 0x11A7, kTCount = 28, kNCount = 588;
    const char32_t s = c - uni::kHangulFirst;
    out.push_back(kL + s / kNCount);
    out.push_back(kV + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kT + s % kTCount);
    return false;  // jamo are starters
  }
  bool non_starter = false;
  if (const uni::Mapping* m = find_mapping(uni::kDecomposition, uni::kDecompositionCount, c)) {
    for (uint8_t k = 0; k < m->length; ++k) {
      const char32_t d = uni::kMappingPool[m->offset + k];
      out.push_back(d);
      non_starter = non_starter || combining_class(d) != 0;
    }
  } else {
    out.push_back(c);
    non_starter = combining_class(c) != 0;
  }
  return non_starter;
}

// Canonical ordering (Unicode §3.11): a stable sort by combining class inside every run of
// non-starters. Runs are short, so insertion sort.
void canonical_order(std::u32string& s) {
  size_t i = 0;
  while (i < s.size()) {
    if (combining_class(s[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && combining_class(s[j]) != 0) ++j;
    for (size_t k = i + 1; k < j; ++k) {
      const char32_t v = s[k];
      const uint8_t cv = combining_class(v);
      size_t m = k;
      while (m > i && combining_class(s[m - 1]) > cv) {
        s[m] = s[m - 1];
        --m;
      }
      s[m] = v;
    }
    i = j;
  }
}

inline bool is_continuation(char byte) {
  return (static_cast<unsigned char>(byte) & 0xC0) == 0x80;
}

// Strict UTF-8 (decode_utf8_at in data/utf8.h).
void decode_utf8(std::string_view s, std::u32string& out) {
  out.clear();
  out.reserve(s.size());
  char32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t len = decode_utf8_at(s, i, &cp);
    if (len == 0) throw Error(str("invalid UTF-8 at byte ", i));
    out.push_back(cp);
    i += len;
  }
}

// ---------------------------------------------------------------------------------------------
// Files.

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  CPUFT_REQUIRE(in, path.string(), ": cannot open");
  std::ostringstream buf;
  buf << in.rdbuf();
  CPUFT_REQUIRE(!in.bad(), path.string(), ": read error");
  return buf.str();
}

json parse_json(const fs::path& path) {
  const std::string text = read_file(path);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  CPUFT_REQUIRE(!j.is_discarded(), path.string(), ": not valid JSON");
  CPUFT_REQUIRE(j.is_object(), path.string(), ": expected a JSON object");
  return j;
}

// vocab.txt as transformers reads it: text-mode lines ("\n", "\r\n" and a lone "\r" all end a
// line), the line break removed and nothing else, no line after a final line break.
std::vector<std::string> read_vocab_txt(const fs::path& path) {
  const std::string text = read_file(path);
  std::vector<std::string> vocab;
  std::string line;
  std::u32string scratch;
  auto finish = [&] {
    try {
      decode_utf8(line, scratch);
    } catch (const Error& e) {
      throw Error(str(path.string(), ":", vocab.size() + 1, ": ", e.what()));
    }
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
  CPUFT_REQUIRE(!vocab.empty(), path.string(), ": empty vocabulary");
  return vocab;
}

// The WordPiece vocabulary inside tokenizer.json ("model": {"type": "WordPiece", "vocab": {...}}).
std::vector<std::string> read_tokenizer_json_vocab(const fs::path& path, TokenizerOptions& opt) {
  const json j = parse_json(path);
  const std::string where = path.string();
  CPUFT_REQUIRE(j.contains("model") && j["model"].is_object(), where, ": no 'model' object");
  const json& model = j["model"];
  CPUFT_REQUIRE(model.value("type", std::string()) == "WordPiece", where,
                ": 'model.type' must be \"WordPiece\"");
  CPUFT_REQUIRE(model.contains("vocab") && model["vocab"].is_object(), where,
                ": 'model.vocab' must be an object");
  if (model.contains("continuing_subword_prefix")) {
    CPUFT_REQUIRE(model["continuing_subword_prefix"] == "##", where,
                  ": 'model.continuing_subword_prefix' must be \"##\"");
  }
  if (model.contains("max_input_chars_per_word")) {
    CPUFT_REQUIRE(model["max_input_chars_per_word"].is_number_unsigned(), where,
                  ": 'model.max_input_chars_per_word' must be a non-negative integer");
    opt.max_input_chars_per_word = model["max_input_chars_per_word"].get<int>();
  }
  const json& v = model["vocab"];
  std::vector<std::string> vocab(v.size());
  std::vector<bool> seen(v.size(), false);
  for (const auto& [token, id] : v.items()) {
    CPUFT_REQUIRE(id.is_number_unsigned() && id.get<uint64_t>() < v.size(), where,
                  ": 'model.vocab' id of '", token, "' must be in [0, ", v.size(), ")");
    const size_t k = id.get<size_t>();
    CPUFT_REQUIRE(!seen[k], where, ": 'model.vocab' id ", k, " is used twice");
    seen[k] = true;
    vocab[k] = token;
  }
  CPUFT_REQUIRE(!vocab.empty(), where, ": empty 'model.vocab'");
  return vocab;
}

// A special token in tokenizer_config.json / special_tokens_map.json: a string or an AddedToken
// object {"content": "...", ...}.
void read_token_field(const json& j, const std::string& where, const char* key, std::string& out) {
  if (!j.contains(key) || j[key].is_null()) return;
  const json& v = j[key];
  if (v.is_string()) {
    out = v.get<std::string>();
  } else {
    CPUFT_REQUIRE(v.is_object() && v.contains("content") && v["content"].is_string(), where,
                  ": field '", key, "' must be a string or an object with a string 'content'");
    out = v["content"].get<std::string>();
  }
  CPUFT_REQUIRE(!out.empty(), where, ": field '", key, "' is empty");
}

void read_bool_field(const json& j, const std::string& where, const char* key, bool& out) {
  if (!j.contains(key) || j[key].is_null()) return;
  CPUFT_REQUIRE(j[key].is_boolean(), where, ": field '", key, "' must be true or false");
  out = j[key].get<bool>();
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  CPUFT_REQUIRE(out, path.string(), ": cannot create");
  out << text;
  out.close();
  CPUFT_REQUIRE(out, path.string(), ": write error");
}

}  // namespace

// -----------------------------------------------------------------------------------------------

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, TokenizerOptions options)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  CPUFT_REQUIRE(!vocab_.empty(), "tokenizer: empty vocabulary");
  CPUFT_REQUIRE(vocab_.size() <= static_cast<size_t>(INT32_MAX), "tokenizer: vocabulary too big");
  CPUFT_REQUIRE(options_.max_input_chars_per_word >= 0,
                "tokenizer: max_input_chars_per_word must be >= 0");
  ids_.reserve(vocab_.size());
  for (size_t i = 0; i < vocab_.size(); ++i) {
    ids_.insert_or_assign(vocab_[i], static_cast<int32_t>(i));  // last id wins, as in HF
    max_token_bytes_ = std::max(max_token_bytes_, vocab_[i].size());
  }
  strip_accents_ = options_.strip_accents.value_or(options_.do_lower_case);
  unk_id_ = require_id(options_.unk_token, "unk_token");
  cls_id_ = require_id(options_.cls_token, "cls_token");
  sep_id_ = require_id(options_.sep_token, "sep_token");
  pad_id_ = require_id(options_.pad_token, "pad_token");
  mask_id_ = require_id(options_.mask_token, "mask_token");
  std::u32string text;
  for (const std::string* t : {&options_.pad_token, &options_.unk_token, &options_.cls_token,
                               &options_.sep_token, &options_.mask_token}) {
    decode_utf8(*t, text);
    special_text_.push_back(text);
    special_ids_.push_back(ids_.find(*t)->second);
  }
}

int32_t WordPieceTokenizer::require_id(const std::string& token, const char* what) const {
  CPUFT_REQUIRE(!token.empty(), "tokenizer: ", what, " is empty");
  auto it = ids_.find(token);
  CPUFT_REQUIRE(it != ids_.end(), "tokenizer: ", what, " '", token, "' is not in the vocabulary");
  return it->second;
}

WordPieceTokenizer WordPieceTokenizer::from_folder(const std::string& dir) {
  const fs::path root(dir);
  CPUFT_REQUIRE(fs::is_directory(root), dir, ": not a directory");
  TokenizerOptions opt;
  std::vector<std::string> vocab;
  if (fs::exists(root / "vocab.txt")) {
    vocab = read_vocab_txt(root / "vocab.txt");
  } else {
    CPUFT_REQUIRE(fs::exists(root / "tokenizer.json"), dir,
                  ": neither vocab.txt nor tokenizer.json found");
    vocab = read_tokenizer_json_vocab(root / "tokenizer.json", opt);
  }
  // special_tokens_map.json first, tokenizer_config.json overrides: transformers gives the
  // tokenizer_config values precedence.
  const fs::path map_path = root / "special_tokens_map.json";
  const fs::path config_path = root / "tokenizer_config.json";
  for (const fs::path& p : {map_path, config_path}) {
    if (!fs::exists(p)) continue;
    const json j = parse_json(p);
    const std::string where = p.string();
    read_token_field(j, where, "unk_token", opt.unk_token);
    read_token_field(j, where, "cls_token", opt.cls_token);
    read_token_field(j, where, "sep_token", opt.sep_token);
    read_token_field(j, where, "pad_token", opt.pad_token);
    read_token_field(j, where, "mask_token", opt.mask_token);
    if (p != config_path) continue;
    read_bool_field(j, where, "do_lower_case", opt.do_lower_case);
    read_bool_field(j, where, "tokenize_chinese_chars", opt.tokenize_chinese_chars);
    if (j.contains("strip_accents") && !j["strip_accents"].is_null()) {
      bool strip = false;
      read_bool_field(j, where, "strip_accents", strip);
      opt.strip_accents = strip;
    }
    if (j.contains("model_max_length") && j["model_max_length"].is_number_integer()) {
      // HF writes a huge sentinel (1e30) when there is no limit; keep only sensible values.
      const int64_t m = j["model_max_length"].get<int64_t>();
      if (m > 0 && m <= INT32_MAX) opt.model_max_length = static_cast<int>(m);
    }
  }
  try {
    return WordPieceTokenizer(std::move(vocab), std::move(opt));
  } catch (const Error& e) {
    throw Error(str(dir, ": ", e.what()));
  }
}

void WordPieceTokenizer::normalize(const char32_t* begin, const char32_t* end,
                                   std::u32string& out) const {
  out.clear();
  bool needs_ordering = false;
  const bool cjk = options_.tokenize_chinese_chars;
  for (const char32_t* p = begin; p != end; ++p) {
    const char32_t c = *p;
    const uint8_t f = flags_of(c);
    if (f & uni::kDrop) continue;
    if (f & uni::kSpace) {
      out.push_back(U' ');
      continue;
    }
    const bool pad = cjk && c >= 0x3400 && is_cjk(c);
    if (pad) out.push_back(U' ');
    if (strip_accents_) {
      needs_ordering |= append_nfd(c, out);
    } else {
      out.push_back(c);
    }
    if (pad) out.push_back(U' ');
  }
  if (strip_accents_) {
    // HF runs NFD on the whole text and only then drops the marks, so order first.
    if (needs_ordering) canonical_order(out);
    std::erase_if(out, [](char32_t c) { return c >= 0x300 && (flags_of(c) & uni::kMark); });
  }
  if (options_.do_lower_case) {
    size_t i = 0;
    for (; i < out.size(); ++i) {  // in place while every character maps to one
      const char32_t c = out[i];
      if (c < 128) {
        if (c >= U'A' && c <= U'Z') out[i] = c + 32;
      } else if (const auto* m = find_mapping(uni::kLowercase, uni::kLowercaseCount, c)) {
        if (m->length != 1) break;
        out[i] = uni::kMappingPool[m->offset];
      }
    }
    if (i < out.size()) {  // a multi-character lowercase (e.g. U+0130): rebuild the rest
      std::u32string rest;
      for (size_t k = i; k < out.size(); ++k) {
        const char32_t c = out[k];
        const auto* m = c < 128 ? nullptr : find_mapping(uni::kLowercase, uni::kLowercaseCount, c);
        if (m) {
          rest.append(uni::kMappingPool + m->offset, m->length);
        } else {
          rest.push_back(c >= U'A' && c <= U'Z' ? c + 32 : c);
        }
      }
      out.resize(i);
      out += rest;
    }
  }
}

void WordPieceTokenizer::split_words(const std::u32string& text, std::vector<int32_t>& ids) const {
  std::string word;
  size_t n_chars = 0;
  auto flush = [&] {
    if (n_chars == 0) return;
    word_piece(word, n_chars, ids);
    word.clear();
    n_chars = 0;
  };
  for (const char32_t c : text) {
    const uint8_t f = flags_of(c);
    if (f & uni::kSpace) {
      flush();
    } else if (f & uni::kPunct) {
      flush();
      append_utf8(word, c);
      n_chars = 1;
      flush();
    } else {
      append_utf8(word, c);
      ++n_chars;
    }
  }
  flush();
}

void WordPieceTokenizer::word_piece(std::string_view word, size_t n_chars,
                                    std::vector<int32_t>& ids) const {
  if (n_chars > static_cast<size_t>(options_.max_input_chars_per_word)) {
    ids.push_back(unk_id_);
    return;
  }
  const size_t first = ids.size();
  std::string key;
  size_t start = 0;
  while (start < word.size()) {
    const size_t prefix = start == 0 ? 0 : 2;
    // No vocabulary entry is longer than max_token_bytes_, so longer candidates cannot match.
    const size_t room = max_token_bytes_ > prefix ? max_token_bytes_ - prefix : 0;
    size_t end = word.size();
    if (end - start > room) {
      end = start + room;
      while (end > start && is_continuation(word[end])) --end;  // back to a character boundary
    }
    int32_t found = -1;
    while (end > start) {
      IdMap::const_iterator it;
      if (prefix == 0) {
        it = ids_.find(word.substr(0, end));
      } else {
        key.assign("##");
        key.append(word.substr(start, end - start));
        it = ids_.find(std::string_view(key));
      }
      if (it != ids_.end()) {
        found = it->second;
        break;
      }
      do {
        --end;
      } while (end > start && is_continuation(word[end]));
    }
    if (found < 0) {  // the rest matches nothing: the whole word is unknown
      ids.resize(first);
      ids.push_back(unk_id_);
      return;
    }
    ids.push_back(found);
    start = end;
  }
}

std::vector<int32_t> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::u32string chars, normalized;
  decode_utf8(text, chars);
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 4 + 4);
  // Special tokens are matched in the raw text, before any normalization, as HF's added
  // vocabulary does; the text between them is tokenized on its own.
  size_t piece = 0;
  for (size_t i = 0; i < chars.size();) {
    size_t best = 0, best_len = 0;
    for (size_t k = 0; k < special_text_.size(); ++k) {
      const std::u32string& s = special_text_[k];
      if (s.size() > best_len && chars[i] == s[0] &&
          std::u32string_view(chars).substr(i, s.size()) == s) {
        best = k;
        best_len = s.size();
      }
    }
    if (best_len == 0) {
      ++i;
      continue;
    }
    normalize(chars.data() + piece, chars.data() + i, normalized);
    split_words(normalized, ids);
    ids.push_back(special_ids_[best]);
    i += best_len;
    piece = i;
  }
  normalize(chars.data() + piece, chars.data() + chars.size(), normalized);
  split_words(normalized, ids);
  return ids;
}

std::vector<std::string> WordPieceTokenizer::tokenize_to_strings(std::string_view text) const {
  std::vector<std::string> out;
  for (const int32_t id : tokenize(text)) out.push_back(vocab_[static_cast<size_t>(id)]);
  return out;
}

Encoding WordPieceTokenizer::encode(std::string_view a, const std::string_view* b,
                                    int max_length) const {
  std::vector<int32_t> ids_a = tokenize(a);
  std::vector<int32_t> ids_b;
  if (b) ids_b = tokenize(*b);
  const int n_special = b ? 3 : 2;
  if (max_length >= 0) {
    CPUFT_REQUIRE(max_length >= n_special, "max_length ", max_length, " cannot hold the ",
                  n_special, " special tokens");
    truncate_longest_first(ids_a, b ? &ids_b : nullptr,
                           static_cast<size_t>(max_length - n_special));
  }
  Encoding e;
  e.input_ids.reserve(ids_a.size() + ids_b.size() + 3);
  e.input_ids.push_back(cls_id_);
  e.input_ids.insert(e.input_ids.end(), ids_a.begin(), ids_a.end());
  e.input_ids.push_back(sep_id_);
  e.token_type_ids.assign(e.input_ids.size(), 0);
  if (b) {
    e.input_ids.insert(e.input_ids.end(), ids_b.begin(), ids_b.end());
    e.input_ids.push_back(sep_id_);
    e.token_type_ids.resize(e.input_ids.size(), 1);
  }
  return e;
}

std::string WordPieceTokenizer::summary() const {
  return str("WordPiece, ", vocab_.size(), " tokens, ",
             options_.do_lower_case ? "lower-cased" : "cased");
}

void WordPieceTokenizer::save(const std::string& dir) const {
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  CPUFT_REQUIRE(!ec, dir, ": cannot create directory: ", ec.message());
  std::string vocab_text;
  for (const std::string& t : vocab_) {
    vocab_text += t;
    vocab_text += '\n';
  }
  write_file(root / "vocab.txt", vocab_text);
  json special = {{"unk_token", options_.unk_token},
                  {"sep_token", options_.sep_token},
                  {"pad_token", options_.pad_token},
                  {"cls_token", options_.cls_token},
                  {"mask_token", options_.mask_token}};
  json config = special;
  config["tokenizer_class"] = "BertTokenizer";
  config["do_lower_case"] = options_.do_lower_case;
  config["strip_accents"] = options_.strip_accents ? json(*options_.strip_accents) : json(nullptr);
  config["tokenize_chinese_chars"] = options_.tokenize_chinese_chars;
  config["model_max_length"] = options_.model_max_length;
  write_file(root / "tokenizer_config.json", config.dump(2) + "\n");
  write_file(root / "special_tokens_map.json", special.dump(2) + "\n");
}

}  // namespace cpuft
