//! The report: medians, paired ratios and targets, as markdown tables.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use crate::args::Args;
use crate::codec;
use crate::config::{Ctx, Sizes};
use crate::runtime_name;
use crate::sys::{self, median, Sample};
use crate::workloads::{Herd, Which, Workload};

/// Samples of one workload: per client, one per round.
pub(crate) type Runs = BTreeMap<Workload, Vec<(usize, Which, Sample)>>;

#[derive(Debug, Default)]
pub(crate) struct Report {
    pub(crate) runs: Runs,
    pub(crate) herd: Vec<(Which, Herd)>,
    pub(crate) codec: Vec<(&'static str, Vec<codec::CodecSample>)>,
    pub(crate) mem: Vec<(Which, f64)>,
    /// 1-minute load average of the machine at the start and at the end.
    pub(crate) load: (String, String),
    /// Samples of the diagnostic variants ([`Workload::diagnostic`]).
    pub(crate) diag: BTreeMap<Workload, Vec<Sample>>,
    pub(crate) failures: Vec<String>,
    /// The `tls` workload: (client, over TLS, W1 sample, W2 sample) per run.
    pub(crate) tls: Vec<(Which, bool, Sample, Sample)>,
}

impl Report {
    pub(crate) fn fail(&mut self, what: String) {
        eprintln!("FAILED: {what}");
        self.failures.push(what);
    }
}

struct Summary {
    ops: f64,
    ops_lo: f64,
    ops_hi: f64,
    cpu: f64,
    sys: f64,
    vcsw: f64,
    requests: f64,
    rounds: usize,
}

fn summarize<'a>(samples: impl Iterator<Item = &'a Sample>) -> Summary {
    let samples: Vec<&Sample> = samples.collect();
    let pick = |f: fn(&Sample) -> f64| -> Vec<f64> { samples.iter().map(|s| f(s)).collect() };
    let ops = pick(Sample::ops_per_sec);
    Summary {
        ops_lo: ops.iter().copied().fold(f64::INFINITY, f64::min),
        ops_hi: ops.iter().copied().fold(0.0, f64::max),
        ops: median(&mut ops.clone()),
        cpu: median(&mut pick(Sample::cpu_ms_per_1k)),
        sys: median(&mut pick(Sample::sys_share)),
        vcsw: median(&mut pick(Sample::vcsw_per_op)),
        requests: median(&mut pick(Sample::requests_per_op)),
        rounds: samples.len(),
    }
}

fn of(samples: &[(usize, Which, Sample)], which: Which) -> Summary {
    summarize(
        samples
            .iter()
            .filter(|(_, w, _)| *w == which)
            .map(|(_, _, s)| s),
    )
}

/// Medians of the per-round ratios ours/theirs (ops/s, CPU per op): each round's two runs
/// are back to back, so they share that moment's noise.
fn paired(samples: &[(usize, Which, Sample)]) -> (f64, f64) {
    let mut ops = Vec::new();
    let mut cpu = Vec::new();
    for (round, which, ours) in samples {
        if *which != Which::Ours {
            continue;
        }
        let theirs = samples
            .iter()
            .find(|(r, w, _)| r == round && *w == Which::Theirs);
        if let Some((_, _, theirs)) = theirs {
            ops.push(ours.ops_per_sec() / theirs.ops_per_sec());
            cpu.push(ours.cpu_ms_per_1k() / theirs.cpu_ms_per_1k());
        }
    }
    (median(&mut ops), median(&mut cpu))
}

fn row(out: &mut String, workload: &str, client: &str, s: &Summary, tail: &str) {
    let _ = writeln!(
        out,
        "| {workload} | {client} | {:.0} ({:.0}..{:.0}) | {:.1} | {:.0}% | {:.2} | {:.2} | {tail}",
        s.ops,
        s.ops_lo,
        s.ops_hi,
        s.cpu,
        s.sys * 100.0,
        s.vcsw,
        s.requests
    );
}

