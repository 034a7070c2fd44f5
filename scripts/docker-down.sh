#!/usr/bin/env bash
# Remove the test containers (label org.testcontainers.managed-by=testcontainers) and stop the
# daemon that docker-up.sh started, by its pid file only. Safe to run when nothing is running.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

d=$ZKRS_DOCKER_DIR
export DOCKER_HOST=$ZKRS_DOCKER_HOST

"$here/docker-clean.sh" || true

[ -f "$d/pid" ] || exit 0
pid=$(cat "$d/pid")
# Only a dockerd started with our directory, never some other daemon that reused the pid.
if [ -n "$pid" ] && grep -q "$d" "/proc/$pid/cmdline" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do # at most 15 s
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "dockerd $pid did not stop in 15 s, sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    log "docker daemon $pid stopped"
fi
rm -f "$d/pid" "$d/launcher.pid"
