#!/usr/bin/env bash
# The sessions-per-process cost curve (issue 34 part 3): runs integration-tests'
# `client::sessions_curve` test at 1, 10, 100 and 1,000 idle sessions (ZK_SESSIONS_MAX) on a
# local ZooKeeper (ZK_HARNESS=process unless set), with sessions older than their read
# timeout when the server restarts (ZK_SESSIONS_AGED=1: the case of long-lived sessions,
# about 10 s more per size), the server restarted at every size (ZK_SESSIONS_STORMS=all), and
# writes, from its rows,
#   bench/sessions-curve.md   the table (memory, connect time, the reconnect storm)
#   bench/sessions-curve.svg  the plot
#   bench/sessions-curve.csv  the test's rows (python3 bench/sessions_curve.py re-plots them)
# The test itself asserts the models (memory per session constant and bounded; every session
# back after the restart; connection attempts within the backoff's bounds).
set -euo pipefail
cd "$(dirname "$0")/.."
csv="$PWD/bench/sessions-curve.csv"
: > "$csv"
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
# A socket per session: make sure the soft limit allows 1,000 of them.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
ZK_HARNESS=${ZK_HARNESS:-process} \
ZK_SESSIONS_MAX=${ZK_SESSIONS_MAX:-1000} \
ZK_SESSIONS_AGED=${ZK_SESSIONS_AGED:-1} \
ZK_SESSIONS_STORMS=all \
ZK_SESSIONS_OUT="$csv" \
    cargo test -p integration-tests --all-features --test client -- sessions_curve:: --nocapture
python3 bench/sessions_curve.py "$csv" bench/sessions-curve.md bench/sessions-curve.svg \
    "$(git rev-parse --short HEAD)" "$(nproc) vCPU, load average $(cut -d' ' -f1-3 /proc/loadavg)"
