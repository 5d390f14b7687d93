#!/usr/bin/env bash
# One call on a GPU node without a package index (the H200 we develop on): pinpath from the
# wheelhouse with the node's own Python (ENV=system), then the steps asked for, each one's output
# packed under $OUT (at most a few files: a tar per run).
#   tools/h200-run.sh reference NAME   make reproduce PRESET=full PLATFORM=cuda; share; -> $OUT/NAME.tar.xz
#                                      (REFERENCE_LIMIT_S=N: no notebook started that would end after N-30 s,
#                                      STOP_BY; stopped after N s; what ran kept, `resume NAME` runs the rest)
#   tools/h200-run.sh pack NAME        on the machine still held: the newest run finalized (where a stop cut
#                                      its report), shared -> $OUT/NAME.tar.xz
#   tools/h200-run.sh resume NAME      on the machine still held: the newest run's notebooks that a stop left
#                                      (RESUME=), then pack NAME (a full preset longer than one call: the
#                                      H100 of 2026-12-06 took 543-563 s of notebooks)
#   tools/h200-run.sh smoke            make reproduce PRESET=smoke PLATFORM=cuda -> $OUT/smoke.tar
#   tools/h200-run.sh test             make test ENV=system -> $OUT/test.log
#   tools/h200-run.sh probe            tools/offload-probe.sh (the real libomptarget region)
#   tools/h200-run.sh wait             tools/wait_diag.py (notebook 13's blocking-wait processes at nw=16, each one's
#                                      threads' CPUs sampled: which state makes its two modes) -> $OUT/wait.tar.xz
#   tools/h200-run.sh placement        tools/placement-diag.sh (the region's and species' processes by CPU placement)
#   tools/h200-run.sh stencil          tools/stencil-diag.sh (the stencil's halo updates in the application against
#                                      advise's runtime probe under three layouts) -> $OUT/stencil.tar.xz
#   tools/h200-run.sh halo             tools/halo-diag.sh (the stencil's four halo updates under the application's
#                                      host use and the probe's, after its kernels or after the case before; needs
#                                      build/halo-cross/ from tools/halo_cross.py build, carried) -> $OUT/halo.tar.xz
#   tools/h200-run.sh state            tools/state-diag.sh (an application's wait state with every process, the
#                                      application's and advise's runtime probe's, on the CPUs off the GPU's interrupt
#                                      CPU or on a single one of them; APPS, PLACEMENTS, TAR as it takes them,
#                                      STATE_LIMIT_S: its time limit, default 400) -> $OUT/state.tar.xz
#   tools/h200-run.sh idle             tools/idle-diag.sh (the region's wait state with CPUs kept from halting or
#                                      not), then tools/state-diag.sh with every CPU kept awake
#                                      -> $OUT/idle.tar.xz, $OUT/state-awake.tar.xz
#   tools/h200-run.sh history          tools/wait-history.sh (a blocking wait's soon or late wake after histories of
#                                      waits: nothing, kernels waited on, asleep, busy; plain CUDA, and through
#                                      libomptarget where build/wait-history-omp is carried) -> $OUT/history.tar.xz
#   tools/h200-run.sh notebooks PRESET a,b   some notebooks -> $OUT/notebooks.tar
#   tools/h200-run.sh pytest "FILES"   some test files -> $OUT/pytest.log
#   tools/h200-run.sh profile PRESET a,b   some notebooks' cells timed and profiled in one process each
#                                      (tools/profile-notebook.py) -> $OUT/profile.log
#   tools/h200-run.sh diag             tools/fidelity_diag.py (engine and yardstick crossed with buffers and
#                                      streams) and tools/pageable_probe.c, both pinned to one CPU -> $OUT/diag.tar
#   tools/h200-run.sh advise           the region, the stencil and species traced and timed (the region --paired),
#                                      each process pinned on and off the GPU's interrupt CPU, pinpath advise
#                                      --designs (with the runtime term: build/offload's updates) -> $OUT/advise.tar.xz
#                                      (a reference after it carries it as advise/: in the same call, or in a later
#                                      call on the machine still held where the sources are the same)
# Steps may follow one another: tools/h200-run.sh test reference h200
# The node's copy of the tree may carry stale git metadata: set PINPATH_GIT_COMMIT (and
# PINPATH_GIT_DIRTY=1 where the tree differs from it) so that manifests name the commit sent; each
# manifest's git.sources digest names the tree as it was, whatever git said.
# Needs: wheelhouse/ (make wheelhouse PYVER=3.12 SKIP="what the node has") and, for notebook 13,
# build/offload/ (make offload-bundle), both carried to the node.
# The references do not fit beside them in one call's carry: tools/refs-aside.sh out HOLD first (their
# manifests stay: STOP_BY reads the notebooks' earlier times from them), back HOLD after.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/build/h200-out}
mkdir -p "$OUT"
py() { PYTHONPATH=$PWD/.site:$PWD/lib python3 "$@"; }   # pinpath and the wheels with the node's Python
. tools/real-runs.sh   # real_runs: an application's variants timed in interleaved processes (advise's real figures)
make setup ENV=system PYTHON=python3 >"$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 2; }
# a machine still held from an earlier call keeps build/: an advise folder left there by an advise step of
# the same sources (its sources.txt, manifest.source_digest) stays for a reference step to pack; of other
# sources it goes
digest=$(py -c 'from pathlib import Path; from pinpath.manifest import source_digest; print(source_digest(Path.cwd()))')
if [ -d build/advise-run ]; then
  if [ "$(cat build/advise-run/sources.txt 2>/dev/null)" = "$digest" ]; then
    echo "h200-run: build/advise-run of an earlier call, same sources: a reference packs it"
  else
    rm -rf build/advise-run; echo "h200-run: build/advise-run of other sources removed"
  fi
