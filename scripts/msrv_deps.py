#!/usr/bin/env python3
"""Fails when a dependency of a published crate needs a newer Rust than our `rust-version`.

Usage: cargo metadata --format-version 1 --all-features | msrv_deps.py CRATE...

Clippy's `incompatible_msrv` (run by the clippy stages, reading `rust-version` from
Cargo.toml) checks our own code against the standard library; it cannot see a dependency
whose `rust-version` is newer. This walks the normal and build dependencies of the given
workspace crates in the resolved graph (Cargo.lock, all features) and compares each
package's declared `rust-version` with ours.
"""

import json
import sys


def version_tuple(v):
    parts = [int(p) for p in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    meta = json.load(sys.stdin)
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    members = {packages[i]["name"]: i for i in meta["workspace_members"]}
    roots = sys.argv[1:]
    msrvs = {packages[members[r]]["rust_version"] for r in roots}
    if len(msrvs) != 1 or None in msrvs:
        sys.exit(f"the published crates must share one rust-version, found {msrvs}")
    msrv = msrvs.pop()
    todo = [members[r] for r in roots]
    seen = set(todo)
    while todo:
        node = nodes[todo.pop()]
        for dep in node["deps"]:
            kinds = {k["kind"] for k in dep["dep_kinds"]}
            if kinds <= {"dev"} or dep["pkg"] in seen:
                continue
            seen.add(dep["pkg"])
            todo.append(dep["pkg"])
    too_new = []
    for pkg_id in sorted(seen, key=lambda i: packages[i]["name"]):
        p = packages[pkg_id]
        rv = p.get("rust_version")
        if rv and version_tuple(rv) > version_tuple(msrv):
            too_new.append(f"{p['name']} {p['version']} needs Rust {rv}")
    print(f"{len(seen)} packages in the published crates' trees, rust-version {msrv}")
    if too_new:
        print("dependencies newer than our rust-version:\n  " + "\n  ".join(too_new))
        sys.exit(1)
    print("no dependency declares a newer rust-version")


if __name__ == "__main__":
    main()
