//! A Kerberos KDC for tests: Debian's MIT `krb5kdc` on a loopback port, with its database,
//! principals and keytabs made at test time in a temporary directory (removed on drop; the
//! process and directory are also registered with the reaper).
//!
//! [`Kdc::start`] makes the realm [`REALM`] and starts the KDC (TCP and UDP on one port of
//! 127.0.0.1, nothing else). [`Kdc::add_principal`] adds a principal with a random key and
//! [`Kdc::keytab`] exports keys into a keytab. [`Kdc::krb5_conf`] is a `krb5.conf` for
//! clients (Rust, Java's `java.security.krb5.conf`, `kinit`).

use std::fs;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::config::free_port;
use crate::runtime::{self, Reap};

/// The test realm.
pub const REALM: &str = "ZKRS.TEST";

/// Longest ticket any principal gets unless [`Kdc::set_max_life`] lowers it.
const MAX_LIFE: &str = "10h";

/// A running KDC and its files.
#[derive(Debug)]
pub struct Kdc {
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Kdc {
    /// Creates the realm's database and starts the KDC; panics naming the package when
    /// `krb5kdc` or `kdb5_util` is missing (Debian: `krb5-kdc`, `krb5-admin-server`).
    pub fn start() -> Kdc {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "zkrs-it-kdc-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&dir).expect("create kdc dir");
        runtime::register(Reap::Dir(&dir.to_string_lossy()));
        let port = free_port();
        let mut kdc = Kdc {
            dir,
            port,
            child: None,
        };
        fs::write(kdc.path("kdc.conf"), kdc.kdc_conf()).expect("write kdc.conf");
        fs::write(kdc.krb5_conf(), kdc.client_conf()).expect("write krb5.conf");
        fs::write(kdc.path("kadm5.acl"), "").expect("write kadm5.acl");
        kdc.run(
            "kdb5_util",
            &["create", "-s", "-r", REALM, "-P", "zkrs-kdc-master"],
        );
        let log = fs::File::create(kdc.path("krb5kdc.out")).expect("kdc log");
        let err = log.try_clone().expect("kdc log");
        let child = kdc
            .command("krb5kdc")
            .args(["-n", "-r", REALM])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start krb5kdc (install krb5-kdc): {e}"));
        runtime::register(Reap::Pid(child.id()));
        kdc.child = Some(child);
        kdc.wait_ready(Duration::from_secs(20));
        kdc
    }

    /// A file in the KDC's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The KDC's address (TCP and UDP).
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// A `krb5.conf` naming this KDC for [`REALM`] (default realm, TCP only, no DNS).
    pub fn krb5_conf(&self) -> PathBuf {
        self.path("krb5.conf")
    }

    /// `name@REALM`.
    pub fn principal(name: &str) -> String {
        format!("{name}@{REALM}")
    }

    /// Adds `name` (without realm, e.g. `zookeeper/localhost`) with a random key.
    pub fn add_principal(&self, name: &str) {
        self.kadmin(&format!("addprinc -randkey {name}"));
    }

    /// Adds `name` with the password `password` (for `kinit`).
    pub fn add_principal_with_password(&self, name: &str, password: &str) {
        self.kadmin(&format!("addprinc -pw {password} {name}"));
    }

    /// `kinit [-l lifetime] name` with `password` on stdin, into the credentials cache file
    /// `cache` (MIT's `kinit`, Debian's `krb5-user`); panics with kinit's message on failure.
    pub fn kinit(&self, name: &str, password: &str, lifetime: Option<&str>, cache: &Path) {
        use std::io::Write;
        let mut cmd = self.command("kinit");
        if let Some(life) = lifetime {
            cmd.args(["-l", life]);
        }
        let mut child = cmd
            .arg("-c")
            .arg(format!("FILE:{}", cache.display()))
            .arg(Self::principal(name))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run kinit (install krb5-user): {e}"));
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(format!("{password}\n").as_bytes())
                .expect("password to kinit");
        }
        let out = child.wait_with_output().expect("kinit");
        assert!(
            out.status.success(),
            "kinit {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Lowers the ticket lifetime of `name` (e.g. `"8 seconds"`).
    pub fn set_max_life(&self, name: &str, life: &str) {
        self.kadmin(&format!("modprinc -maxlife \"{life}\" {name}"));
    }

    /// Writes the current keys of `names` into the keytab `file` (in the KDC's directory),
    /// without changing them (so several keytabs of one principal agree).
    pub fn keytab(&self, file: &str, names: &[&str]) -> PathBuf {
        let path = self.path(file);
        for name in names {
            self.kadmin(&format!("ktadd -norandkey -k {} {name}", path.display()));
        }
        path
    }

    /// Removes `name`: the KDC then answers its requests with "client not found".
    pub fn delete_principal(&self, name: &str) {
        self.kadmin(&format!("delprinc -force {name}"));
    }

    /// How many lines of the KDC's log mention `text` (e.g. a principal: one line per
    /// request the KDC answered for it).
    pub fn log_lines_with(&self, text: &str) -> usize {
        fs::read_to_string(self.path("kdc.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(text))
            .count()
    }

    /// Gives `name` a new random key: keytabs written before no longer match it.
    pub fn change_key(&self, name: &str) {
        self.kadmin(&format!("cpw -randkey {name}"));
    }

    fn kadmin(&self, query: &str) {
        self.run("kadmin.local", &["-r", REALM, "-q", query]);
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.dir)
            .env("KRB5_CONFIG", self.krb5_conf())
            .env("KRB5_KDC_PROFILE", self.path("kdc.conf"));
        cmd
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = self
            .command(program)
            .args(args)
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run {program} (install krb5-kdc krb5-admin-server krb5-user): {e}")
            });
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && !stderr.contains("error"),
            "{program} {args:?} failed: {stderr}"
        );
    }

    fn wait_ready(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            if TcpStream::connect_timeout(&self.addr(), Duration::from_millis(200)).is_ok() {
                return;
            }
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    let log = fs::read_to_string(self.path("krb5kdc.out")).unwrap_or_default();
                    panic!("krb5kdc exited ({status}): {log}");
                }
            }
            assert!(
                Instant::now() < deadline,
                "KDC not listening within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn kdc_conf(&self) -> String {
        let dir = self.dir.display();
        let port = self.port;
        format!(
            "[kdcdefaults]\n kdc_listen = 127.0.0.1:{port}\n kdc_tcp_listen = 127.0.0.1:{port}\n\
             [realms]\n {REALM} = {{\n  database_name = {dir}/principal\n  \
             key_stash_file = {dir}/stash\n  acl_file = {dir}/kadm5.acl\n  \
             max_life = {MAX_LIFE}\n  max_renewable_life = 1d\n  \
             supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n  \
             kdc_listen = 127.0.0.1:{port}\n  kdc_tcp_listen = 127.0.0.1:{port}\n }}\n\
             [logging]\n kdc = FILE:{dir}/kdc.log\n"
        )
    }

    fn client_conf(&self) -> String {
        let port = self.port;
        format!(
            "[libdefaults]\n default_realm = {REALM}\n dns_lookup_kdc = false\n \
             dns_lookup_realm = false\n rdns = false\n udp_preference_limit = 1\n\
             [realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{port}\n }}\n\
             [domain_realm]\n localhost = {REALM}\n .localhost = {REALM}\n"
        )
    }
}

impl Drop for Kdc {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            runtime::forget(Reap::Pid(child.id()));
            let _ = child.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}
