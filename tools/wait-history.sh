#!/usr/bin/env bash
# Diagnostic (issue 33 item 3), on a GPU node from the repository root (nvcc on PATH): does a blocking
# wait's soon or late wake (README "Wait states") follow what the process waited on just before?
# tools/wait_history.cu in fresh processes, each timing short copies after each history (by default six:
# nothing, a 20 us / 200 us / 2 ms kernel waited on, 2 ms asleep, 2 ms busy). PROCS rounds of processes
# (default six); in each the blocking-sync mode (as LLVM's CUDA plugin sets it) on the CPUs off the GPU's
# interrupt CPU (range, advise's other_cpu) and on a single one of them (one), in an alternating order, and every
# other round CUDA's default mode (auto) on range as a control. With AWAKE=1 each round also runs the
# blocking mode on range with every CPU kept from halting (tools/awake.sh; placement "range_awake").
# REG=1 adds the blocking mode on range with the host memory an application's registered array
# (aligned_alloc and cudaHostRegister, as app_pinned) instead of cudaMallocHost's (mode blocking_reg).
# Every process writes its host buffers' physical page runs to stderr.txt (wait_history.h's wh_page_runs).
# HISTORIES: wait_history.h's list (none, kernN, sleepN, busyN; N in us). Where build/wait-history-omp/
# holds tools/wait_history_omp.cpp built from the tree's sources (tools/wait_history.py build, carried with
# build/offload, after tools/offload-probe.sh unpacked the runtime), each round also runs it, the same
# through LLVM's libomptarget, for plain and app_pinned on range (modes omp_plain, omp_app_pinned). No verdict:
# tools/wait_history.py analyse DIR prints, per op and history, the late share and median of each process.
#   OUT=DIR [ROUNDS=8] [PROCS=6] [HISTORIES=...] [AWAKE=1] [REG=1] tools/wait-history.sh   -> DIR/history.tar.xz
set -uo pipefail
: "${OUT:?wait-history: set OUT=DIR, the folder for history.tar.xz}"
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2   # before the cd below: a relative OUT is the caller's
cd "$(dirname "$0")/.." || exit 2
d=build/wait-history; rm -rf $d; mkdir -p $d/runs
py() { PYTHONPATH=$PWD/.site:$PWD/lib python3 "$@"; }
. tools/awake.sh
trap awake_off EXIT
nvcc -O2 -I tools -o $d/wait_history tools/wait_history.cu || exit 2
# a fresh machine names no GPU interrupt CPU before its first blocking waits (machine_state.gpu_irq_cpus)
$d/wait_history blocking warm 0 2 >/dev/null 2>>$d/stderr.txt || exit 2
read -r range others < <(py -c 'from pinpath import machine_state as ms
cpus, why = ms.placement_cpus("other_cpu", ms.gpu_irq_cpus()); print(*([] if why else [ms.cpuspan(cpus), *cpus]))')
[ -n "${others:-}" ] || { echo "wait-history: no GPU interrupt CPU found: nothing to place off it"; exit 2; }
read -ra single <<<"$others"
{ echo "range=$range"; uname -r; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; grep nvidia /proc/interrupts; } \
  >$d/facts.txt 2>&1
status=0
omp=$(ls build/wait-history-omp/wait_history_omp-sm_* 2>/dev/null | head -1)
if [ -n "$omp" ]; then
  sha256sum --quiet -c build/wait-history-omp/sources.sha256 ||
    { echo "wait-history: $omp was built from other sources than the tree's: tools/wait_history.py build"; exit 2; }
  export LD_LIBRARY_PATH=$PWD/build/offload-runtime/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_TARGET_OFFLOAD=MANDATORY
fi
{ echo "histories=${HISTORIES:-default}"; echo "awake=${AWAKE:-0}"; echo "omp=${omp:-none}"; } >>$d/facts.txt
run() {   # run MODE PLACEMENT CPUS P PROGRAM [ARG ...]: the program's rows, the placement appended
  local f="$d/runs/$4-$2-$1.csv" cpus=$3 p=$4 place=$2
  shift 4
  taskset -c "$cpus" "$@" "$p" "$p" "${ROUNDS:-8}" 16 ${HISTORIES:+"$HISTORIES"} >"$f" 2>>$d/stderr.txt || status=1
  awk -F, -v OFS=, -v pl="$place" 'NR == 1 {next} {print $0, pl}' "$f" >>$d/history.csv
}
cuda() { run "$1" "$2" "$3" "$4" $d/wait_history "$1"; }   # cuda MODE PLACEMENT CPUS P
omp_pair() {   # omp_pair CPUS P: plain and app_pinned through libomptarget, neither always first
  [ -n "$omp" ] || return 0
  local vs=(plain app_pinned); [ $(($2 % 2)) = 0 ] && vs=(app_pinned plain)
  for v in "${vs[@]}"; do run "omp_$v" range "$1" "$2" "$omp" --variant "$v"; done
}
echo "mode,process,round,history,op,index,ns,cpu_before,cpu_after,placement" >$d/history.csv
for p in $(seq 1 "${PROCS:-6}"); do
  one=${single[$(( (p - 1) % ${#single[@]} ))]}
  if [ $((p % 2)) = 1 ]; then cuda blocking range "$range" $p; cuda blocking one "$one" $p; cuda auto range "$range" $p
  else cuda blocking one "$one" $p; cuda blocking range "$range" $p; fi
  omp_pair "$range" $p
  [ "${REG:-0}" = 1 ] && cuda blocking_reg range "$range" $p
  if [ "${AWAKE:-0}" = 1 ]; then
    awake_on "$(seq 0 $(($(nproc) - 1)))"; cuda blocking range_awake "$range" $p; awake_off
  fi
done
py tools/wait_history.py analyse $d 2>&1 | tee $d/analysis.txt || status=1
tar -C build -I "xz -T0" -cf "$OUT/history.tar.xz" wait-history || status=1
exit $status
