//! Ports and server configuration shared by both backends.

use std::net::{SocketAddr, TcpListener};
use std::sync::Mutex;

use rand::Rng;

/// `tickTime` of every server: sessions may last 1 s (2 ticks) .. 60 s (`maxSessionTimeout`).
pub(crate) const TICK_TIME_MS: u32 = 500;
/// `maxSessionTimeout` of every server.
pub(crate) const MAX_SESSION_TIMEOUT_MS: u32 = 60_000;
/// JVM flags of every server: small heap, small txn-log preallocation, TTL nodes, read-only mode.
pub(crate) const JVM_FLAGS: &str = "-Xmx256m -XX:-UsePerfData -Dzookeeper.preAllocSize=1024 \
     -Dzookeeper.extendedTypesEnabled=true -Dreadonlymode.enabled=true";

/// The ports of one server, all on 127.0.0.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ports {
    pub(crate) client: u16,
    pub(crate) quorum: u16,
    pub(crate) election: u16,
    /// `secureClientPort`, when [`Settings::secure_client_port`] is set.
    pub(crate) secure: Option<u16>,
}

impl Ports {
    pub(crate) fn pick(secure: bool) -> Ports {
        Ports {
            client: free_port(),
            quorum: free_port(),
            election: free_port(),
            secure: secure.then(free_port),
        }
    }
}

/// Server settings a test may change; `Settings::default()` is what [`standalone`](crate::standalone)
/// and [`ensemble`](crate::ensemble) use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// `localSessionsEnabled` (default false: every session is global, ZooKeeper's default).
    ///
    /// A read-only server (an ensemble member without quorum) serves only local sessions: with
    /// this false it refuses new sessions (`NOTREADONLY`, -119) and closes reconnecting global
    /// ones, so tests of read-only clients need it true. Local sessions are upgraded to global
    /// ones on their first ephemeral create.
    pub local_sessions: bool,
    /// Also serve TLS on a `secureClientPort` (with the Netty connection factory, which then
    /// serves the plain client port too). The keystore settings (`ssl.keyStore.location`...)
    /// go in [`Settings::config_lines`]. Forces the process backend.
    pub secure_client_port: bool,
    /// Extra `zoo.cfg` lines (e.g. `ssl.clientAuth=need`, `authProvider.1=...`). Forces the
    /// process backend (paths in them are host paths).
    pub config_lines: Vec<String>,
    /// Extra JVM flags (e.g. `-Djava.security.auth.login.config=/tmp/.../jaas.conf`). Forces
    /// the process backend.
    pub jvm_flags: Vec<String>,
}

impl Settings {
    /// Settings with `localSessionsEnabled=true` (see [`Settings::local_sessions`]).
    pub fn with_local_sessions(mut self) -> Settings {
        self.local_sessions = true;
        self
    }

    /// Settings with [`Settings::secure_client_port`] set.
    pub fn with_secure_client_port(mut self) -> Settings {
        self.secure_client_port = true;
        self
    }

    /// Adds a `zoo.cfg` line (see [`Settings::config_lines`]).
    pub fn with_config_line(mut self, line: impl Into<String>) -> Settings {
        self.config_lines.push(line.into());
        self
    }

    /// Adds a JVM flag (see [`Settings::jvm_flags`]).
    pub fn with_jvm_flag(mut self, flag: impl Into<String>) -> Settings {
        self.jvm_flags.push(flag.into());
        self
    }

    /// Whether these settings need local server processes: the docker image's environment
    /// has no place for them, and their files live on the host.
    pub(crate) fn needs_process(&self) -> bool {
        self.secure_client_port || !self.config_lines.is_empty() || !self.jvm_flags.is_empty()
    }
}

/// One member of a (one- or three-node) cluster.
#[derive(Debug, Clone)]
pub(crate) struct NodeSpec {
    /// `myid`, 1-based.
    pub(crate) id: u32,
    /// The ports of every member, index `id - 1`.
    pub(crate) members: Vec<Ports>,
    /// How many of `members` (the first ones) the initial configuration lists; a member
    /// beyond them (a spare, to be added with `reconfig`) lists those and itself.
    pub(crate) listed: usize,
    pub(crate) settings: Settings,
}

impl NodeSpec {
    pub(crate) fn ports(&self) -> Ports {
        self.members[self.id as usize - 1]
    }

