#!/usr/bin/env bash
# The watches-per-session cost curve (issue 34 part 3): runs integration-tests' `client`
# binary's `watches_curve` test at 1, 100, 1,000, 10,000 and 100,000 watches on one session
# (ZK_WATCHES_MAX) on a local ZooKeeper (ZK_HARNESS=process unless set) and writes, from the
# rows it measured,
#   bench/watches-curve.md   the table (SetWatches packets, bytes, times) and the models
#   bench/watches-curve.svg  the plot
# The test itself asserts the models (bytes linear and exact, packets of at most 128 KiB of
# paths) and that no watch is lost at the re-arm.
set -euo pipefail
cd "$(dirname "$0")/.."
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
ZK_HARNESS=${ZK_HARNESS:-process} \
ZK_WATCHES_MAX=${ZK_WATCHES_MAX:-100000} \
ZK_WATCHES_OUT="$csv" \
    cargo test -p integration-tests --all-features --test client -- watches_curve:: --nocapture
machine="$(nproc) vCPU $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
python3 bench/watches_curve.py "$csv" bench/watches-curve.md bench/watches-curve.svg \
    "$(git rev-parse --short HEAD)" "$machine"
