//! Process backend (`ZK_HARNESS=process`): each server is a local `java` process running
//! Debian's ZooKeeper jars, in its own temporary directory, signalled by its own pid only.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::config::{NodeSpec, JVM_FLAGS};
use crate::runtime::{self, Reap};

/// The default class path: `zookeeper.jar` (its manifest names its dependencies) plus the SLF4J
/// binding and log4j, so the server logs. Override with `ZK_CLASSPATH`.
const DEFAULT_CLASSPATH: &str = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:\
     /usr/share/java/log4j-1.2.jar";

const LOG4J: &str = "log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] %-5p [%t:%C{1}@%L] - %m%n
";

/// One server process; killed (SIGKILL) and its directory removed on drop.
#[derive(Debug)]
pub(crate) struct ProcessNode {
    dir: PathBuf,
    jvm_flags: Vec<String>,
    /// Runs the Netty connection factory (a `secureClientPort`).
    netty: bool,
    /// Runs the AdminServer (Jetty), which needs the servlet API beside the manifest's jars.
    admin: bool,
    child: Mutex<Option<Child>>,
}

fn java() -> String {
    if let Ok(java) = std::env::var("ZK_JAVA") {
        return java;
    }
    for home in [
        std::env::var("JAVA_HOME").ok(),
        Some("/usr/lib/jvm/java-17-openjdk-amd64".into()),
    ]
    .into_iter()
    .flatten()
    {
        let candidate = Path::new(&home).join("bin/java");
        if candidate.exists() {
            return candidate.to_string_lossy().into_owned();
        }
    }
    "java".to_owned()
}

/// What the Netty connection factory (TLS) needs beyond `zookeeper.jar`'s manifest (Debian's
/// `libnetty-java`, a dependency of `zookeeper`).
const NETTY_CLASSPATH: &str = "/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar:\
     /usr/share/java/netty-transport-native-unix-common.jar";

/// What the AdminServer (Jetty) needs beyond `zookeeper.jar`'s manifest (Debian's
/// `libservlet-api-java`): without it the server logs "Unable to load jetty" and serves no
/// admin port.
const ADMIN_CLASSPATH: &str = "/usr/share/java/servlet-api.jar";

fn classpath(netty: bool, admin: bool) -> String {
    let mut cp = std::env::var("ZK_CLASSPATH").unwrap_or_else(|_| DEFAULT_CLASSPATH.to_owned());
    if netty {
        cp = format!("{cp}:{NETTY_CLASSPATH}");
    }
    if admin {
        cp = format!("{cp}:{ADMIN_CLASSPATH}");
    }
    if let Some(missing) = cp.split(':').find(|jar| !Path::new(jar).exists()) {
        panic!(
            "ZK_HARNESS=process needs {missing}: install Debian's `zookeeper` package \
             (`apt-get install zookeeper openjdk-17-jdk-headless`, which scripts/test.sh does) \
             or set ZK_CLASSPATH"
        );
    }
    cp
}

impl ProcessNode {
    /// Writes the configuration of `spec` into a new temporary directory and starts the server.
    pub(crate) fn launch(spec: &NodeSpec) -> ProcessNode {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "zkrs-it-{}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed),
            spec.id
        ));
        let data = dir.join("data");
        fs::create_dir_all(&data).expect("create server data dir");
        fs::write(data.join("myid"), format!("{}\n", spec.id)).expect("write myid");
        fs::write(dir.join("zoo.cfg"), spec.zoo_cfg(&data.to_string_lossy())).expect("zoo.cfg");
        fs::write(dir.join("log4j.properties"), LOG4J).expect("write log4j.properties");
        runtime::register(Reap::Dir(&dir.to_string_lossy()));
        let node = ProcessNode {
            dir,
            jvm_flags: spec.settings.jvm_flags.clone(),
            netty: spec.settings.secure_client_port,
            admin: spec
                .settings
                .config_lines
                .iter()
                .any(|l| l.replace(' ', "") == "admin.enableServer=true"),
            child: Mutex::new(None),
        };
        node.spawn();
        node
    }

    fn spawn(&self) {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .expect("open server.log");
        let log2 = log.try_clone().expect("clone log handle");
        let mut cmd = Command::new(java());
        cmd.args(JVM_FLAGS.split_whitespace())
            .args(&self.jvm_flags)
            .arg(format!(
                "-Dlog4j.configuration=file:{}",
                self.dir.join("log4j.properties").display()
            ))
            .arg("-cp")
            .arg(classpath(self.netty, self.admin))
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(self.dir.join("zoo.cfg"))
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        let child = cmd.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start `{}` for ZK_HARNESS=process: {e}; install openjdk-17",
                java()
            )
        });
        runtime::register(Reap::Pid(child.id()));
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
    }

    fn signal(&self, sig: Signal) {
        let guard = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(child) = guard.as_ref() {
            let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits i32"));
            // ESRCH only: the process died on its own; it is reaped in `reap`.
            let _ = kill(pid, sig);
        }
    }

    /// Waits (bounded) for the process to exit after a signal, then forgets it.
    fn reap(&self, limit: Duration) -> bool {
        let mut guard = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let Some(child) = guard.as_mut() else {
            return true;
        };
        let deadline = Instant::now() + limit;
        loop {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() >= deadline => return false,
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        runtime::forget(Reap::Pid(child.id()));
        *guard = None;
        true
    }

    /// SIGKILL and wait for the exit.
    pub(crate) fn kill(&self) {
        self.signal(Signal::SIGCONT); // a stopped process still dies, but be explicit
        self.signal(Signal::SIGKILL);
        assert!(
            self.reap(Duration::from_secs(10)),
            "server did not die from SIGKILL"
        );
    }

    /// SIGTERM, then SIGKILL after 10 s.
    pub(crate) fn stop(&self) {
        self.signal(Signal::SIGCONT);
        self.signal(Signal::SIGTERM);
        if !self.reap(Duration::from_secs(10)) {
            self.kill();
        }
    }

    /// Starts the server again after `kill`/`stop` (same data directory).
    pub(crate) fn start(&self) {
        let running = self
            .child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        assert!(
            !running,
            "start(): the server is still running; stop or kill it first"
        );
        self.spawn();
    }

    /// SIGSTOP: the kernel still completes TCP connects, nothing is answered.
    pub(crate) fn pause(&self) {
        self.signal(Signal::SIGSTOP);
    }

    /// SIGCONT.
    pub(crate) fn resume(&self) {
        self.signal(Signal::SIGCONT);
    }

    /// The server's log so far.
    pub(crate) fn logs(&self) -> String {
        fs::read(self.dir.join("server.log"))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for ProcessNode {
    fn drop(&mut self) {
        self.signal(Signal::SIGCONT);
        self.signal(Signal::SIGKILL);
        self.reap(Duration::from_secs(10));
        let _ = fs::remove_dir_all(&self.dir);
    }
}
