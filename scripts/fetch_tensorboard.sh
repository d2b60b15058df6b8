#!/usr/bin/env bash
# Puts TensorBoard's own event-file reader into ~/.cache/cpuft for the test that reads cpuft's
# event files with it (tests/tensorboard). Three pure-Python wheels from PyPI, pinned by version and
# sha256, unpacked side by side into one folder that the test puts on PYTHONPATH (no pip install,
# no venv: nothing of the system Python changes):
#   tensorboard   the reader (event_accumulator, event_file_loader, its TFRecord CRC checks)
#   protobuf      its runtime (the pure-Python wheel: the same on Python 3.11 and 3.13)
#   absl-py       imported by tensorboard's flags
# numpy, which tensorboard imports too, is Debian's python3-numpy (scripts/setup.sh): numpy wheels
# are built per Python version, so one pin could not serve Debian 12 and 13.
# Usage: scripts/fetch_tensorboard.sh [DEST]   (default: $HOME/.cache/cpuft/tensorboard-2.21.0)
set -euo pipefail
source "$(dirname "$0")/pinned_wheel.sh"

dest="${1:-${CPUFT_TENSORBOARD_DIR:-${CPUFT_CACHE_DIR:-$HOME/.cache/cpuft}/tensorboard-2.21.0}}"
wheels=(
  "tensorboard==2.21.0 7279316dcb6bd5bc391d623dea841531299cde1887310e8133bc34a996d32255"
  "protobuf==7.36.2 bdb3a345d48db958e6ce1f18e508beb0cc981d64f24088427549c866cd039f1e"
  "absl-py==2.5.1 721200f2f0e9960f2ca9dc3a2a706b201f5f75d812c158f059cbbe29eeafbdb8"
)

if [ -f "$dest/.complete" ] &&
   [ "$(cat "$dest/.complete")" = "$(printf '%s\n' "${wheels[@]}")" ]; then
  echo "fetch_tensorboard: tensorboard present in $dest"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/stage"
for entry in "${wheels[@]}"; do
  set -- $entry
  # protobuf publishes a compiled wheel per platform beside the pure-Python one: ask for the latter.
  fetch_pinned_wheel fetch_tensorboard "$1" "$2" "$work" --only-binary=:all: --platform any \
    --implementation py --python-version 3.11 >/dev/null
done
for wheel in "$work"/*.whl; do
  unzip -q -o "$wheel" -d "$work/stage"
done
printf '%s\n' "${wheels[@]}" > "$work/stage/.complete"

mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp" && mv "$work/stage" "$dest.tmp" && rm -rf "$dest" && mv "$dest.tmp" "$dest"
echo "fetch_tensorboard: tensorboard in $dest"
