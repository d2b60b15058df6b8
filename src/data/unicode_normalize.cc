#include "data/unicode_normalize.h"

#include <algorithm>

#include "data/utf8.h"

namespace cpuft::unicode {

uint8_t combining_class(char32_t c) {
  if (c < 0x300) return 0;  // no combining mark below U+0300
  const CccRange* end = kCccRanges + kCccRangeCount;
  const CccRange* it = std::upper_bound(kCccRanges, end, c,
                                        [](char32_t v, const CccRange& r) { return v < r.first; });
  if (it == kCccRanges) return 0;
  --it;
  return c <= it->last ? it->ccc : 0;
}

const Mapping* find_mapping(const Mapping* table, size_t count, char32_t c) {
  const Mapping* end = table + count;
  const Mapping* it =
      std::lower_bound(table, end, c, [](const Mapping& m, char32_t v) { return m.cp < v; });
  return it != end && it->cp == c ? it : nullptr;
}

bool append_nfd(char32_t c, std::u32string& out) {
  if (c < 0xC0) {  // nothing below U+00C0 decomposes
    out.push_back(c);
    return false;
  }
  if (c >= kHangulFirst && c <= kHangulLast) {
    constexpr char32_t kL = 0x1100, kV = 0x1161, kT = 0x11A7, kTCount = 28, kNCount = 588;
    const char32_t s = c - kHangulFirst;
    out.push_back(kL + s / kNCount);
    out.push_back(kV + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kT + s % kTCount);
    return false;  // jamo are starters
  }
  bool non_starter = false;
  if (const Mapping* m = find_mapping(kDecomposition, kDecompositionCount, c)) {
    for (uint8_t k = 0; k < m->length; ++k) {
      const char32_t d = kMappingPool[m->offset + k];
      out.push_back(d);
      non_starter = non_starter || combining_class(d) != 0;
    }
  } else {
    out.push_back(c);
    non_starter = combining_class(c) != 0;
  }
  return non_starter;
}

// Runs of non-starters are short, so insertion sort.
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

namespace {

// Hangul syllables compose algorithmically (Unicode §3.12): L + V -> LV, LV + T -> LVT.
constexpr char32_t kL = 0x1100, kV = 0x1161, kT = 0x11A7, kLCount = 19, kVCount = 21, kTCount = 28;

// The primary composite of (a, b), or 0.
char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= kL && a < kL + kLCount && b >= kV && b < kV + kVCount)
    return kHangulFirst + ((a - kL) * kVCount + (b - kV)) * kTCount;
  if (a >= kHangulFirst && a <= kHangulLast && (a - kHangulFirst) % kTCount == 0 && b > kT &&
      b < kT + kTCount)
    return a + (b - kT);
  const Composition* end = kCompositions + kCompositionCount;
  const Composition* it =
      std::lower_bound(kCompositions, end, std::pair{a, b}, [](const Composition& c, auto key) {
        return c.first != key.first ? c.first < key.first : c.second < key.second;
      });
  return it != end && it->first == a && it->second == b ? it->composite : 0;
}

}  // namespace

void canonical_compose(std::u32string& s) {
  if (s.empty()) return;
  size_t starter = 0;
  // 256: the text starts with a non-starter, so nothing may compose until a starter comes.
  int last_class = combining_class(s[0]) == 0 ? 0 : 256;
  size_t kept = 1;
  for (size_t i = 1; i < s.size(); ++i) {
    const char32_t c = s[i];
    const int c_class = combining_class(c);
    // Not blocked: nothing between the starter and c, or everything between has a lower class.
    if (last_class < c_class || last_class == 0) {
      if (const char32_t composite = compose_pair(s[starter], c)) {
        s[starter] = composite;
        continue;
      }
    }
    if (c_class == 0) starter = kept;
    last_class = c_class;
    s[kept++] = c;
  }
  s.resize(kept);
}

void nfc_utf8(std::string_view text, std::string& out) {
  out.clear();
  thread_local std::u32string chars;
  chars.clear();
  bool ordering = false, ascii = true;
  for (size_t i = 0; i < text.size();) {
    const unsigned char byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      chars.push_back(byte);
      ++i;
      continue;
    }
    ascii = false;
    char32_t c = 0;
    const size_t length = decode_utf8_at(text, i, &c);
    i += length == 0 ? 1 : length;  // the caller has checked the text; never loop forever
    ordering |= append_nfd(c, chars);
  }
  if (ascii) {
    out.assign(text);
    return;
  }
  if (ordering) canonical_order(chars);
  canonical_compose(chars);
  for (const char32_t c : chars) append_utf8(out, c);
}

}  // namespace cpuft::unicode