impl Report {
    pub(crate) fn render(&self, args: &Args, ctx: &Ctx, took: Duration) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\n## Results: medians of {} round(s), {}; {}; total {:.0} s; {} CPUs, load average {} at the start, {} at the end\n",
            args.rounds,
            runtime_name(args.threads),
            if args.quick {
                "quick sizes"
            } else {
                "full sizes"
            },
            took.as_secs_f64(),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            self.load.0,
            self.load.1,
        );
        self.render_paired(&mut out, &ctx.sizes);
        self.render_herd(&mut out, &ctx.sizes);
        self.render_mem(&mut out, &ctx.sizes);
        if !self.failures.is_empty() {
            let _ = writeln!(out, "\nFailed runs (left out of the medians):");
            for f in &self.failures {
                let _ = writeln!(out, "- {f}");
            }
        }
        self.render_codec(&mut out);
        self.render_tls(&mut out);
        out
    }

    /// Both clients over TLS against plain TCP, on one server.
    fn render_tls(&self, out: &mut String) {
        if self.tls.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "\n| tls: one server with a plain and a TLS port | ops/s median, TCP | ops/s median, TLS | CPU µs/op, TCP | CPU µs/op, TLS | CPU TLS/TCP |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
        let pick = |which: Which, over_tls: bool, w2: bool| {
            let samples = self
                .tls
                .iter()
                .filter(move |(c, t, _, _)| *c == which && *t == over_tls)
                .map(move |(_, _, a, b)| if w2 { b } else { a });
            summarize(samples)
        };
        for (name, w2) in [
            ("W1 sequential getData", false),
            ("W2 pipelined getData", true),
        ] {
            for which in [Which::Ours, Which::Theirs] {
                if !self.tls.iter().any(|(c, ..)| *c == which) {
                    continue;
                }
                let (tcp, tls) = (pick(which, false, w2), pick(which, true, w2));
                let _ = writeln!(
                    out,
                    "| {name}, {} | {:.0} | {:.0} | {:.1} | {:.1} | **{:.2}x** |",
                    which.name(),
                    tcp.ops,
                    tls.ops,
                    tcp.cpu,
                    tls.cpu,
                    tls.cpu / tcp.cpu
                );
            }
        }
        let _ = writeln!(
            out,
            "\nTLS: both clients use rustls with ring, TLS 1.2 (ZooKeeper 3.8's default `ssl.protocol`), AES-GCM, the same client certificate and CA. The server runs ZooKeeper's Netty connection factory (needed for its secure port) for both ports, so its TCP numbers are not the other tables' (NIO factory). The TCP and TLS runs of a client in a round are back to back on the same server, alternating which goes first."
        );
    }

    /// W1..W4, both clients and the diagnostics, with the paired ratios and targets.
    fn render_paired(&self, out: &mut String, s: &Sizes) {
        if self.runs.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "| workload | client | ops/s median (min..max) | client CPU ms / 1k ops | of it kernel | voluntary ctx switches / op | server requests / op | ops/s ours/theirs (paired) | CPU/op ours/theirs (paired) | target | met |"
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|");
        for w in Workload::PAIRED {
            let Some(samples) = self.runs.get(&w) else {
                continue;
            };
            let ours = of(samples, Which::Ours);
            let theirs = of(samples, Which::Theirs);
            let (ro, rc) = paired(samples);
            let t = w.target();
            let met = if ours.rounds == 0 || theirs.rounds == 0 {
                "-"
            } else if (t.check)(ro, rc) {
                "yes"
            } else {
                "**no**"
            };
            let tail = format!("**{ro:.2}x** | **{rc:.2}x** | {} | {met} |", t.text);
            row(out, &w.describe(s), Which::Ours.name(), &ours, &tail);
            row(out, "", Which::Theirs.name(), &theirs, "| | | |");
            for diag in Workload::ALL {
                let Some((_, label)) = diag.diagnostic().filter(|(under, _)| *under == w) else {
                    continue;
                };
                let Some(d) = self.diag.get(&diag).filter(|d| !d.is_empty()) else {
                    continue;
                };
                let d = summarize(d.iter());
                let tail = if diag.is_anchor() {
                    format!(
                        "{:.2}x | {:.2}x | (anchor: ours / C) | |",
                        ours.ops / d.ops,
                        ours.cpu / d.cpu
                    )
                } else {
                    format!(
                        "{:.2}x | {:.2}x | (diagnostic) | |",
                        d.ops / theirs.ops,
                        d.cpu / theirs.cpu
                    )
                };
                row(out, "", label, &d, &tail);
            }
        }
        let _ = writeln!(
            out,
            "\nops/s: median (min..max) over rounds. CPU: user+sys of the whole bench process (getrusage) during the measured part; \
             ms per 1,000 ops = µs per op. \
             Ratios (and the target check): median over rounds of ours/theirs within the round (the two runs of a round are back to back). Server requests: increase of mntr's zk_packets_received per op. \
             W4 release: zk-recipes waits for the delete's reply; zookeeper-client drops its LockClient and deletes in a background task (does not wait). \
             The bare lock (diagnostic) is zk-client with a minimal lock in bench/src/workloads/bare_lock.rs: no loss monitor, release waits for the delete. \
             The floors (diagnostics, W3) are W3's requests written and read back by hand in bench/src/workloads/floor.rs, with no client: over a blocking socket (no runtime, one sleep per request) and over tokio's socket in the bench's own task (the floor of any tokio client); their ratios are of medians against zookeeper-client, not paired. \
             batch_reads(false) (diagnostic): zk-client reading every reply as it arrives instead of pausing deep pipelines; its ratios are of medians, not paired. \
             C client (anchor): ZooKeeper's C client (libzookeeper_mt; W2 through its async API with the same window, W3 with a plain create) in a process of its own, bench/c/zk_c_bench.c; its ratios are ours / C, of medians, not paired; its CPU is the child process's."
        );
    }

    /// W5: notifications per release, and the hand-off latency (the first one after the
    /// queue sat idle, and all of them).
    fn render_herd(&self, out: &mut String, s: &Sizes) {
        if self.herd.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "\n| W5 herd: {} waiters on one fair lock | server notifications per release (all) | median | hand-off after {:.1} s idle, median ms (min..max) [samples] | back-to-back hand-off (drain), median ms (min..max) | target | met |",
            s.w5_waiters,
            s.w5_idle.as_secs_f64()
        );
        let _ = writeln!(out, "|---|---|---:|---:|---:|---|---|");
        // Per client: notifications per release, hand-offs after idle, drain hand-offs (ms).
        let gather = |which: Which| {
            let mut counts: Vec<u64> = Vec::new();
            let mut first: Vec<f64> = Vec::new();
            let mut all: Vec<f64> = Vec::new();
            let ms = |d: &Duration| d.as_secs_f64() * 1e3;
            for (w, h) in &self.herd {
                if *w == which {
                    counts.extend(&h.notifications);
                    first.extend(h.handoff.iter().map(ms));
                    all.extend(h.busy.iter().map(ms));
                }
            }
            (counts, first, all)
        };
        let mut theirs_first = gather(Which::Theirs).1;
        let theirs_first = (!theirs_first.is_empty()).then(|| median(&mut theirs_first));
        for which in [Which::Ours, Which::Theirs] {
            let (counts, mut first, mut all) = gather(which);
            let mut cf: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
            let exact = !counts.is_empty() && counts.iter().all(|&c| c == 1);
            // Issue 23: the first hand-off after an idle queue at or below the other
            // client's median of the same (when the other client ran).
            let quick = match theirs_first {
                Some(t) => !first.is_empty() && median(&mut first.clone()) <= t,
                None => true,
            };
            let (target, met) = match which {
                Which::Ours => (
                    "exactly 1; hand-off after idle <= theirs",
                    if exact && quick { "yes" } else { "**no**" },
                ),
                _ => ("", ""),
            };
            let _ = writeln!(
                out,
                "| {} | {:?} | {:.0} | {} [{}] | {} | {target} | {met} |",
                which.name(),
                counts,
                median(&mut cf),
                spread_ms(&mut first),
                first.len(),
                spread_ms(&mut all),
            );
        }
        let _ = writeln!(
            out,
            "\nNotifications: increase of the sum of mntr's {} across one release. Hand-off: from the holder's release call to the next holder's acquire returning; each measured release follows its own idle period, and the drain hands the lock down the rest of the queue back to back.",
            sys::WATCH_COUNTERS.join(", ")
        );
    }

    fn render_mem(&self, out: &mut String, s: &Sizes) {
        if self.mem.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "\n| memory per idle session ({} sessions, fresh process each) | KiB RSS per session, median |",
            s.idle_sessions
        );
        let _ = writeln!(out, "|---|---:|");
        for which in [Which::Ours, Which::Theirs] {
            let mut v: Vec<f64> = self
                .mem
                .iter()
                .filter(|(w, _)| *w == which)
                .map(|(_, k)| *k)
                .collect();
            let _ = writeln!(out, "| {} | {:.1} |", which.name(), median(&mut v));
        }
    }

    fn render_codec(&self, out: &mut String) {
        if self.codec.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "\n| zk-proto codec (Record encode/decode, one thread) | wire bytes | encode MB/s | decode MB/s |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|");
        for (name, samples) in &self.codec {
            let mut e: Vec<f64> = samples.iter().map(|c| c.encode_mb_s).collect();
            let mut d: Vec<f64> = samples.iter().map(|c| c.decode_mb_s).collect();
            let size = samples.first().map(|c| c.size).unwrap_or(0);
            let _ = writeln!(
                out,
                "| {name} | {size} | {:.0} | {:.0} |",
                median(&mut e),
                median(&mut d)
            );
        }
    }
}

/// `median (min..max)` of milliseconds, or `-` when there are none.
fn spread_ms(ms: &mut [f64]) -> String {
    if ms.is_empty() {
        return "-".into();
    }
    let lo = ms.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ms.iter().copied().fold(0.0, f64::max);
    format!("{:.2} ({lo:.2}..{hi:.2})", median(ms))
}
