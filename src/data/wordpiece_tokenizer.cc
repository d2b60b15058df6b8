#include "data/wordpiece_tokenizer.h"

#include <algorithm>
#include <array>

#include "core/check.h"
#include "data/unicode_normalize.h"
#include "data/unicode_tables.h"
#include "data/utf8.h"

namespace cpuft {
namespace {

namespace uni = cpuft::unicode;
using uni::append_nfd;
using uni::canonical_order;
using uni::combining_class;
using uni::find_mapping;

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

// The "Chinese character" blocks of HF's BertNormalizer (CJK Unified Ideographs and extensions,
// compatibility ideographs). This is HF's own definition, not a Unicode property, so it lives here.
bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
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
// Normalization passes (each one normalizer of tokenizers, run on the whole piece).

void lowercase(std::u32string& out) {
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
  if (i == out.size()) return;
  std::u32string rest;  // a multi-character lowercase (e.g. U+0130): rebuild the rest
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

void run_step(NormalizeStep step, std::u32string& text) {
  std::u32string out;
  switch (step) {
    case NormalizeStep::kCleanText:
      out.reserve(text.size());
      for (const char32_t c : text) {
        const uint8_t f = flags_of(c);
        if (f & uni::kDrop) continue;
        out.push_back(f & uni::kSpace ? U' ' : c);
      }
      break;
    case NormalizeStep::kChineseChars:
      out.reserve(text.size());
      for (const char32_t c : text) {
        const bool pad = c >= 0x3400 && is_cjk(c);
        if (pad) out.push_back(U' ');
        out.push_back(c);
        if (pad) out.push_back(U' ');
      }
      break;
    case NormalizeStep::kNfd: {
      out.reserve(text.size());
      bool needs_ordering = false;
      for (const char32_t c : text) needs_ordering |= append_nfd(c, out);
      if (needs_ordering) canonical_order(out);
      break;
    }
    case NormalizeStep::kStripNonspacing:
      std::erase_if(text, [](char32_t c) { return flags_of(c) & uni::kMark; });
      return;
    case NormalizeStep::kStripCombining:
      std::erase_if(text, [](char32_t c) { return flags_of(c) & uni::kCombiningMark; });
      return;
    case NormalizeStep::kLowercase:
      lowercase(text);
      return;
  }
  text.swap(out);
}

// BertNormalizer's passes for its four options, in its order.
std::vector<NormalizeStep> bert_normalizer(bool clean, bool cjk, bool strip, bool lower) {
  std::vector<NormalizeStep> steps;
  if (clean) steps.push_back(NormalizeStep::kCleanText);
  if (cjk) steps.push_back(NormalizeStep::kChineseChars);
  if (strip) {
    steps.push_back(NormalizeStep::kNfd);
    steps.push_back(NormalizeStep::kStripNonspacing);
  }
  if (lower) steps.push_back(NormalizeStep::kLowercase);
  return steps;
}

bool has_step(const std::vector<NormalizeStep>& steps, NormalizeStep s) {
  return std::find(steps.begin(), steps.end(), s) != steps.end();
}

// ---------------------------------------------------------------------------------------------
// Pre-tokenizer splits over ranges [first, second) of one normalized piece.

using Range = std::pair<size_t, size_t>;

// tokenizers' NormalizedString::split with a character predicate: every matching character is one
// match, the text between matches one non-match; the behaviour decides what is kept and merged.
template <typename Pred>
void split_by(const char32_t* s, const std::vector<Range>& in, Pred is_match,
              SplitBehavior behavior, std::vector<Range>& out) {
  std::vector<std::pair<Range, bool>> matches, kept;
  for (const Range& r : in) {
    matches.clear();
    size_t run = r.first;
    for (size_t i = r.first; i < r.second; ++i) {
      if (!is_match(s[i])) continue;
      if (run < i) matches.push_back({{run, i}, false});
      matches.push_back({{i, i + 1}, true});
      run = i + 1;
    }
    if (run < r.second) matches.push_back({{run, r.second}, false});
    kept.clear();
    bool previous = false;
    switch (behavior) {
      case SplitBehavior::kRemoved:
        for (const auto& m : matches)
          if (!m.second) kept.push_back(m);
        break;
      case SplitBehavior::kIsolated:
        kept = matches;
        break;
      case SplitBehavior::kContiguous:
        for (const auto& m : matches) {
          if (m.second == previous && !kept.empty()) {
            kept.back().first.second = m.first.second;
          } else {
            kept.push_back(m);
          }
          previous = m.second;
        }
        break;
      case SplitBehavior::kMergedWithPrevious:
        for (const auto& m : matches) {
          if (m.second && !previous && !kept.empty()) {
            kept.back().first.second = m.first.second;
          } else {
            kept.push_back(m);
          }
          previous = m.second;
        }
        break;
      case SplitBehavior::kMergedWithNext:
        for (size_t k = matches.size(); k-- > 0;) {
          const auto& m = matches[k];
          if (m.second && !previous && !kept.empty()) {
            kept.back().first.first = m.first.first;
          } else {
            kept.push_back(m);
          }
          previous = m.second;
        }
        std::reverse(kept.begin(), kept.end());
        break;
    }
    for (const auto& m : kept)
      if (m.first.first < m.first.second) out.push_back(m.first);
  }
}

// The Whitespace pre-tokenizer: the matches of \w+|[^\w\s]+, whitespace dropped.
void split_whitespace_regex(const char32_t* s, const std::vector<Range>& in,
                            std::vector<Range>& out) {
  for (const Range& r : in) {
    size_t i = r.first;
    while (i < r.second) {
      const uint8_t f = flags_of(s[i]);
      if (f & uni::kWhite) {
        ++i;
        continue;
      }
      const bool word = f & uni::kWord;
      size_t j = i + 1;
      while (j < r.second) {
        const uint8_t g = flags_of(s[j]);
        if ((g & uni::kWhite) || bool(g & uni::kWord) != word) break;
        ++j;
      }
      out.push_back({i, j});
      i = j;
    }
  }
}

}  // namespace

// -----------------------------------------------------------------------------------------------

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, TokenizerOptions options)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  CPUFT_REQUIRE(!vocab_.empty(), "tokenizer: empty vocabulary");
  CPUFT_REQUIRE(vocab_.size() <= static_cast<size_t>(INT32_MAX), "tokenizer: vocabulary too big");
  ids_.reserve(vocab_.size());
  for (size_t i = 0; i < vocab_.size(); ++i) {
    ids_.insert_or_assign(vocab_[i], static_cast<int32_t>(i));  // last id wins, as in HF
  }
  // BertTokenizer's pipeline: the five special tokens are added tokens (not normalized).
  WordPiecePipeline& p = pipeline_;
  p.normalizer = bert_normalizer(true, options_.tokenize_chinese_chars,
                                 options_.strip_accents.value_or(options_.do_lower_case),
                                 options_.do_lower_case);
  p.pre_tokenizer = {{PreTokenizeStep::kWhitespaceSplit, SplitBehavior::kRemoved},
                     {PreTokenizeStep::kPunctuation, SplitBehavior::kIsolated}};
  const std::pair<const std::string*, const char*> specials[] = {
      {&options_.unk_token, "unk_token"},
      {&options_.cls_token, "cls_token"},
      {&options_.sep_token, "sep_token"},
      {&options_.pad_token, "pad_token"},
      {&options_.mask_token, "mask_token"}};
  for (const auto& special : specials) {
    const std::string& token = *special.first;
    const int32_t id = require_id(token, special.second);
    if (std::none_of(p.added_tokens.begin(), p.added_tokens.end(),
                     [&](const AddedToken& t) { return t.content == token; })) {
      p.added_tokens.push_back({token, id, true, false, false, false, false});
    }
  }
  const int32_t cls = require_id(options_.cls_token, "cls_token");
  const int32_t sep = require_id(options_.sep_token, "sep_token");
  p.single = {
      {-1, {cls}, {options_.cls_token}, 0}, {0, {}, {}, 0}, {-1, {sep}, {options_.sep_token}, 0}};
  p.pair = p.single;
  p.pair.push_back({1, {}, {}, 1});
  p.pair.push_back({-1, {sep}, {options_.sep_token}, 1});
  init();
}

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, TokenizerOptions options,
                                       WordPiecePipeline pipeline, std::string source)
    : vocab_(std::move(vocab)),
      options_(std::move(options)),
      pipeline_(std::move(pipeline)),
      source_(std::move(source)) {
  CPUFT_REQUIRE(!vocab_.empty(), "tokenizer: empty vocabulary");
  CPUFT_REQUIRE(vocab_.size() <= static_cast<size_t>(INT32_MAX), "tokenizer: vocabulary too big");
  ids_.reserve(vocab_.size());
  for (size_t i = 0; i < vocab_.size(); ++i) {
    ids_.insert_or_assign(vocab_[i], static_cast<int32_t>(i));
  }
  init();
}

