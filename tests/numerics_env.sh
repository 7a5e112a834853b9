#!/bin/bash
# Portable numerics: the same scenario run under the kernel-choice variables a machine may set
# (OPENBLAS_CORETYPE, ATEN_CPU_CAPABILITY, DNNL_MAX_CPU_ISA) and another thread count gives the
# same /train, /eval and /replicas bits (h5diff), for the CNN (convolutions), the MLP (matrix
# products) and the GPT on Brown (attention, layer norm, GELU). Each run's /numerics must say
# portable. Then `numerics: native` under OPENBLAS_CORETYPE=SkylakeX must say what it ran
# (not portable, SkylakeX's kernels, oneDNN on). The variables are set only here, per run.
set -u
testbed=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
attr() { h5dump -a "/numerics/$2" "$1" | sed -n 's/^ *(0): "\(.*\)"$/\1/p'; }

# Every run starts from none of the variables set, whatever this machine's environment says.
clean=(env -u OPENBLAS_CORETYPE -u ATEN_CPU_CAPABILITY -u DNNL_MAX_CPU_ISA -u ONEDNN_MAX_CPU_ISA -u TESTBED_NUMERICS)
# label|variables|extra --set (the first is the reference). Each value of each variable
# appears once; OpenBLAS 0.3.21 knows Haswell, SkylakeX and Zen.
environments=(
  "none set||"
  "Haswell, ATen default|OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=default|"
  "SkylakeX, ATen avx512, oneDNN AVX512|OPENBLAS_CORETYPE=SkylakeX ATEN_CPU_CAPABILITY=avx512 DNNL_MAX_CPU_ISA=AVX512_CORE|"
  "Zen, ATen avx2, oneDNN AVX2, 3 threads|OPENBLAS_CORETYPE=Zen ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2|--set threads=3"
  "this machine's environment, 1 thread|-|--set threads=1"
)
# label|scenario and sets: a few steps each, an evaluation and the replicas' agreement recorded.
models=(
  "cnn|scenarios/100mbps_ring.yaml --set workload.steps=8 --set workload.eval_every=4 --set workload.eval_samples=256"
  "mlp|scenarios/100mbps_ring.yaml --set workload.model=mlp --set workload.steps=8 --set workload.eval_every=4 --set workload.eval_samples=256"
  "gpt|scenarios/gpt_brown_ring.yaml --set workload.steps=4 --set workload.eval_every=2 --set workload.eval_samples=32 --set workload.data_dir=$work/brown"
)
cd "$(dirname "$0")/.."
# 18 of Brown's 500 documents: the last evaluation takes the whole test split, which for the
# whole corpus is most of a short run's time.
mkdir -p "$work/brown" && cp data/brown/c[a-j]0[12] "$work/brown/"
for m in "${models[@]}"; do
  model=${m%%|*}
  sets=${m#*|}
  i=0
  for e in "${environments[@]}"; do
    label=${e%%|*}
    rest=${e#*|}
    variables=${rest%%|*}
    extra=${rest#*|}
    out="$work/$model-$i.h5"
    if [ "$variables" = - ]; then
      # shellcheck disable=SC2086
      "$testbed" run $sets --set threads=2 $extra -q -o "$out" > "$work/log" 2>&1
    else
      # shellcheck disable=SC2086
      "${clean[@]}" $variables "$testbed" run $sets --set threads=2 $extra -q -o "$out" > "$work/log" 2>&1
    fi
    code=$?
    if [ $code != 0 ]; then fail "$model under $label exited $code"; cat "$work/log"; i=$((i + 1)); continue; fi
    [ "$(attr "$out" portable)" = yes ] || fail "$model under $label: /numerics says portable=$(attr "$out" portable)"
    if [ $i -gt 0 ]; then
      same=yes
      for dataset in /train /eval /replicas; do
        h5diff -q "$work/$model-0.h5" "$out" "$dataset" "$dataset" > /dev/null 2>&1 || { same=no; fail "$model: $dataset under $label differs from none set"; }
      done
      [ $same = yes ] && echo "ok: $model under $label: /train, /eval, /replicas equal to none set"
    fi
    i=$((i + 1))
  done
done

# Native numerics say what they ran. SkylakeX's kernels only where the CPU has AVX-512 (elsewhere
# OpenBLAS runs them and dies of SIGILL, as the environment told it to): Haswell's otherwise.
out="$work/native.h5"
core=Haswell
grep -q avx512f /proc/cpuinfo && core=SkylakeX
"${clean[@]}" OPENBLAS_CORETYPE=$core "$testbed" run scenarios/100mbps_ring.yaml --set numerics=native \
  --set workload.steps=2 -q -o "$out" > "$work/log" 2>&1 || { fail "native run exited $?"; cat "$work/log"; }
if grep -q avx512f /proc/cpuinfo; then
  [ "$(attr "$out" portable)" = no ] || fail "native: /numerics says portable=$(attr "$out" portable)"
  [ "$(attr "$out" openblas_core)" = SkylakeX ] || fail "native: OpenBLAS core $(attr "$out" openblas_core), not SkylakeX"
  case "$(attr "$out" onednn)" in on*) ;; *) fail "native: oneDNN $(attr "$out" onednn), not on" ;; esac
  echo "ok: native under SkylakeX records portable=no, SkylakeX, oneDNN $(attr "$out" onednn)"
fi
[ $failures = 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "numerics_env: all equal"
