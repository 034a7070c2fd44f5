#!/usr/bin/env bash
# Packages the published crates as crates.io would get them and builds each from its own
# tarball (`cargo package` verification; dependents of zk-proto/zk-client are built against
# the just-packaged tarballs through cargo's local registry overlay). Every feature is built.
# Tarballs land in target/package/. Needs a clean work tree (as in CI): cargo refuses
# uncommitted changes; pass --allow-dirty to try it on a work in progress.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo package --locked --all-features -p zk-proto -p zk-client -p zk-recipes -p zkrs "$@"
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
for crate in "$target_dir"/package/{zk-proto,zk-client,zk-recipes,zkrs}-*.crate; do
    printf '%-40s %s files\n' "$(basename "$crate")" "$(tar tzf "$crate" | wc -l)"
done
