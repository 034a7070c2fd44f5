#!/usr/bin/env bash
# The side-by-side benchmark (see bench/README.md).
#
#   bash bench/run.sh                        # throwaway local ZooKeeper (installs it if missing)
#   bash bench/run.sh --quick --rounds 1     # smoke run, ~20 s after the build
#   bash bench/run.sh --connect host:2181    # an existing server (it must allow `mntr`)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../scripts/lib.sh
. "$here/../scripts/lib.sh"
cd "$here/.."

if [[ " $* " != *" --connect "* ]]; then
    # The server runs as a plain local java process from Debian's package (ZK_HARNESS=process);
    # the tls workload also needs openssl (its keystores) and Netty (the secure port).
    apt_install zookeeper openjdk-17-jdk-headless openssl libnetty-java
fi
# The C client anchor (W1c-W3c): ZooKeeper's own C client, built here from bench/c.
apt_install libzookeeper-mt-dev gcc
mkdir -p target/release
cc -O2 -Wall -Wextra -o target/release/zk_c_bench bench/c/zk_c_bench.c -lzookeeper_mt
export ZK_C_BENCH=$PWD/target/release/zk_c_bench
command -v cargo >/dev/null || die "cargo is needed (https://rustup.rs)"
log "building the benchmark (release)"
cargo build -q --release -p bench
# Run a copy: a rebuild of the shared target directory must not replace the binary under a
# running benchmark (its memory measurement re-runs the binary).
copy=$(mktemp /tmp/zk-bench.XXXXXX)
trap 'rm -f "$copy"' EXIT
cp target/release/bench "$copy"
chmod 700 "$copy"
log "running it"
"$copy" "$@"
