#!/usr/bin/env bash
# Stop the daemons tests/cluster/slurm_up.sh started, by the process ids it recorded in its
# folder, remove /etc/slurm/slurm.conf if it is slurm_up.sh's link, then the folder (kept with
# PINPATH_SLURM_KEEP=1, for its logs). Safe to run twice, or when slurm_up.sh never ran.
set -uo pipefail

DIR=${PINPATH_SLURM_DIR:-/tmp/pinpath-slurm}
[ -d "$DIR" ] || exit 0
export SLURM_CONF="$DIR/slurm.conf"

# jobs still queued or running would leave slurmstepd processes behind
if [ -f "$DIR/slurmctld.pid" ] && kill -0 "$(cat "$DIR/slurmctld.pid")" 2>/dev/null; then
  scancel --quiet --full --user=root 2>/dev/null
  for _ in $(seq 1 40); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.25; done
fi

stop() {   # stop PIDFILE NAME: SIGTERM, then SIGKILL after 10 s
  local pidfile=$1 name=$2 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "slurm_down: $name ($pid) ignored SIGTERM; killing it" >&2
      kill -KILL "$pid"
    fi
  fi
}
stop "$DIR/slurmd.pid" slurmd
stop "$DIR/slurmctld.pid" slurmctld
stop "$DIR/slurmdbd.pid" slurmdbd
stop "$DIR/mariadbd.pid" mariadbd
stop "$DIR/munge/munged.pid" munged
if [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$SLURM_CONF" ]; then
  rm -f /etc/slurm/slurm.conf
fi
if [ "${PINPATH_SLURM_KEEP:-}" = 1 ]; then
  echo "slurm_down: stopped; logs kept in $DIR/log (PINPATH_SLURM_KEEP=1)" >&2
else
  rm -rf "$DIR"
fi
