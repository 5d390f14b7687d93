#!/usr/bin/env bash
# Diagnostic (issue 33 item 3), on a GPU node from the repository root with build/offload unpacked
# (tools/h200-run.sh state does both): is an application's wait state (a blocking wait woken soon or
# late, README "Wait states") a CPU placement that can be named, on the application's side and on
# advise's runtime probe's alike? Up to two placements, off the GPU's interrupt CPU both:
#   range  every process on all the CPUs but the interrupt CPU (advise's other_cpu)
#   one    each process on a single one of them (process p on the p-th, cycling)
# Per application (APPS, default region; region, stencil, species as advise times them) five processes
# of each variant per placement (tools/real-runs.sh), the placements alternating process by process;
# then per placement pinpath advise with its runtime probe, its whole process tree pinned the same way
# (one: a single CPU for the probe's processes too). No verdict: per placement,
# tools/advise_per_process.py prints the prediction per probe process and the real steps' late shares.
# Each placement's folder is an advise folder (its APP-real.csv names the placement other_cpu, where
# advise's prediction is, so that its per-state rows find their real steps; build/state-diag/APP-real.csv keeps every
# placement). AWAKE=1: every CPU kept from halting throughout, the probe's processes too (tools/awake.sh;
# SCHED_IDLE spinners), for a sample in that named state.
#   OUT=DIR [APPS="region stencil species"] [PLACEMENTS="range one"] [AWAKE=1] [TAR=state] tools/state-diag.sh
#     -> DIR/TAR.tar.xz (TAR default: state, with AWAKE=1 state-awake)
set -uo pipefail
: "${OUT:?state-diag: set OUT=DIR, the folder for the tar}"
cd "$(dirname "$0")/.." || exit 2
read -ra apps <<<"${APPS:-region}"
read -ra placements <<<"${PLACEMENTS:-range one}"
tar_name=${TAR:-state${AWAKE:+-awake}}
d=build/state-diag; rm -rf $d; mkdir -p "${placements[@]/#/$d/}"
py() { PYTHONPATH=$PWD/.site:$PWD/lib python3 "$@"; }
. tools/real-runs.sh
if [ -n "${AWAKE:-}" ]; then
  . tools/awake.sh
  trap awake_off EXIT
  awake_on "$(py -c 'import os; print(*sorted(os.sched_getaffinity(0)))')"
fi
export LD_LIBRARY_PATH=$PWD/build/offload-runtime/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_TARGET_OFFLOAD=MANDATORY
# pinpath's rule for the CPUs off the interrupt CPU (machine_state), as advise's other_cpu: their span, then each
read -r range others < <(py -c 'from pinpath import machine_state as ms
cpus, why = ms.placement_cpus("other_cpu", ms.gpu_irq_cpus()); print(*([] if why else [ms.cpuspan(cpus), *cpus]))')
[ -n "${others:-}" ] || { echo "state-diag: no GPU interrupt CPU found: nothing to place off it"; exit 2; }
read -ra single <<<"$others"
{ grep nvidia /proc/interrupts; echo "range=$range"; echo "awake=${AWAKE:-}"; } >$d/irq.txt
cpus_of() { if [ "$1" = one ]; then echo "${single[$(( ($2 - 1) % ${#single[@]} ))]}"; else echo "$range"; fi; }
status=0
for app in "${apps[@]}"; do
  bin=$(ls build/offload/$app-sm_* 2>/dev/null | head -1)
  [ -n "$bin" ] || { echo "state-diag: no build/offload/$app-sm_*: carry build/offload"; exit 2; }
  args=() real=() construct=(); app_args "$app" || exit 2
  taskset -c "$range" env LIBOMPTARGET_INFO=40 "$bin" --variant plain "${args[@]}" --markers \
    2>$d/${placements[0]}/$app.info >/dev/null || exit 1
  for pl in "${placements[@]:1}"; do cp $d/${placements[0]}/$app.info $d/$pl/; done
  # shellcheck disable=SC2034  # REAL_RUNS_HEADER is read by real_runs
  REAL_RUNS_HEADER=1
  for p in 1 2 3 4 5; do
    pls=("${placements[@]}"); [ $((p % 2)) = 0 ] && [ ${#pls[@]} = 2 ] && pls=("${pls[1]}" "${pls[0]}")
    for pl in "${pls[@]}"; do   # neither placement always first
      REAL_RUNS_FIRST=$p real_runs "$bin" $pl $d/$pl/$app "$(cpus_of $pl $p)" "${args[@]}" "${real[@]}" || status=1
    done
  done >$d/$app-real.csv
  for pl in "${placements[@]}"; do
    # this placement's rows (placement: the last column but one), named other_cpu
    awk -F, -v OFS=, -v pl=$pl 'NR == 1 {print; next} $(NF - 1) == pl {$(NF - 1) = "other_cpu"; print}' \
      $d/$app-real.csv >$d/$pl/$app-real.csv
    cpus=$(cpus_of $pl 1)
    echo "== $app, placement $pl (advise and its probe on CPUs $cpus)"
    if ! taskset -c "$cpus" env PYTHONPATH=$PWD/.site:$PWD/lib python3 -m pinpath advise $d/$pl/$app.info --platform cuda \
      --real $d/$pl/$app-real.csv --application $app "${construct[@]}" --trace-cpus "$range" --out $d/$pl/$app \
      >$d/$pl/$app-advise.log 2>&1; then
      tail -5 $d/$pl/$app-advise.log; status=1; continue
    fi
    py tools/advise_per_process.py $d/$pl $app 2>&1 | tee $d/$pl/$app-per_process.txt || status=1
  done
done
tar -C build -I "xz -T0" -cf "$OUT/$tar_name.tar.xz" state-diag
exit $status
