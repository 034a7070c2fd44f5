#!/usr/bin/env python3
"""Checks that rustdoc, run as docs.rs runs it (scripts/docsrs.sh), labels feature-gated items.

Usage: docsrs_labels.py DOC_DIR

One public item per Cargo feature of the published library crates: its page (or, for a
method, its section of the type's page) must say "Available on crate feature <f> only". A
missing page or label fails with the item named, so a feature whose items lose their label
(a `cfg` without docs.rs' `doc_cfg`, a `#[doc(hidden)]` re-export) shows up in review.
"""

import html
import re
import sys
from pathlib import Path

# (page under DOC_DIR, method anchor or None for the whole item, feature)
ITEMS = [
    ("zk_client/struct.TlsOptions.html", None, "tls"),
    ("zk_client/struct.ClientBuilder.html", "method.tls", "tls"),
    ("zk_client/struct.ClientBuilder.html", "method.sasl_digest_md5", "sasl"),
    ("zk_client/struct.KerberosOptions.html", None, "sasl-gssapi"),
    ("zk_client/struct.ClientBuilder.html", "method.sasl_gssapi", "sasl-gssapi"),
    ("zk_recipes/discovery/index.html", None, "discovery"),
    ("zk_recipes/discovery/struct.ServiceDiscovery.html", None, "discovery"),
]

# How far after a method's anchor its label may sit when no method follows it.
METHOD_WINDOW = 4000


def label_of(text: str, anchor: str | None) -> str:
    """The part of a page where the item's portability label is."""
    if anchor is None:
        # The item's own label sits in the heading block, before its first section.
        end = text.find('id="implementations"')
        return text if end < 0 else text[:end]
    at = text.find(f'id="{anchor}"')
    if at < 0:
        raise LookupError(f"no anchor {anchor}")
    # Up to the next method's anchor, so that a neighbour's label does not count.
    end = text.find('id="method.', at + 1)
    return text[at : end if end > 0 else at + METHOD_WINDOW]


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(sys.argv[1])
    failed = []
    for page, anchor, feature in ITEMS:
        name = page + (f"#{anchor}" if anchor else "")
        path = root / page
        if not path.is_file():
            failed.append(f"{name}: page missing")
            continue
        try:
            part = label_of(path.read_text(encoding="utf-8"), anchor)
        except LookupError as e:
            failed.append(f"{name}: {e}")
            continue
        plain = html.unescape(re.sub(r"<[^>]+>", "", part))
        want = f"Available on crate feature {feature} only"
        if want not in plain:
            failed.append(f"{name}: no '{want}' label")
        else:
            print(f"docsrs: {name}: labelled '{feature}'")
    for f in failed:
        print(f"docsrs: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
