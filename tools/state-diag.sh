#!/usr/bin/env bash
# Diagnostic (issue 33 item 3), on a GPU node from the repository root with build/offload unpacked
# (tools/h200-run.sh state does both): is the region's wait state (a blocking wait woken soon or late,
# README "Wait states") a CPU placement that can be named, on the application's side and on advise's
# runtime probe's alike? Two placements, off the GPU's interrupt CPU both:
#   range  every process on all the CPUs but the interrupt CPU (advise's other_cpu)
#   one    each process on a single one of them (process p on the p-th, cycling)
# Five processes of each variant per placement (tools/real-runs.sh), the placements alternating
# process by process; then per placement pinpath advise with its runtime probe, its whole process
# tree pinned the same way (one: a single CPU for the probe's processes too). No verdict: per
# placement, tools/advise_per_process.py prints the prediction per probe process and the real steps'
# late shares. -> $OUT/state.tar.xz (state-diag/<placement>/ are advise folders)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
d=build/state-diag; rm -rf $d; mkdir -p $d/range $d/one
py() { PYTHONPATH=$PWD/.site:$PWD/lib python3 "$@"; }
. tools/real-runs.sh
export LD_LIBRARY_PATH=$PWD/build/offload-runtime/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_TARGET_OFFLOAD=MANDATORY
bin=$(ls build/offload/region-sm_* 2>/dev/null | head -1)
[ -n "$bin" ] || { echo "state-diag: no build/offload/region-sm_*: carry build/offload"; exit 2; }
others=$(py -c 'from pinpath import machine_state as ms
cpus, why = ms.placement_cpus("other_cpu", ms.gpu_irq_cpus()); print("" if why else " ".join(map(str, cpus)))')
[ -n "$others" ] || { echo "state-diag: no GPU interrupt CPU found: nothing to place off it"; exit 2; }
read -ra single <<<"$others"
range=${others// /,}
{ grep nvidia /proc/interrupts; echo "range=$range"; } >$d/irq.txt
args=(--nw 16 --steps 5 --paired)   # as h200-run.sh's advise step times the region
taskset -c "$range" env LIBOMPTARGET_INFO=40 "$bin" --variant plain --nw 16 --steps 5 --markers 2>$d/range/region.info \
  >/dev/null || exit 1
cp $d/range/region.info $d/one/
status=0 REAL_RUNS_HEADER=1
for p in 1 2 3 4 5; do
  one=${single[$(( (p - 1) % ${#single[@]} ))]}
  pls=(range one); [ $((p % 2)) = 0 ] && pls=(one range)   # neither placement always first
  for pl in "${pls[@]}"; do
    cpus=$range; [ $pl = one ] && cpus=$one
    REAL_RUNS_FIRST=$p real_runs "$bin" $pl $d/$pl/region "$cpus" "${args[@]}" || status=1
  done
done >$d/real.csv
for pl in range one; do
  awk -F, -v pl=$pl 'NR == 1 || $(NF - 1) == pl' $d/real.csv >$d/$pl/region-real.csv   # placement: the last column but one
  cpus=$range; [ $pl = one ] && cpus=${single[0]}
  taskset -c "$cpus" env PYTHONPATH=$PWD/.site:$PWD/lib python3 -m pinpath advise $d/$pl/region.info --platform cuda \
    --real $d/$pl/region-real.csv --application region --construct region --trace-cpus "$range" --out $d/$pl/region \
    >$d/$pl/advise.log 2>&1 || status=1
  echo "== placement $pl (probe on CPUs $cpus)"
  py tools/advise_per_process.py $d/$pl region --placement $pl 2>&1 | tee $d/$pl/per_process.txt
done
tar -C build -I "xz -T0" -cf "$OUT/state.tar.xz" state-diag
exit $status
