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

# Features documented with a higher minimum Rust version than the crate's: (crate, feature)
# -> that version. Their optional dependencies are checked against it instead.
FEATURE_MSRV = {("zk-client", "sasl-gssapi"): "1.92"}


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
    # The optional dependencies that only a higher-MSRV feature turns on.
    gated = {}
    for (crate, feature), version in FEATURE_MSRV.items():
        for item in packages[members[crate]]["features"].get(feature, []):
            if item.startswith("dep:"):
                gated[(members[crate], item[4:])] = (f"{crate}/{feature}", version)

    def walk(start, skip):
        todo, seen = list(start), set(start)
        while todo:
            pkg_id = todo.pop()
            for dep in nodes[pkg_id]["deps"]:
                kinds = {k["kind"] for k in dep["dep_kinds"]}
                name = packages[dep["pkg"]]["name"]
                if kinds <= {"dev"} or dep["pkg"] in seen or (pkg_id, name) in skip:
                    continue
                seen.add(dep["pkg"])
                todo.append(dep["pkg"])
        return seen

    def too_new(ids, limit):
        found = []
        for pkg_id in sorted(ids, key=lambda i: packages[i]["name"]):
            p = packages[pkg_id]
            rv = p.get("rust_version")
            if rv and version_tuple(rv) > version_tuple(limit):
                found.append(f"{p['name']} {p['version']} needs Rust {rv}")
        return found

    base = walk([members[r] for r in roots], set(gated))
    failed = too_new(base, msrv)
    print(f"{len(base)} packages in the published crates' trees, rust-version {msrv}")
    if failed:
        print("dependencies newer than our rust-version:\n  " + "\n  ".join(failed))
    for (owner, dep_name), (feature, version) in sorted(gated.items()):
        dep_ids = [d["pkg"] for d in nodes[owner]["deps"]
                   if packages[d["pkg"]]["name"] == dep_name]
        extra = walk(dep_ids, set()) - base
        over = too_new(extra, version)
        print(f"feature {feature}: {len(extra)} more packages, documented rust-version {version}")
        if over:
            print("  newer than that:\n    " + "\n    ".join(over))
        failed += over
    if failed:
        sys.exit(1)
    print("no dependency declares a newer rust-version than documented")


if __name__ == "__main__":
    main()
