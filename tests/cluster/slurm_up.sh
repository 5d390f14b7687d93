#!/usr/bin/env bash
# A real one-node Slurm on this machine, for tests/cluster: Debian's slurm-wlm and munge, a
# private configuration under $PINPATH_SLURM_DIR (default /tmp/pinpath-slurm), and daemons
# started here and stopped by slurm_down.sh (by the process ids recorded in that folder):
# munged, slurmctld, slurmd and, with accounting, mariadbd and slurmdbd.
#
# PINPATH_SLURM_ACCOUNTING=1 (default): slurmdbd on a private MariaDB (Debian's slurmdbd and
#   mariadb-server, about 15 s to install), accounts enforced (user root in account "pinpath"),
#   so sacct answers as on a production cluster.
# PINPATH_SLURM_ACCOUNTING=0: AccountingStorageType=accounting_storage/none; finished jobs are
#   known to slurmctld for MinJobAge (squeue, scontrol) and to jobcomp/filetxt ($DIR/jobcomp.txt).
#
# The only change outside $DIR: /etc/slurm/slurm.conf becomes a link to $DIR/slurm.conf (the
# srun that snakemake-executor-plugin-slurm-jobstep starts inside each job gets no SLURM_CONF),
# made only where there is no such file and removed by slurm_down.sh.
#
# Exit 0 with the cluster up and `SLURM_CONF=...` as the last line of stdout; exit 77 with
# "slurm_up: skip: <reason>" when it cannot be done here (not root, no apt-get, a Slurm of the
# machine's own); any other status is a failure, with the daemons' logs printed.
set -euo pipefail

DIR=${PINPATH_SLURM_DIR:-/tmp/pinpath-slurm}
PORT=${PINPATH_SLURM_PORT:-16817}            # slurmctld; slurmd +1, slurmdbd +2, MariaDB +3
ACCOUNTING=${PINPATH_SLURM_ACCOUNTING:-1}
PARTITION=debug

skip() { echo "slurm_up: skip: $*" >&2; exit 77; }
say() { echo "slurm_up: $*" >&2; }

[ "$(id -u)" -eq 0 ] || skip "installing slurm-wlm and munge and starting their daemons needs root"
want=(slurm-wlm munge)
[ "$ACCOUNTING" = 1 ] && want+=(slurmdbd mariadb-server)
missing=()
for pkg in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || skip "${missing[*]} not installed and there is no apt-get to install them"
  say "installing ${missing[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || skip "apt-get update failed: no package source reachable"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || skip "apt-get could not install ${missing[*]}"
fi

