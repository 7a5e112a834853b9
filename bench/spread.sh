#!/bin/bash
# Benchmark of one run spread over processes (docs/scale-out.md): host seconds of the spine
# scenario (CNN on Fashion-MNIST, DDP, ns-3 ring) with N replicas in 1 process or over K
# processes (testbed launch), and rank 0's share of its run loop spent in Gloo sends and waits.
# Usage: bench/spread.sh BUILD/testbed [STEPS] [NODES...] (defaults: 10 steps; 8 16 32 64).
set -eu
testbed=$(realpath "$1")
steps=${2:-10}
shift 2 || shift $#
nodes=${*:-8 16 32 64}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sets="--set workload.steps=$steps --set workload.eval_every=$steps --set workload.eval_samples=500 -q"

# One row: wall seconds (start-up included), rank 0's run-loop host seconds, seconds in Gloo.
measure() {
  local label=$1; shift
  local start end out
  start=$(date +%s.%N)
  out=$(cd "$work" && "$testbed" "$@" -o run.h5 2>&1)
  end=$(date +%s.%N)
  local host gloo
  host=$(echo "$out" | awk '/^host time/ { print $3 }')
  gloo=$(echo "$out" | awk '/^processes/ { print $5 }')
  awk -v label="$label" -v a="$start" -v b="$end" -v host="$host" -v gloo="${gloo:-0}" -v replica_steps="$replica_steps" \
    'BEGIN { printf "%-26s %8.2f %8.2f %9.2f %6.1f %%\n", label, b - a, host, 1e3 * host / replica_steps, 100 * gloo / host }'
}

printf "%-26s %8s %8s %9s %8s\n" "nodes, processes x threads" "wall s" "host s" "ms/r-step" "in Gloo"
for n in $nodes; do
  replica_steps=$((n * steps))
  scenario="$here/scenarios/100mbps_ring.yaml"
  measure "$n, 1 x 2" run "$scenario" $sets --set nodes=$n --set threads=2
  measure "$n, 1 x 1" run "$scenario" $sets --set nodes=$n --set threads=1
  for k in 2 4; do
    measure "$n, $k x 1" launch -n $k "$scenario" $sets --set nodes=$n --set threads=1
  done
done
