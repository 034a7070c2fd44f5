//! The report: the table (`--out PREFIX`.md) with the fits of the linear model, and the plot
//! (.svg) of live bytes per node.

use std::fmt::Write as _;

use super::{Row, GOAL};

fn fmt(v: f64, digits: usize) -> String {
    if v.is_nan() {
        "-".to_owned()
    } else {
        format!("{v:.digits$}")
    }
}

/// The goal for the first load: ours at least this many times faster than Curator's.
const LOAD_GOAL: f64 = 4.0;

/// The table: memory columns, then with `timings` the load and resync times; the fits of the
/// linear model under it.
pub(crate) fn table(rows: &[Row], timings: bool) -> String {
    let mut t = String::from(
        "| nodes | ours: live heap B/node | ours: one more cache | ours: RSS B/node | RSS, one more cache | Curator 5.4: heap after GC B/node | ours / Curator |",
    );
    if timings {
        t.push_str(
            " ours: first load ms | Curator: first load ms | load ours / Curator | 4x goal | \
             reconnect: loss to synced ms (re-read) | expiry: to synced ms (re-read) |",
        );
    }
    t.push_str("\n|---|---|---|---|---|---|---|");
    if timings {
        t.push_str("---|---|---|---|---|---|");
    }
    t.push('\n');
    for r in rows {
        let _ = write!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.nodes,
            fmt(r.live, 0),
            fmt(r.live2, 0),
            fmt(r.rss, 0),
            fmt(r.rss2, 0),
            fmt(r.curator_heap, 0),
            fmt(r.live / r.curator_heap, 2),
        );
        if timings {
            let ratio = r.load_ms / r.curator_load_ms;
            let goal = if !ratio.is_finite() {
                "-"
            } else if ratio * LOAD_GOAL <= 1.0 {
                "met"
            } else {
                "not met"
            };
            let _ = write!(
                t,
                " {} | {} | {} | {goal} | {} ({}) | {} ({}) |",
                fmt(r.load_ms, 0),
                fmt(r.curator_load_ms, 0),
                fmt(ratio, 2),
                fmt(r.resync.reconnect_ms, 0),
                fmt(r.resync.reconnect_reread_ms, 0),
                fmt(r.resync.expiry_ms, 0),
                fmt(r.resync.expiry_reread_ms, 0),
            );
        }
        t.push('\n');
    }
    // The model: linear, a constant per cache (the event ring, the read window, the
    // connection's buffers) plus a constant cost per node. Checked on the cost of one more
    // node between consecutive sizes: the same (within 25%) all along the curve.
    let total = |r: &Row| r.live * r.nodes as f64;
    let steps = steps(rows, total);
    let slope = steps.last().map_or(f64::NAN, |s| s.2);
    if let Some(holds) = holds(&steps) {
        let said: Vec<String> = steps
            .iter()
            .map(|(a, b, c)| format!("{c:.0} B ({a} to {b})"))
            .collect();
        let fixed = rows
            .last()
            .map_or(f64::NAN, |r| total(r) - slope * r.nodes as f64);
        let _ = writeln!(
            t,
            "\nModel: linear, a constant per cache plus a constant cost per node. One more node \
             costs {}: {holds} ({:.0} KiB per cache besides).",
            said.join(", "),
            fixed / 1024.0
        );
    }
    if let Some(r) = rows.iter().find(|r| r.nodes == 10_000) {
        let _ = writeln!(
            t,
            "Goal at 10,000 nodes: live heap per node at or below Curator's {GOAL:.0} B: {:.0} B, \
             {slope:.0} B per node more ({}).",
            r.live,
            if r.live <= GOAL { "met" } else { "NOT met" }
        );
    }
    if timings {
        times(&mut t, rows);
    }
    t
}

