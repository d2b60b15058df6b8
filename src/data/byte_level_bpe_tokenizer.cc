#include "data/byte_level_bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/atomic_file.h"
#include "core/check.h"
#include "data/byte_level_tables.h"
#include "data/unicode_normalize.h"
#include "data/utf8.h"

namespace cpuft {
namespace {

namespace fs = std::filesystem;
namespace bl = cpuft::byte_level;
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// Ids must fit int32 with room for vocab_size() = max id + 1; a vocabulary may leave holes, but
// not so many that max id says nothing of its size (hostile files).
constexpr int64_t kMaxId = std::numeric_limits<int32_t>::max() - 1;
constexpr size_t kMaxHoles = 1 << 20;

// ---------------------------------------------------------------------------------------------
// Characters.

uint8_t class_slow(char32_t c) {
  const bl::ClassRange* end = bl::kClassRanges + bl::kClassRangeCount;
  const bl::ClassRange* it = std::upper_bound(
      bl::kClassRanges, end, c, [](char32_t v, const bl::ClassRange& r) { return v < r.first; });
  if (it == bl::kClassRanges) return static_cast<uint8_t>(bl::kOther);
  --it;
  return c <= it->last ? it->cls : static_cast<uint8_t>(bl::kOther);
}

const std::array<uint8_t, 128>& ascii_classes() {
  static const std::array<uint8_t, 128> table = [] {
    std::array<uint8_t, 128> t{};
    for (char32_t c = 0; c < 128; ++c) t[c] = class_slow(c);
    return t;
  }();
  return table;
}

inline uint8_t class_of(char32_t c) {
  return c < 128 ? ascii_classes()[c] : class_slow(c);
}

// GPT-2's bytes-to-unicode map: printable Latin-1 bytes stand for themselves, the other 68 bytes
// (controls, space, DEL, NBSP, soft hyphen) for U+0100.. in byte order.
const std::array<std::string, 256>& byte_symbols() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      append_utf8(t[b], printable ? static_cast<char32_t>(b) : next++);
    }
    return t;
  }();
  return table;
}

// The code points of a valid UTF-8 string and the byte offset where each starts (plus the end).
void decode(std::string_view s, std::vector<char32_t>& chars, std::vector<uint32_t>& starts) {
  chars.clear();
  starts.clear();
  char32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t len = decode_utf8_at(s, i, &cp);
    chars.push_back(cp);
    starts.push_back(static_cast<uint32_t>(i));
    i += len;
  }
  starts.push_back(static_cast<uint32_t>(s.size()));
}

// The GPT-2 pattern  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// as the regex engine runs it: at each position the first alternative that matches, each
// greedy. Every character is covered by some alternative, so the words tile the text. Calls
// emit(first char, end char) for each word.
template <typename Emit>
void split_gpt2(const std::vector<char32_t>& c, Emit&& emit) {
  const size_t n = c.size();
  size_t i = 0;
  while (i < n) {
    if (c[i] == U'\'' && i + 1 < n) {
      const char32_t a = c[i + 1];
      if (a == U's' || a == U't' || a == U'm' || a == U'd') {
        emit(i, i + 2);
        i += 2;
        continue;
      }
      if (i + 2 < n) {
        const char32_t b = c[i + 2];
        if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) {
          emit(i, i + 3);
          i += 3;
          continue;
        }
      }
    }
    const size_t j = c[i] == U' ' ? i + 1 : i;
    if (j < n) {
      const uint8_t cls = class_of(c[j]);
      if (cls != bl::kSpace) {  // a letter, number or other run, with the space before it
        size_t k = j + 1;
        while (k < n && class_of(c[k]) == cls) ++k;
        emit(i, k);
        i = k;
        continue;
      }
    }
    // Whitespace: a run followed by a non-space leaves its last character to the next word.
    size_t k = i + 1;
    while (k < n && class_of(c[k]) == bl::kSpace) ++k;
    if (k < n && k - i >= 2) --k;
    emit(i, k);
    i = k;
  }
}

