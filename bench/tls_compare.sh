#!/usr/bin/env bash
# The `tls` workload of two builds on one machine in one sitting, alternated round by round:
# "before" (a commit, built in a temporary worktree) and "after" (this checkout). Each round
# of each build starts its own TLS-enabled server and prints its table.
#
#   bash bench/tls_compare.sh [BEFORE_COMMIT (default 9dad95b)] [ROUNDS (default 3)]
#
# Timed: run it on a quiet machine. The counts behind it (instructions, syscalls per call)
# come from bench/tls_counts.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
before=${1:-9dad95b}
rounds=${2:-3}
export ZK_HARNESS=${ZK_HARNESS:-process}

wt=$(mktemp -d /tmp/zk-bench-before.XXXXXX)
bin=$(mktemp -d /tmp/zk-bench-bins.XXXXXX)
cleanup() {
    git -C "$root" worktree remove --force "$wt" >/dev/null 2>&1 || true
    rm -rf "$bin"
}
trap cleanup EXIT
git -C "$root" worktree add --detach "$wt" "$before" >/dev/null

echo "building before ($before) and after ($(git -C "$root" rev-parse --short HEAD)) ..." >&2
# Its own target directory, so the two builds do not replace each other's binary.
(cd "$wt" && CARGO_TARGET_DIR="$root/target/tls-before" cargo build -q --release -p bench)
cp "$root/target/tls-before/release/bench" "$bin/before"
(cd "$root" && cargo build -q --release -p bench)
cp "$root/target/release/bench" "$bin/after"

for round in $(seq 1 "$rounds"); do
    for side in before after; do
        echo
        echo "## round $round: $side"
        "$bin/$side" --workloads tls --rounds 1 | sed -n '/^| tls/,/^$/p'
    done
done
