"""What the cost-curve scripts share (lock_depth.py, sessions_curve.py, watches_curve.py):
reading the rows a test wrote, the frame of an SVG plot, and the command line
`SCRIPT CSV OUT.md OUT.svg [COMMIT] [MACHINE]`."""

import csv
import sys

# Stroke patterns by name, as SVG attributes.
DASHES = {"solid": "", "dashed": ' stroke-dasharray="6 4"', "dotted": ' stroke-dasharray="2 3"'}


def load(path, fields, key):
    """The CSV rows of `path` with exactly the columns `fields` ([(name, type)]), as dicts of
    typed values sorted by `key`; other lines (a test's other output) are skipped. Exits
    when there is no row."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.reader(f):
            if len(r) != len(fields):
                continue
            rows.append({name: kind(v) for (name, kind), v in zip(fields, r)})
    if not rows:
        sys.exit(f"{path}: no rows")
    return sorted(rows, key=key)


def svg_start(width, height, title):
    """The opening of a plot on white: its parts so far (`title` is SVG markup)."""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        title,
    ]


def svg_end(parts):
    """The plot's text from its parts."""
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(doc, fields, key, table, svg, machine="unknown"):
    """Reads the CSV named on the command line and writes the table and the plot; `table`
    takes (rows, commit, machine), `svg` takes the rows. With too few arguments, prints
    `doc` (the script's usage) and exits."""
    if len(sys.argv) < 4:
        sys.exit(doc)
    rows = load(sys.argv[1], fields, key)
    commit = sys.argv[4] if len(sys.argv) > 4 else "unknown"
    machine = sys.argv[5] if len(sys.argv) > 5 else machine
    with open(sys.argv[2], "w") as f:
        f.write(table(rows, commit, machine))
    with open(sys.argv[3], "w") as f:
        f.write(svg(rows))
