#!/usr/bin/env bash
# The minimum Rust version (rust-version = 1.88 in Cargo.toml), checked rather than only stated:
# - our code: clippy's `incompatible_msrv` reads rust-version and rejects standard-library
#   items stabilized later; the CI clippy stages run it with -D warnings (clippy::all), and
#   this stage runs it once more on the published crates so the check has a name;
# - our dependencies: no package in the published crates' trees (Cargo.lock, all features)
#   may declare a newer rust-version (scripts/msrv_deps.py), except under a feature documented
#   with a higher one (zk-client `sasl-gssapi`: 1.92), whose own tree is checked against that.
# Only one toolchain (the current stable) is on the machines, so nothing is built with 1.88
# itself: language features newer than 1.88 are not caught (edition 2021 keeps most away).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

published=(zk-proto zk-client zk-recipes zkrs)
pkgs=()
for p in "${published[@]}"; do pkgs+=(-p "$p"); done
cargo clippy "${pkgs[@]}" --all-features -- -D warnings -D clippy::incompatible_msrv
cargo metadata --locked --format-version 1 --all-features |
    python3 scripts/msrv_deps.py "${published[@]}"
