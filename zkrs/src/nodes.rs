//! The node commands: `ls`, `get`, `set`, `stat`, `create`, `delete`.

use serde::Serialize;
use zk_client::{CreateMode, CreateOptions, Stat};

use crate::cli::{Command, CreateArgs};
use crate::connect::Session;
use crate::error::CliError;
use crate::output::{hex, session_hex, utf8, Output};
use crate::time::utc;

/// Most nodes `ls -R` visits before it stops with an error (a guard against `ls -R /` on a
/// huge tree; the output would be useless anyway).
const MAX_TREE_NODES: usize = 1_000_000;

/// Runs one of the node commands.
pub(crate) async fn run(session: &Session, out: &Output, cmd: Command) -> Result<(), CliError> {
    let client = &session.client;
    match cmd {
        Command::Ls { path, recursive } if recursive => tree(session, out, &path).await,
        Command::Ls { path, .. } => {
            let mut names = client
                .get_children(&path)
                .await
                .map_err(|e| CliError::zk(format!("ls {path}"), e))?;
            names.sort();
            out.emit(&names, || names.join("\n"));
            Ok(())
        }
        Command::Get { path } => {
            let (data, stat) = client
                .get_data(&path)
                .await
                .map_err(|e| CliError::zk(format!("get {path}"), e))?;
            let view = DataView::new(&path, &data, &stat);
            out.emit(&view, || String::from_utf8_lossy(&data).into_owned());
            Ok(())
        }
        Command::Set {
            path,
            data,
            version,
        } => {
            let stat = client
                .set_data(&path, data.as_bytes(), version)
                .await
                .map_err(|e| CliError::zk(format!("set {path}"), e))?;
            let view = StatView::new(&path, &stat);
            out.emit(&view, || format!("{path} version {}", stat.version));
            Ok(())
        }
        Command::Stat { path } => {
            let stat = client
                .exists(&path)
                .await
                .map_err(|e| CliError::zk(format!("stat {path}"), e))?
                .ok_or_else(|| CliError::zk(format!("stat {path}"), zk_client::Error::NoNode))?;
            let view = StatView::new(&path, &stat);
            out.emit(&view, || view.text());
            Ok(())
        }
        Command::Create(args) => create(session, out, args).await,
        Command::Delete {
            path,
            recursive,
            version,
        } => {
            let done = if recursive {
                client.delete_all(&path).await
            } else {
                client.delete(&path, version).await
            };
            done.map_err(|e| CliError::zk(format!("delete {path}"), e))?;
            out.emit(&serde_json::json!({ "deleted": path }), || {
                format!("deleted {path}")
            });
            Ok(())
        }
        Command::Watch(_)
        | Command::Locks(_)
        | Command::Revoke { .. }
        | Command::Services(_)
        | Command::Members { .. }
        | Command::Health { .. }
        | Command::Mntr { .. }
        | Command::Config { .. }
        | Command::Reconfig(_) => Err(CliError::Other("internal: not a node command".into())),
    }
}

async fn create(session: &Session, out: &Output, args: CreateArgs) -> Result<(), CliError> {
    let mode = match (args.container, args.ephemeral, args.sequential) {
        (true, _, _) => CreateMode::Container,
        (false, true, true) => CreateMode::EphemeralSequential,
        (false, true, false) => CreateMode::Ephemeral,
        (false, false, true) => CreateMode::PersistentSequential,
        (false, false, false) => CreateMode::Persistent,
    };
    let options = CreateOptions::new(mode);
    let data = args.data.as_bytes();
    let created = if args.parents {
        session.client.create_all(&args.path, data, &options).await
    } else {
        session.client.create(&args.path, data, &options).await
    };
    let (path, stat) = created.map_err(|e| CliError::zk(format!("create {}", args.path), e))?;
    let view = StatView::new(&path, &stat);
    out.emit(&view, || path.clone());
    Ok(())
}

/// `ls -R`: every path of the subtree, parents before children, siblings sorted.
async fn tree(session: &Session, out: &Output, root: &str) -> Result<(), CliError> {
    let client = &session.client;
    // Depth-first with an explicit stack; nodes deleted while we walk are skipped.
    let mut paths = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(path) = stack.pop() {
        let mut names = match client.get_children(&path).await {
            Ok(names) => names,
            Err(zk_client::Error::NoNode) if path != root => continue,
            Err(e) => return Err(CliError::zk(format!("ls -R {path}"), e)),
        };
        paths.push(path.clone());
        if paths.len() > MAX_TREE_NODES {
            return Err(CliError::Other(format!(
                "ls -R {root}: more than {MAX_TREE_NODES} nodes; list a smaller subtree"
            )));
        }
        names.sort();
        for name in names.iter().rev() {
            stack.push(child_path(&path, name));
        }
    }
    out.emit(&paths, || paths.join("\n"));
    Ok(())
}

/// `parent/name`, without doubling the root's slash.
pub(crate) fn child_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// A node's data for `get --json`.
#[derive(Serialize)]
struct DataView<'a> {
    path: &'a str,
    /// The data as text when it is UTF-8.
    data: Option<String>,
    /// The data as hex, always.
    data_hex: String,
    stat: StatView<'a>,
}

impl<'a> DataView<'a> {
    fn new(path: &'a str, data: &[u8], stat: &Stat) -> Self {
        DataView {
            path,
            data: utf8(data),
            data_hex: hex(data),
            stat: StatView::new(path, stat),
        }
    }
}

/// A stat with readable times and session ids.
#[derive(Serialize)]
pub(crate) struct StatView<'a> {
    path: &'a str,
    czxid: String,
    mzxid: String,
    pzxid: String,
    ctime: i64,
    ctime_utc: String,
    mtime: i64,
    mtime_utc: String,
    version: i32,
    cversion: i32,
    aversion: i32,
    ephemeral_owner: String,
    data_length: i32,
    num_children: i32,
}

impl<'a> StatView<'a> {
    pub(crate) fn new(path: &'a str, stat: &Stat) -> Self {
        StatView {
            path,
            czxid: format!("0x{:x}", stat.czxid),
            mzxid: format!("0x{:x}", stat.mzxid),
            pzxid: format!("0x{:x}", stat.pzxid),
            ctime: stat.ctime,
            ctime_utc: utc(stat.ctime),
            mtime: stat.mtime,
            mtime_utc: utc(stat.mtime),
            version: stat.version,
            cversion: stat.cversion,
            aversion: stat.aversion,
            ephemeral_owner: session_hex(stat.ephemeral_owner),
            data_length: stat.data_length,
            num_children: stat.num_children,
        }
    }

    fn text(&self) -> String {
        [
            ("path", self.path.to_owned()),
            ("czxid", self.czxid.clone()),
            ("ctime", self.ctime_utc.clone()),
            ("mzxid", self.mzxid.clone()),
            ("mtime", self.mtime_utc.clone()),
            ("pzxid", self.pzxid.clone()),
            ("cversion", self.cversion.to_string()),
            ("dataVersion", self.version.to_string()),
            ("aclVersion", self.aversion.to_string()),
            ("ephemeralOwner", self.ephemeral_owner.clone()),
            ("dataLength", self.data_length.to_string()),
            ("numChildren", self.num_children.to_string()),
        ]
        .iter()
        .map(|(k, v)| format!("{k:<15}{v}"))
        .collect::<Vec<_>>()
        .join("\n")
    }
}
