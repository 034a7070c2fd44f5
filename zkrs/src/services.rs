//! `zkrs services` (curator-x-discovery registrations) and `zkrs members` (Curator
//! `GroupMember` groups): who is registered, where, and on which session.

use serde::Serialize;
use serde_json::Value;
use zk_client::{Error as ZkError, Stat};

use crate::cli::ServicesArgs;
use crate::connect::Session;
use crate::error::CliError;
use crate::nodes::child_path;
use crate::output::{hex, session_hex, utf8, Output};

/// One instance node: its name, owner and the instance JSON's fields we show.
#[derive(Debug, Serialize)]
struct Instance {
    service: String,
    node: String,
    /// The session owning the (ephemeral) node, `0x0` for a persistent one.
    owner: String,
    /// The instance as stored (`null` when the node is not an instance's JSON).
    instance: Option<Value>,
}

/// Lists every service under the base (or one), each instance with its address and owner.
pub(crate) async fn run(
    session: &Session,
    out: &Output,
    args: ServicesArgs,
) -> Result<(), CliError> {
    let client = &session.client;
    let names = match &args.name {
        Some(name) => vec![name.clone()],
        None => {
            let mut names = client
                .get_children(&args.base)
                .await
                .map_err(|e| CliError::zk(format!("ls {}", args.base), e))?;
            names.sort();
            names
        }
    };
    for name in names {
        let service = child_path(&args.base, &name);
        let mut nodes = match client.get_children(&service).await {
            Ok(nodes) => nodes,
            Err(ZkError::NoNode) => Vec::new(),
            Err(e) => return Err(CliError::zk(format!("ls {service}"), e)),
        };
        nodes.sort();
        for node in nodes {
            let path = child_path(&service, &node);
            let (data, stat) = match client.get_data(&path).await {
                Ok(read) => read,
                Err(ZkError::NoNode) => continue,
                Err(e) => return Err(CliError::zk(format!("get {path}"), e)),
            };
            let instance = Instance {
                service: name.clone(),
                owner: session_hex(stat.ephemeral_owner),
                instance: serde_json::from_slice(&data).ok(),
                node,
            };
            out.emit(&instance, || text(&instance));
        }
    }
    Ok(())
}

fn text(i: &Instance) -> String {
    let Some(v) = &i.instance else {
        return format!(
            "{}/{}  (not an instance)  owner {}",
            i.service, i.node, i.owner
        );
    };
    let field = |k: &str| match v.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "-".to_owned(),
        Some(other) => other.to_string(),
    };
    let enabled = match v.get("enabled") {
        Some(Value::Bool(false)) => "  disabled",
        _ => "",
    };
    format!(
        "{}/{}  {}:{}  ssl {}  {}{}  owner {}",
        i.service,
        i.node,
        field("address"),
        field("port"),
        field("sslPort"),
        field("serviceType"),
        enabled,
        i.owner
    )
}

/// One member of a group.
#[derive(Debug, Serialize)]
struct Member {
    id: String,
    payload: Option<String>,
    payload_hex: String,
    owner: String,
}

/// Lists a group's members with their payloads and owning sessions.
pub(crate) async fn members(session: &Session, out: &Output, path: &str) -> Result<(), CliError> {
    let client = &session.client;
    let mut ids = client
        .get_children(path)
        .await
        .map_err(|e| CliError::zk(format!("ls {path}"), e))?;
    ids.sort();
    for id in ids {
        let node = child_path(path, &id);
        let (data, stat): (_, Stat) = match client.get_data(&node).await {
            Ok(read) => read,
            Err(ZkError::NoNode) => continue,
            Err(e) => return Err(CliError::zk(format!("get {node}"), e)),
        };
        let member = Member {
            payload: utf8(&data),
            payload_hex: hex(&data),
            owner: session_hex(stat.ephemeral_owner),
            id,
        };
        out.emit(&member, || {
            format!(
                "{}  {}  owner {}",
                member.id,
                member
                    .payload
                    .clone()
                    .unwrap_or_else(|| format!("0x{}", member.payload_hex)),
                member.owner
            )
        });
    }
    Ok(())
}