// Length in bytes of the whitespace that ends s / starts s.
size_t trailing_space(std::string_view s) {
  size_t i = s.size();
  while (i > 0) {
    size_t p = i - 1;
    while (p > 0 && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
    char32_t cp = 0;
    if (decode_utf8_at(s, p, &cp) != i - p || class_of(cp) != bl::kSpace) break;
    i = p;
  }
  return s.size() - i;
}

size_t leading_space(std::string_view s) {
  size_t i = 0;
  char32_t cp = 0;
  while (i < s.size()) {
    const size_t len = decode_utf8_at(s, i, &cp);
    if (len == 0 || class_of(cp) != bl::kSpace) break;
    i += len;
  }
  return i;
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

json parse_json_text(std::string_view text, const std::string& where) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  CPUFT_REQUIRE(!j.is_discarded(), where, ": not valid JSON");
  CPUFT_REQUIRE(j.is_object(), where, ": expected a JSON object");
  return j;
}

// Atomically (temporary file, fsync, rename): a full disk leaves the old file or none, never a
// truncated one.
void write_file(const fs::path& path, const std::string& text) {
  write_file_atomically(path.string(), text);
}

const json* member(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

bool bool_field(const json& j, const char* key, const std::string& where, const std::string& field,
                bool fallback) {
  const json* v = member(j, key);
  if (!v) return fallback;
  CPUFT_REQUIRE(v->is_boolean(), where, ": '", field, key, "' must be true or false");
  return v->get<bool>();
}

std::string string_field(const json& j, const char* key, const std::string& where,
                         const std::string& field) {
  const json* v = member(j, key);
  CPUFT_REQUIRE(v && v->is_string(), where, ": '", field, key, "' must be a string");
  return v->get<std::string>();
}

int32_t id_value(const json& v, const std::string& where, const std::string& field) {
  CPUFT_REQUIRE(v.is_number_integer() && (v.is_number_unsigned() || v.get<int64_t>() >= 0) &&
                    v.get<uint64_t>() <= static_cast<uint64_t>(kMaxId),
                where, ": ", field, " must be an integer id in [0, ", kMaxId, "]");
  return static_cast<int32_t>(v.get<int64_t>());
}

// An added token as tokenizer.json / added_tokens_decoder write it.
BpeAddedToken added_token_from(const json& j, const std::string& where, const std::string& field,
                               int32_t id) {
  CPUFT_REQUIRE(j.is_object(), where, ": '", field, "' must be an object");
  BpeAddedToken t;
  t.id = id;
  t.content = string_field(j, "content", where, field + ".");
  CPUFT_REQUIRE(!t.content.empty(), where, ": '", field, ".content' is empty");
  CPUFT_REQUIRE(find_invalid_utf8(t.content) == std::string::npos, where, ": '", field,
                ".content' is not valid UTF-8");
  const std::string f = field + ".";
  t.special = bool_field(j, "special", where, f, false);
  t.single_word = bool_field(j, "single_word", where, f, false);
  t.lstrip = bool_field(j, "lstrip", where, f, false);
  t.rstrip = bool_field(j, "rstrip", where, f, false);
  t.normalized = bool_field(j, "normalized", where, f, !t.special);
  return t;
}

// A named special token in tokenizer_config.json / special_tokens_map.json: a string or an
// AddedToken object. Returns false when the key is absent or null.
bool named_token(const json& j, const char* key, const std::string& where, std::string& content,
                 std::optional<BpeAddedToken>& flags) {
  const json* v = member(j, key);
  if (!v) return false;
  if (v->is_string()) {
    content = v->get<std::string>();
    flags.reset();
  } else {
    CPUFT_REQUIRE(v->is_object(), where, ": '", key,
                  "' must be a string or an object with a string 'content'");
    BpeAddedToken t = added_token_from(*v, where, key, 0);
    t.special = true;
    content = t.content;
    flags = t;
  }
  CPUFT_REQUIRE(!content.empty(), where, ": '", key, "' is empty");
  CPUFT_REQUIRE(find_invalid_utf8(content) == std::string::npos, where, ": '", key,
                "' is not valid UTF-8");
  return true;
}

// "a b" (merges.txt line, old tokenizer.json) into its two tokens.
bool split_merge(std::string_view line, std::pair<std::string, std::string>& out) {
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos || line.find(' ', sp + 1) != std::string_view::npos)
    return false;
  out.first.assign(line.substr(0, sp));
  out.second.assign(line.substr(sp + 1));
  return true;
}

struct TokenJson {
  ByteLevelBpeTokenizer::Vocab vocab;
  ByteLevelBpeTokenizer::Merges merges;
  std::vector<BpeAddedToken> added;
  BpeOptions options;  // pipeline as written in the file
};

std::vector<BpeTemplatePiece> parse_template(const json& t, const json& specials,
                                             const std::string& where, const std::string& field) {
  CPUFT_REQUIRE(t.is_array(), where, ": '", field, "' must be an array");
  std::vector<BpeTemplatePiece> out;
  for (size_t k = 0; k < t.size(); ++k) {
    const json& p = t[k];
    const std::string f = str(field, "[", k, "]");
    CPUFT_REQUIRE(p.is_object() && p.size() == 1, where, ": '", f,
                  "' must be {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    BpeTemplatePiece piece;
    if (const json* s = member(p, "Sequence")) {
      CPUFT_REQUIRE(s->is_object(), where, ": '", f, ".Sequence' must be an object");
      const std::string id = string_field(*s, "id", where, f + ".Sequence.");
      CPUFT_REQUIRE(id == "A" || id == "B", where, ": '", f,
                    ".Sequence.id' must be \"A\" or \"B\"");
      piece.sequence = id == "A" ? 0 : 1;
      const json* ty = member(*s, "type_id");
      piece.type_id = ty ? id_value(*ty, where, "'" + f + ".Sequence.type_id'") : 0;
    } else if (const json* st = member(p, "SpecialToken")) {
      CPUFT_REQUIRE(st->is_object(), where, ": '", f, ".SpecialToken' must be an object");
      const std::string id = string_field(*st, "id", where, f + ".SpecialToken.");
      const json* ty = member(*st, "type_id");
      piece.type_id = ty ? id_value(*ty, where, "'" + f + ".SpecialToken.type_id'") : 0;
      const json* sp = specials.is_object() ? member(specials, id.c_str()) : nullptr;
      CPUFT_REQUIRE(sp && sp->is_object(), where, ": '", f, "' names special token '", id,
                    "' that is not in 'post_processor.special_tokens'");
      const json* ids = member(*sp, "ids");
      CPUFT_REQUIRE(ids && ids->is_array() && !ids->empty() && ids->size() <= 64, where,
                    ": 'post_processor.special_tokens.", id, ".ids' must be 1 to 64 ids");
      for (const json& v : *ids)
        piece.ids.push_back(id_value(v, where, "'post_processor.special_tokens." + id + ".ids'"));
    } else {
      throw Error(str(where, ": '", f, "' must be {\"Sequence\": ...} or {\"SpecialToken\": ...}"));
    }
    out.push_back(std::move(piece));
  }
  return out;
}

// The post_processor of tokenizer.json (RobertaProcessing, TemplateProcessing, ByteLevel, null,
// or a Sequence of these).
void parse_post_processor(const json* pp, const std::string& where, BpeOptions& opt, bool& have) {
  if (!pp) return;
  CPUFT_REQUIRE(pp->is_object(), where, ": 'post_processor' must be an object or null");
  const std::string type = string_field(*pp, "type", where, "post_processor.");
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    const json* list = member(*pp, "processors");
    CPUFT_REQUIRE(list && list->is_array(), where,
                  ": 'post_processor.processors' must be an array");
    for (const json& p : *list) parse_post_processor(&p, where, opt, have);
    return;
  }
  CPUFT_REQUIRE(!have, where, ": 'post_processor' has more than one template");
  have = true;
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    int32_t ids[2] = {0, 0};
    const char* keys[2] = {"cls", "sep"};
    for (int k = 0; k < 2; ++k) {
      const json* v = member(*pp, keys[k]);
      CPUFT_REQUIRE(v && v->is_array() && v->size() == 2 && (*v)[0].is_string(), where,
                    ": 'post_processor.", keys[k], "' must be [token, id]");
      ids[k] = id_value((*v)[1], where, str("'post_processor.", keys[k], "[1]'"));
    }
    const BpeTemplatePiece cls{-1, {ids[0]}, 0}, sep{-1, {ids[1]}, 0};
    const int32_t b_type = type == "BertProcessing" ? 1 : 0;
    opt.roberta_processing = false;
    opt.single_template = {cls, {0, {}, 0}, sep};
    if (type == "RobertaProcessing") {
      opt.pair_template = {cls, {0, {}, 0}, sep, sep, {1, {}, 0}, sep};
    } else {
      opt.pair_template = {cls, {0, {}, 0}, sep, {1, {}, b_type}, {-1, {ids[1]}, b_type}};
    }
    return;
  }
  CPUFT_REQUIRE(type == "TemplateProcessing", where, ": 'post_processor.type' \"", type,
                "\" is not supported (RobertaProcessing, TemplateProcessing, ByteLevel)");
  const json* specials = member(*pp, "special_tokens");
  const json empty = json::object();
  const json* single = member(*pp, "single");
  const json* pair = member(*pp, "pair");
  CPUFT_REQUIRE(single && pair, where, ": 'post_processor' needs 'single' and 'pair'");
  opt.roberta_processing = false;
  opt.single_template =
      parse_template(*single, specials ? *specials : empty, where, "post_processor.single");
  opt.pair_template =
      parse_template(*pair, specials ? *specials : empty, where, "post_processor.pair");
}

