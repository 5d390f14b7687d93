#!/usr/bin/env bash
# One call on a GPU node without a package index (the H200 we develop on): pinpath from the
# wheelhouse with the node's own Python (ENV=system), then the steps asked for, each one's output
# packed under $OUT (at most a few files: a tar per run).
#   tools/h200-run.sh reference NAME   make reproduce PRESET=full PLATFORM=cuda; share; -> $OUT/NAME.tar
#   tools/h200-run.sh smoke            make reproduce PRESET=smoke PLATFORM=cuda -> $OUT/smoke.tar
#   tools/h200-run.sh test             make test ENV=system -> $OUT/test.log
#   tools/h200-run.sh probe            tools/offload-probe.sh (the real libomptarget region)
#   tools/h200-run.sh notebooks PRESET a,b   some notebooks -> $OUT/notebooks.tar
#   tools/h200-run.sh pytest "FILES"   some test files -> $OUT/pytest.log
# Steps may follow one another: tools/h200-run.sh test reference h200
# Needs: wheelhouse/ (make wheelhouse PYVER=3.12 SKIP="what the node has") and, for notebook 13,
# build/offload/ (make offload-bundle), both carried to the node.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/build/h200-out}
mkdir -p "$OUT"
make setup ENV=system PYTHON=python3 >"$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 2; }
nvidia-smi --query-gpu=name,driver_version,pci.bus_id,clocks.sm,clocks.mem,persistence_mode --format=csv
status=0
while [ $# -gt 0 ]; do
  step=$1; shift
  case $step in
    reference)
      name=$1; shift
      start=$(date +%s)
      make reproduce ENV=system PYTHON=python3 PRESET=full PLATFORM=cuda 2>&1 | grep -v '^      ' || status=1
      make share ENV=system PYTHON=python3 >/dev/null 2>&1 || status=1
      run=$(readlink outputs/latest)
      echo "reference $name: run $run in $(( $(date +%s) - start )) s"
      tar -C outputs --exclude='*.zip' -cf "$OUT/$name.tar" "$run"
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
      PYTHONPATH=$PWD/.site:$PWD/lib timeout 300 python3 -m pytest -q -p no:cacheprovider $files >"$OUT/pytest.log" 2>&1 \
        || status=1
      tail -25 "$OUT/pytest.log"
      ;;
    test)
      timeout 420 make test ENV=system PYTHON=python3 >"$OUT/test.log" 2>&1 || status=1
      tail -25 "$OUT/test.log"
      ;;
    probe)
      tools/offload-probe.sh 2>&1 | tail -30 || status=1
      ;;
    *) echo "h200-run: unknown step $step" >&2; exit 2 ;;
  esac
done
exit $status
