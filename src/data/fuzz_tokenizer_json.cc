// libFuzzer target for the tokenizer folder reader: any tokenizer.json / tokenizer_config.json pair
// must either give a tokenizer or throw cpuft::Error; a tokenizer it gives must tokenize and encode
// without crashing, with ids below vocab_size() and token types 0 or 1. Any other exception, crash,
// leak or sanitizer report is a bug.
//
// Input: tokenizer.json's text, then optionally a NUL byte and tokenizer_config.json's text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/check.h"
#include "data/wordpiece_tokenizer.h"

namespace {

void check_encoding(const cpuft::WordPieceTokenizer& t, const cpuft::Encoding& e) {
  if (e.input_ids.size() != e.token_type_ids.size()) std::abort();
  for (const int32_t id : e.input_ids) {
    if (id < 0 || id >= t.vocab_size()) std::abort();
  }
  for (const int32_t type : e.token_type_ids) {
    if (type != 0 && type != 1) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  cpuft::TokenizerFolderFiles files;
  files.dir = "fuzz";
  const size_t nul = input.find('\0');
  files.tokenizer_json = std::string(input.substr(0, nul));
  if (nul != std::string_view::npos)
    files.tokenizer_config_json = std::string(input.substr(nul + 1));
  try {
    const cpuft::WordPieceTokenizer t = cpuft::WordPieceTokenizer::from_files(files);
    static const char* const kTexts[] = {
        "Hello, world! [CLS] [MASK]x<ent> caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87",
        "  a\tb\x0b c\xc2\x85 xyz  [E1]  unbelievable!!! ...", "",
        "e\xcc\x81 \xc4\xb0 \xef\xac\x81"};
    for (const char* a : kTexts) {
      for (const int32_t id : t.tokenize(a)) {
        if (id < 0 || id >= t.vocab_size()) std::abort();
      }
      const std::string_view b = kTexts[1];
      for (const int max_length : {-1, 0, 3, 8}) {
        try {
          check_encoding(t, t.encode(a, nullptr, max_length));
          check_encoding(t, t.encode(a, &b, max_length));
        } catch (const cpuft::Error&) {
          // max_length too small for the template's special tokens: expected.
        }
      }
    }
    (void)t.summary();
    (void)t.is_bert_pipeline();
  } catch (const cpuft::Error&) {
    // Rejected input: expected.
  }
  return 0;
}