if { [ -e /etc/slurm/slurm.conf ] || [ -L /etc/slurm/slurm.conf ]; } \
    && [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" != "$DIR/slurm.conf" ]; then
  skip "this machine has a Slurm configuration of its own (/etc/slurm/slurm.conf); not touching it"
fi
if [ -f "$DIR/slurmctld.pid" ] && kill -0 "$(cat "$DIR/slurmctld.pid")" 2>/dev/null; then
  say "a cluster started by this script is already up in $DIR; stop it with slurm_down.sh first"
  exit 1
fi
rm -rf "$DIR"
mkdir -p "$DIR"/{munge,state,spool,log}
chmod 755 "$DIR" "$DIR/munge"   # munged wants its socket reachable by every user
export SLURM_CONF="$DIR/slurm.conf"

fail() {
  echo "slurm_up: $*" >&2
  for f in "$DIR"/log/*; do echo "--- $f" >&2; tail -n 30 "$f" >&2; done
  exit 1
}
wait_for() {   # wait_for SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  while [ "$SECONDS" -lt "$deadline" ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  fail "$what did not come up within $1 s"
}

if [ "$ACCOUNTING" = 1 ]; then
  ACCOUNTING_CONF="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$((PORT + 2))
AccountingStoragePass=$DIR/munge/munge.socket
AccountingStorageEnforce=associations,limits"
else
  ACCOUNTING_CONF="AccountingStorageType=accounting_storage/none"
fi

# the node as slurmd sees it: its name, real cores and memory
NODE=$(hostname -s)
read -r CPUS BOARDS SOCKETS CORES THREADS MEM < <(slurmd -C | awk '/^NodeName=/ {
  for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  print v["CPUs"], v["Boards"], v["SocketsPerBoard"], v["CoresPerSocket"], v["ThreadsPerCore"], v["RealMemory"] }')

cat > "$SLURM_CONF" <<EOF
# written by tests/cluster/slurm_up.sh
ClusterName=pinpath-test
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# memory is watched by sampling (no cgroups here): a step over its --mem is killed within 5 s
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=5
JobAcctGatherParams=OverMemoryKill
$ACCOUNTING_CONF
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.txt
# finished jobs stay known to slurmctld for 5 minutes; a killed job gets 5 s between SIGTERM and SIGKILL
MinJobAge=300
KillWait=5
OverTimeLimit=0
InactiveLimit=0
ReturnToService=2
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS Boards=$BOARDS SocketsPerBoard=$SOCKETS CoresPerSocket=$CORES ThreadsPerCore=$THREADS RealMemory=$MEM State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
mkdir -p /etc/slurm
ln -sfn "$SLURM_CONF" /etc/slurm/slurm.conf

# munge: a private key and socket, so a munged the machine may already run is left alone
dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$DIR/munge/munge.key"
munged --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.socket" \
  --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed" \
  || fail "munged did not start"

if [ "$ACCOUNTING" = 1 ]; then
  # MariaDB in $DIR, on 127.0.0.1 only, for slurmdbd
  mariadb-install-db --no-defaults --datadir="$DIR/mysql" --user=root --auth-root-authentication-method=socket \
    >"$DIR/log/mariadb-install.log" 2>&1 || fail "mariadb-install-db failed"
  mariadbd --no-defaults --datadir="$DIR/mysql" --user=root --bind-address=127.0.0.1 --port=$((PORT + 3)) \
    --socket="$DIR/mysql.sock" --pid-file="$DIR/mariadbd.pid" --log-error="$DIR/log/mariadbd.log" \
    --skip-log-bin --innodb-buffer-pool-size=32M >/dev/null 2>&1 &
  wait_for 60 "mariadbd" timeout 5 mariadb --no-defaults --socket="$DIR/mysql.sock" -e "select 1"
  mariadb --no-defaults --socket="$DIR/mysql.sock" -e "
    CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'pinpath-test';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
  cat > "$DIR/slurmdbd.conf" <<EOF
# written by tests/cluster/slurm_up.sh
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
DbdHost=localhost
DbdPort=$((PORT + 2))
SlurmUser=root
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$((PORT + 3))
StorageUser=slurm
StoragePass=pinpath-test
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$DIR/slurmdbd.conf"
  slurmdbd || fail "slurmdbd did not start"
  wait_for 60 "slurmdbd" timeout 5 sacctmgr -n list cluster
  sacctmgr -i add cluster pinpath-test >/dev/null
  sacctmgr -i add account pinpath Cluster=pinpath-test Description=tests Organization=pinpath >/dev/null
  sacctmgr -i add user root Account=pinpath DefaultAccount=pinpath Cluster=pinpath-test >/dev/null
fi
slurmctld || fail "slurmctld did not start"
slurmd || fail "slurmd did not start"

node_up() { case "$(timeout 5 sinfo -h -n "$NODE" -o %t 2>/dev/null)" in idle|mix|alloc) return 0 ;; esac; return 1; }
wait_for 60 "node $NODE" node_up
say "up: partition $PARTITION, node $NODE ($CPUS CPUs, $MEM MiB), accounting $([ "$ACCOUNTING" = 1 ] && echo "slurmdbd (account pinpath)" || echo none), config $SLURM_CONF"
echo "SLURM_CONF=$SLURM_CONF"
