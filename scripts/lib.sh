# Shared helpers for the scripts in this directory. Source it, don't run it.
# shellcheck shell=bash

# Where the loopback-only docker daemon of this project lives (see docker-up.sh).
ZKRS_DOCKER_DIR=${ZKRS_DOCKER_DIR:-/tmp/zkrs-docker}
ZKRS_DOCKER_HOST="unix://$ZKRS_DOCKER_DIR/docker.sock"
# The image the harness runs by default (see build-zk-image.sh).
ZKRS_IMAGE=${ZKRS_IMAGE:-zk-local:3.8.0}

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# as_root CMD...: run CMD as root (directly when we are root, else through sudo).
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# apt_install PKG...: install the Debian packages that are not installed yet.
# Runs `apt-get update` at most once per shell.
apt_install() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    command -v apt-get >/dev/null || die "missing packages (${missing[*]}) and no apt-get to install them"
    if [ -z "${ZKRS_APT_UPDATED:-}" ]; then
        log "apt-get update"
        as_root apt-get update -qq >/dev/null
        ZKRS_APT_UPDATED=1
    fi
    log "apt-get install ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
}

# now_s: seconds since the epoch with a fraction, for stage timings.
now_s() { date +%s.%N; }
# elapsed START: seconds since START (from now_s), one decimal.
elapsed() { awk -v s="$1" -v e="$(now_s)" 'BEGIN { printf "%.1f", e - s }'; }

# docker_cli: the docker client to use; Debian's matches the daemon docker-up.sh starts.
docker_cli() {
    if [ -x /usr/bin/docker ]; then /usr/bin/docker "$@"; else docker "$@"; fi
}