void WordPieceTokenizer::init() {
  CPUFT_REQUIRE(options_.max_input_chars_per_word >= 0,
                "tokenizer: max_input_chars_per_word must be >= 0");
  std::u32string scratch;
  for (const std::string& t : vocab_) {
    max_token_bytes_ = std::max(max_token_bytes_, t.size());
  }
  // Added tokens: ids as the tokenizers library gives them (AddedVocabulary::add_tokens): the
  // vocabulary's id when the content is in it, else the next id after the vocabulary, in order.
  id_to_token_ = vocab_;
  int64_t next_id = static_cast<int64_t>(vocab_.size());
  std::unordered_map<std::string, size_t> seen;
  for (size_t k = 0; k < pipeline_.added_tokens.size(); ++k) {
    const AddedToken& t = pipeline_.added_tokens[k];
    CPUFT_REQUIRE(!t.content.empty(), "'added_tokens': entry ", k, " is empty");
    CPUFT_REQUIRE(seen.emplace(t.content, k).second, "'added_tokens': '", t.content,
                  "' is listed twice");
    CPUFT_REQUIRE(find_invalid_utf8(t.content) == std::string_view::npos, "'added_tokens': entry ",
                  k, " is not valid UTF-8");
    const auto in_vocab = ids_.find(t.content);
    const int64_t want = in_vocab != ids_.end() ? in_vocab->second : next_id++;
    CPUFT_REQUIRE(t.id == want, "'added_tokens': '", t.content, "' has id ", t.id,
                  " but the tokenizers library gives it ", want,
                  in_vocab != ids_.end() ? " (its vocabulary id)"
                                         : " (tokens outside the vocabulary follow it, in order)");
    CPUFT_REQUIRE(next_id <= INT32_MAX, "tokenizer: too many added tokens");
    if (t.id >= static_cast<int32_t>(id_to_token_.size())) id_to_token_.push_back(t.content);
  }
  // WordPiece looks its unk_token up in its own vocabulary (not among the added tokens).
  CPUFT_REQUIRE(!options_.unk_token.empty(), "tokenizer: unk_token is empty");
  const auto unk = ids_.find(options_.unk_token);
  CPUFT_REQUIRE(unk != ids_.end(), "tokenizer: unk_token '", options_.unk_token,
                "' is not in the vocabulary");
  unk_id_ = unk->second;
  cls_id_ = find_id(options_.cls_token);
  sep_id_ = find_id(options_.sep_token);
  pad_id_ = find_id(options_.pad_token);
  mask_id_ = find_id(options_.mask_token);

  // The normalizer as one fused pass when it is a BertNormalizer (the common case, and fast).
  const auto& steps = pipeline_.normalizer;
  clean_ = has_step(steps, NormalizeStep::kCleanText);
  cjk_ = has_step(steps, NormalizeStep::kChineseChars);
  strip_ = has_step(steps, NormalizeStep::kStripNonspacing);
  lower_ = has_step(steps, NormalizeStep::kLowercase);
  fused_ = steps == bert_normalizer(clean_, cjk_, strip_, lower_);
  bert_split_ =
      pipeline_.pre_tokenizer ==
      std::vector<PreTokenizeStep>{{PreTokenizeStep::kWhitespaceSplit, SplitBehavior::kRemoved},
                                   {PreTokenizeStep::kPunctuation, SplitBehavior::kIsolated}};
  CPUFT_REQUIRE(find_invalid_utf8(pipeline_.continuing_subword_prefix) == std::string_view::npos,
                "tokenizer: continuing_subword_prefix is not valid UTF-8");

  // Templates: one text a (and b), special token ids that exist, type ids 0 or 1.
  auto check = [&](const std::vector<TemplatePiece>& t, bool pair, size_t& n_special) {
    const char* name = pair ? "pair" : "single";
    int count[2] = {0, 0};
    n_special = 0;
    for (const TemplatePiece& p : t) {
      CPUFT_REQUIRE(p.type_id == 0 || p.type_id == 1, "'post_processor' template '", name,
                    "': type_id ", p.type_id, " (BERT models have the token types 0 and 1)");
      if (p.sequence >= 0) {
        CPUFT_REQUIRE(p.sequence <= (pair ? 1 : 0), "'post_processor' template '", name,
                      "' uses sequence B");
        ++count[p.sequence];
        continue;
      }
      for (const int32_t id : p.ids) {
        CPUFT_REQUIRE(id >= 0 && id < vocab_size(), "'post_processor' template '", name,
                      "': special token id ", id, " is not in [0, ", vocab_size(), ")");
      }
      n_special += p.ids.size();
    }
    CPUFT_REQUIRE(count[0] == 1 && count[1] == (pair ? 1 : 0), "'post_processor' template '", name,
                  "' must hold sequence A once", pair ? " and sequence B once" : "");
  };
  check(pipeline_.single, false, n_special_single_);
  check(pipeline_.pair, true, n_special_pair_);

  build_matcher(raw_added_, false);
  build_matcher(normalized_added_, true);
}

