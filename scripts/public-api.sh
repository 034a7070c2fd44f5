#!/usr/bin/env bash
# Public-API snapshots of the library crates, committed in public-api/<crate>.txt so that a
# change of the public surface shows in review.
#
#   bash scripts/public-api.sh           regenerate the snapshots (commit the result)
#   bash scripts/public-api.sh --check   fail if a snapshot differs (CI stage `api`)
#
# rustdoc's JSON output (unstable, enabled on the stable toolchain with RUSTC_BOOTSTRAP=1)
# rendered by scripts/public_api.py as one sorted line per item, all features on.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

check=false
[ "${1:-}" = --check ] && check=true
crates=(zk-proto zk-client zk-recipes)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The main target dir: the dependencies' check builds are shared with `cargo doc` (RUSTC_BOOTSTRAP
# does not change their fingerprints); only the three crates' own rustdoc runs again.
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
for crate in "${crates[@]}"; do
    RUSTC_BOOTSTRAP=1 cargo rustdoc --locked --quiet -p "$crate" --all-features --lib -- \
        -Z unstable-options --output-format json
    python3 scripts/public_api.py "$target_dir/doc/${crate//-/_}.json" >"$out/$crate.txt"
done

status=0
mkdir -p public-api
for crate in "${crates[@]}"; do
    if $check; then
        if ! diff -u "public-api/$crate.txt" "$out/$crate.txt"; then
            status=1
        fi
    else
        cp "$out/$crate.txt" "public-api/$crate.txt"
        echo "public-api/$crate.txt: $(wc -l <"public-api/$crate.txt") lines"
    fi
done
if [ "$status" -ne 0 ]; then
    echo "The public API differs from public-api/ (above: - committed, + now). If the change is" >&2
    echo "meant, regenerate and commit: bash scripts/public-api.sh" >&2
fi
exit "$status"
