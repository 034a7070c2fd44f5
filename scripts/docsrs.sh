#!/usr/bin/env bash
# Builds the published library crates' docs the way docs.rs does (the crates'
# `[package.metadata.docs.rs]`: every feature, `--cfg docsrs`, which turns on rustdoc's
# `doc_cfg`), with warnings as errors, then checks that feature-gated items carry their
# "Available on crate feature X only" label: one item per feature (scripts/docsrs_labels.py).
#
# docs.rs builds with nightly; the machines have one stable toolchain, so RUSTC_BOOTSTRAP=1
# lets it accept `#![feature(doc_cfg)]` (as scripts/fuzz.sh does for cargo-fuzz).
# The docs replace the plain `cargo doc` stage's in target/doc (that stage has checked those).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

RUSTC_BOOTSTRAP=1 RUSTDOCFLAGS="--cfg docsrs -D warnings" \
    cargo doc --no-deps --all-features -p zk-proto -p zk-client -p zk-recipes
python3 scripts/docsrs_labels.py target/doc
