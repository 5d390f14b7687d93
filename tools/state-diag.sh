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
# late shares. Each placement's folder is an advise folder (its region-real.csv names the placement
# other_cpu, where advise's prediction is, so that its per-state rows find their real steps; real.csv
# keeps range and one). AWAKE=1: every CPU kept from halting throughout, the probe's processes too
# (tools/awake.sh; SCHED_IDLE spinners), for a sample in that named state.
#   OUT=DIR [AWAKE=1] tools/state-diag.sh   -> DIR/state.tar.xz (AWAKE=1: DIR/state-awake.tar.xz)
set -uo pipefail
: "${OUT:?state-diag: set OUT=DIR, the folder for state.tar.xz}"
cd "$(dirname "$0")/.." || exit 2
d=build/state-diag; rm -rf $d; mkdir -p $d/range $d/one
py() { PYTHONPATH=$PWD/.site:$PWD/lib python3 "$@"; }
. tools/real-runs.sh
if [ -n "${AWAKE:-}" ]; then
  . tools/awake.sh
  trap awake_off EXIT
  awake_on "$(py -c 'import os; print(*sorted(os.sched_getaffinity(0)))')"
fi
export LD_LIBRARY_PATH=$PWD/build/offload-runtime/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_TARGET_OFFLOAD=MANDATORY
bin=$(ls build/offload/region-sm_* 2>/dev/null | head -1)
[ -n "$bin" ] || { echo "state-diag: no build/offload/region-sm_*: carry build/offload"; exit 2; }
# pinpath's rule for the CPUs off the interrupt CPU (machine_state), as advise's other_cpu: their span, then each
read -r range others < <(py -c 'from pinpath import machine_state as ms
cpus, why = ms.placement_cpus("other_cpu", ms.gpu_irq_cpus()); print(*([] if why else [ms.cpuspan(cpus), *cpus]))')
[ -n "${others:-}" ] || { echo "state-diag: no GPU interrupt CPU found: nothing to place off it"; exit 2; }
read -ra single <<<"$others"
{ grep nvidia /proc/interrupts; echo "range=$range"; echo "awake=${AWAKE:-}"; } >$d/irq.txt
args=(--nw 16 --steps 5 --paired)   # as h200-run.sh's advise step times the region
taskset -c "$range" env LIBOMPTARGET_INFO=40 "$bin" --variant plain --nw 16 --steps 5 --markers 2>$d/range/region.info \
  >/dev/null || exit 1
cp $d/range/region.info $d/one/
# shellcheck disable=SC2034  # REAL_RUNS_HEADER is read by real_runs
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
  # this placement's rows (placement: the last column but one), named other_cpu
  awk -F, -v OFS=, -v pl=$pl 'NR == 1 {print; next} $(NF - 1) == pl {$(NF - 1) = "other_cpu"; print}' $d/real.csv \
    >$d/$pl/region-real.csv
  cpus=$range; [ $pl = one ] && cpus=${single[0]}
  echo "== placement $pl (advise and its probe on CPUs $cpus)"
  if ! taskset -c "$cpus" env PYTHONPATH=$PWD/.site:$PWD/lib python3 -m pinpath advise $d/$pl/region.info --platform cuda \
    --real $d/$pl/region-real.csv --application region --construct region --trace-cpus "$range" --out $d/$pl/region \
    >$d/$pl/advise.log 2>&1; then
    tail -5 $d/$pl/advise.log; status=1; continue
  fi
  py tools/advise_per_process.py $d/$pl region 2>&1 | tee $d/$pl/per_process.txt || status=1
done
tar -C build -I "xz -T0" -cf "$OUT/state${AWAKE:+-awake}.tar.xz" state-diag
exit $status
