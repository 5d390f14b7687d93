#!/usr/bin/env bash
# Diagnostic (issue 33 items 2 and 3), from the repository root on a GPU node with build/offload: are
# the real region's two modes between processes at nw=16 (the reference at 178d5b8: plain 61-62 us in
# three processes, 85-95 us in two) and species' plain steps a CPU placement state? The region
# (nw=16 and 128) and species run in 6 and 4 rounds, each process unpinned, pinned to every CPU but
# the GPU's interrupt CPU, or to that CPU; each process's main-thread CPU sampled every 2 ms from
# /proc (<name>.cpus: count and CPU). -> $OUT/placement.tar.xz (tools/h200-run.sh placement)
set -uo pipefail
cd "$(dirname "$0")/.."
STEPS=1 NWS=16 tools/offload-probe.sh >/dev/null 2>&1 || { echo "bundle does not run"; exit 1; }
export LD_LIBRARY_PATH=$PWD/build/offload-runtime/lib OMP_TARGET_OFFLOAD=MANDATORY
d=build/placement; rm -rf $d; mkdir -p $d
region=$(ls build/offload/region-sm_* | head -1) species=$(ls build/offload/species-sm_* | head -1)
# pinpath's rule for the interrupt CPU and the other CPUs (machine_state), the one notebook 13 and advise use
cpus_at() { PYTHONPATH=$PWD/.site:$PWD/lib python3 -c 'import sys; from pinpath import machine_state as ms
cpus, why = ms.placement_cpus(sys.argv[1], ms.gpu_irq_cpus())
print("" if why else ms.cpuspan(cpus))' "$1"; }
irqcpu=$(cpus_at irq_cpu) others=$(cpus_at other_cpu)
[ -n "$irqcpu" ] && [ -n "$others" ] || { echo "placement-diag: no GPU interrupt CPU found"; exit 1; }
echo "irq_cpu=$irqcpu others=$others" | tee $d/irq.txt
grep nvidia /proc/interrupts >> $d/irq.txt
run() {  # run OUT CPUS CMD...: the command, its main thread's CPUs sampled
  local out=$1 cpus=$2; shift 2
  if [ -n "$cpus" ]; then taskset -c "$cpus" "$@" >$out.out 2>$out.err & else "$@" >$out.out 2>$out.err & fi
  local pid=$!
  while kill -0 $pid 2>/dev/null; do awk '{print $39}' /proc/$pid/stat 2>/dev/null; sleep 0.002; done | sort -n | uniq -c >$out.cpus
  wait $pid; echo "rc=$?" >>$out.cpus
}
start=$(date +%s)
for r in 1 2 3 4 5 6; do
  for pl in unpinned other irq; do
    case $pl in unpinned) c="";; other) c=$others;; irq) c=$irqcpu;; esac
    for v in plain app_pinned; do
      run $d/region-$v-$pl-$r "$c" "$region" --variant $v --nw 16 --steps 5
      run $d/region128-$v-$pl-$r "$c" "$region" --variant $v --nw 128 --steps 2
      [ $r -le 4 ] && run $d/species-$v-$pl-$r "$c" "$species" --variant $v --species 16 --steps 100
    done
  done
  echo "round $r done at $(( $(date +%s) - start )) s"
done
tar -C build -I "xz -T0" -cf "$OUT/placement.tar.xz" placement
