#!/usr/bin/env bash
# Start a loopback-only docker daemon for the integration tests (see shared HARNESS.md):
# no bridge, no iptables, its own data root under $ZKRS_DOCKER_DIR (default /tmp/zkrs-docker);
# containers run on the host network only. Installs docker.io if missing. Idempotent: a daemon
# already answering on the socket is reused. Prints the DOCKER_HOST to use:
#   eval "$(scripts/docker-up.sh)"     # exports DOCKER_HOST
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

d=$ZKRS_DOCKER_DIR
export DOCKER_HOST=$ZKRS_DOCKER_HOST

if [ -S "$d/docker.sock" ] && docker_cli version >/dev/null 2>&1; then
    log "docker daemon already running ($DOCKER_HOST)"
    echo "export DOCKER_HOST=$DOCKER_HOST"
    exit 0
fi

apt_install docker.io
command -v dockerd >/dev/null || die "dockerd not found after installing docker.io"

# A stale pid file from a daemon that died: stop it only if that pid is really our dockerd.
if [ -f "$d/pid" ]; then
    old=$(cat "$d/pid")
    if [ -n "$old" ] && grep -q "$d" "/proc/$old/cmdline" 2>/dev/null; then
        kill "$old" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$d/pid"
fi
mkdir -p "$d"
start=$(now_s)
# setsid: the daemon must outlive this script's process group (CI steps, Ctrl-C in a pipeline).
setsid dockerd \
    --host "unix://$d/docker.sock" \
    --data-root "$d/root" --exec-root "$d/exec" --pidfile "$d/pid" \
    --bridge none --iptables=false --ip6tables=false --ip-masq=false --ip-forward=false \
    --userland-proxy=false \
    >"$d/dockerd.log" 2>&1 </dev/null &
echo $! >"$d/launcher.pid"

ok=
for _ in $(seq 1 300); do # at most 30 s
    if [ -S "$d/docker.sock" ] && docker_cli version >/dev/null 2>&1; then ok=1; break; fi
    kill -0 "$(cat "$d/launcher.pid")" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$ok" ]; then
    tail -n 30 "$d/dockerd.log" >&2 || true
    die "docker daemon did not come up (log: $d/dockerd.log)"
fi
log "docker daemon ready in $(elapsed "$start") s (pid $(cat "$d/pid"), $DOCKER_HOST)"
echo "export DOCKER_HOST=$DOCKER_HOST"
