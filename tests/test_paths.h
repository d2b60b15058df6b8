// Where the tests find their files: everything lives in the repository (fixtures, vocabularies,
// GLUE data) except the real all-MiniLM-L6-v2 weights, which scripts/fetch_minilm.sh puts in a
// cache folder (pinned by sha256). No test reads anything outside these places.
#pragma once

#include <cstdlib>
#include <string>

#ifndef CPUFT_DEFAULT_SOURCE_DIR
#error "CPUFT_DEFAULT_SOURCE_DIR must be defined (the cpuft_test_paths target does)"
#endif

namespace cpuft::testing {

// The repository root: CPUFT_SOURCE_DIR (set by CTest) or the one the test was built from.
inline std::string source_dir() {
  const char* env = std::getenv("CPUFT_SOURCE_DIR");
  return env && *env ? std::string(env) : std::string(CPUFT_DEFAULT_SOURCE_DIR);
}

// tests/fixtures/<name>
inline std::string fixture_path(const std::string& name) {
  return source_dir() + "/tests/fixtures/" + name;
}

// The GLUE files shipped in data/glue (MRPC, CoLA, SST-2, RTE, STS-B; data/README.md).
inline std::string glue_dir() {
  return source_dir() + "/data/glue";
}

// A BERT WordPiece vocabulary in tests/fixtures/vocab ("bert-base-uncased-vocab.txt", ...).
inline std::string vocab_path(const std::string& name) {
  return fixture_path("vocab/" + name);
}

// The all-MiniLM-L6-v2 folder scripts/fetch_minilm.sh fills: CPUFT_MINILM_DIR, else its default.
inline std::string minilm_dir() {
  if (const char* dir = std::getenv("CPUFT_MINILM_DIR"); dir && *dir) return dir;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.cache/cpuft/models/all-MiniLM-L6-v2";
}

}  // namespace cpuft::testing