int32_t WordPieceTokenizer::find_id(const std::string& token) const {
  for (const AddedToken& t : pipeline_.added_tokens) {
    if (t.content == token) return t.id;
  }
  const auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

int32_t WordPieceTokenizer::require_id(const std::string& token, const char* what) const {
  CPUFT_REQUIRE(!token.empty(), "tokenizer: ", what, " is empty");
  const int32_t id = find_id(token);
  CPUFT_REQUIRE(id >= 0, "tokenizer: ", what, " '", token, "' is not in the vocabulary");
  return id;
}

void WordPieceTokenizer::build_matcher(Matcher& m, bool normalized) {
  m = Matcher{};
  std::u32string text, norm;
  for (size_t k = 0; k < pipeline_.added_tokens.size(); ++k) {
    const AddedToken& t = pipeline_.added_tokens[k];
    if (t.normalized != normalized) continue;
    decode_utf8(t.content, text);
    if (normalized) {  // matched by its normalized form (the whole normalizer, as tokenizers)
      normalize(text.data(), text.data() + text.size(), norm);
      text = norm;
    }
    if (text.empty()) continue;  // normalizes to nothing: never matches
    m.text.push_back(text);
    m.index.push_back(static_cast<int32_t>(k));
  }
  for (uint32_t i = 0; i < m.text.size(); ++i) {
    const char32_t c = m.text[i][0];
    m.by_first[c].push_back(i);
    if (c < 128) {
      m.ascii_first[c] = true;
    } else {
      m.non_ascii_first = true;
    }
  }
  for (auto& [c, list] : m.by_first) {
    std::stable_sort(list.begin(), list.end(),
                     [&](uint32_t a, uint32_t b) { return m.text[a].size() > m.text[b].size(); });
  }
}

void WordPieceTokenizer::split_added(
    const Matcher& m, const char32_t* s, size_t begin, size_t end,
    std::vector<std::pair<std::pair<size_t, size_t>, int32_t>>& pieces) const {
  // AddedVocabulary::find_matches: leftmost-longest matches, left to right, not overlapping; a
  // single_word match with a word character beside it is skipped (its span is not searched
  // again); lstrip/rstrip widen a match over the whitespace beside it.
  size_t start_offset = begin, i = begin;
  while (i < end) {
    if (s[i] < 128 ? !m.ascii_first[s[i]] : !m.non_ascii_first) {  // the common case, fast
      ++i;
      continue;
    }
    const auto it = m.by_first.find(s[i]);
    if (it == m.by_first.end()) {
      ++i;
      continue;
    }
    int32_t found = -1;
    for (const uint32_t k : it->second) {
      const std::u32string& t = m.text[k];
      if (t.size() <= end - i && std::u32string_view(s + i, t.size()) == t) {
        found = static_cast<int32_t>(k);
        break;
      }
    }
    if (found < 0) {
      ++i;
      continue;
    }
    const AddedToken& tok = pipeline_.added_tokens[static_cast<size_t>(m.index[found])];
    size_t start = i, stop = i + m.text[found].size();
    if (tok.single_word) {
      const bool start_space = start == begin || !(flags_of(s[start - 1]) & uni::kWord);
      const bool stop_space = stop == end || !(flags_of(s[stop]) & uni::kWord);
      if (!start_space || !stop_space) {
        i = stop;
        continue;
      }
    }
    if (tok.lstrip) {
      while (start > start_offset && (flags_of(s[start - 1]) & uni::kWhite)) --start;
    }
    if (tok.rstrip) {
      while (stop < end && (flags_of(s[stop]) & uni::kWhite)) ++stop;
    }
    if (start_offset < start) pieces.push_back({{start_offset, start}, -1});
    pieces.push_back({{start, stop}, tok.id});
    start_offset = i = stop;
  }
  if (start_offset < end) pieces.push_back({{start_offset, end}, -1});
}

void WordPieceTokenizer::normalize(const char32_t* begin, const char32_t* end,
                                   std::u32string& out) const {
  if (fused_) {
    normalize_fused(begin, end, out);
    return;
  }
  out.assign(begin, end);
  for (const NormalizeStep step : pipeline_.normalizer) run_step(step, out);
}

void WordPieceTokenizer::normalize_fused(const char32_t* begin, const char32_t* end,
                                         std::u32string& out) const {
  out.clear();
  bool needs_ordering = false;
  for (const char32_t* p = begin; p != end; ++p) {
    const char32_t c = *p;
    if (clean_) {
      const uint8_t f = flags_of(c);
      if (f & uni::kDrop) continue;
      if (f & uni::kSpace) {
        out.push_back(U' ');
        continue;
      }
    }
    const bool pad = cjk_ && c >= 0x3400 && is_cjk(c);
    if (pad) out.push_back(U' ');
    if (strip_) {
      needs_ordering |= append_nfd(c, out);
    } else {
      out.push_back(c);
    }
    if (pad) out.push_back(U' ');
  }
  if (strip_) {
    // HF runs NFD on the whole text and only then drops the marks, so order first.
    if (needs_ordering) canonical_order(out);
    std::erase_if(out, [](char32_t c) { return c >= 0x300 && (flags_of(c) & uni::kMark); });
  }
  if (lower_) lowercase(out);
}

void WordPieceTokenizer::tokenize_normalized(const std::u32string& text,
                                             std::vector<int32_t>& ids) const {
  auto words = [&](size_t b, size_t e) {
    if (bert_split_) {
      split_words(text.data() + b, text.data() + e, ids);
    } else {
      split_words_generic(text.data() + b, text.data() + e, ids);
    }
  };
  if (normalized_added_.empty()) {
    words(0, text.size());
    return;
  }
  std::vector<std::pair<Range, int32_t>> pieces;
  split_added(normalized_added_, text.data(), 0, text.size(), pieces);
  for (const auto& [r, id] : pieces) {
    if (id >= 0) {
      ids.push_back(id);
    } else {
      words(r.first, r.second);
    }
  }
}

void WordPieceTokenizer::split_words(const char32_t* begin, const char32_t* end,
                                     std::vector<int32_t>& ids) const {
  std::string word;
  size_t n_chars = 0;
  auto flush = [&] {
    if (n_chars == 0) return;
    word_piece(word, n_chars, ids);
    word.clear();
    n_chars = 0;
  };
  for (const char32_t* p = begin; p != end; ++p) {
    const char32_t c = *p;
    const uint8_t f = flags_of(c);
    if (f & uni::kWhite) {
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

void WordPieceTokenizer::split_words_generic(const char32_t* begin, const char32_t* end,
                                             std::vector<int32_t>& ids) const {
  std::vector<Range> words = {{0, static_cast<size_t>(end - begin)}}, next;
  for (const PreTokenizeStep& step : pipeline_.pre_tokenizer) {
    next.clear();
    switch (step.kind) {
      case PreTokenizeStep::kWhitespaceSplit:
        split_by(
            begin, words, [](char32_t c) { return (flags_of(c) & uni::kWhite) != 0; },
            SplitBehavior::kRemoved, next);
        break;
      case PreTokenizeStep::kPunctuation:
        split_by(
            begin, words, [](char32_t c) { return (flags_of(c) & uni::kPunct) != 0; },
            step.behavior, next);
        break;
      case PreTokenizeStep::kWhitespace:
        split_whitespace_regex(begin, words, next);
        break;
    }
    words.swap(next);
  }
  std::string word;
  for (const Range& r : words) {
    if (r.first == r.second) continue;
    word.clear();
    for (size_t i = r.first; i < r.second; ++i) append_utf8(word, begin[i]);
    word_piece(word, r.second - r.first, ids);
  }
}

void WordPieceTokenizer::word_piece(std::string_view word, size_t n_chars,
                                    std::vector<int32_t>& ids) const {
  if (n_chars > static_cast<size_t>(options_.max_input_chars_per_word)) {
    ids.push_back(unk_id_);
    return;
  }
  const std::string& prefix_text = pipeline_.continuing_subword_prefix;
  const size_t first = ids.size();
  std::string key;
  size_t start = 0;
  while (start < word.size()) {
    const size_t prefix = start == 0 ? 0 : prefix_text.size();
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
      if (start == 0) {
        it = ids_.find(word.substr(0, end));
      } else {
        key.assign(prefix_text);
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
  if (raw_added_.empty()) {
    normalize(chars.data(), chars.data() + chars.size(), normalized);
    tokenize_normalized(normalized, ids);
    return ids;
  }
  // Added tokens that are not normalized are matched in the raw text, before any normalization,
  // as HF's added vocabulary does; the text between them is tokenized on its own.
  std::vector<std::pair<Range, int32_t>> pieces;
  split_added(raw_added_, chars.data(), 0, chars.size(), pieces);
  for (const auto& [r, id] : pieces) {
    if (id >= 0) {
      ids.push_back(id);
      continue;
    }
    normalize(chars.data() + r.first, chars.data() + r.second, normalized);
    tokenize_normalized(normalized, ids);
  }
  return ids;
}

std::vector<std::string> WordPieceTokenizer::tokenize_to_strings(std::string_view text) const {
  std::vector<std::string> out;
  for (const int32_t id : tokenize(text)) out.push_back(token(id));
  return out;
}

void WordPieceTokenizer::apply_template(const std::vector<TemplatePiece>& t,
                                        const std::vector<int32_t>& a,
                                        const std::vector<int32_t>* b, Encoding& e) const {
  for (const TemplatePiece& p : t) {
    const std::vector<int32_t>& ids = p.sequence < 0 ? p.ids : p.sequence == 0 ? a : *b;
    e.input_ids.insert(e.input_ids.end(), ids.begin(), ids.end());
    e.token_type_ids.insert(e.token_type_ids.end(), ids.size(), pipeline_.type_ids ? p.type_id : 0);
  }
}

Encoding WordPieceTokenizer::encode(std::string_view a, const std::string_view* b,
                                    int max_length) const {
  std::vector<int32_t> ids_a = tokenize(a);
  std::vector<int32_t> ids_b;
  if (b) ids_b = tokenize(*b);
  const size_t n_special = b ? n_special_pair_ : n_special_single_;
  if (max_length >= 0) {
    CPUFT_REQUIRE(static_cast<size_t>(max_length) >= n_special, "max_length ", max_length,
                  " cannot hold the ", n_special, " special tokens");
    truncate_longest_first(ids_a, b ? &ids_b : nullptr,
                           static_cast<size_t>(max_length) - n_special);
  }
  Encoding e;
  e.input_ids.reserve(ids_a.size() + ids_b.size() + n_special);
  e.token_type_ids.reserve(e.input_ids.capacity());
  apply_template(b ? pipeline_.pair : pipeline_.single, ids_a, b ? &ids_b : nullptr, e);
  return e;
}

bool WordPieceTokenizer::is_bert_pipeline() const {
  if (options_.max_input_chars_per_word != 100 || cls_id_ < 0 || sep_id_ < 0 || pad_id_ < 0 ||
      mask_id_ < 0) {
    return false;
  }
  std::optional<WordPieceTokenizer> bert;
  try {
    bert.emplace(vocab_, options_);
  } catch (const Error&) {
    return false;
  }
  auto sorted = [](std::vector<AddedToken> v) {
    std::sort(v.begin(), v.end(),
              [](const AddedToken& x, const AddedToken& y) { return x.id < y.id; });
    return v;
  };
  WordPiecePipeline mine = pipeline_, theirs = bert->pipeline_;
  mine.added_tokens = sorted(mine.added_tokens);
  theirs.added_tokens = sorted(theirs.added_tokens);
  return mine == theirs;
}

std::string WordPieceTokenizer::summary() const {
  std::string s = str("WordPiece, ", source_, ", ", vocab_size(), " tokens, ",
                      lower_ ? "lower-cased" : "cased");
  if (!is_bert_pipeline()) s += ", pipeline of tokenizer.json";
  return s;
}

}  // namespace cpuft
