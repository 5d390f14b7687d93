#!/usr/bin/env bash
# Diagnostic (issue 33 item 3), on a GPU node from the repository root with build/offload unpacked
# (tools/h200-run.sh idle does both): is the region's wait state (README "Wait states": a blocking
# wait woken soon or late) the wake of a halted CPU? The region's variants in processes
# (tools/real-runs.sh) under four conditions, each with SCHED_IDLE spinners (tools/awake.sh) on:
#   asis   no CPU
#   all    every CPU
#   irq    the GPU's interrupt CPU(s) only
#   app    the CPUs the application may use only (all but the interrupt CPU)
# and two placements off the interrupt CPU: range (all those CPUs) and one (a single one of them).
# Five rounds; in each the conditions in a rotated order, the placements alternating. The machine's
# idle facts (cpuidle driver, governor, states, kernel command line) are kept beside. No verdict:
# tools/idle_diag.py analyse DIR prints each condition's per-process medians and late shares.
#   OUT=DIR tools/idle-diag.sh   -> DIR/idle.tar.xz
set -uo pipefail
: "${OUT:?idle-diag: set OUT=DIR, the folder for idle.tar.xz}"
cd "$(dirname "$0")/.." || exit 2
d=build/idle-diag; rm -rf $d; mkdir -p $d/runs
py() { PYTHONPATH=$PWD/.site:$PWD/lib python3 "$@"; }
. tools/real-runs.sh
. tools/awake.sh
trap awake_off EXIT
export LD_LIBRARY_PATH=$PWD/build/offload-runtime/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_TARGET_OFFLOAD=MANDATORY
bin=$(ls build/offload/region-sm_* 2>/dev/null | head -1)
[ -n "$bin" ] || { echo "idle-diag: no build/offload/region-sm_*: carry build/offload"; exit 2; }
read -r range irq others < <(py -c 'from pinpath import machine_state as ms
irq = ms.gpu_irq_cpus(); cpus, why = ms.placement_cpus("other_cpu", irq)
print(*([] if why else [ms.cpuspan(cpus), ms.cpuspan(irq), *cpus]))')
[ -n "${others:-}" ] || { echo "idle-diag: no GPU interrupt CPU found"; exit 2; }
read -ra single <<<"$others"
all=$(py -c 'import os; print(*sorted(os.sched_getaffinity(0)))')
irq_list=$(py -c 'import sys; from pinpath.machine_state import cpulist; print(*cpulist(sys.argv[1]))' "$irq")
{
  echo "range=$range irq=$irq all=$all"
  for f in /sys/devices/system/cpu/cpuidle/*; do echo "$f: $(cat "$f" 2>/dev/null)"; done
  for s in /sys/devices/system/cpu/cpu0/cpuidle/state*; do
    [ -d "$s" ] && echo "$s: $(cat "$s/name") latency=$(cat "$s/latency") disable=$(cat "$s/disable")"
  done
  ls /sys/devices/system/cpu/cpu0/cpuidle 2>/dev/null || echo "cpu0: no cpuidle states"
  echo "cmdline: $(cat /proc/cmdline)"
  echo "hypervisor flag: $(grep -c -w hypervisor /proc/cpuinfo) of $(grep -c ^processor /proc/cpuinfo) CPUs"
  for m in haltpoll cpuidle_haltpoll kvm_intel; do
    [ -d /sys/module/$m/parameters ] && grep -H . /sys/module/$m/parameters/* 2>/dev/null
  done
  uname -r
  grep nvidia /proc/interrupts
} >$d/facts.txt 2>&1
args=(--nw 16 --steps 5)
conds=(asis all irq app)
spin_cpus() { case $1 in all) echo "$all";; irq) echo "$irq_list";; app) echo "$others";; *) echo "";; esac; }
# shellcheck disable=SC2034  # REAL_RUNS_HEADER is read by real_runs
status=0 REAL_RUNS_HEADER=1
for r in 1 2 3 4 5; do
  one=${single[$(( (r - 1) % ${#single[@]} ))]}
  for k in 0 1 2 3; do
    c=${conds[$(( (k + r - 1) % 4 ))]}
    awake_on "$(spin_cpus "$c")"
    pls=(range one); [ $((r % 2)) = 0 ] && pls=(one range)
    for pl in "${pls[@]}"; do
      cpus=$range; [ $pl = one ] && cpus=$one
      REAL_RUNS_FIRST=$r real_runs "$bin" "$c:$pl" $d/runs/region "$cpus" "${args[@]}" || status=1
    done
    awake_off
  done
done >$d/real.csv
grep nvidia /proc/interrupts >$d/irq-after.txt
py tools/idle_diag.py analyse $d 2>&1 | tee $d/analysis.txt || status=1
tar -C build -I "xz -T0" -cf "$OUT/idle.tar.xz" idle-diag
exit $status
