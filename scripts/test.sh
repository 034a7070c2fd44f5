#!/usr/bin/env bash
# Runs every test of the workspace, on a fresh Debian machine too:
#   bash scripts/test.sh [extra cargo test args...]   (e.g. `-p integration-tests`)
# Installs what is missing (Debian packages), starts a loopback-only docker daemon (unless
# ZK_HARNESS=process), builds the local ZooKeeper image, runs
# `cargo test --workspace --all-features "$@"` (TLS and SASL included), and
# always cleans up: the containers of this run, and the daemon if this script started it.
# Exits with the status of `cargo test`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"
cd "$here/.."

mode=${ZK_HARNESS:-docker}
case "$mode" in docker | process) ;; *) die "ZK_HARNESS=$mode: expected docker or process" ;; esac
export ZKRS_RUN_ID=${ZKRS_RUN_ID:-$$-$(date +%s)}
total=$(now_s)
started_docker=

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [ "$mode" = docker ]; then
        if [ -n "$started_docker" ] && [ -z "${ZKRS_KEEP_DOCKER:-}" ]; then
            "$here/docker-down.sh" || true
        elif docker_cli version >/dev/null 2>&1; then
            # A daemon someone else started: remove only this run's containers.
            ids=$(docker_cli ps -aq --filter "label=zkrs.run=$ZKRS_RUN_ID" 2>/dev/null || true)
            # shellcheck disable=SC2086
            [ -z "$ids" ] || docker_cli rm -f -v $ids >/dev/null 2>&1 || true
        fi
    fi
    log "scripts/test.sh: exit $status after $(elapsed "$total") s"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stage=$(now_s)
# openssl: test certificates (integration_tests::pki); libnetty-java: ZooKeeper's TLS port.
# krb5-*: the loopback KDC of security::kerberos (integration_tests::kdc).
# libservlet-api-java: the AdminServer (Jetty) of ensemble::admin_http.
packages=(zookeeper openjdk-17-jdk-headless libcurator-client-java libcurator-framework-java
    libcurator-recipes-java libcurator-discovery-java python3-kazoo binutils unzip openssl libnetty-java
    krb5-kdc krb5-admin-server krb5-user libservlet-api-java)
[ "$mode" = docker ] && packages+=(docker.io)
apt_install "${packages[@]}"
log "packages ready ($(elapsed "$stage") s)"

if [ "$mode" = docker ]; then
    stage=$(now_s)
    export DOCKER_HOST=$ZKRS_DOCKER_HOST
    if ! { [ -S "$ZKRS_DOCKER_DIR/docker.sock" ] && docker_cli version >/dev/null 2>&1; }; then
        started_docker=1
    fi
    "$here/docker-up.sh" >/dev/null
    "$here/build-zk-image.sh"
    # Leftovers of an earlier, killed run (only on a daemon of our own: others may be in use).
    [ -z "$started_docker" ] || "$here/docker-clean.sh"
    log "docker ready ($(elapsed "$stage") s)"
else
    log "ZK_HARNESS=process: servers run as local java processes"
fi

stage=$(now_s)
scope=(--workspace)
for arg in "$@"; do
    case "$arg" in -p | --package | --package=* | -p?*) scope=() ;; --) break ;; esac
done
# Four tests at a time per binary on the 2-core machines: the integration tests spend most
# of their time waiting on servers, sessions and timers (the client binary: 44 s of CPU in
# 159 s at 2 threads), so twice the threads nearly halve the stage (members: 194 s -> 111 s).
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-4}
log "cargo test ${scope[*]} --all-features $* (RUST_TEST_THREADS=$RUST_TEST_THREADS)"
output=$(mktemp)
set +e
cargo test "${scope[@]}" --all-features "$@" 2>&1 | tee "$output"
status=${PIPESTATUS[0]}
set -e
log "cargo test: exit $status ($(elapsed "$stage") s)"
# One closing line with the totals of every test binary and doc-test run.
totals=$(awk '/^test result:/ { p += $4; f += $6; i += $8 }
    END { printf "tests: %d passed, %d failed, %d skipped", p, f, i }' "$output")
rm -f "$output"
echo "$totals"
[ -z "${ZKRS_TEST_SUMMARY:-}" ] || echo "$totals" >"$ZKRS_TEST_SUMMARY"
exit "$status"
