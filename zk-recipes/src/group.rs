//! [`GroupMember`]: group membership in Curator's `GroupMember` layout.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use zk_client::{Observable, SessionManager, Transitions};

use crate::cache::{ChildData, ChildrenCache};
use crate::error::Result;
use crate::node::{NodeEvents, NodeOptions, PersistentNode};
use crate::path::{check_base, check_segment, join as child_path};
use crate::queue::local_address;
use crate::session::Following;

/// A member of a group, in Curator's `GroupMember` layout: an EPHEMERAL node
/// `<membership path>/<member id>` holding the member's payload (Curator's default payload is
/// the local address as text), kept by a [`PersistentNode`] (so it comes back after a
/// deletion or an expiry, and a leftover node of our id held by another session is
/// replaced), and a cache of every member's id and payload.
///
/// Java's `GroupMember.getCurrentMembers()` on the same path lists our members, and
/// [`current_members`](Self::current_members) lists Java's. Ids must be unique within a
/// group: two members with one id fight over the node.
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use zk_client::{Client, SessionManager};
/// use zk_recipes::group::{GroupMember, Members};
///
/// let manager = SessionManager::connect(Client::builder("127.0.0.1:2181")).await?;
/// let member = GroupMember::new_managed(&manager, "/groups/workers", "worker-1", Some(b"10.0.0.7")).await?;
/// let mut changes = member.watch();
/// loop {
///     for (id, payload) in member.current_members() {
///         println!("{id}: {}", String::from_utf8_lossy(&payload));
///     }
///     if changes.changed().await == Members::Ended {
///         break;
///     }
/// }
/// member.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct GroupMember {
    id: String,
    path: String,
    node: PersistentNode,
    cache: ChildrenCache,
    members: Following<Members>,
}

impl GroupMember {
    /// Joins the group at `membership_path` as `id` with `payload` (`None`: Curator's default,
    /// the local address as text, looked up once per process off the caller's task), on
    /// `manager`'s sessions. Must be called within a tokio runtime.
    ///
    /// # Cancel safety
    ///
    /// Nothing is started until the default payload is known: a call dropped before it
    /// returns joins nothing.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad membership path;
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an id
    /// that is empty or contains `/`. The rest happens in the background:
    /// [`ready`](Self::ready) waits for our node.
    pub async fn new_managed(
        manager: &SessionManager,
        membership_path: &str,
        id: &str,
        payload: Option<&[u8]>,
    ) -> Result<GroupMember> {
        let path = check_base(membership_path)?;
        check_segment(id, "a member id is one non-empty path segment")?;
        let payload = match payload {
            Some(payload) => Bytes::copy_from_slice(payload),
            None => local_address().await,
        };
        let node = PersistentNode::new_managed(
            manager,
            &child_path(&path, id),
            &payload,
            NodeOptions::ephemeral(),
        )?;
        let cache = ChildrenCache::new_managed(manager, &path)?;
        let members = Following::start(
            cache.events(),
            {
                let cache = cache.clone();
                move || Members::Current(members_of(cache.children()))
            },
            Members::Ended,
        );
        Ok(GroupMember {
            id: id.to_owned(),
            path,
            node,
            cache,
            members,
        })
    }

    /// Our id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The membership path.
    pub fn membership_path(&self) -> &str {
        &self.path
    }

    /// Waits until our member node exists and returns its path.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::ready`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn ready(&self) -> Result<String> {
        self.node.ready().await
    }

    /// [`ready`](Self::ready) within `timeout`.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::ready_timeout`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn ready_timeout(&self, timeout: Duration) -> Result<String> {
        self.node.ready_timeout(timeout).await
    }

    /// Every member's id and payload, from the cache, with our own id and payload added
    /// while the cache has not seen our node yet (as Curator's `getCurrentMembers`).
    pub fn current_members(&self) -> BTreeMap<String, Bytes> {
        let mut members = members_of(self.cache.children());
        members
            .entry(self.id.clone())
            .or_insert_with(|| self.node.data());
        members
    }

    /// What keeps this member out of the group or the members' view stale, if anything:
    /// its node's [`PersistentNode::last_error`] (its session ended, the server drops the
    /// connection on its create: the member waits it out and joins again by itself), else
    /// the members cache's [`Cache::last_error`](crate::cache::Cache::last_error). `None`
    /// while the member is in and the view follows the server.
    pub fn last_error(&self) -> Option<crate::Error> {
        self.node
            .last_error()
            .or_else(|| self.cache.cache().last_error())
    }

    /// Whether the cache has read the group once.
    pub fn is_loaded(&self) -> bool {
        self.cache.cache().is_ready()
    }

    /// Follows the cached members (ids and payloads; our own id is not added here) with
    /// [`Transitions`], the type that follows a session's state, a lock's state and
    /// leadership too. It ends with [`Members::Ended`] once the member is closed or its
    /// session manager ended.
    pub fn watch(&self) -> Transitions<Members> {
        self.members.subscribe()
    }

    /// Our member node's events (see [`NodeEvent`](crate::node::NodeEvent)).
    pub fn node_events(&self) -> NodeEvents {
        self.node.events()
    }

    /// Replaces our payload (kept through re-creations; before our node exists, it is the
    /// payload it is created with: Curator throws, CURATOR-485).
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::set_data`].
    ///
    /// # Cancel safety
    ///
    /// As [`PersistentNode::set_data`].
    pub async fn set_payload(&self, payload: &[u8]) -> Result<()> {
        self.node.set_data(payload).await
    }

    /// Leaves the group: stops the cache and deletes our node.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::close`].
    ///
    /// # Cancel safety
    ///
    /// As [`PersistentNode::close`].
    pub async fn close(&self) -> Result<()> {
        // The members' follower ends with the cache's events.
        self.cache.close().await?;
        self.node.close().await
    }
}

/// A group's members as [`GroupMember::watch`] follows them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Members {
    /// The cached members: id → payload.
    Current(BTreeMap<String, Bytes>),
    /// The member was closed or its session manager ended: no change follows.
    Ended,
}

impl Observable for Members {
    fn is_final(&self) -> bool {
        *self == Members::Ended
    }

    fn when_gone(_last: &Self) -> Self {
        Members::Ended
    }
}

/// Ids and payloads of cached member nodes (the membership cache keeps every node's data).
fn members_of(children: Vec<ChildData>) -> BTreeMap<String, Bytes> {
    children
        .into_iter()
        .map(|c| (c.name().to_owned(), c.data.unwrap_or_default()))
        .collect()
}
