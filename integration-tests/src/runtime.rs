//! The harness' own background runtime, and the reaper that removes servers when the test binary
//! exits.
//!
//! Each `#[tokio::test]` has its own runtime, but servers (and testcontainers' docker client, whose
//! pooled connections belong to the runtime that opened them) must outlive one test when shared.
//! So every docker operation runs on one process-wide runtime, and tests await its results through
//! `JoinHandle`s, which work from any runtime.

use std::future::Future;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};

const BG_THREAD: &str = "zk-harness-bg";

fn bg() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(BG_THREAD)
            .enable_all()
            .build()
            .expect("failed to build the harness runtime")
    })
}

/// Runs `fut` on the harness runtime and waits for it from any runtime. A panic there panics
/// here again with the same message: the harness thread's own report goes to the process's
/// stderr, not to the test's captured output, so without this a failed docker call would fail
/// its test with no message in the test's report.
pub(crate) async fn on_bg<F>(fut: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match bg().spawn(fut).await {
        Ok(out) => out,
        Err(e) if e.is_panic() => {
            panic!("on the harness runtime: {}", panic_text(&*e.into_panic()))
        }
        Err(e) => panic!("the harness runtime dropped a task: {e}"),
    }
}

/// The message of a panic payload (`panic!` with a literal or with format arguments).
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a text message)".to_owned()
    }
}

/// Runs `fut` on the harness runtime and blocks this thread until it ends or `limit` passes
/// (for `Drop`). Does not wait when called from the harness runtime itself.
pub(crate) fn block_on_bg<F>(limit: Duration, fut: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    bg().spawn(async move {
        fut.await;
        let _ = tx.send(());
    });
    if std::thread::current().name() != Some(BG_THREAD) {
        let _ = rx.recv_timeout(limit);
    }
}

/// What the reaper removes when the test binary exits without dropping it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reap<'a> {
    /// A server process of ours, by pid (SIGKILL).
    Pid(u32),
    /// A docker container, by id (`docker rm -f -v`).
    Container(&'a str),
    /// A server's temporary directory (named `zkrs-it-*`), removed after the pids are killed.
    Dir(&'a str),
}

// Reads `pid N` / `ctr ID` lines (and `unpid`/`unctr` to forget them) until stdin closes, which
// happens when the test binary exits in whatever way; then removes what is left. Its loop is
// bounded by the life of the test binary.
const REAPER_SCRIPT: &str = r#"
pids=; ctrs=; dirs=
while read -r kind id; do
  case "$kind" in
    pid) pids="$pids $id" ;;
    ctr) ctrs="$ctrs $id" ;;
    dir) dirs="$dirs $id" ;;
    unpid) n=; for p in $pids; do [ "$p" = "$id" ] || n="$n $p"; done; pids=$n ;;
    unctr) n=; for c in $ctrs; do [ "$c" = "$id" ] || n="$n $c"; done; ctrs=$n ;;
  esac
done
for p in $pids; do kill -9 "$p" 2>/dev/null; done
for d in $dirs; do case "$d" in /*/zkrs-it-*) rm -rf "$d" ;; esac; done
if [ -n "$ctrs" ]; then
  if [ -x /usr/bin/docker ]; then d=/usr/bin/docker; else d=docker; fi
  "$d" rm -f -v $ctrs >/dev/null 2>&1
fi
exit 0
"#;

struct Reaper {
    _child: Child,
    stdin: ChildStdin,
}

fn reaper() -> &'static Mutex<Option<Reaper>> {
    static REAPER: OnceLock<Mutex<Option<Reaper>>> = OnceLock::new();
    REAPER.get_or_init(|| {
        let spawned = Command::new("sh")
            .arg("-c")
            .arg(REAPER_SCRIPT)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        // Without `sh` there is no reaper: scripts/test.sh still removes containers by label.
        let reaper = spawned.ok().and_then(|mut child| {
            let stdin = child.stdin.take()?;
            Some(Reaper {
                _child: child,
                stdin,
            })
        });
        Mutex::new(reaper)
    })
}

fn tell_reaper(line: String) {
    let mut guard = reaper().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = guard.as_mut() {
        if r.stdin
            .write_all(line.as_bytes())
            .and_then(|()| r.stdin.flush())
            .is_err()
        {
            *guard = None;
        }
    }
}

/// Asks the reaper to remove `what` if the test binary exits before [`forget`] is called.
pub(crate) fn register(what: Reap<'_>) {
    match what {
        Reap::Pid(pid) => tell_reaper(format!("pid {pid}\n")),
        Reap::Container(id) => tell_reaper(format!("ctr {id}\n")),
        Reap::Dir(path) => tell_reaper(format!("dir {path}\n")),
    }
}

/// Undoes [`register`] (call it before the pid can be reused, i.e. before `wait`).
pub(crate) fn forget(what: Reap<'_>) {
    match what {
        Reap::Pid(pid) => tell_reaper(format!("unpid {pid}\n")),
        Reap::Container(id) => tell_reaper(format!("unctr {id}\n")),
        Reap::Dir(_) => {} // removing a directory twice is harmless
    }
}

#[cfg(test)]
mod tests {
    use super::on_bg;

    #[tokio::test]
    #[should_panic(expected = "on the harness runtime: docker said no to 7")]
    async fn a_panic_on_the_harness_runtime_keeps_its_message() {
        on_bg(async { panic!("docker said no to {}", 7) }).await;
    }
}