fi
nvidia-smi --query-gpu=name,driver_version,pci.bus_id,clocks.sm,clocks.mem,persistence_mode --format=csv
status=0
# whether build/offload's applications were built from the tree's sources (a bundle carried from before a
# change would time the old programs)
bundle_current() {
  py -c 'import sys; from pinpath.errors import NotAvailable; from pinpath.experiments import offload_build as ob
try:
    [ob.app_binary(ob.find_build(), a) for a in ("region", "stencil", "species", "updates")]
except NotAvailable as e:
    sys.exit(f"h200-run: {e}")'
}
# pack NAME: this node's newest run, its report written by `pinpath finalize` where a stop cut it (a run
# stopped while its report was written has none, and outputs/latest still names the run before it: no
# notebook runs again), shared and packed with the advise step's folder (if it ran first) -> $OUT/NAME.tar.xz
pack() {
  local run
  [ -n "${1:-}" ] || { echo "pack: name the tar (tools/h200-run.sh pack NAME)"; return 1; }
  run=$(cd outputs && ls -1d 2*/ 2>/dev/null | sort | tail -1); run=${run%/}
  [ -n "$run" ] || { echo "pack: no run under outputs/"; return 1; }
  if [ "$(readlink outputs/latest)" != "$run" ]; then
    py -m pinpath finalize "outputs/$run" 2>&1 | tail -2
  fi
  make share ENV=system PYTHON=python3 RUN="outputs/$run" >/dev/null 2>&1 || { echo "pack: make share failed"; return 1; }
  # a second pack of one run (pack after reference, resume) replaces the folder, never nests it
  [ -d build/advise-run ] && rm -rf "outputs/$run/advise" && cp -r build/advise-run "outputs/$run/advise"
  echo "pack $1: run $run"
  # xz: a full run as a plain tar (about 37 MB) is too large to come back from the node
  tar -C outputs --exclude="*.zip" -I "xz -T0" -cf "$OUT/$1.tar.xz" "$run"   # xz on every core
}
while [ $# -gt 0 ]; do
  step=$1; shift
  case $step in
    reference)
      name=$1; shift
      start=$(date +%s)
      # REFERENCE_LIMIT_S: no notebook is started that would not end 30 s before it (STOP_BY: by the longest
      # the committed references took, with a margin; the run ends incomplete, `resume NAME` runs the rest),
      # and at it the run is stopped (SIGTERM: the runner marks it interrupted and writes its report), so
      # that what ran still comes back when the device time left is short
      limit=${REFERENCE_LIMIT_S:-0} stop_by=""; [ "$limit" -gt 60 ] && stop_by=$((limit - 30))
      timeout -s TERM -k 60 "$limit" make reproduce ENV=system PYTHON=python3 PRESET=full PLATFORM=cuda \
        STOP_BY="$stop_by" >"$OUT/$name.log" 2>&1
      rc=$?
      grep -v '^      ' "$OUT/$name.log" | tail -25
      # stopped: the runner finishes its report after the signal
      if [ $rc = 124 ]; then   # wait for the runner (at most 30 s), not longer: pack's finalize writes what it left
        echo "reference $name: stopped after $REFERENCE_LIMIT_S s"
        for _ in $(seq 30); do pgrep -f "pinpath run --executor" >/dev/null || break; sleep 1; done
      fi
      [ $rc = 0 ] || status=1
      pack "$name" || status=1
      echo "reference $name: $(( $(date +%s) - start )) s"
      ;;
    pack)        # pack NAME: the newest run finalized where it was stopped before, shared -> $OUT/NAME.tar.xz
      pack "${1:-}" || status=1; shift || true
      ;;
    resume)      # resume NAME: the newest run's notebooks left by a stop, on the same machine, then pack NAME
      name=${1:-}; shift || true
      run=$(cd outputs && ls -1d 2*/ 2>/dev/null | sort | tail -1); run=${run%/}
      if [ -z "$name" ] || [ -z "$run" ]; then echo "resume: name the tar, and a run must be under outputs/"; status=1; continue; fi
      make reproduce ENV=system PYTHON=python3 PRESET=full PLATFORM=cuda RESUME="$run" >"$OUT/$name-resume.log" 2>&1 \
        || status=1
      grep -v '^      ' "$OUT/$name-resume.log" | tail -6
      pack "$name" || status=1
      ;;
    smoke)
      make reproduce ENV=system PYTHON=python3 PRESET=smoke PLATFORM=cuda 2>&1 | grep -v '^      ' || status=1
      tar -C outputs --exclude='*.zip' -cf "$OUT/smoke.tar" "$(readlink outputs/latest)"
      ;;
    notebooks)   # notebooks PRESET a,b,c: some notebooks of a preset -> $OUT/notebooks.tar
      preset=$1 list=$2; shift 2
      make reproduce ENV=system PYTHON=python3 PRESET="$preset" PLATFORM=cuda NOTEBOOKS="$list" 2>&1 \
        | grep -v '^      ' || status=1
      tar -C outputs --exclude='*.zip' -cf "$OUT/notebooks.tar" "$(readlink outputs/latest)"
      ;;
    pytest)      # pytest FILES: some test files -> $OUT/pytest.log
      files=$1; shift
      # shellcheck disable=SC2086
      timeout 300 env PYTHONPATH=$PWD/.site:$PWD/lib python3 -m pytest -q -p no:cacheprovider $files >"$OUT/pytest.log" 2>&1 \
        || status=1
      tail -25 "$OUT/pytest.log"
      ;;
    profile)     # profile PRESET a,b: where some notebooks' time goes -> $OUT/profile.log
      preset=$1 list=$2; shift 2
      for nb in ${list//,/ }; do
        echo "=== $nb ($preset)"
        timeout 300 env PYTHONPATH=$PWD/.site:$PWD/lib python3 tools/profile-notebook.py "$nb" "$preset" --platform cuda \
          2>&1 || status=1
      done >"$OUT/profile.log"
      grep -E '^(===|total)' "$OUT/profile.log"
      ;;
    test)
      # the node observes copies through CUPTI (the wheelhouse carries the cupti extra): its test must run, not skip
      timeout 420 env PINPATH_REQUIRE_CUPTI=1 make test ENV=system PYTHON=python3 >"$OUT/test.log" 2>&1 || status=1
      tail -25 "$OUT/test.log"
      ;;
    diag)
      d=build/diag; rm -rf $d; mkdir -p $d
      timeout 300 env PYTHONPATH=$PWD/.site:$PWD/lib python3 tools/fidelity_diag.py $d/fidelity_diag.csv cuda 16 32 \
        >$d/fidelity_diag.log 2>&1 || status=1
      tail -30 $d/fidelity_diag.log
      cpu=$(sed -n 's/^timing thread on CPU \([0-9]*\).*/\1/p' $d/fidelity_diag.log)
      { nvcc -O2 -o $d/pageable_probe tools/pageable_probe.c &&
        taskset -c "${cpu:-0}" $d/pageable_probe 16 32 >$d/pageable_probe.csv; } || status=1
      tar -C build -cf "$OUT/diag.tar" diag
      ;;
    probe)
      tools/offload-probe.sh 2>&1 | tail -30 || status=1
      ;;
    wait)        # the blocking-wait processes of notebook 13 at nw=16, each one's threads' CPUs -> $OUT/wait.tar.xz
      d=build/wait-diag; rm -rf $d; mkdir -p build   # tee writes its log beside it before the script makes $d
      timeout 300 env PYTHONPATH=$PWD/.site:$PWD/lib python3 tools/wait_diag.py $d 6 16 2>&1 | tee $d.log | tail -70 \
        || status=1
      mv $d.log $d/ 2>/dev/null; tar -C build -I "xz -T0" -cf "$OUT/wait.tar.xz" wait-diag
      ;;
    stencil)     # the stencil's halo updates in the application against advise's probe (tools/stencil-diag.sh)
      STEPS=1 NWS=16 tools/offload-probe.sh >/dev/null 2>&1 || { echo "h200-run: the offload bundle does not run"; status=1; continue; }
      OUT=$OUT timeout 300 tools/stencil-diag.sh 2>&1 | tail -40 || status=1
      ;;
    halo)        # the stencil's halo updates under three host uses, after its kernels or not
      STEPS=1 NWS=16 tools/offload-probe.sh >/dev/null 2>&1 || { echo "h200-run: the offload bundle does not run"; status=1; continue; }
      OUT=$OUT timeout 300 tools/halo-diag.sh 2>&1 | tail -30 || status=1
      ;;
    state)       # the region and advise's probe with every process on the CPUs off the interrupt CPU, or on one of them
      STEPS=1 NWS=16 tools/offload-probe.sh >/dev/null 2>&1 || { echo "h200-run: the offload bundle does not run"; status=1; continue; }
      bundle_current || { status=1; continue; }
      OUT=$OUT timeout "${STATE_LIMIT_S:-400}" tools/state-diag.sh 2>&1 | tail -60 || status=1   # APPS, PLACEMENTS, TAR pass on
      ;;
    history)     # a blocking wait's wake after each history (tools/wait_history.cu); with build/wait-history-omp
                 # carried (and build/offload), the same through libomptarget
      if [ -d build/wait-history-omp ]; then
        STEPS=1 NWS=16 tools/offload-probe.sh >/dev/null 2>&1 || { echo "h200-run: the offload bundle does not run"; status=1; continue; }
      fi
      OUT=$OUT timeout 250 tools/wait-history.sh 2>&1 | tail -120 || status=1
      ;;
    idle)        # the region's wait state with CPUs kept from halting (SCHED_IDLE spinners) or not; advise so
      STEPS=1 NWS=16 tools/offload-probe.sh >/dev/null 2>&1 || { echo "h200-run: the offload bundle does not run"; status=1; continue; }
      bundle_current || { status=1; continue; }
      OUT=$OUT timeout 250 tools/idle-diag.sh 2>&1 | tail -40 || status=1
      OUT=$OUT AWAKE=1 timeout 300 tools/state-diag.sh 2>&1 | tail -30 || status=1
      ;;
    placement)   # the real region and species unpinned, off and on the GPU's interrupt CPU -> $OUT/placement.tar.xz
      OUT=$OUT timeout 300 tools/placement-diag.sh 2>&1 | tail -8 || status=1
      ;;
    advise)      # the three offload applications traced (plain) and timed (every variant), then pinpath advise
      STEPS=1 NWS=16 tools/offload-probe.sh >/dev/null 2>&1 || { echo "h200-run: the offload bundle does not run"; status=1; continue; }
      # a bundle built from other sources than the tree's would time the old programs: no advise from it
      bundle_current || { status=1; continue; }
      export LD_LIBRARY_PATH=$PWD/build/offload-runtime/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_TARGET_OFFLOAD=MANDATORY
      d=build/advise-run; rm -rf $d; mkdir -p $d; echo "$digest" >$d/sources.txt
      # the CPU(s) that receive the GPU's interrupts: a process timed there is in the stencil's slow mode (NEXT.md).
      # Every timed process runs once pinned to the first of them (placement irq_cpu) and once pinned to the
      # others (other_cpu); unpinned where the interrupt CPU is not found
      # the GPU has several MSI-X vectors, each with an affinity of its own, but few carry its interrupts
      # (NEXT.md: IRQ 42, vector 0): the rule is pinpath's (machine_state.gpu_irq_cpus: the vectors with at
      # least 10 % of the busiest one's interrupts so far, the probe above made some; placement_cpus: the
      # first of their CPUs, or every other CPU), the one notebook 13's PLACEMENT follows
      cpus_at() { py -c 'import sys; from pinpath import machine_state as ms
irq = ms.gpu_irq_cpus()
cpus, why = ms.placement_cpus(sys.argv[1], irq) if sys.argv[1] in ms.PLACEMENTS else (irq, "")
print("" if why else ms.cpuspan(cpus))' "$1"; }   # "": the placement cannot be had here
      irq_cpus=$(cpus_at irq_cpus) irq_cpu=$(cpus_at irq_cpu) other_cpus=$(cpus_at other_cpu)
      { grep nvidia /proc/interrupts; echo "irq_cpus=$irq_cpus"; } >$d/irq.txt
      if [ -n "$irq_cpu" ] && [ -n "$other_cpus" ]; then places=(irq_cpu other_cpu); else places=(unpinned); fi
      echo "advise: GPU interrupts on CPU(s) ${irq_cpus:-unknown}; placements ${places[*]}" | tee -a $d/irq.txt
      cpus_of() { case $1 in irq_cpu) echo "$irq_cpu";; other_cpu) echo "$other_cpus";; *) echo "";; esac; }
      on() { local c; c=$(cpus_of "$1"); shift; if [ -n "$c" ]; then taskset -c "$c" "$@"; else "$@"; fi; }
      away=${places[-1]}   # the trace and pinpath advise (its replay and runtime probe) run off the interrupt CPU
      for app in region stencil species; do
        bin=$(ls build/offload/$app-sm_* | head -1)
        # --paired: the region's copies apart from its kernel (transfer_ns); its copies are map clauses of a
        # target region (--construct region), the stencil's target updates, species' enter/exit data maps
        args=() real=() construct=(); app_args $app
        # 40: the copies (bit 32) and the map entries made and removed (bit 8): species maps every step
        on $away env LIBOMPTARGET_INFO=40 "$bin" --variant plain "${args[@]}" --markers 2>$d/$app.info >/dev/null || status=1
        # each variant in 5 processes per placement, interleaved (tools/real-runs.sh): prediction.csv's real
        # interval is over processes; the columns placement and cpus say where each ran
        # shellcheck disable=SC2034  # REAL_RUNS_HEADER is read by real_runs
        REAL_RUNS_HEADER=1
        for pl in "${places[@]}"; do
          c=$(cpus_of $pl); c=${c:--}
          real_runs "$bin" $pl $d/$app "$c $c $c $c $c" "${args[@]}" "${real[@]}" || status=1
        done >$d/$app-real.csv
        # (taskset runs programs, not shell functions: py written out)
        # --trace-cpus: where the trace was taken (advise says it beside where it measured, and warns where they differ)
        tcpus=$(cpus_of $away) traced=(); [ -n "$tcpus" ] && traced=(--trace-cpus "$tcpus")
        on $away env PYTHONPATH=$PWD/.site:$PWD/lib python3 -m pinpath advise $d/$app.info --platform cuda --real $d/$app-real.csv --application $app \
          "${construct[@]}" "${traced[@]}" --designs --out $d/$app 2>&1 | tail -3 || status=1
      done
      awk 'FNR == 1 && NR > 1 {next} {print}' $d/*/prediction.csv | tee $d/prediction.csv
      # the run time for a trace of 100,000 transfers: the stencil's trace repeated
      n=$(grep -c 'Copying data' $d/stencil.info); reps=$(( (100000 + n - 1) / n ))
      for _ in $(seq $reps); do cat $d/stencil.info; done >build/advise-100k.info
      start=$EPOCHREALTIME
      py -m pinpath advise build/advise-100k.info --platform cuda --out build/advise-100k 2>&1 | tail -2 || status=1
      echo "advise of $(grep -c 'Copying data' build/advise-100k.info) transfers: $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}') s" \
        | tee $d/run-time-100k.txt
      # xz: three applications in two placements are over the 16 MiB a file may bring back as a plain tar
      tar -C build -I "xz -T0" -cf "$OUT/advise.tar.xz" advise-run
      ;;
    *) echo "h200-run: unknown step $step" >&2; exit 2 ;;
  esac
done
exit $status
