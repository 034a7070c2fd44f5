#!/usr/bin/env python3
"""Writes the lock queue depth table (Markdown) and plot (SVG) from the CSV rows that
integration-tests' `locks::depth` appends with ZK_LOCK_DEPTH_OUT:
hand_off,depth,releases,notifications,listings,requests,hand_off_ms (per release: the totals
over the measured releases divided by their number, rounded up).
Usage: lock_depth.py CSV OUT.md OUT.svg [COMMIT]"""

import math

import curves

COLOURS = {"Lean": "#1f77b4", "Prepared": "#d62728"}
SERIES = [("notifications", "solid"), ("requests", "dashed"), ("listings", "dotted")]


FIELDS = [
    ("hand_off", str),
    ("depth", int),
    ("releases", int),
    ("notifications", int),
    ("listings", int),
    ("requests", int),
    ("hand_off_ms", float),
]


def constant(rows, hand_off):
    deep = [r for r in rows if r["hand_off"] == hand_off and r["depth"] >= 10]
    keys = {(r["notifications"], r["listings"], r["requests"]) for r in deep}
    return len(keys) <= 1


def table(rows, commit, _machine):
    out = [
        "# Lock queue depth: the cost of one release",
        "",
        "Written by `bench/lock-depth.sh` (integration-tests `locks::depth` on one local",
        f"ZooKeeper 3.8, waiters spread over 4 sessions) at `{commit}`. Per release: the totals",
        "over the releases measured at each depth divided by their number, rounded up, of server",
        "notifications (`mntr`) and the client's listings and requests (zk-client's",
        "`zk_client_requests_total`, pings left out). Model: **constant** from depth 10 on (at depth 1 the only waiter was next in line",
        "at its first listing and takes the lock without listing again). The hand-off time is",
        "the median of the measured releases on a shared 2-vCPU machine: indicative only.",
        "",
        "| hand-off | waiters queued | releases measured | notifications / release | listings / release | requests / release | hand-off ms (median) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['hand_off']} | {r['depth']} | {r['releases']} | {r['notifications']} | "
            f"{r['listings']} | {r['requests']} | {r['hand_off_ms']:.1f} |"
        )
    out.append("")
    for h in sorted({r["hand_off"] for r in rows}):
        verdict = "constant" if constant(rows, h) else "NOT constant"
        out.append(f"- {h}: {verdict} from depth 10 on.")
    out.append("")
    out.append("The requests of a release: its delete, and the listing of the next holder (with")
    out.append("`Prepared`, of the waiter behind the next holder, which then holds with no listing).")
    out.append("An acquisition's create, first listing and watches are made when it queues, at")
    out.append("every depth the same.")
    return "\n".join(out) + "\n"


def svg(rows):
    width, height, left, right, top, bottom = 700, 360, 60, 230, 30, 50
    depths = sorted({r["depth"] for r in rows})
    ymax = max(3, max(max(r["notifications"], r["requests"], r["listings"]) for r in rows) + 1)
    lo, hi = math.log10(min(depths)), math.log10(max(depths))
    span = hi - lo or 1.0

    def x(d):
        return left + (math.log10(d) - lo) / span * (width - left - right)

    def y(v):
        return top + (1 - v / ymax) * (height - top - bottom)

    parts = curves.svg_start(
        width,
        height,
        f'<text x="{left}" y="18">Cost of one lock release against queue depth (model: constant)</text>',
    )
    for v in range(ymax + 1):
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>'
            f'<text x="{left - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v}</text>'
        )
    for d in depths:
        parts.append(
            f'<text x="{x(d):.1f}" y="{height - bottom + 18}" text-anchor="middle">{d}</text>'
        )
    parts.append(
        f'<text x="{(left + width - right) / 2:.1f}" y="{height - 10}" text-anchor="middle">'
        "waiters queued (log scale)</text>"
    )
    legend_y = top + 10
    for h in sorted({r["hand_off"] for r in rows}):
        of = [r for r in rows if r["hand_off"] == h]
        for i, (field, style) in enumerate(SERIES):
            # Nudge the series apart so equal values stay visible.
            off = (i - 1) * 2 + (2 if h == "Prepared" else -2)
            pts = " ".join(f"{x(r['depth']):.1f},{y(r[field]) + off:.1f}" for r in of)
            parts.append(
                f'<polyline points="{pts}" fill="none" stroke="{COLOURS.get(h, "black")}" '
                f'stroke-width="2"{curves.DASHES[style]}/>'
            )
            parts.append(
                f'<line x1="{width - right + 10}" x2="{width - right + 40}" y1="{legend_y}" '
                f'y2="{legend_y}" stroke="{COLOURS.get(h, "black")}" stroke-width="2"{curves.DASHES[style]}/>'
                f'<text x="{width - right + 46}" y="{legend_y + 4}">{h} {field}</text>'
            )
            legend_y += 18
    return curves.svg_end(parts)


def main():
    curves.main(__doc__, FIELDS, lambda r: (r["hand_off"], r["depth"]), table, svg)


if __name__ == "__main__":
    main()
