//! A Curator peer process driven over stdin/stdout (the launchers in `java/`, run with Java's
//! single-file source launcher).

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::limits::within;

/// The jars a launcher needs; the discovery jar only for discovery launchers.
const CURATOR_JAR: &str = "/usr/share/java/curator-recipes.jar";
const DISCOVERY_JAR: &str = "/usr/share/java/curator-x-discovery.jar";
const SLF4J_NOP: &str = "/usr/share/java/slf4j-nop.jar";
const JACKSON: [&str; 3] = [
    "/usr/share/java/jackson-databind.jar",
    "/usr/share/java/jackson-core.jar",
    "/usr/share/java/jackson-annotations.jar",
];

/// A Curator process (`java/<source>`): prints READY once started, then answers one line
/// per command line on stdin.
pub struct JavaPeer {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl JavaPeer {
    /// Starts `source` with `args`; `discovery` adds curator-x-discovery and Jackson.
    pub async fn start(source: &str, args: &[&str], discovery: bool) -> JavaPeer {
        let mut jars = vec![CURATOR_JAR, SLF4J_NOP];
        if discovery {
            jars.push(DISCOVERY_JAR);
            jars.extend(JACKSON);
        }
        for jar in &jars {
            assert!(
                std::path::Path::new(jar).exists(),
                "{jar} is missing: install Debian's libcurator-recipes-java, \
                 libcurator-discovery-java, libjackson2-databind-java and libslf4j-java \
                 (bash scripts/test.sh does)"
            );
        }
        let source = format!("{}/java/{source}", env!("CARGO_MANIFEST_DIR"));
        let java = std::env::var("ZK_JAVA").unwrap_or_else(|_| "java".into());
        let mut child = Command::new(java)
            .args(["-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp"])
            .arg(jars.join(":"))
            .arg(&source)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start java {source}: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let mut peer = JavaPeer {
            child,
            stdin,
            lines,
        };
        let first = peer.line().await;
        assert_eq!(first, "READY", "java peer did not start");
        peer
    }

    /// The next output line.
    pub async fn line(&mut self) -> String {
        within("java output", self.lines.next_line())
            .await
            .expect("read java output")
            .expect("java exited early")
    }

    /// Sends one command and returns the answer line.
    pub async fn ask(&mut self, command: &str) -> String {
        self.send(command).await;
        self.line().await
    }

    /// Sends one command without waiting for its answer (read it later with `line`).
    pub async fn send(&mut self, command: &str) {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .expect("write to java");
        self.stdin.flush().await.expect("flush");
    }

    /// The peer's process id (to kill it).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Kills the process (SIGKILL) and waits for it.
    pub async fn kill(mut self) {
        self.child.kill().await.expect("kill java");
    }

    /// Sends `close`, expects `CLOSED`, and waits for a clean exit.
    pub async fn close(mut self) {
        assert_eq!(self.ask("close").await, "CLOSED");
        let status = within("java exit", self.child.wait()).await.unwrap();
        assert!(status.success(), "java failed: {status}");
    }
}
