// UTF-8: one strict decoder (the data reader's file check and the tokenizer both use it) and the
// encoder of one code point (the tokenizer and its tests).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cpuft {

// Decodes the sequence starting at s[i] (i < s.size()) into *code_point and returns its length, or
// returns 0 when it is not valid UTF-8 by RFC 3629: stray continuation bytes, truncated sequences,
// overlong forms, surrogates and code points above U+10FFFF are all refused (Rust's str, and so
// Hugging Face's tokenizers, never see them).
inline size_t decode_utf8_at(std::string_view s, size_t i, char32_t* code_point) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned b0 = p[i];
  if (b0 < 0x80) {
    *code_point = b0;
    return 1;
  }
  size_t len = 0;
  unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  char32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const unsigned b = p[i + k];
    if (b < (k == 1 ? lo : 0x80u) || b > (k == 1 ? hi : 0xBFu)) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  *code_point = cp;
  return len;
}

// Byte offset of the first invalid sequence in s, or std::string_view::npos when s is valid.
inline size_t find_invalid_utf8(std::string_view s) {
  char32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t len = decode_utf8_at(s, i, &cp);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

inline void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace cpuft
