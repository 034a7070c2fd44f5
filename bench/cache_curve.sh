#!/usr/bin/env bash
# The cache's cost curve: memory per cached node of zk_recipes::cache::Cache at 1k, 10k and
# 100k nodes beside Curator 5.4's CuratorCache, written to bench/cache-curve.md (table, fit of
# the linear model, the goal) and bench/cache-curve.svg (plot). See
# bench/examples/cache_memory.rs for what is measured.
#
#   bash bench/cache_curve.sh                    # memory; stable on a loaded machine
#   CACHE_SIZES=1000,10000,100000,1000000 bash bench/cache_curve.sh   # the 1M size too
#   bash bench/cache_curve.sh --timings          # also each first load and our resyncs after
#                                                #   a reconnect and a session expiry (release
#                                                #   build): on a quiet machine, or read ratios
#   bash bench/cache_curve.sh --connect host:2181   # an existing server instead of a local one
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../scripts/lib.sh
. "$here/../scripts/lib.sh"
cd "$here/.."

apt_install zookeeper openjdk-17-jdk-headless libcurator-recipes-java libslf4j-java
profile=()
for a in "$@"; do
    [[ "$a" == --timings ]] && profile=(--release)
done
log "building the example (${profile[*]:-debug})"
cargo build -q "${profile[@]}" -p bench --example cache_memory
dir=debug
[[ ${#profile[@]} -gt 0 ]] && dir=release
target=${CARGO_TARGET_DIR:-target}
# Run a copy: a rebuild of the shared target directory must not replace the binary while it
# re-runs itself for each load.
copy=$(mktemp /tmp/zk-cache-curve.XXXXXX)
trap 'rm -f "$copy"' EXIT
cp "$target/$dir/examples/cache_memory" "$copy"
chmod 700 "$copy"
log "measuring ${CACHE_SIZES:-1000,10000,100000} nodes"
ZK_HARNESS=${ZK_HARNESS:-process} "$copy" --sizes "${CACHE_SIZES:-1000,10000,100000}" \
    --curator --out bench/cache-curve "$@"
