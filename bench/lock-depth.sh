#!/usr/bin/env bash
# The lock queue depth cost curve (issue 34 part 3), as counts: runs integration-tests'
# `locks::depth` test at queue depths 1, 10, 100 and 1,000 (ZK_LOCK_DEPTH_MAX) on a local
# ZooKeeper (ZK_HARNESS=process unless set) and writes, from its counts,
#   bench/lock-depth.md   the table (per release: notifications, listings, requests)
#   bench/lock-depth.svg  the plot
# The test itself asserts the model (constant from depth 10 on, within the hand-off's bound).
set -euo pipefail
cd "$(dirname "$0")/.."
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
ZK_HARNESS=${ZK_HARNESS:-process} \
ZK_LOCK_DEPTH_MAX=${ZK_LOCK_DEPTH_MAX:-1000} \
ZK_LOCK_DEPTH_OUT="$csv" \
    cargo test -p integration-tests --all-features --test locks -- depth:: --nocapture
python3 bench/lock_depth.py "$csv" bench/lock-depth.md bench/lock-depth.svg "$(git rev-parse --short HEAD)"
