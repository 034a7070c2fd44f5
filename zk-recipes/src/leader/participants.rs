//! The election queue as Curator orders it, and the participants read from it.

use zk_client::Client;

use crate::error::Result;
use crate::retry::retrying;

/// A participant of an election, as read from its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    /// The participant id: the node's data as UTF-8 (lossy), as Curator writes and reads it.
    pub id: String,
    /// The node's name (under the election path).
    pub node: String,
    /// Whether this node is first in the queue (Curator's `isLeader` of a participant).
    pub is_leader: bool,
}

/// Sorts election nodes as Curator does: by the text after the last occurrence of
/// `lock_name` (the whole name if it has none), all children kept.
pub(crate) fn sort_queue(children: &mut [String], lock_name: &str) {
    fn key<'a>(name: &'a str, lock_name: &str) -> &'a str {
        match name.rfind(lock_name) {
            Some(at) => &name[at + lock_name.len()..],
            None => name,
        }
    }
    children.sort_by(|a, b| key(a, lock_name).cmp(key(b, lock_name)));
}

/// Lists `base` in queue order, waiting out connection losses (empty if it does not exist).
pub(crate) async fn queue(client: &Client, base: &str, lock_name: &str) -> Result<Vec<String>> {
    let listed = retrying(client, || async {
        match client.get_children(base).await {
            Err(zk_client::Error::NoNode) => Ok(Vec::new()),
            other => other,
        }
    })
    .await;
    let mut children = listed?;
    sort_queue(&mut children, lock_name);
    Ok(children)
}

/// Every participant in queue order, ids read from the nodes' data (nodes that vanish
/// between the listing and the read are skipped).
pub(crate) async fn participants(
    client: &Client,
    base: &str,
    lock_name: &str,
) -> Result<Vec<Participant>> {
    let nodes = queue(client, base, lock_name).await?;
    // Pipelined: all reads are queued before the first reply is awaited.
    let reads: Vec<_> = nodes
        .iter()
        .map(|node| client.get_data(&format!("{base}/{node}")))
        .collect();
    let mut out = Vec::with_capacity(nodes.len());
    for (node, read) in nodes.into_iter().zip(reads) {
        match read.await {
            Ok((data, _)) => out.push(Participant {
                id: String::from_utf8_lossy(&data).into_owned(),
                is_leader: out.is_empty(),
                node,
            }),
            Err(zk_client::Error::NoNode) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_by_the_text_after_the_lock_name_as_curator_does() {
        let mut names: Vec<String> = [
            "_c_bbbbbbbb-0000-0000-0000-000000000000-latch-0000000003",
            "_c_aaaaaaaa-0000-0000-0000-000000000000-latch-0000000010",
            "foreign",
            "_c_cccccccc-0000-0000-0000-000000000000-latch-0000000001",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        sort_queue(&mut names, "latch-");
        assert!(names[0].ends_with("0000000001"));
        assert!(names[1].ends_with("0000000003"));
        assert!(names[2].ends_with("0000000010"));
        assert_eq!(names[3], "foreign");
    }
}