/// One time of the table: its name, its value in a row.
type Timed = (&'static str, fn(&Row) -> f64);

/// The times' model lines: each time linear in the nodes, checked as the memory is, on the
/// milliseconds one more 1,000 nodes cost between consecutive sizes; and the load goal.
fn times(t: &mut String, rows: &[Row]) {
    let series: [Timed; 5] = [
        ("ours: first load", |r| r.load_ms),
        ("Curator: first load", |r| r.curator_load_ms),
        ("ours: reconnect re-read", |r| r.resync.reconnect_reread_ms),
        ("ours: expiry re-read", |r| r.resync.expiry_reread_ms),
        ("ours: reconnect, loss to synced", |r| r.resync.reconnect_ms),
    ];
    let _ = writeln!(
        t,
        "\nTimes are indicative: {}. Ours and Curator load one after the other at each size, so \
         read the ratios. Resync: ours only, on a `SessionManager` behind a TCP proxy in the \
         measuring process (the server is never stopped): *reconnect*, the proxy resets the \
         connection and refuses new ones while a node is changed, then opens; timed from the \
         reset until the cache is `Synced` with the change, the session kept. *expiry*, the \
         same outage with the session closed on the server meanwhile, timed from the proxy \
         opening until `Synced` with the change on the new session. In brackets the re-read \
         alone, from the client connected again. Both are a full re-read of the subtree. \
         Curator's is not measured: CuratorCache 5.4 re-reads the root and every cached node when \
         its persistent watch is reset (RECONNECTED) but signals no end of it (its \
         `initialized` fires once), and its Java peer would need the proxy too.",
        machine()
    );
    let _ = writeln!(
        t,
        "\nTimes: linear in the nodes, a constant plus a constant cost per node; ms per 1,000 \
         more nodes between consecutive sizes (and ms per 1,000 nodes at each size):"
    );
    for (name, value) in series {
        let steps = steps(rows, value);
        let Some(holds) = holds(&steps) else {
            continue;
        };
        let said: Vec<String> = steps
            .iter()
            .map(|(a, b, c)| format!("{:.1} ms ({a} to {b})", c * 1e3))
            .collect();
        let at: Vec<String> = rows
            .iter()
            .filter(|r| value(r).is_finite())
            .map(|r| format!("{:.1}", value(r) * 1e3 / r.nodes as f64))
            .collect();
        let _ = writeln!(
            t,
            "* {name}: {}: {holds} (at each size {} ms per 1,000 nodes).",
            said.join(", "),
            at.join(", ")
        );
    }
    let compared: Vec<&Row> = rows
        .iter()
        .filter(|r| (r.load_ms / r.curator_load_ms).is_finite())
        .collect();
    let met = compared
        .iter()
        .filter(|r| r.load_ms * LOAD_GOAL <= r.curator_load_ms)
        .count();
    let _ = writeln!(
        t,
        "\nGoal: first load at least {LOAD_GOAL:.0}x faster than Curator's CuratorCache at every \
         size it completes (ours / Curator at most {:.2}): {} at {met} of {} sizes.",
        1.0 / LOAD_GOAL,
        if met == compared.len() && met > 0 {
            "met"
        } else {
            "NOT met"
        },
        compared.len()
    );
}

/// The machine's load when the table is written (`/proc/loadavg`) and its cores.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_else(|| "unknown".into());
    format!(
        "taken on {cores} cores with a 5-minute load average of {load} at the end of the run \
         (a machine shared with other builds, not a quiet one)"
    )
}

/// The cost of one more node between consecutive sizes (of the rows where `value` is
/// measured): (smaller size, larger size, cost per node).
fn steps(rows: &[Row], value: impl Fn(&Row) -> f64) -> Vec<(usize, usize, f64)> {
    let measured: Vec<&Row> = rows.iter().filter(|r| value(r).is_finite()).collect();
    measured
        .windows(2)
        .filter_map(|w| match w {
            [a, b] if b.nodes > a.nodes => Some((
                a.nodes,
                b.nodes,
                (value(b) - value(a)) / (b.nodes - a.nodes) as f64,
            )),
            _ => None,
        })
        .collect()
}