    pub(crate) fn client_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.ports().client))
    }

    /// The TLS client address, with [`Settings::secure_client_port`].
    pub(crate) fn secure_addr(&self) -> Option<SocketAddr> {
        let port = self.ports().secure?;
        Some(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    pub(crate) fn standalone(&self) -> bool {
        self.members.len() == 1
    }

    /// `server.N=127.0.0.1:quorum:election;client` for each member (the official image's
    /// `ZOO_SERVERS` format; the client port comes from this line, there is no `clientPort`).
    pub(crate) fn server_lines(&self) -> Vec<String> {
        let me = self.id as usize - 1;
        self.members
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < self.listed || *i == me)
            .map(|(i, p)| {
                format!(
                    "server.{}=127.0.0.1:{}:{};{}",
                    i + 1,
                    p.quorum,
                    p.election,
                    p.client
                )
            })
            .collect()
    }

    /// Settings beyond the official image's own variables (its `ZOO_CFG_EXTRA`).
    pub(crate) fn extra_lines(&self) -> Vec<String> {
        let mut lines = vec![
            format!("maxSessionTimeout={MAX_SESSION_TIMEOUT_MS}"),
            format!("localSessionsEnabled={}", self.settings.local_sessions),
        ];
        if let Some(port) = self.ports().secure {
            lines.push(format!("secureClientPort={port}"));
            lines.push(
                "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory".to_owned(),
            );
        }
        lines.extend(self.settings.config_lines.iter().cloned());
        lines
    }

    /// Environment for an image following the official `zookeeper` image's conventions.
    pub(crate) fn docker_env(&self) -> Vec<(String, String)> {
        let pairs = [
            ("ZOO_MY_ID", self.id.to_string()),
            ("ZOO_SERVERS", self.server_lines().join(" ")),
            ("ZOO_TICK_TIME", TICK_TIME_MS.to_string()),
            ("ZOO_INIT_LIMIT", "10".to_owned()),
            ("ZOO_SYNC_LIMIT", "5".to_owned()),
            ("ZOO_STANDALONE_ENABLED", self.standalone().to_string()),
            ("ZOO_ADMINSERVER_ENABLED", "false".to_owned()),
            ("ZOO_4LW_COMMANDS_WHITELIST", "*".to_owned()),
            ("ZOO_MAX_CLIENT_CNXNS", "0".to_owned()),
            ("ZOO_CFG_EXTRA", self.extra_lines().join(" ")),
            ("JVMFLAGS", JVM_FLAGS.to_owned()),
        ];
        pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    /// The `zoo.cfg` of a local process whose data lives in `data_dir`.
    pub(crate) fn zoo_cfg(&self, data_dir: &str) -> String {
        let mut lines = vec![
            format!("dataDir={data_dir}"),
            format!("tickTime={TICK_TIME_MS}"),
            "initLimit=10".to_owned(),
            "syncLimit=5".to_owned(),
            "maxClientCnxns=0".to_owned(),
            format!("standaloneEnabled={}", self.standalone()),
            "admin.enableServer=false".to_owned(),
            "4lw.commands.whitelist=*".to_owned(),
        ];
        lines.extend(self.extra_lines());
        lines.extend(self.server_lines());
        lines.join("\n") + "\n"
    }
}

/// Specs of an `n`-member cluster with fresh ports.
pub(crate) fn cluster(n: u32, settings: &Settings) -> Vec<NodeSpec> {
    growable_cluster(n, n, settings)
}

/// Specs of `n` servers of which the first `initial` form the ensemble; the others are
/// spares that know the ensemble and themselves, ready to be added with `reconfig`.
pub(crate) fn growable_cluster(n: u32, initial: u32, settings: &Settings) -> Vec<NodeSpec> {
    let members: Vec<Ports> = (0..n)
        .map(|_| Ports::pick(settings.secure_client_port))
        .collect();
    (1..=n)
        .map(|id| NodeSpec {
            id,
            members: members.clone(),
            listed: initial.min(n) as usize,
            settings: settings.clone(),
        })
        .collect()
}

static NEXT_PORT: Mutex<u16> = Mutex::new(0);
const PORT_LOW: u16 = 20_000;
const PORT_HIGH: u16 = 32_000; // below Linux's ephemeral range (32768..)

/// A port on 127.0.0.1 that is free now and that this process has not handed out before.
///
/// Ports come from 20000..32000, below the kernel's ephemeral range, so outgoing connections
/// do not take them between the check and the server's bind.
pub(crate) fn free_port() -> u16 {
    let mut next = NEXT_PORT.lock().unwrap_or_else(|e| e.into_inner());
    if *next == 0 {
        *next = rand::thread_rng().gen_range(PORT_LOW..PORT_HIGH);
    }
    for _ in 0..(PORT_HIGH - PORT_LOW) {
        let port = *next;
        *next = if port + 1 >= PORT_HIGH {
            PORT_LOW
        } else {
            port + 1
        };
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port on 127.0.0.1 in {PORT_LOW}..{PORT_HIGH}");
}
