# shellcheck shell=bash
# Sourced (bash) by tools/idle-diag.sh and tools/state-diag.sh: keep CPUs from halting while something
# is timed. On the H100/H200 guests we use (KVM, 16 vCPUs, no cpuidle states) an idle vCPU halts, and a
# wake sent to a halted vCPU goes through the host; a spinner at SCHED_IDLE keeps the vCPU running
# and gives way at once to any ordinary thread woken there.
#   awake_on "CPU ..."   one SCHED_IDLE spinner per CPU named (the PIDs in AWAKE_PIDS)
#   awake_off            stops them
# Needs python3 (os.SCHED_IDLE, Linux).
AWAKE_PIDS=()
awake_on() {
  local c
  for c in $1; do
    python3 -c 'import os, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
while True:
    pass' "$c" &
    AWAKE_PIDS+=($!)
  done
  sleep 0.2   # each spinner placed and at SCHED_IDLE before anything is timed
}
awake_off() {
  [ ${#AWAKE_PIDS[@]} = 0 ] && return 0
  kill "${AWAKE_PIDS[@]}" 2>/dev/null
  wait "${AWAKE_PIDS[@]}" 2>/dev/null
  AWAKE_PIDS=()
}
