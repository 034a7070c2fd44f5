#!/usr/bin/env python3
"""Checks the public API against the conventions table of zk-recipes' crate docs.

Reads the committed snapshots public-api/zk-recipes.txt and public-api/zk-client.txt (one
line per item, made by scripts/public-api.sh; the `api` stage keeps them current) and fails
on an outlier:

- following a value: every public method returning `Transitions<T>` (or its aliases
  `StateWatcher`, `Generations`) is `watch(&self)`; the producer side
  (`Publisher::subscribe`) is the one exception;
- waiting until ready: `ready(&self)` and `ready_timeout(&self, timeout: Duration)` come in
  pairs, and every `x_timeout(.., timeout: Duration)` has its `x`;
- stopping: in zk-recipes every `close` is `async fn close(&self) -> Result<()>`; in
  zk-client it takes `&self` and ends in `Result<()>`;
- constructing: a zk-recipes function taking a `&SessionManager` is `new_managed` or
  `build_managed..` (or `builder` of a type whose builder does); one taking a `Client` by
  value is `new` or `build..`; no `start..` constructors;
- every family in a module: the crate root holds only Error, LossReason, Result and
  Participant;
- no old verb remains (state_watcher, states, changes, watch_members, initialized,
  initial_create, joined, wait_loaded, await_leadership, start_managed).

Prints what it checked: the methods returning Transitions and the close signatures.
Usage: python3 scripts/api_conventions.py [PUBLIC_API_DIR]   (default public-api)
"""

import os
import re
import sys

DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "public-api")

OLD_VERBS = {"state_watcher", "states", "changes", "watch_members", "initialized",
             "initial_create", "joined", "wait_loaded", "await_leadership", "start_managed",
             "initial_create_timeout", "joined_timeout", "wait_loaded_timeout",
             "await_leadership_timeout"}
FOLLOW_TYPES = re.compile(r"\b(Transitions<|zk_client::Transitions<|zk_client::StateWatcher\b"
                          r"|zk_client::Generations\b|StateWatcher\b|Generations\b)")
PRODUCERS = {"zk_client::Publisher::subscribe"}
# What zk-recipes' root may hold: what every family shares.
ROOT_ITEMS = {"Error", "LossReason", "Result", "Participant"}

FN = re.compile(r"^pub (?P<async>async )?fn (?P<path>[\w:]+?)::(?P<name>\w+)"
                r"(?:<[^(]*>)?\((?P<args>.*?)\)(?: -> (?P<ret>.*?))?(?: where .*)?$")


def methods(crate):
    path = os.path.join(DIR, crate + ".txt")
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = FN.match(line.strip())
            if m:
                yield m.groupdict() | {"line": line.strip(), "crate": crate}


def main():
    problems = []
    followers, closes = [], []
    by_type = {}
    waits = {}
    for crate in ("zk-client", "zk-recipes"):
        for m in methods(crate):
            full = f"{m['path']}::{m['name']}"
            by_type.setdefault(m["path"], set()).add(m["name"])
            if m["async"] and m["name"].endswith("_timeout") and "timeout: Duration" in m["args"]:
                waits.setdefault(m["path"], set()).add(m["name"])
            ret = m["ret"] or ""
            if m["name"] in OLD_VERBS:
                problems.append(f"old verb {m['name']!r}: {m['line']}")
            # Trait plumbing (Stream::poll_next, From, ...) is not ours to name.
            if FOLLOW_TYPES.search(ret) and full not in PRODUCERS:
                followers.append(m["line"])
                if m["name"] != "watch" or m["args"] != "&self":
                    problems.append(f"follow a value with watch(&self): {m['line']}")
            if m["name"] == "close":
                closes.append(m["line"])
                if crate == "zk-recipes":
                    if not (m["async"] and m["args"] == "&self"
                            and ret == "zk_recipes::Result<()>"):
                        problems.append(f"close must be async fn close(&self) -> Result<()>: "
                                        f"{m['line']}")
                elif m["args"] != "&self" or "Result<()>" not in ret:
                    problems.append(f"close must take &self and end in Result<()>: {m['line']}")
            if crate == "zk-recipes":
                args = m["args"]
                if m["name"].startswith("start"):
                    problems.append(f"construct with new/new_managed/build: {m['line']}")
                if "&SessionManager" in args and not (
                        m["name"] in ("new_managed",) or m["name"].startswith("build_managed")):
                    problems.append(f"a SessionManager constructor is new_managed or "
                                    f"build_managed: {m['line']}")
                if re.search(r"\bclient: Client\b", args) and m["path"].split("::")[-1][0].isupper() \
                        and ret.endswith(m["path"].split("::")[-1] + ">") \
                        and not (m["name"] == "new" or m["name"].startswith("build")):
                    problems.append(f"a Client constructor is new or build: {m['line']}")
    for path, timed in sorted(waits.items()):
        for name in sorted(timed):
            if name[:-len("_timeout")] not in by_type[path]:
                problems.append(f"{path}::{name} has no {name[:-len('_timeout')]}()")
    for path, names in sorted(by_type.items()):
        if "ready" in names and "ready_timeout" not in names:
            problems.append(f"{path}::ready has no ready_timeout")
    # Every family in a module: the root holds only what all of them share.
    root = re.compile(r"^pub (?:struct|enum|trait|type|fn|async fn|const|static|mod) "
                      r"zk_recipes::(\w+)\b(?!::)")
    with open(os.path.join(DIR, "zk-recipes.txt"), encoding="utf-8") as f:
        for line in f:
            m = root.match(line.strip())
            if m and m.group(1) not in ROOT_ITEMS and not line.startswith("pub mod"):
                problems.append(f"a family's item at the crate root: {line.strip()}")
    print(f"{len(followers)} methods return Transitions:")
    for line in followers:
        print("  " + line)
    print(f"{len(closes)} close methods:")
    for line in closes:
        print("  " + line)
    if problems:
        for p in problems:
            print("outlier: " + p, file=sys.stderr)
        sys.exit(1)
    print("conventions: ok")


if __name__ == "__main__":
    main()
