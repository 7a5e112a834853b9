#!/bin/bash
# Checks that two testbed binaries produce the same result bits: runs the default scenario and
# every scenarios/algorithms/*.yaml with each, then h5diffs /train, /comm, /eval and /replicas.
# Use it around a refactor that must not change results:
#   bash bench/bit_identity.sh OLD/testbed build/testbed [SCENARIO...]
set -euo pipefail
old=$1 new=$2
shift 2
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(scenarios/100mbps_ring.yaml scenarios/algorithms/*.yaml)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
for s in "${scenarios[@]}"; do
  name=$(basename "$s" .yaml)
  "$old" run "$s" -o "$out/$name.old.h5" > /dev/null
  "$new" run "$s" -o "$out/$name.new.h5" > /dev/null
  for group in /train /comm /eval /replicas; do
    if ! h5diff -q "$out/$name.old.h5" "$out/$name.new.h5" "$group" "$group"; then
      echo "DIFFERENT: $s $group"
      failed=1
    fi
  done
  [ $failed -ne 0 ] || echo "identical: $s"
done
exit $failed
