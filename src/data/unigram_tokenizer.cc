#include "data/unigram_tokenizer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "data/grapheme_tables.h"
#include "data/unicode_normalize.h"
#include "data/unicode_tables.h"
#include "data/utf8.h"

namespace cpuft {
namespace {

namespace gr = cpuft::grapheme;
namespace uni = cpuft::unicode;
using Prepend = UnigramTokenizer::Prepend;

constexpr double kUnkPenalty = 10.0;  // tokenizers' and SentencePiece's K_UNK_PENALTY

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

// tokenizers' Punctuation pre-tokenizer: ASCII punctuation or category P* (the WordPiece tables'
// kPunct, checked against tokenizers there and by the DeBERTa code point digest here).
bool is_punctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  const uni::FlagRange* end = uni::kFlagRanges + uni::kFlagRangeCount;
  const uni::FlagRange* it = std::upper_bound(
      uni::kFlagRanges, end, c, [](char32_t v, const uni::FlagRange& r) { return v < r.first; });
  if (it == uni::kFlagRanges) return false;
  --it;
  return c <= it->last && (it->flags & uni::kPunct) != 0;
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
// Normalizers other than the charsmap (each one of tokenizers', on a whole piece).

// DebertaV2Tokenizer's Replace(Regex("\\s{2,}|[\\n\\r\\t]"), " "): a run of two or more White_Space
// characters (Oniguruma's \s, probed against tokenizers: the 25 of Rust's char::is_whitespace)
// becomes one space, and so does a lone tab, newline or carriage return.
void replace_whitespace_runs(std::string_view in, std::string& out) {
  out.clear();
  char32_t cp = 0;
  for (size_t i = 0; i < in.size();) {
    const size_t len = decode_utf8_at(in, i, &cp);
    if (!is_white_space(cp)) {
      out.append(in.substr(i, len));
      i += len;
      continue;
    }
    size_t end = i + len, n = 1;
    for (char32_t next = 0; end < in.size(); ++n) {
      const size_t next_len = decode_utf8_at(in, end, &next);
      if (!is_white_space(next)) break;
      end += next_len;
    }
    if (n >= 2 || cp == '\t' || cp == '\n' || cp == '\r') {
      out.push_back(' ');
    } else {
      out.append(in.substr(i, len));
    }
    i = end;
  }
}

// Lowercase: Rust's char::to_lowercase, one character at a time (the WordPiece tables' mapping).
void lowercase(std::string_view in, std::string& out) {
  out.clear();
  char32_t cp = 0;
  for (size_t i = 0; i < in.size();) {
    const size_t len = decode_utf8_at(in, i, &cp);
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp));
    } else if (const uni::Mapping* m =
                   uni::find_mapping(uni::kLowercase, uni::kLowercaseCount, cp)) {
      for (uint8_t k = 0; k < m->length; ++k) append_utf8(out, uni::kMappingPool[m->offset + k]);
    } else {
      out.append(in.substr(i, len));
    }
    i += len;
  }
}

// Strip: White_Space (Rust's char::is_whitespace) off either end. Returns whether any went.
bool strip_left(std::string& s) {
  size_t begin = 0;
  char32_t cp = 0;
  while (begin < s.size()) {
    const size_t len = decode_utf8_at(s, begin, &cp);
    if (!is_white_space(cp)) break;
    begin += len;
  }
  s.erase(0, begin);
  return begin > 0;
}

void strip_right(std::string& s) {
  size_t end = s.size();
  while (end > 0) {
    size_t c = end - 1;
    while (c > 0 && (static_cast<unsigned char>(s[c]) & 0xC0) == 0x80) --c;
    char32_t cp = 0;
    if (decode_utf8_at(s, c, &cp) == 0 || !is_white_space(cp)) break;
    end = c;
  }
  s.resize(end);
}

