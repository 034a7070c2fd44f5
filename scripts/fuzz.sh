#!/usr/bin/env bash
# Runs every fuzz target (zk-proto's codec, zk-client's session core) for a bounded time on
# the committed seed corpus.
#
#   FUZZ_SECONDS    seconds per target (default 60; CI's short run sets 10)
#   FUZZ_TARGETS    space-separated targets (default: all of fuzz/Cargo.toml)
#   FUZZ_SANITIZER  cargo-fuzz's sanitizer (default none: the fuzzed crates forbid unsafe
#                   code, and without AddressSanitizer the build and every execution are
#                   faster; `address` for a run that also checks the dependencies' unsafe code)
#
# cargo-fuzz needs nightly flags; the toolchain here is stable, so RUSTC_BOOTSTRAP=1 enables
# them. libFuzzer itself is built from source by libfuzzer-sys with the system C++ compiler.
# New inputs go to a scratch corpus, so the committed seeds under fuzz/corpus stay unchanged;
# a crash leaves its input under fuzz/artifacts/<target>/ and fails the script.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${FUZZ_SECONDS:-60}"
sanitizer="${FUZZ_SANITIZER:-none}"
targets="${FUZZ_TARGETS:-frame reply request roundtrip session}"
export RUSTC_BOOTSTRAP=1

if ! command -v c++ >/dev/null 2>&1; then
    echo "fuzz.sh: installing a C++ compiler for libFuzzer" >&2
    apt-get update -qq && apt-get install -y -qq g++ >/dev/null
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

cd "$root/fuzz"
cargo fuzz build --sanitizer "$sanitizer"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

failed=()
summary=()
for target in $targets; do
    mkdir -p "$scratch/$target"
    log="$scratch/$target.log"
    echo "== fuzz $target for ${seconds}s (sanitizer $sanitizer)"
    status=0
    cargo fuzz run --sanitizer "$sanitizer" "$target" "$scratch/$target" "corpus/$target" -- \
        -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 > "$log" 2>&1 || status=$?
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
    cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)"
    if [ "$status" -ne 0 ]; then
        tail -60 "$log"
        failed+=("$target")
        summary+=("$target: FAILED (exit $status) after ${execs:-?} executions")
    else
        summary+=("$target: ${execs:-?} executions in ${seconds}s (${rate:-?}/s, ${cov:-cov: ?})")
    fi
done

echo "== fuzz summary"
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -ne 0 ]; then
    echo "fuzz: crashes in: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
    exit 1
fi
