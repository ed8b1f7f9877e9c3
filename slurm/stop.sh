#!/usr/bin/env bash
# Stop the single-node Slurm started by slurm/start.sh: cancel every job, wait until
# their processes are gone (they do not die with slurmd), then stop only the daemons
# recorded in our pid files. Idempotent and quiet when nothing is running.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/_common.sh"
export PATH=$PATH:/usr/sbin

[ -d "$SLURM_STATE_DIR" ] || exit 0
use_our_conf

# stop_pid FILE NAME: SIGTERM the daemon in FILE, SIGKILL after 10 s.
stop_pid() {
    local pid
    pid_alive "$1" || { rm -f "$1"; return 0; }
    pid=$(cat "$1")
    kill "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        echo "slurm/stop.sh: $2 (pid $pid) ignored SIGTERM; killing it" >&2
        kill -9 "$pid" 2>/dev/null
    fi
    rm -f "$1"
}

# Pids of job step daemons (from /proc: procps may not be installed).
stepd_pids() {
    local d
    for d in /proc/[0-9]*; do
        [ "$(cat "$d/comm" 2>/dev/null)" = slurmstepd ] && echo "${d#/proc/}"
    done
}

if pid_alive "$SLURM_STATE_DIR/slurmctld.pid"; then
    jobs=$(squeue -h -o %i 2>/dev/null | tr '\n' ' ')
    if [ -n "${jobs// /}" ]; then
        # shellcheck disable=SC2086  # one argument per job id
        scancel $jobs 2>/dev/null
    fi
    # Wait (KillWait=5 s, then SIGKILL) until no job is left and no step daemon runs.
    for _ in $(seq 300); do
        if [ -z "$(squeue -h -o %i 2>/dev/null)" ] && [ -z "$(stepd_pids)" ]; then
            break
        fi
        sleep 0.1
    done
    left=$(stepd_pids | tr '\n' ' ')
    if [ -n "${left// /}" ]; then
        echo "slurm/stop.sh: job step daemons still running after 30 s: $left" >&2
    fi
fi

stop_pid "$SLURM_STATE_DIR/slurmd.pid" slurmd
stop_pid "$SLURM_STATE_DIR/slurmctld.pid" slurmctld
if [ -f "$SLURM_STATE_DIR/munged.pid" ] && pid_alive "$SLURM_MULTIHOST_DIR/slurmctld.pid"; then
    stop_or_hand_over_munged "$SLURM_STATE_DIR" "$SLURM_MULTIHOST_DIR"   # the multi-host Slurm uses it
elif [ -f "$SLURM_STATE_DIR/munged.pid" ]; then
    stop_pid "$SLURM_STATE_DIR/munged.pid" munged
fi
if [ -f "$SLURM_STATE_DIR/linked-conf" ] && [ "$(readlink "$SLURM_SYS_CONF")" = "$SLURM_OUR_CONF" ]; then
    rm -f "$SLURM_SYS_CONF" "$SLURM_STATE_DIR/linked-conf"
fi
exit 0