/// Whether the costs per node of `steps` are the same within 25%; `None` without a step.
fn holds(steps: &[(usize, usize, f64)]) -> Option<&'static str> {
    if steps.len() == 1 {
        return Some("one step, not checked");
    }
    let lo = steps.iter().map(|s| s.2).reduce(f64::min)?;
    let hi = steps.iter().map(|s| s.2).reduce(f64::max)?;
    Some(if lo > 0.0 && hi <= lo * 1.25 {
        "constant within 25%, holds"
    } else {
        "NOT constant within 25%"
    })
}

/// One line of the plot: its name, its colour, its value in a row.
type Series = (&'static str, &'static str, fn(&Row) -> f64);

/// A log-x line plot of live bytes per node against nodes.
pub(crate) fn plot(rows: &[Row]) -> String {
    let (w, h, left, right, top, bottom) = (640.0, 360.0, 60.0, 170.0, 20.0, 40.0);
    let xs: Vec<f64> = rows.iter().map(|r| (r.nodes as f64).log10()).collect();
    let (x0, x1) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    // The two comparable measures (RSS, in the table, is not: it holds the allocator's pools).
    let series: [Series; 3] = [
        ("ours: live heap", "#1f77b4", |r| r.live),
        ("ours: one more cache", "#9ecae1", |r| r.live2),
        ("Curator: heap after GC", "#d62728", |r| r.curator_heap),
    ];
    let y1 = rows
        .iter()
        .flat_map(|r| series.iter().map(move |s| (s.2)(r)))
        .chain([GOAL])
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
        * 1.1;
    let sx = |x: f64| {
        if x1 > x0 {
            left + (x - x0) / (x1 - x0) * (w - left - right)
        } else {
            left
        }
    };
    let sy = |y: f64| top + (1.0 - y / y1) * (h - top - bottom);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n\
         <line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{}\" stroke=\"black\"/>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">cached nodes</text>\n\
         <text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">live heap bytes per node</text>\n",
        h - bottom,
        w - right,
        h - bottom,
        h - bottom,
        (left + w - right) / 2.0,
        h - 5.0,
        (top + h - bottom) / 2.0,
        (top + h - bottom) / 2.0,
    );
    for (r, x) in rows.iter().zip(&xs) {
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            sx(*x),
            h - bottom + 14.0,
            r.nodes
        );
    }
    for i in 0..=4 {
        let v = y1 * f64::from(i) / 4.0;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{v:.0}</text>",
            left - 4.0,
            sy(v) + 4.0
        );
    }
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"gray\" stroke-dasharray=\"4 3\"/>\n\
         <text x=\"{}\" y=\"{:.1}\">goal {GOAL:.0} B</text>",
        w - right,
        w - right + 6.0,
        sy(GOAL) + 4.0,
        y = sy(GOAL),
    );
    for (i, (name, color, value)) in series.iter().enumerate() {
        let points: Vec<String> = rows
            .iter()
            .zip(&xs)
            .filter(|(r, _)| value(r).is_finite())
            .map(|(r, x)| format!("{:.1},{:.1}", sx(*x), sy(value(r))))
            .collect();
        if points.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
            points.join(" ")
        );
        for p in &points {
            let (px, py) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(
                s,
                "<circle cx=\"{px}\" cy=\"{py}\" r=\"3\" fill=\"{color}\"/>"
            );
        }
        let ly = top + 20.0 + 16.0 * i as f64;
        let _ = writeln!(
            s,
            "<line x1=\"{}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"/>\n\
             <text x=\"{}\" y=\"{}\">{name}</text>",
            w - right + 6.0,
            w - right + 24.0,
            w - right + 28.0,
            ly + 4.0
        );
    }
    s.push_str("</svg>\n");
    s
}
