#!/usr/bin/env bash
# Install Slurm (Debian packages slurm-wlm and munge, and iproute2 for slurm/multihost.sh) if
# missing. Idempotent: returns at once when slurmctld, slurmd, munged, sinfo, ip and ss are present.
# Quiet on success; prints apt's output on failure.
set -euo pipefail

need=(slurmctld slurmd sinfo munged ip ss)   # ip, ss (iproute2): slurm/multihost.sh and its tests
missing=0
for b in "${need[@]}"; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || missing=1
done
[ "$missing" = 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "slurm/install.sh: installing packages needs root (or install slurm-wlm and munge yourself)" >&2
    exit 1
fi

log=$(mktemp -t slurm-install.XXXXXX.log)
# Another process may hold the dpkg lock (parallel CI steps): wait for it, do not fail.
apt_opts=(-o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 -y -q)
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get "${apt_opts[@]}" update && \
       apt-get "${apt_opts[@]}" install --no-install-recommends slurm-wlm munge iproute2; } >"$log" 2>&1; then
    echo "slurm/install.sh: apt-get failed; its output:" >&2
    cat "$log" >&2
    exit 1
fi
rm -f "$log"
