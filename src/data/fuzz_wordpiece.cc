// libFuzzer target for the WordPiece tokenizer built from vocab.txt (BertTokenizer's pipeline, the
// default model's): any vocab.txt must either give a tokenizer or throw cpuft::Error, and a
// tokenizer must tokenize and encode any text, one text or a pair, with ids below vocab_size(),
// token types 0 or 1 and no more than max_length ids. Any other exception, crash, hang, leak or
// sanitizer report is a bug.
//
// The first byte chooses the options and the rest is read as
//   bit 7 set:   text a [NUL text b] for the real bert-base-uncased vocabulary
//                (tests/fixtures/vocab), cased when bit 0 is clear;
//   bit 7 clear: vocab.txt NUL text a [NUL text b];
// bits 0-3 are do_lower_case, strip_accents given, its value and tokenize_chinese_chars (written
// into tokenizer_config.json, so the folder reader's path is the one taken); bits 4-6 pick
// max_length.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "data/wordpiece_tokenizer.h"

#ifndef CPUFT_FUZZ_VOCAB
#error "CPUFT_FUZZ_VOCAB must name tests/fixtures/vocab/bert-base-uncased-vocab.txt"
#endif

namespace {

using cpuft::TokenizerFolderFiles;
using cpuft::WordPieceTokenizer;

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string config_json(uint8_t flags) {
  std::string config = "{\"do_lower_case\": ";
  config += (flags & 1) ? "true" : "false";
  if (flags & 2) config += (flags & 4) ? ", \"strip_accents\": true" : ", \"strip_accents\": false";
  config +=
      (flags & 8) ? ", \"tokenize_chinese_chars\": true}" : ", \"tokenize_chinese_chars\": false}";
  return config;
}

WordPieceTokenizer make(std::string vocab_txt, uint8_t flags) {
  TokenizerFolderFiles files;
  files.dir = "fuzz";
  files.vocab_txt = std::move(vocab_txt);
  files.tokenizer_config_json = config_json(flags);
  return WordPieceTokenizer::from_files(files);
}

const WordPieceTokenizer& fixture(bool lower) {
  static const std::string vocab = read_file(CPUFT_FUZZ_VOCAB);
  static const WordPieceTokenizer uncased = make(vocab, 1 | 8);
  static const WordPieceTokenizer cased = make(vocab, 8);
  return lower ? uncased : cased;
}

void check_ids(const WordPieceTokenizer& t, const std::vector<int32_t>& ids) {
  for (const int32_t id : ids) {
    if (id < 0 || id >= t.vocab_size()) std::abort();
  }
}

void exercise(const WordPieceTokenizer& t, std::string_view a, const std::string_view* b,
              int max_length) {
  try {
    check_ids(t, t.tokenize(a));
    if (b != nullptr) check_ids(t, t.tokenize(*b));
  } catch (const cpuft::Error&) {
    return;  // invalid UTF-8 in the text: expected, and encode() would say the same
  }
  for (const std::string_view* second : {static_cast<const std::string_view*>(nullptr), b}) {
    cpuft::Encoding e;
    try {
      e = t.encode(a, second, max_length);
    } catch (const cpuft::Error&) {
      continue;  // max_length too small for the special tokens: expected
    }
    check_ids(t, e.input_ids);
    if (e.input_ids.size() != e.token_type_ids.size()) std::abort();
    if (max_length >= 0 && e.input_ids.size() > static_cast<size_t>(max_length)) std::abort();
    for (const int32_t type : e.token_type_ids) {
      if (type != 0 && type != 1) std::abort();
    }
    if (second == nullptr) break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  static const int kMaxLengths[] = {-1, 0, 2, 3, 5, 8, 16, 128};
  const int max_length = kMaxLengths[(flags >> 4) & 7];
  try {
    std::optional<WordPieceTokenizer> own;
    if (!(flags & 0x80)) {
      const size_t nul = in.find('\0');
      if (nul == std::string_view::npos) return 0;
      own.emplace(make(std::string(in.substr(0, nul)), flags));
      in.remove_prefix(nul + 1);
    }
    const WordPieceTokenizer& t = own ? *own : fixture(flags & 1);
    const size_t nul = in.find('\0');
    const std::string_view a = in.substr(0, nul);
    const std::string_view b = nul == std::string_view::npos ? "" : in.substr(nul + 1);
    exercise(t, a, nul == std::string_view::npos ? nullptr : &b, max_length);
    // Not for the fixture: is_bert_pipeline() builds a tokenizer of the whole vocabulary.
    if (own) (void)own->summary();
  } catch (const cpuft::Error&) {
    // Rejected vocabulary: expected.
  }
  return 0;
}
