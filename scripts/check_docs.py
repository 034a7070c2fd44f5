#!/usr/bin/env python3
"""Checks the Markdown a reader follows: README.md, docs/*.md, the published crates' READMEs,
bench/README.md and CHANGELOG.md.

- Every relative link (inline, reference-style, or an HTML href/src) names a file or folder
  that exists inside the repository; a link may not leave it.
- Every `#anchor` (in the same file or in another Markdown file) names a heading of its
  target, by GitHub's rules (lowercase, punctuation dropped, spaces to '-', '-1', '-2' for
  repeated headings), or an explicit `id`/`name` attribute.
- Every fenced block says its language: rustdoc compiles an unmarked block as Rust.
- Every page of docs/ is linked from the book's index, docs/README.md.
- No Rust block is `ignore`d, and every file with a Rust block is compiled as doctests:
  README.md and docs/*.md by the `doctests` crate (doctests/src/lib.rs), a crate's README by
  its own lib.rs.

Standard library only; exits 1 with one line per problem. Usage: python3 scripts/check_docs.py
"""

import os
import re
import sys
import unicodedata

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CRATE_READMES = ["zk-proto", "zk-client", "zk-recipes", "zkrs"]
DOCTEST_SHIM = "doctests/src/lib.rs"

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*\"([^\"]*)\"", re.I)
HTML_ANCHOR = re.compile(r"<[a-z]+\b[^>]*?\b(?:id|name)\s*=\s*\"([^\"]+)\"", re.I)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
RUSTDOC_ATTRS = {"rust", "no_run", "should_panic", "compile_fail", "ignore", "test_harness"}


def files_to_check():
    files = ["README.md"]
    docs = os.path.join(ROOT, "docs")
    if os.path.isdir(docs):
        files += sorted("docs/" + f for f in os.listdir(docs) if f.endswith(".md"))
    files += [c + "/README.md" for c in CRATE_READMES]
    return files + ["bench/README.md", "CHANGELOG.md"]


class Doc:
    """A Markdown file split into prose lines (with line numbers) and fenced blocks."""

    def __init__(self, rel):
        self.rel = rel
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            self.lines = f.read().split("\n")
        self.prose = []  # (line number, text)
        self.fences = []  # (line number, info string)
        fence = None
        for n, line in enumerate(self.lines, 1):
            m = FENCE.match(line)
            if fence is None:
                if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                    fence = m.group(1)
                    self.fences.append((n, m.group(2).strip()))
                else:
                    self.prose.append((n, line))
            elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
                fence = None
        self.unclosed = fence is not None
        self._anchors = None

    def anchors(self):
        if self._anchors is None:
            seen = {}
            self._anchors = set()
            for _, line in self.prose:
                m = HEADING.match(line)
                if m:
                    slug = github_slug(m.group(2))
                    count = seen.get(slug, 0)
                    seen[slug] = count + 1
                    self._anchors.add(slug if count == 0 else "%s-%d" % (slug, count))
                for a in HTML_ANCHOR.findall(line):
                    self._anchors.add(a)
        return self._anchors


def github_slug(text):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_ " or cat[0] in "LN" or cat == "Mn" or cat == "Pc":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def is_rust(info):
    if not info:
        return False
    tokens = [t.strip() for t in re.split(r"[,\s]+", info) if t.strip()]
    return tokens[0] == "rust" or all(t in RUSTDOC_ATTRS or t.startswith("edition") for t in tokens)


def main():
    problems = []
    docs = {}

    def doc(rel):
        if rel not in docs:
            docs[rel] = Doc(rel)
        return docs[rel]

    for rel in files_to_check():
        if not os.path.isfile(os.path.join(ROOT, rel)):
            problems.append("%s: missing" % rel)
            continue
        d = doc(rel)
        if d.unclosed:
            problems.append("%s: a fenced block is never closed" % rel)
        for n, info in d.fences:
            if not info:
                problems.append("%s:%d: fenced block without a language (```rust, ```sh, ```text, ...)" % (rel, n))
            elif is_rust(info) and "ignore" in re.split(r"[,\s]+", info):
                problems.append("%s:%d: `ignore`d Rust example: make it compile (no_run if it needs a server)" % (rel, n))
        for n, line in d.prose:
            text = CODE_SPAN.sub("", line)
            targets = INLINE_LINK.findall(text) + HTML_LINK.findall(text)
            m = REF_DEF.match(text)
            if m:
                targets.append(m.group(1))
            for target in targets:
                problem = check_link(rel, target, doc)
                if problem:
                    problems.append("%s:%d: %s" % (rel, n, problem))
        if any(is_rust(info) for _, info in d.fences):
            problem = check_doctested(rel)
            if problem:
                problems.append("%s: %s" % (rel, problem))

    index = os.path.join(ROOT, "docs", "README.md")
    if os.path.isfile(index):
        linked = set()
        for _, line in doc("docs/README.md").prose:
            for target in INLINE_LINK.findall(CODE_SPAN.sub("", line)):
                linked.add(target.partition("#")[0])
        for rel in files_to_check():
            name = rel[len("docs/"):]
            if rel.startswith("docs/") and name != "README.md" and name not in linked:
                problems.append("docs/README.md: no link to %s (every page of the book is in its index)" % name)

    for p in problems:
        print(p)
    print("check_docs: %d files, %d problem(s)" % (len(docs), len(problems)), file=sys.stderr)
    return 1 if problems else 0


def check_link(rel, target, doc):
    if not target or SCHEME.match(target) or target.startswith("//"):
        return None
    path, _, anchor = target.partition("#")
    if path.startswith("/"):
        return "link %r is absolute: use a path relative to this file" % target
    base = os.path.dirname(os.path.join(ROOT, rel))
    full = os.path.realpath(os.path.join(base, path)) if path else os.path.join(ROOT, rel)
    if full != ROOT and not full.startswith(ROOT + os.sep):
        return "link %r leaves the repository" % target
    if not os.path.exists(full):
        return "link %r: no such file or folder" % target
    if anchor:
        if not full.endswith(".md") or os.path.isdir(full):
            return "link %r: an anchor into a file that is not Markdown" % target
        target_doc = doc(os.path.relpath(full, ROOT))
        if anchor not in target_doc.anchors():
            return "link %r: no heading with anchor #%s in %s" % (target, anchor, target_doc.rel)
    return None


def check_doctested(rel):
    if rel.endswith("/README.md") and rel.split("/")[0] in CRATE_READMES:
        shim, include = rel.split("/")[0] + "/src/lib.rs", '"../README.md"'
    else:
        shim, include = DOCTEST_SHIM, '"../../%s"' % rel
    try:
        with open(os.path.join(ROOT, shim), encoding="utf-8") as f:
            source = f.read()
    except OSError:
        return "has Rust examples but %s is missing" % shim
    if "include_str!(%s)" % include not in source:
        return "has Rust examples but %s does not include it (#[doc = include_str!(%s)])" % (shim, include)
    return None


if __name__ == "__main__":
    sys.exit(main())
