#!/usr/bin/env python3
"""Fails on an import loop in zk-recipes/src, between folders or files, at any depth.

Every `use crate::..` / `use super::..` (braces expanded) and every inline `crate::..` /
`super::..` path in code (comments and `#[cfg(test)] mod tests` blocks left out) is an edge
from the module of its file to the deepest module it names. For each folder, the edges
between its direct children (a child counts with everything under it; the folder's own
`mod.rs` counts as one more child, `(mod)`) must form no cycle. A folder's `mod.rs`
re-exporting its own children (`pub use child::X`) is its face, not an edge; a re-export of
another folder is.

Usage: python3 scripts/import_graph.py [SRC_DIR]   (default zk-recipes/src)
Prints the folders checked and exits 1 with each cycle found.
"""

import os
import re
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "zk-recipes", "src")
SRC = os.path.normpath(SRC)


def module_of(path):
    """Module path (tuple) of a source file: src/a/b.rs -> (a, b); src/a/mod.rs -> (a,)."""
    rel = os.path.relpath(path, SRC)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib"):
        rel = rel[:-1]
    return tuple(rel)


def files():
    for root, _, names in os.walk(SRC):
        for name in sorted(names):
            if name.endswith(".rs"):
                yield os.path.join(root, name)


def code_of(text):
    """The text without comments and without the `#[cfg(test)] mod x { .. }` blocks."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines) and re.match(
                r"\s*(pub(\(crate\))? )?mod \w+ \{", lines[i + 1]):
            depth = 0
            i += 1
            while i < len(lines):
                depth += lines[i].count("{") - lines[i].count("}")
                i += 1
                if depth <= 0:
                    break
            continue
        stripped = line.split("//", 1)[0] if "//" in line and '"' not in line else line
        if not stripped.lstrip().startswith("//"):
            out.append(stripped)
        i += 1
    return "\n".join(out)


def expand(tree):
    """`a::{b, c::{d, self}}` -> [a::b, a::c::d, a::c]."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [re.sub(r"as\w+$", "", tree).removesuffix("::self")]
    prefix, body = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    out = []
    for part in parts:
        if part == "self":
            out.append(prefix.rstrip(":"))
        else:
            out.extend(expand(prefix + part))
    return out


def main():
    modules = {module_of(f): f for f in files()}
    edges = set()  # (from module, to module)
    for mod, path in modules.items():
        text = code_of(open(path, encoding="utf-8").read())
        is_mod_rs = os.path.basename(path) in ("mod.rs", "lib.rs")
        refs = []
        for m in re.finditer(r"\b(pub(?:\([a-z]+\))?\s+)?use\s+([^;]+);", text):
            reexport = bool(m.group(1))
            for p in expand(m.group(2)):
                refs.append((p, reexport))
        for m in re.finditer(r"(?<![:\w])((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+)",
                             re.sub(r"\b(pub(\([a-z]+\))?\s+)?use\s+[^;]+;", "", text)):
            refs.append((m.group(1), False))
        # A folder's mod.rs naming its own children inline (`task::run(..)`).
        children = {m[-1] for m in modules if len(m) == len(mod) + 1 and m[:len(mod)] == mod}
        inline = re.sub(r"\buse\s+[^;]+;", "", text)
        for name in sorted(children):
            if re.search(r"(?<![:\w])" + name + r"::[A-Za-z_]", inline):
                refs.append(("self::" + name, False))
        for ref, reexport in refs:
            segs = ref.split("::")
            if segs[0] == "crate":
                base, rest = (), segs[1:]
            elif segs[0] == "super":
                # The module of a file is `mod`; `super` is its parent (mod.rs: the folder's).
                base = mod[:-1]
                rest = segs[1:]
                while rest and rest[0] == "super":
                    base, rest = base[:-1], rest[1:]
            elif segs[0] == "self" or (is_mod_rs and len(segs) > 1):
                base, rest = mod, segs[1:] if segs[0] == "self" else segs
            else:
                continue
            target = base
            for seg in rest:
                if target + (seg,) in modules:
                    target = target + (seg,)
                else:
                    break
            if target == mod or target == ():
                continue
            # A folder re-exporting its own children is its face, not a dependency.
            if is_mod_rs and reexport and target[:len(mod)] == mod:
                continue
            edges.add((mod, target))

    folders = sorted({m[:i] for m in modules for i in range(len(m))})
    cycles = []
    for folder in folders:
        def child(m):
            if m[:len(folder)] != folder:
                return None
            return m[len(folder)] if len(m) > len(folder) else "(mod)"
        graph = {}
        for a, b in edges:
            ca, cb = child(a), child(b)
            if ca is None or cb is None or ca == cb:
                continue
            graph.setdefault(ca, set()).add(cb)
        # Depth-first search for a back edge.
        state, stack = {}, []

        def visit(node):
            state[node] = 1
            stack.append(node)
            for nxt in sorted(graph.get(node, ())):
                if state.get(nxt) == 1:
                    cycles.append((folder, stack[stack.index(nxt):] + [nxt]))
                elif nxt not in state:
                    visit(nxt)
            stack.pop()
            state[node] = 2

        for node in sorted(graph):
            if node not in state:
                visit(node)
        name = "/".join(folder) or "src"
        print(f"{name}: {len(graph)} modules, "
              f"{sum(len(v) for v in graph.values())} edges")
    if cycles:
        for folder, cycle in cycles:
            where = "/".join(folder) or "src"
            print(f"import loop in {where}: {' -> '.join(cycle)}", file=sys.stderr)
        sys.exit(1)
    print("no import loop")


if __name__ == "__main__":
    main()
