# Shared settings of slurm/{start,check,stop}.sh (sourced, not run).
# Everything the test Slurm writes lives in one state directory; the daemons we start
# are recorded there by pid file, so stop.sh stops only those.
SLURM_STATE_DIR=${SCHEDSWEEP_SLURM_DIR:-/tmp/schedsweep-slurm}
SLURM_OUR_CONF=$SLURM_STATE_DIR/slurm.conf
SLURM_MULTIHOST_DIR=${SCHEDSWEEP_MULTIHOST_DIR:-/tmp/schedsweep-multihost}   # slurm/multihost.sh's
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

# start_munged DIR: reuse a working munged, else start one as the munge user (as root it
# refuses: "Logfile is insecure") and record its pid in DIR/munged.pid (so the script
# that started it stops it). One munged serves every Slurm of this machine: its socket
# is a file, which network namespaces share.
start_munged() {
    (munge -n | unmunge) >/dev/null 2>&1 && return 0
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    chmod 0755 /run/munge
    [ -s /etc/munge/munge.key ] || { echo "/etc/munge/munge.key missing (reinstall munge)" >&2; return 1; }
    rm -f /run/munge/munged.pid
    runuser -u munge -- /usr/sbin/munged >"$1/munged.out" 2>&1 || { cat "$1/munged.out" >&2; return 1; }
    for _ in $(seq 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
    cp /run/munge/munged.pid "$1/munged.pid" || { echo "munged wrote no pid file" >&2; return 1; }
    (munge -n | unmunge) >/dev/null 2>&1 || { echo "munge credentials do not round-trip" >&2; return 1; }
}

# stop_or_hand_over_munged DIR OTHER_DIR: stop the munged recorded in DIR/munged.pid, unless
# the other test Slurm (its slurmctld pid file in OTHER_DIR) still runs: then move the record
# there, so whichever stops last stops munged.
stop_or_hand_over_munged() {
    [ -f "$1/munged.pid" ] || return 0
    if pid_alive "$2/slurmctld.pid"; then
        mv "$1/munged.pid" "$2/munged.pid"
    elif pid_alive "$1/munged.pid"; then
        kill "$(cat "$1/munged.pid")" 2>/dev/null
        rm -f "$1/munged.pid"
    fi
}

# conf_common DIR: the slurm.conf lines both test Slurms share (state and job log under DIR).
conf_common() {
    cat <<CONF
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
# pgid: with linuxproc, workers killed by scancel can escape and keep running.
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# sacct -c reads this file; no slurmdbd needed.
JobCompType=jobcomp/filetxt
JobCompLoc=$1/jobcomp.txt
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# CPUs= of a node line may exceed the cores (several one-core worker jobs at once).
SlurmdParameters=config_overrides
KillWait=5
InactiveLimit=0
StateSaveLocation=$1/ctld
CONF
}
