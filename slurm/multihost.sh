#!/usr/bin/env bash
# A small multi-host Slurm on this one machine, for tests and CI: three hosts, each a
# network namespace with its own address, hostname and /etc/hosts, linked by veth pairs
# to a bridge inside the login host (nothing is added to this machine's own network):
#
#   mh-login  10.231.7.1   slurmctld; the client of `--cluster slurm` and `sbatch` run here
#   mh-c1     10.231.7.11  slurmd -N mh-c1 (compute)
#   mh-c2     10.231.7.12  slurmd -N mh-c2 (compute)
#
# The network interface is called ssw0 on every host (the bridge on the login host), as a
# site's ib0 would be, so one profile (slurm/multihost.yaml) serves all of them. munged is
# shared (its socket is a file); files are shared as on a site with a shared home.
#
#   slurm/multihost.sh up           start (idempotent: restarts what is missing), wait for both nodes
#   slurm/multihost.sh down         cancel jobs, kill every process of the hosts, remove the namespaces
#   slurm/multihost.sh status       one line per node (sinfo), exit 1 when not up
#   slurm/multihost.sh run HOST CMD...   run CMD on HOST (login, c1, c2) with the cluster's SLURM_CONF
#   slurm/multihost.sh poweroff HOST     SIGKILL every process of compute HOST (its slurmd, job steps,
#                                        workers): a node dying mid-sweep; `up` starts it again
#   slurm/multihost.sh cut HOST          take compute HOST's link down (its processes live on, unreachable)
#   slurm/multihost.sh mend HOST         bring it up again (`up` does too)
#
# Root only. State, config and logs in $SCHEDSWEEP_MULTIHOST_DIR (default /tmp/schedsweep-multihost).
#   SCHEDSWEEP_MULTIHOST_TIMEOUT  seconds to wait for the nodes to be idle (default 60)
#   SCHEDSWEEP_MULTIHOST_CPUS     CPUs each compute node offers (default 1: one one-core job per host,
#                                 so two worker jobs land on two hosts); each offers 2000 MB
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/_common.sh"
export PATH=$PATH:/usr/sbin

MH_DIR=$SLURM_MULTIHOST_DIR
MH_CONF=$MH_DIR/slurm.conf
MH_NET=10.231.7                    # a private /24 that exists only inside these namespaces
MH_TIMEOUT=${SCHEDSWEEP_MULTIHOST_TIMEOUT:-60}
HOSTS=(login c1 c2)
COMPUTE=(c1 c2)
declare -A ADDR=([login]=$MH_NET.1 [c1]=$MH_NET.11 [c2]=$MH_NET.12)

ns() { echo "ssw-$1"; }            # network namespace of a host
hostname_of() { echo "mh-$1"; }

say() { echo "slurm/multihost.sh: $*" >&2; }

mh_logs() {
    local f
    for f in "$MH_DIR"/slurmctld.log "$MH_DIR"/slurmd-*.log; do
        [ -f "$f" ] || continue
        echo "----- last lines of $f -----" >&2
        tail -n 30 "$f" >&2
    done
    echo "----- sinfo -----" >&2
    on login timeout 10 sinfo -N -l >&2 2>&1 || true
}

# on HOST CMD...: run CMD on HOST: in its network namespace, under its own hostname, with its
# /etc/hosts (new UTS and mount namespaces per command). Not `ip netns exec`: it remounts
# /sys, which hides the cgroup file system slurmd needs.
on() {
    exec_on "$@" &
    wait $!
}
exec_on() {
    local host=$1; shift
    SLURM_CONF=$MH_CONF exec nsenter --net="/run/netns/$(ns "$host")" unshare --uts --mount \
        sh -c 'mount --bind "$1" /etc/hosts && hostname "$0" && shift && exec "$@"' \
        "$(hostname_of "$host")" "/etc/netns/$(ns "$host")/hosts" "$@"
}

# daemon_alive FILE NAME: FILE holds the pid of a running NAME (pid files of slurmd carry the node name).
daemon_alive() {
    local pid
    [ -s "$1" ] || return 1
    pid=$(cat "$1")
    kill -0 "$pid" 2>/dev/null && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}

ns_exists() { ip netns list 2>/dev/null | grep -qw "^$(ns "$1")"; }

