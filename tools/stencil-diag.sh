#!/usr/bin/env bash
# On the GPU node, from the repository root, after tools/offload-probe.sh unpacked the offload bundle
# (tools/h200-run.sh stencil does both): the stencil's four halo updates per step in the application
# against the updates probe, interleaved, every process pinned off the GPU's interrupt CPU (advise's
# predicted placement). The application as advise times it (--checkpoint 50) and without checkpoints;
# the probe under tools/stencil_diag.py's three layouts (A: advise's own, B: without the one-off copies,
# C: the halos alone); plain and app_pinned; REPS rounds (5). Then one application run and one probe
# run (A) per variant with LIBOMPTARGET_PROFILE (every event: granularity 0), for the phases.
#   OUT=DIR tools/stencil-diag.sh   -> DIR/stencil.tar.xz; then tools/stencil_diag.py analyse on its folder
set -uo pipefail
cd "$(dirname "$0")/.."
d=build/stencil-diag; rm -rf $d; mkdir -p $d
py() { PYTHONPATH=$PWD/.site:$PWD/lib python3 "$@"; }
export LD_LIBRARY_PATH=$PWD/build/offload-runtime/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_TARGET_OFFLOAD=MANDATORY
st=$(ls build/offload/stencil-sm_* | head -1) up=$(ls build/offload/updates-sm_* | head -1)
other=$(py -c 'from pinpath import machine_state as ms
cpus, why = ms.placement_cpus("other_cpu", ms.gpu_irq_cpus()); print("" if why else ms.cpuspan(cpus))')
on() { if [ -n "$other" ]; then taskset -c "$other" "$@"; else "$@"; fi; }
{ grep nvidia /proc/interrupts; echo "other_cpu=${other:-unpinned}"; } >$d/cpus.txt
args=(--nx 4096 --ny 512 --steps 200)
on env LIBOMPTARGET_INFO=40 "$st" --variant plain "${args[@]}" --checkpoint 50 --markers 2>$d/stencil.info >/dev/null
py tools/stencil_diag.py layouts $d/stencil.info $d || { tail -5 $d/stencil.info; exit 1; }   # the trace failed
status=0
for r in $(seq "${REPS:-5}"); do
  for v in plain app_pinned; do
    for ck in 50 100000; do
      kind=ck$ck; [ $ck = 100000 ] && kind=nock
      on "$st" --variant $v "${args[@]}" --checkpoint $ck >$d/app-$kind-$v-$r.csv 2>/dev/null || status=1
    done
    for lay in A B C; do
      on "$up" --variant $v --layout $d/layout-$lay.txt --rounds 200 --seed "$r" >$d/upd-$lay-$v-$r.csv 2>/dev/null || status=1
    done
  done
done
for v in plain app_pinned; do
  prof=(LIBOMPTARGET_PROFILE_GRANULARITY=0)
  on env "${prof[@]}" LIBOMPTARGET_PROFILE=$d/profile-app-$v.json "$st" --variant $v "${args[@]}" --checkpoint 50 \
    >$d/profile-app-$v.out 2>/dev/null || status=1
  on env "${prof[@]}" LIBOMPTARGET_PROFILE=$d/profile-upd-$v.json "$up" --variant $v --layout $d/layout-A.txt --rounds 200 \
    >$d/profile-upd-$v.out 2>/dev/null || status=1
done
py tools/stencil_diag.py analyse $d | tee $d/analysis.txt
tar -C build -I "xz -T0" -cf "$OUT/stencil.tar.xz" stencil-diag
exit $status
