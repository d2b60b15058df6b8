// Unicode normalization forms as Hugging Face `tokenizers` computes them: NFD (canonical
// decomposition and ordering; WordPiece's strip_accents and the NFD normalizer) and NFC (then
// canonical composition; the NFC normalizer of GPT-NeoX-style byte-level BPE tokenizers such as
// ModernBERT's). The character data is unicode_tables.cc and composition_table.cc, generated and
// checked against `tokenizers` code point by code point (tools/make_unicode_tables.py,
// tools/make_composition_table.py).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "data/unicode_tables.h"

namespace cpuft::unicode {

// Canonical combining class (0 for starters).
uint8_t combining_class(char32_t c);
// The entry of c in a sorted mapping table, or nullptr.
const Mapping* find_mapping(const Mapping* table, size_t count, char32_t c);
// Appends the full canonical decomposition of c; returns true if a non-starter was appended (then
// the text needs canonical_order).
bool append_nfd(char32_t c, std::u32string& out);
// Canonical ordering (Unicode §3.11): a stable sort by combining class inside every run of
// non-starters.
void canonical_order(std::u32string& s);
// Canonical composition of an NFD string, in place (UAX #15's algorithm): each character that is
// not blocked from the last starter and forms a primary composite with it is merged into it.
void canonical_compose(std::u32string& s);
// NFC of valid UTF-8 text, as UTF-8 (out is overwritten; ASCII passes through unchanged).
void nfc_utf8(std::string_view text, std::string& out);

}  // namespace cpuft::unicode