# The namespaces, links and addresses (skipped when they exist).
make_network() {
    local h
    ns_exists login && return 0
    for h in "${HOSTS[@]}"; do
        mkdir -p "/etc/netns/$(ns "$h")"
        {
            echo "127.0.0.1 localhost"
            for x in "${HOSTS[@]}"; do echo "${ADDR[$x]} $(hostname_of "$x")"; done
        } >"/etc/netns/$(ns "$h")/hosts"
        ip netns add "$(ns "$h")"
        ip -n "$(ns "$h")" link set lo up
    done
    ip -n "$(ns login)" link add ssw0 type bridge
    ip -n "$(ns login)" addr add "${ADDR[login]}/24" dev ssw0
    ip -n "$(ns login)" link set ssw0 up
    for h in "${COMPUTE[@]}"; do
        ip -n "$(ns login)" link add "to-$h" type veth peer name ssw0 netns "$(ns "$h")"
        ip -n "$(ns login)" link set "to-$h" master ssw0
        ip -n "$(ns login)" link set "to-$h" up
        ip -n "$(ns "$h")" addr add "${ADDR[$h]}/24" dev ssw0
        ip -n "$(ns "$h")" link set ssw0 up
    done
}

write_conf() {
    local cpus=${SCHEDSWEEP_MULTIHOST_CPUS:-1} mem=2000 h
    cat >"$MH_CONF" <<CONF
# Written by slurm/multihost.sh for a multi-host test Slurm in network namespaces; do not edit.
ClusterName=schedsweep-mh
SlurmctldHost=$(hostname_of login)(${ADDR[login]})
$(conf_common "$MH_DIR")
# Daemons and srun bind the address their host name resolves to, not 0.0.0.0.
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
# A dead node is declared down after 20 s (default 300), so its jobs end and are replaced.
SlurmdTimeout=20
SlurmdSpoolDir=$MH_DIR/spool-%n
SlurmctldPidFile=$MH_DIR/slurmctld.pid
SlurmdPidFile=$MH_DIR/slurmd-%n.pid
SlurmctldLogFile=$MH_DIR/slurmctld.log
SlurmdLogFile=$MH_DIR/slurmd-%n.log
CONF
    for h in "${COMPUTE[@]}"; do
        echo "NodeName=$(hostname_of "$h") NodeAddr=${ADDR[$h]} CPUs=$cpus RealMemory=$mem State=UNKNOWN" >>"$MH_CONF"
    done
    echo "PartitionName=mh Nodes=$(hostname_of c1),$(hostname_of c2) Default=YES MaxTime=INFINITE State=UP" >>"$MH_CONF"
}

# nodes_idle: true when every compute node accepts jobs.
nodes_idle() {
    local states
    states=$(on login timeout 10 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u) || return 1
    [ "$(echo "$states" | grep -cE ' (idle|mixed|allocated)$')" = "${#COMPUTE[@]}" ]
}

up() {
    [ "$(id -u)" = 0 ] || { say "must run as root (namespaces, daemons)"; exit 1; }
    for b in munged slurmctld slurmd sinfo ip unshare; do
        command -v "$b" >/dev/null 2>&1 || { say "$b not found (run slurm/install.sh)"; exit 1; }
    done
    if [ ! -e "$MH_DIR/.schedsweep-multihost" ]; then
        [ -e "$MH_DIR" ] && { say "$MH_DIR exists and was not made by this script; set SCHEDSWEEP_MULTIHOST_DIR"; exit 1; }
        mkdir -p "$MH_DIR/ctld"
        touch "$MH_DIR/.schedsweep-multihost"
    fi
    make_network
    for h in "${COMPUTE[@]}"; do link "$h" up; done   # a host cut off by `cut` is reachable again
    start_munged "$MH_DIR" || { say "munged did not start"; exit 1; }
    pid_alive "$MH_DIR/slurmctld.pid" || write_conf
    if ! pid_alive "$MH_DIR/slurmctld.pid"; then
        on login slurmctld -f "$MH_CONF" >"$MH_DIR/slurmctld.out" 2>&1 \
            || { cat "$MH_DIR/slurmctld.out" >&2; mh_logs; say "slurmctld did not start"; exit 1; }
    fi
    local h
    for h in "${COMPUTE[@]}"; do
        daemon_alive "$MH_DIR/slurmd-$(hostname_of "$h").pid" slurmd && continue
        mkdir -p "$MH_DIR/spool-$(hostname_of "$h")"
        on "$h" slurmd -f "$MH_CONF" -N "$(hostname_of "$h")" >"$MH_DIR/slurmd-$h.out" 2>&1 \
            || { cat "$MH_DIR/slurmd-$h.out" >&2; mh_logs; say "slurmd on $h did not start"; exit 1; }
    done
    local deadline=$((SECONDS + MH_TIMEOUT)) kicked=$((SECONDS + 10))
    until nodes_idle; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            mh_logs; say "the compute nodes were not idle after $MH_TIMEOUT s"; exit 1
        fi
        if [ "$SECONDS" -ge "$kicked" ]; then
            # A host powered off and started again before slurmctld noticed keeps the jobs it was
            # running "completing" for ever: down and resume it, which ends them.
            resume_stuck_nodes
            kicked=$((SECONDS + 10))
        fi
        sleep 0.3
    done
}

