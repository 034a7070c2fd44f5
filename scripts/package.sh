#!/usr/bin/env bash
# Packages the published crates as crates.io would get them and builds each from its own
# tarball (`cargo package` verification; dependents of zk-proto/zk-client are built against
# the just-packaged tarballs through cargo's local registry overlay). Every feature is built.
# Tarballs land in target/package/. Needs a clean work tree (as in CI): cargo refuses
# uncommitted changes; pass --allow-dirty to try it on a work in progress.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Cargo unpacks the just-packaged tarballs of its local registry overlay into
# $CARGO_HOME/registry/src/-<hash of the overlay's path>/ and reuses an unpacked copy of the
# same name and version without comparing it with the new tarball. A cargo home kept from an
# earlier run at the same path would then verify today's dependents against yesterday's
# zk-client (CI failed so at 3b99586). Remove our crates' unpacked copies from file:// (local)
# registries first; crates.io's cache is left alone.
cargo_home=${CARGO_HOME:-$HOME/.cargo}
for stale in "$cargo_home"/registry/src/-*/{zk-proto,zk-client,zk-recipes,zkrs}-[0-9]*; do
    [ -d "$stale" ] && rm -rf -- "$stale"
done

cargo package --locked --all-features -p zk-proto -p zk-client -p zk-recipes -p zkrs "$@"
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
for crate in "$target_dir"/package/{zk-proto,zk-client,zk-recipes,zkrs}-*.crate; do
    printf '%-40s %s files\n' "$(basename "$crate")" "$(tar tzf "$crate" | wc -l)"
done
