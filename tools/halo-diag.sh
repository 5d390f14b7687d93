#!/usr/bin/env bash
# On the GPU node, from the repository root, after tools/offload-probe.sh unpacked the offload bundle
# (tools/h200-run.sh halo does both): tools/halo_cross.cpp (built here by `tools/halo_cross.py build`,
# carried in build/halo-cross/) for plain and app_pinned, REPS processes each (5), interleaved (the
# variants' order alternating), every process pinned off the GPU's interrupt CPU (advise's predicted placement).
#   OUT=DIR tools/halo-diag.sh   -> DIR/halo.tar.xz; then tools/halo_cross.py analyse on its folder
set -uo pipefail
cd "$(dirname "$0")/.."
d=build/halo-diag; rm -rf $d; mkdir -p $d
py() { PYTHONPATH=$PWD/.site:$PWD/lib python3 "$@"; }
export LD_LIBRARY_PATH=$PWD/build/offload-runtime/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_TARGET_OFFLOAD=MANDATORY
exe=$(ls build/halo-cross/halo_cross-sm_* 2>/dev/null | head -1)
[ -n "$exe" ] || { echo "halo-diag: no build/halo-cross/halo_cross-sm_*: tools/halo_cross.py build, then carry it"; exit 2; }
sha256sum --quiet -c build/halo-cross/sources.sha256 ||
  { echo "halo-diag: $exe was built from other sources than the tree's: tools/halo_cross.py build again"; exit 2; }
other=$(py -c 'from pinpath import machine_state as ms
cpus, why = ms.placement_cpus("other_cpu", ms.gpu_irq_cpus()); print("" if why else ms.cpuspan(cpus))')
on() { if [ -n "$other" ]; then taskset -c "$other" "$@"; else "$@"; fi; }
{ grep nvidia /proc/interrupts; echo "other_cpu=${other:-unpinned}"; } >$d/cpus.txt
status=0
for r in $(seq "${REPS:-5}"); do
  vs=(plain app_pinned); [ $((r % 2)) = 0 ] && vs=(app_pinned plain)   # neither always first
  for v in "${vs[@]}"; do
    on "$exe" --variant $v --rounds 200 --seed "$r" >$d/halo-$v-$r.csv 2>$d/halo-$v-$r.err || status=1
  done
done
py tools/halo_cross.py analyse $d | tee $d/analysis.txt
tar -C build -I "xz -T0" -cf "$OUT/halo.tar.xz" halo-diag
exit $status