TokenJson parse_tokenizer_json(std::string_view text, const std::string& where) {
  const json j = parse_json_text(text, where);
  TokenJson out;
  const json* model = member(j, "model");
  CPUFT_REQUIRE(model && model->is_object(), where, ": no 'model' object");
  const json* type = member(*model, "type");
  CPUFT_REQUIRE(type && type->is_string(), where, ": 'model.type' must be a string");
  CPUFT_REQUIRE(*type == "BPE", where, ": 'model.type' \"", type->get<std::string>(),
                "\" is not handled by the byte-level BPE tokenizer");
  // vocab
  const json* vocab = member(*model, "vocab");
  CPUFT_REQUIRE(vocab && vocab->is_object(), where, ": 'model.vocab' must be an object");
  out.vocab.reserve(vocab->size());
  for (const auto& [token, id] : vocab->items())
    out.vocab.emplace_back(token, id_value(id, where, "'model.vocab' id of '" + token + "'"));
  // merges
  const json* merges = member(*model, "merges");
  if (merges) {
    CPUFT_REQUIRE(merges->is_array(), where, ": 'model.merges' must be an array");
    out.merges.reserve(merges->size());
    for (size_t k = 0; k < merges->size(); ++k) {
      const json& m = (*merges)[k];
      std::pair<std::string, std::string> p;
      if (m.is_string()) {
        CPUFT_REQUIRE(split_merge(m.get_ref<const std::string&>(), p), where, ": 'model.merges[", k,
                      "]' must be \"a b\" (two tokens, one space)");
      } else {
        CPUFT_REQUIRE(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), where,
                      ": 'model.merges[", k, "]' must be \"a b\" or [a, b]");
        p = {m[0].get<std::string>(), m[1].get<std::string>()};
      }
      out.merges.push_back(std::move(p));
    }
  }
  BpeOptions& opt = out.options;
  if (const json* d = member(*model, "dropout")) {
    CPUFT_REQUIRE(d->is_number() && d->get<double>() == 0.0, where,
                  ": 'model.dropout' is not supported (BPE dropout is random)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (const json* v = member(*model, key)) {
      CPUFT_REQUIRE(v->is_string() && v->get_ref<const std::string&>().empty(), where, ": 'model.",
                    key, "' must be empty or null (byte-level BPE)");
    }
  }
  CPUFT_REQUIRE(!bool_field(*model, "byte_fallback", where, "model.", false), where,
                ": 'model.byte_fallback' true is not supported (byte-level BPE)");
  opt.fuse_unk = bool_field(*model, "fuse_unk", where, "model.", false);
  opt.ignore_merges = bool_field(*model, "ignore_merges", where, "model.", false);
  if (member(*model, "unk_token"))
    opt.model_unk_token = string_field(*model, "unk_token", where, "model.");
  // normalizer / pre-tokenizer / post-processor
  // GPT-NeoX-style tokenizers (ModernBERT's) put NFC before the byte-level pre-tokenizer.
  if (const json* normalizer = member(j, "normalizer")) {
    CPUFT_REQUIRE(
        normalizer->is_object() && string_field(*normalizer, "type", where, "normalizer.") == "NFC",
        where, ": 'normalizer' must be null or {\"type\": \"NFC\"} (byte-level BPE)");
    opt.nfc = true;
  }
  const json* pre = member(j, "pre_tokenizer");
  CPUFT_REQUIRE(pre && pre->is_object(), where,
                ": 'pre_tokenizer' must be a ByteLevel object (byte-level BPE)");
  CPUFT_REQUIRE(string_field(*pre, "type", where, "pre_tokenizer.") == "ByteLevel", where,
                ": 'pre_tokenizer.type' must be \"ByteLevel\"");
  opt.add_prefix_space = bool_field(*pre, "add_prefix_space", where, "pre_tokenizer.", true);
  opt.trim_offsets = bool_field(*pre, "trim_offsets", where, "pre_tokenizer.", true);
  opt.use_regex = bool_field(*pre, "use_regex", where, "pre_tokenizer.", true);
  bool have = false;
  opt.roberta_processing = false;
  parse_post_processor(member(j, "post_processor"), where, opt, have);
  // added tokens
  if (const json* added = member(j, "added_tokens")) {
    CPUFT_REQUIRE(added->is_array(), where, ": 'added_tokens' must be an array");
    for (size_t k = 0; k < added->size(); ++k) {
      const std::string f = str("added_tokens[", k, "]");
      const json& a = (*added)[k];
      CPUFT_REQUIRE(a.is_object() && member(a, "id"), where, ": '", f, ".id' is missing");
      out.added.push_back(
          added_token_from(a, where, f, id_value(a["id"], where, "'" + f + ".id'")));
    }
  }
  return out;
}

// Merges the token into `list` (by content; a later one replaces an earlier one).
void put_added(std::vector<BpeAddedToken>& list, BpeAddedToken t) {
  for (BpeAddedToken& x : list) {
    if (x.content == t.content) {
      x = std::move(t);
      return;
    }
  }
  list.push_back(std::move(t));
}

ordered_json added_token_json(const BpeAddedToken& t, bool with_id) {
  ordered_json j;
  if (with_id) j["id"] = t.id;
  j["content"] = t.content;
  j["single_word"] = t.single_word;
  j["lstrip"] = t.lstrip;
  j["rstrip"] = t.rstrip;
  j["normalized"] = t.normalized;
  j["special"] = t.special;
  return j;
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// Parsers.

std::string tokenizer_json_model_type(const std::string& path) {
  const json j = parse_json_text(read_file(path), path);
  const json* model = member(j, "model");
  CPUFT_REQUIRE(model && model->is_object(), path, ": no 'model' object");
  const json* type = member(*model, "type");
  if (!type) return "";
  CPUFT_REQUIRE(type->is_string(), path, ": 'model.type' must be a string");
  return type->get<std::string>();
}

ByteLevelBpeTokenizer::Vocab ByteLevelBpeTokenizer::parse_vocab_json(std::string_view text,
                                                                     const std::string& where) {
  const json j = parse_json_text(text, where);
  Vocab vocab;
  vocab.reserve(j.size());
  for (const auto& [token, id] : j.items())
    vocab.emplace_back(token, id_value(id, where, "id of '" + token + "'"));
  CPUFT_REQUIRE(!vocab.empty(), where, ": empty vocabulary");
  return vocab;
}

ByteLevelBpeTokenizer::Merges ByteLevelBpeTokenizer::parse_merges_txt(std::string_view text,
                                                                      const std::string& where) {
  // As tokenizers reads it: lines ending in "\n" or "\r\n", lines starting with "#version"
  // skipped, every other line exactly two tokens with one space between (an empty line is
  // refused by tokenizers; a final line break is not a line).
  Merges merges;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.substr(0, 8) == "#version") continue;
    std::pair<std::string, std::string> m;
    CPUFT_REQUIRE(split_merge(line, m), where, ":", line_no,
                  ": a merge must be two tokens separated by one space");
    merges.push_back(std::move(m));
  }
  return merges;
}

