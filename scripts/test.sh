#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test.
#   1. format check (clang-format), the walls between layers (no #include across them)
#   2. release build (-Werror): unit + golden tests (HF fixtures, real MiniLM weights)
#   3. MPICH and Intel MPI builds: the distributed tests (label dist) against each
#   4. ASan + UBSan build: the same tests as 2; ThreadSanitizer build: the distributed tests
#   5. libFuzzer smoke runs of the safetensors parser, the tokenizer parsers (tokenizer.json,
#      Unigram, byte-level BPE, WordPiece vocab.txt), the data file readers, config.json and the
#      train arguments (command line, JSON/YAML args files)
# Usage: scripts/test.sh [--quick]   (--quick: format check, release build and tests only)
# It ends with one block naming every skipped test and why (scripts/skipped_tests.py).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
[ "${1:-}" = "--quick" ] && quick=1

scripts/setup.sh
scripts/fetch_minilm.sh
scripts/fetch_gpt2_bpe.sh  # GPT-2's real BPE vocabulary, for one slow tokenizer test
scripts/fetch_oneccl.sh   # the oneCCL communicator is built and tested when present
scripts/fetch_tensorboard.sh  # TensorBoard's own reader, for tests/tensorboard
scripts/fetch_arrow.sh >/dev/null  # Arrow/Parquet C++: the GLUE parquet reader likewise
clang_format=$(scripts/fetch_clang_format.sh | tail -n 1)

# Each ctest run writes a JUnit report; the skipped tests of all of them are listed at the end.
reports=()
run_ctest() {  # run_ctest PRESET [ctest args...]
  local report="$PWD/build/$1/ctest-junit.xml"
  rm -f "$report"
  reports+=("$report")
  # A failed test runs once more and counts as failed only if it fails again: the oneCCL
  # torchrun-style equivalence test hung once in about 6 runs on Debian 13 (under load), an
  # intermittent fault still to be found; a deterministic failure fails twice, and the first
  # failure stays in the output.
  # A failing test's own output is printed: CI shows only this command's output.
  ctest --preset "$@" --output-junit "$report" --repeat until-pass:2 --output-on-failure
}
trap '((${#reports[@]})) && python3 scripts/skipped_tests.py "${reports[@]}"' EXIT

echo "== format check ($("$clang_format" --version))"
git ls-files '*.h' '*.cc' | xargs "$clang_format" --dry-run -Werror
echo "== walls between the layers (scripts/check_walls.py)"
python3 scripts/check_walls.py

echo "== release build"
cmake --preset release >/dev/null
cmake --build --preset release
run_ctest release -j2

if [ "$quick" = 1 ]; then exit 0; fi

# The distributed tests against the two other MPI libraries (Open MPI is the default above).
dist_targets=(dist_collectives_test dist_equivalence_test dist_failure_test)
echo "== MPICH build (and without oneCCL): the distributed tests under MPICH and its Hydra launcher"
cmake --preset mpich >/dev/null
cmake --build --preset mpich --target "${dist_targets[@]}" dist_test
run_ctest mpich
echo "== Intel MPI build: the distributed tests under Intel MPI (PyPI) and its Hydra launcher"
scripts/fetch_intel_mpi.sh
cmake --preset intelmpi >/dev/null
cmake --build --preset intelmpi --target "${dist_targets[@]}"
run_ctest intelmpi

echo "== ASan + UBSan build"
cmake --preset asan-ubsan >/dev/null
cmake --build --preset asan-ubsan
run_ctest asan-ubsan -j2

# ThreadSanitizer on the distributed tests of the MPI backend (one OpenMP thread per rank): the
# gradient reducer's non-blocking all-reduces against MPI's own threads; tests/parallel/tsan.supp
# says what is suppressed and why the oneCCL ones (and srun, which runs one) are left out.
# The tsan test preset sets PMIX_MCA_gds=hash: PMIx 5's shared-memory store (Debian 13's Open MPI)
# maps its segment at a fixed address that ThreadSanitizer's memory layout refuses, and every
# MPI_Init failed there ("gds/shmem2 ... was given a different one"); the hash store keeps its
# data in each process's own memory.
echo "== ThreadSanitizer build: the distributed tests (MPI backend)"
cmake --preset tsan >/dev/null
cmake --build --preset tsan --target "${dist_targets[@]}"
run_ctest tsan -L dist -E 'ccl|torchrun|slurm|trainer_dist'

echo "== fuzz smoke run"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target fuzz_safetensors fuzz_unigram fuzz_bpe_tokenizer fuzz_tokenizer_json \
  fuzz_wordpiece fuzz_data_reader fuzz_model_config fuzz_train_args
ctest --test-dir build/fuzz \
  -R 'fuzz_(safetensors|unigram|bpe_tokenizer|tokenizer_json|wordpiece|data_reader|model_config|train_args)_smoke' \
  --output-on-failure