// Replace(Regex(" {2,}"), " ") in place.
void collapse_spaces(std::string& s) {
  size_t w = 0;
  for (size_t r = 0; r < s.size(); ++r) {
    if (s[r] == ' ' && w > 0 && s[w - 1] == ' ' && r > 0 && s[r - 1] == ' ') continue;
    s[w++] = s[r];
  }
  s.resize(w);
}

}  // namespace

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
    CPUFT_REQUIRE(find_invalid_utf8(charsmap_text()) == std::string_view::npos, where,
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

bool UnigramTokenizer::normalize(std::string_view piece, std::string& out) const {
  out.assign(piece);
  bool at_origin = true;
  std::string next;
  for (const Normalizer n : pipeline_.normalizers) {
    switch (n) {
      case Normalizer::kPrecompiled:
        apply_charsmap(out, next);
        out.swap(next);
        break;
      case Normalizer::kCollapseSpaces:
        collapse_spaces(out);
        break;
      case Normalizer::kWhitespaceRuns:
        replace_whitespace_runs(out, next);
        out.swap(next);
        break;
      case Normalizer::kNfc:
        uni::nfc_utf8(out, next);
        out.swap(next);
        break;
      case Normalizer::kLowercase:
        lowercase(out, next);
        out.swap(next);
        break;
      case Normalizer::kStripLeft:
        at_origin = !strip_left(out) && at_origin;
        break;
      case Normalizer::kStripRight:
        strip_right(out);
        break;
      case Normalizer::kStrip:
        at_origin = !strip_left(out) && at_origin;
        strip_right(out);
        break;
    }
  }
  return at_origin;
}

void UnigramTokenizer::apply_charsmap(std::string_view piece, std::string& out) const {
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

// Metaspace on one word: ' ' -> replacement, prepend, split before each replacement.
void UnigramTokenizer::metaspace(std::string_view w, bool at_origin, std::string& word,
                                 std::vector<int32_t>& ids) const {
  const Pipeline& p = pipeline_;
  if (!p.metaspace) {
    encode_word(w, ids);
    return;
  }
  const std::string& rep = p.replacement;
  word.clear();
  // Spaces become the replacement first, so a leading space counts as a leading replacement.
  const bool starts = (!w.empty() && w[0] == ' ') || w.substr(0, rep.size()) == rep;
  const bool prepend = p.prepend == Prepend::kAlways || (p.prepend == Prepend::kFirst && at_origin);
  if (prepend && !starts) word = rep;
  for (char c : w) {
    if (c == ' ') {
      word += rep;
    } else {
      word.push_back(c);
    }
  }
  if (!p.metaspace_split) {
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
}

// WhitespaceSplit (White_Space removed), then Punctuation (each punctuation character its own
// word), then Metaspace on each word; only a word that starts where `part` does can be at the
// text's origin.
void UnigramTokenizer::pre_tokenize(std::string_view part, bool at_origin, std::string& scratch,
                                    std::vector<int32_t>& ids) const {
  auto punctuation = [&](std::string_view w) {
    const bool origin = at_origin && w.data() == part.data();
    if (!pipeline_.punctuation) {
      metaspace(w, origin, scratch, ids);
      return;
    }
    char32_t cp = 0;
    size_t from = 0;
    for (size_t i = 0; i < w.size();) {
      const size_t len = decode_utf8_at(w, i, &cp);
      if (is_punctuation(cp)) {
        if (from < i) metaspace(w.substr(from, i - from), origin && from == 0, scratch, ids);
        metaspace(w.substr(i, len), origin && i == 0, scratch, ids);
        from = i + len;
      }
      i += len;
    }
    if (from < w.size()) metaspace(w.substr(from), origin && from == 0, scratch, ids);
  };
  if (!pipeline_.whitespace_split) {
    if (!part.empty()) punctuation(part);
    return;
  }
  char32_t cp = 0;
  size_t w = 0;
  for (size_t i = 0; i < part.size();) {
    const size_t len = decode_utf8_at(part, i, &cp);
    if (is_white_space(cp)) {
      if (w < i) punctuation(part.substr(w, i - w));
      w = i + len;
    }
    i += len;
  }
  if (w < part.size()) punctuation(part.substr(w));
}

std::vector<int32_t> UnigramTokenizer::tokenize(std::string_view text) const {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string_view::npos) throw Error(str("invalid UTF-8 at byte ", bad));
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::string normalized, scratch;
  split_added(
      text, /*normalized_pass=*/false,
      [&](std::string_view raw) {
        // Metaspace "first" prepends only at the text's first byte, as tokenizers' original
        // offset 0: the first stretch, unless a leading Strip moved its start.
        const bool origin = normalize(raw, normalized) && raw.data() == text.data();
        split_added(
            normalized, /*normalized_pass=*/true,
            [&](std::string_view part) {
              pre_tokenize(part, origin && part.data() == normalized.data(), scratch, ids);
            },
            ids);
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
  if (deberta_class_) {
    return str("Unigram (SentencePiece), ", source_, ", ", vocab_size_,
               " tokens, DebertaV2Tokenizer (NFC", deberta_.do_lower_case ? ", lowercase" : "",
               deberta_.split_by_punct ? ", split_by_punct" : "",
               deberta_.add_prefix_space ? "" : ", no prefix space", ")");
  }
  const std::vector<Normalizer>& n = pipeline_.normalizers;
  std::string normalizers = n.empty() ? ", no normalizer" : ", precompiled charsmap";
  if (n.size() > 1 || (n.size() == 1 && n[0] != Normalizer::kPrecompiled)) {
    static const char* const kNames[] = {"charsmap",  "Replace", "Replace", "NFC",
                                         "Lowercase", "Strip",   "Strip",   "Strip"};
    normalizers = ", normalizers";
    for (size_t k = 0; k < n.size(); ++k)
      normalizers += str(k == 0 ? " " : " + ", kNames[static_cast<size_t>(n[k])]);
  }
  return str("Unigram (SentencePiece), ", source_, ", ", vocab_size_, " tokens", normalizers);
}

}  // namespace cpuft