// -----------------------------------------------------------------------------------------------

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(Vocab vocab, const Merges& merges,
                                             std::vector<BpeAddedToken> added, BpeOptions options,
                                             const std::string& where,
                                             const std::string& merges_where_arg)
    : added_(std::move(added)), options_(std::move(options)) {
  CPUFT_REQUIRE(!vocab.empty(), where, ": empty vocabulary");
  // Vocabulary: distinct tokens (JSON objects guarantee it) and distinct ids.
  vocab_.reserve(vocab.size());
  std::unordered_map<int32_t, const std::string*> by_id;
  by_id.reserve(vocab.size());
  for (auto& [token, id] : vocab) {
    CPUFT_REQUIRE(id >= 0 && id <= kMaxId, where, ": id ", id, " of '", token, "' out of range");
    auto [it, fresh] = by_id.emplace(id, &token);
    CPUFT_REQUIRE(fresh, where, ": id ", id, " is used by both '", *it->second, "' and '", token,
                  "'");
    max_id_ = std::max(max_id_, id);
  }
  for (auto& [token, id] : vocab) vocab_.insert_or_assign(std::move(token), id);
  // Merges: both tokens and their concatenation must be in the vocabulary (tokenizers refuses the
  // model otherwise); a pair listed twice keeps its last rank.
  const std::string& merges_where = merges_where_arg.empty() ? where : merges_where_arg;
  CPUFT_REQUIRE(merges.size() < (size_t{1} << 31), merges_where, ": too many merges");
  // Open addressing, linear probing, at most half full: the pair lookups are most of the BPE time.
  size_t slots = 16;
  while (slots < 2 * merges.size()) slots *= 2;
  merge_keys_.assign(slots, kNoPair);
  merge_values_.assign(slots, MergeValue{0, 0});
  merge_shift_ = 64;
  for (size_t n = slots; n > 1; n /= 2) --merge_shift_;
  merges_ = merges;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    auto ia = vocab_.find(a), ib = vocab_.find(b);
    CPUFT_REQUIRE(ia != vocab_.end(), merges_where, ": merge ", rank + 1, " '", a, " ", b, "': '",
                  a, "' is not in the vocabulary");
    CPUFT_REQUIRE(ib != vocab_.end(), merges_where, ": merge ", rank + 1, " '", a, " ", b, "': '",
                  b, "' is not in the vocabulary");
    auto iab = vocab_.find(a + b);
    CPUFT_REQUIRE(iab != vocab_.end(), merges_where, ": merge ", rank + 1, " '", a, " ", b, "': '",
                  a, b, "' is not in the vocabulary");
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(ia->second)) << 32) |
                         static_cast<uint32_t>(ib->second);
    size_t i = merge_slot(key);
    while (merge_keys_[i] != kNoPair && merge_keys_[i] != key) i = (i + 1) & (slots - 1);
    merge_keys_[i] = key;  // a pair listed again takes its later rank
    merge_values_[i] = MergeValue{static_cast<uint32_t>(rank), iab->second};
  }
  for (int b = 0; b < 256; ++b) {
    auto it = vocab_.find(byte_symbols()[b]);
    byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }
  if (options_.model_unk_token) {
    auto it = vocab_.find(*options_.model_unk_token);
    CPUFT_REQUIRE(it != vocab_.end(), where, ": model unk_token '", *options_.model_unk_token,
                  "' is not in the vocabulary");
    unk_id_ = it->second;
  }
  // Added tokens: an id of its own, or the vocabulary's id of the same content.
  std::unordered_map<int32_t, const BpeAddedToken*> added_ids;
  for (const BpeAddedToken& t : added_) {
    CPUFT_REQUIRE(!t.content.empty(), where, ": an added token is empty");
    CPUFT_REQUIRE(!t.single_word, where, ": added token '", t.content,
                  "': single_word is not supported");
    CPUFT_REQUIRE(t.id >= 0 && t.id <= kMaxId, where, ": added token '", t.content, "' id ", t.id,
                  " out of range");
    auto v = vocab_.find(t.content);
    CPUFT_REQUIRE(v == vocab_.end() || v->second == t.id, where, ": added token '", t.content,
                  "' has id ", t.id, " but the vocabulary gives it ", v->second);
    if (v == vocab_.end()) {
      auto o = by_id.find(t.id);
      CPUFT_REQUIRE(o == by_id.end(), where, ": added token '", t.content, "' has id ", t.id,
                    ", the id of '", o == by_id.end() ? std::string() : *o->second, "'");
    }
    auto [it, fresh] = added_ids.emplace(t.id, &t);
    CPUFT_REQUIRE(fresh, where, ": id ", t.id, " is used by both added tokens '",
                  it->second->content, "' and '", t.content, "'");
    max_id_ = std::max(max_id_, t.id);
  }
  CPUFT_REQUIRE(static_cast<size_t>(max_id_) < vocab_.size() + added_.size() + kMaxHoles, where,
                ": ids go up to ", max_id_, " for only ", vocab_.size() + added_.size(), " tokens");
  // One byte trie of the added tokens per pass (normalized=false first, then true).
  for (int pass = 0; pass < 2; ++pass) trie_[pass].assign(1, TrieNode{});
  for (size_t k = 0; k < added_.size(); ++k) {
    std::vector<TrieNode>& trie = trie_[added_[k].normalized ? 1 : 0];
    size_t node = 0;
    for (const char ch : added_[k].content) {
      const auto byte = static_cast<unsigned char>(ch);
      auto& next = trie[node].next;
      auto it =
          std::find_if(next.begin(), next.end(), [&](const auto& e) { return e.first == byte; });
      if (it != next.end()) {
        node = it->second;
      } else {
        next.emplace_back(byte, static_cast<uint32_t>(trie.size()));
        node = trie.size();
        trie.emplace_back();
      }
    }
    trie[node].token = static_cast<int32_t>(k);
  }
  if (options_.cache_words > 0) cache_ = std::make_shared<WordCache>();
  // Post-processor.
  if (options_.roberta_processing) {
    const int32_t cls = special_id(options_.cls_token, "cls_token", where);
    const int32_t sep = special_id(options_.sep_token, "sep_token", where);
    options_.single_template = {{-1, {cls}, 0}, {0, {}, 0}, {-1, {sep}, 0}};
    options_.pair_template = {{-1, {cls}, 0}, {0, {}, 0}, {-1, {sep}, 0},
                              {-1, {sep}, 0}, {1, {}, 0}, {-1, {sep}, 0}};
  }
  for (const auto* t : {&options_.single_template, &options_.pair_template}) {
    for (const BpeTemplatePiece& p : *t) {
      for (const int32_t id : p.ids) {
        CPUFT_REQUIRE(id >= 0 && id <= max_id_, where, ": post-processor special token id ", id,
                      " is not in the vocabulary");
      }
    }
  }
}

int32_t ByteLevelBpeTokenizer::special_id(const std::string& token, const char* field,
                                          const std::string& where) const {
  const int32_t id = token_id(token);
  CPUFT_REQUIRE(id >= 0, where, ": ", field, " '", token,
                "' is neither in the vocabulary nor an added token");
  return id;
}