# resume_stuck_nodes: every compute node neither idle nor busy is set down, then resumed.
resume_stuck_nodes() {
    local node state
    while read -r node state; do
        case "$state" in idle|mixed|allocated|"") continue ;; esac
        on login scontrol update NodeName="$node" State=DOWN Reason=schedsweep-restart >/dev/null 2>&1 || true
        on login scontrol update NodeName="$node" State=RESUME >/dev/null 2>&1 || true
    done < <(on login timeout 10 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u)
}

# ns_pids HOST: every process in HOST's network namespace (all started by this script or its jobs).
ns_pids() { ip netns pids "$(ns "$1")" 2>/dev/null || true; }

poweroff() {
    local host=$1 pids
    case " ${COMPUTE[*]} " in *" $host "*) ;; *) say "poweroff: HOST is one of: ${COMPUTE[*]}"; exit 2 ;; esac
    pids=$(ns_pids "$host" | tr '\n' ' ')
    # shellcheck disable=SC2086  # one argument per pid
    [ -n "${pids// /}" ] && kill -9 $pids 2>/dev/null
    for _ in $(seq 50); do [ -z "$(ns_pids "$host")" ] && break; sleep 0.1; done
    rm -f "$MH_DIR/slurmd-$(hostname_of "$host").pid"
}

# link HOST up|down: compute HOST's end of its link to the login host's bridge.
link() {
    case " ${COMPUTE[*]} " in *" $1 "*) ;; *) say "cut/mend: HOST is one of: ${COMPUTE[*]}"; exit 2 ;; esac
    ip -n "$(ns "$1")" link set ssw0 "$2"
}

down() {
    [ -e "$MH_DIR/.schedsweep-multihost" ] || ns_exists login || exit 0
    local jobs h pids
    if pid_alive "$MH_DIR/slurmctld.pid"; then
        jobs=$(on login timeout 10 squeue -h -o %i 2>/dev/null | tr '\n' ' ') || jobs=
        # shellcheck disable=SC2086
        [ -n "${jobs// /}" ] && on login timeout 10 scancel $jobs 2>/dev/null
        for _ in $(seq 100); do
            [ -z "$(on login timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.1
        done
    fi
    # Every process left in the hosts' namespaces is ours: SIGTERM, then SIGKILL after 5 s.
    for sig in TERM KILL; do
        pids=$(for h in "${HOSTS[@]}"; do ns_pids "$h"; done | tr '\n' ' ')
        [ -z "${pids// /}" ] && break
        # shellcheck disable=SC2086
        kill -s "$sig" $pids 2>/dev/null
        for _ in $(seq 50); do
            [ -z "$(for h in "${HOSTS[@]}"; do ns_pids "$h"; done)" ] && break
            sleep 0.1
        done
    done
    for h in "${HOSTS[@]}"; do
        ip netns del "$(ns "$h")" 2>/dev/null || true
        rm -rf "/etc/netns/$(ns "$h")"
    done
    rmdir /etc/netns 2>/dev/null || true   # only when empty (ip-netns' folder, maybe not ours alone)
    stop_or_hand_over_munged "$MH_DIR" "$SLURM_STATE_DIR"   # unless slurm/start.sh's Slurm still uses it
    rm -rf "$MH_DIR"
}

status() {
    ns_exists login && pid_alive "$MH_DIR/slurmctld.pid" || { say "not up"; exit 1; }
    on login timeout 10 sinfo -h -N -o '%N %T %o'
    nodes_idle
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status) status ;;
    run) [ $# -ge 3 ] || { say "usage: run HOST CMD..."; exit 2; }; shift; exec_on "$@" ;;
    poweroff) [ $# = 2 ] || { say "usage: poweroff HOST"; exit 2; }; poweroff "$2" ;;
    cut) [ $# = 2 ] || { say "usage: cut HOST"; exit 2; }; link "$2" down ;;
    mend) [ $# = 2 ] || { say "usage: mend HOST"; exit 2; }; link "$2" up ;;
    *) echo "usage: slurm/multihost.sh up|down|status|run HOST CMD...|poweroff HOST|cut HOST|mend HOST" >&2; exit 2 ;;
esac
