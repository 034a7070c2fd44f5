//! The C client anchor (W1c, W2c, W3c): ZooKeeper's own C client (Debian's
//! `libzookeeper-mt`) running W1, W2 and W3 in a process of its own, `bench/c/zk_c_bench.c`.
//!
//! `bench/run.sh` installs `libzookeeper-mt-dev`, builds the program and names it in
//! `ZK_C_BENCH`; without that variable the anchor rows are left out (said once on stderr).
//! The child measures its own CPU (getrusage) and wall time over the measured part only;
//! the server's counters are read around the child as for the other clients.

use std::path::PathBuf;
use std::time::Duration;

use tokio::process::Command;

use super::common::{bounded, close_ours, connect_ours, ensure_node};
use crate::sys::{server_counters, server_delta, Sample};
use crate::{Ctx, Res};

/// The built `zk_c_bench`, if `ZK_C_BENCH` names an existing file.
pub(crate) fn binary() -> Option<PathBuf> {
    std::env::var_os("ZK_C_BENCH")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
}

/// One line of the child's output: `ops=.. wall_us=.. user_us=.. sys_us=.. vcsw=..`.
fn parse(line: &str) -> Res<(u64, Duration, Duration, Duration, i64)> {
    let field = |name: &str| -> Res<i64> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .ok_or_else(|| format!("zk_c_bench printed no {name}: {line:?}"))?
            .parse::<i64>()
            .map_err(|e| format!("zk_c_bench's {name}: {e} in {line:?}").into())
    };
    let us = |v: i64| Duration::from_micros(u64::try_from(v).unwrap_or(0));
    let (user, sys) = (us(field("user_us")?), us(field("sys_us")?));
    Ok((
        u64::try_from(field("ops")?).unwrap_or(0),
        us(field("wall_us")?),
        user + sys,
        sys,
        field("vcsw")?,
    ))
}

/// Runs `zk_c_bench <connect> <workload> <calls> <window> <path>` within the workload bound.
async fn child(ctx: &Ctx, workload: &str, calls: usize, window: usize, path: &str) -> Res<Sample> {
    let bin = binary().ok_or("ZK_C_BENCH does not name the built zk_c_bench")?;
    let before = server_counters(ctx.addr).await;
    let out = bounded(ctx.limits.workload, "zk_c_bench", async {
        Ok(Command::new(&bin)
            .args([
                ctx.connect.as_str(),
                workload,
                &calls.to_string(),
                &window.to_string(),
                path,
            ])
            .kill_on_drop(true)
            .output()
            .await?)
    })
    .await?;
    let after = server_counters(ctx.addr).await;
    if !out.status.success() {
        return Err(format!(
            "zk_c_bench {workload}: {} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let (ops, wall, cpu, sys, vcsw) = parse(line)?;
    let (server_packets, server_fsyncs) = server_delta(before, after);
    Ok(Sample {
        ops,
        wall,
        cpu,
        sys,
        vcsw,
        server_packets,
        server_fsyncs,
    })
}

/// W1 with the C client: sequential `zoo_get` of the 100-byte node.
pub(crate) async fn w1(ctx: &Ctx) -> Res<Sample> {
    child(ctx, "w1", ctx.sizes.w1_calls, 1, &ctx.data_node()).await
}

/// W2 with the C client: `zoo_aget` with W2's window outstanding, one session.
pub(crate) async fn w2(ctx: &Ctx) -> Res<Sample> {
    child(
        ctx,
        "w2",
        ctx.sizes.w2_calls,
        ctx.sizes.w2_window,
        &ctx.data_node(),
    )
    .await
}

/// W3 with the C client: sequential plain `zoo_create` + `zoo_delete` (ops = requests).
pub(crate) async fn w3(ctx: &Ctx, round: usize) -> Res<Sample> {
    let parent = format!("{}/w3-c-{round}", ctx.root);
    let admin = connect_ours(ctx).await?;
    ensure_node(&admin, &parent, b"").await?;
    let sample = child(ctx, "w3", ctx.sizes.w3_pairs, 1, &format!("{parent}/n")).await;
    let _ = admin.delete_all(&parent).await;
    close_ours(vec![admin]).await;
    sample
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_childs_line_parses_and_bad_lines_say_why() {
        let (ops, wall, cpu, sys, vcsw) =
            parse("ops=2000 wall_us=2632747 user_us=40218 sys_us=298834 vcsw=5801").unwrap();
        assert_eq!(ops, 2000);
        assert_eq!(wall, Duration::from_micros(2_632_747));
        assert_eq!(cpu, Duration::from_micros(40_218 + 298_834));
        assert_eq!(sys, Duration::from_micros(298_834));
        assert_eq!(vcsw, 5801);
        let e = parse("ops=1 wall_us=x user_us=1 sys_us=1 vcsw=1").unwrap_err();
        assert!(e.to_string().contains("wall_us"), "{e}");
        assert!(parse("").is_err());
    }
}
