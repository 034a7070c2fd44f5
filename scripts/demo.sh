#!/usr/bin/env bash
# The demo: fair, read/write and protected locks and loss signalling on a real ZooKeeper.
#
#   bash scripts/demo.sh                          # throwaway local ZooKeeper (installs it if missing)
#   bash scripts/demo.sh --connect host:2181      # your own server or ensemble (or ZK_CONNECT=...)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
cd "$here/.."

if [ -z "${ZK_CONNECT:-}" ] && [[ " $* " != *" --connect "* ]]; then
    # A throwaway server runs as a plain local java process from Debian's package.
    apt_install zookeeper openjdk-17-jdk-headless
fi
command -v cargo >/dev/null || die "cargo is needed (https://rustup.rs)"
log "building the demo"
cargo build -q -p demo
log "running it"
exec cargo run -q -p demo -- "$@"
