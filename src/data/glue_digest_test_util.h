// Shared by the slow GLUE tests of the tokenizers (WordPiece, byte-level BPE, Unigram): the FNV-1a
// 64 digest of ids that the fixture scripts write (tools/make_*_fixture.py, the same formula), and
// a plain TSV reader that gives each row's text columns exactly as the scripts read them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer.h"

namespace cpuft::testing {

inline constexpr uint64_t kFnvOffset = 0xCBF29CE484222325ull, kFnvPrime = 0x100000001B3ull;
inline constexpr uint32_t kSepText = 0xFFFFFFFF, kSepIds = 0xFFFFFFFE, kSepTypes = 0xFFFFFFFD;

inline void fnv(uint64_t& h, uint32_t v) {
  for (int k = 0; k < 4; ++k) {
    h ^= (v >> (8 * k)) & 0xFF;
    h *= kFnvPrime;
  }
}
inline void fnv(uint64_t& h, const std::vector<int32_t>& ids, uint32_t sep) {
  for (int32_t id : ids) fnv(h, static_cast<uint32_t>(id));
  fnv(h, sep);
}

inline std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, h);
  return buf;
}

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Text columns of each data row: split on '\n' (no final empty line), on '\t', no quoting.
inline std::vector<std::vector<std::string>> read_rows(const std::string& path, bool header,
                                                       const std::vector<int>& columns) {
  const std::string text = read_all(path);
  std::vector<std::vector<std::string>> rows;
  size_t pos = 0;
  bool first = true;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    if (first && header) {
      first = false;
      continue;
    }
    first = false;
    std::vector<std::string_view> fields;
    size_t f = 0;
    while (true) {
      const size_t tab = line.find('\t', f);
      fields.push_back(line.substr(f, tab == std::string_view::npos ? line.npos : tab - f));
      if (tab == std::string_view::npos) break;
      f = tab + 1;
    }
    std::vector<std::string> row;
    for (int c : columns) {
      EXPECT_LT(static_cast<size_t>(c), fields.size()) << path << " row " << rows.size();
      row.emplace_back(static_cast<size_t>(c) < fields.size() ? fields[c] : std::string_view());
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// The digest of one file's rows through `tok`, as the fixture scripts compute it: per row, the ids
// of each text column (tokenize) and then the model input (encode with max_length), hashed whole
// and per block of `block_rows` rows.
struct RowsDigest {
  std::string hash;
  size_t tokens = 0;                // tokenize() ids over all text columns
  std::vector<std::string> blocks;  // hash of rows [k * block_rows, (k + 1) * block_rows)
};
inline RowsDigest digest_rows(const Tokenizer& tok,
                              const std::vector<std::vector<std::string>>& rows, int max_length,
                              size_t block_rows) {
  RowsDigest d;
  uint64_t h = kFnvOffset, block = kFnvOffset;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    for (const std::string& text : r) {
      const std::vector<int32_t> ids = tok.tokenize(text);
      d.tokens += ids.size();
      fnv(h, ids, kSepText);
      fnv(block, ids, kSepText);
    }
    const std::string_view b = r.size() > 1 ? std::string_view(r[1]) : std::string_view();
    const Encoding e = tok.encode(r[0], r.size() > 1 ? &b : nullptr, max_length);
    for (uint64_t* x : {&h, &block}) {
      fnv(*x, e.input_ids, kSepIds);
      fnv(*x, e.token_type_ids, kSepTypes);
    }
    if ((i + 1) % block_rows == 0 || i + 1 == rows.size()) {
      d.blocks.push_back(hex(block));
      block = kFnvOffset;
    }
  }
  d.hash = hex(h);
  return d;
}

// Compares one file of a GLUE digest (path, header, columns, rows, block_hashes, tokens, hash)
// with tok's ids: each differing block is one failure naming `source`, the file and its rows.
// Adds the file's rows to *rows_seen and returns how many lie in identical blocks.
inline size_t check_file_digest(const Tokenizer& tok, const nlohmann::json& file,
                                const std::string& glue_dir, const std::string& source,
                                int max_length, size_t block_rows, size_t* rows_seen) {
  const std::string rel = file.at("path");
  const auto rows = read_rows(glue_dir + "/" + rel, file.at("header"), file.at("columns"));
  EXPECT_EQ(rows.size(), file.at("rows").get<size_t>()) << rel;
  const RowsDigest got = digest_rows(tok, rows, max_length, block_rows);
  const auto& want = file.at("block_hashes");
  size_t identical_rows = 0;
  for (size_t k = 0; k < got.blocks.size(); ++k) {
    const size_t first = k * block_rows, last = std::min(rows.size(), first + block_rows) - 1;
    if (k < want.size() && got.blocks[k] == want[k].get<std::string>()) {
      identical_rows += last + 1 - first;
    } else {
      ADD_FAILURE() << source << ": " << rel << ": ids differ from HF in data rows " << first
                    << ".." << last << " (0-based, after the header); first row of the block: "
                    << ::testing::PrintToString(rows[first]);
    }
  }
  *rows_seen += rows.size();
  EXPECT_EQ(got.tokens, file.at("tokens").get<size_t>()) << source << " " << rel;
  EXPECT_EQ(got.hash, file.at("hash").get<std::string>()) << source << " " << rel;
  return identical_rows;
}

}  // namespace cpuft::testing
