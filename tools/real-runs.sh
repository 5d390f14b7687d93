# shellcheck shell=bash
# Sourced (bash) by tools/h200-run.sh's advise step, tools/state-diag.sh and tools/idle-diag.sh: an
# offload application's variants timed in processes, interleaved, as the real figures for
# `pinpath advise --real` (real_runs), and each application's arguments as advise times it (app_args).
#
#   real_runs BIN PLACE PREFIX "CPUS_1 CPUS_2 ..." [ARG ...]
#     For each process p = F..F+N-1 (N CPU sets, F = REAL_RUNS_FIRST or 1; "-" leaves that process
#     unpinned): the variants plain, app_pinned and lock_mapped in runtime_term.turn_order's order for
#     turn p-1 (a rotation, reversed every other turn: no variant is always first, nor always the one
#     after app_pinned's unregister).
#     Each runs as BIN --variant V ARG... pinned to CPUS_p (lock_mapped: plain with
#     LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=1), its output in PREFIX-V-PLACE-p.out/.err.
#     Prints their rows with the variant named and columns process, placement and cpus appended; the
#     header line once, while REAL_RUNS_HEADER is unset or 1 (it is then set to 0, so that the calls of
#     one CSV print it once). Returns 1 where a run failed or no order came.
# Needs py (pinpath's Python with PYTHONPATH set), as h200-run.sh defines it.

real_runs() {
  local bin=$1 place=$2 prefix=$3 cpu_sets=$4 status=0 p=$((${REAL_RUNS_FIRST:-1} - 1)) cpus v mode out
  shift 4
  local -a vs envs
  for cpus in $cpu_sets; do
    p=$((p + 1))
    read -ra vs < <(py -c 'import sys; from pinpath.advise.runtime_term import turn_order
print(*turn_order(["plain", "app_pinned", "lock_mapped"], int(sys.argv[1])))' $((p - 1)))
    [ ${#vs[@]} = 3 ] || { echo "real_runs: no order of the variants (runtime_term.turn_order)" >&2; return 1; }
    for v in "${vs[@]}"; do
      mode=$v envs=(); [ "$v" = lock_mapped ] && mode=plain envs=(LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=1)
      out=$prefix-$v-$place-$p
      if [ "$cpus" = - ]; then env "${envs[@]}" "$bin" --variant "$mode" "$@" >"$out.out" 2>"$out.err" || status=1
      else taskset -c "$cpus" env "${envs[@]}" "$bin" --variant "$mode" "$@" >"$out.out" 2>"$out.err" || status=1
      fi
      # the first header line of a CSV only ('#' lines are the program's facts); cpus space-separated
      awk -F, -v v="$v" -v p=$p -v h="${REAL_RUNS_HEADER:-1}" -v pl="$place" -v c="${cpus//,/ }" '/^#/ {next}
          /^variant,/ {if (h == 1) print $0, "process", "placement", "cpus"; h = 0; next}
          {$1 = v; print $0, p, pl, (c == "-" ? "" : c)}' OFS=, "$out.out"
      grep -q '^variant,' "$out.out" && REAL_RUNS_HEADER=0
    done
  done
  return $status
}

# app_args APP: sets the arrays args (the run's size, as advise times it), real (what only the timed runs
# add: the region's copies apart from its kernel) and construct (pinpath advise's --construct) for one
# of the offload applications region, stencil, species. Returns 1 for another name.
# shellcheck disable=SC2034  # the arrays are read by the caller
app_args() {
  case $1 in
    region)  args=(--nw 16 --steps 5) real=(--paired) construct=(--construct region) ;;
    stencil) args=(--nx 4096 --ny 512 --steps 200 --checkpoint 50) real=() construct=() ;;
    species) args=(--species 16 --steps 200) real=() construct=() ;;
    *) echo "app_args: no application $1" >&2; return 1 ;;
  esac
}
