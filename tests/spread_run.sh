#!/bin/bash
# One run spread over 2 and 3 processes (testbed launch, c10d Gloo on loopback) against the same
# run in one process: the HDF5 files must be equal bit for bit (h5diff) but for the summary's
# host time, for ddp, diloco, sparta and gossip (and powersgd, whose steps have rounds, and dear,
# whose forward waits at gates; gossip with LoRA adapters, whose agreement is over the trainable
# ranges; DiLoCo across replica groups, a group's GPUs in two processes). Then the failures: a rank killed mid-run, and a
# rank stopped (hung), end the others within --timeout with exit code 1 and a readable file
# whose status says failed and names the rank; SIGTERM to testbed launch ends every rank.
set -u
testbed=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
cp "$here/spread_base.yaml" "$work/base.yaml"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Differences other than the summary's host seconds (h5diff cannot exclude one attribute).
differences() {
  h5diff "$1" "$2" 2>&1 | grep -v '^attribute: <host_time_s of </summary>>' |
    grep -v '^1 differences found$' | grep -v '^$'
}

# label|overrides
cases=(
  "ddp|--set algorithm.name=ddp"
  "diloco|--set algorithm.name=diloco --set algorithm.H=5"
  "sparta|--set algorithm.name=sparta"
  "gossip|--set algorithm.name=gossip"
  "powersgd|--set algorithm.name=powersgd"
  "dear|--set algorithm.name=dear"
  "gossip-lora|--set algorithm.name=gossip --set workload.adapter.kind=lora"
  "powersgd-long-plans|--set algorithm.name=powersgd"  # every plan as head and body (below)
  # DiLoCo across 3 ZeRO-2 groups of 2 GPUs: over two processes group 1's GPUs are in both.
  "zero2-groups|--set topology.kind=gpu_hosts --set topology.gpus_per_host=2 --set replica_group.gpus=2 --set replica_group.parallelism=zero2 --set algorithm.name=diloco --set algorithm.H=5"
)
for case in "${cases[@]}"; do
  name=${case%%|*}
  sets=${case#*|}
  sets=${sets%%  #*}
  # A plan longer than the head travels as a head and a body; the scenarios' plans all fit in
  # 128 doubles, so one case shortens the head to 4 in every process.
  if [ "$name" = powersgd-long-plans ]; then export TESTBED_PLAN_HEAD=4; else unset TESTBED_PLAN_HEAD; fi
  # Three processes (2 + 2 + 2, a process in the middle) for the cases whose messages differ most
  # in kind; the others over two.
  case $name in ddp|dear|gossip-lora|powersgd-long-plans) counts="1 2 3" ;; *) counts="1 2" ;; esac
  for processes in $counts; do
    mkdir -p "$work/$name/$processes"
    # The same relative output path, so that the scenario stored in the file is the same text.
    if [ "$processes" = 1 ]; then
      (cd "$work/$name/$processes" && "$testbed" run ../../base.yaml $sets -o run.h5 -q > log 2>&1)
    else
      (cd "$work/$name/$processes" && "$testbed" launch -n "$processes" ../../base.yaml $sets -o run.h5 -q > log 2>&1)
    fi
    code=$?
    [ $code = 0 ] || { fail "$name over $processes processes exited $code"; cat "$work/$name/$processes/log"; continue; }
    [ "$processes" = 1 ] && continue
    diff=$(differences "$work/$name/1/run.h5" "$work/$name/$processes/run.h5")
    if [ -n "$diff" ]; then
      fail "$name over $processes processes differs from one process:"
      echo "$diff" | head -20
    else
      echo "ok: $name over $processes processes equals one process bit for bit"
    fi
  done
done

unset TESTBED_PLAN_HEAD

# A rank that fails mid-run: killed (its sockets close) or stopped (it goes silent).
timeout_s=5
for how in KILL STOP; do
  dir="$work/fail-$how"
  mkdir -p "$dir"
  (cd "$dir" && exec "$testbed" launch -n 2 ../base.yaml --set workload.steps=100000 -o run.h5 -q --timeout $timeout_s \
     > log 2>&1) &
  launcher=$!
  # Rank 0 has written its first rows (the file exists) and both ranks are training.
  for _ in $(seq 100); do [ -s "$dir/run.h5" ] && break; sleep 0.1; done
  sleep 1
  rank1=""
  for pid in $(pgrep -P $launcher); do
    grep -qz '^RANK=1$' /proc/$pid/environ 2>/dev/null && rank1=$pid
  done
  rank0=$(pgrep -P $launcher | grep -v "^$rank1\$")
  [ -n "$rank1" ] || { fail "$how: no rank 1 under the launcher"; continue; }
  kill -$how "$rank1"
  start=$(date +%s.%N)
  # Rank 0 ends on its own (launch may still be waiting to kill a stopped rank).
  while kill -0 "$rank0" 2>/dev/null; do sleep 0.05; done
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  kill -9 "$rank1" 2>/dev/null  # a stopped rank would keep launch waiting for its grace
  wait $launcher
  code=$?
  echo "$how: rank 0 ended $seconds s after rank 1 got SIG$how; launch exited $code"
  awk -v s="$seconds" -v t="$timeout_s" 'BEGIN { exit !(s < t + 2) }' || fail "$how: rank 0 took $seconds s (timeout $timeout_s s)"
  [ $code = 1 ] || fail "$how: launch exited $code, expected 1"
  status=$(/usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1],'r'); print(f.attrs['status'], '|', f.attrs['error'], '|', len(f['train/step']))" "$dir/run.h5" 2>&1)
  echo "$how: file says $status"
  case "$status" in
    "failed | rank 1 "*) ;;
    *) fail "$how: the file does not say failed naming rank 1: $status"; cat "$dir/log" ;;
  esac
done

# SIGTERM to testbed launch reaches every rank: the run ends, exit 1, the file says interrupted.
dir="$work/term"
mkdir -p "$dir"
(cd "$dir" && exec "$testbed" launch -n 2 ../base.yaml --set workload.steps=100000 -o run.h5 -q > log 2>&1) &
launcher=$!
for _ in $(seq 100); do [ -s "$dir/run.h5" ] && break; sleep 0.1; done
sleep 1
kill -TERM $launcher
wait $launcher
code=$?
status=$(/usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1],'r'); print(f.attrs['status'], '|', f.attrs['error'])" "$dir/run.h5" 2>&1)
echo "TERM to launch: exit $code; file says $status"
[ $code = 1 ] || fail "TERM: launch exited $code, expected 1"
case "$status" in
  "failed | "*interrupted*) ;;
  *) fail "TERM: the file does not say interrupted: $status"; cat "$dir/log" ;;
esac

# A rank whose peers never come: exit 1 after --timeout, naming the rendezvous; no file.
dir="$work/alone"
mkdir -p "$dir"
port=$((20000 + RANDOM % 20000))
(cd "$dir" && "$testbed" run ../base.yaml -o run.h5 -q --world-size 2 --rank 0 --master 127.0.0.1:$port --timeout 2 \
   > log 2>&1)
code=$?
echo "alone: exit $code: $(cat "$dir/log")"
[ $code = 1 ] || fail "alone: exit $code, expected 1"
grep -q "could not meet the others" "$dir/log" || fail "alone: the error does not say so"
[ ! -e "$dir/run.h5" ] || fail "alone: a file was written"
[ ! -e "${TMPDIR:-/tmp}/testbed-rendezvous-$(id -u)-$port" ] || fail "alone: the rendezvous file was left behind"

[ $failures = 0 ] && echo "all spread-run checks passed"
exit $((failures > 0))
