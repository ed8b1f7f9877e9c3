#!/usr/bin/env bash
# Is a Slurm reachable, with a node that accepts jobs? Exit 0 and print one line
# (controller, node state) if so; exit 1 with the reason otherwise.
# Works for the test Slurm of slurm/start.sh and for any other configured Slurm.
#   --job   also run a one-second job through srun and check its output
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/_common.sh"
export PATH=$PATH:/usr/sbin

if [ -z "${SLURM_CONF:-}" ] && [ ! -e "$SLURM_SYS_CONF" ] && [ -f "$SLURM_OUR_CONF" ]; then
    export SLURM_CONF=$SLURM_OUR_CONF
fi
command -v sinfo >/dev/null || { echo "slurm/check.sh: sinfo not found (run slurm/install.sh)" >&2; exit 1; }
conf=${SLURM_CONF:-$SLURM_SYS_CONF}
# No config file: only a configless site (DNS SRV record) answers; Slurm would retry 60 s.
if [ ! -e "$conf" ] && ! timeout 5 scontrol show config >/dev/null 2>&1 </dev/null; then
    echo "slurm/check.sh: no Slurm configuration ($conf missing; start one with slurm/start.sh)" >&2
    exit 1
fi
ping=$(timeout 20 scontrol ping 2>&1) || { echo "slurm/check.sh: controller not reachable: $ping" >&2; exit 1; }
state=$(node_state)
case "$state" in
    idle|mix|mixed|alloc|allocated|completing) ;;   # completing: a job's end is being cleaned up; the node takes the next
    *) echo "slurm/check.sh: no usable node (state: '${state:-none}')" >&2; sinfo -N -l >&2; exit 1 ;;
esac
if [ "${1:-}" = "--job" ]; then
    out=$(timeout 60 srun -n1 -t 1 echo schedsweep-ok 2>&1)
    [ "$out" = schedsweep-ok ] || { echo "slurm/check.sh: test job failed: $out" >&2; exit 1; }
fi
echo "slurm: $(echo "$ping" | head -n1 | sed 's/^ *//'); node $state"
