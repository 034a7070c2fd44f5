//! A Java `CuratorCache` (Debian's Curator 5.4) in a child process:
//! `java/CuratorCacheDump.java`, run as `common/interop.rs` runs the other launchers.

use std::path::PathBuf;
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::timeout;

use super::{Seen, Tree};
use crate::kit::limits::LONG;

const CURATOR_JAR: &str = "/usr/share/java/curator-recipes.jar";
const SLF4J_NOP: &str = "/usr/share/java/slf4j-nop.jar";

/// A running Java CuratorCache on one subtree.
pub struct JavaCache {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl JavaCache {
    /// Starts `CuratorCache.build(client, path)` on `hosts` and waits for its `initialized()`.
    pub async fn start(hosts: &str, path: &str) -> JavaCache {
        for jar in [CURATOR_JAR, SLF4J_NOP] {
            assert!(
                std::path::Path::new(jar).exists(),
                "{jar} is missing: install Debian's libcurator-recipes-java and libslf4j-java"
            );
        }
        let script: PathBuf = [env!("CARGO_MANIFEST_DIR"), "java", "CuratorCacheDump.java"]
            .iter()
            .collect();
        let java = std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into());
        let mut cmd = Command::new(java);
        cmd.args(["-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp"])
            .arg(format!("{CURATOR_JAR}:{SLF4J_NOP}"))
            .arg(script)
            .args([hosts, path])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut java = JavaCache {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        };
        let first = java.line().await;
        assert_eq!(first, "READY", "CuratorCache did not start");
        java
    }

    async fn line(&mut self) -> String {
        timeout(LONG, self.lines.next_line())
            .await
            .expect("CuratorCache process hung")
            .expect("read CuratorCache output")
            .unwrap_or_default()
    }

    async fn send(&mut self, cmd: &str) {
        self.stdin
            .write_all(format!("{cmd}\n").as_bytes())
            .await
            .expect("write to CuratorCache");
        self.stdin.flush().await.expect("flush");
    }

    /// Waits until the Java cache's `marker` holds `value`, then returns its snapshot; `None`
    /// when Curator's cache did not get there within its wait (120 s).
    pub async fn dump_at(&mut self, marker: &str, value: &str) -> Option<Tree> {
        self.send(&format!("wait {marker} {value}")).await;
        let mut tree = Tree::new();
        loop {
            let line = self.line().await;
            if line == "END" {
                return Some(tree);
            }
            if line == "TIMEOUT" && tree.is_empty() {
                return None;
            }
            let parts: Vec<&str> = line.split(' ').collect();
            match parts[..] {
                ["NODE", path, version, czxid, data] => {
                    let data = if data == "-" {
                        Vec::new()
                    } else {
                        (0..data.len())
                            .step_by(2)
                            .map(|i| u8::from_str_radix(&data[i..i + 2], 16).expect("hex"))
                            .collect()
                    };
                    tree.insert(
                        path.to_owned(),
                        Seen {
                            data,
                            czxid: czxid.parse().expect("czxid"),
                            version: version.parse().expect("version"),
                        },
                    );
                }
                _ => panic!("CuratorCache: unexpected line {line:?}"),
            }
        }
    }

    /// Closes the Java cache and waits for the process.
    pub async fn close(mut self) {
        self.send("close").await;
        assert_eq!(self.line().await, "CLOSED");
        let status = timeout(LONG, self.child.wait())
            .await
            .expect("exit")
            .expect("wait");
        assert!(status.success(), "CuratorCache process failed: {status}");
    }
}
