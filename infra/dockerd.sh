#!/usr/bin/env bash
# Start a Docker engine for the docker executor on a machine without systemd (a CI VM, a
# container host): no bridge and no iptables (sandboxes run with --network none, and
# the machine may have no netfilter), its state under /tmp/dockerd. Idempotent: an
# engine already answering on the socket is left alone. Needs root and dockerd
# (Debian package docker.io). Prints the DOCKER_HOST to export.
set -euo pipefail
root="${RATCHET_DOCKERD_ROOT:-/tmp/dockerd}"
sock="unix://$root/docker.sock"
if DOCKER_HOST="$sock" docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
    echo "export DOCKER_HOST=$sock"
    exit 0
fi
command -v dockerd >/dev/null 2>&1 || { echo "dockerd is not installed (apt-get install docker.io)" >&2; exit 1; }
mkdir -p "$root/data" "$root/exec"
nohup dockerd --bridge=none --iptables=false --ip-masq=false --data-root "$root/data" --exec-root "$root/exec" \
    --pidfile "$root/dockerd.pid" -H "$sock" >"$root/dockerd.log" 2>&1 &
for _ in $(seq 1 60); do
    if DOCKER_HOST="$sock" docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
        echo "export DOCKER_HOST=$sock"
        exit 0
    fi
    sleep 0.5
done
echo "dockerd did not answer on $sock within 30 s; see $root/dockerd.log:" >&2
tail -5 "$root/dockerd.log" >&2
exit 1