int32_t ByteLevelBpeTokenizer::token_id(const std::string& token) const {
  for (const BpeAddedToken& t : added_)
    if (t.content == token) return t.id;
  auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

const std::string& ByteLevelBpeTokenizer::token(int32_t id) const {
  static const std::string none;
  for (const BpeAddedToken& t : added_)
    if (t.id == id) return t.content;
  for (const auto& [tok, i] : vocab_)
    if (i == id) return tok;
  return none;
}

ByteLevelBpeTokenizer ByteLevelBpeTokenizer::from_tokenizer_json(std::string_view text,
                                                                 const std::string& where) {
  TokenJson tj = parse_tokenizer_json(text, where);
  ByteLevelBpeTokenizer tok(std::move(tj.vocab), tj.merges, std::move(tj.added),
                            std::move(tj.options), where);
  tok.set_source("tokenizer.json");
  return tok;
}

// -----------------------------------------------------------------------------------------------
// Tokenizing.

void ByteLevelBpeTokenizer::split_added(std::string_view text, size_t begin, size_t end,
                                        bool normalized_pass,
                                        std::vector<std::pair<size_t, size_t>>& pieces,
                                        std::vector<int32_t>& ids) const {
  // tokenizers' AddedVocabulary::find_matches on text[begin, end): leftmost-longest matches;
  // lstrip takes the whitespace before a match (not past the previous match), rstrip the
  // whitespace after it; the search goes on after the match itself.
  const std::vector<TrieNode>& trie = trie_[normalized_pass ? 1 : 0];
  size_t start_offset = begin;
  size_t pos = begin;
  while (pos < end && trie.size() > 1) {
    const BpeAddedToken* found = nullptr;
    size_t node = 0;
    for (size_t i = pos; i < end; ++i) {  // the longest token that starts at pos
      const auto byte = static_cast<unsigned char>(text[i]);
      const auto& next = trie[node].next;
      auto it =
          std::find_if(next.begin(), next.end(), [&](const auto& e) { return e.first == byte; });
      if (it == next.end()) break;
      node = it->second;
      if (trie[node].token >= 0) found = &added_[static_cast<size_t>(trie[node].token)];
    }
    if (!found) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + found->content.size();
    if (found->lstrip) start -= trailing_space(text.substr(start_offset, start - start_offset));
    if (found->rstrip) stop += leading_space(text.substr(stop, end - stop));
    start = std::max(start, start_offset);
    if (start_offset < start) {
      pieces.emplace_back(start_offset, start);
      ids.push_back(-1);
    }
    pieces.emplace_back(start, stop);
    ids.push_back(found->id);
    start_offset = stop;
    pos += found->content.size();
  }
  if (start_offset < end) {
    pieces.emplace_back(start_offset, end);
    ids.push_back(-1);
  }
}

std::vector<int32_t> ByteLevelBpeTokenizer::tokenize(std::string_view text) const {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string_view::npos) throw Error(str("invalid UTF-8 at byte ", bad));
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  std::vector<std::pair<size_t, size_t>> pass1, pass2;
  std::vector<int32_t> ids1, ids2;
  // tokenizers' order: the added tokens marked normalized=false are cut from the raw text; each
  // piece between them is normalized (NFC, when the tokenizer has it), then the tokens marked
  // normalized=true are cut from it, and what is left is pre-tokenized.
  split_added(text, 0, text.size(), false, pass1, ids1);
  thread_local std::string normalized;
  for (size_t k = 0; k < pass1.size(); ++k) {
    if (ids1[k] >= 0) {
      out.push_back(ids1[k]);
      continue;
    }
    std::string_view piece = text.substr(pass1[k].first, pass1[k].second - pass1[k].first);
    if (options_.nfc) {
      unicode::nfc_utf8(piece, normalized);
      piece = normalized;
    }
    pass2.clear();
    ids2.clear();
    split_added(piece, 0, piece.size(), true, pass2, ids2);
    for (size_t m = 0; m < pass2.size(); ++m) {
      if (ids2[m] >= 0) {
        out.push_back(ids2[m]);
      } else if (pass2[m].second > pass2[m].first) {
        tokenize_piece(piece.substr(pass2[m].first, pass2[m].second - pass2[m].first), out);
      }
    }
  }
  return out;
}

void ByteLevelBpeTokenizer::tokenize_piece(std::string_view piece,
                                           std::vector<int32_t>& ids) const {
  thread_local std::string prefixed;
  if (options_.add_prefix_space && piece.front() != ' ') {
    prefixed.assign(1, ' ');
    prefixed.append(piece);
    piece = prefixed;
  }
  if (!options_.use_regex) {
    word_ids(piece, ids);
    return;
  }
  thread_local std::vector<char32_t> chars;
  thread_local std::vector<uint32_t> starts;
  decode(piece, chars, starts);
  split_gpt2(chars, [&](size_t first, size_t last) {
    word_ids(piece.substr(starts[first], starts[last] - starts[first]), ids);
  });
}

void ByteLevelBpeTokenizer::set_cache_words(size_t n) {
  options_.cache_words = n;
  cache_ = n > 0 ? std::make_shared<WordCache>() : nullptr;
}

