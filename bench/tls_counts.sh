#!/usr/bin/env bash
# Counts (not times) of what TLS costs zk-client per getData: user-space instructions from
# callgrind and syscalls from strace, over TCP and TLS, sequential and pipelined, each as the
# difference of a large and a small run (cancels connection set-up). Load-independent.
#
#   bash bench/tls_counts.sh BIN PLAIN TLS PKI_DIR
#
# BIN: a built `tls_profile` example (cargo build --release -p bench --example tls_profile);
# PLAIN TLS PKI_DIR: what `tls_profile serve SECS` printed (keep it running meanwhile).
# Needs valgrind and strace.
set -euo pipefail
bin=$1 plain=$2 tls=$3 pki=$4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

instr() { # side addr mode n -> instructions of the whole run
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$bin" run "$1" "$2" "$pki" "$3" "$4" \
        >/dev/null 2>&1
    awk '/^(summary|totals):/ {print $2; exit}' "$out/cg"
}
calls() { # side addr mode n -> syscalls of the whole run
    strace -f -c -o "$out/st" "$bin" run "$1" "$2" "$pki" "$3" "$4" >/dev/null 2>&1
    awk '$NF == "total" {print $4; exit}' "$out/st"
}

printf '%-5s %-4s %14s %12s\n' side mode instr/getData syscalls/getData
for mode in seq pipe; do
    if [ "$mode" = seq ]; then small=1000 large=5000; else small=10000 large=50000; fi
    for side in tcp tls; do
        addr=$plain
        [ "$side" = tls ] && addr=$tls
        i0=$(instr "$side" "$addr" "$mode" "$small")
        i1=$(instr "$side" "$addr" "$mode" "$large")
        s0=$(calls "$side" "$addr" "$mode" "$small")
        s1=$(calls "$side" "$addr" "$mode" "$large")
        awk -v side="$side" -v mode="$mode" -v i0="$i0" -v i1="$i1" -v s0="$s0" -v s1="$s1" \
            -v n=$((large - small)) \
            'BEGIN { printf "%-5s %-4s %14.0f %12.2f\n", side, mode, (i1 - i0) / n, (s1 - s0) / n }'
    done
done
