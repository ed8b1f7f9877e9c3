#!/usr/bin/env bash
# Start a single-node Slurm on this machine (no systemd): munged, slurmctld, slurmd.
# Config, state, spool, logs and pid files live in $SCHEDSWEEP_SLURM_DIR
# (default /tmp/schedsweep-slurm). Idempotent: returns at once when our Slurm is
# already up with its node idle. Quiet on success; on failure prints the daemon logs,
# stops what it started and exits non-zero.
#   SCHEDSWEEP_SLURM_CPUS    CPUs the node advertises (default max(8, 4 x cores)),
#                            more than the real cores so several one-core jobs fit
#   SCHEDSWEEP_SLURM_TIMEOUT seconds to wait for the node to become idle (default 60)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/_common.sh"

wait_idle() {   # wait_idle SECONDS: true once the node accepts jobs
    local deadline=$((SECONDS + $1)) state
    while [ "$SECONDS" -lt "$deadline" ]; do
        state=$(node_state)
        case "$state" in idle|mix|mixed|alloc|allocated) return 0 ;; esac
        sleep 0.2
    done
    echo "slurm/start.sh: node not idle after $1 s (state: '${state:-no answer}')" >&2
    return 1
}

fail() {
    echo "slurm/start.sh: $*" >&2
    print_logs
    bash "$here/stop.sh" >&2 || true
    exit 1
}

# 1. Already running (ours)? Then only make sure the node is usable.
if pid_alive "$SLURM_STATE_DIR/slurmctld.pid" && pid_alive "$SLURM_STATE_DIR/slurmd.pid"; then
    use_our_conf
    wait_idle "$START_TIMEOUT" || { print_logs; exit 1; }
    exit 0
fi
# Half of ours running (e.g. slurmd crashed): start again from a clean state.
if [ -d "$SLURM_STATE_DIR" ]; then
    bash "$here/stop.sh"
fi

for b in munged slurmctld slurmd sinfo; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] \
        || { echo "slurm/start.sh: $b not found; run slurm/install.sh first" >&2; exit 1; }
done
export PATH=$PATH:/usr/sbin
[ "$(id -u)" = 0 ] || { echo "slurm/start.sh: must run as root (daemons, /run/munge)" >&2; exit 1; }

# 2. A clean state directory (only ever ours: it holds our marker file).
if [ -e "$SLURM_STATE_DIR" ] && [ ! -e "$SLURM_STATE_DIR/.schedsweep-slurm" ]; then
    echo "slurm/start.sh: $SLURM_STATE_DIR exists and was not made by this script; set SCHEDSWEEP_SLURM_DIR" >&2
    exit 1
fi
rm -rf "$SLURM_STATE_DIR"
mkdir -p "$SLURM_STATE_DIR/ctld" "$SLURM_STATE_DIR/spool"
touch "$SLURM_STATE_DIR/.schedsweep-slurm"

# 3. munge: reuse a working munged, else start one (_common.sh).
start_munged "$SLURM_STATE_DIR" || fail "munged did not start"

# 4. slurm.conf for this host: the real memory less 10% (a --mem above RealMemory is
#    rejected, RealMemory above the truth drains the node), more CPUs than cores.
node=$(hostname -s)
real_mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -n1)
[ -n "$real_mem" ] || fail "slurmd -C reported no RealMemory"
mem=$((real_mem * 9 / 10))
cores=$(nproc)
cpus=${SCHEDSWEEP_SLURM_CPUS:-$(( cores * 4 > 8 ? cores * 4 : 8 ))}
cat >"$SLURM_OUR_CONF" <<CONF
# Written by slurm/start.sh for a single-node test Slurm; do not edit (rewritten on start).
ClusterName=schedsweep
SlurmctldHost=$node(127.0.0.1)
$(conf_common "$SLURM_STATE_DIR")
SlurmdSpoolDir=$SLURM_STATE_DIR/spool
SlurmctldPidFile=$SLURM_STATE_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_STATE_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_STATE_DIR/slurmctld.log
SlurmdLogFile=$SLURM_STATE_DIR/slurmd.log
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF

# Commands (sinfo, sbatch, dask-jobqueue's sbatch) find the config at the system path:
# link it there unless a real site config is in the way (then export SLURM_CONF).
if [ ! -e "$SLURM_SYS_CONF" ] && [ ! -L "$SLURM_SYS_CONF" ]; then
    mkdir -p "$(dirname "$SLURM_SYS_CONF")"
    ln -s "$SLURM_OUR_CONF" "$SLURM_SYS_CONF"
    touch "$SLURM_STATE_DIR/linked-conf"
elif [ "$(readlink "$SLURM_SYS_CONF")" != "$SLURM_OUR_CONF" ]; then
    echo "slurm/start.sh: $SLURM_SYS_CONF belongs to another Slurm; use: export SLURM_CONF=$SLURM_OUR_CONF" >&2
fi
use_our_conf

# 5. The daemons (they fork and write their pid files).
slurmctld >"$SLURM_STATE_DIR/slurmctld.out" 2>&1 || fail "slurmctld did not start: $(cat "$SLURM_STATE_DIR/slurmctld.out")"
slurmd -N "$node" >"$SLURM_STATE_DIR/slurmd.out" 2>&1 || fail "slurmd did not start: $(cat "$SLURM_STATE_DIR/slurmd.out")"
wait_idle "$START_TIMEOUT" || fail "the node did not become idle"
