#!/usr/bin/env bash
# Install headless Chromium (Debian package `chromium`) for the tests marked `chromium`.
# Idempotent and quiet when it is already installed; called by .ci/run.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo -n)
else
    echo "install_chromium.sh: chromium is missing and this user cannot install packages (no root, no sudo)" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_chromium.sh: chromium is missing and apt-get is not available; install Chromium by hand" >&2
    exit 1
fi
echo "install_chromium.sh: installing chromium (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq -o DPkg::Lock::Timeout=300 chromium >/dev/null
command -v chromium >/dev/null 2>&1
