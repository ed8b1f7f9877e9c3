# Shared settings of slurm/{start,check,stop}.sh (sourced, not run).
# Everything the test Slurm writes lives in one state directory; the daemons we start
# are recorded there by pid file, so stop.sh stops only those.
SLURM_STATE_DIR=${SCHEDSWEEP_SLURM_DIR:-/tmp/schedsweep-slurm}
SLURM_OUR_CONF=$SLURM_STATE_DIR/slurm.conf
SLURM_SYS_CONF=/etc/slurm/slurm.conf      # where sinfo/sbatch look without SLURM_CONF
START_TIMEOUT=${SCHEDSWEEP_SLURM_TIMEOUT:-60}   # seconds to wait for the node to be idle

# pid_alive FILE: true when FILE names a running process of the daemon it is named for
# (slurmctld.pid -> slurmctld), so a stale pid file whose pid was reused does not count.
pid_alive() {
    local pid name
    [ -s "$1" ] || return 1
    pid=$(cat "$1")
    name=$(basename "$1" .pid)
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]
}

# node_state: the state of the first node as sinfo prints it (idle, mix, alloc, down*, drain, ...).
node_state() {
    sinfo -h -N -o %T 2>/dev/null | head -n1
}

# Our config is used when it is the system one (symlink) or SLURM_CONF points at it.
use_our_conf() {
    if [ "$(readlink "$SLURM_SYS_CONF" 2>/dev/null)" != "$SLURM_OUR_CONF" ]; then
        export SLURM_CONF=$SLURM_OUR_CONF
    fi
}

print_logs() {
    local f
    for f in "$SLURM_STATE_DIR"/slurmctld.log "$SLURM_STATE_DIR"/slurmd.log /var/log/munge/munged.log; do
        [ -f "$f" ] || continue
        echo "----- last lines of $f -----" >&2
        tail -n 40 "$f" >&2
    done
    echo "----- sinfo -----" >&2
    sinfo -N -l >&2 2>&1 || true
}