void ByteLevelBpeTokenizer::word_ids(std::string_view word, std::vector<int32_t>& ids) const {
  constexpr size_t kMaxCachedBytes = 256;
  if (!cache_ || word.size() > kMaxCachedBytes) {
    bpe_word(word, ids);
    return;
  }
  {
    std::shared_lock lock(cache_->mutex);
    auto it = cache_->words.find(word);
    if (it != cache_->words.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = ids.size();
  bpe_word(word, ids);
  std::unique_lock lock(cache_->mutex);
  if (cache_->words.size() < options_.cache_words)
    cache_->words.emplace(
        word, std::vector<int32_t>(ids.begin() + static_cast<ptrdiff_t>(first), ids.end()));
}

void ByteLevelBpeTokenizer::bpe_word(std::string_view word, std::vector<int32_t>& ids) const {
  if (options_.ignore_merges) {
    std::string mapped;
    for (const char ch : word) mapped += byte_symbols()[static_cast<unsigned char>(ch)];
    auto it = vocab_.find(std::string_view(mapped));
    if (it != vocab_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  struct Symbol {
    int32_t id, prev, next;
    uint32_t len;  // bytes; 0 once merged into the symbol on its left
  };
  struct Entry {
    uint32_t rank;
    int32_t pos, id;
    // std heaps keep the largest on top: "larger" is the lower rank, then the leftmost.
    bool operator<(const Entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  thread_local std::vector<Symbol> sym;
  thread_local std::vector<Entry> heap;
  sym.clear();
  heap.clear();
  auto add = [&](int32_t id, uint32_t len) {
    const int32_t n = static_cast<int32_t>(sym.size());
    if (n > 0) sym.back().next = n;
    sym.push_back({id, n - 1, -1, len});
  };
  // One symbol per byte; a byte whose symbol is not in the vocabulary is dropped, or becomes the
  // model's unk (consecutive ones fused into one with fuse_unk).
  uint32_t unk_len = 0;
  for (const char ch : word) {
    const int32_t id = byte_ids_[static_cast<unsigned char>(ch)];
    if (id >= 0) {
      if (unk_len > 0) add(unk_id_, unk_len);
      unk_len = 0;
      add(id, 1);
    } else if (unk_id_ >= 0) {
      if (unk_len > 0 && !options_.fuse_unk) {
        add(unk_id_, unk_len);
        unk_len = 0;
      }
      ++unk_len;
    }
  }
  if (unk_len > 0) add(unk_id_, unk_len);
  const size_t mask = merge_keys_.size() - 1;
  auto find_merge = [&](int32_t a, int32_t b) -> const MergeValue* {
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
    for (size_t i = merge_slot(key);; i = (i + 1) & mask) {
      if (merge_keys_[i] == key) return &merge_values_[i];
      if (merge_keys_[i] == kNoPair) return nullptr;
    }
  };
  auto push = [&](int32_t pos) {
    const Symbol& s = sym[static_cast<size_t>(pos)];
    if (s.next < 0) return;
    if (const MergeValue* m = find_merge(s.id, sym[static_cast<size_t>(s.next)].id)) {
      heap.push_back({m->rank, pos, m->id});
      std::push_heap(heap.begin(), heap.end());
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(sym.size()); ++i) push(i);
  // Lowest rank first, leftmost among equal ranks; an entry whose pair has changed since it was
  // queued is stale and skipped.
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Entry top = heap.back();
    heap.pop_back();
    Symbol& left = sym[static_cast<size_t>(top.pos)];
    if (left.len == 0 || left.next < 0) continue;
    Symbol& right = sym[static_cast<size_t>(left.next)];
    const MergeValue* m = find_merge(left.id, right.id);
    if (!m || m->id != top.id) continue;
    left.id = top.id;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (left.next >= 0) sym[static_cast<size_t>(left.next)].prev = top.pos;
    if (left.prev >= 0) push(left.prev);
    push(top.pos);
  }
  for (const Symbol& s : sym)
    if (s.len != 0) ids.push_back(s.id);
}

std::vector<std::string> ByteLevelBpeTokenizer::tokenize_to_strings(std::string_view text) const {
  std::unordered_map<int32_t, std::string> names;
  for (const auto& [tok, id] : vocab_) names.emplace(id, tok);
  for (const BpeAddedToken& t : added_) names.insert_or_assign(t.id, t.content);
  std::vector<std::string> out;
  for (const int32_t id : tokenize(text)) out.push_back(names[id]);
  return out;
}

size_t ByteLevelBpeTokenizer::num_special_tokens(bool pair) const {
  size_t n = 0;
  for (const BpeTemplatePiece& p : pair ? options_.pair_template : options_.single_template)
    n += p.ids.size();
  return n;
}

Encoding ByteLevelBpeTokenizer::encode(std::string_view a, const std::string_view* b,
                                       int max_length) const {
  std::vector<int32_t> ids_a = tokenize(a);
  std::vector<int32_t> ids_b;
  if (b) ids_b = tokenize(*b);
  const size_t n_special = num_special_tokens(b != nullptr);
  if (max_length >= 0) {
    CPUFT_REQUIRE(static_cast<size_t>(max_length) >= n_special, "max_length ", max_length,
                  " cannot hold the ", n_special, " special tokens");
    truncate_longest_first(ids_a, b ? &ids_b : nullptr,
                           static_cast<size_t>(max_length) - n_special);
  }
  Encoding e;
  e.input_ids.reserve(ids_a.size() + ids_b.size() + n_special);
  e.token_type_ids.reserve(e.input_ids.capacity());
  for (const BpeTemplatePiece& p : b ? options_.pair_template : options_.single_template) {
    const std::vector<int32_t>& ids = p.sequence < 0 ? p.ids : p.sequence == 0 ? ids_a : ids_b;
    e.input_ids.insert(e.input_ids.end(), ids.begin(), ids.end());
    e.token_type_ids.resize(e.input_ids.size(), p.type_id);
  }
  return e;
}

std::string ByteLevelBpeTokenizer::summary() const {
  return str("byte-level BPE, ", source_, ", ", vocab_.size(), " tokens + ", added_.size(),
             " added, ", merges_.size(), " merges, add_prefix_space ",
             options_.add_prefix_space ? "true" : "false",
             options_.roberta_processing ? ", RoBERTa" : ", tokenizer.json template");
}

// -----------------------------------------------------------------------------------------------
// Files.

ByteLevelBpeTokenizer ByteLevelBpeTokenizer::from_folder(const std::string& dir) {
  const fs::path root(dir);
  CPUFT_REQUIRE(fs::is_directory(root), dir, ": not a directory");
  const fs::path tj_path = root / "tokenizer.json", vocab_path = root / "vocab.json",
                 merges_path = root / "merges.txt", config_path = root / "tokenizer_config.json",
                 map_path = root / "special_tokens_map.json",
                 added_path = root / "added_tokens.json", model_config_path = root / "config.json";
  const std::string config_where = config_path.string(), map_where = map_path.string();
  json config = json::object(), special_map = json::object();
  if (fs::exists(config_path)) config = parse_json_text(read_file(config_path), config_where);
  if (fs::exists(map_path)) special_map = parse_json_text(read_file(map_path), map_where);
  const bool has_tj = fs::exists(tj_path);

  // Which pipeline transformers' AutoTokenizer builds.
  std::string cls;
  if (const json* c = member(config, "tokenizer_class")) {
    CPUFT_REQUIRE(c->is_string(), config_where, ": 'tokenizer_class' must be a string");
    cls = c->get<std::string>();
  }
  bool roberta = true;
  if (cls == "RobertaTokenizer" || cls == "RobertaTokenizerFast") {
    roberta = true;
  } else if (cls == "PreTrainedTokenizerFast" || cls == "TokenizersBackend") {
    CPUFT_REQUIRE(has_tj, config_where, ": tokenizer_class ", cls, " needs tokenizer.json");
    roberta = false;
  } else if (!cls.empty()) {
    throw Error(str(config_where, ": tokenizer_class '", cls,
                    "' is not handled by the byte-level BPE tokenizer (RobertaTokenizer, "
                    "PreTrainedTokenizerFast)"));
  } else if (fs::exists(model_config_path)) {
    const json mc = parse_json_text(read_file(model_config_path), model_config_path.string());
    const json* mt = member(mc, "model_type");
    CPUFT_REQUIRE(!mt || (mt->is_string() && *mt == "roberta"), model_config_path.string(),
                  ": model_type '", mt ? mt->dump() : "", "' has no tokenizer_class in ",
                  config_where, " and is not handled by the byte-level BPE tokenizer");
    roberta = true;
  } else {
    roberta = !has_tj;  // a bare tokenizer.json is used as written
  }

  Vocab vocab;
  Merges merges;
  std::vector<BpeAddedToken> file_added;  // tokenizer.json added_tokens / added_tokens.json
  BpeOptions opt;
  std::string source;
  if (has_tj) {
    TokenJson tj = parse_tokenizer_json(read_file(tj_path), tj_path.string());
    vocab = std::move(tj.vocab);
    merges = std::move(tj.merges);
    file_added = std::move(tj.added);
    if (!roberta) opt = std::move(tj.options);
    source = "tokenizer.json";
  } else {
    CPUFT_REQUIRE(fs::exists(vocab_path) && fs::exists(merges_path), dir,
                  ": neither tokenizer.json nor vocab.json + merges.txt found");
    vocab = parse_vocab_json(read_file(vocab_path), vocab_path.string());
    merges = parse_merges_txt(read_file(merges_path), merges_path.string());
    source = "vocab.json + merges.txt";
  }
  const std::string vocab_where = has_tj ? tj_path.string() : vocab_path.string();
  const std::string merges_where = has_tj ? tj_path.string() : merges_path.string();
  std::unordered_map<std::string, int32_t> vocab_ids;
  std::unordered_map<int32_t, const std::string*> vocab_tokens;
  vocab_ids.reserve(vocab.size());
  vocab_tokens.reserve(vocab.size());
  int64_t next_id = 0;
  for (const auto& [t, id] : vocab) {
    vocab_ids.emplace(t, id);
    auto [it, fresh] = vocab_tokens.emplace(id, &t);
    CPUFT_REQUIRE(fresh, vocab_where, ": id ", id, " is used by both '", *it->second, "' and '", t,
                  "'");
    next_id = std::max<int64_t>(next_id, int64_t{id} + 1);
  }
  CPUFT_REQUIRE(static_cast<size_t>(next_id) <= vocab.size() + kMaxHoles, vocab_where,
                ": ids go up to ", next_id - 1, " for only ", vocab.size(), " tokens");
  opt.roberta_processing = roberta;
  if (roberta) {
    opt.add_prefix_space = bool_field(config, "add_prefix_space", config_where, "", false);
    opt.trim_offsets = bool_field(config, "trim_offsets", config_where, "", true);
    opt.use_regex = true;
    opt.model_unk_token.reset();
    opt.fuse_unk = false;
    opt.ignore_merges = false;
  }

  // Added tokens, as transformers collects them: tokenizer_config.json's added_tokens_decoder
  // when present; otherwise added_tokens.json and tokenizer.json's added_tokens, and the named
  // special tokens of special_tokens_map.json over those of tokenizer_config.json.
  const json* decoder = member(config, "added_tokens_decoder");
  std::vector<BpeAddedToken> added;
  std::unordered_map<std::string, std::string> added_where;  // content -> the file it came from
  if (!roberta || !decoder) {
    added = file_added;
    for (const BpeAddedToken& t : added) added_where[t.content] = tj_path.string();
  }
  const char* names[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                         "pad_token", "cls_token", "mask_token"};
  std::string* slots[] = {&opt.bos_token, &opt.eos_token, &opt.unk_token, &opt.sep_token,
                          &opt.pad_token, &opt.cls_token, &opt.mask_token};
  std::optional<BpeAddedToken> named_flags[7];
  std::string named_where[7];
  for (int k = 0; k < 7; ++k) {
    named_where[k] = "default";
    if (named_token(config, names[k], config_where, *slots[k], named_flags[k]))
      named_where[k] = config_where;
    if (!decoder && named_token(special_map, names[k], map_where, *slots[k], named_flags[k]))
      named_where[k] = map_where;
  }
  if (!decoder && fs::exists(added_path)) {
    const std::string where = added_path.string();
    const json a = parse_json_text(read_file(added_path), where);
    for (const auto& [content, id] : a.items()) {
      BpeAddedToken t;
      t.content = content;
      t.id = id_value(id, where, "id of '" + content + "'");
      CPUFT_REQUIRE(!content.empty() && find_invalid_utf8(content) == std::string::npos, where,
                    ": an added token is empty or not valid UTF-8");
      t.special = std::any_of(std::begin(slots), std::end(slots),
                              [&t](const std::string* s) { return *s == t.content; });
      t.normalized = !t.special;
      added_where[content] = where;
      put_added(added, std::move(t));
    }
  }
  if (decoder) {
    CPUFT_REQUIRE(decoder->is_object(), config_where, ": 'added_tokens_decoder' must be an object");
    for (const auto& [key, value] : decoder->items()) {
      const std::string f = "added_tokens_decoder." + key;
      int64_t id = -1;
      const bool digits =
          !key.empty() && key.size() <= 10 &&
          std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits) id = std::stoll(key);
      CPUFT_REQUIRE(digits && id <= kMaxId, config_where, ": '", f,
                    "': the key must be an id in [0, ", kMaxId, "]");
      BpeAddedToken t = added_token_from(value, config_where, f, static_cast<int32_t>(id));
      added_where[t.content] = config_where;
      put_added(added, std::move(t));
    }
  }
  // Extra special tokens (strings or objects) are added too, taking the next free id when they
  // are in neither the vocabulary nor the added tokens.
  std::vector<BpeAddedToken> extra;
  for (const char* key : {"additional_special_tokens", "extra_special_tokens"}) {
    for (const json* j : {&config, &special_map}) {
      const json* list = member(*j, key);
      if (!list || !list->is_array()) continue;
      const std::string& where = j == &config ? config_where : map_where;
      for (size_t k = 0; k < list->size(); ++k) {
        BpeAddedToken t;
        if ((*list)[k].is_string()) {
          t.content = (*list)[k].get<std::string>();
        } else {
          t = added_token_from((*list)[k], where, str(key, "[", k, "]"), 0);
        }
        t.special = true;
        CPUFT_REQUIRE(!t.content.empty() && find_invalid_utf8(t.content) == std::string::npos,
                      where, ": '", key, "[", k, "]' is empty or not valid UTF-8");
        extra.push_back(std::move(t));
      }
    }
  }
  // The named special tokens not already added join the added vocabulary with their vocabulary
  // id; one that has no id at all is an error (transformers would silently make a new token).
  for (const BpeAddedToken& t : added) {
    const std::string& where = added_where[t.content];
    auto v = vocab_ids.find(t.content);
    CPUFT_REQUIRE(v == vocab_ids.end() || v->second == t.id, where, ": added token '", t.content,
                  "' has id ", t.id, " but the vocabulary gives it ",
                  v == vocab_ids.end() ? 0 : v->second);
    auto o = vocab_tokens.find(t.id);
    CPUFT_REQUIRE(v != vocab_ids.end() || o == vocab_tokens.end(), where, ": added token '",
                  t.content, "' has id ", t.id, ", the id of '",
                  o == vocab_tokens.end() ? std::string() : *o->second, "'");
  }
  for (const BpeAddedToken& t : added) next_id = std::max<int64_t>(next_id, int64_t{t.id} + 1);
  auto has_added = [&](const std::string& c) {
    return std::any_of(added.begin(), added.end(),
                       [&](const BpeAddedToken& t) { return t.content == c; });
  };
  for (int k = 0; k < 7; ++k) {
    const std::string& content = *slots[k];
    // RobertaTokenizer has all seven (its defaults); a tokenizer.json used as written only those
    // the configuration names.
    if (has_added(content) || (!roberta && named_where[k] == "default")) continue;
    auto v = vocab_ids.find(content);
    CPUFT_REQUIRE(v != vocab_ids.end(), named_where[k] == "default" ? vocab_where : named_where[k],
                  ": ", names[k], " '", content, "' is in neither ", source,
                  " nor the added tokens");
    BpeAddedToken t = named_flags[k].value_or(BpeAddedToken{});
    t.content = content;
    t.id = v->second;
    t.special = true;
    added.push_back(std::move(t));
  }
  for (BpeAddedToken& t : extra) {
    if (has_added(t.content)) continue;
    auto v = vocab_ids.find(t.content);
    CPUFT_REQUIRE(v != vocab_ids.end() || next_id <= kMaxId, dir, ": too many added tokens");
    t.id = v != vocab_ids.end() ? v->second : static_cast<int32_t>(next_id++);
    added.push_back(std::move(t));
  }
  if (const json* m = member(config, "model_max_length"); m && m->is_number_integer()) {
    const int64_t v = m->get<int64_t>();
    if (v > 0 && v <= std::numeric_limits<int32_t>::max())
      opt.model_max_length = static_cast<int>(v);
  }
  ByteLevelBpeTokenizer tok(std::move(vocab), merges, std::move(added), std::move(opt), vocab_where,
                            merges_where);
  tok.set_source(source);
  return tok;
}

void ByteLevelBpeTokenizer::save(const std::string& dir) const {
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  CPUFT_REQUIRE(!ec, dir, ": cannot create directory: ", ec.message());
  // vocab.json in id order, merges in rank order.
  std::vector<std::pair<int32_t, const std::string*>> by_id;
  by_id.reserve(vocab_.size());
  for (const auto& [tok, id] : vocab_) by_id.emplace_back(id, &tok);
  std::sort(by_id.begin(), by_id.end());
  ordered_json vocab = ordered_json::object();
  for (const auto& [id, tok] : by_id) vocab[*tok] = id;
  write_file(root / "vocab.json", vocab.dump(-1, ' ', false, json::error_handler_t::strict) + "\n");
  bool plain_merges = true;
  std::string merges_text = "#version: 0.2\n";
  ordered_json merges = ordered_json::array();
  for (const auto& [a, b] : merges_) {
    for (const std::string* t : {&a, &b})
      if (t->find_first_of(" \r\n") != std::string::npos) plain_merges = false;
    merges_text += a + " " + b + "\n";
    merges.push_back({a, b});
  }
  // merges.txt cannot hold a token with a space or line break; tokenizer.json can.
  if (plain_merges) {
    write_file(root / "merges.txt", merges_text);
  } else {
    fs::remove(root / "merges.txt", ec);
  }

  std::vector<BpeAddedToken> added = added_;
  std::sort(added.begin(), added.end(),
            [](const BpeAddedToken& x, const BpeAddedToken& y) { return x.id < y.id; });
  ordered_json tj;
  tj["version"] = "1.0";
  tj["truncation"] = nullptr;
  tj["padding"] = nullptr;
  tj["added_tokens"] = ordered_json::array();
  for (const BpeAddedToken& t : added) tj["added_tokens"].push_back(added_token_json(t, true));
  tj["normalizer"] = options_.nfc ? ordered_json({{"type", "NFC"}}) : ordered_json(nullptr);
  tj["pre_tokenizer"] = {{"type", "ByteLevel"},
                         {"add_prefix_space", options_.add_prefix_space},
                         {"trim_offsets", options_.trim_offsets},
                         {"use_regex", options_.use_regex}};
  auto template_json = [&](const std::vector<BpeTemplatePiece>& t, ordered_json& specials) {
    ordered_json out = ordered_json::array();
    for (const BpeTemplatePiece& p : t) {
      if (p.sequence >= 0) {
        out.push_back(
            {{"Sequence", {{"id", p.sequence == 0 ? "A" : "B"}, {"type_id", p.type_id}}}});
      } else {
        std::string name;
        for (const int32_t id : p.ids) name += (name.empty() ? "" : "+") + token(id);
        if (name.empty()) name = str("<id ", p.ids.front(), ">");
        std::vector<std::string> toks;
        for (const int32_t id : p.ids) toks.push_back(token(id));
        specials[name] = {{"id", name}, {"ids", p.ids}, {"tokens", toks}};
        out.push_back({{"SpecialToken", {{"id", name}, {"type_id", p.type_id}}}});
      }
    }
    return out;
  };
  if (options_.roberta_processing) {
    tj["post_processor"] = {{"type", "RobertaProcessing"},
                            {"sep", {options_.sep_token, token_id(options_.sep_token)}},
                            {"cls", {options_.cls_token, token_id(options_.cls_token)}},
                            {"trim_offsets", options_.trim_offsets},
                            {"add_prefix_space", options_.add_prefix_space}};
  } else {
    ordered_json specials = ordered_json::object();
    ordered_json single = template_json(options_.single_template, specials);
    ordered_json pair = template_json(options_.pair_template, specials);
    tj["post_processor"] = {{"type", "TemplateProcessing"},
                            {"single", single},
                            {"pair", pair},
                            {"special_tokens", specials}};
  }
  tj["decoder"] = {{"type", "ByteLevel"},
                   {"add_prefix_space", true},
                   {"trim_offsets", true},
                   {"use_regex", true}};
  ordered_json model;
  model["type"] = "BPE";
  model["dropout"] = nullptr;
  model["unk_token"] =
      options_.model_unk_token ? ordered_json(*options_.model_unk_token) : ordered_json(nullptr);
  model["continuing_subword_prefix"] = nullptr;
  model["end_of_word_suffix"] = nullptr;
  model["fuse_unk"] = options_.fuse_unk;
  model["byte_fallback"] = false;
  model["ignore_merges"] = options_.ignore_merges;
  model["vocab"] = std::move(vocab);
  model["merges"] = std::move(merges);
  tj["model"] = std::move(model);
  write_file(root / "tokenizer.json",
             tj.dump(-1, ' ', false, json::error_handler_t::strict) + "\n");

  // tokenizer_config.json: the class that rebuilds this pipeline, the named special tokens and
  // every added token with its flags (transformers 5 takes lstrip etc. from added_tokens_decoder).
  ordered_json special = ordered_json::object();
  const std::pair<const char*, const std::string*> named[] = {
      {"bos_token", &options_.bos_token},  {"eos_token", &options_.eos_token},
      {"unk_token", &options_.unk_token},  {"sep_token", &options_.sep_token},
      {"pad_token", &options_.pad_token},  {"cls_token", &options_.cls_token},
      {"mask_token", &options_.mask_token}};
  for (const auto& [key, value] : named) {
    const std::string& content = *value;
    const auto it = std::find_if(added.begin(), added.end(),
                                 [&](const BpeAddedToken& t) { return t.content == content; });
    special[key] = it != added.end() && (it->lstrip || it->rstrip) ? added_token_json(*it, false)
                                                                   : ordered_json(*value);
  }
  ordered_json config;
  config["tokenizer_class"] =
      options_.roberta_processing ? "RobertaTokenizer" : "PreTrainedTokenizerFast";
  config["add_prefix_space"] = options_.add_prefix_space;
  config["trim_offsets"] = options_.trim_offsets;
  config["errors"] = "replace";
  config["model_max_length"] = options_.model_max_length;
  for (const auto& [key, value] : named) config[key] = *value;
  ordered_json decoder = ordered_json::object();
  for (const BpeAddedToken& t : added) decoder[std::to_string(t.id)] = added_token_json(t, false);
  config["added_tokens_decoder"] = std::move(decoder);
  write_file(root / "tokenizer_config.json",
             config.dump(2, ' ', false, json::error_handler_t::strict) + "\n");
  write_file(root / "special_tokens_map.json",
             special.dump(2, ' ', false, json::error_handler_t::strict) + "\n");
}

}  // namespace cpuft
