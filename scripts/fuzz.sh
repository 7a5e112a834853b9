#!/usr/bin/env bash
# Runs every libFuzzer harness for SECONDS each (ASan + UBSan build in BUILD), from the seed
# corpus in tests/fuzz/corpus/ (copied, so the repository's seeds stay as they are), and prints
# each one's executions and coverage. A crash, leak, timeout or out-of-memory leaves its input in
# BUILD/fuzz/<harness>/ and fails the script: make it a regression test, then fix it.
#   scripts/fuzz.sh BUILD SECONDS [HARNESS ...]
set -uo pipefail
build=${1:?build folder}
seconds=${2:?seconds per harness}
shift 2
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(fuzz_units fuzz_bandwidth_trace fuzz_graphml fuzz_scenario fuzz_sweep)
root=$(cd "$(dirname "$0")/.." && pwd)
failed=0
for h in "${harnesses[@]}"; do
  work="$build/fuzz/$h"
  mkdir -p "$work/corpus"
  cp -n "$root/tests/fuzz/corpus/$h/"* "$work/corpus/" 2>/dev/null
  (cd "$root" && "$build/tests/fuzz/$h" "$work/corpus" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
      -artifact_prefix="$work/" -print_final_stats=1 > "$work/log.txt" 2>&1)
  rc=$?
  runs=$(grep -a -o 'stat::number_of_executed_units: *[0-9]*' "$work/log.txt" | grep -a -o '[0-9]*$')
  cov=$(grep -a -o 'cov: [0-9]*' "$work/log.txt" | tail -1)
  echo "$h: exit $rc, ${runs:-?} inputs in ${seconds} s, ${cov:-cov: ?} edges, corpus $(ls "$work/corpus" | wc -l) files"
  if [ $rc -ne 0 ]; then
    failed=1
    grep -a -m3 -E 'ERROR|SUMMARY|deadly|Test unit written' "$work/log.txt"
  fi
done
exit $failed
