#!/usr/bin/env bash
# The README's two commands as a newcomer runs them: on a fresh Debian (debootstrap minbase + git,
# python3, pip) holding a fresh clone of the committed project and nothing else (no ../shared, no
# cache, no build), in a chroot. Fails when any command fails, after printing the tail of its log.
#
# usage: .ci/fresh_machine.sh SUITE 'command' ['command' ...]     (SUITE: bookworm | trixie)
# Each command runs in the clone's root. Logs: $CPUFT_FRESH_DIR/SUITE/command-N.log.
# Cached between runs: the debootstrap tarball of each suite and downloaded .deb files (apt's own
# archive cache); never anything the project builds or fetches.
# Needs root, debootstrap (installed here when missing) and network access to Debian's mirror.
set -euo pipefail
suite=$1
shift
proj=$(cd "$(dirname "$0")/.." && pwd)
cache=${CPUFT_FRESH_CACHE:-$HOME/.cache/cpuft/fresh-machine}
work=${CPUFT_FRESH_DIR:-/tmp/cpuft-fresh}/$suite
root=$work/rootfs
mkdir -p "$cache/apt-archives-$suite/partial" "$work"

if ! command -v debootstrap >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi
# The Debian mirror this machine's apt uses (its first URIs: line, or its first deb line).
mirror=$(grep -h -m1 -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | head -n1 || true)
[ -n "$mirror" ] || mirror=$(grep -h -m1 -E '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | head -n1 || true)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian

tgz=$cache/$suite-minbase.tgz
if [ ! -f "$tgz" ]; then
  echo "fresh_machine: debootstrap $suite (cached in $tgz)"
  rm -rf "$work/seed"
  debootstrap --variant=minbase --include=ca-certificates,git,python3,python3-pip,python3-venv \
    "$suite" "$work/seed" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log"; exit 1; }
  tar -C "$work/seed" -czf "$tgz.tmp" . && mv "$tgz.tmp" "$tgz" && rm -rf "$work/seed"
fi

unmount_all() {
  awk -v r="$root" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
}
unmount_all
# Never delete through a bind mount (that would delete the host's /dev or /sys).
if awk -v r="$root" '$2 == r || index($2, r "/") == 1 {found = 1} END {exit !found}' /proc/mounts; then
  echo "fresh_machine: mounts remain under $root; not deleting it" >&2
  exit 1
fi
rm -rf "$root"
mkdir -p "$root"
tar -C "$root" -xzf "$tgz"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# What this machine's package clients rely on: its CA bundle and pip's configuration.
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
# apt sources: this machine's own when it runs the same suite (updates and security included), else
# debootstrap's (the suite's main archive on the same mirror).
if [ "$suite" = "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" ] && [ -d /etc/apt/sources.list.d ]; then
  cp -a /etc/apt/sources.list.d/. "$root/etc/apt/sources.list.d/" && rm -f "$root/etc/apt/sources.list"
fi
passenv=()
for v in PIP_INDEX_URL PIP_CERT PIP_DEFAULT_TIMEOUT PIP_DISABLE_PIP_VERSION_CHECK SSL_CERT_FILE \
         SSL_CERT_DIR REQUESTS_CA_BUNDLE CURL_CA_BUNDLE OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; do
  [ -n "${!v:-}" ] && passenv+=("$v=${!v}")
done
# A fresh clone of what is committed: no build, no untracked file, no ../shared beside it.
git clone -q "$proj" "$root/root/project"

# The root is made a mount point (ip netns exec remounts / as a slave); /sys and /dev are bound
# recursively (cgroup2 for slurmd); apt's archive cache is the one kept between runs.
mount --bind "$root" "$root"
mount --bind /proc "$root/proc"
for m in sys dev; do mount --rbind "/$m" "$root/$m" && mount --make-rslave "$root/$m"; done
mount --bind "$cache/apt-archives-$suite" "$root/var/cache/apt/archives"
trap unmount_all EXIT

i=0
for cmd in "$@"; do
  i=$((i + 1))
  log=$work/command-$i.log
  start=$(date +%s)
  rc=0
  chroot "$root" env -i "${passenv[@]}" HOME=/root TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -lc "cd /root/project && $cmd" >"$log" 2>&1 </dev/null || rc=$?
  echo "fresh_machine $suite: command $i: exit $rc after $(($(date +%s) - start)) s: $cmd"
  if [ "$rc" != 0 ]; then
    echo "---- last 40 lines of $log"
    tail -n 40 "$log"
    exit 1
  fi
  echo "---- last 8 lines"
  tail -n 8 "$log"
done
