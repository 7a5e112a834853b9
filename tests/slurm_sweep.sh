#!/usr/bin/env bash
# A 4-run sweep through a real one-node Slurm cluster (Debian's slurmctld, slurmd and munge,
# configured here in a temporary folder and stopped after): `testbed sweep --slurm --submit`,
# wait for the array, then the manifest must equal a local sweep's (but for host times and exit
# codes). Exit 77 (ctest: skipped) with the reason when the daemons cannot run here.
set -uo pipefail
testbed="$1"
source="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
skip() { echo "slurm_sweep: skipped: $*"; exit 77; }
for tool in slurmctld slurmd munged sbatch squeue sinfo scontrol runuser; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || skip "$tool is not installed (scripts/install-deps.sh)"
done
work="$(mktemp -d /tmp/testbed_slurm.XXXXXX)"
export SLURM_CONF="$work/slurm.conf"
started_munge=0
cleanup() {
  scontrol shutdown >/dev/null 2>&1 || true
  sleep 1
  [ -f "$work/slurmd.pid" ] && kill "$(cat "$work/slurmd.pid")" 2>/dev/null
  # munged runs as munge and cannot write its pid file into this root-only folder: find it by its arguments.
  [ "$started_munge" = 1 ] && pkill -f "munged --pid-file=$work/munged.pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# munge: the running one, else one of our own.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null
  runuser -u munge -- /usr/sbin/munged --pid-file="$work/munged.pid" >/dev/null 2>&1 || skip "munged does not start"
  started_munge=1
  sleep 1
  munge -n | unmunge >/dev/null 2>&1 || skip "munge does not authenticate"
fi

host="$(hostname -s)"
port=$((17000 + RANDOM % 2000))
mkdir -p "$work/spool" "$work/state"
cat > "$SLURM_CONF" <<CONF
ClusterName=testbed
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmUser=root
SlurmdUser=root
MpiDefault=none
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmdSpoolDir=$work/spool
StateSaveLocation=$work/state
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
/usr/sbin/slurmctld -f "$SLURM_CONF" >/dev/null 2>&1 || skip "slurmctld does not start"
/usr/sbin/slurmd -f "$SLURM_CONF" >/dev/null 2>&1 || skip "slurmd does not start"
for _ in $(seq 30); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 1; done
sinfo -h -o %t 2>/dev/null | grep -q idle || skip "the node does not come up: $(tail -3 "$work/slurmd.log" 2>/dev/null)"

cd "$work"
cp "$source/tests/tiny_sweep_base.yaml" base.yaml
printf 'base: base.yaml\nout: out\ngrid: {seed: [0, 1, 2, 3]}\n' > s.yaml
printf 'base: base.yaml\nout: local\ngrid: {seed: [0, 1, 2, 3]}\n' > local.yaml
"$testbed" sweep s.yaml --slurm --tasks 2 --cpus 1 --submit || { echo "slurm_sweep: submit failed"; exit 1; }
for _ in $(seq 120); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 1; done
[ -z "$(squeue -h)" ] || { echo "slurm_sweep: the array did not finish in 120 s"; squeue; exit 1; }
"$testbed" sweep local.yaml -j 1 >/dev/null 2>&1 || { echo "slurm_sweep: the local sweep failed"; exit 1; }
report="$("$testbed" report out)"
echo "$report" | tail -3
echo "$report" | grep -q "shard 0/2: 0 pending, 0 running, 2 done" || { echo "slurm_sweep: shard 0 not done"; cat out/slurm/*.log; exit 1; }
echo "$report" | grep -q "shard 1/2: 0 pending, 0 running, 2 done" || { echo "slurm_sweep: shard 1 not done"; cat out/slurm/*.log; exit 1; }
# The two manifests without the columns that differ by design.
strip() { /usr/bin/python3 - "$1" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
keep = [i for i, c in enumerate(rows[0]) if "host" not in c and c != "exit_code"]
for r in rows:
    print(",".join(r[i] for i in keep if i < len(r)))
PY
}
if ! diff <(strip out/sweep.csv) <(strip local/sweep.csv); then
  echo "slurm_sweep: the manifests differ"
  exit 1
fi
echo "slurm_sweep: 4 runs through Slurm give the local sweep's manifest"
